// SPDX-License-Identifier: GPL-2.0
/*
 * krep: a partition's local replica and the rules of docs/design.md §2
 * that act on it: leader appends, HW over the ISR gated on
 * min.insync.replicas, LSO and transactions, log start and LW, and the
 * waits of acks=all produces and of consumers parked at the end.
 *
 * Locking: p->lock (a mutex: appends allocate pages) guards the whole
 * partition. Waiters sleep without it and recheck under it: fetches
 * (consumers, and the followers' parked FETCHes) on p->waitq, acks=all
 * produces on p->commit_wq. Every change a waiter may be waiting for ends
 * in krep_partition_wake(), which wakes both; a leader's append that
 * leaves HW where it was wakes the fetches only, so producers waiting
 * for HW do not wake for each other's appends.
 * Waiters hold a reference on the topic, which owns the partition.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/sched/signal.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <net/netlink.h>

#include "krep.h"
#include "broker.h"
#include "disklog.h"
#include "isr.h"
#include "partition.h"
#include "record.h"
#include "replica.h"
#include "topic.h"
#include "trace.h"
#include "producer.h"

u64 krep_now_ms(void)
{
	return ktime_to_ms(ktime_get());
}

struct krep_partition *krep_partition_new(struct krep_topic *t, u32 index,
					  const u32 *replicas,
					  unsigned int nreplicas, u32 self_id,
					  bool leaderless)
{
	struct krep_partition *p;
	u64 now = krep_now_ms();
	unsigned int i;

	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return NULL;
	p->topic = t;
	p->index = index;
	mutex_init(&p->lock);
	init_waitqueue_head(&p->waitq);
	init_waitqueue_head(&p->commit_wq);
	krep_producer_init(p);
	krep_log_init(&p->log, &t->kn->mem, t->config.segment_bytes,
		      t->config.segment_ms);
	p->log.rolled = krep_producer_log_rolled;
	p->nreplicas = nreplicas;
	for (i = 0; i < nreplicas; i++) {
		p->replicas[i] = replicas[i];
		if (replicas[i] == self_id)
			p->self = i;
		p->remotes[i].leo = -1;
		p->remotes[i].last_caught_up_ms = now;
		p->remotes[i].last_fetch_ms = now;
		__set_bit(i, p->isr);
	}
	if (leaderless) {
		/* the controller's topic: its LEADER_AND_ISR names the leader */
		p->leader = -1;
		p->role = KREP_ROLE_FOLLOWER;
	} else {
		/* no controller: the preferred replica leads at epoch 0 */
		p->leader = replicas[0];
		p->role = replicas[0] == self_id ? KREP_ROLE_LEADER :
						   KREP_ROLE_FOLLOWER;
		if (p->role == KREP_ROLE_LEADER)
			krep_epoch_assign(&p->epochs, 0, 0);
	}
	trace_krep_leader_change(p, -1);
	krep_obj_get(KREP_OBJ_PARTITION);
	return p;
}

void krep_partition_free(struct krep_partition *p)
{
	if (!p)
		return;
	krep_log_destroy(&p->log);
	krep_epoch_destroy(&p->epochs);
	krep_producer_destroy(p);
	kfree(p);
	krep_obj_put(KREP_OBJ_PARTITION);
}

void krep_partition_wake(struct krep_partition *p)
{
	wake_up_all(&p->waitq);
	wake_up_all(&p->commit_wq);
}

/*
 * HW moved: wake the consumers' fetches (not the followers': HW alone has
 * nothing for them), and the producers it has committed
 */
static void wake_hw(struct krep_partition *p)
{
	struct krep_wake_serve hw_only = { .hw_only = true };
	u64 hw = p->hw;

	lockdep_assert_held(&p->lock);
	__wake_up(&p->waitq, TASK_NORMAL, 0, &hw_only);
	__wake_up(&p->commit_wq, TASK_NORMAL, 0, &hw);
}

/* the partition goes away (topic deleted, broker shutting down) */
void krep_partition_kill(struct krep_partition *p)
{
	mutex_lock(&p->lock);
	WRITE_ONCE(p->dead, true);	/* wait conditions read it unlocked */
	mutex_unlock(&p->lock);
	krep_partition_wake(p);
}

unsigned int krep_partition_isr_size(const struct krep_partition *p)
{
	return bitmap_weight(p->isr, p->nreplicas);
}

/* min(min.insync.replicas, RF): the ISR size below which acks=all fails */
static unsigned int min_isr(const struct krep_partition *p)
{
	return min_t(unsigned int, p->topic->config.min_insync_replicas,
		     p->nreplicas);
}

static void pending_push(struct krep_partition *p, u64 last_offset)
{
	unsigned int next = (p->pend_head + 1) % KREP_PENDING_RING;

	if (next == p->pend_tail)
		return;		/* full: these batches go unmeasured */
	p->pending[p->pend_head].last_offset = last_offset;
	p->pending[p->pend_head].append_ns = ktime_get_ns();
	p->pend_head = next;
}

/* the append time of the oldest batch now below @hw, or -1 */
static s64 pending_pop(struct krep_partition *p, u64 hw)
{
	s64 oldest = -1;

	while (p->pend_tail != p->pend_head &&
	       p->pending[p->pend_tail].last_offset < hw) {
		if (oldest < 0)
			oldest = p->pending[p->pend_tail].append_ns;
		p->pend_tail = (p->pend_tail + 1) % KREP_PENDING_RING;
	}
	return oldest;
}

/* the append times of batches no longer waiting: a new epoch or a truncation */
void krep_partition_reset_pending(struct krep_partition *p)
{
	p->pend_head = 0;
	p->pend_tail = 0;
}

void krep_partition_set_hw(struct krep_partition *p, u64 hw)
{
	trace_krep_hw_advance(p, p->hw, hw, pending_pop(p, hw));
	WRITE_ONCE(p->hw, hw);	/* read locklessly by waiting producers */
}

/* the maximal ISR: the committed one plus a pending change's additions */
void krep_partition_max_isr(const struct krep_partition *p,
			    unsigned long *isr)
{
	if (p->isr_pending)
		bitmap_or(isr, p->isr, p->pending_isr, KREP_RF_MAX);
	else
		bitmap_copy(isr, p->isr, KREP_RF_MAX);
}

/*
 * retention.bytes: drop whole segments from the start, only below HW (as
 * Kafka); run on each append and each HW move, so that a log whose HW
 * trailed its appends shrinks once the followers catch up
 */
static void leader_retain(struct krep_partition *p)
{
	krep_log_retain(&p->log, p->topic->config.retention_bytes, p->hw);
	krep_epoch_truncate_start(&p->epochs, p->log.start_offset);
}

/*
 * a follower outside the ISR that is caught up (at the leader's LEO, or
 * caught up within replica_lag_time_max_ms) holds HW back too, as in
 * Kafka's maybeIncrementLeaderHW: HW then waits for it, so that it can
 * reach HW and rejoin the ISR while produces go on
 */
static bool caught_up(const struct krep_partition *p,
		      const struct krep_remote *r, u64 now)
{
	return r->leo >= 0 &&
	       ((u64)r->leo == p->log.end_offset ||
		now - r->last_caught_up_ms <=
		p->topic->config.replica_lag_time_max_ms);
}

/*
 * Leader HW: the minimum LEO over the leader, the maximal ISR and the
 * caught-up followers the controller has not fenced (Kafka's
 * maybeIncrementLeaderHW with isReplicaIsrEligible), moving only forward
 * and not at all while the ISR is below min.insync.replicas.
 * Called when the replica becomes leader, when a fetch moves a follower's
 * LEO, after an append, and when an ISR change is committed.
 */
void krep_partition_update_hw(struct krep_partition *p)
{
	DECLARE_BITMAP(isr, KREP_RF_MAX);
	u64 hw = p->log.end_offset, now = krep_now_ms();
	unsigned int i;

	lockdep_assert_held(&p->lock);
	if (p->role != KREP_ROLE_LEADER)
		return;
	if (krep_partition_isr_size(p) < min_isr(p))
		return;
	krep_partition_max_isr(p, isr);
	for (i = 0; i < p->nreplicas; i++) {
		const struct krep_remote *r = &p->remotes[i];

		if (i == p->self)
			continue;
		if (test_bit(i, isr) && r->leo < 0)
			return;		/* not fetched in this epoch yet */
		if (test_bit(i, isr) ||
		    (!test_bit(i, p->ineligible) && caught_up(p, r, now)))
			hw = min_t(u64, hw, r->leo);
	}
	if (hw > p->hw) {
		krep_partition_set_hw(p, hw);
		leader_retain(p);
	}
	krep_partition_update_lso(p);
}

int krep_partition_check_leader(struct krep_partition *p,
				struct krep_status *st)
{
	if (p->dead)
		return krep_fail(st, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
				 -ENOENT, "topic was deleted");
	if (p->role != KREP_ROLE_LEADER)
		return krep_fail(st, KREP_KERR_NOT_LEADER_OR_FOLLOWER,
				 -EREMOTE, "this broker is not the partition's leader");
	return 0;
}

/* the leader epoch a client sent (KIP-320), -1 when it sent none */
static int check_epoch(struct krep_partition *p, s64 epoch,
		       struct krep_status *st)
{
	if (epoch < 0 || epoch == p->leader_epoch)
		return 0;
	if (epoch < p->leader_epoch)
		return krep_fail(st, KREP_KERR_FENCED_LEADER_EPOCH, -ESTALE,
				 "leader epoch older than the replica's");
	return krep_fail(st, KREP_KERR_UNKNOWN_LEADER_EPOCH, -EAGAIN,
			 "leader epoch newer than the replica's");
}

static int append_error(int err, struct krep_status *st)
{
	switch (err) {
	case -ENOSPC:
		return krep_fail(st, KREP_KERR_KAFKA_STORAGE_ERROR, -ENOSPC,
				 "broker log memory cap reached");
	case -EMSGSIZE:
		return krep_fail(st, KREP_KERR_RECORD_LIST_TOO_LARGE,
				 -EMSGSIZE, "batch larger than segment_bytes");
	default:
		return krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, err,
				 "append failed");
	}
}

/*
 * LW: the smallest log start offset over the leader and its live
 * followers, those that fetched within replica_lag_time_max_ms (Kafka's
 * lowWatermarkIfLeader counts the replicas on live brokers); a follower
 * that has not fetched yet counts 0. A waiting DELETE_RECORDS is woken.
 */
static void update_low_watermark(struct krep_partition *p)
{
	u32 lag = p->topic->config.replica_lag_time_max_ms;
	u64 lw = p->log.start_offset, now = krep_now_ms();
	unsigned int i;

	for (i = 0; i < p->nreplicas; i++) {
		const struct krep_remote *r = &p->remotes[i];

		if (i != p->self && now - r->last_fetch_ms <= lag)
			lw = min(lw, r->log_start);
	}
	if (lw > p->low_watermark) {
		WRITE_ONCE(p->low_watermark, lw);
		wake_up_all(&p->commit_wq);
	}
	krep_producer_prune(p);
}

/* the leader appended @pb, @len bytes, at @base (p->lock held) */
static void leader_appended(struct krep_partition *p,
			    const struct krep_batch *pb, u32 len, u64 base)
{
	struct krep_batch b = *pb;

	b.base_offset = base;
	krep_producer_batch(p, &b);
	trace_krep_leo_update(p, p->replicas[p->self], base, p->log.end_offset);
	atomic64_add(len, &p->topic->kn->stats.produce_bytes);
	atomic64_add(p->log.end_offset - base, &p->topic->kn->stats.records);
	pending_push(p, p->log.end_offset - 1);
	leader_retain(p);
	update_low_watermark(p);
	krep_partition_update_hw(p);
}

/**
 * krep_partition_leader_append - append at the log end as leader
 * @p: the partition, locked, led by this broker
 * @batch: a checked RecordBatch v2 (a producer's, or a marker)
 * @len: its length
 * @base: set to the offset it was stamped with
 * @st: the refusal
 *
 * Stamps the base offset and leader epoch, takes the batch into the
 * producer state, then moves HW and LSO as far as they may go.
 *
 * Return: 0 or a negative errno.
 */
int krep_partition_leader_append(struct krep_partition *p, const u8 *batch,
				 u32 len, u64 *base, struct krep_status *st)
{
	struct krep_batch b;
	int err;

	lockdep_assert_held(&p->lock);
	*base = p->log.end_offset;
	err = krep_log_append(&p->log, batch, len, *base, p->leader_epoch);
	if (err)
		return append_error(err, st);
	if (!krep_batch_parse(batch, len, &b))
		leader_appended(p, &b, len, *base);
	return 0;
}

/*
 * Under p->lock: 0 committed, -EINPROGRESS still waiting, or the error.
 * As Kafka's Partition.checkEnoughReplicasReachOffset: a record HW has
 * passed is committed, answered NOT_ENOUGH_REPLICAS_AFTER_APPEND when
 * the ISR is by then below min.insync.replicas; one HW has not passed
 * waits on (HW stays while the ISR is too small) until its timeout.
 */
static int commit_state(struct krep_partition *p, u64 last,
			struct krep_status *st)
{
	if (p->dead || krep_exiting())
		return krep_fail(st, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
				 -ENOENT, "topic was deleted");
	if (p->role != KREP_ROLE_LEADER && p->hw <= last)
		return krep_fail(st, KREP_KERR_NOT_LEADER_OR_FOLLOWER,
				 -EREMOTE, "leadership moved while waiting");
	if (p->hw <= last)
		return -EINPROGRESS;
	if (p->role == KREP_ROLE_LEADER &&
	    krep_partition_isr_size(p) < min_isr(p))
		return krep_fail(st, KREP_KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
				 -EAGAIN, "committed, but the ISR is below min_insync_replicas");
	return 0;
}

/* where an append's batch comes from */
struct append_src {
	const u8 *batch;		/* checked by krep_batch_check(), or */
	krep_copy_t copy;		/* copied into the log, checked there */
	void *arg;
};

/* a batch krep_batch_check() refused: Kafka's code for it */
static int batch_refused(struct krep_status *st, int err, const char *why)
{
	return krep_fail(st, err == -EBADMSG ? KREP_KERR_CORRUPT_MESSAGE :
			 KREP_KERR_INVALID_RECORD, err, why);
}

/*
 * Copy @src's batch into room at the log end and check it there: the
 * batch's one copy. Published by leader_publish(), else dropped. Without
 * room (the memory cap, no mapping) it goes to *@bounce instead and is
 * appended from there as krep_partition_append() does, so that a retry
 * of a batch in the log is still answered with its offsets.
 */
static int slot_fill(struct krep_partition *p, const struct append_src *src,
		     u32 len, struct krep_log_slot *slot, u8 **bounce,
		     struct krep_batch *b, struct krep_status *st)
{
	const char *why;
	u8 *to;
	int err;

	if (!krep_log_slot_get(&p->log, len, slot)) {
		to = slot->batch;
	} else {
		krep_log_slot_put(&p->log, slot);
		*bounce = krep_kvmalloc_brief(len, 0);
		if (!*bounce)
			return krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR,
					 -ENOMEM, "out of memory for a batch");
		to = *bounce;
	}
	err = src->copy(to, len, src->arg);
	if (err)
		return krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, err,
				 "records lost in the receive");
	err = krep_batch_check(to, len, b, &why);
	return err ? batch_refused(st, err, why) : 0;
}

static void leader_publish(struct krep_partition *p,
			   struct krep_log_slot *slot,
			   const struct krep_batch *b, u32 len, u64 *base)
{
	*base = p->log.end_offset;
	krep_log_slot_publish(&p->log, slot, b, *base, p->leader_epoch);
	leader_appended(p, b, len, *base);
}

/*
 * krep_partition_append() and krep_partition_append_copy(): @b is parsed
 * from @src->batch, or only from the head of @src->copy's batch
 */
static int append(struct krep_partition *p, const struct append_src *src,
		  struct krep_batch *b, u32 len, s16 acks, s64 leader_epoch,
		  struct krep_append_result *res, struct krep_status *st)
{
	struct krep_log_slot slot = {};
	struct krep_wake_serve ws = {};
	const u8 *batch = src->batch;
	u8 *bounce = NULL;
	u64 old_hw;
	bool due;
	int err;

	mutex_lock(&p->lock);
	err = krep_partition_check_leader(p, st);
	if (!err)
		err = check_epoch(p, leader_epoch, st);
	if (err)
		goto out;
	if (krep_disk_failed(p)) {
		/* as Kafka's offline log directory: no more appends here */
		err = krep_fail(st, KREP_KERR_KAFKA_STORAGE_ERROR, -EIO,
				"the partition's log directory failed (see the kernel log)");
		goto out;
	}
	if (acks == -1 && krep_partition_isr_size(p) < min_isr(p)) {
		err = krep_fail(st, KREP_KERR_NOT_ENOUGH_REPLICAS, -EAGAIN,
				"ISR smaller than min_insync_replicas");
		goto out;
	}
	if (src->copy) {
		err = slot_fill(p, src, len, &slot, &bounce, b, st);
		if (err)
			goto out;
		batch = bounce;
	}
	err = krep_producer_check(p, b, res, st);
	if (err < 0)
		goto out;
	if (err) {
		/* a producer's retry of a batch in the log: its offsets */
		err = 0;
		if (acks != -1)
			goto out;
		krep_log_slot_put(&p->log, &slot);
		mutex_unlock(&p->lock);
		kvfree(bounce);
		return 0;
	}
	old_hw = p->hw;
	if (batch)
		err = krep_partition_leader_append(p, batch, len, &res->base,
						   st);
	else
		leader_publish(p, &slot, b, len, &res->base);
	krep_log_slot_put(&p->log, &slot);
	kvfree(bounce);
	bounce = NULL;
	if (err)
		goto out;
	res->last = res->base + b->last_delta;
	due = krep_partition_flush_due(p);
	res->flush = acks != 0 && due;
	if (p->hw != old_hw)
		wake_hw(p);
	if (acks != -1) {
		wake_up_all(&p->waitq);
		goto out;
	}
	/* the parked FETCHes this wakes are answered here, unlocked */
	__wake_up(&p->waitq, TASK_NORMAL, 0, &ws);
	mutex_unlock(&p->lock);
	krep_replica_serve_woken(&ws);
	return 0;
out:
	krep_log_slot_put(&p->log, &slot);
	trace_krep_produce(p, err && !res->base ? 0 : res->base, b->count, len,
			   acks, err ? st->kerr : 0);
	mutex_unlock(&p->lock);
	kvfree(bounce);
	return err;
}

/* what both appends check first, with no lock held */
static int append_begin(struct krep_partition *p, u32 len,
			struct krep_append_result *res, struct krep_status *st)
{
	res->base = 0;
	res->last = 0;
	res->count = 0;
	res->flush = false;
	if (len > p->topic->config.max_message_bytes)
		return krep_fail(st, KREP_KERR_MESSAGE_TOO_LARGE, -EMSGSIZE,
				 "batch larger than max_message_bytes");
	return 0;
}

/**
 * krep_partition_append - append a producer's batch as leader, without
 * waiting for it to commit
 * @p: the partition
 * @batch: one RecordBatch v2, @len bytes, not yet checked
 * @len: its length
 * @acks: 0, 1 or -1 (all): -1 also checks min_insync_replicas first
 * @leader_epoch: the epoch the producer knows, or -1
 * @res: set to the base offset, last offset and record count
 * @st: Kafka's error code and a reason on failure
 *
 * An acks=all append answers the parked FETCHes it woke itself (the
 * followers get the records at once). A failed append and an append of
 * acks 0 or 1 are traced here; krep_partition_trace_produce() traces an
 * acks=all append once its commit is decided.
 *
 * Return: 0 or a negative errno (see uapi/linux/krep.h for the mapping).
 */
int krep_partition_append(struct krep_partition *p, const u8 *batch, u32 len,
			  s16 acks, s64 leader_epoch,
			  struct krep_append_result *res, struct krep_status *st)
{
	const struct append_src src = { .batch = batch };
	struct krep_batch b;
	const char *why;
	int err;

	err = append_begin(p, len, res, st);
	if (err)
		return err;
	err = krep_batch_check(batch, len, &b, &why);
	if (err)
		return batch_refused(st, err, why);
	res->count = b.count;
	return append(p, &src, &b, len, acks, leader_epoch, res, st);
}

/**
 * krep_partition_append_copy - krep_partition_append() for a batch that
 * is still in a socket's buffers
 * @p: the partition
 * @len: the batch's length
 * @copy: copies the batch's first bytes (to check its header first, with
 *	no lock held), then all of it into room at the log end, where it is
 *	checked in place: its one copy
 * @arg: for @copy
 * @acks: as krep_partition_append()
 * @leader_epoch: as krep_partition_append()
 * @res: as krep_partition_append()
 * @st: as krep_partition_append()
 *
 * The same checks, answers and errors as krep_partition_append(); the
 * CRC and the records' framing are checked under the partition's lock,
 * after the leader's own checks, as Kafka validates after its leader
 * check.
 *
 * Return: 0 or a negative errno.
 */
int krep_partition_append_copy(struct krep_partition *p, u32 len,
			       krep_copy_t copy, void *arg, s16 acks,
			       s64 leader_epoch,
			       struct krep_append_result *res,
			       struct krep_status *st)
{
	const struct append_src src = { .copy = copy, .arg = arg };
	u8 head[KREP_RB_HDR_LEN];
	u32 n = min_t(u32, len, sizeof(head));
	struct krep_batch b = {};
	const char *why;
	int err;

	err = append_begin(p, len, res, st);
	if (err)
		return err;
	err = copy(head, n, arg);
	if (err)
		return krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, err,
				 "records lost in the receive");
	err = krep_batch_check_head(head, n, len, &b, &why);
	if (err)
		return batch_refused(st, err, why);
	res->count = b.count;
	return append(p, &src, &b, len, acks, leader_epoch, res, st);
}

/* an acks=all append's outcome, once known */
void krep_partition_trace_produce(struct krep_partition *p,
				  const struct krep_append_result *res,
				  u32 len, s16 kerr)
{
	trace_krep_produce(p, res->base, res->count, len, -1, kerr);
}

/**
 * krep_partition_commit_check - where an acks=all append stands
 * @p: the partition
 * @last: the append's last offset
 * @st: set on an error
 *
 * Return: 0 committed (HW passed @last), -EINPROGRESS still waiting, or
 * the error that ends the wait (leadership moved, ISR below
 * min_insync_replicas, topic deleted).
 */
int krep_partition_commit_check(struct krep_partition *p, u64 last,
				struct krep_status *st)
{
	int err;

	mutex_lock(&p->lock);
	err = commit_state(p, last, st);
	mutex_unlock(&p->lock);
	return err;
}

/*
 * flush.messages: has the log grown that much past what is synced? Then
 * the disk work is asked to sync up to the log end (p->lock held)
 */
bool krep_partition_flush_due(struct krep_partition *p)
{
	s64 n = p->topic->config.flush_messages;

	lockdep_assert_held(&p->lock);
	if (!p->disk || n == KREP_FLUSH_NEVER ||
	    p->log.end_offset - min(p->flushed, p->log.end_offset) < (u64)n)
		return false;
	p->flush_req = max(p->flush_req, p->log.end_offset);
	krep_disk_kick(p);
	return true;
}

/*
 * Under p->lock: 0 when the records through @last are synced to disk,
 * -EINPROGRESS while not, or the error that ends the wait
 */
static int flush_state(struct krep_partition *p, u64 last,
		       struct krep_status *st)
{
	if (p->flushed > last)
		return 0;
	if (p->dead || krep_exiting())
		return krep_fail(st, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
				 -ENOENT, "topic was deleted");
	if (!p->disk || krep_disk_failed(p))
		return krep_fail(st, KREP_KERR_KAFKA_STORAGE_ERROR, -EIO,
				 "the partition's log directory failed (see the kernel log)");
	if (p->log.end_offset <= last)
		return krep_fail(st, KREP_KERR_NOT_LEADER_OR_FOLLOWER, -EREMOTE,
				 "the record was truncated while waiting for the flush");
	return -EINPROGRESS;
}

/* Kafka's produce: where a flush.messages append's sync stands */
int krep_partition_flush_check(struct krep_partition *p, u64 last,
			       struct krep_status *st)
{
	int err;

	mutex_lock(&p->lock);
	err = flush_state(p, last, st);
	mutex_unlock(&p->lock);
	return err;
}

struct fetch_filter {
	struct krep_partition *p;
	u64 limit;			/* HW or LSO */
	bool committed;
};

static enum krep_log_verdict fetch_filter(const struct krep_batch *b,
					  void *arg)
{
	struct fetch_filter *f = arg;

	if (krep_batch_last(b) >= f->limit)
		return KREP_LOG_STOP;
	if (f->committed && (b->attributes & KREP_RB_ATTR_TRANSACTIONAL) &&
	    !(b->attributes & KREP_RB_ATTR_CONTROL) &&
	    krep_txn_aborted(f->p, b))
		return KREP_LOG_SKIP;
	return KREP_LOG_TAKE;
}

static u64 fetch_limit(const struct krep_partition *p, u8 isolation)
{
	return isolation == KREP_READ_COMMITTED ? p->lso : p->hw;
}

/* lockless: may a fetch parked at @req->offset have something now? */
bool krep_partition_fetch_ready(const struct krep_partition *p,
				const struct krep_fetch_req *req)
{
	return fetch_limit(p, req->isolation) > req->offset ||
	       READ_ONCE(p->dead) || krep_exiting();
}

/* under p->lock: may @req read this replica at its offset now? */
static int fetch_check(struct krep_partition *p,
		       const struct krep_fetch_req *req, struct krep_status *st)
{
	int err;

	lockdep_assert_held(&p->lock);
	if (req->follower_read && !p->dead && p->role == KREP_ROLE_FOLLOWER)
		/* fetch from follower: up to its HW or, read_committed, LSO */
		err = 0;
	else
		err = krep_partition_check_leader(p, st);
	if (!err)
		err = check_epoch(p, req->leader_epoch, st);
	if (err)
		return err;
	if (krep_disk_failed(p))
		return krep_fail(st, KREP_KERR_KAFKA_STORAGE_ERROR, -EIO,
				 "the replica is offline: its log directory failed");
	if (krep_exiting())
		return krep_fail(st, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
				 -ENOENT, "broker shutting down");
	if (req->offset < p->log.start_offset)
		return krep_fail(st, KREP_KERR_OFFSET_OUT_OF_RANGE,
				 -ERANGE, "offset below the log start offset");
	if (req->offset > p->log.end_offset)
		return krep_fail(st, KREP_KERR_OFFSET_OUT_OF_RANGE,
				 -ERANGE, "offset beyond the log end offset");
	return 0;
}

/*
 * Reading a segment that is on disk (log.c): a read under p->lock that
 * finds a page outside the page cache ends there, and when it got
 * nothing its caller drops p->lock, reads the pages in and asks again;
 * at most this many times, should reclaim keep taking them.
 */
#define KREP_DISK_READ_TRIES	8

struct disk_read {
	struct krep_log_miss m;		/* pages read in, held for the retry */
	unsigned int tries;
};

/*
 * Under p->lock, after a log read that returned @got: ask again (true)
 * once p->lock is dropped and disk_read_in() has run?
 */
static bool disk_missed(struct krep_partition *p, struct disk_read *dr,
			long got)
{
	krep_log_miss_release(&dr->m);	/* the last retry's pages */
	if (!krep_log_take_miss(&p->log, &dr->m))
		return false;
	if (got == -EAGAIN && dr->tries++ < KREP_DISK_READ_TRIES)
		return true;
	krep_log_miss_release(&dr->m);
	return false;
}

/* p->lock dropped: read in what disk_missed() found missing */
static void disk_read_in(struct disk_read *dr)
{
	if (dr->m.file)
		krep_log_fault_in(&dr->m);
}

#define FETCH_REPLY_OVERHEAD	512
/* a netlink attribute holds at most this much: U16_MAX less its header */
#define KREP_RECORDS_ATTR_MAX	(U16_MAX - NLA_HDRLEN)

/*
 * Copying batches into the reply: whole batches, in as many
 * KREP_A_RECORDS attributes as 16-bit attribute lengths need.
 */
struct fetch_copy {
	struct fetch_filter f;
	struct sk_buff *skb;
	struct nlattr *attr;		/* the open KREP_A_RECORDS */
	u32 attr_len;
	u32 batch_len;			/* of the batch the filter took */
	u32 batch_left;			/* its bytes still to come */
};

static void records_close(struct fetch_copy *fc)
{
	if (!fc->attr)
		return;
	fc->attr->nla_len = NLA_HDRLEN + fc->attr_len;
	skb_put_zero(fc->skb, nla_padlen(fc->attr_len));
	fc->attr = NULL;
}

static enum krep_log_verdict fetch_copy_filter(const struct krep_batch *b,
					       void *arg)
{
	struct fetch_copy *fc = arg;
	enum krep_log_verdict v = fetch_filter(b, &fc->f);

	if (v == KREP_LOG_TAKE && b->len > KREP_RECORDS_ATTR_MAX)
		return KREP_LOG_STOP;	/* cannot travel over netlink */
	if (v == KREP_LOG_TAKE)
		fc->batch_len = b->len;
	return v;
}

static int fetch_copy_emit(struct page *page, u32 off, u32 len, void *ctx)
{
	struct fetch_copy *fc = ctx;

	if (!fc->batch_left) {		/* a new batch starts */
		fc->batch_left = fc->batch_len;
		if (fc->attr && fc->attr_len + fc->batch_left >
				KREP_RECORDS_ATTR_MAX)
			records_close(fc);
		if (!fc->attr) {
			if (skb_tailroom(fc->skb) < NLA_HDRLEN)
				return -EMSGSIZE;
			fc->attr = skb_put(fc->skb, NLA_HDRLEN);
			fc->attr->nla_type = KREP_A_RECORDS;
			fc->attr_len = 0;
		}
	}
	if (len > fc->batch_left || skb_tailroom(fc->skb) < len)
		return -EMSGSIZE;
	memcpy_from_page(skb_put(fc->skb, len), page, off, len);
	fc->attr_len += len;
	fc->batch_left -= len;
	return 0;
}

/**
 * krep_partition_fetch - a consumer's fetch
 * @p: the partition
 * @req: offset, byte limit, wait, isolation and the reply allocator
 * @st: Kafka's error code and a reason on failure
 *
 * Never waits: a fetch at the end with @req->max_wait_ms is answered
 * ERR_PTR(-EINPROGRESS) (no error of a fetch uses it: EAGAIN is
 * UNKNOWN_LEADER_EPOCH's and OFFSET_NOT_AVAILABLE's), and its caller
 * parks it (nl_park.c) until
 * krep_partition_fetch_ready() or its deadline, then asks again (with
 * no wait, at the deadline). The leader serves it, or a follower when
 * the request allows (up to the follower's HW).
 *
 * Return: the reply holding KREP_A_RECORDS (when there are any) and the
 * watermarks, -EINPROGRESS (st untouched), or another ERR_PTR.
 */
struct sk_buff *krep_partition_fetch(struct krep_partition *p,
				     const struct krep_fetch_req *req,
				     struct krep_status *st)
{
	struct fetch_copy fc = {
		.f = { .p = p,
		       .committed = req->isolation == KREP_READ_COMMITTED },
	};
	struct disk_read dr = {};
	long size, done;
	int err;

again:
	size = 0;
	fc.attr = NULL;		/* nothing of a dropped reply's */
	fc.attr_len = 0;
	fc.batch_len = 0;
	fc.batch_left = 0;
	mutex_lock(&p->lock);
	err = fetch_check(p, req, st);
	if (err)
		goto out;
	fc.f.limit = fetch_limit(p, req->isolation);
	if (req->max_wait_ms && req->offset >= fc.f.limit) {
		mutex_unlock(&p->lock);
		return ERR_PTR(-EINPROGRESS);
	}
	if (req->offset < fc.f.limit)
		size = krep_log_read_size(&p->log, req->offset, req->max_bytes,
					  fetch_filter, &fc.f);
	if (disk_missed(p, &dr, size)) {
		mutex_unlock(&p->lock);
		disk_read_in(&dr);
		goto again;
	}
	if (size < 0 || size > INT_MAX / 2) {
		err = krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, -EIO,
				"log read failed");
		goto out;
	}
	fc.skb = req->alloc_reply(req->ctx, size + (size >> 10) +
				  FETCH_REPLY_OVERHEAD);
	if (!fc.skb) {
		err = krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, -ENOMEM,
				"out of memory for the reply");
		goto out;
	}
	if (size) {
		/*
		 * no more than the size walk found: it may have ended at a
		 * page on disk that another reader has read in since
		 */
		done = krep_log_read_frags(&p->log, req->offset, size,
					   fetch_copy_filter, &fc,
					   fetch_copy_emit, &fc);
		records_close(&fc);
		if (disk_missed(p, &dr, done)) {
			/* reclaim took a page the size walk had just read */
			mutex_unlock(&p->lock);
			kfree_skb(fc.skb);
			fc.skb = NULL;
			disk_read_in(&dr);
			goto again;
		}
		if (done == -EBADMSG) {
			err = krep_fail(st, KREP_KERR_CORRUPT_MESSAGE, -EBADMSG,
					"stored batch failed its CRC check");
			goto out;
		}
		if (done < 0) {
			err = done;
			goto out;
		}
	}
	trace_krep_fetch(p, -1, req->offset, size, 0);
	err = -EMSGSIZE;
	if (nla_put_u64_64bit(fc.skb, KREP_A_HW, p->hw, KREP_A_PAD) ||
	    nla_put_u64_64bit(fc.skb, KREP_A_LSO, p->lso, KREP_A_PAD) ||
	    nla_put_u64_64bit(fc.skb, KREP_A_LOG_START, p->log.start_offset,
			      KREP_A_PAD))
		goto out;
	err = 0;
out:
	mutex_unlock(&p->lock);
	krep_log_miss_release(&dr.m);
	if (!err)
		return fc.skb;
	kfree_skb(fc.skb);
	if (!st->why)
		krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, err,
			  "fetch reply failed");
	return ERR_PTR(err);
}

/**
 * krep_partition_consumer_read - a Kafka client's fetch of one partition,
 * without waiting: whole batches from @req->offset up to HW (or LSO for
 * read_committed), handed to @emit by page reference
 * @p: the partition
 * @req: offset, byte limit, isolation and the client's leader epoch
 * @first: nothing is in the response yet (one batch may pass the limit)
 * @emit: takes each page piece of the batches served, with a reference
 * @ctx: for @emit
 * @res: set to the watermarks (hw, lso, log_start)
 * @st: set to the partition's error
 *
 * Return: bytes handed to @emit, or a negative errno with @st set.
 */
long krep_partition_consumer_read(struct krep_partition *p,
				  const struct krep_fetch_req *req, bool first,
				  krep_log_frag_t emit, void *ctx,
				  struct krep_read_result *res,
				  struct krep_status *st)
{
	struct fetch_filter f = {
		.p = p, .committed = req->isolation == KREP_READ_COMMITTED,
	};
	struct disk_read dr = {};
	long done;
	int err;

again:
	done = 0;
	mutex_lock(&p->lock);
	res->hw = p->hw;
	res->lso = p->lso;
	res->log_start = p->log.start_offset;
	err = fetch_check(p, req, st);
	if (err) {
		done = err;
		goto out;
	}
	f.limit = fetch_limit(p, req->isolation);
	if (req->offset >= f.limit || (!first && !req->max_bytes))
		goto out;
	done = krep_log_read_frags(&p->log, req->offset,
				   first ? max(req->max_bytes, 1U) :
				   req->max_bytes, fetch_filter, &f, emit, ctx);
	if (disk_missed(p, &dr, done)) {
		mutex_unlock(&p->lock);
		disk_read_in(&dr);
		goto again;
	}
	if (done == -EBADMSG)
		done = krep_fail(st, KREP_KERR_CORRUPT_MESSAGE, -EBADMSG,
				 "stored batch failed its CRC check");
	else if (done < 0)
		done = krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, done,
				 "log read failed");
	else
		trace_krep_fetch(p, -1, req->offset, done, 0);
out:
	mutex_unlock(&p->lock);
	krep_log_miss_release(&dr.m);
	return done;
}

int krep_partition_list_offset(struct krep_partition *p, s64 ts, bool committed,
			       u64 *offset, s64 *found_ts,
			       struct krep_status *st)
{
	struct disk_read dr = {};
	bool window;
	s64 off;
	int err;

again:
	*found_ts = -1;
	mutex_lock(&p->lock);
	err = krep_partition_check_leader(p, st);
	if (err)
		goto out;
	/*
	 * A new leader's HW may trail its predecessor's until the followers
	 * fetch: latest and by-time answers wait for it (Kafka's
	 * OFFSET_NOT_AVAILABLE), the log start does not
	 */
	window = p->hw < p->epoch_start_offset;
	if (ts == KREP_TS_EARLIEST) {
		*offset = p->log.start_offset;
		goto out;
	}
	if (ts != KREP_TS_LATEST) {
		off = krep_log_offset_for_ts(&p->log, ts, found_ts);
		if (disk_missed(p, &dr, off)) {
			mutex_unlock(&p->lock);
			disk_read_in(&dr);
			goto again;
		}
		if (off < 0 && off != -ENOENT) {
			err = krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR,
					(int)off, "log read failed");
			goto out;
		}
		/* Kafka's lastFetchableOffset: LSO for read_committed */
		if (off >= 0 && off < (committed ? p->lso : p->hw)) {
			*offset = off;
			goto out;
		}
	}
	*found_ts = -1;
	if (window) {
		err = krep_fail(st, KREP_KERR_OFFSET_NOT_AVAILABLE, -EAGAIN,
				"new leader's HW has not reached its epoch start");
		goto out;
	}
	*offset = ts == KREP_TS_LATEST && committed ? p->lso : p->hw;
out:
	mutex_unlock(&p->lock);
	krep_log_miss_release(&dr.m);
	return err;
}

/*
 * Under p->lock: has LW reached @offset? 0, -EINPROGRESS, or the error.
 * As Kafka's delayed DeleteRecords, answered once it has: the live
 * followers learn the new log start from their next FETCH and report it
 * on the one after; one that stops fetching leaves LW after the lag, with
 * no wake-up, so the waiter also looks every replica_lag_time_max_ms.
 */
static int lw_state(struct krep_partition *p, u64 offset,
		    struct krep_status *st)
{
	int err;

	lockdep_assert_held(&p->lock);
	err = krep_partition_check_leader(p, st);
	if (err)
		return err;
	update_low_watermark(p);	/* a follower may have died */
	return p->low_watermark >= offset ? 0 : -EINPROGRESS;
}

/**
 * krep_partition_delete_records - DELETE_RECORDS: move the log start
 * @p: the partition, led here
 * @offset: the new log start, at most HW
 * @st: Kafka's error code and a reason on failure
 *
 * Return: 0 once LW has reached @offset, -EINPROGRESS while the
 * followers have not (krep_partition_delete_check() tells when they
 * have), or the error.
 */
int krep_partition_delete_records(struct krep_partition *p, u64 offset,
				  struct krep_status *st)
{
	int err;

	mutex_lock(&p->lock);
	err = krep_partition_check_leader(p, st);
	if (err)
		goto out;
	if (offset > p->hw) {
		err = krep_fail(st, KREP_KERR_OFFSET_OUT_OF_RANGE, -ERANGE,
				"offset beyond the high watermark");
		goto out;
	}
	if (offset > p->log.start_offset)
		trace_krep_log_start_update(p, p->replicas[p->self],
					    p->log.start_offset, offset);
	krep_log_advance_start(&p->log, offset);
	krep_epoch_truncate_start(&p->epochs, p->log.start_offset);
	update_low_watermark(p);
	krep_partition_wake(p);
	err = lw_state(p, offset, st);
out:
	mutex_unlock(&p->lock);
	return err;
}

/* where a DELETE_RECORDS stands: 0, -EINPROGRESS or the error */
int krep_partition_delete_check(struct krep_partition *p, u64 offset,
				struct krep_status *st)
{
	int err;

	mutex_lock(&p->lock);
	err = lw_state(p, offset, st);
	mutex_unlock(&p->lock);
	return err;
}

static int put_id_list(struct sk_buff *skb, int type,
		       const struct krep_partition *p, bool isr_only)
{
	struct nlattr *nest = nla_nest_start(skb, type);
	unsigned int i;

	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < p->nreplicas; i++) {
		if (isr_only && !test_bit(i, p->isr))
			continue;
		if (nla_put_u32(skb, KREP_A_BROKER_ID, p->replicas[i]))
			return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

static int put_remotes(struct sk_buff *skb, const struct krep_partition *p)
{
	struct nlattr *nest, *rn;
	u64 now = krep_now_ms();
	unsigned int i;

	if (p->role != KREP_ROLE_LEADER)
		return 0;
	nest = nla_nest_start(skb, KREP_A_REMOTES);
	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < p->nreplicas; i++) {
		const struct krep_remote *r = &p->remotes[i];

		if (i == p->self)
			continue;
		rn = nla_nest_start(skb, KREP_A_REMOTE);
		if (!rn ||
		    nla_put_u32(skb, KREP_A_REMOTE_ID, p->replicas[i]) ||
		    (r->leo >= 0 &&
		     nla_put_u64_64bit(skb, KREP_A_REMOTE_LEO, r->leo,
				       KREP_A_REMOTE_PAD)) ||
		    nla_put_u64_64bit(skb, KREP_A_REMOTE_LOG_START, r->log_start,
				      KREP_A_REMOTE_PAD) ||
		    nla_put_u64_64bit(skb, KREP_A_REMOTE_FETCH_AGE_MS,
				      now - r->last_fetch_ms,
				      KREP_A_REMOTE_PAD) ||
		    nla_put_u64_64bit(skb, KREP_A_REMOTE_CAUGHT_UP_AGE_MS,
				      now - r->last_caught_up_ms,
				      KREP_A_REMOTE_PAD) ||
		    nla_put_u8(skb, KREP_A_REMOTE_IN_ISR, test_bit(i, p->isr)))
			return -EMSGSIZE;
		nla_nest_end(skb, rn);
	}
	nla_nest_end(skb, nest);
	return 0;
}

/* the replicas in @bits (indexes in p->replicas) as a nest of broker ids */
static int put_id_bits(struct sk_buff *skb, int type,
		       const struct krep_partition *p, const unsigned long *bits)
{
	struct nlattr *nest;
	unsigned int i;

	nest = nla_nest_start(skb, type);
	if (!nest)
		return -EMSGSIZE;
	for_each_set_bit(i, bits, p->nreplicas) {
		if (nla_put_u32(skb, KREP_A_BROKER_ID, p->replicas[i]))
			return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

static int put_epochs(struct sk_buff *skb, const struct krep_partition *p)
{
	struct nlattr *nest, *en;
	unsigned int i;

	nest = nla_nest_start(skb, KREP_A_EPOCHS);
	if (!nest)
		return -EMSGSIZE;
	/* the newest ones: the cache has as many as the log's epochs */
	i = p->epochs.n > KREP_EPOCH_CACHE_MAX ?
	    p->epochs.n - KREP_EPOCH_CACHE_MAX : 0;
	for (; i < p->epochs.n; i++) {
		en = nla_nest_start(skb, KREP_A_EPOCH_ENTRY);
		if (!en ||
		    nla_put_u32(skb, KREP_A_EPOCH_EPOCH, p->epochs.e[i].epoch) ||
		    nla_put_u64_64bit(skb, KREP_A_EPOCH_START,
				      p->epochs.e[i].start, KREP_A_EPOCH_PAD))
			return -EMSGSIZE;
		nla_nest_end(skb, en);
	}
	nla_nest_end(skb, nest);
	return 0;
}

/* the replica's state as attributes; caller holds p->lock */
int __krep_partition_fill(struct krep_partition *p, struct sk_buff *skb)
{
	lockdep_assert_held(&p->lock);
	if (nla_put_u32(skb, KREP_A_PARTITION, p->index) ||
	    nla_put_u8(skb, KREP_A_ROLE, krep_disk_failed(p) ?
		       KREP_ROLE_OFFLINE : p->role) ||
	    (p->leader >= 0 && nla_put_u32(skb, KREP_A_LEADER, p->leader)) ||
	    nla_put_u32(skb, KREP_A_LEADER_EPOCH, p->leader_epoch) ||
	    nla_put_u32(skb, KREP_A_PARTITION_EPOCH, p->partition_epoch) ||
	    put_id_list(skb, KREP_A_REPLICAS, p, false) ||
	    put_id_list(skb, KREP_A_ISR, p, true) ||
	    nla_put_u64_64bit(skb, KREP_A_LEO, p->log.end_offset, KREP_A_PAD) ||
	    nla_put_u64_64bit(skb, KREP_A_HW, p->hw, KREP_A_PAD) ||
	    nla_put_u64_64bit(skb, KREP_A_LSO, p->lso, KREP_A_PAD) ||
	    nla_put_u64_64bit(skb, KREP_A_LOG_START, p->log.start_offset,
			      KREP_A_PAD) ||
	    nla_put_u64_64bit(skb, KREP_A_LOW_WATERMARK, p->low_watermark,
			      KREP_A_PAD) ||
	    nla_put_u64_64bit(skb, KREP_A_LOG_BYTES, p->log.bytes, KREP_A_PAD) ||
	    put_epochs(skb, p) ||
	    (p->isr_pending &&
	     put_id_bits(skb, KREP_A_PENDING_ISR, p, p->pending_isr)) ||
	    (!bitmap_empty(p->ineligible, KREP_RF_MAX) &&
	     put_id_bits(skb, KREP_A_INELIGIBLE, p, p->ineligible)) ||
	    put_remotes(skb, p))
		return -EMSGSIZE;
	return 0;
}

/* PARTITION_GET: the replica's state as attributes */
int krep_partition_fill(struct krep_partition *p, struct sk_buff *skb)
{
	int err;

	mutex_lock(&p->lock);
	err = __krep_partition_fill(p, skb);
	mutex_unlock(&p->lock);
	return err;
}

/* --- leader: serving followers --- */

int krep_partition_replica_index(const struct krep_partition *p, u32 id)
{
	unsigned int i;

	for (i = 0; i < p->nreplicas; i++) {
		if (p->replicas[i] == id)
			return i;
	}
	return -1;
}

/* the errors a follower's fetch of this partition may get, or 0 */
static s16 follower_fetch_error(const struct krep_partition *p, int idx,
				const struct krep_fetch_part *fp)
{
	if (p->dead)
		return KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (krep_disk_failed(p))
		return KREP_KERR_KAFKA_STORAGE_ERROR;
	if (p->role != KREP_ROLE_LEADER || idx < 0 || idx == p->self)
		return KREP_KERR_NOT_LEADER_OR_FOLLOWER;
	if (fp->leader_epoch < p->leader_epoch)
		return KREP_KERR_FENCED_LEADER_EPOCH;
	if (fp->leader_epoch > p->leader_epoch)
		return KREP_KERR_UNKNOWN_LEADER_EPOCH;
	if (fp->offset < p->log.start_offset)
		return KREP_KERR_OFFSET_OUT_OF_RANGE;
	return 0;
}

/*
 * A follower outside the ISR rejoins once it has caught up to HW, unless
 * the controller has fenced it (it would turn the change down).
 */
static void maybe_expand_isr(struct krep_partition *p, int idx)
{
	const struct krep_remote *r = &p->remotes[idx];

	DECLARE_BITMAP(isr, KREP_RF_MAX);

	if (test_bit(idx, p->isr) || p->isr_pending ||
	    test_bit(idx, p->ineligible) || r->leo < (s64)p->hw ||
	    r->leo < (s64)p->epoch_start_offset)
		return;
	bitmap_copy(isr, p->isr, KREP_RF_MAX);
	__set_bit(idx, isr);
	trace_krep_isr_expand(p, p->replicas[idx],
			      p->log.end_offset - r->leo,
			      krep_now_ms() - r->last_caught_up_ms,
			      "caught up to HW");
	krep_state_info(p->topic->kn,
			"%s-%u: ISR expand: broker %u caught up at %lld\n",
			p->topic->name, p->index, p->replicas[idx], r->leo);
	krep_isr_change(p, isr);
}

/**
 * krep_partition_follower_update - the leader takes in a follower's FETCH
 * @p: the partition
 * @replica_id: the follower
 * @fp: its fetch offset, epoch and log start
 *
 * Updates the remote replica (LEO, log start, last fetch time and
 * lastCaughtUpTime by docs/design.md's rule), may add it to the ISR, and
 * recomputes HW. Called once per FETCH, not when a parked one is retried.
 *
 * Return: 0 or Kafka's error code for this partition.
 */
int krep_partition_follower_update(struct krep_partition *p, u32 replica_id,
				   const struct krep_fetch_part *fp)
{
	u64 now = krep_now_ms(), old_hw;
	struct krep_fetch_result div;
	struct krep_remote *r;
	int idx;
	s16 kerr;

	mutex_lock(&p->lock);
	idx = krep_partition_replica_index(p, replica_id);
	kerr = follower_fetch_error(p, idx, fp);
	if (!kerr && fp->offset > p->log.end_offset)
		kerr = KREP_KERR_OFFSET_OUT_OF_RANGE;
	/* a diverging follower truncates first: its offset says nothing */
	if (kerr || krep_partition_diverges(p, fp, &div))
		goto out;
	r = &p->remotes[idx];
	if (fp->offset >= p->log.end_offset)
		r->last_caught_up_ms = max(r->last_caught_up_ms, now);
	else if (fp->offset >= r->leo_at_last_fetch)
		r->last_caught_up_ms = max(r->last_caught_up_ms,
					   r->last_fetch_ms);
	r->last_fetch_ms = now;
	r->leo_at_last_fetch = p->log.end_offset;
	if (r->leo != (s64)fp->offset)
		trace_krep_leo_update(p, replica_id, r->leo, fp->offset);
	r->leo = fp->offset;
	r->log_start = fp->log_start;
	maybe_expand_isr(p, idx);
	old_hw = p->hw;
	krep_partition_update_hw(p);
	update_low_watermark(p);
	if (p->hw != old_hw)
		wake_hw(p);
out:
	mutex_unlock(&p->lock);
	return kerr;
}

static enum krep_log_verdict take_all(const struct krep_batch *b, void *arg)
{
	return KREP_LOG_TAKE;
}

/**
 * krep_partition_follower_read - the records a follower's FETCH gets
 * @p: the partition
 * @replica_id: the follower
 * @fp: the fetch
 * @max_bytes: what is left of the response's byte budget
 * @first: no records are in the response yet (one batch may pass budget)
 * @emit: takes each page piece of the batches served, with a reference
 * @ctx: for @emit
 * @res: set to the error, HW and log start
 *
 * Return: bytes handed to @emit, or the error of @emit.
 */
long krep_partition_follower_read(struct krep_partition *p, u32 replica_id,
				  const struct krep_fetch_part *fp,
				  u32 max_bytes, bool first,
				  krep_log_frag_t emit, void *ctx,
				  struct krep_fetch_result *res)
{
	struct disk_read dr = {};
	long done;

again:
	done = 0;
	mutex_lock(&p->lock);
	res->hw = p->hw;
	res->log_start = p->log.start_offset;
	res->div_epoch = -1;
	res->div_end = KREP_NO_DIVERGENCE;
	res->partition_epoch = p->partition_epoch;
	bitmap_copy(res->isr, p->isr, KREP_RF_MAX);
	res->error = follower_fetch_error(p,
					  krep_partition_replica_index(p, replica_id),
					  fp);
	if (res->error || krep_partition_diverges(p, fp, res))
		goto out;
	if (fp->offset > p->log.end_offset) {
		res->error = KREP_KERR_OFFSET_OUT_OF_RANGE;
		goto out;
	}
	if (fp->offset == p->log.end_offset || (!first && !max_bytes))
		goto out;
	done = krep_log_read_frags(&p->log, fp->offset, max_bytes, take_all,
				   NULL, emit, ctx);
	if (disk_missed(p, &dr, done)) {
		mutex_unlock(&p->lock);
		disk_read_in(&dr);
		goto again;
	}
	if (done == -EBADMSG) {
		res->error = KREP_KERR_CORRUPT_MESSAGE;
		done = 0;
	} else if (done == -EIO || done == -EAGAIN) {
		res->error = KREP_KERR_KAFKA_STORAGE_ERROR;
		done = 0;
	}
out:
	trace_krep_fetch(p, replica_id, fp->offset, done > 0 ? done : 0,
			 res->error);
	mutex_unlock(&p->lock);
	krep_log_miss_release(&dr.m);
	return done;
}

/* --- follower: fetching from the leader --- */

/* what this replica's next FETCH asks of @leader_id, if it follows it */
bool krep_partition_fetch_state(struct krep_partition *p, u32 leader_id,
				struct krep_fetch_part *fp)
{
	bool follows;

	mutex_lock(&p->lock);
	/* an offline replica (its log directory failed) fetches nothing */
	follows = !p->dead && p->role == KREP_ROLE_FOLLOWER &&
		  p->leader == leader_id && !krep_disk_failed(p);
	if (follows) {
		fp->partition = p->index;
		fp->leader_epoch = p->leader_epoch;
		fp->offset = p->log.end_offset;
		fp->last_epoch = krep_epoch_latest(&p->epochs);
		fp->log_start = p->log.start_offset;
	}
	mutex_unlock(&p->lock);
	return follows;
}

/* the partition's bookkeeping for a batch a follower appended */
static void follower_batch_done(const struct krep_batch *b, void *arg)
{
	struct krep_partition *p = arg;

	if (b->leader_epoch >= 0 &&
	    krep_epoch_latest(&p->epochs) < b->leader_epoch)
		krep_epoch_assign(&p->epochs, b->leader_epoch, b->base_offset);
	krep_producer_batch(p, b);
	trace_krep_leo_update(p, p->replicas[p->self], b->base_offset,
			      p->log.end_offset);
}

/* a leader's ISR from its FETCH answer: within AR, holding the leader */
static bool isr_valid(const struct krep_partition *p, const unsigned long *isr)
{
	int l = krep_partition_replica_index(p, p->leader);

	return l >= 0 && test_bit(l, isr) &&
	       find_next_bit(isr, KREP_RF_MAX, p->nreplicas) >= KREP_RF_MAX;
}

/* after a response's records: the leader's log start, then HW and LSO */
static void follower_catch_up(struct krep_partition *p,
			      const struct krep_fetch_result *res)
{
	u64 hw;

	if (res->log_start > p->log.start_offset) {
		u64 old = p->log.start_offset;

		krep_log_advance_start(&p->log, min(res->log_start,
						    p->log.end_offset));
		krep_epoch_truncate_start(&p->epochs, p->log.start_offset);
		trace_krep_log_start_update(p, p->replicas[p->self], old,
					    p->log.start_offset);
	}
	hw = min(p->log.end_offset, res->hw);
	if (hw > p->hw)
		krep_partition_set_hw(p, hw);
	/* the leader's ISR, so that a follower's describe is right too */
	if (res->partition_epoch > p->partition_epoch && isr_valid(p, res->isr)) {
		bitmap_copy(p->isr, res->isr, KREP_RF_MAX);
		p->partition_epoch = res->partition_epoch;
	}
	krep_partition_update_lso(p);
	if (p->log.start_offset > p->low_watermark)
		WRITE_ONCE(p->low_watermark, p->log.start_offset);
	krep_producer_prune(p);
	krep_partition_flush_due(p);	/* followers flush as Kafka's do */
	krep_partition_wake(p);
}

/* this replica follows @leader_id in the epoch the response answers */
static bool follows(const struct krep_partition *p, u32 leader_id)
{
	return !p->dead && p->role == KREP_ROLE_FOLLOWER &&
	       p->leader == leader_id;
}

/**
 * krep_partition_follower_apply - append what the leader sent
 * @p: the partition
 * @leader_id: the broker that answered
 * @res: its error, HW and log start for this partition
 * @records: whole batches, as the leader stores them
 * @len: their length
 *
 * Each batch must start at this replica's LEO and pass its CRC check; it
 * is appended unchanged. Then HW = min(LEO, leader HW) and the leader's
 * log start offset is adopted.
 *
 * Return: 0, or a negative errno when the response is unusable (the
 * caller logs it and the next FETCH starts again from the LEO).
 */
int krep_partition_follower_apply(struct krep_partition *p, u32 leader_id,
				  const struct krep_fetch_result *res,
				  const u8 *records, u32 len)
{
	const u8 *end = records + len;
	struct krep_batch b;
	int err = 0;

	mutex_lock(&p->lock);
	if (!follows(p, leader_id))
		goto out;
	if (res->error == KREP_KERR_OFFSET_OUT_OF_RANGE &&
	    p->log.end_offset < res->log_start) {
		/* fell below the leader's log start: start over from there */
		trace_krep_truncate(p, p->replicas[p->self], p->log.end_offset,
				    res->log_start);
		krep_log_reset(&p->log, res->log_start);
		krep_epoch_truncate_end(&p->epochs, 0);
		WRITE_ONCE(p->hw, min(p->hw, p->log.end_offset));
		krep_producer_rebuild(p);
		goto out;
	}
	if (!res->error && res->div_end != KREP_NO_DIVERGENCE) {
		krep_partition_follower_diverged(p, res);
		krep_partition_wake(p);
		goto out;
	}
	if (res->error)
		goto out;
	while (records < end) {
		if (krep_batch_parse(records, end - records, &b) ||
		    b.len > end - records || !krep_batch_crc_ok(records, b.len)) {
			err = -EBADMSG;
			break;
		}
		if (b.base_offset != p->log.end_offset) {
			err = -EPROTO;
			break;
		}
		err = krep_log_append(&p->log, records, b.len, b.base_offset,
				      b.leader_epoch);
		if (err)
			break;
		follower_batch_done(&b, p);
		atomic64_add(b.len, &p->topic->kn->stats.follower_bytes);
		records += b.len;
	}
	follower_catch_up(p, res);
out:
	mutex_unlock(&p->lock);
	return err;
}

/**
 * krep_partition_rx_begin - room in the log for a response's records, for
 * the follower to receive them in place
 * @p: the partition
 * @leader_id: the broker answering
 * @res: the response's fixed part for this partition
 * @len: the records' length
 * @rx: the room, on success
 * @epoch: set to the leader epoch it is reserved in
 *
 * Return: 0, or a negative errno: receive into a buffer and apply it
 * with krep_partition_follower_apply() instead (it also handles errors,
 * divergence and a log that must start over).
 */
int krep_partition_rx_begin(struct krep_partition *p, u32 leader_id,
			    const struct krep_fetch_result *res, u32 len,
			    struct krep_log_rx *rx, u32 *epoch)
{
	int err = -EAGAIN;

	mutex_lock(&p->lock);
	if (follows(p, leader_id) && !res->error &&
	    res->div_end == KREP_NO_DIVERGENCE) {
		err = krep_log_rx_reserve(&p->log, len, rx);
		*epoch = p->leader_epoch;
	}
	mutex_unlock(&p->lock);
	return err;
}

/**
 * krep_partition_rx_end - the room of krep_partition_rx_begin() is filled
 * @p: the partition
 * @leader_id: the broker that answered
 * @epoch: the leader epoch the room was reserved in
 * @res: the response's fixed part for this partition
 * @rx: the room; released
 *
 * The same rules as krep_partition_follower_apply(); records that come
 * after a change of leader, epoch or log are dropped (the next FETCH
 * asks again from the LEO).
 *
 * Return: 0, or -EBADMSG / -EPROTO for records that are unusable.
 */
int krep_partition_rx_end(struct krep_partition *p, u32 leader_id, u32 epoch,
			  const struct krep_fetch_result *res,
			  struct krep_log_rx *rx)
{
	int err = 0;

	mutex_lock(&p->lock);
	if (follows(p, leader_id) && p->leader_epoch == epoch) {
		err = krep_log_rx_commit(&p->log, rx, follower_batch_done, p);
		if (err == -ESTALE)
			err = 0;
		follower_catch_up(p, res);
	} else {
		krep_log_rx_abort(&p->log, rx);
	}
	mutex_unlock(&p->lock);
	krep_log_rx_release(rx);
	return err;
}

/* the room will not be filled: the connection went */
void krep_partition_rx_cancel(struct krep_partition *p, struct krep_log_rx *rx)
{
	mutex_lock(&p->lock);
	krep_log_rx_abort(&p->log, rx);
	mutex_unlock(&p->lock);
	krep_log_rx_release(rx);
}
