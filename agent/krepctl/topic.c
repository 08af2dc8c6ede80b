// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl topic create | delete | list | describe: topics and the state of
 * this broker's replicas of their partitions (KREP_CMD_TOPIC_NEW, _DEL,
 * _GET and KREP_CMD_PARTITION_GET).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <linux/krep.h>

#include "attrs.h"
#include "ctlsock.h"
#include "json.h"
#include "krepctl.h"
#include "snap.h"

static void create_usage(FILE *f)
{
	fputs("Usage: krepctl topic create NAME [partitions N] [replication-factor N]\n"
	      "                              [config KEY=VAL[,KEY=VAL...]]\n"
	      "                              [--controller] [--socket PATH]\n"
	      "\n"
	      "Create topic NAME (1..249 characters of [a-zA-Z0-9._-]) on this\n"
	      "broker. Replicas are assigned round-robin over this broker and its\n"
	      "peers; the first is the preferred leader. Needs CAP_NET_ADMIN.\n"
	      "\n"
	      "With --controller (or --socket PATH, krepd's control socket,\n"
	      "default /run/krep/krepd.sock), krepd --controller creates it on\n"
	      "every broker instead: it assigns the replicas over the live brokers\n"
	      "as Kafka does (preferred leaders and followers spread from a random\n"
	      "start), records the topic in its state file, and creates it later\n"
	      "on a broker it cannot reach now. Prints one line per partition,\n"
	      "'TOPIC-P replicas=A,B,C', and on stderr each broker not reached;\n"
	      "with --json krepd's objects {\"topic\",\"partition\",\"replicas\"}\n"
	      "and {\"broker\",\"done\",\"error\"}.\n"
	      "\n"
	      "  partitions N          number of partitions (default 1)\n"
	      "  replication-factor N  replicas per partition (default 1; also 'rf')\n"
	      "  config KEY=VAL,...    topic configuration, repeatable:\n"
	      "    (kafka-topics' --topic NAME, --partitions, --replication-factor\n"
	      "    and --config work too)\n"
	      "      min_insync_replicas      ISR size acks=all needs (default 1)\n"
	      "      replica_lag_time_max_ms  when a follower leaves the ISR (30000)\n"
	      "      segment_bytes            log segment size (8388608)\n"
	      "      segment_ms               roll a segment this old at the\n"
	      "                               next append (604800000, 7 days)\n"
	      "      retention_bytes          log bytes to keep, -1 = all (-1)\n"
	      "      max_message_bytes        largest batch accepted (1048588)\n"
	      "      unclean_leader_election  0 or 1 (0)\n"
	      "      flush_messages           with a log directory, sync after\n"
	      "                               this many records and answer the\n"
	      "                               producer then (never)\n"
	      "      flush_ms                 with a log directory, sync data\n"
	      "                               this old (never)\n"
	      "    Kafka's dotted names (min.insync.replicas) work too.\n"
	      "\n"
	      "Prints nothing; with --json {\"topic\":NAME,\"partitions\":N,\n"
	      "\"replication_factor\":N}. The kernel checks the ranges.\n", f);
}

static void delete_usage(FILE *f)
{
	fputs("Usage: krepctl topic delete NAME [--controller] [--socket PATH]\n"
	      "\n"
	      "Delete topic NAME and its logs on this broker. Waiting produces and\n"
	      "fetches end with UNKNOWN_TOPIC_OR_PARTITION. Needs CAP_NET_ADMIN.\n"
	      "Prints nothing; with --json {\"topic\":NAME,\"deleted\":true}.\n"
	      "\n"
	      "With --controller (or --socket PATH), krepd --controller deletes it\n"
	      "from every broker, now or once it can reach it, and forgets it when\n"
	      "no broker has it; a topic krepd created must be deleted this way,\n"
	      "or krepd creates it again. Brokers not reached go to stderr; with\n"
	      "--json krepd's objects {\"broker\",\"done\",\"error\"}.\n", f);
}

static void list_usage(FILE *f)
{
	fputs("Usage: krepctl [--json] topic list\n"
	      "\n"
	      "List the topics, one a line:\n"
	      "  NAME partitions=N replication_factor=N min_insync_replicas=N\n"
	      "  replica_lag_time_max_ms=N segment_bytes=N retention_bytes=N\n"
	      "  max_message_bytes=N unclean_leader_election=0|1\n"
	      "With --json an array of {\"topic\",\"partitions\",\n"
	      "\"replication_factor\",\"config\":{KEY:VALUE,...}}.\n", f);
}

static void describe_usage(FILE *f)
{
	fputs("Usage: krepctl [--json] topic describe [NAME] [--under-replicated]\n"
	      "                [--under-min-isr] [--at-min-isr] [--unavailable]\n"
	      "                [--controller] [--socket PATH]\n"
	      "\n"
	      "Show this broker's replica of every partition (of topic NAME), one\n"
	      "a line. With filters (Kafka's), only the partitions that match one\n"
	      "of them: --under-replicated (ISR smaller than the replicas),\n"
	      "--under-min-isr (ISR below min(min_insync_replicas, replicas):\n"
	      "acks=all fails), --at-min-isr (ISR at it: one more loss and acks=all\n"
	      "fails), --unavailable (offline here, no leader, or a leader this\n"
	      "broker sees down), as 'krepctl stats' counts them:\n"
	      "  TOPIC PARTITION leader=ID epoch=N role=leader|follower|offline\n"
	      "  replicas=ID,... isr=ID,... leo=N hw=N lso=N log_start=N lw=N\n"
	      "  bytes=N partition_epoch=N epochs=EPOCH@START,... [pending_isr=ID,...]\n"
	      "  [ineligible=ID,...]\n"
	      "leo: log end offset, hw: high watermark, lso: last stable offset,\n"
	      "lw: low watermark, bytes: bytes held by the log, epochs: the leader\n"
	      "epoch cache (each epoch and its first offset, oldest first),\n"
	      "pending_isr: an ISR change waiting for the controller (only while\n"
	      "one waits), ineligible: replicas the controller has fenced (a leader\n"
	      "neither counts them towards HW outside the ISR nor asks for them\n"
	      "to join it; only while there are some). On a leader, each\n"
	      "follower follows on a line of its own, indented:\n"
	      "    remote ID leo=N log_start=N fetch_age_ms=N caught_up_age_ms=N\n"
	      "    in_isr=0|1\n"
	      "(leo '-' until it has fetched in this epoch). A missing value\n"
	      "prints as '-'. With --json an array of {\"topic\",\"partition\",\n"
	      "\"role\",\"leader\",\"leader_epoch\",\"partition_epoch\",\"replicas\",\n"
	      "\"isr\",\"leo\",\"hw\",\"lso\",\"log_start\",\"low_watermark\",\n"
	      "\"log_bytes\",\"epochs\":[{\"epoch\",\"start_offset\"}],\n"
	      "\"pending_isr\":[ID,...]|null,\"ineligible\":[ID,...]|null,\n"
	      "\"remotes\":[{\"id\",\"leo\",\"log_start\",\n"
	      "\"fetch_age_ms\",\"caught_up_age_ms\",\"in_isr\"}]|null}.\n"
	      "\n"
	      "With --controller (or --socket PATH, krepd's control socket), the\n"
	      "whole cluster as krepd --controller sees it instead, one line per\n"
	      "partition:\n"
	      "  TOPIC PARTITION leader=ID|- epoch=N partition_epoch=N\n"
	      "  replicas=ID,... isr=ID,... min_isr=N elr=ID,...|- offline=0|1\n"
	      "(min_isr: the topic's min_insync_replicas; --json: an array of\n"
	      "krepd's objects {\"topic\",\"partition\",\"leader\",\"leader_epoch\",\n"
	      "\"partition_epoch\",\"replicas\",\"isr\",\"min_isr\",\"elr\",\n"
	      "\"offline\"}); every filter applies, the min ISR ones to min_isr.\n", f);
}

static int create_run(struct krepctl *ctl, int argc, char **argv);
static int delete_run(struct krepctl *ctl, int argc, char **argv);
static int list_run(struct krepctl *ctl, int argc, char **argv);
static int describe_run(struct krepctl *ctl, int argc, char **argv);

static const struct krepctl_cmd topic_cmds[] = {
	{ "create", create_run, create_usage, "create a topic" },
	{ "delete", delete_run, delete_usage, "delete a topic" },
	{ "list", list_run, list_usage, "list the topics (default)" },
	{ "describe", describe_run, describe_usage,
	  "show the partitions: leader, ISR, watermarks" },
	{ NULL }
};

void krepctl_topic_usage(FILE *f)
{
	fputs("Usage: krepctl topic create NAME [partitions N] [replication-factor N]\n"
	      "                              [config KEY=VAL[,...]] [--controller]\n"
	      "       krepctl topic delete NAME [--controller]\n"
	      "       krepctl [--json] topic [list]\n"
	      "       krepctl [--json] topic describe [NAME] [--under-replicated]\n"
	      "               [--under-min-isr] [--at-min-isr] [--unavailable]\n"
	      "\n"
	      "Commands:\n", f);
	krepctl_list_cmds(f, topic_cmds);
	fputs("\nRun 'krepctl topic COMMAND --help' for details.\n", f);
}

/* "KEY=VAL[,KEY=VAL...]" into @tc; prints a usage error. */
static int config_parse(const char *s, struct krep_topic_create *tc)
{
	char why[256];
	int err = krep_tconfig_parse(s, &tc->cfg, why, sizeof(why));

	if (err == -EINVAL)
		krepctl_usage_error(create_usage, "topic create: %s", why);
	else if (err)
		fprintf(stderr, "%s: %s\n", krep_prog, why);
	return err;
}

/* ---- topic create ------------------------------------------------------ */

/*
 * Parse "create NAME [partitions N] [replication-factor N] [config ...]".
 * Returns 0, 1 if help was asked for, or -errno after a usage error.
 */
int krep_topic_create_parse(int argc, char **argv,
			    struct krep_topic_create *tc)
{
	bool has_parts = false, has_rf = false;
	const char *kw, *val;
	int i, err;

	memset(tc, 0, sizeof(*tc));
	tc->partitions = 1;
	tc->replication_factor = 1;
	for (i = 1; i < argc; i++) {
		if (krepctl_is_help(argv[i]))
			return 1;
	}
	for (i = 1; i < argc; i++) {
		kw = argv[i];
		if (!strcmp(kw, "-j") || !strcmp(kw, "--json")) {
			tc->json = true;
			continue;
		}
		if (!tc->name && kw[0] != '-') {
			tc->name = kw;
			continue;
		}
		if (!strcmp(kw, "--topic") && !tc->name && i + 1 < argc) {
			tc->name = argv[++i];
			continue;
		}
		/* kafka-topics' long options name the same keywords */
		if (!strcmp(kw, "--partitions") ||
		    !strcmp(kw, "--replication-factor") || !strcmp(kw, "--config"))
			kw += 2;
		if (strcmp(kw, "partitions") && strcmp(kw, "replication-factor") &&
		    strcmp(kw, "rf") && strcmp(kw, "config")) {
			static const char *const names[] = {
				"partitions", "replication-factor", "rf",
				"config", "--partitions", "--replication-factor",
				"--config", "--controller", "--socket", NULL
			};
			char buf[96];

			krepctl_usage_error(create_usage,
					    "topic create: unknown keyword '%s'%s",
					    kw, krepctl_did_you_mean(kw, names, buf,
								     sizeof(buf)));
			return -EINVAL;
		}
		if (i + 1 >= argc) {
			krepctl_usage_error(create_usage,
					    "topic create: '%s' needs a value", kw);
			return -EINVAL;
		}
		val = argv[++i];
		if (!strcmp(kw, "partitions")) {
			if (has_parts)
				goto twice;
			has_parts = true;
			err = krepctl_parse_u32(create_usage, "topic create", kw,
						val, &tc->partitions);
		} else if (!strcmp(kw, "config")) {
			err = config_parse(val, tc);
		} else {
			if (has_rf)
				goto twice;
			has_rf = true;
			err = krepctl_parse_u32(create_usage, "topic create", kw,
						val, &tc->replication_factor);
		}
		if (err)
			return err;
	}
	if (!tc->name) {
		krepctl_usage_error(create_usage, "topic create: missing topic name");
		return -EINVAL;
	}
	return 0;
twice:
	krepctl_usage_error(create_usage, "topic create: '%s' given twice", kw);
	return -EINVAL;
}

struct nl_msg *krep_topic_create_msg(int family,
				     const struct krep_topic_create *tc)
{
	struct nl_msg *msg;

	msg = krep_genl_msg_new(family, KREP_CMD_TOPIC_NEW, 0,
				nla_total_size(strlen(tc->name) + 1) + 256);
	if (!msg)
		return NULL;
	if (nla_put_string(msg, KREP_A_TOPIC, tc->name) ||
	    nla_put_u32(msg, KREP_A_PARTITIONS, tc->partitions) ||
	    nla_put_u32(msg, KREP_A_REPLICATION_FACTOR, tc->replication_factor) ||
	    krep_tconfig_put(msg, &tc->cfg)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

static int create_run(struct krepctl *ctl, int argc, char **argv)
{
	char req[KREP_CTLSOCK_LINE_MAX], cfg[KREP_TCONFIG_STR_MAX];
	struct krep_topic_create tc;
	struct nl_msg *msg;
	const char *sock;
	int err, via;
	struct json j;

	via = krepctl_controller_opts(&argc, argv, &sock, create_usage,
				      "topic create");
	if (via < 0)
		return KREP_EXIT_USAGE;
	err = krep_topic_create_parse(argc, argv, &tc);
	if (err > 0) {
		create_usage(stdout);
		return KREP_EXIT_OK;
	}
	if (err)
		return KREP_EXIT_USAGE;
	ctl->json |= tc.json;
	/* a value the kernel's policy would refuse without Kafka's code */
	if (krep_tconfig_check(&tc.cfg, cfg, sizeof(cfg))) {
		krepctl_error(ctl, KREP_KERR_INVALID_CONFIG, -EINVAL,
			      "topic create: %s", cfg);
		return KREP_EXIT_ERR;
	}
	if (via) {
		krep_tconfig_format(&tc.cfg, cfg, sizeof(cfg));
		snprintf(req, sizeof(req), "topic-create %s %u %u%s%s", tc.name,
			 tc.partitions, tc.replication_factor, cfg[0] ? " " : "",
			 cfg);
		return krepctl_topic_controller(ctl, sock, req);
	}
	if (krepctl_connect(ctl))
		return KREP_EXIT_ERR;
	msg = krep_topic_create_msg(ctl->gl.family, &tc);
	if (!msg) {
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return KREP_EXIT_ERR;
	}
	err = krepctl_request(ctl, msg, NULL, NULL);
	nlmsg_free(msg);
	if (err)
		return KREP_EXIT_ERR;
	if (ctl->json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "topic");
		json_str(&j, tc.name);
		json_key(&j, "partitions");
		json_u64(&j, tc.partitions);
		json_key(&j, "replication_factor");
		json_u64(&j, tc.replication_factor);
		json_obj_end(&j);
		putchar('\n');
	}
	return KREP_EXIT_OK;
}

/* ---- topic delete ------------------------------------------------------ */

/* "NAME" alone after the subcommand; 1 for help, -EINVAL after usage. */
static int name_parse(int argc, char **argv, const char *cmd, bool required,
		      void (*usage_fn)(FILE *f), const char **name, bool *json)
{
	int i;

	*name = NULL;
	for (i = 1; i < argc; i++) {
		if (krepctl_is_help(argv[i]))
			return 1;
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json")) {
			*json = true;
			continue;
		}
		if (*name) {
			krepctl_usage_error(usage_fn, "%s: unexpected argument '%s'",
					    cmd, argv[i]);
			return -EINVAL;
		}
		*name = argv[i];
	}
	if (required && !*name) {
		krepctl_usage_error(usage_fn, "%s: missing topic name", cmd);
		return -EINVAL;
	}
	return 0;
}

static struct nl_msg *topic_msg(int family, uint8_t cmd, int flags,
				const char *name)
{
	struct nl_msg *msg;

	msg = krep_genl_msg_new(family, cmd, flags,
				name ? nla_total_size(strlen(name) + 1) : 0);
	if (msg && name && nla_put_string(msg, KREP_A_TOPIC, name)) {
		nlmsg_free(msg);
		return NULL;
	}
	if (!msg)
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
	return msg;
}

static int delete_run(struct krepctl *ctl, int argc, char **argv)
{
	char req[KREP_CTLSOCK_LINE_MAX];
	const char *name, *sock;
	struct nl_msg *msg;
	struct json j;
	int err, via;

	via = krepctl_controller_opts(&argc, argv, &sock, delete_usage,
				      "topic delete");
	if (via < 0)
		return KREP_EXIT_USAGE;
	err = name_parse(argc, argv, "topic delete", true, delete_usage, &name,
			 &ctl->json);
	if (err > 0) {
		delete_usage(stdout);
		return KREP_EXIT_OK;
	}
	if (err)
		return KREP_EXIT_USAGE;
	if (via) {
		snprintf(req, sizeof(req), "topic-delete %s", name);
		return krepctl_topic_controller(ctl, sock, req);
	}
	if (krepctl_connect(ctl))
		return KREP_EXIT_ERR;
	msg = topic_msg(ctl->gl.family, KREP_CMD_TOPIC_DEL, 0, name);
	if (!msg)
		return KREP_EXIT_ERR;
	err = krepctl_request(ctl, msg, NULL, NULL);
	nlmsg_free(msg);
	if (err)
		return KREP_EXIT_ERR;
	if (ctl->json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "topic");
		json_str(&j, name);
		json_key(&j, "deleted");
		json_bool(&j, true);
		json_obj_end(&j);
		putchar('\n');
	}
	return KREP_EXIT_OK;
}

/* ---- topic list -------------------------------------------------------- */

static struct nla_policy topic_policy[KREP_A_MAX + 1] = {
	[KREP_A_TOPIC]		= { .type = NLA_STRING },
	[KREP_A_PARTITIONS]	= { .type = NLA_U32 },
	[KREP_A_REPLICATION_FACTOR] = { .type = NLA_U32 },
	[KREP_A_TOPIC_CONFIG]	= { .type = NLA_NESTED },
};

struct topic_info {
	char *name;
	bool has_partitions, has_rf;
	uint32_t partitions, rf;
	bool has_cfg[KREP_TCFG_NKEYS];
	int64_t cfg[KREP_TCFG_NKEYS];
};

struct topic_list {
	size_t n, cap;
	struct topic_info *v;
};

static void topic_list_free(struct topic_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* Grow @v (of @size-byte elements) to hold one more; NULL on ENOMEM. */
static void *grow(void *v, size_t *cap, size_t n, size_t size)
{
	void *nv;

	if (n < *cap)
		return v;
	*cap = *cap ? *cap * 2 : 16;
	nv = realloc(v, *cap * size);
	return nv;
}

static int tcfg_get(struct nlattr *nest, struct topic_info *t)
{
	struct nlattr *a;
	int rem, k;

	nla_for_each_nested(a, nest, rem) {
		for (k = 0; k < KREP_TCFG_NKEYS; k++)
			if (krep_tconfig_attr(k) == nla_type(a))
				break;
		if (k == KREP_TCFG_NKEYS)
			continue;	/* from a newer kernel */
		switch (nla_len(a)) {
		case 1:
			t->cfg[k] = nla_get_u8(a);
			break;
		case 4:
			t->cfg[k] = nla_get_u32(a);
			break;
		case 8:
			t->cfg[k] = (int64_t)nla_get_u64(a);
			break;
		default:
			return -EINVAL;
		}
		t->has_cfg[k] = true;
	}
	return 0;
}

static int topic_info_get(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[KREP_A_MAX + 1];
	struct topic_list *l = arg;
	struct topic_info *t;
	void *nv;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, KREP_A_MAX, topic_policy) ||
	    !tb[KREP_A_TOPIC])
		goto malformed;
	nv = grow(l->v, &l->cap, l->n, sizeof(*l->v));
	if (!nv)
		goto nomem;
	l->v = nv;
	t = &l->v[l->n];
	memset(t, 0, sizeof(*t));
	t->name = strdup(nla_get_string(tb[KREP_A_TOPIC]));
	if (!t->name)
		goto nomem;
	l->n++;
	if (tb[KREP_A_PARTITIONS]) {
		t->has_partitions = true;
		t->partitions = nla_get_u32(tb[KREP_A_PARTITIONS]);
	}
	if (tb[KREP_A_REPLICATION_FACTOR]) {
		t->has_rf = true;
		t->rf = nla_get_u32(tb[KREP_A_REPLICATION_FACTOR]);
	}
	if (tb[KREP_A_TOPIC_CONFIG] && tcfg_get(tb[KREP_A_TOPIC_CONFIG], t))
		goto malformed;
	return 0;
nomem:
	fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
	return -ENOMEM;
malformed:
	fprintf(stderr, "%s: malformed TOPIC_GET reply from the kernel\n",
		krep_prog);
	return -EPROTO;
}

int krepctl_topic_partitions(struct krepctl *ctl, const char *topic,
			     uint32_t *n)
{
	struct topic_list l = { 0 };
	struct nl_msg *msg;
	int err;

	msg = topic_msg(ctl->gl.family, KREP_CMD_TOPIC_GET, 0, topic);
	if (!msg)
		return -ENOMEM;
	err = krepctl_request(ctl, msg, topic_info_get, &l);
	nlmsg_free(msg);
	if (!err && (l.n != 1 || !l.v[0].has_partitions || !l.v[0].partitions)) {
		fprintf(stderr, "%s: TOPIC_GET reply without a partition count\n",
			krep_prog);
		err = -EPROTO;
	}
	if (!err)
		*n = l.v[0].partitions;
	topic_list_free(&l);
	return err;
}

static void print_u(FILE *f, const char *key, bool has, uint64_t v)
{
	if (has)
		fprintf(f, " %s=%" PRIu64, key, v);
	else
		fprintf(f, " %s=-", key);
}

static void topic_print(FILE *f, const struct topic_info *t)
{
	int k;

	fputs(t->name, f);
	print_u(f, "partitions", t->has_partitions, t->partitions);
	print_u(f, "replication_factor", t->has_rf, t->rf);
	for (k = 0; k < KREP_TCFG_NKEYS; k++) {
		if (t->has_cfg[k])
			fprintf(f, " %s=%" PRId64, krep_tconfig_name(k), t->cfg[k]);
		else
			fprintf(f, " %s=-", krep_tconfig_name(k));
	}
	fputc('\n', f);
}

static void json_opt_u64(struct json *j, const char *key, bool has, uint64_t v)
{
	json_key(j, key);
	if (has)
		json_u64(j, v);
	else
		json_null(j);
}

static void topic_json(struct json *j, const struct topic_info *t)
{
	int k;

	json_obj_begin(j);
	json_key(j, "topic");
	json_str(j, t->name);
	json_opt_u64(j, "partitions", t->has_partitions, t->partitions);
	json_opt_u64(j, "replication_factor", t->has_rf, t->rf);
	json_key(j, "config");
	json_obj_begin(j);
	for (k = 0; k < KREP_TCFG_NKEYS; k++) {
		json_key(j, krep_tconfig_name(k));
		if (t->has_cfg[k])
			json_s64(j, t->cfg[k]);
		else
			json_null(j);
	}
	json_obj_end(j);
	json_obj_end(j);
}

static int list_run(struct krepctl *ctl, int argc, char **argv)
{
	struct topic_list l = { 0 };
	struct nl_msg *msg;
	const char *name;
	struct json j;
	size_t i;
	int err;

	err = name_parse(argc, argv, "topic list", false, list_usage, &name,
			 &ctl->json);
	if (!err && name) {
		krepctl_usage_error(list_usage, "topic list: unexpected argument '%s'",
				    name);
		return KREP_EXIT_USAGE;
	}
	if (err > 0) {
		list_usage(stdout);
		return KREP_EXIT_OK;
	}
	if (err)
		return KREP_EXIT_USAGE;
	if (krepctl_connect(ctl))
		return KREP_EXIT_ERR;
	msg = topic_msg(ctl->gl.family, KREP_CMD_TOPIC_GET, NLM_F_DUMP, NULL);
	if (!msg)
		return KREP_EXIT_ERR;
	err = krepctl_request(ctl, msg, topic_info_get, &l);
	nlmsg_free(msg);
	if (!err) {
		if (ctl->json) {
			json_init(&j, stdout);
			json_arr_begin(&j);
			for (i = 0; i < l.n; i++)
				topic_json(&j, &l.v[i]);
			json_arr_end(&j);
			putchar('\n');
		} else {
			for (i = 0; i < l.n; i++)
				topic_print(stdout, &l.v[i]);
		}
	}
	topic_list_free(&l);
	return err ? KREP_EXIT_ERR : KREP_EXIT_OK;
}

/* ---- topic describe ---------------------------------------------------- */

static struct nla_policy part_policy[KREP_A_MAX + 1] = {
	[KREP_A_TOPIC]		= { .type = NLA_STRING },
	[KREP_A_PARTITION]	= { .type = NLA_U32 },
	[KREP_A_ROLE]		= { .type = NLA_U8 },
	[KREP_A_LEADER]		= { .type = NLA_U32 },
	[KREP_A_LEADER_EPOCH]	= { .type = NLA_U32 },
	[KREP_A_PARTITION_EPOCH] = { .type = NLA_U32 },
	[KREP_A_REPLICAS]	= { .type = NLA_NESTED },
	[KREP_A_ISR]		= { .type = NLA_NESTED },
	[KREP_A_LEO]		= { .type = NLA_U64 },
	[KREP_A_HW]		= { .type = NLA_U64 },
	[KREP_A_LSO]		= { .type = NLA_U64 },
	[KREP_A_LOG_START]	= { .type = NLA_U64 },
	[KREP_A_LOW_WATERMARK]	= { .type = NLA_U64 },
	[KREP_A_LOG_BYTES]	= { .type = NLA_U64 },
	[KREP_A_REMOTES]	= { .type = NLA_NESTED },
	[KREP_A_EPOCHS]		= { .type = NLA_NESTED },
	[KREP_A_PENDING_ISR]	= { .type = NLA_NESTED },
	[KREP_A_INELIGIBLE]	= { .type = NLA_NESTED },
};

struct id_list {
	size_t n;
	uint32_t *v;
};

/* The u32 fields of a partition, in print order. */
enum {
	PF_LEADER, PF_LEADER_EPOCH, PF_PARTITION_EPOCH, PF_NU32
};

/* The u64 fields of a partition, in print order. */
enum {
	PF_LEO, PF_HW, PF_LSO, PF_LOG_START, PF_LW, PF_BYTES, PF_NU64
};

static const struct {
	int attr;
	const char *text, *json;
} u64_fields[PF_NU64] = {
	[PF_LEO]	= { KREP_A_LEO, "leo", "leo" },
	[PF_HW]		= { KREP_A_HW, "hw", "hw" },
	[PF_LSO]	= { KREP_A_LSO, "lso", "lso" },
	[PF_LOG_START]	= { KREP_A_LOG_START, "log_start", "log_start" },
	[PF_LW]		= { KREP_A_LOW_WATERMARK, "lw", "low_watermark" },
	[PF_BYTES]	= { KREP_A_LOG_BYTES, "bytes", "log_bytes" },
};

/* What a leader knows of one follower (KREP_A_REMOTE). */
enum {
	RF_LEO, RF_LOG_START, RF_FETCH_AGE, RF_CAUGHT_UP_AGE, RF_NU64
};

static const struct {
	int attr;
	const char *name;
} remote_fields[RF_NU64] = {
	[RF_LEO]		= { KREP_A_REMOTE_LEO, "leo" },
	[RF_LOG_START]		= { KREP_A_REMOTE_LOG_START, "log_start" },
	[RF_FETCH_AGE]		= { KREP_A_REMOTE_FETCH_AGE_MS, "fetch_age_ms" },
	[RF_CAUGHT_UP_AGE]	= { KREP_A_REMOTE_CAUGHT_UP_AGE_MS,
				    "caught_up_age_ms" },
};

struct remote_info {
	bool has_id;
	uint32_t id;
	bool has_u64[RF_NU64];
	uint64_t u64[RF_NU64];
	int in_isr;		/* 0, 1, -1 when absent */
};

/* One entry of the leader epoch cache (KREP_A_EPOCH_ENTRY). */
struct epoch_entry {
	uint32_t epoch;
	uint64_t start;
};

struct part_info {
	char *topic;
	uint32_t partition;
	int role;		/* enum krep_role, -1 when absent */
	bool has_u32[PF_NU32];
	uint32_t u32[PF_NU32];
	bool has_replicas, has_isr;
	struct id_list replicas, isr;
	bool has_u64[PF_NU64];
	uint64_t u64[PF_NU64];
	bool has_pending;	/* an ALTER_ISR waits for the controller */
	struct id_list pending;
	bool has_inel;		/* replicas the controller has fenced */
	struct id_list inel;
	bool has_epochs;	/* the leader epoch cache, oldest first */
	size_t nepochs;
	struct epoch_entry *epochs;
	bool has_remotes;	/* a leader's table of its followers */
	size_t nremotes;
	struct remote_info *remotes;
};

struct part_list {
	size_t n, cap;
	struct part_info *v;
};

static void part_info_free(struct part_info *p)
{
	free(p->topic);
	free(p->replicas.v);
	free(p->isr.v);
	free(p->pending.v);
	free(p->inel.v);
	free(p->epochs);
	free(p->remotes);
}

static void part_list_free(struct part_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		part_info_free(&l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int id_list_get(struct nlattr *nest, struct id_list *l)
{
	struct nlattr *a;
	size_t n = 0;
	int rem;

	nla_for_each_nested(a, nest, rem)
		n += nla_type(a) == KREP_A_BROKER_ID;
	l->v = calloc(n ? n : 1, sizeof(*l->v));
	if (!l->v)
		return -ENOMEM;
	nla_for_each_nested(a, nest, rem) {
		if (nla_type(a) != KREP_A_BROKER_ID)
			continue;
		if (nla_len(a) != 4)
			return -EINVAL;
		l->v[l->n++] = nla_get_u32(a);
	}
	return 0;
}

/* room for each @type attribute of @nest (at least one) */
static void *nest_calloc(struct nlattr *nest, int type, size_t size)
{
	struct nlattr *a;
	size_t n = 0;
	int rem;

	nla_for_each_nested(a, nest, rem)
		n += nla_type(a) == type;
	return calloc(n ? n : 1, size);
}

static int epochs_get(struct nlattr *nest, struct part_info *p)
{
	struct nlattr *a, *f;
	struct epoch_entry *e;
	bool has_epoch, has_start;
	int rem, frem;

	p->epochs = nest_calloc(nest, KREP_A_EPOCH_ENTRY, sizeof(*p->epochs));
	if (!p->epochs)
		return -ENOMEM;
	nla_for_each_nested(a, nest, rem) {
		if (nla_type(a) != KREP_A_EPOCH_ENTRY)
			continue;
		e = &p->epochs[p->nepochs++];
		has_epoch = has_start = false;
		nla_for_each_nested(f, a, frem) {
			if (nla_type(f) == KREP_A_EPOCH_EPOCH) {
				if (nla_len(f) != 4)
					return -EINVAL;
				e->epoch = nla_get_u32(f);
				has_epoch = true;
			} else if (nla_type(f) == KREP_A_EPOCH_START) {
				if (nla_len(f) != 8)
					return -EINVAL;
				e->start = nla_get_u64(f);
				has_start = true;
			}
		}
		if (!has_epoch || !has_start)
			return -EINVAL;
	}
	p->has_epochs = true;
	return 0;
}

static int remotes_get(struct nlattr *nest, struct part_info *p)
{
	struct nlattr *a, *f;
	struct remote_info *r;
	int rem, frem, i;

	p->remotes = nest_calloc(nest, KREP_A_REMOTE, sizeof(*p->remotes));
	if (!p->remotes)
		return -ENOMEM;
	nla_for_each_nested(a, nest, rem) {
		if (nla_type(a) != KREP_A_REMOTE)
			continue;
		r = &p->remotes[p->nremotes++];
		r->in_isr = -1;
		nla_for_each_nested(f, a, frem) {
			if (nla_type(f) == KREP_A_REMOTE_ID) {
				if (nla_len(f) != 4)
					return -EINVAL;
				r->has_id = true;
				r->id = nla_get_u32(f);
			} else if (nla_type(f) == KREP_A_REMOTE_IN_ISR) {
				if (nla_len(f) != 1)
					return -EINVAL;
				r->in_isr = nla_get_u8(f);
			}
			for (i = 0; i < RF_NU64; i++) {
				if (nla_type(f) != remote_fields[i].attr)
					continue;
				if (nla_len(f) != 8)
					return -EINVAL;
				r->has_u64[i] = true;
				r->u64[i] = nla_get_u64(f);
			}
		}
	}
	p->has_remotes = true;
	return 0;
}

static int part_info_get(struct nl_msg *msg, void *arg)
{
	static const int u32_attrs[PF_NU32] = {
		[PF_LEADER] = KREP_A_LEADER,
		[PF_LEADER_EPOCH] = KREP_A_LEADER_EPOCH,
		[PF_PARTITION_EPOCH] = KREP_A_PARTITION_EPOCH,
	};
	struct nlattr *tb[KREP_A_MAX + 1];
	struct part_list *l = arg;
	struct part_info *p;
	void *nv;
	int i, err;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, KREP_A_MAX, part_policy) ||
	    !tb[KREP_A_TOPIC] || !tb[KREP_A_PARTITION])
		goto malformed;
	nv = grow(l->v, &l->cap, l->n, sizeof(*l->v));
	if (!nv)
		goto nomem;
	l->v = nv;
	p = &l->v[l->n];
	memset(p, 0, sizeof(*p));
	p->topic = strdup(nla_get_string(tb[KREP_A_TOPIC]));
	if (!p->topic)
		goto nomem;
	l->n++;
	p->partition = nla_get_u32(tb[KREP_A_PARTITION]);
	p->role = tb[KREP_A_ROLE] ? nla_get_u8(tb[KREP_A_ROLE]) : -1;
	for (i = 0; i < PF_NU32; i++) {
		if (!tb[u32_attrs[i]])
			continue;
		p->has_u32[i] = true;
		p->u32[i] = nla_get_u32(tb[u32_attrs[i]]);
	}
	for (i = 0; i < PF_NU64; i++) {
		if (!tb[u64_fields[i].attr])
			continue;
		p->has_u64[i] = true;
		p->u64[i] = nla_get_u64(tb[u64_fields[i].attr]);
	}
	if (tb[KREP_A_REPLICAS]) {
		err = id_list_get(tb[KREP_A_REPLICAS], &p->replicas);
		if (err == -ENOMEM)
			goto nomem;
		if (err)
			goto malformed;
		p->has_replicas = true;
	}
	if (tb[KREP_A_ISR]) {
		err = id_list_get(tb[KREP_A_ISR], &p->isr);
		if (err == -ENOMEM)
			goto nomem;
		if (err)
			goto malformed;
		p->has_isr = true;
	}
	if (tb[KREP_A_PENDING_ISR]) {
		err = id_list_get(tb[KREP_A_PENDING_ISR], &p->pending);
		if (err == -ENOMEM)
			goto nomem;
		if (err)
			goto malformed;
		p->has_pending = true;
	}
	if (tb[KREP_A_INELIGIBLE]) {
		err = id_list_get(tb[KREP_A_INELIGIBLE], &p->inel);
		if (err == -ENOMEM)
			goto nomem;
		if (err)
			goto malformed;
		p->has_inel = true;
	}
	if (tb[KREP_A_EPOCHS]) {
		err = epochs_get(tb[KREP_A_EPOCHS], p);
		if (err == -ENOMEM)
			goto nomem;
		if (err)
			goto malformed;
	}
	if (tb[KREP_A_REMOTES]) {
		err = remotes_get(tb[KREP_A_REMOTES], p);
		if (err == -ENOMEM)
			goto nomem;
		if (err)
			goto malformed;
	}
	return 0;
nomem:
	fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
	return -ENOMEM;
malformed:
	fprintf(stderr, "%s: malformed PARTITION_GET reply from the kernel\n",
		krep_prog);
	return -EPROTO;
}

static const char *role_str(int role, char *buf, size_t size)
{
	const char *name;

	if (role < 0)
		return NULL;
	name = krep_role_name(role);
	if (name)
		return name;
	snprintf(buf, size, "unknown(%d)", role);
	return buf;
}

static void print_ids(FILE *f, const char *key, bool has,
		      const struct id_list *l)
{
	size_t i;

	fprintf(f, " %s=", key);
	if (!has || !l->n) {
		fputc('-', f);
		return;
	}
	for (i = 0; i < l->n; i++)
		fprintf(f, "%s%u", i ? "," : "", l->v[i]);
}

static void part_print(FILE *f, const struct part_info *p)
{
	const char *role;
	char buf[24];
	size_t n;
	int i;

	fprintf(f, "%s %u", p->topic, p->partition);
	print_u(f, "leader", p->has_u32[PF_LEADER], p->u32[PF_LEADER]);
	print_u(f, "epoch", p->has_u32[PF_LEADER_EPOCH],
		p->u32[PF_LEADER_EPOCH]);
	role = role_str(p->role, buf, sizeof(buf));
	fprintf(f, " role=%s", role ? role : "-");
	print_ids(f, "replicas", p->has_replicas, &p->replicas);
	print_ids(f, "isr", p->has_isr, &p->isr);
	for (i = 0; i < PF_NU64; i++)
		print_u(f, u64_fields[i].text, p->has_u64[i], p->u64[i]);
	print_u(f, "partition_epoch", p->has_u32[PF_PARTITION_EPOCH],
		p->u32[PF_PARTITION_EPOCH]);
	fputs(" epochs=", f);
	if (!p->nepochs)
		fputc('-', f);
	for (n = 0; n < p->nepochs; n++)
		fprintf(f, "%s%u@%" PRIu64, n ? "," : "", p->epochs[n].epoch,
			p->epochs[n].start);
	if (p->has_pending)
		print_ids(f, "pending_isr", true, &p->pending);
	if (p->has_inel)
		print_ids(f, "ineligible", true, &p->inel);
	fputc('\n', f);
	for (n = 0; n < p->nremotes; n++) {
		const struct remote_info *r = &p->remotes[n];

		if (r->has_id)
			fprintf(f, "  remote %u", r->id);
		else
			fputs("  remote -", f);
		for (i = 0; i < RF_NU64; i++)
			print_u(f, remote_fields[i].name, r->has_u64[i],
				r->u64[i]);
		if (r->in_isr >= 0)
			fprintf(f, " in_isr=%d\n", r->in_isr);
		else
			fputs(" in_isr=-\n", f);
	}
}

static void json_ids(struct json *j, const char *key, bool has,
		     const struct id_list *l)
{
	size_t i;

	json_key(j, key);
	if (!has) {
		json_null(j);
		return;
	}
	json_arr_begin(j);
	for (i = 0; i < l->n; i++)
		json_u64(j, l->v[i]);
	json_arr_end(j);
}

static void part_json(struct json *j, const struct part_info *p)
{
	const char *role;
	char buf[24];
	size_t n;
	int i;

	json_obj_begin(j);
	json_key(j, "topic");
	json_str(j, p->topic);
	json_key(j, "partition");
	json_u64(j, p->partition);
	json_key(j, "role");
	role = role_str(p->role, buf, sizeof(buf));
	if (role)
		json_str(j, role);
	else
		json_null(j);
	json_opt_u64(j, "leader", p->has_u32[PF_LEADER], p->u32[PF_LEADER]);
	json_opt_u64(j, "leader_epoch", p->has_u32[PF_LEADER_EPOCH],
		     p->u32[PF_LEADER_EPOCH]);
	json_opt_u64(j, "partition_epoch", p->has_u32[PF_PARTITION_EPOCH],
		     p->u32[PF_PARTITION_EPOCH]);
	json_ids(j, "replicas", p->has_replicas, &p->replicas);
	json_ids(j, "isr", p->has_isr, &p->isr);
	for (i = 0; i < PF_NU64; i++)
		json_opt_u64(j, u64_fields[i].json, p->has_u64[i], p->u64[i]);
	json_key(j, "epochs");
	if (p->has_epochs) {
		json_arr_begin(j);
		for (n = 0; n < p->nepochs; n++) {
			json_obj_begin(j);
			json_key(j, "epoch");
			json_u64(j, p->epochs[n].epoch);
			json_key(j, "start_offset");
			json_u64(j, p->epochs[n].start);
			json_obj_end(j);
		}
		json_arr_end(j);
	} else {
		json_null(j);
	}
	json_ids(j, "pending_isr", p->has_pending, &p->pending);
	json_ids(j, "ineligible", p->has_inel, &p->inel);
	json_key(j, "remotes");
	if (!p->has_remotes) {
		json_null(j);
		json_obj_end(j);
		return;
	}
	json_arr_begin(j);
	for (n = 0; n < p->nremotes; n++) {
		const struct remote_info *r = &p->remotes[n];

		json_obj_begin(j);
		json_opt_u64(j, "id", r->has_id, r->id);
		for (i = 0; i < RF_NU64; i++)
			json_opt_u64(j, remote_fields[i].name, r->has_u64[i],
				     r->u64[i]);
		json_key(j, "in_isr");
		if (r->in_isr >= 0)
			json_bool(j, r->in_isr);
		else
			json_null(j);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_obj_end(j);
}

static void parts_print(FILE *f, const struct part_list *l, bool json)
{
	struct json j;
	size_t i;

	if (!json) {
		for (i = 0; i < l->n; i++)
			part_print(f, &l->v[i]);
		return;
	}
	json_init(&j, f);
	json_arr_begin(&j);
	for (i = 0; i < l->n; i++)
		part_json(&j, &l->v[i]);
	json_arr_end(&j);
	fputc('\n', f);
}

int krep_partition_reply_print(struct nl_msg *reply, bool json, FILE *f)
{
	struct part_list l = { 0 };
	int err;

	err = part_info_get(reply, &l);
	if (!err)
		parts_print(f, &l, json);
	part_list_free(&l);
	return err;
}

/* topic describe's filters, Kafka's names (krepctl.h) */
enum {
	F_UNDER_REPLICATED	= KREP_DESCRIBE_UNDER_REPLICATED,
	F_UNDER_MIN_ISR		= KREP_DESCRIBE_UNDER_MIN_ISR,
	F_AT_MIN_ISR		= KREP_DESCRIBE_AT_MIN_ISR,
	F_UNAVAILABLE		= KREP_DESCRIBE_UNAVAILABLE,
};

static const struct {
	const char *opt;
	unsigned int flag;
} describe_filters[] = {
	{ "--under-replicated", F_UNDER_REPLICATED },
	{ "--under-replicated-partitions", F_UNDER_REPLICATED },
	{ "--under-min-isr", F_UNDER_MIN_ISR },
	{ "--under-min-isr-partitions", F_UNDER_MIN_ISR },
	{ "--at-min-isr", F_AT_MIN_ISR },
	{ "--at-min-isr-partitions", F_AT_MIN_ISR },
	{ "--unavailable", F_UNAVAILABLE },
	{ "--unavailable-partitions", F_UNAVAILABLE },
};

/* Take describe's filter options out of @argv; -EINVAL after a usage error. */
static int filters_take(int *argc, char **argv, unsigned int *filters)
{
	int i, n = 1;
	size_t k;

	*filters = 0;
	for (i = 1; i < *argc; i++) {
		for (k = 0; k < sizeof(describe_filters) / sizeof(describe_filters[0]); k++)
			if (!strcmp(argv[i], describe_filters[k].opt))
				break;
		if (k < sizeof(describe_filters) / sizeof(describe_filters[0])) {
			*filters |= describe_filters[k].flag;
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1] == '-' &&
		    strcmp(argv[i], "--json") && strcmp(argv[i], "--help")) {
			krepctl_usage_error(describe_usage,
					    "topic describe: unknown option '%s'",
					    argv[i]);
			return -EINVAL;
		}
		argv[n++] = argv[i];
	}
	*argc = n;
	return 0;
}

/* Does partition @p match one of @filters, by the health snap.c gives it? */
static bool part_matches(const struct krep_snap *s, const struct part_info *p,
			 unsigned int filters)
{
	struct krep_part_health h;
	size_t i;

	for (i = 0; i < s->nparts; i++) {
		if (strcmp(s->parts[i].topic, p->topic) ||
		    s->parts[i].partition != p->partition)
			continue;
		krep_part_health(s, &s->parts[i], &h);
		return ((filters & F_UNDER_REPLICATED) && h.under_replicated) ||
		       ((filters & F_UNDER_MIN_ISR) && h.under_min_isr) ||
		       ((filters & F_AT_MIN_ISR) && h.at_min_isr) ||
		       ((filters & F_UNAVAILABLE) && h.offline);
	}
	return false;
}

/* Keep in @l the partitions that match @filters. */
static int parts_filter(struct krepctl *ctl, const char *name,
			struct part_list *l, unsigned int filters)
{
	struct part_list keep = { 0 };
	struct krep_snap s;
	size_t i;
	int err;

	err = krepctl_snap(ctl, name, &s);
	if (err)
		return err;
	keep.v = calloc(l->n ? l->n : 1, sizeof(*keep.v));
	if (!keep.v) {
		krep_snap_free(&s);
		return -ENOMEM;
	}
	keep.cap = l->n;
	for (i = 0; i < l->n; i++) {
		if (part_matches(&s, &l->v[i], filters)) {
			keep.v[keep.n++] = l->v[i];
			continue;
		}
		part_info_free(&l->v[i]);
	}
	free(l->v);
	*l = keep;
	krep_snap_free(&s);
	return 0;
}

static int describe_run(struct krepctl *ctl, int argc, char **argv)
{
	struct part_list l = { 0 };
	struct topic_list tl = { 0 };
	const char *name, *sock;
	unsigned int filters;
	struct nl_msg *msg;
	int err, via;

	via = krepctl_controller_opts(&argc, argv, &sock, describe_usage,
				      "topic describe");
	if (via < 0)
		return KREP_EXIT_USAGE;
	if (filters_take(&argc, argv, &filters))
		return KREP_EXIT_USAGE;
	err = name_parse(argc, argv, "topic describe", false, describe_usage,
			 &name, &ctl->json);
	if (err > 0) {
		describe_usage(stdout);
		return KREP_EXIT_OK;
	}
	if (err)
		return KREP_EXIT_USAGE;
	if (via && ctl->netns)
		return krepctl_usage_error(describe_usage,
					   "topic describe --controller talks to krepd's control socket, not to a broker: drop --netns");
	if (via)
		return krepctl_describe_controller(ctl, sock, name, filters);
	if (krepctl_connect(ctl))
		return KREP_EXIT_ERR;
	msg = topic_msg(ctl->gl.family, KREP_CMD_PARTITION_GET, NLM_F_DUMP,
			name);
	if (!msg)
		return KREP_EXIT_ERR;
	err = krepctl_request(ctl, msg, part_info_get, &l);
	nlmsg_free(msg);
	if (!err && name && !l.n) {
		/* Nothing hosted here: say so if the topic does not exist. */
		msg = topic_msg(ctl->gl.family, KREP_CMD_TOPIC_GET, 0, name);
		if (!msg) {
			err = -ENOMEM;
			goto out;
		}
		err = krepctl_request(ctl, msg, topic_info_get, &tl);
		nlmsg_free(msg);
		topic_list_free(&tl);
	}
	if (!err && filters)
		err = parts_filter(ctl, name, &l, filters);
	if (!err)
		parts_print(stdout, &l, ctl->json);
out:
	part_list_free(&l);
	return err ? KREP_EXIT_ERR : KREP_EXIT_OK;
}

/* ---- dispatch ---------------------------------------------------------- */

int krepctl_topic_run(struct krepctl *ctl, int argc, char **argv)
{
	return krepctl_dispatch(ctl, "topic", topic_cmds, "list",
				krepctl_topic_usage, argc, argv);
}
