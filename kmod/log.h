/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: a partition's log, append-only RecordBatch v2 bytes in page-backed
 * segments with a sparse offset index.
 *
 * With a log directory, disklog.c mirrors the pages into Kafka's segment
 * files behind the appends (@changed tells it that the log grew, and
 * @cut how far back a truncation went), and a segment it has written
 * and synced is then served from its file's page cache instead of
 * memory (krep_log_evict()). The caller serialises every call on one log
 * (the partition lock).
 */
#ifndef _KREP_LOG_H
#define _KREP_LOG_H

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/types.h>

struct bio_vec;
struct file;
struct krep_batch;
struct krep_segment;
struct page;

/* pages read ahead, and held, for a read that found its pages on disk */
#define KREP_LOG_READAHEAD	64
#define KREP_LOG_FAULT_PIN	16

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
	s64 segment_ms;			/* a segment this old rolls */
	struct krep_mem *mem;
	u64 gen;			/* bumped when a reserved room may be gone */
	bool rx_open;			/* a room is reserved (krep_log_rx_*) */
	/* the log directory's writer (disklog.c): told of every change */
	void (*changed)(struct krep_log *log);
	/* an append or a receive starts a segment at the log end */
	void (*rolled)(struct krep_log *log);
	u64 cut;			/* lowest new end since it last looked */
	bool wait_io;			/* reads may wait for the disk */
	struct {			/* where a read found no page */
		u64 base;		/* the segment's base offset */
		pgoff_t index;
		bool set;
	} miss;
};

/* a page of a segment on disk that a read needs (krep_log_take_miss()) */
struct krep_log_miss {
	struct file *file;
	pgoff_t index;
	unsigned int nr;
	struct page *pages[KREP_LOG_FAULT_PIN];
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

/*
 * Room at the log end for one batch, mapped flat: the caller copies the
 * batch in and checks it in place, then publishes it
 * (krep_log_slot_publish()) or drops it, under the lock it holds all
 * along. The leader's one copy of a batch still in a socket's buffers.
 */
struct krep_log_slot {
	struct krep_segment *seg;
	void *map;			/* vm_map_ram() of its pages */
	u8 *batch;			/* where the batch goes */
	unsigned int nr;		/* pages mapped */
	bool published;
};

/*
 * A segment's index entry: the batch at @pos begins at or below
 * @rel_offset (relative to the segment's base) and ends at or above it,
 * and no batch before it has a timestamp above @ts_before. Entries rise
 * in both @pos and @rel_offset.
 */
struct krep_index_entry {
	u32 rel_offset;
	u32 pos;
	s64 ts_before;
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
		   u32 segment_bytes, s64 segment_ms);
void krep_log_destroy(struct krep_log *log);
int krep_log_append(struct krep_log *log, const u8 *batch, u32 len,
		    u64 base_offset, u32 leader_epoch);
long krep_log_read_size(struct krep_log *log, u64 offset, u32 max_bytes,
			krep_log_filter_t filter, void *arg);
long krep_log_read_frags(struct krep_log *log, u64 offset, u32 max_bytes,
			 krep_log_filter_t filter, void *arg,
			 krep_log_frag_t emit, void *ctx);
s64 krep_log_offset_for_ts(struct krep_log *log, s64 ts, s64 *found_ts);
u64 krep_log_segment_base(struct krep_log *log, u64 offset);
int krep_log_walk(struct krep_log *log, u64 offset, krep_log_filter_t filter,
		  void *arg);
/* a segment's pages once it lives in its file (krep_log_evict()) */
struct krep_log_evicted {
	struct page **pages;
	unsigned int npages;
};

bool krep_log_evict(struct krep_log *log, u64 base, u64 next, u32 size,
		    struct file *file, struct krep_log_evicted *ev);
void krep_log_evicted_free(struct krep_log_evicted *ev);
int krep_log_append_file(struct krep_log *log, const struct krep_batch *b,
			 u32 pos, struct file *file);
int krep_log_append_seg(struct krep_log *log, u64 base, u64 next, u32 size,
			struct file *file, const struct krep_index_entry *ent,
			unsigned int n, s64 max_ts);
bool krep_log_take_miss(struct krep_log *log, struct krep_log_miss *m);
void krep_log_fault_in(struct krep_log_miss *m);
void krep_log_miss_release(struct krep_log_miss *m);
void krep_log_advance_start(struct krep_log *log, u64 offset);
void krep_log_reset(struct krep_log *log, u64 offset);
u64 krep_log_truncate(struct krep_log *log, u64 offset);
void krep_log_retain(struct krep_log *log, s64 retention_bytes, u64 hw);
int krep_log_slot_get(struct krep_log *log, u32 len,
		      struct krep_log_slot *s);
void krep_log_slot_publish(struct krep_log *log, struct krep_log_slot *s,
			   const struct krep_batch *b, u64 base_offset,
			   u32 leader_epoch);
void krep_log_slot_put(struct krep_log *log, struct krep_log_slot *s);
int krep_log_rx_reserve(struct krep_log *log, u32 len, struct krep_log_rx *rx);
int krep_log_rx_commit(struct krep_log *log, struct krep_log_rx *rx,
		       krep_log_batch_t done, void *arg);
void krep_log_rx_abort(struct krep_log *log, struct krep_log_rx *rx);
void krep_log_rx_release(struct krep_log_rx *rx);

#endif /* _KREP_LOG_H */
