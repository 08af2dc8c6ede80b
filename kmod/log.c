// SPDX-License-Identifier: GPL-2.0
/*
 * krep: the partition log (see log.h).
 *
 * A segment is a run of pages that batches are copied into back to back; a
 * batch may straddle a page boundary. Every KREP_INDEX_INTERVAL bytes the
 * segment's index records (offset, position) of the batch that starts
 * there, so a read binary-searches the index and scans at most one
 * interval of batch headers.
 *
 * Pages are charged to the broker's krep_mem before they are allocated; an
 * append that would pass the cap fails as a whole, and a batch becomes
 * visible (size, end offset) only after all of it has been copied. Pages
 * and arrays are also charged to a memory cgroup (KREP_GFP_DATA: the
 * producer's, or the broker's in work); an append past its memory.max
 * fails with -ENOMEM, the log unchanged.
 *
 * A follower receives a FETCH response's batches straight into the tail
 * segment's pages (krep_log_rx_reserve(), the socket writes, then
 * krep_log_rx_commit() checks and publishes them): one copy, socket to
 * log. While such a room is open, whatever else changes the log bumps
 * log->gen (the commit then finds the room gone and drops it), and an
 * append first seals the tail segment, so no one writes where a stale
 * receive may still be writing.
 *
 * With a log directory, memory holds only what is not yet on disk. Once
 * disklog.c has written and synced a segment that ends exactly where a
 * memory segment ends (the disk rolls where memory does, so file
 * positions are segment positions), krep_log_evict() gives that segment
 * its file and frees its pages: from then on its bytes are the page
 * cache's pages of the file. Reads of such a segment run under the same
 * lock but never wait for the disk there: a page not in the page cache
 * ends the read with -EAGAIN (or with what was read before it), and the
 * caller reads the missing pages in with the lock dropped
 * (krep_log_take_miss(), krep_log_fault_in()) and asks again. Only
 * truncation and the producer state's rebuild (krep_log_walk()) wait for
 * pages under the lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bvec.h>
#include <linux/errno.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "krep.h"
#include "log.h"
#include "record.h"

#define KREP_INDEX_INTERVAL	4096

/* slots of a new segment's page and index arrays; they double as needed */
#define KREP_SEG_GROW_MIN	16U

struct krep_segment {
	struct list_head node;
	u64 base_offset;
	u64 next_offset;
	u32 size;			/* bytes of batches */
	u32 cap;			/* bytes it may hold */
	unsigned int npages;		/* pages allocated so far */
	unsigned int pages_cap;		/* slots of @pages, grown as needed */
	struct page **pages;		/* up to cap / PAGE_SIZE slots */
	struct krep_index_entry *index;
	unsigned int nindex, index_cap;
	u32 last_index_pos;
	s64 max_ts;
	u64 created_ms;			/* for segment.ms */
	struct file *file;		/* on disk: its bytes are this file's */
};

void krep_log_init(struct krep_log *log, struct krep_mem *mem,
		   u32 segment_bytes, s64 segment_ms)
{
	INIT_LIST_HEAD(&log->segments);
	log->start_offset = 0;
	log->end_offset = 0;
	log->bytes = 0;
	log->segment_bytes = segment_bytes;
	log->segment_ms = segment_ms;
	log->mem = mem;
	log->changed = NULL;
	log->rolled = NULL;
	log->cut = U64_MAX;
	log->wait_io = false;
	log->miss.set = false;
}

/* tell the log directory's writer; @cut: the log now ends there */
static void log_changed(struct krep_log *log, u64 cut)
{
	log->cut = min(log->cut, cut);
	if (log->changed)
		log->changed(log);
}

static unsigned int seg_max_pages(const struct krep_segment *seg)
{
	return DIV_ROUND_UP(seg->cap, PAGE_SIZE);
}

static unsigned int seg_max_index(const struct krep_segment *seg)
{
	return seg->cap / KREP_INDEX_INTERVAL + 2;
}

/* @bytes more against log_memory_max: false (nothing charged) past it */
static bool mem_charge(struct krep_mem *mem, u64 bytes)
{
	if (atomic64_add_return(bytes, &mem->used) <= mem->max)
		return true;
	atomic64_sub(bytes, &mem->used);
	return false;
}

/*
 * grow the array *@arr of *@cap elements of @size to hold @need, at most
 * @max; what it grows by is charged to @charge first, when given
 */
static int grow(void **arr, unsigned int *cap, unsigned int need,
		unsigned int max, size_t size, struct krep_mem *charge)
{
	unsigned int n = min(max(need, *cap * 2), max);
	u64 more = (u64)(n - *cap) * size;
	void *p;

	if (need <= *cap)
		return 0;
	if (need > max)
		return -EMSGSIZE;
	if (charge && !mem_charge(charge, more))
		return -ENOSPC;
	p = kvmalloc_array(n, size, KREP_GFP_DATA);
	if (!p) {
		if (charge)
			atomic64_sub(more, &charge->used);
		return -ENOMEM;
	}
	if (*cap)
		memcpy(p, *arr, (size_t)*cap * size);
	kvfree(*arr);
	*arr = p;
	*cap = n;
	return 0;
}

static void seg_free(struct krep_log *log, struct krep_segment *seg)
{
	unsigned int i;

	for (i = 0; i < seg->npages; i++)
		__free_page(seg->pages[i]);
	atomic64_sub((u64)seg->npages * PAGE_SIZE +
		     (u64)seg->index_cap * sizeof(*seg->index),
		     &log->mem->used);
	if (seg->file)
		fput(seg->file);
	log->bytes -= seg->size;
	log->gen++;
	list_del(&seg->node);
	kvfree(seg->pages);
	kvfree(seg->index);
	kfree(seg);
	krep_obj_put(KREP_OBJ_SEGMENT);
}

void krep_log_destroy(struct krep_log *log)
{
	struct krep_segment *seg, *tmp;

	list_for_each_entry_safe(seg, tmp, &log->segments, node)
		seg_free(log, seg);
}

static struct krep_segment *seg_new(struct krep_log *log, u64 base)
{
	struct krep_segment *seg;

	seg = kzalloc(sizeof(*seg), KREP_GFP_DATA);
	if (!seg)
		return NULL;
	seg->base_offset = base;
	seg->next_offset = base;
	seg->cap = log->segment_bytes;
	seg->max_ts = -1;
	seg->created_ms = krep_now_ms();
	/*
	 * the arrays grow with the data, not to the segment's size at once;
	 * the index, which a segment keeps once on disk, from its first entry
	 */
	seg->pages_cap = min(seg_max_pages(seg), KREP_SEG_GROW_MIN);
	seg->pages = kvcalloc(seg->pages_cap, sizeof(*seg->pages),
			      KREP_GFP_DATA);
	if (!seg->pages) {
		kfree(seg);
		return NULL;
	}
	list_add_tail(&seg->node, &log->segments);
	krep_obj_get(KREP_OBJ_SEGMENT);
	return seg;
}

/* make room for @len more bytes in @seg: charge and allocate pages */
static int seg_reserve(struct krep_log *log, struct krep_segment *seg, u32 len)
{
	unsigned int need = DIV_ROUND_UP(seg->size + len, PAGE_SIZE);
	unsigned int more = need > seg->npages ? need - seg->npages : 0;
	struct krep_mem *mem = log->mem;

	if (!more)
		return 0;
	if (grow((void **)&seg->pages, &seg->pages_cap, need,
		 seg_max_pages(seg), sizeof(*seg->pages), NULL))
		return -ENOMEM;
	if (atomic64_add_return((u64)more * PAGE_SIZE, &mem->used) > mem->max) {
		atomic64_sub((u64)more * PAGE_SIZE, &mem->used);
		return -ENOSPC;
	}
	while (seg->npages < need) {
		struct page *page = alloc_page(KREP_GFP_DATA);

		if (!page) {
			/* uncharge what was not allocated; keep the rest */
			atomic64_sub((u64)(need - seg->npages) * PAGE_SIZE,
				     &mem->used);
			return -ENOMEM;
		}
		seg->pages[seg->npages++] = page;
	}
	return 0;
}

static void seg_write(struct krep_segment *seg, u32 pos, const u8 *src,
		      u32 len)
{
	while (len) {
		u32 off = offset_in_page(pos);
		u32 n = min_t(u32, len, PAGE_SIZE - off);

		memcpy_to_page(seg->pages[pos >> PAGE_SHIFT], off, src, n);
		pos += n;
		src += n;
		len -= n;
	}
}

/*
 * Page @idx of @seg, with a reference: its own, or its file's in the page
 * cache. A file's page that is not there (or not read yet) is -EAGAIN,
 * noted in log->miss for krep_log_take_miss(), unless log->wait_io lets
 * the read wait for it.
 */
static struct page *seg_page(struct krep_log *log,
			     const struct krep_segment *seg, unsigned int idx)
{
	struct page *page;

	if (!seg->file) {
		page = seg->pages[idx];
		get_page(page);
		return page;
	}
	if (log->wait_io)
		return read_mapping_page(seg->file->f_mapping, idx, seg->file);
	page = find_get_page(seg->file->f_mapping, idx);
	if (page && PageUptodate(page))
		return page;
	if (page)
		put_page(page);
	log->miss.base = seg->base_offset;
	log->miss.index = idx;
	log->miss.set = true;
	return ERR_PTR(-EAGAIN);
}

/*
 * A page the CRC check has just read: should reclaim have taken it from
 * the page cache since, wait for it, rather than end a batch half sent.
 */
static struct page *seg_page_again(struct krep_log *log,
				   const struct krep_segment *seg,
				   unsigned int idx)
{
	struct page *page = seg_page(log, seg, idx);

	if (PTR_ERR_OR_ZERO(page) != -EAGAIN)
		return page;
	log->miss.set = false;
	return read_mapping_page(seg->file->f_mapping, idx, seg->file);
}

static int seg_read(struct krep_log *log, const struct krep_segment *seg,
		    u32 pos, u8 *dst, u32 len)
{
	while (len) {
		u32 off = offset_in_page(pos);
		u32 n = min_t(u32, len, PAGE_SIZE - off);
		struct page *page = seg_page(log, seg, pos >> PAGE_SHIFT);

		if (IS_ERR(page))
			return PTR_ERR(page);
		memcpy_from_page(dst, page, off, n);
		put_page(page);
		pos += n;
		dst += n;
		len -= n;
	}
	return 0;
}

/*
 * Parse the header of the batch at @pos of @seg (and a control type).
 * Return: 0, -EAGAIN (its page is on disk), or -EIO.
 */
static int seg_batch_at(struct krep_log *log, const struct krep_segment *seg,
			u32 pos, struct krep_batch *b)
{
	u8 hdr[KREP_RB_HDR_LEN + KREP_CTRL_PEEK_LEN];
	u32 n = min_t(u32, sizeof(hdr), seg->size - min(pos, seg->size));
	int err;

	if (n < KREP_RB_HDR_LEN)
		return -EIO;
	err = seg_read(log, seg, pos, hdr, n);
	if (err)
		return err == -EAGAIN ? err : -EIO;
	if (krep_batch_parse(hdr, n, b) || pos + b->len > seg->size)
		return -EIO;
	return 0;
}

/*
 * CRC-32C of a stored batch, computed over its pages in place.
 * Return: 0, -EBADMSG when it does not match, -EAGAIN or -EIO.
 */
static int seg_crc_check(struct krep_log *log, const struct krep_segment *seg,
			 u32 pos, u32 len)
{
	u32 crc = ~0U, want, at = pos + KREP_RB_ATTRIBUTES, end = pos + len;
	__be32 stored;
	int err;

	err = seg_read(log, seg, pos + KREP_RB_CRC, (u8 *)&stored,
		       sizeof(stored));
	if (err)
		return err == -EAGAIN ? err : -EIO;
	want = be32_to_cpu(stored);
	while (at < end) {
		u32 off = offset_in_page(at);
		u32 n = min_t(u32, end - at, PAGE_SIZE - off);
		struct page *page = seg_page(log, seg, at >> PAGE_SHIFT);
		u8 *addr;

		if (IS_ERR(page))
			return PTR_ERR(page) == -EAGAIN ? -EAGAIN : -EIO;
		addr = kmap_local_page(page);
		crc = krep_crc32c(crc, addr + off, n);
		kunmap_local(addr);
		put_page(page);
		at += n;
	}
	return (crc ^ ~0U) == want ? 0 : -EBADMSG;
}

/*
 * index @b, about to start at @seg's end, when an interval has passed;
 * the index counts against log_memory_max (16 bytes an interval), since a
 * segment keeps it once its pages are its file's
 */
static void seg_index(struct krep_log *log, struct krep_segment *seg,
		      const struct krep_batch *b)
{
	if (seg->size && seg->size - seg->last_index_pos < KREP_INDEX_INTERVAL)
		return;
	/* without room the entry is skipped: a lookup scans a little more */
	grow((void **)&seg->index, &seg->index_cap, seg->nindex + 1,
	     seg_max_index(seg), sizeof(*seg->index), log->mem);
	if (seg->nindex < seg->index_cap) {
		seg->index[seg->nindex].rel_offset =
			b->base_offset - seg->base_offset;
		seg->index[seg->nindex].pos = seg->size;
		seg->index[seg->nindex].ts_before = seg->max_ts;
		seg->nindex++;
		seg->last_index_pos = seg->size;
	}
}

/* @b, written at @seg's end, becomes part of the log */
static void seg_publish(struct krep_log *log, struct krep_segment *seg,
			const struct krep_batch *b)
{
	seg_index(log, seg, b);
	seg->size += b->len;
	seg->next_offset = krep_batch_last(b) + 1;
	seg->max_ts = max(seg->max_ts, b->max_ts);
	log->bytes += b->len;
	log->end_offset = seg->next_offset;
}

/*
 * Is @seg too old for more (segment.ms)? As Kafka, a segment rolls at the
 * first append after it has been open that long, never on its own.
 */
static bool seg_aged(const struct krep_log *log,
		     const struct krep_segment *seg)
{
	return seg->size &&
	       krep_now_ms() - seg->created_ms >= (u64)log->segment_ms;
}

/* the segment the next @len bytes go to, the tail or a new one, with pages */
static struct krep_segment *tail_reserve(struct krep_log *log, u32 len,
					 int *errp)
{
	struct krep_segment *seg = NULL;
	int err;

	if (!list_empty(&log->segments))
		seg = list_last_entry(&log->segments, struct krep_segment, node);
	if (!seg || seg->file || len > seg->cap - seg->size ||
	    seg_aged(log, seg)) {
		seg = seg_new(log, log->end_offset);
		if (!seg) {
			*errp = -ENOMEM;
			return NULL;
		}
		if (log->rolled)
			log->rolled(log);
	}
	err = seg_reserve(log, seg, len);
	if (err) {
		if (!seg->size)
			seg_free(log, seg);
		*errp = err;
		return NULL;
	}
	return seg;
}

/* a writer other than the open room's receive: seal the tail first */
static void rx_close(struct krep_log *log)
{
	struct krep_segment *seg;

	if (!log->rx_open)
		return;
	log->rx_open = false;
	log->gen++;
	if (!list_empty(&log->segments)) {
		seg = list_last_entry(&log->segments, struct krep_segment, node);
		seg->cap = seg->size;
	}
}

/**
 * krep_log_append - append one stamped batch at the log end
 * @log: the log
 * @batch: a checked RecordBatch
 * @len: its length, at most the segment size
 * @base_offset: the offset to stamp, the log end offset
 * @leader_epoch: the epoch to stamp in partitionLeaderEpoch
 *
 * Return: 0; -ENOSPC when the broker's memory cap would be passed;
 * -EMSGSIZE when the batch is larger than a segment; -ENOMEM.
 * On failure the log is unchanged.
 */
int krep_log_append(struct krep_log *log, const u8 *batch, u32 len,
		    u64 base_offset, u32 leader_epoch)
{
	u8 stamp[KREP_RB_LEADER_EPOCH + 4];
	struct krep_segment *seg = NULL;
	struct krep_batch b;
	int err;

	if (len > log->segment_bytes)
		return -EMSGSIZE;
	if (krep_batch_parse(batch, len, &b))
		return -EINVAL;
	b.base_offset = base_offset;
	rx_close(log);
	seg = tail_reserve(log, len, &err);
	if (!seg)
		return err;
	/* the stamp replaces the first 16 bytes, which the CRC does not cover */
	memcpy(stamp, batch, sizeof(stamp));
	krep_batch_stamp(stamp, base_offset, leader_epoch);
	seg_write(seg, seg->size, stamp, sizeof(stamp));
	seg_write(seg, seg->size + sizeof(stamp), batch + sizeof(stamp),
		  len - sizeof(stamp));
	seg_publish(log, seg, &b);
	log_changed(log, U64_MAX);
	return 0;
}

/**
 * krep_log_slot_get - room at the log end for one batch, mapped flat
 * @log: the log
 * @len: the batch's length, at most a segment
 * @s: set up; krep_log_slot_put() it in every case
 *
 * Nothing is visible to readers, or written to disk, before
 * krep_log_slot_publish(); the pages of a slot not published go back.
 *
 * Return: 0; -EMSGSIZE when @len is larger than a segment; -ENOSPC when
 * the broker's memory cap would be passed; -ENOMEM.
 */
int krep_log_slot_get(struct krep_log *log, u32 len, struct krep_log_slot *s)
{
	struct krep_segment *seg;
	int err;

	memset(s, 0, sizeof(*s));
	if (!len || len > log->segment_bytes)
		return -EMSGSIZE;
	rx_close(log);
	seg = tail_reserve(log, len, &err);
	if (!seg)
		return err;
	s->nr = DIV_ROUND_UP(offset_in_page(seg->size) + len, PAGE_SIZE);
	s->seg = seg;
	s->map = vm_map_ram(seg->pages + (seg->size >> PAGE_SHIFT), s->nr,
			    NUMA_NO_NODE);
	if (!s->map) {
		s->nr = 0;
		return -ENOMEM;
	}
	s->batch = s->map + offset_in_page(seg->size);
	return 0;
}

/**
 * krep_log_slot_publish - make the checked batch in @s part of the log
 * @log: the log
 * @s: from krep_log_slot_get(), with no change to the log since
 * @b: the batch's header, as krep_batch_check() parsed it
 * @base_offset: the offset to stamp, the log end offset
 * @leader_epoch: the epoch to stamp in partitionLeaderEpoch
 */
void krep_log_slot_publish(struct krep_log *log, struct krep_log_slot *s,
			   const struct krep_batch *b, u64 base_offset,
			   u32 leader_epoch)
{
	struct krep_batch pb = *b;

	krep_batch_stamp(s->batch, base_offset, leader_epoch);
	pb.base_offset = base_offset;
	seg_publish(log, s->seg, &pb);
	s->published = true;
	log_changed(log, U64_MAX);
}

/*
 * A slot that was not published: give back the pages reserved past the
 * tail's last byte, and the tail itself when the slot opened it (no one
 * has seen it: the log did not change), as tail_reserve() does on error
 */
static void slot_drop(struct krep_log *log, struct krep_segment *seg)
{
	unsigned int keep = DIV_ROUND_UP(seg->size, PAGE_SIZE);

	if (!seg->size) {
		seg_free(log, seg);
		return;
	}
	if (seg->npages <= keep)
		return;
	atomic64_sub((u64)(seg->npages - keep) * PAGE_SIZE, &log->mem->used);
	while (seg->npages > keep)
		__free_page(seg->pages[--seg->npages]);
}

/**
 * krep_log_slot_put - end @s: unmap it, and drop it unless published
 * @log: the log, under the same lock since krep_log_slot_get()
 * @s: the slot; a second call does nothing
 */
void krep_log_slot_put(struct krep_log *log, struct krep_log_slot *s)
{
	if (s->map) {
		flush_kernel_vmap_range(s->map, s->nr << PAGE_SHIFT);
		vm_unmap_ram(s->map, s->nr);
	}
	if (s->seg && !s->published)
		slot_drop(log, s->seg);
	memset(s, 0, sizeof(*s));
}

/**
 * krep_log_rx_reserve - room at the log end for a socket to write into
 * @log: the log
 * @len: bytes, at most a segment: in the tail segment, or a new one
 * @rx: set up on success; release it with krep_log_rx_release()
 *
 * Return: 0; -EXFULL when @len is larger than a segment (or the tail
 * does not end at the log end): the caller receives into a buffer and
 * appends from it; -ENOSPC when the broker's memory cap would be passed;
 * -ENOMEM.
 */
int krep_log_rx_reserve(struct krep_log *log, u32 len, struct krep_log_rx *rx)
{
	struct krep_segment *seg;
	unsigned int n = 0;
	u32 at, end;
	int err;

	memset(rx, 0, sizeof(*rx));
	rx_close(log);		/* a room left open: never two at one place */
	if (!len || len > log->segment_bytes)
		return -EXFULL;
	seg = list_empty(&log->segments) ? NULL :
	      list_last_entry(&log->segments, struct krep_segment, node);
	if (seg && seg->next_offset != log->end_offset)
		return -EXFULL;
	/* an empty tail segment left by a dropped room is harmless */
	seg = tail_reserve(log, len, &err);
	if (!seg)
		return err;
	rx->bvec = kvmalloc_array(DIV_ROUND_UP(len, PAGE_SIZE) + 1,
				  sizeof(*rx->bvec), KREP_GFP_DATA);
	if (!rx->bvec)
		return -ENOMEM;
	for (at = seg->size, end = seg->size + len; at < end; n++) {
		u32 off = offset_in_page(at);
		u32 k = min_t(u32, end - at, PAGE_SIZE - off);
		struct page *page = seg->pages[at >> PAGE_SHIFT];

		get_page(page);
		bvec_set_page(&rx->bvec[n], page, k, off);
		at += k;
	}
	rx->nr = n;
	rx->seg = seg;
	rx->pos = seg->size;
	rx->len = len;
	rx->gen = log->gen;
	log->rx_open = true;
	return 0;
}

/**
 * krep_log_rx_commit - make the batches a socket wrote into @rx part of
 * the log
 * @log: the log
 * @rx: the room, filled
 * @done: told of each batch published (may be NULL)
 * @arg: for @done
 *
 * Each batch must pass its CRC check in place and start at the log end
 * offset; those before the first that does not are kept.
 *
 * Return: 0; -ESTALE when the room is gone (the log changed meanwhile:
 * nothing is published); -EBADMSG for a malformed or corrupt batch;
 * -EPROTO for one that does not start at the log end.
 */
int krep_log_rx_commit(struct krep_log *log, struct krep_log_rx *rx,
		       krep_log_batch_t done, void *arg)
{
	struct krep_segment *seg = rx->seg;
	u32 pos = rx->pos, end = rx->pos + rx->len;
	u8 hdr[KREP_RB_HDR_LEN + KREP_CTRL_PEEK_LEN];
	struct krep_batch b;
	u32 n;

	if (!seg || rx->gen != log->gen || !log->rx_open)
		return -ESTALE;
	log->rx_open = false;
	while (pos < end) {
		n = min_t(u32, sizeof(hdr), end - pos);
		if (n < KREP_RB_HDR_LEN)
			return -EBADMSG;
		if (seg_read(log, seg, pos, hdr, n) ||
		    krep_batch_parse(hdr, n, &b) || b.len > end - pos ||
		    seg_crc_check(log, seg, pos, b.len))
			return -EBADMSG;
		if (b.base_offset != log->end_offset)
			return -EPROTO;
		seg_publish(log, seg, &b);
		log_changed(log, U64_MAX);
		if (done)
			done(&b, arg);
		pos += b.len;
	}
	return 0;
}

/* the room will not be committed (the receive failed or was dropped) */
void krep_log_rx_abort(struct krep_log *log, struct krep_log_rx *rx)
{
	if (rx->seg && rx->gen == log->gen)
		log->rx_open = false;
}

/* drop @rx's page references; the log need not exist any more */
void krep_log_rx_release(struct krep_log_rx *rx)
{
	unsigned int i;

	for (i = 0; i < rx->nr; i++)
		put_page(rx->bvec[i].bv_page);
	kvfree(rx->bvec);
	memset(rx, 0, sizeof(*rx));
}

static struct krep_segment *find_segment(struct krep_log *log, u64 offset)
{
	struct krep_segment *seg;

	list_for_each_entry_reverse(seg, &log->segments, node) {
		if (seg->base_offset <= offset)
			return offset < seg->next_offset ? seg : NULL;
	}
	return NULL;
}

/* position in @seg of the batch holding @offset; -ENOENT, -EAGAIN, -EIO */
static int find_pos(struct krep_log *log, const struct krep_segment *seg,
		    u64 offset, u32 *posp)
{
	int err;

	u32 rel = offset - seg->base_offset, pos = 0;
	unsigned int lo = 0, hi = seg->nindex;
	struct krep_batch b;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (seg->index[mid].rel_offset <= rel) {
			pos = seg->index[mid].pos;
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	while (pos < seg->size) {
		err = seg_batch_at(log, seg, pos, &b);
		if (err)
			return err;
		if (krep_batch_last(&b) >= offset) {
			*posp = pos;
			return 0;
		}
		pos += b.len;
	}
	return -ENOENT;
}

struct read_cursor {
	struct krep_log *log;
	struct krep_segment *seg;
	u32 pos;
};

/* the batch under the cursor, stepping to the next segment at an end */
static int cursor_batch(struct read_cursor *c, struct krep_batch *b)
{
	while (c->pos >= c->seg->size) {
		if (list_is_last(&c->seg->node, &c->log->segments))
			return -ENOENT;
		c->seg = list_next_entry(c->seg, node);
		c->pos = 0;
	}
	return seg_batch_at(c->log, c->seg, c->pos, b);
}

/*
 * Where a read ends on an error: with what it has when a page was not in
 * memory (the caller reads it in and asks again for the rest), with the
 * error otherwise.
 */
static long read_end(long total, int err)
{
	if (err == -ENOENT)
		return total;
	if (err == -EAGAIN && total)
		return total;
	return err;
}

/* the cursor at the batch holding @offset; -ENOENT when there is none */
static int cursor_at(struct read_cursor *c, u64 offset)
{
	c->seg = find_segment(c->log, offset);
	if (!c->seg)
		return -ENOENT;
	return find_pos(c->log, c->seg, offset, &c->pos);
}

/* walk the batches from @offset and count the bytes to serve */
static long walk_read(struct krep_log *log, u64 offset, u32 max_bytes,
		      krep_log_filter_t filter, void *arg)
{
	struct read_cursor c = { .log = log };
	struct krep_batch b;
	long total = 0;
	int err;

	err = cursor_at(&c, offset);
	while (!err && !(err = cursor_batch(&c, &b))) {
		enum krep_log_verdict v = filter(&b, arg);

		if (v == KREP_LOG_STOP)
			break;
		if (v == KREP_LOG_TAKE) {
			if (total && total + b.len > max_bytes)
				break;
			total += b.len;
		}
		c.pos += b.len;
	}
	return err ? read_end(total, err) : total;
}

/**
 * krep_log_read_frags - hand out whole batches from @offset as page pieces
 * @log: the log
 * @offset: first offset wanted; the batch holding it is the first served
 * @max_bytes: soft limit; the first batch is served whatever its size
 * @filter: decides for each batch
 * @arg: for @filter
 * @emit: called for each piece; it takes its own page reference
 * @ctx: for @emit
 *
 * A batch of a segment on disk has its CRC checked in place first (one
 * in memory was checked when it was appended). No byte is copied: the
 * pieces are for kernel_sendpage(), the page cache's own pages for a
 * segment on disk.
 *
 * Return: bytes handed out, -EBADMSG for a batch read back from disk
 * whose CRC no longer matches, -EAGAIN when the first batch's pages are on disk only (see
 * krep_log_take_miss(); later ones end the read short), -EIO, or the
 * error of @emit.
 */
long krep_log_read_frags(struct krep_log *log, u64 offset, u32 max_bytes,
			 krep_log_filter_t filter, void *arg,
			 krep_log_frag_t emit, void *ctx)
{
	struct read_cursor c = { .log = log };
	struct krep_batch b;
	long total = 0;
	int err;

	err = cursor_at(&c, offset);
	while (!err && !(err = cursor_batch(&c, &b))) {
		enum krep_log_verdict v = filter(&b, arg);
		u32 at, end;

		if (v == KREP_LOG_STOP)
			break;
		if (v == KREP_LOG_TAKE) {
			if (total && total + b.len > max_bytes)
				break;
			/*
			 * Pages in memory were checked when they were
			 * appended; a batch read back from its file is
			 * checked again (and its pages found first)
			 */
			if (c.seg->file) {
				err = seg_crc_check(log, c.seg, c.pos, b.len);
				if (err)
					break;
			}
			for (at = c.pos, end = c.pos + b.len; at < end;) {
				u32 off = offset_in_page(at);
				u32 n = min_t(u32, end - at, PAGE_SIZE - off);
				struct page *page;

				page = seg_page_again(log, c.seg,
						      at >> PAGE_SHIFT);
				if (IS_ERR(page))
					return -EIO;
				err = emit(page, off, n, ctx);
				put_page(page);
				if (err)
					return err;
				at += n;
			}
			total += b.len;
		}
		c.pos += b.len;
	}
	return err ? read_end(total, err) : total;
}

/**
 * krep_log_read_size - bytes krep_log_read_frags() would hand out
 * @log: the log
 * @offset: first offset wanted; the batch holding it is the first served
 * @max_bytes: soft limit; the first batch is served whatever its size
 * @filter: decides for each batch (stop at HW/LSO, skip aborted ones)
 * @arg: for @filter
 *
 * Return: bytes (0: nothing to serve) or -EIO.
 */
long krep_log_read_size(struct krep_log *log, u64 offset, u32 max_bytes,
			krep_log_filter_t filter, void *arg)
{
	return walk_read(log, offset, max_bytes, filter, arg);
}

/*
 * Where in @seg the first batch with a timestamp of at least @ts may be:
 * at the last index entry before which every batch is earlier (the time
 * index: the entries' ts_before only grow), so that a lookup walks the
 * batches of one index interval, not of the whole segment.
 */
static u32 ts_pos(const struct krep_segment *seg, s64 ts)
{
	unsigned int lo = 0, hi = seg->nindex;
	u32 pos = 0;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (seg->index[mid].ts_before < ts) {
			pos = seg->index[mid].pos;
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return pos;
}

/*
 * LIST_OFFSETS by time: the first offset whose record timestamp is at
 * least @ts; -ENOENT when no record is that late, -EAGAIN when a page it
 * needs is on disk only (krep_log_take_miss()), -EIO or -ENOMEM. The time
 * index finds the batch; only that batch is copied, to read its records'
 * timestamps.
 */
s64 krep_log_offset_for_ts(struct krep_log *log, s64 ts, s64 *found_ts)
{
	struct krep_segment *seg;
	struct krep_batch b;
	u8 *buf;
	u32 pos;
	s64 off;
	int err;

	list_for_each_entry(seg, &log->segments, node) {
		if (seg->max_ts < ts)
			continue;
		for (pos = ts_pos(seg, ts); pos < seg->size; pos += b.len) {
			err = seg_batch_at(log, seg, pos, &b);
			if (err)
				return err;
			if (b.max_ts < ts ||
			    krep_batch_last(&b) < log->start_offset)
				continue;
			buf = kvmalloc(b.len, GFP_KERNEL_ACCOUNT);
			if (!buf)
				return -ENOMEM;
			err = seg_read(log, seg, pos, buf, b.len);
			off = err ?: krep_batch_offset_for_ts(buf, b.len, ts,
							      log->start_offset,
							      found_ts);
			kvfree(buf);
			if (off >= 0 || off == -EAGAIN)
				return off;
			if (err)
				return -EIO;
		}
	}
	return -ENOENT;
}

/* the base offset of the segment holding @offset, U64_MAX when none does */
u64 krep_log_segment_base(struct krep_log *log, u64 offset)
{
	struct krep_segment *seg = find_segment(log, offset);

	return seg ? seg->base_offset : U64_MAX;
}

/**
 * krep_log_walk - show @filter every batch from @offset, as
 * krep_log_read_size() does, waiting for pages that are on disk only
 * @log: the log
 * @offset: where to start
 * @filter: sees each batch; KREP_LOG_STOP ends the walk
 * @arg: for @filter
 *
 * For what must see the whole log under its lock (the producer state's
 * rebuild after a truncation or a load).
 *
 * Return: 0 or a negative errno.
 */
int krep_log_walk(struct krep_log *log, u64 offset, krep_log_filter_t filter,
		  void *arg)
{
	long n;

	log->wait_io = true;
	n = walk_read(log, offset, U32_MAX, filter, arg);
	log->wait_io = false;
	return n < 0 ? n : 0;
}

/**
 * krep_log_evict - a segment is on disk: serve it from its file, and hand
 * its pages out to be freed
 * @log: the log
 * @base: the segment file's base offset
 * @next: the offset after its last batch
 * @size: its bytes
 * @file: the segment's .log, open for reading; the log takes a reference
 * @ev: set to the pages, for krep_log_evicted_free() once the log's lock
 *	is dropped (freeing a segment's thousands of pages is not done
 *	under it); uncharged from the broker's log memory at once
 *
 * The memory segment must hold exactly what the file does (same base,
 * end and size: the same batches at the same positions) and must not be
 * the log's last one, which appends still fill.
 *
 * Return: true when the segment now lives in @file.
 */
bool krep_log_evict(struct krep_log *log, u64 base, u64 next, u32 size,
		    struct file *file, struct krep_log_evicted *ev)
{
	struct krep_segment *seg = find_segment(log, base);

	memset(ev, 0, sizeof(*ev));
	if (!seg || seg->file || seg->base_offset != base ||
	    seg->next_offset != next || seg->size != size ||
	    list_is_last(&seg->node, &log->segments))
		return false;
	atomic64_sub((u64)seg->npages * PAGE_SIZE, &log->mem->used);
	ev->pages = seg->pages;
	ev->npages = seg->npages;
	seg->pages = NULL;
	seg->npages = 0;
	seg->pages_cap = 0;
	seg->file = get_file(file);
	return true;
}

/* free what krep_log_evict() handed out; sends hold their own references */
void krep_log_evicted_free(struct krep_log_evicted *ev)
{
	while (ev->npages)
		__free_page(ev->pages[--ev->npages]);
	kvfree(ev->pages);
	ev->pages = NULL;
}

/**
 * krep_log_append_file - at load, a batch that stays in its segment file
 * @log: the log
 * @b: the batch's header; its base offset is the log end
 * @pos: where it starts in @file
 * @file: the segment's .log, open for reading (a new segment takes a
 *	  reference)
 *
 * Return: 0, -EINVAL when @pos is not where the segment of @file ends
 * (a new segment starts at 0), or -ENOMEM.
 */
int krep_log_append_file(struct krep_log *log, const struct krep_batch *b,
			 u32 pos, struct file *file)
{
	struct krep_segment *seg = NULL;

	if (!list_empty(&log->segments))
		seg = list_last_entry(&log->segments, struct krep_segment, node);
	if (!seg || seg->file != file) {
		if (pos)
			return -EINVAL;
		rx_close(log);
		seg = seg_new(log, log->end_offset);
		if (!seg)
			return -ENOMEM;
		seg->file = get_file(file);
	}
	if (seg->size != pos || b->base_offset != log->end_offset ||
	    b->len > U32_MAX - pos)
		return -EINVAL;
	seg_publish(log, seg, b);
	return 0;
}

/**
 * krep_log_append_seg - at load, a whole segment that stays in its file,
 * from its indexes instead of its batches
 * @log: the log; @base must be its end
 * @base: the segment's base offset
 * @next: the offset after its last batch
 * @size: its bytes
 * @file: its .log, open for reading (the segment takes a reference)
 * @ent: its index, positions and offsets rising, as struct
 *	 krep_index_entry says (Kafka's .index, the last offset of each
 *	 batch, will do)
 * @n: entries of @ent
 * @max_ts: the segment's largest timestamp
 *
 * The index is charged to log_memory_max as an appended segment's.
 *
 * Return: 0, -EINVAL for entries out of order or a segment that does not
 * begin at the log end, -ENOSPC past log_memory_max, -EMSGSIZE for more
 * entries than @size has intervals, or -ENOMEM.
 */
int krep_log_append_seg(struct krep_log *log, u64 base, u64 next, u32 size,
			struct file *file, const struct krep_index_entry *ent,
			unsigned int n, s64 max_ts)
{
	struct krep_segment *seg;
	unsigned int i;
	int err;

	if (base != log->end_offset || next < base || next - base > S32_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (ent[i].pos >= size || ent[i].rel_offset >= next - base ||
		    (i && (ent[i].pos <= ent[i - 1].pos ||
			   ent[i].rel_offset < ent[i - 1].rel_offset)))
			return -EINVAL;
	}
	rx_close(log);
	seg = seg_new(log, base);
	if (!seg)
		return -ENOMEM;
	seg->cap = size;			/* sealed */
	if (n) {
		err = grow((void **)&seg->index, &seg->index_cap, n,
			   seg_max_index(seg), sizeof(*seg->index), log->mem);
		if (err) {
			seg_free(log, seg);
			return err;
		}
		memcpy(seg->index, ent, n * sizeof(*ent));
		seg->nindex = n;
		seg->last_index_pos = ent[n - 1].pos;
	}
	seg->file = get_file(file);
	seg->size = size;
	seg->next_offset = next;
	seg->max_ts = max_ts;
	log->bytes += size;
	log->end_offset = next;
	return 0;
}

/**
 * krep_log_take_miss - what a read that ended with -EAGAIN (or short)
 * found only on disk
 * @log: the log, under its lock
 * @m: set to the segment file (a reference) and the page to read
 *
 * Return: true when there is such a page; then krep_log_fault_in() it
 * with the lock dropped, ask again, and krep_log_miss_release() @m.
 */
bool krep_log_take_miss(struct krep_log *log, struct krep_log_miss *m)
{
	struct krep_segment *seg;

	memset(m, 0, sizeof(*m));
	if (!log->miss.set)
		return false;
	log->miss.set = false;
	seg = find_segment(log, log->miss.base);
	if (!seg || seg->base_offset != log->miss.base || !seg->file)
		return false;
	m->file = get_file(seg->file);
	m->index = log->miss.index;
	return true;
}

/**
 * krep_log_fault_in - read @m's pages into the page cache
 * @m: from krep_log_take_miss()
 *
 * Reads ahead KREP_LOG_READAHEAD pages and holds the first
 * KREP_LOG_FAULT_PIN of them until krep_log_miss_release(), so that the
 * read asked again finds them whatever reclaim does meanwhile. Sleeps:
 * never under the log's lock.
 */
void krep_log_fault_in(struct krep_log_miss *m)
{
	struct address_space *mapping = m->file->f_mapping;
	loff_t size = i_size_read(file_inode(m->file));
	struct file_ra_state ra;
	pgoff_t last;
	struct page *page;

	if (!size)
		return;
	last = (size - 1) >> PAGE_SHIFT;
	if (m->index > last)
		return;
	file_ra_state_init(&ra, mapping);
	page_cache_sync_readahead(mapping, &ra, m->file, m->index,
				  min_t(pgoff_t, KREP_LOG_READAHEAD,
					last - m->index + 1));
	while (m->nr < KREP_LOG_FAULT_PIN && m->index + m->nr <= last) {
		page = read_mapping_page(mapping, m->index + m->nr, m->file);
		if (IS_ERR(page))
			break;
		m->pages[m->nr++] = page;
	}
}

void krep_log_miss_release(struct krep_log_miss *m)
{
	unsigned int i;

	for (i = 0; i < m->nr; i++)
		put_page(m->pages[i]);
	if (m->file)
		fput(m->file);
	memset(m, 0, sizeof(*m));
}

/* move the log start offset forward, freeing the segments below it */
void krep_log_advance_start(struct krep_log *log, u64 offset)
{
	struct krep_segment *seg, *tmp;

	if (offset <= log->start_offset)
		return;
	log->start_offset = min(offset, log->end_offset);
	list_for_each_entry_safe(seg, tmp, &log->segments, node) {
		if (seg->next_offset > log->start_offset)
			break;
		seg_free(log, seg);
	}
	log_changed(log, U64_MAX);
}

/*
 * Drop everything and restart the log at @offset (a follower that fell
 * below its leader's log start).
 */
void krep_log_reset(struct krep_log *log, u64 offset)
{
	log->gen++;
	log->rx_open = false;
	krep_log_destroy(log);
	log->start_offset = offset;
	log->end_offset = offset;
	log_changed(log, offset);
}

/**
 * krep_log_truncate - drop every batch at or after @offset
 * @log: the log
 * @offset: the new end; a batch holding it goes whole
 *
 * The segment that keeps a tail is sealed: later appends start a new one,
 * so no page whose old bytes may still be queued on a socket by
 * reference (zero-copy sends) is ever written again.
 *
 * Return: the new log end offset.
 */
u64 krep_log_truncate(struct krep_log *log, u64 offset)
{
	struct krep_segment *seg, *tmp;
	unsigned int keep, i;
	u32 pos;

	if (offset >= log->end_offset)
		return log->end_offset;
	log->gen++;
	log->rx_open = false;
	if (offset <= log->start_offset) {
		krep_log_reset(log, offset < log->start_offset ?
			       log->start_offset : offset);
		return log->end_offset;
	}
	list_for_each_entry_safe_reverse(seg, tmp, &log->segments, node) {
		if (seg->base_offset < offset)
			break;
		seg_free(log, seg);
	}
	seg = list_empty(&log->segments) ? NULL :
	      list_last_entry(&log->segments, struct krep_segment, node);
	if (!seg) {
		log->end_offset = offset;	/* it was a segment's base */
		log_changed(log, offset);
		return offset;
	}
	/* a cut into a segment on disk waits for its pages, here only */
	log->wait_io = true;
	if (offset < seg->next_offset && !find_pos(log, seg, offset, &pos)) {
		struct krep_batch b;

		if (!seg_batch_at(log, seg, pos, &b))
			seg->next_offset = b.base_offset;
		log->bytes -= seg->size - pos;
		seg->size = pos;
		/* a segment on disk has no pages: the disk work cuts its file */
		keep = min(DIV_ROUND_UP(pos, PAGE_SIZE), seg->npages);
		for (i = keep; i < seg->npages; i++)
			__free_page(seg->pages[i]);
		atomic64_sub((u64)(seg->npages - keep) * PAGE_SIZE,
			     &log->mem->used);
		seg->npages = keep;
		while (seg->nindex && seg->index[seg->nindex - 1].pos >= pos)
			seg->nindex--;
	}
	log->wait_io = false;
	seg->cap = seg->size;		/* sealed */
	log->end_offset = max(seg->next_offset, log->start_offset);
	if (!seg->size)
		seg_free(log, seg);
	log_changed(log, log->end_offset);
	return log->end_offset;
}

/* retention by bytes: drop whole old segments that are below @hw */
void krep_log_retain(struct krep_log *log, s64 retention_bytes, u64 hw)
{
	struct krep_segment *seg, *next;

	if (retention_bytes < 0)
		return;
	while (log->bytes > retention_bytes && !list_empty(&log->segments)) {
		seg = list_first_entry(&log->segments, struct krep_segment,
				       node);
		if (list_is_last(&seg->node, &log->segments) ||
		    seg->next_offset > hw)
			return;
		next = list_next_entry(seg, node);
		log->start_offset = max(log->start_offset, next->base_offset);
		seg_free(log, seg);
		log_changed(log, U64_MAX);
	}
}
