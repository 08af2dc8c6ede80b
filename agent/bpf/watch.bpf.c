// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl watch: BPF programs on the krep:* tracepoints.
 *
 * Each program finds the partition's entry in the "parts" hash map (keyed
 * by namespace inode, topic and partition) and counts into it: HW
 * advances, ISR shrinks and expands, leader changes, truncations, produce
 * requests, and the commit latency (from a batch's append on the leader to
 * the HW passing it: krep_hw_advance's oldest_append_ns) in log2
 * microsecond buckets, per partition and in the global "hist" array.
 * filter_netns, set before loading, keeps one broker's events (0: all).
 *
 * The tracepoint records are declared by hand in watch.h: krep.ko has no
 * BTF to relocate against. Built with clang -target bpf, loaded through
 * the skeleton bpftool generates (watch.skel.h).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "watch.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 filter_netns;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct krep_watch_key);
	__type(value, struct krep_watch_val);
} parts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KREP_WATCH_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

/* per-CPU room for building a key: too big for the 512-byte stack */
struct scratch {
	struct krep_watch_key key;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* never written: the initial value of a new "parts" entry */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct krep_watch_val);
} zero SEC(".maps");

/* The entry of the event's partition, created on first sight; NULL when
 * the event is filtered out or the map is full.
 */
static __always_inline struct krep_watch_val *
part_get(const struct krep_tp_part *tp)
{
	struct krep_watch_val *v, *z;
	struct scratch *s;
	__u32 idx = 0;

	if (filter_netns && tp->netns != filter_netns)
		return NULL;
	s = bpf_map_lookup_elem(&scratch, &idx);
	z = bpf_map_lookup_elem(&zero, &idx);
	if (!s || !z)
		return NULL;
	__builtin_memset(&s->key, 0, sizeof(s->key));
	s->key.netns = tp->netns;
	s->key.partition = tp->partition;
	bpf_probe_read_kernel_str(s->key.topic, sizeof(s->key.topic),
				  (const char *)tp + (tp->topic & 0xffff));
	v = bpf_map_lookup_elem(&parts, &s->key);
	if (!v) {
		bpf_map_update_elem(&parts, &s->key, z, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&parts, &s->key);
		if (!v)
			return NULL;
	}
	v->broker = tp->broker;
	return v;
}

static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xffffffffULL) << 5;
	v >>= shift;
	r |= shift;
	shift = (v > 0xffff) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xff) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xf) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (v >> 1);
	return r;
}

/* bucket 0: 0..1 us; bucket b: (2^(b-1), 2^b] us */
static __always_inline __u32 bucket_of(__u64 us)
{
	__u32 b;

	if (us <= 1)
		return 0;
	b = log2_u64(us - 1) + 1;
	return b < KREP_WATCH_BUCKETS ? b : KREP_WATCH_BUCKETS - 1;
}

SEC("tracepoint/krep/krep_hw_advance")
int krep_hw_advance(struct krep_tp_hw_advance *ctx)
{
	struct krep_watch_val *v = part_get(&ctx->p);
	__u64 *cnt, now, us;
	__u32 b;

	if (!v)
		return 0;
	v->hw = ctx->new_hw;
	v->leader_epoch = ctx->leader_epoch;
	v->isr_size = ctx->isr_size;
	__sync_fetch_and_add(&v->hw_advances, 1);
	if (ctx->oldest_append_ns <= 0)
		return 0;
	now = bpf_ktime_get_ns();
	if (now < (__u64)ctx->oldest_append_ns)
		return 0;
	us = (now - (__u64)ctx->oldest_append_ns) / 1000;
	b = bucket_of(us);
	__sync_fetch_and_add(&v->commits, 1);
	__sync_fetch_and_add(&v->lat[b & (KREP_WATCH_BUCKETS - 1)], 1);
	cnt = bpf_map_lookup_elem(&hist, &b);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
	return 0;
}

SEC("tracepoint/krep/krep_isr_shrink")
int krep_isr_shrink(struct krep_tp_isr *ctx)
{
	struct krep_watch_val *v = part_get(&ctx->p);

	if (!v)
		return 0;
	v->isr_size = ctx->isr_size;
	__sync_fetch_and_add(&v->isr_shrinks, 1);
	return 0;
}

SEC("tracepoint/krep/krep_isr_expand")
int krep_isr_expand(struct krep_tp_isr *ctx)
{
	struct krep_watch_val *v = part_get(&ctx->p);

	if (!v)
		return 0;
	v->isr_size = ctx->isr_size;
	__sync_fetch_and_add(&v->isr_expands, 1);
	return 0;
}

/* the local replica's LEO only: a leader also traces its followers' */
SEC("tracepoint/krep/krep_leo_update")
int krep_leo_update(struct krep_tp_offset *ctx)
{
	struct krep_watch_val *v;

	if (ctx->replica != ctx->p.broker)
		return 0;
	v = part_get(&ctx->p);
	if (v)
		v->leo = ctx->new_val;
	return 0;
}

SEC("tracepoint/krep/krep_truncate")
int krep_truncate(struct krep_tp_offset *ctx)
{
	struct krep_watch_val *v = part_get(&ctx->p);

	if (!v)
		return 0;
	v->leo = ctx->new_val;
	__sync_fetch_and_add(&v->truncates, 1);
	return 0;
}

SEC("tracepoint/krep/krep_leader_change")
int krep_leader_change(struct krep_tp_leader_change *ctx)
{
	struct krep_watch_val *v = part_get(&ctx->p);

	if (!v)
		return 0;
	v->leader_epoch = ctx->leader_epoch;
	__sync_fetch_and_add(&v->leader_changes, 1);
	return 0;
}

SEC("tracepoint/krep/krep_produce")
int krep_produce(struct krep_tp_produce *ctx)
{
	struct krep_watch_val *v = part_get(&ctx->p);

	if (!v)
		return 0;
	__sync_fetch_and_add(&v->produces, 1);
	if (ctx->error)
		__sync_fetch_and_add(&v->produce_errors, 1);
	else
		__sync_fetch_and_add(&v->produce_records, ctx->count);
	return 0;
}
