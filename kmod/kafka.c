// SPDX-License-Identifier: GPL-2.0
/*
 * krep: Kafka client connections, served like the inter-broker ones
 * (net.c: accept, callbacks, the non-blocking send queue of tx.c).
 *
 * A request is an int32 size and that many bytes (at most
 * kafka_max_request_bytes). The receive work reads one whole request
 * (kafka_rx.c) and hands it to kafka_api.c, which answers it at once or
 * parks it (a Fetch waiting for records, an acks=all Produce waiting for
 * the ISR). A parked request stops the reading of the next one, so
 * pipelined requests are answered in order, one at a time, as a Kafka
 * broker does.
 * A malformed or oversized request closes its connection only, with one
 * rate-limited log line.
 *
 * Work in this file, per connection:
 *   kc.park_work   (delayed) re-runs the parked request: queued at once
 *                  by a wake-up of one of its partitions' wait queues,
 *                  or at its deadline. Cancelled by the connection's
 *                  release after the waits are removed.
 *   kc.deadline_work (delayed) closes a connection whose request does
 *                  not arrive whole in time (from its first byte), or
 *                  that stays idle; armed by the receive work (at
 *                  accept, at a request's first byte, after each
 *                  request) and by itself when a deadline moved.
 *                  Cancelled by the release, after the receive work.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "krep.h"
#include "broker.h"
#include "kafka.h"
#include "net.h"
#include "param.h"

struct krep_kconn {
	struct krep_conn *c;
	struct krep_krx rx;		/* the request being read */
	unsigned long req_deadline;	/* jiffies: req must be whole */
	unsigned long idle_deadline;	/* jiffies: the next request */
	struct delayed_work deadline_work;
	struct mutex park_lock;		/* guards park */
	struct krep_kpark *park;
	struct delayed_work park_work;
};

/* the next deadline of @kc: a request begun must end, else idleness */
static void arm_deadline(struct krep_conn *c, struct krep_kconn *kc)
{
	unsigned long at = READ_ONCE(kc->rx.size_got) ?
			   READ_ONCE(kc->req_deadline) :
			   READ_ONCE(kc->idle_deadline);

	mod_delayed_work(krep_wq, &kc->deadline_work,
			 time_after(at, jiffies) ? at - jiffies : 0);
}

static void deadline_work(struct work_struct *work)
{
	struct krep_kconn *kc = container_of(to_delayed_work(work),
					     struct krep_kconn, deadline_work);
	bool reading = READ_ONCE(kc->rx.size_got);

	/*
	 * A parked request is answered by its own deadline, and the receive
	 * work arms the next one when it ends.
	 */
	if (READ_ONCE(kc->park))
		return;
	if (reading && time_after_eq(jiffies, READ_ONCE(kc->req_deadline)))
		krep_conn_close(kc->c, "request not received whole in time");
	else if (!reading &&
		 time_after_eq(jiffies, READ_ONCE(kc->idle_deadline)))
		krep_conn_close(kc->c, NULL);	/* idle, as Kafka */
	else	/* a deadline moved since this was armed */
		arm_deadline(kc->c, kc);
}

static int kwait_wake(wait_queue_entry_t *wq, unsigned int mode, int flags,
		      void *key)
{
	struct krep_kwait *w = container_of(wq, struct krep_kwait, wq);
	struct krep_conn *c = w->kp->c;

	mod_delayed_work_on(krep_conn_cpu(c), krep_wq, &c->kc->park_work, 0);
	return 0;
}

/**
 * krep_kpark_init - prepare @kp for a request that may wait
 * @kp: the handler's park state (inside its own struct)
 * @c: the connection
 * @maxwait: the most wait queues it will wait on
 * @wait_ms: how long it may wait
 *
 * Return: 0 or -ENOMEM.
 */
int krep_kpark_init(struct krep_kpark *kp, struct krep_conn *c,
		    unsigned int maxwait, u32 wait_ms)
{
	kp->c = c;
	kp->deadline = jiffies + msecs_to_jiffies(wait_ms);
	kp->nwait = 0;
	kp->maxwait = maxwait;
	kp->waits = krep_kvcalloc_brief(max(maxwait, 1U), sizeof(*kp->waits));
	return kp->waits ? 0 : -ENOMEM;
}

/* wait on @head too (a partition's waitq or commit_wq) */
void krep_kpark_wait_on(struct krep_kpark *kp, wait_queue_head_t *head)
{
	struct krep_kwait *w;

	if (kp->nwait == kp->maxwait)
		return;
	w = &kp->waits[kp->nwait++];
	w->head = head;
	w->kp = kp;
	init_waitqueue_func_entry(&w->wq, kwait_wake);
	add_wait_queue(head, &w->wq);
}

static void kpark_unwait(struct krep_kpark *kp)
{
	unsigned int i;

	for (i = 0; i < kp->nwait; i++)
		remove_wait_queue(kp->waits[i].head, &kp->waits[i].wq);
	kp->nwait = 0;
}

static void kpark_free(struct krep_kpark *kp)
{
	kpark_unwait(kp);
	kvfree(kp->waits);
	kp->waits = NULL;
	kp->release(kp);
}

/**
 * krep_kafka_park - answer @kp now if it can be, else park it
 * @kp: a request that krep_kpark_init() prepared; its waits go in first
 *	(under the park lock), then one look, so no wake-up is missed
 *
 * Called from the connection's receive work; @kp is released here or
 * when it is answered. Return: 0, or < 0 to close the connection.
 */
int krep_kafka_park(struct krep_kpark *kp)
{
	struct krep_conn *c = kp->c;
	struct krep_kconn *kc = c->kc;
	int ret;

	mutex_lock(&kc->park_lock);
	kc->park = kp;
	ret = kp->resume(kp, time_after_eq(jiffies, kp->deadline));
	if (ret) {
		kc->park = NULL;
		mutex_unlock(&kc->park_lock);
		kpark_free(kp);
		return ret < 0 ? ret : 0;
	}
	/* a wake-up that came meanwhile has queued the work: keep it */
	queue_delayed_work_on(krep_conn_cpu(c), krep_wq, &kc->park_work,
			      max_t(long, kp->deadline - jiffies, 0));
	mutex_unlock(&kc->park_lock);
	return 0;
}

static void park_resume(struct krep_kconn *kc)
{
	struct krep_conn *c = kc->c;
	struct krep_kpark *kp;
	int ret;

	mutex_lock(&kc->park_lock);
	kp = kc->park;
	if (!kp) {
		mutex_unlock(&kc->park_lock);
		return;
	}
	ret = kp->resume(kp, time_after_eq(jiffies, kp->deadline));
	if (!ret) {
		queue_delayed_work_on(krep_conn_cpu(c), krep_wq,
				      &kc->park_work,
				      max_t(long, kp->deadline - jiffies, 0));
		mutex_unlock(&kc->park_lock);
		return;
	}
	kc->park = NULL;
	mutex_unlock(&kc->park_lock);
	kpark_free(kp);
	if (ret < 0) {
		krep_conn_close(c, "cannot send a response");
		return;
	}
	/* idle from the answer on, not from the request: the clock again */
	WRITE_ONCE(kc->idle_deadline, jiffies +
		   msecs_to_jiffies(krep_param_kafka_idle_ms()));
	arm_deadline(c, kc);
	krep_conn_queue(c, &c->rx_work);	/* the next request */
}

/* a parked request's work: charged to the broker's memory cgroup */
static void park_work(struct work_struct *work)
{
	struct krep_kconn *kc = container_of(to_delayed_work(work),
					     struct krep_kconn, park_work);
	struct mem_cgroup *old = krep_memcg_enter(kc->c->kn);

	park_resume(kc);
	krep_memcg_leave(old);
}

/* the response header, and a size to fill in at the end */
void krep_kresp_begin(struct krep_kresp *rs, s32 corr, bool flex_hdr,
		      bool flex_body)
{
	memset(&rs->tx, 0, sizeof(rs->tx));
	rs->flushed = 0;
	krep_kw_init(&rs->w, flex_body);
	krep_kw_reserve32(&rs->w);
	krep_kw_i32(&rs->w, corr);
	if (flex_hdr)
		krep_kw_uvarint(&rs->w, 0);	/* no tagged fields */
}

static int kresp_flush(struct krep_kresp *rs)
{
	int err;

	if (rs->w.err)
		return rs->w.err;
	err = krep_tx_add(&rs->tx, NULL, rs->flushed,
			  rs->w.len - rs->flushed);
	rs->flushed = rs->w.len;
	return err;
}

/* a krep_log_frag_t: records go out from the log's pages, no copy */
int krep_kresp_emit(struct page *page, u32 off, u32 len, void *ctx)
{
	struct krep_kresp *rs = ctx;
	int err = kresp_flush(rs);

	return err ?: krep_tx_add(&rs->tx, page, off, len);
}

int krep_kresp_send(struct krep_conn *c, struct krep_kresp *rs)
{
	int err = kresp_flush(rs);

	if (err)
		return err;
	krep_kw_patch32(&rs->w, 0, rs->tx.bytes - 4);
	rs->tx.hbuf = rs->w.buf;
	rs->w.buf = NULL;
	err = krep_conn_send_raw(c, &rs->tx);
	krep_kresp_free(rs);
	return err;
}

void krep_kresp_free(struct krep_kresp *rs)
{
	krep_tx_release(&rs->tx);
	krep_kw_free(&rs->w);
}

static void kafka_rx(struct krep_conn *c)
{
	struct krep_kconn *kc = c->kc;
	const char *why = NULL;
	struct krep_kreq req;
	int ret, budget = 16;
	bool idle;

	while (!test_bit(KREP_CONN_DEAD, &c->flags) && budget--) {
		/* one request at a time: the parked one ends first */
		if (READ_ONCE(kc->park))
			goto done;
		idle = !kc->rx.size_got;
		if (idle && krep_conn_tx_over(c))
			goto done;
		ret = krep_krx_read(c, &kc->rx, &why);
		/* a request begun must arrive whole in time, size included */
		if (idle && kc->rx.size_got) {
			WRITE_ONCE(kc->req_deadline, jiffies +
				   msecs_to_jiffies(krep_param_kafka_request_ms()));
			arm_deadline(c, kc);
		}
		if (ret == -EAGAIN)
			goto done;
		/*
		 * Part of a request: read again, to its end or -EAGAIN. A
		 * reset or FIN that came before the socket had our callbacks
		 * (before accept) wakes nothing, so it is seen only here.
		 */
		if (!ret)
			continue;
		if (ret < 0)
			goto bad;
		krep_krx_take(&kc->rx, &req);
		WRITE_ONCE(kc->idle_deadline, jiffies +
			   msecs_to_jiffies(krep_param_kafka_idle_ms()));
		arm_deadline(c, kc);
		ret = krep_kafka_handle(c, &req, &why);
		krep_krx_uncharge(c, &kc->rx);
		if (ret)
			goto bad;
	}
	if (budget < 0)
		krep_conn_queue(c, &c->rx_work);
done:
	krep_conn_put(c);
	return;
bad:
	/* the client hung up (-EPIPE, no reason): nothing to log */
	krep_conn_close(c, ret == -EPIPE && !why ? NULL :
			why ?: "receive error");
	krep_conn_put(c);
}

/* requests, appends, parked requests: charged to the broker's cgroup */
void krep_kafka_rx_work(struct work_struct *work)
{
	struct krep_conn *c = container_of(work, struct krep_conn, rx_work);
	struct mem_cgroup *old = krep_memcg_enter(c->kn);

	kafka_rx(c);
	krep_memcg_leave(old);
}

int krep_kafka_conn_init(struct krep_conn *c)
{
	struct krep_kconn *kc = kzalloc(sizeof(*kc), KREP_GFP_DATA);

	if (!kc)
		return -ENOMEM;
	kc->c = c;
	mutex_init(&kc->park_lock);
	INIT_DELAYED_WORK(&kc->park_work, park_work);
	INIT_DELAYED_WORK(&kc->deadline_work, deadline_work);
	c->kc = kc;
	return 0;
}

/* accepted, before its callbacks: the idle deadline runs */
void krep_kafka_conn_start(struct krep_conn *c)
{
	struct krep_kconn *kc = c->kc;

	kc->idle_deadline = jiffies + msecs_to_jiffies(krep_param_kafka_idle_ms());
	arm_deadline(c, kc);
}

/* from the connection's release: stop the parked request */
void krep_kafka_conn_release(struct krep_conn *c)
{
	struct krep_kconn *kc = c->kc;
	struct krep_kpark *kp;

	mutex_lock(&kc->park_lock);
	kp = kc->park;
	kc->park = NULL;
	if (kp)
		kpark_unwait(kp);
	mutex_unlock(&kc->park_lock);
	cancel_delayed_work_sync(&kc->park_work);
	cancel_delayed_work_sync(&kc->deadline_work);
	if (kp)
		kpark_free(kp);
	krep_krx_uncharge(c, &kc->rx);
}

/* from the connection's last reference */
void krep_kafka_conn_free(struct krep_conn *c)
{
	if (!c->kc)
		return;
	krep_krx_reset(&c->kc->rx);
	kfree(c->kc);
	c->kc = NULL;
}
