/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepd's log: one line per message, to stdout (stderr for warnings and
 * errors, prefixed "krepd: ") in the foreground, to syslog once
 * krep_log_syslog() was called.
 */
#ifndef KREP_AGENT_LOG_H
#define KREP_AGENT_LOG_H

#include <stdbool.h>
#include <syslog.h>

void krep_log(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* From now on log to syslog as @ident (LOG_DAEMON, with the pid). */
void krep_log_syslog(const char *ident);
void krep_log_close(void);

#endif
