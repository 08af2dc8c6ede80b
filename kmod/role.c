// SPDX-License-Identifier: GPL-2.0
/*
 * krep: what the controller says of a partition (LEADER_AND_ISR) and the
 * leader epoch rules that keep replicas' logs identical below HW
 * (docs/design.md §2, Roles, Becoming leader, Leader epochs and truncation).
 *
 * A replica becoming leader records (its epoch, its LEO) and waits for
 * every ISR member to fetch in the new epoch. A replica becoming follower
 * keeps its log as it is: its first FETCH carries the epoch of its last
 * batch, the leader answers with where that epoch ends in its own log
 * when the two differ (KIP-320's diverging epoch), and the follower
 * truncates there -- never to its own HW. When the follower does not
 * know the epoch the leader names, it truncates to the end of the
 * newest epoch it has below it and asks again (several rounds).
 *
 * Everything here runs under p->lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>

#include "krep.h"
#include "broker.h"
#include "partition.h"
#include "topic.h"
#include "trace.h"
#include "producer.h"
#include "topic_meta.h"

/*
 * As Kafka's Replica.resetReplicaState: a new leader knows nothing of
 * its followers until they fetch in its epoch; a leader re-elected keeps
 * their LEOs and log starts, so HW does not stall. Either way a follower
 * in the ISR counts as caught up now, one outside it not at all until it
 * fetches (so that it does not hold HW back).
 */
static void become_leader(struct krep_partition *p, bool was_leader, u64 now)
{
	unsigned int i;

	WRITE_ONCE(p->role, KREP_ROLE_LEADER);
	krep_epoch_assign(&p->epochs, p->leader_epoch, p->log.end_offset);
	p->epoch_start_offset = p->log.end_offset;
	for (i = 0; i < p->nreplicas; i++) {
		struct krep_remote *r = &p->remotes[i];
		bool in_isr = test_bit(i, p->isr);

		if (!was_leader) {
			r->leo = -1;	/* unknown until it fetches in this epoch */
			/* no offset matches: caught up only at the LEO */
			r->leo_at_last_fetch = U64_MAX;
			r->last_fetch_ms = 0;
		} else {
			r->leo_at_last_fetch = p->log.end_offset;
			r->last_fetch_ms = in_isr ? now : 0;
		}
		r->last_caught_up_ms = in_isr ? now : 0;
	}
	/* a follower's HW is at most its LEO; no waiting batch is ours */
	krep_partition_reset_pending(p);
	krep_partition_update_hw(p);
}

/**
 * krep_partition_leader_and_isr - apply the controller's word
 * @p: the partition
 * @lai: leader, epochs and ISR
 * @follow: set to the leader to fetch from when this replica now follows
 *	one (the caller kicks that fetcher), else -1
 * @st: the refusal
 *
 * Return: 0, -ESTALE (FENCED_LEADER_EPOCH), -EINVAL or -ENOENT.
 */
int krep_partition_leader_and_isr(struct krep_partition *p,
				  const struct krep_lai *lai, s64 *follow,
				  struct krep_status *st)
{
	u32 self = p->replicas[p->self];
	DECLARE_BITMAP(inel, KREP_RF_MAX);
	DECLARE_BITMAP(isr, KREP_RF_MAX);
	bool new_epoch, was_leader;
	s64 old_leader;
	int err;

	*follow = -1;
	mutex_lock(&p->lock);
	if (p->dead) {
		err = krep_fail(st, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION, -ENOENT,
				"topic was deleted");
		goto out;
	}
	err = krep_lai_check(p->replicas, p->nreplicas, lai, isr, inel, st);
	if (err)
		goto out;
	if (lai->leader_epoch < p->leader_epoch ||
	    (lai->leader_epoch == p->leader_epoch &&
	     lai->partition_epoch < p->partition_epoch)) {
		err = krep_fail(st, KREP_KERR_FENCED_LEADER_EPOCH, -ESTALE,
				"leader or partition epoch older than the replica's");
		goto out;
	}
	/* epoch 0 is where every replica starts: only a change moves it */
	new_epoch = lai->leader_epoch > p->leader_epoch ||
		    lai->leader != p->leader;
	was_leader = p->role == KREP_ROLE_LEADER;
	old_leader = p->leader;

	bitmap_copy(p->isr, isr, KREP_RF_MAX);
	bitmap_copy(p->ineligible, inel, KREP_RF_MAX);
	p->isr_pending = false;		/* committed, or turned down */
	p->partition_epoch = lai->partition_epoch;
	if (!new_epoch) {
		if (was_leader) {
			krep_partition_update_hw(p);
			pr_info("%s-%u: ISR committed at partition epoch %u (%u members)\n",
				p->topic->name, p->index, p->partition_epoch,
				krep_partition_isr_size(p));
		}
		goto wake;
	}

	p->leader_epoch = lai->leader_epoch;
	p->leader = lai->leader;
	if (lai->leader == self) {
		become_leader(p, was_leader, krep_now_ms());
	} else {
		WRITE_ONCE(p->role, KREP_ROLE_FOLLOWER);
		krep_partition_reset_pending(p);
		krep_producer_drop_unlogged(p);
		*follow = lai->leader;
	}
	trace_krep_leader_change(p, old_leader);
	pr_info("%s-%u: leader %lld epoch %u: %s\n", p->topic->name, p->index,
		lai->leader, lai->leader_epoch,
		p->role == KREP_ROLE_LEADER ? "leading" :
		lai->leader < 0 ? "offline, no leader" : "following");
wake:
	krep_partition_wake(p);
out:
	mutex_unlock(&p->lock);
	return err;
}

/**
 * krep_partition_epoch_end - OffsetsForLeaderEpoch
 * @p: the partition
 * @epoch: the epoch asked
 * @follower_read: a follower may answer too
 * @found: set to the largest known epoch <= @epoch, -1 when none is
 * @end: set to its end offset
 * @st: the refusal
 *
 * Return: 0 or -EREMOTE (NOT_LEADER_OR_FOLLOWER), -ENOENT.
 */
int krep_partition_epoch_end(struct krep_partition *p, u32 epoch,
			     bool follower_read, s64 *found, u64 *end,
			     struct krep_status *st)
{
	int err = 0;
	u32 f;

	mutex_lock(&p->lock);
	if (p->dead)
		err = krep_fail(st, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
				-ENOENT, "topic was deleted");
	else if (p->role != KREP_ROLE_LEADER && !follower_read)
		err = krep_fail(st, KREP_KERR_NOT_LEADER_OR_FOLLOWER, -EREMOTE,
				"this broker is not the partition's leader");
	else if (krep_epoch_end_offset(&p->epochs, epoch, p->log.end_offset,
				       &f, end))
		*found = f;
	else
		*found = -1;
	mutex_unlock(&p->lock);
	return err;
}

/**
 * krep_partition_kafka_epoch_end - a Kafka client's OffsetForLeaderEpoch
 * @p: the partition, led here
 * @cur_epoch: the client's current leader epoch, or -1 (KIP-320 fencing)
 * @epoch: the epoch asked
 * @found: set as krep_epoch_end_kafka() does
 * @end: likewise
 * @st: the refusal
 *
 * Return: 0 or a negative errno with @st set.
 */
int krep_partition_kafka_epoch_end(struct krep_partition *p, s32 cur_epoch,
				   s32 epoch, s32 *found, s64 *end,
				   struct krep_status *st)
{
	int err = 0;

	mutex_lock(&p->lock);
	if (p->dead)
		err = krep_fail(st, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
				-ENOENT, "topic was deleted");
	else if (p->role != KREP_ROLE_LEADER)
		err = krep_fail(st, KREP_KERR_NOT_LEADER_OR_FOLLOWER, -EREMOTE,
				"this broker is not the partition's leader");
	else if (cur_epoch >= 0 && cur_epoch < p->leader_epoch)
		err = krep_fail(st, KREP_KERR_FENCED_LEADER_EPOCH, -ESTALE,
				"leader epoch older than the replica's");
	else if (cur_epoch >= 0 && cur_epoch > p->leader_epoch)
		err = krep_fail(st, KREP_KERR_UNKNOWN_LEADER_EPOCH, -EAGAIN,
				"leader epoch newer than the replica's");
	else
		krep_epoch_end_kafka(&p->epochs, epoch, p->log.end_offset,
				     found, end);
	mutex_unlock(&p->lock);
	return err;
}

/**
 * krep_partition_diverges - does a follower's log leave the leader's?
 * @p: the partition, led here, locked
 * @fp: the follower's fetch (offset = its LEO, epoch of its last batch)
 * @res: set to the diverging epoch and its end offset on this leader
 *
 * KIP-320: the epoch of the follower's last batch must end, in the
 * leader's log, no earlier than the follower's LEO. When the leader knows
 * no epoch that old (its cache lost it), it names its oldest epoch's
 * start with epoch -1, and a follower whose LEO is not past that start
 * is taken as it is.
 */
bool krep_partition_diverges(const struct krep_partition *p,
			     const struct krep_fetch_part *fp,
			     struct krep_fetch_result *res)
{
	u64 end;
	u32 found;

	lockdep_assert_held(&p->lock);
	if (fp->last_epoch < 0)
		return false;
	if (!krep_epoch_end_offset(&p->epochs, fp->last_epoch,
				   p->log.end_offset, &found, &end)) {
		end = p->epochs.n ? p->epochs.e[0].start : p->log.start_offset;
		/* below every epoch we know there is nothing to compare */
		if (fp->offset <= end)
			return false;
		res->div_epoch = -1;
		res->div_end = end;
		return true;
	}
	if (found == (u32)fp->last_epoch && end >= fp->offset)
		return false;
	res->div_epoch = found;
	res->div_end = end;
	return true;
}

/**
 * krep_partition_truncate - drop the log from @offset on
 * @p: the partition, locked
 * @offset: the new LEO (a batch holding it goes whole)
 * @why: for the kernel log
 *
 * The epoch cache, HW, LSO, open transactions and the aborted index
 * follow the log. Epochs starting at the new end go too, even when no
 * batch does: a new leader's epoch in which it wrote nothing must not
 * stay this replica's "last fetched epoch" (it would diverge forever).
 */
void krep_partition_truncate(struct krep_partition *p, u64 offset,
			     const char *why)
{
	u64 old = p->log.end_offset, leo;

	lockdep_assert_held(&p->lock);
	if (offset >= old) {
		/* nothing to cut, but an epoch that wrote nothing goes */
		krep_epoch_truncate_end(&p->epochs, old);
		return;
	}
	leo = krep_log_truncate(&p->log, offset);
	krep_epoch_truncate_end(&p->epochs, leo);
	if (p->hw > leo)
		WRITE_ONCE(p->hw, leo);
	if (p->lso > p->hw)
		WRITE_ONCE(p->lso, p->hw);	/* read locklessly too */
	krep_partition_reset_pending(p);
	if (leo > offset)
		krep_producer_rebuild(p);	/* reset to its start: empty */
	else
		krep_producer_truncated(p, leo);
	trace_krep_truncate(p, p->replicas[p->self], old, leo);
	krep_state_info(p->topic->kn, "%s-%u: truncated from %llu to %llu: %s\n",
			p->topic->name, p->index, old, leo, why);
}

/*
 * The leader answered a diverging epoch: truncate to where our logs part.
 * If we hold that epoch, to the earlier of the two ends; if we do not,
 * to the end of the newest epoch we have below it, and the next FETCH
 * asks again with that epoch.
 */
void krep_partition_follower_diverged(struct krep_partition *p,
				      const struct krep_fetch_result *res)
{
	u64 leo = p->log.end_offset, target = res->div_end, end;
	u32 found;

	lockdep_assert_held(&p->lock);
	if (res->div_epoch >= 0 &&
	    krep_epoch_end_offset(&p->epochs, res->div_epoch, leo, &found,
				  &end))
		target = found == (u32)res->div_epoch ? min(target, end) : end;
	krep_partition_truncate(p, min(target, leo), "diverged from the leader");
}
