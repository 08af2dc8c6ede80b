/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: a replica's producer state (docs/design.md §2, LSO and
 * transactions; Idempotent producers): each producer's epoch and last
 * sequences, the open transactions and the aborted-transaction index, as Kafka's
 * ProducerStateManager keeps them. Every replica, leader or follower,
 * builds it from the batches in its own log as they are appended, so a
 * new leader has it at once; a truncation that cuts part of it rebuilds
 * it from the log, and a clean shutdown saves it as Kafka's snapshot.
 * Callers hold the partition's lock.
 */
#ifndef _KREP_PRODUCER_H
#define _KREP_PRODUCER_H

#include <linux/list.h>
#include <linux/types.h>

struct krep_aborted;
struct krep_append_result;
struct krep_batch;
struct krep_log;
struct krep_partition;
struct krep_producer;
struct krep_status;

/* the Kafka default of transaction.timeout.ms and the broker's maximum */
#define KREP_TXN_TIMEOUT_DEFAULT_MS	60000
#define KREP_TXN_TIMEOUT_MAX_MS		900000

/* a .txnindex entry (producer.c), and where its abort marker's offset is */
#define KREP_TXNINDEX_ENTRY	34
#define KREP_TXNINDEX_LAST	18

/* the producer state as Kafka's files (krep_producer_save()) */
struct krep_producer_saved {
	u8 *snap;			/* <LEO>.snapshot */
	size_t snap_len;
	u8 *txn;			/* .txnindex entries, by marker */
	size_t txn_len;
};

#define KREP_PRODUCER_KEPT	4

/*
 * A partition's producer state, in struct krep_partition, under its lock.
 * Each list is in offset order by construction (producer.c explains).
 */
struct krep_producers {
	struct hlist_head *table;	/* entries by producer id; NULL until one */
	unsigned int bits;		/* @table has 1 << bits buckets */
	unsigned int count;		/* entries */
	struct list_head lru;		/* every entry, by its last batch */
	struct list_head txns;		/* open, with a batch: by first offset */
	struct list_head begun;		/* open by TXN BEGIN, no batch yet */
	struct list_head pins;		/* ended, marker not below HW: by marker */
	struct list_head aborted;	/* the aborted index, by marker */
	struct krep_producer *spare;	/* allocated ahead by the leader */
	struct krep_aborted *spare_abort;
	u64 pruned_start;		/* the log start it was pruned at */
	bool stale;			/* an allocation failed: see producer.c */
	u64 stale_at;			/* the first offset not taken in */
	u64 stale_ms;			/* the last rebuild tried */
	/*
	 * with a log directory, the state at the start of each of the last
	 * KREP_PRODUCER_KEPT segments, so that a truncation replays the log
	 * from there instead of from its start (krep_producer_truncated())
	 */
	struct krep_producer_kept {
		u64 offset;
		struct krep_producer_saved sv;	/* none: .snap NULL */
	} kept[KREP_PRODUCER_KEPT];
	unsigned int kept_next;		/* the slot the next one takes */
};

void krep_producer_init(struct krep_partition *p);
void krep_producer_batch(struct krep_partition *p, const struct krep_batch *b);
void krep_producer_rebuild(struct krep_partition *p);
void krep_producer_truncated(struct krep_partition *p, u64 leo);
void krep_producer_drop_unlogged(struct krep_partition *p);
void krep_producer_destroy(struct krep_partition *p);
void krep_producer_prune(struct krep_partition *p);
bool krep_txn_aborted(const struct krep_partition *p,
		      const struct krep_batch *b);
int krep_producer_check(struct krep_partition *p, const struct krep_batch *b,
			struct krep_append_result *dup, struct krep_status *st);
void krep_txn_expire(struct krep_partition *p, u64 now);
int krep_producer_save(struct krep_partition *p,
		       struct krep_producer_saved *out);
void krep_producer_saved_free(struct krep_producer_saved *s);
int krep_producer_load(struct krep_partition *p, const u8 *snap,
		       size_t snap_len, const u8 *txn, size_t txn_len, u64 at,
		       bool check);
int krep_producer_restore(struct krep_partition *p, const u8 *snap,
			  size_t snap_len, const u8 *txn, size_t txn_len,
			  u64 at, bool check);
void krep_producer_log_rolled(struct krep_log *log);
void krep_producer_keep(struct krep_partition *p, u64 at,
			struct krep_producer_saved *sv);
int krep_producer_dup_kept(struct krep_partition *p, u64 offset,
			   struct krep_producer_saved *out);
void krep_producer_dup_free(struct krep_partition *p,
			    struct krep_producer_saved *sv);

#endif /* _KREP_PRODUCER_H */
