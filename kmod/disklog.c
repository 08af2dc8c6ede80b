// SPDX-License-Identifier: GPL-2.0
/*
 * krep: a partition's log in Kafka's on-disk layout (see disklog.h).
 *
 * Writing. Every change to the memory log calls log->changed, which
 * queues the partition's disk work. The work takes the partition lock
 * only to note how far back the log was cut, where it now starts, and
 * to take page references on the batches not yet written (at most
 * KREP_DISK_CHUNK bytes a round); it writes them with the lock dropped.
 * Published log pages are never written again (log.c seals a segment
 * that was cut), so the references are all a write needs. As in Kafka,
 * nothing waits for the disk: an acknowledged record is in the memory of
 * every ISR member, and durability across a crash of every replica at
 * once is the page cache's; a segment is synced when it is rolled and
 * everything when the broker shuts down cleanly.
 *
 * Segments roll at segment.bytes. An .index entry (the batch's last
 * offset relative to the segment base, the batch's position) is written
 * for the first batch after more than KREP_DISK_INDEX_BYTES bytes without
 * one, with a .timeindex entry (the largest timestamp so far and the last
 * offset of its batch) when that timestamp grew, as Kafka's
 * LogSegment.append does.
 *
 * Recovery. At topic creation the directory's segments are read in
 * order; every batch must parse, follow the one before it, and (unless
 * the directory was shut down cleanly, or the segment lies below the
 * recovery point; always in the last segment, which is read into memory)
 * pass its CRC-32C. At the first that does not, the file
 * is truncated there with one kernel log line, and later segments go.
 * The indexes are rebuilt; HW and the log start come from the log
 * directory's checkpoints, the epoch cache from leader-epoch-checkpoint,
 * all clamped to the log.
 *
 * Threads. The work runs on krep's own writer threads, krep_disk/N (four
 * per CPU, at most 64; each partition on one of them: a thread waits in
 * its fsyncs, and partitions that share one wait for each other's), at
 * nice KREP_DISK_NICE: the write-behind takes the CPU the replication
 * path leaves, so it does not add to commit latency (a profile of make
 * bench's acks=all runs found the writes' CPU time, at the same
 * priority, doubling it). A thread
 * goes back to nice 0 for a partition that is behind (KREP_DISK_BEHIND
 * rounds in a row left more to write: some MiB), that a producer waits
 * on (flush.messages), or whose broker holds more than half its
 * log_memory_max, so that the priority never lets the memory fill with
 * unwritten data.
 *
 * Locking: disk->lock (the files) before p->lock; krep_disk_close()
 * detaches the writer under p->lock before it cancels the work, so no
 * change can queue it again.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bvec.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uio.h>

#include <asm/unaligned.h>

#include "krep.h"
#include "broker.h"
#include "disklog.h"
#include "epoch.h"
#include "logdir.h"
#include "partition.h"
#include "producer.h"
#include "record.h"
#include "vfs.h"

#define KREP_DISK_CHUNK		(256 * 1024)	/* bytes written per round */
#define KREP_DISK_INDEX_BYTES	4096		/* index.interval.bytes */
#define KREP_DISK_NAME_LEN	(20 + 11)	/* base offset + ".timeindex" */
#define KREP_DISK_IBUF		32		/* index entries per write */

#define KREP_DISK_NICE		10		/* the writers' usual nice */
#define KREP_DISK_BEHIND	16		/* rounds with more: behind */
#define KREP_DISK_KICKED	0		/* d->flags: a producer waits */
#define KREP_DISK_THREADS_CPU	4		/* writer threads per CPU */
#define KREP_DISK_THREADS	64		/* at most */

/* a writer thread */
struct dworker {
	struct kthread_worker *kw;
	atomic_t kicked;		/* its partitions with KREP_DISK_KICKED */
};

static struct dworker krep_disk_workers[KREP_DISK_THREADS];
static unsigned int krep_disk_nworkers;
static atomic_t krep_disk_next = ATOMIC_INIT(0);

struct dseg {
	struct list_head node;
	u64 base;
	u64 next;			/* offset after its last batch */
	u32 size;			/* bytes of its .log */
	u32 since_index;		/* bytes since its last .index entry */
	s64 max_ts;			/* largest timestamp, and: */
	u64 max_ts_off;			/* the last offset of its batch */
	s64 tindex_ts;			/* the last .timeindex entry's */
	loff_t idx_pos, tidx_pos;	/* the index files' sizes */
	struct file *log, *idx, *tidx;	/* open while it is the tail */
	bool evict_again;		/* its eviction at the roll failed */
	bool txn_done;			/* closed, its .txnindex written */
};

struct krep_disklog {
	struct krep_partition *p;	/* owner */
	struct mutex lock;		/* the files and everything below */
	struct path dir;
	struct list_head segs;		/* oldest first */
	u64 end;			/* the next offset to write */
	u64 recovery;			/* everything below it is synced */
	u32 segment_bytes;
	bool failed;			/* an I/O error: no more writes */
	char *del_name;			/* renamed to this for deletion */
	unsigned int nepochs;		/* the epochs last checkpointed */
	struct krep_epoch_entry *epochs;
	u64 last_flush_ms;		/* flush.ms: when it last synced */
	struct dworker *worker;		/* the thread its work runs on */
	struct kthread_delayed_work work; /* kicked at once, or for flush.ms */
	unsigned int more_rounds;	/* rounds in a row that left more */
	unsigned int evict_again;	/* segments with evict_again set */
	unsigned long flags;		/* KREP_DISK_KICKED */
	/* what the load read (for its log line) */
	unsigned int indexed;		/* segments from their indexes, */
	unsigned int loaded;		/* of these */
	u64 snap_at;			/* its producer state's snapshot: U64_MAX none */
	/* the tail's index entries not yet written (index_flush()) */
	unsigned int ni, nt;
	__be32 ibuf[2 * KREP_DISK_IBUF];
	struct dtime {
		__be64 ts;
		__be32 rel;
	} __packed tbuf[KREP_DISK_IBUF];
};

/* the batches one round writes, as page pieces */
struct dbatch {
	u64 base, last;
	u64 seg_base;			/* of the memory segment holding it */
	s64 max_ts;
	u32 len;
	unsigned int first_bv, nbv;
};

struct dcollect {
	struct krep_log *log;
	struct bio_vec *bv;
	unsigned int nbv, bv_cap;
	struct dbatch *b;
	unsigned int nb, b_cap;
	u32 bytes, max;
	bool full;
	int err;
	/* the producer states kept where these batches start segments */
	struct dsnap {
		u64 offset;
		struct krep_producer_saved sv;
	} snap[KREP_PRODUCER_KEPT];
	unsigned int nsnap;
};

static const char *pname(const struct krep_disklog *d)
{
	return d->p->topic->name;
}

static void seg_name(char *buf, u64 base, const char *ext)
{
	snprintf(buf, KREP_DISK_NAME_LEN + 1, "%020llu%s", base, ext);
}

static void seg_close_files(struct dseg *s)
{
	if (s->log)
		fput(s->log);
	if (s->idx)
		fput(s->idx);
	if (s->tidx)
		fput(s->tidx);
	s->log = NULL;
	s->idx = NULL;
	s->tidx = NULL;
}

static struct dseg *tail(struct krep_disklog *d)
{
	return list_empty(&d->segs) ? NULL :
	       list_last_entry(&d->segs, struct dseg, node);
}

/*
 * As Kafka's LogDirFailureChannel: an I/O error on one partition's files
 * takes the whole log directory offline, and with it every replica the
 * broker keeps there (they report the Offline role; the controller moves
 * their leadership away and drops them from the ISRs).
 */
static void fail(struct krep_disklog *d, const char *what, int err)
{
	struct krep_net *kn = d->p->topic->kn;

	if (!d->failed)
		pr_err("%s-%u: log directory: %s failed (%d); the partition takes no more appends here\n",
		       pname(d), d->p->index, what, err);
	d->failed = true;
	d->ni = 0;		/* nothing is written any more */
	d->nt = 0;
	WRITE_ONCE(d->p->disk_failed, true);
	if (!atomic_xchg(&kn->logdir_failed, 1))
		pr_err("the log directory failed: every replica in it is offline on this broker\n");
}

/* are the partition's files, or its log directory, failed? (offline) */
bool krep_disk_failed(const struct krep_partition *p)
{
	return READ_ONCE(p->disk_failed) ||
	       (READ_ONCE(p->disk) &&
		atomic_read(&p->topic->kn->logdir_failed));
}

/* open the three files of @s for writing at their ends */
static int seg_open_files(struct krep_disklog *d, struct dseg *s, bool trunc)
{
	static const char * const ext[] = { ".log", ".index", ".timeindex" };
	struct file **f[] = { &s->log, &s->idx, &s->tidx };
	char name[KREP_DISK_NAME_LEN + 1];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ext); i++) {
		if (*f[i])
			continue;
		seg_name(name, s->base, ext[i]);
		*f[i] = krep_vfs_open(&d->dir, name, O_RDWR | O_CREAT |
				      (trunc ? O_TRUNC : 0));
		if (IS_ERR(*f[i])) {
			int err = PTR_ERR(*f[i]);

			*f[i] = NULL;
			seg_close_files(s);
			return err;
		}
	}
	s->idx_pos = i_size_read(file_inode(s->idx));
	s->tidx_pos = i_size_read(file_inode(s->tidx));
	return 0;
}

/* @s's files from ext[@from] on, and @s */
static void seg_remove(struct krep_disklog *d, struct dseg *s,
		       unsigned int from)
{
	/* a snapshot at its base never outlives the segment */
	static const char * const ext[] = { ".snapshot", ".log", ".index",
					     ".timeindex", ".txnindex" };
	char name[KREP_DISK_NAME_LEN + 1];
	unsigned int i;
	int err;

	seg_close_files(s);
	for (i = from; i < ARRAY_SIZE(ext); i++) {
		seg_name(name, s->base, ext[i]);
		err = krep_vfs_unlink(&d->dir, name);
		/* a snapshot left behind could be taken for a later log's */
		if (!i && err && err != -ENOENT)
			fail(d, "removing a segment's snapshot", err);
	}
	if (s->evict_again)
		d->evict_again--;
	list_del(&s->node);
	kfree(s);
}

static void seg_unlink(struct krep_disklog *d, struct dseg *s)
{
	seg_remove(d, s, 0);
}

static struct dseg *seg_add(struct krep_disklog *d, u64 base)
{
	struct dseg *s = kzalloc(sizeof(*s), GFP_KERNEL);

	if (!s)
		return NULL;
	s->base = base;
	s->next = base;
	s->max_ts = -1;
	s->tindex_ts = -1;
	list_add_tail(&s->node, &d->segs);
	return s;
}

/*
 * Write the index entries buffered for the tail @s: each file gets one
 * write a round (and whenever KREP_DISK_IBUF entries wait), not one per
 * entry. Before the tail is synced, rolled or cut, this runs first.
 */
static int index_flush(struct krep_disklog *d, struct dseg *s)
{
	int err = 0;

	if (d->ni)
		err = krep_vfs_write_all(s->idx, d->ibuf, d->ni * 8,
					 &s->idx_pos);
	if (d->nt && !err)
		err = krep_vfs_write_all(s->tidx, d->tbuf,
					 d->nt * sizeof(d->tbuf[0]),
					 &s->tidx_pos);
	d->ni = 0;
	d->nt = 0;
	return err;
}

/* a .timeindex entry for the largest timestamp so far, if it grew */
static int seg_time_entry(struct krep_disklog *d, struct dseg *s)
{
	int err;

	if (s->max_ts <= s->tindex_ts)
		return 0;
	if (d->nt == KREP_DISK_IBUF) {
		err = index_flush(d, s);
		if (err)
			return err;
	}
	d->tbuf[d->nt].ts = cpu_to_be64(s->max_ts);
	d->tbuf[d->nt].rel = cpu_to_be32(s->max_ts_off - s->base);
	d->nt++;
	s->tindex_ts = s->max_ts;
	return 0;
}

/* the index entries of the batch about to land at @pos of @s */
static int seg_index(struct krep_disklog *d, struct dseg *s, u64 last,
		     s64 max_ts, u32 len, u32 pos)
{
	int err;

	if (max_ts > s->max_ts) {
		s->max_ts = max_ts;
		s->max_ts_off = last;
	}
	if (s->since_index > KREP_DISK_INDEX_BYTES) {
		if (d->ni == KREP_DISK_IBUF) {
			err = index_flush(d, s);
			if (err)
				return err;
		}
		d->ibuf[2 * d->ni] = cpu_to_be32(last - s->base);
		d->ibuf[2 * d->ni + 1] = cpu_to_be32(pos);
		d->ni++;
		err = seg_time_entry(d, s);
		if (err)
			return err;
		s->since_index = 0;
	}
	s->since_index += len;
	return 0;
}

/* the buffered entries, the last .timeindex entry, then an fsync of all */
static int seg_sync(struct krep_disklog *d, struct dseg *s)
{
	return seg_time_entry(d, s) ?: index_flush(d, s) ?:
	       vfs_fsync(s->log, 0) ?: vfs_fsync(s->idx, 0) ?:
	       vfs_fsync(s->tidx, 0);
}

/* the tail is full: sync it, close it, and start a segment at @base */
static struct dseg *roll(struct krep_disklog *d, u64 base)
{
	struct dseg *s = tail(d);
	int err;

	if (s && s->log) {
		err = seg_sync(d, s);
		if (err) {
			fail(d, "syncing a segment", err);
			return NULL;
		}
		seg_close_files(s);
		WRITE_ONCE(d->recovery, s->next);
	}
	s = seg_add(d, base);
	if (!s)
		return NULL;
	err = seg_open_files(d, s, true);
	if (err) {
		list_del(&s->node);
		kfree(s);
		fail(d, "creating a segment", err);
		return NULL;
	}
	return s;
}

/* remove every segment and start over at @offset (a log reset) */
static void reset_to(struct krep_disklog *d, u64 offset)
{
	struct dseg *s, *tmp;

	list_for_each_entry_safe(s, tmp, &d->segs, node)
		seg_unlink(d, s);
	d->end = offset;
	WRITE_ONCE(d->recovery, offset);
	roll(d, offset);
}

/* read the whole index file @f; the caller kvfree()s it */
static void *read_file(struct file *f, size_t *len)
{
	loff_t size = i_size_read(file_inode(f)), pos = 0;
	void *buf;

	if (size > SZ_64M)
		return ERR_PTR(-EFBIG);
	buf = kvmalloc(size + 1, GFP_KERNEL);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	while (pos < size) {
		ssize_t n = kernel_read(f, buf + pos, size - pos, &pos);

		if (n <= 0) {
			kvfree(buf);
			return ERR_PTR(n ? n : -EIO);
		}
	}
	*len = size;
	return buf;
}

/* the header of the batch at *@pos of @f; -ENODATA at the end */
static int read_header(struct file *f, loff_t size, loff_t pos,
		       struct krep_batch *b, u8 *hdr)
{
	loff_t at = pos;
	ssize_t n;

	if (pos == size)
		return -ENODATA;
	if (size - pos < KREP_RB_HDR_LEN)
		return -EBADMSG;
	n = kernel_read(f, hdr, KREP_RB_HDR_LEN, &at);
	if (n != KREP_RB_HDR_LEN)
		return n < 0 ? n : -EIO;	/* not the file's fault */
	if (krep_batch_parse(hdr, KREP_RB_HDR_LEN, b) || b->len > size - pos)
		return -EBADMSG;
	return 0;
}

/* @len bytes at @pos of @f, all of them, or an error */
static int read_full(struct file *f, u8 *buf, u32 len, loff_t pos)
{
	u32 done = 0;

	while (done < len) {
		ssize_t n = kernel_read(f, buf + done, len - done, &pos);

		if (n <= 0)
			return n ? n : -EIO;
		done += n;
	}
	return 0;
}

/* entry @i of a .timeindex read whole: its timestamp and relative offset */
static void tidx_entry(const u8 *te, unsigned int i, s64 *ts, u32 *rel)
{
	__be64 t;
	__be32 o;

	memcpy(&t, te + 12 * i, 8);
	memcpy(&o, te + 12 * i + 8, 4);
	*ts = be64_to_cpu(t);
	*rel = be32_to_cpu(o);
}

/* a segment's two index files, read whole */
struct seg_idx {
	loff_t size;			/* of its .log */
	__be32 *ie;			/* .index */
	u8 *te;				/* .timeindex */
	size_t ilen, tlen;
};

static void seg_idx_free(struct seg_idx *x)
{
	if (!IS_ERR_OR_NULL(x->ie))
		kvfree(x->ie);
	if (!IS_ERR_OR_NULL(x->te))
		kvfree(x->te);
	x->ie = NULL;
	x->te = NULL;
}

/* open @s's files and read its indexes whole; seg_idx_free() frees them */
static int seg_read_indexes(struct krep_disklog *d, struct dseg *s,
			    struct seg_idx *x)
{
	int err;

	memset(x, 0, sizeof(*x));
	err = seg_open_files(d, s, false);
	if (err)
		return err;
	x->size = i_size_read(file_inode(s->log));
	x->ie = read_file(s->idx, &x->ilen);
	x->te = read_file(s->tidx, &x->tlen);
	if (!IS_ERR(x->ie) && !IS_ERR(x->te))
		return 0;
	err = IS_ERR(x->ie) ? PTR_ERR(x->ie) : PTR_ERR(x->te);
	seg_idx_free(x);
	return err;
}

/*
 * cut the segment @s, which holds @offset, so that it ends right before
 * the batch starting at @offset, and make it the tail again
 */
static int seg_cut(struct krep_disklog *d, struct dseg *s, u64 offset)
{
	u8 hdr[KREP_RB_HDR_LEN];
	s64 scan_ts = -1, ts;
	u64 scan_off = 0;
	struct krep_batch b;
	struct seg_idx x;
	loff_t pos = 0, size;
	unsigned int i, ni, nt;
	__be32 *ie;
	size_t ilen, tlen;
	u32 rel;
	int err;

	err = seg_read_indexes(d, s, &x);
	if (err)
		return err;
	size = x.size;
	ie = x.ie;
	ilen = x.ilen;
	tlen = x.tlen;
	/* start from the last index entry of a batch wholly before @offset */
	for (ni = 0; ni < ilen / 8; ni++) {
		if (s->base + be32_to_cpu(ie[2 * ni]) >= offset)
			break;
		pos = be32_to_cpu(ie[2 * ni + 1]);
	}
	/* the largest timestamp of the batches kept past that entry */
	for (;;) {
		err = read_header(s->log, size, pos, &b, hdr);
		if (err == -ENODATA || (!err && b.base_offset >= offset))
			break;
		if (err)
			goto out;
		if (b.max_ts > scan_ts) {
			scan_ts = b.max_ts;
			scan_off = krep_batch_last(&b);
		}
		pos += b.len;
	}
	/* index entries name batches wholly before the cut */
	for (i = 0; i < ilen / 8 && be32_to_cpu(ie[2 * i + 1]) < pos; i++)
		;
	ni = i;
	for (nt = 0; nt < tlen / 12; nt++) {
		tidx_entry(x.te, nt, &ts, &rel);
		if (s->base + rel >= offset)
			break;
	}
	err = krep_vfs_truncate(s->log, pos) ?:
	      krep_vfs_truncate(s->idx, (loff_t)ni * 8) ?:
	      krep_vfs_truncate(s->tidx, (loff_t)nt * 12);
	if (err)
		goto out;
	s->size = pos;
	s->next = offset;
	s->since_index = 0;
	s->idx_pos = (loff_t)ni * 8;
	s->tidx_pos = (loff_t)nt * 12;
	s->max_ts = -1;
	s->tindex_ts = -1;
	if (nt) {
		tidx_entry(x.te, nt - 1, &ts, &rel);
		s->max_ts = ts;
		s->max_ts_off = s->base + rel;
		s->tindex_ts = s->max_ts;
	}
	if (scan_ts > s->max_ts) {
		s->max_ts = scan_ts;
		s->max_ts_off = scan_off;
	}
out:
	seg_idx_free(&x);
	return err;
}

/* the memory log was cut back to @offset: so are the files */
static void truncate_to(struct krep_disklog *d, u64 offset)
{
	char name[KREP_DISK_NAME_LEN + 1];
	struct dseg *s, *tmp;
	int err;

	list_for_each_entry_safe_reverse(s, tmp, &d->segs, node) {
		if (s->base < offset)
			break;
		seg_unlink(d, s);
	}
	s = tail(d);
	if (!s) {
		reset_to(d, offset);
		return;
	}
	if (s->next > offset) {
		err = seg_cut(d, s, offset);
		if (err) {
			fail(d, "truncating a segment", err);
			return;
		}
	} else {
		err = seg_open_files(d, s, false);
		if (err) {
			fail(d, "reopening a segment", err);
			return;
		}
	}
	/* the tail again: its .txnindex is written when it closes */
	s->txn_done = false;
	seg_name(name, s->base, ".txnindex");
	err = krep_vfs_unlink(&d->dir, name);
	if (err && err != -ENOENT)
		fail(d, "removing a cut segment's .txnindex", err);
	d->end = s->next;
	WRITE_ONCE(d->recovery, min(d->recovery, d->end));
}

/* the memory log starts at @start: whole segments below it go */
static void drop_below(struct krep_disklog *d, u64 start)
{
	struct dseg *s, *tmp;

	if (start > d->end) {
		reset_to(d, start);
		return;
	}
	list_for_each_entry_safe(s, tmp, &d->segs, node) {
		if (list_is_last(&s->node, &d->segs) || s->next > start)
			break;
		seg_unlink(d, s);
	}
}

static enum krep_log_verdict collect_batch(const struct krep_batch *b,
					   void *arg)
{
	struct dcollect *c = arg;
	struct dbatch *more;

	if (c->nb && c->bytes + b->len > c->max) {
		c->full = true;
		return KREP_LOG_STOP;
	}
	if (c->nb == c->b_cap) {
		more = krealloc_array(c->b, c->b_cap * 2 + 16, sizeof(*more),
				      GFP_KERNEL);
		if (!more) {
			c->err = -ENOMEM;
			return KREP_LOG_STOP;
		}
		c->b = more;
		c->b_cap = c->b_cap * 2 + 16;
	}
	c->b[c->nb++] = (struct dbatch) {
		.base = b->base_offset, .last = krep_batch_last(b),
		.seg_base = krep_log_segment_base(c->log, b->base_offset),
		.max_ts = b->max_ts, .len = b->len, .first_bv = c->nbv,
	};
	c->bytes += b->len;
	return KREP_LOG_TAKE;
}

static int collect_piece(struct page *page, u32 offset, u32 len, void *ctx)
{
	struct dcollect *c = ctx;
	struct bio_vec *more;

	if (c->nbv == c->bv_cap) {
		more = krealloc_array(c->bv, c->bv_cap * 2 + 32, sizeof(*more),
				      GFP_KERNEL);
		if (!more)
			return -ENOMEM;
		c->bv = more;
		c->bv_cap = c->bv_cap * 2 + 32;
	}
	get_page(page);
	bvec_set_page(&c->bv[c->nbv++], page, len, offset);
	c->b[c->nb - 1].nbv++;
	return 0;
}

static void collect_release(struct dcollect *c)
{
	unsigned int i;

	for (i = 0; i < c->nbv; i++)
		put_page(c->bv[i].bv_page);
	for (i = 0; i < c->nsnap; i++)
		krep_producer_dup_free(container_of(c->log, struct krep_partition,
						    log), &c->snap[i].sv);
	kfree(c->bv);
	kfree(c->b);
}

/*
 * @s was rolled, so written and synced: the memory log may serve it from
 * its file now and free its pages (log.c checks it holds the same).
 * Return: whether it did.
 */
static bool evict(struct krep_disklog *d, struct dseg *s)
{
	char name[KREP_DISK_NAME_LEN + 1];
	struct krep_log_evicted ev;
	struct file *f;
	bool done;

	seg_name(name, s->base, ".log");
	f = krep_vfs_open(&d->dir, name, O_RDONLY);
	if (IS_ERR(f))
		return false;	/* it stays in memory */
	mutex_lock(&d->p->lock);
	done = krep_log_evict(&d->p->log, s->base, s->next, s->size, f, &ev);
	mutex_unlock(&d->p->lock);
	krep_log_evicted_free(&ev);
	fput(f);
	return done;
}

/*
 * The segments whose eviction failed at their roll, once more: the
 * memory log may have been cut then, the cut not yet on disk (this round
 * applied it). A segment that still does not match (one the disk rolled
 * alone, at offsets beyond the index's range) stays in memory.
 */
static void evict_again(struct krep_disklog *d)
{
	struct dseg *s;

	list_for_each_entry(s, &d->segs, node) {
		if (!d->evict_again)
			break;
		if (!s->evict_again)
			continue;
		s->evict_again = false;
		d->evict_again--;
		if (!s->log)
			evict(d, s);
	}
}

/*
 * The entries of @sv's transaction index that belong in @s's .txnindex
 * (their marker is in @s): [*@from, *@at) on return. *@at starts where
 * the segment before @s ended (0 for the first): call it for each
 * segment, going up.
 */
static void seg_txn_span(const struct krep_producer_saved *sv,
			 const struct dseg *s, size_t *from, size_t *at)
{
	for (; *at < sv->txn_len; *at += KREP_TXNINDEX_ENTRY) {
		if (get_unaligned_be64(sv->txn + *at +
				       KREP_TXNINDEX_LAST) >= s->base)
			break;
	}
	for (*from = *at; *at < sv->txn_len; *at += KREP_TXNINDEX_ENTRY) {
		if (get_unaligned_be64(sv->txn + *at +
				       KREP_TXNINDEX_LAST) >= s->next)
			break;
	}
}

/*
 * The .txnindex of each closed segment below @below that has none written
 * since it closed, from @sv (krep_producer_save(): every aborted
 * transaction, by marker): the entries whose marker it holds; no file
 * when it holds none, as Kafka. A snapshot at @below is written only
 * after this, so that every aborted transaction below a snapshot is in
 * the .txnindex files below it (load_producers()). The tail's (a clean
 * shutdown, @below U64_MAX) is written anew each time. Return: 1 when a
 * file was removed since the last synced write (the directory is not
 * synced yet), 0, or an error.
 */
static int write_txnindexes(struct krep_disklog *d,
			    const struct krep_producer_saved *sv, u64 below)
{
	char name[KREP_DISK_NAME_LEN + 1];
	size_t at = 0, from;
	int err, removed = 0;
	struct dseg *s;

	list_for_each_entry(s, &d->segs, node) {
		if (s->base >= below)
			break;
		seg_txn_span(sv, s, &from, &at);
		if (s->txn_done)
			continue;
		seg_name(name, s->base, ".txnindex");
		if (at > from) {
			/* synced with the directory: and what came before */
			err = krep_vfs_write_atomic(&d->dir, name,
						    sv->txn + from, at - from);
			removed = 0;
		} else {
			err = krep_vfs_unlink(&d->dir, name);
			removed |= !err;
		}
		if (err && err != -ENOENT)
			return err;
		s->txn_done = !s->log;
	}
	return removed;
}

/*
 * The tail was rolled at @base: the producer state kept there, if this
 * round took one, as Kafka's <base>.snapshot, so that a load after a
 * crash reads it and the log after it, not the whole log. A failure
 * costs that only: no snapshot, and the next roll tries again. The
 * segment below was synced by the roll; the snapshot is not, unless a
 * .txnindex was removed just before it: a crash may lose it, or leave
 * it short (its CRC refuses it), but the directory's operations reach
 * the disk in order (the journal of ext4 or XFS), so one that is there
 * finds the .txnindex files as they were written before it.
 */
static void roll_snapshot(struct krep_disklog *d, const struct dcollect *c,
			  u64 base)
{
	char name[KREP_DISK_NAME_LEN + 1];
	const struct krep_producer_saved *sv;
	unsigned int i;
	int err;

	for (i = 0; i < c->nsnap && c->snap[i].offset != base; i++)
		;
	if (i == c->nsnap)
		return;
	sv = &c->snap[i].sv;
	err = write_txnindexes(d, sv, base);
	seg_name(name, base, ".snapshot");
	if (err > 0)
		err = krep_vfs_write_atomic(&d->dir, name, sv->snap,
					    sv->snap_len);
	else if (!err)
		err = krep_vfs_write_unsynced(&d->dir, name, sv->snap,
					      sv->snap_len);
	if (err)
		pr_warn_ratelimited("%s-%u: writing the producer snapshot at %llu failed (%d)\n",
				    pname(d), d->p->index, base, err);
}

/*
 * Roll before @b, which follows @len bytes about to be written to @s?
 * At the end of the memory log's segment, so that a file holds what one
 * memory segment does, at the same positions; at segment.bytes; and, as
 * Kafka, before offsets relative to the base leave the indexes' range.
 */
static bool roll_before(const struct krep_disklog *d, const struct dseg *s,
			const struct dbatch *b, u32 len)
{
	u32 size = s->size + len;

	return s->base != b->seg_base ||
	       (size && size + b->len > d->segment_bytes) ||
	       b->last - s->base > S32_MAX;
}

/*
 * Append the collected batches from c->b[@i] on that go in one segment
 * (rolling first if need be) with one write. Return: how many, or an
 * error.
 */
static int write_run(struct krep_disklog *d, struct dcollect *c,
		     unsigned int i)
{
	struct dseg *s = tail(d), *prev;
	struct dbatch *b = &c->b[i];
	struct iov_iter it;
	unsigned int j, nbv = 0;
	u32 len = 0;
	loff_t pos;
	int err = 0;

	if (!s || s->next != b->base || roll_before(d, s, b, 0)) {
		prev = s && s->log ? s : NULL;
		s = roll(d, b->base);
		if (!s)
			return -EIO;
		roll_snapshot(d, c, s->base);
		if (prev && !evict(d, prev)) {
			prev->evict_again = true;
			d->evict_again++;
		}
	}
	for (j = i; j < c->nb; j++) {
		b = &c->b[j];
		if (j > i && (b->base != c->b[j - 1].last + 1 ||
			      roll_before(d, s, b, len)))
			break;
		err = seg_index(d, s, b->last, b->max_ts, b->len,
				s->size + len);
		if (err)
			return err;
		len += b->len;
		nbv += b->nbv;
	}
	pos = s->size;
	iov_iter_bvec(&it, ITER_SOURCE, c->bv + c->b[i].first_bv, nbv, len);
	file_start_write(s->log);	/* vfs_iter_write() does not, on 6.1 */
	while (iov_iter_count(&it)) {
		ssize_t n = vfs_iter_write(s->log, &it, &pos, 0);

		if (n <= 0) {
			err = n ? n : -EIO;
			break;
		}
	}
	file_end_write(s->log);
	if (!err)
		err = index_flush(d, s);
	if (err)
		return err;
	s->size += len;
	s->next = c->b[j - 1].last + 1;
	d->end = s->next;
	return j - i;
}

/* leader-epoch-checkpoint, when the cache changed since the last one */
static int write_epochs(struct krep_disklog *d, struct krep_epoch_entry *e,
			unsigned int n)
{
	size_t size = 32 + n * 44, len;
	unsigned int i;
	char *buf;
	int err;

	buf = kvmalloc(size, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	len = scnprintf(buf, size, "0\n%u\n", n);
	for (i = 0; i < n; i++)
		len += scnprintf(buf + len, size - len, "%u %llu\n",
				 e[i].epoch, e[i].start);
	err = krep_vfs_write_atomic(&d->dir, "leader-epoch-checkpoint", buf,
				    len);
	kvfree(buf);
	return err;
}

static bool epochs_changed(const struct krep_disklog *d,
			   const struct krep_epoch_cache *c)
{
	unsigned int i;

	if (!d->epochs || c->n != d->nepochs)
		return true;
	for (i = 0; i < c->n; i++) {
		if (c->e[i].epoch != d->epochs[i].epoch ||
		    c->e[i].start != d->epochs[i].start)
			return true;
	}
	return false;
}

/*
 * One round: apply what changed in the memory log since the last one.
 * Called with d->lock held. Return: true when more is left to write.
 */
static bool disk_sync(struct krep_disklog *d, u32 max)
{
	struct krep_partition *p = d->p;
	struct dcollect c = { .log = &p->log, .max = max };
	struct krep_epoch_entry *snap = NULL;
	unsigned int nsnap = 0, i;
	u64 cut, start, from, flush_req, now = krep_now_ms();
	s64 flush_ms;
	struct dseg *s;
	long n = 0;
	int err, run;

	mutex_lock(&p->lock);
	if (!d->failed && krep_disk_failed(p))
		d->failed = true;	/* the directory failed elsewhere */
	flush_req = p->flush_req;
	flush_ms = p->topic->config.flush_ms;
	cut = p->log.cut;
	p->log.cut = U64_MAX;
	start = p->log.start_offset;
	if (epochs_changed(d, &p->epochs)) {
		nsnap = p->epochs.n;
		snap = kmemdup(p->epochs.e, nsnap * sizeof(*snap), GFP_KERNEL);
	}
	from = max(min(d->end, cut), start);
	if (!d->failed && from < p->log.end_offset)
		n = krep_log_read_frags(&p->log, from, U32_MAX, collect_batch,
					&c, collect_piece, &c);
	/* the states kept where a batch starts a segment: its roll's snapshot */
	for (i = 0; i < c.nb && c.nsnap < KREP_PRODUCER_KEPT; i++) {
		if (c.b[i].base == c.b[i].seg_base &&
		    !krep_producer_dup_kept(p, c.b[i].base, &c.snap[c.nsnap].sv))
			c.snap[c.nsnap++].offset = c.b[i].base;
	}
	mutex_unlock(&p->lock);

	if (d->failed)
		goto out;
	if (n < 0 || c.err) {
		fail(d, "reading the log", n < 0 ? n : c.err);
		goto out;
	}
	if (cut <= start && cut < d->end) {
		/* the memory log was emptied: nothing below start survives */
		reset_to(d, start);
	} else {
		if (cut < d->end)
			truncate_to(d, cut);
		drop_below(d, start);
	}
	/* the last round's failed evictions, with this round's cut applied */
	if (d->evict_again && !d->failed)
		evict_again(d);
	/*
	 * the epochs after the cut and before the batches: a load after a
	 * crash may take a segment's epochs from the checkpoint instead of
	 * its batches, so no batch reaches the disk before its epoch does
	 * (as Kafka assigns an epoch before the append; one past the log
	 * end is cut at load), and no checkpoint before the cut it follows
	 * (synced first: the checkpoint's own syncs are of its file and the
	 * directory)
	 */
	s = tail(d);
	if (snap && !d->failed && cut < U64_MAX && s && s->log) {
		err = vfs_fsync(s->log, 0);
		if (err)
			fail(d, "syncing a cut segment", err);
	}
	if (snap && !d->failed) {
		err = write_epochs(d, snap, nsnap);
		if (err) {
			fail(d, "writing leader-epoch-checkpoint", err);
		} else {
			kfree(d->epochs);
			d->epochs = snap;
			d->nepochs = nsnap;
			snap = NULL;
		}
	}
	for (i = 0; i < c.nb && !d->failed; i += run) {
		run = write_run(d, &c, i);
		if (run < 0)
			fail(d, "writing a segment", run);
	}
	/* flush.messages asked for a sync, or flush.ms is due */
	s = tail(d);
	if (!d->failed && s && s->log && d->end > d->recovery &&
	    (flush_req > d->recovery ||
	     (flush_ms != KREP_FLUSH_NEVER &&
	      now - d->last_flush_ms >= (u64)flush_ms))) {
		err = vfs_fsync(s->log, 1);
		if (err) {
			fail(d, "syncing a segment", err);
		} else {
			WRITE_ONCE(d->recovery, d->end);
			d->last_flush_ms = now;
		}
	}
out:
	kfree(snap);
	collect_release(&c);
	/* what is synced now, for producers waiting on flush.messages */
	mutex_lock(&p->lock);
	if (p->flushed != d->recovery) {
		WRITE_ONCE(p->flushed, d->recovery);
		wake_up_all(&p->commit_wq);
	} else if (d->failed) {
		wake_up_all(&p->commit_wq);
	}
	mutex_unlock(&p->lock);
	return c.full && !d->failed;
}

/*
 * The thread's nice for @d's round: 0 while @d is behind, a producer
 * waits for its sync, its broker's log memory is more than half full, or
 * another partition of the thread's has been kicked and not yet served
 * (it waits in the queue behind this round)
 */
static void disk_priority(struct krep_disklog *d)
{
	struct krep_mem *mem = d->p->log.mem;
	struct dworker *w = d->worker;
	long want = KREP_DISK_NICE;

	if (test_and_clear_bit(KREP_DISK_KICKED, &d->flags))
		atomic_dec(&w->kicked);
	if (d->more_rounds >= KREP_DISK_BEHIND ||
	    READ_ONCE(d->p->flush_req) > READ_ONCE(d->recovery) ||
	    atomic64_read(&mem->used) > READ_ONCE(mem->max) / 2 ||
	    atomic_read(&w->kicked))
		want = 0;
	if (task_nice(current) != want)
		set_user_nice(current, want);
}

static void disk_work(struct kthread_work *work)
{
	struct krep_disklog *d = container_of(work, struct krep_disklog,
					      work.work);
	s64 flush_ms = d->p->topic->config.flush_ms;
	u64 since;
	bool more;

	disk_priority(d);
	mutex_lock(&d->lock);
	more = disk_sync(d, KREP_DISK_CHUNK);
	d->more_rounds = more ? d->more_rounds + 1 : 0;
	since = krep_now_ms() - d->last_flush_ms;
	if (more)
		kthread_mod_delayed_work(d->worker->kw, &d->work, 0);
	else if (flush_ms != KREP_FLUSH_NEVER && !d->failed &&
		 d->end > d->recovery)
		/* unsynced data: come back when flush.ms is due */
		kthread_queue_delayed_work(d->worker->kw, &d->work,
					   msecs_to_jiffies(since < (u64)flush_ms ?
							    flush_ms - since : 0));
	mutex_unlock(&d->lock);
}

/* a producer waits for the disk work to sync (p->lock held) */
void krep_disk_kick(struct krep_partition *p)
{
	struct krep_disklog *d = p->disk;
	struct kthread_delayed_work *dw;
	struct dworker *w;

	if (!d)
		return;
	dw = &d->work;
	w = d->worker;
	/* at nice 0 at once, not after the nice-10 round it may be in */
	if (!test_and_set_bit(KREP_DISK_KICKED, &d->flags)) {
		atomic_inc(&w->kicked);
		if (task_nice(w->kw->task))
			set_user_nice(w->kw->task, 0);
	}
	/*
	 * Queued already: it stays where it is (mod_delayed_work would
	 * move it to the back, behind partitions that requeue themselves)
	 */
	if (timer_pending(&dw->timer) || list_empty_careful(&dw->work.node))
		kthread_mod_delayed_work(w->kw, dw, 0);
}

/* log->changed: called under p->lock */
static void disk_changed(struct krep_log *log)
{
	struct krep_partition *p = container_of(log, struct krep_partition,
						log);
	struct kthread_delayed_work *dw = &p->disk->work;

	/*
	 * The appends of one tick go in one round (an append waiting for
	 * flush.messages kicks at once): queue the work a tick from now,
	 * unless it is queued already for no later than that (a flush.ms
	 * timer is brought forward). Unlocked looks: a work seen queued
	 * takes p->lock after this change is made, so it sees it.
	 */
	if (timer_pending(&dw->timer) ?
	    time_after(READ_ONCE(dw->timer.expires), jiffies + 1) :
	    list_empty_careful(&dw->work.node))
		kthread_mod_delayed_work(p->disk->worker->kw, dw, 1);
}

/* write everything now and sync the tail (a clean shutdown) */
static void disk_flush(struct krep_disklog *d)
{
	struct dseg *s;
	int err;

	mutex_lock(&d->lock);
	while (disk_sync(d, KREP_DISK_CHUNK))
		cond_resched();
	s = tail(d);
	if (s && s->log && !d->failed) {
		err = seg_sync(d, s);
		if (err)
			fail(d, "syncing a segment", err);
		else
			WRITE_ONCE(d->recovery, d->end);
	}
	mutex_unlock(&d->lock);
}

/*
 * A clean shutdown's producer state, in Kafka's files: the aborted
 * transactions of each segment not yet written in its .txnindex (the
 * tail's, those the rolls since the load did not write), then
 * <LEO>.snapshot, so that the next load reads them instead of the log
 * (load_producers()). Without a snapshot (the state cannot be put in
 * one, or a write failed) the next load reads the log after the newest
 * roll's snapshot.
 */
static void write_producers(struct krep_disklog *d)
{
	struct krep_partition *p = d->p;
	char name[KREP_DISK_NAME_LEN + 1];
	struct krep_producer_saved sv;
	u64 end;
	int err;

	mutex_lock(&p->lock);
	end = p->log.end_offset;
	err = end == d->end ? krep_producer_save(p, &sv) : -EAGAIN;
	mutex_unlock(&p->lock);
	if (err) {
		pr_info("%s-%u: no producer snapshot (%d): the next load reads the log for it\n",
			pname(d), p->index, err);
		return;
	}
	err = write_txnindexes(d, &sv, U64_MAX);
	if (err >= 0) {
		snprintf(name, sizeof(name), "%020llu.snapshot", end);
		err = krep_vfs_write_atomic(&d->dir, name, sv.snap,
					    sv.snap_len);
	}
	if (err)
		pr_warn("%s-%u: writing the producer snapshot failed (%d): the next load reads the log for it\n",
			pname(d), p->index, err);
	krep_producer_saved_free(&sv);
}

/* Return: 0, or -EIO when the partition's files could not be written */
int krep_disk_flush(struct krep_partition *p)
{
	struct krep_disklog *d;

	mutex_lock(&p->lock);
	d = p->disk;
	mutex_unlock(&p->lock);
	if (!d)
		return 0;
	disk_flush(d);
	return d->failed ? -EIO : 0;
}

u64 krep_disk_recovery_point(struct krep_partition *p)
{
	return READ_ONCE(p->disk->recovery);
}

static void disk_free(struct krep_disklog *d)
{
	struct dseg *s, *tmp;

	list_for_each_entry_safe(s, tmp, &d->segs, node) {
		seg_close_files(s);
		list_del(&s->node);
		kfree(s);
	}
	path_put(&d->dir);
	kfree(d->epochs);
	kfree(d->del_name);
	kfree(d);
}

/**
 * krep_disk_detach_dir - the topic was deleted: rename the directory away
 * @p: the partition, its topic unlisted; topics_lock held
 *
 * As Kafka, <topic>-<p> becomes <topic>-<p>.<random>-delete at once, so a
 * new topic of the same name starts from nothing even before the old
 * files are gone; krep_disk_close() removes it, or the next load does.
 */
void krep_disk_detach_dir(struct krep_partition *p)
{
	char name[KREP_TOPIC_NAME_MAX + 12];
	struct krep_disklog *d;
	struct path root;
	int err;

	lockdep_assert_held(&p->topic->kn->topics_lock);
	mutex_lock(&p->lock);
	d = p->disk;
	mutex_unlock(&p->lock);
	if (!d)
		return;
	snprintf(name, sizeof(name), "%s-%u", p->topic->name, p->index);
	d->del_name = kasprintf(GFP_KERNEL, "%s.%016llx-delete", name,
				get_random_u64());
	if (!d->del_name)
		return;
	root.mnt = d->dir.mnt;
	root.dentry = dget_parent(d->dir.dentry);
	err = krep_vfs_rename(&root, name, d->del_name);
	dput(root.dentry);
	if (err) {
		pr_warn("%s: cannot rename the deleted partition's directory (%d)\n",
			name, err);
		kfree(d->del_name);
		d->del_name = NULL;
	}
}

/**
 * krep_disk_close - stop writing @p's log to disk
 * @p: the partition, killed: nothing appends to it any more
 * @remove: the topic was deleted: remove its directory instead of
 *	    writing what is left
 */
void krep_disk_close(struct krep_partition *p, bool remove)
{
	struct krep_disklog *d;
	char name[KREP_TOPIC_NAME_MAX + 40];
	struct path root;
	int err;

	mutex_lock(&p->lock);
	d = p->disk;
	WRITE_ONCE(p->disk, NULL);
	p->log.changed = NULL;
	mutex_unlock(&p->lock);
	if (!d)
		return;
	kthread_cancel_delayed_work_sync(&d->work);
	if (test_and_clear_bit(KREP_DISK_KICKED, &d->flags))
		atomic_dec(&d->worker->kicked);
	if (!remove) {
		disk_flush(d);
		if (!d->failed)
			write_producers(d);
		disk_free(d);
		return;
	}
	root.mnt = mntget(d->dir.mnt);
	root.dentry = dget_parent(d->dir.dentry);
	if (d->del_name)
		strscpy(name, d->del_name, sizeof(name));
	else
		snprintf(name, sizeof(name), "%s-%u", p->topic->name,
			 p->index);
	disk_free(d);
	err = krep_vfs_rmtree(&root, name);
	if (err)
		pr_warn("%s: removing the deleted partition's directory failed (%d)\n",
			name, err);
	path_put(&root);
}

/* recovery */

/* offsets named by a partition directory's files of one kind */
struct offsets {
	u64 *v;
	unsigned int n, cap;
};

/*
 * the .log and .snapshot files of a partition directory, and the
 * temporary files a crash may have left of the producer state's
 */
enum { SN_LOG, SN_SNAP, SN_SNAP_TMP, SN_TXN_TMP, SN_KINDS };

static const char * const sn_ext[SN_KINDS] = {
	[SN_LOG] = ".log",
	[SN_SNAP] = ".snapshot",
	[SN_SNAP_TMP] = ".snapshot.tmp",
	[SN_TXN_TMP] = ".txnindex.tmp",
};

struct seg_names {
	struct offsets o[SN_KINDS];
	int err;
};

static int seg_entry(void *arg, const char *name, int len, unsigned int type)
{
	struct seg_names *sn = arg;
	struct offsets *o;
	char digits[21];
	unsigned int k;
	u64 base;

	/* the names are not NUL-terminated */
	for (k = 0; k < SN_KINDS; k++) {
		if (len > 20 && (size_t)len == 20 + strlen(sn_ext[k]) &&
		    !memcmp(name + 20, sn_ext[k], len - 20))
			break;
	}
	if (k == SN_KINDS || type == DT_DIR)
		return 0;
	memcpy(digits, name, 20);
	digits[20] = '\0';
	if (strspn(digits, "0123456789") != 20 || kstrtou64(digits, 10, &base) ||
	    base >= S64_MAX)
		return 0;
	o = &sn->o[k];
	sn->err = krep_vfs_grow((void **)&o->v, &o->cap, o->n, sizeof(*o->v),
				KREP_VFS_LIST_MAX);
	if (sn->err)
		return 1;
	o->v[o->n++] = base;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

struct recover {
	struct krep_disklog *d;
	struct krep_status *st;
	u8 *buf;
	u32 buf_len;
	u64 expect;			/* U64_MAX before the first batch */
	bool clean;
	u64 recovery;
};

/* the batches of @s, from its start; *@posp: where the last one began */
static int recover_batches(struct recover *r, struct dseg *s, bool check_crc,
			   struct file *rf, loff_t *posp, const char **what)
{
	struct krep_disklog *d = r->d;
	struct krep_partition *p = d->p;
	struct krep_batch b;
	loff_t pos = 0, size;
	int err;

	/* the indexes are rebuilt as the batches are read */
	err = krep_vfs_truncate(s->idx, 0) ?: krep_vfs_truncate(s->tidx, 0);
	if (err)
		return err;
	s->idx_pos = 0;
	s->tidx_pos = 0;
	size = i_size_read(file_inode(s->log));
	/* *what is set only for what the file holds, never for an I/O error */
	for (;; pos += b.len) {
		*posp = pos;
		*what = NULL;
		err = read_header(s->log, size, pos, &b, r->buf);
		if (err == -ENODATA)
			break;
		if (err == -EBADMSG)
			*what = "a torn or malformed batch";
		if (err)
			return err;
		if (b.len > d->segment_bytes || pos + b.len > S32_MAX) {
			*what = "a batch larger than segment.bytes";
			return -EBADMSG;
		}
		/* a batch that stays in its file is read whole only to check it */
		if (b.len > r->buf_len && (!rf || check_crc)) {
			kvfree(r->buf);
			r->buf = kvmalloc(b.len, GFP_KERNEL);
			r->buf_len = r->buf ? b.len : 0;
			if (!r->buf)
				return -ENOMEM;
		}
		err = !rf || check_crc ? read_full(s->log, r->buf, b.len, pos) : 0;
		if (err)
			return err;
		/*
		 * the tail, read into memory, is checked whatever the
		 * shutdown: reads serve memory unchecked (log.c)
		 */
		*what = "a batch whose CRC-32C does not match";
		if ((check_crc || !rf) && !krep_batch_crc_ok(r->buf, b.len))
			return -EBADMSG;
		*what = "a batch out of offset order";
		if (b.base_offset < s->base ||
		    (r->expect != U64_MAX && b.base_offset != r->expect) ||
		    krep_batch_last(&b) < (u64)b.base_offset ||
		    krep_batch_last(&b) - s->base > S32_MAX ||
		    krep_batch_last(&b) >= S64_MAX)
			return -EBADMSG;
		*what = NULL;
		if (r->expect == U64_MAX)
			krep_log_reset(&p->log, b.base_offset);
		if (rf)
			err = krep_log_append_file(&p->log, &b, pos, rf);
		else
			err = krep_log_append(&p->log, r->buf, b.len,
					      b.base_offset, b.leader_epoch);
		if (err == -ENOSPC) {
			return krep_fail(r->st, KREP_KERR_KAFKA_STORAGE_ERROR,
					 -ENOSPC,
					 "the log's last segment does not fit log_memory_max");
		}
		if (err)
			return err;
		if (b.leader_epoch >= 0)
			krep_epoch_found(&p->epochs, b.leader_epoch,
					 b.base_offset);
		err = seg_index(d, s, krep_batch_last(&b), b.max_ts, b.len,
				s->size);
		if (err)
			return err;
		s->size += b.len;
		s->next = krep_batch_last(&b) + 1;
		r->expect = s->next;
		cond_resched();
	}
	return 0;
}

/*
 * The batches after @s's last .index entry (at @from, holding the offset
 * base + @rel; the segment's start when none): each must follow the one
 * before, none may start more than an index interval past @from (else an
 * entry is missing), and the last must end at @next_base, the file's end
 * at @size. Sets the largest timestamp seen, and the last batch's header
 * in @last. Return: 0, 1 when they do not add up, or a negative errno.
 */
static int scan_after_index(struct dseg *s, loff_t size, loff_t from,
			    s64 rel, u64 next_base, s64 *max_ts, u64 *ts_off,
			    struct krep_batch *last)
{
	u8 hdr[KREP_RB_HDR_LEN];
	u64 expect = s->base;
	struct krep_batch b;
	loff_t pos = from;
	int err;

	for (;; pos += b.len) {
		err = read_header(s->log, size, pos, &b, hdr);
		if (err == -ENODATA)
			break;
		if (err)
			return err == -EBADMSG ? 1 : err;
		if (pos > from + KREP_DISK_INDEX_BYTES)
			return 1;
		if (pos == from && rel >= 0 ?
		    krep_batch_last(&b) != s->base + rel ||
		    b.base_offset < s->base :
		    b.base_offset != expect)
			return 1;
		if (b.max_ts > *max_ts) {
			*max_ts = b.max_ts;
			*ts_off = krep_batch_last(&b);
		}
		expect = krep_batch_last(&b) + 1;
		*last = b;
	}
	return expect == next_base && pos == size ? 0 : 1;
}

/*
 * After a crash, are the epochs of @s's first and last batch (@last)
 * those the cache (from leader-epoch-checkpoint) gives their offsets?
 * The batches' epochs rise, so when both are one epoch, so is every batch
 * between them; a segment where the leader changed is read batch by
 * batch. A checkpoint written before the batches (disk_sync()) passes;
 * one that lost an epoch, or a segment a cut did not reach, does not.
 */
static bool epochs_match(struct krep_disklog *d, struct dseg *s, loff_t size,
			 const struct krep_batch *last)
{
	const struct krep_epoch_cache *c = &d->p->epochs;
	/* the first entry starts at the log start the writer saw */
	u64 from = c->n ? c->e[0].start : 0;
	u8 hdr[KREP_RB_HDR_LEN];
	struct krep_batch b;

	return !read_header(s->log, size, 0, &b, hdr) &&
	       b.leader_epoch == last->leader_epoch &&
	       krep_epoch_at(c, max_t(u64, b.base_offset, from)) ==
	       b.leader_epoch &&
	       krep_epoch_at(c, max_t(u64, last->base_offset, from)) ==
	       last->leader_epoch;
}

/*
 * A segment below the tail after a clean shutdown, from its .index and
 * .timeindex instead of its batches, as Kafka loads one: only the batches
 * after its last .index entry are read, to find where it ends, which
 * must be where the next segment (@next_base) begins. Return: 0 when it
 * is in the memory log, 1 when its files do not add up (the caller then
 * reads every batch, which rebuilds the indexes), or a negative errno.
 */
static int load_indexed(struct recover *r, struct dseg *s, u64 next_base)
{
	struct krep_disklog *d = r->d;
	char name[KREP_DISK_NAME_LEN + 1];
	struct krep_index_entry *ent = NULL;
	struct krep_batch last = {};
	struct file *rf = NULL;
	unsigned int n, nt, i, k;
	s64 ts, tmax = -1, max_ts;
	struct seg_idx x;
	u64 ts_off = 0;
	__be32 *ie;
	loff_t size;
	u8 *te;
	u32 rel;
	int err;

	/* an error reading them: the batches are read, and tell */
	if (seg_read_indexes(d, s, &x))
		return 1;
	size = x.size;
	ie = x.ie;
	te = x.te;
	err = 1;
	if (x.ilen % 8 || x.tlen % 12 || size > S32_MAX ||
	    next_base <= s->base || next_base - s->base > S32_MAX)
		goto out;
	n = x.ilen / 8;
	nt = x.tlen / 12;
	/*
	 * entries are more than an index interval apart, and each came with
	 * a time entry (a lost .timeindex is created empty)
	 */
	if (n > size / KREP_DISK_INDEX_BYTES + 1 || (n && !nt))
		goto out;
	ent = kvmalloc_array(max(n, 1U), sizeof(*ent), GFP_KERNEL);
	if (!ent) {
		err = -ENOMEM;
		goto out;
	}
	/* the .timeindex: timestamps and offsets rising, inside the segment */
	for (i = 0; i < nt; i++) {
		tidx_entry(te, i, &ts, &rel);
		if (rel >= next_base - s->base || (i && ts <= tmax) ||
		    (i && rel < ts_off - s->base))
			goto out;
		tmax = ts;
		ts_off = s->base + rel;
	}
	/* the .index: positions and offsets rising, inside the segment */
	for (i = 0; i < n; i++) {
		ent[i].rel_offset = be32_to_cpu(ie[2 * i]);
		ent[i].pos = be32_to_cpu(ie[2 * i + 1]);
		if (!ent[i].pos || ent[i].pos >= size ||
		    ent[i].rel_offset >= next_base - s->base ||
		    (i && (ent[i].pos <= ent[i - 1].pos ||
			   ent[i].rel_offset <= ent[i - 1].rel_offset)))
			goto out;
	}
	max_ts = tmax;
	err = scan_after_index(s, size, n ? ent[n - 1].pos : 0,
			       n ? ent[n - 1].rel_offset : -1, next_base,
			       &max_ts, &ts_off, &last);
	if (err)
		goto out;
	err = 1;
	if (!r->clean && !epochs_match(d, s, size, &last))
		goto out;
	/*
	 * no batch before entry i has a timestamp above that of the first
	 * time entry at or past its batch's last offset (written after
	 * them all), or else above the segment's largest
	 */
	for (i = 0, k = 0; i < n; i++) {
		for (; k < nt; k++) {
			tidx_entry(te, k, &ts, &rel);
			if (rel >= ent[i].rel_offset)
				break;
		}
		ent[i].ts_before = k < nt ? ts : max_ts;
	}
	seg_name(name, s->base, ".log");
	rf = krep_vfs_open(&d->dir, name, O_RDONLY);
	if (IS_ERR(rf)) {
		err = PTR_ERR(rf);
		rf = NULL;
		goto out;
	}
	if (r->expect == U64_MAX)
		krep_log_reset(&d->p->log, s->base);
	/*
	 * without room for the whole index at log_memory_max (or with
	 * entries it cannot take), the batches are read: the index then
	 * keeps the entries there is room for, as appends do
	 */
	if (krep_log_append_seg(&d->p->log, s->base, next_base, size, rf,
				ent, n, max_ts))
		goto out;
	err = 0;
	s->size = size;
	s->since_index = n ? size - ent[n - 1].pos : size;
	s->next = next_base;
	s->max_ts = max_ts;
	s->max_ts_off = ts_off;
	s->tindex_ts = tmax;
	r->expect = next_base;
	d->indexed++;
out:
	if (rf)
		fput(rf);		/* the memory log holds its own */
	kvfree(ent);
	seg_idx_free(&x);
	return err;
}

/*
 * Read one segment into the memory log: into memory for the tail
 * (@in_memory), which appends go on filling; the others stay in their
 * files, which the memory log serves them from. -EBADMSG: cut it at *@cut.
 */
static int recover_seg(struct recover *r, struct dseg *s, bool check_crc,
		       bool in_memory, loff_t *cut, const char **what)
{
	struct krep_disklog *d = r->d;
	char name[KREP_DISK_NAME_LEN + 1];
	struct file *rf = NULL;
	loff_t pos = 0;
	int err;

	*what = NULL;
	err = seg_open_files(d, s, false);
	if (err)
		return err;
	if (!in_memory) {
		seg_name(name, s->base, ".log");
		rf = krep_vfs_open(&d->dir, name, O_RDONLY);
		if (IS_ERR(rf))
			return PTR_ERR(rf);
	}
	err = recover_batches(r, s, check_crc, rf, &pos, what);
	*cut = pos;
	if (!err || err == -EBADMSG) {
		/* the entries of the batches kept */
		int ierr = index_flush(d, s);

		if (ierr) {
			err = ierr;	/* an I/O error, not a torn tail */
			*what = NULL;
		}
	}
	if (rf)
		fput(rf);		/* the memory log holds its own */
	return err;
}

/*
 * leader-epoch-checkpoint into the (empty) cache; a bad file is ignored.
 * Return: whether the cache came from the file.
 */
static bool load_epochs(struct krep_disklog *d)
{
	struct krep_partition *p = d->p;
	char *buf, *line, *cur;
	unsigned int n = 0, count, ver, epoch;
	u64 start;
	size_t len;

	buf = krep_vfs_read_file(&d->dir, "leader-epoch-checkpoint", SZ_1M,
				 &len);
	if (IS_ERR(buf))
		return false;	/* none (or unreadable): from the batches */
	cur = buf;
	line = strsep(&cur, "\n");
	if (!line || kstrtouint(line, 10, &ver) || ver)
		goto bad;
	line = strsep(&cur, "\n");
	if (!line || kstrtouint(line, 10, &count))
		goto bad;
	while ((line = strsep(&cur, "\n")) && *line) {
		if (sscanf(line, "%u %llu", &epoch, &start) != 2 ||
		    epoch > S32_MAX || start >= S64_MAX)
			goto bad;
		krep_epoch_assign(&p->epochs, epoch, start);
		n++;
	}
	if (n == count) {
		kvfree(buf);
		return true;
	}
bad:
	pr_warn("%s-%u: leader-epoch-checkpoint is malformed: the epochs come from the batches\n",
		p->topic->name, p->index);
	krep_epoch_destroy(&p->epochs);
	kvfree(buf);
	return false;
}

/* does each entry of @s's .txnindex (@len bytes at @t) end in @s? */
static int txn_in_seg(const u8 *t, size_t len, const struct dseg *s)
{
	u64 marker;
	size_t i;

	if (len % KREP_TXNINDEX_ENTRY)
		return -EINVAL;
	for (i = 0; i < len; i += KREP_TXNINDEX_ENTRY) {
		marker = get_unaligned_be64(t + i + KREP_TXNINDEX_LAST);
		if (marker < s->base || marker >= s->next)
			return -EINVAL;
	}
	return 0;
}

/* does a segment start at @offset? */
static bool seg_base_at(const struct krep_disklog *d, u64 offset)
{
	const struct dseg *s;

	list_for_each_entry(s, &d->segs, node) {
		if (s->base >= offset)
			return s->base == offset;
	}
	return false;
}

/*
 * The producer state from <@at>.snapshot, the .txnindex files of the
 * segments below @at, and the batches from @at on
 * (krep_producer_restore()). Return: 0, or why not, with a log line.
 */
static int load_snapshot(struct krep_disklog *d, u64 at)
{
	char name[KREP_DISK_NAME_LEN + 1];
	size_t slen, tlen = 0, len;
	u8 *snap, *txn = NULL, *t, *all;
	struct dseg *s;
	int err;

	seg_name(name, at, ".snapshot");
	snap = krep_vfs_read_file(&d->dir, name, SZ_64M, &slen);
	if (IS_ERR(snap)) {
		err = PTR_ERR(snap);
		snap = NULL;
		goto out;
	}
	list_for_each_entry(s, &d->segs, node) {
		if (s->base >= at)
			break;
		seg_name(name, s->base, ".txnindex");
		t = krep_vfs_read_file(&d->dir, name, SZ_64M, &len);
		err = PTR_ERR_OR_ZERO(t);
		if (err == -ENOENT)
			continue;
		if (err)
			goto out;
		err = txn_in_seg(t, len, s);
		if (err || !len || tlen + len > SZ_64M) {
			kvfree(t);
			if (!err && !len)
				continue;
			err = err ?: -EFBIG;
			goto out;
		}
		all = kvrealloc(txn, tlen, tlen + len, GFP_KERNEL);
		if (all)
			memcpy(all + tlen, t, len);
		kvfree(t);
		err = -ENOMEM;
		if (!all)
			goto out;
		txn = all;
		tlen += len;
	}
	err = krep_producer_restore(d->p, snap, slen, txn, tlen, at, true);
	if (!err) {
		/* a truncation after the load replays from here */
		struct krep_producer_saved sv = {
			.snap = snap, .snap_len = slen, .txn = txn,
			.txn_len = tlen,
		};

		krep_producer_keep(d->p, at, &sv);
		return 0;
	}
out:
	pr_warn("%s-%u: the producer snapshot at %llu cannot be used (%d)\n",
		pname(d), d->p->index, at, err);
	kvfree(snap);
	kvfree(txn);
	return err;
}

/*
 * The producer state from the newest snapshot that can be used: not past
 * the log end nor below its start, at a segment's base (a roll's) or at
 * the log end (a clean shutdown's), whole, and with every aborted
 * transaction below it in the .txnindex files below it, as the writer
 * leaves them (write_txnindexes()). Return: its offset, or U64_MAX when
 * none could be used: the caller rebuilds the state from the log.
 */
static u64 load_producers(struct krep_disklog *d, const struct offsets *snaps,
			  u64 leo)
{
	unsigned int i;
	u64 at;

	for (i = snaps->n; i > 0; i--) {
		at = snaps->v[i - 1];
		if (at > leo || at < d->p->log.start_offset ||
		    (at != leo && !seg_base_at(d, at)))
			continue;
		if (!load_snapshot(d, at))
			return at;
	}
	return U64_MAX;
}

/*
 * After the load, the producer state's files that stay are those a later
 * load may trust: the snapshots at segment bases up to the one read
 * (@used; U64_MAX: none), with the .txnindex files of the closed
 * segments below it. The others go: refused, past the log end, or not at
 * a segment's base (a clean shutdown's at the log end: appends follow),
 * and the tail's .txnindex, which its roll writes anew; so do the
 * temporary files of a write a crash cut short.
 */
static int tidy_producer_files(struct krep_disklog *d,
			       const struct seg_names *sn, u64 used)
{
	const struct offsets *o;
	char name[KREP_DISK_NAME_LEN + 5];
	struct dseg *s, *t = tail(d);
	unsigned int i, k;
	int err;

	/* one that stays could be taken later for another log's state */
	o = &sn->o[SN_SNAP];
	for (i = 0; i < o->n; i++) {
		if (used != U64_MAX && o->v[i] <= used &&
		    seg_base_at(d, o->v[i]))
			continue;
		seg_name(name, o->v[i], ".snapshot");
		err = krep_vfs_unlink(&d->dir, name);
		if (err && err != -ENOENT)
			return err;
	}
	for (k = SN_SNAP_TMP; k <= SN_TXN_TMP; k++) {
		o = &sn->o[k];
		for (i = 0; i < o->n; i++) {
			snprintf(name, sizeof(name), "%020llu%s", o->v[i],
				 sn_ext[k]);
			krep_vfs_unlink(&d->dir, name);
		}
	}
	list_for_each_entry(s, &d->segs, node)
		s->txn_done = s != t && used != U64_MAX && s->next <= used;
	if (!t)
		return 0;
	seg_name(name, t->base, ".txnindex");
	err = krep_vfs_unlink(&d->dir, name);
	return err == -ENOENT ? 0 : err;
}

/*
 * After a load that rebuilt the producer state from the log (no snapshot
 * could be used): each closed segment whose .txnindex holds what that
 * state gives it, or that has none and should have none, is taken as
 * written, so that the next roll does not write it again (two syncs
 * each). A file that differs, or cannot be read, is written by that roll.
 * p->lock held, HW set.
 */
static void keep_txnindexes(struct krep_disklog *d)
{
	char name[KREP_DISK_NAME_LEN + 1];
	struct krep_producer_saved sv;
	struct dseg *s, *t = tail(d);
	size_t at = 0, from, len;
	char *buf;

	if (krep_producer_save(d->p, &sv))
		return;		/* the roll writes them all, as before */
	list_for_each_entry(s, &d->segs, node) {
		if (s == t)
			break;
		seg_txn_span(&sv, s, &from, &at);
		seg_name(name, s->base, ".txnindex");
		buf = krep_vfs_read_file(&d->dir, name, SZ_64M, &len);
		if (IS_ERR(buf)) {
			s->txn_done = PTR_ERR(buf) == -ENOENT && at == from;
			continue;
		}
		/* an empty file is not Kafka's "none": the roll removes it */
		s->txn_done = len && len == at - from &&
			      !memcmp(buf, sv.txn + from, len);
		kvfree(buf);
	}
	krep_producer_saved_free(&sv);
}

/* the memory log from the segment files; p->lock held, p not yet seen */
static int recover(struct krep_disklog *d, const struct krep_disk_ckpt *ck,
		   bool clean, struct krep_status *st)
{
	struct krep_partition *p = d->p;
	struct recover r = { .d = d, .st = st, .expect = U64_MAX,
			     .clean = clean };
	struct seg_names sn = {};
	struct offsets *logs = &sn.o[SN_LOG];
	const char *what = NULL;
	char name[KREP_DISK_NAME_LEN + 1];
	bool cut_here = false, epochs_ok, below;
	struct dseg *s;
	unsigned int i;
	loff_t cut = 0;
	u64 start, leo;
	int err;

	err = krep_vfs_list(&d->dir, seg_entry, &sn) ?: sn.err;
	if (err)
		goto out;
	sort(logs->v, logs->n, sizeof(*logs->v), cmp_u64, NULL);
	sort(sn.o[SN_SNAP].v, sn.o[SN_SNAP].n, sizeof(u64), cmp_u64, NULL);
	r.buf_len = SZ_64K;
	r.buf = kvmalloc(r.buf_len, GFP_KERNEL);
	if (!r.buf) {
		err = -ENOMEM;
		goto out;
	}
	krep_epoch_destroy(&p->epochs);
	epochs_ok = load_epochs(d);
	for (i = 0; i < logs->n; i++) {
		s = seg_add(d, logs->v[i]);
		if (!s) {
			err = -ENOMEM;
			goto out;
		}
		if (cut_here) {
			seg_name(name, s->base, ".log");
			pr_warn("%s-%u: %s: removed, it follows the cut\n",
				p->topic->name, p->index, name);
			seg_unlink(d, s);
			continue;
		}
		/*
		 * below the tail, and after a clean shutdown or below the
		 * recovery point (synced), from the indexes (the epochs
		 * from their checkpoint, not the batches), as Kafka loads
		 * them; else the batches, with no CRCs for a clean shutdown
		 * or below the recovery point
		 */
		what = NULL;
		below = i + 1 < logs->n &&
			(clean || (ck->has_recovery &&
				   logs->v[i + 1] <= ck->recovery));
		err = epochs_ok && below ?
		      load_indexed(&r, s, logs->v[i + 1]) : 1;
		if (err > 0)
			err = recover_seg(&r, s, !clean && !below,
					  i + 1 == logs->n, &cut, &what);
		if (err && !what)
			goto out;
		if (err) {
			seg_name(name, s->base, ".log");
			pr_warn("%s-%u: %s: %s at byte %lld (offset %llu): truncated there\n",
				p->topic->name, p->index, name, what, cut,
				r.expect == U64_MAX ? s->base : r.expect);
			err = krep_vfs_truncate(s->log, cut);
			if (err)
				goto out;
			cut_here = true;
			if (!s->size && i) {
				/* its snapshot, at the log end, still holds */
				seg_remove(d, s, 1);
				continue;
			}
		}
		if (i + 1 < logs->n && !cut_here) {
			err = seg_time_entry(d, s) ?: index_flush(d, s);
			if (err)
				goto out;
			seg_close_files(s);
		}
	}
	s = tail(d);
	if (!s) {
		/* no segment: an empty log at the checkpointed log start */
		start = ck->has_start ? ck->log_start : 0;
		krep_log_reset(&p->log, start);
		s = roll(d, start);
		if (!s) {
			err = -EIO;
			goto out;
		}
	} else if (r.expect == U64_MAX) {
		/* segments, but no batch: the log starts at the first base */
		krep_log_reset(&p->log, list_first_entry(&d->segs, struct dseg,
							 node)->base);
		s->next = s->base;
	}
	err = seg_open_files(d, s, false);
	if (err)
		goto out;
	leo = p->log.end_offset;
	if (s->next != leo) {
		/* an empty tail after a cut: it must begin at the log end */
		seg_unlink(d, s);
		s = roll(d, leo);
		if (!s) {
			err = -EIO;
			goto out;
		}
	}
	d->end = leo;
	d->recovery = clean ? leo : min(ck->has_recovery ? ck->recovery : 0,
					 leo);
	if (ck->has_start && ck->log_start > p->log.start_offset)
		krep_log_advance_start(&p->log, min(ck->log_start, leo));
	/* as Kafka's recovery: epochs starting at or past the end go */
	krep_epoch_truncate_end(&p->epochs, leo);
	krep_epoch_truncate_start(&p->epochs, p->log.start_offset);
	if (p->role == KREP_ROLE_LEADER &&
	    krep_epoch_latest(&p->epochs) < (s64)p->leader_epoch)
		krep_epoch_assign(&p->epochs, p->leader_epoch, leo);
	p->hw = clamp(ck->has_hw ? ck->hw : 0, p->log.start_offset, leo);
	p->lso = p->hw;
	p->low_watermark = p->log.start_offset;
	d->snap_at = load_producers(d, &sn.o[SN_SNAP], leo);
	if (d->snap_at == U64_MAX)
		krep_producer_rebuild(p);
	err = tidy_producer_files(d, &sn, d->snap_at);
	if (err)
		goto out;
	d->loaded = list_count_nodes(&d->segs);
	/* a leader alone in its ISR (RF 1) has HW at its LEO at once */
	krep_partition_update_hw(p);
	/* after HW: an abort marker at or above it keeps the state unsaved */
	if (d->snap_at == U64_MAX)
		keep_txnindexes(d);
	p->log.cut = U64_MAX;
	err = 0;
out:
	kvfree(r.buf);
	for (i = 0; i < SN_KINDS; i++)
		kvfree(sn.o[i].v);
	return err;
}

/**
 * krep_disk_open - give @p its directory in @ld, recovering what it holds
 * @p: a new partition, not yet reachable by anyone
 * @ld: the broker's log directory
 * @st: why not, on failure
 *
 * Return: 0, or a negative errno with @st set.
 */
int krep_disk_open(struct krep_partition *p, struct krep_logdir *ld,
		   struct krep_status *st)
{
	char name[KREP_TOPIC_NAME_MAX + 12];
	struct krep_disk_ckpt ck = {};
	struct krep_disklog *d;
	int err;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, -ENOMEM,
				 "out of memory");
	d->p = p;
	mutex_init(&d->lock);
	INIT_LIST_HEAD(&d->segs);
	kthread_init_delayed_work(&d->work, disk_work);
	d->worker = &krep_disk_workers[(unsigned int)
				       atomic_inc_return(&krep_disk_next) %
				       krep_disk_nworkers];
	d->segment_bytes = p->topic->config.segment_bytes;
	snprintf(name, sizeof(name), "%s-%u", p->topic->name, p->index);
	err = krep_vfs_mkdir(&ld->root, name, &d->dir);
	if (err) {
		kfree(d);
		return krep_fail(st, KREP_KERR_KAFKA_STORAGE_ERROR, err,
				 "cannot create the partition's directory in the log directory");
	}
	krep_logdir_lookup(ld, p->topic->name, p->index, &ck);
	mutex_lock(&d->lock);
	mutex_lock(&p->lock);
	err = recover(d, &ck, ld->clean, st);
	if (!err) {
		WRITE_ONCE(p->disk, d);
		p->log.changed = disk_changed;
		/* the first round writes leader-epoch-checkpoint */
		p->flushed = d->recovery;
		d->last_flush_ms = krep_now_ms();
		kthread_mod_delayed_work(d->worker->kw, &d->work, 0);
	}
	mutex_unlock(&p->lock);
	mutex_unlock(&d->lock);
	if (err) {
		if (!st->why)
			krep_fail(st, KREP_KERR_KAFKA_STORAGE_ERROR, err,
				  "cannot read the partition's log from the log directory");
		pr_err("%s: recovery failed (%d): %s\n", name, err, st->why);
		disk_free(d);
		return err;
	}
	if (p->log.end_offset > p->log.start_offset && d->snap_at == U64_MAX)
		pr_info("%s: recovered offsets %llu..%llu, HW %llu%s: %u of %u segments from their indexes, producer state from the log\n",
			name, p->log.start_offset, p->log.end_offset - 1,
			p->hw, ld->clean ? " (clean shutdown)" : "",
			d->indexed, d->loaded);
	else if (p->log.end_offset > p->log.start_offset)
		pr_info("%s: recovered offsets %llu..%llu, HW %llu%s: %u of %u segments from their indexes, producer state from the snapshot at %llu%s\n",
			name, p->log.start_offset, p->log.end_offset - 1,
			p->hw, ld->clean ? " (clean shutdown)" : "",
			d->indexed, d->loaded, d->snap_at,
			d->snap_at < p->log.end_offset ?
			" and the log after it" : "");
	return 0;
}

void krep_disk_exit(void)
{
	while (krep_disk_nworkers)
		kthread_destroy_worker(krep_disk_workers[--krep_disk_nworkers].kw);
}

/* the writer threads: dedicated, so that reclaim never waits on a pool */
int krep_disk_init(void)
{
	unsigned int n = min(num_online_cpus() * KREP_DISK_THREADS_CPU,
			     KREP_DISK_THREADS);
	struct kthread_worker *kw;

	while (krep_disk_nworkers < n) {
		kw = kthread_create_worker(0, "krep_disk/%u",
					   krep_disk_nworkers);
		if (IS_ERR(kw)) {
			krep_disk_exit();
			return PTR_ERR(kw);
		}
		set_user_nice(kw->task, KREP_DISK_NICE);
		krep_disk_workers[krep_disk_nworkers].kw = kw;
		atomic_set(&krep_disk_workers[krep_disk_nworkers].kicked, 0);
		krep_disk_nworkers++;
	}
	return 0;
}
