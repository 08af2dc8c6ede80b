// SPDX-License-Identifier: GPL-2.0
/*
 * krepd --etcd's pieces that need no etcd: base64, and the partition
 * state's JSON (ZooKeeper's shape) written and read back, with bad values
 * refused.
 */
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

int main(void)
{
	printf("TAP version 13\n");
	test_b64();
	test_part();
	printf("1..%d\n", tap_ntests);
	printf("# %d passed, %d failed\n", tap_ntests - tap_nfailed, tap_nfailed);
	return tap_nfailed ? 1 : 0;
}
