/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: the controller's claim on a broker (BROKER_SET KREP_A_CONTROLLER).
 *
 * One controller at a time holds a broker: it claims it with an epoch, an
 * owner id and a lease, and renews the lease while it lives. Another
 * owner is refused while the lease runs and needs a higher epoch after
 * it ran out, so a second controller cannot act beside a live one, and
 * LEADER_AND_ISR from an older controller is refused. Once any claim was
 * made, the broker's ISR changes are requests to the controller.
 */
#ifndef _KREP_CTRL_H
#define _KREP_CTRL_H

#include <linux/types.h>

#include "broker.h"

struct krep_status;
struct sk_buff;

struct krep_ctrl_claim {
	u32 epoch;
	u64 owner;
	u32 lease_ms;
};

/* the registered controller's epoch, 0 while there is none */
static inline u32 krep_ctrl_epoch(struct krep_net *kn)
{
	return READ_ONCE(kn->ctrl.epoch);
}

int krep_ctrl_check(struct krep_net *kn, const struct krep_ctrl_claim *c,
		    struct krep_status *st);
void krep_ctrl_apply(struct krep_net *kn, const struct krep_ctrl_claim *c);
int krep_ctrl_fill(struct krep_net *kn, struct sk_buff *skb);
int krep_ctrl_check_epoch(struct krep_net *kn, u32 epoch,
			  struct krep_status *st);

#endif /* _KREP_CTRL_H */
