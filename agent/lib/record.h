/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kafka's RecordBatch v2 (magic 2), byte for byte as Kafka writes it:
 * an encoder that builds one uncompressed batch from records for PRODUCE,
 * and a decoder that walks the batches of a FETCH's KREP_A_RECORDS and
 * the records in each.
 *
 * Batch header (61 bytes, big-endian):
 *
 *	baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 |
 *	magic int8 | crc uint32 | attributes int16 | lastOffsetDelta int32 |
 *	baseTimestamp int64 | maxTimestamp int64 | producerId int64 |
 *	producerEpoch int16 | baseSequence int32 | recordCount int32
 *
 * batchLength counts the bytes after itself; the CRC-32C (Castagnoli)
 * covers attributes to the end. Each record is
 *
 *	length varint | attributes int8 | timestampDelta varlong |
 *	offsetDelta varint | keyLength varint | key | valueLength varint |
 *	value | headerCount varint | (keyLength varint | key |
 *	valueLength varint | value)...
 *
 * with zigzag varints and -1 for a null key or value.
 */
#ifndef KREP_AGENT_RECORD_H
#define KREP_AGENT_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KREP_RB_HDR_LEN		61
#define KREP_RB_LOG_OVERHEAD	12	/* baseOffset + batchLength */
#define KREP_RB_MAGIC_V2	2

/* byte offsets of the header fields */
#define KREP_RB_OFF_LENGTH	8
#define KREP_RB_OFF_EPOCH	12
#define KREP_RB_OFF_MAGIC	16
#define KREP_RB_OFF_CRC		17
#define KREP_RB_OFF_ATTRS	21

/* attributes */
#define KREP_RB_ATTR_COMPRESSION	0x07
#define KREP_RB_ATTR_LOG_APPEND_TIME	0x08
#define KREP_RB_ATTR_TRANSACTIONAL	0x10
#define KREP_RB_ATTR_CONTROL		0x20

/* the key of a control record: version int16, type int16 */
#define KREP_CTRL_ABORT		0
#define KREP_CTRL_COMMIT	1

#define KREP_NO_PRODUCER_ID	(-1LL)
#define KREP_NO_PRODUCER_EPOCH	(-1)
#define KREP_NO_SEQUENCE	(-1)

uint32_t krep_crc32c(uint32_t crc, const void *buf, size_t len);

/* A byte string that may be null (Kafka's nullable bytes). */
struct krep_bytes {
	const uint8_t *data;
	int32_t len;		/* -1: null */
};

struct krep_header {
	struct krep_bytes key;	/* never null on the wire */
	struct krep_bytes value;
};

/* A record to encode. */
struct krep_record {
	int64_t timestamp;	/* ms since the epoch */
	struct krep_bytes key;
	struct krep_bytes value;
	size_t nheaders;
	const struct krep_header *headers;
};

/* ---- encoder ---------------------------------------------------------- */

struct krep_batch_enc {
	uint8_t *buf;		/* header room, then the records */
	size_t len, cap;
	int32_t count;
	int64_t base_ts, max_ts;
	int16_t attributes;
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t base_sequence;
};

/*
 * Start an empty batch. @transactional sets the attribute bit; producer
 * id, epoch and base sequence go into the header as given (use
 * KREP_NO_PRODUCER_ID, KREP_NO_PRODUCER_EPOCH and KREP_NO_SEQUENCE for a
 * plain producer).
 */
void krep_batch_enc_init(struct krep_batch_enc *e, bool transactional,
			 int64_t producer_id, int16_t producer_epoch,
			 int32_t base_sequence);
/* Empty it again for the next batch, keeping the buffer and producer. */
void krep_batch_enc_reset(struct krep_batch_enc *e, int32_t base_sequence);
void krep_batch_enc_free(struct krep_batch_enc *e);

/* Bytes adding @r would make the batch; -1 if it cannot be encoded. */
int64_t krep_batch_enc_size_with(const struct krep_batch_enc *e,
				 const struct krep_record *r);
/* Append @r. Returns 0, -EINVAL (lengths out of range), -ENOMEM. */
int krep_batch_enc_add(struct krep_batch_enc *e, const struct krep_record *r);
/*
 * Fill in the header (baseOffset 0, partitionLeaderEpoch -1 as Kafka's
 * producers send them) and the CRC; returns the batch and sets @len.
 * NULL for a batch without records.
 */
const uint8_t *krep_batch_enc_finish(struct krep_batch_enc *e, size_t *len);

/* ---- decoder ---------------------------------------------------------- */

struct krep_batch {
	int64_t base_offset;
	int32_t length;		/* batchLength: bytes after the field */
	int32_t leader_epoch;
	int8_t magic;
	uint32_t crc;
	int16_t attributes;
	int32_t last_offset_delta;
	int64_t base_ts, max_ts;
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t base_sequence;
	int32_t count;
	const uint8_t *data;	/* the whole batch */
	size_t size;		/* = length + KREP_RB_LOG_OVERHEAD */
};

static inline bool krep_batch_is_control(const struct krep_batch *b)
{
	return b->attributes & KREP_RB_ATTR_CONTROL;
}

static inline bool krep_batch_is_transactional(const struct krep_batch *b)
{
	return b->attributes & KREP_RB_ATTR_TRANSACTIONAL;
}

static inline int64_t krep_batch_last_offset(const struct krep_batch *b)
{
	return b->base_offset + b->last_offset_delta;
}

/* Walks the batches of a buffer such as a FETCH's KREP_A_RECORDS. */
struct krep_batch_iter {
	const uint8_t *p, *end;
	bool partial;		/* stopped at a truncated trailing batch */
};

void krep_batch_iter_init(struct krep_batch_iter *it, const void *buf,
			  size_t len);
/*
 * The next batch in @b: 1, or 0 at the end (a truncated batch at the end
 * of the buffer, as Kafka may send one, ends it and sets @it->partial).
 * -EPROTONOSUPPORT for a magic other than 2, -EBADMSG for a CRC mismatch,
 * -EINVAL for a malformed header; @why says which. The iterator has
 * moved past the batch whatever the result, except for -EINVAL.
 */
int krep_batch_next(struct krep_batch_iter *it, struct krep_batch *b,
		    const char **why);

/* A decoded record; the byte strings point into the batch. */
struct krep_record_view {
	int64_t offset;		/* baseOffset + offsetDelta */
	int64_t timestamp;	/* baseTimestamp + timestampDelta */
	int8_t attributes;
	struct krep_bytes key;
	struct krep_bytes value;
	int32_t nheaders;
	const uint8_t *headers;	/* the encoded headers, for the iterator */
	const uint8_t *headers_end;
};

struct krep_record_iter {
	const struct krep_batch *b;
	const uint8_t *p, *end;
	int32_t index;
};

/* Records of an uncompressed batch (not for compressed ones). */
void krep_record_iter_init(struct krep_record_iter *it,
			   const struct krep_batch *b);
/*
 * The next record: 1, 0 after the last (recordCount of them, with no
 * bytes left over), or -EINVAL for a malformed record (@why says how).
 */
int krep_record_next(struct krep_record_iter *it, struct krep_record_view *r,
		     const char **why);

struct krep_header_iter {
	const uint8_t *p, *end;
	int32_t left;
};

void krep_header_iter_init(struct krep_header_iter *it,
			   const struct krep_record_view *r);
/* 1 with the next header in @h, or 0 after the last. */
int krep_header_next(struct krep_header_iter *it, struct krep_header *h);

/*
 * A control record's type (KREP_CTRL_COMMIT, KREP_CTRL_ABORT, ...) from
 * its key, or -1 when the key is not a control key.
 */
int krep_control_type(const struct krep_record_view *r);

/* ---- varints, exported for the tests ----------------------------------- */

size_t krep_varint_size(int64_t v);
size_t krep_varint_put(uint8_t *p, int64_t v);
/* Zigzag varint of at most @max_bytes (5 or 10); -EINVAL if malformed. */
int krep_varint_get(const uint8_t **p, const uint8_t *end, int max_bytes,
		    int64_t *v);

#endif
