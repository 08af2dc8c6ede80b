// SPDX-License-Identifier: GPL-2.0
/*
 * nats_pub - the benchmark's NATS JetStream client (libnats): N threads,
 * each with its own connection, each publishing one --size byte message to
 * the stream and waiting for its PubAck. The stream leader sends the
 * PubAck once a majority of the stream's replicas (2 of 3) have the
 * message: a majority commit, not an all-replica one.
 *
 *   nats_pub --url URL --setup [--leader NAME] [--max-bytes B]
 *	creates the stream (file storage, 3 replicas; retried until the
 *	JetStream cluster is ready, at most 90 s) and steps its leader down
 *	until it is NAME (the server the clients talk to), at most 20 times
 *   nats_pub --url URL [-t THREADS] [-s SIZE] [-n COUNT] [-d SECONDS]
 *	     [-l LATFILE]
 *	the load
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nats/nats.h>

#include "common.h"

#define STREAM		"BENCH"

static const char usage[] =
"Usage: nats_pub --url URL --setup [--leader NAME] [--max-bytes B]\n"
"       nats_pub --url URL [-t THREADS] [-s SIZE] [-n COUNT] [-d SECONDS]\n"
"                [-l LATFILE]\n";

struct cfg {
	const char *url;
	bool setup;
	const char *leader;
	long long max_bytes;
	struct bench_opts o;
};

static int opt(const char *name, const char *val, void *arg)
{
	struct cfg *c = arg;

	if (!strcmp(name, "--url"))
		c->url = val;
	else if (!strcmp(name, "--leader"))
		c->leader = val;
	else if (!strcmp(name, "--max-bytes"))
		c->max_bytes = atoll(val);
	else
		return -1;
	return 0;
}

static natsStatus connect_js(const char *url, natsConnection **nc, jsCtx **js)
{
	jsOptions jo;
	natsStatus s;

	s = natsConnection_ConnectTo(nc, url);
	if (s != NATS_OK)
		return s;
	jsOptions_Init(&jo);
	jo.Wait = 10000;
	return natsConnection_JetStream(js, *nc, &jo);
}

/* The stream's leader and whether both other replicas are current. */
static int stream_state(jsCtx *js, char *leader, size_t size, bool *current)
{
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	int i;

	if (js_GetStreamInfo(&si, js, STREAM, NULL, &jerr) != NATS_OK || !si)
		return -1;
	*leader = 0;
	*current = false;
	if (si->Cluster && si->Cluster->Leader) {
		snprintf(leader, size, "%s", si->Cluster->Leader);
		*current = si->Cluster->ReplicasLen == 2;
		for (i = 0; i < si->Cluster->ReplicasLen; i++)
			*current &= si->Cluster->Replicas[i]->Current;
	}
	jsStreamInfo_Destroy(si);
	return 0;
}

static int setup(struct cfg *c)
{
	const char *subjects[] = { "bench.>" };
	natsConnection *nc = NULL;
	jsStreamInfo *si = NULL;
	jsStreamConfig sc;
	jsErrCode jerr = 0;
	natsMsg *reply = NULL;
	jsCtx *js = NULL;
	char leader[64] = "";
	bool current = false;
	natsStatus s = NATS_ERR;
	int i;

	for (i = 0; i < 90; i++) {
		if (!nc && connect_js(c->url, &nc, &js) != NATS_OK) {
			natsConnection_Destroy(nc);
			nc = NULL;
			sleep(1);
			continue;
		}
		jsStreamConfig_Init(&sc);
		sc.Name = STREAM;
		sc.Subjects = subjects;
		sc.SubjectsLen = 1;
		sc.Storage = js_FileStorage;
		sc.Replicas = 3;
		sc.MaxBytes = c->max_bytes;
		s = js_AddStream(&si, js, &sc, NULL, &jerr);
		if (s == NATS_OK)
			break;
		/* JetStream not ready yet: no meta leader, too few peers */
		sleep(1);
	}
	if (s != NATS_OK) {
		fprintf(stderr, "%s: cannot create stream %s: %s (jerr %d)\n",
			bench_prog, STREAM, natsStatus_GetText(s), (int)jerr);
		return 1;
	}
	jsStreamInfo_Destroy(si);
	for (i = 0; i < 60; i++) {
		if (!stream_state(js, leader, sizeof(leader), &current) &&
		    *leader && current &&
		    (!c->leader || !strcmp(leader, c->leader)))
			break;
		if (*leader && current && c->leader &&
		    strcmp(leader, c->leader) && i % 3 == 0) {
			natsConnection_Request(&reply, nc,
				"$JS.API.STREAM.LEADER.STEPDOWN." STREAM,
				NULL, 0, 5000);
			natsMsg_Destroy(reply);
			reply = NULL;
		}
		usleep(500000);
	}
	printf("SETUP stream=%s leader=%s replicas_current=%d\n", STREAM,
	       leader, current);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	if (!*leader || !current) {
		fprintf(stderr, "%s: stream %s has no leader with current replicas\n",
			bench_prog, STREAM);
		return 1;
	}
	return 0;
}

struct conn {
	natsConnection *nc;
	jsCtx *js;
	char subj[32];
	char *val;
	int size;
	bool said;
};

static void *conn_init(int tid, void *arg)
{
	struct cfg *c = arg;
	struct conn *k = calloc(1, sizeof(*k));
	natsStatus s;

	if (!k)
		return NULL;
	k->size = c->o.size;
	k->val = malloc(k->size);
	snprintf(k->subj, sizeof(k->subj), "bench.%d", tid);
	s = connect_js(c->url, &k->nc, &k->js);
	if (!k->val || s != NATS_OK) {
		fprintf(stderr, "%s: cannot connect to %s: %s\n", bench_prog,
			c->url, natsStatus_GetText(s));
		return NULL;
	}
	bench_fill((uint8_t *)k->val, k->size, tid);
	return k;
}

static int conn_op(void *ctx, uint64_t seq)
{
	struct conn *k = ctx;
	jsPubAck *pa = NULL;
	jsErrCode jerr = 0;
	natsStatus s;

	(void)seq;
	s = js_Publish(&pa, k->js, k->subj, k->val, k->size, NULL, &jerr);
	if (s != NATS_OK) {
		if (!k->said)
			fprintf(stderr, "%s: publish: %s (jerr %d)\n",
				bench_prog, natsStatus_GetText(s), (int)jerr);
		k->said = true;
		return -1;
	}
	jsPubAck_Destroy(pa);
	return 0;
}

static void conn_fini(void *ctx)
{
	struct conn *k = ctx;

	jsCtx_Destroy(k->js);
	natsConnection_Destroy(k->nc);
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
	struct cfg c = { .max_bytes = 64 << 20 };
	struct bench_result r;
	char **av;
	int rc, i, n = 0;

	bench_prog = "nats_pub";
	/* --setup is a flag, the other options take values: take it out */
	av = calloc(argc + 1, sizeof(*av));
	if (!av)
		return 1;
	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--setup"))
			c.setup = true;
		else
			av[n++] = argv[i];
	}
	bench_parse(n, av, &c.o, opt, &c, usage);
	if (!c.url) {
		fprintf(stderr, "%s: --url is required\n%s", bench_prog, usage);
		return 2;
	}
	if (c.o.batch != 1) {
		fprintf(stderr, "%s: only --batch 1\n", bench_prog);
		return 2;
	}
	if (c.setup)
		return setup(&c);
	rc = bench_run(&c.o, &ops, &c, &r);
	bench_print(&c.o, &r, "commit=majority");
	return rc ? 1 : bench_status(&r);
}
