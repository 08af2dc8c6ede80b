/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: Kafka RecordBatch v2 (magic 2), the log's on-memory and on-wire
 * format, checked once on append and stored byte for byte.
 */
#ifndef _KREP_RECORD_H
#define _KREP_RECORD_H

#include <linux/types.h>

/* byte offsets in the batch header, all fields big-endian */
#define KREP_RB_BASE_OFFSET	0	/* s64 */
#define KREP_RB_LENGTH		8	/* s32: bytes after this field */
#define KREP_RB_LEADER_EPOCH	12	/* s32 */
#define KREP_RB_MAGIC		16	/* s8 */
#define KREP_RB_CRC		17	/* u32: CRC-32C from ATTRIBUTES on */
#define KREP_RB_ATTRIBUTES	21	/* s16 */
#define KREP_RB_LAST_DELTA	23	/* s32 */
#define KREP_RB_BASE_TS		27	/* s64 */
#define KREP_RB_MAX_TS		35	/* s64 */
#define KREP_RB_PRODUCER_ID	43	/* s64 */
#define KREP_RB_PRODUCER_EPOCH	51	/* s16 */
#define KREP_RB_BASE_SEQ	53	/* s32 */
#define KREP_RB_COUNT		57	/* s32 */
#define KREP_RB_HDR_LEN		61
#define KREP_RB_LOG_OVERHEAD	12	/* baseOffset + batchLength */

#define KREP_RB_ATTR_COMPRESSION	0x07
#define KREP_RB_ATTR_TS_LOG_APPEND	0x08
#define KREP_RB_ATTR_TRANSACTIONAL	0x10
#define KREP_RB_ATTR_CONTROL		0x20
#define KREP_RB_ATTR_DELETE_HORIZON	0x40

#define KREP_RB_MAGIC_V2	2

/* control record types (key of a control batch's single record) */
#define KREP_CTRL_ABORT		0
#define KREP_CTRL_COMMIT	1
#define KREP_CTRL_BATCH_LEN	(KREP_RB_HDR_LEN + 17)
/*
 * what krep_batch_parse() reads past the header to know a control type:
 * the record's length (5 bytes at most), attributes (1), timestamp delta
 * (10), offset delta (5), key length (5) and the key's version and type (4)
 */
#define KREP_CTRL_PEEK_LEN	30

/* the header fields of a batch, host order */
struct krep_batch {
	s64 base_offset;
	u32 len;		/* whole batch, header included */
	s32 leader_epoch;
	u16 attributes;
	s32 last_delta;
	s64 base_ts;
	s64 max_ts;
	s64 producer_id;
	s16 producer_epoch;
	s32 base_seq;		/* -1: no sequence (not idempotent) */
	s32 count;
	s8 ctrl_type;		/* a control batch's KREP_CTRL_*, else -1 */
};

static inline u64 krep_batch_last(const struct krep_batch *b)
{
	return b->base_offset + b->last_delta;
}

int krep_batch_parse(const u8 *buf, size_t len, struct krep_batch *b);
u32 krep_crc32c(u32 crc, const void *p, size_t len);
int krep_crc_init(void);
void krep_crc_exit(void);
int krep_batch_check_head(const u8 *buf, size_t avail, size_t len,
			  struct krep_batch *b, const char **why);
int krep_batch_check(const u8 *buf, size_t len, struct krep_batch *b,
		     const char **why);
bool krep_batch_crc_ok(const u8 *buf, size_t len);
void krep_batch_stamp(u8 *buf, u64 base_offset, u32 leader_epoch);
s64 krep_batch_offset_for_ts(const u8 *buf, size_t len, s64 ts,
			     u64 min_offset, s64 *found_ts);
void krep_batch_build_control(u8 *buf, u64 producer_id, u16 producer_epoch,
			      bool commit, s64 now_ms);

#endif /* _KREP_RECORD_H */
