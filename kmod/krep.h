/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: module-wide declarations shared by every file.
 */
#ifndef _KREP_KREP_H
#define _KREP_KREP_H

#include <linux/atomic.h>
#include <linux/gfp.h>
#include <linux/overflow.h>
#include <linux/printk.h>
#include <linux/slab.h>

/*
 * Memory whose size a peer, a Kafka client or a netlink caller chooses
 * (frames, requests, log pages and their arrays): charged to a memory
 * cgroup (the caller's; in work, the broker's, krep_memcg_enter()), and
 * failing, with no OOM kill and no allocation warning, when that cgroup
 * is at memory.max: the request gets an error, not a process its death.
 */
#define KREP_GFP_DATA	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | \
			 __GFP_NOWARN)

/*
 * What a request needs only until it is answered (the request itself,
 * its parse, its response, its park): charged the same way while the
 * cgroup has room, else taken uncharged, so that at memory.max a request
 * is still answered (its append refused) rather than its connection
 * dropped. The caps on request sizes and connections bound what goes
 * uncharged, as they bounded all of it before memory cgroups.
 */
static inline void *krep_kvmalloc_brief(size_t size, gfp_t zero)
{
	return kvmalloc(size, KREP_GFP_DATA | zero) ?:
	       kvmalloc(size, GFP_KERNEL | zero);
}

static inline void *krep_kvcalloc_brief(size_t n, size_t size)
{
	size_t bytes;

	if (unlikely(check_mul_overflow(n, size, &bytes)))
		return NULL;
	return krep_kvmalloc_brief(bytes, __GFP_ZERO);
}

static inline void *krep_kzalloc_brief(size_t size)
{
	return kzalloc(size, KREP_GFP_DATA) ?: kzalloc(size, GFP_KERNEL);
}

/*
 * Object accounting: every object type the module allocates is counted
 * here, and module exit reports "krep: leak" for any count that is not
 * back at zero, so the selftests can prove rmmod leaves nothing behind.
 */
enum krep_obj {
	KREP_OBJ_BROKER_CFG,
	KREP_OBJ_TOPIC_SPEC,
	KREP_OBJ_TOPIC,
	KREP_OBJ_PARTITION,
	KREP_OBJ_SEGMENT,
	KREP_OBJ_CONN,
	KREP_OBJ_DELAYED_FETCH,
	__KREP_OBJ_MAX
};

extern atomic_t krep_obj_count[__KREP_OBJ_MAX];

static inline void krep_obj_get(enum krep_obj type)
{
	atomic_inc(&krep_obj_count[type]);
}

static inline void krep_obj_put(enum krep_obj type)
{
	atomic_dec(&krep_obj_count[type]);
}

/* milliseconds of the monotonic clock (partition.c) */
u64 krep_now_ms(void);

/* set once at module exit, before waiters are woken for the last time */
extern bool krep_exiting_flag;

static inline bool krep_exiting(void)
{
	return READ_ONCE(krep_exiting_flag);
}

#endif /* _KREP_KREP_H */
