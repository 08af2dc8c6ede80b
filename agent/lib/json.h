/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal streaming JSON writer for krepctl's --json output: compact
 * output, commas placed automatically, strings escaped per RFC 8259.
 */
#ifndef KREP_AGENT_JSON_H
#define KREP_AGENT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH	16

struct json {
	FILE *f;
	int depth;
	bool after_key;
	bool first[JSON_MAX_DEPTH];
};

void json_init(struct json *j, FILE *f);
void json_obj_begin(struct json *j);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j);
void json_arr_end(struct json *j);
void json_key(struct json *j, const char *key);
void json_key_bytes(struct json *j, const void *key, size_t len);
void json_str(struct json *j, const char *s);
void json_strn(struct json *j, const char *s, size_t len);
void json_u64(struct json *j, uint64_t v);
void json_s64(struct json *j, int64_t v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);
/* Bytes: valid UTF-8 as is, any other byte as \u00XX. */
void json_bytes(struct json *j, const void *buf, size_t len);

/* Is @buf (@len bytes) well-formed UTF-8 (no overlongs, no surrogates)? */
bool json_utf8_valid(const void *buf, size_t len);
/* Bytes as a quoted base64 string (RFC 4648, padded). */
void json_base64(struct json *j, const void *buf, size_t len);

/* Write @s (@len bytes) as a quoted JSON string to @f. */
void json_escape(FILE *f, const char *s, size_t len);
void json_escape_bytes(FILE *f, const void *buf, size_t len);

#endif
