// SPDX-License-Identifier: GPL-2.0
/*
 * Delimiter escapes and consume -f format strings (format.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "format.h"

static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The escape at @s (just after its backslash): the byte, its length. */
static int escape_at(const char *s, char *c, size_t *n)
{
	switch (s[0]) {
	case 'n':
		*c = '\n';
		break;
	case 't':
		*c = '\t';
		break;
	case 'r':
		*c = '\r';
		break;
	case '0':
		*c = '\0';
		break;
	case '\\':
		*c = '\\';
		break;
	case 'x':
		if (hex(s[1]) < 0 || hex(s[2]) < 0)
			return -EINVAL;
		*c = (char)(hex(s[1]) << 4 | hex(s[2]));
		*n = 3;
		return 0;
	default:
		return -EINVAL;
	}
	*n = 1;
	return 0;
}

int krep_unescape(const char *in, char *out, size_t cap, size_t *len)
{
	size_t o = 0, n;
	char c;

	while (*in) {
		c = *in++;
		if (c == '\\') {
			if (escape_at(in, &c, &n))
				return -EINVAL;
			in += n;
		}
		if (o == cap)
			return -E2BIG;
		out[o++] = c;
	}
	*len = o;
	return 0;
}

int krep_format_check(const char *fmt, char *why, size_t size)
{
	const char *p;
	size_t n;
	char c;

	for (p = fmt; *p; p++) {
		if (*p == '\\') {
			if (escape_at(p + 1, &c, &n)) {
				snprintf(why, size, "unknown escape '\\%.1s' in format '%s'",
					 p + 1, fmt);
				return -EINVAL;
			}
			p += n;
		} else if (*p == '%') {
			if (!p[1] || !strchr("tpokKsShT%", p[1])) {
				snprintf(why, size,
					 "unknown conversion '%%%.1s' in format '%s' (known: %%t %%p %%o %%k %%K %%s %%S %%h %%T %%%%)",
					 p + 1, fmt);
				return -EINVAL;
			}
			p++;
		}
	}
	return 0;
}

static void put_bytes(FILE *f, const struct krep_bytes *b)
{
	if (b->len > 0)
		fwrite(b->data, 1, b->len, f);
}

static void put_headers(FILE *f, const struct krep_record_view *r)
{
	struct krep_header_iter hi;
	struct krep_header h;
	bool first = true;

	krep_header_iter_init(&hi, r);
	while (krep_header_next(&hi, &h)) {
		if (!first)
			fputc(',', f);
		first = false;
		put_bytes(f, &h.key);
		fputc('=', f);
		put_bytes(f, &h.value);
	}
}

void krep_format_print(FILE *f, const char *fmt, const char *topic,
		       uint32_t partition, const struct krep_record_view *r)
{
	const char *p;
	size_t n;
	char c;

	for (p = fmt; *p; p++) {
		if (*p == '\\' && !escape_at(p + 1, &c, &n)) {
			fputc(c, f);
			p += n;
			continue;
		}
		if (*p != '%' || !p[1]) {
			fputc(*p, f);
			continue;
		}
		switch (*++p) {
		case 't':
			fputs(topic, f);
			break;
		case 'p':
			fprintf(f, "%" PRIu32, partition);
			break;
		case 'o':
			fprintf(f, "%" PRId64, r->offset);
			break;
		case 'k':
			put_bytes(f, &r->key);
			break;
		case 'K':
			fprintf(f, "%" PRId32, r->key.len);
			break;
		case 's':
			put_bytes(f, &r->value);
			break;
		case 'S':
			fprintf(f, "%" PRId32, r->value.len);
			break;
		case 'h':
			put_headers(f, r);
			break;
		case 'T':
			fprintf(f, "%" PRId64, r->timestamp);
			break;
		default:
			fputc(*p, f);	/* %%, and what the check let through */
		}
	}
}
