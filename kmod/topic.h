/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: topic names and per-topic configuration.
 */
#ifndef _KREP_TOPIC_H
#define _KREP_TOPIC_H

#include <linux/list.h>
#include <linux/types.h>
#include <linux/krep.h>

#define KREP_TOPIC_NAME_MAX	249	/* Kafka's limit, without the NUL */
#define KREP_PARTITIONS_MAX	1024
#define KREP_RF_MAX		(KREP_PEERS_MAX + 1)

struct krep_topic_config {
	u32 min_insync_replicas;
	u32 replica_lag_time_max_ms;
	u32 segment_bytes;
	s64 retention_bytes;		/* -1: unlimited */
	u32 max_message_bytes;
	bool unclean_leader_election;
};

/* a topic as requested by the topics= module parameter */
struct krep_topic_spec {
	struct list_head node;
	char name[KREP_TOPIC_NAME_MAX + 1];
	u32 partitions;
	u32 replication_factor;
	struct krep_topic_config config;
};

void krep_topic_config_default(struct krep_topic_config *tc);
int krep_topic_config_set(struct krep_topic_config *tc, const char *key,
			  s64 val, const char **why);
int krep_topic_name_check(const char *name, size_t len, const char **why);
struct krep_topic_spec *krep_topic_spec_alloc(void);
void krep_topic_spec_free_list(struct list_head *specs);

#endif /* _KREP_TOPIC_H */
