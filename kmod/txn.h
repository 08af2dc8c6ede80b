/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: a replica's producer state (docs/design.md §2, Transactions):
 * the open transactions and the aborted-transaction index, as Kafka's
 * ProducerStateManager keeps them. Every replica, leader or follower,
 * builds it from the batches in its own log as they are appended, so a
 * new leader has it at once; a truncation rebuilds it from the log.
 * Callers hold the partition's lock.
 */
#ifndef _KREP_TXN_H
#define _KREP_TXN_H

#include <linux/types.h>

struct krep_batch;
struct krep_partition;
struct krep_status;

/* the Kafka default of transaction.timeout.ms and the broker's maximum */
#define KREP_TXN_TIMEOUT_DEFAULT_MS	60000
#define KREP_TXN_TIMEOUT_MAX_MS		900000

void krep_txn_batch(struct krep_partition *p, const struct krep_batch *b);
void krep_txn_rebuild(struct krep_partition *p);
void krep_txn_drop_unlogged(struct krep_partition *p);
void krep_txn_destroy(struct krep_partition *p);
void krep_txn_prune(struct krep_partition *p);
bool krep_txn_aborted(const struct krep_partition *p,
		      const struct krep_batch *b);
int krep_txn_check_append(struct krep_partition *p, const struct krep_batch *b,
			  struct krep_status *st);
void krep_txn_expire(struct krep_partition *p, u64 now);

#endif /* _KREP_TXN_H */
