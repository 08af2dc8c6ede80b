/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A snapshot of one broker, as BROKER_GET, TOPIC_GET (dump) and
 * PARTITION_GET (dump) tell it, and the health figures derived from it:
 * what krepctl stats prints, krepd --metrics exports and krepctl watch
 * shows beside its BPF counters.
 *
 * Definitions (Kafka's broker metrics, on this broker's replicas):
 *   min ISR            min(min_insync_replicas, replication factor): the
 *                      ISR size below which acks=all produces fail
 *   under-replicated   ISR smaller than the replica list
 *   under min ISR      ISR smaller than the min ISR
 *   at min ISR         ISR exactly the min ISR
 *   offline            the local replica is offline, the partition has no
 *                      leader, or (on a follower) the leader is a peer this
 *                      broker sees down
 *   HW lag             LEO - HW;  LSO lag: HW - LSO
 *   follower lag       on a leader, per follower: leader LEO - its LEO
 *                      (offsets; while known) and the ms since it was last
 *                      caught up
 * The broker-wide under-replicated, under-min-ISR and at-min-ISR counts
 * and the follower lags cover only the partitions this broker leads (as
 * Kafka counts them: a follower's ISR is the leader's business); offline
 * and the HW and LSO lags cover every local replica.
 */
#ifndef KREP_AGENT_SNAP_H
#define KREP_AGENT_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/krep.h>

#include "ep.h"
#include "genl.h"

struct krep_snap_peer {
	uint32_t id;
	int state;		/* enum krep_peer_state, -1 if absent */
	bool has_ep;
	struct krep_ep ep;	/* its replication listener */
};

struct krep_snap_topic {
	char *name;
	uint32_t partitions;
	uint32_t rf;
	bool has_min_isr;
	uint32_t min_isr;	/* min_insync_replicas as configured */
	bool has_unclean;
	bool unclean;		/* unclean_leader_election */
};

struct krep_snap_remote {
	uint32_t id;
	bool has_leo, has_fetch_age, has_caught_up_age;
	uint64_t leo, fetch_age_ms, caught_up_age_ms;
	int in_isr;		/* 0, 1, -1 if absent */
};

struct krep_snap_part {
	char *topic;
	uint32_t partition;
	int role;		/* enum krep_role, -1 if absent */
	bool has_leader, has_leader_epoch, has_partition_epoch;
	uint32_t leader, leader_epoch, partition_epoch;
	bool has_replicas, has_isr, has_pending_isr;
	size_t nreplicas, nisr, npending_isr, nineligible;
	uint32_t *replicas, *isr, *pending_isr, *ineligible;
	bool has_leo, has_hw, has_lso, has_log_start, has_lw;
	uint64_t leo, hw, lso, log_start, lw;
	bool has_remotes;
	size_t nremotes;
	struct krep_snap_remote *remotes;
};

struct krep_snap {
	bool has_broker_id;
	uint32_t broker_id;
	char *cluster_id;
	size_t npeers;
	struct krep_snap_peer *peers;
	bool has_incarnation;
	uint64_t incarnation;
	bool has_log_memory;		/* KREP_A_LOG_MEMORY and _MAX */
	uint64_t log_memory;
	uint64_t log_memory_max;
	bool has_claim;		/* KREP_A_CONTROLLER */
	bool has_claim_age;
	uint32_t claim_epoch, claim_lease_ms;
	uint64_t claim_owner, claim_age_ms;
	bool has_stats;
	bool has_stat[KREP_A_STAT_MAX + 1];
	uint64_t stat[KREP_A_STAT_MAX + 1];
	size_t ntopics, ntopics_cap;
	struct krep_snap_topic *topics;
	size_t nparts, nparts_cap;
	struct krep_snap_part *parts;
};

/*
 * Ask the broker of @gl's namespace (of topic @topic only, when not NULL).
 * Kernel errors go to stderr unless @gl->quiet. Returns 0 or -errno; on
 * error @s is left empty.
 */
int krep_snap_take(struct krep_genl *gl, const char *topic,
		   struct krep_snap *s);
/*
 * The same over any channel (krepd's sessions): @rq sends each request
 * and hands the replies to @fn; @family is the krep family id. Prints
 * nothing; -EPROTO for a malformed reply.
 */
typedef int (*krep_snap_request_fn)(void *ctx, struct nl_msg *req,
				    krep_genl_reply_fn fn, void *arg);
int krep_snap_take_via(krep_snap_request_fn rq, void *ctx, int family,
		       const char *topic, struct krep_snap *s);
void krep_snap_free(struct krep_snap *s);

/* The name of KREP_A_STAT_* @attr ("records", ...), NULL if unknown. */
const char *krep_snap_stat_name(unsigned int attr);

struct krep_part_health {
	bool leader;		/* this broker leads it */
	uint32_t rf, isr_size;
	bool has_min_isr;
	uint32_t min_isr;	/* min(min_insync_replicas, RF) */
	bool under_replicated, under_min_isr, at_min_isr, offline;
	bool has_hw_lag, has_lso_lag;
	uint64_t hw_lag, lso_lag;
	bool has_follower_lag, has_follower_lag_ms;
	uint64_t follower_lag, follower_lag_ms;	/* the largest */
};

void krep_part_health(const struct krep_snap *s, const struct krep_snap_part *p,
		      struct krep_part_health *h);

struct krep_broker_health {
	uint64_t partitions, leader_partitions;
	uint64_t under_replicated, under_min_isr, at_min_isr, offline;
	uint64_t isr_changes;	/* sum of led partitions' partition epochs */
	bool has_follower_lag, has_follower_lag_ms;
	uint64_t max_follower_lag, max_follower_lag_ms;
	uint64_t max_hw_lag, total_hw_lag, max_lso_lag, total_lso_lag;
};

void krep_broker_health(const struct krep_snap *s, struct krep_broker_health *h);

/* The topic @name of @s, or NULL. */
const struct krep_snap_topic *krep_snap_topic(const struct krep_snap *s,
					      const char *name);

#endif
