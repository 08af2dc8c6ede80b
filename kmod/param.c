// SPDX-License-Identifier: GPL-2.0
/*
 * krep: module parameters.
 *
 * They configure the broker of the initial network namespace at insmod
 * time, the way the same settings arrive over netlink in any namespace:
 *
 *   broker_id=1 cluster_id=prod listen=10.0.0.1:9092
 *   peers=2@10.0.0.2:9092,3@[fd00::3]:9092
 *   topics=orders:3:3:min_insync_replicas=2,audit:1:1
 *
 * A bad value makes insmod fail with -EINVAL and one dmesg line that names
 * the parameter, the offending text and the reason.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/errno.h>
#include <linux/inet.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "krep.h"
#include "broker.h"
#include "param.h"
#include "topic.h"

static int broker_id = -1;
module_param(broker_id, int, 0444);
MODULE_PARM_DESC(broker_id, "this broker's id, 0..2147483647 (default: unset)");

static char *cluster_id;
module_param(cluster_id, charp, 0444);
MODULE_PARM_DESC(cluster_id, "cluster id, 1-64 characters of [A-Za-z0-9_-]");

static char *listen_ep;
module_param_named(listen, listen_ep, charp, 0444);
MODULE_PARM_DESC(listen, "replication listener, ADDR:PORT or [ADDR6]:PORT");

static char *kafka_listen;
module_param(kafka_listen, charp, 0444);
MODULE_PARM_DESC(kafka_listen,
		 "Kafka client listener, ADDR:PORT or [ADDR6]:PORT (default: none)");

static char *kafka_advertised;
module_param(kafka_advertised, charp, 0444);
MODULE_PARM_DESC(kafka_advertised,
		 "HOST:PORT that Metadata gives clients for this broker (default: kafka_listen)");

/* string parameters are limited to 1024 characters by the kernel */
static char *peers;
module_param(peers, charp, 0444);
MODULE_PARM_DESC(peers,
		 "the other brokers, ID@ADDR:PORT,... (needs broker_id; 1024 characters at most)");

static char *topics;
module_param(topics, charp, 0444);
MODULE_PARM_DESC(topics,
		 "topics to create, NAME:PARTITIONS:RF[:KEY=VALUE...],...");

static unsigned long log_memory_max = 256UL << 20;
module_param(log_memory_max, ulong, 0444);
MODULE_PARM_DESC(log_memory_max,
		 "bytes of log each broker may hold (default 256 MiB, min 1 MiB)");

#define KREP_LOG_MEMORY_MIN	BIT(20)

u64 krep_param_log_memory_max(void)
{
	return log_memory_max;
}

/*
 * Deadlines and windows of the replication protocol, for every broker.
 * The defaults suit a network; the selftests shorten them.
 */
#define KREP_MS_MIN	100U
#define KREP_MS_MAX	600000U

static unsigned int hello_timeout_ms = 5000;
module_param(hello_timeout_ms, uint, 0444);
MODULE_PARM_DESC(hello_timeout_ms,
		 "close an accepted replication connection without HELLO after this long (default 5000, 100..600000)");

static unsigned int fetch_timeout_ms = 3000;
module_param(fetch_timeout_ms, uint, 0444);
MODULE_PARM_DESC(fetch_timeout_ms,
		 "close a connection whose FETCH is unanswered this long past its wait (default 3000, 100..600000)");

static unsigned int reconnect_backoff_max_ms = 5000;
module_param(reconnect_backoff_max_ms, uint, 0444);
MODULE_PARM_DESC(reconnect_backoff_max_ms,
		 "longest wait between connection attempts to a peer, doubling from 100 ms (default 5000, 100..600000)");

static unsigned int socket_timeout_ms = 30000;
module_param(socket_timeout_ms, uint, 0444);
MODULE_PARM_DESC(socket_timeout_ms,
		 "close a replication connection whose sent data is unacknowledged this long: TCP_USER_TIMEOUT (default 30000, 100..600000)");

static unsigned int kafka_idle_ms = 600000;
module_param(kafka_idle_ms, uint, 0444);
MODULE_PARM_DESC(kafka_idle_ms,
		 "close a Kafka client connection without a request this long, as connections.max.idle.ms (default 600000, 100..600000)");

static unsigned int kafka_request_ms = 30000;
module_param(kafka_request_ms, uint, 0444);
MODULE_PARM_DESC(kafka_request_ms,
		 "close a Kafka client connection whose request, begun, is not whole this long after its first byte (default 30000, 100..600000)");

static unsigned int kafka_wait_max_ms = 30000;
module_param(kafka_wait_max_ms, uint, 0444);
MODULE_PARM_DESC(kafka_wait_max_ms,
		 "the longest a Kafka Fetch (its max wait) or acks=all Produce (its timeout) waits; a client's longer one is cut to it (default 30000, 100..600000)");

static unsigned int kafka_max_request_bytes = 8U << 20;
module_param(kafka_max_request_bytes, uint, 0444);
MODULE_PARM_DESC(kafka_max_request_bytes,
		 "the largest Kafka request; a larger one closes its connection (default 8388608, 65536..104857600)");

static unsigned int kafka_max_connections = 1024;
module_param(kafka_max_connections, uint, 0444);
MODULE_PARM_DESC(kafka_max_connections,
		 "Kafka client connections each broker serves at once (default 1024, 1..65536)");

/*
 * Producer state per partition (producer.c): producer ids past the cap
 * are refused once the idle ones are forgotten, as Kafka forgets them
 */
static unsigned int producers_max = 1024;
module_param(producers_max, uint, 0444);
MODULE_PARM_DESC(producers_max,
		 "producer ids each partition keeps state for; a new one past it is refused with POLICY_VIOLATION (default 1024, 1..1048576)");

/*
 * Topics and hosted partitions per broker (topic.c): TOPIC_NEW past
 * either is refused, as Kafka's create-topic policy refuses one
 */
static unsigned int topics_max = 4096;
module_param(topics_max, uint, 0444);
MODULE_PARM_DESC(topics_max,
		 "topics each broker holds; one more is refused with POLICY_VIOLATION (default 4096, 1..65536)");

static unsigned int partitions_max = 16384;
module_param(partitions_max, uint, 0444);
MODULE_PARM_DESC(partitions_max,
		 "partitions each broker hosts (its replicas); a topic that would pass it is refused with POLICY_VIOLATION (default 16384, 1..1048576)");

static unsigned int producer_id_expiration_ms = 86400000;
module_param(producer_id_expiration_ms, uint, 0444);
MODULE_PARM_DESC(producer_id_expiration_ms,
		 "a producer with no batch this long and no open transaction may be forgotten to make room for a new one, as Kafka's producer.id.expiration.ms (default 86400000, 1000..2147483647)");

static unsigned int close_log_interval_ms = 5000;
module_param(close_log_interval_ms, uint, 0444);
MODULE_PARM_DESC(close_log_interval_ms,
		 "window of the rate limits on connection-close lines and on ISR change and truncation lines, 30 lines each per broker (default 5000, 100..600000)");

/*
 * Brokers with a cluster secret encrypt their replication connections
 * (ktls.c) unless this is off; both ends of a connection must agree
 */
static bool replication_tls = true;
module_param(replication_tls, bool, 0444);
MODULE_PARM_DESC(replication_tls,
		 "encrypt replication between brokers that have a cluster secret, with kTLS keyed from their handshake; peers must agree (default Y)");

static char *log_dir;
module_param(log_dir, charp, 0444);
MODULE_PARM_DESC(log_dir,
		 "the initial namespace's log directory, an absolute path (default: logs in memory only)");

static unsigned int log_checkpoint_ms = 5000;
module_param(log_checkpoint_ms, uint, 0444);
MODULE_PARM_DESC(log_checkpoint_ms,
		 "how often each log directory's HW, recovery point and log start checkpoints are written (default 5000, 100..600000)");

const char *krep_param_log_dir(void)
{
	return log_dir && *log_dir ? log_dir : NULL;
}

u32 krep_param_log_checkpoint_ms(void)
{
	return log_checkpoint_ms;
}

u32 krep_param_hello_timeout_ms(void)
{
	return hello_timeout_ms;
}

u32 krep_param_fetch_timeout_ms(void)
{
	return fetch_timeout_ms;
}

u32 krep_param_reconnect_backoff_max_ms(void)
{
	return reconnect_backoff_max_ms;
}

u32 krep_param_socket_timeout_ms(void)
{
	return socket_timeout_ms;
}

u32 krep_param_kafka_idle_ms(void)
{
	return kafka_idle_ms;
}

u32 krep_param_kafka_request_ms(void)
{
	return kafka_request_ms;
}

u32 krep_param_kafka_wait_max_ms(void)
{
	return kafka_wait_max_ms;
}

u32 krep_param_kafka_max_request_bytes(void)
{
	return kafka_max_request_bytes;
}

u32 krep_param_kafka_max_connections(void)
{
	return kafka_max_connections;
}

u32 krep_param_producers_max(void)
{
	return producers_max;
}

u32 krep_param_topics_max(void)
{
	return topics_max;
}

u32 krep_param_partitions_max(void)
{
	return partitions_max;
}

u32 krep_param_producer_id_expiration_ms(void)
{
	return producer_id_expiration_ms;
}

bool krep_param_replication_tls(void)
{
	return replication_tls;
}

u32 krep_param_close_log_interval_ms(void)
{
	return close_log_interval_ms;
}

/* every deadline within KREP_MS_MIN..KREP_MS_MAX */
static int check_deadlines(void)
{
	static const struct {
		const char *name;
		unsigned int *val;
	} d[] = {
		{ "hello_timeout_ms", &hello_timeout_ms },
		{ "fetch_timeout_ms", &fetch_timeout_ms },
		{ "reconnect_backoff_max_ms", &reconnect_backoff_max_ms },
		{ "socket_timeout_ms", &socket_timeout_ms },
		{ "kafka_idle_ms", &kafka_idle_ms },
		{ "kafka_request_ms", &kafka_request_ms },
		{ "kafka_wait_max_ms", &kafka_wait_max_ms },
		{ "close_log_interval_ms", &close_log_interval_ms },
		{ "log_checkpoint_ms", &log_checkpoint_ms },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(d); i++) {
		if (*d[i].val < KREP_MS_MIN || *d[i].val > KREP_MS_MAX) {
			pr_err("bad %s %u: must be %u..%u\n", d[i].name,
			       *d[i].val, KREP_MS_MIN, KREP_MS_MAX);
			return -EINVAL;
		}
	}
	return 0;
}

/* parse an unsigned decimal from a counted string */
static int parse_u64(const char *s, size_t len, u64 max, u64 *val)
{
	char buf[24];

	if (!len || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (kstrtou64(buf, 10, val))
		return -EINVAL;
	return *val > max ? -ERANGE : 0;
}

/* the last @c in @s[0..len), or NULL */
static const char *last_char(const char *s, size_t len, char c)
{
	while (len--)
		if (s[len] == c)
			return s + len;
	return NULL;
}

/* "A.B.C.D:PORT" or "[IPV6]:PORT" */
static int parse_endpoint(const char *s, size_t len, struct krep_endpoint *ep,
			  const char **why)
{
	const char *colon, *end;
	u64 port;

	memset(ep, 0, sizeof(*ep));
	colon = last_char(s, len, ':');
	if (!colon) {
		*why = "expected ADDR:PORT";
		return -EINVAL;
	}
	if (parse_u64(colon + 1, s + len - colon - 1, 65535, &port) || !port) {
		*why = "port must be 1..65535";
		return -EINVAL;
	}
	if (s[0] == '[') {
		if (colon - s < 3 || colon[-1] != ']' ||
		    !in6_pton(s + 1, colon - s - 2, ep->in6.sin6_addr.s6_addr,
			      -1, &end) || end != colon - 1) {
			*why = "bad IPv6 address (expected [ADDR6]:PORT)";
			return -EINVAL;
		}
		ep->in6.sin6_family = AF_INET6;
		ep->in6.sin6_port = htons(port);
		return 0;
	}
	if (!in4_pton(s, colon - s, (u8 *)&ep->in4.sin_addr, -1, &end) ||
	    end != colon) {
		*why = "bad IPv4 address (host names are not resolved)";
		return -EINVAL;
	}
	ep->in4.sin_family = AF_INET;
	ep->in4.sin_port = htons(port);
	return 0;
}

/* count the comma-separated items of @s, 0 for NULL or "" */
static unsigned int count_items(const char *s)
{
	unsigned int n = 1;

	if (!s || !*s)
		return 0;
	for (; *s; s++)
		n += *s == ',';
	return n;
}

/* "ID@ADDR:PORT" */
static int parse_peer(const char *s, size_t len, struct krep_peer_cfg *p,
		      const char **why)
{
	const char *at = memchr(s, '@', len);
	u64 id;

	if (!at) {
		*why = "expected ID@ADDR:PORT";
		return -EINVAL;
	}
	if (parse_u64(s, at - s, KREP_BROKER_ID_MAX, &id)) {
		*why = "peer id must be 0..2147483647";
		return -EINVAL;
	}
	p->id = id;
	return parse_endpoint(at + 1, s + len - at - 1, &p->ep, why);
}

/* one "KEY=VALUE" of a topic spec */
static int parse_topic_kv(struct krep_topic_spec *ts, const char *s,
			  size_t len, const char **why)
{
	const char *eq = memchr(s, '=', len);
	char key[32];
	bool neg;
	u64 v;

	if (!eq || eq == s || eq - s >= sizeof(key)) {
		*why = "expected KEY=VALUE after the replication factor";
		return -EINVAL;
	}
	memcpy(key, s, eq - s);
	key[eq - s] = '\0';
	len = s + len - (eq + 1);
	s = eq + 1;
	neg = len && *s == '-';
	if (parse_u64(s + neg, len - neg, S64_MAX, &v)) {
		*why = "topic config value must be an integer";
		return -EINVAL;
	}
	return krep_topic_config_set(&ts->config, key, neg ? -(s64)v : v,
				     why) ? -EINVAL : 0;
}

/* "NAME:PARTITIONS:RF[:KEY=VALUE...]" */
static int parse_topic(const char *s, size_t len, unsigned int nbrokers,
		       struct krep_topic_spec *ts, const char **why)
{
	const char *end = s + len, *field[3], *p = s;
	size_t flen[3];
	unsigned int i;
	u64 v;
	int err;

	for (i = 0; i < 3; i++) {
		const char *colon = memchr(p, ':', end - p);

		field[i] = p;
		flen[i] = (colon ? colon : end) - p;
		if (i < 2 && !colon) {
			*why = "expected NAME:PARTITIONS:RF";
			return -EINVAL;
		}
		p = colon ? colon + 1 : end;
	}
	err = krep_topic_name_check(field[0], flen[0], why);
	if (err)
		return err;
	memcpy(ts->name, field[0], flen[0]);
	ts->name[flen[0]] = '\0';
	if (parse_u64(field[1], flen[1], KREP_PARTITIONS_MAX, &v) || !v) {
		*why = "partitions must be 1..1024";
		return -EINVAL;
	}
	ts->partitions = v;
	if (parse_u64(field[2], flen[2], U32_MAX, &v) || !v) {
		*why = "replication factor must be at least 1";
		return -EINVAL;
	}
	if (v > nbrokers) {
		*why = "replication factor larger than the number of brokers";
		return -EINVAL;
	}
	ts->replication_factor = v;
	while (p < end) {
		const char *colon = memchr(p, ':', end - p);
		size_t kvlen = (colon ? colon : end) - p;

		err = parse_topic_kv(ts, p, kvlen, why);
		if (err)
			return err;
		p = colon ? colon + 1 : end;
	}
	return 0;
}

static int parse_topics(const char *s, unsigned int nbrokers,
			struct list_head *specs)
{
	const char *why = NULL, *item = s;
	struct krep_topic_spec *ts, *other;

	while (s && *item) {
		size_t len = strchrnul(item, ',') - item;

		ts = krep_topic_spec_alloc();
		if (!ts)
			return -ENOMEM;
		list_add_tail(&ts->node, specs);
		if (parse_topic(item, len, nbrokers, ts, &why)) {
			pr_err("bad topics entry '%.*s': %s\n", (int)len, item,
			       why);
			return -EINVAL;
		}
		list_for_each_entry(other, specs, node) {
			if (other != ts && !strcmp(other->name, ts->name)) {
				pr_err("bad topics: topic '%s' given twice\n",
				       ts->name);
				return -EINVAL;
			}
		}
		item += len;
		if (*item == ',')
			item++;
	}
	return 0;
}

static int parse_peers(struct krep_broker_cfg *cfg)
{
	const char *why = NULL, *item = peers;
	unsigned int i;
	int err;

	for (i = 0; i < cfg->npeers; i++) {
		size_t len = strchrnul(item, ',') - item;

		err = parse_peer(item, len, &cfg->peers[i], &why);
		if (err) {
			pr_err("bad peers entry '%.*s': %s\n", (int)len, item,
			       why);
			return -EINVAL;
		}
		item += len + 1;
	}
	return 0;
}

/**
 * krep_param_parse - turn the module parameters into a broker configuration
 * @cfgp: set to the new configuration on success
 * @specs: list the topics= entries are added to
 *
 * Return: 0, -EINVAL after one pr_err() naming the reason, or -ENOMEM.
 * On failure nothing is allocated and @specs is left empty.
 */
int krep_param_parse(struct krep_broker_cfg **cfgp, struct list_head *specs)
{
	unsigned int npeers = count_items(peers);
	struct krep_broker_cfg *cfg;
	const char *why = NULL;
	int err = -EINVAL;

	if (npeers > KREP_PEERS_MAX) {
		pr_err("bad peers: more than %d peers\n", KREP_PEERS_MAX);
		return -EINVAL;
	}
	cfg = krep_broker_cfg_alloc(npeers);
	if (!cfg)
		return -ENOMEM;

	if (log_memory_max < KREP_LOG_MEMORY_MIN) {
		pr_err("bad log_memory_max %lu: must be at least 1048576\n",
		       log_memory_max);
		goto fail;
	}
	if (check_deadlines())
		goto fail;
	if (kafka_max_request_bytes < 65536 ||
	    kafka_max_request_bytes > 104857600) {
		pr_err("bad kafka_max_request_bytes %u: must be 65536..104857600\n",
		       kafka_max_request_bytes);
		goto fail;
	}
	if (kafka_max_connections < 1 || kafka_max_connections > 65536) {
		pr_err("bad kafka_max_connections %u: must be 1..65536\n",
		       kafka_max_connections);
		goto fail;
	}
	if (producers_max < 1 || producers_max > 1048576) {
		pr_err("bad producers_max %u: must be 1..1048576\n",
		       producers_max);
		goto fail;
	}
	if (topics_max < 1 || topics_max > 65536) {
		pr_err("bad topics_max %u: must be 1..65536\n", topics_max);
		goto fail;
	}
	if (partitions_max < 1 || partitions_max > 1048576) {
		pr_err("bad partitions_max %u: must be 1..1048576\n",
		       partitions_max);
		goto fail;
	}
	if (producer_id_expiration_ms < 1000 ||
	    producer_id_expiration_ms > S32_MAX) {
		pr_err("bad producer_id_expiration_ms %u: must be 1000..2147483647\n",
		       producer_id_expiration_ms);
		goto fail;
	}
	if (broker_id < -1) {
		pr_err("bad broker_id %d: must be 0..2147483647\n", broker_id);
		goto fail;
	}
	cfg->broker_id = broker_id;
	if (log_dir && *log_dir && (*log_dir != '/' || broker_id < 0)) {
		pr_err("bad log_dir '%s': %s\n", log_dir, *log_dir != '/' ?
		       "an absolute path is needed" :
		       "a log directory needs broker_id");
		goto fail;
	}

	if (cluster_id && *cluster_id) {
		if (krep_cluster_id_check(cluster_id, &why)) {
			pr_err("bad cluster_id '%s': %s\n", cluster_id, why);
			goto fail;
		}
		strscpy(cfg->cluster_id, cluster_id, sizeof(cfg->cluster_id));
	}

	if (listen_ep && *listen_ep &&
	    parse_endpoint(listen_ep, strlen(listen_ep), &cfg->listen, &why)) {
		pr_err("bad listen '%s': %s\n", listen_ep, why);
		goto fail;
	}

	if (kafka_listen && *kafka_listen &&
	    parse_endpoint(kafka_listen, strlen(kafka_listen),
			   &cfg->kafka_listen, &why)) {
		pr_err("bad kafka_listen '%s': %s\n", kafka_listen, why);
		goto fail;
	}
	if (kafka_advertised && *kafka_advertised) {
		if (krep_advertised_check(kafka_advertised, &why)) {
			pr_err("bad kafka_advertised '%s': %s\n",
			       kafka_advertised, why);
			goto fail;
		}
		strscpy(cfg->kafka_advertised, kafka_advertised,
			sizeof(cfg->kafka_advertised));
	}

	err = parse_peers(cfg);
	if (err)
		goto fail;
	err = krep_broker_cfg_check(cfg, &why);
	if (err) {
		pr_err("bad %s '%s': %s\n", cfg->npeers ? "peers" : "kafka_listen",
		       cfg->npeers ? peers : kafka_listen, why);
		err = -EINVAL;
		goto fail;
	}

	if (topics && *topics && broker_id < 0) {
		pr_err("bad topics: topics need broker_id\n");
		err = -EINVAL;
		goto fail;
	}
	err = parse_topics(topics, npeers + 1, specs);
	if (err)
		goto fail;

	*cfgp = cfg;
	return 0;

fail:
	krep_topic_spec_free_list(specs);
	krep_broker_cfg_free(cfg);
	return err;
}
