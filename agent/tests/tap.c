// SPDX-License-Identifier: GPL-2.0
/* TAP output of the agent's unit tests (see tap.h). */
#include <stdarg.h>
#include <stdio.h>

#include "tap.h"

int tap_ntests, tap_nfailed;

void tap_check(bool ok, int line, const char *fmt, ...)
{
	va_list ap;

	tap_ntests++;
	tap_nfailed += !ok;
	printf("%s %d - ", ok ? "ok" : "not ok", tap_ntests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (!ok)
		printf(" # line %d", line);
	putchar('\n');
}
