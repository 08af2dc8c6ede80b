/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepd --controller --etcd: the controller's state (state.h's struct
 * krep_state) kept in etcd instead of the state file, one key per object
 * under the cluster's prefix P, in the shapes Kafka kept in ZooKeeper:
 *
 *   P/controller_epoch                  "N"
 *   P/brokers/state/ID                  {"version":1,"incarnation":"HEX"|null,
 *                                        "fenced":BOOL}
 *   P/brokers/topics/NAME               {"version":1,"partitions":{"0":[1,2,3],...},
 *                                        "min_isr":N,"unclean":BOOL,
 *                                        "managed":BOOL[,"partition_count":N,
 *                                        "rf":N,"config":"k=v,...","held":[...]],
 *                                        "deleting":BOOL}
 *   P/brokers/topics/NAME/partitions/N/state
 *                                       {"controller_epoch":E,"leader":ID|-1,
 *                                        "version":1,"leader_epoch":N,"isr":[...],
 *                                        "elr":[...],"partition_epoch":N}
 *
 * (P/controller, the election key, is ha.h's.) The store remembers the
 * mod_revision of every key it read or wrote. krep_estore_save() writes
 * only what changed, in transactions that each compare P/controller's
 * create_revision with the caller's (a controller that lost its election
 * writes nothing) and every written or deleted key's mod_revision with the
 * one remembered (compare-and-set: a key somebody else changed fails the
 * write). A partition's "controller_epoch" is the epoch of the controller
 * that last changed it.
 */
#ifndef KREP_AGENT_ETCD_STORE_H
#define KREP_AGENT_ETCD_STORE_H

#include "etcd.h"
#include "state.h"

struct krep_estore;

/* @prefix: "/krep/NAME" (no trailing '/'); @fence_key: P/controller. */
struct krep_estore *krep_estore_new(struct krep_etcd *e, const char *prefix);
void krep_estore_free(struct krep_estore *s);

/*
 * Read everything under the prefix into @st (remembering the revisions).
 * Returns 0 (an empty store gives an empty @st, controller epoch 0), or
 * -errno with the reason (the key and what is wrong with it) in @err.
 */
int krep_estore_load(struct krep_estore *s, struct krep_state *st, char *err,
		     size_t errlen);

/*
 * Write @st's changes since the last load or save, fenced by
 * @fence_key's create_revision == @fence_rev. Returns 0 (also when a
 * transaction's answer was lost but its keys read back show it applied:
 * krep_etcd_note()); -ESTALE when a compare failed (another controller was
 * elected, or changed a key under us: nothing of that transaction was
 * written); another -errno (etcd unreachable, ...) with the reason in
 * @err; -ETIMEDOUT: a transaction's outcome is unknown (the store keeps
 * the revisions it knew: if it was applied, the next save's compares
 * fail).
 */
int krep_estore_save(struct krep_estore *s, const struct krep_state *st,
		     const char *fence_key, int64_t fence_rev, char *err,
		     size_t errlen);

/* The JSON value of a partition's state key (for the unit tests). */
char *krep_estore_part_json(const struct krep_state_part *p, uint32_t epoch);
/* Parse it back into @p's leader, epochs, ISR and ELR. */
int krep_estore_part_parse(const char *json, struct krep_state_part *p,
			   uint32_t *epoch, const char **why);

#endif
