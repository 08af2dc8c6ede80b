// SPDX-License-Identifier: GPL-2.0
/*
 * redis_wait - the benchmark's Redis client (hiredis): N threads, each with
 * its own connection to the primary, each sending --batch SETs of --size
 * byte values followed by WAIT R TIMEOUT in one pipeline and reading the
 * replies: a request is committed when WAIT answers that R replicas have
 * acknowledged it (with two replicas and WAIT 2: on every replica).
 * --replicas 0 leaves WAIT out (the primary's acknowledgement only).
 *
 * Keys cycle over 1024 per thread so that memory stays bounded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "common.h"

static const char usage[] =
"Usage: redis_wait --host ADDR [--port P] [--replicas R] [--wait-ms MS]\n"
"                  [-t THREADS] [-s SIZE] [-b BATCH] [-n COUNT] [-d SECONDS]\n"
"                  [-l LATFILE]\n";

struct cfg {
	const char *host;
	int port, replicas, wait_ms;
	struct bench_opts o;
};

static int opt(const char *name, const char *val, void *arg)
{
	struct cfg *c = arg;

	if (!strcmp(name, "--host"))
		c->host = val;
	else if (!strcmp(name, "--port"))
		c->port = atoi(val);
	else if (!strcmp(name, "--replicas"))
		c->replicas = atoi(val);
	else if (!strcmp(name, "--wait-ms"))
		c->wait_ms = atoi(val);
	else
		return -1;
	return 0;
}

struct conn {
	struct cfg *c;
	redisContext *rc;
	int tid;
	char *val;
	bool said;
};

static void *conn_init(int tid, void *arg)
{
	struct cfg *c = arg;
	struct timeval tv = { 5, 0 };
	struct conn *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->c = c;
	k->tid = tid;
	k->val = malloc(c->o.size);
	k->rc = redisConnectWithTimeout(c->host, c->port, tv);
	if (!k->val || !k->rc || k->rc->err) {
		fprintf(stderr, "%s: cannot connect to %s:%d: %s\n", bench_prog,
			c->host, c->port, k->rc ? k->rc->errstr : "no memory");
		return NULL;
	}
	bench_fill((uint8_t *)k->val, c->o.size, tid);
	return k;
}

static int conn_op(void *ctx, uint64_t seq)
{
	struct conn *k = ctx;
	struct cfg *c = k->c;
	redisReply *rep;
	char key[48];
	int i, err = 0;

	for (i = 0; i < c->o.batch; i++) {
		snprintf(key, sizeof(key), "b:%d:%d", k->tid,
			 (int)((seq * c->o.batch + i) % 1024));
		redisAppendCommand(k->rc, "SET %s %b", key, k->val,
				   (size_t)c->o.size);
	}
	if (c->replicas)
		redisAppendCommand(k->rc, "WAIT %d %d", c->replicas,
				   c->wait_ms);
	for (i = 0; i < c->o.batch + !!c->replicas; i++) {
		if (redisGetReply(k->rc, (void **)&rep) != REDIS_OK) {
			if (!k->said)
				fprintf(stderr, "%s: %s\n", bench_prog,
					k->rc->errstr);
			k->said = true;
			return -1;
		}
		if (rep->type == REDIS_REPLY_ERROR) {
			if (!k->said)
				fprintf(stderr, "%s: %s\n", bench_prog,
					rep->str);
			k->said = true;
			err = -1;
		} else if (i == c->o.batch &&
			   (rep->type != REDIS_REPLY_INTEGER ||
			    rep->integer < c->replicas)) {
			if (!k->said)
				fprintf(stderr, "%s: WAIT %d: only %lld replicas acknowledged\n",
					bench_prog, c->replicas,
					(long long)rep->integer);
			k->said = true;
			err = -1;
		}
		freeReplyObject(rep);
	}
	return err;
}

static void conn_fini(void *ctx)
{
	struct conn *k = ctx;

	redisFree(k->rc);
	free(k->val);
	free(k);
}

int main(int argc, char **argv)
{
	static const struct bench_ops ops = {
		.thread_init = conn_init,
		.op = conn_op,
		.thread_fini = conn_fini,
	};
	struct cfg c = { .port = 6379, .replicas = 2, .wait_ms = 5000 };
	struct bench_result r;
	char extra[64];
	int rc;

	bench_prog = "redis_wait";
	bench_parse(argc, argv, &c.o, opt, &c, usage);
	if (!c.host) {
		fprintf(stderr, "%s: --host is required\n%s", bench_prog, usage);
		return 2;
	}
	rc = bench_run(&c.o, &ops, &c, &r);
	snprintf(extra, sizeof(extra), "wait_replicas=%d", c.replicas);
	bench_print(&c.o, &r, extra);
	return rc ? 1 : bench_status(&r);
}
