// SPDX-License-Identifier: GPL-2.0
/*
 * Host-only unit tests of krepctl's kcat-like pieces: Kafka's default
 * partitioner (murmur2 against the vectors of Kafka's own
 * UtilsTest.testMurmur2, toPositive and the modulo), the escapes of -K and
 * -D separators, consume -f format strings, base64 and UTF-8 checks for
 * JSON records, and "did you mean". Output is TAP; the exit status is 1
 * if any check failed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "json.h"
#include "murmur2.h"
#include "record.h"
#include "suggest.h"
#include "tap.h"

static void check_str(const char *got, const char *want, int line,
		      const char *what)
{
	bool ok = got && !strcmp(got, want);

	tap_check(ok, line, "%s", what);
	if (!ok)
		printf("#   got:  '%s'\n#   want: '%s'\n", got ? got : "(null)",
		       want);
}

#define CHECK_STR(got, want, what)	check_str(got, want, __LINE__, what)

/* Kafka's clients/src/test/.../utils/UtilsTest.java, testMurmur2 */
static void test_murmur2(void)
{
	static const struct { const char *key; int32_t hash; } v[] = {
		{ "21", -973932308 },
		{ "foobar", -790332482 },
		{ "a-little-bit-long-string", -985981536 },
		{ "a-little-bit-longer-string", -1486304829 },
		{ "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971 },
		{ "abc", 479470107 },
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		CHECK(krep_murmur2(v[i].key, strlen(v[i].key)) == v[i].hash,
		      "murmur2(\"%s\") = %d, as Kafka's Utils.murmur2",
		      v[i].key, v[i].hash);
	/* toPositive(-790332482) = 1357151166; % 50 = 16, % 3 = 0 */
	CHECK(krep_key_partition("foobar", 6, 50) == 16,
	      "\"foobar\" over 50 partitions: 16");
	CHECK(krep_key_partition("foobar", 6, 3) == 0,
	      "\"foobar\" over 3 partitions: 0");
	/* toPositive(-973932308) = 1173551340; % 6 = 0, % 7 = 3 */
	CHECK(krep_key_partition("21", 2, 6) == 0 &&
	      krep_key_partition("21", 2, 7) == 3,
	      "\"21\" over 6 and 7 partitions: 0 and 3");
	CHECK(krep_key_partition("abc", 3, 1) == 0, "one partition: always 0");
}

static void test_unescape(void)
{
	char out[16];
	size_t len;

	CHECK(!krep_unescape("::", out, sizeof(out), &len) && len == 2 &&
	      !memcmp(out, "::", 2), "plain separator");
	CHECK(!krep_unescape("\\t", out, sizeof(out), &len) && len == 1 &&
	      out[0] == '\t', "\\t");
	CHECK(!krep_unescape("a\\n\\r\\\\\\0\\x7f", out, sizeof(out), &len) &&
	      len == 6 && !memcmp(out, "a\n\r\\\0\x7f", 6),
	      "\\n \\r \\\\ \\0 \\xHH");
	CHECK(krep_unescape("\\q", out, sizeof(out), &len) == -EINVAL,
	      "unknown escape refused");
	CHECK(krep_unescape("\\x4", out, sizeof(out), &len) == -EINVAL,
	      "short \\x refused");
	CHECK(krep_unescape("0123456789abcdefX", out, 16, &len) == -E2BIG,
	      "too long refused");
}

/* A batch with one record: key "k", value "v\t1", headers h=1,x=y. */
static void one_record(struct krep_batch_enc *e, struct krep_record_view *v,
		       struct krep_batch *b, bool null_key)
{
	static const struct krep_header hs[] = {
		{ { (const uint8_t *)"h", 1 }, { (const uint8_t *)"1", 1 } },
		{ { (const uint8_t *)"x", 1 }, { (const uint8_t *)"y", 1 } },
	};
	struct krep_record r = {
		.timestamp = 5000,
		.key = { (const uint8_t *)"k", null_key ? -1 : 1 },
		.value = { (const uint8_t *)"v\t1", 3 },
		.nheaders = 2, .headers = hs,
	};
	struct krep_batch_iter bi;
	struct krep_record_iter ri;
	const uint8_t *buf;
	const char *why;
	size_t len;

	krep_batch_enc_init(e, false, KREP_NO_PRODUCER_ID,
			    KREP_NO_PRODUCER_EPOCH, KREP_NO_SEQUENCE);
	krep_batch_enc_add(e, &r);
	buf = krep_batch_enc_finish(e, &len);
	/* as a broker would store it: base offset 41 */
	((uint8_t *)buf)[7] = 41;
	krep_batch_iter_init(&bi, buf, len);
	krep_batch_next(&bi, b, &why);
	krep_record_iter_init(&ri, b);
	krep_record_next(&ri, v, &why);
}

static void test_format(void)
{
	struct krep_batch_enc e;
	struct krep_record_view v;
	struct krep_batch b;
	char out[256], why[256];
	FILE *f;

	one_record(&e, &v, &b, false);
	f = fmemopen(out, sizeof(out), "w");
	krep_format_print(f, "%t|%p|%o|%k|%s|%K|%S|%h|%T|%%|\\n", "orders",
			  3, &v);
	fclose(f);
	CHECK_STR(out, "orders|3|41|k|v\t1|1|3|h=1,x=y|5000|%|\n",
		  "every conversion and escape");
	krep_batch_enc_free(&e);

	one_record(&e, &v, &b, true);
	f = fmemopen(out, sizeof(out), "w");
	krep_format_print(f, "[%k] %K %s\\t%p", "t", 0, &v);
	fclose(f);
	CHECK_STR(out, "[] -1 v\t1\t0", "a null key prints nothing, length -1");
	krep_batch_enc_free(&e);

	CHECK(!krep_format_check("%t %p %o %k %s %h %T %K %S %%\\n", why,
				 sizeof(why)), "every conversion is known");
	CHECK(krep_format_check("%s %x", why, sizeof(why)) == -EINVAL &&
	      strstr(why, "unknown conversion '%x'"), "%%x refused: %s", why);
	CHECK(krep_format_check("%", why, sizeof(why)) == -EINVAL,
	      "a lone %% refused");
	CHECK(krep_format_check("\\q", why, sizeof(why)) == -EINVAL &&
	      strstr(why, "unknown escape"), "\\q refused");
}

static const char *json_text(void (*fn)(struct json *j, const void *b,
					size_t n), const void *buf, size_t len)
{
	static char out[256];
	struct json j;
	FILE *f = fmemopen(out, sizeof(out), "w");

	json_init(&j, f);
	fn(&j, buf, len);
	fclose(f);
	return out;
}

static void test_base64(void)
{
	CHECK_STR(json_text(json_base64, "", 0), "\"\"", "base64 of nothing");
	CHECK_STR(json_text(json_base64, "f", 1), "\"Zg==\"", "base64 f");
	CHECK_STR(json_text(json_base64, "fo", 2), "\"Zm8=\"", "base64 fo");
	CHECK_STR(json_text(json_base64, "foobar", 6), "\"Zm9vYmFy\"",
		  "base64 foobar (RFC 4648)");
	CHECK_STR(json_text(json_base64, "a\tb\x01\xff", 5), "\"YQliAf8=\"",
		  "base64 of bytes that are not UTF-8");
	CHECK(json_utf8_valid("h\xc3\xa9llo", 6), "UTF-8: valid");
	CHECK(!json_utf8_valid("a\xff", 2), "UTF-8: 0xff is not");
	CHECK(!json_utf8_valid("\xc0\xaf", 2), "UTF-8: an overlong is not");
	CHECK(!json_utf8_valid("\xe2\x82", 2), "UTF-8: a cut sequence is not");
}

static void test_suggest(void)
{
	static const char *const cmds[] = {
		"broker", "topic", "produce", "consume", "offsets",
		"delete-records", "txn", "watch", "stats", "elect", "health",
		"help", NULL
	};
	const char *s;

	s = krep_suggest("consum", cmds);
	CHECK_STR(s, "consume", "consum: consume");
	s = krep_suggest("prodcue", cmds);
	CHECK_STR(s, "produce", "prodcue (swap): produce");
	s = krep_suggest("topics", cmds);
	CHECK_STR(s, "topic", "topics: topic");
	s = krep_suggest("del", cmds);
	CHECK_STR(s, "delete-records", "del: the one command it begins");
	CHECK(!krep_suggest("xyzzy", cmds), "xyzzy: no suggestion");
	CHECK(!krep_suggest("he", cmds), "he: two commands begin so, none");
	CHECK(!krep_suggest("", cmds), "empty word: no suggestion");
}

int main(void)
{
	printf("TAP version 13\n");
	test_murmur2();
	test_unescape();
	test_format();
	test_base64();
	test_suggest();
	printf("1..%d\n", tap_ntests);
	printf("# %d passed, %d failed\n", tap_ntests - tap_nfailed, tap_nfailed);
	return tap_nfailed ? 1 : 0;
}
