/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: netlink requests that wait, answered from a work item (see
 * nl_park.c).
 */
#ifndef _KREP_NL_PARK_H
#define _KREP_NL_PARK_H

#include <linux/skbuff.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <net/genetlink.h>

struct krep_partition;
struct krep_status;
struct krep_topic;

/* at most this many parked requests per network namespace */
#define KREP_NL_PARK_MAX	1024

struct krep_nlpark;

/*
 * Try to answer: the reply, NULL to wait on (never when @late: the
 * deadline has passed), or an ERR_PTR with @st filled in.
 */
typedef struct sk_buff *(*krep_nlpark_step_t)(struct krep_nlpark *np,
					      bool late,
					      struct krep_status *st);

/*
 * A parked request, inside the handler's own struct (which it allocates
 * with kzalloc and whose first member it is: krep_nlpark_start() owns and
 * kfree()s it from then on).
 */
struct krep_nlpark {
	struct list_head node;		/* in the namespace's list */
	bool dropped;			/* the namespace took it off the list */
	struct sk_buff *req;		/* the request, held for its header */
	struct genl_info info;		/* portid, seq, header, net; no attrs */
	struct netlink_ext_ack ext;	/* an error answer's message, code */
	struct krep_topic *t;		/* held until the answer */
	struct krep_partition *p;
	wait_queue_head_t *head;	/* woken when it may be answerable */
	wait_queue_entry_t wq;
	struct delayed_work work;	/* runs at a wake-up and the deadline */
	unsigned long deadline;
	unsigned long poll;		/* also look this often (0: no) */
	krep_nlpark_step_t step;
	/*
	 * set by the handler for a wait on commit_wq: a HW move (whose
	 * wake-up's key is the new HW) wakes it only past @hw_above
	 */
	bool hw_keyed;
	u64 hw_above;
};

int krep_nlpark_reserve(struct genl_info *info);
void krep_nlpark_unreserve(struct genl_info *info);
int krep_nlpark_start(struct krep_nlpark *np, struct sk_buff *skb,
		      struct genl_info *info, struct krep_topic *t,
		      struct krep_partition *p, wait_queue_head_t *head,
		      u32 wait_ms, u32 poll_ms, krep_nlpark_step_t step);
int krep_nlpark_init(void);
void krep_nlpark_exit(void);

#endif /* _KREP_NL_PARK_H */
