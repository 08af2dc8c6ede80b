// SPDX-License-Identifier: GPL-2.0
/*
 * Minimal streaming JSON writer.
 *
 * The writer tracks, per nesting level, whether a value has been written
 * yet, so callers never place commas themselves. Strings are escaped as
 * RFC 8259 requires; bytes that are not valid UTF-8 become U+FFFD so the
 * output is always valid JSON whatever the kernel hands us (or \u00XX for
 * record data, json_bytes(), so that no byte is lost).
 */
#include <inttypes.h>
#include <string.h>

#include "json.h"

void json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->after_key = false;
	j->first[0] = true;
}

/* Emit the separator owed before a key or a value. */
static void sep(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
}

static void nest_open(struct json *j, char c)
{
	sep(j);
	fputc(c, j->f);
	if (j->depth < JSON_MAX_DEPTH - 1)
		j->depth++;
	j->first[j->depth] = true;
}

static void nest_close(struct json *j, char c)
{
	fputc(c, j->f);
	if (j->depth > 0)
		j->depth--;
}

void json_obj_begin(struct json *j)
{
	nest_open(j, '{');
}

void json_obj_end(struct json *j)
{
	nest_close(j, '}');
}

void json_arr_begin(struct json *j)
{
	nest_open(j, '[');
}

void json_arr_end(struct json *j)
{
	nest_close(j, ']');
}

void json_key(struct json *j, const char *key)
{
	sep(j);
	json_escape(j->f, key, strlen(key));
	fputc(':', j->f);
	j->after_key = true;
}

/* A key that may hold any bytes (a record header's key). */
void json_key_bytes(struct json *j, const void *key, size_t len)
{
	sep(j);
	json_escape_bytes(j->f, key, len);
	fputc(':', j->f);
	j->after_key = true;
}

void json_str(struct json *j, const char *s)
{
	json_strn(j, s, strlen(s));
}

void json_strn(struct json *j, const char *s, size_t len)
{
	sep(j);
	json_escape(j->f, s, len);
}

void json_u64(struct json *j, uint64_t v)
{
	sep(j);
	fprintf(j->f, "%" PRIu64, v);
}

void json_s64(struct json *j, int64_t v)
{
	sep(j);
	fprintf(j->f, "%" PRId64, v);
}

void json_bool(struct json *j, bool v)
{
	sep(j);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j)
{
	sep(j);
	fputs("null", j->f);
}

/*
 * Length of the well-formed UTF-8 sequence at @s (at most @len bytes), or 0
 * when it is malformed, overlong, a surrogate or beyond U+10FFFF.
 */
static size_t utf8_len(const unsigned char *s, size_t len)
{
	uint32_t cp;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n > len)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

static void escape(FILE *f, const char *str, size_t len, bool raw_bytes)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, n;

	fputc('"', f);
	while (i < len) {
		unsigned char c = s[i];

		switch (c) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\b':
			fputs("\\b", f);
			break;
		case '\f':
			fputs("\\f", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				fprintf(f, "\\u%04x", c);
				break;
			}
			n = utf8_len(s + i, len - i);
			if (!n) {
				if (raw_bytes)
					fprintf(f, "\\u%04x", c);
				else
					fputs("\\ufffd", f);
				break;
			}
			fwrite(s + i, 1, n, f);
			i += n;
			continue;
		}
		i++;
	}
	fputc('"', f);
}

void json_escape(FILE *f, const char *str, size_t len)
{
	escape(f, str, len, false);
}

/*
 * Record keys and values are bytes: valid UTF-8 passes through, and each
 * byte that is not part of a valid sequence becomes \u00XX (the byte as a
 * code point, as Latin-1 would read it) rather than U+FFFD, so that no
 * byte is lost.
 */
void json_escape_bytes(FILE *f, const void *buf, size_t len)
{
	escape(f, buf, len, true);
}

void json_bytes(struct json *j, const void *buf, size_t len)
{
	sep(j);
	json_escape_bytes(j->f, buf, len);
}

bool json_utf8_valid(const void *buf, size_t len)
{
	const unsigned char *s = buf;
	size_t i = 0, n;

	while (i < len) {
		n = utf8_len(s + i, len - i);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

void json_base64(struct json *j, const void *buf, size_t len)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *s = buf;
	uint32_t v;
	size_t i;

	sep(j);
	fputc('"', j->f);
	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		fputc(b64[v >> 18], j->f);
		fputc(b64[(v >> 12) & 63], j->f);
		fputc(b64[(v >> 6) & 63], j->f);
		fputc(b64[v & 63], j->f);
	}
	if (len - i == 1) {
		v = (uint32_t)s[i] << 16;
		fprintf(j->f, "%c%c==", b64[v >> 18], b64[(v >> 12) & 63]);
	} else if (len - i == 2) {
		v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
		fprintf(j->f, "%c%c%c=", b64[v >> 18], b64[(v >> 12) & 63],
			b64[(v >> 6) & 63]);
	}
	fputc('"', j->f);
}
