// SPDX-License-Identifier: GPL-2.0
/*
 * krepd's log (log.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "genl.h"
#include "log.h"

static bool use_syslog;

void krep_log(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (use_syslog) {
		vsyslog(prio, fmt, ap);
	} else if (prio <= LOG_WARNING) {
		fflush(stdout);
		fprintf(stderr, "%s: ", krep_prog);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	} else {
		vprintf(fmt, ap);
		putchar('\n');
		fflush(stdout);
	}
	va_end(ap);
}

void krep_log_syslog(const char *ident)
{
	openlog(ident, LOG_PID, LOG_DAEMON);
	use_syslog = true;
}

void krep_log_close(void)
{
	if (use_syslog)
		closelog();
	use_syslog = false;
}
