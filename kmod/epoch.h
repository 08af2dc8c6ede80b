/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: a replica's leader epoch cache (docs/design.md §2, Leader epochs and truncation).
 *
 * (epoch -> start offset) for every epoch whose leader wrote records,
 * oldest first. A leader adds (its epoch, its LEO) when it takes over; a
 * follower adds an entry when it appends the first batch of a newer
 * epoch. Entries go only with the log (a truncation, or the log start
 * moving past them), never by a count, as in Kafka's
 * LeaderEpochFileCache. The array grows by doubling; should that
 * allocation fail, the oldest entry makes room (logged).
 * Callers hold the partition's lock.
 */
#ifndef _KREP_EPOCH_H
#define _KREP_EPOCH_H

#include <linux/types.h>
#include <linux/krep.h>

struct krep_epoch_entry {
	u32 epoch;
	u64 start;
};

struct krep_epoch_cache {
	unsigned int n, cap;
	struct krep_epoch_entry *e;
};

void krep_epoch_destroy(struct krep_epoch_cache *c);

void krep_epoch_assign(struct krep_epoch_cache *c, u32 epoch, u64 start);
s64 krep_epoch_latest(const struct krep_epoch_cache *c);
s64 krep_epoch_at(const struct krep_epoch_cache *c, u64 offset);
void krep_epoch_found(struct krep_epoch_cache *c, u32 epoch, u64 start);
bool krep_epoch_end_offset(const struct krep_epoch_cache *c, u32 epoch,
			   u64 leo, u32 *found, u64 *end);
void krep_epoch_end_kafka(const struct krep_epoch_cache *c, s32 epoch,
			  u64 leo, s32 *found, s64 *end);
void krep_epoch_truncate_end(struct krep_epoch_cache *c, u64 end);
void krep_epoch_truncate_start(struct krep_epoch_cache *c, u64 start);

#endif /* _KREP_EPOCH_H */
