/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: Kafka's wire primitives: a bounded read cursor whose first error
 * sticks, and a growing write buffer. Fixed-width integers are
 * big-endian; flexible versions use unsigned varints for lengths
 * (length + 1, 0 for null) and end every structure with tagged fields.
 */
#ifndef _KREP_KPROTO_H
#define _KREP_KPROTO_H

#include <linux/types.h>

/* a read cursor over a request; every get checks the bounds */
struct krep_kr {
	const u8 *p, *end;
	bool bad;
	bool flex;			/* the request's version is flexible */
};

static inline void krep_kr_init(struct krep_kr *r, const void *buf, u32 len,
				bool flex)
{
	r->p = buf;
	r->end = r->p + len;
	r->bad = false;
	r->flex = flex;
}

s8 krep_kr_i8(struct krep_kr *r);
s16 krep_kr_i16(struct krep_kr *r);
s32 krep_kr_i32(struct krep_kr *r);
s64 krep_kr_i64(struct krep_kr *r);
u32 krep_kr_uvarint(struct krep_kr *r);
const u8 *krep_kr_bytes(struct krep_kr *r, u32 len);
/* a string: NULL for null (or bad), @len set; compact when flexible */
const char *krep_kr_string(struct krep_kr *r, u16 *len);
/* a byte array of records: int32 length, or uvarint when flexible */
const u8 *krep_kr_records(struct krep_kr *r, u32 *len);
/* an array's count, -1 for null; at most @max or the cursor goes bad */
s32 krep_kr_array(struct krep_kr *r, u32 max);
/* skip a structure's tagged fields (flexible versions only) */
void krep_kr_tags(struct krep_kr *r);

static inline bool krep_kr_done(const struct krep_kr *r)
{
	return !r->bad && r->p == r->end;
}

/* the largest response (bytes besides records sent from the log) */
#define KREP_KW_MAX	(4U << 20)

/* a response under construction; memory errors stick in @err */
struct krep_kw {
	u8 *buf;
	u32 len, cap;
	int err;
	bool flex;
};

void krep_kw_init(struct krep_kw *w, bool flex);
void krep_kw_free(struct krep_kw *w);
void krep_kw_i8(struct krep_kw *w, s8 v);
void krep_kw_i16(struct krep_kw *w, s16 v);
void krep_kw_i32(struct krep_kw *w, s32 v);
void krep_kw_i64(struct krep_kw *w, s64 v);
void krep_kw_uvarint(struct krep_kw *w, u32 v);
void krep_kw_string(struct krep_kw *w, const char *s, u16 len);
void krep_kw_nullstring(struct krep_kw *w);
void krep_kw_array(struct krep_kw *w, s32 n);
void krep_kw_tags(struct krep_kw *w);
/* reserve 4 bytes to fill in later with krep_kw_patch32(); the offset */
u32 krep_kw_reserve32(struct krep_kw *w);
void krep_kw_patch16(struct krep_kw *w, u32 at, u16 v);
void krep_kw_patch32(struct krep_kw *w, u32 at, u32 v);
void krep_kw_patch64(struct krep_kw *w, u32 at, u64 v);

#endif /* _KREP_KPROTO_H */
