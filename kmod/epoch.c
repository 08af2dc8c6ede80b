// SPDX-License-Identifier: GPL-2.0
/*
 * krep: the leader epoch cache (see epoch.h), Kafka's
 * LeaderEpochFileCache kept in memory.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/minmax.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "epoch.h"

/* the first allocation: a partition rarely sees more leader changes */
#define KREP_EPOCH_CACHE_INIT	8

void krep_epoch_destroy(struct krep_epoch_cache *c)
{
	kfree(c->e);
	c->e = NULL;
	c->n = 0;
	c->cap = 0;
}

static void drop_first(struct krep_epoch_cache *c, unsigned int k)
{
	k = min(k, c->n);
	memmove(c->e, c->e + k, (c->n - k) * sizeof(c->e[0]));
	c->n -= k;
}

/* room for one more entry: the array doubles, or the oldest entry goes */
static void make_room(struct krep_epoch_cache *c)
{
	unsigned int cap = c->cap ? c->cap * 2 : KREP_EPOCH_CACHE_INIT;
	struct krep_epoch_entry *e;

	if (c->n < c->cap)
		return;
	e = krealloc_array(c->e, cap, sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (e) {
		c->e = e;
		c->cap = cap;
		return;
	}
	pr_warn_ratelimited("leader epoch cache: out of memory, its oldest entry goes\n");
	drop_first(c, 1);
}

/**
 * krep_epoch_assign - record that @epoch starts at @start
 * @c: the cache
 * @epoch: a leader epoch
 * @start: its first offset
 *
 * An epoch already recorded keeps its start. Entries for epochs at or
 * above @epoch, or starting at or after @start, are dropped first: an
 * epoch in which nothing was written leaves no entry behind.
 */
void krep_epoch_assign(struct krep_epoch_cache *c, u32 epoch, u64 start)
{
	if (c->n && c->e[c->n - 1].epoch == epoch &&
	    c->e[c->n - 1].start <= start)
		return;
	while (c->n && (c->e[c->n - 1].epoch >= epoch ||
			c->e[c->n - 1].start >= start))
		c->n--;
	make_room(c);
	if (c->n == c->cap)
		return;		/* no array at all: nothing to record in */
	c->e[c->n].epoch = epoch;
	c->e[c->n].start = start;
	c->n++;
}

/* the latest epoch recorded, or -1 */
s64 krep_epoch_latest(const struct krep_epoch_cache *c)
{
	return c->n ? (s64)c->e[c->n - 1].epoch : -1;
}

/**
 * krep_epoch_end_offset - OffsetsForLeaderEpoch on this replica
 * @c: the cache
 * @epoch: the epoch asked
 * @leo: the replica's log end offset
 * @found: set to the largest recorded epoch <= @epoch
 * @end: set to its end offset: the next epoch's start, or @leo
 *
 * Return: false when @epoch is older than every recorded epoch (Kafka's
 * UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET).
 */
bool krep_epoch_end_offset(const struct krep_epoch_cache *c, u32 epoch,
			   u64 leo, u32 *found, u64 *end)
{
	unsigned int i;

	for (i = c->n; i > 0; i--) {
		if (c->e[i - 1].epoch <= epoch)
			break;
	}
	if (!i)
		return false;
	*found = c->e[i - 1].epoch;
	*end = i < c->n ? c->e[i].start : leo;
	return true;
}

/**
 * krep_epoch_end_kafka - OffsetForLeaderEpoch as Kafka's
 * LeaderEpochFileCache.endOffsetFor answers it, for clients
 * @c: the cache
 * @epoch: the epoch asked
 * @leo: the replica's log end offset
 * @found: set to the epoch of the answer, -1 for none (UNDEFINED_EPOCH)
 * @end: set to its end offset, -1 for none (UNDEFINED_EPOCH_OFFSET)
 *
 * The latest epoch ends at @leo; an older one where the next recorded
 * epoch above it starts, answered with the largest recorded epoch not
 * above it, or with @epoch itself when it is older than all of them; an
 * epoch above the latest has no end.
 */
void krep_epoch_end_kafka(const struct krep_epoch_cache *c, s32 epoch,
			  u64 leo, s32 *found, s64 *end)
{
	unsigned int i;

	*found = -1;
	*end = -1;
	if (epoch < 0 || !c->n)
		return;
	if (c->e[c->n - 1].epoch == epoch) {
		*found = epoch;
		*end = leo;
		return;
	}
	for (i = 0; i < c->n && c->e[i].epoch <= epoch; i++)
		;
	if (i == c->n)
		return;
	*end = c->e[i].start;
	*found = i ? c->e[i - 1].epoch : epoch;
}

/* the epoch of the batch at @offset: the last to start at or before it; -1 */
s64 krep_epoch_at(const struct krep_epoch_cache *c, u64 offset)
{
	unsigned int i;

	for (i = c->n; i > 0; i--) {
		if (c->e[i - 1].start <= offset)
			return c->e[i - 1].epoch;
	}
	return -1;
}

/**
 * krep_epoch_found - a batch of @epoch at @start, read from the log at load
 * @c: the cache, from leader-epoch-checkpoint
 * @epoch: the batch's partition leader epoch
 * @start: its base offset
 *
 * As Kafka's assign at recovery, the batch wins: entries that give
 * @start another epoch (a checkpoint ahead of a cut that did not reach
 * the disk) go, and @epoch starts at @start when it is new.
 */
void krep_epoch_found(struct krep_epoch_cache *c, u32 epoch, u64 start)
{
	/* below the first entry: below the log start when it was written */
	if ((c->n && start < c->e[0].start) || krep_epoch_at(c, start) == epoch)
		return;
	krep_epoch_truncate_end(c, start);
	while (c->n && c->e[c->n - 1].epoch > epoch)
		c->n--;
	krep_epoch_assign(c, epoch, start);
}

/* the log was truncated to @end: forget epochs that start at or after it */
void krep_epoch_truncate_end(struct krep_epoch_cache *c, u64 end)
{
	while (c->n && c->e[c->n - 1].start >= end)
		c->n--;
}

/* the log now starts at @start: the epoch holding it starts there */
void krep_epoch_truncate_start(struct krep_epoch_cache *c, u64 start)
{
	unsigned int k = 0;

	while (k + 1 < c->n && c->e[k + 1].start <= start)
		k++;
	drop_first(c, k);
	if (c->n && c->e[0].start < start)
		c->e[0].start = start;
}
