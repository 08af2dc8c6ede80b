// SPDX-License-Identifier: GPL-2.0
/*
 * genl_test - the "krep" generic netlink family, BROKER_GET and BROKER_SET.
 *
 *   - GET and SET round trips for every attribute, IPv4 and IPv6 endpoints
 *     (fixture variants);
 *   - every rejection a request can earn: the policy checks of the netlink
 *     core (lib/nlattr.c) and the module's own checks, each with its errno,
 *     its extack message and, where the kernel names one, the offending or
 *     missing attribute;
 *   - a rejected SET changes nothing: every error test compares the broker
 *     before and after, generation included;
 *   - the "events" multicast group sees every successful SET, and nothing
 *     else;
 *   - permissions: SET needs CAP_NET_ADMIN over the namespace, GET does not.
 *
 * The module must be loaded (selftests/genl.sh loads it). Every TEST_F runs
 * in a network namespace of its own, so each starts from a broker with
 * nothing set and generation 0; the permission tests use the initial one.
 *
 * Requests are built by hand on a raw NETLINK_GENERIC socket (krep_nl.c)
 * so that they can be malformed on purpose.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/krep.h>

/* the harness's timeout handler does not use all its parameters */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop

#include "krep_nl.h"

/* ---------------------------------------------------------------------
 * Endpoints and brokers, as the tests describe them and GET reports them
 */

struct ep {
	int family;		/* AF_INET, AF_INET6, 0 for none */
	unsigned char addr[16];
	__u16 port;
};

struct peer {
	__u32 id;
	struct ep ep;
	int state;		/* enum krep_peer_state, -1 if not reported */
};

struct broker {
	bool has_id, has_cluster, has_listen, has_generation, has_peers;
	bool has_mem, has_mem_max;
	bool has_auth, has_kafka;
	__u8 auth;			/* KREP_A_AUTH: a secret is set */
	__u32 id;
	char cluster[KREP_CLUSTER_ID_MAX + 2];
	struct ep listen;
	__u32 generation;
	unsigned int npeers;
	struct peer peers[KREP_PEERS_MAX + 1];
	__u64 mem, mem_max;	/* log memory held, its cap */
	unsigned int bad;	/* attributes GET should not have sent */
};

static struct ep ep_make(int family, const char *addr, __u16 port)
{
	struct ep ep;

	memset(&ep, 0, sizeof(ep));
	ep.family = family;
	ep.port = port;
	if (inet_pton(family, addr, ep.addr) != 1) {
		fprintf(stderr, "# bad test address %s\n", addr);
		abort();
	}
	return ep;
}

/* KREP_A_EP_* inside a nest of type @type */
static struct nlattr *put_ep(struct req *r, __u16 type, const struct ep *ep)
{
	struct nlattr *nest = nest_start(r, type);

	if (ep->family == AF_INET)
		req_put(r, KREP_A_EP_IPV4, ep->addr, 4);
	else
		req_put(r, KREP_A_EP_IPV6, ep->addr, 16);
	put_u16(r, KREP_A_EP_PORT, ep->port);
	nest_end(r, nest);
	return nest;
}

static struct nlattr *put_peer(struct req *r, __u32 id, const struct ep *ep)
{
	struct nlattr *nest = nest_start(r, KREP_A_PEER);

	put_u32(r, KREP_A_PEER_ID, id);
	put_ep(r, KREP_A_PEER_EP, ep);
	nest_end(r, nest);
	return nest;
}

/* the n-th test endpoint of @family, distinct for distinct @n */
static struct ep ep_nth(int family, unsigned int n)
{
	char addr[64];

	if (family == AF_INET)
		snprintf(addr, sizeof(addr), "10.1.%u.%u", n / 250, n % 250 + 1);
	else
		snprintf(addr, sizeof(addr), "fd00:6b72:6570::%x", n + 1);
	return ep_make(family, addr, 9092 + n);
}

/* ---------------------------------------------------------------------
 * Reading a broker
 */

/* a u64 attribute: counted bad unless it is exactly 8 bytes */
static void parse_u64(const struct nlattr *nla, bool *has, __u64 *v,
		      unsigned int *bad)
{
	if (nla_plen(nla) != sizeof(*v)) {
		(*bad)++;
		return;
	}
	*has = true;
	*v = nla_u64(nla);
}

static void parse_ep(const struct nlattr *nest, struct ep *ep,
		     unsigned int *bad)
{
	const struct nlattr *nla;
	int rem;

	memset(ep, 0, sizeof(*ep));
	if (!(nest->nla_type & NLA_F_NESTED))
		(*bad)++;
	for_each_nla(nla, nla_data_c(nest), nla_plen(nest), rem) {
		switch (nla_kind(nla)) {
		case KREP_A_EP_IPV4:
			if (nla_plen(nla) != 4 || ep->family)
				(*bad)++;
			ep->family = AF_INET;
			memcpy(ep->addr, nla_data_c(nla), 4);
			break;
		case KREP_A_EP_IPV6:
			if (nla_plen(nla) != 16 || ep->family)
				(*bad)++;
			ep->family = AF_INET6;
			memcpy(ep->addr, nla_data_c(nla), 16);
			break;
		case KREP_A_EP_PORT:
			if (nla_plen(nla) != 2)
				(*bad)++;
			ep->port = nla_u16(nla);
			break;
		default:
			(*bad)++;
		}
	}
	if (!ep->family || !ep->port)
		(*bad)++;
}

static void parse_peer(const struct nlattr *nest, struct peer *p,
		       unsigned int *bad)
{
	const struct nlattr *nla;
	bool has_id = false, has_ep = false;
	int rem;

	memset(p, 0, sizeof(*p));
	p->state = -1;
	for_each_nla(nla, nla_data_c(nest), nla_plen(nest), rem) {
		switch (nla_kind(nla)) {
		case KREP_A_PEER_ID:
			if (nla_plen(nla) != 4)
				(*bad)++;
			p->id = nla_u32(nla);
			has_id = true;
			break;
		case KREP_A_PEER_EP:
			parse_ep(nla, &p->ep, bad);
			has_ep = true;
			break;
		case KREP_A_PEER_STATE:
			if (nla_plen(nla) != 1)
				(*bad)++;
			p->state = *(const __u8 *)nla_data_c(nla);
			break;
		default:
			(*bad)++;
		}
	}
	/* the state changes as connections come and go: any valid one */
	if (!has_id || !has_ep || p->state < KREP_PEER_CONFIGURED ||
	    p->state > KREP_PEER_DOWN)
		(*bad)++;
}

static void broker_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct genlmsghdr *g = NLMSG_DATA(nlh);
	const struct nlattr *nla, *pn;
	struct broker *b = arg;
	int rem, prem;

	memset(b, 0, sizeof(*b));
	if (g->cmd != KREP_CMD_BROKER_GET)
		b->bad++;
	for_each_nla(nla, (const char *)g + GENL_HDRLEN,
		     (int)nlh->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN, rem) {
		switch (nla_kind(nla)) {
		case KREP_A_BROKER_ID:
			if (nla_plen(nla) != 4)
				b->bad++;
			b->has_id = true;
			b->id = nla_u32(nla);
			break;
		case KREP_A_CLUSTER_ID:
			if (nla_plen(nla) < 2 ||
			    nla_plen(nla) > KREP_CLUSTER_ID_MAX + 1 ||
			    ((const char *)nla_data_c(nla))[nla_plen(nla) - 1])
				b->bad++;
			b->has_cluster = true;
			snprintf(b->cluster, sizeof(b->cluster), "%.*s",
				 nla_plen(nla), (const char *)nla_data_c(nla));
			break;
		case KREP_A_LISTEN:
			b->has_listen = true;
			parse_ep(nla, &b->listen, &b->bad);
			break;
		case KREP_A_GENERATION:
			if (nla_plen(nla) != 4)
				b->bad++;
			b->has_generation = true;
			b->generation = nla_u32(nla);
			break;
		case KREP_A_PEERS:
			b->has_peers = true;
			if (!(nla->nla_type & NLA_F_NESTED))
				b->bad++;
			for_each_nla(pn, nla_data_c(nla), nla_plen(nla), prem) {
				if (nla_kind(pn) != KREP_A_PEER ||
				    b->npeers >= KREP_PEERS_MAX + 1) {
					b->bad++;
					continue;
				}
				parse_peer(pn, &b->peers[b->npeers++], &b->bad);
			}
			break;
		case KREP_A_STATS:	/* data-path counters: log tests */
		case KREP_A_CONTROLLER:	/* the claim: epochs.sh */
			if (!(nla->nla_type & NLA_F_NESTED))
				b->bad++;
			break;
		case KREP_A_INCARNATION:
			if (nla_plen(nla) != 8)
				b->bad++;
			break;
		case KREP_A_LOG_MEMORY:
			parse_u64(nla, &b->has_mem, &b->mem, &b->bad);
			break;
		case KREP_A_LOG_MEMORY_MAX:
			parse_u64(nla, &b->has_mem_max, &b->mem_max, &b->bad);
			break;
		case KREP_A_AUTH:
			if (nla_plen(nla) != 1)
				b->bad++;
			b->has_auth = true;
			b->auth = *(const __u8 *)nla_data_c(nla);
			break;
		case KREP_A_KAFKA_LISTEN:	/* kafka.sh */
		case KREP_A_KAFKA_ADVERTISED:
			b->has_kafka = true;
			break;
		default:	/* KREP_A_SECRET included: never sent back */
			b->bad++;
		}
	}
}

/* BROKER_GET into @b; returns 0 or a positive errno */
static int broker_get(struct nl *nl, struct broker *b)
{
	struct ack ack;
	struct req r;
	int err;

	memset(b, 0, sizeof(*b));
	b->bad = 1;	/* until a reply arrives */
	req_init(&r, nl->family, KREP_CMD_BROKER_GET, 0);
	err = nl_transact(nl, &r, &ack, broker_cb, b);
	if (err)
		return -err;
	return ack.error;
}

static bool ep_equal(const struct ep *a, const struct ep *b)
{
	return a->family == b->family && a->port == b->port &&
	       !memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16);
}

static bool broker_equal(const struct broker *a, const struct broker *b)
{
	unsigned int i;

	if (a->has_id != b->has_id || (a->has_id && a->id != b->id) ||
	    a->has_cluster != b->has_cluster ||
	    strcmp(a->cluster, b->cluster) ||
	    a->has_listen != b->has_listen ||
	    (a->has_listen && !ep_equal(&a->listen, &b->listen)) ||
	    a->has_generation != b->has_generation ||
	    a->generation != b->generation ||
	    a->has_peers != b->has_peers || a->npeers != b->npeers ||
	    a->bad || b->bad)
		return false;
	/* peer states are not configuration: they follow the connections */
	for (i = 0; i < a->npeers; i++)
		if (a->peers[i].id != b->peers[i].id ||
		    !ep_equal(&a->peers[i].ep, &b->peers[i].ep))
			return false;
	return true;
}

/* ---------------------------------------------------------------------
 * Assertions shared by the tests
 */

/* send @r, which must succeed, and bump the generation by exactly one */
static void __expect_ok(struct __test_metadata *_metadata, struct nl *nl,
			struct req *r, int line)
{
	struct broker before, after;
	struct ack ack;

	ASSERT_EQ(0, broker_get(nl, &before));
	ASSERT_EQ(0, nl_transact(nl, r, &ack, NULL, NULL));
	if (ack.error)
		TH_LOG("line %d: request failed: %s (%s)", line,
		       strerror(ack.error), ack.msg);
	ASSERT_EQ(0, ack.error);
	ASSERT_EQ(0, broker_get(nl, &after));
	ASSERT_EQ(0, after.bad);
	ASSERT_EQ(before.generation + 1, after.generation);
}
#define expect_ok(nl, r) __expect_ok(_metadata, nl, r, __LINE__)

/*
 * Send @r, which must fail with @err and the extack message @msg, leaving
 * the broker exactly as it was. @bad, if not NULL, is the attribute the
 * kernel must point at (NLMSGERR_ATTR_OFFS).
 */
static void __expect_err(struct __test_metadata *_metadata, struct nl *nl,
			 struct req *r, int err, const char *msg,
			 const struct nlattr *bad, int line)
{
	struct broker before, after;
	struct ack ack;

	ASSERT_EQ(0, broker_get(nl, &before));
	ASSERT_EQ(0, nl_transact(nl, r, &ack, NULL, NULL));
	if (ack.error != err || strcmp(ack.msg, msg))
		TH_LOG("line %d: expected %s \"%s\", got %s \"%s\"", line,
		       strerror(err), msg, strerror(ack.error), ack.msg);
	ASSERT_EQ(err, ack.error);
	ASSERT_STREQ(msg, ack.msg);
	if (bad) {
		ASSERT_TRUE(ack.has_off);
		ASSERT_EQ(req_off(r, bad), ack.off);
	}
	ASSERT_EQ(0, broker_get(nl, &after));
	if (!broker_equal(&before, &after))
		TH_LOG("line %d: a rejected request changed the broker", line);
	ASSERT_TRUE(broker_equal(&before, &after));
}
#define expect_err(nl, r, err, msg, bad) \
	__expect_err(_metadata, nl, r, err, msg, bad, __LINE__)

/* 64 characters, the longest cluster id */
#define CLUSTER_ID_64 \
	"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"

/* the message lib/nlattr.c gives most policy violations */
#define MSG_POLICY	"Attribute failed policy validation"

/* ---------------------------------------------------------------------
 * Fixture: a socket in a fresh network namespace
 */

FIXTURE(broker) {
	struct nl nl;
	struct req r;
};

FIXTURE_SETUP(broker)
{
	ASSERT_EQ(0, unshare(CLONE_NEWNET)) TH_LOG("unshare: %s", strerror(errno));
	ASSERT_EQ(0, krep_open(&self->nl))
		TH_LOG("no \"krep\" genl family: is krep.ko loaded?");
	ASSERT_EQ(KREP_GENL_VERSION, self->nl.version);
}

FIXTURE_TEARDOWN(broker)
{
	nl_close(&self->nl);
}

static void set_init(FIXTURE_DATA(broker) *self)
{
	req_init(&self->r, self->nl.family, KREP_CMD_BROKER_SET, 0);
}

/* the broker of a new namespace has nothing set */
TEST_F(broker, get_fresh)
{
	struct broker b;

	ASSERT_EQ(0, broker_get(&self->nl, &b));
	EXPECT_EQ(0, b.bad);
	EXPECT_FALSE(b.has_id);
	EXPECT_FALSE(b.has_cluster);
	EXPECT_FALSE(b.has_listen);
	EXPECT_TRUE(b.has_generation);
	EXPECT_EQ(0, b.generation);
	EXPECT_TRUE(b.has_peers);
	EXPECT_EQ(0, b.npeers);
	/* no topic yet: no log memory held, the cap is the default */
	EXPECT_TRUE(b.has_mem);
	EXPECT_EQ(0, b.mem);
	EXPECT_TRUE(b.has_mem_max);
	EXPECT_EQ(256ULL << 20, b.mem_max);
	EXPECT_TRUE(b.has_auth);
	EXPECT_EQ(0, b.auth);
	EXPECT_FALSE(b.has_kafka);
}

/*
 * A SET whose listener could not bind is refused and changes nothing
 * (a listener on an address not on any interface is fine: IP_FREEBIND)
 */
TEST_F(broker, listen_in_use)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(9311) };
	struct ep ep = ep_make(AF_INET, "127.0.0.1", 9311);
	struct ep far = ep_make(AF_INET, "192.0.2.7", 9311);
	struct broker before, after;
	struct nlattr *a;
	int fd, one = 1;

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one,
				sizeof(one)));
	ASSERT_EQ(0, bind(fd, (struct sockaddr *)&sin, sizeof(sin)));
	ASSERT_EQ(0, listen(fd, 1));

	ASSERT_EQ(0, broker_get(&self->nl, &before));
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	a = put_ep(&self->r, KREP_A_LISTEN, &ep);
	expect_err(&self->nl, &self->r, EADDRINUSE,
		   "cannot listen on this address (in use, or not allowed)", a);
	ASSERT_EQ(0, broker_get(&self->nl, &after));
	EXPECT_TRUE(broker_equal(&before, &after));
	/* the same for the Kafka listener */
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	a = put_ep(&self->r, KREP_A_KAFKA_LISTEN, &ep);
	expect_err(&self->nl, &self->r, EADDRINUSE,
		   "cannot listen on this address (in use, or not allowed)", a);
	close(fd);

	/* free again, and an address of no interface: both accepted */
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	put_ep(&self->r, KREP_A_LISTEN, &ep);
	expect_ok(&self->nl, &self->r);
	set_init(self);
	put_ep(&self->r, KREP_A_KAFKA_LISTEN, &far);
	expect_ok(&self->nl, &self->r);
}

/*
 * The Kafka listener and the replication listener on one port of one
 * address (or of a wildcard address and another) cannot both listen:
 * refused, where each alone would bind (found by make fuzz)
 */
TEST_F(broker, listeners_share_port)
{
	struct ep lo = ep_make(AF_INET, "127.0.0.1", 9312);
	struct ep any = ep_make(AF_INET, "0.0.0.0", 9312);
	struct ep lo6 = ep_make(AF_INET6, "::1", 9312);
	struct ep mapped = ep_make(AF_INET6, "::ffff:127.0.0.1", 9312);
	/* the same address, a wildcard, a v4-mapped one: all overlap lo's */
	const struct ep *clash[] = { &lo, &any, &mapped };
	struct broker b;
	unsigned int i;

	for (i = 0; i < sizeof(clash) / sizeof(clash[0]); i++) {
		set_init(self);
		put_u32(&self->r, KREP_A_BROKER_ID, 1);
		put_ep(&self->r, KREP_A_LISTEN, clash[i]);
		put_ep(&self->r, KREP_A_KAFKA_LISTEN, &lo);
		expect_err(&self->nl, &self->r, EADDRINUSE,
			   "Kafka and replication listeners cannot share a port on one address",
			   NULL);
	}

	/* the same port on two addresses: both listen */
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	put_ep(&self->r, KREP_A_LISTEN, &lo);
	put_ep(&self->r, KREP_A_KAFKA_LISTEN, &lo6);
	expect_ok(&self->nl, &self->r);
	ASSERT_EQ(0, broker_get(&self->nl, &b));
	EXPECT_TRUE(b.has_kafka);
}

/* the cluster secret: 16..64 bytes, write-only, empty removes it */
TEST_F(broker, secret)
{
	static const __u8 key[65] = { 1, 2, 3 };
	struct broker b;
	struct nlattr *a;

	set_init(self);
	a = req_put(&self->r, KREP_A_SECRET, key, 15);
	expect_err(&self->nl, &self->r, EINVAL,
		   "a cluster secret has 16 to 64 bytes (none: empty)", a);
	set_init(self);
	a = req_put(&self->r, KREP_A_SECRET, key, 65);
	expect_err(&self->nl, &self->r, ERANGE,
		   "Attribute failed policy validation", a);

	set_init(self);
	req_put(&self->r, KREP_A_SECRET, key, 16);
	expect_ok(&self->nl, &self->r);
	ASSERT_EQ(0, broker_get(&self->nl, &b));
	EXPECT_EQ(0, b.bad);		/* no KREP_A_SECRET in the reply */
	EXPECT_EQ(1, b.auth);

	set_init(self);
	req_put(&self->r, KREP_A_SECRET, key, 64);
	expect_ok(&self->nl, &self->r);

	set_init(self);
	req_put(&self->r, KREP_A_SECRET, key, 0);
	expect_ok(&self->nl, &self->r);
	ASSERT_EQ(0, broker_get(&self->nl, &b));
	EXPECT_EQ(0, b.auth);
}

TEST_F(broker, set_broker_id)
{
	static const __u32 ids[] = { 7, 0, KREP_BROKER_ID_MAX, 1 };
	struct broker b;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		set_init(self);
		put_u32(&self->r, KREP_A_BROKER_ID, ids[i]);
		expect_ok(&self->nl, &self->r);
		ASSERT_EQ(0, broker_get(&self->nl, &b));
		EXPECT_TRUE(b.has_id);
		EXPECT_EQ(ids[i], b.id);
		EXPECT_EQ(i + 1, b.generation);
		EXPECT_FALSE(b.has_cluster);
		EXPECT_FALSE(b.has_listen);
		EXPECT_EQ(0, b.npeers);
	}
}

TEST_F(broker, set_cluster_id)
{
	static const char *const ids[] = {
		"c",
		"krep-Test_01",
		CLUSTER_ID_64,
	};
	struct broker b;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		set_init(self);
		put_str(&self->r, KREP_A_CLUSTER_ID, ids[i]);
		expect_ok(&self->nl, &self->r);
		ASSERT_EQ(0, broker_get(&self->nl, &b));
		EXPECT_TRUE(b.has_cluster);
		EXPECT_STREQ(ids[i], b.cluster);
		EXPECT_FALSE(b.has_id);
	}
}

/* a SET touches only what it carries */
TEST_F(broker, set_partial_keeps_the_rest)
{
	struct ep l = ep_make(AF_INET, "192.0.2.1", 9092);
	struct ep p = ep_make(AF_INET, "192.0.2.2", 9093);
	struct nlattr *nest;
	struct broker b;

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	put_str(&self->r, KREP_A_CLUSTER_ID, "one");
	put_ep(&self->r, KREP_A_LISTEN, &l);
	nest = nest_start(&self->r, KREP_A_PEERS);
	put_peer(&self->r, 2, &p);
	nest_end(&self->r, nest);
	expect_ok(&self->nl, &self->r);

	set_init(self);
	put_str(&self->r, KREP_A_CLUSTER_ID, "two");
	expect_ok(&self->nl, &self->r);

	ASSERT_EQ(0, broker_get(&self->nl, &b));
	EXPECT_EQ(1, b.id);
	EXPECT_STREQ("two", b.cluster);
	EXPECT_TRUE(ep_equal(&l, &b.listen));
	ASSERT_EQ(1, b.npeers);
	EXPECT_EQ(2, b.peers[0].id);
	EXPECT_TRUE(ep_equal(&p, &b.peers[0].ep));

	/* a new id keeps the peers */
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 3);
	expect_ok(&self->nl, &self->r);
	ASSERT_EQ(0, broker_get(&self->nl, &b));
	EXPECT_EQ(3, b.id);
	EXPECT_EQ(1, b.npeers);
	EXPECT_EQ(3, b.generation);
}

/* generation: +1 per successful SET, even one that changes nothing */
TEST_F(broker, generation)
{
	struct broker b;
	int i;

	for (i = 1; i <= 5; i++) {
		set_init(self);
		put_u32(&self->r, KREP_A_BROKER_ID, 5);
		expect_ok(&self->nl, &self->r);
		ASSERT_EQ(0, broker_get(&self->nl, &b));
		ASSERT_EQ(i, b.generation);
	}
}

TEST_F(broker, empty_set)
{
	set_init(self);
	expect_err(&self->nl, &self->r, EINVAL, "nothing to set", NULL);
}

TEST_F(broker, broker_id_bad_length)
{
	struct nlattr *a;

	set_init(self);
	a = put_u8(&self->r, KREP_A_BROKER_ID, 1);
	expect_err(&self->nl, &self->r, EINVAL, "invalid attribute length", a);

	set_init(self);
	a = put_u16(&self->r, KREP_A_BROKER_ID, 1);
	expect_err(&self->nl, &self->r, EINVAL, "invalid attribute length", a);

	set_init(self);
	a = put_u64(&self->r, KREP_A_BROKER_ID, 1);
	expect_err(&self->nl, &self->r, EINVAL, "invalid attribute length", a);

	set_init(self);
	a = req_put(&self->r, KREP_A_BROKER_ID, NULL, 0);
	expect_err(&self->nl, &self->r, EINVAL, "invalid attribute length", a);
}

TEST_F(broker, broker_id_out_of_range)
{
	struct nlattr *a;

	set_init(self);
	a = put_u32(&self->r, KREP_A_BROKER_ID, KREP_BROKER_ID_MAX + 1);
	expect_err(&self->nl, &self->r, ERANGE, "integer out of range", a);

	set_init(self);
	a = put_u32(&self->r, KREP_A_BROKER_ID, 0xffffffff);
	expect_err(&self->nl, &self->r, ERANGE, "integer out of range", a);
}

/*
 * A cluster id longer than 64 characters: the NLA_NUL_STRING policy looks
 * for the NUL only within len + 1 bytes and, not finding it, rejects the
 * string as malformed (EINVAL), before any length check could say ERANGE.
 */
TEST_F(broker, cluster_id_too_long)
{
	char id[KREP_CLUSTER_ID_MAX + 2];
	struct nlattr *a;

	memset(id, 'x', KREP_CLUSTER_ID_MAX + 1);
	id[KREP_CLUSTER_ID_MAX + 1] = '\0';
	set_init(self);
	a = put_str(&self->r, KREP_A_CLUSTER_ID, id);
	expect_err(&self->nl, &self->r, EINVAL, MSG_POLICY, a);
}

/*
 * A NUL within the first 65 bytes but a longer attribute: the string part
 * is short, yet the attribute exceeds the policy's length (ERANGE).
 */
TEST_F(broker, cluster_id_trailing_bytes)
{
	char id[100];
	struct nlattr *a;

	memset(id, 'y', sizeof(id));
	memcpy(id, "ok", 3);
	set_init(self);
	a = req_put(&self->r, KREP_A_CLUSTER_ID, id, sizeof(id));
	expect_err(&self->nl, &self->r, ERANGE, MSG_POLICY, a);
}

TEST_F(broker, cluster_id_bad_char)
{
	static const char *const ids[] = {
		"has space", "dot.ted", "slash/", "colon:", "ümlaut", "tab\t",
	};
	struct nlattr *a;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		set_init(self);
		a = put_str(&self->r, KREP_A_CLUSTER_ID, ids[i]);
		expect_err(&self->nl, &self->r, EINVAL,
			   "cluster id has a character outside [A-Za-z0-9_-]", a);
	}
}

TEST_F(broker, cluster_id_empty)
{
	struct nlattr *a;

	set_init(self);
	a = put_str(&self->r, KREP_A_CLUSTER_ID, "");
	expect_err(&self->nl, &self->r, EINVAL,
		   "cluster id must have 1 to 64 characters", a);

	/* no bytes at all: not even a NUL */
	set_init(self);
	a = req_put(&self->r, KREP_A_CLUSTER_ID, NULL, 0);
	expect_err(&self->nl, &self->r, EINVAL, MSG_POLICY, a);
}

TEST_F(broker, cluster_id_not_nul_terminated)
{
	struct nlattr *a;

	set_init(self);
	a = req_put(&self->r, KREP_A_CLUSTER_ID, "abcd", 4);
	expect_err(&self->nl, &self->r, EINVAL, MSG_POLICY, a);

	/* 64 characters without a NUL: still refused */
	set_init(self);
	a = req_put(&self->r, KREP_A_CLUSTER_ID,
		    "0123456789012345678901234567890123456789012345678901234567890123",
		    64);
	expect_err(&self->nl, &self->r, EINVAL, MSG_POLICY, a);
}

TEST_F(broker, unknown_attribute)
{
	struct nlattr *a;

	/* beyond KREP_A_MAX */
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	a = put_u32(&self->r, KREP_A_MAX + 1, 1);
	expect_err(&self->nl, &self->r, EINVAL, "Unknown attribute type", a);

	set_init(self);
	a = put_u32(&self->r, 0x3fff, 1);
	expect_err(&self->nl, &self->r, EINVAL, "Unknown attribute type", a);

	/* type 0 */
	set_init(self);
	a = put_u32(&self->r, KREP_A_UNSPEC, 1);
	expect_err(&self->nl, &self->r, EINVAL, "Unknown attribute type", a);
}

/* attributes of the family that a SET does not take */
TEST_F(broker, set_unsupported_attribute)
{
	struct ep ep = ep_nth(AF_INET, 1);
	struct nlattr *a;

	set_init(self);
	a = put_u32(&self->r, KREP_A_GENERATION, 9);
	expect_err(&self->nl, &self->r, EINVAL, "Unsupported attribute", a);

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	a = put_peer(&self->r, 2, &ep);		/* outside KREP_A_PEERS */
	expect_err(&self->nl, &self->r, EINVAL, "Unsupported attribute", a);

	set_init(self);
	a = req_put(&self->r, KREP_A_KAFKA_ERROR, "\0\0", 2);
	expect_err(&self->nl, &self->r, EINVAL, "Unsupported attribute", a);

	/* the log memory gauge is read-only: the cap is a module parameter */
	set_init(self);
	a = put_u64(&self->r, KREP_A_LOG_MEMORY_MAX, 1ULL << 30);
	expect_err(&self->nl, &self->r, EINVAL, "Unsupported attribute", a);
}

TEST_F(broker, nest_without_flag)
{
	struct ep ep = ep_nth(AF_INET, 1);
	struct nlattr *a, *peers, *peer;

	set_init(self);
	a = nest_start_noflag(&self->r, KREP_A_LISTEN);
	req_put(&self->r, KREP_A_EP_IPV4, ep.addr, 4);
	put_u16(&self->r, KREP_A_EP_PORT, ep.port);
	nest_end(&self->r, a);
	expect_err(&self->nl, &self->r, EINVAL, "NLA_F_NESTED is missing", a);

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	a = nest_start_noflag(&self->r, KREP_A_PEERS);
	put_peer(&self->r, 2, &ep);
	nest_end(&self->r, a);
	expect_err(&self->nl, &self->r, EINVAL, "NLA_F_NESTED is missing", a);

	/* one level down: a peer, and a peer's endpoint */
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	peers = nest_start(&self->r, KREP_A_PEERS);
	a = nest_start_noflag(&self->r, KREP_A_PEER);
	put_u32(&self->r, KREP_A_PEER_ID, 2);
	put_ep(&self->r, KREP_A_PEER_EP, &ep);
	nest_end(&self->r, a);
	nest_end(&self->r, peers);
	expect_err(&self->nl, &self->r, EINVAL, "NLA_F_NESTED is missing", a);

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	peers = nest_start(&self->r, KREP_A_PEERS);
	peer = nest_start(&self->r, KREP_A_PEER);
	put_u32(&self->r, KREP_A_PEER_ID, 2);
	a = nest_start_noflag(&self->r, KREP_A_PEER_EP);
	req_put(&self->r, KREP_A_EP_IPV4, ep.addr, 4);
	put_u16(&self->r, KREP_A_EP_PORT, ep.port);
	nest_end(&self->r, a);
	nest_end(&self->r, peer);
	nest_end(&self->r, peers);
	expect_err(&self->nl, &self->r, EINVAL, "NLA_F_NESTED is missing", a);
}

/* NLA_F_NESTED on an attribute that is not a nest */
TEST_F(broker, flag_on_non_nest)
{
	struct nlattr *a;

	set_init(self);
	a = put_u32(&self->r, KREP_A_BROKER_ID | NLA_F_NESTED, 1);
	expect_err(&self->nl, &self->r, EINVAL, "NLA_F_NESTED not expected", a);
}

/* a request that spills past its last attribute */
TEST_F(broker, trailing_bytes)
{
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	self->r.nlh.nlmsg_len += 2;	/* two bytes, less than a header */
	expect_err(&self->nl, &self->r, EINVAL,
		   "bytes leftover after parsing attributes", NULL);
}

TEST_F(broker, genl_reserved_field)
{
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	req_genl(&self->r)->reserved = 1;
	expect_err(&self->nl, &self->r, EINVAL,
		   "genlmsghdr.reserved field is not 0", NULL);
}

TEST_F(broker, unknown_command)
{
	struct ack ack;

	req_init(&self->r, self->nl.family, KREP_CMD_MAX + 1, 0);
	ASSERT_EQ(0, nl_transact(&self->nl, &self->r, &ack, NULL, NULL));
	EXPECT_EQ(EOPNOTSUPP, ack.error);

	req_init(&self->r, self->nl.family, KREP_CMD_UNSPEC, 0);
	ASSERT_EQ(0, nl_transact(&self->nl, &self->r, &ack, NULL, NULL));
	EXPECT_EQ(EOPNOTSUPP, ack.error);
}

/* BROKER_GET takes no attribute at all */
TEST_F(broker, get_with_attribute)
{
	struct broker b;
	struct ack ack;
	struct nlattr *a;
	__u16 type;

	for (type = KREP_A_BROKER_ID; type <= KREP_A_MAX + 1; type++) {
		req_init(&self->r, self->nl.family, KREP_CMD_BROKER_GET, 0);
		a = put_u32(&self->r, type, 1);
		memset(&b, 0, sizeof(b));
		ASSERT_EQ(0, nl_transact(&self->nl, &self->r, &ack, broker_cb,
					 &b));
		EXPECT_EQ(EINVAL, ack.error) TH_LOG("attribute %u", type);
		EXPECT_STREQ(type > KREP_A_MAX ? "Unknown attribute type" :
						 "Unsupported attribute",
			     ack.msg);
		EXPECT_TRUE(ack.has_off);
		EXPECT_EQ(req_off(&self->r, a), ack.off);
		/* and no reply came before the error */
		EXPECT_FALSE(b.has_generation);
	}
}

/* a rejected SET that carries good attributes too changes nothing */
TEST_F(broker, failed_set_is_atomic)
{
	struct ep l = ep_make(AF_INET6, "2001:db8::1", 9092);
	struct ep p = ep_make(AF_INET, "192.0.2.2", 9092);
	struct broker before, after;
	struct nlattr *nest, *a;

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	put_str(&self->r, KREP_A_CLUSTER_ID, "keep");
	put_ep(&self->r, KREP_A_LISTEN, &l);
	nest = nest_start(&self->r, KREP_A_PEERS);
	put_peer(&self->r, 2, &p);
	put_peer(&self->r, 3, &p);
	nest_end(&self->r, nest);
	expect_ok(&self->nl, &self->r);
	ASSERT_EQ(0, broker_get(&self->nl, &before));

	/* good id, cluster and listen; a bad peer list last */
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 10);
	put_str(&self->r, KREP_A_CLUSTER_ID, "changed");
	put_ep(&self->r, KREP_A_LISTEN, &p);
	nest = nest_start(&self->r, KREP_A_PEERS);
	put_peer(&self->r, 11, &p);
	put_peer(&self->r, 11, &p);
	nest_end(&self->r, nest);
	expect_err(&self->nl, &self->r, EEXIST, "duplicate peer id", NULL);

	/* good peers and id; a bad cluster id */
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 10);
	nest = nest_start(&self->r, KREP_A_PEERS);
	nest_end(&self->r, nest);
	a = put_str(&self->r, KREP_A_CLUSTER_ID, "bad id");
	expect_err(&self->nl, &self->r, EINVAL,
		   "cluster id has a character outside [A-Za-z0-9_-]", a);

	/* good cluster id and peers; a bad listen */
	set_init(self);
	put_str(&self->r, KREP_A_CLUSTER_ID, "changed");
	nest = nest_start(&self->r, KREP_A_PEERS);
	nest_end(&self->r, nest);
	a = nest_start(&self->r, KREP_A_LISTEN);
	put_u16(&self->r, KREP_A_EP_PORT, 1);
	nest_end(&self->r, a);
	expect_err(&self->nl, &self->r, EINVAL,
		   "endpoint needs exactly one of IPv4 and IPv6 address", a);

	/* a new id equal to a configured peer's */
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 3);
	expect_err(&self->nl, &self->r, EINVAL,
		   "peer id equals the broker's own id", NULL);

	ASSERT_EQ(0, broker_get(&self->nl, &after));
	ASSERT_TRUE(broker_equal(&before, &after));
	EXPECT_EQ(1, after.generation);
	EXPECT_STREQ("keep", after.cluster);
}

/* ---------------------------------------------------------------------
 * Peers
 */

TEST_F(broker, peers_need_broker_id)
{
	struct ep ep = ep_nth(AF_INET, 1);
	struct nlattr *nest;
	struct broker b;

	set_init(self);
	nest = nest_start(&self->r, KREP_A_PEERS);
	put_peer(&self->r, 2, &ep);
	nest_end(&self->r, nest);
	expect_err(&self->nl, &self->r, EINVAL,
		   "peers need the broker's own id to be set", NULL);

	/* an empty list needs no id */
	set_init(self);
	nest = nest_start(&self->r, KREP_A_PEERS);
	nest_end(&self->r, nest);
	expect_ok(&self->nl, &self->r);

	/* the id may come in the same request */
	set_init(self);
	nest = nest_start(&self->r, KREP_A_PEERS);
	put_peer(&self->r, 2, &ep);
	nest_end(&self->r, nest);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	expect_ok(&self->nl, &self->r);
	ASSERT_EQ(0, broker_get(&self->nl, &b));
	EXPECT_EQ(1, b.id);
	EXPECT_EQ(1, b.npeers);
}

TEST_F(broker, peer_duplicate_id)
{
	struct nlattr *nest;
	unsigned int i;

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	nest = nest_start(&self->r, KREP_A_PEERS);
	for (i = 2; i < 6; i++) {
		struct ep ep = ep_nth(AF_INET, i);

		put_peer(&self->r, i == 5 ? 3 : i, &ep);
	}
	nest_end(&self->r, nest);
	expect_err(&self->nl, &self->r, EEXIST, "duplicate peer id", NULL);
}

TEST_F(broker, peer_is_self)
{
	struct ep ep = ep_nth(AF_INET, 1);
	struct nlattr *nest;

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 4);
	nest = nest_start(&self->r, KREP_A_PEERS);
	put_peer(&self->r, 2, &ep);
	put_peer(&self->r, 4, &ep);
	nest_end(&self->r, nest);
	expect_err(&self->nl, &self->r, EINVAL,
		   "peer id equals the broker's own id", NULL);
}

TEST_F(broker, peer_id_out_of_range)
{
	struct ep ep = ep_nth(AF_INET, 1);
	struct nlattr *nest, *peer, *a;

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	nest = nest_start(&self->r, KREP_A_PEERS);
	peer = nest_start(&self->r, KREP_A_PEER);
	a = put_u32(&self->r, KREP_A_PEER_ID, KREP_BROKER_ID_MAX + 1);
	put_ep(&self->r, KREP_A_PEER_EP, &ep);
	nest_end(&self->r, peer);
	nest_end(&self->r, nest);
	expect_err(&self->nl, &self->r, ERANGE, "integer out of range", a);

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	nest = nest_start(&self->r, KREP_A_PEERS);
	peer = nest_start(&self->r, KREP_A_PEER);
	a = put_u8(&self->r, KREP_A_PEER_ID, 2);
	put_ep(&self->r, KREP_A_PEER_EP, &ep);
	nest_end(&self->r, peer);
	nest_end(&self->r, nest);
	expect_err(&self->nl, &self->r, EINVAL, "invalid attribute length", a);
}

TEST_F(broker, peer_missing_id_or_ep)
{
	struct ep ep = ep_nth(AF_INET, 1);
	struct nlattr *nest, *peer;
	struct ack ack;

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	nest = nest_start(&self->r, KREP_A_PEERS);
	peer = nest_start(&self->r, KREP_A_PEER);
	put_ep(&self->r, KREP_A_PEER_EP, &ep);
	nest_end(&self->r, peer);
	nest_end(&self->r, nest);
	expect_err(&self->nl, &self->r, EINVAL, "peer needs an id", NULL);
	/* the extack names the missing attribute and its nest */
	ASSERT_EQ(0, nl_transact(&self->nl, &self->r, &ack, NULL, NULL));
	EXPECT_TRUE(ack.has_miss_type);
	EXPECT_EQ(KREP_A_PEER_ID, ack.miss_type);
	EXPECT_TRUE(ack.has_miss_nest);
	EXPECT_EQ(req_off(&self->r, peer), ack.miss_nest);

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	nest = nest_start(&self->r, KREP_A_PEERS);
	peer = nest_start(&self->r, KREP_A_PEER);
	put_u32(&self->r, KREP_A_PEER_ID, 2);
	nest_end(&self->r, peer);
	nest_end(&self->r, nest);
	expect_err(&self->nl, &self->r, EINVAL, "peer needs an endpoint", NULL);
	ASSERT_EQ(0, nl_transact(&self->nl, &self->r, &ack, NULL, NULL));
	EXPECT_EQ(KREP_A_PEER_EP, ack.miss_type);
	EXPECT_EQ(req_off(&self->r, peer), ack.miss_nest);

	/* an empty peer */
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	nest = nest_start(&self->r, KREP_A_PEERS);
	peer = nest_start(&self->r, KREP_A_PEER);
	nest_end(&self->r, peer);
	nest_end(&self->r, nest);
	expect_err(&self->nl, &self->r, EINVAL, "peer needs an id", NULL);
}

TEST_F(broker, peer_state_is_read_only)
{
	struct ep ep = ep_nth(AF_INET, 1);
	struct nlattr *nest, *peer, *a;

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	nest = nest_start(&self->r, KREP_A_PEERS);
	peer = nest_start(&self->r, KREP_A_PEER);
	put_u32(&self->r, KREP_A_PEER_ID, 2);
	put_ep(&self->r, KREP_A_PEER_EP, &ep);
	a = put_u8(&self->r, KREP_A_PEER_STATE, KREP_PEER_UP);
	nest_end(&self->r, peer);
	nest_end(&self->r, nest);
	expect_err(&self->nl, &self->r, EINVAL, "peer state is read-only", a);
}

/* KREP_A_PEERS holds KREP_A_PEER entries and nothing else */
TEST_F(broker, peers_foreign_attribute)
{
	struct ep ep = ep_nth(AF_INET, 1);
	struct nlattr *nest, *peer, *a;

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	nest = nest_start(&self->r, KREP_A_PEERS);
	put_peer(&self->r, 2, &ep);
	a = put_u32(&self->r, KREP_A_BROKER_ID, 3);
	nest_end(&self->r, nest);
	expect_err(&self->nl, &self->r, EINVAL, "Unsupported attribute", a);

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	nest = nest_start(&self->r, KREP_A_PEERS);
	a = put_u32(&self->r, KREP_A_MAX + 1, 3);
	nest_end(&self->r, nest);
	expect_err(&self->nl, &self->r, EINVAL, "Unknown attribute type", a);

	/* unknown attribute inside a peer */
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	nest = nest_start(&self->r, KREP_A_PEERS);
	peer = nest_start(&self->r, KREP_A_PEER);
	put_u32(&self->r, KREP_A_PEER_ID, 2);
	put_ep(&self->r, KREP_A_PEER_EP, &ep);
	a = put_u32(&self->r, KREP_A_PEER_MAX + 1, 0);
	nest_end(&self->r, peer);
	nest_end(&self->r, nest);
	expect_err(&self->nl, &self->r, EINVAL, "Unknown attribute type", a);
}

/* 64 peers are fine; 65 are one too many */
TEST_F(broker, peers_max)
{
	struct ep l = ep_make(AF_INET6, "fd00:6b72:6570:ffff:ffff:ffff:ffff:ffff", 65535);
	struct nlattr *nest, *last = NULL;
	struct broker b;
	unsigned int i;

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 0);
	nest = nest_start(&self->r, KREP_A_PEERS);
	for (i = 1; i <= KREP_PEERS_MAX + 1; i++) {
		struct ep ep = ep_nth(AF_INET6, i);

		last = put_peer(&self->r, i, &ep);
	}
	nest_end(&self->r, nest);
	expect_err(&self->nl, &self->r, E2BIG, "more than 64 peers", last);

	/* the largest reply GET can have: 64 IPv6 peers, an IPv6
	 * listener, a cluster id of 64 characters
	 */
	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 0);
	put_str(&self->r, KREP_A_CLUSTER_ID, CLUSTER_ID_64);
	put_ep(&self->r, KREP_A_LISTEN, &l);
	nest = nest_start(&self->r, KREP_A_PEERS);
	for (i = 1; i <= KREP_PEERS_MAX; i++) {
		struct ep ep = ep_nth(AF_INET6, i);

		put_peer(&self->r, i, &ep);
	}
	nest_end(&self->r, nest);
	expect_ok(&self->nl, &self->r);
	ASSERT_EQ(0, broker_get(&self->nl, &b));
	ASSERT_EQ(0, b.bad);
	ASSERT_EQ(KREP_PEERS_MAX, b.npeers);
	EXPECT_STREQ(CLUSTER_ID_64, b.cluster);
	EXPECT_TRUE(ep_equal(&l, &b.listen));
	for (i = 0; i < KREP_PEERS_MAX; i++) {
		struct ep ep = ep_nth(AF_INET6, i + 1);

		EXPECT_EQ(i + 1, b.peers[i].id);
		EXPECT_TRUE(ep_equal(&ep, &b.peers[i].ep));
	}
}

/* ---------------------------------------------------------------------
 * Endpoints, for IPv4 and IPv6
 */

FIXTURE(ep) {
	struct nl nl;
	struct req r;
};

FIXTURE_VARIANT(ep) {
	int family;
	const char *addr;	/* one address of the family */
	const char *other;
	int addr_len;
};

FIXTURE_VARIANT_ADD(ep, ipv4) {
	.family = AF_INET,
	.addr = "198.51.100.7",
	.other = "203.0.113.9",
	.addr_len = 4,
};

FIXTURE_VARIANT_ADD(ep, ipv6) {
	.family = AF_INET6,
	.addr = "2001:db8:6b72::7",
	.other = "fe80::1",
	.addr_len = 16,
};

FIXTURE_SETUP(ep)
{
	ASSERT_EQ(0, unshare(CLONE_NEWNET)) TH_LOG("unshare: %s", strerror(errno));
	ASSERT_EQ(0, krep_open(&self->nl))
		TH_LOG("no \"krep\" genl family: is krep.ko loaded?");
}

FIXTURE_TEARDOWN(ep)
{
	nl_close(&self->nl);
}

TEST_F(ep, set_listen)
{
	static const __u16 ports[] = { 9092, 1, 65535 };
	struct broker b;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ports); i++) {
		struct ep ep = ep_make(variant->family,
				       i % 2 ? variant->other : variant->addr,
				       ports[i]);

		req_init(&self->r, self->nl.family, KREP_CMD_BROKER_SET, 0);
		put_ep(&self->r, KREP_A_LISTEN, &ep);
		expect_ok(&self->nl, &self->r);
		ASSERT_EQ(0, broker_get(&self->nl, &b));
		EXPECT_TRUE(b.has_listen);
		EXPECT_TRUE(ep_equal(&ep, &b.listen));
		EXPECT_FALSE(b.has_id);
	}
}

/* a listener of the other family replaces the first */
TEST_F(ep, listen_change_family)
{
	int other = variant->family == AF_INET ? AF_INET6 : AF_INET;
	struct ep a = ep_nth(variant->family, 3), c = ep_nth(other, 4);
	struct broker b;

	req_init(&self->r, self->nl.family, KREP_CMD_BROKER_SET, 0);
	put_ep(&self->r, KREP_A_LISTEN, &a);
	expect_ok(&self->nl, &self->r);
	req_init(&self->r, self->nl.family, KREP_CMD_BROKER_SET, 0);
	put_ep(&self->r, KREP_A_LISTEN, &c);
	expect_ok(&self->nl, &self->r);
	ASSERT_EQ(0, broker_get(&self->nl, &b));
	EXPECT_TRUE(ep_equal(&c, &b.listen));
}

TEST_F(ep, set_peers)
{
	int other = variant->family == AF_INET ? AF_INET6 : AF_INET;
	struct ep eps[3];
	struct nlattr *nest;
	struct broker b;
	unsigned int i;

	eps[0] = ep_make(variant->family, variant->addr, 9092);
	eps[1] = ep_make(variant->family, variant->other, 19092);
	eps[2] = ep_nth(other, 7);	/* families may mix */

	req_init(&self->r, self->nl.family, KREP_CMD_BROKER_SET, 0);
	put_u32(&self->r, KREP_A_BROKER_ID, 1);
	nest = nest_start(&self->r, KREP_A_PEERS);
	for (i = 0; i < 3; i++)
		put_peer(&self->r, 10 + i, &eps[i]);
	nest_end(&self->r, nest);
	expect_ok(&self->nl, &self->r);

	ASSERT_EQ(0, broker_get(&self->nl, &b));
	ASSERT_EQ(3, b.npeers);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(10 + i, b.peers[i].id);
		EXPECT_TRUE(ep_equal(&eps[i], &b.peers[i].ep));
		/* nothing listens there: never up */
		EXPECT_NE(KREP_PEER_UP, b.peers[i].state);
	}

	/* a new list replaces the whole list */
	req_init(&self->r, self->nl.family, KREP_CMD_BROKER_SET, 0);
	nest = nest_start(&self->r, KREP_A_PEERS);
	put_peer(&self->r, 20, &eps[1]);
	nest_end(&self->r, nest);
	expect_ok(&self->nl, &self->r);
	ASSERT_EQ(0, broker_get(&self->nl, &b));
	ASSERT_EQ(1, b.npeers);
	EXPECT_EQ(20, b.peers[0].id);
	EXPECT_TRUE(ep_equal(&eps[1], &b.peers[0].ep));

	/* an empty nest clears it */
	req_init(&self->r, self->nl.family, KREP_CMD_BROKER_SET, 0);
	nest = nest_start(&self->r, KREP_A_PEERS);
	nest_end(&self->r, nest);
	expect_ok(&self->nl, &self->r);
	ASSERT_EQ(0, broker_get(&self->nl, &b));
	EXPECT_TRUE(b.has_peers);
	EXPECT_EQ(0, b.npeers);
	EXPECT_EQ(1, b.id);
}

TEST_F(ep, set_everything)
{
	struct ep l = ep_make(variant->family, variant->addr, 9092);
	struct ep p = ep_make(variant->family, variant->other, 9093);
	struct nlattr *nest;
	struct broker b;

	req_init(&self->r, self->nl.family, KREP_CMD_BROKER_SET, 0);
	put_u32(&self->r, KREP_A_BROKER_ID, 42);
	put_str(&self->r, KREP_A_CLUSTER_ID, "everything");
	put_ep(&self->r, KREP_A_LISTEN, &l);
	nest = nest_start(&self->r, KREP_A_PEERS);
	put_peer(&self->r, 43, &p);
	nest_end(&self->r, nest);
	expect_ok(&self->nl, &self->r);

	ASSERT_EQ(0, broker_get(&self->nl, &b));
	EXPECT_EQ(0, b.bad);
	EXPECT_EQ(42, b.id);
	EXPECT_STREQ("everything", b.cluster);
	EXPECT_TRUE(ep_equal(&l, &b.listen));
	ASSERT_EQ(1, b.npeers);
	EXPECT_EQ(43, b.peers[0].id);
	EXPECT_TRUE(ep_equal(&p, &b.peers[0].ep));
	EXPECT_EQ(1, b.generation);
}

/*
 * The endpoint rules, checked in KREP_A_LISTEN and in a peer's
 * KREP_A_PEER_EP alike. @build fills the nest of type @type.
 */
static void ep_nest_err(struct __test_metadata *_metadata,
			FIXTURE_DATA(ep) *self, bool in_peer,
			void (*build)(struct req *, const void *),
			const void *arg, int err, const char *msg,
			bool bad_is_nest, __u16 miss_type)
{
	struct nlattr *peers = NULL, *peer = NULL, *nest;
	struct ack ack;

	req_init(&self->r, self->nl.family, KREP_CMD_BROKER_SET, 0);
	if (in_peer) {
		put_u32(&self->r, KREP_A_BROKER_ID, 1);
		peers = nest_start(&self->r, KREP_A_PEERS);
		peer = nest_start(&self->r, KREP_A_PEER);
		put_u32(&self->r, KREP_A_PEER_ID, 2);
	}
	nest = nest_start(&self->r, in_peer ? KREP_A_PEER_EP : KREP_A_LISTEN);
	build(&self->r, arg);
	nest_end(&self->r, nest);
	if (in_peer) {
		nest_end(&self->r, peer);
		nest_end(&self->r, peers);
	}
	__expect_err(_metadata, &self->nl, &self->r, err, msg,
		     bad_is_nest ? nest : NULL, __LINE__);
	if (miss_type) {
		ASSERT_EQ(0, nl_transact(&self->nl, &self->r, &ack, NULL, NULL));
		EXPECT_TRUE(ack.has_miss_type);
		EXPECT_EQ(miss_type, ack.miss_type);
		EXPECT_TRUE(ack.has_miss_nest);
		EXPECT_EQ(req_off(&self->r, nest), ack.miss_nest);
	}
}

struct ep_parts {
	int family;
	const char *addr;
	bool v4, v6, port;
	__u16 port_val;
	int addr_len;		/* bytes of the address attribute */
	int port_len;
	__u16 extra_type;	/* an attribute beyond KREP_A_EP_MAX */
};

static void build_ep(struct req *r, const void *arg)
{
	const struct ep_parts *p = arg;
	unsigned char a[32] = { 0 };

	inet_pton(p->family, p->addr, a);
	if (p->v4)
		req_put(r, KREP_A_EP_IPV4, a, p->addr_len ? p->addr_len : 4);
	if (p->v6)
		req_put(r, KREP_A_EP_IPV6, a, p->addr_len ? p->addr_len : 16);
	if (p->port) {
		__u32 port = p->port_val;

		req_put(r, KREP_A_EP_PORT, &port, p->port_len ? p->port_len : 2);
	}
	if (p->extra_type)
		put_u16(r, p->extra_type, 1);
}

#define EP_ERR(_parts, err, msg, bad_is_nest, miss)			\
	do {								\
		struct ep_parts __p = _parts;				\
		__p.family = variant->family;				\
		__p.addr = variant->addr;				\
		ep_nest_err(_metadata, self, false, build_ep, &__p,	\
			    err, msg, bad_is_nest, miss);		\
		ep_nest_err(_metadata, self, true, build_ep, &__p,	\
			    err, msg, bad_is_nest, miss);		\
	} while (0)

TEST_F(ep, both_addresses)
{
	EP_ERR(((struct ep_parts){ .v4 = true, .v6 = true, .port = true,
				   .port_val = 9092 }),
	       EINVAL, "endpoint needs exactly one of IPv4 and IPv6 address",
	       true, 0);
}

TEST_F(ep, no_address)
{
	EP_ERR(((struct ep_parts){ .port = true, .port_val = 9092 }),
	       EINVAL, "endpoint needs exactly one of IPv4 and IPv6 address",
	       true, 0);
	/* an empty nest */
	EP_ERR(((struct ep_parts){ 0 }),
	       EINVAL, "endpoint needs exactly one of IPv4 and IPv6 address",
	       true, 0);
}

TEST_F(ep, no_port)
{
	bool v4 = variant->family == AF_INET;

	EP_ERR(((struct ep_parts){ .v4 = v4, .v6 = !v4 }),
	       EINVAL, "endpoint needs a port", false, KREP_A_EP_PORT);
}

TEST_F(ep, port_zero)
{
	bool v4 = variant->family == AF_INET;

	/* the policy points at the port itself, checked below by offset */
	struct ep_parts p = { .family = variant->family, .addr = variant->addr,
			      .v4 = v4, .v6 = !v4, .port = true, .port_val = 0 };
	struct nlattr *nest, *port;

	req_init(&self->r, self->nl.family, KREP_CMD_BROKER_SET, 0);
	nest = nest_start(&self->r, KREP_A_LISTEN);
	build_ep(&self->r, &p);
	nest_end(&self->r, nest);
	port = (void *)((char *)nest + NLA_HDRLEN +
			NLA_ALIGN(NLA_HDRLEN + variant->addr_len));
	ASSERT_EQ(KREP_A_EP_PORT, port->nla_type);
	expect_err(&self->nl, &self->r, ERANGE, "integer out of range", port);

	EP_ERR(p, ERANGE, "integer out of range", false, 0);
}

TEST_F(ep, bad_lengths)
{
	bool v4 = variant->family == AF_INET;

	/* a 4-byte port */
	EP_ERR(((struct ep_parts){ .v4 = v4, .v6 = !v4, .port = true,
				   .port_val = 9092, .port_len = 4 }),
	       EINVAL, "invalid attribute length", false, 0);
	/* the address one byte short, then one byte long */
	if (v4) {
		EP_ERR(((struct ep_parts){ .v4 = true, .port = true,
					   .port_val = 9092, .addr_len = 3 }),
		       EINVAL, "invalid attribute length", false, 0);
		EP_ERR(((struct ep_parts){ .v4 = true, .port = true,
					   .port_val = 9092, .addr_len = 5 }),
		       EINVAL, "invalid attribute length", false, 0);
	} else {
		EP_ERR(((struct ep_parts){ .v6 = true, .port = true,
					   .port_val = 9092, .addr_len = 15 }),
		       ERANGE, "binary attribute size out of range", false, 0);
		EP_ERR(((struct ep_parts){ .v6 = true, .port = true,
					   .port_val = 9092, .addr_len = 17 }),
		       ERANGE, "binary attribute size out of range", false, 0);
	}
}

TEST_F(ep, unknown_ep_attribute)
{
	bool v4 = variant->family == AF_INET;

	EP_ERR(((struct ep_parts){ .v4 = v4, .v6 = !v4, .port = true,
				   .port_val = 9092,
				   .extra_type = KREP_A_EP_MAX + 1 }),
	       EINVAL, "Unknown attribute type", false, 0);
}

/* ---------------------------------------------------------------------
 * The "events" multicast group
 */

/*
 * Read what the monitor socket has queued; count the BROKER_SET events and
 * keep the last one in @last. Other events (none yet) are ignored.
 */
static int drain_broker_events(struct nl *mon, struct broker *last)
{
	__u8 *buf = nl_rx_buf();
	struct nlmsghdr *nlh;
	int count = 0;
	ssize_t n;

	while ((n = recv(mon->fd, buf, RX_SIZE, MSG_DONTWAIT)) > 0) {
		for (nlh = (void *)buf; NLMSG_OK(nlh, n);
		     nlh = NLMSG_NEXT(nlh, n)) {
			const struct genlmsghdr *g = NLMSG_DATA(nlh);

			if (nlh->nlmsg_type != mon->family ||
			    g->cmd != KREP_CMD_BROKER_SET)
				continue;
			broker_cb(nlh, last);
			/* broker_cb expects GET replies: the command is not bad */
			last->bad--;
			count++;
		}
	}
	return count;
}

TEST_F(broker, events)
{
	struct ep l = ep_nth(AF_INET, 1);
	struct broker got, now;
	struct nlattr *nest;
	struct nl mon;

	ASSERT_NE(0, self->nl.events);
	ASSERT_EQ(0, krep_open(&mon));
	ASSERT_EQ(0, setsockopt(mon.fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
				&self->nl.events, sizeof(self->nl.events)));

	/* a rejected SET sends nothing */
	set_init(self);
	expect_err(&self->nl, &self->r, EINVAL, "nothing to set", NULL);
	EXPECT_EQ(0, drain_broker_events(&mon, &got));

	set_init(self);
	put_u32(&self->r, KREP_A_BROKER_ID, 8);
	put_ep(&self->r, KREP_A_LISTEN, &l);
	nest = nest_start(&self->r, KREP_A_PEERS);
	put_peer(&self->r, 9, &l);
	nest_end(&self->r, nest);
	expect_ok(&self->nl, &self->r);
	ASSERT_EQ(0, broker_get(&self->nl, &now));

	/* one event per SET, carrying the new configuration */
	ASSERT_EQ(1, drain_broker_events(&mon, &got));
	EXPECT_EQ(0, got.bad);
	EXPECT_TRUE(broker_equal(&now, &got));

	set_init(self);
	put_str(&self->r, KREP_A_CLUSTER_ID, "ev");
	expect_ok(&self->nl, &self->r);
	ASSERT_EQ(1, drain_broker_events(&mon, &got));
	EXPECT_STREQ("ev", got.cluster);
	EXPECT_EQ(now.generation + 1, got.generation);
	nl_close(&mon);
}

/* ---------------------------------------------------------------------
 * Permissions (in the initial network namespace)
 */

/*
 * The test VM runs us chrooted into its root, and the kernel refuses
 * CLONE_NEWUSER to a chrooted process. The forked child that needs a user
 * namespace uses no files: let it leave the chroot the classic way (chroot
 * into a subdirectory, then walk up past it) and try again.
 */
static int unshare_user(int flags)
{
	int i;

	if (!unshare(CLONE_NEWUSER | flags))
		return 0;
	if (errno != EPERM)
		return -1;
	if (chroot("/dev"))
		return -1;
	for (i = 0; i < 64; i++)
		if (chdir(".."))
			return -1;
	if (chroot("."))
		return -1;
	return unshare(CLONE_NEWUSER | flags);
}

enum { CHILD_OK, CHILD_SETUP, CHILD_GET, CHILD_SET_ALLOWED, CHILD_SET_ERRNO };

/*
 * In a child: become a caller without CAP_NET_ADMIN over the initial
 * namespace (@how), then GET must work and SET must fail with EPERM.
 * Returns a CHILD_* code as exit status.
 */
static int unpriv_child(int how)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];
	struct broker b;
	struct ack ack;
	struct req r;
	struct nl nl;

	if (how == 0) {
		/* drop CAP_NET_ADMIN, stay root otherwise */
		if (syscall(SYS_capget, &hdr, data))
			return CHILD_SETUP;
		data[CAP_NET_ADMIN / 32].effective &=
			~(1U << (CAP_NET_ADMIN % 32));
		data[CAP_NET_ADMIN / 32].permitted &=
			~(1U << (CAP_NET_ADMIN % 32));
		if (syscall(SYS_capset, &hdr, data))
			return CHILD_SETUP;
	} else if (unshare_user(0)) {
		/* every capability, but in a user namespace of our own */
		fprintf(stderr, "# unshare(CLONE_NEWUSER): %s\n",
			strerror(errno));
		return CHILD_SETUP;
	}
	if (krep_open(&nl))
		return CHILD_SETUP;
	if (broker_get(&nl, &b) || b.bad)
		return CHILD_GET;
	req_init(&r, nl.family, KREP_CMD_BROKER_SET, 0);
	put_u32(&r, KREP_A_BROKER_ID, 99);
	if (nl_transact(&nl, &r, &ack, NULL, NULL))
		return CHILD_SETUP;
	if (!ack.error)
		return CHILD_SET_ALLOWED;
	if (ack.error != EPERM) {
		fprintf(stderr, "# SET failed with %s, not EPERM\n",
			strerror(ack.error));
		return CHILD_SET_ERRNO;
	}
	return CHILD_OK;
}

static int run_child(int (*fn)(int), int arg)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid)
		_exit(fn(arg));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* the broker of the initial namespace, which the children must not change */
FIXTURE(initns) {
	struct nl nl;
	struct broker before;
};

FIXTURE_SETUP(initns)
{
	ASSERT_EQ(0, krep_open(&self->nl))
		TH_LOG("no \"krep\" genl family: is krep.ko loaded?");
	ASSERT_EQ(0, broker_get(&self->nl, &self->before));
}

FIXTURE_TEARDOWN(initns)
{
	struct broker after;

	EXPECT_EQ(0, broker_get(&self->nl, &after));
	EXPECT_TRUE(broker_equal(&self->before, &after));
	nl_close(&self->nl);
}

TEST_F(initns, unpriv_without_cap_net_admin)
{
	ASSERT_EQ(CHILD_OK, run_child(unpriv_child, 0));
}

TEST_F(initns, unpriv_in_user_namespace)
{
	ASSERT_EQ(CHILD_OK, run_child(unpriv_child, 1));
}

/*
 * The owner of a user namespace administers the network namespaces that
 * user namespace owns (GENL_UNS_ADMIN_PERM), and their brokers.
 */
static int userns_admin_child(int unused)
{
	struct broker b;
	struct ack ack;
	struct req r;
	struct nl nl;

	(void)unused;
	if (unshare_user(CLONE_NEWNET) || krep_open(&nl))
		return CHILD_SETUP;
	req_init(&r, nl.family, KREP_CMD_BROKER_SET, 0);
	put_u32(&r, KREP_A_BROKER_ID, 77);
	if (nl_transact(&nl, &r, &ack, NULL, NULL))
		return CHILD_SETUP;
	if (ack.error) {
		fprintf(stderr, "# SET failed: %s (%s)\n", strerror(ack.error),
			ack.msg);
		return CHILD_SET_ERRNO;
	}
	if (broker_get(&nl, &b) || b.bad || !b.has_id || b.id != 77)
		return CHILD_GET;
	return CHILD_OK;
}

TEST_F(initns, userns_owner_sets_own_namespace)
{
	ASSERT_EQ(CHILD_OK, run_child(userns_admin_child, 0));
}

TEST_HARNESS_MAIN
