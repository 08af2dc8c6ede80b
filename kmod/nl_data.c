// SPDX-License-Identifier: GPL-2.0
/*
 * krep: PRODUCE, FETCH, LIST_OFFSETS, DELETE_RECORDS and TXN.
 *
 * An acks=all PRODUCE, a FETCH with a wait and a DELETE_RECORDS do what
 * they can at once and leave their wait to nl_park.c, which answers from
 * a work item: no handler sleeps under genetlink's lock.
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
#include "nl_park.h"

#define KREP_FETCH_MAX_BYTES	BIT(20)
/* as Kafka's request timeout */
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

/* a reply with the given u64 attributes, or an ERR_PTR */
static struct sk_buff *build_u64s(struct genl_info *info, u8 cmd,
				  const int *types, const u64 *vals, int n)
{
	struct sk_buff *msg;
	void *hdr;
	int i;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return ERR_PTR(-ENOMEM);
	hdr = genlmsg_put_reply(msg, info, &krep_genl_family, 0, cmd);
	if (!hdr)
		goto nospace;
	for (i = 0; i < n; i++) {
		if (nla_put_u64_64bit(msg, types[i], vals[i], KREP_A_PAD))
			goto nospace;
	}
	genlmsg_end(msg, hdr);
	return msg;

nospace:
	nlmsg_free(msg);
	return ERR_PTR(-EMSGSIZE);
}

static int reply_u64s(struct genl_info *info, u8 cmd, const int *types,
		      const u64 *vals, int n)
{
	struct sk_buff *msg = build_u64s(info, cmd, types, vals, n);

	return IS_ERR(msg) ? PTR_ERR(msg) : genlmsg_reply(msg, info);
}

static struct sk_buff *produce_reply(struct genl_info *info, u64 base,
				     u64 hw)
{
	static const int types[] = { KREP_A_OFFSET, KREP_A_HW };
	u64 vals[] = { base, hw };

	return build_u64s(info, KREP_CMD_PRODUCE, types, vals, 2);
}

/* an appended batch waiting for the ISR (acks=all) or a sync */
/*
 * Park @np, the first member of a handler's request struct, with
 * krep_nlpark_start(). When the module goes instead, free it, drop @t and
 * answer UNKNOWN_TOPIC_OR_PARTITION, "broker shutting down".
 */
static int park(struct krep_nlpark *np, struct sk_buff *skb,
		struct genl_info *info, struct krep_topic *t,
		struct krep_partition *p, wait_queue_head_t *head,
		u32 wait_ms, u32 poll_ms, krep_nlpark_step_t step)
{
	struct krep_status st = {};
	int err;

	err = krep_nlpark_start(np, skb, info, t, p, head, wait_ms, poll_ms,
				step);
	if (err == -EINTR)
		return err;		/* answered from nl_park.c */
	krep_topic_put(t);
	kfree(np);
	krep_fail(&st, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION, err,
		  "broker shutting down");
	return krep_nl_status(info, err, &st);
}

struct produce_park {
	struct krep_nlpark np;		/* first: nl_park.c frees it */
	struct krep_append_result res;
	u32 len;
	s16 acks;
};

static struct sk_buff *produce_step(struct krep_nlpark *np, bool late,
				    struct krep_status *st)
{
	struct produce_park *pp = container_of(np, struct produce_park, np);
	struct krep_partition *p = np->p;
	int err = 0;

	if (pp->acks == -1)
		err = krep_partition_commit_check(p, pp->res.last, st);
	if (err == -EINPROGRESS && late)
		err = krep_fail(st, KREP_KERR_REQUEST_TIMED_OUT, -ETIMEDOUT,
				"timed out waiting for the ISR to replicate");
	if (!err && pp->res.flush) {
		err = krep_partition_flush_check(p, pp->res.last, st);
		if (err == -EINPROGRESS && late)
			err = krep_fail(st, KREP_KERR_REQUEST_TIMED_OUT,
					-ETIMEDOUT,
					"timed out waiting for the log to be flushed (flush.messages)");
	}
	if (err == -EINPROGRESS)
		return NULL;
	if (pp->acks == -1)
		krep_partition_trace_produce(p, &pp->res, pp->len,
					     err ? st->kerr : 0);
	return err ? ERR_PTR(err) : produce_reply(&np->info, pp->res.base,
						   READ_ONCE(p->hw));
}

int krep_nl_produce(struct sk_buff *skb, struct genl_info *info)
{
	struct produce_park *pp = NULL;
	struct krep_append_result res;
	struct krep_status st = {};
	struct krep_partition *p;
	struct krep_topic *t;
	struct sk_buff *msg;
	struct nlattr *rec;
	u32 timeout = KREP_WAIT_MAX_MS;
	s64 epoch = -1;
	s16 acks = -1;
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
	/* one that may wait (the ISR, flush.messages' sync) gets room first */
	if (acks == -1 ||
	    p->topic->config.flush_messages != KREP_FLUSH_NEVER) {
		pp = kzalloc(sizeof(*pp), GFP_KERNEL_ACCOUNT);
		err = pp ? krep_nlpark_reserve(info) : -ENOMEM;
		if (err) {
			kfree(pp);
			krep_topic_put(t);
			return err;
		}
	}
	err = krep_partition_append(p, nla_data(rec), nla_len(rec), acks,
				    epoch, &res, &st);
	if (!err && pp && (acks == -1 || res.flush)) {
		pp->res = res;
		pp->len = nla_len(rec);
		pp->acks = acks;
		pp->np.hw_keyed = true;
		pp->np.hw_above = res.last;
		return park(&pp->np, skb, info, t, p, &p->commit_wq, timeout,
			    0, produce_step);
	}
	if (pp) {
		krep_nlpark_unreserve(info);
		kfree(pp);
	}
	msg = err ? NULL : produce_reply(info, res.base, READ_ONCE(p->hw));
	krep_topic_put(t);
	if (err)
		return krep_nl_status(info, err, &st);
	return IS_ERR(msg) ? PTR_ERR(msg) : genlmsg_reply(msg, info);
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

/* a fetch at the end waiting for records or HW */
struct fetch_park {
	struct krep_nlpark np;		/* first: nl_park.c frees it */
	struct krep_fetch_req req;
};

static struct sk_buff *fetch_step(struct krep_nlpark *np, bool late,
				  struct krep_status *st)
{
	struct fetch_park *fp = container_of(np, struct fetch_park, np);
	struct sk_buff *msg;

	if (!late && !krep_partition_fetch_ready(np->p, &fp->req))
		return NULL;
	if (late)
		fp->req.max_wait_ms = 0;	/* what there is, if nothing */
	msg = krep_partition_fetch(np->p, &fp->req, st);
	if (msg == ERR_PTR(-EINPROGRESS))
		return NULL;	/* HW went back (a truncation): wait on */
	if (!IS_ERR(msg))
		nlmsg_end(msg, nlmsg_hdr(msg));
	return msg;
}

int krep_nl_fetch(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct krep_status st = {};
	struct krep_partition *p;
	struct fetch_park *fp;
	struct krep_topic *t;
	struct sk_buff *msg;
	int err;

	if (!krep_nl_require_partition(info) ||
	    !krep_nl_require(info, KREP_A_OFFSET, "fetch offset"))
		return -EINVAL;
	fp = kzalloc(sizeof(*fp), GFP_KERNEL_ACCOUNT);
	if (!fp)
		return -ENOMEM;
	fp->req = (struct krep_fetch_req) {
		.offset = nla_get_u64(attrs[KREP_A_OFFSET]),
		.max_bytes = KREP_FETCH_MAX_BYTES,
		.alloc_reply = fetch_alloc,
		.ctx = info,
		.leader_epoch = -1,
	};
	if (attrs[KREP_A_MAX_BYTES])
		fp->req.max_bytes = nla_get_u32(attrs[KREP_A_MAX_BYTES]);
	if (attrs[KREP_A_MAX_WAIT_MS])
		fp->req.max_wait_ms = nla_get_u32(attrs[KREP_A_MAX_WAIT_MS]);
	if (attrs[KREP_A_ISOLATION])
		fp->req.isolation = nla_get_u8(attrs[KREP_A_ISOLATION]);
	fp->req.follower_read = nla_get_flag(attrs[KREP_A_FOLLOWER_READ]);
	if (attrs[KREP_A_LEADER_EPOCH])
		fp->req.leader_epoch = nla_get_u32(attrs[KREP_A_LEADER_EPOCH]);
	p = krep_nl_partition(info, &t, &st);
	if (IS_ERR(p)) {
		kfree(fp);
		return krep_nl_status(info, PTR_ERR(p), &st);
	}
	if (fp->req.offset > S64_MAX) {
		krep_topic_put(t);
		kfree(fp);
		return beyond_any_log(info, attrs[KREP_A_OFFSET],
				      "offset beyond the log end offset");
	}
	msg = krep_partition_fetch(p, &fp->req, &st);
	if (msg != ERR_PTR(-EINPROGRESS)) {
		krep_topic_put(t);
		kfree(fp);
		if (IS_ERR(msg))
			return krep_nl_status(info, PTR_ERR(msg), &st);
		nlmsg_end(msg, nlmsg_hdr(msg));
		return genlmsg_reply(msg, info);
	}
	/* nothing to read yet: wait, from a work item */
	err = krep_nlpark_reserve(info);
	if (err) {
		krep_topic_put(t);
		kfree(fp);
		return err;	/* with its extack message */
	}
	fp->req.ctx = &fp->np.info;	/* the reply's portid and seq */
	return park(&fp->np, skb, info, t, p, &p->waitq, fp->req.max_wait_ms,
		    0, fetch_step);
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

static struct sk_buff *delete_reply(struct genl_info *info,
				    struct krep_partition *p)
{
	static const int types[] = { KREP_A_LOW_WATERMARK, KREP_A_LOG_START };
	u64 vals[2];

	mutex_lock(&p->lock);
	vals[0] = p->low_watermark;
	vals[1] = p->log.start_offset;
	mutex_unlock(&p->lock);
	return build_u64s(info, KREP_CMD_DELETE_RECORDS, types, vals, 2);
}

/* a new log start waiting for the followers' (LW) */
struct delete_park {
	struct krep_nlpark np;		/* first: nl_park.c frees it */
	u64 offset;
};

static struct sk_buff *delete_step(struct krep_nlpark *np, bool late,
				   struct krep_status *st)
{
	struct delete_park *dp = container_of(np, struct delete_park, np);
	int err;

	err = krep_partition_delete_check(np->p, dp->offset, st);
	if (err == -EINPROGRESS) {
		if (!late)
			return NULL;
		err = krep_fail(st, KREP_KERR_REQUEST_TIMED_OUT, -ETIMEDOUT,
				"timed out waiting for the followers' log start");
	}
	return err ? ERR_PTR(err) : delete_reply(&np->info, np->p);
}

int krep_nl_delete_records(struct sk_buff *skb, struct genl_info *info)
{
	u32 timeout = KREP_WAIT_MAX_MS;
	struct krep_status st = {};
	struct delete_park *dp;
	struct krep_partition *p;
	struct krep_topic *t;
	struct sk_buff *msg;
	int err;

	if (!krep_nl_require_partition(info) ||
	    !krep_nl_require(info, KREP_A_OFFSET, "offset"))
		return -EINVAL;
	if (info->attrs[KREP_A_TIMEOUT_MS])
		timeout = nla_get_u32(info->attrs[KREP_A_TIMEOUT_MS]);
	dp = kzalloc(sizeof(*dp), GFP_KERNEL_ACCOUNT);
	if (!dp)
		return -ENOMEM;
	dp->offset = nla_get_u64(info->attrs[KREP_A_OFFSET]);
	/* room for the wait before the log start moves */
	err = krep_nlpark_reserve(info);
	if (err) {
		kfree(dp);
		return err;
	}
	p = krep_nl_partition(info, &t, &st);
	if (IS_ERR(p)) {
		err = PTR_ERR(p);
		goto unreserve;
	}
	if (dp->offset > S64_MAX) {
		krep_topic_put(t);
		krep_nlpark_unreserve(info);
		kfree(dp);
		return beyond_any_log(info, info->attrs[KREP_A_OFFSET],
				      "offset beyond the high watermark");
	}
	err = krep_partition_delete_records(p, dp->offset, &st);
	if (err == -EINPROGRESS && timeout) {
		/* a follower that stops fetching leaves LW after the lag */
		return park(&dp->np, skb, info, t, p, &p->commit_wq, timeout,
			    p->topic->config.replica_lag_time_max_ms,
			    delete_step);
	}
	if (err == -EINPROGRESS)
		err = krep_fail(&st, KREP_KERR_REQUEST_TIMED_OUT, -ETIMEDOUT,
				"timed out waiting for the followers' log start");
	msg = err ? NULL : delete_reply(info, p);
	krep_topic_put(t);
	krep_nlpark_unreserve(info);
	kfree(dp);
	if (err)
		return krep_nl_status(info, err, &st);
	return IS_ERR(msg) ? PTR_ERR(msg) : genlmsg_reply(msg, info);

unreserve:
	krep_nlpark_unreserve(info);
	kfree(dp);
	return krep_nl_status(info, err, &st);
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
