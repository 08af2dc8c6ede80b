// SPDX-License-Identifier: GPL-2.0
/*
 * kafka_load - the benchmark's load generator for krep through its Kafka
 * listener (kafka_listen): librdkafka, as an application would use it,
 * over TCP to the brokers' Kafka port. Three modes:
 *
 *   --mode batched (default): -t producers, each its own rd_kafka_t (its
 *	own connections) in its own thread, producing records of -s bytes
 *	to --partition with --acks (all), batch.size --batch-bytes (16384) and
 *	linger.ms --linger-ms (5), as fast as librdkafka takes them, but
 *	with at most --window payload bytes per producer not yet reported
 *	delivered (default 131072: 8 batches), so that a record's latency
 *	is its batch's commit and a bounded queue, not a run's backlog.
 *	Latency: the delivery report's time minus the time the record was
 *	handed to rd_kafka_producev(). Throughput: records reported
 *	delivered, from the start to the last report (after a flush).
 *
 *   --mode sync: -t producers, each with one record in flight: produce,
 *	wait for its delivery report, produce the next (linger.ms 0). The
 *	shape of the peers' clients (one record per request); the latency
 *	is the commit's round trip.
 *
 *   --mode consume: one consumer of --partition, without a group
 *	(librdkafka's simple consumer, rd_kafka_consume_start(), as kcat -C:
 *	krep has no group coordinator yet), reads from an offset to the
 *	end known at its start (the high watermark, from ListOffsets): the
 *	last --from-end N records, or from the log start; at most -n
 *	records and -d seconds, with librdkafka's default fetch settings.
 *	Records/s and MB/s from the start to the last record.
 *
 * Before the timed run every producer sends one record and waits for it
 * (connections and metadata are set up outside the timing).
 *
 * With --acks 1 (and --brokers) it then waits, as krep_load does, until
 * the partition's HW reaches its LEO (the followers have every record)
 * and prints that time (drain_secs=) and the rate counting it
 * (replicated_rec_per_s=).
 *
 * With --brokers (network namespaces of the brokers in broker id order,
 * '-' for this process's own) it reads every broker's KREP_A_STATS
 * (BROKER_GET) before and after the run, as krep_load does, and prints
 * the deltas summed over the brokers: payload bytes copied (produce into
 * logs, replication, every socket read, Kafka requests included) and log
 * bytes sent by reference (zc_bytes: to followers and to consumers).
 *
 * Prints one RESULT line (common.h) plus mode= and the stats keys.
 * Exit status: 0, 3 when some records failed, 1 when nothing worked, 2
 * on a usage error.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "common.h"
#include "krep_nl.h"

#define CONF_MAX	32

static const char usage[] =
"Usage: kafka_load --bootstrap HOST:PORT --topic T [--partition P]\n"
"                  [--mode batched|sync|consume] [--acks all|1]\n"
"                  [--linger-ms MS]\n"
"                  [--batch-bytes B] [--window BYTES] [--from-end N]\n"
"                  [--brokers NS1,NS2,...] [-X KEY=VALUE]...\n"
"                  [-t PRODUCERS] [-s SIZE] [-n COUNT] [-d SECONDS]\n"
"                  [-l LATFILE]\n"
"  -n          records in all (batched, sync, consume), at most\n"
"  -X          a librdkafka configuration property (after the defaults)\n"
"  --brokers   network namespaces of the brokers in broker id order, for\n"
"              their stats ('-' for this process's own)\n";

enum mode { BATCHED, SYNC, CONSUME };

struct cfg {
	const char *bootstrap;
	const char *topic;
	int partition;
	enum mode mode;
	bool acks1;
	int linger_ms;
	int batch_bytes;
	long window;
	long from_end;
	int nconf;
	const char *conf[CONF_MAX];	/* "key=value" */
	struct brokers b;
	bool have_brokers;
	struct bench_opts o;
};

static long lnum(const char *val, long min, long max, int *bad)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(val, &end, 0);
	if (errno || end == val || *end || v < min || v > max)
		*bad = 1;
	return v;
}

static int opt(const char *name, const char *val, void *arg)
{
	struct cfg *c = arg;
	int bad = 0;

	if (!strcmp(name, "--bootstrap")) {
		c->bootstrap = val;
	} else if (!strcmp(name, "--topic")) {
		c->topic = val;
	} else if (!strcmp(name, "--partition")) {
		c->partition = lnum(val, 0, 1 << 20, &bad);
	} else if (!strcmp(name, "--mode")) {
		if (!strcmp(val, "batched"))
			c->mode = BATCHED;
		else if (!strcmp(val, "sync"))
			c->mode = SYNC;
		else if (!strcmp(val, "consume"))
			c->mode = CONSUME;
		else
			return -1;
	} else if (!strcmp(name, "--acks")) {
		if (strcmp(val, "all") && strcmp(val, "1"))
			return -1;
		c->acks1 = !strcmp(val, "1");
	} else if (!strcmp(name, "--linger-ms")) {
		c->linger_ms = lnum(val, 0, 10000, &bad);
	} else if (!strcmp(name, "--batch-bytes")) {
		c->batch_bytes = lnum(val, 1, 1 << 30, &bad);
	} else if (!strcmp(name, "--window")) {
		c->window = lnum(val, 1, 1l << 32, &bad);
	} else if (!strcmp(name, "--from-end")) {
		c->from_end = lnum(val, 0, 1l << 40, &bad);
	} else if (!strcmp(name, "-X")) {
		if (c->nconf == CONF_MAX || !strchr(val, '='))
			return -1;
		c->conf[c->nconf++] = val;
	} else if (!strcmp(name, "--brokers")) {
		c->have_brokers = true;
		return brokers_parse(&c->b, val);
	} else {
		return -1;
	}
	return bad ? -1 : 0;
}

static struct cfg c = {
	.mode = BATCHED, .linger_ms = 5, .batch_bytes = 16384,
	.window = 131072,
};

/* one property; exits on a bad one (a usage error, not a measurement) */
static void set(rd_kafka_conf_t *conf, const char *key, const char *val)
{
	char err[256];

	if (rd_kafka_conf_set(conf, key, val, err, sizeof(err)) !=
	    RD_KAFKA_CONF_OK) {
		fprintf(stderr, "%s: %s=%s: %s\n", bench_prog, key, val, err);
		exit(2);
	}
}

/* the -X properties, last */
static void conf_user(rd_kafka_conf_t *conf)
{
	char key[128];
	const char *eq;
	int i;

	for (i = 0; i < c.nconf; i++) {
		eq = strchr(c.conf[i], '=');
		snprintf(key, sizeof(key), "%.*s", (int)(eq - c.conf[i]),
			 c.conf[i]);
		set(conf, key, eq + 1);
	}
}

static rd_kafka_conf_t *conf_new(void)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();

	set(conf, "bootstrap.servers", c.bootstrap);
	set(conf, "client.id", "kafka_load");
	/* as Kafka's Java client: TCP_NODELAY (librdkafka's default is off) */
	set(conf, "socket.nagle.disable", "true");
	set(conf, "broker.address.family", "v4");
	set(conf, "log.connection.close", "false");
	return conf;
}

/*
 * After an acks=1 run: how long until the partition's HW reaches its LEO
 * on every broker that leads it (polled every 2 ms, at most 30 s; -1 when
 * that ran out), as in krep_load.
 */
static double drain_secs(void)
{
	uint64_t t0 = bench_now_ns();
	int i, behind;
	double t;

	for (;;) {
		behind = 0;
		for (i = 0; i < c.b.n; i++)
			isr_min(&c.b.gs[i], c.topic, &behind);
		t = (bench_now_ns() - t0) / 1e9;
		if (!behind)
			return t;
		if (t > 30.0)
			return -1;
		usleep(2000);
	}
}

/* ---- producers --------------------------------------------------------- */

struct prod {
	int tid;
	rd_kafka_t *rk;
	rd_kafka_topic_t *rkt;
	uint8_t *val;
	long out;		/* payload bytes not yet reported */
	uint64_t delivered, errors;
	bool done;		/* sync: the record's report came */
	bool said;
	uint32_t *lat;
	size_t n, cap;
};

static void lat_add(struct prod *p, uint64_t ns)
{
	uint32_t *v;

	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 65536;
		v = realloc(p->lat, p->cap * sizeof(*v));
		if (!v) {
			p->cap = p->n;
			return;
		}
		p->lat = v;
	}
	p->lat[p->n++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

/* delivery report, in the producer's own thread (rd_kafka_poll) */
static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	struct prod *p = opaque;
	uint64_t sent = (uint64_t)(uintptr_t)m->_private;

	(void)rk;
	p->out -= m->len;
	p->done = true;
	if (m->err) {
		p->errors++;
		if (!p->said)
			fprintf(stderr, "%s: producer %d: delivery failed: %s\n",
				bench_prog, p->tid, rd_kafka_err2str(m->err));
		p->said = true;
		return;
	}
	p->delivered++;
	if (sent)
		lat_add(p, bench_now_ns() - sent);
}

static void log_cb(const rd_kafka_t *rk, int level, const char *fac,
		   const char *buf)
{
	(void)rk;
	if (level <= 4)
		fprintf(stderr, "%s: librdkafka: %s: %s\n", bench_prog, fac, buf);
}

/* one record; @stamp: measure its latency */
static rd_kafka_resp_err_t send1(struct prod *p, bool stamp)
{
	rd_kafka_resp_err_t err;

	err = rd_kafka_producev(p->rk, RD_KAFKA_V_RKT(p->rkt),
				RD_KAFKA_V_PARTITION(c.partition),
				RD_KAFKA_V_VALUE(p->val, (size_t)c.o.size),
				RD_KAFKA_V_MSGFLAGS(0),
				RD_KAFKA_V_OPAQUE((void *)(uintptr_t)
						  (stamp ? bench_now_ns() : 0)),
				RD_KAFKA_V_END);
	if (!err)
		p->out += c.o.size;
	return err;
}

/* wait for the reports of everything sent, at most 30 s */
static int wait_done(struct prod *p)
{
	uint64_t end = bench_now_ns() + 30000000000ull;

	while (p->out > 0 && bench_now_ns() < end)
		rd_kafka_poll(p->rk, 100);
	return p->out > 0 ? -1 : 0;
}

static struct prod *prod_new(int tid, bool sync)
{
	struct prod *p = calloc(1, sizeof(*p));
	rd_kafka_conf_t *conf;
	char err[256], v[32];
	rd_kafka_resp_err_t e;

	if (!p)
		return NULL;
	p->tid = tid;
	p->val = malloc(c.o.size);
	if (!p->val)
		return NULL;
	bench_fill(p->val, c.o.size, tid * 1000003ull + 7);
	conf = conf_new();
	set(conf, "acks", c.acks1 ? "1" : "all");
	snprintf(v, sizeof(v), "%d", sync ? 0 : c.linger_ms);
	set(conf, "linger.ms", v);
	snprintf(v, sizeof(v), "%d", c.batch_bytes);
	set(conf, "batch.size", v);
	set(conf, "message.timeout.ms", "30000");
	conf_user(conf);
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	rd_kafka_conf_set_log_cb(conf, log_cb);
	rd_kafka_conf_set_opaque(conf, p);
	p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!p->rk) {
		fprintf(stderr, "%s: rd_kafka_new: %s\n", bench_prog, err);
		return NULL;
	}
	p->rkt = rd_kafka_topic_new(p->rk, c.topic, NULL);
	/* connections and metadata before the timing: one record */
	e = send1(p, false);
	if (e || wait_done(p) || p->errors) {
		fprintf(stderr, "%s: producer %d: the first record was not delivered%s%s\n",
			bench_prog, tid, e ? ": " : "",
			e ? rd_kafka_err2str(e) : "");
		return NULL;
	}
	p->delivered = 0;
	return p;
}

static void prod_free(struct prod *p)
{
	if (!p)
		return;
	if (p->rkt)
		rd_kafka_topic_destroy(p->rkt);
	if (p->rk) {
		rd_kafka_flush(p->rk, 5000);
		rd_kafka_destroy(p->rk);
	}
	free(p->val);
	free(p->lat);
	free(p);
}

/* sync: bench_run's writer threads, one record in flight each */
static void *sync_init(int tid, void *arg)
{
	(void)arg;
	return prod_new(tid, true);
}

static int sync_op(void *ctx, uint64_t seq)
{
	struct prod *p = ctx;
	rd_kafka_resp_err_t err;
	uint64_t e0 = p->errors;

	(void)seq;
	p->done = false;
	err = send1(p, false);
	if (err) {
		if (!p->said)
			fprintf(stderr, "%s: produce: %s\n", bench_prog,
				rd_kafka_err2str(err));
		p->said = true;
		return -1;
	}
	while (!p->done)
		rd_kafka_poll(p->rk, 1000);
	return p->errors != e0 ? -1 : 0;
}

static void sync_fini(void *ctx)
{
	prod_free(ctx);
}

/* batched: own threads, as many records as the window lets out */
static struct {
	pthread_barrier_t ready, go;
	atomic_long issued;
	uint64_t deadline;
} run;

static void *batched_main(void *arg)
{
	struct prod *p = prod_new(*(int *)arg, false);
	rd_kafka_resp_err_t err;
	long k = 0;

	pthread_barrier_wait(&run.ready);
	pthread_barrier_wait(&run.go);
	if (!p)
		return NULL;
	for (;;) {
		if (bench_now_ns() >= run.deadline)
			break;
		if (p->out + c.o.size > c.window) {
			rd_kafka_poll(p->rk, 5);
			continue;
		}
		if (atomic_fetch_add(&run.issued, 1) >= c.o.count)
			break;
		err = send1(p, true);
		if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
			atomic_fetch_sub(&run.issued, 1);
			rd_kafka_poll(p->rk, 5);
			continue;
		}
		if (err) {
			fprintf(stderr, "%s: produce: %s\n", bench_prog,
				rd_kafka_err2str(err));
			p->errors++;
			break;
		}
		if (!(++k & 63))
			rd_kafka_poll(p->rk, 0);
	}
	if (wait_done(p))
		fprintf(stderr, "%s: producer %d: %ld bytes not reported after 30 s\n",
			bench_prog, p->tid, p->out);
	return p;
}

/* the brokers' stats, after the followers caught up at acks=1 */
static void stats_end(const struct bench_result *r, char *buf, size_t size)
{
	double d;
	int n = 0;

	if (c.acks1) {
		d = drain_secs();
		n = snprintf(buf, size,
			     "drain_secs=%.3f replicated_rec_per_s=%.1f ", d,
			     d < 0 || r->secs + d <= 0 ? 0.0 :
			     (double)r->ok / (r->secs + d));
	}
	brokers_stats_end(&c.b, c.topic, buf + n, size - n);
}

static int run_batched(struct bench_result *r, char *extra, size_t size)
{
	int n = c.o.threads, i, ret = 0;
	struct prod **ps = calloc(n, sizeof(*ps));
	pthread_t *th = calloc(n, sizeof(*th));
	int *ids = calloc(n, sizeof(*ids));
	uint64_t start, vm0, cl0;
	uint32_t *all;
	size_t nall = 0, k;
	void *res;

	if (!ps || !th || !ids)
		return -1;
	pthread_barrier_init(&run.ready, NULL, n + 1);
	pthread_barrier_init(&run.go, NULL, n + 1);
	for (i = 0; i < n; i++) {
		ids[i] = i;
		if (pthread_create(&th[i], NULL, batched_main, &ids[i]))
			return -1;
	}
	pthread_barrier_wait(&run.ready);
	if (c.have_brokers)
		brokers_stats_begin(&c.b);
	vm0 = bench_vm_cpu_us();
	cl0 = bench_self_cpu_us();
	start = bench_now_ns();
	run.deadline = start + (uint64_t)(c.o.seconds * 1e9);
	pthread_barrier_wait(&run.go);
	for (i = 0; i < n; i++) {
		pthread_join(th[i], &res);
		ps[i] = res;
		if (!ps[i])
			ret = -1;
	}
	r->secs = (bench_now_ns() - start) / 1e9;
	r->vm_cpu_us = bench_vm_cpu_us() - vm0;
	r->client_cpu_us = bench_self_cpu_us() - cl0;
	for (i = 0; i < n; i++) {
		if (!ps[i])
			continue;
		r->ok += ps[i]->delivered;
		r->errors += ps[i]->errors;
		nall += ps[i]->n;
	}
	all = malloc((nall + 1) * sizeof(*all));
	nall = 0;
	for (i = 0; all && i < n; i++)
		for (k = 0; ps[i] && k < ps[i]->n; k++)
			all[nall++] = ps[i]->lat[k];
	if (all)
		bench_latencies(&c.o, all, nall, r);
	free(all);
	if (c.have_brokers)
		stats_end(r, extra, size);
	for (i = 0; i < n; i++)
		prod_free(ps[i]);
	free(ps);
	free(th);
	free(ids);
	return ret ? ret : r->ok ? 0 : -1;
}

/* ---- the consumer ------------------------------------------------------ */

static int run_consume(struct bench_result *r, char *extra, size_t size)
{
	rd_kafka_conf_t *conf = conf_new();
	rd_kafka_message_t *ms[1024];
	rd_kafka_topic_t *rkt;
	rd_kafka_resp_err_t e;
	int64_t lo, hi, from, end, next, gaps = 0, wrong = 0;
	uint64_t start, deadline, vm0, cl0, bytes = 0;
	char err[256];
	rd_kafka_t *rk;
	bool eof = false;
	ssize_t got, i;
	int n;

	set(conf, "enable.partition.eof", "true");
	conf_user(conf);
	rd_kafka_conf_set_log_cb(conf, log_cb);
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (!rk) {
		fprintf(stderr, "%s: rd_kafka_new: %s\n", bench_prog, err);
		return -1;
	}
	rkt = rd_kafka_topic_new(rk, c.topic, NULL);
	e = rd_kafka_query_watermark_offsets(rk, c.topic, c.partition, &lo,
					     &hi, 10000);
	if (e) {
		fprintf(stderr, "%s: ListOffsets: %s\n", bench_prog,
			rd_kafka_err2str(e));
		goto fail;
	}
	from = c.from_end && hi - c.from_end > lo ? hi - c.from_end : lo;
	end = hi - from > c.o.count ? from + c.o.count : hi;
	if (c.have_brokers)
		brokers_stats_begin(&c.b);
	vm0 = bench_vm_cpu_us();
	cl0 = bench_self_cpu_us();
	start = bench_now_ns();
	deadline = start + (uint64_t)(c.o.seconds * 1e9);
	if (rd_kafka_consume_start(rkt, c.partition, from)) {
		fprintf(stderr, "%s: consume_start: %s\n", bench_prog,
			rd_kafka_err2str(rd_kafka_last_error()));
		goto fail;
	}
	next = from;
	while (next < end && bench_now_ns() < deadline) {
		got = rd_kafka_consume_batch(rkt, c.partition, 100, ms,
					     sizeof(ms) / sizeof(ms[0]));
		for (i = 0; i < got; i++) {
			rd_kafka_message_t *m = ms[i];

			if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
				eof = true;
			} else if (m->err) {
				if (!r->errors++)
					fprintf(stderr, "%s: consume: %s\n",
						bench_prog,
						rd_kafka_message_errstr(m));
			} else if (m->offset < end) {
				if (m->offset != next)
					gaps++;
				if ((int)m->len != c.o.size)
					wrong++;
				next = m->offset + 1;
				r->ok++;
				bytes += m->len;
			}
			rd_kafka_message_destroy(m);
		}
		if (eof && next >= end)
			break;
	}
	r->secs = (bench_now_ns() - start) / 1e9;
	r->vm_cpu_us = bench_vm_cpu_us() - vm0;
	r->client_cpu_us = bench_self_cpu_us() - cl0;
	n = snprintf(extra, size,
		     "from=%" PRId64 " end=%" PRId64 " value_bytes=%" PRIu64
		     " gaps=%" PRId64 " other_size=%" PRId64 " ",
		     from, end, bytes, gaps, wrong);
	if (c.have_brokers)
		brokers_stats_end(&c.b, c.topic, extra + n, size - n);
	rd_kafka_consume_stop(rkt, c.partition);
	rd_kafka_topic_destroy(rkt);
	rd_kafka_destroy(rk);
	if (next < end) {
		fprintf(stderr, "%s: read to offset %" PRId64 " of %" PRId64
			" in %.1f s\n", bench_prog, next, end, c.o.seconds);
		r->errors++;
	}
	return r->ok ? 0 : -1;
fail:
	rd_kafka_topic_destroy(rkt);
	rd_kafka_destroy(rk);
	return -1;
}

int main(int argc, char **argv)
{
	static const struct bench_ops ops = {
		.thread_init = sync_init,
		.op = sync_op,
		.thread_fini = sync_fini,
	};
	static const char *const names[] = { "batched", "sync", "consume" };
	struct bench_result r = { 0 };
	char extra[1024], stats[512] = "";
	int rc;

	bench_prog = "kafka_load";
	bench_parse(argc, argv, &c.o, opt, &c, usage);
	if (!c.bootstrap || !c.topic) {
		fprintf(stderr, "%s: --bootstrap and --topic are required\n%s",
			bench_prog, usage);
		return 2;
	}
	if (c.have_brokers && brokers_open(&c.b))
		return 1;
	switch (c.mode) {
	case SYNC:
		if (c.have_brokers)
			brokers_stats_begin(&c.b);
		rc = bench_run(&c.o, &ops, NULL, &r);
		if (c.have_brokers)
			stats_end(&r, stats, sizeof(stats));
		break;
	case BATCHED:
		rc = run_batched(&r, stats, sizeof(stats));
		break;
	default:
		c.o.threads = 1;
		rc = run_consume(&r, stats, sizeof(stats));
		break;
	}
	snprintf(extra, sizeof(extra),
		 "mode=%s acks=%d partition=%d linger_ms=%d batch_bytes=%d window=%ld%s%s",
		 names[c.mode], c.acks1 ? 1 : -1, c.partition,
		 c.mode == SYNC ? 0 : c.linger_ms, c.batch_bytes,
		 c.mode == BATCHED ? c.window : 0, *stats ? " " : "", stats);
	c.o.batch = 1;
	bench_print(&c.o, &r, extra);
	return rc ? 1 : bench_status(&r);
}
