// SPDX-License-Identifier: GPL-2.0
/*
 * The krep attribute tree as data: names for extack paths and a printer
 * that decodes any krep message (krepd logs events with it). Attributes
 * this table does not know yet are printed by number and length.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include <linux/krep.h>

#include "attrs.h"
#include "ep.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static const char *peer_state_name(long v)
{
	return v >= 0 ? krep_peer_state_name(v) : NULL;
}

static const struct krep_attr_desc ep_attrs[KREP_A_EP_MAX + 1] = {
	[KREP_A_EP_IPV4]	= { "ipv4", KREP_AT_BINARY },
	[KREP_A_EP_IPV6]	= { "ipv6", KREP_AT_BINARY },
	[KREP_A_EP_PORT]	= { "port", KREP_AT_U16 },
};

static const struct krep_attr_space ep_space = {
	.name	= "ep",
	.max	= KREP_A_EP_MAX,
	.attrs	= ep_attrs,
};

static const struct krep_attr_desc peer_attrs[KREP_A_PEER_MAX + 1] = {
	[KREP_A_PEER_ID]	= { "id", KREP_AT_U32 },
	[KREP_A_PEER_EP]	= { "ep", KREP_AT_EP },
	[KREP_A_PEER_STATE]	= { "state", KREP_AT_U8,
				    .enum_name = peer_state_name },
};

static const struct krep_attr_space peer_space = {
	.name	= "peer",
	.max	= KREP_A_PEER_MAX,
	.attrs	= peer_attrs,
};

static const struct krep_attr_desc tcfg_attrs[KREP_A_TCFG_MAX + 1] = {
	[KREP_A_TCFG_MIN_INSYNC_REPLICAS] = { "min_insync_replicas",
					      KREP_AT_U32 },
	[KREP_A_TCFG_REPLICA_LAG_TIME_MAX_MS] = { "replica_lag_time_max_ms",
						  KREP_AT_U32 },
	[KREP_A_TCFG_SEGMENT_BYTES] = { "segment_bytes", KREP_AT_U32 },
	[KREP_A_TCFG_RETENTION_BYTES] = { "retention_bytes", KREP_AT_S64 },
	[KREP_A_TCFG_MAX_MESSAGE_BYTES] = { "max_message_bytes", KREP_AT_U32 },
	[KREP_A_TCFG_UNCLEAN_LEADER_ELECTION] = { "unclean_leader_election",
						  KREP_AT_U8 },
	[KREP_A_TCFG_FLUSH_MESSAGES] = { "flush_messages", KREP_AT_S64 },
	[KREP_A_TCFG_FLUSH_MS] = { "flush_ms", KREP_AT_S64 },
	[KREP_A_TCFG_SEGMENT_MS] = { "segment_ms", KREP_AT_S64 },
};

static const struct krep_attr_space tcfg_space = {
	.name	= "config",
	.max	= KREP_A_TCFG_MAX,
	.attrs	= tcfg_attrs,
};

/* KREP_A_REPLICAS and KREP_A_ISR: a list of KREP_A_BROKER_ID */
static const struct krep_attr_desc id_list_attrs[KREP_A_BROKER_ID + 1] = {
	[KREP_A_BROKER_ID]	= { "broker_id", KREP_AT_U32, .multi = 1 },
};

static const struct krep_attr_space id_list_space = {
	.name	= "ids",
	.max	= KREP_A_BROKER_ID,
	.attrs	= id_list_attrs,
};

static const struct krep_attr_desc remote_attrs[KREP_A_REMOTE_MAX + 1] = {
	[KREP_A_REMOTE_ID]		= { "id", KREP_AT_U32 },
	[KREP_A_REMOTE_LEO]		= { "leo", KREP_AT_U64 },
	[KREP_A_REMOTE_LOG_START]	= { "log_start", KREP_AT_U64 },
	[KREP_A_REMOTE_FETCH_AGE_MS]	= { "fetch_age_ms", KREP_AT_U64 },
	[KREP_A_REMOTE_CAUGHT_UP_AGE_MS] = { "caught_up_age_ms", KREP_AT_U64 },
	[KREP_A_REMOTE_IN_ISR]		= { "in_isr", KREP_AT_U8 },
	[KREP_A_REMOTE_PAD]		= { "pad", KREP_AT_BINARY },
};

static const struct krep_attr_space remote_space = {
	.name	= "remote",
	.max	= KREP_A_REMOTE_MAX,
	.attrs	= remote_attrs,
};

/* KREP_A_REMOTES: a list of KREP_A_REMOTE */
static const struct krep_attr_desc remote_list_attrs[KREP_A_REMOTE + 1] = {
	[KREP_A_REMOTE]		= { "remote", KREP_AT_NEST, &remote_space,
				    .multi = 1 },
};

static const struct krep_attr_space remote_list_space = {
	.name	= "remotes",
	.max	= KREP_A_REMOTE,
	.attrs	= remote_list_attrs,
};

static const struct krep_attr_desc ctrl_attrs[KREP_A_CTRL_MAX + 1] = {
	[KREP_A_CTRL_EPOCH]	= { "epoch", KREP_AT_U32 },
	[KREP_A_CTRL_OWNER]	= { "owner", KREP_AT_U64 },
	[KREP_A_CTRL_LEASE_MS]	= { "lease_ms", KREP_AT_U32 },
	[KREP_A_CTRL_AGE_MS]	= { "age_ms", KREP_AT_U64 },
	[KREP_A_CTRL_PAD]	= { "pad", KREP_AT_BINARY },
};

static const struct krep_attr_space ctrl_space = {
	.name	= "controller",
	.max	= KREP_A_CTRL_MAX,
	.attrs	= ctrl_attrs,
};

static const struct krep_attr_desc epoch_attrs[KREP_A_EPOCH_MAX + 1] = {
	[KREP_A_EPOCH_EPOCH]	= { "epoch", KREP_AT_U32 },
	[KREP_A_EPOCH_START]	= { "start", KREP_AT_U64 },
	[KREP_A_EPOCH_PAD]	= { "pad", KREP_AT_BINARY },
};

static const struct krep_attr_space epoch_space = {
	.name	= "epoch",
	.max	= KREP_A_EPOCH_MAX,
	.attrs	= epoch_attrs,
};

/* KREP_A_EPOCHS: a list of KREP_A_EPOCH_ENTRY */
static const struct krep_attr_desc epoch_list_attrs[KREP_A_EPOCH_ENTRY + 1] = {
	[KREP_A_EPOCH_ENTRY]	= { "epoch_entry", KREP_AT_NEST, &epoch_space,
				    .multi = 1 },
};

static const struct krep_attr_space epoch_list_space = {
	.name	= "epochs",
	.max	= KREP_A_EPOCH_ENTRY,
	.attrs	= epoch_list_attrs,
};

static const char *role_name(long v)
{
	return v >= 0 ? krep_role_name(v) : NULL;
}

static const char *isolation_name(long v)
{
	switch (v) {
	case KREP_READ_UNCOMMITTED:
		return "read_uncommitted";
	case KREP_READ_COMMITTED:
		return "read_committed";
	}
	return NULL;
}

static const char *txn_op_name(long v)
{
	switch (v) {
	case KREP_TXN_BEGIN:
		return "begin";
	case KREP_TXN_COMMIT:
		return "commit";
	case KREP_TXN_ABORT:
		return "abort";
	}
	return NULL;
}

static const struct krep_attr_desc top_attrs[KREP_A_MAX + 1] = {
	[KREP_A_BROKER_ID]	= { "broker_id", KREP_AT_U32 },
	[KREP_A_CLUSTER_ID]	= { "cluster_id", KREP_AT_STRING },
	[KREP_A_LISTEN]		= { "listen", KREP_AT_EP },
	[KREP_A_PEERS]		= { "peers", KREP_AT_NEST, &krep_attr_space },
	[KREP_A_PEER]		= { "peer", KREP_AT_NEST, &peer_space,
				    .multi = 1 },
	[KREP_A_GENERATION]	= { "generation", KREP_AT_U32 },
	[KREP_A_KAFKA_ERROR]	= { "kafka_error", KREP_AT_S16,
				    .enum_name = krep_kafka_error_name },
	[KREP_A_TOPIC]		= { "topic", KREP_AT_STRING },
	[KREP_A_PARTITIONS]	= { "partitions", KREP_AT_U32 },
	[KREP_A_REPLICATION_FACTOR] = { "replication_factor", KREP_AT_U32 },
	[KREP_A_TOPIC_CONFIG]	= { "config", KREP_AT_NEST, &tcfg_space },
	[KREP_A_PARTITION]	= { "partition", KREP_AT_U32 },
	[KREP_A_ROLE]		= { "role", KREP_AT_U8, .enum_name = role_name },
	[KREP_A_LEADER]		= { "leader", KREP_AT_U32 },
	[KREP_A_LEADER_EPOCH]	= { "leader_epoch", KREP_AT_U32 },
	[KREP_A_PARTITION_EPOCH] = { "partition_epoch", KREP_AT_U32 },
	[KREP_A_REPLICAS]	= { "replicas", KREP_AT_NEST, &id_list_space },
	[KREP_A_ISR]		= { "isr", KREP_AT_NEST, &id_list_space },
	[KREP_A_LEO]		= { "leo", KREP_AT_U64 },
	[KREP_A_HW]		= { "hw", KREP_AT_U64 },
	[KREP_A_LSO]		= { "lso", KREP_AT_U64 },
	[KREP_A_LOG_START]	= { "log_start", KREP_AT_U64 },
	[KREP_A_LOW_WATERMARK]	= { "low_watermark", KREP_AT_U64 },
	[KREP_A_RECORDS]	= { "records", KREP_AT_BINARY },
	[KREP_A_ACKS]		= { "acks", KREP_AT_S16 },
	[KREP_A_TIMEOUT_MS]	= { "timeout_ms", KREP_AT_U32 },
	[KREP_A_OFFSET]		= { "offset", KREP_AT_U64 },
	[KREP_A_MAX_BYTES]	= { "max_bytes", KREP_AT_U32 },
	[KREP_A_MAX_WAIT_MS]	= { "max_wait_ms", KREP_AT_U32 },
	[KREP_A_ISOLATION]	= { "isolation", KREP_AT_U8,
				    .enum_name = isolation_name },
	[KREP_A_TIMESTAMP]	= { "timestamp", KREP_AT_S64 },
	[KREP_A_PRODUCER_ID]	= { "producer_id", KREP_AT_U64 },
	[KREP_A_PRODUCER_EPOCH]	= { "producer_epoch", KREP_AT_U16 },
	[KREP_A_TXN_OP]		= { "txn_op", KREP_AT_U8,
				    .enum_name = txn_op_name },
	[KREP_A_LOG_BYTES]	= { "log_bytes", KREP_AT_U64 },
	[KREP_A_PAD]		= { "pad", KREP_AT_BINARY },
	[KREP_A_REMOTES]	= { "remotes", KREP_AT_NEST, &remote_list_space },
	[KREP_A_REMOTE]		= { "remote", KREP_AT_NEST, &remote_space,
				    .multi = 1 },
	[KREP_A_CONTROLLER]	= { "controller", KREP_AT_NEST, &ctrl_space },
	[KREP_A_CONTROLLER_EPOCH] = { "controller_epoch", KREP_AT_U32 },
	[KREP_A_PENDING_ISR]	= { "pending_isr", KREP_AT_NEST, &id_list_space },
	[KREP_A_EPOCHS]		= { "epochs", KREP_AT_NEST, &epoch_list_space },
	[KREP_A_EPOCH_ENTRY]	= { "epoch_entry", KREP_AT_NEST, &epoch_space,
				    .multi = 1 },
	[KREP_A_INCARNATION]	= { "incarnation", KREP_AT_U64 },
};

const struct krep_attr_space krep_attr_space = {
	.name	= "krep",
	.max	= KREP_A_MAX,
	.attrs	= top_attrs,
};

const char *krep_cmd_name(unsigned int cmd)
{
	static const char * const names[] = {
		[KREP_CMD_BROKER_GET]	= "broker_get",
		[KREP_CMD_BROKER_SET]	= "broker_set",
		[KREP_CMD_TOPIC_NEW]	= "topic_new",
		[KREP_CMD_TOPIC_DEL]	= "topic_del",
		[KREP_CMD_TOPIC_GET]	= "topic_get",
		[KREP_CMD_PARTITION_GET] = "partition_get",
		[KREP_CMD_PRODUCE]	= "produce",
		[KREP_CMD_FETCH]	= "fetch",
		[KREP_CMD_LIST_OFFSETS]	= "list_offsets",
		[KREP_CMD_DELETE_RECORDS] = "delete_records",
		[KREP_CMD_TXN]		= "txn",
		[KREP_CMD_ALTER_ISR]	= "alter_isr",
		[KREP_CMD_LEADER_AND_ISR] = "leader_and_isr",
		[KREP_CMD_OFFSETS_FOR_LEADER_EPOCH] = "offsets_for_leader_epoch",
	};

	if (cmd < ARRAY_SIZE(names))
		return names[cmd];
	return NULL;
}

const char *krep_role_name(long role)
{
	switch (role) {
	case KREP_ROLE_LEADER:
		return "leader";
	case KREP_ROLE_FOLLOWER:
		return "follower";
	case KREP_ROLE_OFFLINE:
		return "offline";
	}
	return NULL;
}

const char *krep_kafka_error_name(long err)
{
#define KERR(n)	{ KREP_KERR_##n, #n }
	static const struct {
		long err;
		const char *name;
	} names[] = {
		KERR(UNKNOWN_SERVER_ERROR),
		KERR(NONE),
		KERR(OFFSET_OUT_OF_RANGE),
		KERR(CORRUPT_MESSAGE),
		KERR(UNKNOWN_TOPIC_OR_PARTITION),
		KERR(INVALID_FETCH_SIZE),
		KERR(LEADER_NOT_AVAILABLE),
		KERR(NOT_LEADER_OR_FOLLOWER),
		KERR(REQUEST_TIMED_OUT),
		KERR(BROKER_NOT_AVAILABLE),
		KERR(REPLICA_NOT_AVAILABLE),
		KERR(MESSAGE_TOO_LARGE),
		KERR(STALE_CONTROLLER_EPOCH),
		KERR(NETWORK_EXCEPTION),
		KERR(INVALID_TOPIC_EXCEPTION),
		KERR(RECORD_LIST_TOO_LARGE),
		KERR(NOT_ENOUGH_REPLICAS),
		KERR(NOT_ENOUGH_REPLICAS_AFTER_APPEND),
		KERR(INVALID_REQUIRED_ACKS),
		KERR(INVALID_TIMESTAMP),
		KERR(UNSUPPORTED_VERSION),
		KERR(TOPIC_ALREADY_EXISTS),
		KERR(INVALID_PARTITIONS),
		KERR(INVALID_REPLICATION_FACTOR),
		KERR(INVALID_REPLICA_ASSIGNMENT),
		KERR(INVALID_CONFIG),
		KERR(NOT_CONTROLLER),
		KERR(INVALID_REQUEST),
		KERR(POLICY_VIOLATION),
		KERR(OUT_OF_ORDER_SEQUENCE_NUMBER),
		KERR(DUPLICATE_SEQUENCE_NUMBER),
		KERR(INVALID_PRODUCER_EPOCH),
		KERR(INVALID_TXN_STATE),
		KERR(KAFKA_STORAGE_ERROR),
		KERR(FENCED_LEADER_EPOCH),
		KERR(UNKNOWN_LEADER_EPOCH),
		KERR(OFFSET_NOT_AVAILABLE),
		KERR(ELIGIBLE_LEADERS_NOT_AVAILABLE),
		KERR(ELECTION_NOT_NEEDED),
		KERR(INVALID_RECORD),
	};
#undef KERR
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (names[i].err == err)
			return names[i].name;
	return NULL;
}

static const struct krep_attr_desc *desc_of(const struct krep_attr_space *sp,
					    unsigned int type)
{
	if (!sp || type > sp->max || !sp->attrs[type].name)
		return NULL;
	return &sp->attrs[type];
}

const char *krep_attr_name(const struct krep_attr_space *space,
			   unsigned int type, char *buf, size_t size)
{
	const struct krep_attr_desc *d = desc_of(space, type);

	if (d)
		return d->name;
	snprintf(buf, size, "attr#%u", type);
	return buf;
}

static const struct krep_attr_space *inner_space(const struct krep_attr_desc *d)
{
	if (!d)
		return NULL;
	if (d->type == KREP_AT_EP)
		return &ep_space;
	if (d->type == KREP_AT_NEST)
		return d->space;
	return NULL;
}

/* How many attributes of @type precede @a in the stream starting at @head. */
static unsigned int index_of(const struct nlattr *head, const struct nlattr *a)
{
	const struct nlattr *pos = head;
	unsigned int n = 0;

	for (; pos != a; pos = (const void *)((const char *)pos +
					      NLA_ALIGN(pos->nla_len)))
		n += nla_type(pos) == nla_type(a);
	return n;
}

/* Append ".name" (or "name" first), with "[idx]" for repeated attributes. */
static void path_add(char *buf, size_t size, const char *name, bool multi,
		     unsigned int idx)
{
	size_t used = strlen(buf);

	if (used >= size)
		return;
	snprintf(buf + used, size - used, "%s%s", used ? "." : "", name);
	used = strlen(buf);
	if (multi && used < size)
		snprintf(buf + used, size - used, "[%u]", idx);
}

/* The attribute of the stream @head/@rem that spans byte @off of @base. */
static const struct nlattr *spanning(const void *base, const struct nlattr *head,
				     int rem, size_t off)
{
	const struct nlattr *a;
	size_t aoff;
	int r;

	nla_for_each_attr(a, head, rem, r) {
		aoff = (const char *)a - (const char *)base;
		if (off >= aoff && off < aoff + a->nla_len)
			return a;
	}
	return NULL;
}

int krep_attr_path(const void *base, size_t len, size_t attr_off, size_t off,
		   char *buf, size_t size,
		   const struct krep_attr_space **inner)
{
	const struct krep_attr_space *sp = &krep_attr_space;
	const struct krep_attr_desc *d = NULL;
	const struct nlattr *head, *a;
	char num[24];
	bool multi;
	int rem;

	if (!size)
		return -EINVAL;
	buf[0] = '\0';
	if (attr_off > len || off < attr_off || off >= len)
		return -ENOENT;
	head = (const void *)((const char *)base + attr_off);
	rem = len - attr_off;
	/* Descend through the nests that contain @off. */
	while (sp && (a = spanning(base, head, rem, off))) {
		d = desc_of(sp, nla_type(a));
		multi = d && d->multi;
		path_add(buf, size, krep_attr_name(sp, nla_type(a), num,
						   sizeof(num)),
			 multi, multi ? index_of(head, a) : 0);
		if ((const char *)a - (const char *)base == (long)off ||
		    !(a->nla_type & NLA_F_NESTED))
			break;
		sp = inner_space(d);
		head = nla_data(a);
		rem = nla_len(a);
	}
	if (!buf[0])
		return -ENOENT;
	if (inner)
		*inner = inner_space(d);
	return 0;
}

static void print_string(FILE *f, const struct nlattr *a)
{
	const unsigned char *s = nla_data(a);
	int i;

	fputc('"', f);
	for (i = 0; i < nla_len(a) && s[i]; i++) {
		if (s[i] == '"' || s[i] == '\\')
			fprintf(f, "\\%c", s[i]);
		else if (isprint(s[i]))
			fputc(s[i], f);
		else
			fprintf(f, "\\x%02x", s[i]);
	}
	fputc('"', f);
}

static void print_binary(FILE *f, const struct nlattr *a)
{
	const unsigned char *p = nla_data(a);
	int i, n = nla_len(a) > 32 ? 32 : nla_len(a);

	fputs("0x", f);
	for (i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
	if (n < nla_len(a))
		fputs("...", f);
}

/* Print an integer attribute; false if its length does not match. */
static bool print_int(FILE *f, const struct krep_attr_desc *d,
		      const struct nlattr *a)
{
	const char *name;
	int64_t v;
	int want;

	switch (d->type) {
	case KREP_AT_U8:
		want = 1;
		break;
	case KREP_AT_U16:
	case KREP_AT_S16:
		want = 2;
		break;
	case KREP_AT_U32:
		want = 4;
		break;
	default:
		want = 8;
		break;
	}
	if (nla_len(a) != want)
		return false;
	if (d->type == KREP_AT_U64) {
		fprintf(f, "%" PRIu64, nla_get_u64((struct nlattr *)a));
		return true;
	}
	if (d->type == KREP_AT_S64) {
		fprintf(f, "%" PRId64, (int64_t)nla_get_u64((struct nlattr *)a));
		return true;
	}
	switch (d->type) {
	case KREP_AT_U8:
		v = nla_get_u8(a);
		break;
	case KREP_AT_U16:
		v = nla_get_u16(a);
		break;
	case KREP_AT_S16:
		v = (int16_t)nla_get_u16(a);
		break;
	default:
		v = nla_get_u32(a);
		break;
	}
	name = d->enum_name ? d->enum_name(v) : NULL;
	if (name)
		fprintf(f, "%s(%" PRId64 ")", name, v);
	else
		fprintf(f, "%" PRId64, v);
	return true;
}

static void print_attr(FILE *f, const struct krep_attr_desc *d,
		       const struct nlattr *a)
{
	char ep_buf[KREP_EP_STRLEN];
	struct krep_ep ep;

	switch (d ? d->type : KREP_AT_UNKNOWN) {
	case KREP_AT_U8:
	case KREP_AT_U16:
	case KREP_AT_U32:
	case KREP_AT_U64:
	case KREP_AT_S16:
	case KREP_AT_S64:
		if (!print_int(f, d, a))
			fprintf(f, "<bad length %d>", nla_len(a));
		break;
	case KREP_AT_STRING:
		print_string(f, a);
		break;
	case KREP_AT_BINARY:
		print_binary(f, a);
		break;
	case KREP_AT_EP:
		if (krep_ep_get(a, &ep))
			fputs("<malformed>", f);
		else
			fputs(krep_ep_format(&ep, ep_buf, sizeof(ep_buf)), f);
		break;
	case KREP_AT_NEST:
		fputc('{', f);
		krep_attrs_print(f, d->space, nla_data(a), nla_len(a));
		fputc('}', f);
		break;
	default:
		fprintf(f, "<%d bytes>", nla_len(a));
		break;
	}
}

void krep_attrs_print(FILE *f, const struct krep_attr_space *space,
		      const struct nlattr *head, int len)
{
	const struct nlattr *a;
	bool first = true;
	char num[24];
	int rem;

	nla_for_each_attr(a, head, len, rem) {
		fprintf(f, "%s%s=", first ? "" : " ",
			krep_attr_name(space, nla_type(a), num, sizeof(num)));
		print_attr(f, desc_of(space, nla_type(a)), a);
		first = false;
	}
	if (rem > 0)
		fprintf(f, "%s<%d trailing bytes>", first ? "" : " ", rem);
}
