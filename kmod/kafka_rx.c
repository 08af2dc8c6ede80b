// SPDX-License-Identifier: GPL-2.0
/*
 * krep: reading a Kafka request off a client's socket.
 *
 * A request is an int32 size and that many bytes. The receive work takes
 * them with the socket's read_sock (tcp_read_sock) straight from the
 * receive queue's buffers, one request per call. Every byte is copied
 * into the request's flat buffer, but the records of a Produce request:
 * those stay in the socket buffers that carried them (clones of the
 * skbs, struct krep_kpiece) until the partition's log copies them in,
 * so a produced batch is copied once, socket to log, as a follower's
 * FETCH response is (fetcher.c).
 *
 * To find the records, a Produce request of the versions krep serves (3
 * to 8, none flexible) is followed field by field as it arrives; the flat
 * buffer keeps each records field's length, not its bytes. From a field
 * that cannot be Produce's (a length out of range) on, the rest is read
 * flat, and kafka_api.c's parser then refuses the request as before.
 *
 * Pieces hold whole socket buffers, and a clone each. What they hold is
 * counted (krep_krx.pinned); beyond the request's own size it is charged
 * to the broker's budget for large requests (kafka.h), and beyond twice
 * the size, or when the budget is spent (a client sending tiny segments,
 * or a thousand tiny batches), the records field is copied into the
 * request's buffer instead, as any other field (krep_krec.flat). So the
 * memory a request holds stays bounded by its size and that budget.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/net.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <net/sock.h>
#include <asm/unaligned.h>

#include "krep.h"
#include "broker.h"
#include "kafka.h"
#include "net.h"
#include "param.h"

/* the fields of a request, in the order they come */
enum {
	KRX_SIZE,		/* int32 size, into size_buf */
	KRX_HEAD,		/* api key, version, correlation id, client id length */
	KRX_CLIENT,		/* client id */
	KRX_TXN_LEN,		/* Produce: transactional id length */
	KRX_TXN,
	KRX_ACKS,		/* acks, timeout, topic count */
	KRX_TNAME_LEN,
	KRX_TNAME,
	KRX_NPARTS,
	KRX_PART,		/* partition index, records length */
	KRX_RECORDS,		/* into pieces */
	KRX_FLAT,		/* the rest of the request */
};

#define KRX_HEAD_LEN		10
#define KRX_FIRST_CAP		512	/* flat bytes at first: a Produce's fit */

struct krx_read {
	struct krep_conn *c;
	struct krep_krx *x;
	int err;
	const char *why;
	u32 copied;			/* into size_buf or the request's buffer */
};

static s32 last16(const struct krep_krx *x)
{
	return (s16)get_unaligned_be16(x->q.buf + x->q.len - 2);
}

static s32 last32(const struct krep_krx *x)
{
	return (s32)get_unaligned_be32(x->q.buf + x->q.len - 4);
}

/* the next field: @need bytes of @step; what cannot fit is read flat */
static void expect(struct krep_krx *x, u8 step, s64 need)
{
	u32 left = x->size - x->got;

	if (need < 0 || need > left) {
		step = KRX_FLAT;
		need = left;
	}
	x->step = step;
	x->need = need;
}

/* a nullable string of the length just read (-1: null, no bytes) */
static void expect_nullable(struct krep_krx *x, u8 step)
{
	s64 n = last16(x);

	expect(x, step, n == -1 ? 0 : n);
}

/* the rest of the request, into its buffer */
static void rest_flat(struct krep_krx *x)
{
	expect(x, KRX_FLAT, x->size - x->got);
}

static void next_topic(struct krep_krx *x)
{
	if (x->topics_left-- > 0)
		expect(x, KRX_TNAME_LEN, 2);
	else
		rest_flat(x);
}

static void next_part(struct krep_krx *x)
{
	if (x->parts_left-- > 0)
		expect(x, KRX_PART, 8);
	else
		next_topic(x);
}

/* an array's count just read into *@left: its first entry, or none */
static void count_read(struct krep_krx *x, s32 *left,
		       void (*next)(struct krep_krx *x))
{
	*left = last32(x);
	if (*left < 0)
		rest_flat(x);
	else
		next(x);
}

/* grow an array of @size-byte entries to hold one more than @n */
static int room(void **arr, u32 n, u32 *cap, size_t size)
{
	u32 ncap = max(*cap * 2, 8U);
	void *a;

	if (n < *cap)
		return 0;
	a = krep_kvcalloc_brief(ncap, size);
	if (!a)
		return -ENOMEM;
	if (*arr)
		memcpy(a, *arr, (size_t)n * size);
	kvfree(*arr);
	*arr = a;
	*cap = ncap;
	return 0;
}

/* the request names a records field of @len bytes: a place for it */
static int rec_begin(struct krep_krx *x, s32 len)
{
	struct krep_kreq *q = &x->q;
	struct krep_krec *rec;

	if (room((void **)&q->recs, q->nrecs, &q->recs_cap, sizeof(*rec)))
		return -ENOMEM;
	rec = &q->recs[q->nrecs++];
	memset(rec, 0, sizeof(*rec));
	rec->first = q->npieces;
	rec->len = len;
	return 0;
}

/* a field is whole: decode it and say what comes next */
static int field_done(struct krep_krx *x)
{
	s32 n;

	switch (x->step) {
	case KRX_HEAD:
		n = get_unaligned_be16(x->q.buf + 2);	/* version */
		if (get_unaligned_be16(x->q.buf) != KREP_KAPI_PRODUCE ||
		    n < 3 || n > 8) {
			rest_flat(x);
			break;
		}
		expect_nullable(x, KRX_CLIENT);
		break;
	case KRX_CLIENT:
		expect(x, KRX_TXN_LEN, 2);
		break;
	case KRX_TXN_LEN:
		expect_nullable(x, KRX_TXN);
		break;
	case KRX_TXN:
		expect(x, KRX_ACKS, 10);
		break;
	case KRX_ACKS:
		count_read(x, &x->topics_left, next_topic);
		break;
	case KRX_TNAME_LEN:
		expect(x, KRX_TNAME, last16(x));
		break;
	case KRX_TNAME:
		expect(x, KRX_NPARTS, 4);
		break;
	case KRX_NPARTS:
		count_read(x, &x->parts_left, next_part);
		break;
	case KRX_PART:
		n = last32(x);
		if (n == -1) {
			next_part(x);
			break;
		}
		if (n < -1 || n > x->size - x->got ||
		    x->q.nrecs == KREP_KAFKA_MAX_PARTS) {
			rest_flat(x);
			break;
		}
		if (rec_begin(x, n))
			return -ENOMEM;
		expect(x, KRX_RECORDS, n);
		break;
	case KRX_RECORDS:
		next_part(x);
		break;
	default:
		rest_flat(x);
		break;
	}
	return 0;
}

/* make room for @n more flat bytes */
static int flat_room(struct krep_krx *x, u32 n)
{
	struct krep_kreq *q = &x->q;
	u32 cap;
	u8 *buf;

	if (q->len + n <= q->cap)
		return 0;
	/* the rest of a request read flat: all of it at once */
	cap = x->step == KRX_FLAT ? q->len + x->need :
	      min(max(q->cap * 2, q->len + n), x->size);
	buf = krep_kvmalloc_brief(cap, 0);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, q->buf, q->len);
	kvfree(q->buf);
	q->buf = buf;
	q->cap = cap;
	return 0;
}

/*
 * The pieces of @rec would hold too much: copy what they have into the
 * request's buffer, where the rest of the field follows, and drop them
 */
static int rec_flat(struct krep_krx *x, struct krep_krec *rec)
{
	struct krep_kreq *q = &x->q;
	u32 i;
	int err;

	err = flat_room(x, rec->len);
	if (err)
		return err;
	err = krep_krec_copy(q, rec, q->buf + q->len, rec->got);
	q->len += rec->got;
	for (i = rec->first; i < rec->first + rec->npieces; i++)
		consume_skb(q->pieces[i].skb);
	q->npieces = rec->first;
	rec->npieces = 0;
	rec->flat = true;
	return err;
}

/*
 * Socket memory of @share bytes more for a piece: within twice the
 * request's size, and charged to the budget for large requests past the
 * size. 0, or -ENOBUFS to copy instead.
 */
static int pin(struct krep_conn *c, struct krep_krx *x, u32 share)
{
	atomic_t *big = &c->kn->ns->kafka_rx_big;
	u64 to = (u64)x->pinned + share;
	u32 over;

	if (to > 2ULL * x->size + KREP_KAFKA_BIG)
		return -ENOBUFS;
	over = to > x->size ? to - max(x->pinned, x->size) : 0;
	if (over) {
		if (atomic_add_return(over, big) > KREP_KAFKA_BIG_BUDGET) {
			atomic_sub(over, big);
			return -ENOBUFS;
		}
		x->charged += over;
	}
	x->pinned = to;
	return 0;
}

/*
 * @n bytes at @off of @skb are records: a piece of the field being read.
 * Return: 0, 1 when the field is read flat from now on, or an errno.
 */
static int take_piece(struct krx_read *rd, struct sk_buff *skb, u32 off,
		      u32 n)
{
	struct krep_krx *x = rd->x;
	struct krep_kreq *q = &x->q;
	struct krep_krec *rec = &q->recs[q->nrecs - 1];
	struct krep_kpiece *pc;
	u32 share;
	int err;

	if (rec->flat)
		return 1;
	/* this piece's part of the buffer's memory, and its clone */
	share = DIV_ROUND_UP_ULL((u64)n * skb->truesize, skb->len) +
		sizeof(struct sk_buff);
	if (pin(rd->c, x, share))
		return rec_flat(x, rec) ?: 1;
	err = room((void **)&q->pieces, q->npieces, &q->pieces_cap,
		   sizeof(*pc));
	if (err)
		return err;
	pc = &q->pieces[q->npieces];
	pc->skb = skb_clone(skb, GFP_KERNEL | __GFP_NOWARN);
	if (!pc->skb)
		return -ENOMEM;
	pc->off = off;
	pc->len = n;
	q->npieces++;
	rec->npieces++;
	rec->got += n;
	return 0;
}

/* the request's size is in: check it and begin its body */
static int sized(struct krep_conn *c, struct krep_krx *x, const char **why)
{
	x->size = get_unaligned_be32(x->size_buf);
	if (x->size < KRX_HEAD_LEN ||
	    x->size > krep_param_kafka_max_request_bytes()) {
		*why = "request size out of range";
		return -EPROTO;
	}
	if (x->size > KREP_KAFKA_BIG) {
		atomic_t *big = &c->kn->ns->kafka_rx_big;

		if (atomic_add_return(x->size, big) > KREP_KAFKA_BIG_BUDGET) {
			atomic_sub(x->size, big);
			*why = "too many large requests being received";
			return -ENOBUFS;
		}
		x->charged = x->size;
	}
	x->q.cap = min_t(u32, x->size, KRX_FIRST_CAP);
	x->q.buf = krep_kvmalloc_brief(x->q.cap, 0);
	if (!x->q.buf) {
		*why = "out of memory for a request";
		return -ENOMEM;
	}
	x->got = 0;
	x->pinned = 0;
	expect(x, KRX_HEAD, KRX_HEAD_LEN);
	return 0;
}

/* tcp_read_sock's actor: take what belongs to the request being read */
static int actor(read_descriptor_t *desc, struct sk_buff *skb,
		 unsigned int off, size_t len)
{
	struct krx_read *rd = desc->arg.data;
	struct krep_krx *x = rd->x;
	size_t used = 0;
	int err = 0;

	while (used < len && !err && desc->count) {
		u32 n;

		if (x->size_got < 4) {
			n = min_t(size_t, len - used, 4 - x->size_got);
			err = skb_copy_bits(skb, off + used,
					    x->size_buf + x->size_got, n);
			WRITE_ONCE(x->size_got, x->size_got + n);
			rd->copied += n;
			used += n;
			if (!err && x->size_got == 4)
				err = sized(rd->c, x, &rd->why);
			continue;
		}
		n = min_t(size_t, len - used, x->need);
		if (x->step == KRX_RECORDS)
			err = take_piece(rd, skb, off + used, n);
		else
			err = 1;
		if (err == 1) {		/* into the request's buffer */
			err = flat_room(x, n) ?:
			      skb_copy_bits(skb, off + used,
					    x->q.buf + x->q.len, n);
			if (err)
				break;
			x->q.len += n;
			rd->copied += n;
		}
		if (err)
			break;
		used += n;
		x->got += n;
		x->need -= n;
		/* fields of no bytes (an empty name, no records) end at once */
		while (!err && !x->need && x->got < x->size)
			err = field_done(x);
		if (x->got == x->size)
			desc->count = 0;	/* whole: no further request */
	}
	if (err) {
		rd->err = err;
		desc->count = 0;
	}
	return used;
}

/**
 * krep_krx_read - read on at the connection's next request
 * @c: the client connection
 * @x: its reading
 * @why: set to the reason when the connection must close
 *
 * Return: 1 when the request is whole (krep_krx_take() it), 0 or -EAGAIN
 * when more must come, -EPIPE at the end of the stream, or another
 * negative errno to close the connection.
 */
int krep_krx_read(struct krep_conn *c, struct krep_krx *x, const char **why)
{
	struct krx_read rd = { .c = c, .x = x };
	read_descriptor_t desc = { .arg.data = &rd, .count = 1 };
	struct sock *sk = c->sock->sk;
	int ret;

	lock_sock(sk);
	ret = c->sock->ops->read_sock(sk, &desc, actor);
	if (ret == 0 && !rd.err) {
		if (sk->sk_err)
			ret = sock_error(sk);
		else if (sk->sk_shutdown & RCV_SHUTDOWN)
			ret = -EPIPE;
		else
			ret = -EAGAIN;
	}
	release_sock(sk);
	if (ret > 0) {
		c->rx_bytes += ret;
		atomic64_add(rd.copied, &c->kn->stats.rx_copy_bytes);
	}
	if (rd.err) {
		*why = rd.why ?: rd.err == -ENOMEM ?
		       "out of memory for a request" : "receive error";
		return rd.err;
	}
	if (ret < 0)
		return ret;
	return x->size_got == 4 && x->got == x->size;
}

/* hand the whole request over to @q, and get ready for the next one */
void krep_krx_take(struct krep_krx *x, struct krep_kreq *q)
{
	*q = x->q;
	q->size = x->size;
	memset(&x->q, 0, sizeof(x->q));
	WRITE_ONCE(x->size_got, 0);
}

/* give back what the request counted against the broker's budget */
void krep_krx_uncharge(struct krep_conn *c, struct krep_krx *x)
{
	if (x->charged)
		atomic_sub(x->charged, &c->kn->ns->kafka_rx_big);
	x->charged = 0;
}

/* drop a request being read (the connection goes) */
void krep_krx_reset(struct krep_krx *x)
{
	krep_kreq_free(&x->q);
	WRITE_ONCE(x->size_got, 0);
}

void krep_kreq_free(struct krep_kreq *q)
{
	u32 i;

	for (i = 0; i < q->npieces; i++)
		consume_skb(q->pieces[i].skb);
	kvfree(q->pieces);
	kvfree(q->recs);
	kvfree(q->buf);
	memset(q, 0, sizeof(*q));
}

/**
 * krep_krec_copy - copy the first @len bytes of a records field
 * @q: the request
 * @rec: one of its records fields, not @flat
 * @dst: where to
 * @len: at most the bytes of @rec taken so far
 *
 * Return: 0, or -EFAULT when a socket buffer is shorter than it said.
 */
int krep_krec_copy(const struct krep_kreq *q, const struct krep_krec *rec,
		   void *dst, u32 len)
{
	u32 i;

	for (i = rec->first; len && i < rec->first + rec->npieces; i++) {
		const struct krep_kpiece *pc = &q->pieces[i];
		u32 n = min(len, pc->len);

		if (skb_copy_bits(pc->skb, pc->off, dst, n))
			return -EFAULT;
		dst += n;
		len -= n;
	}
	return len ? -EFAULT : 0;
}
