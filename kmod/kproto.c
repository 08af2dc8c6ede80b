// SPDX-License-Identifier: GPL-2.0
/*
 * krep: Kafka's wire primitives (kproto.h). A client's request is read
 * with one cursor: the first out-of-bounds or malformed field makes it
 * bad for good, and the caller checks krep_kr_done() once at the end.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <asm/unaligned.h>

#include "krep.h"
#include "kproto.h"

const u8 *krep_kr_bytes(struct krep_kr *r, u32 len)
{
	const u8 *p = r->p;

	if (r->bad || len > r->end - r->p) {
		r->bad = true;
		return NULL;
	}
	r->p += len;
	return p;
}

s8 krep_kr_i8(struct krep_kr *r)
{
	const u8 *p = krep_kr_bytes(r, 1);

	return p ? (s8)*p : 0;
}

s16 krep_kr_i16(struct krep_kr *r)
{
	const u8 *p = krep_kr_bytes(r, 2);

	return p ? (s16)get_unaligned_be16(p) : 0;
}

s32 krep_kr_i32(struct krep_kr *r)
{
	const u8 *p = krep_kr_bytes(r, 4);

	return p ? (s32)get_unaligned_be32(p) : 0;
}

s64 krep_kr_i64(struct krep_kr *r)
{
	const u8 *p = krep_kr_bytes(r, 8);

	return p ? (s64)get_unaligned_be64(p) : 0;
}

/* at most 5 bytes, and no bits past 32 */
u32 krep_kr_uvarint(struct krep_kr *r)
{
	u32 v = 0;
	int i;

	for (i = 0; i < 5; i++) {
		const u8 *p = krep_kr_bytes(r, 1);

		if (!p)
			return 0;
		if (i == 4 && *p > 0x0f)
			break;
		v |= (u32)(*p & 0x7f) << (7 * i);
		if (!(*p & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

const char *krep_kr_string(struct krep_kr *r, u16 *len)
{
	s64 n;

	if (r->flex)
		n = (s64)krep_kr_uvarint(r) - 1;
	else
		n = krep_kr_i16(r);
	*len = 0;
	if (n < -1)
		r->bad = true;		/* only -1 means null */
	if (r->bad || n < 0)
		return NULL;		/* null */
	if (n > U16_MAX) {
		r->bad = true;
		return NULL;
	}
	*len = n;
	return (const char *)krep_kr_bytes(r, n);
}

const u8 *krep_kr_records(struct krep_kr *r, u32 *len)
{
	s64 n = r->flex ? (s64)krep_kr_uvarint(r) - 1 : krep_kr_i32(r);

	*len = 0;
	if (n < -1)
		r->bad = true;
	if (r->bad || n < 0)
		return NULL;
	*len = n;
	return krep_kr_bytes(r, n);
}

s32 krep_kr_array(struct krep_kr *r, u32 max)
{
	s64 n = r->flex ? (s64)krep_kr_uvarint(r) - 1 : krep_kr_i32(r);

	if (r->bad)
		return 0;
	if (n < -1 || n > max) {
		r->bad = true;
		return 0;
	}
	return n;
}

void krep_kr_tags(struct krep_kr *r)
{
	u32 n, i;

	if (!r->flex)
		return;
	n = krep_kr_uvarint(r);
	for (i = 0; i < n && !r->bad; i++) {
		krep_kr_uvarint(r);			/* tag */
		krep_kr_bytes(r, krep_kr_uvarint(r));	/* its data */
	}
}

void krep_kw_init(struct krep_kw *w, bool flex)
{
	memset(w, 0, sizeof(*w));
	w->flex = flex;
}

void krep_kw_free(struct krep_kw *w)
{
	kvfree(w->buf);
	w->buf = NULL;
	w->len = 0;
	w->cap = 0;
}

/* room for @n more bytes, or NULL and the error sticks */
static u8 *kw_room(struct krep_kw *w, u32 n)
{
	u8 *p;

	if (w->err)
		return NULL;
	if (n > KREP_KW_MAX - w->len) {
		w->err = -EMSGSIZE;	/* no response grows past this */
		return NULL;
	}
	if (w->len + n > w->cap) {
		u32 cap = min(max3(256U, w->cap * 2, w->len + n), KREP_KW_MAX);

		p = krep_kvmalloc_brief(cap, 0);
		if (!p) {
			w->err = -ENOMEM;
			return NULL;
		}
		if (w->len)
			memcpy(p, w->buf, w->len);
		kvfree(w->buf);
		w->buf = p;
		w->cap = cap;
	}
	p = w->buf + w->len;
	w->len += n;
	return p;
}

void krep_kw_i8(struct krep_kw *w, s8 v)
{
	u8 *p = kw_room(w, 1);

	if (p)
		*p = v;
}

void krep_kw_i16(struct krep_kw *w, s16 v)
{
	u8 *p = kw_room(w, 2);

	if (p)
		put_unaligned_be16(v, p);
}

void krep_kw_i32(struct krep_kw *w, s32 v)
{
	u8 *p = kw_room(w, 4);

	if (p)
		put_unaligned_be32(v, p);
}

void krep_kw_i64(struct krep_kw *w, s64 v)
{
	u8 *p = kw_room(w, 8);

	if (p)
		put_unaligned_be64(v, p);
}

void krep_kw_uvarint(struct krep_kw *w, u32 v)
{
	do {
		krep_kw_i8(w, (v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

void krep_kw_string(struct krep_kw *w, const char *s, u16 len)
{
	u8 *p;

	if (w->flex)
		krep_kw_uvarint(w, len + 1);
	else
		krep_kw_i16(w, len);
	p = kw_room(w, len);
	if (p)
		memcpy(p, s, len);
}

void krep_kw_nullstring(struct krep_kw *w)
{
	if (w->flex)
		krep_kw_uvarint(w, 0);
	else
		krep_kw_i16(w, -1);
}

void krep_kw_array(struct krep_kw *w, s32 n)
{
	if (w->flex)
		krep_kw_uvarint(w, n + 1);
	else
		krep_kw_i32(w, n);
}

void krep_kw_tags(struct krep_kw *w)
{
	if (w->flex)
		krep_kw_uvarint(w, 0);
}

u32 krep_kw_reserve32(struct krep_kw *w)
{
	u32 at = w->len;

	kw_room(w, 4);
	return at;
}

void krep_kw_patch32(struct krep_kw *w, u32 at, u32 v)
{
	if (!w->err && at + 4 <= w->len)
		put_unaligned_be32(v, w->buf + at);
}

void krep_kw_patch16(struct krep_kw *w, u32 at, u16 v)
{
	if (!w->err && at + 2 <= w->len)
		put_unaligned_be16(v, w->buf + at);
}

void krep_kw_patch64(struct krep_kw *w, u32 at, u64 v)
{
	if (!w->err && at + 8 <= w->len)
		put_unaligned_be64(v, w->buf + at);
}
