// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl's command plumbing, shared by every command file: dispatch from
 * a command table, help and usage errors, and connecting to the kernel.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <linux/krep.h>
#include <netlink/genl/ctrl.h>

#include "attrs.h"
#include "json.h"
#include "krepctl.h"
#include "snap.h"
#include "suggest.h"

bool krepctl_json_errors;

/* The command being run ("topic create"), for "Try 'krepctl ... --help'". */
static char cmd_path[128];

void krepctl_cmd_path_reset(void)
{
	cmd_path[0] = '\0';
}

void krepctl_list_cmds(FILE *f, const struct krepctl_cmd *list)
{
	for (; list->name; list++)
		fprintf(f, "  %-15s %s\n", list->name, list->summary);
}

bool krepctl_is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help") ||
	       !strcmp(arg, "help");
}

/*
 * Print "krepctl: <message>" and "Try 'krepctl COMMAND --help'." to
 * stderr, and with --json the error as an object on stdout; returns
 * KREP_EXIT_USAGE. @usage_fn is what --help would print (unused: one
 * line says what is wrong, --help says the rest).
 */
int krepctl_usage_error(void (*usage_fn)(FILE *f), const char *fmt, ...)
{
	char msg[512], help[160];
	struct json j;
	va_list ap;

	(void)usage_fn;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(help, sizeof(help), "%s%s%s --help", krep_prog,
		 cmd_path[0] ? " " : "", cmd_path);
	fprintf(stderr, "%s: %s\nTry '%s'.\n", krep_prog, msg, help);
	if (!krepctl_json_errors)
		return KREP_EXIT_USAGE;
	json_init(&j, stdout);
	json_obj_begin(&j);
	json_key(&j, "error");
	json_null(&j);
	json_key(&j, "code");
	json_null(&j);
	json_key(&j, "errno");
	json_str(&j, "EINVAL");
	json_key(&j, "message");
	json_str(&j, msg);
	json_key(&j, "usage");
	json_str(&j, help);
	json_obj_end(&j);
	fputc('\n', stdout);
	return KREP_EXIT_USAGE;
}

const char *krepctl_did_you_mean(const char *word, const char *const *cands,
				 char *buf, size_t size)
{
	const char *s = krep_suggest(word, cands);

	if (!s)
		return "";
	snprintf(buf, size, "; did you mean '%s'?", s);
	return buf;
}

/*
 * Run the subcommand named by argv[1] from @list (argv[0] names the
 * group, @parent, or is a placeholder at the top level). With no
 * subcommand, run @dflt if there is one.
 */
int krepctl_dispatch(struct krepctl *ctl, const char *parent,
		     const struct krepctl_cmd *list, const char *dflt,
		     void (*usage_fn)(FILE *f), int argc, char **argv)
{
	char *dflt_argv[] = { (char *)dflt, NULL };
	const char *names[32], *hint;
	const struct krepctl_cmd *c;
	const char *name;
	char buf[96];
	size_t n, k = 0;

	if (argc < 2) {
		if (!dflt)
			return krepctl_usage_error(usage_fn, "%s%smissing command",
						   parent ? parent : "",
						   parent ? ": " : "");
		argc = 1;
		argv = dflt_argv;
		name = dflt;
	} else {
		argc--;
		argv++;
		name = argv[0];
	}
	for (c = list; c->name; c++) {
		if (strcmp(c->name, name))
			continue;
		n = strlen(cmd_path);
		snprintf(cmd_path + n, sizeof(cmd_path) - n, "%s%s",
			 n ? " " : "", c->name);
		return c->run(ctl, argc, argv);
	}
	if (krepctl_is_help(name)) {
		usage_fn(stdout);
		return KREP_EXIT_OK;
	}
	for (c = list; c->name && k < 31; c++)
		names[k++] = c->name;
	names[k] = NULL;
	hint = krepctl_did_you_mean(name, names, buf, sizeof(buf));
	return krepctl_usage_error(usage_fn, "%s%sunknown command '%s'%s",
				   parent ? parent : "", parent ? ": " : "",
				   name, hint);
}

/* "ERANGE" for -ERANGE, or the number when glibc has no name for it. */
static const char *errno_name(int err, char *buf, size_t size)
{
	const char *name = strerrorname_np(err < 0 ? -err : err);

	if (name)
		return name;
	snprintf(buf, size, "%d", err < 0 ? -err : err);
	return buf;
}

/* Who leads the partition a NOT_LEADER_OR_FOLLOWER request named. */
struct leader_hint {
	bool not_leader;	/* for a NOT_LEADER_OR_FOLLOWER */
	bool has_leader;
	uint32_t leader;
	char addr[64];		/* its replication listener, or "" */
	char text[512];		/* the sentence, or "" */
};

static void error_json(int32_t kerr, int err, const char *msg, size_t len,
		       const char *attr, const char *allowed,
		       const struct leader_hint *lh)
{
	const char *kname = NULL;
	struct json j;
	char num[16];

	if (kerr != KREP_NO_KERR)
		kname = krep_kafka_error_name(kerr);
	json_init(&j, stdout);
	json_obj_begin(&j);
	json_key(&j, "error");
	if (kname)
		json_str(&j, kname);
	else
		json_null(&j);
	json_key(&j, "code");
	if (kerr != KREP_NO_KERR)
		json_s64(&j, kerr);
	else
		json_null(&j);
	json_key(&j, "errno");
	json_str(&j, errno_name(err, num, sizeof(num)));
	json_key(&j, "message");
	json_strn(&j, msg, len);
	if (attr) {
		json_key(&j, "attribute");
		json_str(&j, attr);
	}
	if (allowed && allowed[0]) {
		json_key(&j, "allowed");
		json_str(&j, allowed);
	}
	if (lh && lh->text[0] && lh->not_leader) {
		json_key(&j, "leader");
		if (lh->has_leader)
			json_u64(&j, lh->leader);
		else
			json_null(&j);
		json_key(&j, "leader_address");
		if (lh->addr[0])
			json_str(&j, lh->addr);
		else
			json_null(&j);
	}
	if (lh && lh->text[0]) {
		json_key(&j, "hint");
		json_str(&j, lh->text);
	}
	json_obj_end(&j);
	fputc('\n', stdout);
}

/* The topic and partition of request @req, if it names both. */
static bool req_partition(struct nl_msg *req, char *topic, size_t size,
			  uint32_t *partition)
{
	struct nlattr *tb[KREP_A_MAX + 1] = { NULL };
	struct nlattr *a;
	int rem;

	nla_for_each_attr(a, genlmsg_attrdata(nlmsg_data(nlmsg_hdr(req)), 0),
			  genlmsg_attrlen(nlmsg_data(nlmsg_hdr(req)), 0), rem)
		if (nla_type(a) <= KREP_A_MAX)
			tb[nla_type(a)] = a;
	if (!tb[KREP_A_TOPIC] || !tb[KREP_A_PARTITION] ||
	    nla_len(tb[KREP_A_PARTITION]) != 4)
		return false;
	snprintf(topic, size, "%.*s", nla_len(tb[KREP_A_TOPIC]),
		 (const char *)nla_data(tb[KREP_A_TOPIC]));
	*partition = nla_get_u32(tb[KREP_A_PARTITION]);
	return true;
}

/*
 * "partition orders-1 is led by broker 2 at 10.0.0.2:9093": what this
 * broker knows of the leader (its replica's view, and its peer list).
 */
static void leader_hint(struct krepctl *ctl, struct nl_msg *req,
			struct leader_hint *lh)
{
	const struct krep_snap_part *p = NULL;
	struct krep_snap s = { 0 };
	char topic[256];
	uint32_t part;
	size_t i;
	int err;

	if (!req_partition(req, topic, sizeof(topic), &part))
		return;
	lh->not_leader = true;
	ctl->gl.quiet = true;
	err = krep_snap_take(&ctl->gl, topic, &s);
	ctl->gl.quiet = false;
	if (err)
		return;
	for (i = 0; i < s.nparts; i++)
		if (!strcmp(s.parts[i].topic, topic) &&
		    s.parts[i].partition == part)
			p = &s.parts[i];
	if (!p) {
		snprintf(lh->text, sizeof(lh->text),
			 "partition %s-%u has no replica on this broker; ask a broker that hosts it",
			 topic, part);
		if (s.has_broker_id)
			snprintf(lh->text, sizeof(lh->text),
				 "partition %s-%u has no replica on this broker (broker %u); ask a broker that hosts it",
				 topic, part, s.broker_id);
		goto out;
	}
	if (!p->has_leader || p->leader == KREP_NO_LEADER) {
		snprintf(lh->text, sizeof(lh->text),
			 "partition %s-%u has no leader now (offline)", topic,
			 part);
		goto out;
	}
	lh->has_leader = true;
	lh->leader = p->leader;
	for (i = 0; i < s.npeers; i++)
		if (s.peers[i].id == p->leader && s.peers[i].has_ep)
			krep_ep_format(&s.peers[i].ep, lh->addr,
				       sizeof(lh->addr));
	if (lh->addr[0])
		snprintf(lh->text, sizeof(lh->text),
			 "partition %s-%u is led by broker %u at %s", topic,
			 part, p->leader, lh->addr);
	else
		snprintf(lh->text, sizeof(lh->text),
			 "partition %s-%u is led by broker %u", topic, part,
			 p->leader);
out:
	krep_snap_free(&s);
}

int krepctl_snap(struct krepctl *ctl, const char *topic, struct krep_snap *s)
{
	int err;

	ctl->gl.quiet = true;
	err = krep_snap_take(&ctl->gl, topic, s);
	ctl->gl.quiet = false;
	if (err && ctl->gl.st.err)
		krepctl_kernel_error(ctl, NULL);
	return err;
}

void krepctl_kernel_error(struct krepctl *ctl, struct nl_msg *req)
{
	struct krep_genl_status st = ctl->gl.st;
	struct leader_hint lh = { 0 };
	const char *msg, *own = ctl->gl.st.msg;
	char path[256], allowed[64];
	bool inside;
	int len;

	krep_extack_infer(&st.ea, req);	/* a policy refusal's Kafka code */
	/* the hint's requests reuse ctl->gl.st: keep the error's own */
	inside = st.ea.msg >= own && st.ea.msg < own + sizeof(st.msg);
	if (inside)
		st.ea.msg = st.msg + (st.ea.msg - own);
	if (req && st.ea.has_kerr &&
	    st.ea.kerr == KREP_KERR_NOT_LEADER_OR_FOLLOWER)
		leader_hint(ctl, req, &lh);
	ctl->gl.st = st;
	if (inside)
		ctl->gl.st.ea.msg = ctl->gl.st.msg + (st.ea.msg - st.msg);
	krep_extack_print(stderr, st.err, &st.ea, req);
	if (lh.text[0])
		fprintf(stderr, "%s: %s\n", krep_prog, lh.text);
	if (!ctl->json)
		return;
	msg = st.ea.msg;
	len = st.ea.msg_len;
	if (!len) {
		msg = strerror(-st.err);
		len = strlen(msg);
	}
	krep_extack_allowed(&st.ea, allowed, sizeof(allowed));
	error_json(st.ea.has_kerr ? st.ea.kerr : KREP_NO_KERR, st.err, msg,
		   len, krep_extack_attr_path(&st.ea, req, path,
					      sizeof(path)) ? NULL : path,
		   allowed, &lh);
}

void krepctl_hint_error(struct krepctl *ctl, int err, const char *msg,
			const char *hint)
{
	struct leader_hint lh = { 0 };

	fprintf(stderr, "%s: %s\n%s: hint: %s\n", krep_prog, msg, krep_prog,
		hint);
	if (!ctl->json)
		return;
	/* a hint without a leader: error_json prints "hint" only */
	snprintf(lh.text, sizeof(lh.text), "%s", hint);
	error_json(KREP_NO_KERR, err, msg, strlen(msg), NULL, NULL, &lh);
}

void krepctl_error(struct krepctl *ctl, int32_t kerr, int err,
		   const char *fmt, ...)
{
	const char *kname = NULL;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (kerr != KREP_NO_KERR)
		kname = krep_kafka_error_name(kerr);
	fprintf(stderr, "%s: %s: %s", krep_prog, strerror(err < 0 ? -err : err),
		msg);
	if (kname)
		fprintf(stderr, " [%s]", kname);
	fputc('\n', stderr);
	if (ctl->json)
		error_json(kerr, err, msg, strlen(msg), NULL, NULL, NULL);
}

int krepctl_request(struct krepctl *ctl, struct nl_msg *req,
		    krep_genl_reply_fn fn, void *arg)
{
	int err;

	ctl->gl.quiet = true;
	err = krep_genl_request(&ctl->gl, req, fn, arg);
	ctl->gl.quiet = false;
	if (err && ctl->gl.st.err)
		krepctl_kernel_error(ctl, req);
	return err;
}

struct nl_msg *krepctl_part_msg(int family, uint8_t cmd, const char *topic,
				uint32_t partition, size_t payload)
{
	struct nl_msg *msg;

	msg = krep_genl_msg_new(family, cmd, 0,
				payload + nla_total_size(strlen(topic) + 1) +
				nla_total_size(4));
	if (!msg)
		return NULL;
	if (nla_put_string(msg, KREP_A_TOPIC, topic) ||
	    nla_put_u32(msg, KREP_A_PARTITION, partition)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

int krepctl_parse_u32(void (*usage_fn)(FILE *f), const char *cmd,
		      const char *kw, const char *val, uint32_t *v)
{
	int err = krep_u32_parse(val, v);

	if (err == -ERANGE)
		krepctl_usage_error(usage_fn, "%s: %s '%s' does not fit in 32 bits",
				    cmd, kw, val);
	else if (err)
		krepctl_usage_error(usage_fn, "%s: %s '%s' is not a number",
				    cmd, kw, val);
	return err;
}

int krepctl_parse_s64(void (*usage_fn)(FILE *f), const char *cmd,
		      const char *kw, const char *val, int64_t *v)
{
	int err = krep_s64_parse(val, v);

	if (err == -ERANGE)
		krepctl_usage_error(usage_fn, "%s: %s '%s' does not fit in 64 bits",
				    cmd, kw, val);
	else if (err)
		krepctl_usage_error(usage_fn, "%s: %s '%s' is not a number",
				    cmd, kw, val);
	return err;
}

int krepctl_parse_producer(void (*usage_fn)(FILE *f), const char *cmd,
			   const char *val, uint64_t *pid, uint16_t *epoch)
{
	const char *colon = strchr(val, ':');
	char buf[32];
	uint32_t e;
	size_t n;

	if (!colon)
		goto bad;
	n = colon - val;
	if (n >= sizeof(buf))
		goto bad;
	memcpy(buf, val, n);
	buf[n] = '\0';
	if (krep_u64_parse(buf, pid) || *pid > INT64_MAX) {
		krepctl_usage_error(usage_fn,
				    "%s: producer id '%s' is not a number in 0..%lld",
				    cmd, buf, (long long)INT64_MAX);
		return -EINVAL;
	}
	if (krep_u32_parse(colon + 1, &e) || e > UINT16_MAX) {
		krepctl_usage_error(usage_fn,
				    "%s: producer epoch '%s' is not a number in 0..65535",
				    cmd, colon + 1);
		return -EINVAL;
	}
	*epoch = e;
	return 0;
bad:
	krepctl_usage_error(usage_fn, "%s: '%s' is not PRODUCER_ID:EPOCH", cmd,
			    val);
	return -EINVAL;
}

/*
 * Enter --netns (if given) and open the krep family. Called by commands
 * once their arguments are known to be good. Returns 0 or KREP_EXIT_ERR.
 */
int krepctl_connect(struct krepctl *ctl)
{
	int id, err;

	if (ctl->gl.sk)
		return 0;
	if (ctl->netns) {
		err = krep_netns_enter(ctl->netns);
		if (err) {
			/* krep_netns_enter() said why on stderr */
			if (ctl->json)
				error_json(KREP_NO_KERR, err,
					   "cannot enter the network namespace",
					   strlen("cannot enter the network namespace"),
					   NULL, NULL, NULL);
			return KREP_EXIT_ERR;
		}
	}
	err = krep_genl_connect(&ctl->gl);
	if (err) {
		if (ctl->json)
			error_json(KREP_NO_KERR, err,
				   "cannot open a generic netlink socket",
				   strlen("cannot open a generic netlink socket"),
				   NULL, NULL, NULL);
		return KREP_EXIT_ERR;
	}
	id = genl_ctrl_resolve(ctl->gl.sk, KREP_GENL_NAME);
	if (id >= 0) {
		ctl->gl.family = id;
		return 0;
	}
	krep_genl_close(&ctl->gl);
	if (id == -NLE_OBJ_NOTFOUND)
		krepctl_hint_error(ctl, -ENOENT,
				   "the krep module is not loaded (no generic netlink family 'krep')",
				   "load it: modprobe krep, or insmod kmod/krep.ko from the build tree, with its parameters (broker_id=...)");
	else
		krepctl_error(ctl, KREP_NO_KERR, -EIO,
			      "cannot resolve the generic netlink family '%s': %s",
			      KREP_GENL_NAME, nl_geterror(id));
	return KREP_EXIT_ERR;
}
