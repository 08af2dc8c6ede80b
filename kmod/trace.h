/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep tracepoints (system "krep"). Every event records the network
 * namespace's inode number and the broker id, so a trace of several
 * brokers on one kernel can be told apart, then plain integers and the
 * topic name: bpftrace needs nothing but tracefs.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM krep

#if !defined(_KREP_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KREP_TRACE_H

#include <linux/tracepoint.h>
#include <net/net_namespace.h>

#include "broker.h"
#include "partition.h"
#include "topic.h"

#define KREP_TP_PART_FIELDS						\
	__field(unsigned int, netns)					\
	__field(s64, broker)						\
	__string(topic, p->topic->name)					\
	__field(u32, partition)

#define KREP_TP_PART_ASSIGN						\
	__entry->netns = p->topic->kn->net->ns.inum;			\
	__entry->broker = READ_ONCE(p->topic->kn->broker_id);		\
	__assign_str(topic, p->topic->name);				\
	__entry->partition = p->index

TRACE_EVENT(krep_hw_advance,
	TP_PROTO(const struct krep_partition *p, u64 old_hw, u64 new_hw,
		 s64 oldest_append_ns),
	TP_ARGS(p, old_hw, new_hw, oldest_append_ns),
	TP_STRUCT__entry(
		KREP_TP_PART_FIELDS
		__field(u64, old_hw)
		__field(u64, new_hw)
		__field(u32, leader_epoch)
		__field(u32, isr_size)
		__field(s64, oldest_append_ns)
	),
	TP_fast_assign(
		KREP_TP_PART_ASSIGN;
		__entry->old_hw = old_hw;
		__entry->new_hw = new_hw;
		__entry->leader_epoch = p->leader_epoch;
		__entry->isr_size = krep_partition_isr_size(p);
		__entry->oldest_append_ns = oldest_append_ns;
	),
	TP_printk("netns=%u broker=%lld %s-%u hw %llu -> %llu epoch=%u isr=%u oldest_append_ns=%lld",
		  __entry->netns, __entry->broker, __get_str(topic),
		  __entry->partition, __entry->old_hw, __entry->new_hw,
		  __entry->leader_epoch, __entry->isr_size,
		  __entry->oldest_append_ns)
);

DECLARE_EVENT_CLASS(krep_offset_class,
	TP_PROTO(const struct krep_partition *p, s64 replica, u64 old_val,
		 u64 new_val),
	TP_ARGS(p, replica, old_val, new_val),
	TP_STRUCT__entry(
		KREP_TP_PART_FIELDS
		__field(s64, replica)
		__field(u64, old_val)
		__field(u64, new_val)
	),
	TP_fast_assign(
		KREP_TP_PART_ASSIGN;
		__entry->replica = replica;
		__entry->old_val = old_val;
		__entry->new_val = new_val;
	),
	TP_printk("netns=%u broker=%lld %s-%u replica=%lld %llu -> %llu",
		  __entry->netns, __entry->broker, __get_str(topic),
		  __entry->partition, __entry->replica, __entry->old_val,
		  __entry->new_val)
);

/* a replica's LEO moved: the local one on append, a follower's on FETCH */
DEFINE_EVENT(krep_offset_class, krep_leo_update,
	TP_PROTO(const struct krep_partition *p, s64 replica, u64 old_val,
		 u64 new_val),
	TP_ARGS(p, replica, old_val, new_val));

DEFINE_EVENT(krep_offset_class, krep_lso_update,
	TP_PROTO(const struct krep_partition *p, s64 replica, u64 old_val,
		 u64 new_val),
	TP_ARGS(p, replica, old_val, new_val));

DEFINE_EVENT(krep_offset_class, krep_log_start_update,
	TP_PROTO(const struct krep_partition *p, s64 replica, u64 old_val,
		 u64 new_val),
	TP_ARGS(p, replica, old_val, new_val));

DEFINE_EVENT(krep_offset_class, krep_truncate,
	TP_PROTO(const struct krep_partition *p, s64 replica, u64 old_val,
		 u64 new_val),
	TP_ARGS(p, replica, old_val, new_val));

/*
 * the producer state is rebuilt by reading the log's batches, from
 * old_val (the log start) to new_val (the log end)
 */
DEFINE_EVENT(krep_offset_class, krep_producer_rebuild,
	TP_PROTO(const struct krep_partition *p, s64 replica, u64 old_val,
		 u64 new_val),
	TP_ARGS(p, replica, old_val, new_val));

DECLARE_EVENT_CLASS(krep_isr_class,
	TP_PROTO(const struct krep_partition *p, u32 follower, s64 lag_offsets,
		 u64 lag_ms, const char *reason),
	TP_ARGS(p, follower, lag_offsets, lag_ms, reason),
	TP_STRUCT__entry(
		KREP_TP_PART_FIELDS
		__field(u32, follower)
		__field(s64, lag_offsets)
		__field(u64, lag_ms)
		__field(u32, isr_size)
		__field(u32, partition_epoch)
		__string(reason, reason)
	),
	TP_fast_assign(
		KREP_TP_PART_ASSIGN;
		__entry->follower = follower;
		__entry->lag_offsets = lag_offsets;
		__entry->lag_ms = lag_ms;
		__entry->isr_size = krep_partition_isr_size(p);
		__entry->partition_epoch = p->partition_epoch;
		__assign_str(reason, reason);
	),
	TP_printk("netns=%u broker=%lld %s-%u follower=%u lag=%lld offsets %llu ms isr=%u pepoch=%u reason=%s",
		  __entry->netns, __entry->broker, __get_str(topic),
		  __entry->partition, __entry->follower, __entry->lag_offsets,
		  __entry->lag_ms, __entry->isr_size, __entry->partition_epoch,
		  __get_str(reason))
);

DEFINE_EVENT(krep_isr_class, krep_isr_shrink,
	TP_PROTO(const struct krep_partition *p, u32 follower, s64 lag_offsets,
		 u64 lag_ms, const char *reason),
	TP_ARGS(p, follower, lag_offsets, lag_ms, reason));

DEFINE_EVENT(krep_isr_class, krep_isr_expand,
	TP_PROTO(const struct krep_partition *p, u32 follower, s64 lag_offsets,
		 u64 lag_ms, const char *reason),
	TP_ARGS(p, follower, lag_offsets, lag_ms, reason));

TRACE_EVENT(krep_leader_change,
	TP_PROTO(const struct krep_partition *p, s64 old_leader),
	TP_ARGS(p, old_leader),
	TP_STRUCT__entry(
		KREP_TP_PART_FIELDS
		__field(s64, old_leader)
		__field(s64, new_leader)
		__field(u32, leader_epoch)
		__field(u8, role)
	),
	TP_fast_assign(
		KREP_TP_PART_ASSIGN;
		__entry->old_leader = old_leader;
		__entry->new_leader = p->leader;
		__entry->leader_epoch = p->leader_epoch;
		__entry->role = p->role;
	),
	TP_printk("netns=%u broker=%lld %s-%u leader %lld -> %lld epoch=%u role=%u",
		  __entry->netns, __entry->broker, __get_str(topic),
		  __entry->partition, __entry->old_leader, __entry->new_leader,
		  __entry->leader_epoch, __entry->role)
);

TRACE_EVENT(krep_produce,
	TP_PROTO(const struct krep_partition *p, u64 base, u32 count, u32 bytes,
		 s16 acks, s16 error),
	TP_ARGS(p, base, count, bytes, acks, error),
	TP_STRUCT__entry(
		KREP_TP_PART_FIELDS
		__field(u64, base)
		__field(u32, count)
		__field(u32, bytes)
		__field(s16, acks)
		__field(s16, error)
	),
	TP_fast_assign(
		KREP_TP_PART_ASSIGN;
		__entry->base = base;
		__entry->count = count;
		__entry->bytes = bytes;
		__entry->acks = acks;
		__entry->error = error;
	),
	TP_printk("netns=%u broker=%lld %s-%u base=%llu count=%u bytes=%u acks=%d error=%d",
		  __entry->netns, __entry->broker, __get_str(topic),
		  __entry->partition, __entry->base, __entry->count,
		  __entry->bytes, __entry->acks, __entry->error)
);

TRACE_EVENT(krep_fetch,
	TP_PROTO(const struct krep_partition *p, s64 replica, u64 offset,
		 u32 bytes, s16 error),
	TP_ARGS(p, replica, offset, bytes, error),
	TP_STRUCT__entry(
		KREP_TP_PART_FIELDS
		__field(s64, replica)
		__field(u64, offset)
		__field(u32, bytes)
		__field(s16, error)
	),
	TP_fast_assign(
		KREP_TP_PART_ASSIGN;
		__entry->replica = replica;
		__entry->offset = offset;
		__entry->bytes = bytes;
		__entry->error = error;
	),
	TP_printk("netns=%u broker=%lld %s-%u replica=%lld offset=%llu bytes=%u error=%d",
		  __entry->netns, __entry->broker, __get_str(topic),
		  __entry->partition, __entry->replica, __entry->offset,
		  __entry->bytes, __entry->error)
);

/* a Kafka client's request, once answered, parked or refused */
TRACE_EVENT(krep_kafka_request,
	TP_PROTO(const struct krep_net *kn, s16 api_key, s16 api_version,
		 s32 correlation, u32 bytes, int err),
	TP_ARGS(kn, api_key, api_version, correlation, bytes, err),
	TP_STRUCT__entry(
		__field(unsigned int, netns)
		__field(s64, broker)
		__field(s16, api_key)
		__field(s16, api_version)
		__field(s32, correlation)
		__field(u32, bytes)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->netns = kn->net->ns.inum;
		__entry->broker = READ_ONCE(kn->broker_id);
		__entry->api_key = api_key;
		__entry->api_version = api_version;
		__entry->correlation = correlation;
		__entry->bytes = bytes;
		__entry->err = err;
	),
	TP_printk("netns=%u broker=%lld api=%d v%d correlation=%d bytes=%u err=%d",
		  __entry->netns, __entry->broker, __entry->api_key,
		  __entry->api_version, __entry->correlation, __entry->bytes,
		  __entry->err)
);

#endif /* _KREP_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
