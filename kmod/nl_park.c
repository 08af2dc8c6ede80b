// SPDX-License-Identifier: GPL-2.0
/*
 * krep: netlink requests that wait, answered from a work item.
 *
 * An acks=all PRODUCE waits for the ISR, a FETCH for records or HW, a
 * DELETE_RECORDS for the followers' log start: up to 30 s each. A generic
 * netlink handler runs under genetlink's cb_lock, held for reading, which
 * registering or removing any family on the host takes for writing: a
 * handler that slept that long would stall them all. So the handler does
 * at once what it can (checks, the append, the new log start), reserves
 * a slot and parks the wait here, and returns -EINTR: netlink then sends
 * no ack, as after a dump's start. The parked request holds the request
 * skb (its header: portid, sequence, flags) and the sender's socket. A
 * work item looks again when the partition's wait queue wakes it, every
 * @poll when the request needs it, and at the deadline, and sends what
 * the handler would have sent: the reply and, when the request asked for
 * one (NLM_F_ACK), the ack after it; or an error ack with the extack
 * message and Kafka's code in its cookie (krep_nl_status()).
 *
 * Lifetime: a parked request holds a reference on its topic (so on its
 * partition and wait queue), on the request skb and on the sending
 * socket. The skb's owner is the namespace's kernel genetlink socket,
 * which genetlink's pernet exit closes; this file's pernet exit runs
 * before it (genetlink registered at boot) and drops the namespace's
 * parked requests unanswered. At module unload krep_broker_shutdown()
 * has made every wait answerable already; krep_nlpark_exit(), once the
 * family is gone (so that no handler can still reserve or park), drops
 * what is left.
 *
 * A namespace keeps at most KREP_NL_PARK_MAX of them: a request that
 * would wait past that is refused with EBUSY.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/sock.h>

#include "krep.h"
#include "net.h"
#include "netlink.h"
#include "partition.h"
#include "topic.h"
#include "nl_park.h"

struct nlpark_net {
	spinlock_t lock;		/* guards all below */
	struct list_head parks;
	unsigned int n;			/* parked and reserved */
	bool closed;			/* the namespace or the module goes */
};

static unsigned int nlpark_net_id;

static struct nlpark_net *park_net(struct genl_info *info)
{
	return net_generic(genl_info_net(info), nlpark_net_id);
}

/**
 * krep_nlpark_reserve - a slot for a request that will wait
 * @info: the request
 *
 * Before the handler changes anything (an append, a new log start), so
 * that it is not refused once it has.
 *
 * Return: 0, or -EBUSY with an extack message.
 */
int krep_nlpark_reserve(struct genl_info *info)
{
	struct nlpark_net *pn = park_net(info);
	int err = 0;

	spin_lock(&pn->lock);
	if (pn->closed)
		err = -ESHUTDOWN;
	else if (pn->n >= KREP_NL_PARK_MAX)
		err = -EBUSY;
	else
		pn->n++;
	spin_unlock(&pn->lock);
	if (err == -EBUSY)
		NL_SET_ERR_MSG(info->extack,
			       "too many netlink requests waiting in this namespace");
	else if (err)
		NL_SET_ERR_MSG(info->extack, "broker shutting down");
	return err;
}

/* give back a slot that krep_nlpark_start() will not use */
void krep_nlpark_unreserve(struct genl_info *info)
{
	struct nlpark_net *pn = park_net(info);

	spin_lock(&pn->lock);
	pn->n--;
	spin_unlock(&pn->lock);
}

static void park_free(struct krep_nlpark *np)
{
	krep_topic_put(np->t);
	sock_put(NETLINK_CB(np->req).sk);
	kfree_skb(np->req);
	kfree(np);
}

/* the answer the handler would have sent: @reply, or the error @st says */
static void answer(struct krep_nlpark *np, struct sk_buff *reply,
		   const struct krep_status *st)
{
	struct nlmsghdr *nlh = np->info.nlhdr;
	int err;

	if (IS_ERR(reply)) {
		err = krep_nl_status(&np->info, PTR_ERR(reply), st);
		netlink_ack(np->req, nlh, err, &np->ext);
		return;
	}
	/* the sender may be gone: nothing to tell then */
	if (!genlmsg_reply(reply, &np->info) && (nlh->nlmsg_flags & NLM_F_ACK))
		netlink_ack(np->req, nlh, 0, NULL);
}

static void rearm(struct krep_nlpark *np)
{
	unsigned long now = jiffies, at = np->deadline;

	if (np->poll && time_before(now + np->poll, at))
		at = now + np->poll;
	/* when a wake-up has queued it meanwhile, that run comes first */
	queue_delayed_work(krep_wq, &np->work,
			   time_after(at, now) ? at - now : 0);
}

static void park_run(struct work_struct *work)
{
	struct krep_nlpark *np = container_of(to_delayed_work(work),
					      struct krep_nlpark, work);
	struct nlpark_net *pn = park_net(&np->info);
	struct krep_status st = {};
	struct sk_buff *reply;
	bool late;

	if (READ_ONCE(np->dropped))
		return;
	late = !time_before(jiffies, np->deadline);
	reply = np->step(np, late, &st);
	if (!reply && !late) {
		rearm(np);
		return;
	}
	if (WARN_ON_ONCE(!reply))	/* a step answers at the deadline */
		reply = ERR_PTR(krep_fail(&st, KREP_KERR_UNKNOWN_SERVER_ERROR,
					  -EIO, "no answer at the deadline"));
	spin_lock(&pn->lock);
	if (np->dropped) {
		/* the namespace goes: it frees @np once this returns */
		spin_unlock(&pn->lock);
		if (!IS_ERR(reply))
			kfree_skb(reply);
		return;
	}
	list_del(&np->node);
	pn->n--;
	spin_unlock(&pn->lock);
	remove_wait_queue(np->head, &np->wq);
	/* a wake-up since the step may have queued it again */
	cancel_delayed_work(&np->work);
	answer(np, reply, &st);
	park_free(np);
}

static int park_wake(wait_queue_entry_t *wq, unsigned int mode, int flags,
		     void *key)
{
	struct krep_nlpark *np = container_of(wq, struct krep_nlpark, wq);
	const u64 *hw = key;

	/* producers wake only for the HW move that commits their record */
	if (np->hw_keyed && hw && *hw <= np->hw_above)
		return 0;
	mod_delayed_work(krep_wq, &np->work, 0);
	return 0;
}

/**
 * krep_nlpark_start - park a request that krep_nlpark_reserve() made room for
 * @np: in the handler's struct, zeroed, its op's fields (and @hw_keyed,
 *	@hw_above) set
 * @skb: the request
 * @info: its genetlink info
 * @t: the topic, a reference that @np takes over
 * @p: the partition, of @t
 * @head: the wait queue whose wake-ups may make it answerable
 * @wait_ms: the deadline, from now
 * @poll_ms: look again this often even with no wake-up (0: never)
 * @step: what looks and answers
 *
 * Return: -EINTR, which the handler returns (@np, @t and the slot are
 * taken); or -ESHUTDOWN when the module goes (nothing taken: the handler
 * frees @np, drops @t and answers).
 */
int krep_nlpark_start(struct krep_nlpark *np, struct sk_buff *skb,
		      struct genl_info *info, struct krep_topic *t,
		      struct krep_partition *p, wait_queue_head_t *head,
		      u32 wait_ms, u32 poll_ms, krep_nlpark_step_t step)
{
	struct nlpark_net *pn = park_net(info);

	np->info = *info;
	np->info.attrs = NULL;		/* freed once the handler returns */
	np->info.extack = &np->ext;
	np->t = t;
	np->p = p;
	np->head = head;
	np->step = step;
	np->deadline = jiffies + msecs_to_jiffies(wait_ms);
	np->poll = msecs_to_jiffies(poll_ms);
	INIT_DELAYED_WORK(&np->work, park_run);
	init_waitqueue_func_entry(&np->wq, park_wake);

	spin_lock(&pn->lock);
	if (pn->closed) {
		pn->n--;
		spin_unlock(&pn->lock);
		return -ESHUTDOWN;
	}
	np->req = skb_get(skb);
	sock_hold(NETLINK_CB(skb).sk);	/* the sender: netlink_ack() reads it */
	list_add_tail(&np->node, &pn->parks);
	add_wait_queue(head, &np->wq);
	/* one look now: a wake-up before add_wait_queue() was missed */
	queue_delayed_work(krep_wq, &np->work, 0);
	spin_unlock(&pn->lock);
	return -EINTR;
}

static void drop_all(struct nlpark_net *pn)
{
	struct krep_nlpark *np, *tmp;
	LIST_HEAD(dead);

	spin_lock(&pn->lock);
	pn->closed = true;
	list_for_each_entry(np, &pn->parks, node)
		WRITE_ONCE(np->dropped, true);
	list_splice_init(&pn->parks, &dead);
	spin_unlock(&pn->lock);
	list_for_each_entry_safe(np, tmp, &dead, node) {
		remove_wait_queue(np->head, &np->wq);
		cancel_delayed_work_sync(&np->work);
		park_free(np);
	}
}

static int __net_init nlpark_net_init(struct net *net)
{
	struct nlpark_net *pn = net_generic(net, nlpark_net_id);

	spin_lock_init(&pn->lock);
	INIT_LIST_HEAD(&pn->parks);
	return 0;
}

static void __net_exit nlpark_net_exit(struct net *net)
{
	drop_all(net_generic(net, nlpark_net_id));
}

static struct pernet_operations nlpark_net_ops = {
	.init = nlpark_net_init,
	.exit = nlpark_net_exit,
	.id = &nlpark_net_id,
	.size = sizeof(struct nlpark_net),
};

int __init krep_nlpark_init(void)
{
	return register_pernet_subsys(&nlpark_net_ops);
}

/* module unload, after the family went: the exit of every namespace */
void krep_nlpark_exit(void)
{
	unregister_pernet_subsys(&nlpark_net_ops);
}
