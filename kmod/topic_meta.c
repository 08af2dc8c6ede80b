// SPDX-License-Identifier: GPL-2.0
/*
 * krep: what a broker knows of the partitions it does not host.
 *
 * Kafka's brokers answer Metadata for every partition from a metadata
 * cache that the controller keeps current (UpdateMetadata). Here the
 * controller sends the same LEADER_AND_ISR to every broker; a replica
 * acts on it (role.c), any other broker keeps the leader, its epoch and
 * the ISR here, so that a client bootstrapped from it finds the leader.
 * Nothing else reads these: a broker that does not host a partition
 * never serves its records.
 *
 * One slot per partition the broker does not host, in an array made at
 * the topic's creation, under the topic's meta_lock. krep_lai_check()
 * holds the checks of a LEADER_AND_ISR that replicas make as well.
 */
#include <linux/bitmap.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "krep.h"
#include "partition.h"
#include "topic.h"
#include "topic_meta.h"

struct krep_pmeta_slot {
	bool known;			/* a controller has said */
	s32 leader;			/* -1: none */
	u32 leader_epoch;
	u32 partition_epoch;
	DECLARE_BITMAP(isr, KREP_RF_MAX);	/* indexes in the assignment */
};

static const u32 *assignment(const struct krep_topic *t, u32 index)
{
	return &t->replicas[(size_t)index * t->replication_factor];
}

/**
 * krep_topic_meta_init - slots for the partitions @t does not host here
 * @t: a topic being created, its assignment and hosted partitions set
 *
 * Return: 0 or -ENOMEM.
 */
int krep_topic_meta_init(struct krep_topic *t)
{
	u32 i;

	spin_lock_init(&t->meta_lock);
	for (i = 0; i < t->npartitions; i++) {
		if (!t->parts[i])
			break;
	}
	if (i == t->npartitions)
		return 0;		/* hosts them all */
	t->meta = kvcalloc(t->npartitions, sizeof(*t->meta), GFP_KERNEL);
	return t->meta ? 0 : -ENOMEM;
}

void krep_topic_meta_free(struct krep_topic *t)
{
	kvfree(t->meta);
	t->meta = NULL;
}

static int ar_index(const u32 *ar, unsigned int nr, u32 id)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		if (ar[i] == id)
			return i;
	}
	return -1;
}

/* @ids as a bitmap of their indexes in @ar; -EINVAL when one is outside */
static int ar_bits(const u32 *ar, unsigned int nr, const u32 *ids,
		   unsigned int n, unsigned long *bits)
{
	unsigned int i;
	int idx;

	bitmap_zero(bits, KREP_RF_MAX);
	for (i = 0; i < n; i++) {
		idx = ar_index(ar, nr, ids[i]);
		if (idx < 0)
			return -EINVAL;
		__set_bit(idx, bits);
	}
	return 0;
}

/**
 * krep_lai_check - a LEADER_AND_ISR against a partition's assignment
 * @ar: the assigned replicas
 * @nr: their number
 * @lai: the controller's word
 * @isr: set to its ISR, as a bitmap of indexes in @ar
 * @inel: set to its ineligible (fenced) replicas, the same way
 * @st: the refusal
 *
 * As a replica checks it, and a broker keeping it for Metadata: the ISR
 * and the ineligible replicas within the assignment, the replicas (when
 * given) equal to it -- no reassignment --, and the leader (when there
 * is one) in the ISR.
 *
 * Return: 0 or -EINVAL (INVALID_REPLICA_ASSIGNMENT).
 */
int krep_lai_check(const u32 *ar, unsigned int nr, const struct krep_lai *lai,
		   unsigned long *isr, unsigned long *inel,
		   struct krep_status *st)
{
	int idx;

	if (ar_bits(ar, nr, lai->isr, lai->nisr, isr))
		return krep_fail(st, KREP_KERR_INVALID_REPLICA_ASSIGNMENT,
				 -EINVAL, "ISR member outside the assigned replicas");
	if (ar_bits(ar, nr, lai->inel, lai->ninel, inel))
		return krep_fail(st, KREP_KERR_INVALID_REPLICA_ASSIGNMENT,
				 -EINVAL, "ineligible replica outside the assigned replicas");
	if (lai->nreplicas &&
	    (lai->nreplicas != nr ||
	     memcmp(lai->replicas, ar, nr * sizeof(ar[0]))))
		return krep_fail(st, KREP_KERR_INVALID_REPLICA_ASSIGNMENT, -EINVAL,
				 "replicas differ from the partition's (no reassignment)");
	if (lai->leader < 0)
		return 0;
	idx = ar_index(ar, nr, lai->leader);
	if (idx < 0)
		return krep_fail(st, KREP_KERR_INVALID_REPLICA_ASSIGNMENT, -EINVAL,
				 "leader outside the assigned replicas");
	if (!test_bit(idx, isr))
		return krep_fail(st, KREP_KERR_INVALID_REPLICA_ASSIGNMENT, -EINVAL,
				 "leader outside the ISR");
	return 0;
}

/**
 * krep_topic_meta_set - the controller's word on a partition not hosted
 * @t: the topic
 * @index: a partition of @t that this broker does not host
 * @lai: leader, epochs and ISR, as LEADER_AND_ISR gives them
 * @st: the refusal
 *
 * The same checks as a replica makes (krep_lai_check()), and epochs
 * never going back.
 *
 * Return: 0, -EINVAL or -ESTALE (FENCED_LEADER_EPOCH).
 */
int krep_topic_meta_set(struct krep_topic *t, u32 index,
			const struct krep_lai *lai, struct krep_status *st)
{
	DECLARE_BITMAP(inel, KREP_RF_MAX);
	DECLARE_BITMAP(isr, KREP_RF_MAX);
	struct krep_pmeta_slot *m;
	int err;

	if (WARN_ON_ONCE(!t->meta || index >= t->npartitions))
		return krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, -EINVAL,
				 "no metadata slot for the partition");
	err = krep_lai_check(assignment(t, index), t->replication_factor, lai,
			     isr, inel, st);
	if (err)
		return err;
	m = &t->meta[index];
	spin_lock(&t->meta_lock);
	if (m->known &&
	    (lai->leader_epoch < m->leader_epoch ||
	     (lai->leader_epoch == m->leader_epoch &&
	      lai->partition_epoch < m->partition_epoch))) {
		spin_unlock(&t->meta_lock);
		return krep_fail(st, KREP_KERR_FENCED_LEADER_EPOCH, -ESTALE,
				 "leader or partition epoch older than the broker's");
	}
	m->known = true;
	m->leader = lai->leader < 0 ? -1 : (s32)lai->leader;
	m->leader_epoch = lai->leader_epoch;
	m->partition_epoch = lai->partition_epoch;
	bitmap_copy(m->isr, isr, KREP_RF_MAX);
	spin_unlock(&t->meta_lock);
	return 0;
}

/**
 * krep_topic_meta_get - what the controller last said of a partition
 * @t: the topic
 * @index: a partition of @t
 * @leader: set to the leader, -1 when none
 * @leader_epoch: set to its epoch
 * @isr: set to the ISR (room for KREP_RF_MAX ids)
 * @nisr: set to its size
 *
 * Return: false when the partition is hosted here or no controller has
 * said anything of it yet.
 */
bool krep_topic_meta_get(struct krep_topic *t, u32 index, s64 *leader,
			 u32 *leader_epoch, u32 *isr, unsigned int *nisr)
{
	const u32 *ar = assignment(t, index);
	struct krep_pmeta_slot *m;
	unsigned int i;
	bool known;

	if (!t->meta || index >= t->npartitions)
		return false;
	m = &t->meta[index];
	spin_lock(&t->meta_lock);
	known = m->known;
	if (known) {
		*leader = m->leader;
		*leader_epoch = m->leader_epoch;
		*nisr = 0;
		for_each_set_bit(i, m->isr, t->replication_factor)
			isr[(*nisr)++] = ar[i];
	}
	spin_unlock(&t->meta_lock);
	return known;
}
