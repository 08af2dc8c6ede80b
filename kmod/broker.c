// SPDX-License-Identifier: GPL-2.0
/*
 * krep: the broker of each network namespace (pernet state) and its
 * configuration snapshot.
 *
 * Lifetime: struct krep_net is allocated and freed by the pernet core.
 * The configuration it points to is an immutable krep_broker_cfg published
 * with RCU; writers hold cfg_lock, build a complete new snapshot, and
 * replace the old one, which is freed after a grace period.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
#include <linux/errno.h>
#include <linux/kstrtox.h>
#include <linux/memcontrol.h>
#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/wait_bit.h>
#include <linux/rtnetlink.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "krep.h"
#include "auth.h"
#include "broker.h"
#include "isr.h"
#include "logdir.h"
#include "net.h"
#include "param.h"
#include "topic.h"

static unsigned int krep_net_id __read_mostly;

struct krep_net *krep_net(const struct net *net)
{
	return net_generic(net, krep_net_id);
}

struct krep_broker_cfg *krep_broker_cfg_alloc(unsigned int npeers)
{
	struct krep_broker_cfg *cfg;

	if (npeers > KREP_PEERS_MAX)
		return NULL;
	cfg = kzalloc(struct_size(cfg, peers, npeers), GFP_KERNEL);
	if (!cfg)
		return NULL;
	cfg->broker_id = KREP_BROKER_ID_UNSET;
	cfg->listen.sa.sa_family = AF_UNSPEC;
	cfg->kafka_listen.sa.sa_family = AF_UNSPEC;
	cfg->npeers = npeers;
	krep_obj_get(KREP_OBJ_BROKER_CFG);
	return cfg;
}

/* a copy of @old with room for @npeers peers; the peers are not copied */
struct krep_broker_cfg *krep_broker_cfg_dup(const struct krep_broker_cfg *old,
					    unsigned int npeers)
{
	struct krep_broker_cfg *cfg;

	cfg = krep_broker_cfg_alloc(npeers);
	if (!cfg)
		return NULL;
	cfg->broker_id = old->broker_id;
	strscpy(cfg->cluster_id, old->cluster_id, sizeof(cfg->cluster_id));
	cfg->listen = old->listen;
	cfg->kafka_listen = old->kafka_listen;
	strscpy(cfg->kafka_advertised, old->kafka_advertised,
		sizeof(cfg->kafka_advertised));
	memcpy(cfg->secret, old->secret, sizeof(cfg->secret));
	cfg->secret_len = old->secret_len;
	cfg->generation = old->generation;
	return cfg;
}

void krep_broker_cfg_free(struct krep_broker_cfg *cfg)
{
	if (!cfg)
		return;
	kfree_sensitive(cfg);	/* it may hold the secret */
	krep_obj_put(KREP_OBJ_BROKER_CFG);
}

static void cfg_free_rcu(struct rcu_head *rcu)
{
	krep_broker_cfg_free(container_of(rcu, struct krep_broker_cfg, rcu));
}

bool krep_endpoint_valid(const struct krep_endpoint *ep)
{
	switch (ep->sa.sa_family) {
	case AF_INET:
		return ep->in4.sin_port != 0;
	case AF_INET6:
		return ep->in6.sin6_port != 0;
	default:
		return false;
	}
}

/* a copy of the broker's secret (len 0: none); krep_secret_wipe() it */
void krep_broker_secret(struct krep_net *kn, struct krep_secret *s)
{
	struct krep_broker_cfg *cfg;

	rcu_read_lock();
	cfg = rcu_dereference(kn->cfg);
	s->len = cfg->secret_len;
	memcpy(s->key, cfg->secret, cfg->secret_len);
	rcu_read_unlock();
}

static bool endpoint_wildcard(const struct krep_endpoint *ep)
{
	if (ep->sa.sa_family == AF_INET)
		return ep->in4.sin_addr.s_addr == htonl(INADDR_ANY);
	return ipv6_addr_any(&ep->in6.sin6_addr);
}

static __be16 endpoint_port(const struct krep_endpoint *ep)
{
	return ep->sa.sa_family == AF_INET ? ep->in4.sin_port :
					     ep->in6.sin6_port;
}

/* the IPv4 address of @ep, IPv4-mapped IPv6 included; false if none */
static bool endpoint_v4(const struct krep_endpoint *ep, __be32 *addr)
{
	if (ep->sa.sa_family == AF_INET) {
		*addr = ep->in4.sin_addr.s_addr;
		return true;
	}
	if (!ipv6_addr_v4mapped(&ep->in6.sin6_addr))
		return false;
	*addr = ep->in6.sin6_addr.s6_addr32[3];
	return true;
}

/*
 * Would two listeners on @a and @b fail to bind both? The same port on
 * the same address, or on a wildcard address and any other: only one of
 * them may listen (SO_REUSEADDR does not share a listening port).
 */
static bool endpoints_clash(const struct krep_endpoint *a,
			    const struct krep_endpoint *b)
{
	__be32 a4, b4;

	if (endpoint_port(a) != endpoint_port(b))
		return false;
	if (endpoint_wildcard(a) || endpoint_wildcard(b))
		return true;
	if (endpoint_v4(a, &a4) && endpoint_v4(b, &b4))
		return a4 == b4;
	return a->sa.sa_family == AF_INET6 && b->sa.sa_family == AF_INET6 &&
	       ipv6_addr_equal(&a->in6.sin6_addr, &b->in6.sin6_addr);
}

/**
 * krep_advertised_check - a Kafka advertised address: HOST:PORT with a
 * host name or IPv4 address of [A-Za-z0-9.-], or [IPv6]:PORT
 * @s: the string
 * @why: set to a one-line reason on failure
 *
 * Return: 0 or -EINVAL.
 */
int krep_advertised_check(const char *s, const char **why)
{
	const char *colon = strrchr(s, ':'), *h, *hend;
	size_t len = strlen(s);
	unsigned int port;

	if (!len || len > KREP_ADVERTISED_MAX || !colon || colon == s)
		goto bad;
	if (kstrtouint(colon + 1, 10, &port) || !port || port > 65535) {
		*why = "advertised port must be 1..65535";
		return -EINVAL;
	}
	h = s;
	hend = colon;
	if (*s == '[') {
		if (hend[-1] != ']' || hend - s < 3)
			goto bad;
		for (h = s + 1; h < hend - 1; h++) {
			if (!isxdigit(*h) && *h != ':' && *h != '.')
				goto bad;
		}
		return 0;
	}
	for (; h < hend; h++) {
		if (!isalnum(*h) && *h != '.' && *h != '-') {
			*why = "advertised host has a character outside [A-Za-z0-9.-]";
			return -EINVAL;
		}
	}
	return 0;
bad:
	*why = "advertised address must be HOST:PORT or [IPV6]:PORT";
	return -EINVAL;
}

/* the HOST:PORT clients are given for this broker; "" without a listener */
void krep_broker_advertised(const struct krep_broker_cfg *cfg, char *buf,
			    size_t size)
{
	const struct krep_endpoint *ep = &cfg->kafka_listen;

	if (!krep_endpoint_valid(ep))
		*buf = '\0';
	else if (cfg->kafka_advertised[0])
		strscpy(buf, cfg->kafka_advertised, size);
	else if (ep->sa.sa_family == AF_INET)
		snprintf(buf, size, "%pI4:%u", &ep->in4.sin_addr,
			 ntohs(ep->in4.sin_port));
	else
		snprintf(buf, size, "[%pI6c]:%u", &ep->in6.sin6_addr,
			 ntohs(ep->in6.sin6_port));
}

int krep_cluster_id_check(const char *id, const char **why)
{
	size_t len = strlen(id), i;

	if (!len || len > KREP_CLUSTER_ID_MAX) {
		*why = "cluster id must have 1 to 64 characters";
		return -EINVAL;
	}
	for (i = 0; i < len; i++) {
		if (!isalnum(id[i]) && id[i] != '-' && id[i] != '_') {
			*why = "cluster id has a character outside [A-Za-z0-9_-]";
			return -EINVAL;
		}
	}
	return 0;
}

/**
 * krep_broker_cfg_check - check the rules that span several fields
 * @cfg: a complete configuration
 * @why: set to a one-line reason on failure
 *
 * Return: 0, -EINVAL, -EEXIST for a duplicate peer id, or -EADDRINUSE
 * for a Kafka listener on the replication listener's port.
 */
int krep_broker_cfg_check(const struct krep_broker_cfg *cfg, const char **why)
{
	unsigned int i, j;

	if (cfg->npeers && cfg->broker_id == KREP_BROKER_ID_UNSET) {
		*why = "peers need the broker's own id to be set";
		return -EINVAL;
	}
	if (krep_endpoint_valid(&cfg->kafka_listen) &&
	    endpoint_wildcard(&cfg->kafka_listen) && !cfg->kafka_advertised[0]) {
		*why = "a Kafka listener on a wildcard address needs an advertised address";
		return -EINVAL;
	}
	if (krep_endpoint_valid(&cfg->listen) &&
	    krep_endpoint_valid(&cfg->kafka_listen) &&
	    endpoints_clash(&cfg->listen, &cfg->kafka_listen)) {
		*why = "Kafka and replication listeners cannot share a port on one address";
		return -EADDRINUSE;
	}
	for (i = 0; i < cfg->npeers; i++) {
		const struct krep_peer_cfg *p = &cfg->peers[i];

		if (!krep_endpoint_valid(&p->ep)) {
			*why = "peer needs an address and a port";
			return -EINVAL;
		}
		if (p->id == cfg->broker_id) {
			*why = "peer id equals the broker's own id";
			return -EINVAL;
		}
		for (j = 0; j < i; j++) {
			if (cfg->peers[j].id == p->id) {
				*why = "duplicate peer id";
				return -EEXIST;
			}
		}
	}
	return 0;
}

struct krep_broker_cfg *krep_broker_cfg_locked(struct krep_net *kn)
{
	return rcu_dereference_protected(kn->cfg,
					 lockdep_is_held(&kn->cfg_lock));
}

/*
 * Publish @cfg as the broker's configuration; caller holds cfg_lock and
 * has set its generation.
 */
void krep_broker_cfg_replace(struct krep_net *kn, struct krep_broker_cfg *cfg)
{
	struct krep_broker_cfg *old;

	lockdep_assert_held(&kn->cfg_lock);
	old = krep_broker_cfg_locked(kn);
	rcu_assign_pointer(kn->cfg, cfg);
	WRITE_ONCE(kn->broker_id, cfg->broker_id);
	if (old)
		call_rcu(&old->rcu, cfg_free_rcu);
}

/**
 * krep_broker_memcg_take - charge the broker's work to the caller's memory
 * cgroup from now until its namespace goes
 * @kn: the broker, being given its id by the caller (cfg_lock held)
 *
 * Called by the BROKER_SET that gives the broker its id, which happens
 * once (an id is never unset): receive buffers, appended log pages and
 * indexes, producer state and parked requests that peers and Kafka
 * clients cause from then on count against that cgroup's memory.max.
 * A broker configured by insmod's parameters has none: its work is
 * charged nowhere, as the module's own.
 */
void krep_broker_memcg_take(struct krep_net *kn)
{
	lockdep_assert_held(&kn->cfg_lock);
	if (!kn->memcg)
		WRITE_ONCE(kn->memcg, get_mem_cgroup_from_mm(current->mm));
}

/* take over @specs (topics requested at load time) */
void krep_broker_set_topic_specs(struct krep_net *kn, struct list_head *specs)
{
	mutex_lock(&kn->cfg_lock);
	list_splice_tail_init(specs, &kn->topic_specs);
	mutex_unlock(&kn->cfg_lock);
}

static int __net_init krep_net_init(struct net *net)
{
	struct krep_net *kn = krep_net(net);
	struct krep_broker_cfg *cfg;

	cfg = krep_broker_cfg_alloc(0);
	if (!cfg)
		return -ENOMEM;
	if (krep_net_state_alloc(kn)) {
		krep_broker_cfg_free(cfg);
		return -ENOMEM;
	}
	kn->net = net;
	kn->broker_id = KREP_BROKER_ID_UNSET;
	kn->incarnation = get_random_u64();
	mutex_init(&kn->cfg_lock);
	INIT_LIST_HEAD(&kn->topic_specs);
	mutex_init(&kn->topics_lock);
	INIT_LIST_HEAD(&kn->topics);
	INIT_LIST_HEAD(&kn->creating);
	atomic64_set(&kn->mem.used, 0);
	kn->mem.max = krep_param_log_memory_max();
	krep_isr_init(kn);
	ratelimit_state_init(&kn->state_rs,
			     msecs_to_jiffies(krep_param_close_log_interval_ms()),
			     30);
	atomic_set(&kn->topics_freeing, 0);
	RCU_INIT_POINTER(kn->cfg, cfg);
	return 0;
}

/* kernel sockets do not pin the namespace: close them before it goes */
static void __net_exit krep_net_pre_exit(struct net *net)
{
	struct krep_net *kn = krep_net(net);

	krep_isr_stop(kn);
	krep_net_state_free(kn);
}

static void __net_exit krep_net_exit(struct net *net)
{
	struct krep_net *kn = krep_net(net);
	struct krep_broker_cfg *cfg;

	krep_logdir_shutdown(kn);
	krep_topics_destroy(kn);
	/* topics are freed in a work after a grace period: uncharging kn->mem */
	wait_var_event(&kn->topics_freeing,
		       !atomic_read(&kn->topics_freeing));
	WARN_ON_ONCE(atomic64_read(&kn->mem.used));

	mutex_lock(&kn->cfg_lock);
	krep_topic_spec_free_list(&kn->topic_specs);
	cfg = krep_broker_cfg_locked(kn);
	RCU_INIT_POINTER(kn->cfg, NULL);
	mutex_unlock(&kn->cfg_lock);
	call_rcu(&cfg->rcu, cfg_free_rcu);
	/* no work of this broker is left to charge it */
	mem_cgroup_put(kn->memcg);
	kn->memcg = NULL;
}

static struct pernet_operations krep_net_ops = {
	.init = krep_net_init,
	.pre_exit = krep_net_pre_exit,
	.exit = krep_net_exit,
	.id = &krep_net_id,
	.size = sizeof(struct krep_net),
};

int krep_broker_init(void)
{
	return register_pernet_subsys(&krep_net_ops);
}

/* module exit: wake every waiter of every broker for good */
void krep_broker_shutdown(void)
{
	struct net *net;

	WRITE_ONCE(krep_exiting_flag, true);
	down_read(&net_rwsem);
	for_each_net(net)
		krep_topics_kill_all(krep_net(net));
	up_read(&net_rwsem);
}

void krep_broker_exit(void)
{
	unregister_pernet_subsys(&krep_net_ops);
	/* wait for configuration snapshots still waiting for a grace period */
	rcu_barrier();
}
