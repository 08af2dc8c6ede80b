// SPDX-License-Identifier: GPL-2.0
/*
 * krep: RecordBatch v2 parsing and validation.
 *
 * A producer's batch is checked once, here, before it is appended: sizes,
 * magic, CRC-32C (Castagnoli, over the attributes to the end) and, for
 * uncompressed batches, the framing of every record. The leader then
 * writes baseOffset and partitionLeaderEpoch, which the CRC does not cover,
 * so the batch is served as it is stored.
 */
#include <crypto/hash.h>
#include <linux/compiler.h>
#include <linux/crc32.h>
#include <linux/err.h>
#include <linux/errno.h>
#include <linux/minmax.h>
#include <linux/string.h>
#include <asm/unaligned.h>

#include "record.h"

/*
 * CRC-32C through the crypto API's "crc32c", as libcrc32c does: the
 * CPU's instruction where it has one (crc32c-intel, loaded on demand),
 * else the table-driven crc32c_generic; loading krep needs no other
 * module by name. Set at module load, read-only after.
 */
static struct crypto_shash *krep_crc_tfm;

int krep_crc_init(void)
{
	struct crypto_shash *tfm = crypto_alloc_shash("crc32c", 0, 0);

	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	krep_crc_tfm = tfm;
	pr_debug("krep: CRC-32C by %s\n", crypto_shash_driver_name(tfm));
	return 0;
}

void krep_crc_exit(void)
{
	crypto_free_shash(krep_crc_tfm);
	krep_crc_tfm = NULL;
}

/**
 * krep_crc32c - continue the CRC-32C @crc (no final inversion) over @p
 * @crc: ~0 to start; the result of the call before to go on
 * @p: the bytes
 * @len: how many
 */
u32 krep_crc32c(u32 crc, const void *p, size_t len)
{
	SHASH_DESC_ON_STACK(desc, krep_crc_tfm);
	u32 *ctx = shash_desc_ctx(desc);

	desc->tfm = krep_crc_tfm;
	*ctx = crc;
	/* crc32c's update does not fail; should a driver, count on none */
	if (crypto_shash_update(desc, p, len))
		*ctx = __crc32c_le(crc, p, len);
	crc = *ctx;
	barrier_data(ctx);
	return crc;
}

static u32 crc32c(const u8 *p, size_t len)
{
	return krep_crc32c(~0U, p, len) ^ ~0U;
}

/* parse the header of a batch that is at least KREP_RB_HDR_LEN long */
static int get_varlong(const u8 **p, const u8 *end, s64 *val);
static s8 ctrl_type(const u8 *rec, const u8 *end);

/**
 * krep_batch_parse - the header fields of a batch
 * @buf: the batch's first @len bytes: at least its header; for a control
 *	batch, KREP_CTRL_PEEK_LEN more bytes tell its type
 * @len: how many bytes @buf holds (less than the batch is fine)
 * @b: set to the fields, host order
 *
 * Return: 0, or -EINVAL for a header that is not RecordBatch v2.
 */
int krep_batch_parse(const u8 *buf, size_t len, struct krep_batch *b)
{
	s32 blen;

	if (len < KREP_RB_HDR_LEN)
		return -EINVAL;
	blen = get_unaligned_be32(buf + KREP_RB_LENGTH);
	if (blen < KREP_RB_HDR_LEN - KREP_RB_LOG_OVERHEAD)
		return -EINVAL;
	b->base_offset = get_unaligned_be64(buf + KREP_RB_BASE_OFFSET);
	b->len = blen + KREP_RB_LOG_OVERHEAD;
	b->leader_epoch = get_unaligned_be32(buf + KREP_RB_LEADER_EPOCH);
	b->attributes = get_unaligned_be16(buf + KREP_RB_ATTRIBUTES);
	b->last_delta = get_unaligned_be32(buf + KREP_RB_LAST_DELTA);
	b->base_ts = get_unaligned_be64(buf + KREP_RB_BASE_TS);
	b->max_ts = get_unaligned_be64(buf + KREP_RB_MAX_TS);
	b->producer_id = get_unaligned_be64(buf + KREP_RB_PRODUCER_ID);
	b->producer_epoch = get_unaligned_be16(buf + KREP_RB_PRODUCER_EPOCH);
	b->base_seq = get_unaligned_be32(buf + KREP_RB_BASE_SEQ);
	b->count = get_unaligned_be32(buf + KREP_RB_COUNT);
	b->ctrl_type = -1;
	if ((b->attributes & KREP_RB_ATTR_CONTROL) && b->len > KREP_RB_HDR_LEN)
		b->ctrl_type = ctrl_type(buf + KREP_RB_HDR_LEN,
					 buf + min_t(size_t, len, b->len));
	/* a leader's records are input too: nothing that would move LEO back */
	if (buf[KREP_RB_MAGIC] != KREP_RB_MAGIC_V2 || b->last_delta < 0 ||
	    b->base_offset < 0)
		return -EINVAL;
	return 0;
}

bool krep_batch_crc_ok(const u8 *buf, size_t len)
{
	return get_unaligned_be32(buf + KREP_RB_CRC) ==
	       crc32c(buf + KREP_RB_ATTRIBUTES, len - KREP_RB_ATTRIBUTES);
}

/* zigzag varint of at most @max bytes; -EINVAL when malformed */
static int get_varlong(const u8 **p, const u8 *end, s64 *val)
{
	u64 raw = 0;
	int shift;

	for (shift = 0; shift < 64; shift += 7) {
		u8 byte;

		if (*p >= end)
			return -EINVAL;
		byte = *(*p)++;
		raw |= (u64)(byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			*val = (s64)(raw >> 1) ^ -(s64)(raw & 1);
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * The type in a control record's key (version int16, type int16) of the
 * record at @rec, or -1 when it does not parse or is not one krep knows
 */
static s8 ctrl_type(const u8 *rec, const u8 *end)
{
	s64 rlen, v;
	u16 type;

	if (get_varlong(&rec, end, &rlen) || rlen < 1 || end - rec < 1)
		return -1;
	rec++;				/* attributes */
	if (get_varlong(&rec, end, &v) ||	/* timestamp delta */
	    get_varlong(&rec, end, &v) ||	/* offset delta */
	    get_varlong(&rec, end, &v) ||	/* key length */
	    v < 4 || end - rec < 4)
		return -1;
	type = get_unaligned_be16(rec + 2);
	return type == KREP_CTRL_ABORT || type == KREP_CTRL_COMMIT ? type : -1;
}

/* a length field: -1 (null) or 0..(end - p), followed by that many bytes */
static int skip_bytes(const u8 **p, const u8 *end, bool nullable)
{
	s64 n;

	if (get_varlong(p, end, &n))
		return -EINVAL;
	if (n == -1 && nullable)
		return 0;
	if (n < 0 || n > end - *p)
		return -EINVAL;
	*p += n;
	return 0;
}

/*
 * Walk the records of an uncompressed batch. Return the number of records
 * and, if @ts_target is not NULL, set @*found to the offset delta of the
 * first record whose timestamp is at least @ts_target (or -1).
 */
static int walk_records(const u8 *buf, size_t len, const struct krep_batch *b,
			const s64 *ts_target, s64 min_delta, s64 *found,
			s64 *found_ts)
{
	const u8 *p = buf + KREP_RB_HDR_LEN, *end = buf + len;
	s64 rlen, ts_delta, off_delta, nheaders, i;
	int n = 0;

	if (found)
		*found = -1;
	while (p < end) {
		const u8 *rend;

		if (get_varlong(&p, end, &rlen) || rlen < 1 || rlen > end - p)
			return -EINVAL;
		rend = p + rlen;
		p++;	/* attributes */
		if (get_varlong(&p, rend, &ts_delta) ||
		    get_varlong(&p, rend, &off_delta) || off_delta != n ||
		    skip_bytes(&p, rend, true) ||	/* key */
		    skip_bytes(&p, rend, true) ||	/* value */
		    get_varlong(&p, rend, &nheaders) || nheaders < 0)
			return -EINVAL;
		for (i = 0; i < nheaders; i++) {
			if (skip_bytes(&p, rend, false) ||
			    skip_bytes(&p, rend, true))
				return -EINVAL;
		}
		if (p != rend)
			return -EINVAL;
		if (ts_target && *found < 0 && off_delta >= min_delta &&
		    b->base_ts + ts_delta >= *ts_target) {
			*found = off_delta;
			*found_ts = b->base_ts + ts_delta;
		}
		n++;
	}
	return n;
}

/**
 * krep_batch_check_head - the checks of krep_batch_check() that need
 * only a batch's header
 * @buf: the batch's first @avail bytes
 * @avail: at least KREP_RB_HDR_LEN, or all of the batch
 * @len: the batch's length
 * @b: set to its parsed header
 * @why: set to a reason on failure
 *
 * Return: 0, or -EINVAL for a batch that is not RecordBatch v2 or whose
 * length is not @len.
 */
int krep_batch_check_head(const u8 *buf, size_t avail, size_t len,
			  struct krep_batch *b, const char **why)
{
	/* the magic first: an older message set has another layout */
	if (avail > KREP_RB_MAGIC && buf[KREP_RB_MAGIC] != KREP_RB_MAGIC_V2) {
		*why = "magic is not 2: only RecordBatch v2 is accepted";
		return -EINVAL;
	}
	if (len < KREP_RB_HDR_LEN || avail < KREP_RB_HDR_LEN) {
		*why = "records shorter than a RecordBatch v2 header (61 bytes)";
		return -EINVAL;
	}
	if (krep_batch_parse(buf, avail, b) || b->len != len) {
		*why = "batch length does not match the records attribute";
		return -EINVAL;
	}
	return 0;
}

/**
 * krep_batch_check - validate a producer's batch
 * @buf: the batch, exactly @len bytes
 * @len: its length
 * @b: set to its parsed header
 * @why: set to a reason on failure
 *
 * Return: 0; -EBADMSG for a CRC mismatch (CORRUPT_MESSAGE); -EINVAL for a
 * malformed batch (INVALID_RECORD).
 */
int krep_batch_check(const u8 *buf, size_t len, struct krep_batch *b,
		     const char **why)
{
	int n = krep_batch_check_head(buf, len, len, b, why);

	if (n)
		return n;
	if (!krep_batch_crc_ok(buf, len)) {
		*why = "batch CRC-32C mismatch";
		return -EBADMSG;
	}
	if (b->attributes & KREP_RB_ATTR_CONTROL) {
		*why = "producers cannot write control batches";
		return -EINVAL;
	}
	if (b->count < 1 || b->last_delta != b->count - 1) {
		*why = "record count and last offset delta disagree";
		return -EINVAL;
	}
	if ((b->attributes & KREP_RB_ATTR_TRANSACTIONAL) && b->producer_id < 0) {
		*why = "transactional batch without a producer id";
		return -EINVAL;
	}
	if (b->attributes & KREP_RB_ATTR_COMPRESSION)
		return 0;	/* stored as is; records are the client's */
	n = walk_records(buf, len, b, NULL, 0, NULL, NULL);
	if (n != b->count) {
		*why = "malformed record in batch";
		return -EINVAL;
	}
	return 0;
}

/* the leader's stamp: offsets and its epoch, outside the CRC */
void krep_batch_stamp(u8 *buf, u64 base_offset, u32 leader_epoch)
{
	put_unaligned_be64(base_offset, buf + KREP_RB_BASE_OFFSET);
	put_unaligned_be32(leader_epoch, buf + KREP_RB_LEADER_EPOCH);
}

/*
 * The offset of the first record of a stored batch, at @min_offset or
 * later, with a timestamp of at least @ts, or -1; @found_ts is set to that
 * record's timestamp. Compressed batches answer their base offset and max
 * timestamp when the latter qualifies.
 */
s64 krep_batch_offset_for_ts(const u8 *buf, size_t len, s64 ts,
			     u64 min_offset, s64 *found_ts)
{
	struct krep_batch b;
	s64 found;

	if (krep_batch_parse(buf, len, &b) || b.max_ts < ts)
		return -1;
	if (b.attributes & KREP_RB_ATTR_COMPRESSION) {
		*found_ts = b.max_ts;
		return max_t(s64, b.base_offset, min_offset);
	}
	if (walk_records(buf, len, &b, &ts,
			 (s64)min_offset - b.base_offset, &found,
			 found_ts) < 0 || found < 0)
		return -1;
	return b.base_offset + found;
}

/*
 * A commit or abort marker: a control batch with one record whose key is
 * (version 0, type) and value (version 0, coordinator epoch 0), as Kafka
 * writes them. @buf has KREP_CTRL_BATCH_LEN bytes.
 */
void krep_batch_build_control(u8 *buf, u64 producer_id, u16 producer_epoch,
			      bool commit, s64 now_ms)
{
	u8 *r = buf + KREP_RB_HDR_LEN;

	memset(buf, 0, KREP_CTRL_BATCH_LEN);
	put_unaligned_be32(KREP_CTRL_BATCH_LEN - KREP_RB_LOG_OVERHEAD,
			   buf + KREP_RB_LENGTH);
	buf[KREP_RB_MAGIC] = KREP_RB_MAGIC_V2;
	put_unaligned_be16(KREP_RB_ATTR_TRANSACTIONAL | KREP_RB_ATTR_CONTROL,
			   buf + KREP_RB_ATTRIBUTES);
	put_unaligned_be64(now_ms, buf + KREP_RB_BASE_TS);
	put_unaligned_be64(now_ms, buf + KREP_RB_MAX_TS);
	put_unaligned_be64(producer_id, buf + KREP_RB_PRODUCER_ID);
	put_unaligned_be16(producer_epoch, buf + KREP_RB_PRODUCER_EPOCH);
	put_unaligned_be32(-1, buf + KREP_RB_BASE_SEQ);
	put_unaligned_be32(1, buf + KREP_RB_COUNT);
	/* record: len 16, attrs, ts delta 0, offset delta 0, key 4, value 6 */
	r[0] = 16 << 1;
	r[1] = 0;
	r[2] = 0;
	r[3] = 0;
	r[4] = 4 << 1;
	put_unaligned_be16(0, r + 5);
	put_unaligned_be16(commit ? KREP_CTRL_COMMIT : KREP_CTRL_ABORT, r + 7);
	r[9] = 6 << 1;
	put_unaligned_be16(0, r + 10);
	put_unaligned_be32(0, r + 12);
	r[16] = 0;	/* no headers */
	put_unaligned_be32(crc32c(buf + KREP_RB_ATTRIBUTES,
				  KREP_CTRL_BATCH_LEN - KREP_RB_ATTRIBUTES),
			   buf + KREP_RB_CRC);
}
