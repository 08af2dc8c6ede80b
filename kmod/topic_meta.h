/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: what a broker knows of the partitions it does not host, for
 * Kafka's Metadata (Kafka's metadata cache, fed by the controller).
 */
#ifndef _KREP_TOPIC_META_H
#define _KREP_TOPIC_META_H

#include <linux/types.h>

struct krep_lai;
struct krep_status;
struct krep_topic;

int krep_lai_check(const u32 *ar, unsigned int nr, const struct krep_lai *lai,
		   unsigned long *isr, unsigned long *inel,
		   struct krep_status *st);
int krep_topic_meta_init(struct krep_topic *t);
void krep_topic_meta_free(struct krep_topic *t);
int krep_topic_meta_set(struct krep_topic *t, u32 index,
			const struct krep_lai *lai, struct krep_status *st);
bool krep_topic_meta_get(struct krep_topic *t, u32 index, s64 *leader,
			 u32 *leader_epoch, u32 *isr, unsigned int *nisr);

#endif /* _KREP_TOPIC_META_H */
