// SPDX-License-Identifier: GPL-2.0
/*
 * krep: the controller's ops: LEADER_AND_ISR and OffsetsForLeaderEpoch.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <net/genetlink.h>
#include <linux/krep.h>

#include "krep.h"
#include "broker.h"
#include "ctrl.h"
#include "fetcher.h"
#include "net.h"
#include "netlink.h"
#include "partition.h"
#include "topic.h"
#include "topic_meta.h"

#define PART_POLICY							\
	[KREP_A_TOPIC] = { .type = NLA_NUL_STRING,			\
			   .len = KREP_TOPIC_NAME_MAX },		\
	[KREP_A_PARTITION] = NLA_POLICY_MAX(NLA_U32, KREP_PARTITIONS_MAX - 1)

const struct nla_policy krep_leader_and_isr_policy[KREP_A_MAX + 1] = {
	PART_POLICY,
	[KREP_A_CONTROLLER_EPOCH] = NLA_POLICY_MIN(NLA_U32, 1),
	[KREP_A_LEADER] = { .type = NLA_U32 },
	[KREP_A_LEADER_EPOCH] = { .type = NLA_U32 },
	[KREP_A_PARTITION_EPOCH] = { .type = NLA_U32 },
	[KREP_A_ISR] = NLA_POLICY_NESTED(krep_id_list_policy),
	[KREP_A_REPLICAS] = NLA_POLICY_NESTED(krep_id_list_policy),
	[KREP_A_INELIGIBLE] = NLA_POLICY_NESTED(krep_id_list_policy),
};

const struct nla_policy krep_epoch_end_policy[KREP_A_MAX + 1] = {
	PART_POLICY,
	[KREP_A_LEADER_EPOCH] = { .type = NLA_U32 },
	[KREP_A_FOLLOWER_READ] = { .type = NLA_FLAG },
};

static void kick_fetcher(struct krep_net *kn, u32 leader)
{
	struct krep_net_state *ns = kn->ns;
	unsigned int i;

	mutex_lock(&ns->lock);
	for (i = 0; i < ns->npeers; i++) {
		if (ns->peers[i].id == leader)
			krep_fetcher_kick(&ns->peers[i]);
	}
	mutex_unlock(&ns->lock);
}

int krep_nl_leader_and_isr(struct sk_buff *skb, struct genl_info *info)
{
	struct krep_net *kn = krep_net(genl_info_net(info));
	struct nlattr **attrs = info->attrs;
	struct krep_status st = {};
	struct krep_partition *p;
	struct krep_topic *t;
	struct krep_lai lai;
	u32 leader, index;
	s64 follow;
	int err;

	if (!krep_nl_require_partition(info) ||
	    !krep_nl_require(info, KREP_A_CONTROLLER_EPOCH, "controller epoch") ||
	    !krep_nl_require(info, KREP_A_LEADER, "leader") ||
	    !krep_nl_require(info, KREP_A_LEADER_EPOCH, "leader epoch") ||
	    !krep_nl_require(info, KREP_A_PARTITION_EPOCH, "partition epoch") ||
	    !krep_nl_require(info, KREP_A_ISR, "ISR"))
		return -EINVAL;
	memset(&lai, 0, sizeof(lai));
	leader = nla_get_u32(attrs[KREP_A_LEADER]);
	if (leader != KREP_NO_LEADER && leader > KREP_BROKER_ID_MAX) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[KREP_A_LEADER],
				    "leader is neither a broker id nor KREP_NO_LEADER");
		return -ERANGE;
	}
	lai.leader = leader == KREP_NO_LEADER ? -1 : (s64)leader;
	lai.leader_epoch = nla_get_u32(attrs[KREP_A_LEADER_EPOCH]);
	lai.partition_epoch = nla_get_u32(attrs[KREP_A_PARTITION_EPOCH]);
	err = krep_nl_parse_ids(info, attrs[KREP_A_ISR], lai.isr, &lai.nisr);
	if (!err && attrs[KREP_A_REPLICAS])
		err = krep_nl_parse_ids(info, attrs[KREP_A_REPLICAS],
					lai.replicas, &lai.nreplicas);
	if (!err && attrs[KREP_A_INELIGIBLE])
		err = krep_nl_parse_ids(info, attrs[KREP_A_INELIGIBLE],
					lai.inel, &lai.ninel);
	if (err)
		return err;
	if (lai.leader >= 0 && !lai.nisr) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[KREP_A_ISR],
				    "an ISR without its leader");
		return -EINVAL;
	}
	err = krep_ctrl_check_epoch(kn, nla_get_u32(attrs[KREP_A_CONTROLLER_EPOCH]),
				    &st);
	if (err)
		return krep_nl_status(info, err, &st);
	t = krep_topic_get(kn, nla_data(attrs[KREP_A_TOPIC]));
	if (!t) {
		err = krep_fail(&st, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
				-ENOENT, "no such topic");
		return krep_nl_status(info, err, &st);
	}
	index = nla_get_u32(attrs[KREP_A_PARTITION]);
	follow = -1;
	if (index < t->npartitions && !t->parts[index]) {
		/* not hosted here: kept for Metadata only */
		err = krep_topic_meta_set(t, index, &lai, &st);
	} else {
		p = krep_topic_partition(t, index, &st);
		err = IS_ERR(p) ? PTR_ERR(p) :
		      krep_partition_leader_and_isr(p, &lai, &follow, &st);
	}
	krep_topic_put(t);
	if (err)
		return krep_nl_status(info, err, &st);
	if (follow >= 0)
		kick_fetcher(kn, follow);
	return 0;
}

int krep_nl_epoch_end(struct sk_buff *skb, struct genl_info *info)
{
	struct krep_status st = {};
	struct krep_partition *p;
	struct krep_topic *t;
	struct sk_buff *msg;
	s64 found;
	void *hdr;
	u64 end;
	int err;

	if (!krep_nl_require_partition(info) ||
	    !krep_nl_require(info, KREP_A_LEADER_EPOCH, "leader epoch"))
		return -EINVAL;
	p = krep_nl_partition(info, &t, &st);
	if (IS_ERR(p))
		return krep_nl_status(info, PTR_ERR(p), &st);
	err = krep_partition_epoch_end(p,
				       nla_get_u32(info->attrs[KREP_A_LEADER_EPOCH]),
				       nla_get_flag(info->attrs[KREP_A_FOLLOWER_READ]),
				       &found, &end, &st);
	krep_topic_put(t);
	if (err)
		return krep_nl_status(info, err, &st);
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &krep_genl_family, 0,
				KREP_CMD_OFFSETS_FOR_LEADER_EPOCH);
	if (!hdr ||
	    (found >= 0 &&
	     (nla_put_u32(msg, KREP_A_LEADER_EPOCH, found) ||
	      nla_put_u64_64bit(msg, KREP_A_OFFSET, end, KREP_A_PAD)))) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}
