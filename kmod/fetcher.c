// SPDX-License-Identifier: GPL-2.0
/*
 * krep: the follower's replica fetcher, one per leader broker.
 *
 * The fetcher keeps one FETCH in flight on its outbound connection,
 * carrying every partition this broker follows from that leader (fetch
 * offset = LEO, current leader epoch, log start). The leader parks it
 * until it has records, so the next FETCH goes out as soon as a response
 * is applied.
 *
 * With nothing to follow it still sends an empty FETCH, which the leader
 * answers after the wait: the connection's heartbeat. A FETCH without an
 * answer within the wait plus fetch_timeout_ms (a module parameter) closes the
 * connection (the peer shows DOWN, and reconnecting starts), so a cut
 * link is noticed in seconds, not after TCP's retransmission timeout.
 *
 * The next FETCH goes out from the receive work that applied a response
 * (no other work is woken on the replication path). Besides that,
 * krep_peer.fetch_work (delayed) sends it: armed by krep_fetcher_kick()
 * when the connection comes up, when a topic is created or a role
 * changes, and after a back-off; while a FETCH is out it is armed for
 * that FETCH's deadline. peer->fetch_inflight, claimed under the net
 * state's lock, keeps one FETCH out. krep_net_stop() cancels the work;
 * the gate is the net state's "stopped".
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/rculist.h>
#include <linux/slab.h>
#include <asm/unaligned.h>

#include "krep.h"
#include "broker.h"
#include "fetcher.h"
#include "param.h"
#include "net.h"
#include "partition.h"
#include "topic.h"
#include "wire.h"

#define KREP_FETCH_BACKOFF_MS	100	/* replica.fetch.backoff.ms, shorter */
#define KREP_REPLICA_FETCH_WAIT_MS	500	/* replica.fetch.wait.max.ms */
#define KREP_REPLICA_FETCH_MAX_BYTES	BIT(20)

/* under the net state's lock, as every arming of the fetch work */
void krep_fetcher_kick(struct krep_peer *peer)
{
	struct krep_net_state *ns = peer->kn->ns;

	lockdep_assert_held(&ns->lock);
	if (!ns->stopped)
		mod_delayed_work(krep_wq, &peer->fetch_work, 0);
}

void krep_fetcher_kick_all(struct krep_net *kn)
{
	struct krep_net_state *ns = kn->ns;
	unsigned int i;

	mutex_lock(&ns->lock);
	for (i = 0; i < ns->npeers; i++)
		krep_fetcher_kick(&ns->peers[i]);
	mutex_unlock(&ns->lock);
}

/* a FETCH being encoded */
struct fetch_build {
	struct krep_wr wr;
	u32 leader;
	unsigned int n, cap;
	unsigned int stop;	/* the hosted partition after the cap-th */
};

/* add the partitions following the leader among hosted ones [@from, @to) */
static void fetch_add_range(struct fetch_build *fb, struct krep_net *kn,
			    unsigned int from, unsigned int to)
{
	struct krep_fetch_part fp;
	struct krep_topic *t;
	unsigned int k = 0;
	u32 i;

	list_for_each_entry(t, &kn->topics, node) {
		for (i = 0; i < t->npartitions && k < to; i++) {
			if (!t->parts[i])
				continue;
			if (k++ < from || fb->n == fb->cap ||
			    !krep_partition_fetch_state(t->parts[i], fb->leader,
							&fp))
				continue;
			krep_wr_topic(&fb->wr, t->name);
			krep_wr_be32(&fb->wr, fp.partition);
			krep_wr_be32(&fb->wr, fp.leader_epoch);
			krep_wr_be64(&fb->wr, fp.offset);
			krep_wr_be64(&fb->wr, fp.log_start);
			krep_wr_be32(&fb->wr, fp.last_epoch);
			krep_wr_be32(&fb->wr, 0);
			if (++fb->n == fb->cap)
				fb->stop = k;
		}
	}
}

/*
 * Encode a FETCH for the partitions following @peer (maybe none). At most
 * KREP_WIRE_MAX_PARTITIONS go in one: a follower of more takes them in
 * turns, each FETCH starting at the hosted partition after the last one
 * the FETCH before could take (@peer's fetch_next, in the order of the
 * topic list), so that none is left out for good. Called by the one
 * sender @peer has at a time.
 */
static u8 *build_fetch(struct krep_peer *peer, u32 self, u32 *lenp)
{
	size_t per = 2 + KREP_TOPIC_NAME_MAX +
		     sizeof(struct krep_wire_fetch_part);
	struct fetch_build fb = { .leader = peer->id };
	struct krep_net *kn = peer->kn;
	unsigned int hosted = 0, from;
	struct krep_topic *t;
	u8 *buf, *count;
	size_t size;
	u32 i;

	mutex_lock(&kn->topics_lock);
	list_for_each_entry(t, &kn->topics, node) {
		fb.cap += t->npartitions;
		for (i = 0; i < t->npartitions; i++)
			hosted += !!t->parts[i];
	}
	fb.cap = min_t(unsigned int, fb.cap, KREP_WIRE_MAX_PARTITIONS);
	size = sizeof(struct krep_wire_fetch) + fb.cap * per;
	buf = krep_kvmalloc_brief(size, 0);
	if (!buf) {
		mutex_unlock(&kn->topics_lock);
		return NULL;
	}
	fb.wr.p = buf;
	fb.wr.end = buf + size;
	fb.wr.full = false;
	krep_wr_be32(&fb.wr, self);
	krep_wr_be32(&fb.wr, KREP_REPLICA_FETCH_WAIT_MS);
	krep_wr_be32(&fb.wr, KREP_REPLICA_FETCH_MAX_BYTES);
	count = krep_wr_bytes(&fb.wr, NULL, 4);
	from = peer->fetch_next < hosted ? peer->fetch_next : 0;
	fetch_add_range(&fb, kn, from, hosted);
	fetch_add_range(&fb, kn, 0, from);
	mutex_unlock(&kn->topics_lock);
	if (fb.wr.full) {
		kvfree(buf);
		return NULL;
	}
	peer->fetch_next = fb.n == fb.cap ? fb.stop : 0;
	put_unaligned_be32(fb.n, count);
	*lenp = fb.wr.p - buf;
	return buf;
}

/*
 * Arm the fetch work @delay from now unless the net state stopped: under
 * its lock, so krep_net_stop()'s cancel, which comes after it sets
 * "stopped", always sees the timer (a timer armed after the cancel
 * would fire on freed peers).
 */
static void arm_fetch(struct krep_peer *peer, unsigned long delay)
{
	struct krep_net_state *ns = peer->kn->ns;

	mutex_lock(&ns->lock);
	if (!ns->stopped)
		mod_delayed_work(krep_wq, &peer->fetch_work, delay);
	mutex_unlock(&ns->lock);
}

/*
 * Send the next FETCH on @c unless one is out; with one out, close a
 * connection whose answer is overdue or wait for the deadline.
 */
static void fetcher_send(struct krep_peer *peer, struct krep_conn *c)
{
	struct krep_net *kn = peer->kn;
	struct krep_net_state *ns = kn->ns;
	struct krep_broker_cfg *cfg;
	unsigned long deadline;
	u32 self, len, corr;
	bool late;
	u8 *buf;

	mutex_lock(&ns->lock);
	if (ns->stopped || peer->conn != c) {
		mutex_unlock(&ns->lock);
		return;
	}
	if (peer->fetch_inflight) {
		deadline = peer->fetch_sent +
			   msecs_to_jiffies(KREP_REPLICA_FETCH_WAIT_MS +
					    krep_param_fetch_timeout_ms());
		late = time_after_eq(jiffies, deadline);
		if (!late)
			mod_delayed_work(krep_wq, &peer->fetch_work,
					 deadline - jiffies);
		mutex_unlock(&ns->lock);
		if (late)
			krep_conn_close(c, "no FETCH response in time");
		return;
	}
	/* claimed: the fetch work and the receive path never both send */
	peer->fetch_inflight = true;
	peer->fetch_sent = jiffies;
	corr = ++peer->correlation;
	mutex_unlock(&ns->lock);

	rcu_read_lock();
	cfg = rcu_dereference(kn->cfg);
	self = cfg->broker_id;
	rcu_read_unlock();

	buf = build_fetch(peer, self, &len);
	if (!buf) {
		/* its memory cgroup at memory.max? Not the connection's fault */
		pr_warn_ratelimited("out of memory for a FETCH to broker %u; trying again in %u ms\n",
				    peer->id, KREP_FETCH_BACKOFF_MS);
		mutex_lock(&ns->lock);
		peer->fetch_inflight = false;
		mutex_unlock(&ns->lock);
		arm_fetch(peer, msecs_to_jiffies(KREP_FETCH_BACKOFF_MS));
		return;
	}
	if (krep_conn_send(c, KREP_WIRE_FETCH, corr, buf, len))
		krep_conn_close(c, "cannot send FETCH");
	else
		arm_fetch(peer, msecs_to_jiffies(KREP_REPLICA_FETCH_WAIT_MS +
						 krep_param_fetch_timeout_ms()));
	kvfree(buf);
}

void krep_fetcher_work(struct work_struct *work)
{
	struct krep_peer *peer = container_of(to_delayed_work(work),
					      struct krep_peer, fetch_work);
	struct krep_net_state *ns = peer->kn->ns;
	struct mem_cgroup *old;
	struct krep_conn *c;

	mutex_lock(&ns->lock);
	c = peer->conn;
	if (ns->stopped || !c || !test_bit(KREP_CONN_HELLO, &c->flags)) {
		mutex_unlock(&ns->lock);
		return;
	}
	kref_get(&c->ref);
	mutex_unlock(&ns->lock);
	old = krep_memcg_enter(peer->kn);
	fetcher_send(peer, c);
	krep_memcg_leave(old);
	krep_conn_put(c);
}

/*
 * A FETCH response is read as it arrives, not buffered whole: the fixed
 * part of each partition into a small buffer, then its records straight
 * into the room the partition's log reserved for them
 * (krep_partition_rx_begin()), so a replicated byte is copied once,
 * socket to log. Records that get no room (an error or divergence, a
 * batch run larger than a segment) go through a buffer and
 * krep_partition_follower_apply(); those of a partition this broker
 * does not host, or past its memory cap (or its memory cgroup's
 * memory.max), are read through a small scratch buffer and dropped (the
 * fetcher then backs off).
 */
enum {
	FRX_COUNT,		/* the partition count */
	FRX_TOPIC_LEN,		/* a partition's topic name length */
	FRX_HEAD,		/* its name and fixed part */
	FRX_RECORDS,		/* its records */
};

/* why records were dropped */
enum {
	FRX_FULL_CAP = 1,	/* the broker's log_memory_max */
	FRX_FULL_MEMCG,		/* out of memory: its memory cgroup's limit */
};

#define FRX_HEAD_MAX	(2 + KREP_TOPIC_NAME_MAX + \
			 sizeof(struct krep_wire_resp_part))

struct krep_fetch_rx {
	u32 left;			/* bytes of the frame not yet read */
	u32 nparts, i;
	u8 state;
	bool errors, progress;
	u8 full;			/* records dropped: FRX_FULL_* */
	u32 got, need;
	u8 buf[FRX_HEAD_MAX];
	/* the partition being read */
	char name[KREP_TOPIC_NAME_MAX + 1];
	u32 part;
	struct krep_topic *t;
	struct krep_partition *p;	/* NULL: not hosted */
	struct krep_fetch_result res;
	u32 rlen, rgot;
	bool direct;			/* into @room, else into @bounce */
	u32 epoch;
	struct krep_log_rx room;
	u8 *bounce;
};

static int frx_recv_error(int ret, const char **why)
{
	if (ret == -EAGAIN)
		return ret;
	*why = ret ? "receive error" : NULL;	/* NULL: the peer closed */
	return ret ? ret : -EPIPE;
}

/* read the frame into f->buf until f->need bytes are there */
static int frx_fill(struct krep_conn *c, struct krep_fetch_rx *f,
		    const char **why)
{
	int ret;

	if (f->need - f->got > f->left) {
		*why = "malformed FETCH response";
		return -EPROTO;
	}
	while (f->got < f->need) {
		ret = krep_conn_recv(c, f->buf + f->got, f->need - f->got);
		if (ret <= 0)
			return frx_recv_error(ret, why);
		f->got += ret;
		f->left -= ret;
	}
	return 0;
}

/* done with the partition being read: on to the next one */
static void frx_next(struct krep_fetch_rx *f)
{
	kvfree(f->bounce);
	f->bounce = NULL;
	krep_topic_put(f->t);
	f->t = NULL;
	f->p = NULL;
	f->i++;
	f->state = FRX_TOPIC_LEN;
	f->got = 0;
	f->need = 2;
}

/* a partition's fixed part is in f->buf: find it and get its room */
static int frx_head(struct krep_conn *c, struct krep_fetch_rx *f,
		    const char **why)
{
	struct krep_status st = {};
	struct krep_partition *p;
	const char *tname, *bad;
	struct krep_rd rd;
	u32 reserved;
	u64 isr[2];
	u16 tlen;
	int err;

	krep_rd_init(&rd, f->buf, f->got);
	tname = krep_rd_topic(&rd, &tlen);
	f->part = krep_rd_be32(&rd);
	f->res.error = krep_rd_be16(&rd);
	krep_rd_be16(&rd);	/* reserved */
	f->res.hw = krep_rd_be64(&rd);
	f->res.log_start = krep_rd_be64(&rd);
	f->res.div_end = krep_rd_be64(&rd);
	f->res.div_epoch = krep_rd_be32(&rd);
	f->res.partition_epoch = krep_rd_be32(&rd);
	isr[0] = krep_rd_be64(&rd);
	isr[1] = krep_rd_be64(&rd);
	bitmap_from_arr64(f->res.isr, isr, KREP_RF_MAX);
	reserved = krep_rd_be32(&rd);
	f->rlen = krep_rd_be32(&rd);
	if (!krep_rd_done(&rd) || f->rlen > f->left || reserved ||
	    isr[1] >> (KREP_RF_MAX - 64)) {
		*why = "malformed FETCH response";
		return -EPROTO;
	}
	memcpy(f->name, tname, tlen);
	f->name[tlen] = '\0';
	/* a NUL or another stray byte would name another topic */
	if (krep_topic_name_check(f->name, tlen, &bad)) {
		*why = "malformed FETCH response";
		return -EPROTO;
	}
	f->errors |= f->res.error != 0;
	f->progress |= f->rlen || f->res.div_end != KREP_NO_DIVERGENCE;
	f->t = krep_topic_get(c->kn, f->name);
	p = f->t ? krep_topic_partition(f->t, f->part, &st) : NULL;
	f->p = IS_ERR_OR_NULL(p) ? NULL : p;
	f->rgot = 0;
	err = f->p && f->rlen ?
	      krep_partition_rx_begin(f->p, c->peer->id, &f->res, f->rlen,
				      &f->room, &f->epoch) : -EAGAIN;
	f->direct = !err;
	if (err == -ENOSPC || err == -ENOMEM) {
		/* no room: the records are dropped */
		f->full = err == -ENOSPC ? FRX_FULL_CAP : FRX_FULL_MEMCG;
	} else if (!f->direct && f->p && f->rlen) {
		f->bounce = krep_kvmalloc_brief(f->rlen, 0);
		if (!f->bounce) {
			*why = "out of memory for a FETCH response";
			return -ENOMEM;
		}
	}
	f->state = FRX_RECORDS;
	return 0;
}

/* a partition's records are in: apply them */
static void frx_apply(struct krep_conn *c, struct krep_fetch_rx *f)
{
	int err = 0;

	if (f->direct) {
		f->direct = false;	/* krep_partition_rx_end() releases */
		err = krep_partition_rx_end(f->p, c->peer->id, f->epoch,
					    &f->res, &f->room);
	} else if (f->p) {
		/* without a buffer (no room), only the fixed part applies */
		err = krep_partition_follower_apply(f->p, c->peer->id, &f->res,
						    f->bounce,
						    f->bounce ? f->rlen : 0);
	}
	if (err == -ENOSPC || err == -ENOMEM)
		f->full = err == -ENOSPC ? FRX_FULL_CAP : FRX_FULL_MEMCG;
	else if (err)
		pr_warn_ratelimited("%s-%u: bad records from broker %u\n",
				    f->name, f->part, c->peer->id);
}

static int frx_records(struct krep_conn *c, struct krep_fetch_rx *f,
		       const char **why)
{
	int ret;

	while (f->rgot < f->rlen) {
		if (f->direct)
			ret = krep_conn_recv_pages(c, f->room.bvec, f->room.nr,
						   f->rlen, f->rgot);
		else if (f->bounce)
			ret = krep_conn_recv(c, f->bounce + f->rgot,
					     f->rlen - f->rgot);
		else	/* not hosted here: drop them */
			ret = krep_conn_recv(c, f->buf,
					     min_t(u32, f->rlen - f->rgot,
						   sizeof(f->buf)));
		if (ret <= 0)
			return frx_recv_error(ret, why);
		f->rgot += ret;
		f->left -= ret;
	}
	frx_apply(c, f);
	frx_next(f);
	return 0;
}

/* the whole response is applied: the next FETCH, or a back-off */
static void frx_done(struct krep_conn *c, struct krep_fetch_rx *f)
{
	struct krep_peer *peer = c->peer;
	struct krep_net_state *ns = c->kn->ns;

	mutex_lock(&ns->lock);
	peer->fetch_inflight = false;
	mutex_unlock(&ns->lock);
	/*
	 * Only errors (epochs not yet agreed, say), or records dropped at
	 * the memory cap or memory.max (until retention on the leader moves
	 * the log start this broker adopts, or topics go): back off, don't
	 * spin.
	 */
	if (f->full)
		pr_warn_ratelimited("records from broker %u dropped: %s; fetching again in %u ms\n",
				    c->peer->id, f->full == FRX_FULL_CAP ?
				    "log_memory_max reached" :
				    "out of memory (its memory cgroup at memory.max?)",
				    KREP_FETCH_BACKOFF_MS);
	if ((f->errors && !f->progress) || f->full)
		arm_fetch(peer, msecs_to_jiffies(KREP_FETCH_BACKOFF_MS));
	else
		fetcher_send(peer, c);	/* from here: no work to wake */
}

/**
 * krep_fetcher_rx_start - a FETCH response's header arrived on @c
 * @c: the outbound connection
 * @corr: its correlation id
 * @len: its payload length
 * @why: set to the reason of a protocol error
 *
 * Return: 0 (read it with krep_fetcher_rx()), or a negative errno that
 * closes the connection.
 */
int krep_fetcher_rx_start(struct krep_conn *c, u32 corr, u32 len,
			  const char **why)
{
	struct krep_fetch_rx *f = c->frx;

	if (corr != c->peer->correlation || !c->peer->fetch_inflight) {
		*why = "FETCH response with an unknown correlation id";
		return -EPROTO;
	}
	if (!f) {
		f = krep_kzalloc_brief(sizeof(*f));
		if (!f) {
			*why = "out of memory for a FETCH response";
			return -ENOMEM;
		}
		c->frx = f;
	}
	memset(f, 0, sizeof(*f));
	f->left = len;
	f->state = FRX_COUNT;
	f->need = 4;
	return 0;
}

/**
 * krep_fetcher_rx - read and apply what has arrived of the response
 * @c: the outbound connection
 * @why: set to the reason of an error (NULL when the peer closed)
 *
 * Return: 0 when the whole response is applied, -EAGAIN when the socket
 * has no more for now, or a negative errno that closes the connection.
 */
int krep_fetcher_rx(struct krep_conn *c, const char **why)
{
	struct krep_fetch_rx *f = c->frx;
	u16 tlen;
	int err;

	for (;;) {
		switch (f->state) {
		case FRX_COUNT:
			err = frx_fill(c, f, why);
			if (err)
				return err;
			f->nparts = get_unaligned_be32(f->buf);
			if (f->nparts > KREP_WIRE_MAX_PARTITIONS) {
				*why = "malformed FETCH response";
				return -EPROTO;
			}
			f->i = 0;
			f->state = FRX_TOPIC_LEN;
			f->got = 0;
			f->need = 2;
			break;
		case FRX_TOPIC_LEN:
			if (f->i == f->nparts) {
				if (f->left) {
					*why = "malformed FETCH response";
					return -EPROTO;
				}
				frx_done(c, f);
				return 0;
			}
			err = frx_fill(c, f, why);
			if (err)
				return err;
			tlen = get_unaligned_be16(f->buf);
			if (!tlen || tlen > KREP_TOPIC_NAME_MAX) {
				*why = "malformed FETCH response";
				return -EPROTO;
			}
			f->need = 2 + tlen + sizeof(struct krep_wire_resp_part);
			f->state = FRX_HEAD;
			break;
		case FRX_HEAD:
			err = frx_fill(c, f, why);
			if (!err)
				err = frx_head(c, f, why);
			if (err)
				return err;
			break;
		case FRX_RECORDS:
			err = frx_records(c, f, why);
			if (err)
				return err;
			cond_resched();	/* a response may hold many */
			break;
		}
	}
}

/* the connection is going: drop a response half read */
void krep_fetcher_rx_free(struct krep_conn *c)
{
	struct krep_fetch_rx *f = c->frx;

	if (!f)
		return;
	if (f->direct)
		krep_partition_rx_cancel(f->p, &f->room);
	kvfree(f->bounce);
	krep_topic_put(f->t);
	kfree(f);
	c->frx = NULL;
}
