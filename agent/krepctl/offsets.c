// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl offsets | delete-records | txn: a partition's offsets by time
 * (KREP_CMD_LIST_OFFSETS), moving its log start (KREP_CMD_DELETE_RECORDS),
 * and a producer's transaction on it (KREP_CMD_TXN).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <linux/krep.h>

#include "json.h"
#include "krepctl.h"

void krepctl_offsets_usage(FILE *f)
{
	fputs("Usage: krepctl offsets TOPIC [partition N] [earliest|latest|TIME_MS]\n"
	      "                       [--isolation read_committed|read_uncommitted]\n"
	      "                       [lag POSITION]\n"
	      "\n"
	      "Look up an offset of partition N of TOPIC, or of every partition\n"
	      "of TOPIC when no partition is given:\n"
	      "  earliest  the log start offset\n"
	      "  latest    the high watermark (default), or with --isolation\n"
	      "            read_committed the last stable offset\n"
	      "  TIME_MS   the first offset whose record has a timestamp of at\n"
	      "            least TIME_MS (ms since the epoch); the high watermark\n"
	      "            when there is none\n"
	      "  lag POSITION  with partition N and latest: also a consumer's\n"
	      "            lag at POSITION as Kafka counts it, HW - POSITION\n"
	      "            (read_committed: LSO - POSITION), 0 past the end;\n"
	      "            printed as OFFSET lag=LAG, in JSON as \"lag\"\n"
	      "For partition N it prints the offset, and after a space the\n"
	      "timestamp the kernel found (TIME_MS lookups only); with --json\n"
	      "{\"offset\":N,\"timestamp\":MS|null}. For every partition, one\n"
	      "line each, TOPIC PARTITION OFFSET [TIMESTAMP], or with --json an\n"
	      "array of {\"topic\",\"partition\",\"offset\",\"timestamp\"}; a\n"
	      "partition this broker does not lead is named on stderr with its\n"
	      "leader, left out, and the exit status is then 1.\n", f);
}

void krepctl_delete_records_usage(FILE *f)
{
	fputs("Usage: krepctl delete-records TOPIC [partition N] before OFFSET\n"
	      "\n"
	      "Delete the records of partition N (default 0) of TOPIC below\n"
	      "OFFSET, which may not pass the high watermark: the log start\n"
	      "offset moves up to OFFSET. Needs CAP_NET_ADMIN. Prints\n"
	      "  log_start=N lw=N\n"
	      "(the new log start offset and low watermark), or with --json\n"
	      "{\"log_start\":N,\"low_watermark\":N}.\n", f);
}

void krepctl_txn_usage(FILE *f)
{
	fputs("Usage: krepctl txn TOPIC [partition N] PID:EPOCH begin|commit|abort\n"
	      "\n"
	      "Open or end a transaction of producer PID (epoch EPOCH) on\n"
	      "partition N (default 0) of TOPIC. Between begin and commit/abort,\n"
	      "'krepctl produce TOPIC txn PID:EPOCH' writes to it; commit and\n"
	      "abort append a control record. Needs CAP_NET_ADMIN. Prints\n"
	      "  offset=N lso=N\n"
	      "(the control record's offset, for begin the log end offset, and\n"
	      "the last stable offset after it), or with --json\n"
	      "{\"offset\":N,\"lso\":N}.\n", f);
}

static bool is_json_flag(const char *s)
{
	return !strcmp(s, "-j") || !strcmp(s, "--json");
}

/*
 * Parse "TOPIC [partition N]" and the arguments @other accepts, for
 * @cmd; @has_partition (may be NULL) says whether N was given. @other
 * returns 1 when it took argv[*i] (and maybe more), 0 when it does not
 * know it, or -errno after a usage error.
 */
static int part_args_parse(int argc, char **argv, const char *cmd,
			   void (*usage_fn)(FILE *f), const char **topic,
			   bool *has_partition, uint32_t *partition, bool *json,
			   int (*other)(int argc, char **argv, int *i, void *arg),
			   void *arg)
{
	bool has_part = false;
	int i, ret;

	*topic = NULL;
	*partition = 0;
	for (i = 1; i < argc; i++) {
		if (krepctl_is_help(argv[i]))
			return 1;
	}
	for (i = 1; i < argc; i++) {
		if (is_json_flag(argv[i])) {
			*json = true;
			continue;
		}
		if (!*topic) {
			*topic = argv[i];
			continue;
		}
		if (!strcmp(argv[i], "partition") || !strcmp(argv[i], "-p") ||
		    !strcmp(argv[i], "--partition")) {
			if (has_part) {
				krepctl_usage_error(usage_fn,
						    "%s: 'partition' given twice",
						    cmd);
				return -EINVAL;
			}
			if (i + 1 >= argc) {
				krepctl_usage_error(usage_fn,
						    "%s: 'partition' needs a value",
						    cmd);
				return -EINVAL;
			}
			has_part = true;
			ret = krepctl_parse_u32(usage_fn, cmd, "partition",
						argv[++i], partition);
			if (ret)
				return ret;
			continue;
		}
		ret = other(argc, argv, &i, arg);
		if (ret < 0)
			return ret;
		if (!ret) {
			krepctl_usage_error(usage_fn, "%s: unexpected argument '%s'",
					    cmd, argv[i]);
			return -EINVAL;
		}
	}
	if (!*topic) {
		krepctl_usage_error(usage_fn, "%s: missing topic", cmd);
		return -EINVAL;
	}
	if (has_partition)
		*has_partition = has_part;
	return 0;
}

/* ---- LIST_OFFSETS, shared with "consume" ---------------------------------- */

static struct nla_policy offsets_policy[KREP_A_MAX + 1] = {
	[KREP_A_OFFSET]		= { .type = NLA_U64 },
	[KREP_A_TIMESTAMP]	= { .type = NLA_U64 },
};

struct offset_reply {
	bool has_offset, has_ts;
	uint64_t offset;
	int64_t ts;
};

static int offset_reply_get(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[KREP_A_MAX + 1];
	struct offset_reply *r = arg;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, KREP_A_MAX, offsets_policy) ||
	    !tb[KREP_A_OFFSET]) {
		fprintf(stderr, "%s: malformed LIST_OFFSETS reply from the kernel\n",
			krep_prog);
		return -EPROTO;
	}
	r->has_offset = true;
	r->offset = nla_get_u64(tb[KREP_A_OFFSET]);
	if (tb[KREP_A_TIMESTAMP]) {
		r->has_ts = true;
		r->ts = (int64_t)nla_get_u64(tb[KREP_A_TIMESTAMP]);
	}
	return 0;
}

/*
 * LIST_OFFSETS for @ts (ms, KREP_TS_EARLIEST or KREP_TS_LATEST) as a
 * consumer of @isolation (KREP_READ_*) may read.
 */
int krepctl_list_offset(struct krepctl *ctl, const char *topic,
			uint32_t partition, int64_t ts, uint8_t isolation,
			uint64_t *offset, bool *has_ts, int64_t *found_ts)
{
	struct offset_reply r = { 0 };
	struct nl_msg *msg;
	int err;

	msg = krepctl_part_msg(ctl->gl.family, KREP_CMD_LIST_OFFSETS, topic,
			       partition, 24);
	if (!msg || nla_put_u64(msg, KREP_A_TIMESTAMP, (uint64_t)ts) ||
	    (isolation && nla_put_u8(msg, KREP_A_ISOLATION, isolation))) {
		nlmsg_free(msg);
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return -ENOMEM;
	}
	err = krepctl_request(ctl, msg, offset_reply_get, &r);
	nlmsg_free(msg);
	if (err)
		return err;
	if (!r.has_offset) {
		fprintf(stderr, "%s: LIST_OFFSETS reply without an offset\n",
			krep_prog);
		return -EPROTO;
	}
	*offset = r.offset;
	if (has_ts)
		*has_ts = r.has_ts;
	if (found_ts)
		*found_ts = r.ts;
	return 0;
}

/* ---- offsets ----------------------------------------------------------- */

struct offsets_parse {
	struct krep_offsets_args *a;
	bool given;
};

static int offsets_other(int argc, char **argv, int *i, void *arg)
{
	struct offsets_parse *op = arg;
	const char *s = argv[*i];
	int64_t ts;

	if (!strcmp(s, "--isolation") || !strcmp(s, "lag")) {
		if (*i + 1 >= argc) {
			krepctl_usage_error(krepctl_offsets_usage,
					    "offsets: '%s' needs a value", s);
			return -EINVAL;
		}
		s = argv[++*i];
		if (!strcmp(argv[*i - 1], "lag")) {
			int64_t pos;
			int err = krepctl_parse_s64(krepctl_offsets_usage,
						    "offsets", "lag", s, &pos);

			if (err)
				return err;
			if (pos < 0) {
				krepctl_usage_error(krepctl_offsets_usage,
						    "offsets: lag needs a position of 0 or more, not '%s'",
						    s);
				return -EINVAL;
			}
			op->a->has_lag = true;
			op->a->lag_pos = pos;
			return 1;
		}
		if (!strcmp(s, "read_committed")) {
			op->a->isolation = KREP_READ_COMMITTED;
		} else if (strcmp(s, "read_uncommitted")) {
			krepctl_usage_error(krepctl_offsets_usage,
					    "offsets: --isolation is read_committed or read_uncommitted, not '%s'",
					    s);
			return -EINVAL;
		}
		return 1;
	}
	if (op->given) {
		krepctl_usage_error(krepctl_offsets_usage,
				    "offsets: more than one of earliest, latest and TIME_MS ('%s')",
				    s);
		return -EINVAL;
	}
	if (!strcmp(s, "earliest") || !strcmp(s, "beginning")) {
		ts = KREP_TS_EARLIEST;
	} else if (!strcmp(s, "latest") || !strcmp(s, "end")) {
		ts = KREP_TS_LATEST;
	} else if (krep_s64_parse(s, &ts)) {
		return 0;
	}
	op->a->timestamp = ts;
	op->given = true;
	return 1;
}

int krep_offsets_parse(int argc, char **argv, struct krep_offsets_args *a)
{
	struct offsets_parse op = { .a = a };
	int err;

	memset(a, 0, sizeof(*a));
	a->timestamp = KREP_TS_LATEST;
	err = part_args_parse(argc, argv, "offsets", krepctl_offsets_usage,
			      &a->topic, &a->has_partition, &a->partition,
			      &a->json, offsets_other, &op);
	if (!err && a->has_lag &&
	    (!a->has_partition || a->timestamp != KREP_TS_LATEST)) {
		krepctl_usage_error(krepctl_offsets_usage,
				    "offsets: lag needs partition N and latest");
		return -EINVAL;
	}
	return err;
}

/* Every partition of a.topic: a line (or an array element) each. */
static int offsets_all(struct krepctl *ctl, const struct krep_offsets_args *a)
{
	uint32_t np, i, failed = 0;
	bool has_ts = false;
	uint64_t offset;
	int64_t ts = 0;
	struct json j;

	if (krepctl_topic_partitions(ctl, a->topic, &np))
		return KREP_EXIT_ERR;
	if (ctl->json) {
		json_init(&j, stdout);
		json_arr_begin(&j);
	}
	for (i = 0; i < np; i++) {
		if (krepctl_list_offset(ctl, a->topic, i, a->timestamp,
					a->isolation, &offset, &has_ts, &ts)) {
			failed++;
			continue;
		}
		if (!ctl->json) {
			printf("%s %u %" PRIu64, a->topic, i, offset);
			if (has_ts)
				printf(" %" PRId64, ts);
			putchar('\n');
			continue;
		}
		json_obj_begin(&j);
		json_key(&j, "topic");
		json_str(&j, a->topic);
		json_key(&j, "partition");
		json_u64(&j, i);
		json_key(&j, "offset");
		json_u64(&j, offset);
		json_key(&j, "timestamp");
		if (has_ts)
			json_s64(&j, ts);
		else
			json_null(&j);
		json_obj_end(&j);
	}
	if (ctl->json) {
		json_arr_end(&j);
		putchar('\n');
	}
	return failed ? KREP_EXIT_ERR : KREP_EXIT_OK;
}

int krepctl_offsets_run(struct krepctl *ctl, int argc, char **argv)
{
	struct krep_offsets_args a;
	bool has_ts = false;
	uint64_t offset, lag;
	int64_t ts = 0;
	struct json j;
	int err;

	err = krep_offsets_parse(argc, argv, &a);
	if (err > 0) {
		krepctl_offsets_usage(stdout);
		return KREP_EXIT_OK;
	}
	if (err)
		return KREP_EXIT_USAGE;
	ctl->json |= a.json;
	if (krepctl_connect(ctl))
		return KREP_EXIT_ERR;
	if (!a.has_partition)
		return offsets_all(ctl, &a);
	err = krepctl_list_offset(ctl, a.topic, a.partition, a.timestamp,
				  a.isolation, &offset, &has_ts, &ts);
	if (err)
		return KREP_EXIT_ERR;
	lag = offset > a.lag_pos ? offset - a.lag_pos : 0;
	if (ctl->json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "offset");
		json_u64(&j, offset);
		json_key(&j, "timestamp");
		if (has_ts)
			json_s64(&j, ts);
		else
			json_null(&j);
		if (a.has_lag) {
			json_key(&j, "lag");
			json_u64(&j, lag);
		}
		json_obj_end(&j);
		putchar('\n');
	} else if (has_ts) {
		printf("%" PRIu64 " %" PRId64 "\n", offset, ts);
	} else if (a.has_lag) {
		printf("%" PRIu64 " lag=%" PRIu64 "\n", offset, lag);
	} else {
		printf("%" PRIu64 "\n", offset);
	}
	return KREP_EXIT_OK;
}

/* ---- delete-records ---------------------------------------------------- */

struct delete_parse {
	struct krep_delete_records_args *a;
	bool given;
};

static int delete_other(int argc, char **argv, int *i, void *arg)
{
	struct delete_parse *dp = arg;

	if (strcmp(argv[*i], "before"))
		return 0;
	if (dp->given) {
		krepctl_usage_error(krepctl_delete_records_usage,
				    "delete-records: 'before' given twice");
		return -EINVAL;
	}
	if (*i + 1 >= argc) {
		krepctl_usage_error(krepctl_delete_records_usage,
				    "delete-records: 'before' needs an offset");
		return -EINVAL;
	}
	(*i)++;
	if (krep_u64_parse(argv[*i], &dp->a->before)) {
		krepctl_usage_error(krepctl_delete_records_usage,
				    "delete-records: offset '%s' is not a number",
				    argv[*i]);
		return -EINVAL;
	}
	dp->given = true;
	return 1;
}

int krep_delete_records_parse(int argc, char **argv,
			      struct krep_delete_records_args *a)
{
	struct delete_parse dp = { .a = a };
	int err;

	memset(a, 0, sizeof(*a));
	err = part_args_parse(argc, argv, "delete-records",
			      krepctl_delete_records_usage, &a->topic, NULL,
			      &a->partition, &a->json, delete_other, &dp);
	if (!err && !dp.given) {
		krepctl_usage_error(krepctl_delete_records_usage,
				    "delete-records: missing 'before OFFSET'");
		return -EINVAL;
	}
	return err;
}

static struct nla_policy u64_reply_policy[KREP_A_MAX + 1] = {
	[KREP_A_OFFSET]		= { .type = NLA_U64 },
	[KREP_A_LSO]		= { .type = NLA_U64 },
	[KREP_A_LOG_START]	= { .type = NLA_U64 },
	[KREP_A_LOW_WATERMARK]	= { .type = NLA_U64 },
};

/* Two u64 attributes of a reply, both required. */
struct two_u64 {
	int attr[2];
	uint64_t v[2];
	const char *cmd;
};

static int two_u64_get(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[KREP_A_MAX + 1];
	struct two_u64 *r = arg;
	int i;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, KREP_A_MAX, u64_reply_policy))
		goto malformed;
	for (i = 0; i < 2; i++) {
		if (!tb[r->attr[i]])
			goto malformed;
		r->v[i] = nla_get_u64(tb[r->attr[i]]);
	}
	return 0;
malformed:
	fprintf(stderr, "%s: malformed %s reply from the kernel\n", krep_prog,
		r->cmd);
	return -EPROTO;
}

/* Print "k0=v0 k1=v1" or {"j0":v0,"j1":v1}. */
static void print_two(const struct krepctl *ctl, const struct two_u64 *r,
		      const char *const *text, const char *const *jkeys)
{
	struct json j;
	int i;

	if (!ctl->json) {
		printf("%s=%" PRIu64 " %s=%" PRIu64 "\n", text[0], r->v[0],
		       text[1], r->v[1]);
		return;
	}
	json_init(&j, stdout);
	json_obj_begin(&j);
	for (i = 0; i < 2; i++) {
		json_key(&j, jkeys[i]);
		json_u64(&j, r->v[i]);
	}
	json_obj_end(&j);
	putchar('\n');
}

int krepctl_delete_records_run(struct krepctl *ctl, int argc, char **argv)
{
	static const char *const text[] = { "log_start", "lw" };
	static const char *const jkeys[] = { "log_start", "low_watermark" };
	struct two_u64 r = {
		.attr = { KREP_A_LOG_START, KREP_A_LOW_WATERMARK },
		.cmd = "DELETE_RECORDS",
	};
	struct krep_delete_records_args a;
	struct nl_msg *msg;
	int err;

	err = krep_delete_records_parse(argc, argv, &a);
	if (err > 0) {
		krepctl_delete_records_usage(stdout);
		return KREP_EXIT_OK;
	}
	if (err)
		return KREP_EXIT_USAGE;
	ctl->json |= a.json;
	if (krepctl_connect(ctl))
		return KREP_EXIT_ERR;
	msg = krepctl_part_msg(ctl->gl.family, KREP_CMD_DELETE_RECORDS, a.topic,
			       a.partition, 16);
	if (!msg || nla_put_u64(msg, KREP_A_OFFSET, a.before)) {
		nlmsg_free(msg);
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return KREP_EXIT_ERR;
	}
	err = krepctl_request(ctl, msg, two_u64_get, &r);
	nlmsg_free(msg);
	if (err)
		return KREP_EXIT_ERR;
	print_two(ctl, &r, text, jkeys);
	return KREP_EXIT_OK;
}

/* ---- txn --------------------------------------------------------------- */

struct txn_parse {
	struct krep_txn_args *a;
	bool has_producer;
};

static int txn_other(int argc, char **argv, int *i, void *arg)
{
	struct txn_parse *tp = arg;
	const char *s = argv[*i];
	uint8_t op = 0;

	(void)argc;
	if (!strcmp(s, "begin"))
		op = KREP_TXN_BEGIN;
	else if (!strcmp(s, "commit"))
		op = KREP_TXN_COMMIT;
	else if (!strcmp(s, "abort"))
		op = KREP_TXN_ABORT;
	if (op) {
		if (tp->a->op) {
			krepctl_usage_error(krepctl_txn_usage,
					    "txn: more than one of begin, commit and abort");
			return -EINVAL;
		}
		tp->a->op = op;
		return 1;
	}
	if (!strchr(s, ':'))
		return 0;
	if (tp->has_producer) {
		krepctl_usage_error(krepctl_txn_usage,
				    "txn: PID:EPOCH given twice");
		return -EINVAL;
	}
	tp->has_producer = true;
	if (krepctl_parse_producer(krepctl_txn_usage, "txn", s,
				   &tp->a->producer_id, &tp->a->producer_epoch))
		return -EINVAL;
	return 1;
}

int krep_txn_parse(int argc, char **argv, struct krep_txn_args *a)
{
	struct txn_parse tp = { .a = a };
	int err;

	memset(a, 0, sizeof(*a));
	err = part_args_parse(argc, argv, "txn", krepctl_txn_usage, &a->topic,
			      NULL, &a->partition, &a->json, txn_other, &tp);
	if (err)
		return err;
	if (!tp.has_producer) {
		krepctl_usage_error(krepctl_txn_usage, "txn: missing PID:EPOCH");
		return -EINVAL;
	}
	if (!a->op) {
		krepctl_usage_error(krepctl_txn_usage,
				    "txn: missing begin, commit or abort");
		return -EINVAL;
	}
	return 0;
}

int krepctl_txn_run(struct krepctl *ctl, int argc, char **argv)
{
	static const char *const text[] = { "offset", "lso" };
	struct two_u64 r = {
		.attr = { KREP_A_OFFSET, KREP_A_LSO },
		.cmd = "TXN",
	};
	struct krep_txn_args a;
	struct nl_msg *msg;
	int err;

	err = krep_txn_parse(argc, argv, &a);
	if (err > 0) {
		krepctl_txn_usage(stdout);
		return KREP_EXIT_OK;
	}
	if (err)
		return KREP_EXIT_USAGE;
	ctl->json |= a.json;
	if (krepctl_connect(ctl))
		return KREP_EXIT_ERR;
	msg = krepctl_part_msg(ctl->gl.family, KREP_CMD_TXN, a.topic,
			       a.partition, 64);
	if (!msg || nla_put_u64(msg, KREP_A_PRODUCER_ID, a.producer_id) ||
	    nla_put_u16(msg, KREP_A_PRODUCER_EPOCH, a.producer_epoch) ||
	    nla_put_u8(msg, KREP_A_TXN_OP, a.op)) {
		nlmsg_free(msg);
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return KREP_EXIT_ERR;
	}
	err = krepctl_request(ctl, msg, two_u64_get, &r);
	nlmsg_free(msg);
	if (err)
		return KREP_EXIT_ERR;
	print_two(ctl, &r, text, text);
	return KREP_EXIT_OK;
}
