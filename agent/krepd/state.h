/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepd --controller's state file: what the controller decided, so that a
 * restarted controller goes on from there and never hands out an epoch
 * twice. Text, one statement per line:
 *
 *   version 1
 *   controller-epoch N
 *   broker ID incarnation HEX|- fenced 0|1
 *   topic NAME min-isr N unclean 0|1 [partitions N rf N config CFG|-
 *             held IDS] [deleting 1]
 *             (partitions/rf/config: a topic the controller created, with
 *             its configuration as krep_tconfig_format() writes it, that
 *             it creates on every broker missing it, held: the brokers
 *             known to have had it, who leave its ISRs when they miss it;
 *             deleting: one it is
 *             deleting from every broker that still has it)
 *   partition TOPIC P leader ID|none leader-epoch N partition-epoch N
 *             replicas IDS isr IDS elr IDS     (IDS: "1,2,3" or "-")
 *
 * It is replaced atomically (written to PATH.tmp, fsync'd, renamed over
 * PATH, directory fsync'd) and only ever by the krepd holding the lock:
 * an flock on PATH.lock (PATH itself is replaced on every write, so the
 * lock lives beside it).
 */
#ifndef KREP_AGENT_STATE_H
#define KREP_AGENT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "elect.h"
#include "tconfig.h"

#define KREP_TOPIC_NAME_MAX	249

struct krep_state_broker {
	uint32_t id;
	bool has_incarnation;
	uint64_t incarnation;
	bool fenced;
};

struct krep_state_topic {
	char name[KREP_TOPIC_NAME_MAX + 1];
	struct krep_tconf tc;
	bool managed;			/* created by the controller: */
	uint32_t partitions, rf;	/* ... its size */
	struct krep_tconfig cfg;	/* ... and configuration */
	struct krep_ids held;		/* ... brokers that have had it */
	bool deleting;			/* being deleted by the controller */
};

struct krep_state_part {
	char topic[KREP_TOPIC_NAME_MAX + 1];
	uint32_t partition;
	struct krep_pstate ps;
};

struct krep_state {
	uint32_t controller_epoch;
	size_t nbrokers, ntopics, nparts;
	struct krep_state_broker *brokers;
	struct krep_state_topic *topics;
	struct krep_state_part *parts;
};

/*
 * Read @path into @st. Returns 0, -ENOENT when there is no state file
 * (@st empty), or another -errno with "PATH:LINE: reason" in @err.
 */
int krep_state_load(const char *path, struct krep_state *st, char *err,
		    size_t errlen);
void krep_state_free(struct krep_state *st);

/* Statements, for the writer's @emit. */
void krep_state_put_epoch(FILE *f, uint32_t controller_epoch);
void krep_state_put_broker(FILE *f, const struct krep_state_broker *b);
void krep_state_put_topic(FILE *f, const struct krep_state_topic *t);
void krep_state_put_part(FILE *f, const struct krep_state_part *p);

/*
 * Replace @path atomically with "version 1" and what @emit writes.
 * Returns 0 or -errno with the reason in @err.
 */
int krep_state_save(const char *path, void (*emit)(FILE *f, void *arg),
		    void *arg, char *err, size_t errlen);

/*
 * Take the lock PATH.lock (creating the directory of @path if it is
 * missing). Returns the descriptor holding it, -EWOULDBLOCK when another
 * process holds it, or another -errno; @err says why.
 */
int krep_state_lock(const char *path, char *err, size_t errlen);

#endif
