// SPDX-License-Identifier: GPL-2.0
/*
 * krep: producer state (see producer.h).
 *
 * One entry per producer id seen since the log start in a transactional
 * or idempotent batch (one with a base sequence), holding its epoch,
 * the sequences and offsets of its last KREP_PRODUCER_BATCHES batches,
 * and its open transaction.
 *
 * Idempotence, as Kafka's ProducerStateManager: the leader refuses a
 * batch of an older producer epoch (INVALID_PRODUCER_EPOCH), answers a
 * batch whose sequences match one of the last five with that batch's
 * offsets instead of appending it again (a producer's retry), and
 * refuses a sequence that does not follow the last one
 * (OUT_OF_ORDER_SEQUENCE_NUMBER); a new epoch starts at sequence 0; a
 * producer with no state here (new, or its batches gone with the log
 * start) may start anywhere.
 *
 * Transactions: a transaction opens at the producer's first
 * transactional batch and ends at its commit or abort marker; an abort
 * adds [first offset, marker) of that producer to the aborted index,
 * which read_committed readers skip. The leader also lets a producer
 * open one with TXN BEGIN before any batch: such a transaction is in no
 * log yet, so it lives on the leader only (krep_producer_drop_unlogged()
 * forgets it when the replica stops leading).
 *
 * A marker of a producer with no entry ends nothing here: any batch of
 * its transaction at or above the log start would have made one.
 *
 * LSO is the smallest first offset of a transaction that is open or
 * whose marker HW has not passed yet, at most HW and at least the log
 * start.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/list.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "krep.h"
#include "partition.h"
#include "record.h"
#include "topic.h"
#include "trace.h"
#include "producer.h"

/* Kafka's NUM_BATCHES_TO_RETAIN: the retries a producer may have in flight */
#define KREP_PRODUCER_BATCHES	5

/* one of a producer's last batches, for telling a retry */
struct krep_seq_batch {
	s32 first_seq, last_seq;
	u64 first_offset, last_offset;
};

/* a producer's state on this partition */
struct krep_producer {
	struct list_head node;
	u64 producer_id;
	u16 producer_epoch;
	unsigned int nseq, seq_next;	/* entries of @seq, the next to fill */
	struct krep_seq_batch seq[KREP_PRODUCER_BATCHES];
	bool open;
	s64 first_offset;		/* open: its first batch, -1 for none */
	/*
	 * the transaction it ended last, until HW passes its marker: LSO
	 * stays at its first offset meanwhile (Kafka's unreplicated
	 * transactions), or a new leader without the marker could decide
	 * otherwise what consumers already read as decided
	 */
	s64 ended_first;		/* -1: none */
	u64 ended_marker;
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

static struct krep_producer *find(struct krep_partition *p, u64 pid)
{
	struct krep_producer *x;

	list_for_each_entry(x, &p->producers, node) {
		if (x->producer_id == pid)
			return x;
	}
	return NULL;
}

static void del_producer(struct krep_partition *p, struct krep_producer *x)
{
	list_del(&x->node);
	kfree(x);
	p->nproducers--;
}

/*
 * At most KREP_PRODUCERS_MAX entries a partition: past it, the entry
 * with no open transaction whose last batch is the oldest goes (Kafka
 * expires producers by time, producer.id.expiration.ms). Its retries are
 * then no longer told apart, and it may go on at any sequence.
 */
static void add_producer(struct krep_partition *p, struct krep_producer *x)
{
	struct krep_producer *y, *old = NULL;

	if (p->nproducers >= KREP_PRODUCERS_MAX) {
		list_for_each_entry(y, &p->producers, node) {
			if (!y->open &&
			    (!old || y->last_offset < old->last_offset))
				old = y;
		}
		if (old)
			del_producer(p, old);
	}
	list_add_tail(&x->node, &p->producers);
	p->nproducers++;
}

/*
 * An entry for @pid. GFP_NOFAIL: the batch is in the log already, and an
 * entry is small; without it a transaction would not hold the LSO.
 */
static struct krep_producer *find_or_add(struct krep_partition *p, u64 pid)
{
	struct krep_producer *x = find(p, pid);

	if (x)
		return x;
	x = kzalloc(sizeof(*x), GFP_KERNEL_ACCOUNT | __GFP_NOFAIL);
	x->producer_id = pid;
	x->first_offset = -1;
	x->ended_first = -1;
	add_producer(p, x);
	return x;
}

static void txn_open(struct krep_producer *x, u16 epoch, s64 first,
		     u32 timeout_ms)
{
	if (x->producer_epoch != epoch) {
		x->nseq = 0;		/* a new epoch's sequences start over */
		x->seq_next = 0;
	}
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

/*
 * HW, or the first offset of the oldest transaction below it that is
 * open or whose marker HW has not passed yet; never below the log start
 */
static u64 lso_target(const struct krep_partition *p)
{
	const struct krep_producer *x;
	u64 lso = p->hw;

	list_for_each_entry(x, &p->producers, node) {
		if (x->open && x->first_offset >= 0)
			lso = min_t(u64, lso, x->first_offset);
		if (x->ended_first >= 0 && p->hw <= x->ended_marker)
			lso = min_t(u64, lso, x->ended_first);
	}
	return min(p->hw, max(lso, p->log.start_offset));
}

/* the sequence of @b's last record: sequences wrap from INT32_MAX to 0 */
static s32 last_seq(const struct krep_batch *b)
{
	return ((u32)b->base_seq + (u32)b->last_delta) & S32_MAX;
}

/* @x's epoch moves to @b's (a new epoch forgets the sequences) */
static void note_epoch(struct krep_producer *x, const struct krep_batch *b)
{
	if (x->producer_epoch != (u16)b->producer_epoch) {
		x->producer_epoch = b->producer_epoch;
		x->nseq = 0;
		x->seq_next = 0;
	}
}

static void note_seq(struct krep_producer *x, const struct krep_batch *b)
{
	struct krep_seq_batch *sb = &x->seq[x->seq_next];

	if (b->base_seq < 0)
		return;
	sb->first_seq = b->base_seq;
	sb->last_seq = last_seq(b);
	sb->first_offset = b->base_offset;
	sb->last_offset = krep_batch_last(b);
	x->seq_next = (x->seq_next + 1) % KREP_PRODUCER_BATCHES;
	if (x->nseq < KREP_PRODUCER_BATCHES)
		x->nseq++;
}

/* the newest batch of @x's sequence cache; @x->nseq > 0 */
static const struct krep_seq_batch *newest(const struct krep_producer *x)
{
	return &x->seq[(x->seq_next + KREP_PRODUCER_BATCHES - 1) %
		       KREP_PRODUCER_BATCHES];
}

/**
 * krep_producer_batch - account a batch this replica appended to its log
 * @p: the partition
 * @b: the batch, with its offset in the log and, for a control batch,
 *	its type (krep_batch_parse() sets both)
 *
 * Batches without a producer id, and those that are neither
 * transactional nor carry a sequence, change nothing.
 */
void krep_producer_batch(struct krep_partition *p, const struct krep_batch *b)
{
	struct krep_producer *x;

	lockdep_assert_held(&p->lock);
	if (b->producer_id < 0 ||
	    (!(b->attributes & KREP_RB_ATTR_TRANSACTIONAL) && b->base_seq < 0))
		return;
	x = find(p, b->producer_id);
	if (b->attributes & KREP_RB_ATTR_CONTROL) {
		/*
		 * a marker of a producer with no batch since the log start
		 * ends nothing this replica holds
		 */
		if (b->ctrl_type < 0 || !x)
			return;
		if (b->ctrl_type == KREP_CTRL_ABORT && x->open &&
		    x->first_offset >= 0)
			add_aborted(p, b->producer_id, x->first_offset,
				    b->base_offset);
		note_epoch(x, b);
		if (x->open && x->first_offset >= 0) {
			x->ended_first = x->first_offset;
			x->ended_marker = b->base_offset;
		}
		x->open = false;
		x->first_offset = -1;
		x->last_offset = b->base_offset;
		return;
	}
	x = find_or_add(p, b->producer_id);
	note_epoch(x, b);
	note_seq(x, b);
	x->last_offset = krep_batch_last(b);
	if (!(b->attributes & KREP_RB_ATTR_TRANSACTIONAL))
		return;
	if (!x->open)
		txn_open(x, b->producer_epoch, b->base_offset,
			 KREP_TXN_TIMEOUT_DEFAULT_MS);
	else if (x->first_offset < 0)
		x->first_offset = b->base_offset;
}

static void free_all(struct krep_partition *p)
{
	struct krep_aborted *a, *atmp;
	struct krep_producer *x, *xtmp;

	list_for_each_entry_safe(x, xtmp, &p->producers, node)
		del_producer(p, x);
	list_for_each_entry_safe(a, atmp, &p->aborted, node) {
		list_del(&a->node);
		kfree(a);
	}
}

void krep_producer_destroy(struct krep_partition *p)
{
	free_all(p);
}

static enum krep_log_verdict rebuild_one(const struct krep_batch *b,
					 void *arg)
{
	krep_producer_batch(arg, b);
	cond_resched();		/* a long log: the lock is a mutex */
	return KREP_LOG_SKIP;
}

/**
 * krep_producer_rebuild - producer state from the log as it now is
 * @p: the partition, after a truncation or a reset of its log
 *
 * Walks every batch from the log start (truncations are rare; Kafka
 * reloads a snapshot and replays the log the same way). LSO is
 * recomputed and may move back with the log.
 */
void krep_producer_rebuild(struct krep_partition *p)
{
	lockdep_assert_held(&p->lock);
	free_all(p);
	if (krep_log_read_size(&p->log, p->log.start_offset, U32_MAX,
			       rebuild_one, p) < 0)
		pr_warn_ratelimited("%s-%u: producer state rebuilt from an unreadable log\n",
				    p->topic->name, p->index);
	WRITE_ONCE(p->lso, min(p->lso, lso_target(p)));
	krep_partition_update_lso(p);
}

/*
 * This replica stops leading: transactions opened by TXN BEGIN that wrote
 * nothing are in no log, and the new leader does not know them
 */
void krep_producer_drop_unlogged(struct krep_partition *p)
{
	struct krep_producer *x;

	list_for_each_entry(x, &p->producers, node) {
		if (x->open && x->first_offset < 0)
			x->open = false;	/* its sequences stay */
	}
}

/* entries wholly below the log start offset serve nobody; every replica */
void krep_producer_prune(struct krep_partition *p)
{
	u64 start = p->log.start_offset;
	struct krep_aborted *a, *atmp;
	struct krep_producer *x, *xtmp;

	lockdep_assert_held(&p->lock);
	if (start <= p->pruned_start)
		return;		/* only when the log start moved */
	p->pruned_start = start;

	list_for_each_entry_safe(a, atmp, &p->aborted, node) {
		if (a->last_offset < start) {
			list_del(&a->node);
			kfree(a);
		}
	}
	list_for_each_entry_safe(x, xtmp, &p->producers, node) {
		if (!x->open && x->last_offset < start)
			del_producer(p, x);
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

/* a producer's idempotence: 0 append, 1 a retry of @sb, or the refusal */
static int check_seq(const struct krep_producer *x, const struct krep_batch *b,
		     const struct krep_seq_batch **sb, struct krep_status *st)
{
	unsigned int i;
	s32 prev;

	if ((s16)b->producer_epoch < (s16)x->producer_epoch)
		return krep_fail(st, KREP_KERR_INVALID_PRODUCER_EPOCH, -EINVAL,
				 "producer epoch older than the producer's last");
	if (b->base_seq < 0)
		return 0;
	if (x->producer_epoch != (u16)b->producer_epoch) {
		if (b->base_seq == 0)
			return 0;
		return krep_fail(st, KREP_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
				 -EINVAL, "a new producer epoch starts at sequence 0");
	}
	if (!x->nseq)
		return 0;
	for (i = 0; i < x->nseq; i++) {
		if (x->seq[i].first_seq == b->base_seq &&
		    x->seq[i].last_seq == last_seq(b)) {
			*sb = &x->seq[i];
			return 1;
		}
	}
	prev = newest(x)->last_seq;
	if (b->base_seq == (prev == S32_MAX ? 0 : prev + 1))
		return 0;
	return krep_fail(st, KREP_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER, -EINVAL,
			 "sequence does not follow the producer's last");
}

/**
 * krep_producer_check - may the leader append a producer's batch?
 * @p: the partition, locked, led by this broker
 * @b: the batch
 * @dup: set to the offsets of the batch it repeats, when it does
 * @st: the refusal
 *
 * Return: 0 to append it, 1 for a retry of a batch in the log (answer
 * with @dup's offsets), or a negative errno: an older producer epoch,
 * a sequence out of order, or a transactional batch outside an open
 * transaction.
 */
int krep_producer_check(struct krep_partition *p, const struct krep_batch *b,
			struct krep_append_result *dup, struct krep_status *st)
{
	const struct krep_seq_batch *sb = NULL;
	struct krep_producer *x;
	int ret = 0;

	lockdep_assert_held(&p->lock);
	if (b->producer_id < 0)
		return 0;
	x = find(p, b->producer_id);
	if (x)
		ret = check_seq(x, b, &sb, st);
	if (ret < 0)
		return ret;
	if (ret > 0) {
		dup->base = sb->first_offset;
		dup->last = sb->last_offset;
		dup->count = b->count;
		return 1;
	}
	if (!(b->attributes & KREP_RB_ATTR_TRANSACTIONAL))
		return 0;
	if (!x || !x->open)
		return krep_fail(st, KREP_KERR_INVALID_TXN_STATE, -EINVAL,
				 "transactional batch outside an open transaction");
	if (x->producer_epoch != (u16)b->producer_epoch)
		return krep_fail(st, KREP_KERR_INVALID_PRODUCER_EPOCH, -EINVAL,
				 "producer epoch does not match the open transaction");
	return 0;
}

/* LSO moves forward only, but for a truncation (krep_producer_rebuild()) */
void krep_partition_update_lso(struct krep_partition *p)
{
	u64 lso = lso_target(p);

	if (lso > p->lso) {
		trace_krep_lso_update(p, p->replicas[p->self], p->lso, lso);
		WRITE_ONCE(p->lso, lso);
	}
}

/* write @x's commit or abort marker as leader */
static int txn_end(struct krep_partition *p, struct krep_producer *x, bool commit,
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
	struct krep_producer *x;
	u64 off, pid, open_ms;
	bool found;

	lockdep_assert_held(&p->lock);
	if (p->role != KREP_ROLE_LEADER || p->dead)
		return;
	/* one at a time: the marker's append may prune entries */
	do {
		found = false;
		list_for_each_entry(x, &p->producers, node) {
			if (x->open &&
			    (s64)(now - x->open_ms) > (s64)x->timeout_ms) {
				found = true;
				break;
			}
		}
		if (!found)
			return;
		pid = x->producer_id;
		open_ms = now - x->open_ms;
		if (txn_end(p, x, false, &off, &st)) {
			pr_warn_ratelimited("%s-%u: cannot abort producer %llu's expired transaction: %s\n",
					    p->topic->name, p->index, pid,
					    st.why);
			return;
		}
		pr_info("%s-%u: producer %llu's transaction open for %llu ms aborted at %llu\n",
			p->topic->name, p->index, pid, open_ms, off);
	} while (true);
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
	struct krep_producer *x;
	int err;

	mutex_lock(&p->lock);
	err = krep_partition_check_leader(p, st);
	if (err)
		goto out;
	x = find(p, pid);
	if (x && (s16)pepoch < (s16)x->producer_epoch) {
		err = krep_fail(st, KREP_KERR_INVALID_PRODUCER_EPOCH, -EINVAL,
				"producer epoch older than the producer's last");
		goto out;
	}
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
			x->ended_first = -1;
			x->last_offset = p->log.end_offset;
			add_producer(p, x);
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
