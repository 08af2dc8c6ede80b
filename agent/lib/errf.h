/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep_errf: the agent's way of failing with a message for the caller,
 * into a buffer it passed (err, errlen), returning @ret.
 */
#ifndef KREP_AGENT_ERRF_H
#define KREP_AGENT_ERRF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline int krep_errf(char *err, size_t errlen, int ret,
			    const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static inline int krep_errf(char *err, size_t errlen, int ret,
			    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

#endif
