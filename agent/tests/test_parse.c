// SPDX-License-Identifier: GPL-2.0
/*
 * Host-only unit tests of krep's userspace agent: endpoint, peer-list and
 * number parsing, "broker set" command lines, the BROKER_SET encoding,
 * BROKER_GET reply decoding and output, extack decoding and printing
 * (Kafka's error code in the cookie, krepctl's error output as text and
 * JSON), JSON escaping, the event printer, the command lines of topic,
 * produce, consume, offsets, delete-records and txn, the TOPIC_NEW
 * encoding and the PARTITION_GET output. No kernel module is needed: the
 * transport checks talk to the always-present generic netlink controller
 * ("nlctrl") with read-only queries. Output is TAP; the exit status is 1
 * if any check failed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/krep.h>

#include "attrs.h"
#include "ep.h"
#include "genl.h"
#include "json.h"
#include "krepctl.h"
#include "tap.h"

#define FAMILY	0x1234


static void check_str(const char *got, const char *want, int line,
		      const char *what)
{
	bool ok = got && !strcmp(got, want);

	tap_check(ok, line, "%s", what);
	if (!ok)
		printf("#   got:  '%s'\n#   want: '%s'\n", got ? got : "(null)",
		       want);
}

#define CHECK_STR(got, want, what)	check_str(got, want, __LINE__, what)

/* ---- stderr capture (usage errors are printed there) ----------------- */

static int saved_stderr = -1;
static FILE *captured;

static void capture_begin(void)
{
	fflush(stderr);
	captured = tmpfile();
	saved_stderr = dup(2);
	if (!captured || saved_stderr < 0 || dup2(fileno(captured), 2) < 0) {
		perror("capture");
		exit(2);
	}
}

/* Stop capturing; returns what was printed (static buffer). */
static const char *capture_end(void)
{
	static char buf[8192];
	size_t n;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	rewind(captured);
	n = fread(buf, 1, sizeof(buf) - 1, captured);
	buf[n] = '\0';
	fclose(captured);
	return buf;
}

/* Run @fn(@arg) with stdout and stderr captured into @out and @err. */
static void capture_both(void (*fn)(void *), void *arg, char *out,
			 size_t outsz, char *err, size_t errsz)
{
	FILE *o = tmpfile(), *e = tmpfile();
	int so, se;
	size_t n;

	fflush(stdout);
	fflush(stderr);
	so = dup(1);
	se = dup(2);
	if (!o || !e || so < 0 || se < 0 || dup2(fileno(o), 1) < 0 ||
	    dup2(fileno(e), 2) < 0) {
		perror("capture");
		exit(2);
	}
	fn(arg);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	rewind(o);
	rewind(e);
	n = fread(out, 1, outsz - 1, o);
	out[n] = '\0';
	n = fread(err, 1, errsz - 1, e);
	err[n] = '\0';
	fclose(o);
	fclose(e);
}

/* ---- numbers ---------------------------------------------------------- */

static void test_u32(void)
{
	static const struct {
		const char *s;
		int err;
		uint32_t v;
	} cases[] = {
		{ "0", 0, 0 },
		{ "7", 0, 7 },
		{ "007", 0, 7 },
		{ "2147483647", 0, 2147483647U },
		{ "3000000000", 0, 3000000000U },
		{ "4294967295", 0, 4294967295U },
		{ "4294967296", -ERANGE, 0 },
		{ "99999999999999999999999", -ERANGE, 0 },
		{ "", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "+1", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "1 ", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
		{ "abc", -EINVAL, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t v = 0;
		int err = krep_u32_parse(cases[i].s, &v);

		CHECK(err == cases[i].err && (err || v == cases[i].v),
		      "u32 '%s' -> %d", cases[i].s, cases[i].err);
	}
}

/* ---- endpoints -------------------------------------------------------- */

static void test_ep_ok(const char *s, int family, uint16_t port,
		       const char *formatted)
{
	char buf[KREP_EP_STRLEN];
	const char *why = NULL;
	struct krep_ep ep;
	int err;

	err = krep_ep_parse(s, &ep, &why);
	CHECK(!err && ep.family == family && ep.port == port,
	      "endpoint '%s' parses (%s)", s, err ? why : "ok");
	if (!err)
		CHECK_STR(krep_ep_format(&ep, buf, sizeof(buf)), formatted,
			  "endpoint formats back");
}

static void test_ep_bad(const char *s, int want, const char *why_part)
{
	const char *why = NULL;
	struct krep_ep ep;
	int err;

	err = krep_ep_parse(s, &ep, &why);
	CHECK(err == want && why && strstr(why, why_part),
	      "endpoint '%s' rejected: %s", s, why ? why : "(accepted)");
}

static void test_ep(void)
{
	struct krep_ep none = { .family = AF_UNSPEC };
	char buf[KREP_EP_STRLEN];

	test_ep_ok("10.0.0.1:9092", AF_INET, 9092, "10.0.0.1:9092");
	test_ep_ok("0.0.0.0:1", AF_INET, 1, "0.0.0.0:1");
	test_ep_ok("255.255.255.255:65535", AF_INET, 65535,
		   "255.255.255.255:65535");
	test_ep_ok("10.0.0.1:09092", AF_INET, 9092, "10.0.0.1:9092");
	/* Encodable but out of the kernel's range: the kernel says no. */
	test_ep_ok("10.0.0.1:0", AF_INET, 0, "10.0.0.1:0");
	test_ep_ok("[::1]:9092", AF_INET6, 9092, "[::1]:9092");
	test_ep_ok("[2001:DB8:0:0::1]:65535", AF_INET6, 65535,
		   "[2001:db8::1]:65535");
	test_ep_ok("[::ffff:10.0.0.1]:9092", AF_INET6, 9092,
		   "[::ffff:10.0.0.1]:9092");
	test_ep_ok("[fd00::2]:0", AF_INET6, 0, "[fd00::2]:0");

	test_ep_bad("10.0.0.1:65536", -ERANGE, "16 bits");
	test_ep_bad("10.0.0.1:4294967296", -ERANGE, "16 bits");
	test_ep_bad("10.0.0.1:abc", -EINVAL, "not a number");
	test_ep_bad("10.0.0.1:-1", -EINVAL, "not a number");
	test_ep_bad("10.0.0.1:+1", -EINVAL, "not a number");
	test_ep_bad("10.0.0.1: 1", -EINVAL, "not a number");
	test_ep_bad("10.0.0.1:", -EINVAL, "missing port");
	test_ep_bad("10.0.0.1", -EINVAL, "missing ':PORT'");
	test_ep_bad("", -EINVAL, "missing ':PORT'");
	test_ep_bad(":9092", -EINVAL, "missing address");
	test_ep_bad("10.0.0.256:1", -EINVAL, "invalid IPv4");
	test_ep_bad("10.0.1:1", -EINVAL, "invalid IPv4");
	test_ep_bad("localhost:9092", -EINVAL, "host names");
	test_ep_bad("::1:9092", -EINVAL, "brackets");
	test_ep_bad("2001:db8::1", -EINVAL, "brackets");
	test_ep_bad("[::1]", -EINVAL, "missing ':PORT'");
	test_ep_bad("[::1]9092", -EINVAL, "missing ':PORT'");
	test_ep_bad("[::1]:", -EINVAL, "missing port");
	test_ep_bad("[::1]:65536", -ERANGE, "16 bits");
	test_ep_bad("[::1:9092", -EINVAL, "missing ']'");
	test_ep_bad("[]:9092", -EINVAL, "invalid IPv6");
	test_ep_bad("[10.0.0.1]:9092", -EINVAL, "invalid IPv6");
	test_ep_bad("[fe80::1%eth0]:9092", -EINVAL, "invalid IPv6");
	test_ep_bad("[::g]:9092", -EINVAL, "invalid IPv6");

	CHECK_STR(krep_ep_format(&none, buf, sizeof(buf)), "-",
		  "unset endpoint formats as '-'");
}

/* ---- peer lists ------------------------------------------------------- */

static void test_peers(void)
{
	struct krep_peers p;
	char err[256];
	int ret;

	ret = krep_peers_parse("none", &p, err, sizeof(err));
	CHECK(!ret && p.n == 0, "peers 'none' is the empty list");
	krep_peers_free(&p);

	ret = krep_peers_parse("2@10.0.0.2:9092,3@[fd00::3]:9093", &p, err,
			       sizeof(err));
	CHECK(!ret && p.n == 2 && p.v[0].id == 2 &&
	      p.v[0].ep.family == AF_INET && p.v[0].ep.port == 9092 &&
	      p.v[1].id == 3 && p.v[1].ep.family == AF_INET6 &&
	      p.v[1].ep.port == 9093, "two peers, IPv4 and IPv6");
	krep_peers_free(&p);

	ret = krep_peers_parse("1@10.0.0.1:9092", &p, err, sizeof(err));
	CHECK(!ret && p.n == 1 && p.v[0].id == 1, "one peer");
	krep_peers_free(&p);

	/* The kernel owns these checks (EEXIST, ERANGE, E2BIG). */
	ret = krep_peers_parse("2@10.0.0.2:9092,2@10.0.0.3:9092", &p, err,
			       sizeof(err));
	CHECK(!ret && p.n == 2, "duplicate ids are left to the kernel");
	krep_peers_free(&p);
	ret = krep_peers_parse("3000000000@10.0.0.2:9092", &p, err,
			       sizeof(err));
	CHECK(!ret && p.n == 1 && p.v[0].id == 3000000000U,
	      "id above KREP_BROKER_ID_MAX is left to the kernel");
	krep_peers_free(&p);
	ret = krep_peers_parse("2@10.0.0.2:0", &p, err, sizeof(err));
	CHECK(!ret && p.n == 1 && p.v[0].ep.port == 0,
	      "port 0 is left to the kernel");
	krep_peers_free(&p);

	static const struct {
		const char *s;
		int err;
		const char *msg;
	} bad[] = {
		{ "", -EINVAL, "use 'none'" },
		{ "2-10.0.0.2:9092", -EINVAL,
		  "peer 1 ('2-10.0.0.2:9092'): missing '@'" },
		{ "2@10.0.0.2:9092,3", -EINVAL, "peer 2 ('3'): missing '@'" },
		{ "2@10.0.0.2:9092,", -EINVAL, "empty element 2" },
		{ ",2@10.0.0.2:9092", -EINVAL, "empty element 1" },
		{ "2@10.0.0.2:9092,,3@10.0.0.3:9092", -EINVAL,
		  "empty element 2" },
		{ "x@10.0.0.2:9092", -EINVAL, "peer id is not a number" },
		{ "@10.0.0.2:9092", -EINVAL, "peer id is not a number" },
		{ "-1@10.0.0.2:9092", -EINVAL, "peer id is not a number" },
		{ "4294967296@10.0.0.2:9092", -ERANGE, "does not fit in 32" },
		{ "2@10.0.0.2:65536", -ERANGE, "16 bits" },
		{ "2@10.0.0.2:http", -EINVAL, "port is not a number" },
		{ "2@10.0.0.2", -EINVAL, "missing ':PORT'" },
		{ "2@", -EINVAL, "missing ':PORT'" },
		{ "2@::1:9092", -EINVAL, "brackets" },
		{ "NONE", -EINVAL, "missing '@'" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ret = krep_peers_parse(bad[i].s, &p, err, sizeof(err));
		CHECK(ret == bad[i].err && strstr(err, bad[i].msg) &&
		      !p.n && !p.v,
		      "peers '%s' rejected: %s", bad[i].s, err);
	}
}

/* ---- broker set command lines ----------------------------------------- */

static int set_parse(struct krep_broker_set *set, const char **err_out, ...)
{
	char *argv[16] = { "set" };
	int argc = 1, ret;
	const char *a;
	va_list ap;

	va_start(ap, err_out);
	while ((a = va_arg(ap, const char *)) && argc < 15)
		argv[argc++] = (char *)a;
	va_end(ap);
	capture_begin();
	ret = krep_broker_set_parse(argc, argv, set);
	*err_out = capture_end();
	return ret;
}

static void test_set_parse(void)
{
	struct krep_broker_set set;
	const char *err;
	int ret;

	ret = set_parse(&set, &err, "id", "1", "cluster", "krep-test",
			"listen", "10.0.0.1:9092", "peers",
			"2@10.0.0.2:9092,3@10.0.0.3:9092", NULL);
	CHECK(!ret && set.has_id && set.id == 1 && set.cluster &&
	      !strcmp(set.cluster, "krep-test") && set.has_listen &&
	      set.has_peers && set.peers.n == 2 && !*err,
	      "broker set with every keyword");
	krep_broker_set_free(&set);

	ret = set_parse(&set, &err, "peers", "none", NULL);
	CHECK(!ret && !set.has_id && !set.cluster && !set.has_listen &&
	      set.has_peers && set.peers.n == 0, "broker set peers none");
	krep_broker_set_free(&set);

	ret = set_parse(&set, &err, "id", "3000000000", NULL);
	CHECK(!ret && set.has_id && set.id == 3000000000U,
	      "id 3000000000 is passed to the kernel");
	krep_broker_set_free(&set);

	ret = set_parse(&set, &err, "cluster", "bad name!", NULL);
	CHECK(!ret && !strcmp(set.cluster, "bad name!"),
	      "cluster id is validated by the kernel");
	krep_broker_set_free(&set);

	ret = set_parse(&set, &err, "log-dir", "/var/lib/krep", NULL);
	CHECK(!ret && set.log_dir && !strcmp(set.log_dir, "/var/lib/krep"),
	      "log-dir is kept for set_run to open");
	krep_broker_set_free(&set);

	ret = set_parse(&set, &err, "--help", NULL);
	CHECK(ret == 1, "--help asks for help");
	ret = set_parse(&set, &err, "id", "1", "help", NULL);
	CHECK(ret == 1, "help after a keyword asks for help");

	static const struct {
		const char *args[5];
		const char *msg;
	} bad[] = {
		{ { NULL }, "nothing to change" },
		{ { "id", "4294967296" }, "does not fit in 32 bits" },
		{ { "id", "-1" }, "is not a number" },
		{ { "id" }, "'id' needs a value" },
		{ { "id", "1", "id", "2" }, "'id' given twice" },
		{ { "peers", "none", "peers", "none" }, "'peers' given twice" },
		{ { "log-dir", "/a", "log-dir", "none" }, "'log-dir' given twice" },
		{ { "log-dir" }, "'log-dir' needs a value" },
		{ { "bogus", "1" }, "unknown keyword 'bogus'" },
		{ { "listen", "10.0.0.1" }, "missing ':PORT'" },
		{ { "listen", "10.0.0.1:65536" }, "16 bits" },
		{ { "listen", "fd00::1:9092" }, "brackets" },
		{ { "peers", "2-10.0.0.2:9092" }, "missing '@'" },
		{ { "peers", "" }, "use 'none'" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *const *a = bad[i].args;

		ret = set_parse(&set, &err, a[0], a[1], a[2], a[3], a[4]);
		CHECK(ret < 0 && strstr(err, bad[i].msg) &&
		      strstr(err, " --help'.\n"),
		      "broker set %s %s %s %s: %s", a[0] ?: "", a[1] ?: "",
		      a[2] ?: "", a[3] ?: "", bad[i].msg);
	}
}

/* ---- BROKER_SET encoding ---------------------------------------------- */

static const struct nlattr *next_attr(const struct nlattr *a)
{
	return (const void *)((const char *)a + NLA_ALIGN(a->nla_len));
}

/* Find attribute @type in the stream @head/@len, NULL if absent. */
static const struct nlattr *find(const void *head, int len, int type)
{
	const struct nlattr *a;
	int rem;

	nla_for_each_attr(a, (struct nlattr *)head, len, rem)
		if (nla_type(a) == type)
			return a;
	return NULL;
}

static bool is_nest(const struct nlattr *a)
{
	return a && (a->nla_type & NLA_F_NESTED);
}

static struct nl_msg *full_set_msg(struct krep_broker_set *set)
{
	const char *err;
	int ret;

	ret = set_parse(set, &err, "id", "1", "cluster", "krep-test",
			"listen", "10.0.0.1:9092", "peers",
			"2@10.0.0.2:9092,3@[fd00::3]:9093", NULL);
	if (ret) {
		printf("# cannot parse: %s\n", err);
		return NULL;
	}
	return krep_broker_set_msg(FAMILY, set);
}

static void test_set_msg(void)
{
	const struct nlattr *a, *ep, *peers, *p, *x;
	struct krep_broker_set set;
	const struct genlmsghdr *gh;
	const struct nlmsghdr *nlh;
	static const uint8_t v4[4] = { 10, 0, 0, 1 };
	struct in6_addr v6;
	struct nl_msg *msg;
	const char *err;
	int len, n;

	msg = full_set_msg(&set);
	CHECK(msg, "BROKER_SET request built");
	if (!msg)
		return;
	nlh = nlmsg_hdr(msg);
	gh = nlmsg_data(nlh);
	CHECK(nlh->nlmsg_type == FAMILY && gh->cmd == KREP_CMD_BROKER_SET &&
	      gh->version == KREP_GENL_VERSION && gh->reserved == 0,
	      "genl header: family, cmd BROKER_SET, version");
	a = genlmsg_attrdata(gh, 0);
	len = genlmsg_attrlen(gh, 0);

	x = find(a, len, KREP_A_BROKER_ID);
	CHECK(x && nla_len(x) == 4 && nla_get_u32(x) == 1,
	      "KREP_A_BROKER_ID u32 1");
	x = find(a, len, KREP_A_CLUSTER_ID);
	CHECK(x && nla_len(x) == 10 && !memcmp(nla_data(x), "krep-test", 10),
	      "KREP_A_CLUSTER_ID NUL-terminated string");
	x = find(a, len, KREP_A_LISTEN);
	CHECK(is_nest(x), "KREP_A_LISTEN is a nest with NLA_F_NESTED");
	if (x) {
		ep = find(nla_data(x), nla_len(x), KREP_A_EP_IPV4);
		CHECK(ep && nla_len(ep) == 4 && !memcmp(nla_data(ep), v4, 4),
		      "listen KREP_A_EP_IPV4 in network byte order");
		ep = find(nla_data(x), nla_len(x), KREP_A_EP_PORT);
		CHECK(ep && nla_len(ep) == 2 && nla_get_u16(ep) == 9092,
		      "listen KREP_A_EP_PORT u16 host order");
		CHECK(!find(nla_data(x), nla_len(x), KREP_A_EP_IPV6),
		      "listen has no KREP_A_EP_IPV6");
	}
	peers = find(a, len, KREP_A_PEERS);
	CHECK(is_nest(peers), "KREP_A_PEERS is a nest with NLA_F_NESTED");
	if (peers) {
		n = 0;
		nla_for_each_nested(p, (struct nlattr *)peers, len) {
			n++;
			CHECK(nla_type(p) == KREP_A_PEER && is_nest(p),
			      "peer %d is a KREP_A_PEER nest", n);
		}
		p = nla_data(peers);
		x = find(nla_data(p), nla_len(p), KREP_A_PEER_ID);
		CHECK(n == 2 && x && nla_get_u32(x) == 2, "peer 1 id 2");
		CHECK(!find(nla_data(p), nla_len(p), KREP_A_PEER_STATE),
		      "requests carry no KREP_A_PEER_STATE");
		p = next_attr(p);
		x = find(nla_data(p), nla_len(p), KREP_A_PEER_EP);
		CHECK(is_nest(x), "peer 2 KREP_A_PEER_EP nest");
		inet_pton(AF_INET6, "fd00::3", &v6);
		ep = x ? find(nla_data(x), nla_len(x), KREP_A_EP_IPV6) : NULL;
		CHECK(ep && nla_len(ep) == 16 && !memcmp(nla_data(ep), &v6, 16),
		      "peer 2 KREP_A_EP_IPV6 16 bytes");
		ep = x ? find(nla_data(x), nla_len(x), KREP_A_EP_PORT) : NULL;
		CHECK(ep && nla_get_u16(ep) == 9093, "peer 2 port 9093");
	}
	nlmsg_free(msg);
	krep_broker_set_free(&set);

	set_parse(&set, &err, "peers", "none", NULL);
	msg = krep_broker_set_msg(FAMILY, &set);
	nlh = msg ? nlmsg_hdr(msg) : NULL;
	gh = nlh ? nlmsg_data(nlh) : NULL;
	x = gh ? find(genlmsg_attrdata(gh, 0), genlmsg_attrlen(gh, 0),
		      KREP_A_PEERS) : NULL;
	CHECK(is_nest(x) && nla_len(x) == 0 &&
	      genlmsg_attrlen(gh, 0) == NLA_HDRLEN,
	      "peers none: only an empty KREP_A_PEERS nest");
	nlmsg_free(msg);
	krep_broker_set_free(&set);

	set_parse(&set, &err, "id", "3000000000", NULL);
	msg = krep_broker_set_msg(FAMILY, &set);
	gh = msg ? nlmsg_data(nlmsg_hdr(msg)) : NULL;
	x = gh ? find(genlmsg_attrdata(gh, 0), genlmsg_attrlen(gh, 0),
		      KREP_A_BROKER_ID) : NULL;
	CHECK(x && nla_get_u32(x) == 3000000000U &&
	      genlmsg_attrlen(gh, 0) == NLA_HDRLEN + 4,
	      "id 3000000000: only KREP_A_BROKER_ID, value unchanged");
	nlmsg_free(msg);
	krep_broker_set_free(&set);
}

/* ---- extack ----------------------------------------------------------- */

/* Offset in @msg of the attribute found by following @types. */
static uint32_t offset_of(struct nl_msg *msg, const int *types, int n)
{
	const struct nlmsghdr *nlh = nlmsg_hdr(msg);
	const struct genlmsghdr *gh = nlmsg_data(nlh);
	const void *head = genlmsg_attrdata(gh, 0);
	int len = genlmsg_attrlen(gh, 0), i;
	const struct nlattr *a = NULL;

	for (i = 0; i < n; i++) {
		a = find(head, len, types[i]);
		if (!a)
			return 0;
		head = nla_data(a);
		len = nla_len(a);
	}
	return (const char *)a - (const char *)nlh;
}

static size_t put_tlv(char *p, int type, const void *data, int len)
{
	struct nlattr *a = (struct nlattr *)p;

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy(p + NLA_HDRLEN, data, len);
	return NLA_ALIGN(a->nla_len);
}

/*
 * Build the NLMSG_ERROR the kernel sends for @req: capped (as with
 * NETLINK_CAP_ACK) or with the request echoed, then the TLVs.
 */
static struct nlmsghdr *make_err(char *buf, struct nl_msg *req, int error,
				 bool capped, const char *text, bool has_offs,
				 uint32_t offs, bool has_miss,
				 uint32_t miss_type, uint32_t miss_nest)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf, *rq = nlmsg_hdr(req);
	struct nlmsgerr *e = NLMSG_DATA(nlh);
	size_t off = NLMSG_HDRLEN + sizeof(*e);

	memset(buf, 0, 4096);
	nlh->nlmsg_type = NLMSG_ERROR;
	nlh->nlmsg_flags = NLM_F_ACK_TLVS | (capped ? NLM_F_CAPPED : 0);
	e->error = error;
	e->msg = *rq;
	if (!capped) {
		memcpy(buf + off, (char *)rq + NLMSG_HDRLEN,
		       rq->nlmsg_len - NLMSG_HDRLEN);
		off += rq->nlmsg_len - NLMSG_HDRLEN;
	}
	off = NLMSG_ALIGN(off);
	if (text)
		off += put_tlv(buf + off, NLMSGERR_ATTR_MSG, text,
			       strlen(text) + 1);
	if (has_offs)
		off += put_tlv(buf + off, NLMSGERR_ATTR_OFFS, &offs, 4);
	if (has_miss) {
		off += put_tlv(buf + off, NLMSGERR_ATTR_MISS_TYPE, &miss_type,
			       4);
		if (miss_nest)
			off += put_tlv(buf + off, NLMSGERR_ATTR_MISS_NEST,
				       &miss_nest, 4);
	}
	nlh->nlmsg_len = off;
	return nlh;
}

static const char *extack_text(struct nlmsghdr *nlh, int err,
			       struct nl_msg *req)
{
	static char out[1024];
	struct krep_extack ea;
	FILE *f;

	if (krep_extack_parse(nlh, &ea))
		return "(parse failed)";
	f = fmemopen(out, sizeof(out), "w");
	if (!f)
		return "(fmemopen failed)";
	krep_extack_print(f, err, &ea, req);
	fclose(f);
	return out;
}

static void test_extack(void)
{
	static const int listen_port[] = { KREP_A_LISTEN, KREP_A_EP_PORT };
	static const int peers[] = { KREP_A_PEERS };
	static const int listen[] = { KREP_A_LISTEN };
	static const int cluster[] = { KREP_A_CLUSTER_ID };
	static char buf[4096] __attribute__((aligned(8)));
	const struct krep_attr_space *inner;
	struct krep_broker_set set;
	const struct nlattr *p;
	struct nlmsghdr *nlh;
	struct nl_msg *req;
	uint32_t off;
	char path[128];

	req = full_set_msg(&set);
	if (!req) {
		CHECK(0, "request for extack tests");
		return;
	}

	off = offset_of(req, listen_port, 2);
	nlh = make_err(buf, req, -ERANGE, true, "integer out of range", true,
		       off, false, 0, 0);
	CHECK_STR(extack_text(nlh, -ERANGE, req),
		  "test: Numerical result out of range: integer out of range (attribute listen.port)\n",
		  "capped error: message and attribute path");

	nlh = make_err(buf, req, -ERANGE, false, "integer out of range", true,
		       off, false, 0, 0);
	CHECK_STR(extack_text(nlh, -ERANGE, req),
		  "test: Numerical result out of range: integer out of range (attribute listen.port)\n",
		  "uncapped error (request echoed): same result");

	/* The second peer's endpoint port. */
	off = offset_of(req, peers, 1);
	p = next_attr(nla_data((const struct nlattr *)
			       ((const char *)nlmsg_hdr(req) + off)));
	p = find(nla_data(p), nla_len(p), KREP_A_PEER_EP);
	p = find(nla_data(p), nla_len(p), KREP_A_EP_PORT);
	off = (const char *)p - (const char *)nlmsg_hdr(req);
	nlh = make_err(buf, req, -EEXIST, true, "duplicate peer id", true, off,
		       false, 0, 0);
	CHECK_STR(extack_text(nlh, -EEXIST, req),
		  "test: File exists: duplicate peer id (attribute peers.peer[1].ep.port)\n",
		  "attribute path into the second peer");

	nlh = make_err(buf, req, -EINVAL, true, NULL, false, 0, false, 0, 0);
	CHECK_STR(extack_text(nlh, -EINVAL, req), "test: Invalid argument\n",
		  "error without extack message");

	nlh->nlmsg_flags = 0;
	CHECK_STR(extack_text(nlh, -EPERM, req),
		  "test: Operation not permitted\n",
		  "error without NLM_F_ACK_TLVS");

	nlh = make_err(buf, req, -EINVAL, true, "missing attribute", false, 0,
		       true, KREP_A_EP_PORT, offset_of(req, listen, 1));
	CHECK_STR(extack_text(nlh, -EINVAL, req),
		  "test: Invalid argument: missing attribute (missing attribute listen.port)\n",
		  "missing attribute inside a nest");

	nlh = make_err(buf, req, -EINVAL, true, NULL, false, 0, true,
		       KREP_A_BROKER_ID, 0);
	CHECK_STR(extack_text(nlh, -EINVAL, req),
		  "test: Invalid argument (missing attribute broker_id)\n",
		  "missing top-level attribute");

	nlh = make_err(buf, req, -EINVAL, true, "bad", true, 3, false, 0, 0);
	CHECK_STR(extack_text(nlh, -EINVAL, req),
		  "test: Invalid argument: bad (attribute at offset 3)\n",
		  "offset that names no attribute");

	off = offset_of(req, (const int []){ KREP_A_BROKER_ID }, 1) + NLA_HDRLEN;
	nlh = make_err(buf, req, -EINVAL, true, "bad", true, off, false, 0, 0);
	CHECK_STR(extack_text(nlh, -EINVAL, req),
		  "test: Invalid argument: bad (attribute broker_id)\n",
		  "offset inside an attribute's payload names it");

	nlh = make_err(buf, req, 0, true, "deprecated", false, 0, false, 0, 0);
	CHECK_STR(extack_text(nlh, 0, req), "test: warning: deprecated\n",
		  "ack with a message is a warning");

	off = offset_of(req, cluster, 1);
	CHECK(!krep_attr_path(nlmsg_hdr(req), nlmsg_hdr(req)->nlmsg_len,
			      NLMSG_HDRLEN + GENL_HDRLEN, off, path,
			      sizeof(path), &inner) &&
	      !strcmp(path, "cluster_id") && !inner,
	      "krep_attr_path names a top-level attribute");
	nlmsg_free(req);
	krep_broker_set_free(&set);
}

/* ---- BROKER_GET reply ------------------------------------------------- */

static void put_ep(struct nl_msg *m, int type, const char *s)
{
	const char *why;
	struct krep_ep ep;

	if (krep_ep_parse(s, &ep, &why) || krep_ep_put(m, type, &ep))
		abort();
}

static void put_peer(struct nl_msg *m, uint32_t id, const char *ep,
		     int state)
{
	struct nlattr *n = nla_nest_start(m, KREP_A_PEER | NLA_F_NESTED);

	nla_put_u32(m, KREP_A_PEER_ID, id);
	put_ep(m, KREP_A_PEER_EP, ep);
	if (state >= 0)
		nla_put_u8(m, KREP_A_PEER_STATE, state);
	nla_nest_end(m, n);
}

static const char *reply_text(struct nl_msg *m, bool json)
{
	static char out[2048];
	FILE *f = fmemopen(out, sizeof(out), "w");
	int err;

	if (!f)
		return "(fmemopen failed)";
	capture_begin();
	err = krep_broker_reply_print(m, json, f);
	capture_end();
	fclose(f);
	return err ? "(error)" : out;
}

static void test_reply(void)
{
	struct nl_msg *m;
	struct nlattr *n;

	m = krep_genl_msg_new(FAMILY, KREP_CMD_BROKER_GET, 0, 0);
	nla_put_u32(m, KREP_A_BROKER_ID, 1);
	nla_put_string(m, KREP_A_CLUSTER_ID, "krep-test");
	put_ep(m, KREP_A_LISTEN, "10.0.0.1:9092");
	put_ep(m, KREP_A_KAFKA_LISTEN, "0.0.0.0:9192");
	nla_put_string(m, KREP_A_KAFKA_ADVERTISED, "b1.example:9192");
	nla_put_u8(m, KREP_A_AUTH, 1);
	nla_put_string(m, KREP_A_LOG_DIR, "/var/lib/krep");
	n = nla_nest_start(m, KREP_A_PEERS | NLA_F_NESTED);
	put_peer(m, 2, "10.0.0.2:9092", KREP_PEER_CONFIGURED);
	put_peer(m, 3, "[fd00::3]:9092", KREP_PEER_UP);
	put_peer(m, 4, "10.0.0.4:9092", 9);
	put_peer(m, 5, "10.0.0.5:9092", -1);
	nla_nest_end(m, n);
	nla_put_u32(m, KREP_A_GENERATION, 3);
	nla_put_u32(m, 200, 7);		/* from a newer kernel: ignored */

	CHECK_STR(reply_text(m, false),
		  "broker 1  cluster krep-test  generation 3\n"
		  "listen 10.0.0.1:9092\n"
		  "kafka 0.0.0.0:9192  advertised b1.example:9192\n"
		  "cluster secret set\n"
		  "log dir /var/lib/krep\n"
		  "peer 2  10.0.0.2:9092  configured\n"
		  "peer 3  [fd00::3]:9092  up\n"
		  "peer 4  10.0.0.4:9092  unknown(9)\n"
		  "peer 5  10.0.0.5:9092  -\n",
		  "broker show text");
	CHECK_STR(reply_text(m, true),
		  "{\"broker_id\":1,\"cluster_id\":\"krep-test\","
		  "\"listen\":\"10.0.0.1:9092\","
		  "\"kafka_listen\":\"0.0.0.0:9192\","
		  "\"kafka_advertised\":\"b1.example:9192\","
		  "\"cluster_secret\":true,"
		  "\"log_dir\":\"/var/lib/krep\","
		  "\"generation\":3,\"peers\":["
		  "{\"id\":2,\"addr\":\"10.0.0.2:9092\",\"state\":\"configured\"},"
		  "{\"id\":3,\"addr\":\"[fd00::3]:9092\",\"state\":\"up\"},"
		  "{\"id\":4,\"addr\":\"10.0.0.4:9092\",\"state\":\"unknown(9)\"},"
		  "{\"id\":5,\"addr\":\"10.0.0.5:9092\",\"state\":null}]}\n",
		  "broker show --json");
	nlmsg_free(m);

	m = krep_genl_msg_new(FAMILY, KREP_CMD_BROKER_GET, 0, 0);
	CHECK_STR(reply_text(m, false),
		  "broker -  cluster -  generation -\nlisten -\n"
		  "kafka -  advertised -\ncluster secret -\nlog dir -\n",
		  "unconfigured broker, text");
	CHECK_STR(reply_text(m, true),
		  "{\"broker_id\":null,\"cluster_id\":null,\"listen\":null,"
		  "\"kafka_listen\":null,\"kafka_advertised\":null,"
		  "\"cluster_secret\":null,\"log_dir\":null,"
		  "\"generation\":null,\"peers\":[]}\n",
		  "unconfigured broker, JSON nulls");
	nlmsg_free(m);

	m = krep_genl_msg_new(FAMILY, KREP_CMD_BROKER_GET, 0, 0);
	nla_put_u32(m, KREP_A_BROKER_ID, 0);
	nla_put_string(m, KREP_A_CLUSTER_ID, "a\"b\\c\n");
	nla_put_u32(m, KREP_A_GENERATION, 0);
	nla_put_u8(m, KREP_A_AUTH, 0);
	CHECK_STR(reply_text(m, true),
		  "{\"broker_id\":0,\"cluster_id\":\"a\\\"b\\\\c\\n\","
		  "\"listen\":null,\"kafka_listen\":null,"
		  "\"kafka_advertised\":null,\"cluster_secret\":false,"
		  "\"log_dir\":null,\"generation\":0,\"peers\":[]}\n",
		  "JSON escapes the cluster id");
	nlmsg_free(m);

	m = krep_genl_msg_new(FAMILY, KREP_CMD_BROKER_GET, 0, 0);
	nla_put_u16(m, KREP_A_BROKER_ID, 1);
	CHECK_STR(reply_text(m, false), "(error)",
		  "malformed reply is an error");
	nlmsg_free(m);
}

/* ---- JSON -------------------------------------------------------------- */

static const char *escaped(const char *s, size_t len)
{
	static char out[256];
	FILE *f = fmemopen(out, sizeof(out), "w");

	if (!f)
		return "(fmemopen failed)";
	json_escape(f, s, len);
	fclose(f);
	return out;
}

static void test_json(void)
{
	static char out[256];
	struct json j;
	FILE *f;

	CHECK_STR(escaped("plain", 5), "\"plain\"", "plain string");
	CHECK_STR(escaped("q\"b\\s/", 6), "\"q\\\"b\\\\s/\"",
		  "quote and backslash");
	CHECK_STR(escaped("\b\f\n\r\t\x01\x1f\x7f", 8),
		  "\"\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\"",
		  "control characters");
	CHECK_STR(escaped("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14),
		  "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
		  "valid UTF-8 passes through");
	CHECK_STR(escaped("a\xff" "b\xc3", 4), "\"a\\ufffdb\\ufffd\"",
		  "invalid UTF-8 becomes U+FFFD");
	CHECK_STR(escaped("\xc0\xaf\xed\xa0\x80", 5),
		  "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"",
		  "overlong and surrogate encodings rejected");
	CHECK_STR(escaped("a\0b", 3), "\"a\\u0000b\"", "NUL byte");

	f = fmemopen(out, sizeof(out), "w");
	json_init(&j, f);
	json_obj_begin(&j);
	json_key(&j, "a");
	json_arr_begin(&j);
	json_u64(&j, 18446744073709551615ULL);
	json_s64(&j, -5);
	json_bool(&j, true);
	json_null(&j);
	json_obj_begin(&j);
	json_obj_end(&j);
	json_arr_end(&j);
	json_key(&j, "b");
	json_str(&j, "x");
	json_obj_end(&j);
	fclose(f);
	CHECK_STR(out, "{\"a\":[18446744073709551615,-5,true,null,{}],\"b\":\"x\"}",
		  "writer places commas and colons");
}

/* ---- event printer ----------------------------------------------------- */

static void test_attrs_print(void)
{
	static char out[1024];
	struct nl_msg *m;
	struct nlattr *n;
	struct genlmsghdr *gh;
	FILE *f;

	m = krep_genl_msg_new(FAMILY, 42, 0, 0);
	nla_put_u32(m, KREP_A_BROKER_ID, 1);
	nla_put_string(m, KREP_A_CLUSTER_ID, "krep-test");
	put_ep(m, KREP_A_LISTEN, "[::1]:9092");
	n = nla_nest_start(m, KREP_A_PEERS | NLA_F_NESTED);
	put_peer(m, 2, "10.0.0.2:9092", KREP_PEER_UP);
	nla_nest_end(m, n);
	nla_put_u16(m, KREP_A_KAFKA_ERROR, (uint16_t)19);
	nla_put_u16(m, KREP_A_GENERATION, 1);
	nla_put_u32(m, 99, 0);

	gh = nlmsg_data(nlmsg_hdr(m));
	f = fmemopen(out, sizeof(out), "w");
	krep_attrs_print(f, &krep_attr_space, genlmsg_attrdata(gh, 0),
			 genlmsg_attrlen(gh, 0));
	fclose(f);
	CHECK_STR(out,
		  "broker_id=1 cluster_id=\"krep-test\" listen=[::1]:9092 "
		  "peers={peer={id=2 ep=10.0.0.2:9092 state=up(2)}} "
		  "kafka_error=NOT_ENOUGH_REPLICAS(19) "
		  "generation=<bad length 2> attr#99=<4 bytes>",
		  "event attributes decoded");
	nlmsg_free(m);

	CHECK(krep_kafka_error_name(-1) &&
	      !strcmp(krep_kafka_error_name(-1), "UNKNOWN_SERVER_ERROR") &&
	      !krep_kafka_error_name(12345), "Kafka error names");
}

/* ---- Kafka error codes in the extack cookie --------------------------- */

static void add_cookie(struct nlmsghdr *nlh, int16_t kerr)
{
	struct krep_err_cookie ck = { .kafka_error = kerr };

	nlh->nlmsg_len += put_tlv((char *)nlh + nlh->nlmsg_len,
				  NLMSGERR_ATTR_COOKIE, &ck, sizeof(ck));
}

/* NLMSGERR_ATTR_POLICY with an unsigned range, as the kernel sends it */
static void add_policy(struct nlmsghdr *nlh, uint64_t min, uint64_t max)
{
	char *p = (char *)nlh + nlh->nlmsg_len;
	struct nlattr *nest = (struct nlattr *)p;
	size_t off = NLA_HDRLEN;
	uint32_t type = NL_ATTR_TYPE_U32;

	off += put_tlv(p + off, NL_POLICY_TYPE_ATTR_TYPE, &type, 4);
	off += put_tlv(p + off, NL_POLICY_TYPE_ATTR_MIN_VALUE_U, &min, 8);
	off += put_tlv(p + off, NL_POLICY_TYPE_ATTR_MAX_VALUE_U, &max, 8);
	nest->nla_type = NLMSGERR_ATTR_POLICY | NLA_F_NESTED;
	nest->nla_len = off;
	nlh->nlmsg_len += NLA_ALIGN(off);
}

/* The Kafka code of a policy refusal, by command and attribute path. */
static void test_policy_kafka_error(void)
{
	static char buf[4096] __attribute__((aligned(8)));
	struct krep_topic_create tc = { .name = "t", .partitions = 1,
					.replication_factor = 1 };
	struct krep_tconfig cfg = { 0 };
	struct krep_extack ea;
	struct nlmsghdr *nlh;
	struct nl_msg *req;
	char why[128];
	uint32_t off;

	CHECK(krep_policy_kafka_error(KREP_CMD_TOPIC_NEW,
				      "config.min_insync_replicas") ==
	      KREP_KERR_INVALID_CONFIG &&
	      krep_policy_kafka_error(KREP_CMD_FETCH, "max_bytes") ==
	      KREP_KERR_INVALID_FETCH_SIZE &&
	      krep_policy_kafka_error(KREP_CMD_PRODUCE, "timeout_ms") ==
	      KREP_KERR_INVALID_REQUEST &&
	      krep_policy_kafka_error(KREP_CMD_TXN, "producer_epoch") ==
	      KREP_KERR_INVALID_REQUEST &&
	      krep_policy_kafka_error(KREP_CMD_BROKER_SET, "listen.port") ==
	      KREP_KERR_NONE,
	      "policy refusals: INVALID_CONFIG, INVALID_FETCH_SIZE, INVALID_REQUEST; none for BROKER_SET");

	/* TOPIC_NEW config.min_insync_replicas=0, as the kernel refuses it */
	tc.cfg.has[KREP_TCFG_MIN_INSYNC_REPLICAS] = true;
	tc.cfg.v[KREP_TCFG_MIN_INSYNC_REPLICAS] = 0;
	req = krep_topic_create_msg(FAMILY, &tc);
	off = offset_of(req, (const int []){ KREP_A_TOPIC_CONFIG,
			KREP_A_TCFG_MIN_INSYNC_REPLICAS }, 2);
	nlh = make_err(buf, req, -ERANGE, true, "integer out of range", true,
		       off, false, 0, 0);
	add_policy(nlh, 1, 65);
	CHECK(!krep_extack_parse(nlh, &ea) && !ea.has_kerr,
	      "a policy refusal carries no cookie");
	CHECK_STR(extack_text(nlh, -ERANGE, req),
		  "test: Numerical result out of range: integer out of range (attribute config.min_insync_replicas, allowed 1..65) [INVALID_CONFIG]\n",
		  "TOPIC_NEW's config refused by the policy: INVALID_CONFIG and the allowed range");
	nlmsg_free(req);

	/* krepctl and krepd refuse it before the kernel does */
	CHECK(!krep_tconfig_parse("min_insync_replicas=2,segment_bytes=4096,retention_bytes=-1,unclean_leader_election=true",
				  &cfg, why, sizeof(why)) &&
	      !krep_tconfig_check(&cfg, why, sizeof(why)),
	      "krep_tconfig_check: values the kernel takes");
	CHECK(!krep_tconfig_parse("min.insync.replicas=0", &cfg, why,
				  sizeof(why)) &&
	      krep_tconfig_check(&cfg, why, sizeof(why)) == -ERANGE &&
	      !strcmp(why, "min_insync_replicas must be 1..65, not 0"),
	      "krep_tconfig_check: min_insync_replicas=0 (%s)", why);
	memset(&cfg, 0, sizeof(cfg));
	CHECK(!krep_tconfig_parse("flush.messages=1,flush.ms=0", &cfg, why,
				  sizeof(why)) &&
	      !krep_tconfig_check(&cfg, why, sizeof(why)) &&
	      cfg.has[KREP_TCFG_FLUSH_MESSAGES] &&
	      cfg.v[KREP_TCFG_FLUSH_MESSAGES] == 1 &&
	      !krep_tconfig_parse("flush_messages=0", &cfg, why, sizeof(why)) &&
	      krep_tconfig_check(&cfg, why, sizeof(why)) == -ERANGE &&
	      strstr(why, "flush_messages must be 1.."),
	      "krep_tconfig: flush.messages=1, flush.ms=0 taken; flush_messages=0 refused (%s)",
	      why);
	memset(&cfg, 0, sizeof(cfg));
	CHECK(!krep_tconfig_parse("retention_bytes=-2", &cfg, why, sizeof(why)) &&
	      krep_tconfig_check(&cfg, why, sizeof(why)) == -ERANGE &&
	      strstr(why, "retention_bytes must be -1..") &&
	      !krep_tconfig_parse("retention_bytes=-1,replica_lag_time_max_ms=9",
				  &cfg, why, sizeof(why)) &&
	      krep_tconfig_check(&cfg, why, sizeof(why)) == -ERANGE &&
	      !strcmp(why, "replica_lag_time_max_ms must be 10..3600000, not 9"),
	      "krep_tconfig_check: retention_bytes=-2, replica_lag_time_max_ms=9 (%s)",
	      why);
}

struct kerr_case {
	struct krepctl *ctl;
	struct nl_msg *req;
};

static void kernel_error_fn(void *arg)
{
	struct kerr_case *kc = arg;

	krepctl_kernel_error(kc->ctl, kc->req);
}

static void local_error_fn(void *arg)
{
	krepctl_error(arg, KREP_KERR_MESSAGE_TOO_LARGE, -EMSGSIZE,
		      "record %d is \"big\"", 3);
}

static void test_kafka_error(void)
{
	static char buf[4096] __attribute__((aligned(8)));
	static char out[1024], err[1024];
	struct krepctl ctl = { 0 };
	struct kerr_case kc = { .ctl = &ctl };
	struct krep_extack ea;
	struct nlmsghdr *nlh;
	struct nl_msg *req;
	uint32_t off;

	req = krepctl_part_msg(FAMILY, KREP_CMD_FETCH, "orders", 0, 64);
	nla_put_u64(req, KREP_A_OFFSET, 5);
	kc.req = req;

	nlh = make_err(buf, req, -ERANGE, true,
		       "offset below the log start offset", false, 0, false,
		       0, 0);
	add_cookie(nlh, KREP_KERR_OFFSET_OUT_OF_RANGE);
	CHECK(!krep_extack_parse(nlh, &ea) && ea.has_kerr &&
	      ea.kerr == KREP_KERR_OFFSET_OUT_OF_RANGE,
	      "cookie parsed as Kafka's error code");
	CHECK_STR(extack_text(nlh, -ERANGE, req),
		  "test: Numerical result out of range: offset below the log start offset [OFFSET_OUT_OF_RANGE]\n",
		  "Kafka's error name after the message");

	nlh = make_err(buf, req, -EINVAL, true, "bad", false, 0, false, 0, 0);
	add_cookie(nlh, 999);
	CHECK_STR(extack_text(nlh, -EINVAL, req),
		  "test: Invalid argument: bad [kafka error 999]\n",
		  "unknown Kafka code printed by number");

	/* krepctl prints the kernel's error, and with --json on stdout too */
	nlh = make_err(buf, req, -ERANGE, true,
		       "offset below the log start offset", false, 0, false,
		       0, 0);
	add_cookie(nlh, KREP_KERR_OFFSET_OUT_OF_RANGE);
	krep_extack_parse(nlh, &ea);
	ctl.gl.st.err = -ERANGE;
	ctl.gl.st.ea = ea;
	capture_both(kernel_error_fn, &kc, out, sizeof(out), err, sizeof(err));
	CHECK(!*out && !strcmp(err, "test: Numerical result out of range: offset below the log start offset [OFFSET_OUT_OF_RANGE]\n"),
	      "kernel error: stderr only without --json");
	ctl.json = true;
	capture_both(kernel_error_fn, &kc, out, sizeof(out), err, sizeof(err));
	CHECK_STR(out, "{\"error\":\"OFFSET_OUT_OF_RANGE\",\"code\":1,\"errno\":\"ERANGE\",\"message\":\"offset below the log start offset\"}\n",
		  "kernel error with --json: object on stdout");
	CHECK(strstr(err, "[OFFSET_OUT_OF_RANGE]") != NULL,
	      "kernel error with --json: still on stderr");

	/* a policy error: no Kafka code, an attribute */
	off = offset_of(req, (const int []){ KREP_A_OFFSET }, 1);
	nlh = make_err(buf, req, -ERANGE, true, "integer out of range", true,
		       off, false, 0, 0);
	krep_extack_parse(nlh, &ea);
	ctl.gl.st.ea = ea;
	capture_both(kernel_error_fn, &kc, out, sizeof(out), err, sizeof(err));
	CHECK_STR(out, "{\"error\":\"INVALID_REQUEST\",\"code\":42,\"errno\":\"ERANGE\",\"message\":\"integer out of range\",\"attribute\":\"offset\"}\n",
		  "policy error with --json: INVALID_REQUEST inferred, attribute path");
	CHECK_STR(err, "test: Numerical result out of range: integer out of range (attribute offset) [INVALID_REQUEST]\n",
		  "policy error text names the attribute and Kafka's code");

	/* the policy's range (NLMSGERR_ATTR_POLICY), and FETCH's own code */
	nla_put_u32(req, KREP_A_MAX_BYTES, 0);
	off = offset_of(req, (const int []){ KREP_A_MAX_BYTES }, 1);
	nlh = make_err(buf, req, -ERANGE, true, "integer out of range", true,
		       off, false, 0, 0);
	add_policy(nlh, 1, 1 << 20);
	CHECK(!krep_extack_parse(nlh, &ea) && ea.has_range && !ea.has_kerr &&
	      ea.min_u == 1 && ea.max_u == 1 << 20,
	      "NLMSGERR_ATTR_POLICY parsed as the allowed range");
	ctl.gl.st.ea = ea;
	capture_both(kernel_error_fn, &kc, out, sizeof(out), err, sizeof(err));
	CHECK_STR(out, "{\"error\":\"INVALID_FETCH_SIZE\",\"code\":4,\"errno\":\"ERANGE\",\"message\":\"integer out of range\",\"attribute\":\"max_bytes\",\"allowed\":\"1..1048576\"}\n",
		  "fetch max_bytes out of the policy's range: INVALID_FETCH_SIZE, allowed range in the JSON");
	CHECK_STR(err, "test: Numerical result out of range: integer out of range (attribute max_bytes, allowed 1..1048576) [INVALID_FETCH_SIZE]\n",
		  "fetch max_bytes out of the policy's range: text with the allowed range");

	/* no extack message: strerror */
	nlh = make_err(buf, req, -ENOENT, true, NULL, false, 0, false, 0, 0);
	add_cookie(nlh, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION);
	krep_extack_parse(nlh, &ea);
	ctl.gl.st.err = -ENOENT;
	ctl.gl.st.ea = ea;
	capture_both(kernel_error_fn, &kc, out, sizeof(out), err, sizeof(err));
	CHECK_STR(out, "{\"error\":\"UNKNOWN_TOPIC_OR_PARTITION\",\"code\":3,\"errno\":\"ENOENT\",\"message\":\"No such file or directory\"}\n",
		  "no message: strerror in the JSON");

	capture_both(local_error_fn, &ctl, out, sizeof(out), err, sizeof(err));
	CHECK_STR(out, "{\"error\":\"MESSAGE_TOO_LARGE\",\"code\":10,\"errno\":\"EMSGSIZE\",\"message\":\"record 3 is \\\"big\\\"\"}\n",
		  "local error as JSON");
	CHECK_STR(err, "test: Message too long: record 3 is \"big\" [MESSAGE_TOO_LARGE]\n",
		  "local error as text");
	nlmsg_free(req);
}

/* ---- command lines of the data commands ------------------------------- */

/* Fill argv from a NULL-terminated list; returns argc. */
static int mkargv(char **argv, int max, va_list ap)
{
	const char *a;
	int argc = 0;

	while ((a = va_arg(ap, const char *)) && argc < max - 1)
		argv[argc++] = (char *)a;
	argv[argc] = NULL;
	return argc;
}

#define PARSE_FN(name, type, fn)					\
static int name(type *out, const char **err, ...)			\
{									\
	char *argv[32];							\
	va_list ap;							\
	int argc, ret;							\
									\
	va_start(ap, err);						\
	argc = mkargv(argv, 32, ap);					\
	va_end(ap);							\
	capture_begin();						\
	ret = fn(argc, argv, out);					\
	*err = capture_end();						\
	return ret;							\
}

PARSE_FN(produce_p, struct krep_produce_args, krep_produce_parse)
PARSE_FN(consume_p, struct krep_consume_args, krep_consume_parse)
PARSE_FN(offsets_p, struct krep_offsets_args, krep_offsets_parse)
PARSE_FN(delete_p, struct krep_delete_records_args, krep_delete_records_parse)
PARSE_FN(txn_p, struct krep_txn_args, krep_txn_parse)
PARSE_FN(create_p, struct krep_topic_create, krep_topic_create_parse)

static void test_produce_parse(void)
{
	struct krep_produce_args a;
	const char *err;
	int ret;

	ret = produce_p(&a, &err, "produce", "orders", NULL);
	CHECK(!ret && !strcmp(a.topic, "orders") && a.partition == 0 &&
	      !a.has_acks && !a.has_timeout && !a.key && !a.key_sep &&
	      a.batch == 1 && !a.txn && !a.has_ts && !a.nheaders && !*err,
	      "produce TOPIC: defaults");
	ret = produce_p(&a, &err, "produce", "orders", "partition", "3",
			"acks", "all", "timeout", "500", "key", "k1", "-K",
			"::", "batch", "100", "txn", "42:7", "timestamp",
			"-5", "header", "a=1", "header", "b==2", "header",
			"c=", "--json", NULL);
	CHECK(!ret && a.partition == 3 && a.has_acks && a.acks == -1 &&
	      a.has_timeout && a.timeout_ms == 500 && !strcmp(a.key, "k1") &&
	      !strcmp(a.key_sep, "::") && a.batch == 100 && a.txn &&
	      a.producer_id == 42 && a.producer_epoch == 7 && a.has_ts &&
	      a.timestamp == -5 && a.nheaders == 3 &&
	      !strcmp(a.headers[1].key, "b==2") &&
	      !strcmp(a.headers[1].value, "=2") &&
	      !strcmp(a.headers[2].value, "") && a.json,
	      "produce with every keyword");
	CHECK(!produce_p(&a, &err, "produce", "t", NULL) && !a.has_partition &&
	      !a.rec_sep && !a.null_empty,
	      "produce without partition: by key, newline-separated");
	ret = produce_p(&a, &err, "produce", "t", "-p", "2", "-K\\t", "-D",
			"\\n--\\n", "-Z", NULL);
	CHECK(!ret && a.has_partition && a.partition == 2 &&
	      a.key_sep_len == 1 && a.key_sep[0] == '\t' &&
	      a.rec_sep_len == 4 && !memcmp(a.rec_sep, "\n--\n", 4) &&
	      a.null_empty, "produce -p N -KSEP -D SEP -Z, escapes decoded");
	ret = produce_p(&a, &err, "produce", "t", "--key-delimiter=:",
			"--partition", "1", "-k", "K", NULL);
	CHECK(!ret && a.key_sep_len == 1 && a.key_sep[0] == ':' &&
	      a.partition == 1 && !strcmp(a.key, "K"),
	      "produce --key-delimiter=SEP --partition N -k K");
	ret = produce_p(&a, &err, "produce", "t", "acks", "0", NULL);
	CHECK(!ret && a.acks == 0, "acks 0");
	ret = produce_p(&a, &err, "produce", "t", "acks", "-1", NULL);
	CHECK(!ret && a.acks == -1, "acks -1");
	ret = produce_p(&a, &err, "produce", "t", "--help", NULL);
	CHECK(ret == 1, "produce --help");

	static const struct {
		const char *args[5];
		const char *msg;
	} bad[] = {
		{ { NULL }, "missing topic" },
		{ { "t", "acks", "2" }, "acks must be 0, 1 or all" },
		{ { "t", "batch", "0" }, "batch must be" },
		{ { "t", "batch" }, "'batch' needs a value" },
		{ { "t", "partition", "x" }, "is not a number" },
		{ { "t", "partition", "1", "partition", "2" }, "given twice" },
		{ { "t", "txn", "42" }, "is not PRODUCER_ID:EPOCH" },
		{ { "t", "txn", "x:1" }, "producer id 'x'" },
		{ { "t", "txn", "1:65536" }, "producer epoch '65536'" },
		{ { "t", "txn", "9223372036854775808:0" }, "producer id" },
		{ { "t", "header", "novalue" }, "is not K=V" },
		{ { "t", "-K", "" }, "non-empty separator" },
		{ { "t", "-D", "\\q" }, "unknown escape" },
		{ { "t", "-p", "1", "partition", "2" }, "given twice" },
		{ { "t", "bogus", "1" }, "unknown keyword 'bogus'" },
		{ { "t", "timestamp", "1e3" }, "is not a number" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *const *x = bad[i].args;

		ret = produce_p(&a, &err, "produce", x[0], x[1], x[2], x[3],
				x[4], NULL);
		CHECK(ret < 0 && strstr(err, bad[i].msg) &&
		      strstr(err, " --help'.\n"),
		      "produce %s %s %s %s: %s", x[0] ?: "", x[1] ?: "",
		      x[2] ?: "", x[3] ?: "", bad[i].msg);
	}
}

static void test_consume_parse(void)
{
	struct krep_consume_args a;
	const char *err;
	int ret;

	ret = consume_p(&a, &err, "consume", "orders", NULL);
	CHECK(!ret && !strcmp(a.topic, "orders") && a.partition == 0 &&
	      a.start == KREP_START_BEGINNING && !a.has_count && !a.follow &&
	      a.isolation == KREP_READ_UNCOMMITTED &&
	      a.format == KREP_FORMAT_VALUE && a.max_bytes == 65531 &&
	      !a.has_wait && !a.json, "consume TOPIC: defaults");
	ret = consume_p(&a, &err, "consume", "-f", "orders", "partition", "2",
			"-o", "end", "-c", "10", "--isolation",
			"read_committed", "--format=full", "max-bytes", "4096",
			"wait", "250", "-j", NULL);
	CHECK(!ret && !strcmp(a.topic, "orders") && a.partition == 2 &&
	      a.start == KREP_START_END && a.has_count && a.count == 10 &&
	      a.follow && a.isolation == KREP_READ_COMMITTED &&
	      a.format == KREP_FORMAT_FULL && a.max_bytes == 4096 &&
	      a.has_wait && a.wait_ms == 250 && a.json,
	      "consume with every option, topic after an option");
	ret = consume_p(&a, &err, "consume", "t", "-o", "42", NULL);
	CHECK(!ret && a.start == KREP_START_OFFSET && a.start_arg == 42,
	      "-o OFFSET");
	ret = consume_p(&a, &err, "consume", "t", "--offset=-5", NULL);
	CHECK(!ret && a.start == KREP_START_FROM_END && a.start_arg == 5,
	      "--offset=-N");
	ret = consume_p(&a, &err, "consume", "t", "-o", "s@1700000000000",
			NULL);
	CHECK(!ret && a.start == KREP_START_TIME &&
	      a.start_arg == 1700000000000LL, "-o s@MS");
	ret = consume_p(&a, &err, "consume", "t", "-o", "beginning",
			"--isolation", "read_uncommitted", "--format", "value",
			NULL);
	CHECK(!ret && a.start == KREP_START_BEGINNING &&
	      a.isolation == KREP_READ_UNCOMMITTED &&
	      a.format == KREP_FORMAT_VALUE, "explicit defaults");
	ret = consume_p(&a, &err, "consume", "t", "-h", NULL);
	CHECK(ret == 1, "consume -h");

	static const struct {
		const char *args[4];
		const char *msg;
	} bad[] = {
		{ { NULL }, "missing topic" },
		{ { "t", "-o", "middle" }, "is not beginning, end" },
		{ { "t", "-o", "s@x" }, "is not beginning, end" },
		{ { "t", "-o" }, "'-o' needs a value" },
		{ { "t", "-c", "ten" }, "count 'ten'" },
		{ { "t", "--isolation", "serializable" }, "isolation must be" },
		{ { "t", "--format", "xml" }, "format must be" },
		{ { "t", "wait", "-1" }, "is not a number" },
		{ { "t", "-x" }, "unknown option '-x'" },
		{ { "t", "u" }, "unknown keyword 'u'" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *const *x = bad[i].args;

		ret = consume_p(&a, &err, "consume", x[0], x[1], x[2], x[3],
				NULL);
		CHECK(ret < 0 && strstr(err, bad[i].msg) &&
		      strstr(err, " --help'.\n"),
		      "consume %s %s %s: %s", x[0] ?: "", x[1] ?: "",
		      x[2] ?: "", bad[i].msg);
	}
}

static void test_partition_cmds_parse(void)
{
	struct krep_delete_records_args d;
	struct krep_offsets_args o;
	struct krep_txn_args t;
	const char *err;
	int ret;

	ret = offsets_p(&o, &err, "offsets", "t", NULL);
	CHECK(!ret && !strcmp(o.topic, "t") && !o.has_partition &&
	      o.timestamp == KREP_TS_LATEST,
	      "offsets: latest by default, every partition");
	ret = offsets_p(&o, &err, "offsets", "t", "-p", "2", NULL);
	CHECK(!ret && o.has_partition && o.partition == 2, "offsets -p N");
	ret = offsets_p(&o, &err, "offsets", "t", "--partition", "3", NULL);
	CHECK(!ret && o.has_partition && o.partition == 3,
	      "offsets --partition N");
	ret = offsets_p(&o, &err, "offsets", "t", "earliest", "partition",
			"1", NULL);
	CHECK(!ret && o.timestamp == KREP_TS_EARLIEST && o.partition == 1,
	      "offsets earliest partition 1");
	ret = offsets_p(&o, &err, "offsets", "t", "1700000000000", NULL);
	CHECK(!ret && o.timestamp == 1700000000000LL, "offsets TIME_MS");
	ret = offsets_p(&o, &err, "offsets", "t", "earliest", "latest", NULL);
	CHECK(ret < 0 && strstr(err, "more than one"), "offsets: two times");
	ret = offsets_p(&o, &err, "offsets", "t", "soon", NULL);
	CHECK(ret < 0 && strstr(err, "unexpected argument 'soon'"),
	      "offsets: bad time");
	ret = offsets_p(&o, &err, "offsets", NULL);
	CHECK(ret < 0 && strstr(err, "missing topic"), "offsets: no topic");

	ret = delete_p(&d, &err, "delete-records", "t", "before", "10", NULL);
	CHECK(!ret && !strcmp(d.topic, "t") && d.before == 10 &&
	      d.partition == 0, "delete-records before 10");
	ret = delete_p(&d, &err, "delete-records", "t", NULL);
	CHECK(ret < 0 && strstr(err, "missing 'before OFFSET'"),
	      "delete-records without before");
	ret = delete_p(&d, &err, "delete-records", "t", "before", "x", NULL);
	CHECK(ret < 0 && strstr(err, "offset 'x' is not a number"),
	      "delete-records before x");

	ret = txn_p(&t, &err, "txn", "t", "partition", "4", "17:3", "commit",
		    NULL);
	CHECK(!ret && t.partition == 4 && t.producer_id == 17 &&
	      t.producer_epoch == 3 && t.op == KREP_TXN_COMMIT,
	      "txn TOPIC partition 4 17:3 commit");
	ret = txn_p(&t, &err, "txn", "t", "abort", "1:0", NULL);
	CHECK(!ret && t.op == KREP_TXN_ABORT && t.producer_id == 1,
	      "txn: op before PID:EPOCH");
	ret = txn_p(&t, &err, "txn", "t", "1:0", NULL);
	CHECK(ret < 0 && strstr(err, "missing begin, commit or abort"),
	      "txn without an operation");
	ret = txn_p(&t, &err, "txn", "t", "begin", NULL);
	CHECK(ret < 0 && strstr(err, "missing PID:EPOCH"), "txn without PID");
	ret = txn_p(&t, &err, "txn", "t", "1:0", "begin", "commit", NULL);
	CHECK(ret < 0 && strstr(err, "more than one"), "txn: two operations");
}

static void test_topic_create(void)
{
	struct krep_topic_create tc;
	const struct nlattr *a, *x, *cfg;
	const struct genlmsghdr *gh;
	struct nl_msg *msg;
	const char *err;
	int ret, len;

	ret = create_p(&tc, &err, "create", "orders", NULL);
	CHECK(!ret && !strcmp(tc.name, "orders") && tc.partitions == 1 &&
	      tc.replication_factor == 1, "topic create: 1 partition, RF 1");
	msg = krep_topic_create_msg(FAMILY, &tc);
	gh = nlmsg_data(nlmsg_hdr(msg));
	a = genlmsg_attrdata(gh, 0);
	len = genlmsg_attrlen(gh, 0);
	CHECK(gh->cmd == KREP_CMD_TOPIC_NEW &&
	      (x = find(a, len, KREP_A_TOPIC)) && !strcmp(nla_data(x), "orders") &&
	      (x = find(a, len, KREP_A_PARTITIONS)) && nla_get_u32(x) == 1 &&
	      (x = find(a, len, KREP_A_REPLICATION_FACTOR)) &&
	      nla_get_u32(x) == 1 && !find(a, len, KREP_A_TOPIC_CONFIG),
	      "TOPIC_NEW: name, partitions, RF, no config nest");
	nlmsg_free(msg);

	ret = create_p(&tc, &err, "create", "--topic", "o2", "--partitions",
		       "4", "--replication-factor", "2", "--config",
		       "min.insync.replicas=2", NULL);
	CHECK(!ret && !strcmp(tc.name, "o2") && tc.partitions == 4 &&
	      tc.replication_factor == 2 &&
	      tc.cfg.v[KREP_TCFG_MIN_INSYNC_REPLICAS] == 2,
	      "topic create with kafka-topics' long options");
	ret = create_p(&tc, &err, "create", "o3", "partitions", "2",
		       "--partitions", "3", NULL);
	CHECK(ret < 0 && strstr(err, "'partitions' given twice"),
	      "a keyword and its long option are the same: given twice");
	ret = create_p(&tc, &err, "create", "orders", "partitions", "6",
		       "replication-factor", "3", "config",
		       "min.insync.replicas=2,retention_bytes=-1",
		       "config", "unclean_leader_election=true", NULL);
	CHECK(!ret && tc.partitions == 6 && tc.replication_factor == 3 &&
	      tc.cfg.has[KREP_TCFG_MIN_INSYNC_REPLICAS] &&
	      tc.cfg.v[KREP_TCFG_MIN_INSYNC_REPLICAS] == 2 &&
	      tc.cfg.has[KREP_TCFG_RETENTION_BYTES] &&
	      tc.cfg.v[KREP_TCFG_RETENTION_BYTES] == -1 &&
	      tc.cfg.v[KREP_TCFG_UNCLEAN_LEADER_ELECTION] == 1 &&
	      !tc.cfg.has[KREP_TCFG_SEGMENT_BYTES],
	      "topic create with config, Kafka's dotted names");
	msg = krep_topic_create_msg(FAMILY, &tc);
	gh = nlmsg_data(nlmsg_hdr(msg));
	cfg = find(genlmsg_attrdata(gh, 0), genlmsg_attrlen(gh, 0),
		   KREP_A_TOPIC_CONFIG);
	CHECK(is_nest(cfg) &&
	      (x = find(nla_data(cfg), nla_len(cfg),
			KREP_A_TCFG_MIN_INSYNC_REPLICAS)) &&
	      nla_len(x) == 4 && nla_get_u32(x) == 2 &&
	      (x = find(nla_data(cfg), nla_len(cfg),
			KREP_A_TCFG_RETENTION_BYTES)) &&
	      nla_len(x) == 8 && (int64_t)nla_get_u64(x) == -1 &&
	      (x = find(nla_data(cfg), nla_len(cfg),
			KREP_A_TCFG_UNCLEAN_LEADER_ELECTION)) &&
	      nla_len(x) == 1 && nla_get_u8(x) == 1 &&
	      !find(nla_data(cfg), nla_len(cfg), KREP_A_TCFG_SEGMENT_BYTES),
	      "config nest: u32, s64 and u8 keys, only those given");
	nlmsg_free(msg);

	static const struct {
		const char *args[4];
		const char *msg;
	} bad[] = {
		{ { NULL }, "missing topic name" },
		{ { "t", "partitions" }, "'partitions' needs a value" },
		{ { "t", "partitions", "-1" }, "is not a number" },
		{ { "t", "rf", "1", "replication-factor" }, "needs a value" },
		{ { "t", "config", "foo=1" }, "unknown config key 'foo'" },
		{ { "t", "config", "segment_bytes" }, "is not KEY=VAL" },
		{ { "t", "config", "segment_bytes=4294967296" }, "0..4294967295" },
		{ { "t", "config", "unclean_leader_election=yes" }, "is not a number" },
		{ { "t", "config", "" }, "config needs KEY=VAL" },
		{ { "t", "colour", "red" }, "unknown keyword 'colour'" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *const *x2 = bad[i].args;

		ret = create_p(&tc, &err, "create", x2[0], x2[1], x2[2], x2[3],
			       NULL);
		CHECK(ret < 0 && strstr(err, bad[i].msg) &&
		      strstr(err, " --help'.\n"),
		      "topic create %s %s %s %s: %s", x2[0] ?: "", x2[1] ?: "",
		      x2[2] ?: "", x2[3] ?: "", bad[i].msg);
	}
}

/* ---- PARTITION_GET replies ---------------------------------------------- */

static void put_ids(struct nl_msg *m, int type, const uint32_t *ids, int n)
{
	struct nlattr *nest = nla_nest_start(m, type | NLA_F_NESTED);
	int i;

	for (i = 0; i < n; i++)
		nla_put_u32(m, KREP_A_BROKER_ID, ids[i]);
	nla_nest_end(m, nest);
}

static const char *partition_text(struct nl_msg *m, bool json)
{
	static char out[2048];
	FILE *f = fmemopen(out, sizeof(out), "w");
	int err;

	if (!f)
		return "(fmemopen failed)";
	capture_begin();
	err = krep_partition_reply_print(m, json, f);
	capture_end();
	fclose(f);
	return err ? "(error)" : out;
}

static void test_partition_reply(void)
{
	static const uint32_t ar[] = { 1, 2, 3 }, isr[] = { 1, 3 };
	struct nlattr *rs, *r;
	struct nl_msg *m;

	m = krep_genl_msg_new(FAMILY, KREP_CMD_PARTITION_GET, 0, 0);
	nla_put_string(m, KREP_A_TOPIC, "orders");
	nla_put_u32(m, KREP_A_PARTITION, 0);
	nla_put_u8(m, KREP_A_ROLE, KREP_ROLE_LEADER);
	nla_put_u32(m, KREP_A_LEADER, 1);
	nla_put_u32(m, KREP_A_LEADER_EPOCH, 4);
	nla_put_u32(m, KREP_A_PARTITION_EPOCH, 7);
	put_ids(m, KREP_A_REPLICAS, ar, 3);
	put_ids(m, KREP_A_ISR, isr, 2);
	nla_put_u64(m, KREP_A_LEO, 10);
	nla_put_u64(m, KREP_A_HW, 9);
	nla_put_u64(m, KREP_A_LSO, 8);
	nla_put_u64(m, KREP_A_LOG_START, 2);
	nla_put_u64(m, KREP_A_LOW_WATERMARK, 1);
	nla_put_u64(m, KREP_A_LOG_BYTES, 1234);
	rs = nla_nest_start(m, KREP_A_INELIGIBLE | NLA_F_NESTED);
	nla_put_u32(m, KREP_A_BROKER_ID, 2);
	nla_nest_end(m, rs);
	rs = nla_nest_start(m, KREP_A_REMOTES | NLA_F_NESTED);
	r = nla_nest_start(m, KREP_A_REMOTE | NLA_F_NESTED);
	nla_put_u32(m, KREP_A_REMOTE_ID, 2);
	nla_put_u64(m, KREP_A_REMOTE_LOG_START, 0);
	nla_put_u64(m, KREP_A_REMOTE_FETCH_AGE_MS, 40000);
	nla_put_u64(m, KREP_A_REMOTE_CAUGHT_UP_AGE_MS, 41000);
	nla_put_u8(m, KREP_A_REMOTE_IN_ISR, 0);
	nla_nest_end(m, r);
	r = nla_nest_start(m, KREP_A_REMOTE | NLA_F_NESTED);
	nla_put_u32(m, KREP_A_REMOTE_ID, 3);
	nla_put_u64(m, KREP_A_REMOTE_LEO, 9);
	nla_put_u64(m, KREP_A_REMOTE_LOG_START, 1);
	nla_put_u64(m, KREP_A_REMOTE_FETCH_AGE_MS, 12);
	nla_put_u64(m, KREP_A_REMOTE_CAUGHT_UP_AGE_MS, 12);
	nla_put_u8(m, KREP_A_REMOTE_IN_ISR, 1);
	nla_nest_end(m, r);
	nla_nest_end(m, rs);
	CHECK_STR(partition_text(m, false),
		  "orders 0 leader=1 epoch=4 role=leader replicas=1,2,3 isr=1,3 "
		  "leo=10 hw=9 lso=8 log_start=2 lw=1 bytes=1234 partition_epoch=7 "
		  "epochs=- ineligible=2\n"
		  "  remote 2 leo=- log_start=0 fetch_age_ms=40000 caught_up_age_ms=41000 in_isr=0\n"
		  "  remote 3 leo=9 log_start=1 fetch_age_ms=12 caught_up_age_ms=12 in_isr=1\n",
		  "topic describe text, with the remote replicas");
	CHECK_STR(partition_text(m, true),
		  "[{\"topic\":\"orders\",\"partition\":0,\"role\":\"leader\","
		  "\"leader\":1,\"leader_epoch\":4,\"partition_epoch\":7,"
		  "\"replicas\":[1,2,3],\"isr\":[1,3],\"leo\":10,\"hw\":9,"
		  "\"lso\":8,\"log_start\":2,\"low_watermark\":1,\"log_bytes\":1234,"
		  "\"epochs\":null,\"pending_isr\":null,\"ineligible\":[2],"
		  "\"remotes\":[{\"id\":2,\"leo\":null,\"log_start\":0,"
		  "\"fetch_age_ms\":40000,\"caught_up_age_ms\":41000,\"in_isr\":false},"
		  "{\"id\":3,\"leo\":9,\"log_start\":1,\"fetch_age_ms\":12,"
		  "\"caught_up_age_ms\":12,\"in_isr\":true}]}]\n",
		  "topic describe --json");
	nlmsg_free(m);

	m = krep_genl_msg_new(FAMILY, KREP_CMD_PARTITION_GET, 0, 0);
	nla_put_string(m, KREP_A_TOPIC, "o");
	nla_put_u32(m, KREP_A_PARTITION, 1);
	nla_put_u8(m, KREP_A_ROLE, 7);
	/* an empty nest, as the kernel sends one (libnl would drop it) */
	nla_put(m, KREP_A_ISR | NLA_F_NESTED, 0, NULL);
	CHECK_STR(partition_text(m, false),
		  "o 1 leader=- epoch=- role=unknown(7) replicas=- isr=- leo=- "
		  "hw=- lso=- log_start=- lw=- bytes=- partition_epoch=- epochs=-\n",
		  "a follower's sparse reply: '-' for what is missing");
	CHECK_STR(partition_text(m, true),
		  "[{\"topic\":\"o\",\"partition\":1,\"role\":\"unknown(7)\","
		  "\"leader\":null,\"leader_epoch\":null,\"partition_epoch\":null,"
		  "\"replicas\":null,\"isr\":[],\"leo\":null,\"hw\":null,"
		  "\"lso\":null,\"log_start\":null,\"low_watermark\":null,"
		  "\"log_bytes\":null,\"epochs\":null,\"pending_isr\":null,"
		  "\"ineligible\":null,\"remotes\":null}]\n",
		  "sparse reply as JSON: nulls");
	nlmsg_free(m);

	m = krep_genl_msg_new(FAMILY, KREP_CMD_PARTITION_GET, 0, 0);
	nla_put_string(m, KREP_A_TOPIC, "o");
	CHECK_STR(partition_text(m, false), "(error)",
		  "reply without a partition index is malformed");
	nlmsg_free(m);
}

/* ---- README's example of topic describe ---------------------------------- */

/*
 * The indented block that follows the line "    $ CMD" in README.md, up to
 * the next blank line or "$ " line; with @squeeze, JSON's whitespace
 * outside strings dropped. NULL when README has no such example.
 */
static char *readme_example(const char *cmd, bool squeeze)
{
	char line[4096], want[512], *out = NULL;
	bool in = false, str = false;
	size_t n = 0, i;
	FILE *f;

	f = fopen("../README.md", "r");
	if (!f)
		return NULL;
	snprintf(want, sizeof(want), "    $ %s\n", cmd);
	out = calloc(1, 65536);
	while (out && fgets(line, sizeof(line), f)) {
		if (!in) {
			in = !strcmp(line, want);
			continue;
		}
		if (strncmp(line, "    ", 4) || !strncmp(line, "    $ ", 6))
			break;
		for (i = 4; line[i] && n < 65535; i++) {
			if (squeeze && !str && (line[i] == ' ' || line[i] == '\n'))
				continue;
			if (line[i] == '"' && (i == 0 || line[i - 1] != '\\'))
				str = !str;
			out[n++] = line[i];
		}
	}
	fclose(f);
	if (out && (!in || !n)) {
		free(out);
		return NULL;
	}
	if (out && squeeze)
		out[n++] = '\n';
	return out;
}

/*
 * README shows "krepctl topic describe orders" and its --json form for a
 * follower of orders-1 whose leader epoch cache holds two epochs: the
 * same reply must print exactly that, "epochs" included.
 */
static void test_readme_describe(void)
{
	static const uint32_t ar[] = { 2, 3, 1 };
	struct nlattr *es, *e;
	struct nl_msg *m;
	char *want;
	int i;

	m = krep_genl_msg_new(FAMILY, KREP_CMD_PARTITION_GET, 0, 0);
	nla_put_string(m, KREP_A_TOPIC, "orders");
	nla_put_u32(m, KREP_A_PARTITION, 1);
	nla_put_u8(m, KREP_A_ROLE, KREP_ROLE_FOLLOWER);
	nla_put_u32(m, KREP_A_LEADER, 2);
	nla_put_u32(m, KREP_A_LEADER_EPOCH, 1);
	nla_put_u32(m, KREP_A_PARTITION_EPOCH, 3);
	put_ids(m, KREP_A_REPLICAS, ar, 3);
	put_ids(m, KREP_A_ISR, ar, 3);
	nla_put_u64(m, KREP_A_LEO, 20);
	nla_put_u64(m, KREP_A_HW, 20);
	nla_put_u64(m, KREP_A_LSO, 20);
	nla_put_u64(m, KREP_A_LOG_START, 0);
	nla_put_u64(m, KREP_A_LOW_WATERMARK, 0);
	nla_put_u64(m, KREP_A_LOG_BYTES, 1710);
	es = nla_nest_start(m, KREP_A_EPOCHS | NLA_F_NESTED);
	for (i = 0; i < 2; i++) {
		e = nla_nest_start(m, KREP_A_EPOCH_ENTRY | NLA_F_NESTED);
		nla_put_u32(m, KREP_A_EPOCH_EPOCH, i);
		nla_put_u64(m, KREP_A_EPOCH_START, i * 12);
		nla_nest_end(m, e);
	}
	nla_nest_end(m, es);

	want = readme_example("krepctl topic describe orders", false);
	CHECK(want, "README.md has an example of 'krepctl topic describe orders'");
	if (want)
		CHECK_STR(partition_text(m, false), want,
			  "topic describe prints README's example");
	free(want);
	want = readme_example("krepctl --json topic describe orders", true);
	CHECK(want, "README.md has an example of 'krepctl --json topic describe orders'");
	if (want)
		CHECK_STR(partition_text(m, true), want,
			  "topic describe --json prints README's example, epochs included");
	free(want);
	nlmsg_free(m);
}

/* ---- transport, against nlctrl ----------------------------------------- */

static int count_reply(struct nl_msg *msg, void *arg)
{
	(void)msg;
	++*(int *)arg;
	return 0;
}

static void test_transport(void)
{
	struct krep_genl gl;
	struct nl_msg *m;
	const char *err;
	int ret, n = 0;

	if (krep_genl_connect(&gl)) {
		CHECK(0, "generic netlink socket");
		return;
	}
	gl.family = GENL_ID_CTRL;

	m = krep_genl_msg_new(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0, 0);
	nla_put_string(m, CTRL_ATTR_FAMILY_NAME, "nlctrl");
	capture_begin();
	ret = krep_genl_request(&gl, m, count_reply, &n);
	err = capture_end();
	CHECK(!ret && n == 1 && !*err, "request: one reply, then the ack");
	nlmsg_free(m);

	/* A one-byte u16: the policy rejects it and points at it. */
	m = krep_genl_msg_new(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0, 0);
	nla_put_u8(m, CTRL_ATTR_FAMILY_ID, 1);
	capture_begin();
	ret = krep_genl_request(&gl, m, count_reply, &n);
	err = capture_end();
	CHECK(ret < 0 && !strncmp(err, "test: ", 6) &&
	      strstr(err, strerror(-ret)) && strstr(err, "(attribute "),
	      "kernel error with extack message and offset: %.*s",
	      (int)strcspn(err, "\n"), err);
	nlmsg_free(m);

	m = krep_genl_msg_new(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0, 0);
	nla_put_string(m, CTRL_ATTR_FAMILY_NAME, "krep-nosuchfam");
	capture_begin();
	ret = krep_genl_request(&gl, m, count_reply, &n);
	err = capture_end();
	CHECK(ret == -ENOENT && !strcmp(err, "test: No such file or directory\n"),
	      "plain errno without extack (%d: %.*s)", ret,
	      (int)strcspn(err, "\n"), err);
	nlmsg_free(m);

	krep_genl_close(&gl);
}

int main(void)
{
	krep_prog = "test";
	printf("TAP version 13\n");
	test_u32();
	test_ep();
	test_peers();
	test_set_parse();
	test_set_msg();
	test_extack();
	test_reply();
	test_json();
	test_attrs_print();
	test_kafka_error();
	test_policy_kafka_error();
	test_produce_parse();
	test_consume_parse();
	test_partition_cmds_parse();
	test_topic_create();
	test_partition_reply();
	test_readme_describe();
	test_transport();
	printf("1..%d\n", tap_ntests);
	printf("# %d passed, %d failed\n", tap_ntests - tap_nfailed, tap_nfailed);
	return tap_nfailed ? 1 : 0;
}
