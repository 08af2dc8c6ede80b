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
 *
 * Lookup and order: entries are found by producer id in a hash table
 * (allocated with the first entry, a quarter of producers_max buckets,
 * 16..65536). Every order the code needs is a list kept in offset order
 * by construction, since each batch lands above every offset before it
 * (in the log, and in a rebuild that reads the log in order):
 * struct krep_producers.lru by an entry's last batch (pruning stops at
 * the first entry still above the log start, expiry at the first not
 * idle long enough), .txns by first offset (its head holds LSO), .pins
 * and .aborted by marker (pins HW has passed leave from the head).
 *
 * Limits: at most producers_max entries (module parameter). Before
 * taking a new producer id at the cap, the entries idle for
 * producer_id_expiration_ms with no open transaction and no pin are
 * forgotten (Kafka's producer.id.expiration.ms); if none is, the leader
 * refuses the new id with POLICY_VIOLATION rather than forget a
 * producer whose retries or transaction a replica may still need. A
 * follower and a rebuild take every producer of their log (the leader
 * took it), so they may go past the cap until the leader's log start or
 * the expiry catches up.
 *
 * Memory: entries, the aborted index and the hash table count against
 * the broker's log_memory_max, as log pages do (charged before they are
 * allocated, uncharged when freed). The leader allocates what a batch or
 * marker will need before it appends it, and refuses it when that fails,
 * with nothing appended: KAFKA_STORAGE_ERROR at the cap, as an append
 * past it, UNKNOWN_SERVER_ERROR when the allocation itself fails. A
 * follower cannot refuse a batch: it is in its log already, so that the
 * logs stay identical. When an allocation fails there (or finds the cap
 * reached, or fails in a rebuild), the state goes stale at that
 * batch: LSO does not pass it, the state takes in no more batches, and a
 * leader refuses batches with a producer id and TXN until a rebuild from
 * the log, tried at most once every KREP_PRODUCER_RETRY_MS, succeeds.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hash.h>
#include <linux/list.h>
#include <linux/list_sort.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include <asm/unaligned.h>

#include "krep.h"
#include "param.h"
#include "partition.h"
#include "record.h"
#include "topic.h"
#include "trace.h"
#include "producer.h"

/* Kafka's NUM_BATCHES_TO_RETAIN: the retries a producer may have in flight */
#define KREP_PRODUCER_BATCHES	5
/* a stale state is rebuilt from the log at most this often */
#define KREP_PRODUCER_RETRY_MS	1000
#define KREP_PRODUCER_BITS_MIN	4
#define KREP_PRODUCER_BITS_MAX	16

/* one of a producer's last batches, for telling a retry */
struct krep_seq_batch {
	s32 first_seq, last_seq;
	u64 first_offset, last_offset;
};

/* a producer's state on this partition */
struct krep_producer {
	struct hlist_node hash;
	struct list_head lru;		/* in krep_producers.lru */
	struct list_head txn;		/* open: in .txns or .begun */
	struct list_head pin;		/* in .pins while the pin holds */
	u64 producer_id;
	u16 producer_epoch;
	u8 nseq, seq_next;		/* entries of @seq, the next to fill */
	bool open;
	s64 first_offset;		/* open: its first batch, -1 for none */
	/*
	 * the transactions it ended last, until HW passes the marker: LSO
	 * stays at the first offset meanwhile (Kafka's unreplicated
	 * transactions), or a new leader without the marker could decide
	 * otherwise what consumers already read as decided. A transaction
	 * that ends while the pin holds moves its marker, not its first
	 * offset: LSO waits for both.
	 */
	u64 ended_first;
	u64 ended_marker;
	u64 last_offset;		/* its last batch or marker */
	u64 last_ms;			/* when this replica saw it */
	u64 open_ms;			/* when it opened here */
	u32 timeout_ms;
	struct krep_seq_batch seq[KREP_PRODUCER_BATCHES];
};

/* an aborted transaction's range, for read_committed readers */
struct krep_aborted {
	struct list_head node;
	u64 producer_id;
	u64 first_offset;
	u64 last_offset;		/* the abort marker */
};

static void kept_free(struct krep_producers *ps, struct krep_producer_kept *k);

void krep_producer_init(struct krep_partition *p)
{
	struct krep_producers *ps = &p->producers;

	INIT_LIST_HEAD(&ps->lru);
	INIT_LIST_HEAD(&ps->txns);
	INIT_LIST_HEAD(&ps->begun);
	INIT_LIST_HEAD(&ps->pins);
	INIT_LIST_HEAD(&ps->aborted);
}

static struct krep_mem *ps_mem(struct krep_producers *ps)
{
	return container_of(ps, struct krep_partition, producers)->log.mem;
}

/*
 * @size bytes of producer state, zeroed, charged to the broker's log
 * memory first: NULL with -ENOSPC at the cap, -ENOMEM when out of memory
 */
static void *ps_alloc(struct krep_producers *ps, size_t size, int *err)
{
	struct krep_mem *mem = ps_mem(ps);
	void *x;

	if (atomic64_add_return(size, &mem->used) > mem->max) {
		*err = -ENOSPC;
		goto uncharge;
	}
	x = kvzalloc(size, GFP_KERNEL_ACCOUNT);
	if (x)
		return x;
	*err = -ENOMEM;
uncharge:
	atomic64_sub(size, &mem->used);
	return NULL;
}

static void ps_free(struct krep_producers *ps, void *x, size_t size)
{
	if (!x)
		return;
	kvfree(x);
	atomic64_sub(size, &ps_mem(ps)->used);
}

static size_t table_size(unsigned int bits)
{
	return sizeof(struct hlist_head) << bits;
}

static struct krep_producer *find(const struct krep_producers *ps, u64 pid)
{
	struct krep_producer *x;

	if (!ps->table)
		return NULL;
	hlist_for_each_entry(x, &ps->table[hash_64(pid, ps->bits)], hash) {
		if (x->producer_id == pid)
			return x;
	}
	return NULL;
}

static void del_producer(struct krep_producers *ps, struct krep_producer *x)
{
	hlist_del(&x->hash);
	list_del(&x->lru);
	list_del(&x->txn);
	list_del(&x->pin);
	ps_free(ps, x, sizeof(*x));
	ps->count--;
}

/*
 * Forget the producers idle for producer_id_expiration_ms, as Kafka's
 * removeExpiredProducers: none with an open transaction or a pin. Idle
 * time is this replica's own (a client's timestamps cannot keep an entry
 * alive); an entry a rebuild made counts from the rebuild.
 */
static void expire_idle(struct krep_producers *ps, u64 now)
{
	u64 idle = krep_param_producer_id_expiration_ms();
	struct krep_producer *x, *tmp;

	list_for_each_entry_safe(x, tmp, &ps->lru, lru) {
		if (now - x->last_ms < idle)
			break;		/* the rest are newer */
		if (!x->open && list_empty(&x->pin))
			del_producer(ps, x);
	}
}

/* the hash table, with the first entry: 0, -ENOSPC or -ENOMEM */
static int alloc_table(struct krep_producers *ps)
{
	unsigned int bits;
	struct hlist_head *t;
	int err;

	if (ps->table)
		return 0;
	bits = ilog2(max(krep_param_producers_max() / 4, 1U));
	bits = clamp_t(unsigned int, bits, KREP_PRODUCER_BITS_MIN,
		       KREP_PRODUCER_BITS_MAX);
	/* zeroed: an empty hlist_head is all zero */
	t = ps_alloc(ps, table_size(bits), &err);
	if (!t)
		return err;
	ps->table = t;
	ps->bits = bits;
	return 0;
}

/* an entry for @pid, which has none; NULL when out of memory */
static struct krep_producer *add_producer(struct krep_producers *ps, u64 pid,
					  u64 now)
{
	struct krep_producer *x;
	int err;

	if (ps->count >= krep_param_producers_max())
		expire_idle(ps, now);
	if (alloc_table(ps))
		return NULL;
	x = ps->spare;
	ps->spare = NULL;
	if (!x)
		x = ps_alloc(ps, sizeof(*x), &err);
	if (!x)
		return NULL;
	x->producer_id = pid;
	x->first_offset = -1;
	x->last_ms = now;
	INIT_LIST_HEAD(&x->txn);
	INIT_LIST_HEAD(&x->pin);
	hlist_add_head(&x->hash, &ps->table[hash_64(pid, ps->bits)]);
	list_add_tail(&x->lru, &ps->lru);
	ps->count++;
	return x;
}

/* the leader's refusal when producer state cannot grow (@err from ps_alloc) */
static int no_room(int err, struct krep_status *st)
{
	if (err == -ENOSPC)
		return krep_fail(st, KREP_KERR_KAFKA_STORAGE_ERROR, -ENOSPC,
				 "log_memory_max reached: no room for the partition's producer state");
	return krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, -ENOMEM,
			 "out of memory for the partition's producer state");
}

/*
 * May the leader take a new producer id? At producers_max, only once
 * idle ones are forgotten. Then what its entry needs is allocated, so
 * that the append cannot fail for it.
 */
static int admit(struct krep_producers *ps, u64 now, struct krep_status *st)
{
	unsigned int max = krep_param_producers_max();
	int err;

	if (ps->count >= max)
		expire_idle(ps, now);
	if (ps->count >= max)
		return krep_fail(st, KREP_KERR_POLICY_VIOLATION, -EUSERS,
				 "a new producer id past producers_max on this partition");
	err = alloc_table(ps);
	if (err)
		return no_room(err, st);
	if (!ps->spare)
		ps->spare = ps_alloc(ps, sizeof(*ps->spare), &err);
	return ps->spare ? 0 : no_room(err, st);
}

/* a new last batch or marker of @x */
static void touch(struct krep_producers *ps, struct krep_producer *x,
		  u64 last, u64 now)
{
	x->last_offset = max(x->last_offset, last);
	x->last_ms = now;
	list_move_tail(&x->lru, &ps->lru);
}

/* the state takes in nothing from @offset on until a rebuild */
static void go_stale(struct krep_partition *p, u64 offset)
{
	struct krep_producers *ps = &p->producers;

	ps->stale = true;
	ps->stale_at = offset;
	ps->stale_ms = krep_now_ms();
	pr_warn_ratelimited("%s-%u: no memory (or log_memory_max reached) for producer state at offset %llu: LSO stays below it, and batches with a producer id are refused, until it is rebuilt from the log\n",
			    p->topic->name, p->index, offset);
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

static void txn_close(struct krep_producer *x)
{
	x->open = false;
	x->first_offset = -1;
	list_del_init(&x->txn);
}

static int add_aborted(struct krep_producers *ps, u64 pid, u64 first,
		       u64 marker)
{
	struct krep_aborted *a;
	int err;

	if (first >= marker)
		return 0;
	a = ps->spare_abort;
	ps->spare_abort = NULL;
	if (!a)
		a = ps_alloc(ps, sizeof(*a), &err);
	if (!a)
		return err;
	a->producer_id = pid;
	a->first_offset = first;
	a->last_offset = marker;
	list_add_tail(&a->node, &ps->aborted);
	return 0;
}

/* @x's open transaction, in the log from its first offset, ends at @marker */
static void pin(struct krep_partition *p, struct krep_producer *x, u64 marker)
{
	/* a pin HW has not passed yet keeps its older first offset */
	if (list_empty(&x->pin) || p->hw > x->ended_marker)
		x->ended_first = x->first_offset;
	x->ended_marker = marker;
	list_move_tail(&x->pin, &p->producers.pins);
}

/*
 * HW, or the first offset of the oldest transaction below it that is
 * open or whose marker HW has not passed yet; never below the log start.
 * Pins HW has passed are let go (HW goes back only with a truncation,
 * which rebuilds the state).
 */
static u64 lso_target(struct krep_partition *p)
{
	struct krep_producers *ps = &p->producers;
	struct krep_producer *x, *tmp;
	u64 lso = p->hw;

	list_for_each_entry_safe(x, tmp, &ps->pins, pin) {
		if (p->hw <= x->ended_marker)
			break;
		list_del_init(&x->pin);
	}
	x = list_first_entry_or_null(&ps->txns, struct krep_producer, txn);
	if (x)
		lso = min_t(u64, lso, x->first_offset);
	list_for_each_entry(x, &ps->pins, pin)
		lso = min(lso, x->ended_first);
	if (ps->stale)
		lso = min(lso, ps->stale_at);
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

/* a commit or abort marker of @x, a producer with an entry */
static void marker_batch(struct krep_partition *p, struct krep_producer *x,
			 const struct krep_batch *b, u64 now)
{
	struct krep_producers *ps = &p->producers;
	bool logged = x->open && x->first_offset >= 0;

	if (b->ctrl_type == KREP_CTRL_ABORT && logged &&
	    add_aborted(ps, x->producer_id, x->first_offset, b->base_offset)) {
		go_stale(p, b->base_offset);	/* nothing of it taken in */
		return;
	}
	note_epoch(x, b);
	if (logged)
		pin(p, x, b->base_offset);
	txn_close(x);
	touch(ps, x, b->base_offset, now);
}

/**
 * krep_producer_batch - account a batch this replica appended to its log
 * @p: the partition
 * @b: the batch, with its offset in the log and, for a control batch,
 *	its type (krep_batch_parse() sets both)
 *
 * Batches without a producer id, and those that are neither
 * transactional nor carry a sequence, change nothing. Never fails: on
 * the leader, krep_producer_check() and txn_end() allocated what it
 * takes; elsewhere a failed allocation leaves the state stale.
 */
void krep_producer_batch(struct krep_partition *p, const struct krep_batch *b)
{
	struct krep_producers *ps = &p->producers;
	bool txnl = b->attributes & KREP_RB_ATTR_TRANSACTIONAL;
	struct krep_producer *x;
	u64 now;

	lockdep_assert_held(&p->lock);
	if (ps->stale || b->producer_id < 0 || (!txnl && b->base_seq < 0))
		return;
	now = krep_now_ms();
	x = find(ps, b->producer_id);
	if (b->attributes & KREP_RB_ATTR_CONTROL) {
		/*
		 * a marker of a producer with no batch since the log start
		 * ends nothing this replica holds
		 */
		if (b->ctrl_type >= 0 && x)
			marker_batch(p, x, b, now);
		return;
	}
	if (!x)
		x = add_producer(ps, b->producer_id, now);
	if (!x) {
		go_stale(p, b->base_offset);
		return;
	}
	note_epoch(x, b);
	note_seq(x, b);
	touch(ps, x, krep_batch_last(b), now);
	if (!txnl)
		return;
	if (!x->open) {
		txn_open(x, b->producer_epoch, b->base_offset,
			 KREP_TXN_TIMEOUT_DEFAULT_MS);
		list_add_tail(&x->txn, &ps->txns);
	} else if (x->first_offset < 0) {
		x->first_offset = b->base_offset;	/* after TXN BEGIN */
		list_move_tail(&x->txn, &ps->txns);
	}
}

static void free_all(struct krep_producers *ps)
{
	struct krep_aborted *a, *atmp;
	struct krep_producer *x, *xtmp;

	list_for_each_entry_safe(x, xtmp, &ps->lru, lru)
		del_producer(ps, x);
	list_for_each_entry_safe(a, atmp, &ps->aborted, node) {
		list_del(&a->node);
		ps_free(ps, a, sizeof(*a));
	}
}

void krep_producer_destroy(struct krep_partition *p)
{
	struct krep_producers *ps = &p->producers;
	unsigned int i;

	free_all(ps);
	for (i = 0; i < KREP_PRODUCER_KEPT; i++)
		kept_free(ps, &ps->kept[i]);
	if (ps->table)
		ps_free(ps, ps->table, table_size(ps->bits));
	ps_free(ps, ps->spare, sizeof(*ps->spare));
	ps_free(ps, ps->spare_abort, sizeof(*ps->spare_abort));
}

static enum krep_log_verdict rebuild_one(const struct krep_batch *b,
					 void *arg)
{
	struct krep_partition *p = arg;

	krep_producer_batch(p, b);
	cond_resched();		/* a long log: the lock is a mutex */
	return p->producers.stale ? KREP_LOG_STOP : KREP_LOG_SKIP;
}

/* the state from the log as it now is; stale again if memory fails */
static void rebuild(struct krep_partition *p)
{
	struct krep_producers *ps = &p->producers;
	unsigned int i;

	free_all(ps);
	/* a reset log may start where one was kept: none is of it now */
	for (i = 0; i < KREP_PRODUCER_KEPT; i++)
		kept_free(ps, &ps->kept[i]);
	ps->stale = false;
	ps->stale_ms = krep_now_ms();
	trace_krep_producer_rebuild(p, p->replicas[p->self],
				    p->log.start_offset, p->log.end_offset);
	if (krep_log_walk(&p->log, p->log.start_offset, rebuild_one, p))
		pr_warn_ratelimited("%s-%u: producer state rebuilt from an unreadable log\n",
				    p->topic->name, p->index);
}

/* a stale state: try the rebuild again, at most once a retry period */
static void retry_stale(struct krep_partition *p, u64 now)
{
	struct krep_producers *ps = &p->producers;

	if (!ps->stale || now - ps->stale_ms < KREP_PRODUCER_RETRY_MS)
		return;
	rebuild(p);
	if (!ps->stale)
		pr_info("%s-%u: producer state rebuilt from the log\n",
			p->topic->name, p->index);
}

/* LSO from a state made anew: it may move back with the log */
static void settle_lso(struct krep_partition *p)
{
	WRITE_ONCE(p->lso, min(p->lso, lso_target(p)));
	krep_partition_update_lso(p);
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
	rebuild(p);
	settle_lso(p);
}

/*
 * Kafka's files for the producer state (ProducerStateManager's snapshot,
 * version 1, and the transaction index), which a clean shutdown writes
 * so that the next load reads them instead of the log.
 *
 * <offset>.snapshot: version int16 (1), crc uint32 (CRC-32C of what
 * follows it), then an array (int32 count) of entries: producer id int64,
 * epoch int16, last sequence int32, last offset int64, offset delta int32
 * (last - first offset of that batch), timestamp int64, coordinator epoch
 * int32, first offset of the open transaction int64 (-1: none).
 *
 * As in Kafka, an entry keeps its last batch only, not the last five: a
 * retry of an older one after a restart is out of order. The last
 * offset is the last batch's; for a producer with no sequence batch, its
 * last batch or marker's. The timestamp is the wall-clock time this
 * replica last saw the producer (krep keeps no batch timestamp), the
 * coordinator epoch -1 (no coordinator).
 *
 * .txnindex: entries of version int16 (0), producer id int64, first
 * offset int64, last offset (the abort marker) int64, last stable offset
 * int64 (krep writes the marker's offset: an upper bound); each in the
 * .txnindex of the segment holding its marker, which disklog.c sorts out
 * (KREP_TXNINDEX_LAST).
 */
#define KREP_SNAP_VERSION	1
#define KREP_SNAP_HDR		10	/* version, crc, array count */
#define KREP_SNAP_CRC_FROM	6
#define KREP_SNAP_ENTRY		46

/* the state in a snapshot and a transaction index (krep_producer_save()) */
static void put_entry(u8 *e, const struct krep_producer *x, u64 now_ms,
		      u64 now_real, u64 end)
{
	const struct krep_seq_batch *sb = x->nseq ? newest(x) : NULL;

	put_unaligned_be64(x->producer_id, e);
	put_unaligned_be16(x->producer_epoch, e + 8);
	put_unaligned_be32(sb ? sb->last_seq : -1, e + 10);
	/* a TXN BEGIN touches an entry at the log end, where no batch is */
	put_unaligned_be64(sb ? sb->last_offset : min(x->last_offset, end - 1),
			   e + 14);
	put_unaligned_be32(sb ? sb->last_offset - sb->first_offset : 0,
			   e + 22);
	put_unaligned_be64(now_real - min(now_ms - x->last_ms, now_real),
			   e + 26);
	put_unaligned_be32(-1, e + 34);
	put_unaligned_be64(x->open && x->first_offset >= 0 ?
			   x->first_offset : -1, e + 38);
}

/**
 * krep_producer_save - the producer state as Kafka's files
 * @p: the partition, under its lock; nothing appends any more
 * @out: set to the snapshot's bytes and the transaction index entries of
 *	 every segment, by marker; krep_producer_saved_free() frees them
 *
 * Return: 0; -EBUSY when the state cannot be put in a snapshot (stale,
 * or a transaction whose marker HW has not passed yet: its pin); -ENOMEM.
 */
int krep_producer_save(struct krep_partition *p, struct krep_producer_saved *out)
{
	struct krep_producers *ps = &p->producers;
	u64 now = krep_now_ms(), real = ktime_get_real_ns() / NSEC_PER_MSEC;
	u64 end = p->log.end_offset;
	struct krep_producer *x;
	struct krep_aborted *a;
	unsigned int n = 0;
	u8 *e;

	lockdep_assert_held(&p->lock);
	memset(out, 0, sizeof(*out));
	lso_target(p);			/* lets go of the pins HW passed */
	if (ps->stale || !list_empty(&ps->pins))
		return -EBUSY;
	list_for_each_entry(a, &ps->aborted, node)
		n++;
	out->snap_len = KREP_SNAP_HDR + (size_t)ps->count * KREP_SNAP_ENTRY;
	out->txn_len = (size_t)n * KREP_TXNINDEX_ENTRY;
	out->snap = kvmalloc(out->snap_len, GFP_KERNEL);
	out->txn = kvmalloc(max_t(size_t, out->txn_len, 1), GFP_KERNEL);
	if (!out->snap || !out->txn) {
		krep_producer_saved_free(out);
		return -ENOMEM;
	}
	e = out->snap + KREP_SNAP_HDR;
	n = 0;
	list_for_each_entry(x, &ps->lru, lru) {
		if (!end)
			break;	/* no batch: any entry is TXN BEGIN's only */
		put_entry(e, x, now, real, end);
		e += KREP_SNAP_ENTRY;
		n++;
	}
	out->snap_len = e - out->snap;
	put_unaligned_be16(KREP_SNAP_VERSION, out->snap);
	put_unaligned_be32(n, out->snap + 6);
	put_unaligned_be32(krep_crc32c(~0U, out->snap + KREP_SNAP_CRC_FROM,
				       out->snap_len - KREP_SNAP_CRC_FROM) ^ ~0U,
			   out->snap + 2);
	e = out->txn;
	list_for_each_entry(a, &ps->aborted, node) {
		put_unaligned_be16(0, e);
		put_unaligned_be64(a->producer_id, e + 2);
		put_unaligned_be64(a->first_offset, e + 10);
		put_unaligned_be64(a->last_offset, e + KREP_TXNINDEX_LAST);
		put_unaligned_be64(a->last_offset, e + 26);
		e += KREP_TXNINDEX_ENTRY;
	}
	return 0;
}

void krep_producer_saved_free(struct krep_producer_saved *s)
{
	kvfree(s->snap);
	kvfree(s->txn);
	s->snap = NULL;
	s->txn = NULL;
}

static int cmp_last(void *priv, const struct list_head *a,
		    const struct list_head *b)
{
	u64 x = list_entry(a, struct krep_producer, lru)->last_offset;
	u64 y = list_entry(b, struct krep_producer, lru)->last_offset;

	return x > y;
}

static int cmp_first(void *priv, const struct list_head *a,
		     const struct list_head *b)
{
	s64 x = list_entry(a, struct krep_producer, txn)->first_offset;
	s64 y = list_entry(b, struct krep_producer, txn)->first_offset;

	return x > y;
}

/* one snapshot entry into the state; -EINVAL when it is not one */
static int load_entry(struct krep_producers *ps, const u8 *e, u64 leo,
		      u64 now)
{
	u64 pid = get_unaligned_be64(e);
	u16 epoch = get_unaligned_be16(e + 8);
	s32 seq = get_unaligned_be32(e + 10);
	s64 last = get_unaligned_be64(e + 14);
	s32 delta = get_unaligned_be32(e + 22);
	s64 first = get_unaligned_be64(e + 38);
	struct krep_producer *x;

	if (pid > S64_MAX || seq < -1 || last < 0 || last >= leo ||
	    delta < 0 || delta > last ||
	    first < -1 || first >= (s64)leo || find(ps, pid))
		return -EINVAL;
	x = add_producer(ps, pid, now);
	if (!x)
		return -ENOMEM;
	x->producer_epoch = epoch;
	/*
	 * the snapshot has no marker offsets: its last batch or marker is
	 * taken to be the last before the snapshot, so that a truncation
	 * rebuilds the state (krep_producer_truncated()) and the log start
	 * prunes it no earlier than it may
	 */
	x->last_offset = leo - 1;
	if (seq >= 0) {
		/* sequences wrap from INT32_MAX to 0 */
		x->seq[0].first_seq = ((u32)seq - (u32)delta) & S32_MAX;
		x->seq[0].last_seq = seq;
		x->seq[0].first_offset = last - delta;
		x->seq[0].last_offset = last;
		x->nseq = 1;
		x->seq_next = 1;
	}
	if (first >= 0) {
		txn_open(x, epoch, first, KREP_TXN_TIMEOUT_DEFAULT_MS);
		list_add_tail(&x->txn, &ps->txns);
	}
	return 0;
}

/* the batch a .txnindex entry names as its marker (is_abort()) */
struct marker_check {
	u64 producer_id;
	u64 offset;
	bool ok;
};

static enum krep_log_verdict is_abort(const struct krep_batch *b, void *arg)
{
	struct marker_check *m = arg;

	m->ok = b->base_offset == m->offset &&
		(b->attributes & KREP_RB_ATTR_CONTROL) &&
		b->producer_id == m->producer_id &&
		b->ctrl_type == KREP_CTRL_ABORT;
	return KREP_LOG_STOP;
}

/*
 * the aborted transactions of a .txnindex read whole, in marker order;
 * with @check, each marker at or above the log start must be that
 * producer's abort marker in the log
 */
static int load_aborted(struct krep_partition *p, const u8 *t, size_t len,
			u64 leo, bool check)
{
	struct krep_producers *ps = &p->producers;
	u64 prev = 0, pid, first, last;
	struct marker_check m;
	size_t i;
	int err;

	if (len % KREP_TXNINDEX_ENTRY)
		return -EINVAL;
	for (i = 0; i < len; i += KREP_TXNINDEX_ENTRY) {
		pid = get_unaligned_be64(t + i + 2);
		first = get_unaligned_be64(t + i + 10);
		last = get_unaligned_be64(t + i + KREP_TXNINDEX_LAST);
		if (get_unaligned_be16(t + i) || pid > S64_MAX ||
		    first >= last || last >= leo || last < prev)
			return -EINVAL;
		m = (struct marker_check){ .producer_id = pid, .offset = last };
		if (check && last >= p->log.start_offset &&
		    (krep_log_walk(&p->log, last, is_abort, &m) || !m.ok))
			return -EINVAL;
		prev = last;
		err = add_aborted(ps, pid, first, last);
		if (err)
			return err;
	}
	return 0;
}

/**
 * krep_producer_load - the producer state from a snapshot
 * @p: the partition, under its lock
 * @snap: <LEO>.snapshot's bytes (krep_producer_save())
 * @snap_len: their length
 * @txn: every segment's .txnindex, in segment order
 * @txn_len: their length
 * @at: the offset the state is at: every batch below it, none above
 * @check: the files come from disk: each aborted transaction's marker is
 *	   looked up in the log
 *
 * Return: 0; -EINVAL when the files are not what krep_producer_save()
 * writes for this log, or -ENOMEM/-ENOSPC: the state is then empty, and
 * the caller rebuilds it from the log.
 */
int krep_producer_load(struct krep_partition *p, const u8 *snap,
		       size_t snap_len, const u8 *txn, size_t txn_len, u64 at,
		       bool check)
{
	struct krep_producers *ps = &p->producers;
	u64 leo = at, now = krep_now_ms();
	size_t i;
	int err = -EINVAL;

	lockdep_assert_held(&p->lock);
	free_all(ps);
	if (snap_len < KREP_SNAP_HDR ||
	    get_unaligned_be16(snap) != KREP_SNAP_VERSION ||
	    (snap_len - KREP_SNAP_HDR) % KREP_SNAP_ENTRY ||
	    get_unaligned_be32(snap + 6) !=
	    (snap_len - KREP_SNAP_HDR) / KREP_SNAP_ENTRY ||
	    get_unaligned_be32(snap + 2) !=
	    (krep_crc32c(~0U, snap + KREP_SNAP_CRC_FROM,
			 snap_len - KREP_SNAP_CRC_FROM) ^ ~0U))
		return -EINVAL;
	for (i = KREP_SNAP_HDR; i < snap_len; i += KREP_SNAP_ENTRY) {
		err = load_entry(ps, snap + i, leo, now);
		if (err)
			goto fail;
	}
	err = load_aborted(p, txn, txn_len, leo, check);
	if (err)
		goto fail;
	/* the lists' orders, which the code keeps by construction */
	list_sort(NULL, &ps->lru, cmp_last);
	list_sort(NULL, &ps->txns, cmp_first);
	ps->stale = false;
	settle_lso(p);
	return 0;
fail:
	free_all(ps);
	return err;
}

static void kept_free(struct krep_producers *ps, struct krep_producer_kept *k)
{
	if (!k->sv.snap)
		return;
	atomic64_sub(k->sv.snap_len + k->sv.txn_len, &ps_mem(ps)->used);
	krep_producer_saved_free(&k->sv);
}

/*
 * keep @sv (taken over: kept, or freed) as the state at @offset, in the
 * next slot; charged, and never at the cost of appends: only while log
 * memory is half free
 */
static void keep(struct krep_producers *ps, u64 offset,
		 struct krep_producer_saved *sv)
{
	struct krep_producer_kept *k = &ps->kept[ps->kept_next];
	struct krep_mem *mem = ps_mem(ps);
	size_t size = sv->snap_len + sv->txn_len;

	if (atomic64_add_return(size, &mem->used) > mem->max / 2) {
		atomic64_sub(size, &mem->used);
		krep_producer_saved_free(sv);
		return;
	}
	kept_free(ps, k);
	k->offset = offset;
	k->sv = *sv;
	memset(sv, 0, sizeof(*sv));
	ps->kept_next = (ps->kept_next + 1) % KREP_PRODUCER_KEPT;
}

/* the kept states no longer of the log: above @leo or below its start */
static void kept_drop(struct krep_partition *p)
{
	struct krep_producers *ps = &p->producers;
	unsigned int i;

	for (i = 0; i < KREP_PRODUCER_KEPT; i++) {
		if (ps->kept[i].offset > p->log.end_offset ||
		    ps->kept[i].offset < p->log.start_offset)
			kept_free(ps, &ps->kept[i]);
	}
}

/**
 * krep_producer_log_rolled - the log starts a segment at its end
 * @log: the partition's log, under the partition's lock
 *
 * With a log directory, the state at this offset is kept (the last
 * KREP_PRODUCER_KEPT of them, charged to log_memory_max), as Kafka
 * takes a snapshot at each roll: a truncation then replays the log from
 * the newest at or below its cut, not from the log start, which on disk
 * may be many times memory. None is kept while the state cannot be put
 * in a snapshot (krep_producer_save()).
 */
void krep_producer_log_rolled(struct krep_log *log)
{
	struct krep_partition *p = container_of(log, struct krep_partition,
						log);
	struct krep_producers *ps = &p->producers;
	struct krep_producer_kept *last =
		&ps->kept[(ps->kept_next + KREP_PRODUCER_KEPT - 1) %
			  KREP_PRODUCER_KEPT];
	struct krep_producer_saved sv;

	/* an append that failed for room may start the segment again */
	if (!p->disk || (last->sv.snap && last->offset == log->end_offset) ||
	    krep_producer_save(p, &sv))
		return;
	keep(ps, log->end_offset, &sv);
}

/**
 * krep_producer_keep - keep the state a load read from its files
 * @p: the partition, under its lock
 * @at: the snapshot's offset
 * @sv: its files' bytes (krep_producer_restore() took them), which
 *	this takes over: kept as a roll's state, or freed
 *
 * A truncation soon after the load then replays the log from @at, not
 * from its start (krep_producer_truncated()); charged as a roll's.
 */
void krep_producer_keep(struct krep_partition *p, u64 at,
			struct krep_producer_saved *sv)
{
	lockdep_assert_held(&p->lock);
	keep(&p->producers, at, sv);
}

/* the newest kept state at or below @leo and in the log, if any */
static struct krep_producer_kept *kept_at(struct krep_partition *p, u64 leo)
{
	struct krep_producer_kept *k, *best = NULL;
	unsigned int i;

	for (i = 0; i < KREP_PRODUCER_KEPT; i++) {
		k = &p->producers.kept[i];
		if (k->sv.snap && k->offset <= leo &&
		    k->offset >= p->log.start_offset &&
		    (!best || k->offset > best->offset))
			best = k;
	}
	return best;
}

/**
 * krep_producer_dup_kept - a copy of the state kept at @offset
 * @p: the partition, under its lock
 * @offset: a segment's base
 * @out: set to the copy, charged to log_memory_max until
 *	 krep_producer_dup_free()
 *
 * Return: 0; -ENOENT when none is kept there; -ENOSPC at the cap;
 * -ENOMEM.
 */
int krep_producer_dup_kept(struct krep_partition *p, u64 offset,
			   struct krep_producer_saved *out)
{
	struct krep_mem *mem = ps_mem(&p->producers);
	struct krep_producer_kept *k;
	unsigned int i;
	size_t size;

	lockdep_assert_held(&p->lock);
	memset(out, 0, sizeof(*out));
	for (i = 0; i < KREP_PRODUCER_KEPT; i++) {
		k = &p->producers.kept[i];
		if (k->sv.snap && k->offset == offset)
			break;
	}
	if (i == KREP_PRODUCER_KEPT)
		return -ENOENT;
	size = k->sv.snap_len + k->sv.txn_len;
	if (atomic64_add_return(size, &mem->used) > mem->max) {
		atomic64_sub(size, &mem->used);
		return -ENOSPC;
	}
	out->snap = kvmalloc(k->sv.snap_len, GFP_KERNEL);
	out->txn = kvmalloc(max_t(size_t, k->sv.txn_len, 1), GFP_KERNEL);
	if (!out->snap || !out->txn) {
		atomic64_sub(size, &mem->used);
		krep_producer_saved_free(out);
		return -ENOMEM;
	}
	memcpy(out->snap, k->sv.snap, k->sv.snap_len);
	if (k->sv.txn_len)	/* a state a load kept may have none */
		memcpy(out->txn, k->sv.txn, k->sv.txn_len);
	out->snap_len = k->sv.snap_len;
	out->txn_len = k->sv.txn_len;
	return 0;
}

/* free a krep_producer_dup_kept() copy, and its charge */
void krep_producer_dup_free(struct krep_partition *p,
			    struct krep_producer_saved *sv)
{
	if (!sv->snap)
		return;
	atomic64_sub(sv->snap_len + sv->txn_len, &ps_mem(&p->producers)->used);
	krep_producer_saved_free(sv);
}

/**
 * krep_producer_restore - the state from Kafka's files and the log after
 * @p: the partition, under its lock
 * @snap: <@at>.snapshot's bytes
 * @snap_len: their length
 * @txn: the .txnindex entries of every segment below @at, by marker
 * @txn_len: their length
 * @at: the snapshot's offset, at most the log end
 * @check: the files come from disk (krep_producer_load())
 *
 * The batches from @at to the log end are then read, as a rebuild reads
 * them (Kafka's ProducerStateManager loads its newest snapshot and
 * replays the log after it the same way).
 *
 * Return: 0, or krep_producer_load()'s error: the state is then empty.
 */
int krep_producer_restore(struct krep_partition *p, const u8 *snap,
			  size_t snap_len, const u8 *txn, size_t txn_len,
			  u64 at, bool check)
{
	int err;

	err = krep_producer_load(p, snap, snap_len, txn, txn_len, at, check);
	if (err)
		return err;
	if (at < p->log.end_offset) {
		trace_krep_producer_rebuild(p, p->replicas[p->self], at,
					    p->log.end_offset);
		if (krep_log_walk(&p->log, at, rebuild_one, p))
			pr_warn_ratelimited("%s-%u: producer state rebuilt from an unreadable log\n",
					    p->topic->name, p->index);
		settle_lso(p);
	}
	return 0;
}

/**
 * krep_producer_truncated - the log was cut back to @leo
 * @p: the partition, under its lock
 * @leo: its new end
 *
 * The state changes only when a batch or marker at or past @leo made part
 * of it. The newest entry (the LRU list is in offset order: an entry's
 * last offset is at least that of each batch, marker and transaction of
 * it) and the newest aborted transaction tell at once; only then is the
 * state made anew: from the newest state kept at or below @leo and the
 * batches after it, else from every batch of the log. LSO is recomputed
 * either way, HW having moved back.
 */
void krep_producer_truncated(struct krep_partition *p, u64 leo)
{
	struct krep_producers *ps = &p->producers;
	struct krep_producer_kept *k;
	struct krep_producer *x;
	struct krep_aborted *a;

	lockdep_assert_held(&p->lock);
	kept_drop(p);
	x = list_empty(&ps->lru) ? NULL :
	    list_last_entry(&ps->lru, struct krep_producer, lru);
	a = list_empty(&ps->aborted) ? NULL :
	    list_last_entry(&ps->aborted, struct krep_aborted, node);
	if (!ps->stale && (!x || x->last_offset < leo) &&
	    (!a || a->last_offset < leo)) {
		settle_lso(p);
		return;
	}
	k = kept_at(p, leo);
	if (k && !krep_producer_restore(p, k->sv.snap, k->sv.snap_len,
					k->sv.txn, k->sv.txn_len, k->offset,
					false))
		return;		/* restored, LSO settled */
	krep_producer_rebuild(p);
}

/*
 * This replica stops leading: transactions opened by TXN BEGIN that wrote
 * nothing are in no log, and the new leader does not know them
 */
void krep_producer_drop_unlogged(struct krep_partition *p)
{
	struct krep_producer *x, *tmp;

	list_for_each_entry_safe(x, tmp, &p->producers.begun, txn)
		txn_close(x);		/* its sequences stay */
}

/*
 * entries wholly below the log start offset serve nobody; every replica.
 * With a log directory an aborted transaction goes with the segment of
 * its marker, not before: a roll writes the .txnindex of the segments
 * below it from this state, and after a crash the log start may come
 * back from an older checkpoint, lower in that segment.
 */
void krep_producer_prune(struct krep_partition *p)
{
	struct krep_producers *ps = &p->producers;
	u64 start = p->log.start_offset, seg;
	struct krep_aborted *a, *atmp;
	struct krep_producer *x, *xtmp;

	lockdep_assert_held(&p->lock);
	if (start <= ps->pruned_start)
		return;		/* only when the log start moved */
	ps->pruned_start = start;
	seg = p->disk ? krep_log_segment_base(&p->log, start) : start;

	list_for_each_entry_safe(a, atmp, &ps->aborted, node) {
		if (a->last_offset >= min(seg, start))
			break;
		list_del(&a->node);
		ps_free(ps, a, sizeof(*a));
	}
	list_for_each_entry_safe(x, xtmp, &ps->lru, lru) {
		if (x->last_offset >= start)
			break;
		if (!x->open)
			del_producer(ps, x);
	}
}

/*
 * is @b, a transactional data batch, part of an aborted transaction?
 * Only ranges whose marker is above it can hold it: from the newest back
 */
bool krep_txn_aborted(const struct krep_partition *p,
		      const struct krep_batch *b)
{
	const struct krep_aborted *a;

	list_for_each_entry_reverse(a, &p->producers.aborted, node) {
		if (a->last_offset <= b->base_offset)
			break;
		if (a->producer_id == b->producer_id &&
		    b->base_offset >= a->first_offset)
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

static int stale_refusal(struct krep_status *st)
{
	return krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, -ENOMEM,
			 "producer state incomplete after an allocation failure or at log_memory_max; rebuilding");
}

/**
 * krep_producer_check - may the leader append a producer's batch?
 * @p: the partition, locked, led by this broker
 * @b: the batch
 * @dup: set to the offsets of the batch it repeats, when it does
 * @st: the refusal
 *
 * A batch of a new producer id is taken while the partition has fewer
 * than producers_max producers, and its entry is allocated here.
 *
 * Return: 0 to append it, 1 for a retry of a batch in the log (answer
 * with @dup's offsets), or a negative errno: an older producer epoch,
 * a sequence out of order, a transactional batch outside an open
 * transaction, a new producer past producers_max (POLICY_VIOLATION), or
 * no memory for its state (UNKNOWN_SERVER_ERROR).
 */
int krep_producer_check(struct krep_partition *p, const struct krep_batch *b,
			struct krep_append_result *dup, struct krep_status *st)
{
	struct krep_producers *ps = &p->producers;
	bool txnl = b->attributes & KREP_RB_ATTR_TRANSACTIONAL;
	const struct krep_seq_batch *sb = NULL;
	struct krep_producer *x;
	int ret = 0;

	lockdep_assert_held(&p->lock);
	if (b->producer_id < 0)
		return 0;
	if (ps->stale)
		return stale_refusal(st);
	x = find(ps, b->producer_id);
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
	if (!txnl)
		return x || b->base_seq < 0 ? 0 : admit(ps, krep_now_ms(), st);
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
	u64 lso;

	if (p->producers.stale)
		retry_stale(p, krep_now_ms());
	lso = lso_target(p);
	if (lso > p->lso) {
		trace_krep_lso_update(p, p->replicas[p->self], p->lso, lso);
		WRITE_ONCE(p->lso, lso);
	}
}

/* write @x's commit or abort marker as leader */
static int txn_end(struct krep_partition *p, struct krep_producer *x, bool commit,
		   u64 *offset, struct krep_status *st)
{
	struct krep_producers *ps = &p->producers;
	u8 marker[KREP_CTRL_BATCH_LEN];
	int err;

	/* the aborted index's entry, before the marker is in the log */
	if (!commit && x->first_offset >= 0 && !ps->spare_abort) {
		ps->spare_abort = ps_alloc(ps, sizeof(*ps->spare_abort), &err);
		if (!ps->spare_abort)
			return no_room(err, st);
	}
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

/* abort @x's transaction if it is open past its timeout; false: failed */
static bool expire_txn(struct krep_partition *p, struct krep_producer *x,
		       u64 now)
{
	struct krep_status st = {};
	u64 off, pid = x->producer_id, open_for = now - x->open_ms;

	if ((s64)open_for <= (s64)x->timeout_ms)
		return true;
	if (txn_end(p, x, false, &off, &st)) {
		pr_warn_ratelimited("%s-%u: cannot abort producer %llu's expired transaction: %s\n",
				    p->topic->name, p->index, pid, st.why);
		return false;
	}
	pr_info("%s-%u: producer %llu's transaction open for %llu ms aborted at %llu\n",
		p->topic->name, p->index, pid, open_for, off);
	return true;
}

/**
 * krep_txn_expire - abort the transactions open past their timeout
 * @p: the partition, locked
 * @now: krep_now_ms()
 *
 * Only a leader writes markers; a transaction a follower rebuilt from its
 * log counts its time from when this replica saw its first batch. Also
 * retries the rebuild of a stale state.
 */
void krep_txn_expire(struct krep_partition *p, u64 now)
{
	struct krep_producers *ps = &p->producers;
	struct krep_producer *x, *tmp;

	lockdep_assert_held(&p->lock);
	if (ps->stale)
		krep_partition_update_lso(p);	/* tries the rebuild */
	if (p->role != KREP_ROLE_LEADER || p->dead || ps->stale)
		return;
	/*
	 * a marker's append takes its producer off these lists and prunes
	 * entries with no open transaction: the next one stays
	 */
	list_for_each_entry_safe(x, tmp, &ps->txns, txn) {
		if (!expire_txn(p, x, now))
			return;
	}
	list_for_each_entry_safe(x, tmp, &ps->begun, txn) {
		if (!expire_txn(p, x, now))
			return;
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
 * Return: 0 or a negative errno; BEGIN of a new producer id past
 * producers_max is refused (POLICY_VIOLATION), as in PRODUCE.
 */
int krep_partition_txn(struct krep_partition *p, u64 pid, u16 pepoch, u8 op,
		       u32 timeout_ms, u64 *offset, struct krep_status *st)
{
	struct krep_producers *ps = &p->producers;
	struct krep_producer *x;
	u64 now;
	int err;

	mutex_lock(&p->lock);
	err = krep_partition_check_leader(p, st);
	if (err)
		goto out;
	if (ps->stale) {
		err = stale_refusal(st);
		goto out;
	}
	x = find(ps, pid);
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
		now = krep_now_ms();
		if (!x) {
			err = admit(ps, now, st);
			if (err)
				goto out;
			x = add_producer(ps, pid, now);	/* takes the spare */
			if (!x) {
				err = no_room(-ENOMEM, st);
				goto out;
			}
		}
		touch(ps, x, p->log.end_offset, now);
		txn_open(x, pepoch, -1,
			 timeout_ms ?: KREP_TXN_TIMEOUT_DEFAULT_MS);
		list_add_tail(&x->txn, &ps->begun);
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
