/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: the leader's side of replication: serving followers' FETCHes,
 * parked until there is something to send.
 */
#ifndef _KREP_REPLICA_H
#define _KREP_REPLICA_H

#include <linux/types.h>

struct krep_conn;

int krep_replica_serve(struct krep_conn *c, u32 corr, u8 **payload, u32 len,
		       const char **why);
void krep_replica_cancel_delayed(struct krep_conn *c);
void krep_replica_conn_init(struct krep_conn *c);
void krep_replica_hello_deadline(struct krep_conn *c);

#define KREP_HELLO_TIMEOUT_MS	5000

#endif /* _KREP_REPLICA_H */
