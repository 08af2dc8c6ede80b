/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: the leader's side of replication: serving followers' FETCHes,
 * parked until there is something to send.
 */
#ifndef _KREP_REPLICA_H
#define _KREP_REPLICA_H

#include <linux/types.h>

struct krep_conn;

#define KREP_WAKE_SERVE_MAX	8

/*
 * The key of a wake-up of a partition's waitq, for the parked FETCHes:
 * an append's asks them to be handed to the waker (an acks=all producer,
 * which waits for them anyway) instead of to the fetch work, one wake-up
 * less per follower; a HW move's (@hw_only) is ignored by them, as HW
 * alone never completes a follower's FETCH (it learns HW with the next
 * records or at max wait, as in Kafka). A NULL key wakes them all.
 */
struct krep_wake_serve {
	bool hw_only;
	unsigned int n;
	struct krep_conn *conns[KREP_WAKE_SERVE_MAX];
};

void krep_replica_serve_woken(struct krep_wake_serve *ws);

int krep_replica_serve(struct krep_conn *c, u32 corr, u8 **payload, u32 len,
		       const char **why);
void krep_replica_cancel_delayed(struct krep_conn *c);
void krep_replica_conn_init(struct krep_conn *c);
void krep_replica_hello_deadline(struct krep_conn *c);

#endif /* _KREP_REPLICA_H */
