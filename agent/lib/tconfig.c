// SPDX-License-Identifier: GPL-2.0
/*
 * Topic configuration keys (tconfig.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/attr.h>
#include <linux/krep.h>

#include "ep.h"
#include "tconfig.h"

static const struct {
	const char *name;
	int attr;		/* KREP_A_TCFG_* */
	int64_t min, max;	/* what the attribute's type can carry */
} keys[KREP_TCFG_NKEYS] = {
	[KREP_TCFG_MIN_INSYNC_REPLICAS] = { "min_insync_replicas",
		KREP_A_TCFG_MIN_INSYNC_REPLICAS, 0, UINT32_MAX },
	[KREP_TCFG_REPLICA_LAG_TIME_MAX_MS] = { "replica_lag_time_max_ms",
		KREP_A_TCFG_REPLICA_LAG_TIME_MAX_MS, 0, UINT32_MAX },
	[KREP_TCFG_SEGMENT_BYTES] = { "segment_bytes",
		KREP_A_TCFG_SEGMENT_BYTES, 0, UINT32_MAX },
	[KREP_TCFG_RETENTION_BYTES] = { "retention_bytes",
		KREP_A_TCFG_RETENTION_BYTES, INT64_MIN, INT64_MAX },
	[KREP_TCFG_MAX_MESSAGE_BYTES] = { "max_message_bytes",
		KREP_A_TCFG_MAX_MESSAGE_BYTES, 0, UINT32_MAX },
	[KREP_TCFG_UNCLEAN_LEADER_ELECTION] = { "unclean_leader_election",
		KREP_A_TCFG_UNCLEAN_LEADER_ELECTION, 0, UINT8_MAX },
	[KREP_TCFG_FLUSH_MESSAGES] = { "flush_messages",
		KREP_A_TCFG_FLUSH_MESSAGES, INT64_MIN, INT64_MAX },
	[KREP_TCFG_FLUSH_MS] = { "flush_ms",
		KREP_A_TCFG_FLUSH_MS, INT64_MIN, INT64_MAX },
	[KREP_TCFG_SEGMENT_MS] = { "segment_ms",
		KREP_A_TCFG_SEGMENT_MS, INT64_MIN, INT64_MAX },
};

/*
 * What the kernel takes for each key: kmod/nl_topic.c's tcfg_policy, whose
 * refusal would carry no Kafka code (and would leave krepd --controller
 * with a topic no broker creates). A key without an entry here is not
 * checked: the kernel's policy still refuses a bad value.
 */
static const struct {
	bool set;
	int64_t min, max;
} valid[KREP_TCFG_NKEYS] = {
	[KREP_TCFG_MIN_INSYNC_REPLICAS] = { true, 1, KREP_PEERS_MAX + 1 },
	[KREP_TCFG_REPLICA_LAG_TIME_MAX_MS] = { true, 10, 3600 * 1000 },
	[KREP_TCFG_SEGMENT_BYTES] = { true, 4096, 1 << 30 },
	[KREP_TCFG_RETENTION_BYTES] = { true, -1, INT64_MAX },
	[KREP_TCFG_MAX_MESSAGE_BYTES] = { true, 64, 1048588 },
	[KREP_TCFG_UNCLEAN_LEADER_ELECTION] = { true, 0, 1 },
	[KREP_TCFG_FLUSH_MESSAGES] = { true, 1, INT64_MAX },
	[KREP_TCFG_FLUSH_MS] = { true, 0, INT64_MAX },
	[KREP_TCFG_SEGMENT_MS] = { true, 1, INT64_MAX },
};

int krep_tconfig_check(const struct krep_tconfig *tc, char *why,
		       size_t whylen)
{
	int k;

	for (k = 0; k < KREP_TCFG_NKEYS; k++) {
		if (!tc->has[k] || !valid[k].set ||
		    (tc->v[k] >= valid[k].min && tc->v[k] <= valid[k].max))
			continue;
		snprintf(why, whylen,
			 "%s must be %" PRId64 "..%" PRId64 ", not %" PRId64,
			 keys[k].name, valid[k].min, valid[k].max, tc->v[k]);
		return -ERANGE;
	}
	return 0;
}

const char *krep_tconfig_name(enum krep_tcfg_key k)
{
	return k < KREP_TCFG_NKEYS ? keys[k].name : "?";
}

int krep_tconfig_attr(enum krep_tcfg_key k)
{
	return k < KREP_TCFG_NKEYS ? keys[k].attr : -1;
}

/* The key named @name (n bytes), Kafka's dots and dashes as underscores. */
static int key_of(const char *name, size_t n)
{
	char buf[64];
	size_t i;
	int k;

	if (n >= sizeof(buf))
		return -1;
	for (i = 0; i < n; i++)
		buf[i] = name[i] == '.' || name[i] == '-' ? '_' : name[i];
	buf[n] = '\0';
	if (!strcmp(buf, "unclean_leader_election_enable"))
		return KREP_TCFG_UNCLEAN_LEADER_ELECTION;
	for (k = 0; k < KREP_TCFG_NKEYS; k++)
		if (!strcmp(buf, keys[k].name))
			return k;
	return -1;
}

int krep_tconfig_parse(const char *s, struct krep_tconfig *tc, char *why,
		       size_t whylen)
{
	char *list, *item, *save = NULL, *eq;
	int k, err = 0;
	int64_t v;

	if (!*s) {
		snprintf(why, whylen, "config needs KEY=VAL");
		return -EINVAL;
	}
	list = strdup(s);
	if (!list) {
		snprintf(why, whylen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (item = strtok_r(list, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		eq = strchr(item, '=');
		if (!eq) {
			snprintf(why, whylen, "config '%s' is not KEY=VAL", item);
			err = -EINVAL;
			break;
		}
		k = key_of(item, eq - item);
		if (k < 0) {
			snprintf(why, whylen, "unknown config key '%.*s'",
				 (int)(eq - item), item);
			err = -EINVAL;
			break;
		}
		if (k == KREP_TCFG_UNCLEAN_LEADER_ELECTION &&
		    (!strcmp(eq + 1, "true") || !strcmp(eq + 1, "false"))) {
			v = !strcmp(eq + 1, "true");
		} else if (krep_s64_parse(eq + 1, &v) || v < keys[k].min ||
			   v > keys[k].max) {
			snprintf(why, whylen,
				 "%s '%s' is not a number in %" PRId64 "..%" PRId64,
				 keys[k].name, eq + 1, keys[k].min, keys[k].max);
			err = -EINVAL;
			break;
		}
		tc->has[k] = true;
		tc->v[k] = v;
	}
	free(list);
	return err;
}

int krep_tconfig_put(struct nl_msg *msg, const struct krep_tconfig *tc)
{
	struct nlattr *nest;
	bool any = false;
	int k, ret = 0;

	for (k = 0; k < KREP_TCFG_NKEYS; k++)
		any |= tc->has[k];
	if (!any)
		return 0;
	nest = nla_nest_start(msg, KREP_A_TOPIC_CONFIG | NLA_F_NESTED);
	if (!nest)
		return -EMSGSIZE;
	for (k = 0; k < KREP_TCFG_NKEYS && !ret; k++) {
		if (!tc->has[k])
			continue;
		switch (k) {
		case KREP_TCFG_RETENTION_BYTES:
		case KREP_TCFG_FLUSH_MESSAGES:
		case KREP_TCFG_FLUSH_MS:
		case KREP_TCFG_SEGMENT_MS:
			ret = nla_put_u64(msg, keys[k].attr, (uint64_t)tc->v[k]);
			break;
		case KREP_TCFG_UNCLEAN_LEADER_ELECTION:
			ret = nla_put_u8(msg, keys[k].attr, tc->v[k]);
			break;
		default:
			ret = nla_put_u32(msg, keys[k].attr, tc->v[k]);
			break;
		}
	}
	if (ret)
		return -EMSGSIZE;
	nla_nest_end(msg, nest);
	return 0;
}

void krep_tconfig_format(const struct krep_tconfig *tc, char *buf,
			 size_t size)
{
	size_t n = 0;
	int k;

	if (size)
		buf[0] = '\0';
	for (k = 0; k < KREP_TCFG_NKEYS && n < size; k++) {
		if (!tc->has[k])
			continue;
		n += snprintf(buf + n, size - n, "%s%s=%" PRId64,
			      n ? "," : "", keys[k].name, tc->v[k]);
	}
}
