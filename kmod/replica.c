// SPDX-License-Identifier: GPL-2.0
/*
 * krep: the leader serves its followers' FETCHes.
 *
 * A FETCH first updates, once, what the leader knows of the follower for
 * every partition in it (partition.c: LEO, lastCaughtUpTime, ISR expand,
 * HW). Then the response is built: whole batches from each fetch offset,
 * within the request's byte budget. When no partition has anything to
 * send, the FETCH is parked (one per connection, as a follower keeps one
 * in flight): a wait entry on every partition's wait queue re-runs it on
 * the next append or HW move, and the connection's fetch_work times it
 * out after max wait. So a produce reaches the followers without polling.
 * An acks=all producer, which waits for the followers anyway, answers the
 * FETCHes its append woke itself (krep_replica_serve_woken()): the records
 * leave without a work item being scheduled first.
 *
 * Work in this file: krep_conn.fetch_work (delayed), armed when a FETCH
 * is parked and by the wait entries; cancelled, after the entries are
 * removed, in krep_replica_cancel_delayed() from the connection's release.
 * Before the HELLO it is the accepted connection's HELLO deadline
 * (krep_replica_hello_deadline()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <net/sock.h>
#include <net/tcp_states.h>
#include <asm/unaligned.h>

#include "krep.h"
#include "broker.h"
#include "net.h"
#include "partition.h"
#include "param.h"
#include "replica.h"
#include "topic.h"
#include "wire.h"

#define KREP_RESP_PART_OVERHEAD	(2 + KREP_TOPIC_NAME_MAX + \
				 sizeof(struct krep_wire_resp_part))
/* a producer answers a parked FETCH only with this much send room */
#define KREP_INLINE_ROOM_MIN	4096

struct fetch_waiter {
	wait_queue_entry_t wq;
	struct krep_partition *p;
	struct krep_delayed_fetch *df;
};

/* a parsed partition entry of the request */
struct fetch_entry {
	char topic[KREP_TOPIC_NAME_MAX + 1];
	struct krep_fetch_part fp;
	struct krep_topic *t;		/* NULL: unknown topic */
	struct krep_partition *p;	/* NULL: not hosted */
};

struct krep_delayed_fetch {
	struct krep_conn *c;
	u32 corr;
	u32 replica_id;
	u32 max_bytes;
	unsigned long deadline;
	unsigned int n;
	struct fetch_entry *entries;
	unsigned int nwait;
	struct fetch_waiter *waiters;
};

static void entries_put(struct fetch_entry *e, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		krep_topic_put(e[i].t);
	kvfree(e);
}

/* parse the request whole before acting on any of it */
static struct fetch_entry *parse_fetch(struct krep_conn *c, const u8 *buf,
				       u32 len, struct krep_delayed_fetch *df,
				       const char **why)
{
	struct fetch_entry *e;
	struct krep_rd rd;
	unsigned int i;
	u16 tlen;

	krep_rd_init(&rd, buf, len);
	df->replica_id = krep_rd_be32(&rd);
	df->deadline = jiffies + msecs_to_jiffies(min_t(u32,
				krep_rd_be32(&rd), 30000));
	df->max_bytes = min_t(u32, krep_rd_be32(&rd),
			      KREP_WIRE_MAX_PAYLOAD / 2);
	df->n = krep_rd_be32(&rd);
	if (rd.bad || df->n > KREP_WIRE_MAX_PARTITIONS) {
		*why = "malformed FETCH header";
		return NULL;
	}
	if (df->replica_id != c->peer_id) {
		*why = "FETCH replica id differs from the HELLO";
		return NULL;
	}
	e = krep_kvcalloc_brief(max(df->n, 1U), sizeof(*e));
	if (!e) {
		*why = "out of memory for a FETCH";
		return NULL;
	}
	for (i = 0; i < df->n; i++) {
		const char *name = krep_rd_topic(&rd, &tlen);
		const char *bad;

		if (name)
			memcpy(e[i].topic, name, tlen);
		/* a NUL or another stray byte would name another topic */
		if (name && krep_topic_name_check(e[i].topic, tlen, &bad))
			rd.bad = true;
		e[i].fp.partition = krep_rd_be32(&rd);
		e[i].fp.leader_epoch = krep_rd_be32(&rd);
		e[i].fp.offset = krep_rd_be64(&rd);
		e[i].fp.log_start = krep_rd_be64(&rd);
		e[i].fp.last_epoch = krep_rd_be32(&rd);
		if (krep_rd_be32(&rd))
			rd.bad = true;	/* reserved */
	}
	if (!krep_rd_done(&rd)) {
		kvfree(e);
		*why = "malformed FETCH partition list";
		return NULL;
	}
	return e;
}

static void resolve_entries(struct krep_net *kn, struct krep_delayed_fetch *df)
{
	struct krep_status st = {};
	unsigned int i;

	for (i = 0; i < df->n; i++) {
		struct fetch_entry *e = &df->entries[i];
		struct krep_partition *p;

		e->t = krep_topic_get(kn, e->topic);
		if (!e->t)
			continue;
		p = krep_topic_partition(e->t, e->fp.partition, &st);
		e->p = IS_ERR(p) ? NULL : p;
	}
}

#define RP_PUT(type, field, val, rp)					\
	put_unaligned_##type(val, (rp) +					\
			     offsetof(struct krep_wire_resp_part, field))

/* the fixed part of one partition's answer; @rp may be unaligned */
static void put_resp_part(u8 *rp, u32 partition,
			  const struct krep_fetch_result *res, u32 len)
{
	u64 isr[2];

	RP_PUT(be32, partition, partition, rp);
	RP_PUT(be16, error, res->error, rp);
	RP_PUT(be16, reserved, 0, rp);
	RP_PUT(be64, high_watermark, res->hw, rp);
	RP_PUT(be64, log_start_offset, res->log_start, rp);
	RP_PUT(be64, diverging_end_offset, res->div_end, rp);
	RP_PUT(be32, diverging_epoch, res->div_epoch, rp);
	RP_PUT(be32, partition_epoch, res->partition_epoch, rp);
	bitmap_to_arr64(isr, res->isr, KREP_RF_MAX);
	RP_PUT(be64, isr[0], isr[0], rp);
	RP_PUT(be64, isr[1], isr[1], rp);
	RP_PUT(be32, reserved2, 0, rp);
	RP_PUT(be32, records_len, len, rp);
}

static int tx_emit(struct page *page, u32 off, u32 len, void *ctx)
{
	return krep_tx_add(ctx, page, off, len);
}

/*
 * Build the response and send it: the fixed parts from a small buffer,
 * the records straight from the log's pages (kernel_sendpage, no copy).
 * @room, unless U32_MAX, is what the socket takes without blocking: the
 * response then stays within it (no first batch past the budget).
 * @sent is set when it went out (data, errors or the deadline), else the
 * fetch stays parked.
 */
static int respond(struct krep_delayed_fetch *df, bool force, u32 room,
		   bool *sent)
{
	u32 hcap = 4 + df->n * KREP_RESP_PART_OVERHEAD;
	u32 budget = df->max_bytes, total = 0;
	struct krep_tx tx = {};
	bool anything = force;
	struct krep_wr wr;
	unsigned int i;
	int err;

	*sent = false;
	if (room != U32_MAX)
		budget = min(budget, room > hcap + sizeof(struct krep_wire_hdr) ?
			     room - hcap - sizeof(struct krep_wire_hdr) : 0);
	tx.hbuf = krep_kvmalloc_brief(hcap, 0);
	if (!tx.hbuf)
		return -ENOMEM;
	wr.p = tx.hbuf;
	wr.end = tx.hbuf + hcap;
	wr.full = false;
	krep_wr_be32(&wr, df->n);
	err = krep_tx_add(&tx, NULL, 0, wr.p - tx.hbuf);
	if (err)
		goto out;
	for (i = 0; i < df->n; i++) {
		struct fetch_entry *e = &df->entries[i];
		struct krep_fetch_result res = {
			.error = KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
			.div_epoch = -1,
			.div_end = KREP_NO_DIVERGENCE,
		};
		u8 *start = wr.p, *rp;
		long len = 0;

		krep_wr_topic(&wr, e->topic);
		rp = krep_wr_bytes(&wr, NULL, sizeof(struct krep_wire_resp_part));
		err = rp ? krep_tx_add(&tx, NULL, start - tx.hbuf,
				       wr.p - start) : -EMSGSIZE;
		if (err)
			goto out;
		if (e->p) {
			len = krep_partition_follower_read(e->p, df->replica_id,
							   &e->fp, budget,
							   !total && room == U32_MAX,
							   tx_emit,
							   &tx, &res);
			if (len < 0) {
				err = len;
				goto out;
			}
		}
		total += len;
		budget -= min_t(u32, budget, len);
		anything |= len || res.error ||
			    res.div_end != KREP_NO_DIVERGENCE;
		put_resp_part(rp, e->fp.partition, &res, len);
	}
	err = 0;
	if (anything) {
		err = krep_conn_send_tx(df->c, KREP_WIRE_FETCH_RESP, df->corr,
					&tx);
		*sent = !err;
		if (!err && total)
			atomic64_inc(&df->c->kn->stats.fetch_responses);
	}
out:
	krep_tx_release(&tx);
	return err;
}

static int fetch_wake(wait_queue_entry_t *wq, unsigned int mode, int flags,
		      void *key)
{
	struct fetch_waiter *w = container_of(wq, struct fetch_waiter, wq);
	struct krep_conn *c = w->df->c;
	struct krep_wake_serve *ws = key;

	if (ws && ws->hw_only)
		return 0;
	/* serve_parked() re-arms for the deadline unless it sees this bit */
	set_bit(KREP_CONN_WOKEN, &c->flags);
	if (ws && ws->n < KREP_WAKE_SERVE_MAX) {
		/* the parked fetch holds @c: it is alive here */
		kref_get(&c->ref);
		ws->conns[ws->n++] = c;
	} else {
		mod_delayed_work_on(krep_conn_cpu(c), krep_wq, &c->fetch_work,
				    0);
	}
	return 0;
}

static void waiters_remove(struct krep_delayed_fetch *df)
{
	unsigned int i;

	for (i = 0; i < df->nwait; i++)
		remove_wait_queue(&df->waiters[i].p->waitq, &df->waiters[i].wq);
	df->nwait = 0;
}

static void delayed_free(struct krep_delayed_fetch *df)
{
	waiters_remove(df);
	kvfree(df->waiters);
	entries_put(df->entries, df->n);
	kfree(df);
	krep_obj_put(KREP_OBJ_DELAYED_FETCH);
}

/*
 * Queue @c's fetch work on its CPU at once. With delayed_lock held and a
 * FETCH parked: krep_replica_cancel_delayed() clears c->delayed under
 * that lock before it cancels the work, so nothing queues it after.
 */
static void kick_parked(struct krep_conn *c)
{
	lockdep_assert_held(&c->delayed_lock);
	mod_delayed_work_on(krep_conn_cpu(c), krep_wq, &c->fetch_work, 0);
}

/*
 * Retry @c's parked FETCH: woken by an append, or its max wait is over.
 * @inline_send: from a producer, which must not block on a follower that
 * does not read: the answer stays within what the socket takes at once,
 * and what does not fit is left to the fetch work.
 */
static void serve_parked(struct krep_conn *c, bool inline_send)
{
	struct krep_delayed_fetch *df;
	u32 room = U32_MAX;
	bool sent = false;
	int err;

	mutex_lock(&c->delayed_lock);
	df = c->delayed;
	if (!df)
		goto out;
	if (inline_send) {
		room = krep_conn_send_room(c);
		if (room < KREP_INLINE_ROOM_MIN) {
			kick_parked(c);
			goto out;
		}
	}
	clear_bit(KREP_CONN_WOKEN, &c->flags);
	err = respond(df, time_after_eq(jiffies, df->deadline), room, &sent);
	if (err) {
		krep_conn_close(c, "cannot send a FETCH response");
		sent = true;
	}
	if (sent) {
		c->delayed = NULL;
		delayed_free(df);
	} else if (inline_send) {
		kick_parked(c);	/* woken, but what came did not fit */
	} else if (!test_bit(KREP_CONN_WOKEN, &c->flags)) {
		/* a wake during respond() already queued us: keep that */
		mod_delayed_work(krep_wq, &c->fetch_work,
				 max_t(long, df->deadline - jiffies, 1));
	}
out:
	mutex_unlock(&c->delayed_lock);
}

static void fetch_work(struct work_struct *work)
{
	struct krep_conn *c = container_of(to_delayed_work(work),
					   struct krep_conn, fetch_work);
	struct mem_cgroup *old;

	/*
	 * Before HELLO this work is the HELLO deadline (and, outbound, the
	 * connect's); a connect that never completed is not logged.
	 */
	if (!test_bit(KREP_CONN_HELLO, &c->flags)) {
		krep_conn_close(c, c->outbound &&
				READ_ONCE(c->sock->sk->sk_state) != TCP_ESTABLISHED ?
				NULL : "no HELLO in time");
		return;
	}
	old = krep_memcg_enter(c->kn);
	serve_parked(c, false);
	krep_memcg_leave(old);
}

/**
 * krep_replica_serve_woken - answer the parked FETCHes an append woke
 * @ws: filled by the wake-up; its references are dropped
 *
 * From the appending producer, without the partition's lock. The
 * followers are answered in parallel: each connection's fetch work runs
 * on that connection's CPU, except one, which the producer answers
 * itself (the one whose CPU it is on, if any).
 */
void krep_replica_serve_woken(struct krep_wake_serve *ws)
{
	int cpu = raw_smp_processor_id();	/* a hint: may move */
	unsigned int i, here = 0;

	for (i = 0; i < ws->n; i++) {
		if (READ_ONCE(ws->conns[i]->io_cpu) == cpu)
			here = i;
	}
	for (i = 0; i < ws->n; i++) {
		struct krep_conn *c = ws->conns[i];

		if (i == here)
			continue;
		mutex_lock(&c->delayed_lock);
		if (c->delayed)
			kick_parked(c);
		mutex_unlock(&c->delayed_lock);
	}
	if (ws->n)
		serve_parked(ws->conns[here], true);
	for (i = 0; i < ws->n; i++)
		krep_conn_put(ws->conns[i]);
	ws->n = 0;
}

/*
 * Park @df, then answer it if there is anything to send: the wait
 * entries go in before the one look at the partitions, so an append
 * racing with the look wakes an entry and is not missed. Called with
 * delayed_lock. Return: 1 answered (no longer parked), 0 parked, or a
 * negative errno (not parked).
 */
static int park_and_respond(struct krep_conn *c, struct krep_delayed_fetch *df)
{
	bool sent = false;
	unsigned int i;
	int err;

	df->waiters = krep_kvcalloc_brief(max(df->n, 1U),
					  sizeof(*df->waiters));
	if (!df->waiters)
		return -ENOMEM;
	clear_bit(KREP_CONN_WOKEN, &c->flags);
	for (i = 0; i < df->n; i++) {
		struct fetch_waiter *w = &df->waiters[df->nwait];

		if (!df->entries[i].p)
			continue;
		w->p = df->entries[i].p;
		w->df = df;
		init_waitqueue_func_entry(&w->wq, fetch_wake);
		add_wait_queue(&w->p->waitq, &w->wq);
		df->nwait++;
	}
	c->delayed = df;
	err = respond(df, time_after_eq(jiffies, df->deadline), U32_MAX,
		      &sent);
	if (err || sent) {
		c->delayed = NULL;
		waiters_remove(df);
		return err ? err : 1;
	}
	/* a wake since the entries went in has queued the work: keep that */
	if (!test_bit(KREP_CONN_WOKEN, &c->flags))
		mod_delayed_work(krep_wq, &c->fetch_work,
				 max_t(long, df->deadline - jiffies, 1));
	return 0;
}

/**
 * krep_replica_serve - a follower's FETCH arrived on @c
 * @c: the inbound connection
 * @corr: the request's correlation id
 * @payload: the request (the caller frees it)
 * @len: its length
 * @why: set to the reason of a protocol error
 *
 * Return: 0, or a negative errno that closes the connection.
 */
int krep_replica_serve(struct krep_conn *c, u32 corr, u8 **payload, u32 len,
		       const char **why)
{
	struct krep_delayed_fetch *df;
	unsigned int i;
	int err;

	df = krep_kzalloc_brief(sizeof(*df));
	if (!df) {
		*why = "out of memory for a FETCH";
		return -ENOMEM;
	}
	krep_obj_get(KREP_OBJ_DELAYED_FETCH);
	df->c = c;
	df->corr = corr;
	df->entries = parse_fetch(c, *payload, len, df, why);
	if (!df->entries) {
		kfree(df);
		krep_obj_put(KREP_OBJ_DELAYED_FETCH);
		return -EPROTO;
	}
	resolve_entries(c->kn, df);
	for (i = 0; i < df->n; i++) {
		if (df->entries[i].p)
			krep_partition_follower_update(df->entries[i].p,
						       df->replica_id,
						       &df->entries[i].fp);
	}

	mutex_lock(&c->delayed_lock);
	if (c->delayed) {
		*why = "a second FETCH while one is parked";
		err = -EPROTO;
		goto fail;
	}
	err = park_and_respond(c, df);
	if (err < 0) {
		*why = "cannot answer or park a FETCH";
		goto fail;
	}
	mutex_unlock(&c->delayed_lock);
	if (err)
		delayed_free(df);	/* answered at once */
	return 0;

fail:
	mutex_unlock(&c->delayed_lock);
	delayed_free(df);
	return err;
}

/*
 * A connection without HELLO in time is closed: armed before its
 * callbacks are attached, so before anything can release it.
 */
void krep_replica_hello_deadline(struct krep_conn *c)
{
	mod_delayed_work(krep_wq, &c->fetch_work,
			 msecs_to_jiffies(krep_param_hello_timeout_ms()));
}

void krep_replica_conn_init(struct krep_conn *c)
{
	mutex_init(&c->delayed_lock);
	INIT_DELAYED_WORK(&c->fetch_work, fetch_work);
}

/* the connection is going: drop its parked FETCH */
void krep_replica_cancel_delayed(struct krep_conn *c)
{
	struct krep_delayed_fetch *df;

	mutex_lock(&c->delayed_lock);
	df = c->delayed;
	c->delayed = NULL;
	if (df)
		waiters_remove(df);
	mutex_unlock(&c->delayed_lock);
	cancel_delayed_work_sync(&c->fetch_work);
	if (df)
		delayed_free(df);
}
