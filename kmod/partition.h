/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: a partition's local replica: role, epochs, AR and ISR, the log,
 * the watermarks (LEO, HW, LSO, log start, LW), the leader's table of
 * remote replicas, transactions, and the waits on all of them.
 */
#ifndef _KREP_PARTITION_H
#define _KREP_PARTITION_H

#include <linux/bitmap.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/krep.h>

#include "epoch.h"
#include "log.h"
#include "producer.h"
#include "topic.h"

struct sk_buff;
struct krep_disklog;
struct krep_topic;

/* the outcome of a data-path call: Kafka's code and a reason for extack */
struct krep_status {
	s16 kerr;
	const char *why;
};

static inline int krep_fail(struct krep_status *st, s16 kerr, int err,
			    const char *why)
{
	st->kerr = kerr;
	st->why = why;
	return err;
}

/* what the leader knows of a follower; @leo is -1 while unknown */
struct krep_remote {
	s64 leo;
	u64 log_start;
	u64 last_fetch_ms;
	u64 last_caught_up_ms;
	u64 leo_at_last_fetch;
};

/* append times of batches not yet below HW, for commit latency */
#define KREP_PENDING_RING	256

struct krep_pending {
	u64 last_offset;
	s64 append_ns;
};

struct krep_partition {
	struct krep_topic *topic;	/* owner; it outlives us */
	u32 index;
	struct mutex lock;		/* guards all below */
	u8 role;			/* enum krep_role */
	bool dead;
	s64 leader;			/* broker id, -1 when none */
	u32 leader_epoch;
	u32 partition_epoch;
	u64 epoch_start_offset;
	unsigned int nreplicas;
	unsigned int self;		/* our index in replicas[] */
	u32 replicas[KREP_RF_MAX];	/* AR, preferred leader first */
	DECLARE_BITMAP(isr, KREP_RF_MAX);	/* committed */
	DECLARE_BITMAP(pending_isr, KREP_RF_MAX); /* asked of the controller */
	bool isr_pending;		/* an ALTER_ISR is in flight */
	/* fenced by the controller: not counted outside the ISR, not added */
	DECLARE_BITMAP(ineligible, KREP_RF_MAX);
	u64 isr_sent_ms;		/* when it was last sent */
	struct krep_epoch_cache epochs;
	struct krep_remote remotes[KREP_RF_MAX];
	struct krep_log log;
	struct krep_disklog *disk;	/* its files, with a log directory */
	u64 flushed;			/* synced to disk below this offset */
	bool disk_failed;		/* its files failed: no more appends */
	u64 flush_req;			/* flush.messages: sync up to here */
	u64 hw;
	u64 lso;
	u64 low_watermark;
	struct krep_producers producers; /* producer state (producer.c) */
	wait_queue_head_t waitq;	/* fetches waiting for records or HW */
	wait_queue_head_t commit_wq;	/* acks=all produces waiting for HW */
	unsigned int pend_head, pend_tail;
	struct krep_pending pending[KREP_PENDING_RING];
};

struct krep_fetch_req {
	u64 offset;
	u32 max_bytes;
	u32 max_wait_ms;
	u8 isolation;
	bool follower_read;		/* a follower may serve it */
	s64 leader_epoch;		/* the client's, or -1 */
	/* allocate the reply with room for @payload bytes of attributes */
	struct sk_buff *(*alloc_reply)(void *ctx, size_t payload);
	void *ctx;
};

/* one partition of a follower's FETCH, host order */
struct krep_fetch_part {
	u32 partition;
	u32 leader_epoch;
	u64 offset;
	s32 last_epoch;
	u64 log_start;
};

/* the leader's answer for one partition, besides the records */
struct krep_fetch_result {
	s16 error;
	u64 hw;
	u64 log_start;
	s32 div_epoch;			/* diverging epoch, or -1 */
	u64 div_end;			/* its end on the leader, or: */
#define KREP_NO_DIVERGENCE	((u64)-1)
	u32 partition_epoch;		/* the leader's, 0 when unknown */
	DECLARE_BITMAP(isr, KREP_RF_MAX);	/* its committed ISR */
};

/* what LEADER_AND_ISR says of one partition */
struct krep_lai {
	s64 leader;			/* -1: none */
	u32 leader_epoch;
	u32 partition_epoch;
	unsigned int nisr;
	u32 isr[KREP_RF_MAX];
	unsigned int nreplicas;		/* 0: AR not given */
	u32 replicas[KREP_RF_MAX];
	unsigned int ninel;		/* fenced replicas (within AR) */
	u32 inel[KREP_RF_MAX];
};

struct krep_partition *krep_partition_new(struct krep_topic *t, u32 index,
					  const u32 *replicas,
					  unsigned int nreplicas, u32 self_id,
					  bool leaderless);
void krep_partition_free(struct krep_partition *p);
void krep_partition_kill(struct krep_partition *p);
void krep_partition_wake(struct krep_partition *p);

/* where an append went: offsets and record count */
struct krep_append_result {
	u64 base;
	u64 last;
	u32 count;
	bool flush;			/* flush.messages: answer once synced */
};

/* a consumer read's watermarks */
struct krep_read_result {
	u64 hw;
	u64 lso;
	u64 log_start;
};

int krep_partition_append(struct krep_partition *p, const u8 *batch, u32 len,
			  s16 acks, s64 leader_epoch,
			  struct krep_append_result *res, struct krep_status *st);
/* copies the first @len bytes of a batch to @dst: 0 or a negative errno */
typedef int (*krep_copy_t)(void *dst, u32 len, void *arg);
int krep_partition_append_copy(struct krep_partition *p, u32 len,
			       krep_copy_t copy, void *arg, s16 acks,
			       s64 leader_epoch,
			       struct krep_append_result *res,
			       struct krep_status *st);
int krep_partition_commit_check(struct krep_partition *p, u64 last,
				struct krep_status *st);
int krep_partition_flush_check(struct krep_partition *p, u64 last,
			       struct krep_status *st);
bool krep_partition_flush_due(struct krep_partition *p);
void krep_partition_trace_produce(struct krep_partition *p,
				  const struct krep_append_result *res,
				  u32 len, s16 kerr);
long krep_partition_consumer_read(struct krep_partition *p,
				  const struct krep_fetch_req *req, bool first,
				  krep_log_frag_t emit, void *ctx,
				  struct krep_read_result *res,
				  struct krep_status *st);
struct sk_buff *krep_partition_fetch(struct krep_partition *p,
				     const struct krep_fetch_req *req,
				     struct krep_status *st);
bool krep_partition_fetch_ready(const struct krep_partition *p,
				const struct krep_fetch_req *req);
int krep_partition_list_offset(struct krep_partition *p, s64 ts, bool committed,
			       u64 *offset, s64 *found_ts,
			       struct krep_status *st);
int krep_partition_delete_records(struct krep_partition *p, u64 offset,
				  struct krep_status *st);
int krep_partition_delete_check(struct krep_partition *p, u64 offset,
				struct krep_status *st);
int krep_partition_txn(struct krep_partition *p, u64 pid, u16 pepoch, u8 op,
		       u32 timeout_ms, u64 *offset, struct krep_status *st);
int krep_partition_check_leader(struct krep_partition *p,
				struct krep_status *st);
int krep_partition_leader_append(struct krep_partition *p, const u8 *batch,
				 u32 len, u64 *base, struct krep_status *st);
int krep_partition_fill(struct krep_partition *p, struct sk_buff *skb);
int __krep_partition_fill(struct krep_partition *p, struct sk_buff *skb);

int krep_partition_follower_update(struct krep_partition *p, u32 replica_id,
				   const struct krep_fetch_part *fp);
long krep_partition_follower_read(struct krep_partition *p, u32 replica_id,
				  const struct krep_fetch_part *fp,
				  u32 max_bytes, bool first,
				  krep_log_frag_t emit, void *ctx,
				  struct krep_fetch_result *res);
bool krep_partition_fetch_state(struct krep_partition *p, u32 leader_id,
				struct krep_fetch_part *fp);
int krep_partition_rx_begin(struct krep_partition *p, u32 leader_id,
			    const struct krep_fetch_result *res, u32 len,
			    struct krep_log_rx *rx, u32 *epoch);
int krep_partition_rx_end(struct krep_partition *p, u32 leader_id, u32 epoch,
			  const struct krep_fetch_result *res,
			  struct krep_log_rx *rx);
void krep_partition_rx_cancel(struct krep_partition *p, struct krep_log_rx *rx);
int krep_partition_follower_apply(struct krep_partition *p, u32 leader_id,
				  const struct krep_fetch_result *res,
				  const u8 *records, u32 len);

unsigned int krep_partition_isr_size(const struct krep_partition *p);
void krep_partition_max_isr(const struct krep_partition *p,
			    unsigned long *isr);
void krep_partition_update_hw(struct krep_partition *p);
int krep_partition_replica_index(const struct krep_partition *p, u32 id);

/* role.c: what the controller says, and leader epochs */
int krep_partition_leader_and_isr(struct krep_partition *p,
				  const struct krep_lai *lai, s64 *follow,
				  struct krep_status *st);
int krep_partition_epoch_end(struct krep_partition *p, u32 epoch,
			     bool follower_read, s64 *found, u64 *end,
			     struct krep_status *st);
int krep_partition_kafka_epoch_end(struct krep_partition *p, s32 cur_epoch,
				   s32 epoch, s32 *found, s64 *end,
				   struct krep_status *st);
bool krep_partition_diverges(const struct krep_partition *p,
			     const struct krep_fetch_part *fp,
			     struct krep_fetch_result *res);
void krep_partition_truncate(struct krep_partition *p, u64 offset,
			     const char *why);
void krep_partition_follower_diverged(struct krep_partition *p,
				      const struct krep_fetch_result *res);
void krep_partition_reset_pending(struct krep_partition *p);
void krep_partition_set_hw(struct krep_partition *p, u64 hw);
void krep_partition_update_lso(struct krep_partition *p);

#endif /* _KREP_PARTITION_H */
