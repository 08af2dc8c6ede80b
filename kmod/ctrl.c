// SPDX-License-Identifier: GPL-2.0
/*
 * krep: the controller's claim on a broker (see ctrl.h). The claim lives
 * in struct krep_net under cfg_lock; its epoch is also read without it.
 */
#include <net/netlink.h>

#include "krep.h"
#include "broker.h"
#include "ctrl.h"
#include "partition.h"

static bool lease_runs(const struct krep_ctrl *c, u64 now)
{
	return c->epoch && c->lease_ms && now - c->renewed_ms < c->lease_ms;
}

/**
 * krep_ctrl_check - may this claim be made now?
 * @kn: the broker, cfg_lock held
 * @c: the claim
 * @st: the refusal
 *
 * Return: 0, -EBUSY (another owner's lease runs) or -ESTALE (an epoch
 * older than the one it would replace).
 */
int krep_ctrl_check(struct krep_net *kn, const struct krep_ctrl_claim *c,
		    struct krep_status *st)
{
	const struct krep_ctrl *cur = &kn->ctrl;

	lockdep_assert_held(&kn->cfg_lock);
	if (cur->epoch && c->owner == cur->owner) {
		if (c->epoch < cur->epoch)
			return krep_fail(st, KREP_KERR_STALE_CONTROLLER_EPOCH,
					 -ESTALE, "controller epoch older than its own claim");
		return 0;
	}
	if (lease_runs(cur, krep_now_ms()))
		return krep_fail(st, KREP_KERR_NOT_CONTROLLER, -EBUSY,
				 "another controller's lease on this broker runs");
	if (c->epoch <= cur->epoch)
		return krep_fail(st, KREP_KERR_STALE_CONTROLLER_EPOCH, -ESTALE,
				 "a new controller needs a higher epoch");
	return 0;
}

/* make a checked claim; cfg_lock held */
void krep_ctrl_apply(struct krep_net *kn, const struct krep_ctrl_claim *c)
{
	lockdep_assert_held(&kn->cfg_lock);
	kn->ctrl.owner = c->owner;
	kn->ctrl.lease_ms = c->lease_ms;
	kn->ctrl.renewed_ms = krep_now_ms();
	WRITE_ONCE(kn->ctrl.epoch, c->epoch);
}

/* BROKER_GET: the claim, when one was made; cfg_lock held */
int krep_ctrl_fill(struct krep_net *kn, struct sk_buff *skb)
{
	const struct krep_ctrl *c = &kn->ctrl;
	struct nlattr *nest;

	lockdep_assert_held(&kn->cfg_lock);
	if (!c->epoch)
		return 0;
	nest = nla_nest_start(skb, KREP_A_CONTROLLER);
	if (!nest ||
	    nla_put_u32(skb, KREP_A_CTRL_EPOCH, c->epoch) ||
	    nla_put_u64_64bit(skb, KREP_A_CTRL_OWNER, c->owner,
			      KREP_A_CTRL_PAD) ||
	    nla_put_u32(skb, KREP_A_CTRL_LEASE_MS, c->lease_ms) ||
	    nla_put_u64_64bit(skb, KREP_A_CTRL_AGE_MS,
			      krep_now_ms() - c->renewed_ms, KREP_A_CTRL_PAD))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

/* LEADER_AND_ISR must come from the controller holding the claim */
int krep_ctrl_check_epoch(struct krep_net *kn, u32 epoch,
			  struct krep_status *st)
{
	u32 cur = krep_ctrl_epoch(kn);

	if (cur && epoch < cur)
		return krep_fail(st, KREP_KERR_STALE_CONTROLLER_EPOCH, -ESTALE,
				 "controller epoch older than the broker's controller");
	if (!cur || epoch != cur)
		return krep_fail(st, KREP_KERR_NOT_CONTROLLER, -EPERM,
				 "no controller claim with this epoch");
	return 0;
}
