// SPDX-License-Identifier: GPL-2.0
/*
 * Host-only unit tests of the RecordBatch v2 codec (record.c): CRC-32C,
 * zigzag varints, byte-exact batches checked against hand-assembled
 * ones and a batch whose CRC a third party computed, round trips with
 * keys, values and headers of every kind, and the decoder's checks
 * (CRC, magic, framing, truncation, control batches). Output is TAP; the
 * exit status is 1 if any check failed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "record.h"
#include "tap.h"


static void hexdump(const char *what, const uint8_t *p, size_t n)
{
	size_t i;

	printf("#   %s:", what);
	for (i = 0; i < n; i++)
		printf("%s%02x", i % 32 ? " " : "\n#     ", p[i]);
	putchar('\n');
}

static void check_bytes(const uint8_t *got, size_t got_len,
			const uint8_t *want, size_t want_len, int line,
			const char *what)
{
	bool ok = got && got_len == want_len && !memcmp(got, want, want_len);

	tap_check(ok, line, "%s", what);
	if (!ok) {
		hexdump("got", got, got ? got_len : 0);
		hexdump("want", want, want_len);
	}
}

#define CHECK_BYTES(g, gl, w, wl, what) \
	check_bytes(g, gl, w, wl, __LINE__, what)

static struct krep_bytes B(const char *s)
{
	return (struct krep_bytes){ (const uint8_t *)s, s ? (int32_t)strlen(s) : -1 };
}

static bool bytes_eq(struct krep_bytes a, struct krep_bytes b)
{
	if (a.len != b.len)
		return false;
	return a.len <= 0 || !memcmp(a.data, b.data, a.len);
}

/* ---- CRC-32C ------------------------------------------------------------ */

/* Bit at a time, straight from the definition: the reference. */
static uint32_t crc32c_bitwise(const uint8_t *p, size_t n)
{
	uint32_t c = ~0U;
	int k;

	while (n--) {
		c ^= *p++;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78U : c >> 1;
	}
	return ~c;
}

static void test_crc(void)
{
	uint8_t buf[1024];
	size_t i, n;
	bool ok = true;

	CHECK(krep_crc32c(0, "123456789", 9) == 0xe3069283U,
	      "crc32c(\"123456789\") = 0xe3069283 (the check value)");
	CHECK(krep_crc32c(0, "", 0) == 0, "crc32c of nothing is 0");
	/* RFC 3720 B.4: 32 bytes of zeros, of 0xff */
	memset(buf, 0, 32);
	CHECK(krep_crc32c(0, buf, 32) == 0x8a9136aaU,
	      "crc32c of 32 zero bytes = 0x8a9136aa (RFC 3720)");
	memset(buf, 0xff, 32);
	CHECK(krep_crc32c(0, buf, 32) == 0x62a8ab43U,
	      "crc32c of 32 0xff bytes = 0x62a8ab43 (RFC 3720)");
	for (i = 0; i < 32; i++)
		buf[i] = i;
	CHECK(krep_crc32c(0, buf, 32) == 0x46dd794eU,
	      "crc32c of 0..31 = 0x46dd794e (RFC 3720)");

	srand(1);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = rand();
	for (n = 0; n <= sizeof(buf); n += n < 40 ? 1 : 97)
		ok &= krep_crc32c(0, buf, n) == crc32c_bitwise(buf, n);
	CHECK(ok, "sliced CRC matches the bitwise one at every length");
	ok = true;
	for (n = 0; n <= 300; n += 7)
		ok &= krep_crc32c(krep_crc32c(0, buf, n), buf + n, 300 - n) ==
		      krep_crc32c(0, buf, 300);
	CHECK(ok, "CRC continues across split buffers");
}

/* ---- varints ------------------------------------------------------------ */

static void test_varint(void)
{
	static const struct {
		int64_t v;
		uint8_t enc[10];
		size_t n;
	} cases[] = {
		{ 0, { 0x00 }, 1 },
		{ -1, { 0x01 }, 1 },
		{ 1, { 0x02 }, 1 },
		{ -2, { 0x03 }, 1 },
		{ 63, { 0x7e }, 1 },
		{ -64, { 0x7f }, 1 },
		{ 64, { 0x80, 0x01 }, 2 },
		{ 300, { 0xd8, 0x04 }, 2 },
		{ 2147483647, { 0xfe, 0xff, 0xff, 0xff, 0x0f }, 5 },
		{ -2147483648LL, { 0xff, 0xff, 0xff, 0xff, 0x0f }, 5 },
		{ INT64_MAX, { 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			       0xff, 0x01 }, 10 },
		{ INT64_MIN, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			       0xff, 0x01 }, 10 },
	};
	static const uint8_t six[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 };
	static const uint8_t big32[] = { 0x80, 0x80, 0x80, 0x80, 0x10 };
	static const uint8_t cut[] = { 0x80 };
	const uint8_t *p;
	uint8_t buf[10];
	int64_t v;
	size_t i, n;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		n = krep_varint_put(buf, cases[i].v);
		CHECK(n == cases[i].n && krep_varint_size(cases[i].v) == n &&
		      !memcmp(buf, cases[i].enc, n),
		      "zigzag varint %lld encodes in %zu bytes",
		      (long long)cases[i].v, cases[i].n);
		p = cases[i].enc;
		CHECK(!krep_varint_get(&p, cases[i].enc + cases[i].n,
				       n > 5 ? 10 : 5, &v) &&
		      v == cases[i].v && p == cases[i].enc + n,
		      "zigzag varint %lld decodes", (long long)cases[i].v);
	}
	p = six;
	CHECK(krep_varint_get(&p, six + sizeof(six), 5, &v) == -EINVAL &&
	      p == six, "a 6-byte int32 varint is rejected");
	p = big32;
	CHECK(krep_varint_get(&p, big32 + sizeof(big32), 5, &v) == -EINVAL,
	      "an int32 varint above 32 bits is rejected");
	p = six;
	CHECK(!krep_varint_get(&p, six + sizeof(six), 10, &v) &&
	      v == (1LL << 34), "the same bytes are a fine varlong");
	p = cut;
	CHECK(krep_varint_get(&p, cut + 1, 5, &v) == -EINVAL,
	      "a varint cut short is rejected");
}

/* ---- byte-exact batches --------------------------------------------------- */

/*
 * One record, null key, value "Hello Kafka!", at 1726045973899 ms, with
 * producer id 0, epoch 0, base sequence 0 and partitionLeaderEpoch 0: a
 * batch whose CRC (0xabfd0491) was computed by someone else's encoder.
 */
static const uint8_t hello_batch[] = {
	0, 0, 0, 0, 0, 0, 0, 0,			/* baseOffset */
	0x00, 0x00, 0x00, 0x44,			/* batchLength 68 */
	0x00, 0x00, 0x00, 0x00,			/* partitionLeaderEpoch */
	0x02,					/* magic */
	0xab, 0xfd, 0x04, 0x91,			/* crc */
	0x00, 0x00,				/* attributes */
	0x00, 0x00, 0x00, 0x00,			/* lastOffsetDelta */
	0x00, 0x00, 0x01, 0x91, 0xe0, 0x5b, 0x6d, 0x8b,	/* baseTimestamp */
	0x00, 0x00, 0x01, 0x91, 0xe0, 0x5b, 0x6d, 0x8b,	/* maxTimestamp */
	0, 0, 0, 0, 0, 0, 0, 0,			/* producerId 0 */
	0x00, 0x00,				/* producerEpoch 0 */
	0x00, 0x00, 0x00, 0x00,			/* baseSequence 0 */
	0x00, 0x00, 0x00, 0x01,			/* recordCount */
	0x24,					/* length 18 */
	0x00, 0x00, 0x00,			/* attributes, ts and offset delta */
	0x01,					/* key: null */
	0x18, 'H', 'e', 'l', 'l', 'o', ' ', 'K', 'a', 'f', 'k', 'a', '!',
	0x00,					/* no headers */
};

static void test_known_batch(void)
{
	struct krep_batch_enc e;
	struct krep_record r = {
		.timestamp = 1726045973899LL,
		.key = B(NULL),
		.value = B("Hello Kafka!"),
	};
	uint8_t copy[sizeof(hello_batch)];
	const uint8_t *out;
	size_t len = 0;

	krep_batch_enc_init(&e, false, 0, 0, 0);
	CHECK(krep_batch_enc_size_with(&e, &r) == sizeof(hello_batch),
	      "size_with predicts the batch size");
	CHECK(!krep_batch_enc_add(&e, &r), "record added");
	out = krep_batch_enc_finish(&e, &len);
	/* producers send partitionLeaderEpoch -1; the vector has 0 there */
	CHECK(out && len == sizeof(hello_batch) &&
	      out[12] == 0xff && out[15] == 0xff,
	      "encoder writes partitionLeaderEpoch -1");
	memcpy(copy, hello_batch, sizeof(copy));
	memset(copy + 12, 0xff, 4);
	CHECK_BYTES(out, len, copy, sizeof(copy),
		    "one record batch is byte-exact, CRC 0xabfd0491");
	krep_batch_enc_free(&e);
}

/*
 * Two records with keys, headers and a timestamp that goes backwards, in
 * a transactional batch, assembled by hand from Kafka's documentation.
 */
static void test_known_batch2(void)
{
	static const uint8_t want_records[] = {
		/* record 0: key "k", value "v1", header ("h", "x") */
		0x1a,			/* length 13 */
		0x00,			/* attributes */
		0x00,			/* timestampDelta 0 */
		0x00,			/* offsetDelta 0 */
		0x02, 'k',		/* key */
		0x04, 'v', '1',		/* value */
		0x02,			/* 1 header */
		0x02, 'h', 0x02, 'x',	/* header */
		/* record 1: empty key, null value, header ("n", null), -1 ms */
		0x12,			/* length 9 */
		0x00,			/* attributes */
		0x01,			/* timestampDelta -1 */
		0x02,			/* offsetDelta 1 */
		0x00,			/* key: empty */
		0x01,			/* value: null */
		0x02,			/* 1 header */
		0x02, 'n', 0x01,	/* header, null value */
	};
	static const uint8_t want_hdr_tail[] = {
		0x00, 0x10,				/* attributes: txn */
		0x00, 0x00, 0x00, 0x01,			/* lastOffsetDelta */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8, /* base ts 1000 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8, /* max ts 1000 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, /* pid 42 */
		0x00, 0x07,				/* epoch 7 */
		0x00, 0x00, 0x00, 0x05,			/* base sequence 5 */
		0x00, 0x00, 0x00, 0x02,			/* 2 records */
	};
	struct krep_header h0 = { B("h"), B("x") }, h1 = { B("n"), B(NULL) };
	struct krep_record r0 = {
		.timestamp = 1000, .key = B("k"), .value = B("v1"),
		.nheaders = 1, .headers = &h0,
	};
	struct krep_record r1 = {
		.timestamp = 999, .key = B(""), .value = B(NULL),
		.nheaders = 1, .headers = &h1,
	};
	uint8_t want[KREP_RB_HDR_LEN + sizeof(want_records)];
	struct krep_batch_enc e;
	const uint8_t *out;
	uint32_t crc;
	size_t len = 0;

	memset(want, 0, 8);
	want[8] = 0;
	want[9] = 0;
	want[10] = 0;
	want[11] = sizeof(want) - 12;
	memset(want + 12, 0xff, 4);
	want[16] = 2;
	memcpy(want + 21, want_hdr_tail, sizeof(want_hdr_tail));
	memcpy(want + KREP_RB_HDR_LEN, want_records, sizeof(want_records));
	crc = krep_crc32c(0, want + 21, sizeof(want) - 21);
	want[17] = crc >> 24;
	want[18] = crc >> 16;
	want[19] = crc >> 8;
	want[20] = crc;

	krep_batch_enc_init(&e, true, 42, 7, 5);
	CHECK(!krep_batch_enc_add(&e, &r0) && !krep_batch_enc_add(&e, &r1),
	      "two records added");
	out = krep_batch_enc_finish(&e, &len);
	CHECK_BYTES(out, len, want, sizeof(want),
		    "keys, null and empty values, headers, negative delta, txn header");
	krep_batch_enc_free(&e);
}

/* ---- round trips -------------------------------------------------------- */

/* Decode the single batch in @buf into @b; false on any error. */
static bool decode_one(const uint8_t *buf, size_t len, struct krep_batch *b)
{
	struct krep_batch_iter it;
	const char *why;

	krep_batch_iter_init(&it, buf, len);
	return krep_batch_next(&it, b, &why) == 1 &&
	       krep_batch_next(&it, b + 1, &why) == 0 && !it.partial;
}

static void test_round_trip(void)
{
	static const uint8_t bin[] = { 0x00, 0xff, '\n', 0x80, 'a', 0x00 };
	uint8_t big[300];
	struct krep_header hs[3] = {
		{ B("trace"), B("abc") },
		{ B(""), B(NULL) },
		{ { (const uint8_t *)"\xff\x00k", 3 }, { bin, sizeof(bin) } },
	};
	struct krep_record rs[4] = {
		{ .timestamp = 1700000000000LL, .key = B(NULL), .value = B("") },
		{ .timestamp = 1700000000005LL, .key = { bin, sizeof(bin) },
		  .value = { bin, sizeof(bin) }, .nheaders = 3, .headers = hs },
		{ .timestamp = 1699999999000LL, .key = B("key"),
		  .value = B(NULL) },
		{ .timestamp = 1700000000001LL, .key = B(""),
		  .value = { big, sizeof(big) }, .nheaders = 1, .headers = hs },
	};
	struct krep_record_view v;
	struct krep_record_iter ri;
	struct krep_header_iter hi;
	struct krep_batch_enc e;
	struct krep_batch b[2];
	struct krep_header h;
	const uint8_t *out;
	uint8_t *copy;
	const char *why;
	size_t len, i, k;
	bool ok;

	memset(big, 'x', sizeof(big));
	krep_batch_enc_init(&e, false, KREP_NO_PRODUCER_ID,
			    KREP_NO_PRODUCER_EPOCH, KREP_NO_SEQUENCE);
	for (i = 0; i < 4; i++)
		krep_batch_enc_add(&e, &rs[i]);
	out = krep_batch_enc_finish(&e, &len);
	copy = malloc(len);
	memcpy(copy, out, len);
	/* the leader stamps offset and epoch, outside the CRC */
	copy[7] = 100;
	memset(copy + 12, 0, 4);
	copy[15] = 3;
	CHECK(decode_one(copy, len, b), "stamped batch decodes, CRC valid");
	CHECK(b->base_offset == 100 && b->leader_epoch == 3 && b->magic == 2 &&
	      b->count == 4 && b->last_offset_delta == 3 &&
	      b->base_ts == 1700000000000LL && b->max_ts == 1700000000005LL &&
	      b->producer_id == -1 && b->producer_epoch == -1 &&
	      b->base_sequence == -1 && b->attributes == 0 &&
	      b->size == len && b->length == (int32_t)len - 12 &&
	      !krep_batch_is_control(b) && !krep_batch_is_transactional(b) &&
	      krep_batch_last_offset(b) == 103,
	      "header fields round trip");

	krep_record_iter_init(&ri, b);
	ok = true;
	for (i = 0; i < 4; i++) {
		if (krep_record_next(&ri, &v, &why) != 1) {
			ok = false;
			break;
		}
		ok &= v.offset == (int64_t)(100 + i);
		ok &= v.timestamp == rs[i].timestamp;
		ok &= v.attributes == 0;
		ok &= bytes_eq(v.key, rs[i].key) && bytes_eq(v.value, rs[i].value);
		ok &= v.nheaders == (int32_t)rs[i].nheaders;
		krep_header_iter_init(&hi, &v);
		for (k = 0; krep_header_next(&hi, &h); k++)
			ok &= k < rs[i].nheaders &&
			      bytes_eq(h.key, rs[i].headers[k].key) &&
			      bytes_eq(h.value, rs[i].headers[k].value);
		ok &= k == rs[i].nheaders;
	}
	CHECK(ok, "four records round trip: offsets, timestamps, keys, values, headers");
	CHECK(krep_record_next(&ri, &v, &why) == 0, "then the end");

	/* a corrupted byte anywhere after the CRC field is caught */
	copy[len - 3] ^= 1;
	{
		struct krep_batch_iter it;

		krep_batch_iter_init(&it, copy, len);
		CHECK(krep_batch_next(&it, b, &why) == -EBADMSG &&
		      strstr(why, "CRC") && it.p == copy + len,
		      "flipped bit: CRC mismatch, iterator moves on");
	}
	free(copy);

	/* reuse after reset: a transactional producer's next batch */
	krep_batch_enc_free(&e);
	krep_batch_enc_init(&e, true, 9, 1, 0);
	krep_batch_enc_add(&e, &rs[0]);
	krep_batch_enc_finish(&e, &len);
	krep_batch_enc_reset(&e, 1);
	CHECK(krep_batch_enc_finish(&e, &len) == NULL,
	      "an empty batch is not finished");
	krep_batch_enc_add(&e, &rs[2]);
	out = krep_batch_enc_finish(&e, &len);
	CHECK(decode_one(out, len, b) && krep_batch_is_transactional(b) &&
	      b->producer_id == 9 && b->producer_epoch == 1 &&
	      b->base_sequence == 1 && b->count == 1 &&
	      b->base_ts == rs[2].timestamp,
	      "reset batch: transactional, next base sequence, own base time");
	krep_batch_enc_free(&e);
}

/* Many batches back to back, as a FETCH returns them. */
static void test_many(void)
{
	struct krep_batch_enc e;
	struct krep_batch_iter it;
	struct krep_record_iter ri;
	struct krep_record_view v;
	struct krep_batch b;
	struct krep_record r = { .key = B(NULL) };
	uint8_t *buf = NULL;
	size_t len, total = 0, nrec = 0;
	const uint8_t *out;
	const char *why;
	char val[32];
	int i, j, nb = 0, ret;
	bool ok = true;

	krep_batch_enc_init(&e, false, -1, -1, -1);
	for (i = 0; i < 50; i++) {
		for (j = 0; j <= i % 7; j++) {
			snprintf(val, sizeof(val), "%zu", nrec++);
			r.value = B(val);
			r.timestamp = 1000 + nrec;
			krep_batch_enc_add(&e, &r);
		}
		out = krep_batch_enc_finish(&e, &len);
		buf = realloc(buf, total + len);
		memcpy(buf + total, out, len);
		/* stamp the base offset as the leader would */
		buf[total + 6] = (nrec - (j)) >> 8;
		buf[total + 7] = (nrec - (j)) & 0xff;
		total += len;
		krep_batch_enc_reset(&e, -1);
	}
	krep_batch_enc_free(&e);

	nrec = 0;
	krep_batch_iter_init(&it, buf, total);
	while ((ret = krep_batch_next(&it, &b, &why)) == 1) {
		nb++;
		krep_record_iter_init(&ri, &b);
		while (krep_record_next(&ri, &v, &why) == 1) {
			snprintf(val, sizeof(val), "%zu", nrec);
			ok &= v.offset == (int64_t)nrec && bytes_eq(v.value, B(val));
			nrec++;
		}
	}
	CHECK(ret == 0 && !it.partial && nb == 50 && ok && nrec == 197,
	      "50 batches, 197 records back to back, offsets and values");

	krep_batch_iter_init(&it, buf, total - 5);
	nb = 0;
	while ((ret = krep_batch_next(&it, &b, &why)) == 1)
		nb++;
	CHECK(ret == 0 && it.partial && nb == 49,
	      "a truncated last batch ends the walk and sets partial");
	krep_batch_iter_init(&it, buf, 7);
	CHECK(krep_batch_next(&it, &b, &why) == 0 && it.partial,
	      "7 bytes: partial");
	free(buf);
}

/* ---- the decoder's checks ------------------------------------------------ */

/* Build a batch around @records (@n bytes) with @count records and a CRC. */
static size_t raw_batch(uint8_t *buf, const uint8_t *records, size_t n,
			int count, uint16_t attrs, uint8_t magic)
{
	uint32_t crc;
	size_t len = KREP_RB_HDR_LEN + n;

	memset(buf, 0, KREP_RB_HDR_LEN);
	buf[10] = (len - 12) >> 8;
	buf[11] = (len - 12) & 0xff;
	buf[16] = magic;
	buf[21] = attrs >> 8;
	buf[22] = attrs;
	buf[26] = count - 1;
	buf[60] = count;
	memcpy(buf + KREP_RB_HDR_LEN, records, n);
	crc = krep_crc32c(0, buf + 21, len - 21);
	buf[17] = crc >> 24;
	buf[18] = crc >> 16;
	buf[19] = crc >> 8;
	buf[20] = crc;
	return len;
}

static int decode_status(const uint8_t *buf, size_t len, const char **why)
{
	struct krep_batch_iter it;
	struct krep_record_iter ri;
	struct krep_record_view v;
	struct krep_batch b;
	int ret;

	krep_batch_iter_init(&it, buf, len);
	ret = krep_batch_next(&it, &b, why);
	if (ret != 1)
		return ret;
	krep_record_iter_init(&ri, &b);
	while ((ret = krep_record_next(&ri, &v, why)) == 1)
		;
	return ret;
}

static void test_checks(void)
{
	/* Kafka's commit marker: key (version 0, type 1), value (0, epoch 0) */
	static const uint8_t marker[] = {
		0x20, 0x00, 0x00, 0x00,
		0x08, 0x00, 0x00, 0x00, 0x01,
		0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00,
	};
	/* length 7: attributes, deltas, null key, value "v", no headers */
	static const uint8_t ok_rec[] = { 0x0e, 0, 0, 0, 0x01, 0x02, 'v', 0 };
	static const uint8_t long_len[] = { 0x10, 0, 0, 0, 0x01, 0x02, 'v', 0 };
	static const uint8_t extra[] = { 0x10, 0, 0, 0, 0x01, 0x02, 'v', 0, 0 };
	static const uint8_t bad_key[] = { 0x0e, 0, 0, 0, 0x08, 0x02, 'v', 0 };
	static const uint8_t neg_hdrs[] = { 0x0e, 0, 0, 0, 0x01, 0x02, 'v', 1 };
	static const uint8_t null_hkey[] = { 0x12, 0, 0, 0, 0x01, 0x02, 'v',
					     0x02, 0x01, 0x00 };
	struct krep_batch_iter it;
	struct krep_record_iter ri;
	struct krep_record_view v;
	struct krep_batch b;
	uint8_t buf[256];
	const char *why;
	size_t len;

	len = raw_batch(buf, marker, sizeof(marker), 1, 0x30, 2);
	krep_batch_iter_init(&it, buf, len);
	CHECK(krep_batch_next(&it, &b, &why) == 1 && krep_batch_is_control(&b) &&
	      krep_batch_is_transactional(&b), "control batch recognised");
	krep_record_iter_init(&ri, &b);
	CHECK(krep_record_next(&ri, &v, &why) == 1 &&
	      krep_control_type(&v) == KREP_CTRL_COMMIT,
	      "its record is a COMMIT marker");
	CHECK(len == 78, "a marker batch is 78 bytes, as the kernel builds it");

	len = raw_batch(buf, ok_rec, sizeof(ok_rec), 1, 0, 2);
	CHECK(decode_status(buf, len, &why) == 0, "hand-made record decodes");
	len = raw_batch(buf, ok_rec, sizeof(ok_rec), 1, 0, 1);
	CHECK(decode_status(buf, len, &why) == -EPROTONOSUPPORT,
	      "magic 1 is refused: %s", why);
	len = raw_batch(buf, ok_rec, sizeof(ok_rec), 2, 0, 2);
	CHECK(decode_status(buf, len, &why) == -EINVAL && strstr(why, "fewer"),
	      "record count larger than the records: %s", why);
	len = raw_batch(buf, long_len, sizeof(long_len), 1, 0, 2);
	CHECK(decode_status(buf, len, &why) == -EINVAL,
	      "record length past the batch: %s", why);
	len = raw_batch(buf, extra, sizeof(extra), 1, 0, 2);
	CHECK(decode_status(buf, len, &why) == -EINVAL,
	      "record length beyond its fields: %s", why);
	len = raw_batch(buf, bad_key, sizeof(bad_key), 1, 0, 2);
	CHECK(decode_status(buf, len, &why) == -EINVAL,
	      "key length past the record: %s", why);
	len = raw_batch(buf, neg_hdrs, sizeof(neg_hdrs), 1, 0, 2);
	CHECK(decode_status(buf, len, &why) == -EINVAL,
	      "negative header count: %s", why);
	len = raw_batch(buf, null_hkey, sizeof(null_hkey), 1, 0, 2);
	CHECK(decode_status(buf, len, &why) == -EINVAL,
	      "null header key: %s", why);
	len = raw_batch(buf, ok_rec, sizeof(ok_rec), 1, 0, 2);
	buf[11] = 40;	/* batchLength below the header */
	krep_batch_iter_init(&it, buf, len);
	CHECK(krep_batch_next(&it, &b, &why) == -EINVAL,
	      "batch shorter than its header: %s", why);
}

/* ---- JSON of record bytes --------------------------------------------- */

static void test_json_bytes(void)
{
	static char out[128];
	FILE *f = fmemopen(out, sizeof(out), "w");

	json_escape_bytes(f, "a\xff\x00\xc3\xa9\"\n", 7);
	fclose(f);
	CHECK(!strcmp(out, "\"a\\u00ff\\u0000\xc3\xa9\\\"\\n\""),
	      "record bytes in JSON: invalid UTF-8 as \\u00XX (%s)", out);
}

int main(void)
{
	printf("TAP version 13\n");
	test_crc();
	test_varint();
	test_known_batch();
	test_known_batch2();
	test_round_trip();
	test_many();
	test_checks();
	test_json_bytes();
	printf("1..%d\n", tap_ntests);
	printf("# %d passed, %d failed\n", tap_ntests - tap_nfailed, tap_nfailed);
	return tap_nfailed ? 1 : 0;
}
