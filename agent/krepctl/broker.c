// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl broker show | set: this network namespace's broker identity,
 * listener and peer list (KREP_CMD_BROKER_GET / KREP_CMD_BROKER_SET).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/krep.h>

#include "json.h"
#include "krepctl.h"
#include "secret.h"

struct peer_info {
	bool has_id;
	uint32_t id;
	bool has_ep;
	struct krep_ep ep;
	int state;		/* enum krep_peer_state, -1 if absent */
};

struct broker_info {
	bool has_id;
	uint32_t id;
	char *cluster;
	bool has_listen;
	struct krep_ep listen;
	bool has_kafka_listen;
	struct krep_ep kafka_listen;
	char *kafka_advertised;
	char *log_dir;		/* KREP_A_LOG_DIR, NULL if absent */
	int auth;		/* KREP_A_AUTH, -1 if absent */
	bool has_gen;
	uint32_t gen;
	size_t npeers;
	struct peer_info *peers;
};

static void show_usage(FILE *f)
{
	fputs("Usage: krepctl [--json] broker show\n"
	      "\n"
	      "Show this network namespace's broker: id, cluster id, listener,\n"
	      "configuration generation and the peers with their state.\n"
	      "Unset values print as '-' (null with --json).\n", f);
}

static void set_usage(FILE *f)
{
	fputs("Usage: krepctl broker set [id ID] [cluster NAME] [listen ENDPOINT]\n"
	      "                          [peers ID@ENDPOINT[,ID@ENDPOINT...] | peers none]\n"
	      "                          [kafka-listen ENDPOINT|none]\n"
	      "                          [kafka-advertised HOST:PORT|none]\n"
	      "                          [secret-file PATH|none]\n"
	      "                          [log-dir PATH|none]\n"
	      "\n"
	      "Change this network namespace's broker. Give at least one keyword;\n"
	      "the change applies completely or not at all. Needs CAP_NET_ADMIN.\n"
	      "\n"
	      "  id ID            broker id, 0..2147483647\n"
	      "  cluster NAME     cluster id, 1..64 characters of [A-Za-z0-9_-]\n"
	      "  listen ENDPOINT  where the broker accepts connections from peers\n"
	      "  peers LIST       replaces the whole peer list; peer ids are unique\n"
	      "                   and differ from the broker's; 'none' clears it\n"
	      "  kafka-listen ENDPOINT\n"
	      "                   where Kafka clients connect (kcat, librdkafka,\n"
	      "                   kafka-python, KafkaJS); 'none' closes it\n"
	      "  kafka-advertised HOST:PORT\n"
	      "                   what Metadata tells clients for this broker\n"
	      "                   (default: the kafka-listen address); needed\n"
	      "                   when kafka-listen is a wildcard address\n"
	      "  secret-file PATH the cluster secret (16..64 bytes; the file must\n"
	      "                   be private: chmod 600): brokers prove it to each\n"
	      "                   other in HELLO; every broker needs the same one.\n"
	      "                   Never shown back; 'none' removes it\n"
	      "  log-dir PATH     keep the logs in PATH, in Kafka's on-disk layout\n"
	      "                   (segments, indexes, checkpoints), and recover\n"
	      "                   them from it when topics are created; only\n"
	      "                   while the broker has no topics, and after its id\n"
	      "                   is set. krepctl opens PATH and hands the kernel\n"
	      "                   the open directory. 'none': logs in memory only\n"
	      "\n"
	      "ENDPOINT is A.B.C.D:PORT or [IPV6-ADDRESS]:PORT, PORT 1..65535.\n"
	      "Values are checked by the kernel, which says why it refuses one.\n",
	      f);
}

static int show_run(struct krepctl *ctl, int argc, char **argv);
static int set_run(struct krepctl *ctl, int argc, char **argv);

static const struct krepctl_cmd broker_cmds[] = {
	{ "show", show_run, show_usage, "show the broker (default)" },
	{ "set", set_run, set_usage, "change id, cluster, listener or peers" },
	{ NULL }
};

void krepctl_broker_usage(FILE *f)
{
	fputs("Usage: krepctl [--json] broker [show]\n"
	      "       krepctl broker set [id ID] [cluster NAME] [listen ENDPOINT]\n"
	      "                          [peers ID@ENDPOINT[,...] | peers none]\n"
	      "\n"
	      "Commands:\n", f);
	krepctl_list_cmds(f, broker_cmds);
	fputs("\nRun 'krepctl broker COMMAND --help' for details.\n", f);
}

/* ---- broker show ------------------------------------------------------ */

static struct nla_policy broker_policy[KREP_A_MAX + 1] = {
	[KREP_A_BROKER_ID]	= { .type = NLA_U32 },
	[KREP_A_CLUSTER_ID]	= { .type = NLA_STRING },
	[KREP_A_LISTEN]		= { .type = NLA_NESTED },
	[KREP_A_PEERS]		= { .type = NLA_NESTED },
	[KREP_A_GENERATION]	= { .type = NLA_U32 },
	[KREP_A_KAFKA_LISTEN]	= { .type = NLA_NESTED },
	[KREP_A_KAFKA_ADVERTISED] = { .type = NLA_STRING },
	[KREP_A_AUTH]		= { .type = NLA_U8 },
	[KREP_A_LOG_DIR]	= { .type = NLA_STRING },
};

static struct nla_policy peer_policy[KREP_A_PEER_MAX + 1] = {
	[KREP_A_PEER_ID]	= { .type = NLA_U32 },
	[KREP_A_PEER_EP]	= { .type = NLA_NESTED },
	[KREP_A_PEER_STATE]	= { .type = NLA_U8 },
};

static void broker_info_free(struct broker_info *bi)
{
	free(bi->cluster);
	free(bi->kafka_advertised);
	free(bi->log_dir);
	free(bi->peers);
	memset(bi, 0, sizeof(*bi));
}

static int peer_get(struct nlattr *attr, struct peer_info *p)
{
	struct nlattr *tb[KREP_A_PEER_MAX + 1];

	memset(p, 0, sizeof(*p));
	p->state = -1;
	if (nla_parse_nested(tb, KREP_A_PEER_MAX, attr, peer_policy))
		return -EINVAL;
	if (tb[KREP_A_PEER_ID]) {
		p->has_id = true;
		p->id = nla_get_u32(tb[KREP_A_PEER_ID]);
	}
	if (tb[KREP_A_PEER_EP]) {
		if (krep_ep_get(tb[KREP_A_PEER_EP], &p->ep))
			return -EINVAL;
		p->has_ep = true;
	}
	if (tb[KREP_A_PEER_STATE])
		p->state = nla_get_u8(tb[KREP_A_PEER_STATE]);
	return 0;
}

static int peers_get(struct nlattr *list, struct broker_info *bi)
{
	struct nlattr *a;
	size_t n = 0;
	int rem;

	nla_for_each_nested(a, list, rem)
		n += nla_type(a) == KREP_A_PEER;
	if (!n)
		return 0;
	bi->peers = calloc(n, sizeof(*bi->peers));
	if (!bi->peers)
		return -ENOMEM;
	nla_for_each_nested(a, list, rem) {
		if (nla_type(a) != KREP_A_PEER)
			continue;
		if (peer_get(a, &bi->peers[bi->npeers]))
			return -EINVAL;
		bi->npeers++;
	}
	return 0;
}

static int broker_info_get(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[KREP_A_MAX + 1];
	struct broker_info *bi = arg;
	int err;

	broker_info_free(bi);
	bi->auth = -1;
	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, KREP_A_MAX, broker_policy))
		goto malformed;
	if (tb[KREP_A_BROKER_ID]) {
		bi->has_id = true;
		bi->id = nla_get_u32(tb[KREP_A_BROKER_ID]);
	}
	if (tb[KREP_A_CLUSTER_ID]) {
		bi->cluster = strdup(nla_get_string(tb[KREP_A_CLUSTER_ID]));
		if (!bi->cluster)
			goto nomem;
	}
	if (tb[KREP_A_LISTEN]) {
		if (krep_ep_get(tb[KREP_A_LISTEN], &bi->listen))
			goto malformed;
		bi->has_listen = true;
	}
	if (tb[KREP_A_KAFKA_LISTEN]) {
		if (krep_ep_get(tb[KREP_A_KAFKA_LISTEN], &bi->kafka_listen))
			goto malformed;
		bi->has_kafka_listen = true;
	}
	if (tb[KREP_A_KAFKA_ADVERTISED]) {
		bi->kafka_advertised =
			strdup(nla_get_string(tb[KREP_A_KAFKA_ADVERTISED]));
		if (!bi->kafka_advertised)
			goto nomem;
	}
	if (tb[KREP_A_AUTH])
		bi->auth = nla_get_u8(tb[KREP_A_AUTH]);
	if (tb[KREP_A_LOG_DIR]) {
		bi->log_dir = strdup(nla_get_string(tb[KREP_A_LOG_DIR]));
		if (!bi->log_dir)
			goto nomem;
	}
	if (tb[KREP_A_GENERATION]) {
		bi->has_gen = true;
		bi->gen = nla_get_u32(tb[KREP_A_GENERATION]);
	}
	if (tb[KREP_A_PEERS]) {
		err = peers_get(tb[KREP_A_PEERS], bi);
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
	fprintf(stderr, "%s: malformed BROKER_GET reply from the kernel\n",
		krep_prog);
	return -EPROTO;
}

/* "configured", ..., or "unknown(N)" for a state this tool does not know. */
static const char *state_str(int state, char *buf, size_t size)
{
	const char *name;

	if (state < 0)
		return NULL;
	name = krep_peer_state_name(state);
	if (name)
		return name;
	snprintf(buf, size, "unknown(%d)", state);
	return buf;
}

static void show_text(FILE *f, const struct broker_info *bi)
{
	char ep[KREP_EP_STRLEN], st[24];
	const struct peer_info *p;
	const char *s;
	size_t i;

	if (bi->has_id)
		fprintf(f, "broker %u", bi->id);
	else
		fprintf(f, "broker -");
	fprintf(f, "  cluster %s", bi->cluster ? bi->cluster : "-");
	if (bi->has_gen)
		fprintf(f, "  generation %u\n", bi->gen);
	else
		fprintf(f, "  generation -\n");
	fprintf(f, "listen %s\n", bi->has_listen ?
		krep_ep_format(&bi->listen, ep, sizeof(ep)) : "-");
	fprintf(f, "kafka %s  advertised %s\n", bi->has_kafka_listen ?
		krep_ep_format(&bi->kafka_listen, ep, sizeof(ep)) : "-",
		bi->kafka_advertised ? bi->kafka_advertised : "-");
	fprintf(f, "cluster secret %s\n", bi->auth < 0 ? "-" :
		bi->auth ? "set" : "none");
	fprintf(f, "log dir %s\n", bi->log_dir ? bi->log_dir : "-");
	for (i = 0; i < bi->npeers; i++) {
		p = &bi->peers[i];
		if (p->has_id)
			fprintf(f, "peer %u", p->id);
		else
			fprintf(f, "peer -");
		s = state_str(p->state, st, sizeof(st));
		fprintf(f, "  %s  %s\n",
			p->has_ep ? krep_ep_format(&p->ep, ep, sizeof(ep)) : "-",
			s ? s : "-");
	}
}

static void json_ep(struct json *j, bool has, const struct krep_ep *e)
{
	char ep[KREP_EP_STRLEN];

	if (has && e->family != AF_UNSPEC)
		json_str(j, krep_ep_format(e, ep, sizeof(ep)));
	else
		json_null(j);
}

static void show_json(FILE *f, const struct broker_info *bi)
{
	const struct peer_info *p;
	const char *s;
	struct json j;
	char st[24];
	size_t i;

	json_init(&j, f);
	json_obj_begin(&j);
	json_key(&j, "broker_id");
	if (bi->has_id)
		json_u64(&j, bi->id);
	else
		json_null(&j);
	json_key(&j, "cluster_id");
	if (bi->cluster)
		json_str(&j, bi->cluster);
	else
		json_null(&j);
	json_key(&j, "listen");
	json_ep(&j, bi->has_listen, &bi->listen);
	json_key(&j, "kafka_listen");
	json_ep(&j, bi->has_kafka_listen, &bi->kafka_listen);
	json_key(&j, "kafka_advertised");
	if (bi->kafka_advertised)
		json_str(&j, bi->kafka_advertised);
	else
		json_null(&j);
	json_key(&j, "cluster_secret");
	if (bi->auth < 0)
		json_null(&j);
	else
		json_bool(&j, bi->auth);
	json_key(&j, "log_dir");
	if (bi->log_dir)
		json_str(&j, bi->log_dir);
	else
		json_null(&j);
	json_key(&j, "generation");
	if (bi->has_gen)
		json_u64(&j, bi->gen);
	else
		json_null(&j);
	json_key(&j, "peers");
	json_arr_begin(&j);
	for (i = 0; i < bi->npeers; i++) {
		p = &bi->peers[i];
		json_obj_begin(&j);
		json_key(&j, "id");
		if (p->has_id)
			json_u64(&j, p->id);
		else
			json_null(&j);
		json_key(&j, "addr");
		json_ep(&j, p->has_ep, &p->ep);
		json_key(&j, "state");
		s = state_str(p->state, st, sizeof(st));
		if (s)
			json_str(&j, s);
		else
			json_null(&j);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	fputc('\n', f);
}

/* Decode a BROKER_GET reply and print it as "broker show" does. */
int krep_broker_reply_print(struct nl_msg *reply, bool json, FILE *f)
{
	struct broker_info bi = { 0 };
	int err;

	err = broker_info_get(reply, &bi);
	if (!err) {
		if (json)
			show_json(f, &bi);
		else
			show_text(f, &bi);
	}
	broker_info_free(&bi);
	return err;
}

static int show_run(struct krepctl *ctl, int argc, char **argv)
{
	struct broker_info bi = { 0 };
	struct nl_msg *msg;
	int err;

	if (argc > 1) {
		if (krepctl_is_help(argv[1])) {
			show_usage(stdout);
			return KREP_EXIT_OK;
		}
		return krepctl_usage_error(show_usage,
					   "broker show: unexpected argument '%s'%s",
					   argv[1], argv[1][0] == '-' ?
					   " (options go before the command)" : "");
	}
	if (krepctl_connect(ctl))
		return KREP_EXIT_ERR;
	msg = krep_genl_msg_new(ctl->gl.family, KREP_CMD_BROKER_GET, 0, 0);
	if (!msg) {
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return KREP_EXIT_ERR;
	}
	err = krep_genl_request(&ctl->gl, msg, broker_info_get, &bi);
	nlmsg_free(msg);
	if (!err) {
		if (ctl->json)
			show_json(stdout, &bi);
		else
			show_text(stdout, &bi);
	}
	broker_info_free(&bi);
	return err ? KREP_EXIT_ERR : KREP_EXIT_OK;
}

/* ---- broker set ------------------------------------------------------- */

void krep_broker_set_free(struct krep_broker_set *set)
{
	krep_peers_free(&set->peers);
	explicit_bzero(set->secret, sizeof(set->secret));
	memset(set, 0, sizeof(*set));
}

static int set_u32(const char *kw, const char *val, uint32_t *v)
{
	int err = krep_u32_parse(val, v);

	if (err == -ERANGE)
		krepctl_usage_error(set_usage,
				    "broker set: %s '%s' does not fit in 32 bits",
				    kw, val);
	else if (err)
		krepctl_usage_error(set_usage,
				    "broker set: %s '%s' is not a number",
				    kw, val);
	return err;
}

static int set_ep(const char *kw, const char *val, struct krep_ep *ep)
{
	const char *why;
	int err;

	err = krep_ep_parse(val, ep, &why);
	if (err)
		krepctl_usage_error(set_usage, "broker set: %s '%s': %s",
				    kw, val, why);
	return err;
}

/* the cluster secret from a private file, or 'none' to remove it */
static int set_secret(const char *val, struct krep_broker_set *set)
{
	char why[512];
	int err;

	if (!strcmp(val, "none")) {
		set->secret_len = 0;
		return 0;
	}
	err = krep_secret_file_read(val, set->secret, KREP_SECRET_MIN,
				    KREP_SECRET_MAX, &set->secret_len, why,
				    sizeof(why));
	if (err)
		krepctl_usage_error(set_usage, "broker set: %s", why);
	return err;
}

static int set_peers(const char *val, struct krep_peers *peers)
{
	char why[256];
	int err;

	err = krep_peers_parse(val, peers, why, sizeof(why));
	if (err)
		krepctl_usage_error(set_usage, "broker set: peers: %s", why);
	return err;
}

/*
 * Parse "[id N] [cluster ID] [listen EP] [peers LIST|none]" (argv[0] is
 * "set"). Returns 0, 1 if help was asked for, or -errno after printing
 * a usage error.
 */
int krep_broker_set_parse(int argc, char **argv, struct krep_broker_set *set)
{
	const char *kw, *val;
	bool given = false;
	int i, err;

	memset(set, 0, sizeof(*set));
	for (i = 1; i < argc; i += 2) {
		kw = argv[i];
		if (krepctl_is_help(kw)) {
			krep_broker_set_free(set);
			return 1;
		}
		if (strcmp(kw, "id") && strcmp(kw, "cluster") &&
		    strcmp(kw, "listen") && strcmp(kw, "peers") &&
		    strcmp(kw, "kafka-listen") &&
		    strcmp(kw, "kafka-advertised") &&
		    strcmp(kw, "secret-file") && strcmp(kw, "log-dir")) {
			err = -EINVAL;
			krepctl_usage_error(set_usage,
					    "broker set: unknown keyword '%s'",
					    kw);
			goto fail;
		}
		if (i + 1 >= argc) {
			err = -EINVAL;
			krepctl_usage_error(set_usage,
					    "broker set: '%s' needs a value",
					    kw);
			goto fail;
		}
		val = argv[i + 1];
		if ((!strcmp(kw, "id") && set->has_id) ||
		    (!strcmp(kw, "cluster") && set->cluster) ||
		    (!strcmp(kw, "listen") && set->has_listen) ||
		    (!strcmp(kw, "peers") && set->has_peers) ||
		    (!strcmp(kw, "kafka-listen") && set->has_kafka_listen) ||
		    (!strcmp(kw, "kafka-advertised") &&
		     set->kafka_advertised) ||
		    (!strcmp(kw, "secret-file") && set->has_secret) ||
		    (!strcmp(kw, "log-dir") && set->log_dir)) {
			err = -EINVAL;
			krepctl_usage_error(set_usage,
					    "broker set: '%s' given twice", kw);
			goto fail;
		}
		if (!strcmp(kw, "id")) {
			err = set_u32(kw, val, &set->id);
			set->has_id = !err;
		} else if (!strcmp(kw, "cluster")) {
			err = 0;
			set->cluster = val;
		} else if (!strcmp(kw, "listen")) {
			err = set_ep(kw, val, &set->listen);
			set->has_listen = !err;
		} else if (!strcmp(kw, "kafka-listen")) {
			err = 0;
			if (strcmp(val, "none"))
				err = set_ep(kw, val, &set->kafka_listen);
			else
				set->kafka_listen.family = AF_UNSPEC;
			set->has_kafka_listen = !err;
		} else if (!strcmp(kw, "kafka-advertised")) {
			err = 0;
			set->kafka_advertised = strcmp(val, "none") ? val : "";
		} else if (!strcmp(kw, "secret-file")) {
			err = set_secret(val, set);
			set->has_secret = !err;
		} else if (!strcmp(kw, "log-dir")) {
			err = 0;
			set->log_dir = val;
		} else {
			err = set_peers(val, &set->peers);
			set->has_peers = !err;
		}
		if (err)
			goto fail;
		given = true;
	}
	if (!given) {
		krepctl_usage_error(set_usage,
				    "broker set: nothing to change (give at least one keyword)");
		return -EINVAL;
	}
	return 0;
fail:
	krep_broker_set_free(set);
	return err;
}

/* the Kafka listener, or an empty nest for none */
static int kafka_listen_put(struct nl_msg *msg, const struct krep_ep *ep)
{
	struct nlattr *nest;

	if (ep->family != AF_UNSPEC)
		return krep_ep_put(msg, KREP_A_KAFKA_LISTEN, ep);
	nest = nla_nest_start(msg, KREP_A_KAFKA_LISTEN);
	if (!nest)
		return -ENOMEM;
	nla_nest_end(msg, nest);
	return 0;
}

/* Build the BROKER_SET request for @set; NULL if out of memory. */
struct nl_msg *krep_broker_set_msg(int family, const struct krep_broker_set *set)
{
	size_t size = 256;
	struct nl_msg *msg;

	if (set->cluster)
		size += nla_total_size(strlen(set->cluster) + 1);
	if (set->kafka_advertised)
		size += nla_total_size(strlen(set->kafka_advertised) + 1);
	if (set->has_peers)
		size += krep_peers_msg_size(&set->peers);
	msg = krep_genl_msg_new(family, KREP_CMD_BROKER_SET, 0, size);
	if (!msg)
		return NULL;
	if ((set->has_id && nla_put_u32(msg, KREP_A_BROKER_ID, set->id)) ||
	    (set->cluster &&
	     nla_put_string(msg, KREP_A_CLUSTER_ID, set->cluster)) ||
	    (set->has_listen &&
	     krep_ep_put(msg, KREP_A_LISTEN, &set->listen)) ||
	    (set->has_peers &&
	     krep_peers_put(msg, KREP_A_PEERS, &set->peers)) ||
	    (set->has_kafka_listen &&
	     kafka_listen_put(msg, &set->kafka_listen)) ||
	    (set->kafka_advertised &&
	     nla_put_string(msg, KREP_A_KAFKA_ADVERTISED,
			    set->kafka_advertised)) ||
	    (set->has_secret &&
	     nla_put(msg, KREP_A_SECRET, set->secret_len, set->secret)) ||
	    (set->log_dir &&
	     nla_put_s32(msg, KREP_A_LOG_DIR_FD, set->log_dir_fd))) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

static int set_run(struct krepctl *ctl, int argc, char **argv)
{
	struct krep_broker_set set;
	struct nl_msg *msg;
	int err;

	err = krep_broker_set_parse(argc, argv, &set);
	if (err > 0) {
		set_usage(stdout);
		return KREP_EXIT_OK;
	}
	if (err)
		return KREP_EXIT_USAGE;
	/* the kernel gets the open directory, never a path to resolve */
	set.log_dir_fd = -1;
	if (set.log_dir && strcmp(set.log_dir, "none")) {
		set.log_dir_fd = open(set.log_dir,
				      O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (set.log_dir_fd < 0) {
			err = -errno;
			fprintf(stderr, "%s: broker set: log-dir %s: %s\n",
				krep_prog, set.log_dir, strerror(errno));
			goto out;
		}
	}
	err = krepctl_connect(ctl);
	if (err)
		goto out;
	msg = krep_broker_set_msg(ctl->gl.family, &set);
	if (!msg) {
		fprintf(stderr, "%s: cannot build request: %s\n", krep_prog,
			strerror(ENOMEM));
		err = -ENOMEM;
		goto out;
	}
	err = krep_genl_request(&ctl->gl, msg, NULL, NULL);
	nlmsg_free(msg);
out:
	if (set.log_dir_fd >= 0)
		close(set.log_dir_fd);
	krep_broker_set_free(&set);
	return err ? KREP_EXIT_ERR : KREP_EXIT_OK;
}

/* ---- dispatch --------------------------------------------------------- */

int krepctl_broker_run(struct krepctl *ctl, int argc, char **argv)
{
	return krepctl_dispatch(ctl, "broker", broker_cmds, "show",
				krepctl_broker_usage, argc, argv);
}
