// SPDX-License-Identifier: GPL-2.0
/*
 * krep: ISR expiration.
 *
 * Timers in this file:
 *   krep_net.isr_work - one delayed_work per broker that scans every
 *     partition it leads, every replica_lag_time_max_ms / 2 (the shortest
 *     over its replicated topics) and at least every KREP_SCAN_MAX_MS:
 *     ISR expiration, and transactions open past their timeout (producer.c).
 *     Armed by krep_isr_schedule() when a topic is created and by itself
 *     while topics exist; the gate refuses once the broker is dying;
 *     stopped with cancel_delayed_work_sync() in krep_isr_stop() before
 *     topics go.
 *
 * A follower is out of sync when its LEO differs from the leader's and it
 * has not been caught up for replica_lag_time_max_ms. With no controller
 * registered the leader is its own ISR authority and applies the shrink
 * at once, bumping the partition epoch, then recomputes HW.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/rculist.h>
#include <linux/workqueue.h>

#include "krep.h"
#include "broker.h"
#include "ctrl.h"
#include "isr.h"
#include "netlink.h"
#include "partition.h"
#include "topic.h"
#include "trace.h"
#include "producer.h"

/* the longest wait between two scans: transaction timeouts need them */
#define KREP_SCAN_MAX_MS	1000

static bool scan_partition(struct krep_partition *p)
{
	u32 lag = p->topic->config.replica_lag_time_max_ms;
	DECLARE_BITMAP(isr, KREP_RF_MAX);
	bool changed = false;
	unsigned int i;
	u64 now;

	mutex_lock(&p->lock);
	/* under the lock: no time a fetch recorded meanwhile is after it */
	now = krep_now_ms();
	if (p->role != KREP_ROLE_LEADER || p->dead)
		goto out;
	krep_txn_expire(p, now);
	if (p->nreplicas < 2)
		goto out;
	if (p->isr_pending) {
		/* no new change while one is in flight; remind the controller */
		if (now - p->isr_sent_ms >= KREP_ALTER_ISR_RETRY_MS) {
			p->isr_sent_ms = now;
			krep_nl_alter_isr(p, p->pending_isr);
		}
		goto out;
	}
	bitmap_copy(isr, p->isr, KREP_RF_MAX);
	for_each_set_bit(i, p->isr, p->nreplicas) {
		struct krep_remote *r = &p->remotes[i];

		if (i == p->self || r->leo == (s64)p->log.end_offset)
			continue;
		if (now - r->last_caught_up_ms <= lag)
			continue;
		__clear_bit(i, isr);
		changed = true;	/* one change for all of them */
		trace_krep_isr_shrink(p, p->replicas[i],
				      r->leo < 0 ? -1 : p->log.end_offset - r->leo,
				      now - r->last_caught_up_ms,
				      r->leo < 0 ? "never fetched" : "lagging");
		krep_state_info(p->topic->kn,
				"%s-%u: ISR shrink: broker %u out of sync for %llu ms\n",
				p->topic->name, p->index, p->replicas[i],
				now - r->last_caught_up_ms);
	}
	if (changed)
		krep_isr_change(p, isr);
out:
	mutex_unlock(&p->lock);
	return changed;
}

static void isr_scan(struct work_struct *work)
{
	struct krep_net *kn = container_of(to_delayed_work(work),
					   struct krep_net, isr_work);
	struct krep_topic *t;
	u32 i;

	mutex_lock(&kn->topics_lock);
	list_for_each_entry(t, &kn->topics, node) {
		for (i = 0; i < t->npartitions; i++) {
			if (t->parts[i] && scan_partition(t->parts[i]))
				krep_partition_wake(t->parts[i]);
		}
	}
	mutex_unlock(&kn->topics_lock);
	krep_isr_schedule(kn);
}

/**
 * krep_isr_change - the leader wants a new ISR
 * @p: the partition, locked, led by this broker, with no change pending
 * @isr: the ISR it wants (bits are indexes into p->replicas)
 *
 * With no controller registered the leader is its own ISR authority: the
 * change is applied at once, the partition epoch bumped, HW recomputed
 * (an ISR change is one of the four events that move it), and the change
 * is announced as an ALTER_ISR event. With a controller it is a request:
 * the ALTER_ISR event goes out, the change stays pending (HW counts the
 * maximal ISR, acks=all the committed one) until LEADER_AND_ISR commits
 * it or re-states the ISR, and the ISR scan sends it again meanwhile.
 */
void krep_isr_change(struct krep_partition *p, const unsigned long *isr)
{
	lockdep_assert_held(&p->lock);
	if (!krep_ctrl_epoch(p->topic->kn)) {
		bitmap_copy(p->isr, isr, KREP_RF_MAX);
		p->partition_epoch++;
		krep_partition_update_hw(p);
		krep_nl_alter_isr(p, p->isr);
		return;
	}
	bitmap_copy(p->pending_isr, isr, KREP_RF_MAX);
	p->isr_pending = true;
	p->isr_sent_ms = krep_now_ms();
	krep_partition_update_hw(p);
	krep_nl_alter_isr(p, p->pending_isr);
}

void krep_isr_init(struct krep_net *kn)
{
	INIT_DELAYED_WORK(&kn->isr_work, isr_scan);
}

/* (re)arm the scan; the only gate, refusing once the broker is dying */
void krep_isr_schedule(struct krep_net *kn)
{
	u32 lag = krep_topics_min_lag_ms(kn);
	u32 every = lag ? min_t(u32, lag / 2, KREP_SCAN_MAX_MS) :
			  KREP_SCAN_MAX_MS;
	unsigned long delay = msecs_to_jiffies(max_t(u32, every, 1));

	if (!krep_topics_exist(kn) || READ_ONCE(kn->dying))
		return;
	/*
	 * a new topic with a shorter lag brings the next scan forward; the
	 * expiry read unlocked may be stale: at worst one scan too early
	 */
	if (!delayed_work_pending(&kn->isr_work) ||
	    time_before(jiffies + delay, READ_ONCE(kn->isr_work.timer.expires)))
		mod_delayed_work(system_power_efficient_wq, &kn->isr_work,
				 delay);
}

void krep_isr_stop(struct krep_net *kn)
{
	WRITE_ONCE(kn->dying, true);
	cancel_delayed_work_sync(&kn->isr_work);
}
