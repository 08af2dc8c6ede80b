/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: a partition's log, append-only RecordBatch v2 bytes in page-backed
 * segments with a sparse offset index.
 *
 * The pages are the log every reader is served from. With a log
 * directory, disklog.c mirrors them into Kafka's segment files behind the
 * appends: @changed tells it that the log grew, and @cut how far back a
 * truncation went. The caller serialises every call on one log (the
 * partition lock).
 */
#ifndef _KREP_LOG_H
#define _KREP_LOG_H

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/types.h>

struct bio_vec;
struct krep_batch;
struct krep_segment;
struct page;

/* bytes of log a broker may hold, shared by all its partitions */
struct krep_mem {
	atomic64_t used;
	u64 max;
};

struct krep_log {
	struct list_head segments;	/* oldest first */
	u64 start_offset;		/* log start offset */
	u64 end_offset;			/* LEO: the next offset to write */
	u64 bytes;			/* bytes of batches held */
	u32 segment_bytes;
	struct krep_mem *mem;
	u64 gen;			/* bumped when a reserved room may be gone */
	bool rx_open;			/* a room is reserved (krep_log_rx_*) */
	/* the log directory's writer (disklog.c): told of every change */
	void (*changed)(struct krep_log *log);
	u64 cut;			/* lowest new end since it last looked */
};

/*
 * Room at the log end that a socket fills in place (the follower's one
 * copy: socket to log pages), made part of the log by
 * krep_log_rx_commit() once checked. Holds a reference on each page.
 */
struct krep_log_rx {
	struct krep_segment *seg;	/* dereferenced only while gen holds */
	u64 gen;
	u32 pos;			/* where the room starts in seg */
	u32 len;
	unsigned int nr;
	struct bio_vec *bvec;		/* the room's page pieces */
};

/* a reader's decision for each batch: serve it, skip it, or stop before it */
enum krep_log_verdict {
	KREP_LOG_TAKE,
	KREP_LOG_SKIP,
	KREP_LOG_STOP,
};

typedef enum krep_log_verdict (*krep_log_filter_t)(const struct krep_batch *b,
						  void *arg);

/* told of each batch krep_log_rx_commit() made part of the log */
typedef void (*krep_log_batch_t)(const struct krep_batch *b, void *arg);

/* one page-sized piece of a batch, for sending without copying */
typedef int (*krep_log_frag_t)(struct page *page, u32 offset, u32 len,
			       void *ctx);

void krep_log_init(struct krep_log *log, struct krep_mem *mem,
		   u32 segment_bytes);
void krep_log_destroy(struct krep_log *log);
int krep_log_append(struct krep_log *log, const u8 *batch, u32 len,
		    u64 base_offset, u32 leader_epoch);
long krep_log_read_size(struct krep_log *log, u64 offset, u32 max_bytes,
			krep_log_filter_t filter, void *arg);
long krep_log_read_frags(struct krep_log *log, u64 offset, u32 max_bytes,
			 krep_log_filter_t filter, void *arg,
			 krep_log_frag_t emit, void *ctx);
s64 krep_log_offset_for_ts(struct krep_log *log, s64 ts, s64 *found_ts);
void krep_log_advance_start(struct krep_log *log, u64 offset);
void krep_log_reset(struct krep_log *log, u64 offset);
u64 krep_log_truncate(struct krep_log *log, u64 offset);
void krep_log_retain(struct krep_log *log, s64 retention_bytes, u64 hw);
int krep_log_rx_reserve(struct krep_log *log, u32 len, struct krep_log_rx *rx);
int krep_log_rx_commit(struct krep_log *log, struct krep_log_rx *rx,
		       krep_log_batch_t done, void *arg);
void krep_log_rx_abort(struct krep_log *log, struct krep_log_rx *rx);
void krep_log_rx_release(struct krep_log_rx *rx);

#endif /* _KREP_LOG_H */
