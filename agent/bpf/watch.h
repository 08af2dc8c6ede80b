/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What watch.bpf.c and krepctl watch (watch.c) share: the layout of the
 * krep:* tracepoint records and of the BPF maps.
 *
 * krep.ko is built out of tree without vmlinux, so it has no BTF and the
 * tracepoint records cannot be relocated (CO-RE): they are declared here
 * by hand to match /sys/kernel/tracing/events/krep/<event>/format, which
 * watch.c checks field by field before it loads anything. Every krep event
 * starts with the same four fields (kmod/trace.h, KREP_TP_PART_FIELDS).
 */
#ifndef KREP_AGENT_BPF_WATCH_H
#define KREP_AGENT_BPF_WATCH_H

#include <linux/types.h>

/* a topic name is 1..249 characters: with its NUL, rounded up */
#define KREP_WATCH_TOPIC_MAX	256
/*
 * Commit-latency buckets, in microseconds: bucket 0 holds 0..1 us, bucket
 * b > 0 holds (2^(b-1), 2^b] us, the last one everything above.
 */
#define KREP_WATCH_BUCKETS	32

/* The fields every krep:* record starts with. */
struct krep_tp_part {
	__u16 common_type;
	__u8 common_flags;
	__u8 common_preempt_count;
	__s32 common_pid;
	__u32 netns;		/* the namespace's inode number */
	__u32 pad0;
	__s64 broker;
	__u32 topic;		/* __data_loc: length << 16 | offset */
	__u32 partition;
};

/* krep_hw_advance */
struct krep_tp_hw_advance {
	struct krep_tp_part p;
	__u64 old_hw;
	__u64 new_hw;
	__u32 leader_epoch;
	__u32 isr_size;
	__s64 oldest_append_ns;	/* ktime_get_ns() of the oldest batch, or -1 */
};

/* krep_leo_update, krep_lso_update, krep_log_start_update, krep_truncate */
struct krep_tp_offset {
	struct krep_tp_part p;
	__s64 replica;
	__u64 old_val;
	__u64 new_val;
};

/* krep_isr_shrink, krep_isr_expand */
struct krep_tp_isr {
	struct krep_tp_part p;
	__u32 follower;
	__u32 pad0;
	__s64 lag_offsets;
	__u64 lag_ms;
	__u32 isr_size;
	__u32 partition_epoch;
	__u32 reason;		/* __data_loc char[] */
};

/* krep_leader_change */
struct krep_tp_leader_change {
	struct krep_tp_part p;
	__s64 old_leader;
	__s64 new_leader;
	__u32 leader_epoch;
	__u8 role;
};

/* krep_produce */
struct krep_tp_produce {
	struct krep_tp_part p;
	__u64 base;
	__u32 count;
	__u32 bytes;
	__s16 acks;
	__s16 error;
};

/* Key of the "parts" hash map: one replica of one partition. */
struct krep_watch_key {
	__u32 netns;
	__u32 partition;
	char topic[KREP_WATCH_TOPIC_MAX];	/* NUL-padded */
};

/* Value of the "parts" hash map: what the tracepoints said since attach. */
struct krep_watch_val {
	__s64 broker;
	__u64 hw;		/* the last HW advance's new HW */
	__u64 leo;		/* the local replica's last LEO */
	__u32 leader_epoch;
	__u32 isr_size;		/* after the last HW advance or ISR change */
	__u64 hw_advances;
	__u64 isr_shrinks;
	__u64 isr_expands;
	__u64 leader_changes;
	__u64 truncates;
	__u64 produces;		/* PRODUCE requests */
	__u64 produce_records;	/* records appended by them */
	__u64 produce_errors;
	__u64 commits;		/* HW advances that carried a latency */
	__u64 lat[KREP_WATCH_BUCKETS];	/* commit latency, log2 us */
};

#endif
