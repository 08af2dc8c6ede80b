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
 * answer within the wait plus KREP_FETCH_RESP_TIMEOUT_MS closes the
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
#include "net.h"
#include "partition.h"
#include "topic.h"
#include "wire.h"

#define KREP_FETCH_RESP_TIMEOUT_MS	3000
#define KREP_FETCH_BACKOFF_MS	100	/* replica.fetch.backoff.ms, shorter */
#define KREP_REPLICA_FETCH_WAIT_MS	500	/* replica.fetch.wait.max.ms */
#define KREP_REPLICA_FETCH_MAX_BYTES	BIT(20)

void krep_fetcher_kick(struct krep_peer *peer)
{
	if (!READ_ONCE(peer->kn->ns->stopped))
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

/* encode a FETCH for every partition following @leader (maybe none) */
static u8 *build_fetch(struct krep_net *kn, u32 self, u32 leader, u32 *lenp)
{
	size_t per = 2 + KREP_TOPIC_NAME_MAX +
		     sizeof(struct krep_wire_fetch_part);
	struct krep_fetch_part fp;
	unsigned int n = 0, cap = 0;
	struct krep_topic *t;
	struct krep_wr wr;
	u8 *buf, *count;
	size_t size;
	u32 i;

	mutex_lock(&kn->topics_lock);
	list_for_each_entry(t, &kn->topics, node)
		cap += t->npartitions;
	cap = min_t(unsigned int, cap, KREP_WIRE_MAX_PARTITIONS);
	size = sizeof(struct krep_wire_fetch) + cap * per;
	buf = kvmalloc(size, GFP_KERNEL);
	if (!buf) {
		mutex_unlock(&kn->topics_lock);
		return NULL;
	}
	wr.p = buf;
	wr.end = buf + size;
	wr.full = false;
	krep_wr_be32(&wr, self);
	krep_wr_be32(&wr, KREP_REPLICA_FETCH_WAIT_MS);
	krep_wr_be32(&wr, KREP_REPLICA_FETCH_MAX_BYTES);
	count = krep_wr_bytes(&wr, NULL, 4);
	list_for_each_entry(t, &kn->topics, node) {
		for (i = 0; i < t->npartitions && n < cap; i++) {
			if (!t->parts[i] ||
			    !krep_partition_fetch_state(t->parts[i], leader, &fp))
				continue;
			krep_wr_topic(&wr, t->name);
			krep_wr_be32(&wr, fp.partition);
			krep_wr_be32(&wr, fp.leader_epoch);
			krep_wr_be64(&wr, fp.offset);
			krep_wr_be64(&wr, fp.log_start);
			krep_wr_be32(&wr, fp.last_epoch);
			krep_wr_be32(&wr, 0);
			n++;
		}
	}
	mutex_unlock(&kn->topics_lock);
	if (wr.full) {
		kvfree(buf);
		return NULL;
	}
	put_unaligned_be32(n, count);
	*lenp = wr.p - buf;
	return buf;
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
	u8 *buf;

	mutex_lock(&ns->lock);
	if (ns->stopped || peer->conn != c) {
		mutex_unlock(&ns->lock);
		return;
	}
	if (peer->fetch_inflight) {
		deadline = peer->fetch_sent +
			   msecs_to_jiffies(KREP_REPLICA_FETCH_WAIT_MS +
					    KREP_FETCH_RESP_TIMEOUT_MS);
		mutex_unlock(&ns->lock);
		if (time_after_eq(jiffies, deadline))
			krep_conn_close(c, "no FETCH response in time");
		else
			mod_delayed_work(krep_wq, &peer->fetch_work,
					 deadline - jiffies);
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

	buf = build_fetch(kn, self, peer->id, &len);
	if (!buf) {
		krep_conn_close(c, "out of memory for a FETCH");
		return;
	}
	if (krep_conn_send(c, KREP_WIRE_FETCH, corr, buf, len))
		krep_conn_close(c, "cannot send FETCH");
	else if (!READ_ONCE(ns->stopped))
		mod_delayed_work(krep_wq, &peer->fetch_work,
				 msecs_to_jiffies(KREP_REPLICA_FETCH_WAIT_MS +
						  KREP_FETCH_RESP_TIMEOUT_MS));
	kvfree(buf);
}

void krep_fetcher_work(struct work_struct *work)
{
	struct krep_peer *peer = container_of(to_delayed_work(work),
					      struct krep_peer, fetch_work);
	struct krep_net_state *ns = peer->kn->ns;
	struct krep_conn *c;

	mutex_lock(&ns->lock);
	c = peer->conn;
	if (ns->stopped || !c || !test_bit(KREP_CONN_HELLO, &c->flags)) {
		mutex_unlock(&ns->lock);
		return;
	}
	kref_get(&c->ref);
	mutex_unlock(&ns->lock);
	fetcher_send(peer, c);
	krep_conn_put(c);
}

/**
 * krep_fetcher_response - apply a leader's FETCH response
 * @c: the outbound connection it came on
 * @corr: its correlation id
 * @payload: the response
 * @len: its length
 * @why: set to the reason of a protocol error
 *
 * Return: 0, or a negative errno that closes the connection.
 */
int krep_fetcher_response(struct krep_conn *c, u32 corr, const u8 *payload,
			  u32 len, const char **why)
{
	struct krep_peer *peer = c->peer;
	struct krep_net *kn = c->kn;
	struct krep_status st = {};
	bool errors = false, progress = false;
	struct krep_rd rd;
	unsigned int n, i;

	if (corr != peer->correlation || !peer->fetch_inflight) {
		*why = "FETCH response with an unknown correlation id";
		return -EPROTO;
	}
	krep_rd_init(&rd, payload, len);
	n = krep_rd_be32(&rd);
	if (n > KREP_WIRE_MAX_PARTITIONS)
		rd.bad = true;
	for (i = 0; i < n && !rd.bad; i++) {
		char name[KREP_TOPIC_NAME_MAX + 1];
		struct krep_fetch_result res;
		struct krep_partition *p;
		struct krep_topic *t;
		const char *tname;
		const u8 *records;
		u32 part, rlen;
		u16 tlen;

		tname = krep_rd_topic(&rd, &tlen);
		part = krep_rd_be32(&rd);
		res.error = krep_rd_be16(&rd);
		krep_rd_be16(&rd);	/* reserved */
		res.hw = krep_rd_be64(&rd);
		res.log_start = krep_rd_be64(&rd);
		res.div_end = krep_rd_be64(&rd);
		res.div_epoch = krep_rd_be32(&rd);
		rlen = krep_rd_be32(&rd);
		records = krep_rd_bytes(&rd, rlen);
		if (rd.bad)
			break;
		errors |= res.error != 0;
		progress |= rlen || res.div_end != KREP_NO_DIVERGENCE;
		memcpy(name, tname, tlen);
		name[tlen] = '\0';
		t = krep_topic_get(kn, name);
		if (!t)
			continue;
		p = krep_topic_partition(t, part, &st);
		if (!IS_ERR(p) &&
		    krep_partition_follower_apply(p, peer->id, &res, records,
						  rlen))
			pr_warn_ratelimited("%s-%u: bad records from broker %u\n",
					    name, part, peer->id);
		krep_topic_put(t);
	}
	if (!krep_rd_done(&rd)) {
		*why = "malformed FETCH response";
		return -EPROTO;
	}
	mutex_lock(&kn->ns->lock);
	peer->fetch_inflight = false;
	mutex_unlock(&kn->ns->lock);
	/* only errors (epochs not yet agreed, say): back off, don't spin */
	if (errors && !progress && !READ_ONCE(kn->ns->stopped))
		mod_delayed_work(krep_wq, &peer->fetch_work,
				 msecs_to_jiffies(KREP_FETCH_BACKOFF_MS));
	else
		fetcher_send(peer, c);	/* from here: no work to wake */
	return 0;
}
