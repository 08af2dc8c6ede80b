// SPDX-License-Identifier: GPL-2.0
/*
 * krep: TOPIC_NEW, TOPIC_DEL, TOPIC_GET and PARTITION_GET.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/rculist.h>
#include <net/genetlink.h>
#include <net/sock.h>
#include <linux/krep.h>

#include "krep.h"
#include "broker.h"
#include "ctrl.h"
#include "netlink.h"
#include "partition.h"
#include "topic.h"

static struct netlink_range_validation lag_range = {
	.min = 10, .max = 3600 * 1000,
};

static struct netlink_range_validation segment_range = {
	.min = 4096, .max = 1 << 30,
};

static struct netlink_range_validation msg_range = {
	.min = 64, .max = 1048588,
};

static const struct nla_policy tcfg_policy[KREP_A_TCFG_MAX + 1] = {
	[KREP_A_TCFG_MIN_INSYNC_REPLICAS] = NLA_POLICY_RANGE(NLA_U32, 1,
							     KREP_RF_MAX),
	[KREP_A_TCFG_REPLICA_LAG_TIME_MAX_MS] =
		NLA_POLICY_FULL_RANGE(NLA_U32, &lag_range),
	[KREP_A_TCFG_SEGMENT_BYTES] =
		NLA_POLICY_FULL_RANGE(NLA_U32, &segment_range),
	[KREP_A_TCFG_RETENTION_BYTES] = NLA_POLICY_MIN(NLA_S64, -1),
	[KREP_A_TCFG_MAX_MESSAGE_BYTES] =
		NLA_POLICY_FULL_RANGE(NLA_U32, &msg_range),
	[KREP_A_TCFG_UNCLEAN_LEADER_ELECTION] = NLA_POLICY_MAX(NLA_U8, 1),
	[KREP_A_TCFG_FLUSH_MESSAGES] = NLA_POLICY_MIN(NLA_S64, 1),
	[KREP_A_TCFG_FLUSH_MS] = NLA_POLICY_MIN(NLA_S64, 0),
	[KREP_A_TCFG_SEGMENT_MS] = NLA_POLICY_MIN(NLA_S64, 1),
};

/*
 * The name's length, the partition count and the replication factor are
 * checked by the handlers, so that their refusals carry Kafka's code
 * (INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR)
 */
#define TOPIC_NAME_POLICY { .type = NLA_NUL_STRING }

/* KREP_A_ASSIGNMENT: a KREP_A_REPLICAS nest per partition */
static const struct nla_policy assign_policy[KREP_A_MAX + 1] = {
	[KREP_A_REPLICAS] = NLA_POLICY_NESTED(krep_id_list_policy),
};

const struct nla_policy krep_topic_new_policy[KREP_A_MAX + 1] = {
	[KREP_A_TOPIC] = TOPIC_NAME_POLICY,
	[KREP_A_PARTITIONS] = { .type = NLA_U32 },
	[KREP_A_REPLICATION_FACTOR] = { .type = NLA_U32 },
	[KREP_A_TOPIC_CONFIG] = NLA_POLICY_NESTED(tcfg_policy),
	[KREP_A_ASSIGNMENT] = NLA_POLICY_NESTED(assign_policy),
	[KREP_A_CONTROLLER_EPOCH] = NLA_POLICY_MIN(NLA_U32, 1),
};

const struct nla_policy krep_topic_del_policy[KREP_A_MAX + 1] = {
	[KREP_A_TOPIC] = TOPIC_NAME_POLICY,
};

const struct nla_policy krep_topic_get_policy[KREP_A_MAX + 1] = {
	[KREP_A_TOPIC] = TOPIC_NAME_POLICY,
};

static int parse_tcfg(struct nlattr *nest, struct krep_topic_config *tc,
		      struct netlink_ext_ack *extack)
{
	struct nlattr *tb[KREP_A_TCFG_MAX + 1];
	int err;

	krep_topic_config_default(tc);
	if (!nest)
		return 0;
	err = nla_parse_nested(tb, KREP_A_TCFG_MAX, nest, tcfg_policy, extack);
	if (err)
		return err;
	if (tb[KREP_A_TCFG_MIN_INSYNC_REPLICAS])
		tc->min_insync_replicas =
			nla_get_u32(tb[KREP_A_TCFG_MIN_INSYNC_REPLICAS]);
	if (tb[KREP_A_TCFG_REPLICA_LAG_TIME_MAX_MS])
		tc->replica_lag_time_max_ms =
			nla_get_u32(tb[KREP_A_TCFG_REPLICA_LAG_TIME_MAX_MS]);
	if (tb[KREP_A_TCFG_SEGMENT_BYTES])
		tc->segment_bytes = nla_get_u32(tb[KREP_A_TCFG_SEGMENT_BYTES]);
	if (tb[KREP_A_TCFG_RETENTION_BYTES])
		tc->retention_bytes =
			nla_get_s64(tb[KREP_A_TCFG_RETENTION_BYTES]);
	if (tb[KREP_A_TCFG_MAX_MESSAGE_BYTES])
		tc->max_message_bytes =
			nla_get_u32(tb[KREP_A_TCFG_MAX_MESSAGE_BYTES]);
	if (tb[KREP_A_TCFG_UNCLEAN_LEADER_ELECTION])
		tc->unclean_leader_election =
			nla_get_u8(tb[KREP_A_TCFG_UNCLEAN_LEADER_ELECTION]);
	if (tb[KREP_A_TCFG_FLUSH_MESSAGES])
		tc->flush_messages =
			nla_get_s64(tb[KREP_A_TCFG_FLUSH_MESSAGES]);
	if (tb[KREP_A_TCFG_FLUSH_MS])
		tc->flush_ms = nla_get_s64(tb[KREP_A_TCFG_FLUSH_MS]);
	if (tb[KREP_A_TCFG_SEGMENT_MS])
		tc->segment_ms = nla_get_s64(tb[KREP_A_TCFG_SEGMENT_MS]);
	return 0;
}

/* the topic name attribute, checked against Kafka's rules */
static const char *topic_name(struct genl_info *info)
{
	const char *name, *why;

	if (!krep_nl_require(info, KREP_A_TOPIC, "topic name"))
		return NULL;
	name = nla_data(info->attrs[KREP_A_TOPIC]);
	if (krep_topic_name_check(name, strlen(name), &why)) {
		struct krep_status st = {};

		krep_fail(&st, KREP_KERR_INVALID_TOPIC_EXCEPTION, -EINVAL, why);
		krep_nl_status(info, -EINVAL, &st);
		NL_SET_BAD_ATTR(info->extack, info->attrs[KREP_A_TOPIC]);
		return NULL;
	}
	return name;
}

/* a TOPIC_NEW refusal with Kafka's code @kerr, pointing at @attr */
static int bad_topic(struct genl_info *info, s16 kerr,
		     const struct nlattr *attr, const char *why)
{
	struct krep_status st = {};

	krep_fail(&st, kerr, -EINVAL, why);
	krep_nl_status(info, -EINVAL, &st);
	NL_SET_BAD_ATTR(info->extack, attr);
	return -EINVAL;
}

/* an INVALID_REPLICA_ASSIGNMENT refusal pointing at @attr */
static int bad_assignment(struct genl_info *info, const struct nlattr *attr,
			  const char *why)
{
	return bad_topic(info, KREP_KERR_INVALID_REPLICA_ASSIGNMENT, attr, why);
}

/*
 * KREP_A_ASSIGNMENT into @replicas (@np x @rf ids): one KREP_A_REPLICAS
 * per partition, each of @rf distinct ids (the policy checked the types)
 */
static int parse_assignment(struct genl_info *info, u32 np, u32 rf,
			    u32 *replicas)
{
	struct nlattr *nest = info->attrs[KREP_A_ASSIGNMENT], *pos;
	u32 ids[KREP_RF_MAX], i = 0;
	unsigned int n;
	int rem, err;

	nla_for_each_nested(pos, nest, rem) {
		if (i == np)
			return bad_assignment(info, pos,
					      "assignment has more partitions than the topic");
		err = krep_nl_parse_ids(info, pos, ids, &n);
		if (err) {
			/* its extack message stays; the Kafka code goes with it */
			struct krep_status st = {
				.kerr = KREP_KERR_INVALID_REPLICA_ASSIGNMENT,
			};

			return krep_nl_status(info, err, &st);
		}
		if (n != rf)
			return bad_assignment(info, pos,
					      "a partition's replica count is not the replication factor");
		memcpy(&replicas[i * rf], ids, rf * sizeof(*ids));
		i++;
	}
	if (i != np)
		return bad_assignment(info, nest,
				      "assignment has fewer partitions than the topic");
	return 0;
}

int krep_nl_topic_new(struct sk_buff *skb, struct genl_info *info)
{
	struct krep_net *kn = krep_net(genl_info_net(info));
	struct nlattr **attrs = info->attrs;
	struct krep_topic_assign assign = {};
	struct krep_topic_config tc;
	struct krep_status st = {};
	u32 *replicas = NULL;
	const char *name;
	u32 np, rf;
	int err;

	name = topic_name(info);
	if (!name)
		return -EINVAL;
	if (!krep_nl_require(info, KREP_A_PARTITIONS, "partition count") ||
	    !krep_nl_require(info, KREP_A_REPLICATION_FACTOR,
			     "replication factor"))
		return -EINVAL;
	np = nla_get_u32(attrs[KREP_A_PARTITIONS]);
	rf = nla_get_u32(attrs[KREP_A_REPLICATION_FACTOR]);
	if (!np || np > KREP_PARTITIONS_MAX)
		return bad_topic(info, KREP_KERR_INVALID_PARTITIONS,
				 attrs[KREP_A_PARTITIONS],
				 "partitions must be 1..1024");
	if (!rf)
		return bad_topic(info, KREP_KERR_INVALID_REPLICATION_FACTOR,
				 attrs[KREP_A_REPLICATION_FACTOR],
				 "replication factor must be at least 1");
	if (rf > KREP_RF_MAX)
		return bad_topic(info, KREP_KERR_INVALID_REPLICATION_FACTOR,
				 attrs[KREP_A_REPLICATION_FACTOR],
				 "replication factor larger than the number of brokers");
	if (attrs[KREP_A_CONTROLLER_EPOCH] && !attrs[KREP_A_ASSIGNMENT]) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[KREP_A_CONTROLLER_EPOCH],
				    "a controller epoch comes with an assignment");
		return -EINVAL;
	}
	err = parse_tcfg(attrs[KREP_A_TOPIC_CONFIG], &tc, info->extack);
	if (err)
		return err;
	if (attrs[KREP_A_ASSIGNMENT]) {
		replicas = kvmalloc_array(np * rf, sizeof(*replicas),
					  GFP_KERNEL);
		if (!replicas)
			return -ENOMEM;
		err = parse_assignment(info, np, rf, replicas);
		if (err)
			goto out;
		assign.replicas = replicas;
	}
	if (attrs[KREP_A_CONTROLLER_EPOCH]) {
		err = krep_ctrl_check_epoch(kn,
					    nla_get_u32(attrs[KREP_A_CONTROLLER_EPOCH]),
					    &st);
		if (err) {
			err = krep_nl_status(info, err, &st);
			goto out;
		}
		assign.leaderless = true;
	}
	err = krep_topic_create(kn, name, np, rf, &tc,
				replicas ? &assign : NULL, &st);
	err = krep_nl_status(info, err, &st);
out:
	kvfree(replicas);
	return err;
}

int krep_nl_topic_del(struct sk_buff *skb, struct genl_info *info)
{
	struct krep_net *kn = krep_net(genl_info_net(info));
	struct krep_status st = {};
	const char *name;

	name = topic_name(info);
	if (!name)
		return -EINVAL;
	return krep_nl_status(info, krep_topic_delete(kn, name, &st), &st);
}

static int put_tcfg(struct sk_buff *skb, const struct krep_topic_config *tc)
{
	struct nlattr *nest = nla_nest_start(skb, KREP_A_TOPIC_CONFIG);

	if (!nest ||
	    nla_put_u32(skb, KREP_A_TCFG_MIN_INSYNC_REPLICAS,
			tc->min_insync_replicas) ||
	    nla_put_u32(skb, KREP_A_TCFG_REPLICA_LAG_TIME_MAX_MS,
			tc->replica_lag_time_max_ms) ||
	    nla_put_u32(skb, KREP_A_TCFG_SEGMENT_BYTES, tc->segment_bytes) ||
	    nla_put_s64(skb, KREP_A_TCFG_RETENTION_BYTES, tc->retention_bytes,
			KREP_A_TCFG_PAD) ||
	    nla_put_u32(skb, KREP_A_TCFG_MAX_MESSAGE_BYTES,
			tc->max_message_bytes) ||
	    nla_put_u8(skb, KREP_A_TCFG_UNCLEAN_LEADER_ELECTION,
		       tc->unclean_leader_election) ||
	    nla_put_s64(skb, KREP_A_TCFG_FLUSH_MESSAGES, tc->flush_messages,
			KREP_A_TCFG_PAD) ||
	    nla_put_s64(skb, KREP_A_TCFG_FLUSH_MS, tc->flush_ms,
			KREP_A_TCFG_PAD) ||
	    nla_put_s64(skb, KREP_A_TCFG_SEGMENT_MS, tc->segment_ms,
			KREP_A_TCFG_PAD))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

static int fill_topic(struct sk_buff *skb, const struct krep_topic *t,
		      u32 portid, u32 seq, int flags)
{
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &krep_genl_family, flags,
			  KREP_CMD_TOPIC_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_string(skb, KREP_A_TOPIC, t->name) ||
	    nla_put_u32(skb, KREP_A_PARTITIONS, t->npartitions) ||
	    nla_put_u32(skb, KREP_A_REPLICATION_FACTOR,
			t->replication_factor) ||
	    put_tcfg(skb, &t->config)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

int krep_nl_topic_get(struct sk_buff *skb, struct genl_info *info)
{
	struct krep_net *kn = krep_net(genl_info_net(info));
	struct krep_status st = {};
	struct krep_topic *t;
	struct sk_buff *msg;
	const char *name;
	int err;

	name = topic_name(info);
	if (!name)
		return -EINVAL;
	t = krep_topic_get(kn, name);
	if (!t) {
		krep_fail(&st, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION, -ENOENT,
			  "no such topic");
		return krep_nl_status(info, -ENOENT, &st);
	}
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	err = msg ? fill_topic(msg, t, info->snd_portid, info->snd_seq, 0) :
		    -ENOMEM;
	krep_topic_put(t);
	if (err) {
		nlmsg_free(msg);
		return err;
	}
	return genlmsg_reply(msg, info);
}

/*
 * Dumps walk the topic list under RCU; cb->args[0] is the index of the
 * next topic, cb->args[1] the next partition within it.
 */
int krep_nl_topic_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct krep_net *kn = krep_net(sock_net(skb->sk));
	struct krep_topic *t;
	long idx = 0;

	rcu_read_lock();
	list_for_each_entry_rcu(t, &kn->topics, node) {
		if (idx++ < cb->args[0])
			continue;
		if (fill_topic(skb, t, NETLINK_CB(cb->skb).portid,
			       cb->nlh->nlmsg_seq, NLM_F_MULTI))
			break;
		cb->args[0] = idx;
	}
	rcu_read_unlock();
	return skb->len;
}

static int fill_partition(struct sk_buff *skb, struct krep_topic *t,
			  struct krep_partition *p, struct netlink_callback *cb)
{
	void *hdr;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &krep_genl_family, NLM_F_MULTI,
			  KREP_CMD_PARTITION_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_string(skb, KREP_A_TOPIC, t->name) ||
	    krep_partition_fill(p, skb)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/**
 * krep_nl_alter_isr - announce a leader's ISR change on the events group
 * @p: the partition, locked
 * @isr: the new ISR (applied, or asked of the controller)
 */
void krep_nl_alter_isr(struct krep_partition *p, const unsigned long *isr)
{
	struct net *net = p->topic->kn->net;
	u32 cepoch = krep_ctrl_epoch(p->topic->kn);
	struct sk_buff *msg;
	struct nlattr *nest;
	unsigned int i;
	void *hdr;

	if (!genl_has_listeners(&krep_genl_family, net, KREP_MCGRP_EVENTS_ID))
		return;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return;
	hdr = genlmsg_put(msg, 0, 0, &krep_genl_family, 0, KREP_CMD_ALTER_ISR);
	if (!hdr || nla_put_string(msg, KREP_A_TOPIC, p->topic->name) ||
	    nla_put_u32(msg, KREP_A_PARTITION, p->index) ||
	    nla_put_u32(msg, KREP_A_LEADER, p->replicas[p->self]) ||
	    nla_put_u32(msg, KREP_A_LEADER_EPOCH, p->leader_epoch) ||
	    nla_put_u32(msg, KREP_A_PARTITION_EPOCH, p->partition_epoch) ||
	    (cepoch && nla_put_u32(msg, KREP_A_CONTROLLER_EPOCH, cepoch)))
		goto fail;
	nest = nla_nest_start(msg, KREP_A_ISR);
	if (!nest)
		goto fail;
	for_each_set_bit(i, isr, p->nreplicas) {
		if (nla_put_u32(msg, KREP_A_BROKER_ID, p->replicas[i]))
			goto fail;
	}
	nla_nest_end(msg, nest);
	genlmsg_end(msg, hdr);
	genlmsg_multicast_netns(&krep_genl_family, net, msg, 0,
				KREP_MCGRP_EVENTS_ID, GFP_KERNEL);
	return;

fail:
	nlmsg_free(msg);
}

/* the topic at position @idx of the list, with a reference */
static struct krep_topic *topic_at(struct krep_net *kn, long idx,
				   const char *filter)
{
	struct krep_topic *t;
	long i = 0;

	rcu_read_lock();
	list_for_each_entry_rcu(t, &kn->topics, node) {
		if (filter && strcmp(t->name, filter))
			continue;
		if (i++ == idx && kref_get_unless_zero(&t->ref)) {
			rcu_read_unlock();
			return t;
		}
	}
	rcu_read_unlock();
	return NULL;
}

int krep_nl_partition_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	const struct genl_dumpit_info *di = genl_dumpit_info(cb);
	struct krep_net *kn = krep_net(sock_net(skb->sk));
	const char *filter = NULL;
	struct krep_topic *t;
	int err = 0;

	if (di->attrs[KREP_A_TOPIC])
		filter = nla_data(di->attrs[KREP_A_TOPIC]);
	/* partition fill takes a mutex: hold a reference, not RCU */
	while ((t = topic_at(kn, cb->args[0], filter))) {
		for (; cb->args[1] < t->npartitions; cb->args[1]++) {
			struct krep_partition *p = t->parts[cb->args[1]];

			if (!p)
				continue;
			err = fill_partition(skb, t, p, cb);
			if (err)
				break;
		}
		krep_topic_put(t);
		if (err)
			break;
		cb->args[0]++;
		cb->args[1] = 0;
	}
	return skb->len;
}
