// SPDX-License-Identifier: GPL-2.0
/*
 * log_test - one broker's partition logs and watermarks, over raw generic
 * netlink: TOPIC_*, PARTITION_GET, PRODUCE, FETCH, LIST_OFFSETS,
 * DELETE_RECORDS and TXN.
 *
 *   - topic names, duplicate and unknown topics and partitions;
 *   - every documented error of the data path, each with its errno, its
 *     extack message and Kafka's code (struct krep_err_cookie in
 *     NLMSGERR_ATTR_COOKIE), and that a refused request changes nothing;
 *   - batches are stored and served byte for byte, whole, within max_bytes;
 *   - acks 0/1/all on RF=1; HW and LSO never move backward; LSO < HW while
 *     a transaction is open; read_committed never returns an aborted
 *     record; retention drops whole segments; LIST_OFFSETS;
 *   - waits: a FETCH parked at the end is woken by a produce (and a
 *     read_committed one by the commit), parked FETCHes and produces end
 *     with UNKNOWN_TOPIC_OR_PARTITION when their topic is deleted;
 *   - the broker's log memory cap (KAFKA_STORAGE_ERROR, nothing partial);
 *   - RF=3 on a single broker whose two peers never exist: HW waits for the
 *     ISR expiration scan, min_insync_replicas answers NOT_ENOUGH_REPLICAS
 *     and NOT_ENOUGH_REPLICAS_AFTER_APPEND.
 *
 * The module must be loaded (selftests/log_genl.sh loads it with
 * log_memory_max=1048576, which the memory cap test needs: it skips
 * otherwise). Every TEST_F runs in a network namespace of its own, whose
 * broker gets id 1 and nothing else unless the test says so.
 *
 * Requests are built by hand on raw NETLINK_GENERIC sockets (krep_nl.c),
 * batches by hand too (RecordBatch v2, CRC-32C), so that nothing of
 * krepctl is involved; selftests/log.sh covers krepctl.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/krep.h>

/* the harness's timeout handler does not use all its parameters */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop

#include "krep_batch.h"
#include "krep_nl.h"

/* the largest KREP_A_RECORDS a request carries (nla_len is 16 bits) */
#define RECORDS_MAX		NLA_PAYLOAD_MAX

/*
 * A parked request waits up to MAX_WAIT_MS (the kernel's longest wait); one
 * that is woken returns within WAKE_MS, half of it: a bound that tells a
 * wake from the wait running its course however busy the machine is.
 */
#define MAX_WAIT_MS		30000
#define WAKE_MS			(MAX_WAIT_MS / 2)

#define ACKS_NONE		100	/* leave KREP_A_ACKS out */
#define ISO_NONE		(-1)	/* leave KREP_A_ISOLATION out */

static __s64 now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__s64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---------------------------------------------------------------------
 * Kafka's error names, for the logs
 */

static const char *kerr_name(int kerr)
{
	switch (kerr) {
	case KREP_KERR_NONE: return "NONE";
	case KREP_KERR_UNKNOWN_SERVER_ERROR: return "UNKNOWN_SERVER_ERROR";
	case KREP_KERR_OFFSET_OUT_OF_RANGE: return "OFFSET_OUT_OF_RANGE";
	case KREP_KERR_CORRUPT_MESSAGE: return "CORRUPT_MESSAGE";
	case KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION: return "UNKNOWN_TOPIC_OR_PARTITION";
	case KREP_KERR_NOT_LEADER_OR_FOLLOWER: return "NOT_LEADER_OR_FOLLOWER";
	case KREP_KERR_REQUEST_TIMED_OUT: return "REQUEST_TIMED_OUT";
	case KREP_KERR_MESSAGE_TOO_LARGE: return "MESSAGE_TOO_LARGE";
	case KREP_KERR_INVALID_TOPIC_EXCEPTION: return "INVALID_TOPIC_EXCEPTION";
	case KREP_KERR_RECORD_LIST_TOO_LARGE: return "RECORD_LIST_TOO_LARGE";
	case KREP_KERR_NOT_ENOUGH_REPLICAS: return "NOT_ENOUGH_REPLICAS";
	case KREP_KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
		return "NOT_ENOUGH_REPLICAS_AFTER_APPEND";
	case KREP_KERR_TOPIC_ALREADY_EXISTS: return "TOPIC_ALREADY_EXISTS";
	case KREP_KERR_INVALID_REQUEST: return "INVALID_REQUEST";
	case KREP_KERR_INVALID_TXN_STATE: return "INVALID_TXN_STATE";
	case KREP_KERR_KAFKA_STORAGE_ERROR: return "KAFKA_STORAGE_ERROR";
	case KREP_KERR_OFFSET_NOT_AVAILABLE: return "OFFSET_NOT_AVAILABLE";
	case KREP_KERR_INVALID_RECORD: return "INVALID_RECORD";
	case KREP_KERR_INVALID_PARTITIONS: return "INVALID_PARTITIONS";
	case KREP_KERR_INVALID_REPLICATION_FACTOR:
		return "INVALID_REPLICATION_FACTOR";
	case KREP_KERR_INVALID_REQUIRED_ACKS: return "INVALID_REQUIRED_ACKS";
	}
	return "?";
}

/* ---------------------------------------------------------------------
 * Replies: every attribute of the last reply message
 */

#define IDS_MAX		(KREP_PEERS_MAX + 1)

struct reply {
	int nmsgs;
	__u8 cmd;
	bool has[KREP_A_MAX + 1];
	__u64 v[KREP_A_MAX + 1];	/* integer attributes */
	char topic[256];
	unsigned int nisr, nreplicas;
	__u32 isr[IDS_MAX], replicas[IDS_MAX];
	unsigned int nrecords_attrs;
	size_t rec_len;			/* KREP_A_RECORDS, concatenated */
	__u8 *rec;
	/* PARTITION_GET: keep only this partition's message */
	bool want_partition;
	__u32 partition;
	bool matched;
};

static __u8 *rec_buf(void)
{
	static __u8 *buf;

	if (!buf) {
		buf = malloc(RX_SIZE);
		if (!buf)
			abort();
	}
	return buf;
}

static void parse_ids(const struct nlattr *nest, __u32 *ids, unsigned int *n)
{
	const struct nlattr *nla;
	int rem;

	*n = 0;
	for_each_nla(nla, nla_data_c(nest), nla_plen(nest), rem) {
		if (nla_kind(nla) == KREP_A_BROKER_ID && *n < IDS_MAX)
			ids[(*n)++] = nla_uint(nla);
	}
}

static void reply_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct genlmsghdr *g = NLMSG_DATA(nlh);
	int len = (int)nlh->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;
	const void *head = (const char *)g + GENL_HDRLEN;
	const struct nlattr *nla;
	struct reply *rp = arg;
	int rem;

	if (rp->want_partition) {
		bool mine = false;

		for_each_nla(nla, head, len, rem) {
			if (nla_kind(nla) == KREP_A_PARTITION &&
			    nla_uint(nla) == rp->partition)
				mine = true;
		}
		if (!mine)
			return;
		rp->matched = true;
	}
	rp->nmsgs++;
	rp->cmd = g->cmd;
	memset(rp->has, 0, sizeof(rp->has));
	rp->rec = rec_buf();
	rp->rec_len = 0;
	rp->nrecords_attrs = 0;
	for_each_nla(nla, head, len, rem) {
		unsigned int k = nla_kind(nla);

		if (k > KREP_A_MAX)
			continue;
		rp->has[k] = true;
		switch (k) {
		case KREP_A_TOPIC:
			snprintf(rp->topic, sizeof(rp->topic), "%.*s",
				 nla_plen(nla), (const char *)nla_data_c(nla));
			break;
		case KREP_A_ISR:
			parse_ids(nla, rp->isr, &rp->nisr);
			break;
		case KREP_A_REPLICAS:
			parse_ids(nla, rp->replicas, &rp->nreplicas);
			break;
		case KREP_A_RECORDS:
			if (rp->rec_len + nla_plen(nla) <= RX_SIZE) {
				memcpy(rp->rec + rp->rec_len, nla_data_c(nla),
				       nla_plen(nla));
				rp->rec_len += nla_plen(nla);
			}
			rp->nrecords_attrs++;
			break;
		case KREP_A_REMOTES:
		case KREP_A_TOPIC_CONFIG:
			break;
		default:
			rp->v[k] = nla_uint(nla);
		}
	}
}

/* send @r; the reply's attributes land in @rp; returns ack->error */
static int call(struct nl *nl, struct req *r, struct reply *rp,
		struct ack *ack)
{
	struct reply dummy;
	int err;

	if (!rp)
		rp = &dummy;
	memset(rp, 0, sizeof(*rp));
	err = nl_transact(nl, r, ack, reply_cb, rp);
	if (err) {
		ack->error = -err;	/* a socket error: a "positive" errno */
		snprintf(ack->msg, sizeof(ack->msg), "socket: %s",
			 strerror(-err));
		return -err;
	}
	return ack->error;
}

/* ---------------------------------------------------------------------
 * Commands
 */

struct tcfg {
	__u32 min_isr, lag_ms, segment_bytes, max_message_bytes;
	bool has_retention;
	__s64 retention_bytes;
};

static int broker_set(struct nl *nl, __u32 id, const __u32 *peers,
		      unsigned int npeers, struct ack *ack)
{
	struct req *r = malloc(sizeof(*r));
	struct nlattr *ps, *p, *ep;
	unsigned int i;
	int err;

	req_init(r, nl->family, KREP_CMD_BROKER_SET, 0);
	put_u32(r, KREP_A_BROKER_ID, id);
	if (npeers) {
		ps = nest_start(r, KREP_A_PEERS);
		for (i = 0; i < npeers; i++) {
			/* TEST-NET-1: nothing answers, nothing is routed */
			__u8 addr[4] = { 192, 0, 2, (__u8)peers[i] };

			p = nest_start(r, KREP_A_PEER);
			put_u32(r, KREP_A_PEER_ID, peers[i]);
			ep = nest_start(r, KREP_A_PEER_EP);
			req_put(r, KREP_A_EP_IPV4, addr, 4);
			put_u16(r, KREP_A_EP_PORT, 9092);
			nest_end(r, ep);
			nest_end(r, p);
		}
		nest_end(r, ps);
	}
	err = call(nl, r, NULL, ack);
	free(r);
	return err;
}

static int topic_new(struct nl *nl, const char *name, __u32 parts, __u32 rf,
		     const struct tcfg *cfg, struct ack *ack)
{
	struct req *r = malloc(sizeof(*r));
	struct nlattr *nest;
	int err;

	req_init(r, nl->family, KREP_CMD_TOPIC_NEW, 0);
	put_str(r, KREP_A_TOPIC, name);
	put_u32(r, KREP_A_PARTITIONS, parts);
	put_u32(r, KREP_A_REPLICATION_FACTOR, rf);
	if (cfg) {
		nest = nest_start(r, KREP_A_TOPIC_CONFIG);
		if (cfg->min_isr)
			put_u32(r, KREP_A_TCFG_MIN_INSYNC_REPLICAS, cfg->min_isr);
		if (cfg->lag_ms)
			put_u32(r, KREP_A_TCFG_REPLICA_LAG_TIME_MAX_MS,
				cfg->lag_ms);
		if (cfg->segment_bytes)
			put_u32(r, KREP_A_TCFG_SEGMENT_BYTES, cfg->segment_bytes);
		if (cfg->max_message_bytes)
			put_u32(r, KREP_A_TCFG_MAX_MESSAGE_BYTES,
				cfg->max_message_bytes);
		if (cfg->has_retention)
			put_u64(r, KREP_A_TCFG_RETENTION_BYTES,
				(__u64)cfg->retention_bytes);
		nest_end(r, nest);
	}
	err = call(nl, r, NULL, ack);
	free(r);
	return err;
}

/* a topic command that takes only KREP_A_TOPIC (DEL, GET) */
static int topic_cmd(struct nl *nl, __u8 cmd, const char *name,
		     struct reply *rp, struct ack *ack)
{
	struct req *r = malloc(sizeof(*r));
	int err;

	req_init(r, nl->family, cmd, 0);
	put_str(r, KREP_A_TOPIC, name);
	err = call(nl, r, rp, ack);
	free(r);
	return err;
}

/* the number of topics in a TOPIC_GET dump */
static int topic_count(struct nl *nl)
{
	struct req *r = malloc(sizeof(*r));
	struct reply rp;
	struct ack ack;
	int err;

	req_init(r, nl->family, KREP_CMD_TOPIC_GET, NLM_F_DUMP);
	err = call(nl, r, &rp, &ack);
	free(r);
	return err ? -1 : rp.nmsgs;
}

/* PARTITION_GET of one partition; -ENOENT in ack->error if it is absent */
struct part {
	__u8 role;
	__u32 leader, leader_epoch, partition_epoch;
	__u64 leo, hw, lso, log_start, lw, bytes;
	unsigned int nisr, nreplicas;
	__u32 isr[IDS_MAX], replicas[IDS_MAX];
};

static int part_get(struct nl *nl, const char *topic, __u32 partition,
		    struct part *p, struct ack *ack)
{
	struct req *r = malloc(sizeof(*r));
	struct reply rp;
	int err;

	memset(p, 0, sizeof(*p));
	req_init(r, nl->family, KREP_CMD_PARTITION_GET, NLM_F_DUMP);
	put_str(r, KREP_A_TOPIC, topic);
	memset(&rp, 0, sizeof(rp));
	rp.want_partition = true;
	rp.partition = partition;
	err = nl_transact(nl, r, ack, reply_cb, &rp);
	free(r);
	if (err)
		return -err;
	if (ack->error)
		return ack->error;
	if (!rp.matched) {
		ack->error = ENOENT;
		return ack->error;	/* no such partition here */
	}
	p->role = rp.v[KREP_A_ROLE];
	p->leader = rp.v[KREP_A_LEADER];
	p->leader_epoch = rp.v[KREP_A_LEADER_EPOCH];
	p->partition_epoch = rp.v[KREP_A_PARTITION_EPOCH];
	p->leo = rp.v[KREP_A_LEO];
	p->hw = rp.v[KREP_A_HW];
	p->lso = rp.v[KREP_A_LSO];
	p->log_start = rp.v[KREP_A_LOG_START];
	p->lw = rp.v[KREP_A_LOW_WATERMARK];
	p->bytes = rp.v[KREP_A_LOG_BYTES];
	p->nisr = rp.nisr;
	memcpy(p->isr, rp.isr, sizeof(p->isr));
	p->nreplicas = rp.nreplicas;
	memcpy(p->replicas, rp.replicas, sizeof(p->replicas));
	return 0;
}

static void req_part(struct req *r, struct nl *nl, __u8 cmd,
		     const char *topic, __u32 partition)
{
	req_init(r, nl->family, cmd, 0);
	put_str(r, KREP_A_TOPIC, topic);
	put_u32(r, KREP_A_PARTITION, partition);
}

struct prod {
	__u64 offset, hw;
};

/* @acks: 0, 1, -1, or ACKS_NONE; @timeout_ms 0: leave it out */
static int produce_p(struct nl *nl, const char *topic, __u32 partition,
		     const void *batch, size_t len, int acks, __u32 timeout_ms,
		     struct prod *out, struct ack *ack)
{
	struct req *r = malloc(sizeof(*r));
	struct reply rp;
	int err;

	req_part(r, nl, KREP_CMD_PRODUCE, topic, partition);
	req_put(r, KREP_A_RECORDS, batch, len);
	if (acks != ACKS_NONE)
		put_u16(r, KREP_A_ACKS, (__u16)(__s16)acks);
	if (timeout_ms)
		put_u32(r, KREP_A_TIMEOUT_MS, timeout_ms);
	err = call(nl, r, &rp, ack);
	free(r);
	if (out) {
		out->offset = rp.has[KREP_A_OFFSET] ? rp.v[KREP_A_OFFSET] : ~0ULL;
		out->hw = rp.has[KREP_A_HW] ? rp.v[KREP_A_HW] : ~0ULL;
	}
	return err;
}

static int produce(struct nl *nl, const char *topic, const void *batch,
		   size_t len, int acks, struct prod *out, struct ack *ack)
{
	return produce_p(nl, topic, 0, batch, len, acks, 0, out, ack);
}

struct fetch {
	__u64 offset;
	__u32 max_bytes;	/* 0: leave it out */
	__u32 max_wait_ms;	/* 0: leave it out */
	int isolation;		/* ISO_NONE: leave it out */
};

struct fetched {
	bool has_hw, has_lso, has_log_start, has_records;
	__u64 hw, lso, log_start;
	unsigned int nrecords_attrs;
	const __u8 *rec;	/* valid until the next fetch */
	size_t len;
};

static int fetch_p(struct nl *nl, const char *topic, __u32 partition,
		   const struct fetch *f, struct fetched *out, struct ack *ack)
{
	struct req *r = malloc(sizeof(*r));
	struct reply rp;
	int err;

	req_part(r, nl, KREP_CMD_FETCH, topic, partition);
	put_u64(r, KREP_A_OFFSET, f->offset);
	if (f->max_bytes)
		put_u32(r, KREP_A_MAX_BYTES, f->max_bytes);
	if (f->max_wait_ms)
		put_u32(r, KREP_A_MAX_WAIT_MS, f->max_wait_ms);
	if (f->isolation != ISO_NONE)
		put_u8(r, KREP_A_ISOLATION, f->isolation);
	err = call(nl, r, &rp, ack);
	free(r);
	memset(out, 0, sizeof(*out));
	out->has_hw = rp.has[KREP_A_HW];
	out->hw = rp.v[KREP_A_HW];
	out->has_lso = rp.has[KREP_A_LSO];
	out->lso = rp.v[KREP_A_LSO];
	out->has_log_start = rp.has[KREP_A_LOG_START];
	out->log_start = rp.v[KREP_A_LOG_START];
	out->has_records = rp.has[KREP_A_RECORDS];
	out->nrecords_attrs = rp.nrecords_attrs;
	out->rec = rp.rec;
	out->len = rp.rec_len;
	return err;
}

/* FETCH at @offset, read_uncommitted, no wait, default max bytes */
static int fetch_at(struct nl *nl, const char *topic, __u64 offset,
		    struct fetched *out, struct ack *ack)
{
	struct fetch f = { .offset = offset, .isolation = ISO_NONE };

	return fetch_p(nl, topic, 0, &f, out, ack);
}

static int list_offsets(struct nl *nl, const char *topic, __s64 ts,
			__u64 *offset, bool *has_ts, __s64 *found_ts,
			struct ack *ack)
{
	struct req *r = malloc(sizeof(*r));
	struct reply rp;
	int err;

	req_part(r, nl, KREP_CMD_LIST_OFFSETS, topic, 0);
	put_u64(r, KREP_A_TIMESTAMP, (__u64)ts);
	err = call(nl, r, &rp, ack);
	free(r);
	*offset = rp.has[KREP_A_OFFSET] ? rp.v[KREP_A_OFFSET] : ~0ULL;
	if (has_ts)
		*has_ts = rp.has[KREP_A_TIMESTAMP];
	if (found_ts)
		*found_ts = (__s64)rp.v[KREP_A_TIMESTAMP];
	return err;
}

static int delete_records(struct nl *nl, const char *topic, __u64 before,
			  __u64 *log_start, __u64 *lw, struct ack *ack)
{
	struct req *r = malloc(sizeof(*r));
	struct reply rp;
	int err;

	req_part(r, nl, KREP_CMD_DELETE_RECORDS, topic, 0);
	put_u64(r, KREP_A_OFFSET, before);
	err = call(nl, r, &rp, ack);
	free(r);
	if (log_start)
		*log_start = rp.has[KREP_A_LOG_START] ?
			     rp.v[KREP_A_LOG_START] : ~0ULL;
	if (lw)
		*lw = rp.has[KREP_A_LOW_WATERMARK] ?
		      rp.v[KREP_A_LOW_WATERMARK] : ~0ULL;
	return err;
}

static int txn(struct nl *nl, const char *topic, __u64 pid, __u16 epoch,
	       __u8 op, __u64 *offset, __u64 *lso, struct ack *ack)
{
	struct req *r = malloc(sizeof(*r));
	struct reply rp;
	int err;

	req_part(r, nl, KREP_CMD_TXN, topic, 0);
	put_u64(r, KREP_A_PRODUCER_ID, pid);
	put_u16(r, KREP_A_PRODUCER_EPOCH, epoch);
	put_u8(r, KREP_A_TXN_OP, op);
	err = call(nl, r, &rp, ack);
	free(r);
	if (offset)
		*offset = rp.has[KREP_A_OFFSET] ? rp.v[KREP_A_OFFSET] : ~0ULL;
	if (lso)
		*lso = rp.has[KREP_A_LSO] ? rp.v[KREP_A_LSO] : ~0ULL;
	return err;
}

/* ---------------------------------------------------------------------
 * RecordBatch v2, built and read by hand
 */

/* @n records "<tag>-<i>" with timestamp @ts and a null key */
static size_t batch_simple(__u8 *buf, size_t cap, int n, const char *tag,
			   __s64 ts, const struct batch_opts *o)
{
	static char vals[64][32];
	struct rec recs[64];
	int i;

	if (n > 64)
		abort();
	memset(recs, 0, sizeof(recs));
	for (i = 0; i < n; i++) {
		snprintf(vals[i], sizeof(vals[i]), "%s-%d", tag, i);
		recs[i].ts = ts;
		recs[i].value = vals[i];
		recs[i].vlen = strlen(vals[i]);
	}
	return batch_build(buf, cap, recs, n, o);
}

/* one record whose value makes the batch exactly @len bytes */
static size_t batch_sized(__u8 *buf, size_t len, __u8 fill)
{
	static __u8 val[RECORDS_MAX];
	struct rec r = { .ts = 1000, .value = val };
	size_t got;

	memset(val, fill, sizeof(val));
	r.vlen = len - RB_HDR_LEN - 6;
	for (;;) {
		got = batch_build(buf, RECORDS_MAX, &r, 1, NULL);
		if (got == len)
			return got;
		r.vlen += got > len ? -1 : 1;
	}
}

/* a batch as a FETCH reply serves it */
struct bview {
	__s64 base;
	__u32 len;
	__s32 leader_epoch;
	__u16 attrs;
	__s32 last_delta, count;
	__s64 base_ts, max_ts, pid;
	const __u8 *data;
};

/* the next whole batch at *@p; 1, 0 at the end, -1 if cut or corrupt */
static int batch_next(const __u8 **p, const __u8 *end, struct bview *b)
{
	const __u8 *q = *p;
	__s32 blen;

	if (q == end)
		return 0;
	if (end - q < RB_HDR_LEN)
		return -1;
	blen = (__s32)rd32(q + 8);
	if (blen < RB_HDR_LEN - 12 || blen + 12 > end - q || q[16] != 2)
		return -1;
	b->base = (__s64)rd64(q);
	b->len = blen + 12;
	b->leader_epoch = (__s32)rd32(q + 12);
	b->attrs = rd16(q + 21);
	b->last_delta = (__s32)rd32(q + 23);
	b->base_ts = (__s64)rd64(q + 27);
	b->max_ts = (__s64)rd64(q + 35);
	b->pid = (__s64)rd64(q + 43);
	b->count = (__s32)rd32(q + 57);
	b->data = q;
	if (rd32(q + 17) != crc32c(q + 21, b->len - 21))
		return -1;
	*p = q + b->len;
	return 1;
}

/* the batches of a FETCH reply, at most @max; -1 if malformed */
static int batches(const struct fetched *f, struct bview *bv, int max)
{
	const __u8 *p = f->rec, *end = f->rec + f->len;
	int n = 0, ret;

	while (n < max && (ret = batch_next(&p, end, &bv[n])) > 0)
		n++;
	if (n < max && p != end)
		return -1;
	return n;
}

/*
 * Served as stored: a batch fetched back is the one produced, but for
 * baseOffset and partitionLeaderEpoch, which the leader stamps.
 */
static bool same_batch(const struct bview *b, const __u8 *sent, size_t len,
		       __u64 base)
{
	return b->len == len && b->base == (__s64)base &&
	       b->leader_epoch == 0 && !memcmp(b->data + 16, sent + 16, len - 16);
}

/* ---------------------------------------------------------------------
 * Requests in a child process, parked in the kernel
 */

struct bg {
	pid_t pid;
	int fd;
};

struct bg_result {
	int rc;
	struct ack ack;
	__s64 start_ms, end_ms;
	bool has_records;
	size_t len;
	__s64 first_base;
	int first_count;
	__u64 hw, lso;
};

enum bg_op { BG_FETCH, BG_PRODUCE };

struct bg_req {
	enum bg_op op;
	char topic[256];
	struct fetch f;
	const __u8 *batch;
	size_t len;
	int acks;
	__u32 timeout_ms;
};

static void bg_child(int fd, const struct bg_req *q)
{
	struct bg_result res;
	struct fetched out;
	struct bview b;
	struct nl nl;

	memset(&res, 0, sizeof(res));
	res.first_base = -1;
	if (krep_open(&nl)) {
		res.rc = -1;
		goto out;
	}
	res.start_ms = now_ms();
	if (q->op == BG_FETCH) {
		res.rc = fetch_p(&nl, q->topic, 0, &q->f, &out, &res.ack);
		res.has_records = out.has_records;
		res.len = out.len;
		res.hw = out.hw;
		res.lso = out.lso;
		if (out.len >= RB_HDR_LEN) {
			const __u8 *p = out.rec;

			if (batch_next(&p, out.rec + out.len, &b) > 0) {
				res.first_base = b.base;
				res.first_count = b.count;
			}
		}
	} else {
		res.rc = produce_p(&nl, q->topic, 0, q->batch, q->len, q->acks,
				   q->timeout_ms, NULL, &res.ack);
	}
	res.end_ms = now_ms();
out:
	if (write(fd, &res, sizeof(res)) != sizeof(res))
		_exit(1);
	_exit(0);
}

static int bg_start(struct bg *bg, const struct bg_req *q)
{
	int fds[2];

	if (pipe(fds))
		return -errno;
	fflush(NULL);
	bg->pid = fork();
	if (bg->pid < 0)
		return -errno;
	if (!bg->pid) {
		close(fds[0]);
		bg_child(fds[1], q);
	}
	close(fds[1]);
	bg->fd = fds[0];
	return 0;
}

/*
 * true once the child waits for the answer of a request that krep.ko has
 * parked (nl_park.c): its send has returned and it sleeps in netlink's
 * recvmsg (its kernel stack says so); a request answered at once would
 * have its answer queued before the send returned
 */
static bool bg_parked(const struct bg *bg)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stack", bg->pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, "netlink_recvmsg");
}

static bool bg_wait_parked(const struct bg *bg, int timeout_ms)
{
	__s64 end = now_ms() + timeout_ms;

	do {
		if (bg_parked(bg))
			return true;
		sleep_ms(20);
	} while (now_ms() < end);
	return false;
}

/* the child's result within @timeout_ms; false if none came */
static bool bg_result(struct bg *bg, struct bg_result *res, int timeout_ms)
{
	struct pollfd pfd = { .fd = bg->fd, .events = POLLIN };
	bool ok;

	memset(res, 0, sizeof(*res));
	ok = poll(&pfd, 1, timeout_ms) == 1 &&
	     read(bg->fd, res, sizeof(*res)) == sizeof(*res);
	if (!ok)
		kill(bg->pid, SIGKILL);
	waitpid(bg->pid, NULL, 0);
	close(bg->fd);
	bg->pid = 0;
	return ok;
}

static void bg_kill(struct bg *bg)
{
	if (bg->pid > 0) {
		kill(bg->pid, SIGKILL);
		waitpid(bg->pid, NULL, 0);
		close(bg->fd);
	}
	bg->pid = 0;
}

/* ---------------------------------------------------------------------
 * Assertions
 */

static void __expect_kerr(struct __test_metadata *_metadata,
			  const struct ack *a, int err, int kerr,
			  const char *msg, int line)
{
	if (a->error != err || !a->has_kerr || a->kerr != kerr ||
	    (msg && strcmp(a->msg, msg)))
		TH_LOG("line %d: expected %s [%s] \"%s\", got %s [%s] \"%s\"",
		       line, strerror(err), kerr_name(kerr), msg ? msg : "*",
		       strerror(a->error),
		       a->has_kerr ? kerr_name(a->kerr) : "no Kafka code",
		       a->msg);
	EXPECT_EQ(err, a->error);
	EXPECT_TRUE(a->has_kerr);
	EXPECT_EQ(kerr, a->kerr);
	if (msg)
		EXPECT_STREQ(msg, a->msg);
}
#define expect_kerr(ack, err, kerr, msg) \
	__expect_kerr(_metadata, ack, err, kerr, msg, __LINE__)

/* the call returned 0; log the error otherwise */
#define ok(call, ack) do {						\
	int __rc = (call);						\
	if (__rc)							\
		TH_LOG("line %d: %s: %s [%s] \"%s\"", __LINE__, #call,	\
		       strerror(__rc > 0 ? __rc : -__rc),		\
		       (ack)->has_kerr ? kerr_name((ack)->kerr) : "-",	\
		       (ack)->msg);					\
	ASSERT_EQ(0, __rc);						\
} while (0)

/* ---------------------------------------------------------------------
 * Fixture: a socket in a fresh network namespace, broker id 1
 */

FIXTURE(log) {
	struct nl nl;
	struct ack ack;
	struct bg bg;
	__u8 buf[RECORDS_MAX];
	__u8 buf2[RECORDS_MAX];
};

FIXTURE_SETUP(log)
{
	memset(&self->bg, 0, sizeof(self->bg));
	ASSERT_EQ(0, unshare(CLONE_NEWNET)) TH_LOG("unshare: %s", strerror(errno));
	ASSERT_EQ(0, krep_open(&self->nl))
		TH_LOG("no \"krep\" genl family: is krep.ko loaded?");
	ok(broker_set(&self->nl, 1, NULL, 0, &self->ack), &self->ack);
}

FIXTURE_TEARDOWN(log)
{
	bg_kill(&self->bg);
	nl_close(&self->nl);
}

/* broker 1 with peers 2 and 3 that never answer */
static int three_brokers(struct nl *nl, struct ack *ack)
{
	static const __u32 peers[] = { 2, 3 };

	return broker_set(nl, 1, peers, 2, ack);
}

/* ---------------------------------------------------------------------
 * Topics
 */

#define NAME_249 \
	"0123456789012345678901234567890123456789012345678901234567890123456789" \
	"0123456789012345678901234567890123456789012345678901234567890123456789" \
	"0123456789012345678901234567890123456789012345678901234567890123456789" \
	"012345678901234567890123456789012345678"

#define MSG_DOTS	"topic name cannot be '.' or '..'"
#define MSG_CHARS	"topic name has a character outside [a-zA-Z0-9._-]"

/* Kafka's topic name rules: the errno, the message, the attribute */
TEST_F(log, topic_names)
{
	static const char *const good[] = {
		"a", "...", "Topic_1.v-2", "-", NAME_249,
	};
	static const struct { const char *name; const char *msg; } bad[] = {
		{ ".", MSG_DOTS },
		{ "..", MSG_DOTS },
		{ "", "empty topic name" },
		{ "a b", MSG_CHARS },
		{ "a/b", MSG_CHARS },
		{ "a:b", MSG_CHARS },
		{ "a#", MSG_CHARS },
		{ "t\xc3\xbc", MSG_CHARS },	/* UTF-8 u-umlaut */
		{ "tab\t", MSG_CHARS },
		{ "star*", MSG_CHARS },
	};
	struct req *r = malloc(sizeof(*r));
	struct reply rp;
	struct nlattr *a;
	char long_name[251];
	unsigned int i;

	ASSERT_EQ(sizeof(NAME_249), 250);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		req_init(r, self->nl.family, KREP_CMD_TOPIC_NEW, 0);
		a = put_str(r, KREP_A_TOPIC, bad[i].name);
		put_u32(r, KREP_A_PARTITIONS, 1);
		put_u32(r, KREP_A_REPLICATION_FACTOR, 1);
		call(&self->nl, r, NULL, &self->ack);
		EXPECT_EQ(EINVAL, self->ack.error) TH_LOG("name '%s'", bad[i].name);
		EXPECT_STREQ(bad[i].msg, self->ack.msg);
		EXPECT_TRUE(self->ack.has_off);
		EXPECT_EQ(req_off(r, a), self->ack.off);

		/* DEL and GET check the name the same way */
		EXPECT_EQ(EINVAL, topic_cmd(&self->nl, KREP_CMD_TOPIC_DEL,
					    bad[i].name, NULL, &self->ack));
		EXPECT_STREQ(bad[i].msg, self->ack.msg);
		EXPECT_EQ(EINVAL, topic_cmd(&self->nl, KREP_CMD_TOPIC_GET,
					    bad[i].name, NULL, &self->ack));
		EXPECT_STREQ(bad[i].msg, self->ack.msg);
	}

	/* 250 characters: Kafka's INVALID_TOPIC_EXCEPTION, not the policy's */
	memset(long_name, 'x', 250);
	long_name[250] = '\0';
	req_init(r, self->nl.family, KREP_CMD_TOPIC_NEW, 0);
	a = put_str(r, KREP_A_TOPIC, long_name);
	put_u32(r, KREP_A_PARTITIONS, 1);
	put_u32(r, KREP_A_REPLICATION_FACTOR, 1);
	call(&self->nl, r, NULL, &self->ack);
	expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_TOPIC_EXCEPTION,
		    "topic name longer than 249 characters");
	EXPECT_TRUE(self->ack.has_off);
	EXPECT_EQ(req_off(r, a), self->ack.off);
	EXPECT_EQ(EINVAL, topic_cmd(&self->nl, KREP_CMD_TOPIC_DEL, long_name,
				    NULL, &self->ack));
	EXPECT_EQ(KREP_KERR_INVALID_TOPIC_EXCEPTION, self->ack.kerr);

	EXPECT_EQ(0, topic_count(&self->nl));

	for (i = 0; i < ARRAY_SIZE(good); i++) {
		ok(topic_new(&self->nl, good[i], 1, 1, NULL, &self->ack),
		   &self->ack);
		ok(topic_cmd(&self->nl, KREP_CMD_TOPIC_GET, good[i], &rp,
			     &self->ack), &self->ack);
		EXPECT_STREQ(good[i], rp.topic);
		EXPECT_EQ(1, rp.v[KREP_A_PARTITIONS]);
	}
	EXPECT_EQ(ARRAY_SIZE(good), topic_count(&self->nl));
	free(r);
}

/*
 * uapi/linux/krep.h: TOPIC_NEW's EINVAL carries INVALID_TOPIC_EXCEPTION
 * (Kafka's code for a bad name) like every other refusal with a Kafka name.
 */
TEST_F(log, topic_name_kafka_code)
{
	static const char *const bad[] = { ".", "..", "a b", "" };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		topic_new(&self->nl, bad[i], 1, 1, NULL, &self->ack);
		expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_TOPIC_EXCEPTION,
			    NULL);
	}
}

/*
 * Partition counts and replication factors out of range carry Kafka's
 * codes (README's error table), not the policy's ERANGE.
 */
TEST_F(log, topic_counts_kafka_code)
{
	static const struct { __u32 np, rf; int kerr; const char *msg; } bad[] = {
		{ 0, 1, KREP_KERR_INVALID_PARTITIONS, "partitions must be 1..1024" },
		{ 1025, 1, KREP_KERR_INVALID_PARTITIONS,
		  "partitions must be 1..1024" },
		{ 1, 0, KREP_KERR_INVALID_REPLICATION_FACTOR,
		  "replication factor must be at least 1" },
		{ 1, 2, KREP_KERR_INVALID_REPLICATION_FACTOR,
		  "replication factor larger than the number of brokers" },
		{ 1, 1000, KREP_KERR_INVALID_REPLICATION_FACTOR,
		  "replication factor larger than the number of brokers" },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		topic_new(&self->nl, "counts", bad[i].np, bad[i].rf, NULL,
			  &self->ack);
		expect_kerr(&self->ack, EINVAL, bad[i].kerr, bad[i].msg);
	}
	EXPECT_EQ(0, topic_count(&self->nl));
}

TEST_F(log, topic_duplicate)
{
	struct reply rp;

	ok(topic_new(&self->nl, "dup", 2, 1, NULL, &self->ack), &self->ack);
	topic_new(&self->nl, "dup", 2, 1, NULL, &self->ack);
	expect_kerr(&self->ack, EEXIST, KREP_KERR_TOPIC_ALREADY_EXISTS,
		    "topic already exists");
	/* other parameters change nothing */
	topic_new(&self->nl, "dup", 5, 1, NULL, &self->ack);
	expect_kerr(&self->ack, EEXIST, KREP_KERR_TOPIC_ALREADY_EXISTS,
		    "topic already exists");
	ok(topic_cmd(&self->nl, KREP_CMD_TOPIC_GET, "dup", &rp, &self->ack),
	   &self->ack);
	EXPECT_EQ(2, rp.v[KREP_A_PARTITIONS]);
	EXPECT_EQ(1, topic_count(&self->nl));
}

/* every command on a topic or partition that does not exist */
TEST_F(log, unknown_topic_or_partition)
{
	struct fetched f;
	struct part p;
	__u64 off;
	size_t len;

	len = batch_simple(self->buf, sizeof(self->buf), 1, "x", 1000, NULL);
	ok(topic_new(&self->nl, "known", 2, 1, NULL, &self->ack), &self->ack);

	produce(&self->nl, "nope", self->buf, len, -1, NULL, &self->ack);
	expect_kerr(&self->ack, ENOENT, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
		    "no such topic");
	fetch_at(&self->nl, "nope", 0, &f, &self->ack);
	expect_kerr(&self->ack, ENOENT, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
		    "no such topic");
	list_offsets(&self->nl, "nope", KREP_TS_LATEST, &off, NULL, NULL,
		     &self->ack);
	expect_kerr(&self->ack, ENOENT, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
		    "no such topic");
	delete_records(&self->nl, "nope", 0, NULL, NULL, &self->ack);
	expect_kerr(&self->ack, ENOENT, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
		    "no such topic");
	txn(&self->nl, "nope", 1, 0, KREP_TXN_BEGIN, NULL, NULL, &self->ack);
	expect_kerr(&self->ack, ENOENT, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
		    "no such topic");
	topic_cmd(&self->nl, KREP_CMD_TOPIC_DEL, "nope", NULL, &self->ack);
	expect_kerr(&self->ack, ENOENT, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
		    "no such topic");
	topic_cmd(&self->nl, KREP_CMD_TOPIC_GET, "nope", NULL, &self->ack);
	expect_kerr(&self->ack, ENOENT, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
		    "no such topic");
	/* a PARTITION_GET dump filtered on it is empty */
	EXPECT_EQ(ENOENT, part_get(&self->nl, "nope", 0, &p, &self->ack));

	/* partition 2 of a topic of two */
	produce_p(&self->nl, "known", 2, self->buf, len, -1, 0, NULL,
		  &self->ack);
	expect_kerr(&self->ack, ENOENT, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
		    "no such partition");
	{
		struct fetch fr = { .offset = 0, .isolation = ISO_NONE };

		fetch_p(&self->nl, "known", 2, &fr, &f, &self->ack);
		expect_kerr(&self->ack, ENOENT,
			    KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
			    "no such partition");
	}
	/* nothing happened to the topic that exists */
	ok(part_get(&self->nl, "known", 1, &p, &self->ack), &self->ack);
	EXPECT_EQ(0, p.leo);
	EXPECT_EQ(1, topic_count(&self->nl));
}

/* ---------------------------------------------------------------------
 * Produce and fetch
 */

/* acks 0, 1, all (and absent: all) on RF=1: each appends and moves HW */
TEST_F(log, acks_rf1)
{
	static const int acks[] = { 0, 1, -1, ACKS_NONE };
	size_t len[ARRAY_SIZE(acks)];
	__u8 sent[ARRAY_SIZE(acks)][256];
	struct bview bv[8];
	struct fetched f;
	struct prod out;
	struct part p;
	unsigned int i;

	ok(topic_new(&self->nl, "acks", 1, 1, NULL, &self->ack), &self->ack);
	for (i = 0; i < ARRAY_SIZE(acks); i++) {
		len[i] = batch_simple(sent[i], sizeof(sent[i]), 2, "acks",
				      1000 + i, NULL);
		ok(produce(&self->nl, "acks", sent[i], len[i], acks[i], &out,
			   &self->ack), &self->ack);
		EXPECT_EQ(2 * i, out.offset) TH_LOG("acks %d", acks[i]);
		EXPECT_EQ(2 * i + 2, out.hw) TH_LOG("acks %d", acks[i]);
		ok(part_get(&self->nl, "acks", 0, &p, &self->ack), &self->ack);
		EXPECT_EQ(2 * i + 2, p.leo);
		EXPECT_EQ(2 * i + 2, p.hw);
		EXPECT_EQ(2 * i + 2, p.lso);
	}
	EXPECT_EQ(KREP_ROLE_LEADER, p.role);
	EXPECT_EQ(1, p.leader);
	ASSERT_EQ(1, p.nisr);
	EXPECT_EQ(1, p.isr[0]);

	/* acks outside -1..1: INVALID_REQUIRED_ACKS, nothing appended */
	produce(&self->nl, "acks", sent[0], len[0], -2, NULL, &self->ack);
	expect_kerr(&self->ack, ERANGE, KREP_KERR_INVALID_REQUIRED_ACKS,
		    "acks must be -1 (all), 0 or 1");
	produce(&self->nl, "acks", sent[0], len[0], 2, NULL, &self->ack);
	expect_kerr(&self->ack, ERANGE, KREP_KERR_INVALID_REQUIRED_ACKS,
		    "acks must be -1 (all), 0 or 1");
	ok(part_get(&self->nl, "acks", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(8, p.leo);

	/* served as stored */
	ok(fetch_at(&self->nl, "acks", 0, &f, &self->ack), &self->ack);
	ASSERT_EQ(4, batches(&f, bv, 8));
	for (i = 0; i < 4; i++)
		EXPECT_TRUE(same_batch(&bv[i], sent[i], len[i], 2 * i));
	EXPECT_EQ(8, f.hw);
	EXPECT_EQ(8, f.lso);
	EXPECT_EQ(0, f.log_start);
}

/* keys, values, headers and timestamps come back byte for byte */
TEST_F(log, batches_byte_exact)
{
	static const char bin[] = { 0, 1, 2, '\n', '\t', (char)0xff, (char)0x80 };
	struct rec recs[6] = {
		{ .ts = 1700000000000LL, .key = "k0", .klen = 2,
		  .value = "v0", .vlen = 2, .hkey = "h", .hval = "1" },
		{ .ts = 1700000000005LL, .key = NULL, .value = "", .vlen = 0 },
		{ .ts = 1699999999999LL, .key = "", .klen = 0, .value = NULL,
		  .hkey = "null-header" },
		{ .ts = 1700000000001LL, .key = bin, .klen = sizeof(bin),
		  .value = bin, .vlen = sizeof(bin), .hkey = "", .hval = "" },
		{ .ts = 0, .key = "\xc3\xbc", .klen = 2, .value = "ok", .vlen = 2 },
		{ .ts = 1, .key = "k", .klen = 1, .value = self->buf2, .vlen = 3000 },
	};
	size_t len[3];
	__u8 sent[3][8192];
	struct bview bv[4];
	struct fetched f;
	unsigned int i;

	memset(self->buf2, 'z', 3000);
	ok(topic_new(&self->nl, "exact", 1, 1, NULL, &self->ack), &self->ack);
	len[0] = batch_build(sent[0], sizeof(sent[0]), recs, 4, NULL);
	len[1] = batch_build(sent[1], sizeof(sent[1]), recs + 4, 1, NULL);
	len[2] = batch_build(sent[2], sizeof(sent[2]), recs + 5, 1, NULL);
	for (i = 0; i < 3; i++)
		ok(produce(&self->nl, "exact", sent[i], len[i], 1, NULL,
			   &self->ack), &self->ack);
	ok(fetch_at(&self->nl, "exact", 0, &f, &self->ack), &self->ack);
	ASSERT_EQ(3, batches(&f, bv, 4));
	EXPECT_TRUE(same_batch(&bv[0], sent[0], len[0], 0));
	EXPECT_TRUE(same_batch(&bv[1], sent[1], len[1], 4));
	EXPECT_TRUE(same_batch(&bv[2], sent[2], len[2], 5));
	EXPECT_EQ(1700000000000LL, bv[0].base_ts);	/* the first record's */
	EXPECT_EQ(1700000000005LL, bv[0].max_ts);

	/* a fetch in the middle of a batch serves the whole batch */
	ok(fetch_at(&self->nl, "exact", 2, &f, &self->ack), &self->ack);
	ASSERT_EQ(3, batches(&f, bv, 4));
	EXPECT_EQ(0, bv[0].base);
}

/* max_bytes: whole batches only, and at least one */
TEST_F(log, fetch_whole_batches)
{
	size_t len[3];
	struct bview bv[4];
	struct fetched f;
	struct fetch fr = { .isolation = ISO_NONE };
	unsigned int i;

	ok(topic_new(&self->nl, "whole", 1, 1, NULL, &self->ack), &self->ack);
	for (i = 0; i < 3; i++) {
		len[i] = batch_sized(self->buf, 1000 + 100 * i, 'a' + i);
		ok(produce(&self->nl, "whole", self->buf, len[i], 1, NULL,
			   &self->ack), &self->ack);
	}
	fr.max_bytes = 1;
	ok(fetch_p(&self->nl, "whole", 0, &fr, &f, &self->ack), &self->ack);
	ASSERT_EQ(1, batches(&f, bv, 4));
	EXPECT_EQ(len[0], bv[0].len);

	fr.max_bytes = len[0] + len[1] - 1;
	ok(fetch_p(&self->nl, "whole", 0, &fr, &f, &self->ack), &self->ack);
	EXPECT_EQ(1, batches(&f, bv, 4));

	fr.max_bytes = len[0] + len[1];
	ok(fetch_p(&self->nl, "whole", 0, &fr, &f, &self->ack), &self->ack);
	EXPECT_EQ(2, batches(&f, bv, 4));

	fr.offset = 1;
	fr.max_bytes = 1;
	ok(fetch_p(&self->nl, "whole", 0, &fr, &f, &self->ack), &self->ack);
	ASSERT_EQ(1, batches(&f, bv, 4));
	EXPECT_EQ(1, bv[0].base);
	EXPECT_EQ(len[1], bv[0].len);

	/* the 1 MiB default: everything, in a reply that parses */
	ok(fetch_at(&self->nl, "whole", 0, &f, &self->ack), &self->ack);
	EXPECT_EQ(3, batches(&f, bv, 4));
	EXPECT_EQ(len[0] + len[1] + len[2], f.len);
}

/*
 * A FETCH with the default max_bytes (1 MiB) of a log holding more than
 * one netlink attribute can (64 KiB): the reply must still be well formed,
 * whole batches in KREP_A_RECORDS attributes, watermarks included.
 */
TEST_F(log, fetch_large_reply)
{
	struct bview bv[8];
	struct fetched f;
	size_t len = 0;
	int i, n;

	ok(topic_new(&self->nl, "large", 1, 1, NULL, &self->ack), &self->ack);
	for (i = 0; i < 5; i++) {
		len = batch_sized(self->buf, 60000, 'A' + i);
		ok(produce(&self->nl, "large", self->buf, len, 1, NULL,
			   &self->ack), &self->ack);
	}
	ok(fetch_at(&self->nl, "large", 0, &f, &self->ack), &self->ack);
	n = batches(&f, bv, 8);
	TH_LOG("%u KREP_A_RECORDS attribute(s), %zu bytes, %d batches",
	       f.nrecords_attrs, f.len, n);
	EXPECT_TRUE(f.has_hw);
	EXPECT_EQ(5, f.hw);
	EXPECT_TRUE(f.has_log_start);
	/* all five, whole, across more than one 64 KiB attribute */
	ASSERT_EQ(5, n);
	EXPECT_GE(f.nrecords_attrs, 2);
	EXPECT_EQ(5 * len, f.len);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(i, bv[i].base);
		EXPECT_EQ(len, bv[i].len);
	}
}

TEST_F(log, fetch_above_leo)
{
	struct fetch fr = { .isolation = KREP_READ_COMMITTED };
	struct fetched f;
	size_t len;

	ok(topic_new(&self->nl, "range", 1, 1, NULL, &self->ack), &self->ack);
	len = batch_simple(self->buf, sizeof(self->buf), 3, "r", 1000, NULL);
	ok(produce(&self->nl, "range", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);

	/* at LEO: nothing yet, no error */
	ok(fetch_at(&self->nl, "range", 3, &f, &self->ack), &self->ack);
	EXPECT_FALSE(f.has_records);
	EXPECT_EQ(3, f.hw);

	fetch_at(&self->nl, "range", 4, &f, &self->ack);
	expect_kerr(&self->ack, ERANGE, KREP_KERR_OFFSET_OUT_OF_RANGE,
		    "offset beyond the log end offset");
	fetch_at(&self->nl, "range", 1ULL << 40, &f, &self->ack);
	expect_kerr(&self->ack, ERANGE, KREP_KERR_OFFSET_OUT_OF_RANGE,
		    "offset beyond the log end offset");
	/* 2^64 - 1 and 2^63: beyond any log, Kafka's code, not the policy's */
	fetch_at(&self->nl, "range", ~0ULL, &f, &self->ack);
	expect_kerr(&self->ack, ERANGE, KREP_KERR_OFFSET_OUT_OF_RANGE,
		    "offset beyond the log end offset");
	fetch_at(&self->nl, "range", 1ULL << 63, &f, &self->ack);
	expect_kerr(&self->ack, ERANGE, KREP_KERR_OFFSET_OUT_OF_RANGE,
		    "offset beyond the log end offset");
	fr.offset = 4;
	fr.max_wait_ms = 200;
	fetch_p(&self->nl, "range", 0, &fr, &f, &self->ack);
	expect_kerr(&self->ack, ERANGE, KREP_KERR_OFFSET_OUT_OF_RANGE,
		    "offset beyond the log end offset");
}

TEST_F(log, fetch_below_log_start)
{
	__u64 ls, lw, off;
	struct bview bv[16];
	struct fetched f;
	struct part p;
	size_t len;
	int i;

	ok(topic_new(&self->nl, "start", 1, 1, NULL, &self->ack), &self->ack);
	for (i = 0; i < 10; i++) {
		len = batch_simple(self->buf, sizeof(self->buf), 1, "s", 1000, NULL);
		ok(produce(&self->nl, "start", self->buf, len, -1, NULL,
			   &self->ack), &self->ack);
	}
	len = batch_simple(self->buf, sizeof(self->buf), 5, "s", 1000, NULL);
	ok(produce(&self->nl, "start", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);		/* offsets 10..14 */

	ok(delete_records(&self->nl, "start", 4, &ls, &lw, &self->ack),
	   &self->ack);
	EXPECT_EQ(4, ls);
	EXPECT_EQ(4, lw);	/* RF=1: LW is the leader's log start */

	fetch_at(&self->nl, "start", 3, &f, &self->ack);
	expect_kerr(&self->ack, ERANGE, KREP_KERR_OFFSET_OUT_OF_RANGE,
		    "offset below the log start offset");
	fetch_at(&self->nl, "start", 0, &f, &self->ack);
	expect_kerr(&self->ack, ERANGE, KREP_KERR_OFFSET_OUT_OF_RANGE,
		    "offset below the log start offset");
	ok(fetch_at(&self->nl, "start", 4, &f, &self->ack), &self->ack);
	ASSERT_EQ(7, batches(&f, bv, 16));
	EXPECT_EQ(4, bv[0].base);
	EXPECT_EQ(4, f.log_start);
	ok(list_offsets(&self->nl, "start", KREP_TS_EARLIEST, &off, NULL, NULL,
			&self->ack), &self->ack);
	EXPECT_EQ(4, off);

	/* below the current start: accepted, changes nothing */
	ok(delete_records(&self->nl, "start", 2, &ls, &lw, &self->ack),
	   &self->ack);
	EXPECT_EQ(4, ls);

	/* inside a batch: consumers may still fetch its tail */
	ok(delete_records(&self->nl, "start", 12, &ls, &lw, &self->ack),
	   &self->ack);
	EXPECT_EQ(12, ls);
	fetch_at(&self->nl, "start", 11, &f, &self->ack);
	expect_kerr(&self->ack, ERANGE, KREP_KERR_OFFSET_OUT_OF_RANGE,
		    "offset below the log start offset");
	ok(fetch_at(&self->nl, "start", 12, &f, &self->ack), &self->ack);
	ASSERT_EQ(1, batches(&f, bv, 16));
	EXPECT_EQ(10, bv[0].base);
	EXPECT_EQ(4, bv[0].last_delta);

	ok(part_get(&self->nl, "start", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(12, p.log_start);
	EXPECT_EQ(12, p.lw);
	EXPECT_EQ(15, p.leo);
	EXPECT_EQ(15, p.hw);
}

TEST_F(log, delete_records_beyond_hw)
{
	__u64 ls, lw;
	struct fetched f;
	struct part p;
	size_t len;

	ok(topic_new(&self->nl, "del", 1, 1, NULL, &self->ack), &self->ack);
	len = batch_simple(self->buf, sizeof(self->buf), 5, "d", 1000, NULL);
	ok(produce(&self->nl, "del", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);

	delete_records(&self->nl, "del", 6, NULL, NULL, &self->ack);
	expect_kerr(&self->ack, ERANGE, KREP_KERR_OFFSET_OUT_OF_RANGE,
		    "offset beyond the high watermark");
	delete_records(&self->nl, "del", ~0ULL >> 1, NULL, NULL, &self->ack);
	expect_kerr(&self->ack, ERANGE, KREP_KERR_OFFSET_OUT_OF_RANGE,
		    "offset beyond the high watermark");
	ok(part_get(&self->nl, "del", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(0, p.log_start);
	EXPECT_EQ(5, p.leo);

	/* up to HW itself: the whole log goes, LEO stays */
	ok(delete_records(&self->nl, "del", 5, &ls, &lw, &self->ack),
	   &self->ack);
	EXPECT_EQ(5, ls);
	EXPECT_EQ(5, lw);
	ok(part_get(&self->nl, "del", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(5, p.log_start);
	EXPECT_EQ(5, p.leo);
	EXPECT_EQ(5, p.hw);
	EXPECT_EQ(0, p.bytes);
	ok(fetch_at(&self->nl, "del", 5, &f, &self->ack), &self->ack);
	EXPECT_FALSE(f.has_records);
	len = batch_simple(self->buf, sizeof(self->buf), 1, "d", 1000, NULL);
	ok(produce(&self->nl, "del", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);
	ok(fetch_at(&self->nl, "del", 5, &f, &self->ack), &self->ack);
	EXPECT_TRUE(f.has_records);
}

TEST_F(log, message_too_large)
{
	struct tcfg cfg = { .max_message_bytes = 1024 };
	struct tcfg seg = { .segment_bytes = 4096 };
	struct prod out;
	struct part p;
	size_t len;

	ok(topic_new(&self->nl, "big", 1, 1, &cfg, &self->ack), &self->ack);
	len = batch_sized(self->buf, 1024, 'm');
	ok(produce(&self->nl, "big", self->buf, len, -1, &out, &self->ack),
	   &self->ack);
	len = batch_sized(self->buf, 1025, 'm');
	produce(&self->nl, "big", self->buf, len, -1, NULL, &self->ack);
	expect_kerr(&self->ack, EMSGSIZE, KREP_KERR_MESSAGE_TOO_LARGE,
		    "batch larger than max_message_bytes");
	len = batch_sized(self->buf, 60000, 'm');
	produce(&self->nl, "big", self->buf, len, 1, NULL, &self->ack);
	expect_kerr(&self->ack, EMSGSIZE, KREP_KERR_MESSAGE_TOO_LARGE,
		    "batch larger than max_message_bytes");
	ok(part_get(&self->nl, "big", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(1, p.leo);
	EXPECT_EQ(1024, p.bytes);

	/* a batch larger than a segment cannot be stored either */
	ok(topic_new(&self->nl, "seg", 1, 1, &seg, &self->ack), &self->ack);
	len = batch_sized(self->buf, 4097, 's');
	produce(&self->nl, "seg", self->buf, len, -1, NULL, &self->ack);
	expect_kerr(&self->ack, EMSGSIZE, KREP_KERR_RECORD_LIST_TOO_LARGE,
		    "batch larger than segment_bytes");
	len = batch_sized(self->buf, 4096, 's');
	ok(produce(&self->nl, "seg", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);
	ok(part_get(&self->nl, "seg", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(1, p.leo);
}

/* a corrupt or malformed batch is refused whole */
TEST_F(log, corrupt_batch)
{
	struct part p;
	size_t len;

	ok(topic_new(&self->nl, "crc", 1, 1, NULL, &self->ack), &self->ack);
	len = batch_simple(self->buf, sizeof(self->buf), 3, "c", 1000, NULL);
	self->buf[len - 1] ^= 1;
	produce(&self->nl, "crc", self->buf, len, -1, NULL, &self->ack);
	expect_kerr(&self->ack, EBADMSG, KREP_KERR_CORRUPT_MESSAGE,
		    "batch CRC-32C mismatch");
	self->buf[len - 1] ^= 1;
	produce(&self->nl, "crc", self->buf, len - 1, -1, NULL, &self->ack);
	expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_RECORD,
		    "batch length does not match the records attribute");

	/* cut to 30 bytes: shorter than the header, not a policy error */
	produce(&self->nl, "crc", self->buf, 30, -1, NULL, &self->ack);
	expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_RECORD,
		    "records shorter than a RecordBatch v2 header (61 bytes)");
	produce(&self->nl, "crc", self->buf, 0, -1, NULL, &self->ack);
	expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_RECORD,
		    "records shorter than a RecordBatch v2 header (61 bytes)");

	/* magic 1, short (a v1 message) and long: the magic is the fault */
	self->buf[16] = 1;
	produce(&self->nl, "crc", self->buf, 34, -1, NULL, &self->ack);
	expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_RECORD,
		    "magic is not 2: only RecordBatch v2 is accepted");
	produce(&self->nl, "crc", self->buf, len, -1, NULL, &self->ack);
	expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_RECORD,
		    "magic is not 2: only RecordBatch v2 is accepted");
	self->buf[16] = 2;

	ok(part_get(&self->nl, "crc", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(0, p.leo);
	EXPECT_EQ(0, p.bytes);
}

TEST_F(log, produce_to_deleted_topic)
{
	struct fetched f;
	struct part p;
	size_t len;

	len = batch_simple(self->buf, sizeof(self->buf), 2, "g", 1000, NULL);
	ok(topic_new(&self->nl, "gone", 1, 1, NULL, &self->ack), &self->ack);
	ok(produce(&self->nl, "gone", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);
	ok(topic_cmd(&self->nl, KREP_CMD_TOPIC_DEL, "gone", NULL, &self->ack),
	   &self->ack);
	produce(&self->nl, "gone", self->buf, len, -1, NULL, &self->ack);
	expect_kerr(&self->ack, ENOENT, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
		    "no such topic");
	fetch_at(&self->nl, "gone", 0, &f, &self->ack);
	expect_kerr(&self->ack, ENOENT, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
		    "no such topic");
	topic_cmd(&self->nl, KREP_CMD_TOPIC_DEL, "gone", NULL, &self->ack);
	expect_kerr(&self->ack, ENOENT, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
		    "no such topic");
	EXPECT_EQ(0, topic_count(&self->nl));

	/* the same name again is a new, empty log */
	ok(topic_new(&self->nl, "gone", 1, 1, NULL, &self->ack), &self->ack);
	ok(part_get(&self->nl, "gone", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(0, p.leo);
	EXPECT_EQ(0, p.bytes);
}

/* ---------------------------------------------------------------------
 * Waits
 */

/* a FETCH parked at the end returns as soon as a produce lands */
TEST_F_TIMEOUT(log, produce_wakes_parked_fetch, 60)
{
	struct bg_req q = { .op = BG_FETCH, .topic = "wake",
			    .f = { .offset = 1, .max_wait_ms = MAX_WAIT_MS,
				   .isolation = ISO_NONE } };
	struct fetch fr = { .offset = 1, .max_wait_ms = 500,
			    .isolation = ISO_NONE };
	struct bg_result res;
	struct fetched f;
	__s64 t0, t_prod;
	size_t len;

	ok(topic_new(&self->nl, "wake", 1, 1, NULL, &self->ack), &self->ack);
	len = batch_simple(self->buf, sizeof(self->buf), 1, "w", 1000, NULL);
	ok(produce(&self->nl, "wake", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);

	/* nothing comes: the wait runs its course, empty-handed */
	t0 = now_ms();
	ok(fetch_p(&self->nl, "wake", 0, &fr, &f, &self->ack), &self->ack);
	EXPECT_GE(now_ms() - t0, 450);
	EXPECT_FALSE(f.has_records);

	ASSERT_EQ(0, bg_start(&self->bg, &q));
	ASSERT_TRUE(bg_wait_parked(&self->bg, 10000));
	t_prod = now_ms();
	len = batch_simple(self->buf, sizeof(self->buf), 3, "w", 2000, NULL);
	ok(produce(&self->nl, "wake", self->buf, len, 1, NULL, &self->ack),
	   &self->ack);
	ASSERT_TRUE(bg_result(&self->bg, &res, MAX_WAIT_MS + 10000));
	EXPECT_EQ(0, res.rc) TH_LOG("%s", res.ack.msg);
	EXPECT_TRUE(res.has_records);
	EXPECT_EQ(1, res.first_base);
	EXPECT_EQ(3, res.first_count);
	EXPECT_EQ(4, res.hw);
	TH_LOG("parked fetch returned %lld ms after the produce",
	       (long long)(res.end_ms - t_prod));
	EXPECT_LT(res.end_ms - t_prod, WAKE_MS);
	EXPECT_LT(res.end_ms - res.start_ms, MAX_WAIT_MS - 1000);
}

/* a read_committed FETCH parked at LSO waits for the commit, not the data */
TEST_F_TIMEOUT(log, commit_wakes_read_committed_fetch, 60)
{
	struct bg_req q = { .op = BG_FETCH, .topic = "rcw",
			    .f = { .offset = 1, .max_wait_ms = MAX_WAIT_MS,
				   .isolation = KREP_READ_COMMITTED } };
	struct batch_opts tx = { .txn = true, .pid = 42, .epoch = 0, .seq = 0 };
	struct bg_result res;
	__s64 t_commit;
	size_t len;

	ok(topic_new(&self->nl, "rcw", 1, 1, NULL, &self->ack), &self->ack);
	len = batch_simple(self->buf, sizeof(self->buf), 1, "p", 1000, NULL);
	ok(produce(&self->nl, "rcw", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);
	ok(txn(&self->nl, "rcw", 42, 0, KREP_TXN_BEGIN, NULL, NULL, &self->ack),
	   &self->ack);

	ASSERT_EQ(0, bg_start(&self->bg, &q));
	ASSERT_TRUE(bg_wait_parked(&self->bg, 10000));
	len = batch_simple(self->buf, sizeof(self->buf), 2, "t", 1000, &tx);
	ok(produce(&self->nl, "rcw", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);		/* offsets 1, 2: open, not for it */
	sleep_ms(500);
	EXPECT_TRUE(bg_parked(&self->bg))
		TH_LOG("the open transaction's records woke a read_committed fetch");
	t_commit = now_ms();
	ok(txn(&self->nl, "rcw", 42, 0, KREP_TXN_COMMIT, NULL, NULL, &self->ack),
	   &self->ack);		/* marker at 3 */
	ASSERT_TRUE(bg_result(&self->bg, &res, MAX_WAIT_MS + 10000));
	EXPECT_EQ(0, res.rc) TH_LOG("%s", res.ack.msg);
	EXPECT_TRUE(res.has_records);
	EXPECT_EQ(1, res.first_base);
	EXPECT_EQ(4, res.lso);
	EXPECT_LT(res.end_ms - t_commit, WAKE_MS);
}

TEST_F_TIMEOUT(log, delete_topic_wakes_parked_fetch, 60)
{
	struct bg_req q = { .op = BG_FETCH, .topic = "doomed",
			    .f = { .offset = 2, .max_wait_ms = MAX_WAIT_MS,
				   .isolation = ISO_NONE } };
	struct bg_result res;
	__s64 t_del;
	size_t len;

	ok(topic_new(&self->nl, "doomed", 1, 1, NULL, &self->ack), &self->ack);
	len = batch_simple(self->buf, sizeof(self->buf), 2, "d", 1000, NULL);
	ok(produce(&self->nl, "doomed", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);
	ASSERT_EQ(0, bg_start(&self->bg, &q));
	ASSERT_TRUE(bg_wait_parked(&self->bg, 10000));
	t_del = now_ms();
	ok(topic_cmd(&self->nl, KREP_CMD_TOPIC_DEL, "doomed", NULL, &self->ack),
	   &self->ack);
	ASSERT_TRUE(bg_result(&self->bg, &res, MAX_WAIT_MS + 10000));
	expect_kerr(&res.ack, ENOENT, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
		    "topic was deleted");
	TH_LOG("parked fetch returned %lld ms after the deletion",
	       (long long)(res.end_ms - t_del));
	EXPECT_LT(res.end_ms - t_del, WAKE_MS);
}

/* an acks=all produce waiting for followers that never come */
TEST_F_TIMEOUT(log, delete_topic_wakes_parked_produce, 60)
{
	struct tcfg cfg = { .lag_ms = 3600 * 1000 };
	struct bg_req q = { .op = BG_PRODUCE, .topic = "stuck", .acks = -1,
			    .timeout_ms = 30000 };
	struct bg_result res;
	__s64 t_del;

	ok(three_brokers(&self->nl, &self->ack), &self->ack);
	ok(topic_new(&self->nl, "stuck", 1, 3, &cfg, &self->ack), &self->ack);
	q.len = batch_simple(self->buf, sizeof(self->buf), 1, "s", 1000, NULL);
	q.batch = self->buf;
	ASSERT_EQ(0, bg_start(&self->bg, &q));
	ASSERT_TRUE(bg_wait_parked(&self->bg, 10000));
	t_del = now_ms();
	ok(topic_cmd(&self->nl, KREP_CMD_TOPIC_DEL, "stuck", NULL, &self->ack),
	   &self->ack);
	ASSERT_TRUE(bg_result(&self->bg, &res, 40000));
	expect_kerr(&res.ack, ENOENT, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
		    "topic was deleted");
	EXPECT_LT(res.end_ms - t_del, WAKE_MS);
}

/* ---------------------------------------------------------------------
 * Transactions
 */

TEST_F(log, txn_state_errors)
{
	struct batch_opts tx7 = { .txn = true, .pid = 7, .epoch = 0, .seq = 0 };
	struct batch_opts tx8 = { .txn = true, .pid = 8, .epoch = 0, .seq = 0 };
	__u64 off, lso;
	struct part p;
	size_t len;

	ok(topic_new(&self->nl, "tx", 1, 1, NULL, &self->ack), &self->ack);
	txn(&self->nl, "tx", 7, 0, KREP_TXN_COMMIT, NULL, NULL, &self->ack);
	expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_TXN_STATE,
		    "no open transaction for this producer");
	txn(&self->nl, "tx", 7, 0, KREP_TXN_ABORT, NULL, NULL, &self->ack);
	expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_TXN_STATE,
		    "no open transaction for this producer");
	len = batch_simple(self->buf, sizeof(self->buf), 1, "t", 1000, &tx7);
	produce(&self->nl, "tx", self->buf, len, -1, NULL, &self->ack);
	expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_TXN_STATE,
		    "transactional batch outside an open transaction");
	ok(part_get(&self->nl, "tx", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(0, p.leo);

	ok(txn(&self->nl, "tx", 7, 0, KREP_TXN_BEGIN, &off, &lso, &self->ack),
	   &self->ack);
	EXPECT_EQ(0, off);	/* begin answers the log end offset */
	txn(&self->nl, "tx", 7, 0, KREP_TXN_BEGIN, NULL, NULL, &self->ack);
	expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_TXN_STATE,
		    "producer already has an open transaction");
	txn(&self->nl, "tx", 7, 1, KREP_TXN_COMMIT, NULL, NULL, &self->ack);
	expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_TXN_STATE,
		    "producer epoch does not match the transaction");
	/* producer 8 has no transaction although 7 has one */
	len = batch_simple(self->buf, sizeof(self->buf), 1, "t", 1000, &tx8);
	produce(&self->nl, "tx", self->buf, len, -1, NULL, &self->ack);
	expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_TXN_STATE,
		    "transactional batch outside an open transaction");
	txn(&self->nl, "tx", 8, 0, KREP_TXN_COMMIT, NULL, NULL, &self->ack);
	expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_TXN_STATE,
		    "no open transaction for this producer");
	ok(part_get(&self->nl, "tx", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(0, p.leo);

	len = batch_simple(self->buf, sizeof(self->buf), 2, "t", 1000, &tx7);
	ok(produce(&self->nl, "tx", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);
	ok(txn(&self->nl, "tx", 7, 0, KREP_TXN_COMMIT, &off, &lso, &self->ack),
	   &self->ack);
	EXPECT_EQ(2, off);	/* the marker */
	EXPECT_EQ(3, lso);
	txn(&self->nl, "tx", 7, 0, KREP_TXN_COMMIT, NULL, NULL, &self->ack);
	expect_kerr(&self->ack, EINVAL, KREP_KERR_INVALID_TXN_STATE,
		    "no open transaction for this producer");
	/* an empty transaction: begin and abort, a marker all the same */
	ok(txn(&self->nl, "tx", 7, 0, KREP_TXN_BEGIN, NULL, NULL, &self->ack),
	   &self->ack);
	ok(txn(&self->nl, "tx", 7, 0, KREP_TXN_ABORT, &off, &lso, &self->ack),
	   &self->ack);
	EXPECT_EQ(3, off);
	EXPECT_EQ(4, lso);
}

/* the data batches of producer @pid in a FETCH reply */
static int count_pid(const struct bview *bv, int n, __s64 pid)
{
	int i, c = 0;

	for (i = 0; i < n; i++)
		if (bv[i].pid == pid && !(bv[i].attrs & RB_ATTR_CONTROL))
			c++;
	return c;
}

/*
 * read_committed stops at LSO and leaves out aborted transactions;
 * read_uncommitted reads everything to HW. LSO < HW while a transaction
 * with records is open, LSO == HW once none is.
 *
 *   0 plain  1-2 pid 100 (aborted: abort marker 5)  3 plain
 *   4 pid 200 (committed later)  5 abort(100)  6 pid 200
 *   7 commit(200)  8 plain
 */
TEST_F(log, read_committed)
{
	struct batch_opts t100 = { .txn = true, .pid = 100, .epoch = 3 };
	struct batch_opts t200 = { .txn = true, .pid = 200, .epoch = 0 };
	struct fetch rc = { .isolation = KREP_READ_COMMITTED };
	struct fetch ru = { .isolation = KREP_READ_UNCOMMITTED };
	struct bview bv[16];
	struct fetched f;
	struct part p;
	__u64 off, lso;
	size_t len;
	int n;

	ok(topic_new(&self->nl, "rc", 1, 1, NULL, &self->ack), &self->ack);
	len = batch_simple(self->buf, sizeof(self->buf), 1, "plain", 1000, NULL);
	ok(produce(&self->nl, "rc", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);

	ok(txn(&self->nl, "rc", 100, 3, KREP_TXN_BEGIN, NULL, &lso, &self->ack),
	   &self->ack);
	EXPECT_EQ(1, lso);	/* nothing written yet: LSO == HW */
	len = batch_simple(self->buf, sizeof(self->buf), 2, "abort", 1000, &t100);
	ok(produce(&self->nl, "rc", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);
	ok(part_get(&self->nl, "rc", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(3, p.hw);
	EXPECT_EQ(1, p.lso) TH_LOG("LSO must stop at the open transaction's first offset");

	len = batch_simple(self->buf, sizeof(self->buf), 1, "plain", 1000, NULL);
	ok(produce(&self->nl, "rc", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);
	ok(txn(&self->nl, "rc", 200, 0, KREP_TXN_BEGIN, NULL, NULL, &self->ack),
	   &self->ack);
	len = batch_simple(self->buf, sizeof(self->buf), 1, "commit", 1000, &t200);
	ok(produce(&self->nl, "rc", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);
	ok(part_get(&self->nl, "rc", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(5, p.hw);
	EXPECT_EQ(1, p.lso);
	EXPECT_LT(p.lso, p.hw);

	/* while open: read_committed gets only offset 0 */
	rc.offset = 0;
	ok(fetch_p(&self->nl, "rc", 0, &rc, &f, &self->ack), &self->ack);
	n = batches(&f, bv, 16);
	EXPECT_EQ(1, n);
	EXPECT_EQ(0, count_pid(bv, n, 100));
	EXPECT_EQ(0, count_pid(bv, n, 200));
	EXPECT_EQ(1, f.lso);
	EXPECT_EQ(5, f.hw);
	/* at LSO: nothing, no error */
	rc.offset = 1;
	ok(fetch_p(&self->nl, "rc", 0, &rc, &f, &self->ack), &self->ack);
	EXPECT_FALSE(f.has_records);

	ok(txn(&self->nl, "rc", 100, 3, KREP_TXN_ABORT, &off, &lso, &self->ack),
	   &self->ack);
	EXPECT_EQ(5, off);
	EXPECT_EQ(4, lso);	/* 200's transaction is still open at 4 */
	t200.seq = 1;		/* its next sequence: seq 0 again is a retry */
	len = batch_simple(self->buf, sizeof(self->buf), 1, "commit", 1000, &t200);
	ok(produce(&self->nl, "rc", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);
	ok(part_get(&self->nl, "rc", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(7, p.hw);
	EXPECT_EQ(4, p.lso);
	ok(txn(&self->nl, "rc", 200, 0, KREP_TXN_COMMIT, &off, &lso, &self->ack),
	   &self->ack);
	EXPECT_EQ(7, off);
	EXPECT_EQ(8, lso);
	len = batch_simple(self->buf, sizeof(self->buf), 1, "plain", 1000, NULL);
	ok(produce(&self->nl, "rc", self->buf, len, -1, NULL, &self->ack),
	   &self->ack);
	ok(part_get(&self->nl, "rc", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(9, p.hw);
	EXPECT_EQ(9, p.lso);	/* none open: LSO == HW */
	EXPECT_EQ(9, p.leo);

	/* read_committed: the plain ones and 200's, never 100's */
	rc.offset = 0;
	ok(fetch_p(&self->nl, "rc", 0, &rc, &f, &self->ack), &self->ack);
	n = batches(&f, bv, 16);
	ASSERT_GE(n, 0);
	EXPECT_EQ(0, count_pid(bv, n, 100));
	EXPECT_EQ(2, count_pid(bv, n, 200));
	EXPECT_EQ(3, count_pid(bv, n, -1));
	/* starting inside the aborted range changes nothing */
	rc.offset = 2;
	ok(fetch_p(&self->nl, "rc", 0, &rc, &f, &self->ack), &self->ack);
	n = batches(&f, bv, 16);
	EXPECT_EQ(0, count_pid(bv, n, 100));
	EXPECT_EQ(2, count_pid(bv, n, 200));

	/* read_uncommitted: all of them, markers too */
	ru.offset = 0;
	ok(fetch_p(&self->nl, "rc", 0, &ru, &f, &self->ack), &self->ack);
	n = batches(&f, bv, 16);
	EXPECT_EQ(1, count_pid(bv, n, 100));
	EXPECT_EQ(2, count_pid(bv, n, 200));
	EXPECT_EQ(3, count_pid(bv, n, -1));
	EXPECT_EQ(8, n);
	/* the default isolation is read_uncommitted */
	ok(fetch_at(&self->nl, "rc", 0, &f, &self->ack), &self->ack);
	EXPECT_EQ(8, batches(&f, bv, 16));
}

/*
 * Watermarks sampled while a child produces plain batches and
 * transactions: HW and LSO never move backward, LSO <= HW <= LEO always,
 * and at the end (no transaction open) LSO == HW == LEO.
 */
TEST_F_TIMEOUT(log, watermarks_never_move_backward, 120)
{
	struct fetch fr = { .isolation = KREP_READ_COMMITTED };
	__u64 last_hw = 0, last_lso = 0;
	int samples = 0, bad = 0, status;
	struct fetched f;
	struct part p;
	pid_t pid;

	ok(topic_new(&self->nl, "mono", 1, 1, NULL, &self->ack), &self->ack);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct batch_opts tx = { .txn = true, .pid = 5, .epoch = 0 };
		struct ack ack;
		struct nl nl;
		size_t len;
		int i, fail = 0;

		if (krep_open(&nl))
			_exit(2);
		for (i = 0; i < 300 && !fail; i++) {
			switch (i % 6) {
			case 0:
				fail |= txn(&nl, "mono", 5, 0, KREP_TXN_BEGIN,
					    NULL, NULL, &ack);
				/* fallthrough */
			case 1:
			case 2:
				len = batch_simple(self->buf, sizeof(self->buf),
						   1 + i % 3, "tx", 1000, &tx);
				tx.seq += 1 + i % 3;
				fail |= produce(&nl, "mono", self->buf, len,
						i % 2 ? 1 : -1, NULL, &ack);
				break;
			case 3:
				fail |= txn(&nl, "mono", 5, 0,
					    i % 12 == 3 ? KREP_TXN_ABORT :
							  KREP_TXN_COMMIT,
					    NULL, NULL, &ack);
				/* fallthrough */
			default:
				len = batch_simple(self->buf, sizeof(self->buf),
						   2, "plain", 1000, NULL);
				fail |= produce(&nl, "mono", self->buf, len,
						i % 3 - 1, NULL, &ack);
			}
			if (fail)
				fprintf(stderr, "# producer: step %d: %s\n", i,
					ack.msg);
		}
		_exit(fail ? 1 : 0);
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (part_get(&self->nl, "mono", 0, &p, &self->ack)) {
			bad++;
			break;
		}
		if (p.hw < last_hw || p.lso < last_lso || p.lso > p.hw ||
		    p.hw > p.leo || p.log_start > p.hw) {
			TH_LOG("sample %d: leo %llu hw %llu (was %llu) lso %llu (was %llu)",
			       samples, (unsigned long long)p.leo,
			       (unsigned long long)p.hw,
			       (unsigned long long)last_hw,
			       (unsigned long long)p.lso,
			       (unsigned long long)last_lso);
			bad++;
		}
		last_hw = p.hw;
		last_lso = p.lso;
		/* and as a read_committed consumer sees them */
		fr.offset = last_lso;
		if (fetch_p(&self->nl, "mono", 0, &fr, &f, &self->ack)) {
			bad++;
			break;
		}
		if (f.hw < last_hw || f.lso < last_lso || f.lso > f.hw) {
			TH_LOG("fetch sample %d: hw %llu lso %llu after %llu %llu",
			       samples, (unsigned long long)f.hw,
			       (unsigned long long)f.lso,
			       (unsigned long long)last_hw,
			       (unsigned long long)last_lso);
			bad++;
		}
		last_hw = f.hw;
		last_lso = f.lso;
		samples++;
	}
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, bad);
	TH_LOG("%d samples, final hw %llu", samples, (unsigned long long)last_hw);
	EXPECT_GE(samples, 5);
	ok(part_get(&self->nl, "mono", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(p.leo, p.hw);
	EXPECT_EQ(p.hw, p.lso);
	EXPECT_GE(p.hw, last_hw);
}

/* ---------------------------------------------------------------------
 * Retention, offsets by time, the memory cap
 */

/*
 * segment_bytes 4096 holds four 1000-byte batches; retention_bytes 8192:
 * the log start only ever lands on a segment's base offset (a multiple of
 * four), and no more is dropped than needed.
 */
TEST_F(log, retention_whole_segments)
{
	struct tcfg cfg = { .segment_bytes = 4096, .has_retention = true,
			    .retention_bytes = 8192 };
	__u64 last_start = 0, off;
	struct bview bv[16];
	struct fetched f;
	struct part p;
	size_t len;
	int i;

	ok(topic_new(&self->nl, "ret", 1, 1, &cfg, &self->ack), &self->ack);
	for (i = 0; i < 21; i++) {
		len = batch_sized(self->buf, 1000, 'r');
		ASSERT_EQ(1000, len);
		ok(produce(&self->nl, "ret", self->buf, len, -1, NULL,
			   &self->ack), &self->ack);
		ok(part_get(&self->nl, "ret", 0, &p, &self->ack), &self->ack);
		EXPECT_EQ(i + 1, p.leo);
		EXPECT_EQ(0, p.log_start % 4) TH_LOG("after %d: log start %llu",
			i + 1, (unsigned long long)p.log_start);
		EXPECT_GE(p.log_start, last_start);
		EXPECT_EQ((p.leo - p.log_start) * 1000, p.bytes);
		EXPECT_LE(p.bytes, 8192);
		if (p.log_start)	/* no more dropped than needed */
			EXPECT_GT(p.bytes + 4000, 8192);
		EXPECT_EQ(p.log_start, p.lw);
		last_start = p.log_start;
	}
	EXPECT_EQ(16, p.log_start);	/* 16..20: 4000 + 1000 bytes */
	EXPECT_EQ(5000, p.bytes);

	fetch_at(&self->nl, "ret", p.log_start - 1, &f, &self->ack);
	expect_kerr(&self->ack, ERANGE, KREP_KERR_OFFSET_OUT_OF_RANGE,
		    "offset below the log start offset");
	ok(fetch_at(&self->nl, "ret", p.log_start, &f, &self->ack), &self->ack);
	EXPECT_EQ(5, batches(&f, bv, 16));
	EXPECT_EQ(16, bv[0].base);
	ok(list_offsets(&self->nl, "ret", KREP_TS_EARLIEST, &off, NULL, NULL,
			&self->ack), &self->ack);
	EXPECT_EQ(16, off);
}

/*
 * Three batches with fixed timestamps (offsets: timestamp)
 *   A  0:1000 1:1500 2:1200    B  3:2000 4:2500    C  5:3000
 * LIST_OFFSETS by time answers the first offset whose timestamp is at
 * least the one asked, HW when there is none.
 */
static void produce_timed(struct __test_metadata *_metadata,
			  FIXTURE_DATA(log) *self, const char *topic)
{
	static const __s64 ts[] = { 1000, 1500, 1200, 2000, 2500, 3000 };
	static const int split[] = { 0, 3, 5, 6 };
	struct rec recs[6];
	size_t len;
	int i;

	memset(recs, 0, sizeof(recs));
	for (i = 0; i < 6; i++) {
		recs[i].ts = ts[i];
		recs[i].value = "v";
		recs[i].vlen = 1;
	}
	for (i = 0; i < 3; i++) {
		len = batch_build(self->buf, sizeof(self->buf), recs + split[i],
				  split[i + 1] - split[i], NULL);
		ok(produce(&self->nl, topic, self->buf, len, -1, NULL,
			   &self->ack), &self->ack);
	}
}

TEST_F(log, list_offsets)
{
	static const struct { __s64 ts; __u64 offset; } want[] = {
		{ 0, 0 }, { 1000, 0 }, { 1001, 1 }, { 1300, 1 }, { 1500, 1 },
		{ 1501, 3 }, { 2000, 3 }, { 2001, 4 }, { 2500, 4 },
		{ 2501, 5 }, { 3000, 5 },
	};
	bool has_ts;
	__s64 found;
	__u64 off;
	unsigned int i;

	ok(topic_new(&self->nl, "lo", 1, 1, NULL, &self->ack), &self->ack);
	ok(list_offsets(&self->nl, "lo", KREP_TS_EARLIEST, &off, NULL, NULL,
			&self->ack), &self->ack);
	EXPECT_EQ(0, off);
	ok(list_offsets(&self->nl, "lo", KREP_TS_LATEST, &off, NULL, NULL,
			&self->ack), &self->ack);
	EXPECT_EQ(0, off);
	ok(list_offsets(&self->nl, "lo", 5, &off, &has_ts, NULL, &self->ack),
	   &self->ack);
	EXPECT_EQ(0, off);
	EXPECT_FALSE(has_ts);

	produce_timed(_metadata, self, "lo");
	ok(list_offsets(&self->nl, "lo", KREP_TS_EARLIEST, &off, NULL, NULL,
			&self->ack), &self->ack);
	EXPECT_EQ(0, off);
	ok(list_offsets(&self->nl, "lo", KREP_TS_LATEST, &off, NULL, NULL,
			&self->ack), &self->ack);
	EXPECT_EQ(6, off);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		ok(list_offsets(&self->nl, "lo", want[i].ts, &off, &has_ts,
				&found, &self->ack), &self->ack);
		EXPECT_EQ(want[i].offset, off) TH_LOG("ts %lld",
						     (long long)want[i].ts);
		EXPECT_TRUE(has_ts);
		EXPECT_GE(found, want[i].ts);
	}
	/* later than every record: HW, without a timestamp */
	ok(list_offsets(&self->nl, "lo", 3001, &off, &has_ts, NULL, &self->ack),
	   &self->ack);
	EXPECT_EQ(6, off);
	EXPECT_FALSE(has_ts);

	/* the log start moves: earliest follows, times below it answer it */
	ok(delete_records(&self->nl, "lo", 4, NULL, NULL, &self->ack),
	   &self->ack);
	ok(list_offsets(&self->nl, "lo", KREP_TS_EARLIEST, &off, NULL, NULL,
			&self->ack), &self->ack);
	EXPECT_EQ(4, off);
	ok(list_offsets(&self->nl, "lo", 0, &off, NULL, NULL, &self->ack),
	   &self->ack);
	EXPECT_EQ(4, off);
	ok(list_offsets(&self->nl, "lo", 2600, &off, NULL, NULL, &self->ack),
	   &self->ack);
	EXPECT_EQ(5, off);
}

/*
 * Kafka answers the timestamp of the record found (FileRecords.
 * searchForTimestamp), and never an offset whose record is earlier than
 * asked, even when the log start cuts a batch.
 */
TEST_F(log, list_offsets_record_timestamp)
{
	static const struct { __s64 ts; __u64 offset; __s64 found; } want[] = {
		{ 0, 0, 1000 }, { 1001, 1, 1500 }, { 1600, 3, 2000 },
		{ 2000, 3, 2000 }, { 2100, 4, 2500 }, { 3000, 5, 3000 },
	};
	bool has_ts;
	__s64 found;
	__u64 off;
	unsigned int i;

	ok(topic_new(&self->nl, "lt", 1, 1, NULL, &self->ack), &self->ack);
	produce_timed(_metadata, self, "lt");
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		ok(list_offsets(&self->nl, "lt", want[i].ts, &off, &has_ts,
				&found, &self->ack), &self->ack);
		EXPECT_EQ(want[i].offset, off);
		EXPECT_TRUE(has_ts);
		EXPECT_EQ(want[i].found, found) TH_LOG("ts %lld: offset %llu",
			(long long)want[i].ts, (unsigned long long)off);
	}
	/* start at 2 (ts 1200): 1300 is first reached at offset 3 */
	ok(delete_records(&self->nl, "lt", 2, NULL, NULL, &self->ack),
	   &self->ack);
	ok(list_offsets(&self->nl, "lt", 1300, &off, NULL, &found, &self->ack),
	   &self->ack);
	EXPECT_EQ(3, off);
	EXPECT_EQ(2000, found);
}

/*
 * The time index: 600 batches of 3 records over several 16 KiB segments
 * (an index entry every 4 KiB), timestamps mostly rising, out of order
 * within a batch, with a late record (300 ms ahead) every 40th batch,
 * which later index entries must not skip past. Every answer
 * is the first offset whose record is at least as late as asked, as a
 * scan of every record finds it, and carries that record's timestamp.
 */
TEST_F(log, list_offsets_time_index)
{
	static const int jitter[3] = { 0, 5, 2 };
	struct tcfg cfg = { .segment_bytes = 16384 };
	enum { NB = 600, NR = NB * 3 };
	static __s64 ts[NR];
	char val[64];
	struct rec recs[3];
	bool has_ts;
	__s64 found, q;
	__u64 off, want;
	size_t len;
	int i, j;

	ok(topic_new(&self->nl, "lx", 1, 1, &cfg, &self->ack), &self->ack);
	memset(val, 'x', sizeof(val));
	for (i = 0; i < NB; i++) {
		memset(recs, 0, sizeof(recs));
		for (j = 0; j < 3; j++) {
			ts[i * 3 + j] = 10000 + 7 * i + jitter[j];
			if (j == 1 && i % 40 == 39)
				ts[i * 3 + j] += 300;	/* late */
			recs[j].ts = ts[i * 3 + j];
			recs[j].value = val;
			recs[j].vlen = sizeof(val);
		}
		len = batch_build(self->buf, sizeof(self->buf), recs, 3, NULL);
		ok(produce(&self->nl, "lx", self->buf, len, -1, NULL,
			   &self->ack), &self->ack);
	}
	for (q = 9990; q <= 10000 + 7 * NB + 310; q += 7) {
		want = NR;
		for (i = 0; i < NR && want == NR; i++)
			if (ts[i] >= q)
				want = i;
		ok(list_offsets(&self->nl, "lx", q, &off, &has_ts, &found,
				&self->ack), &self->ack);
		EXPECT_EQ(want, off) TH_LOG("ts %lld", (long long)q);
		if (want < NR) {
			EXPECT_TRUE(has_ts);
			EXPECT_EQ(ts[want], found) TH_LOG("ts %lld", (long long)q);
		} else {
			EXPECT_FALSE(has_ts);
		}
	}
}

/*
 * log_memory_max=1048576 (the wrapper's insmod): produce until
 * KAFKA_STORAGE_ERROR; every batch acknowledged is there, whole, and
 * nothing else; the cap is the broker's, across topics; deleting records
 * gives the memory back.
 */
TEST_F_TIMEOUT(log, memory_cap, 120)
{
	struct tcfg cfg = { .segment_bytes = 131072 };
	struct fetch fr = { .max_bytes = 60000, .isolation = ISO_NONE };
	struct bview bv[2];
	struct fetched f;
	struct prod out;
	struct part p;
	char cap[64] = "";
	size_t len = 0;
	int fd, n, i;
	__s64 t0;
	__u64 acked = 0;

	fd = open("/sys/module/krep/parameters/log_memory_max", O_RDONLY);
	if (fd >= 0) {
		n = read(fd, cap, sizeof(cap) - 1);
		cap[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	if (strtoull(cap, NULL, 10) != 1048576)
		SKIP(return, "krep.ko not loaded with log_memory_max=1048576");

	ok(topic_new(&self->nl, "full", 1, 1, &cfg, &self->ack), &self->ack);
	ok(topic_new(&self->nl, "other", 1, 1, NULL, &self->ack), &self->ack);
	for (i = 0; i < 100; i++) {
		len = batch_sized(self->buf, 60000, (__u8)i);
		if (produce(&self->nl, "full", self->buf, len, -1, &out,
			    &self->ack))
			break;
		EXPECT_EQ(acked, out.offset);
		acked++;
	}
	TH_LOG("%llu batches of 60000 bytes fit", (unsigned long long)acked);
	expect_kerr(&self->ack, ENOSPC, KREP_KERR_KAFKA_STORAGE_ERROR,
		    "broker log memory cap reached");
	ASSERT_GE(acked, 8);
	ASSERT_LE(acked * 60000, 1048576);

	/* refused again, by any topic of this broker; nothing was appended */
	produce(&self->nl, "full", self->buf, len, 1, NULL, &self->ack);
	expect_kerr(&self->ack, ENOSPC, KREP_KERR_KAFKA_STORAGE_ERROR, NULL);
	len = batch_sized(self->buf2, 60000, 'o');
	produce(&self->nl, "other", self->buf2, len, 1, NULL, &self->ack);
	expect_kerr(&self->ack, ENOSPC, KREP_KERR_KAFKA_STORAGE_ERROR, NULL);
	ok(part_get(&self->nl, "full", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(acked, p.leo);
	EXPECT_EQ(acked, p.hw);
	EXPECT_EQ(acked * 60000, p.bytes);
	ok(part_get(&self->nl, "other", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(0, p.leo);
	EXPECT_EQ(0, p.bytes);

	/* the log is intact: every batch, whole, in order, then the end */
	for (i = 0; i < (int)acked; i++) {
		fr.offset = i;
		ok(fetch_p(&self->nl, "full", 0, &fr, &f, &self->ack),
		   &self->ack);
		ASSERT_EQ(1, batches(&f, bv, 2)) TH_LOG("offset %d", i);
		batch_sized(self->buf, 60000, (__u8)i);
		EXPECT_TRUE(same_batch(&bv[0], self->buf, 60000, i));
	}
	fr.offset = acked;
	ok(fetch_p(&self->nl, "full", 0, &fr, &f, &self->ack), &self->ack);
	EXPECT_FALSE(f.has_records);

	/* whole segments (two batches each) below the new start are freed */
	ok(delete_records(&self->nl, "full", 4, NULL, NULL, &self->ack),
	   &self->ack);
	len = batch_sized(self->buf, 60000, 'n');
	ok(produce(&self->nl, "full", self->buf, len, -1, &out, &self->ack),
	   &self->ack);
	EXPECT_EQ(acked, out.offset);
	ok(produce(&self->nl, "other", self->buf2, len, -1, &out, &self->ack),
	   &self->ack);
	EXPECT_EQ(0, out.offset);

	/*
	 * Deleting the topic gives all of its memory back, once the last
	 * reference is gone (after an RCU grace period): "other" can then
	 * take about as much as "full" did.
	 */
	ok(topic_cmd(&self->nl, KREP_CMD_TOPIC_DEL, "full", NULL, &self->ack),
	   &self->ack);
	t0 = now_ms();
	for (n = 1; n < 100;) {
		if (!produce(&self->nl, "other", self->buf2, len, 1, NULL,
			     &self->ack)) {
			n++;
			continue;
		}
		if (self->ack.error != ENOSPC || n >= (int)acked - 2 ||
		    now_ms() - t0 > 5000)
			break;
		sleep_ms(50);	/* not all freed yet */
	}
	expect_kerr(&self->ack, ENOSPC, KREP_KERR_KAFKA_STORAGE_ERROR, NULL);
	TH_LOG("then %d batches fit in \"other\"", n);
	EXPECT_GE(n, (int)acked - 2);
	ok(part_get(&self->nl, "other", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(n, p.leo);
	EXPECT_EQ((__u64)n * 60000, p.bytes);
}

/* ---------------------------------------------------------------------
 * RF=3 on a single broker: peers 2 and 3 never exist
 */

/*
 * HW stays at 0 while the ISR holds the silent followers, until the ISR
 * expiration scan (every replica_lag_time_max_ms / 2) removes them after
 * replica_lag_time_max_ms; then HW follows LEO.
 */
TEST_F_TIMEOUT(log, rf3_hw_waits_for_isr_shrink, 60)
{
	struct tcfg cfg = { .lag_ms = 1000 };
	struct fetched f;
	struct prod out;
	struct part p;
	__s64 t0, shrunk = -1;
	size_t len;
	int samples = 0;

	ok(three_brokers(&self->nl, &self->ack), &self->ack);
	ok(topic_new(&self->nl, "r3", 1, 3, &cfg, &self->ack), &self->ack);
	t0 = now_ms();
	len = batch_simple(self->buf, sizeof(self->buf), 2, "r", 1000, NULL);
	ok(produce(&self->nl, "r3", self->buf, len, 1, &out, &self->ack),
	   &self->ack);
	EXPECT_EQ(0, out.offset);
	EXPECT_EQ(0, out.hw);
	ok(part_get(&self->nl, "r3", 0, &p, &self->ack), &self->ack);
	ASSERT_EQ(3, p.nreplicas);
	EXPECT_EQ(1, p.replicas[0]);
	EXPECT_EQ(KREP_ROLE_LEADER, p.role);
	EXPECT_EQ(3, p.nisr);
	EXPECT_EQ(2, p.leo);
	EXPECT_EQ(0, p.hw);

	/* consumers see nothing below HW; DELETE_RECORDS may not pass it */
	ok(fetch_at(&self->nl, "r3", 0, &f, &self->ack), &self->ack);
	EXPECT_FALSE(f.has_records);
	EXPECT_EQ(0, f.hw);
	delete_records(&self->nl, "r3", 1, NULL, NULL, &self->ack);
	expect_kerr(&self->ack, ERANGE, KREP_KERR_OFFSET_OUT_OF_RANGE,
		    "offset beyond the high watermark");

	while (now_ms() - t0 < 10000) {
		ok(part_get(&self->nl, "r3", 0, &p, &self->ack), &self->ack);
		samples++;
		if (p.nisr == 3) {
			EXPECT_EQ(0, p.hw);
		} else {
			shrunk = now_ms() - t0;
			break;
		}
		sleep_ms(50);
	}
	TH_LOG("ISR shrank after %lld ms (%d samples)", (long long)shrunk,
	       samples);
	ASSERT_GE(shrunk, 0);
	EXPECT_GE(shrunk, 900);
	ASSERT_EQ(1, p.nisr);
	EXPECT_EQ(1, p.isr[0]);
	EXPECT_GE(p.partition_epoch, 1);
	EXPECT_EQ(2, p.leo);
	EXPECT_EQ(2, p.hw);

	/* now HW follows LEO, acks=all completes at once */
	ok(produce(&self->nl, "r3", self->buf, len, -1, &out, &self->ack),
	   &self->ack);
	EXPECT_EQ(2, out.offset);
	EXPECT_EQ(4, out.hw);
	ok(fetch_at(&self->nl, "r3", 0, &f, &self->ack), &self->ack);
	EXPECT_TRUE(f.has_records);
	EXPECT_EQ(4, f.hw);
}

/*
 * min_insync_replicas=2: an acks=all produce parked before the shrink
 * is not ended by it: as in Kafka, a record HW has not passed waits for
 * its own timeout (REQUEST_TIMED_OUT; NOT_ENOUGH_REPLICAS_AFTER_APPEND
 * is for a record HW passed). Afterwards acks=all is refused up front
 * (NOT_ENOUGH_REPLICAS, nothing appended), acks=1 and 0 still append,
 * and HW does not move.
 */
TEST_F_TIMEOUT(log, rf3_min_insync_replicas, 60)
{
	/* the lag leaves the producer time to park before the ISR shrinks */
	struct tcfg cfg = { .lag_ms = 3000, .min_isr = 2 };
	struct bg_req q = { .op = BG_PRODUCE, .topic = "m3", .acks = -1,
			    .timeout_ms = 12000 };
	struct bg_result res;
	struct prod out;
	struct part p;
	size_t len;

	ok(three_brokers(&self->nl, &self->ack), &self->ack);
	ok(topic_new(&self->nl, "m3", 1, 3, &cfg, &self->ack), &self->ack);
	q.len = batch_simple(self->buf, sizeof(self->buf), 1, "m", 1000, NULL);
	q.batch = self->buf;
	ASSERT_EQ(0, bg_start(&self->bg, &q));
	ASSERT_TRUE(bg_wait_parked(&self->bg, 10000));
	ok(part_get(&self->nl, "m3", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(3, p.nisr) TH_LOG("the produce was not parked before the shrink");
	EXPECT_EQ(1, p.leo);

	ASSERT_TRUE(bg_result(&self->bg, &res, 40000));
	expect_kerr(&res.ack, ETIMEDOUT, KREP_KERR_REQUEST_TIMED_OUT,
		    "timed out waiting for the ISR to replicate");
	TH_LOG("parked produce ended after %lld ms",
	       (long long)(res.end_ms - res.start_ms));
	/* not ended by the shrink (after 3 s to 4.5 s), but by its timeout */
	EXPECT_GE(res.end_ms - res.start_ms, 11900);

	ok(part_get(&self->nl, "m3", 0, &p, &self->ack), &self->ack);
	ASSERT_EQ(1, p.nisr);
	EXPECT_EQ(1, p.leo);	/* appended, never committed */
	EXPECT_EQ(0, p.hw);

	len = batch_simple(self->buf, sizeof(self->buf), 1, "m", 1000, NULL);
	produce(&self->nl, "m3", self->buf, len, -1, NULL, &self->ack);
	expect_kerr(&self->ack, EAGAIN, KREP_KERR_NOT_ENOUGH_REPLICAS,
		    "ISR smaller than min_insync_replicas");
	produce(&self->nl, "m3", self->buf, len, ACKS_NONE, NULL, &self->ack);
	expect_kerr(&self->ack, EAGAIN, KREP_KERR_NOT_ENOUGH_REPLICAS, NULL);
	ok(part_get(&self->nl, "m3", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(1, p.leo);

	ok(produce(&self->nl, "m3", self->buf, len, 1, &out, &self->ack),
	   &self->ack);
	EXPECT_EQ(1, out.offset);
	ok(produce(&self->nl, "m3", self->buf, len, 0, &out, &self->ack),
	   &self->ack);
	EXPECT_EQ(2, out.offset);
	ok(part_get(&self->nl, "m3", 0, &p, &self->ack), &self->ack);
	EXPECT_EQ(3, p.leo);
	EXPECT_EQ(0, p.hw);
}

TEST_HARNESS_MAIN
