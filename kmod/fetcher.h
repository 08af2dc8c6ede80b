/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: the follower's side of replication, one fetcher per leader.
 */
#ifndef _KREP_FETCHER_H
#define _KREP_FETCHER_H

#include <linux/types.h>

struct krep_conn;
struct krep_net;
struct krep_peer;
struct work_struct;

void krep_fetcher_work(struct work_struct *work);
void krep_fetcher_kick(struct krep_peer *peer);
void krep_fetcher_kick_all(struct krep_net *kn);
int krep_fetcher_rx_start(struct krep_conn *c, u32 corr, u32 len,
			  const char **why);
int krep_fetcher_rx(struct krep_conn *c, const char **why);
void krep_fetcher_rx_free(struct krep_conn *c);

#endif /* _KREP_FETCHER_H */
