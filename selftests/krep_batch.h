/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep_batch - Kafka RecordBatch v2 built by hand for the C selftests
 * (log_test, fuzz_genl): CRC-32C, big-endian fields, zigzag varints.
 */
#ifndef KREP_SELFTESTS_KREP_BATCH_H
#define KREP_SELFTESTS_KREP_BATCH_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/types.h>

#define RB_HDR_LEN		61
#define RB_ATTR_TXN		0x10
#define RB_ATTR_CONTROL		0x20

__u32 crc32c(const __u8 *p, size_t n);

static inline void be16(__u8 *p, __u16 v) { p[0] = v >> 8; p[1] = v; }
static inline void be32(__u8 *p, __u32 v) { be16(p, v >> 16); be16(p + 2, v); }
static inline void be64(__u8 *p, __u64 v) { be32(p, v >> 32); be32(p + 4, v); }
static inline __u16 rd16(const __u8 *p) { return (__u16)p[0] << 8 | p[1]; }
static inline __u32 rd32(const __u8 *p) { return (__u32)rd16(p) << 16 | rd16(p + 2); }
static inline __u64 rd64(const __u8 *p) { return (__u64)rd32(p) << 32 | rd32(p + 4); }

/* a zigzag varint (Kafka's varlong) at @p; returns the end */
__u8 *put_varlong(__u8 *p, __s64 v);
/* a varint length and @len bytes at @p; returns the end */
__u8 *put_bytes(__u8 *p, const void *d, int len);

struct rec {
	__s64 ts;
	const void *key;	/* NULL: a null key */
	int klen;
	const void *value;	/* NULL: a null value */
	int vlen;
	const char *hkey;	/* one header, or none */
	const char *hval;
};

struct batch_opts {
	bool txn;
	__s64 pid;
	__s16 epoch;
	__s32 seq;
};

/*
 * A RecordBatch v2 of @n records in @buf (at most @cap bytes, and at most
 * NLA_PAYLOAD_MAX): base offset 0, CRC-32C set; returns its length. No
 * @o: no producer id (-1), not transactional.
 */
size_t batch_build(__u8 *buf, size_t cap, const struct rec *recs, int n,
		   const struct batch_opts *o);

#endif /* KREP_SELFTESTS_KREP_BATCH_H */
