/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kcat's ways of writing records and separators on a command line:
 * escapes in delimiters (produce -K SEP, -D SEP) and consume's -f format
 * strings, as kcat reads them.
 */
#ifndef KREP_AGENT_FORMAT_H
#define KREP_AGENT_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "record.h"

/*
 * Decode \n \t \r \0 \\ and \xHH in @in into @out (@cap bytes, not
 * NUL-terminated); @len gets the decoded length. -EINVAL for an unknown
 * or incomplete escape, -E2BIG when it does not fit.
 */
int krep_unescape(const char *in, char *out, size_t cap, size_t *len);

/*
 * A consume -f format string: %t topic, %p partition, %o offset, %k key,
 * %s value, %K key length, %S value length (-1 when null), %h headers
 * (K=V,K=V), %T timestamp (ms), %% a percent sign; \n \t \r \\ escapes.
 * krep_format_check() returns 0, or -EINVAL with @why naming the fault.
 */
int krep_format_check(const char *fmt, char *why, size_t size);
void krep_format_print(FILE *f, const char *fmt, const char *topic,
		       uint32_t partition, const struct krep_record_view *r);

#endif
