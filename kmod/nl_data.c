// SPDX-License-Identifier: GPL-2.0
/*
 * krep: PRODUCE, FETCH, LIST_OFFSETS, DELETE_RECORDS and TXN.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <net/genetlink.h>
#include <linux/krep.h>

#include "krep.h"
#include "broker.h"
#include "netlink.h"
#include "partition.h"
#include "record.h"
#include "topic.h"
#include "producer.h"

#define KREP_FETCH_MAX_BYTES	BIT(20)
/*
 * Waits hold genetlink's cb_lock for reading, which family registration
 * takes for writing: keep them as short as Kafka's request timeout.
 */
#define KREP_WAIT_MAX_MS	30000U

static struct netlink_range_validation fetch_bytes_range = {
	.min = 1, .max = KREP_FETCH_MAX_BYTES,
};

static struct netlink_range_validation wait_range = {
	.min = 0, .max = KREP_WAIT_MAX_MS,
};

static struct netlink_range_validation offset_range = {
	.min = 0, .max = S64_MAX,
};

/*
 * The topic name, the partition index, the records, acks and offsets are
 * checked by the handlers rather than by the policy, so that their
 * refusals carry Kafka's code: an unknown topic or partition
 * (UNKNOWN_TOPIC_OR_PARTITION), a short or malformed batch
 * (INVALID_RECORD), acks outside -1..1 (INVALID_REQUIRED_ACKS), an offset
 * beyond any log (OFFSET_OUT_OF_RANGE).
 */
#define PART_POLICY							\
	[KREP_A_TOPIC] = { .type = NLA_NUL_STRING },			\
	[KREP_A_PARTITION] = { .type = NLA_U32 }

const struct nla_policy krep_produce_policy[KREP_A_MAX + 1] = {
	PART_POLICY,
	[KREP_A_RECORDS] = { .type = NLA_BINARY },
	[KREP_A_ACKS] = { .type = NLA_S16 },
	[KREP_A_TIMEOUT_MS] = NLA_POLICY_FULL_RANGE(NLA_U32, &wait_range),
	[KREP_A_LEADER_EPOCH] = { .type = NLA_U32 },
};

const struct nla_policy krep_fetch_policy[KREP_A_MAX + 1] = {
	PART_POLICY,
	[KREP_A_OFFSET] = { .type = NLA_U64 },
	[KREP_A_MAX_BYTES] = NLA_POLICY_FULL_RANGE(NLA_U32, &fetch_bytes_range),
	[KREP_A_MAX_WAIT_MS] = NLA_POLICY_FULL_RANGE(NLA_U32, &wait_range),
	[KREP_A_ISOLATION] = NLA_POLICY_MAX(NLA_U8, KREP_READ_COMMITTED),
	[KREP_A_FOLLOWER_READ] = { .type = NLA_FLAG },
	[KREP_A_LEADER_EPOCH] = { .type = NLA_U32 },
};

const struct nla_policy krep_list_offsets_policy[KREP_A_MAX + 1] = {
	PART_POLICY,
	[KREP_A_TIMESTAMP] = NLA_POLICY_MIN(NLA_S64, KREP_TS_EARLIEST),
	[KREP_A_ISOLATION] = NLA_POLICY_MAX(NLA_U8, KREP_READ_COMMITTED),
};

const struct nla_policy krep_delete_records_policy[KREP_A_MAX + 1] = {
	PART_POLICY,
	[KREP_A_OFFSET] = { .type = NLA_U64 },
	[KREP_A_TIMEOUT_MS] = NLA_POLICY_FULL_RANGE(NLA_U32, &wait_range),
};

static struct netlink_range_validation txn_timeout_range = {
	.min = 1,
	.max = KREP_TXN_TIMEOUT_MAX_MS,
};

const struct nla_policy krep_txn_policy[KREP_A_MAX + 1] = {
	PART_POLICY,
	[KREP_A_TIMEOUT_MS] = NLA_POLICY_FULL_RANGE(NLA_U32, &txn_timeout_range),
	[KREP_A_PRODUCER_ID] = NLA_POLICY_FULL_RANGE(NLA_U64, &offset_range),
	[KREP_A_PRODUCER_EPOCH] = NLA_POLICY_MAX(NLA_U16, S16_MAX),
	[KREP_A_TXN_OP] = NLA_POLICY_RANGE(NLA_U8, KREP_TXN_BEGIN,
					   KREP_TXN_ABORT),
};

/* the partition a request names, with a reference on its topic in @tp */
struct krep_partition *krep_nl_partition(struct genl_info *info,
					 struct krep_topic **tp,
					 struct krep_status *st)
{
	struct krep_net *kn = krep_net(genl_info_net(info));
	struct krep_partition *p;
	struct krep_topic *t;

	t = krep_topic_get(kn, nla_data(info->attrs[KREP_A_TOPIC]));
	if (!t)
		return ERR_PTR(krep_fail(st, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
					 -ENOENT, "no such topic"));
	p = krep_topic_partition(t, nla_get_u32(info->attrs[KREP_A_PARTITION]),
				 st);
	if (IS_ERR(p)) {
		krep_topic_put(t);
		return p;
	}
	*tp = t;
	return p;
}

bool krep_nl_require_partition(struct genl_info *info)
{
	return krep_nl_require(info, KREP_A_TOPIC, "topic name") &&
	       krep_nl_require(info, KREP_A_PARTITION, "partition");
}

/* OFFSET_OUT_OF_RANGE for an offset above S64_MAX, which no log reaches */
static int beyond_any_log(struct genl_info *info, const struct nlattr *attr,
			  const char *why)
{
	struct krep_status st = {};

	krep_fail(&st, KREP_KERR_OFFSET_OUT_OF_RANGE, -ERANGE, why);
	NL_SET_BAD_ATTR(info->extack, attr);
	return krep_nl_status(info, -ERANGE, &st);
}

/* a reply with the given u64 attributes */
static int reply_u64s(struct genl_info *info, u8 cmd, const int *types,
		      const u64 *vals, int n)
{
	struct sk_buff *msg;
	void *hdr;
	int i;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &krep_genl_family, 0, cmd);
	if (!hdr)
		goto nospace;
	for (i = 0; i < n; i++) {
		if (nla_put_u64_64bit(msg, types[i], vals[i], KREP_A_PAD))
			goto nospace;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

nospace:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

int krep_nl_produce(struct sk_buff *skb, struct genl_info *info)
{
	static const int types[] = { KREP_A_OFFSET, KREP_A_HW };
	struct krep_status st = {};
	struct krep_partition *p;
	struct krep_topic *t;
	struct nlattr *rec;
	u32 timeout = 30000;
	s64 epoch = -1;
	s16 acks = -1;
	u64 vals[2];
	int err;

	if (!krep_nl_require_partition(info) ||
	    !krep_nl_require(info, KREP_A_RECORDS, "record batch"))
		return -EINVAL;
	rec = info->attrs[KREP_A_RECORDS];
	if (info->attrs[KREP_A_ACKS])
		acks = nla_get_s16(info->attrs[KREP_A_ACKS]);
	if (acks < -1 || acks > 1) {
		krep_fail(&st, KREP_KERR_INVALID_REQUIRED_ACKS, -ERANGE,
			  "acks must be -1 (all), 0 or 1");
		NL_SET_BAD_ATTR(info->extack, info->attrs[KREP_A_ACKS]);
		return krep_nl_status(info, -ERANGE, &st);
	}
	if (info->attrs[KREP_A_TIMEOUT_MS])
		timeout = nla_get_u32(info->attrs[KREP_A_TIMEOUT_MS]);
	if (info->attrs[KREP_A_LEADER_EPOCH])
		epoch = nla_get_u32(info->attrs[KREP_A_LEADER_EPOCH]);
	p = krep_nl_partition(info, &t, &st);
	if (IS_ERR(p))
		return krep_nl_status(info, PTR_ERR(p), &st);
	err = krep_partition_produce(p, nla_data(rec), nla_len(rec), acks,
				     timeout, epoch, &vals[0], &st);
	vals[1] = READ_ONCE(p->hw);
	krep_topic_put(t);
	if (err)
		return krep_nl_status(info, err, &st);
	return reply_u64s(info, KREP_CMD_PRODUCE, types, vals, 2);
}

static struct sk_buff *fetch_alloc(void *ctx, size_t payload)
{
	struct genl_info *info = ctx;
	struct sk_buff *msg;

	msg = genlmsg_new(payload, GFP_KERNEL);
	if (!msg)
		return NULL;
	if (!genlmsg_put_reply(msg, info, &krep_genl_family, 0,
			       KREP_CMD_FETCH)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

int krep_nl_fetch(struct sk_buff *skb, struct genl_info *info)
{
	struct krep_fetch_req req = {
		.max_bytes = KREP_FETCH_MAX_BYTES,
		.alloc_reply = fetch_alloc,
		.ctx = info,
		.leader_epoch = -1,
	};
	struct nlattr **attrs = info->attrs;
	struct krep_status st = {};
	struct krep_partition *p;
	struct krep_topic *t;
	struct sk_buff *msg;

	if (!krep_nl_require_partition(info) ||
	    !krep_nl_require(info, KREP_A_OFFSET, "fetch offset"))
		return -EINVAL;
	req.offset = nla_get_u64(attrs[KREP_A_OFFSET]);
	if (attrs[KREP_A_MAX_BYTES])
		req.max_bytes = nla_get_u32(attrs[KREP_A_MAX_BYTES]);
	if (attrs[KREP_A_MAX_WAIT_MS])
		req.max_wait_ms = nla_get_u32(attrs[KREP_A_MAX_WAIT_MS]);
	if (attrs[KREP_A_ISOLATION])
		req.isolation = nla_get_u8(attrs[KREP_A_ISOLATION]);
	req.follower_read = nla_get_flag(attrs[KREP_A_FOLLOWER_READ]);
	if (attrs[KREP_A_LEADER_EPOCH])
		req.leader_epoch = nla_get_u32(attrs[KREP_A_LEADER_EPOCH]);
	p = krep_nl_partition(info, &t, &st);
	if (IS_ERR(p))
		return krep_nl_status(info, PTR_ERR(p), &st);
	if (req.offset > S64_MAX) {
		krep_topic_put(t);
		return beyond_any_log(info, attrs[KREP_A_OFFSET],
				      "offset beyond the log end offset");
	}
	msg = krep_partition_fetch(p, &req, &st);
	krep_topic_put(t);
	if (IS_ERR(msg))
		return krep_nl_status(info, PTR_ERR(msg), &st);
	nlmsg_end(msg, nlmsg_hdr(msg));
	return genlmsg_reply(msg, info);
}

int krep_nl_list_offsets(struct sk_buff *skb, struct genl_info *info)
{
	static const int types[] = { KREP_A_OFFSET };
	struct krep_status st = {};
	struct krep_partition *p;
	struct krep_topic *t;
	struct sk_buff *msg;
	s64 ts, found_ts;
	bool committed;
	u64 offset;
	void *hdr;
	int err;

	if (!krep_nl_require_partition(info) ||
	    !krep_nl_require(info, KREP_A_TIMESTAMP, "timestamp"))
		return -EINVAL;
	ts = nla_get_s64(info->attrs[KREP_A_TIMESTAMP]);
	p = krep_nl_partition(info, &t, &st);
	if (IS_ERR(p))
		return krep_nl_status(info, PTR_ERR(p), &st);
	committed = info->attrs[KREP_A_ISOLATION] &&
		    nla_get_u8(info->attrs[KREP_A_ISOLATION]) ==
		    KREP_READ_COMMITTED;
	err = krep_partition_list_offset(p, ts, committed, &offset, &found_ts,
					 &st);
	krep_topic_put(t);
	if (err)
		return krep_nl_status(info, err, &st);
	if (found_ts < 0)
		return reply_u64s(info, KREP_CMD_LIST_OFFSETS, types, &offset, 1);

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &krep_genl_family, 0,
				KREP_CMD_LIST_OFFSETS);
	if (!hdr ||
	    nla_put_u64_64bit(msg, KREP_A_OFFSET, offset, KREP_A_PAD) ||
	    nla_put_s64(msg, KREP_A_TIMESTAMP, found_ts, KREP_A_PAD)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

int krep_nl_delete_records(struct sk_buff *skb, struct genl_info *info)
{
	static const int types[] = { KREP_A_LOW_WATERMARK, KREP_A_LOG_START };
	struct krep_status st = {};
	u64 offset;
	struct krep_partition *p;
	struct krep_topic *t;
	u64 vals[2];
	int err;

	if (!krep_nl_require_partition(info) ||
	    !krep_nl_require(info, KREP_A_OFFSET, "offset"))
		return -EINVAL;
	p = krep_nl_partition(info, &t, &st);
	if (IS_ERR(p))
		return krep_nl_status(info, PTR_ERR(p), &st);
	offset = nla_get_u64(info->attrs[KREP_A_OFFSET]);
	if (offset > S64_MAX) {
		krep_topic_put(t);
		return beyond_any_log(info, info->attrs[KREP_A_OFFSET],
				      "offset beyond the high watermark");
	}
	err = krep_partition_delete_records(p, offset,
					    info->attrs[KREP_A_TIMEOUT_MS] ?
					    nla_get_u32(info->attrs[KREP_A_TIMEOUT_MS]) :
					    KREP_WAIT_MAX_MS, &st);
	mutex_lock(&p->lock);
	vals[0] = p->low_watermark;
	vals[1] = p->log.start_offset;
	mutex_unlock(&p->lock);
	krep_topic_put(t);
	if (err)
		return krep_nl_status(info, err, &st);
	return reply_u64s(info, KREP_CMD_DELETE_RECORDS, types, vals, 2);
}

int krep_nl_txn(struct sk_buff *skb, struct genl_info *info)
{
	static const int types[] = { KREP_A_OFFSET, KREP_A_LSO };
	struct nlattr **attrs = info->attrs;
	struct krep_status st = {};
	struct krep_partition *p;
	struct krep_topic *t;
	u64 vals[2];
	int err;

	if (!krep_nl_require_partition(info) ||
	    !krep_nl_require(info, KREP_A_PRODUCER_ID, "producer id") ||
	    !krep_nl_require(info, KREP_A_PRODUCER_EPOCH, "producer epoch") ||
	    !krep_nl_require(info, KREP_A_TXN_OP, "transaction operation"))
		return -EINVAL;
	p = krep_nl_partition(info, &t, &st);
	if (IS_ERR(p))
		return krep_nl_status(info, PTR_ERR(p), &st);
	err = krep_partition_txn(p, nla_get_u64(attrs[KREP_A_PRODUCER_ID]),
				 nla_get_u16(attrs[KREP_A_PRODUCER_EPOCH]),
				 nla_get_u8(attrs[KREP_A_TXN_OP]),
				 attrs[KREP_A_TIMEOUT_MS] ?
				 nla_get_u32(attrs[KREP_A_TIMEOUT_MS]) : 0,
				 &vals[0], &st);
	vals[1] = READ_ONCE(p->lso);
	krep_topic_put(t);
	if (err)
		return krep_nl_status(info, err, &st);
	return reply_u64s(info, KREP_CMD_TXN, types, vals, 2);
}
