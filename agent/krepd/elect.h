/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The controller's decisions on one partition, as pure functions of its
 * state, its topic's configuration and which brokers are alive: no I/O,
 * no clock (test_elect.c drives them directly). controller.c applies the
 * results, writes them down and tells the brokers.
 *
 * Rules (docs/design.md §2, Elections; Kafka's KRaft controller with KIP-966):
 *   - A broker is *live* when it is not fenced. A *reborn* broker came
 *     back with a new incarnation: its logs are gone, so it leaves every
 *     ISR and ELR before anything else and never joins an ELR for it.
 *   - Fenced brokers leave the ISR, except that the ISR never becomes
 *     empty that way: when every member is fenced it stays as it was
 *     (KRaft keeps the last member while the partition is offline).
 *   - The leader is kept while it is live and in the ISR. Otherwise the
 *     new leader is the first in AR order among the live ISR members;
 *     else the first live ELR member (the ISR becomes just it); else,
 *     only when the topic opts in to unclean election, the first live
 *     replica in AR (the ISR becomes just it, the ELR is emptied); else
 *     none (KREP_NO_LEADER: offline) until an eligible replica returns.
 *   - ELR (eligible leader replicas): when an ISR change leaves fewer
 *     than min ISR = min(min_insync_replicas, |AR|) members, the brokers
 *     that left the ISR join the ELR (they hold every committed record:
 *     HW does not move below min ISR); once the ISR is back at min ISR
 *     or more, the ELR is cleared. ISR and ELR never overlap.
 *   - Every leadership change bumps the leader epoch and the partition
 *     epoch; an ISR change alone bumps the partition epoch. The ELR is the
 *     controller's alone (brokers never see it): a change of it alone
 *     bumps nothing.
 * ISR and ELR are kept in AR order.
 */
#ifndef KREP_AGENT_ELECT_H
#define KREP_AGENT_ELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/krep.h>

#define KREP_ELECT_MAX	(KREP_PEERS_MAX + 1)	/* replicas per partition */

struct krep_ids {
	uint32_t n;
	uint32_t id[KREP_ELECT_MAX];
};

struct krep_pstate {
	uint32_t leader;		/* KREP_NO_LEADER: offline */
	uint32_t leader_epoch;
	uint32_t partition_epoch;
	struct krep_ids ar;		/* assigned replicas, preferred first */
	struct krep_ids isr;
	struct krep_ids elr;
};

struct krep_tconf {
	uint32_t min_isr;		/* min_insync_replicas */
	bool unclean;			/* unclean_leader_election */
};

enum krep_elect_how {
	KREP_ELECT_NONE,		/* the leader stays */
	KREP_ELECT_ISR,			/* a live ISR member */
	KREP_ELECT_ELR,			/* a live ELR member */
	KREP_ELECT_UNCLEAN,		/* a live replica outside ISR and ELR */
	KREP_ELECT_OFFLINE,		/* nobody eligible: KREP_NO_LEADER */
	KREP_ELECT_PREFERRED,		/* the first replica in AR */
};

/* What krep_elect_step() changed. */
struct krep_elect_out {
	enum krep_elect_how how;
	bool changed;			/* any field: write it down */
	bool bumped;			/* epochs moved: tell the replicas */
};

enum krep_alter_result {
	KREP_ALTER_COMMIT,
	KREP_ALTER_REJECT,
};

enum krep_pref_result {
	KREP_PREF_ELECTED,
	KREP_PREF_NOT_NEEDED,		/* Kafka's ELECTION_NOT_NEEDED */
	KREP_PREF_NOT_ELIGIBLE,
};

bool krep_ids_has(const struct krep_ids *s, uint32_t id);
bool krep_ids_equal(const struct krep_ids *a, const struct krep_ids *b);
/* Add @id if absent; false when full. */
bool krep_ids_add(struct krep_ids *s, uint32_t id);
void krep_ids_del(struct krep_ids *s, uint32_t id);
/* "1,2,3", or "-" when empty. */
const char *krep_ids_format(const struct krep_ids *s, char *buf, size_t size);
/* Parse "1,2,3" or "-"; 0 or -EINVAL (also on duplicates, too many). */
int krep_ids_parse(const char *str, struct krep_ids *s);

const char *krep_elect_how_name(enum krep_elect_how how);

/* min(min_insync_replicas, |AR|), at least 1. */
uint32_t krep_elect_min_isr(const struct krep_pstate *p,
			    const struct krep_tconf *tc);

/*
 * One controller step on a partition: drop @reborn brokers from ISR and
 * ELR, drop fenced ones (not in @live) from the ISR, and elect a leader
 * if the current one is fenced, left the ISR, or there is none. @next may
 * be @cur.
 */
void krep_elect_step(const struct krep_pstate *cur, const struct krep_tconf *tc,
		     const struct krep_ids *live, const struct krep_ids *reborn,
		     struct krep_pstate *next, struct krep_elect_out *out);

/*
 * An ALTER_ISR from broker @sender, based on @leader_epoch and
 * @partition_epoch, proposing @proposed. It is committed when the sender
 * is the leader, both epochs are the current ones, the proposal is a
 * subset of AR that holds the leader, differs from the ISR, and adds only
 * live brokers: the partition epoch is bumped and the ELR follows the new
 * ISR. Otherwise *@why says why not and @next is @cur unchanged.
 */
enum krep_alter_result krep_elect_alter_isr(const struct krep_pstate *cur,
					    const struct krep_tconf *tc,
					    const struct krep_ids *live,
					    uint32_t sender,
					    uint32_t leader_epoch,
					    uint32_t partition_epoch,
					    const struct krep_ids *proposed,
					    struct krep_pstate *next,
					    char *why, size_t whylen);

/*
 * Move leadership to the preferred replica (the first in AR) when it is
 * live and in the ISR; both epochs are bumped. *@why says why not.
 */
enum krep_pref_result krep_elect_preferred(const struct krep_pstate *cur,
					   const struct krep_ids *live,
					   struct krep_pstate *next,
					   char *why, size_t whylen);

#endif
