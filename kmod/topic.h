/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: topic names and per-topic configuration.
 */
#ifndef _KREP_TOPIC_H
#define _KREP_TOPIC_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
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
	s64 flush_messages;		/* KREP_FLUSH_NEVER: no forced fsync */
	s64 flush_ms;
	s64 segment_ms;			/* roll a segment this old */
};

#define KREP_FLUSH_NEVER	S64_MAX	/* Kafka's Long.MAX_VALUE */

/* a topic as requested by the topics= module parameter */
struct krep_topic_spec {
	struct list_head node;
	char name[KREP_TOPIC_NAME_MAX + 1];
	u32 partitions;
	u32 replication_factor;
	struct krep_topic_config config;
};

struct krep_net;
struct krep_partition;
struct krep_pmeta_slot;
struct krep_status;

/*
 * A topic and the partitions this broker hosts. Topics are on an RCU list
 * of their broker; lookups take a reference with kref_get_unless_zero().
 * Deletion unlinks the topic, kills its partitions (waking every waiter),
 * and drops the list's reference; the last reference frees it all, in a
 * work item (process context: logs may hold many pages) after an RCU
 * grace period.
 */
struct krep_topic {
	struct kref ref;
	struct rcu_work free_work;
	struct list_head node;		/* in krep_net.topics */
	struct krep_net *kn;
	char name[KREP_TOPIC_NAME_MAX + 1];
	u32 npartitions;
	u32 nhosted;			/* partitions hosted here */
	u32 replication_factor;
	struct krep_topic_config config;
	bool leaderless;		/* a controller names the leaders */
	u32 *replicas;			/* every partition's AR, as created */
	spinlock_t meta_lock;
	/* per partition, the leader of those not hosted here (topic_meta.c) */
	struct krep_pmeta_slot *meta;
	struct krep_partition *parts[];	/* NULL where not hosted here */
};

/* a controller's assignment for krep_topic_create() */
struct krep_topic_assign {
	const u32 *replicas;	/* npartitions x rf ids, partition by partition */
	bool leaderless;	/* replicas wait for LEADER_AND_ISR */
};

int krep_topic_create(struct krep_net *kn, const char *name, u32 npartitions,
		      u32 rf, const struct krep_topic_config *cfg,
		      const struct krep_topic_assign *assign,
		      struct krep_status *st);
int krep_topic_delete(struct krep_net *kn, const char *name,
		      struct krep_status *st);
struct krep_topic *krep_topic_get(struct krep_net *kn, const char *name);
void krep_topic_put(struct krep_topic *t);
struct krep_partition *krep_topic_partition(struct krep_topic *t, u32 index,
					    struct krep_status *st);
void krep_topics_kill_all(struct krep_net *kn);
void krep_topics_destroy(struct krep_net *kn);
int krep_topic_create_specs(struct krep_net *kn);
u32 krep_topics_min_lag_ms(struct krep_net *kn);
bool krep_topics_exist(struct krep_net *kn);

void krep_topic_config_default(struct krep_topic_config *tc);
int krep_topic_config_set(struct krep_topic_config *tc, const char *key,
			  s64 val, const char **why);
int krep_topic_name_check(const char *name, size_t len, const char **why);
struct krep_topic_spec *krep_topic_spec_alloc(void);
void krep_topic_spec_free_list(struct list_head *specs);

#endif /* _KREP_TOPIC_H */
