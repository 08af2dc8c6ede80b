/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: module-wide declarations shared by every file.
 */
#ifndef _KREP_KREP_H
#define _KREP_KREP_H

#include <linux/atomic.h>
#include <linux/printk.h>

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

/* set once at module exit, before waiters are woken for the last time */
extern bool krep_exiting_flag;

static inline bool krep_exiting(void)
{
	return READ_ONCE(krep_exiting_flag);
}

#endif /* _KREP_KREP_H */
