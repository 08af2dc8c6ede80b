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
 * With --kafka ADDR1,ADDR2,... (each broker's Kafka listener, in --brokers
 * order) the writers send the same batches as Kafka Produce v7 requests
 * over TCP, one request in flight on each writer's connection, instead
 * of generic netlink: krep's Kafka port measured with the netlink runs'
 * own writers, so that only the transport differs (kafka_load measures
 * it with librdkafka, whose own CPU time bounds it under emulation).
 *
 * Usage: see usage[] below. Prints one RESULT line (common.h) plus
 * drain_secs= replicated_rec_per_s= isr_min= krep_records= copy_bytes= produce_bytes= follower_bytes=
 * rx_copy_bytes= zc_bytes= (sums over the brokers), or stats=absent.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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
#include "krep_nl.h"

static const char usage[] =
"Usage: krep_load --topic T [--partitions P] [--acks 0|1|all]\n"
"                 [--brokers NS1,NS2,...] [--timeout-ms MS]\n"
"                 [-t THREADS] [-s SIZE] [-b BATCH] [-n COUNT] [-d SECONDS]\n"
"                 [-l LATFILE] [--kafka ADDR,ADDR,...]\n"
"  --brokers   network namespaces of the brokers in broker id order\n"
"              ('-' for this process's own); default '-'\n"
"  --kafka     the brokers' Kafka listeners (IPv4:PORT, same order):\n"
"              Produce v7 over TCP instead of generic netlink\n";

struct cfg {
	const char *topic;
	int partitions;
	int acks;
	int timeout_ms;
	struct brokers b;
	struct bench_opts o;
	int nkafka;
	struct sockaddr_in kafka[BROKERS_MAX];
};

/* --kafka A:P,A:P,...: 0, or -1 when malformed */
static int kafka_parse(struct cfg *c, const char *val)
{
	char buf[64], *colon;
	const char *at = val;
	size_t n;

	while (*at && c->nkafka < BROKERS_MAX) {
		struct sockaddr_in *sa = &c->kafka[c->nkafka];

		n = strcspn(at, ",");
		if (n >= sizeof(buf))
			return -1;
		memcpy(buf, at, n);
		buf[n] = 0;
		colon = strrchr(buf, ':');
		if (!colon)
			return -1;
		*colon = 0;
		sa->sin_family = AF_INET;
		sa->sin_port = htons((uint16_t)atoi(colon + 1));
		if (inet_pton(AF_INET, buf, &sa->sin_addr) != 1 || !sa->sin_port)
			return -1;
		c->nkafka++;
		at += n + (at[n] == ',');
	}
	return *at ? -1 : 0;
}

static int opt(const char *name, const char *val, void *arg)
{
	struct cfg *c = arg;

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
		return brokers_parse(&c->b, val);
	} else if (!strcmp(name, "--kafka")) {
		return kafka_parse(c, val);
	} else {
		return -1;
	}
	return 0;
}

/* ---- the writers ------------------------------------------------------ */

struct writer {
	struct gsock g;
	int fd;				/* --kafka: the connection, else -1 */
	uint8_t *req;
	size_t len;
	uint8_t *resp;
	size_t resp_cap;
	bool said;
};

/* ---- Kafka Produce v7 over TCP (--kafka) ------------------------------ */

static uint8_t *put16(uint8_t *p, int v)
{
	*p++ = (uint8_t)(v >> 8);
	*p++ = (uint8_t)v;
	return p;
}

static uint8_t *put32(uint8_t *p, int32_t v)
{
	uint32_t u = (uint32_t)v;

	*p++ = (uint8_t)(u >> 24);
	*p++ = (uint8_t)(u >> 16);
	*p++ = (uint8_t)(u >> 8);
	*p++ = (uint8_t)u;
	return p;
}

static uint8_t *putstr(uint8_t *p, const char *s)
{
	size_t n = strlen(s);

	p = put16(p, (int)n);
	memcpy(p, s, n);
	return p + n;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* the Produce v7 request of @batch to partition @part, size included */
static uint8_t *kafka_request(const struct cfg *c, int part,
			      const uint8_t *batch, size_t blen, size_t *len)
{
	uint8_t *req = malloc(blen + strlen(c->topic) + 64), *p;

	if (!req)
		return NULL;
	p = req + 4;
	p = put16(p, 0);			/* Produce */
	p = put16(p, 7);
	p = put32(p, 1);			/* correlation id */
	p = putstr(p, "krep_load");
	p = put16(p, -1);			/* no transactional id */
	p = put16(p, c->acks);
	p = put32(p, c->timeout_ms);
	p = put32(p, 1);			/* one topic */
	p = putstr(p, c->topic);
	p = put32(p, 1);			/* one partition */
	p = put32(p, part);
	p = put32(p, (int32_t)blen);
	memcpy(p, batch, blen);
	p += blen;
	*len = (size_t)(p - req);
	put32(req, (int32_t)(*len - 4));
	return req;
}

static int kafka_connect(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int io_all(int fd, uint8_t *buf, size_t len, bool out)
{
	while (len) {
		ssize_t n = out ? write(fd, buf, len) : read(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* one Produce and its response: 0, or -1 (said once) */
static int kafka_op(struct writer *w)
{
	uint8_t size[4], *p, *end;
	const char *why = "the connection failed";
	uint32_t n;
	int16_t err;

	if (io_all(w->fd, w->req, w->len, true) ||
	    io_all(w->fd, size, 4, false))
		goto fail;
	n = get32(size);
	if (n > w->resp_cap) {
		free(w->resp);
		w->resp = malloc(n);
		w->resp_cap = w->resp ? n : 0;
	}
	if (!w->resp || io_all(w->fd, w->resp, n, false))
		goto fail;
	/* correlation id, one topic (name), one partition: index, error */
	p = w->resp + 8;
	end = w->resp + n;
	why = "a malformed Produce response";
	if (p + 2 > end)
		goto fail;
	p += 2 + (p[0] << 8 | p[1]) + 4 + 4;
	if (p + 2 > end)
		goto fail;
	err = (int16_t)(p[0] << 8 | p[1]);
	if (!err)
		return 0;
	if (!w->said)
		fprintf(stderr, "%s: Produce error %d\n", bench_prog, err);
	w->said = true;
	return -1;
fail:
	if (!w->said)
		fprintf(stderr, "%s: %s\n", bench_prog, why);
	w->said = true;
	return -1;
}

static void *writer_init(int tid, void *arg)
{
	struct cfg *c = arg;
	int part = tid % c->partitions;
	int b = part % c->b.n;
	struct krep_batch_enc enc;
	struct krep_record r = { 0 };
	const uint8_t *batch;
	struct writer *w;
	struct nl_msg *msg;
	uint8_t *val;
	size_t blen;
	int i;

	if (setns(c->b.ns_fd[b], CLONE_NEWNET)) {
		fprintf(stderr, "%s: cannot enter namespace %s: %s\n",
			bench_prog, c->b.names[b], strerror(errno));
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	val = malloc(c->o.size);
	if (!w || !val)
		return NULL;
	w->fd = -1;
	if (c->nkafka) {
		if (b >= c->nkafka) {
			fprintf(stderr, "%s: no --kafka address for broker %d\n",
				bench_prog, b + 1);
			return NULL;
		}
		w->fd = kafka_connect(&c->kafka[b]);
		if (w->fd < 0) {
			fprintf(stderr, "%s: cannot connect to broker %d's Kafka listener: %s\n",
				bench_prog, b + 1, strerror(errno));
			return NULL;
		}
	} else if (gsock_open(&w->g)) {
		return NULL;
	}
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
	if (c->nkafka) {
		w->req = batch ? kafka_request(c, part, batch, blen, &w->len) :
				 NULL;
		krep_batch_enc_free(&enc);
		free(val);
		return w->req ? w : NULL;
	}
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
	if (w->fd >= 0)
		return kafka_op(w);
	err = transact(&w->g, w->req, w->len, &reply, !w->said);
	if (err)
		w->said = true;
	return err ? -1 : 0;
}

static void writer_fini(void *ctx)
{
	struct writer *w = ctx;

	if (w->fd >= 0)
		close(w->fd);
	else
		gsock_close(&w->g);
	free(w->req);
	free(w->resp);
	free(w);
}

/*
 * After the run: how long until every led partition's HW reaches its LEO,
 * i.e. the followers hold what was written (at acks=0/1 they trail the
 * producers; at acks=all this is ~0). Polls every 2 ms, at most
 * DRAIN_MAX_S; -1 when that ran out.
 */
#define DRAIN_MAX_S	30.0
static double drain_secs(struct cfg *c)
{
	uint64_t t0 = bench_now_ns();
	double t;
	int i, behind;

	for (;;) {
		behind = 0;
		for (i = 0; i < c->b.n; i++)
			isr_min(&c->b.gs[i], c->topic, &behind);
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
	static struct cfg c = { .partitions = 1, .acks = -1,
				.timeout_ms = 30000 };
	struct bench_result r;
	char extra[512];
	int n, rc;
	double drain;

	bench_prog = "krep_load";
	c.b.names[0] = "-";
	c.b.n = 1;
	bench_parse(argc, argv, &c.o, opt, &c, usage);
	if (!c.topic) {
		fprintf(stderr, "%s: --topic is required\n%s", bench_prog, usage);
		return 2;
	}
	if (brokers_open(&c.b))
		return 1;
	brokers_stats_begin(&c.b);

	rc = bench_run(&c.o, &ops, &c, &r);
	drain = drain_secs(&c);

	n = snprintf(extra, sizeof(extra),
		     "drain_secs=%.3f replicated_rec_per_s=%.1f acks=%d partitions=%d transport=%s ",
		     drain, drain < 0 || r.secs + drain <= 0 ? 0.0 :
		     (double)r.ok * c.o.batch / (r.secs + drain),
		     c.acks, c.partitions, c.nkafka ? "kafka" : "netlink");
	brokers_stats_end(&c.b, c.topic, extra + n, sizeof(extra) - n);
	bench_print(&c.o, &r, extra);
	return rc ? 1 : bench_status(&r);
}
