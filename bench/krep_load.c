// SPDX-License-Identifier: GPL-2.0
/*
 * krep_load - the benchmark's load generator for krep: N threads, each with
 * its own generic netlink socket in the network namespace of the leader of
 * its partition, each sending one PRODUCE (one RecordBatch v2 of --batch
 * records of --size bytes) and waiting for the reply: with acks=all the
 * reply comes once the HW passes the batch, so a request's round trip is
 * its commit latency.
 *
 * Thread i writes to partition i mod P, whose leader is broker (p mod B)
 * in --brokers order (krep's round-robin assignment over sorted broker
 * ids: partition p is led by the (p mod 3)+1-th broker).
 *
 * Before and after the run it reads every broker's KREP_A_STATS (BROKER_GET)
 * and prints the deltas: payload bytes copied (into logs by produce and
 * replication, out of sockets) and sent by reference, per record appended.
 *
 * After the run it also reads the partitions of the topic (PARTITION_GET)
 * and prints the smallest ISR any leader has (isr_min=; -1 if unknown):
 * acks=all commits on every replica only while that is the replication
 * factor.
 *
 * Then it waits (bounded) until every partition's HW reaches its LEO and
 * prints that time (drain_secs=; at acks=0/1 the followers trail the
 * producers) and the records per second counting it
 * (replicated_rec_per_s=): the rate at which the cluster took the
 * records in, replication included. The stats are read after the drain.
 *
 * Usage: see usage[] below. Prints one RESULT line (common.h) plus
 * drain_secs= replicated_rec_per_s= isr_min= krep_records= copy_bytes= produce_bytes= follower_bytes=
 * rx_copy_bytes= zc_bytes= (sums over the brokers), or stats=absent.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/socket.h>

#include <linux/krep.h>

#include "../agent/lib/record.h"
#include "common.h"

#define BROKERS_MAX	8
#define RBUF_SIZE	(128 << 10)

static const char usage[] =
"Usage: krep_load --topic T [--partitions P] [--acks 0|1|all]\n"
"                 [--brokers NS1,NS2,...] [--timeout-ms MS]\n"
"                 [-t THREADS] [-s SIZE] [-b BATCH] [-n COUNT] [-d SECONDS]\n"
"                 [-l LATFILE]\n"
"  --brokers   network namespaces of the brokers in broker id order\n"
"              ('-' for this process's own); default '-'\n";

struct cfg {
	const char *topic;
	int partitions;
	int acks;
	int timeout_ms;
	int nbrokers;
	char *brokers[BROKERS_MAX];
	int ns_fd[BROKERS_MAX];
	struct bench_opts o;
};

static int opt(const char *name, const char *val, void *arg)
{
	struct cfg *c = arg;
	char *s, *tok, *save = NULL;

	if (!strcmp(name, "--topic")) {
		c->topic = val;
	} else if (!strcmp(name, "--partitions")) {
		c->partitions = atoi(val);
		if (c->partitions < 1)
			return -1;
	} else if (!strcmp(name, "--acks")) {
		if (!strcmp(val, "all") || !strcmp(val, "-1"))
			c->acks = -1;
		else if (!strcmp(val, "0") || !strcmp(val, "1"))
			c->acks = atoi(val);
		else
			return -1;
	} else if (!strcmp(name, "--timeout-ms")) {
		c->timeout_ms = atoi(val);
	} else if (!strcmp(name, "--brokers")) {
		s = strdup(val);
		c->nbrokers = 0;
		for (tok = strtok_r(s, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			if (c->nbrokers == BROKERS_MAX)
				return -1;
			c->brokers[c->nbrokers++] = tok;
		}
		if (!c->nbrokers)
			return -1;
	} else {
		return -1;
	}
	return 0;
}

static int ns_open(const char *name)
{
	char path[256];

	if (!strcmp(name, "-"))
		return open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* A generic netlink socket of the current thread's namespace. */
struct gsock {
	struct nl_sock *sk;
	int fd, family;
	uint32_t seq;
	uint8_t *rbuf;
};

static int gsock_open(struct gsock *g)
{
	int one = 1, size = 1 << 20;

	memset(g, 0, sizeof(*g));
	g->sk = nl_socket_alloc();
	if (!g->sk || genl_connect(g->sk)) {
		fprintf(stderr, "%s: cannot open a generic netlink socket\n",
			bench_prog);
		return -1;
	}
	g->family = genl_ctrl_resolve(g->sk, KREP_GENL_NAME);
	if (g->family < 0) {
		fprintf(stderr, "%s: genl family %s not found (module loaded?)\n",
			bench_prog, KREP_GENL_NAME);
		return -1;
	}
	g->fd = nl_socket_get_fd(g->sk);
	setsockopt(g->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(g->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	setsockopt(g->fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	setsockopt(g->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	g->rbuf = malloc(RBUF_SIZE);
	g->seq = 1;
	return g->rbuf ? 0 : -1;
}

static void gsock_close(struct gsock *g)
{
	nl_socket_free(g->sk);
	free(g->rbuf);
}

/* The request bytes of @msg, to be sent over and over. */
static uint8_t *msg_bytes(struct nl_msg *msg, size_t *len)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	uint8_t *b = malloc(nlh->nlmsg_len);

	if (b)
		memcpy(b, nlh, nlh->nlmsg_len);
	*len = nlh->nlmsg_len;
	return b;
}

/*
 * Send @req (a complete netlink message), receive the reply into g->rbuf:
 * 0 with the reply's header, or -errno after printing the kernel's reason
 * when @loud.
 */
static int transact(struct gsock *g, uint8_t *req, size_t len,
		    struct nlmsghdr **reply, bool loud)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)req;
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	struct nlmsgerr *e;
	uint32_t seq = g->seq++;
	ssize_t n;

	nlh->nlmsg_seq = seq;
	nlh->nlmsg_pid = 0;
	if (send(g->fd, req, len, 0) != (ssize_t)len) {
		if (loud)
			fprintf(stderr, "%s: netlink send: %s\n", bench_prog,
				strerror(errno));
		return -EIO;
	}
	for (;;) {
		n = recv(g->fd, g->rbuf, RBUF_SIZE, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)NLMSG_HDRLEN) {
			if (loud)
				fprintf(stderr, "%s: netlink recv: %s\n",
					bench_prog, strerror(errno));
			return -EIO;
		}
		nlh = (struct nlmsghdr *)g->rbuf;
		if (nlh->nlmsg_seq == seq)
			break;
	}
	if (nlh->nlmsg_type != NLMSG_ERROR) {
		*reply = nlh;
		return 0;
	}
	e = NLMSG_DATA(nlh);
	if (!e->error) {
		*reply = NULL;
		return 0;
	}
	if (loud) {
		const char *msg = "";

		if ((nlh->nlmsg_flags & NLM_F_ACK_TLVS) &&
		    !nla_parse(tb, NLMSGERR_ATTR_MAX,
			       (struct nlattr *)((uint8_t *)e + sizeof(*e)),
			       nlh->nlmsg_len - NLMSG_HDRLEN - sizeof(*e),
			       NULL) && tb[NLMSGERR_ATTR_MSG])
			msg = nla_get_string(tb[NLMSGERR_ATTR_MSG]);
		fprintf(stderr, "%s: PRODUCE: %s: %s\n", bench_prog,
			strerror(-e->error), msg);
	}
	return e->error;
}

/* ---- BROKER_GET stats ------------------------------------------------ */

struct stats {
	bool present;
	uint64_t v[KREP_A_STAT_MAX + 1];
};

static int stats_get(struct gsock *g, struct stats *s)
{
	struct nlattr *tb[KREP_A_MAX + 1], *st[KREP_A_STAT_MAX + 1];
	struct nlmsghdr *reply;
	struct nl_msg *msg;
	uint8_t *req;
	size_t len;
	int i, err;

	memset(s, 0, sizeof(*s));
	msg = nlmsg_alloc();
	if (!msg || !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, g->family, 0,
				 NLM_F_REQUEST, KREP_CMD_BROKER_GET,
				 KREP_GENL_VERSION))
		return -ENOMEM;
	req = msg_bytes(msg, &len);
	nlmsg_free(msg);
	if (!req)
		return -ENOMEM;
	err = transact(g, req, len, &reply, true);
	free(req);
	if (err || !reply)
		return err ? err : -EPROTO;
	if (nlmsg_parse(reply, GENL_HDRLEN, tb, KREP_A_MAX, NULL))
		return -EPROTO;
	if (!tb[KREP_A_STATS])
		return 0;
	if (nla_parse_nested(st, KREP_A_STAT_MAX, tb[KREP_A_STATS], NULL))
		return -EPROTO;
	s->present = true;
	for (i = 1; i <= KREP_A_STAT_MAX; i++)
		if (st[i] && nla_len(st[i]) == 8)
			s->v[i] = nla_get_u64(st[i]);
	return 0;
}

/*
 * The smallest ISR among the partitions of @topic that this broker leads
 * (PARTITION_GET dump), or -1 if it leads none or the dump fails; @behind
 * (if not NULL) counts those whose HW is below their LEO.
 */
static int isr_min(struct gsock *g, const char *topic, int *behind)
{
	struct nlattr *tb[KREP_A_MAX + 1], *a;
	struct nl_msg *msg;
	struct nlmsghdr *nlh;
	uint8_t *req;
	size_t len;
	ssize_t n;
	int min = -1, cnt, rem;
	uint32_t seq = g->seq++;

	msg = nlmsg_alloc();
	if (!msg || !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, g->family, 0,
				 NLM_F_REQUEST | NLM_F_DUMP,
				 KREP_CMD_PARTITION_GET, KREP_GENL_VERSION) ||
	    nla_put_string(msg, KREP_A_TOPIC, topic)) {
		nlmsg_free(msg);
		return -1;
	}
	req = msg_bytes(msg, &len);
	nlmsg_free(msg);
	if (!req)
		return -1;
	((struct nlmsghdr *)req)->nlmsg_seq = seq;
	n = send(g->fd, req, len, 0);
	free(req);
	if (n != (ssize_t)len)
		return -1;
	for (;;) {
		n = recv(g->fd, g->rbuf, RBUF_SIZE, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		for (nlh = (struct nlmsghdr *)g->rbuf; NLMSG_OK(nlh, n);
		     nlh = NLMSG_NEXT(nlh, n)) {
			if (nlh->nlmsg_seq != seq)
				continue;
			if (nlh->nlmsg_type == NLMSG_DONE)
				return min;
			if (nlh->nlmsg_type == NLMSG_ERROR)
				return -1;
			if (nlmsg_parse(nlh, GENL_HDRLEN, tb, KREP_A_MAX, NULL) ||
			    !tb[KREP_A_ROLE] || !tb[KREP_A_ISR] ||
			    nla_get_u8(tb[KREP_A_ROLE]) != KREP_ROLE_LEADER)
				continue;
			cnt = 0;
			nla_for_each_nested(a, tb[KREP_A_ISR], rem)
				cnt++;
			if (min < 0 || cnt < min)
				min = cnt;
			if (behind && tb[KREP_A_HW] && tb[KREP_A_LEO] &&
			    nla_get_u64(tb[KREP_A_HW]) <
			    nla_get_u64(tb[KREP_A_LEO]))
				(*behind)++;
		}
	}
}

/* ---- the writers ------------------------------------------------------ */

struct writer {
	struct gsock g;
	uint8_t *req;
	size_t len;
	bool said;
};

static void *writer_init(int tid, void *arg)
{
	struct cfg *c = arg;
	int part = tid % c->partitions;
	int b = part % c->nbrokers;
	struct krep_batch_enc enc;
	struct krep_record r = { 0 };
	const uint8_t *batch;
	struct writer *w;
	struct nl_msg *msg;
	uint8_t *val;
	size_t blen;
	int i;

	if (setns(c->ns_fd[b], CLONE_NEWNET)) {
		fprintf(stderr, "%s: cannot enter namespace %s: %s\n",
			bench_prog, c->brokers[b], strerror(errno));
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	val = malloc(c->o.size);
	if (!w || !val || gsock_open(&w->g))
		return NULL;
	krep_batch_enc_init(&enc, false, KREP_NO_PRODUCER_ID,
			    KREP_NO_PRODUCER_EPOCH, KREP_NO_SEQUENCE);
	for (i = 0; i < c->o.batch; i++) {
		bench_fill(val, c->o.size, tid * 1000003ull + i);
		r.timestamp = 1700000000000ll;
		r.key.len = -1;
		r.value.data = val;
		r.value.len = c->o.size;
		if (krep_batch_enc_add(&enc, &r)) {
			fprintf(stderr, "%s: cannot encode the batch\n",
				bench_prog);
			return NULL;
		}
	}
	batch = krep_batch_enc_finish(&enc, &blen);
	if (blen > 0xffff - NLA_HDRLEN) {
		fprintf(stderr, "%s: a batch of %zu bytes does not fit one attribute\n",
			bench_prog, blen);
		return NULL;
	}
	msg = nlmsg_alloc_size(blen + 1024);
	if (!msg || !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, w->g.family,
				 0, NLM_F_REQUEST, KREP_CMD_PRODUCE,
				 KREP_GENL_VERSION) ||
	    nla_put_string(msg, KREP_A_TOPIC, c->topic) ||
	    nla_put_u32(msg, KREP_A_PARTITION, part) ||
	    nla_put(msg, KREP_A_RECORDS, blen, batch) ||
	    nla_put_u16(msg, KREP_A_ACKS, (uint16_t)c->acks) ||
	    nla_put_u32(msg, KREP_A_TIMEOUT_MS, c->timeout_ms))
		return NULL;
	w->req = msg_bytes(msg, &w->len);
	nlmsg_free(msg);
	krep_batch_enc_free(&enc);
	free(val);
	return w->req ? w : NULL;
}

static int writer_op(void *ctx, uint64_t seq)
{
	struct writer *w = ctx;
	struct nlmsghdr *reply;
	int err;

	(void)seq;
	err = transact(&w->g, w->req, w->len, &reply, !w->said);
	if (err)
		w->said = true;
	return err ? -1 : 0;
}

static void writer_fini(void *ctx)
{
	struct writer *w = ctx;

	gsock_close(&w->g);
	free(w->req);
	free(w);
}

/*
 * After the run: how long until every led partition's HW reaches its LEO,
 * i.e. the followers hold what was written (at acks=0/1 they trail the
 * producers; at acks=all this is ~0). Polls every 2 ms, at most
 * DRAIN_MAX_S; -1 when that ran out.
 */
#define DRAIN_MAX_S	30.0
static double drain_secs(const struct cfg *c, struct gsock *gs)
{
	uint64_t t0 = bench_now_ns();
	double t;
	int i, behind;

	for (;;) {
		behind = 0;
		for (i = 0; i < c->nbrokers; i++) {
			isr_min(&gs[i], c->topic, &behind);
		}
		t = (bench_now_ns() - t0) / 1e9;
		if (!behind)
			return t;
		if (t > DRAIN_MAX_S)
			return -1;
		usleep(2000);
	}
}

int main(int argc, char **argv)
{
	static const struct bench_ops ops = {
		.thread_init = writer_init,
		.op = writer_op,
		.thread_fini = writer_fini,
	};
	struct cfg c = { .partitions = 1, .acks = -1, .timeout_ms = 30000 };
	struct stats before[BROKERS_MAX], after[BROKERS_MAX];
	struct gsock gs[BROKERS_MAX];
	struct bench_result r;
	char extra[512];
	uint64_t d[KREP_A_STAT_MAX + 1] = { 0 };
	bool stats = true;
	int self, i, k, n, rc, isr = -1;
	double drain;

	bench_prog = "krep_load";
	c.brokers[0] = "-";
	c.nbrokers = 1;
	bench_parse(argc, argv, &c.o, opt, &c, usage);
	if (!c.topic) {
		fprintf(stderr, "%s: --topic is required\n%s", bench_prog, usage);
		return 2;
	}
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	for (i = 0; i < c.nbrokers; i++) {
		c.ns_fd[i] = ns_open(c.brokers[i]);
		if (c.ns_fd[i] < 0 || setns(c.ns_fd[i], CLONE_NEWNET)) {
			fprintf(stderr, "%s: cannot enter namespace %s: %s\n",
				bench_prog, c.brokers[i], strerror(errno));
			return 1;
		}
		if (gsock_open(&gs[i]))
			return 1;
		if (setns(self, CLONE_NEWNET))
			return 1;
	}
	for (i = 0; i < c.nbrokers; i++)
		stats &= !stats_get(&gs[i], &before[i]) && before[i].present;

	rc = bench_run(&c.o, &ops, &c, &r);
	drain = drain_secs(&c, gs);

	for (i = 0; i < c.nbrokers; i++) {
		stats &= !stats_get(&gs[i], &after[i]) && after[i].present;
		for (k = 1; stats && k <= KREP_A_STAT_MAX; k++)
			d[k] += after[i].v[k] - before[i].v[k];
		k = isr_min(&gs[i], c.topic, NULL);
		if (k >= 0 && (isr < 0 || k < isr))
			isr = k;
		gsock_close(&gs[i]);
	}
	n = snprintf(extra, sizeof(extra),
		     "drain_secs=%.3f replicated_rec_per_s=%.1f ",
		     drain, drain < 0 || r.secs + drain <= 0 ? 0.0 :
		     (double)r.ok * c.o.batch / (r.secs + drain));
	if (stats)
		snprintf(extra + n, sizeof(extra) - n,
			 "acks=%d partitions=%d isr_min=%d krep_records=%llu copy_bytes=%llu "
			 "produce_bytes=%llu follower_bytes=%llu "
			 "rx_copy_bytes=%llu zc_bytes=%llu fetch_resps=%llu",
			 c.acks, c.partitions, isr,
			 (unsigned long long)d[KREP_A_STAT_RECORDS],
			 (unsigned long long)(d[KREP_A_STAT_PRODUCE_BYTES] +
					      d[KREP_A_STAT_FOLLOWER_BYTES] +
					      d[KREP_A_STAT_RX_COPY_BYTES]),
			 (unsigned long long)d[KREP_A_STAT_PRODUCE_BYTES],
			 (unsigned long long)d[KREP_A_STAT_FOLLOWER_BYTES],
			 (unsigned long long)d[KREP_A_STAT_RX_COPY_BYTES],
			 (unsigned long long)d[KREP_A_STAT_TX_ZEROCOPY_BYTES],
			 (unsigned long long)d[KREP_A_STAT_FETCH_RESPONSES]);
	else
		snprintf(extra + n, sizeof(extra) - n,
			 "acks=%d partitions=%d isr_min=%d stats=absent",
			 c.acks, c.partitions, isr);
	bench_print(&c.o, &r, extra);
	return rc ? 1 : bench_status(&r);
}
