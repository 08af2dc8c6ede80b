// SPDX-License-Identifier: GPL-2.0
/*
 * krep: the "krep" generic netlink family (see uapi/linux/krep.h for the
 * commands and their attribute trees).
 *
 * Every op has a strict policy; every rejection carries an extack message
 * and, where one attribute is at fault, points at it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/string.h>
#include <net/genetlink.h>
#include <net/sock.h>
#include <linux/krep.h>

#include "krep.h"
#include "broker.h"
#include "ctrl.h"
#include "logdir.h"
#include "net.h"
#include "netlink.h"
#include "nl_park.h"
#include "partition.h"
#include "topic.h"

static struct netlink_range_validation krep_id_range = {
	.min = 0,
	.max = KREP_BROKER_ID_MAX,
};

static const struct nla_policy krep_ep_policy[KREP_A_EP_MAX + 1] = {
	[KREP_A_EP_IPV4] = { .type = NLA_BE32 },
	[KREP_A_EP_IPV6] = NLA_POLICY_EXACT_LEN(sizeof(struct in6_addr)),
	[KREP_A_EP_PORT] = NLA_POLICY_MIN(NLA_U16, 1),
};

static const struct nla_policy krep_peer_policy[KREP_A_PEER_MAX + 1] = {
	[KREP_A_PEER_ID] = NLA_POLICY_FULL_RANGE(NLA_U32, &krep_id_range),
	[KREP_A_PEER_EP] = NLA_POLICY_NESTED(krep_ep_policy),
	[KREP_A_PEER_STATE] = { .type = NLA_REJECT,
				.reject_message = "peer state is read-only" },
};

/* the KREP_A_PEERS nest holds only KREP_A_PEER entries */
static const struct nla_policy krep_peers_policy[KREP_A_MAX + 1] = {
	[KREP_A_PEER] = NLA_POLICY_NESTED(krep_peer_policy),
};

/* BROKER_GET takes no attributes: every one is rejected as unsupported */
static const struct nla_policy krep_broker_get_policy[KREP_A_MAX + 1] = {
};

static struct netlink_range_validation krep_lease_range = {
	.min = 0, .max = 600000,
};

static const struct nla_policy krep_ctrl_policy[KREP_A_CTRL_MAX + 1] = {
	[KREP_A_CTRL_EPOCH] = NLA_POLICY_MIN(NLA_U32, 1),
	[KREP_A_CTRL_OWNER] = { .type = NLA_U64 },
	[KREP_A_CTRL_LEASE_MS] = NLA_POLICY_FULL_RANGE(NLA_U32,
						       &krep_lease_range),
};

static const struct nla_policy krep_broker_set_policy[KREP_A_MAX + 1] = {
	[KREP_A_BROKER_ID] = NLA_POLICY_FULL_RANGE(NLA_U32, &krep_id_range),
	[KREP_A_CLUSTER_ID] = { .type = NLA_NUL_STRING,
				.len = KREP_CLUSTER_ID_MAX },
	[KREP_A_LISTEN] = NLA_POLICY_NESTED(krep_ep_policy),
	[KREP_A_PEERS] = NLA_POLICY_NESTED(krep_peers_policy),
	[KREP_A_CONTROLLER] = NLA_POLICY_NESTED(krep_ctrl_policy),
	[KREP_A_KAFKA_LISTEN] = NLA_POLICY_NESTED(krep_ep_policy),
	[KREP_A_KAFKA_ADVERTISED] = { .type = NLA_NUL_STRING,
				      .len = KREP_ADVERTISED_MAX },
	[KREP_A_SECRET] = { .type = NLA_BINARY, .len = KREP_SECRET_MAX },
	[KREP_A_LOG_DIR_FD] = NLA_POLICY_MIN(NLA_S32, -1),
};

static const struct genl_multicast_group krep_mcgrps[] = {
	[KREP_MCGRP_EVENTS_ID] = { .name = KREP_MCGRP_EVENTS },
};

static int put_endpoint(struct sk_buff *skb, int type,
			const struct krep_endpoint *ep)
{
	struct nlattr *nest;

	nest = nla_nest_start(skb, type);
	if (!nest)
		return -EMSGSIZE;
	if (ep->sa.sa_family == AF_INET) {
		if (nla_put_in_addr(skb, KREP_A_EP_IPV4, ep->in4.sin_addr.s_addr) ||
		    nla_put_u16(skb, KREP_A_EP_PORT, ntohs(ep->in4.sin_port)))
			goto cancel;
	} else {
		if (nla_put_in6_addr(skb, KREP_A_EP_IPV6, &ep->in6.sin6_addr) ||
		    nla_put_u16(skb, KREP_A_EP_PORT, ntohs(ep->in6.sin6_port)))
			goto cancel;
	}
	nla_nest_end(skb, nest);
	return 0;

cancel:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

static int put_stats(struct sk_buff *skb, struct krep_stats *st)
{
	struct nlattr *nest = nla_nest_start(skb, KREP_A_STATS);

	if (!nest ||
	    nla_put_u64_64bit(skb, KREP_A_STAT_RECORDS,
			      atomic64_read(&st->records), KREP_A_STAT_PAD) ||
	    nla_put_u64_64bit(skb, KREP_A_STAT_PRODUCE_BYTES,
			      atomic64_read(&st->produce_bytes),
			      KREP_A_STAT_PAD) ||
	    nla_put_u64_64bit(skb, KREP_A_STAT_FOLLOWER_BYTES,
			      atomic64_read(&st->follower_bytes),
			      KREP_A_STAT_PAD) ||
	    nla_put_u64_64bit(skb, KREP_A_STAT_RX_COPY_BYTES,
			      atomic64_read(&st->rx_copy_bytes),
			      KREP_A_STAT_PAD) ||
	    nla_put_u64_64bit(skb, KREP_A_STAT_TX_ZEROCOPY_BYTES,
			      atomic64_read(&st->tx_zerocopy_bytes),
			      KREP_A_STAT_PAD) ||
	    nla_put_u64_64bit(skb, KREP_A_STAT_FETCH_RESPONSES,
			      atomic64_read(&st->fetch_responses),
			      KREP_A_STAT_PAD))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

static int put_broker(struct sk_buff *skb, struct krep_net *kn,
		      const struct krep_broker_cfg *cfg, bool admin)
{
	struct nlattr *peers, *peer;
	unsigned int i;

	if (cfg->broker_id != KREP_BROKER_ID_UNSET &&
	    nla_put_u32(skb, KREP_A_BROKER_ID, cfg->broker_id))
		return -EMSGSIZE;
	/* what a peer must present in HELLO: for admins only */
	if (admin && cfg->cluster_id[0] &&
	    nla_put_string(skb, KREP_A_CLUSTER_ID, cfg->cluster_id))
		return -EMSGSIZE;
	if (krep_endpoint_valid(&cfg->listen) &&
	    put_endpoint(skb, KREP_A_LISTEN, &cfg->listen))
		return -EMSGSIZE;
	if (krep_endpoint_valid(&cfg->kafka_listen)) {
		char adv[KREP_ADVERTISED_MAX + 1];

		krep_broker_advertised(cfg, adv, sizeof(adv));
		if (put_endpoint(skb, KREP_A_KAFKA_LISTEN, &cfg->kafka_listen) ||
		    nla_put_string(skb, KREP_A_KAFKA_ADVERTISED, adv))
			return -EMSGSIZE;
	}
	if (admin) {
		char *dir = kmalloc(KREP_LOG_DIR_NAME_MAX, GFP_KERNEL);
		int err = dir ? krep_logdir_name(kn, dir, KREP_LOG_DIR_NAME_MAX) :
				-ENOMEM;

		err = !err ? nla_put_string(skb, KREP_A_LOG_DIR, dir) : 0;
		kfree(dir);
		if (err)
			return -EMSGSIZE;
	}
	if (nla_put_u8(skb, KREP_A_AUTH, !!cfg->secret_len) ||
	    nla_put_u32(skb, KREP_A_GENERATION, cfg->generation) ||
	    nla_put_u64_64bit(skb, KREP_A_INCARNATION, kn->incarnation,
			      KREP_A_PAD) ||
	    nla_put_u64_64bit(skb, KREP_A_LOG_MEMORY,
			      atomic64_read(&kn->mem.used), KREP_A_PAD) ||
	    nla_put_u64_64bit(skb, KREP_A_LOG_MEMORY_MAX, kn->mem.max,
			      KREP_A_PAD) ||
	    krep_ctrl_fill(kn, skb) ||
	    put_stats(skb, &kn->stats))
		return -EMSGSIZE;

	peers = nla_nest_start(skb, KREP_A_PEERS);
	if (!peers)
		return -EMSGSIZE;
	for (i = 0; i < cfg->npeers; i++) {
		peer = nla_nest_start(skb, KREP_A_PEER);
		if (!peer ||
		    nla_put_u32(skb, KREP_A_PEER_ID, cfg->peers[i].id) ||
		    put_endpoint(skb, KREP_A_PEER_EP, &cfg->peers[i].ep) ||
		    nla_put_u8(skb, KREP_A_PEER_STATE,
			       krep_net_peer_state(kn, cfg->peers[i].id)))
			return -EMSGSIZE;
		nla_nest_end(skb, peer);
	}
	nla_nest_end(skb, peers);
	return 0;
}

/*
 * A message carrying the broker's state; caller holds cfg_lock. The
 * cluster id only for @admin (and in events: see uapi/linux/krep.h).
 */
static struct sk_buff *broker_msg(struct krep_net *kn,
				  const struct krep_broker_cfg *cfg, u8 cmd,
				  u32 portid, u32 seq, bool admin)
{
	struct sk_buff *msg;
	void *hdr;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return NULL;
	hdr = genlmsg_put(msg, portid, seq, &krep_genl_family, 0, cmd);
	if (!hdr || put_broker(msg, kn, cfg, admin)) {
		nlmsg_free(msg);
		return NULL;
	}
	genlmsg_end(msg, hdr);
	return msg;
}

static int krep_nl_broker_get(struct sk_buff *skb, struct genl_info *info)
{
	struct net *net = genl_info_net(info);
	struct krep_net *kn = krep_net(net);
	bool admin = netlink_ns_capable(skb, net->user_ns, CAP_NET_ADMIN);
	struct sk_buff *msg;

	mutex_lock(&kn->cfg_lock);
	msg = broker_msg(kn, krep_broker_cfg_locked(kn), KREP_CMD_BROKER_GET,
			 info->snd_portid, info->snd_seq, admin);
	mutex_unlock(&kn->cfg_lock);
	if (!msg)
		return -ENOMEM;
	return genlmsg_reply(msg, info);
}

/* parse a KREP_A_EP_* nest that the policy has already validated */
static int parse_endpoint(struct nlattr *attr, struct krep_endpoint *ep,
			  struct netlink_ext_ack *extack)
{
	struct nlattr *tb[KREP_A_EP_MAX + 1];
	int err;

	err = nla_parse_nested(tb, KREP_A_EP_MAX, attr, krep_ep_policy, extack);
	if (err)
		return err;
	if (!!tb[KREP_A_EP_IPV4] == !!tb[KREP_A_EP_IPV6]) {
		NL_SET_ERR_MSG_ATTR(extack, attr,
				    "endpoint needs exactly one of IPv4 and IPv6 address");
		return -EINVAL;
	}
	if (NL_REQ_ATTR_CHECK(extack, attr, tb, KREP_A_EP_PORT)) {
		NL_SET_ERR_MSG(extack, "endpoint needs a port");
		return -EINVAL;
	}
	memset(ep, 0, sizeof(*ep));
	if (tb[KREP_A_EP_IPV4]) {
		ep->in4.sin_family = AF_INET;
		ep->in4.sin_addr.s_addr = nla_get_in_addr(tb[KREP_A_EP_IPV4]);
		ep->in4.sin_port = htons(nla_get_u16(tb[KREP_A_EP_PORT]));
	} else {
		ep->in6.sin6_family = AF_INET6;
		ep->in6.sin6_addr = nla_get_in6_addr(tb[KREP_A_EP_IPV6]);
		ep->in6.sin6_port = htons(nla_get_u16(tb[KREP_A_EP_PORT]));
	}
	return 0;
}

static int parse_peer(struct nlattr *attr, struct krep_peer_cfg *peer,
		      struct netlink_ext_ack *extack)
{
	struct nlattr *tb[KREP_A_PEER_MAX + 1];
	int err;

	err = nla_parse_nested(tb, KREP_A_PEER_MAX, attr, krep_peer_policy,
			       extack);
	if (err)
		return err;
	if (NL_REQ_ATTR_CHECK(extack, attr, tb, KREP_A_PEER_ID)) {
		NL_SET_ERR_MSG(extack, "peer needs an id");
		return -EINVAL;
	}
	if (NL_REQ_ATTR_CHECK(extack, attr, tb, KREP_A_PEER_EP)) {
		NL_SET_ERR_MSG(extack, "peer needs an endpoint");
		return -EINVAL;
	}
	peer->id = nla_get_u32(tb[KREP_A_PEER_ID]);
	return parse_endpoint(tb[KREP_A_PEER_EP], &peer->ep, extack);
}

static int count_peers(struct nlattr *peers, struct netlink_ext_ack *extack)
{
	struct nlattr *pos;
	int n = 0, rem;

	nla_for_each_nested(pos, peers, rem) {
		if (nla_type(pos) != KREP_A_PEER) {
			NL_SET_ERR_MSG_ATTR(extack, pos,
					    "peers nest holds only peer entries");
			return -EINVAL;
		}
		if (++n > KREP_PEERS_MAX) {
			NL_SET_ERR_MSG_ATTR(extack, pos, "more than 64 peers");
			return -E2BIG;
		}
	}
	return n;
}

/* report @why, a string with static storage, from a shared checker */
static void set_err(struct netlink_ext_ack *extack, const struct nlattr *attr,
		    const char *why)
{
	if (!extack)
		return;
	extack->_msg = why;
	if (attr)
		NL_SET_BAD_ATTR(extack, attr);
}

/* build the configuration a BROKER_SET asks for, on top of @old */
static struct krep_broker_cfg *
build_cfg(const struct krep_broker_cfg *old, struct genl_info *info)
{
	struct netlink_ext_ack *extack = info->extack;
	struct nlattr **attrs = info->attrs;
	struct krep_broker_cfg *cfg;
	unsigned int npeers = old->npeers, i = 0;
	const char *why = NULL;
	struct nlattr *pos;
	int err, rem;

	if (attrs[KREP_A_PEERS]) {
		err = count_peers(attrs[KREP_A_PEERS], extack);
		if (err < 0)
			return ERR_PTR(err);
		npeers = err;
	}
	cfg = krep_broker_cfg_dup(old, npeers);
	if (!cfg)
		return ERR_PTR(-ENOMEM);

	if (attrs[KREP_A_PEERS]) {
		nla_for_each_nested(pos, attrs[KREP_A_PEERS], rem) {
			err = parse_peer(pos, &cfg->peers[i++], extack);
			if (err)
				goto fail;
		}
	} else {
		memcpy(cfg->peers, old->peers, npeers * sizeof(old->peers[0]));
	}
	if (attrs[KREP_A_BROKER_ID]) {
		cfg->broker_id = nla_get_u32(attrs[KREP_A_BROKER_ID]);
		if (cfg->broker_id != old->broker_id &&
		    krep_topics_exist(krep_net(genl_info_net(info)))) {
			NL_SET_ERR_MSG_ATTR(extack, attrs[KREP_A_BROKER_ID],
					    "broker id cannot change while topics exist");
			err = -EBUSY;
			goto fail;
		}
	}
	if (attrs[KREP_A_CLUSTER_ID]) {
		err = krep_cluster_id_check(nla_data(attrs[KREP_A_CLUSTER_ID]),
					    &why);
		if (err) {
			set_err(extack, attrs[KREP_A_CLUSTER_ID], why);
			goto fail;
		}
		nla_strscpy(cfg->cluster_id, attrs[KREP_A_CLUSTER_ID],
			    sizeof(cfg->cluster_id));
	}
	if (attrs[KREP_A_LISTEN]) {
		err = parse_endpoint(attrs[KREP_A_LISTEN], &cfg->listen, extack);
		if (err)
			goto fail;
	}
	if (attrs[KREP_A_KAFKA_LISTEN]) {
		/* an empty nest: no Kafka listener */
		if (!nla_len(attrs[KREP_A_KAFKA_LISTEN])) {
			cfg->kafka_listen.sa.sa_family = AF_UNSPEC;
		} else {
			err = parse_endpoint(attrs[KREP_A_KAFKA_LISTEN],
					     &cfg->kafka_listen, extack);
			if (err)
				goto fail;
		}
	}
	if (attrs[KREP_A_SECRET]) {
		u32 len = nla_len(attrs[KREP_A_SECRET]);

		if (len && len < KREP_SECRET_MIN) {
			NL_SET_ERR_MSG_ATTR(extack, attrs[KREP_A_SECRET],
					    "a cluster secret has 16 to 64 bytes (none: empty)");
			err = -EINVAL;
			goto fail;
		}
		memset(cfg->secret, 0, sizeof(cfg->secret));
		nla_memcpy(cfg->secret, attrs[KREP_A_SECRET], len);
		cfg->secret_len = len;
	}
	if (attrs[KREP_A_KAFKA_ADVERTISED]) {
		const char *adv = nla_data(attrs[KREP_A_KAFKA_ADVERTISED]);

		if (*adv) {
			err = krep_advertised_check(adv, &why);
			if (err) {
				set_err(extack, attrs[KREP_A_KAFKA_ADVERTISED],
					why);
				goto fail;
			}
		}
		strscpy(cfg->kafka_advertised, adv,
			sizeof(cfg->kafka_advertised));
	}
	err = krep_broker_cfg_check(cfg, &why);
	if (err) {
		set_err(extack, NULL, why);
		goto fail;
	}
	return cfg;

fail:
	krep_broker_cfg_free(cfg);
	return ERR_PTR(err);
}

static void notify_broker(struct krep_net *kn, const struct krep_broker_cfg *cfg)
{
	struct sk_buff *msg;

	if (!genl_has_listeners(&krep_genl_family, kn->net,
				KREP_MCGRP_EVENTS_ID))
		return;
	msg = broker_msg(kn, cfg, KREP_CMD_BROKER_SET, 0, 0, true);
	if (msg)
		genlmsg_multicast_netns(&krep_genl_family, kn->net, msg, 0,
					KREP_MCGRP_EVENTS_ID, GFP_KERNEL);
}

/* the KREP_A_CONTROLLER nest of a BROKER_SET */
static int parse_claim(struct genl_info *info, struct krep_ctrl_claim *c)
{
	struct nlattr *tb[KREP_A_CTRL_MAX + 1];
	struct nlattr *nest = info->attrs[KREP_A_CONTROLLER];
	int err;

	err = nla_parse_nested(tb, KREP_A_CTRL_MAX, nest, krep_ctrl_policy,
			       info->extack);
	if (err)
		return err;
	if (!tb[KREP_A_CTRL_EPOCH] || !tb[KREP_A_CTRL_OWNER] ||
	    !tb[KREP_A_CTRL_LEASE_MS]) {
		NL_SET_ERR_MSG_ATTR(info->extack, nest,
				    "a claim needs epoch, owner and lease");
		return -EINVAL;
	}
	c->epoch = nla_get_u32(tb[KREP_A_CTRL_EPOCH]);
	c->owner = nla_get_u64(tb[KREP_A_CTRL_OWNER]);
	c->lease_ms = nla_get_u32(tb[KREP_A_CTRL_LEASE_MS]);
	if (!c->owner) {
		NL_SET_ERR_MSG_ATTR(info->extack, tb[KREP_A_CTRL_OWNER],
				    "owner must be nonzero");
		return -EINVAL;
	}
	if (c->lease_ms && c->lease_ms < 100) {
		NL_SET_ERR_MSG_ATTR(info->extack, tb[KREP_A_CTRL_LEASE_MS],
				    "lease is 0 (release) or 100..600000 ms");
		return -ERANGE;
	}
	return 0;
}

/* a listener the new configuration opens: refuse it if it cannot bind */
static int check_listen(struct net *net, const struct krep_broker_cfg *old,
			const struct krep_endpoint *now,
			const struct krep_endpoint *next, struct nlattr *attr,
			struct netlink_ext_ack *extack)
{
	static const struct krep_endpoint none = {
		.sa = { .sa_family = AF_UNSPEC },
	};
	int err;

	/* without an id the broker listened nowhere */
	err = krep_net_can_listen(net, old->broker_id == KREP_BROKER_ID_UNSET ?
				  &none : now, next);
	if (err)
		NL_SET_ERR_MSG_ATTR(extack, attr,
				    "cannot listen on this address (in use, or not allowed)");
	return err;
}

/*
 * KREP_A_LOG_DIR_FD, the last step that may fail; without it, the new id
 * must still be the log directory's (cfg_lock held)
 */
static int set_log_dir(struct krep_net *kn, const struct krep_broker_cfg *cfg,
		       struct genl_info *info)
{
	struct nlattr *attr = info->attrs[KREP_A_LOG_DIR_FD];
	const char *why = NULL;
	struct path root;
	int err, fd;

	if (!attr) {
		err = krep_logdir_check_cfg(kn, cfg->broker_id, cfg->cluster_id,
					    &why);
		if (err)
			set_err(info->extack, NULL, why);
		return err;
	}
	fd = nla_get_s32(attr);
	/*
	 * the module writes there with its own credentials, not the
	 * caller's: only the host's administrator may point it somewhere
	 */
	if (!capable(CAP_SYS_ADMIN)) {
		NL_SET_ERR_MSG_ATTR(info->extack, attr,
				    "a log directory needs CAP_SYS_ADMIN in the initial user namespace");
		return -EPERM;
	}
	if (fd >= 0 && cfg->broker_id == KREP_BROKER_ID_UNSET) {
		NL_SET_ERR_MSG_ATTR(info->extack, attr,
				    "set the broker id before the log directory");
		return -EINVAL;
	}
	if (fd >= 0) {
		err = krep_logdir_open_fd(fd, &root);
		if (err) {
			NL_SET_ERR_MSG_ATTR(info->extack, attr,
					    "the log directory must be an open directory");
			return err;
		}
	}
	err = krep_logdir_set(kn, fd >= 0 ? &root : NULL, cfg->broker_id,
			      cfg->cluster_id, &why);
	if (err)
		set_err(info->extack, attr, why);
	return err;
}

static int krep_nl_broker_set(struct sk_buff *skb, struct genl_info *info)
{
	struct krep_net *kn = krep_net(genl_info_net(info));
	bool config = info->attrs[KREP_A_BROKER_ID] ||
		      info->attrs[KREP_A_CLUSTER_ID] ||
		      info->attrs[KREP_A_LISTEN] || info->attrs[KREP_A_PEERS] ||
		      info->attrs[KREP_A_KAFKA_LISTEN] ||
		      info->attrs[KREP_A_KAFKA_ADVERTISED] ||
		      info->attrs[KREP_A_SECRET] ||
		      info->attrs[KREP_A_LOG_DIR_FD];
	struct krep_broker_cfg *cfg = NULL;
	struct krep_ctrl_claim claim;
	struct krep_status st = {};
	int err;

	if (!config && !info->attrs[KREP_A_CONTROLLER]) {
		NL_SET_ERR_MSG(info->extack, "nothing to set");
		return -EINVAL;
	}
	if (info->attrs[KREP_A_CONTROLLER]) {
		err = parse_claim(info, &claim);
		if (err)
			return err;
	}

	mutex_lock(&kn->cfg_lock);
	if (info->attrs[KREP_A_CONTROLLER]) {
		err = krep_ctrl_check(kn, &claim, &st);
		if (err) {
			mutex_unlock(&kn->cfg_lock);
			return krep_nl_status(info, err, &st);
		}
	}
	if (config) {
		struct krep_broker_cfg *old = krep_broker_cfg_locked(kn);

		cfg = build_cfg(old, info);
		if (IS_ERR(cfg)) {
			mutex_unlock(&kn->cfg_lock);
			return PTR_ERR(cfg);
		}
		/* the listeners start only once the broker has an id */
		err = 0;
		if (cfg->broker_id != KREP_BROKER_ID_UNSET)
			err = check_listen(genl_info_net(info), old,
					   &old->listen, &cfg->listen,
					   info->attrs[KREP_A_LISTEN],
					   info->extack) ?:
			      check_listen(genl_info_net(info), old,
					   &old->kafka_listen,
					   &cfg->kafka_listen,
					   info->attrs[KREP_A_KAFKA_LISTEN],
					   info->extack);
		if (!err)
			err = set_log_dir(kn, cfg, info);
		if (err) {
			mutex_unlock(&kn->cfg_lock);
			krep_broker_cfg_free(cfg);
			return err;
		}
	}
	/* everything checked: apply all of it */
	if (info->attrs[KREP_A_CONTROLLER])
		krep_ctrl_apply(kn, &claim);
	if (cfg) {
		/* whoever gives the broker its id pays for its work */
		if (krep_broker_cfg_locked(kn)->broker_id ==
		    KREP_BROKER_ID_UNSET &&
		    cfg->broker_id != KREP_BROKER_ID_UNSET)
			krep_broker_memcg_take(kn);
		cfg->generation++;	/* only a successful SET bumps it */
		krep_broker_cfg_replace(kn, cfg);
		notify_broker(kn, cfg);
	}
	mutex_unlock(&kn->cfg_lock);
	/* the sockets follow the new listen address and peers */
	if (cfg)
		krep_net_apply(kn);
	return 0;
}

/**
 * krep_nl_status - finish a data-path op: errno, extack message and, on a
 * protocol error, Kafka's code in the extack cookie
 * @info: the request
 * @err: 0 or a negative errno
 * @st: the status the op filled in
 */
int krep_nl_status(struct genl_info *info, int err,
		   const struct krep_status *st)
{
	struct netlink_ext_ack *extack = info->extack;
	struct krep_err_cookie ck = { .kafka_error = st->kerr };

	if (!err || !extack)
		return err;
	if (st->why)
		extack->_msg = st->why;
	if (st->kerr) {
		memcpy(extack->cookie, &ck, sizeof(ck));
		extack->cookie_len = sizeof(ck);
	}
	return err;
}

/* the KREP_A_ISR and KREP_A_REPLICAS nests hold broker ids only */
const struct nla_policy krep_id_list_policy[KREP_A_MAX + 1] = {
	[KREP_A_BROKER_ID] = { .type = NLA_U32 },
};

/* a nest of KREP_A_BROKER_ID: at most KREP_RF_MAX distinct ids */
int krep_nl_parse_ids(struct genl_info *info, struct nlattr *nest, u32 *ids,
		      unsigned int *n)
{
	struct nlattr *pos;
	unsigned int i;
	int rem;

	*n = 0;
	nla_for_each_nested(pos, nest, rem) {
		u32 id;

		if (nla_type(pos) != KREP_A_BROKER_ID ||
		    nla_len(pos) != sizeof(u32)) {
			NL_SET_ERR_MSG_ATTR(info->extack, pos,
					    "list holds only broker ids");
			return -EINVAL;
		}
		if (*n == KREP_RF_MAX) {
			NL_SET_ERR_MSG_ATTR(info->extack, pos,
					    "more brokers than a partition has replicas");
			return -E2BIG;
		}
		id = nla_get_u32(pos);
		for (i = 0; i < *n; i++) {
			if (ids[i] == id) {
				NL_SET_ERR_MSG_ATTR(info->extack, pos,
						    "broker listed twice");
				return -EINVAL;
			}
		}
		ids[(*n)++] = id;
	}
	return 0;
}

/* a required attribute; false with an extack message when missing */
bool krep_nl_require(struct genl_info *info, int attr, const char *what)
{
	if (info->attrs[attr])
		return true;
	NL_SET_ERR_ATTR_MISS(info->extack, NULL, attr);
	NL_SET_ERR_MSG(info->extack, "missing required attribute");
	return false;
}

/* Debian's 6.1 has no split ops: one table, one policy per op */
static const struct genl_ops krep_genl_ops[] = {
	{
		.cmd = KREP_CMD_BROKER_GET,
		.doit = krep_nl_broker_get,
		.policy = krep_broker_get_policy,
		.maxattr = KREP_A_MAX,
	},
	{
		.cmd = KREP_CMD_BROKER_SET,
		.doit = krep_nl_broker_set,
		.policy = krep_broker_set_policy,
		.maxattr = KREP_A_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = KREP_CMD_TOPIC_NEW,
		.doit = krep_nl_topic_new,
		.policy = krep_topic_new_policy,
		.maxattr = KREP_A_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = KREP_CMD_TOPIC_DEL,
		.doit = krep_nl_topic_del,
		.policy = krep_topic_del_policy,
		.maxattr = KREP_A_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = KREP_CMD_TOPIC_GET,
		.doit = krep_nl_topic_get,
		.dumpit = krep_nl_topic_dump,
		.policy = krep_topic_get_policy,
		.maxattr = KREP_A_MAX,
	},
	{
		.cmd = KREP_CMD_PARTITION_GET,
		.dumpit = krep_nl_partition_dump,
		.policy = krep_topic_get_policy,
		.maxattr = KREP_A_MAX,
	},
	{
		.cmd = KREP_CMD_PRODUCE,
		.doit = krep_nl_produce,
		.policy = krep_produce_policy,
		.maxattr = KREP_A_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = KREP_CMD_FETCH,
		.doit = krep_nl_fetch,
		.policy = krep_fetch_policy,
		.maxattr = KREP_A_MAX,
	},
	{
		.cmd = KREP_CMD_LIST_OFFSETS,
		.doit = krep_nl_list_offsets,
		.policy = krep_list_offsets_policy,
		.maxattr = KREP_A_MAX,
	},
	{
		.cmd = KREP_CMD_DELETE_RECORDS,
		.doit = krep_nl_delete_records,
		.policy = krep_delete_records_policy,
		.maxattr = KREP_A_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = KREP_CMD_LEADER_AND_ISR,
		.doit = krep_nl_leader_and_isr,
		.policy = krep_leader_and_isr_policy,
		.maxattr = KREP_A_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = KREP_CMD_OFFSETS_FOR_LEADER_EPOCH,
		.doit = krep_nl_epoch_end,
		.policy = krep_epoch_end_policy,
		.maxattr = KREP_A_MAX,
	},
	{
		.cmd = KREP_CMD_TXN,
		.doit = krep_nl_txn,
		.policy = krep_txn_policy,
		.maxattr = KREP_A_MAX,
		.flags = GENL_UNS_ADMIN_PERM,
	},
};

struct genl_family krep_genl_family __ro_after_init = {
	.name = KREP_GENL_NAME,
	.version = KREP_GENL_VERSION,
	.netnsok = true,
	.parallel_ops = true,
	.module = THIS_MODULE,
	.ops = krep_genl_ops,
	.n_ops = ARRAY_SIZE(krep_genl_ops),
	.mcgrps = krep_mcgrps,
	.n_mcgrps = ARRAY_SIZE(krep_mcgrps),
};

int __init krep_netlink_init(void)
{
	int err;

	err = krep_nlpark_init();
	if (err)
		return err;
	err = genl_register_family(&krep_genl_family);
	if (err)
		krep_nlpark_exit();
	return err;
}

void krep_netlink_exit(void)
{
	/*
	 * the family first: that waits for running handlers and lets no new
	 * one in, so none can park into a namespace's list once
	 * krep_nlpark_exit() has freed it; the parked ones are then dropped
	 * (krep_broker_shutdown() has made them answerable already)
	 */
	genl_unregister_family(&krep_genl_family);
	krep_nlpark_exit();
}

MODULE_ALIAS_GENL_FAMILY(KREP_GENL_NAME);
