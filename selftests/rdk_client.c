// SPDX-License-Identifier: GPL-2.0
/*
 * rdk_client - a librdkafka client of krep's Kafka port, for
 * selftests/kafka_failover.sh.
 *
 *   rdk_client produce BOOTSTRAP TOPIC N RATE ACKED
 *	An idempotent producer (enable.idempotence=true, acks=all) of N
 *	keyed records, RATE a second: record i has key "key-<i mod 60>"
 *	(librdkafka's partitioner spreads the keys over the partitions)
 *	and value "value-<i>". Every delivery report that says delivered
 *	adds "PARTITION OFFSET KEY VALUE" to ACKED (written as it comes);
 *	a failed one is counted. Prints "produced N acked A failed F" and
 *	exits 0 when every record was acknowledged, 1 otherwise.
 *
 *   rdk_client consume BOOTSTRAP TOPIC OUT
 *	A consumer with every partition of TOPIC assigned (no group:
 *	krep has no group coordinator), each read from its log start to
 *	the high watermark ListOffsets gave at the start. Writes
 *	"PARTITION OFFSET KEY VALUE" per record to OUT, prints "consumed
 *	N from P partitions" and exits 0 when every partition was read to
 *	its end within 60 s, 1 otherwise.
 *
 * librdkafka comes from Debian's librdkafka-dev (scripts/deps.sh).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#define NKEYS		60
#define MAX_PARTS	64

static const char *prog = "rdk_client";

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void log_cb(const rd_kafka_t *rk, int level, const char *fac,
		   const char *buf)
{
	(void)rk;
	if (level <= 4)
		fprintf(stderr, "%s: librdkafka: %s: %s\n", prog, fac, buf);
}

static rd_kafka_conf_t *conf_new(const char *bootstrap)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char err[256];

	if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err,
			      sizeof(err)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "%s: %s\n", prog, err);
		exit(2);
	}
	rd_kafka_conf_set_log_cb(conf, log_cb);
	return conf;
}

static void set(rd_kafka_conf_t *conf, const char *key, const char *val)
{
	char err[256];

	if (rd_kafka_conf_set(conf, key, val, err, sizeof(err)) !=
	    RD_KAFKA_CONF_OK) {
		fprintf(stderr, "%s: %s=%s: %s\n", prog, key, val, err);
		exit(2);
	}
}

/* ---- produce ------------------------------------------------------------ */

struct prod {
	FILE *acked;
	long nacked, nfailed;
};

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	struct prod *p = opaque;

	(void)rk;
	if (m->err) {
		if (!p->nfailed++)
			fprintf(stderr, "%s: not delivered: %s\n", prog,
				rd_kafka_err2str(m->err));
		return;
	}
	fprintf(p->acked, "%" PRId32 " %" PRId64 " %.*s %.*s\n",
		m->partition, m->offset, (int)m->key_len, (const char *)m->key,
		(int)m->len, (const char *)m->payload);
	fflush(p->acked);
	p->nacked++;
}

static int produce(const char *bootstrap, const char *topic, long n,
		   long rate, const char *path)
{
	rd_kafka_conf_t *conf = conf_new(bootstrap);
	struct prod p = { 0 };
	char err[256], key[32], val[32];
	uint64_t start;
	rd_kafka_t *rk;
	long i;

	p.acked = fopen(path, "w");
	if (!p.acked) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return 1;
	}
	set(conf, "enable.idempotence", "true");
	set(conf, "acks", "all");
	set(conf, "linger.ms", "5");
	/* long enough to outlast a leader's failover */
	set(conf, "message.timeout.ms", "120000");
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	rd_kafka_conf_set_opaque(conf, &p);
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!rk) {
		fprintf(stderr, "%s: rd_kafka_new: %s\n", prog, err);
		return 1;
	}
	start = now_ms();
	for (i = 0; i < n; i++) {
		rd_kafka_resp_err_t e;

		snprintf(key, sizeof(key), "key-%ld", i % NKEYS);
		snprintf(val, sizeof(val), "value-%ld", i);
		/* RATE a second: wait for record i's time, serving reports */
		while (now_ms() < start + (uint64_t)(i * 1000 / rate))
			rd_kafka_poll(rk, 1);
		do {
			e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
					      RD_KAFKA_V_KEY(key, strlen(key)),
					      RD_KAFKA_V_VALUE(val, strlen(val)),
					      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
					      RD_KAFKA_V_END);
			if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
				rd_kafka_poll(rk, 10);
		} while (e == RD_KAFKA_RESP_ERR__QUEUE_FULL);
		if (e) {
			fprintf(stderr, "%s: produce: %s\n", prog,
				rd_kafka_err2str(e));
			p.nfailed++;
		}
		rd_kafka_poll(rk, 0);
	}
	rd_kafka_flush(rk, 150000);
	printf("produced %ld acked %ld failed %ld\n", n, p.nacked, p.nfailed);
	rd_kafka_destroy(rk);
	fclose(p.acked);
	return p.nacked == n && !p.nfailed ? 0 : 1;
}

/* ---- consume ------------------------------------------------------------ */

static int consume(const char *bootstrap, const char *topic, const char *path)
{
	rd_kafka_conf_t *conf = conf_new(bootstrap);
	int64_t lo[MAX_PARTS], hi[MAX_PARTS], next[MAX_PARTS];
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_message_t *ms[256];
	int nparts = 0, left = 0, part, rc = 1;
	rd_kafka_topic_t *rkt = NULL;
	rd_kafka_queue_t *q = NULL;
	long total = 0;
	rd_kafka_resp_err_t e;
	uint64_t deadline;
	char err[256];
	rd_kafka_t *rk;
	ssize_t got, i;
	FILE *out;

	out = fopen(path, "w");
	if (!out) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return 1;
	}
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (!rk) {
		fprintf(stderr, "%s: rd_kafka_new: %s\n", prog, err);
		return 1;
	}
	rkt = rd_kafka_topic_new(rk, topic, NULL);
	e = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
	if (e || md->topic_cnt != 1 || md->topics[0].err) {
		fprintf(stderr, "%s: Metadata of %s: %s\n", prog, topic,
			rd_kafka_err2str(e ? e : md->topic_cnt ?
					 md->topics[0].err :
					 RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC));
		goto out;
	}
	nparts = md->topics[0].partition_cnt;
	if (nparts > MAX_PARTS) {
		fprintf(stderr, "%s: %d partitions, at most %d\n", prog,
			nparts, MAX_PARTS);
		goto out;
	}
	q = rd_kafka_queue_new(rk);
	for (part = 0; part < nparts; part++) {
		e = rd_kafka_query_watermark_offsets(rk, topic, part,
						     &lo[part], &hi[part],
						     10000);
		if (e) {
			fprintf(stderr, "%s: ListOffsets of %s-%d: %s\n", prog,
				topic, part, rd_kafka_err2str(e));
			goto out;
		}
		next[part] = lo[part];
		if (lo[part] < hi[part]) {
			left++;
			if (rd_kafka_consume_start_queue(rkt, part, lo[part],
							 q)) {
				fprintf(stderr, "%s: consume_start: %s\n", prog,
					rd_kafka_err2str(rd_kafka_last_error()));
				goto out;
			}
		}
	}
	deadline = now_ms() + 60000;
	while (left && now_ms() < deadline) {
		got = rd_kafka_consume_batch_queue(q, 100, ms,
						   sizeof(ms) / sizeof(ms[0]));
		for (i = 0; i < got; i++) {
			rd_kafka_message_t *m = ms[i];

			part = m->partition;
			if (!m->err && part >= 0 && part < nparts &&
			    m->offset >= next[part] && m->offset < hi[part]) {
				fprintf(out, "%d %" PRId64 " %.*s %.*s\n", part,
					m->offset, (int)m->key_len,
					(const char *)m->key, (int)m->len,
					(const char *)m->payload);
				total++;
				next[part] = m->offset + 1;
				if (next[part] == hi[part])
					left--;
			} else if (m->err &&
				   m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
				fprintf(stderr, "%s: consume: %s\n", prog,
					rd_kafka_message_errstr(m));
			}
			rd_kafka_message_destroy(m);
		}
	}
	for (part = 0; part < nparts; part++) {
		if (lo[part] < hi[part])
			rd_kafka_consume_stop(rkt, part);
		if (next[part] < hi[part])
			fprintf(stderr, "%s: %s-%d read to %" PRId64 " of %" PRId64 "\n",
				prog, topic, part, next[part], hi[part]);
	}
	printf("consumed %ld from %d partitions\n", total, nparts);
	rc = left ? 1 : 0;
out:
	fclose(out);
	if (q)
		rd_kafka_queue_destroy(q);
	if (md)
		rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	rd_kafka_destroy(rk);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 7 && !strcmp(argv[1], "produce") && atol(argv[4]) > 0 &&
	    atol(argv[5]) > 0)
		return produce(argv[2], argv[3], atol(argv[4]), atol(argv[5]),
			       argv[6]);
	if (argc == 5 && !strcmp(argv[1], "consume"))
		return consume(argv[2], argv[3], argv[4]);
	fprintf(stderr,
		"usage: %s produce BOOTSTRAP TOPIC N RATE ACKED\n"
		"       %s consume BOOTSTRAP TOPIC OUT\n", prog, prog);
	return 2;
}
