// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_genl - a structure-aware fuzzer of the "krep" generic netlink
 * family, for selftests/fuzz.sh (make fuzz, fuzz_short.sh).
 *
 *   fuzz_genl run --seed S --secs N [--workers W] [--slack-ms MS]
 *                 [--logdir DIR] [--ring FILE] [--max-failures N]
 *       Run as root in the namespace of a broker that has an id (fuzz.sh
 *       gives it one of its own: BROKER_SET, TOPIC_DEL and LEADER_AND_ISR
 *       are fuzzed too). W worker processes (default 2) and one more, the
 *       slow one, each on a socket of its own, send requests one at a
 *       time. Input I of worker K is drawn from (S, K, I) alone: a valid
 *       request of a random command (every KREP_CMD_*, with every
 *       attribute its policy takes, values from a small dictionary of
 *       topics, partitions, broker ids, epochs, producers and a
 *       RecordBatch v2 with its CRC), then mutated in its attribute tree
 *       (integers to boundary values, sizes, types, nests without
 *       NLA_F_NESTED, attributes dropped, duplicated, moved, added from
 *       any other command, strings rewritten, the batch's fields and CRC)
 *       and sometimes as bytes; the genetlink header and NLM_F_DUMP too.
 *       Waits: a FETCH's MAX_WAIT_MS and a PRODUCE's or DELETE_RECORDS'
 *       TIMEOUT_MS (30 s when absent) are cut to at most 50 ms, and added
 *       when absent, on the workers; the slow worker keeps them as drawn
 *       (up to the remaining run time), so that long waits are fuzzed
 *       without stalling the others.
 *       The oracle: every request gets exactly one well-formed answer
 *       (an NLMSG_ERROR, a reply then its ack, or a dump's messages and
 *       NLMSG_DONE; each with the request's sequence number and port,
 *       the family's id and the request's command, attributes that parse
 *       exactly, top-level ones of their documented size, no
 *       KREP_A_SECRET) within 30 s (the broker's longest wait) plus
 *       --slack-ms (default 35000); nothing arrives after it. Every 256
 *       inputs each worker sends valid requests unmutated (BROKER_GET,
 *       TOPIC_NEW of a topic of its own on this broker, PRODUCE acks=1,
 *       a FETCH that must give the batch back byte for byte, TOPIC_DEL):
 *       all must succeed (after clearing the fuzzed topics if one fails,
 *       three tries: the others may have changed the broker's id in
 *       between). The parent runs them once more at the end.
 *       Prints "fuzz: genl ..." lines: the seed, progress every second,
 *       "fuzz: result genl inputs N secs T rate R/s ..." at the end,
 *       FAIL lines and, for the first failures, a FUZZ-REPRO block
 *       (zlib and base64 JSON, read by fuzz_kafka.py extract: the failing
 *       input and the last inputs of every worker, as sent). --ring FILE
 *       gets a block of the last inputs at the end whatever happened.
 *   fuzz_genl gen --seed S --worker K --from I --to J
 *       (anywhere, no kernel needed) the inputs I..J-1 of worker K as
 *       drawn, before the wait cuts, as a JSON array of reproducer
 *       sessions: what fuzz_kafka.py extract uses after a kernel crash.
 *
 * Exit status 0, 1 on a failure, 2 on usage.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/krep.h>

#include "krep_batch.h"
#include "krep_nl.h"

#define WAIT_MAX_MS		30000	/* nl_data.c: KREP_WAIT_MAX_MS */
#define FAST_WAIT_MS		50	/* the most a worker's request waits */
#define RING			32	/* inputs kept per worker */
#define RING_BLOCK		12	/* of which a reproducer carries */
#define KEEP_BYTES		16384	/* bytes of a ring input in a block */
#define MAX_WORKERS		16
#define CANARY_EVERY		256
#define NCMD			(KREP_CMD_MAX + 4)
#define NODES			1024
#define ARENA			(4 * REQ_SIZE)
#define MAX_REPROS		3

/* ---------------------------------------------------------------------
 * Random numbers: input I of worker K from (seed, K, I) alone
 */

struct rng {
	__u64 s;
};

static __u64 mix64(__u64 z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static __u64 r64(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return mix64(r->s);
}

static __u32 rn(struct rng *r, __u32 n)
{
	return n ? r64(r) % n : 0;
}

static bool pct(struct rng *r, unsigned int p)
{
	return rn(r, 100) < p;
}

static void rng_input(struct rng *r, __u64 seed, int worker, __u64 idx)
{
	r->s = mix64(seed ^ mix64(0x6b72657000000000ULL + worker) ^
		     mix64(idx * 0x2545f4914f6cdd1dULL + 1));
}

/* ---------------------------------------------------------------------
 * Requests as attribute trees
 */

enum kind { K_U8, K_U16, K_U32, K_U64, K_STR, K_BIN, K_FLAG, K_NEST };

struct node {
	__u16 type;
	__u8 kind;
	bool noflag;		/* a nest without NLA_F_NESTED */
	__u32 len;
	__u8 *data;
	int first, next;	/* children; -1: none */
};

struct tree {
	struct node n[NODES];
	int nn;
	size_t used;
	__u8 arena[ARENA];
	__u8 cmd, version;
	__u16 reserved, flags;
	const char *desc;	/* the command it was drawn as */
};

/* the root is node 0, a nest of the top-level attributes */
static void tree_init(struct tree *t, __u8 cmd)
{
	t->nn = 1;
	t->used = 0;
	t->n[0] = (struct node){ .kind = K_NEST, .first = -1, .next = -1 };
	t->cmd = cmd;
	t->version = KREP_GENL_VERSION;
	t->reserved = 0;
	t->flags = 0;
}

static __u8 *arena(struct tree *t, size_t len)
{
	__u8 *p;

	if (t->used + len > ARENA)
		return NULL;
	p = t->arena + t->used;
	t->used += len;
	return p;
}

static int last_kid(struct tree *t, int parent)
{
	int k = t->n[parent].first;

	while (k >= 0 && t->n[k].next >= 0)
		k = t->n[k].next;
	return k;
}

/* a node appended to @parent's children; -1 when the tree is full */
static int add(struct tree *t, int parent, __u16 type, enum kind kind,
	       const void *data, size_t len)
{
	struct node *n;
	int i, last;

	if (t->nn >= NODES || len > NLA_PAYLOAD_MAX)
		return -1;
	i = t->nn;
	n = &t->n[i];
	*n = (struct node){ .type = type, .kind = kind, .len = len,
			    .first = -1, .next = -1 };
	if (len) {
		n->data = arena(t, len);
		if (!n->data)
			return -1;
		memcpy(n->data, data, len);
	}
	t->nn++;
	last = last_kid(t, parent);
	if (last < 0)
		t->n[parent].first = i;
	else
		t->n[last].next = i;
	return i;
}

static int add_u8(struct tree *t, int p, __u16 type, __u8 v)
{
	return add(t, p, type, K_U8, &v, 1);
}

static int add_u16(struct tree *t, int p, __u16 type, __u16 v)
{
	return add(t, p, type, K_U16, &v, 2);
}

static int add_u32(struct tree *t, int p, __u16 type, __u32 v)
{
	return add(t, p, type, K_U32, &v, 4);
}

static int add_u64(struct tree *t, int p, __u16 type, __u64 v)
{
	return add(t, p, type, K_U64, &v, 8);
}

static int add_str(struct tree *t, int p, __u16 type, const char *s)
{
	return add(t, p, type, K_STR, s, strlen(s) + 1);
}

static int add_nest(struct tree *t, int p, __u16 type)
{
	return add(t, p, type, K_NEST, NULL, 0);
}

/* serialise @i's children at @out (at most @cap bytes); the length */
static size_t ser_kids(const struct tree *t, int i, __u8 *out, size_t cap);

static size_t ser_node(const struct tree *t, int i, __u8 *out, size_t cap)
{
	const struct node *n = &t->n[i];
	struct nlattr *nla = (struct nlattr *)out;
	size_t len;

	if (cap < NLA_HDRLEN)
		return 0;
	if (n->kind == K_NEST) {
		len = ser_kids(t, i, out + NLA_HDRLEN, cap - NLA_HDRLEN);
	} else {
		len = n->len;
		if (NLA_ALIGN(NLA_HDRLEN + len) > cap)
			return 0;
		memcpy(out + NLA_HDRLEN, n->data, len);
		memset(out + NLA_HDRLEN + len, 0,
		       NLA_ALIGN(len) - len);
	}
	if (NLA_HDRLEN + len > 0xffff)
		return 0;	/* it cannot be said: leave it out */
	nla->nla_len = NLA_HDRLEN + len;
	nla->nla_type = n->type |
			(n->kind == K_NEST && !n->noflag ? NLA_F_NESTED : 0);
	return NLA_ALIGN(NLA_HDRLEN + len);
}

static size_t ser_kids(const struct tree *t, int i, __u8 *out, size_t cap)
{
	size_t off = 0;
	int k;

	for (k = t->n[i].first; k >= 0; k = t->n[k].next)
		off += ser_node(t, k, out + off, cap - off);
	return off;
}

/* the whole request in @r (nlmsg_type @family); its length */
static size_t tree_ser(const struct tree *t, struct req *r, __u16 family)
{
	size_t hdr = NLMSG_HDRLEN + GENL_HDRLEN;
	struct genlmsghdr *g;

	memset(&r->nlh, 0, hdr);
	r->nlh.nlmsg_type = family;
	r->nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | t->flags;
	g = req_genl(r);
	g->cmd = t->cmd;
	g->version = t->version;
	g->reserved = t->reserved;
	r->nlh.nlmsg_len = hdr + ser_kids(t, 0, (__u8 *)r->buf + hdr,
					  sizeof(r->buf) - hdr);
	return r->nlh.nlmsg_len;
}

/* ---------------------------------------------------------------------
 * Valid requests, from a small dictionary of what the broker knows
 */

static const char *const topics[] = { "g0", "g1", "g2", "g.3", "g_4" };
static const __u32 broker_ids[] = { 1, 2, 3, 1, 1, 0, 7 };

static const char *pick_topic(struct rng *r)
{
	return topics[rn(r, sizeof(topics) / sizeof(topics[0]))];
}

static __u32 pick_id(struct rng *r)
{
	return broker_ids[rn(r, sizeof(broker_ids) / sizeof(broker_ids[0]))];
}

static __u32 pick_part(struct rng *r)
{
	if (pct(r, 50))
		return 0;
	return pct(r, 90) ? rn(r, 4) : (__u32[]){ 1023, 1024, ~0U }[rn(r, 3)];
}

static __u64 pick_offset(struct rng *r)
{
	switch (rn(r, 10)) {
	case 0: case 8: case 9:
		return 0;
	case 1:
		return ~0ULL >> 1;
	case 2:
		return ~0ULL;
	case 3:
		return rn(r, 1 << 20);
	default:
		return rn(r, 64);
	}
}

static __u32 pick_epoch(struct rng *r)
{
	return pct(r, 85) ? rn(r, 4) : (__u32[]){ ~0U, 0x7fffffff, 100 }[rn(r, 3)];
}

static __u32 pick_wait(struct rng *r)
{
	return pct(r, 60) ? rn(r, 20) :
	       (__u32[]){ 0, 1, 1000, WAIT_MAX_MS, WAIT_MAX_MS + 1 }[rn(r, 5)];
}

static int add_part(struct tree *t, struct rng *r)
{
	add_str(t, 0, KREP_A_TOPIC, pick_topic(r));
	return add_u32(t, 0, KREP_A_PARTITION, pick_part(r));
}

/* a RecordBatch v2 of 1-5 records, sometimes of a producer, sometimes large */
static int add_records(struct tree *t, int parent, struct rng *r)
{
	static __u8 buf[NLA_PAYLOAD_MAX], val[NLA_PAYLOAD_MAX];
	struct batch_opts o = { .pid = -1, .epoch = -1, .seq = -1 };
	struct rec recs[5];
	int i, n = 1 + rn(r, 5);
	size_t len;

	memset(recs, 0, sizeof(recs));
	for (i = 0; i < 128; i += 8) {	/* what small records take */
		__u64 v = r64(r);

		memcpy(val + i, &v, 8);
	}
	for (i = 0; i < n; i++) {
		recs[i].ts = pct(r, 90) ? 1700000000000LL + rn(r, 100000) :
			     (__s64)r64(r);
		recs[i].value = pct(r, 95) ? val + i : NULL;
		recs[i].vlen = rn(r, 100);
		if (pct(r, 30)) {
			recs[i].key = val + 100;
			recs[i].klen = rn(r, 16);
		}
		if (pct(r, 10)) {
			recs[i].hkey = "h";
			recs[i].hval = pct(r, 50) ? "v" : NULL;
		}
	}
	if (pct(r, 3)) {	/* one large record, of a byte */
		n = 1;
		memset(val, (int)r64(r), sizeof(val));
		recs[0].value = val;
		recs[0].vlen = NLA_PAYLOAD_MAX - RB_HDR_LEN - 64 - rn(r, 4096);
	}
	if (pct(r, 30)) {
		o.pid = rn(r, 4);
		o.epoch = rn(r, 3);
		o.seq = pct(r, 70) ? (__s32)rn(r, 8) : -1;
		o.txn = pct(r, 50);
	}
	len = batch_build(buf, sizeof(buf), recs, n, &o);
	return add(t, parent, KREP_A_RECORDS, K_BIN, buf, len);
}

static int add_ep(struct tree *t, int parent, __u16 type, struct rng *r)
{
	static const __u16 ports[] = { 9092, 9093, 9192, 1, 65535 };
	int nest = add_nest(t, parent, type);

	if (nest < 0)
		return nest;
	if (pct(r, 80)) {
		__u32 a = htonl(0x7f000001 + rn(r, 3));

		if (pct(r, 5))
			a = 0;	/* the wildcard */
		add(t, nest, KREP_A_EP_IPV4, K_U32, &a, 4);
	} else {
		__u8 a6[16] = { [15] = 1 };

		add(t, nest, KREP_A_EP_IPV6, K_BIN, a6, 16);
	}
	add_u16(t, nest, KREP_A_EP_PORT,
		pct(r, 80) ? ports[rn(r, 3)] : ports[rn(r, 5)] + rn(r, 2));
	return nest;
}

static int add_ids(struct tree *t, int parent, __u16 type, struct rng *r,
		   int n)
{
	int nest = add_nest(t, parent, type), i;

	for (i = 0; i < n && nest >= 0; i++)
		add_u32(t, nest, KREP_A_BROKER_ID, i ? pick_id(r) : 1);
	return nest;
}

static int add_tcfg(struct tree *t, int parent, struct rng *r)
{
	int nest = add_nest(t, parent, KREP_A_TOPIC_CONFIG);

	if (nest < 0)
		return nest;
	if (pct(r, 30))
		add_u32(t, nest, KREP_A_TCFG_MIN_INSYNC_REPLICAS, 1 + rn(r, 3));
	if (pct(r, 30))
		add_u32(t, nest, KREP_A_TCFG_REPLICA_LAG_TIME_MAX_MS,
			(__u32[]){ 10, 100, 30000 }[rn(r, 3)]);
	if (pct(r, 40))
		add_u32(t, nest, KREP_A_TCFG_SEGMENT_BYTES,
			(__u32[]){ 4096, 65536, 1 << 20 }[rn(r, 3)]);
	if (pct(r, 50))
		add_u64(t, nest, KREP_A_TCFG_RETENTION_BYTES,
			(__u64[]){ -1ULL, 0, 4096, 1 << 20 }[rn(r, 4)]);
	if (pct(r, 30))
		add_u32(t, nest, KREP_A_TCFG_MAX_MESSAGE_BYTES,
			(__u32[]){ 64, 1024, 1048588 }[rn(r, 3)]);
	if (pct(r, 20))
		add_u8(t, nest, KREP_A_TCFG_UNCLEAN_LEADER_ELECTION, rn(r, 2));
	if (pct(r, 15))
		add_u64(t, nest, KREP_A_TCFG_FLUSH_MESSAGES,
			(__u64[]){ 1, 10, 1 << 30 }[rn(r, 3)]);
	if (pct(r, 15))
		add_u64(t, nest, KREP_A_TCFG_FLUSH_MS,
			(__u64[]){ 0, 100, 1 << 30 }[rn(r, 3)]);
	return nest;
}

static int add_ctrl(struct tree *t, int parent, struct rng *r)
{
	int nest = add_nest(t, parent, KREP_A_CONTROLLER);

	if (nest < 0)
		return nest;
	/*
	 * mostly one controller at epoch 1: LEADER_AND_ISR gets through
	 * (the epoch never goes back: LEADER_AND_ISR draws 1 to 3)
	 */
	add_u32(t, nest, KREP_A_CTRL_EPOCH, pct(r, 90) ? 1 : 2 + rn(r, 2));
	add_u64(t, nest, KREP_A_CTRL_OWNER, pct(r, 80) ? 1 : 2);
	add_u32(t, nest, KREP_A_CTRL_LEASE_MS,
		(__u32[]){ 600000, 600000, 0, 100, 2000 }[rn(r, 5)]);
	return nest;
}

static int logdir_fd = -1;

static int add_peers(struct tree *t, int parent, struct rng *r)
{
	int nest = add_nest(t, parent, KREP_A_PEERS), i, n = rn(r, 4);

	for (i = 0; i < n && nest >= 0; i++) {
		int peer = add_nest(t, nest, KREP_A_PEER);

		if (peer < 0)
			break;
		add_u32(t, peer, KREP_A_PEER_ID, pct(r, 10) ? pick_id(r) : 2 + i);
		add_ep(t, peer, KREP_A_PEER_EP, r);
	}
	return nest;
}

static void build_broker_set(struct tree *t, struct rng *r)
{
	int any = 0;

	while (!any) {
		if (pct(r, 25))
			any |= add_u32(t, 0, KREP_A_BROKER_ID, pick_id(r)) >= 0;
		if (pct(r, 20))
			any |= add_str(t, 0, KREP_A_CLUSTER_ID,
				       pct(r, 80) ? "fuzzg" : "fuzzg-2") >= 0;
		if (pct(r, 20))
			any |= add_ep(t, 0, KREP_A_LISTEN, r) >= 0;
		if (pct(r, 15))
			any |= (pct(r, 30) ?
				add_nest(t, 0, KREP_A_KAFKA_LISTEN) :
				add_ep(t, 0, KREP_A_KAFKA_LISTEN, r)) >= 0;
		if (pct(r, 10)) {
			__u8 s[KREP_SECRET_MAX];
			__u64 v = r64(r);

			memset(s, (int)v, sizeof(s));
			any |= add(t, 0, KREP_A_SECRET, K_BIN, s,
				   pct(r, 30) ? 0 : KREP_SECRET_MIN +
				   rn(r, KREP_SECRET_MAX - KREP_SECRET_MIN + 1)) >= 0;
		}
		if (pct(r, 10))
			any |= add_str(t, 0, KREP_A_KAFKA_ADVERTISED,
				       pct(r, 60) ? "localhost:9192" : "") >= 0;
		if (pct(r, 20))
			any |= add_peers(t, 0, r) >= 0;
		if (pct(r, 30))
			any |= add_ctrl(t, 0, r) >= 0;
		if (pct(r, 5)) {
			__u32 fd = pct(r, 70) ? -1 : pct(r, 70) ? logdir_fd :
				   rn(r, 8);

			any |= add(t, 0, KREP_A_LOG_DIR_FD, K_U32, &fd, 4) >= 0;
		}
	}
}

static void build_topic_new(struct tree *t, struct rng *r)
{
	__u32 np = pct(r, 90) ? 1 + rn(r, 4) :
		   (__u32[]){ 0, 1024, 1025, 64 }[rn(r, 4)];
	__u32 rf = pct(r, 70) ? 1 : 1 + rn(r, 3);

	add_str(t, 0, KREP_A_TOPIC, pick_topic(r));
	add_u32(t, 0, KREP_A_PARTITIONS, np);
	add_u32(t, 0, KREP_A_REPLICATION_FACTOR, rf);
	if (pct(r, 50))
		add_tcfg(t, 0, r);
	if (pct(r, 30) && np <= 8) {
		int a = add_nest(t, 0, KREP_A_ASSIGNMENT);
		__u32 i;

		for (i = 0; i < np && a >= 0; i++)
			add_ids(t, a, KREP_A_REPLICAS, r, rf);
		if (pct(r, 50))
			add_u32(t, 0, KREP_A_CONTROLLER_EPOCH, 1 + rn(r, 3));
	}
}

static void build_produce(struct tree *t, struct rng *r)
{
	add_part(t, r);
	add_records(t, 0, r);
	if (pct(r, 80))
		add_u16(t, 0, KREP_A_ACKS, (__u16[]){ -1, 0, 1 }[rn(r, 3)]);
	if (pct(r, 80))
		add_u32(t, 0, KREP_A_TIMEOUT_MS, pick_wait(r));
	if (pct(r, 30))
		add_u32(t, 0, KREP_A_LEADER_EPOCH, pick_epoch(r));
}

static void build_fetch(struct tree *t, struct rng *r)
{
	add_part(t, r);
	add_u64(t, 0, KREP_A_OFFSET, pick_offset(r));
	if (pct(r, 50))
		add_u32(t, 0, KREP_A_MAX_BYTES,
			(__u32[]){ 1, 100, 1 << 20, 65536 }[rn(r, 4)]);
	if (pct(r, 60))
		add_u32(t, 0, KREP_A_MAX_WAIT_MS, pick_wait(r));
	if (pct(r, 40))
		add_u8(t, 0, KREP_A_ISOLATION, rn(r, 2));
	if (pct(r, 20))
		add(t, 0, KREP_A_FOLLOWER_READ, K_FLAG, NULL, 0);
	if (pct(r, 30))
		add_u32(t, 0, KREP_A_LEADER_EPOCH, pick_epoch(r));
}

static void build_list_offsets(struct tree *t, struct rng *r)
{
	add_part(t, r);
	add_u64(t, 0, KREP_A_TIMESTAMP,
		(__u64[]){ KREP_TS_LATEST, KREP_TS_EARLIEST, 0,
			   1700000000000ULL + rn(r, 100000), -3ULL }[rn(r, 5)]);
	if (pct(r, 40))
		add_u8(t, 0, KREP_A_ISOLATION, rn(r, 2));
}

static void build_delete_records(struct tree *t, struct rng *r)
{
	add_part(t, r);
	add_u64(t, 0, KREP_A_OFFSET, pick_offset(r));
	if (pct(r, 80))
		add_u32(t, 0, KREP_A_TIMEOUT_MS, pick_wait(r));
}

static void build_txn(struct tree *t, struct rng *r)
{
	add_part(t, r);
	add_u64(t, 0, KREP_A_PRODUCER_ID, pct(r, 90) ? rn(r, 4) : -1ULL);
	add_u16(t, 0, KREP_A_PRODUCER_EPOCH, rn(r, 3));
	add_u8(t, 0, KREP_A_TXN_OP, 1 + rn(r, 3));
	if (pct(r, 40))
		add_u32(t, 0, KREP_A_TIMEOUT_MS,
			(__u32[]){ 1, 100, 60000, 900000 }[rn(r, 4)]);
}

static void build_leader_and_isr(struct tree *t, struct rng *r)
{
	add_u32(t, 0, KREP_A_CONTROLLER_EPOCH, 1 + rn(r, 3));
	add_part(t, r);
	/* this broker (1) leads with itself as the ISR, as AR has it */
	add_u32(t, 0, KREP_A_LEADER, pct(r, 60) ? 1 :
		pct(r, 85) ? pick_id(r) : KREP_NO_LEADER);
	add_u32(t, 0, KREP_A_LEADER_EPOCH, pick_epoch(r));
	add_u32(t, 0, KREP_A_PARTITION_EPOCH, pick_epoch(r));
	add_ids(t, 0, KREP_A_ISR, r, pct(r, 60) ? 1 : rn(r, 4));
	if (pct(r, 30))
		add_ids(t, 0, KREP_A_REPLICAS, r, pct(r, 60) ? 1 : 1 + rn(r, 3));
}

static void build_epoch_end(struct tree *t, struct rng *r)
{
	add_part(t, r);
	add_u32(t, 0, KREP_A_LEADER_EPOCH, pick_epoch(r));
	if (pct(r, 30))
		add(t, 0, KREP_A_FOLLOWER_READ, K_FLAG, NULL, 0);
}

static const char *const cmd_names[NCMD] = {
	[KREP_CMD_UNSPEC] = "UNSPEC",
	[KREP_CMD_BROKER_GET] = "BROKER_GET",
	[KREP_CMD_BROKER_SET] = "BROKER_SET",
	[KREP_CMD_TOPIC_NEW] = "TOPIC_NEW",
	[KREP_CMD_TOPIC_DEL] = "TOPIC_DEL",
	[KREP_CMD_TOPIC_GET] = "TOPIC_GET",
	[KREP_CMD_PARTITION_GET] = "PARTITION_GET",
	[KREP_CMD_PRODUCE] = "PRODUCE",
	[KREP_CMD_FETCH] = "FETCH",
	[KREP_CMD_LIST_OFFSETS] = "LIST_OFFSETS",
	[KREP_CMD_DELETE_RECORDS] = "DELETE_RECORDS",
	[KREP_CMD_TXN] = "TXN",
	[KREP_CMD_ALTER_ISR] = "ALTER_ISR",
	[KREP_CMD_LEADER_AND_ISR] = "LEADER_AND_ISR",
	[KREP_CMD_OFFSETS_FOR_LEADER_EPOCH] = "OFFSETS_FOR_LEADER_EPOCH",
};

static const char *cmd_name(unsigned int cmd)
{
	return cmd < NCMD && cmd_names[cmd] ? cmd_names[cmd] : "unknown";
}

/* a valid request of a command drawn by weight */
static void build_valid(struct tree *t, struct rng *r)
{
	static const struct {
		__u8 cmd;
		unsigned int weight;
	} w[] = {
		{ KREP_CMD_PRODUCE, 20 }, { KREP_CMD_FETCH, 18 },
		{ KREP_CMD_LIST_OFFSETS, 7 }, { KREP_CMD_DELETE_RECORDS, 4 },
		{ KREP_CMD_TXN, 8 }, { KREP_CMD_TOPIC_NEW, 8 },
		{ KREP_CMD_TOPIC_DEL, 2 }, { KREP_CMD_TOPIC_GET, 5 },
		{ KREP_CMD_PARTITION_GET, 3 }, { KREP_CMD_BROKER_GET, 3 },
		{ KREP_CMD_BROKER_SET, 6 }, { KREP_CMD_LEADER_AND_ISR, 8 },
		{ KREP_CMD_OFFSETS_FOR_LEADER_EPOCH, 5 },
		{ KREP_CMD_ALTER_ISR, 1 },
	};
	unsigned int total = 0, x, i;

	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		total += w[i].weight;
	x = rn(r, total);
	for (i = 0; x >= w[i].weight; i++)
		x -= w[i].weight;
	tree_init(t, w[i].cmd);
	switch (w[i].cmd) {
	case KREP_CMD_BROKER_SET:
		build_broker_set(t, r);
		break;
	case KREP_CMD_TOPIC_NEW:
		build_topic_new(t, r);
		break;
	case KREP_CMD_TOPIC_DEL:
		add_str(t, 0, KREP_A_TOPIC, pick_topic(r));
		break;
	case KREP_CMD_TOPIC_GET:
		if (pct(r, 40))
			t->flags |= NLM_F_DUMP;
		else
			add_str(t, 0, KREP_A_TOPIC, pick_topic(r));
		break;
	case KREP_CMD_PARTITION_GET:
		t->flags |= NLM_F_DUMP;
		if (pct(r, 60))
			add_str(t, 0, KREP_A_TOPIC, pick_topic(r));
		break;
	case KREP_CMD_PRODUCE:
		build_produce(t, r);
		break;
	case KREP_CMD_FETCH:
		build_fetch(t, r);
		break;
	case KREP_CMD_LIST_OFFSETS:
		build_list_offsets(t, r);
		break;
	case KREP_CMD_DELETE_RECORDS:
		build_delete_records(t, r);
		break;
	case KREP_CMD_TXN:
		build_txn(t, r);
		break;
	case KREP_CMD_LEADER_AND_ISR:
		build_leader_and_isr(t, r);
		break;
	case KREP_CMD_OFFSETS_FOR_LEADER_EPOCH:
		build_epoch_end(t, r);
		break;
	case KREP_CMD_ALTER_ISR:	/* an event: no op takes it */
		add_part(t, r);
		add_ids(t, 0, KREP_A_ISR, r, 1);
		break;
	}
	t->desc = cmd_name(t->cmd);
}

/* ---------------------------------------------------------------------
 * Mutations
 */

/* the kind of each top-level attribute, for attributes added at random */
static const __u8 attr_kind[KREP_A_MAX + 1] = {
	[KREP_A_BROKER_ID] = K_U32, [KREP_A_CLUSTER_ID] = K_STR,
	[KREP_A_LISTEN] = K_NEST, [KREP_A_PEERS] = K_NEST,
	[KREP_A_PEER] = K_NEST, [KREP_A_GENERATION] = K_U32,
	[KREP_A_KAFKA_ERROR] = K_U16, [KREP_A_TOPIC] = K_STR,
	[KREP_A_PARTITIONS] = K_U32, [KREP_A_REPLICATION_FACTOR] = K_U32,
	[KREP_A_TOPIC_CONFIG] = K_NEST, [KREP_A_PARTITION] = K_U32,
	[KREP_A_ROLE] = K_U8, [KREP_A_LEADER] = K_U32,
	[KREP_A_LEADER_EPOCH] = K_U32, [KREP_A_PARTITION_EPOCH] = K_U32,
	[KREP_A_REPLICAS] = K_NEST, [KREP_A_ISR] = K_NEST,
	[KREP_A_LEO] = K_U64, [KREP_A_HW] = K_U64, [KREP_A_LSO] = K_U64,
	[KREP_A_LOG_START] = K_U64, [KREP_A_LOW_WATERMARK] = K_U64,
	[KREP_A_RECORDS] = K_BIN, [KREP_A_ACKS] = K_U16,
	[KREP_A_TIMEOUT_MS] = K_U32, [KREP_A_OFFSET] = K_U64,
	[KREP_A_MAX_BYTES] = K_U32, [KREP_A_MAX_WAIT_MS] = K_U32,
	[KREP_A_ISOLATION] = K_U8, [KREP_A_TIMESTAMP] = K_U64,
	[KREP_A_PRODUCER_ID] = K_U64, [KREP_A_PRODUCER_EPOCH] = K_U16,
	[KREP_A_TXN_OP] = K_U8, [KREP_A_LOG_BYTES] = K_U64,
	[KREP_A_PAD] = K_BIN, [KREP_A_REMOTES] = K_NEST,
	[KREP_A_REMOTE] = K_NEST, [KREP_A_FOLLOWER_READ] = K_FLAG,
	[KREP_A_STATS] = K_NEST, [KREP_A_CONTROLLER] = K_NEST,
	[KREP_A_CONTROLLER_EPOCH] = K_U32, [KREP_A_PENDING_ISR] = K_NEST,
	[KREP_A_EPOCHS] = K_NEST, [KREP_A_EPOCH_ENTRY] = K_NEST,
	[KREP_A_INCARNATION] = K_U64, [KREP_A_ASSIGNMENT] = K_NEST,
	[KREP_A_LOG_MEMORY] = K_U64, [KREP_A_LOG_MEMORY_MAX] = K_U64,
	[KREP_A_KAFKA_LISTEN] = K_NEST, [KREP_A_KAFKA_ADVERTISED] = K_STR,
	[KREP_A_SECRET] = K_BIN, [KREP_A_AUTH] = K_U8,
	[KREP_A_LOG_DIR_FD] = K_U32, [KREP_A_LOG_DIR] = K_STR,
};

static int kind_len(enum kind k)
{
	return (int[]){ [K_U8] = 1, [K_U16] = 2, [K_U32] = 4, [K_U64] = 8 }[k];
}

static void set_int(struct node *n, __u64 v)
{
	memcpy(n->data, &v, n->len < 8 ? n->len : 8);	/* little endian */
}

/* a top-level attribute of any type, as valid as a builder makes it */
static void add_random_attr(struct tree *t, int parent, struct rng *r)
{
	__u16 type = 1 + rn(r, KREP_A_MAX);
	__u8 kind = attr_kind[type];
	__u64 v = pct(r, 50) ? rn(r, 4) : r64(r);
	int i;

	switch (type) {
	case KREP_A_LISTEN:
	case KREP_A_KAFKA_LISTEN:
		add_ep(t, parent, type, r);
		return;
	case KREP_A_PEERS:
		add_peers(t, parent, r);
		return;
	case KREP_A_TOPIC_CONFIG:
		add_tcfg(t, parent, r);
		return;
	case KREP_A_CONTROLLER:
		add_ctrl(t, parent, r);
		return;
	case KREP_A_REPLICAS:
	case KREP_A_ISR:
	case KREP_A_PENDING_ISR:
		add_ids(t, parent, type, r, rn(r, 4));
		return;
	case KREP_A_ASSIGNMENT:
		i = add_nest(t, parent, type);
		if (i >= 0)
			add_ids(t, i, KREP_A_REPLICAS, r, 1);
		return;
	case KREP_A_RECORDS:
		add_records(t, parent, r);
		return;
	case KREP_A_TOPIC:
		add_str(t, parent, type, pick_topic(r));
		return;
	}
	switch (kind) {
	case K_U8: case K_U16: case K_U32: case K_U64:
		add(t, parent, type, kind, &v, kind_len(kind));
		break;
	case K_STR:
		add_str(t, parent, type, pct(r, 50) ? "fuzzg" : "x:1");
		break;
	case K_FLAG:
		add(t, parent, type, K_FLAG, NULL, 0);
		break;
	case K_NEST:
		i = add_nest(t, parent, type);
		if (i >= 0 && pct(r, 50))
			add_u32(t, i, 1 + rn(r, 3), v);
		break;
	default:
		add(t, parent, type, K_BIN, &v, rn(r, 9));
	}
}

/* the n-th node other than the root, its parent and the one before it */
static int pick_node(struct tree *t, struct rng *r, int *parent, int *prev)
{
	int want, seen = 0, stack[64], sp = 0, p, k, pk;

	if (t->nn < 2)
		return -1;
	want = rn(r, t->nn - 1);
	stack[sp++] = 0;
	while (sp) {
		p = stack[--sp];
		for (pk = -1, k = t->n[p].first; k >= 0; pk = k, k = t->n[k].next) {
			if (seen++ == want) {
				*parent = p;
				*prev = pk;
				return k;
			}
			if (t->n[k].kind == K_NEST && sp < 64)
				stack[sp++] = k;
		}
	}
	return -1;	/* a node cut off by an earlier drop */
}

static void unlink_node(struct tree *t, int parent, int prev, int k)
{
	if (prev < 0)
		t->n[parent].first = t->n[k].next;
	else
		t->n[prev].next = t->n[k].next;
	t->n[k].next = -1;
}

static int copy_node(struct tree *t, int parent, int k, int depth)
{
	struct node src = t->n[k];
	int c, kid;

	c = add(t, parent, src.type, src.kind, src.data, src.len);
	if (c < 0 || depth > 8)
		return c;
	t->n[c].noflag = src.noflag;
	for (kid = src.first; kid >= 0; kid = t->n[kid].next)
		copy_node(t, c, kid, depth + 1);
	return c;
}

static __u64 boundary(struct rng *r, int bytes, __u64 cur)
{
	__u64 max = bytes >= 8 ? ~0ULL : (1ULL << (bytes * 8)) - 1;

	switch (rn(r, 10)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return max;
	case 3: return max >> 1;
	case 4: return (max >> 1) + 1;
	case 5: return cur + 1;
	case 6: return cur - 1;
	case 7: return r64(r);
	case 8: return (__u64[]){ 1024, 1025, 30000, 30001, 65535, 65536,
				  4096, 900000, 600000, 0x7fffffff }[rn(r, 10)];
	default: return rn(r, 8);
	}
}

/* structure-aware changes of a RecordBatch v2 */
static void mutate_batch(struct tree *t, struct node *n, struct rng *r)
{
	static const int fields[][2] = {	/* offset, size */
		{ 0, 8 }, { 8, 4 }, { 12, 4 }, { 16, 1 }, { 21, 2 }, { 23, 4 },
		{ 27, 8 }, { 35, 8 }, { 43, 8 }, { 51, 2 }, { 53, 4 }, { 57, 4 },
	};
	__u8 *d;
	int f, i;

	if (n->len < RB_HDR_LEN) {
		n->len = rn(r, n->len + 1);
		return;
	}
	d = arena(t, n->len + 256);	/* room to grow */
	if (!d)
		return;
	memcpy(d, n->data, n->len);
	n->data = d;
	switch (rn(r, 6)) {
	case 0: case 1: case 2:
		f = rn(r, sizeof(fields) / sizeof(fields[0]));
		for (i = 0; i < fields[f][1]; i++)
			d[fields[f][0] + i] = pct(r, 50) ? 0xff : rn(r, 256);
		if (fields[f][0] == 21 && pct(r, 50))	/* attributes */
			be16(d + 21, (__u16[]){ 0x10, 0x20, 0x30, 0x01, 0x04,
						0x08 }[rn(r, 6)]);
		break;
	case 3:		/* a byte of the records */
		d[RB_HDR_LEN + rn(r, n->len - RB_HDR_LEN + 1) % n->len] = r64(r);
		break;
	case 4:		/* cut */
		n->len = RB_HDR_LEN + rn(r, n->len - RB_HDR_LEN);
		break;
	case 5:		/* trailing bytes */
		for (i = 0; i < 1 + (int)rn(r, 200); i++)
			d[n->len++] = r64(r);
		break;
	}
	if (pct(r, 80) && n->len >= RB_HDR_LEN)
		be32(d + 17, crc32c(d + 21, n->len - 21));
}

static void mutate_string(struct tree *t, struct node *n, struct rng *r)
{
	static const char *const strs[] = {
		"", ".", "..", "g0/", "canary-0", "x y", "fuzzg", "1.2.3.4:9092",
		"localhost:0", "[::1]:9092", "g0", "g1",
	};
	char buf[320];
	size_t len;
	__u8 *d;

	switch (rn(r, 5)) {
	case 0:
		len = (size_t[]){ 64, 65, 127, 128, 249, 250, 300 }[rn(r, 7)];
		memset(buf, pct(r, 80) ? 'a' : '!', len);
		buf[len] = 0;
		break;
	case 1:		/* no NUL */
		if (n->len)
			n->len--;
		return;
	case 2:		/* an embedded NUL */
		if (n->len > 1)
			n->data[rn(r, n->len - 1)] = 0;
		return;
	default:
		snprintf(buf, sizeof(buf), "%s", strs[rn(r, 12)]);
	}
	len = strlen(buf) + 1;
	d = arena(t, len);
	if (!d)
		return;
	memcpy(d, buf, len);
	n->data = d;
	n->len = len;
}

static void mutate_once(struct tree *t, struct rng *r)
{
	int parent, prev, k = -1, c;
	struct node *n;
	__u64 v = 0;
	__u8 *d;

	if (pct(r, 12)) {
		add_random_attr(t, pct(r, 85) || t->nn < 2 ? 0 :
				pick_node(t, r, &parent, &prev) >= 0 ? parent : 0, r);
		return;
	}
	if (pct(r, 4)) {
		switch (rn(r, 4)) {
		case 0:
			t->cmd = rn(r, 100) < 70 ? rn(r, NCMD) : r64(r);
			break;
		case 1:
			t->version = r64(r);
			break;
		case 2:
			t->reserved = r64(r);
			break;
		case 3:
			t->flags ^= NLM_F_DUMP;
			break;
		}
		return;
	}
	k = pick_node(t, r, &parent, &prev);
	if (k < 0)
		return;
	n = &t->n[k];
	switch (rn(r, 10)) {
	case 0:		/* drop */
		unlink_node(t, parent, prev, k);
		return;
	case 1:		/* duplicate */
		copy_node(t, pct(r, 70) ? parent : 0, k, 0);
		return;
	case 2:		/* retype */
		n->type = pct(r, 80) ? rn(r, KREP_A_MAX + 3) :
			  (__u16[]){ 0x7fff, NLA_F_NET_BYTEORDER | n->type,
				     KREP_A_MAX + 1 }[rn(r, 3)];
		return;
	case 3:		/* resize */
		if (n->kind == K_NEST) {
			n->noflag = !n->noflag;
			return;
		}
		c = (int[]){ 0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17 }[rn(r, 11)];
		if (pct(r, 30))
			c = (int)n->len + (pct(r, 50) ? 1 : -1);
		if (c < 0)
			c = 0;
		d = arena(t, c);
		if (!d)
			return;
		memset(d, pct(r, 50) ? 0 : 0xff, c);
		memcpy(d, n->data, (size_t)c < n->len ? (size_t)c : n->len);
		n->data = d;
		n->len = c;
		return;
	case 4:		/* a nest becomes bytes, bytes a nest */
		if (n->kind == K_NEST) {
			n->kind = K_BIN;
			n->first = -1;
			n->len = rn(r, 9);
			n->data = arena(t, 8);
			if (!n->data)
				n->len = 0;
			else
				memset(n->data, rn(r, 256), 8);
		} else if (pct(r, 50)) {
			n->kind = K_NEST;
			n->first = -1;
			n->len = 0;
			if (pct(r, 50))
				add_u32(t, k, 1 + rn(r, 4), rn(r, 4));
		}
		return;
	case 5:		/* move elsewhere */
		c = rn(r, t->nn);
		if (t->n[c].kind != K_NEST || c == k)
			c = 0;
		unlink_node(t, parent, prev, k);
		n->next = t->n[c].first;
		t->n[c].first = k;
		return;
	default:	/* the value */
		break;
	}
	if (n->kind == K_NEST) {
		if (pct(r, 50))
			add_random_attr(t, k, r);
		else
			n->first = -1;	/* empty */
		return;
	}
	if (n->type == KREP_A_RECORDS && n->kind == K_BIN && !parent) {
		mutate_batch(t, n, r);
		return;
	}
	if (n->kind == K_STR) {
		mutate_string(t, n, r);
		return;
	}
	if (n->len && n->len <= 8) {
		memcpy(&v, n->data, n->len);
		set_int(n, boundary(r, n->len, v));
		return;
	}
	if (n->len)
		n->data[rn(r, n->len)] ^= 1 << rn(r, 8);
}

/* bytes of the serialised request changed: its length stays as sent */
static void mutate_bytes(struct req *q, struct rng *r)
{
	size_t hdr = NLMSG_HDRLEN, len = q->nlh.nlmsg_len, i;
	__u8 *b = (__u8 *)q->buf;
	int n = 1 + rn(r, 4);

	if (len <= hdr)
		return;
	if (pct(r, 20)) {	/* cut short, even into the genl header */
		q->nlh.nlmsg_len = hdr + rn(r, len - hdr);
		return;
	}
	while (n--) {
		i = hdr + rn(r, len - hdr);
		switch (rn(r, 3)) {
		case 0:
			b[i] ^= 1 << rn(r, 8);
			break;
		case 1:
			b[i] = (__u8[]){ 0, 0xff, 0x7f, 0x80, 4, 8 }[rn(r, 6)];
			break;
		case 2:		/* an nla_len, wherever one might be */
			i &= ~3UL;
			if (i + 2 <= len && i >= hdr)
				memcpy(b + i, &(__u16){ rn(r, 80) }, 2);
			break;
		}
	}
}

/*
 * Draw input @idx of @worker into @q: a valid request, mutated. Returns
 * whether it was mutated at all.
 */
static bool draw(struct tree *t, struct req *q, __u64 seed, int worker,
		 __u64 idx, __u16 family)
{
	struct rng r;
	int n = 0;

	rng_input(&r, seed, worker, idx);
	build_valid(t, &r);
	/* 15% valid, 45% one mutation, the rest more */
	if (!pct(&r, 15)) {
		n = 1;
		while (pct(&r, 47) && n < 12)
			n++;
	}
	for (int i = 0; i < n; i++)
		mutate_once(t, &r);
	tree_ser(t, q, family);
	if (pct(&r, 10)) {
		mutate_bytes(q, &r);
		n++;
	}
	return n > 0;
}

/*
 * Cut the waits of the request in @q to at most @max_ms, and add a
 * TIMEOUT_MS where the command would wait its default 30 s.
 */
static void cut_waits(struct req *q, __u32 max_ms)
{
	size_t hdr = NLMSG_HDRLEN + GENL_HDRLEN;
	const struct nlattr *nla;
	bool has_timeout = false;
	__u8 cmd;
	int rem;

	if (q->nlh.nlmsg_len < hdr || (q->nlh.nlmsg_flags & NLM_F_DUMP))
		return;
	cmd = req_genl(q)->cmd;
	for_each_nla(nla, q->buf + hdr, (int)(q->nlh.nlmsg_len - hdr), rem) {
		__u16 type = nla_kind(nla);
		__u32 v;

		if (nla_plen(nla) != 4 ||
		    (type != KREP_A_TIMEOUT_MS && type != KREP_A_MAX_WAIT_MS))
			continue;
		memcpy(&v, nla_data_c(nla), 4);
		if (type == KREP_A_TIMEOUT_MS && cmd == KREP_CMD_TXN)
			continue;	/* not a wait: how long it stays open */
		if (type == KREP_A_TIMEOUT_MS)
			has_timeout = true;
		if (v > max_ms && v <= WAIT_MAX_MS)
			memcpy((__u8 *)nla_data_c(nla), &max_ms, 4);
	}
	if (!has_timeout && (cmd == KREP_CMD_PRODUCE ||
			     cmd == KREP_CMD_DELETE_RECORDS)) {
		/* appended after whatever came before: it is the last word */
		struct req *r = q;

		r->nlh.nlmsg_len = NLMSG_ALIGN(r->nlh.nlmsg_len);
		put_u32(r, KREP_A_TIMEOUT_MS, max_ms);
	}
}

/* ---------------------------------------------------------------------
 * Shared state: progress, the rings, failures
 */

struct ring_entry {
	__u64 idx;
	__u32 len;		/* as sent */
	__u8 cmd;		/* drawn as */
	bool mutated;
	char outcome[120];
	__u8 buf[REQ_SIZE];
};

struct wstate {
	/* the request in flight: its deadline in ms since the start, 0 none */
	volatile __u64 deadline_ms, started_ms, inflight_idx;
	volatile __u64 inputs, acks, replies, errors, dumps, canaries;
	volatile __u64 max_ms;
	volatile __u64 sent[NCMD], ok[NCMD], us[NCMD];
	volatile __u64 cover[NCMD];	/* top-level types sent, a bit each */
	volatile int failed, hung, done, fuzzer_error;
	char fail[512];
	volatile __u64 fail_idx;
	volatile __u32 head;		/* entries written */
	struct ring_entry ring[RING];
};

struct shared {
	volatile int stop;
	__u64 t0_ns;
	struct wstate w[MAX_WORKERS];
};

static struct shared *sh;
static struct {
	__u64 seed;
	double secs;
	int workers;		/* fast ones; one slow one more */
	__u64 slack_ms;
	int max_failures;
	const char *ring;
	const char *logdir;
	char seed_str[32];
	__u16 family;
} cfg = { .workers = 2, .slack_ms = 35000, .max_failures = 5 };

static __u64 now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec - sh->t0_ns) /
	       1000;
}

static __u64 now_ms(void)
{
	return now_us() / 1000;
}

static void out(const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "fuzz: genl ");
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(1, line, n) < 0)
		return;
}

/* ---------------------------------------------------------------------
 * The oracle: exactly one well-formed answer
 */

struct answer {
	int error;		/* the NLMSG_ERROR's or NLMSG_DONE's, positive */
	int nreplies;
	char msg[256];		/* the extack message */
	bool kerr_set;
	int kerr;
	/* the first reply's attributes (a copy), for the canary */
	__u8 *reply;
	int reply_len;
};

/* a top-level reply attribute's size, or -1 when not fixed */
static int reply_attr_size(__u16 type)
{
	switch (type) {
	case KREP_A_ROLE: case KREP_A_AUTH:
		return 1;
	case KREP_A_BROKER_ID: case KREP_A_GENERATION: case KREP_A_PARTITIONS:
	case KREP_A_REPLICATION_FACTOR: case KREP_A_PARTITION:
	case KREP_A_LEADER: case KREP_A_LEADER_EPOCH:
	case KREP_A_PARTITION_EPOCH: case KREP_A_CONTROLLER_EPOCH:
		return 4;
	case KREP_A_LEO: case KREP_A_HW: case KREP_A_LSO:
	case KREP_A_LOG_START: case KREP_A_LOW_WATERMARK: case KREP_A_OFFSET:
	case KREP_A_TIMESTAMP: case KREP_A_LOG_BYTES: case KREP_A_INCARNATION:
	case KREP_A_LOG_MEMORY: case KREP_A_LOG_MEMORY_MAX:
		return 8;
	}
	return -1;
}

/* attributes that walk exactly to their end, nests too; NULL: fine */
static const char *check_attrs(const __u8 *p, int len, int depth)
{
	const struct nlattr *nla;
	int rem;

	for_each_nla(nla, p, len, rem) {
		if ((nla->nla_type & NLA_F_NESTED) && depth < 4) {
			const char *why = check_attrs(nla_data_c(nla),
						      nla_plen(nla), depth + 1);
			if (why)
				return why;
		}
	}
	/* what is left is the padding of the last one, at most */
	if (rem)
		return "attributes do not parse to the end";
	return NULL;
}

static const char *check_reply(const struct nlmsghdr *nlh, __u8 cmd)
{
	const struct genlmsghdr *g = NLMSG_DATA(nlh);
	const __u8 *attrs = (const __u8 *)g + GENL_HDRLEN;
	int len = (int)nlh->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;
	const struct nlattr *nla;
	const char *why;
	int rem, want;

	if (len < 0)
		return "a reply shorter than its genetlink header";
	if (g->cmd != cmd)
		return "a reply of another command";
	why = check_attrs(attrs, len, 0);
	if (why)
		return why;
	for_each_nla(nla, attrs, len, rem) {
		__u16 type = nla_kind(nla);

		if (type == KREP_A_SECRET)
			return "a reply carries KREP_A_SECRET";
		want = reply_attr_size(type);
		if (want >= 0 && nla_plen(nla) != want)
			return "a reply attribute of the wrong size";
		if ((type == KREP_A_TOPIC || type == KREP_A_CLUSTER_ID ||
		     type == KREP_A_KAFKA_ADVERTISED || type == KREP_A_LOG_DIR) &&
		    (nla_plen(nla) < 1 ||
		     ((const char *)nla_data_c(nla))[nla_plen(nla) - 1]))
			return "a reply string without its NUL";
	}
	return NULL;
}

/* the extack message and Kafka's code, parsed as krep_nl.c does */
static void parse_err_tlvs(const struct nlmsghdr *nlh, struct answer *a)
{
	struct ack ack;

	nl_parse_ack(nlh, &ack);
	memcpy(a->msg, ack.msg, sizeof(a->msg));
	a->kerr_set = ack.has_kerr;
	a->kerr = ack.kerr;
}

/*
 * Send @q and read its answer by @deadline (ms since the start). NULL when
 * it was one well-formed answer (in @a), else why not.
 */
static const char *transact(struct nl *nl, __u32 portid, struct req *q,
			    struct answer *a, __u64 deadline)
{
	static char why[160];
	__u8 *rx = nl_rx_buf();
	bool dump = (q->nlh.nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
	__u8 cmd = q->nlh.nlmsg_len >= NLMSG_HDRLEN + GENL_HDRLEN ?
		   req_genl(q)->cmd : 0;
	__u32 seq = nl->seq++;
	bool done = false;
	ssize_t n;

	memset(a, 0, sizeof(*a));
	q->nlh.nlmsg_seq = seq;
	q->nlh.nlmsg_pid = 0;
	if (send(nl->fd, q->buf, q->nlh.nlmsg_len, 0) !=
	    (ssize_t)q->nlh.nlmsg_len) {
		snprintf(why, sizeof(why), "send: %s", strerror(errno));
		return why;
	}
	while (!done) {
		const struct nlmsghdr *nlh;
		__u64 now = now_ms();
		struct pollfd pfd = { .fd = nl->fd, .events = POLLIN };

		if (now >= deadline || poll(&pfd, 1, deadline - now) == 0)
			return "no answer in time";
		n = recv(nl->fd, rx, RX_SIZE, MSG_TRUNC | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0) {
			snprintf(why, sizeof(why), "recv: %s", strerror(errno));
			return why;
		}
		if (n > RX_SIZE)
			return "an answer larger than the receive buffer";
		for (nlh = (void *)rx; NLMSG_OK(nlh, n);
		     nlh = NLMSG_NEXT(nlh, n)) {
			const char *bad;

			if (done)
				return "a message after the request's last one";
			if (nlh->nlmsg_seq != seq)
				return "a message with another sequence number";
			if (nlh->nlmsg_pid != portid)
				return "a message to another port";
			if (nlh->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(nlh);

				if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
					return "a short NLMSG_ERROR";
				if (e->error > 0 || e->error < -4095)
					return "an NLMSG_ERROR with no errno";
				if (e->msg.nlmsg_seq != seq ||
				    e->msg.nlmsg_type != q->nlh.nlmsg_type)
					return "an NLMSG_ERROR echoing another request";
				if (!e->error && dump)
					return "an ack of a dump";
				a->error = -e->error;
				parse_err_tlvs(nlh, a);
				done = true;
			} else if (nlh->nlmsg_type == NLMSG_DONE) {
				int err = 0;

				if (!dump)
					return "NLMSG_DONE for a request that is no dump";
				if (nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(int)))
					memcpy(&err, NLMSG_DATA(nlh), sizeof(err));
				if (err > 0 || err < -4095)
					return "NLMSG_DONE with no errno";
				a->error = -err;
				done = true;
			} else if (nlh->nlmsg_type == cfg.family) {
				if (!dump && a->nreplies)
					return "two replies to one request";
				bad = check_reply(nlh, cmd);
				if (bad)
					return bad;
				if (!a->nreplies) {
					/* the next recv() reuses rx */
					static __u8 *keep;

					if (!keep)
						keep = malloc(RX_SIZE);
					if (!keep)
						abort();
					a->reply_len = nlh->nlmsg_len -
						       NLMSG_HDRLEN - GENL_HDRLEN;
					memcpy(keep, (__u8 *)NLMSG_DATA(nlh) +
					       GENL_HDRLEN, a->reply_len);
					a->reply = keep;
				}
				a->nreplies++;
			} else {
				snprintf(why, sizeof(why),
					 "a message of type %u", nlh->nlmsg_type);
				return why;
			}
		}
		if (n > 0)
			return "a message cut short, or bytes after the last one";
	}
	if (a->error && a->nreplies && !dump)
		return "a reply and then an error";
	/* nothing more may come: a reply or ack of this request after it */
	n = recv(nl->fd, rx, RX_SIZE, MSG_TRUNC | MSG_DONTWAIT);
	if (n >= 0)
		return "a message after the request's last one";
	return NULL;
}

/* ---------------------------------------------------------------------
 * Valid requests that must succeed
 */

static __u64 reply_u64(const struct answer *a, __u16 type, bool *found)
{
	const struct nlattr *nla;
	int rem;

	*found = false;
	if (!a->reply)
		return 0;
	for_each_nla(nla, a->reply, a->reply_len, rem) {
		if (nla_kind(nla) == type) {
			*found = true;
			return nla_uint(nla);
		}
	}
	return 0;
}

struct canary {
	struct nl *nl;
	__u32 portid;
	struct req *q;
	char why[400];
};

static bool canary_call(struct canary *c, const char *step, int want_err,
			struct answer *a)
{
	const char *bad = transact(c->nl, c->portid, c->q, a,
				   now_ms() + WAIT_MAX_MS + cfg.slack_ms);

	if (bad) {
		snprintf(c->why, sizeof(c->why), "%s: %s", step, bad);
		return false;
	}
	if (a->error != want_err) {
		snprintf(c->why, sizeof(c->why), "%s: %s (%d)%s%s%s", step,
			 a->error ? strerror(a->error) : "succeeded", a->error,
			 a->msg[0] ? ": \"" : "", a->msg, a->msg[0] ? "\"" : "");
		return false;
	}
	return true;
}

static bool canary_once(struct canary *c, const char *name)
{
	static __u8 batch[512], got[512];
	struct req *q = c->q;
	struct answer a;
	struct rec recs[3] = {
		{ .ts = 1700000000000LL, .value = "one", .vlen = 3 },
		{ .ts = 1700000000001LL, .value = "two", .vlen = 3,
		  .key = "k", .klen = 1 },
		{ .ts = 1700000000002LL, .value = "three", .vlen = 5,
		  .hkey = "h", .hval = "v" },
	};
	const struct nlattr *nla;
	struct nlattr *nest, *reps;
	size_t blen, glen = 0;
	bool found;
	__u32 id;
	int rem;

	req_init(q, cfg.family, KREP_CMD_BROKER_GET, 0);
	if (!canary_call(c, "BROKER_GET", 0, &a))
		return false;
	id = reply_u64(&a, KREP_A_BROKER_ID, &found);
	if (!found) {
		snprintf(c->why, sizeof(c->why), "BROKER_GET: no broker id");
		return false;
	}

	req_init(q, cfg.family, KREP_CMD_TOPIC_NEW, 0);
	put_str(q, KREP_A_TOPIC, name);
	put_u32(q, KREP_A_PARTITIONS, 1);
	put_u32(q, KREP_A_REPLICATION_FACTOR, 1);
	nest = nest_start(q, KREP_A_ASSIGNMENT);
	reps = nest_start(q, KREP_A_REPLICAS);
	put_u32(q, KREP_A_BROKER_ID, id);
	nest_end(q, reps);
	nest_end(q, nest);
	if (!canary_call(c, "TOPIC_NEW", 0, &a))
		return false;

	blen = batch_build(batch, sizeof(batch), recs, 3, NULL);
	req_init(q, cfg.family, KREP_CMD_PRODUCE, 0);
	put_str(q, KREP_A_TOPIC, name);
	put_u32(q, KREP_A_PARTITION, 0);
	req_put(q, KREP_A_RECORDS, batch, blen);
	put_u16(q, KREP_A_ACKS, 1);
	put_u32(q, KREP_A_TIMEOUT_MS, 1000);
	if (!canary_call(c, "PRODUCE", 0, &a))
		goto del;
	if (reply_u64(&a, KREP_A_OFFSET, &found) != 0 || !found) {
		snprintf(c->why, sizeof(c->why), "PRODUCE: not at offset 0");
		goto del;
	}

	req_init(q, cfg.family, KREP_CMD_FETCH, 0);
	put_str(q, KREP_A_TOPIC, name);
	put_u32(q, KREP_A_PARTITION, 0);
	put_u64(q, KREP_A_OFFSET, 0);
	if (!canary_call(c, "FETCH", 0, &a))
		goto del;
	for_each_nla(nla, a.reply, a.reply_len, rem) {
		if (nla_kind(nla) == KREP_A_RECORDS &&
		    glen + nla_plen(nla) <= sizeof(got)) {
			memcpy(got + glen, nla_data_c(nla), nla_plen(nla));
			glen += nla_plen(nla);
		}
	}
	/* as sent, but for the base offset and leader epoch the leader sets */
	if (glen != blen || memcmp(got + 8, batch + 8, 4) ||
	    memcmp(got + 16, batch + 16, blen - 16) || rd64(got)) {
		snprintf(c->why, sizeof(c->why),
			 "FETCH: %zu bytes, not the %zu produced", glen, blen);
		goto del;
	}

	req_init(q, cfg.family, KREP_CMD_TOPIC_DEL, 0);
	put_str(q, KREP_A_TOPIC, name);
	return canary_call(c, "TOPIC_DEL", 0, &a);

del:
	req_init(q, cfg.family, KREP_CMD_TOPIC_DEL, 0);
	put_str(q, KREP_A_TOPIC, name);
	transact(c->nl, c->portid, q, &a, now_ms() + WAIT_MAX_MS + cfg.slack_ms);
	return false;
}

/* the fuzzed topics deleted and the controller's claim released */
static void repair(struct canary *c)
{
	struct answer a;
	unsigned int i;

	for (i = 0; i < sizeof(topics) / sizeof(topics[0]); i++) {
		req_init(c->q, cfg.family, KREP_CMD_TOPIC_DEL, 0);
		put_str(c->q, KREP_A_TOPIC, topics[i]);
		transact(c->nl, c->portid, c->q, &a,
			 now_ms() + WAIT_MAX_MS + cfg.slack_ms);
	}
}

/* three tries, the fuzzed topics cleared after a failed one */
static bool canary(struct canary *c, int worker, __u64 n)
{
	char name[64];
	int i;

	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "canary-%d-%llu-%d", worker,
			 (unsigned long long)n, i);
		if (canary_once(c, name))
			return true;
		repair(c);
	}
	return false;
}

/* ---------------------------------------------------------------------
 * Workers
 */

static void describe(char *buf, size_t len, const char *bad,
		     const struct answer *a)
{
	if (bad)
		snprintf(buf, len, "FAIL %s", bad);
	else if (a->error)
		snprintf(buf, len, "error %d (%s)%s%.60s", a->error,
			 strerror(a->error), a->msg[0] ? ": " : "", a->msg);
	else
		snprintf(buf, len, "ok, %d replies", a->nreplies);
}

static int worker(int k, bool slow)
{
	struct wstate *w = &sh->w[k];
	struct tree *t = malloc(sizeof(*t));
	struct req *q = malloc(sizeof(*q)), *cq = malloc(sizeof(*cq));
	struct canary c;
	struct nl nl;
	socklen_t sl;
	struct sockaddr_nl sa;
	__u64 idx;
	int err;

	if (!t || !q || !cq)
		return 2;
	err = krep_open(&nl);
	if (err) {
		snprintf(w->fail, sizeof(w->fail), "worker %d: krep_open: %s",
			 k, strerror(-err));
		w->fuzzer_error = 1;
		return 1;
	}
	sl = sizeof(sa);
	getsockname(nl.fd, (struct sockaddr *)&sa, &sl);
	c = (struct canary){ .nl = &nl, .portid = sa.nl_pid, .q = cq };

	for (idx = 0; !sh->stop; idx++) {
		struct ring_entry *e = &w->ring[w->head % RING];
		const char *bad;
		struct answer a;
		__u64 t0, dt, left;
		__u8 cmd;

		if (!slow && idx % CANARY_EVERY == 0) {
			if (!canary(&c, k, idx / CANARY_EVERY)) {
				w->fail_idx = idx;
				snprintf(w->fail, sizeof(w->fail),
					 "valid requests fail after input %llu: %s",
					 (unsigned long long)idx, c.why);
				w->failed++;
			}
			w->canaries++;
		}
		e->mutated = draw(t, q, cfg.seed, k, idx, cfg.family);
		e->cmd = t->cmd;
		left = cfg.secs * 1000 > now_ms() ?
		       cfg.secs * 1000 - now_ms() : 0;
		if (!slow)
			cut_waits(q, FAST_WAIT_MS);
		else if (left < WAIT_MAX_MS + 1000)
			cut_waits(q, left > 1000 ? left - 1000 : 0);
		e->idx = idx;
		e->len = q->nlh.nlmsg_len;
		memcpy(e->buf, q->buf, e->len);
		strcpy(e->outcome, "in flight");
		w->head++;

		cmd = q->nlh.nlmsg_len >= NLMSG_HDRLEN + GENL_HDRLEN ?
		      req_genl(q)->cmd : 0;
		if (cmd < NCMD) {
			const struct nlattr *nla;
			int rem, hdr = NLMSG_HDRLEN + GENL_HDRLEN;

			w->sent[cmd]++;
			for_each_nla(nla, q->buf + hdr,
				     (int)q->nlh.nlmsg_len - hdr, rem)
				if (nla_kind(nla) < 64)
					w->cover[cmd] |= 1ULL << nla_kind(nla);
		}
		t0 = now_us();
		w->inflight_idx = idx;
		w->started_ms = t0 / 1000;
		w->deadline_ms = t0 / 1000 + WAIT_MAX_MS + cfg.slack_ms;
		bad = transact(&nl, c.portid, q, &a, w->deadline_ms);
		w->deadline_ms = 0;
		dt = now_us() - t0;
		if (dt / 1000 > w->max_ms)
			w->max_ms = dt / 1000;
		if (cmd < NCMD)
			w->us[cmd] += dt;
		describe(e->outcome, sizeof(e->outcome), bad, &a);
		w->inputs++;
		if (bad) {
			w->fail_idx = idx;
			snprintf(w->fail, sizeof(w->fail), "input %llu (%s): %s",
				 (unsigned long long)idx, cmd_name(cmd), bad);
			w->failed++;
			/* the socket may hold the rest of it: a new one */
			nl_close(&nl);
			if (krep_open(&nl))
				break;
			sl = sizeof(sa);
			getsockname(nl.fd, (struct sockaddr *)&sa, &sl);
			c.portid = sa.nl_pid;
			continue;
		}
		if (a.error) {
			w->errors++;
		} else {
			if (cmd < NCMD)
				w->ok[cmd]++;
			if (q->nlh.nlmsg_flags & NLM_F_DUMP)
				w->dumps++;
			else if (a.nreplies)
				w->replies++;
			else
				w->acks++;
		}
	}
	w->done = 1;
	nl_close(&nl);
	return 0;
}

/* ---------------------------------------------------------------------
 * Reproducers: JSON, zlib, base64, as fuzz_kafka.py extract reads them
 */

struct sbuf {
	char *p;
	size_t len, cap;
};

static void sb_add(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && b->len + n < b->cap)
			break;
		b->cap = b->cap * 2 + n + 1024;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	b->len += n;
}

static void sb_json_str(struct sbuf *b, const char *s)
{
	sb_add(b, "\"");
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			sb_add(b, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			sb_add(b, "\\u%04x", *s);
		else
			sb_add(b, "%c", *s);
	}
	sb_add(b, "\"");
}

static void sb_hex(struct sbuf *b, const __u8 *p, size_t n)
{
	static const char hx[] = "0123456789abcdef";
	size_t i;

	if (b->len + 2 * n + 1 > b->cap) {
		b->cap = b->len + 2 * n + 4096;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	for (i = 0; i < n; i++) {
		b->p[b->len++] = hx[p[i] >> 4];
		b->p[b->len++] = hx[p[i] & 15];
	}
	b->p[b->len] = 0;
}

static void session_json(struct sbuf *b, int k, __u64 idx, __u8 cmd,
			 bool mutated, const __u8 *buf, __u32 len,
			 const char *outcome, size_t keep)
{
	sb_add(b, "{\"target\": \"genl\", \"idx\": %llu, \"mode\": \"worker %d\", "
	       "\"family\": %u, \"units\": [[\"%s\", \"%s, %u bytes\"]], "
	       "\"actions\": [[0, \"send\", \"", (unsigned long long)idx, k,
	       cfg.family, cmd_name(cmd), mutated ? "mutated" : "valid", len);
	sb_hex(b, buf, len < keep ? len : keep);
	sb_add(b, "\"");
	if (len > keep)
		sb_add(b, ", %u", len);
	sb_add(b, "]], \"outcome\": ");
	sb_json_str(b, outcome);
	sb_add(b, "}");
}

static void ring_json(struct sbuf *b, int k, __u64 skip_idx, int n)
{
	struct wstate *w = &sh->w[k];
	__u32 head = w->head, i, from = head > (__u32)n ? head - n : 0;
	bool first = true;

	sb_add(b, "\"genl-w%d\": [", k);
	for (i = from; i < head; i++) {
		struct ring_entry *e = &w->ring[i % RING];

		if (e->idx == skip_idx && skip_idx != ~0ULL)
			continue;
		sb_add(b, first ? "" : ", ");
		first = false;
		session_json(b, k, e->idx, e->cmd, e->mutated, e->buf, e->len,
			     e->outcome, KEEP_BYTES);
	}
	sb_add(b, "]");
}

static void emit_block(FILE *f, const char *name, const struct sbuf *json)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uLongf zlen = compressBound(json->len);
	__u8 *z = malloc(zlen);
	char *enc, line[160];
	size_t i, n = 0, elen;

	if (!z || compress2(z, &zlen, (const __u8 *)json->p, json->len, 9)) {
		free(z);
		return;
	}
	elen = (zlen + 2) / 3 * 4;
	enc = malloc(elen + 1);
	if (!enc) {
		free(z);
		return;
	}
	for (i = 0; i < zlen; i += 3) {
		__u32 v = z[i] << 16 | (i + 1 < zlen ? z[i + 1] << 8 : 0) |
			  (i + 2 < zlen ? z[i + 2] : 0);

		enc[n++] = b64[v >> 18 & 63];
		enc[n++] = b64[v >> 12 & 63];
		enc[n++] = i + 1 < zlen ? b64[v >> 6 & 63] : '=';
		enc[n++] = i + 2 < zlen ? b64[v & 63] : '=';
	}
	enc[n] = 0;
	if (f) {
		fprintf(f, "FUZZ-REPRO-BEGIN %s %zu\n", name, n);
		for (i = 0; i < n; i += 120)
			fprintf(f, "FUZZ-REPRO %.120s\n", enc + i);
		fprintf(f, "FUZZ-REPRO-END %s\n", name);
	} else {
		/* "fuzz: genl FUZZ-REPRO": apart from fuzz_kafka.py's blocks */
		out("FUZZ-REPRO-BEGIN %s %zu", name, n);
		for (i = 0; i < n; i += 120) {
			snprintf(line, sizeof(line), "%.120s", enc + i);
			out("FUZZ-REPRO %s", line);
		}
		out("FUZZ-REPRO-END %s", name);
	}
	free(enc);
	free(z);
}

/* a reproducer: the failing input of worker @k (or none) and the rings */
static void repro(FILE *f, const char *name, const char *reason, int k,
		  __u64 idx)
{
	struct sbuf b = { 0 };
	int i, n = cfg.workers + 1;

	sb_add(&b, "{\"seed\": \"%s\", \"reason\": ", cfg.seed_str);
	sb_json_str(&b, reason);
	sb_add(&b, ", \"config\": {\"target\": \"genl\", \"family\": %u, "
	       "\"workers\": %d}, \"failing\": ", cfg.family, cfg.workers);
	if (k >= 0) {
		struct wstate *w = &sh->w[k];
		struct ring_entry *e = NULL;
		__u32 j;

		for (j = 0; j < RING && j < w->head; j++)
			if (w->ring[(w->head - 1 - j) % RING].idx == idx)
				e = &w->ring[(w->head - 1 - j) % RING];
		if (e)
			session_json(&b, k, e->idx, e->cmd, e->mutated, e->buf,
				     e->len, e->outcome, REQ_SIZE);
		else
			sb_add(&b, "null");
	} else {
		sb_add(&b, "null");
	}
	sb_add(&b, ", \"rings\": {");
	for (i = 0; i < n; i++) {
		sb_add(&b, i ? ", " : "");
		ring_json(&b, i, i == k ? idx : ~0ULL, RING_BLOCK);
	}
	sb_add(&b, "}}");
	emit_block(f, name, &b);
	free(b.p);
}

/* ---------------------------------------------------------------------
 * The parent
 */

static int nfail, nrepro;

static void report(int k, const char *kind)
{
	struct wstate *w = &sh->w[k];
	char name[96];

	nfail++;
	out("FAIL worker %d: %s: %s", k, kind, w->fail);
	if (nrepro < MAX_REPROS) {
		nrepro++;
		snprintf(name, sizeof(name), "%s-genl-w%d-%llu", cfg.seed_str,
			 k, (unsigned long long)w->fail_idx);
		repro(NULL, name, w->fail, k, w->fail_idx);
	}
}

static __u64 total_inputs(void)
{
	__u64 in = 0;
	int k;

	for (k = 0; k <= cfg.workers; k++)
		in += sh->w[k].inputs;
	return in;
}

static int cmd_run(void)
{
	int nw = cfg.workers + 1, k, seen_fail[MAX_WORKERS] = { 0 }, status;
	pid_t pids[MAX_WORKERS];
	__u64 last_in = 0, last_t = 0, in, t, end, stop_at;
	struct timespec ts;
	struct nl nl;
	int err;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	sh->t0_ns = (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	err = krep_open(&nl);
	if (err) {
		out("fuzzer error: the krep family: %s", strerror(-err));
		return 1;
	}
	cfg.family = nl.family;
	if (cfg.logdir) {
		logdir_fd = open(cfg.logdir, O_DIRECTORY | O_RDONLY);
		if (logdir_fd < 0) {
			out("fuzzer error: %s: %s", cfg.logdir, strerror(errno));
			return 1;
		}
	}
	out("seed %s (KREP_FUZZ_SEED=%s reproduces the inputs), %.0f s, "
	    "%d workers and a slow one, family %u", cfg.seed_str, cfg.seed_str,
	    cfg.secs, cfg.workers, cfg.family);
	fflush(stdout);
	for (k = 0; k < nw; k++) {
		pids[k] = fork();
		if (pids[k] < 0) {
			perror("fork");
			sh->stop = 1;
			nw = k;
			break;
		}
		if (!pids[k])
			_exit(worker(k, k == cfg.workers));
	}
	end = cfg.secs * 1000;
	stop_at = 0;
	for (;;) {
		bool all_done = true;

		usleep(100000);
		t = now_ms();
		if (!sh->stop && t >= end)
			sh->stop = 1;
		if (sh->stop && !stop_at)
			stop_at = t;
		for (k = 0; k < nw; k++) {
			struct wstate *w = &sh->w[k];
			__u64 dl = w->deadline_ms;

			if (w->fuzzer_error && !w->done) {
				out("fuzzer error: %s", w->fail);
				w->done = 1;
				nfail++;
			}
			while (seen_fail[k] < w->failed) {
				seen_fail[k] = w->failed;
				report(k, "bad answer");
			}
			if (dl && t > dl && !w->hung) {
				w->hung = 1;
				w->fail_idx = w->inflight_idx;
				snprintf(w->fail, sizeof(w->fail),
					 "input %llu: no answer %llu ms after it was sent (the broker's longest wait is %u ms)",
					 (unsigned long long)w->inflight_idx,
					 (unsigned long long)(t - w->started_ms),
					 WAIT_MAX_MS);
				strcpy(w->ring[(w->head - 1) % RING].outcome,
				       "FAIL no answer in time");
				report(k, "hang");
			}
			if (!w->done && !w->hung)
				all_done = false;
		}
		if (nfail >= cfg.max_failures)
			sh->stop = 1;
		if (t / 1000 != last_t / 1000 || all_done) {
			char at[MAX_WORKERS * 24];
			int o = 0;

			in = total_inputs();
			/* the input each worker is at: what a crash regenerates */
			for (k = 0; k < nw; k++)
				o += snprintf(at + o, sizeof(at) - o, " w%d=%llu",
					      k, (unsigned long long)sh->w[k].inflight_idx);
			out("progress t=%llu inputs %llu rate %.0f/s at%s",
			    (unsigned long long)t / 1000,
			    (unsigned long long)in,
			    t > last_t ? (in - last_in) * 1000.0 / (t - last_t) : 0.0,
			    at);
			last_in = in;
			last_t = t;
		}
		if (all_done)
			break;
	}
	for (k = 0; k < nw; k++) {
		if (sh->w[k].hung)
			kill(pids[k], SIGKILL);
		waitpid(pids[k], &status, sh->w[k].hung ? WNOHANG : 0);
	}

	/* the broker still serves valid requests */
	for (k = 0; k < nw && !sh->w[k].hung; k++)
		;
	if (k < nw) {
		out("FAIL after the run: not tried, worker %d is stuck in the kernel", k);
		nfail++;
	} else {
		struct req *cq = malloc(sizeof(*cq));
		struct sockaddr_nl sa;
		socklen_t sl = sizeof(sa);
		struct canary c = { .nl = &nl, .q = cq };

		getsockname(nl.fd, (struct sockaddr *)&sa, &sl);
		c.portid = sa.nl_pid;
		if (!cq || !canary(&c, 99, 0)) {
			out("FAIL after the run: valid requests fail: %s", c.why);
			nfail++;
		} else {
			out("after the run: valid requests succeed (BROKER_GET, TOPIC_NEW, PRODUCE, FETCH, TOPIC_DEL)");
		}
		free(cq);
	}

	{
		__u64 sent[NCMD] = { 0 }, ok[NCMD] = { 0 }, cover[NCMD] = { 0 };
		__u64 ms[NCMD] = { 0 };
		__u64 acks = 0, replies = 0, errors = 0, dumps = 0, canaries = 0;
		__u64 maxms = 0;
		int pairs = 0, cmds = 0, c, a;
		double secs = (stop_at ? stop_at : now_ms()) / 1000.0;

		in = total_inputs();
		for (k = 0; k < nw; k++) {
			struct wstate *w = &sh->w[k];

			acks += w->acks;
			replies += w->replies;
			errors += w->errors;
			dumps += w->dumps;
			canaries += w->canaries;
			if (w->max_ms > maxms)
				maxms = w->max_ms;
			for (c = 0; c < NCMD; c++) {
				sent[c] += w->sent[c];
				ok[c] += w->ok[c];
				ms[c] += w->us[c] / 1000;
				cover[c] |= w->cover[c];
			}
		}
		for (c = 1; c <= KREP_CMD_MAX; c++) {
			for (a = 1; a <= KREP_A_MAX; a++)
				pairs += !!(cover[c] & (1ULL << a));
			cmds += sent[c] > 0;
			out("cmd %s sent %llu ok %llu, %llu ms in all", cmd_name(c),
			    (unsigned long long)sent[c],
			    (unsigned long long)ok[c], (unsigned long long)ms[c]);
		}
		out("coverage: %d of %d commands sent, %d of %d (command, attribute) pairs",
		    cmds, KREP_CMD_MAX, pairs, KREP_CMD_MAX * KREP_A_MAX);
		out("result genl inputs %llu secs %.1f rate %.1f/s acks %llu replies %llu dumps %llu errors %llu valid %llu slowest %llu ms failures %d",
		    (unsigned long long)in, secs, secs > 0 ? in / secs : 0.0,
		    (unsigned long long)acks, (unsigned long long)replies,
		    (unsigned long long)dumps, (unsigned long long)errors,
		    (unsigned long long)canaries, (unsigned long long)maxms,
		    nfail);
	}
	if (cfg.ring) {
		FILE *f = fopen(cfg.ring, "w");

		if (f) {
			char name[64];

			snprintf(name, sizeof(name), "%s-genl-last",
				 cfg.seed_str);
			repro(f, name, "the last inputs of the run", -1, 0);
			fclose(f);
		}
	}
	nl_close(&nl);
	return nfail ? 1 : 0;
}

/* inputs @from..@to of worker @k, as drawn, as reproducer sessions */
static int cmd_gen(int k, __u64 from, __u64 to)
{
	struct tree *t = malloc(sizeof(*t));
	struct req *q = malloc(sizeof(*q));
	struct sbuf b = { 0 };
	__u64 i;
	bool m;

	if (!t || !q)
		return 2;
	sb_add(&b, "[");
	for (i = from; i < to; i++) {
		m = draw(t, q, cfg.seed, k, i, 0);
		sb_add(&b, i > from ? ",\n" : "");
		session_json(&b, k, i, t->cmd, m, (__u8 *)q->buf,
			     q->nlh.nlmsg_len, "regenerated", REQ_SIZE);
	}
	sb_add(&b, "]\n");
	fwrite(b.p, 1, b.len, stdout);
	free(b.p);
	return 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: fuzz_genl run --seed S --secs N [--workers W] [--slack-ms MS]\n"
		"                     [--logdir DIR] [--ring FILE] [--max-failures N]\n"
		"       fuzz_genl gen --seed S --worker K --from I --to J\n");
	return 2;
}

int main(int argc, char **argv)
{
	__u64 from = 0, to = 0;
	int i, k = 0;
	bool seeded = false;

	if (argc < 2)
		return usage();
	for (i = 2; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			return usage();
		i++;
		if (!strcmp(o, "--seed")) {
			char *end;

			cfg.seed = strtoull(v, &end, 0);
			if (*end || !*v)
				return usage();
			snprintf(cfg.seed_str, sizeof(cfg.seed_str), "%s", v);
			seeded = true;
		} else if (!strcmp(o, "--secs")) {
			cfg.secs = atof(v);
		} else if (!strcmp(o, "--workers")) {
			cfg.workers = atoi(v);
		} else if (!strcmp(o, "--slack-ms")) {
			cfg.slack_ms = strtoull(v, NULL, 0);
		} else if (!strcmp(o, "--max-failures")) {
			cfg.max_failures = atoi(v);
		} else if (!strcmp(o, "--logdir")) {
			cfg.logdir = v;
		} else if (!strcmp(o, "--ring")) {
			cfg.ring = v;
		} else if (!strcmp(o, "--worker")) {
			k = atoi(v);
		} else if (!strcmp(o, "--from")) {
			from = strtoull(v, NULL, 0);
		} else if (!strcmp(o, "--to")) {
			to = strtoull(v, NULL, 0);
		} else {
			return usage();
		}
	}
	if (!seeded)
		return usage();
	if (!strcmp(argv[1], "gen"))
		return cmd_gen(k, from, to);
	if (strcmp(argv[1], "run") || cfg.secs <= 0 || cfg.workers < 1 ||
	    cfg.workers >= MAX_WORKERS || cfg.max_failures < 1)
		return usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmd_run();
}
