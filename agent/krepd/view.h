/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside krepd --controller (controller.h): the controller's state, shared
 * by controller.c (lifecycle, sessions, claims, polling, fencing) and
 * view.c (the view of the partitions: adoption from the brokers,
 * elections, ALTER_ISR, the state file, LEADER_AND_ISR, preferred
 * elections, the status the control socket reports).
 */
#ifndef KREP_AGENT_VIEW_H
#define KREP_AGENT_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cluster.h"
#include "ctlsock.h"
#include "elect.h"
#include "ha.h"
#include "metrics.h"
#include "session.h"
#include "snap.h"
#include "state.h"

#define KREP_CTL_BROKERS	KREP_CLUSTER_BROKERS_MAX

/* One broker as the controller sees it. */
struct cbroker {
	uint32_t id;
	const struct krep_session_addr *addr;
	struct krep_session *s;		/* NULL while closed */
	int64_t next_open_ms;		/* when to try opening it again */
	char last_err[256];		/* the failure logged last, "" if none */
	bool reachable;			/* the last poll read it */
	int64_t last_ok_ms;		/* when a poll last read it */
	bool fenced;
	bool reborn;			/* new incarnation seen in this poll */
	bool has_incarnation;
	uint64_t incarnation;
	bool claimed;			/* our claim holds on it */
	char claim_err[256];		/* the claim failure logged last */
	char topic_err[512];		/* the TOPIC_NEW/DEL failure logged last */
	int64_t claim_ms;		/* when it was made or renewed */
	bool has_snap;			/* snap is from the last poll */
	struct krep_snap snap;
	/* what it says of the others (by index): its peer connection ... */
	bool opinion[KREP_CTL_BROKERS];	/* ... is known */
	int64_t down_since[KREP_CTL_BROKERS];	/* ... is not up since, or 0 */
};

/* One partition of the view. */
struct cpart {
	struct krep_state_part st;	/* topic, partition, leader, ... */
	bool send;			/* changed: tell every replica */
	bool seen;			/* some reachable broker has it */
	/* the current epochs were delivered to broker (index) since the poll */
	bool known[KREP_CTL_BROKERS];
	char last_reject[512];		/* the rejection logged last */
	char last_warn[192];		/* the replica warning logged last */
	/* the LEADER_AND_ISR failure logged last, per broker (index): 0 none */
	int send_err[KREP_CTL_BROKERS];
};

struct ctl {
	struct krep_cluster *cfg;
	uint64_t owner;			/* our claims' KREP_A_CTRL_OWNER */
	uint32_t epoch;			/* controller epoch */
	int req_timeout_ms;
	size_t nb;
	struct cbroker b[KREP_CTL_BROKERS];	/* by id */
	size_t nt, nt_cap;
	struct krep_state_topic *topics;
	size_t np, np_cap;
	struct cpart *parts;		/* by topic, then partition */
	bool dirty;			/* the state file is behind */
	bool started;			/* claims made: decisions may go out */
	struct krep_ha *ha;		/* --etcd: the election and the store */
	bool step_down;			/* --etcd: lost the election */
	int lockfd;
	int sfd;			/* signalfd */
	struct krep_ctlsock *cs;
	int64_t next_poll_ms, next_pref_ms;
	/* what --metrics exports: counted over every term since krepd started */
	struct krep_ctl_counters *n;
	struct krep_metrics *metrics;	/* --metrics, or NULL */
};

/* controller.c */
int64_t krep_ctl_now(void);
struct cbroker *krep_ctl_broker(struct ctl *c, uint32_t id);
/*
 * Every other reachable, unfenced broker that has @b as a peer sees its
 * connection to it not up (at once, not yet for the session timeout):
 * @b may be cut off and about to be fenced. Their ids go to @who.
 */
bool krep_ctl_suspect(const struct ctl *c, const struct cbroker *b,
		      char *who, size_t size);
/* The unfenced brokers. */
void krep_ctl_live(const struct ctl *c, struct krep_ids *live);
/*
 * A request to broker @b with the controller's deadline. A broken channel
 * closes the session. Returns 0 or -errno; the kernel's error is in
 * krep_session_status(b->s) when b->s is still open.
 */
int krep_ctl_request(struct ctl *c, struct cbroker *b, struct nl_msg *req,
		     krep_genl_reply_fn fn, void *arg);
/* "strerror: extack message [KAFKA_ERROR]" of @b's failed request. */
const char *krep_ctl_err_str(const struct cbroker *b, int err, char *buf,
			     size_t size);

/* view.c */
void krep_view_load(struct ctl *c, const struct krep_state *st);
/*
 * Write the state file (with --etcd: the changed keys in etcd) if it is
 * behind; 0 or -1 (logged; with --etcd, a lost election also sets
 * c->step_down).
 */
int krep_view_save(struct ctl *c);
/* The view as a struct krep_state (free with krep_state_free); 0 or -ENOMEM. */
int krep_view_state(struct ctl *c, struct krep_state *st);
/* Topics and partitions from this poll's snapshots (adoption). */
void krep_view_merge(struct ctl *c);
/* Reborn brokers, fencing and elections on every partition. */
void krep_view_decide(struct ctl *c);
/* KREP_A_PENDING_ISR of the leaders' reports, as ALTER_ISR requests. */
void krep_view_pending(struct ctl *c);
/* An event from broker @b (ALTER_ISR); @arg is a struct krep_view_from. */
struct krep_view_from {
	struct ctl *c;
	struct cbroker *b;
};
int krep_view_event(struct nl_msg *msg, void *arg);
/* Save, then LEADER_AND_ISR to the replicas of every changed partition. */
void krep_view_propagate(struct ctl *c);
/* LEADER_AND_ISR to every replica that reports older epochs. */
void krep_view_reconcile(struct ctl *c);
/*
 * Preferred election on @topic (NULL: all) / @partition (-1: all). With
 * @out, one JSON line per partition and the final line; without, only
 * the partitions whose leader is not the preferred one, logged.
 */
void krep_view_preferred(struct ctl *c, const char *topic, int64_t partition,
			 FILE *out);
/* The control socket's "status" objects. */
void krep_view_status(struct ctl *c, FILE *out);
/* Forget what was delivered to broker (index) @bi: it lost it. */
void krep_view_forget_broker(struct ctl *c, size_t bi);
void krep_view_topic_unknown(struct ctl *c, const char *topic, size_t bi);

/* For ctl_topic.c: the records of the view and changes to them. */
struct krep_state_topic *krep_view_topic(struct ctl *c, const char *name);
struct krep_state_topic *krep_view_topic_add(struct ctl *c, const char *name);
/* Drop @name's partitions, and unless @parts_only its record. */
void krep_view_topic_drop(struct ctl *c, const char *name, bool parts_only);
struct cpart *krep_view_part(struct ctl *c, const char *topic,
			     uint32_t partition);
struct cpart *krep_view_part_add(struct ctl *c, const char *topic,
				 uint32_t partition);
/* @p changed: save it, then tell every replica. */
void krep_view_part_changed(struct ctl *c, struct cpart *p);
/*
 * Broker @id has no replica of @topic any more (it is created again
 * there): out of every ISR and ELR of the topic, a new leader where it
 * led, as for a broker that restarted empty.
 */
void krep_view_replica_lost(struct ctl *c, const char *topic, uint32_t id);
/* @b has a session, answered this poll and holds our claim. */
bool krep_view_can_send(const struct cbroker *b);
/* A KREP_A_BROKER_ID nest of @ids (empty ones too). */
int krep_view_put_ids(struct nl_msg *msg, int type, const struct krep_ids *ids);

/* ctl_topic.c: the topics the controller creates and deletes */
/*
 * The control socket's "topic-create NAME PARTITIONS RF [CONFIG]" (@w,
 * @n words after the request's) and "topic-delete NAME".
 */
void krep_ctl_topic_create(struct ctl *c, char **w, int n, FILE *out);
void krep_ctl_topic_delete(struct ctl *c, const char *name, FILE *out);
/*
 * Every poll: create the controller's topics on the brokers that miss
 * them, delete the ones being deleted from the brokers that still have
 * them, and forget a deleted one once no broker has it.
 */
void krep_ctl_topics_reconcile(struct ctl *c);

#endif
