// SPDX-License-Identifier: GPL-2.0
/*
 * krepd --etcd's pieces: base64, and the partition state's JSON
 * (ZooKeeper's shape) written and read back, with bad values refused; with
 * an etcd URL as argument (tests/test_etcd.sh), the store against it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd.h"
#include "etcd_store.h"
#include "tap.h"

static void test_b64(void)
{
	static const char *plain[] = { "", "f", "fo", "foo", "foob", "fooba",
				       "foobar", "/krep/x/controller" };
	static const char *coded[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==",
				       "Zm9vYmE=", "Zm9vYmFy",
				       "L2tyZXAveC9jb250cm9sbGVy" };
	static const char *bad[] = { "Zg=", "Z===", "Zm9v!A==", "Zm=v" };
	size_t i, len;
	char *s;

	for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		s = krep_b64_encode(plain[i], strlen(plain[i]));
		CHECK(s && !strcmp(s, coded[i]), "base64 of '%s' is '%s'",
		      plain[i], coded[i]);
		free(s);
		s = krep_b64_decode(coded[i], &len);
		CHECK(s && len == strlen(plain[i]) && !memcmp(s, plain[i], len),
		      "'%s' decodes to '%s'", coded[i], plain[i]);
		free(s);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s = krep_b64_decode(bad[i], &len);
		CHECK(!s, "'%s' is refused", bad[i]);
		free(s);
	}
}

static void test_part(void)
{
	struct krep_state_part p = { .topic = "t", .partition = 0 }, q = { 0 };
	static const char *bad[] = {
		"[]", "{", "{\"version\":1}",
		"{\"controller_epoch\":1,\"leader\":-2,\"version\":1,\"leader_epoch\":1,\"isr\":[1],\"elr\":[],\"partition_epoch\":1}",
		"{\"controller_epoch\":1,\"leader\":1,\"version\":2,\"leader_epoch\":1,\"isr\":[1],\"elr\":[],\"partition_epoch\":1}",
		"{\"controller_epoch\":1,\"leader\":1,\"version\":1,\"leader_epoch\":1,\"isr\":[1,1],\"elr\":[],\"partition_epoch\":1}",
		"{\"controller_epoch\":1,\"leader\":1,\"version\":1,\"leader_epoch\":\"1\",\"isr\":[1],\"elr\":[],\"partition_epoch\":1}",
		"{\"controller_epoch\":-1,\"leader\":1,\"version\":1,\"leader_epoch\":1,\"isr\":[1],\"elr\":[],\"partition_epoch\":1}",
		"{\"controller_epoch\":1,\"leader\":1,\"version\":1,\"leader_epoch\":1,\"isr\":[\"1\"],\"elr\":[],\"partition_epoch\":1}",
	};
	const char *why = NULL;
	uint32_t epoch = 0;
	char *s;
	size_t i;

	p.ps.leader = 2;
	p.ps.leader_epoch = 5;
	p.ps.partition_epoch = 9;
	p.ps.isr = (struct krep_ids){ 2, { 2, 3 } };
	p.ps.elr = (struct krep_ids){ 1, { 1 } };
	s = krep_estore_part_json(&p, 7);
	CHECK(s && !strcmp(s, "{\"controller_epoch\":7,\"leader\":2,\"version\":1,\"leader_epoch\":5,\"isr\":[2,3],\"elr\":[1],\"partition_epoch\":9}"),
	      "a partition's state in ZooKeeper's shape, with elr and partition_epoch: %s",
	      s ? s : "(null)");
	CHECK(s && !krep_estore_part_parse(s, &q, &epoch, &why) && epoch == 7 &&
	      q.ps.leader == 2 && q.ps.leader_epoch == 5 &&
	      q.ps.partition_epoch == 9 && krep_ids_equal(&q.ps.isr, &p.ps.isr) &&
	      krep_ids_equal(&q.ps.elr, &p.ps.elr),
	      "it reads back the same");
	free(s);
	p.ps.leader = KREP_NO_LEADER;
	s = krep_estore_part_json(&p, 7);
	CHECK(s && strstr(s, "\"leader\":-1") &&
	      !krep_estore_part_parse(s, &q, &epoch, &why) &&
	      q.ps.leader == KREP_NO_LEADER, "no leader is -1, as in Kafka");
	free(s);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		CHECK(krep_estore_part_parse(bad[i], &q, &epoch, &why) && why,
		      "refused (%s): %s", why ? why : "no reason", bad[i]);
	}
}

/* A state of one broker and topic t with @np partitions (none: no topic). */
static void state_make(struct krep_state *st, uint32_t np)
{
	uint32_t i;

	memset(st, 0, sizeof(*st));
	st->controller_epoch = 3;
	st->brokers = calloc(1, sizeof(*st->brokers));
	st->topics = calloc(1, sizeof(*st->topics));
	st->parts = calloc(np + 1, sizeof(*st->parts));
	st->nbrokers = 1;
	st->brokers[0].id = 1;
	if (!np)
		return;
	st->ntopics = 1;
	strcpy(st->topics[0].name, "t");
	st->topics[0].tc.min_isr = 1;
	st->nparts = np;
	for (i = 0; i < np; i++) {
		strcpy(st->parts[i].topic, "t");
		st->parts[i].partition = i;
		st->parts[i].ps.leader = 1;
		st->parts[i].ps.ar = (struct krep_ids){ 1, { 1 } };
		st->parts[i].ps.isr = (struct krep_ids){ 1, { 1 } };
	}
}

static size_t keys(struct krep_etcd *e, const char *prefix)
{
	struct krep_etcd_kvs kvs;
	char err[512];
	size_t n;

	if (krep_etcd_range(e, prefix, true, &kvs, err, sizeof(err)))
		return (size_t)-1;
	n = kvs.n;
	krep_etcd_kvs_free(&kvs);
	return n;
}

/*
 * Against a live etcd at @url (tests/test_etcd.sh starts one): 150
 * partitions written in transactions of at most 64 operations, read
 * back, deleted; a write fenced by another election key's revision and a
 * key changed behind the store's back both refused with nothing written.
 */
static void test_store(const char *url)
{
	struct krep_etcd_opts o = { .endpoints = url, .timeout_ms = 5000 };
	struct krep_state st, back;
	struct krep_estore *s, *s2;
	struct krep_etcd_txn *t;
	struct krep_etcd_kvs kvs;
	struct krep_etcd *e;
	int64_t fence;
	char err[512];
	bool ok = false;

	e = krep_etcd_open(&o, err, sizeof(err));
	CHECK(e, "etcd client for %s", url);
	if (!e)
		return;
	t = krep_etcd_txn_new();
	CHECK(t && !krep_etcd_txn_put(t, "/krep/u/controller", "{}", 0) &&
	      !krep_etcd_txn_commit(e, t, &ok, &fence, err, sizeof(err)) && ok,
	      "an election key");
	krep_etcd_txn_free(t);
	s = krep_estore_new(e, "/krep/u");
	CHECK(s && !krep_estore_load(s, &back, err, sizeof(err)) &&
	      !back.nparts && !back.controller_epoch, "an empty store loads empty");
	krep_state_free(&back);
	state_make(&st, 150);
	CHECK(!krep_estore_save(s, &st, "/krep/u/controller", fence, err,
				sizeof(err)) &&
	      keys(e, "/krep/u/brokers/topics/") == 151,
	      "150 partitions and their topic written (%s)", err);
	s2 = krep_estore_new(e, "/krep/u");
	CHECK(s2 && !krep_estore_load(s2, &back, err, sizeof(err)) &&
	      back.nparts == 150 && back.ntopics == 1 && back.nbrokers == 1 &&
	      back.controller_epoch == 3 && back.parts[149].ps.ar.n == 1,
	      "read back by another store: 150 partitions, their assignment");
	krep_state_free(&back);
	st.parts[7].ps.leader_epoch = 9;
	CHECK(krep_estore_save(s, &st, "/krep/u/controller", fence + 1, err,
			       sizeof(err)) == -ESTALE,
	      "a write under another election key's revision is refused");
	/* s2 writes partition 7 first: s's revision of it is old */
	CHECK(!krep_estore_save(s2, &st, "/krep/u/controller", fence, err,
				sizeof(err)), "another store changes partition 7");
	st.parts[7].ps.leader_epoch = 10;
	CHECK(krep_estore_save(s, &st, "/krep/u/controller", fence, err,
			       sizeof(err)) == -ESTALE,
	      "a write over a key changed behind its back is refused");
	CHECK(!krep_etcd_range(e, "/krep/u/brokers/topics/t/partitions/7/state",
			       false, &kvs, err, sizeof(err)) && kvs.n == 1 &&
	      strstr(kvs.kv[0].value, "\"leader_epoch\":9"),
	      "and nothing of it was written");
	krep_etcd_kvs_free(&kvs);
	krep_state_free(&st);
	state_make(&st, 0);
	CHECK(!krep_estore_save(s2, &st, "/krep/u/controller", fence, err,
				sizeof(err)) &&
	      keys(e, "/krep/u/brokers/topics/") == 0,
	      "the topic gone: its 151 keys deleted (%s)", err);
	krep_state_free(&st);
	krep_estore_free(s);
	krep_estore_free(s2);
	krep_etcd_close(e);
}

int main(int argc, char **argv)
{
	printf("TAP version 13\n");
	test_b64();
	test_part();
	if (argc > 1)
		test_store(argv[1]);
	printf("1..%d\n", tap_ntests);
	printf("# %d passed, %d failed\n", tap_ntests - tap_nfailed, tap_nfailed);
	return tap_nfailed ? 1 : 0;
}
