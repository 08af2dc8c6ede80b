/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: the broker of one network namespace and its configuration.
 */
#ifndef _KREP_BROKER_H
#define _KREP_BROKER_H

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/ratelimit.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/krep.h>

#include "log.h"

struct net;
struct krep_logdir;
struct mem_cgroup;

#define KREP_BROKER_ID_UNSET	(-1LL)

/* an IPv4 or IPv6 address and port; family AF_UNSPEC means unset */
struct krep_endpoint {
	union {
		struct sockaddr sa;
		struct sockaddr_in in4;
		struct sockaddr_in6 in6;
	};
};

struct krep_peer_cfg {
	u32 id;
	struct krep_endpoint ep;
};

/*
 * A broker's configuration is an immutable snapshot published with RCU:
 * readers take it under rcu_read_lock(), writers build a new one under
 * krep_net.cfg_lock and replace it whole.
 */
struct krep_broker_cfg {
	struct rcu_head rcu;
	s64 broker_id;				/* KREP_BROKER_ID_UNSET or 0.. */
	char cluster_id[KREP_CLUSTER_ID_MAX + 1];	/* "" while unset */
	struct krep_endpoint listen;
	struct krep_endpoint kafka_listen;	/* Kafka clients; AF_UNSPEC: none */
	char kafka_advertised[KREP_ADVERTISED_MAX + 1];	/* "" : from listen */
	u8 secret[KREP_SECRET_MAX];		/* never sent anywhere */
	u32 secret_len;				/* 0: no secret */
	u32 generation;
	unsigned int npeers;
	struct krep_peer_cfg peers[];
};

/* data-path counters, for the benchmark's copies-per-record figure */
struct krep_stats {
	atomic64_t records;
	atomic64_t produce_bytes;
	atomic64_t follower_bytes;
	atomic64_t rx_copy_bytes;
	atomic64_t tx_zerocopy_bytes;
	atomic64_t fetch_responses;
};

/* a controller's claim on this broker (ctrl.c); under cfg_lock */
struct krep_ctrl {
	u32 epoch;				/* 0: no controller yet */
	u64 owner;
	u32 lease_ms;				/* 0: released */
	u64 renewed_ms;
};

/* per-network-namespace state: one broker */
struct krep_net {
	struct net *net;
	struct mutex cfg_lock;			/* serialises config writers */
	struct krep_broker_cfg __rcu *cfg;
	struct list_head topic_specs;		/* krep_topic_spec from topics= */
	struct mutex topics_lock;		/* serialises topic writers */
	struct list_head topics;		/* RCU list of krep_topic */
	struct krep_logdir *logdir;		/* NULL: logs in memory only */
	atomic_t logdir_failed;			/* I/O failed: its replicas offline */
	struct list_head creating;		/* topics recovering (topic.c) */
	struct krep_mem mem;			/* log memory of this broker */
	struct delayed_work isr_work;		/* ISR expiration scan */
	/* ISR change and truncation lines: 30 a close_log_interval_ms */
	struct ratelimit_state state_rs;
	atomic_t topics_freeing;		/* freed after a grace period */
	struct krep_net_state *ns;		/* sockets (net.c) */
	s64 broker_id;				/* copy of cfg's, for traces */
	struct krep_stats stats;
	bool dying;				/* no more timers, no new work */
	struct mem_cgroup *memcg;		/* charged for its work; READ_ONCE */
	struct krep_ctrl ctrl;			/* ctrl.epoch: READ_ONCE */
	u64 incarnation;			/* random, per namespace life */
};

struct krep_net *krep_net(const struct net *net);

/*
 * An ISR change or truncation line: rate-limited per broker, so that a
 * broker with thousands of partitions (or a flapping peer) cannot flood
 * the kernel log for the others
 */
#define krep_state_info(kn, fmt, ...)					\
	do {								\
		if (__ratelimit(&(kn)->state_rs))			\
			pr_info(fmt, ##__VA_ARGS__);			\
	} while (0)

struct krep_broker_cfg *krep_broker_cfg_alloc(unsigned int npeers);
struct krep_broker_cfg *krep_broker_cfg_dup(const struct krep_broker_cfg *old,
					    unsigned int npeers);
void krep_broker_cfg_free(struct krep_broker_cfg *cfg);
struct krep_secret;
void krep_broker_secret(struct krep_net *kn, struct krep_secret *s);
int krep_broker_cfg_check(const struct krep_broker_cfg *cfg,
			  const char **why);
bool krep_endpoint_valid(const struct krep_endpoint *ep);
int krep_advertised_check(const char *s, const char **why);
void krep_broker_advertised(const struct krep_broker_cfg *cfg, char *buf,
			    size_t size);
int krep_cluster_id_check(const char *id, const char **why);

void krep_broker_memcg_take(struct krep_net *kn);

/*
 * What a peer or a Kafka client makes a broker allocate in work (kworkers
 * have no memory cgroup of their own) is charged to the broker's
 * (krep_broker_memcg_take()): a work item brackets itself with these two.
 * Without one (NULL) nothing is charged, as before.
 */
static inline struct mem_cgroup *krep_memcg_enter(const struct krep_net *kn)
{
	return set_active_memcg(READ_ONCE(kn->memcg));
}

static inline void krep_memcg_leave(struct mem_cgroup *old)
{
	set_active_memcg(old);
}

struct krep_broker_cfg *krep_broker_cfg_locked(struct krep_net *kn);
void krep_broker_cfg_replace(struct krep_net *kn, struct krep_broker_cfg *cfg);
void krep_broker_set_topic_specs(struct krep_net *kn, struct list_head *specs);

int krep_broker_init(void);
void krep_broker_shutdown(void);
void krep_broker_exit(void);

#endif /* _KREP_BROKER_H */
