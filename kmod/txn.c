// SPDX-License-Identifier: GPL-2.0
/*
 * krep: producer state (see txn.h).
 *
 * One entry per transactional producer seen since the log start. Its
 * transaction opens at its first transactional batch and ends at its
 * commit or abort marker; an abort adds [first offset, marker) of that
 * producer to the aborted index, which read_committed readers skip. The
 * leader also lets a producer open one with TXN BEGIN before any batch:
 * such a transaction is in no log yet, so it lives on the leader only
 * (krep_txn_drop_unlogged() forgets it when the replica stops leading).
 *
 * An abort marker of a producer this replica has not seen since its log
 * start (a follower that started from the leader's log start, or a log
 * start moved past the transaction's first batch) aborts that producer's
 * batches from the log start on: every one of them belongs to the
 * transaction the marker ends, since an earlier one would have left its
 * own marker after them.
 *
 * LSO is the smallest first offset of an open transaction, at most HW.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/list.h>
#include <linux/slab.h>

#include "krep.h"
#include "partition.h"
#include "record.h"
#include "topic.h"
#include "trace.h"
#include "txn.h"

/* a transactional producer's state on this partition */
struct krep_txn {
	struct list_head node;
	u64 producer_id;
	u16 producer_epoch;
	bool open;
	s64 first_offset;		/* open: its first batch, -1 for none */
	u64 last_offset;		/* its last batch or marker */
	u64 open_ms;			/* when it opened here */
	u32 timeout_ms;
};

/* an aborted transaction's range, for read_committed readers */
struct krep_aborted {
	struct list_head node;
	u64 producer_id;
	u64 first_offset;
	u64 last_offset;		/* the abort marker */
};

static struct krep_txn *find(struct krep_partition *p, u64 pid)
{
	struct krep_txn *x;

	list_for_each_entry(x, &p->txns, node) {
		if (x->producer_id == pid)
			return x;
	}
	return NULL;
}

/* an entry for @pid; GFP_NOFAIL: the batch is in the log already */
static struct krep_txn *find_or_add(struct krep_partition *p, u64 pid)
{
	struct krep_txn *x = find(p, pid);

	if (x)
		return x;
	x = kzalloc(sizeof(*x), GFP_KERNEL_ACCOUNT | __GFP_NOFAIL);
	x->producer_id = pid;
	x->first_offset = -1;
	list_add_tail(&x->node, &p->txns);
	return x;
}

static void txn_open(struct krep_txn *x, u16 epoch, s64 first, u32 timeout_ms)
{
	x->open = true;
	x->producer_epoch = epoch;
	x->first_offset = first;
	x->open_ms = krep_now_ms();
	x->timeout_ms = timeout_ms;
}

static void add_aborted(struct krep_partition *p, u64 pid, u64 first,
			u64 marker)
{
	struct krep_aborted *a;

	if (first >= marker)
		return;
	a = kzalloc(sizeof(*a), GFP_KERNEL_ACCOUNT | __GFP_NOFAIL);
	a->producer_id = pid;
	a->first_offset = first;
	a->last_offset = marker;
	list_add_tail(&a->node, &p->aborted);
}

/* HW, or the first offset of the oldest open transaction below it */
static u64 lso_target(const struct krep_partition *p)
{
	const struct krep_txn *x;
	u64 lso = p->hw;

	list_for_each_entry(x, &p->txns, node) {
		if (x->open && x->first_offset >= 0)
			lso = min_t(u64, lso, x->first_offset);
	}
	return lso;
}

/**
 * krep_txn_batch - account a batch this replica appended to its log
 * @p: the partition
 * @b: the batch, with its offset in the log and, for a control batch,
 *	its type (krep_batch_parse() sets both)
 *
 * Non-transactional batches change nothing.
 */
void krep_txn_batch(struct krep_partition *p, const struct krep_batch *b)
{
	struct krep_txn *x;

	lockdep_assert_held(&p->lock);
	if (!(b->attributes & KREP_RB_ATTR_TRANSACTIONAL) ||
	    b->producer_id < 0)
		return;
	x = find(p, b->producer_id);
	if (b->attributes & KREP_RB_ATTR_CONTROL) {
		if (b->ctrl_type == KREP_CTRL_ABORT) {
			if (!x)
				add_aborted(p, b->producer_id,
					    p->log.start_offset, b->base_offset);
			else if (x->open && x->first_offset >= 0)
				add_aborted(p, b->producer_id, x->first_offset,
					    b->base_offset);
		}
		if (b->ctrl_type < 0)
			return;		/* not a marker krep knows */
		x = find_or_add(p, b->producer_id);
		x->open = false;
		x->first_offset = -1;
		x->last_offset = b->base_offset;
		return;
	}
	x = find_or_add(p, b->producer_id);
	if (!x->open)
		txn_open(x, b->producer_epoch, b->base_offset,
			 KREP_TXN_TIMEOUT_DEFAULT_MS);
	else if (x->first_offset < 0)
		x->first_offset = b->base_offset;
	x->last_offset = krep_batch_last(b);
}

static void free_all(struct krep_partition *p)
{
	struct krep_aborted *a, *atmp;
	struct krep_txn *x, *xtmp;

	list_for_each_entry_safe(x, xtmp, &p->txns, node) {
		list_del(&x->node);
		kfree(x);
	}
	list_for_each_entry_safe(a, atmp, &p->aborted, node) {
		list_del(&a->node);
		kfree(a);
	}
}

void krep_txn_destroy(struct krep_partition *p)
{
	free_all(p);
}

static enum krep_log_verdict rebuild_one(const struct krep_batch *b,
					 void *arg)
{
	krep_txn_batch(arg, b);
	return KREP_LOG_SKIP;
}

/**
 * krep_txn_rebuild - producer state from the log as it now is
 * @p: the partition, after a truncation or a reset of its log
 *
 * Walks every batch from the log start (truncations are rare; Kafka
 * reloads a snapshot and replays the log the same way). LSO is
 * recomputed and may move back with the log.
 */
void krep_txn_rebuild(struct krep_partition *p)
{
	lockdep_assert_held(&p->lock);
	free_all(p);
	if (krep_log_read_size(&p->log, p->log.start_offset, U32_MAX,
			       rebuild_one, p) < 0)
		pr_warn_ratelimited("%s-%u: producer state rebuilt from an unreadable log\n",
				    p->topic->name, p->index);
	p->lso = min(p->lso, lso_target(p));
	krep_partition_update_lso(p);
}

/*
 * This replica stops leading: transactions opened by TXN BEGIN that wrote
 * nothing are in no log, and the new leader does not know them
 */
void krep_txn_drop_unlogged(struct krep_partition *p)
{
	struct krep_txn *x, *tmp;

	list_for_each_entry_safe(x, tmp, &p->txns, node) {
		if (x->open && x->first_offset < 0) {
			list_del(&x->node);
			kfree(x);
		}
	}
}

/* entries wholly below the log start offset serve nobody */
void krep_txn_prune(struct krep_partition *p)
{
	u64 start = p->log.start_offset;
	struct krep_aborted *a, *atmp;
	struct krep_txn *x, *xtmp;

	list_for_each_entry_safe(a, atmp, &p->aborted, node) {
		if (a->last_offset < start) {
			list_del(&a->node);
			kfree(a);
		}
	}
	list_for_each_entry_safe(x, xtmp, &p->txns, node) {
		if (!x->open && x->last_offset < start) {
			list_del(&x->node);
			kfree(x);
		}
	}
}

/* is @b, a transactional data batch, part of an aborted transaction? */
bool krep_txn_aborted(const struct krep_partition *p,
		      const struct krep_batch *b)
{
	const struct krep_aborted *a;

	list_for_each_entry(a, &p->aborted, node) {
		if (a->producer_id == b->producer_id &&
		    b->base_offset >= a->first_offset &&
		    b->base_offset < a->last_offset)
			return true;
	}
	return false;
}

/* the leader takes a producer's transactional batch only inside a transaction */
int krep_txn_check_append(struct krep_partition *p, const struct krep_batch *b,
			  struct krep_status *st)
{
	struct krep_txn *x;

	if (!(b->attributes & KREP_RB_ATTR_TRANSACTIONAL))
		return 0;
	x = find(p, b->producer_id);
	if (!x || !x->open)
		return krep_fail(st, KREP_KERR_INVALID_TXN_STATE, -EINVAL,
				 "transactional batch outside an open transaction");
	if (x->producer_epoch != (u16)b->producer_epoch)
		return krep_fail(st, KREP_KERR_INVALID_PRODUCER_EPOCH, -EINVAL,
				 "producer epoch does not match the open transaction");
	return 0;
}

/* LSO moves forward only, but for a truncation (krep_txn_rebuild()) */
void krep_partition_update_lso(struct krep_partition *p)
{
	u64 lso = lso_target(p);

	if (lso > p->lso) {
		trace_krep_lso_update(p, p->replicas[p->self], p->lso, lso);
		p->lso = lso;
	}
}

/* write @x's commit or abort marker as leader */
static int txn_end(struct krep_partition *p, struct krep_txn *x, bool commit,
		   u64 *offset, struct krep_status *st)
{
	u8 marker[KREP_CTRL_BATCH_LEN];
	int err;

	krep_batch_build_control(marker, x->producer_id, x->producer_epoch,
				 commit, ktime_get_real_ns() / NSEC_PER_MSEC);
	err = krep_partition_leader_append(p, marker, sizeof(marker), offset,
					   st);
	if (err)
		return err;
	krep_partition_update_lso(p);
	krep_partition_wake(p);
	return 0;
}

/**
 * krep_txn_expire - abort the transactions open past their timeout
 * @p: the partition, locked
 * @now: krep_now_ms()
 *
 * Only a leader writes markers; a transaction a follower rebuilt from its
 * log counts its time from when this replica saw its first batch.
 */
void krep_txn_expire(struct krep_partition *p, u64 now)
{
	struct krep_status st = {};
	struct krep_txn *x, *tmp;
	u64 off;

	lockdep_assert_held(&p->lock);
	if (p->role != KREP_ROLE_LEADER || p->dead)
		return;
	list_for_each_entry_safe(x, tmp, &p->txns, node) {
		if (!x->open || now - x->open_ms <= x->timeout_ms)
			continue;
		if (txn_end(p, x, false, &off, &st)) {
			pr_warn_ratelimited("%s-%u: cannot abort producer %llu's expired transaction: %s\n",
					    p->topic->name, p->index,
					    x->producer_id, st.why);
			return;
		}
		pr_info("%s-%u: producer %llu's transaction open for %llu ms aborted at %llu\n",
			p->topic->name, p->index, x->producer_id,
			now - x->open_ms, off);
	}
}

/**
 * krep_partition_txn - begin, commit or abort a producer's transaction
 * @p: the partition, led by this broker
 * @pid: the producer id
 * @pepoch: its epoch
 * @op: KREP_TXN_BEGIN, KREP_TXN_COMMIT or KREP_TXN_ABORT
 * @timeout_ms: for BEGIN, how long it may stay open (0: the default)
 * @offset: set to the LEO (BEGIN) or the marker's offset
 * @st: the refusal
 *
 * Return: 0 or a negative errno.
 */
int krep_partition_txn(struct krep_partition *p, u64 pid, u16 pepoch, u8 op,
		       u32 timeout_ms, u64 *offset, struct krep_status *st)
{
	struct krep_txn *x;
	int err;

	mutex_lock(&p->lock);
	err = krep_partition_check_leader(p, st);
	if (err)
		goto out;
	x = find(p, pid);
	if (op == KREP_TXN_BEGIN) {
		if (x && x->open) {
			err = krep_fail(st, KREP_KERR_INVALID_TXN_STATE, -EINVAL,
					"producer already has an open transaction");
			goto out;
		}
		if (!x) {
			x = kzalloc(sizeof(*x), GFP_KERNEL_ACCOUNT);
			if (!x) {
				err = krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR,
						-ENOMEM, "out of memory");
				goto out;
			}
			x->producer_id = pid;
			x->last_offset = p->log.end_offset;
			list_add_tail(&x->node, &p->txns);
		}
		txn_open(x, pepoch, -1,
			 timeout_ms ?: KREP_TXN_TIMEOUT_DEFAULT_MS);
		*offset = p->log.end_offset;
		goto out;
	}
	if (!x || !x->open || x->producer_epoch != pepoch) {
		err = krep_fail(st, KREP_KERR_INVALID_TXN_STATE, -EINVAL,
				x && x->open ?
				"producer epoch does not match the transaction" :
				"no open transaction for this producer");
		goto out;
	}
	err = txn_end(p, x, op == KREP_TXN_COMMIT, offset, st);
out:
	mutex_unlock(&p->lock);
	return err;
}
