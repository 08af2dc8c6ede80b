// SPDX-License-Identifier: GPL-2.0
/*
 * Generic netlink client for the "krep" family.
 *
 * Sockets are opened with NETLINK_EXT_ACK and NETLINK_CAP_ACK: errors come
 * back as an nlmsgerr carrying only the request's header, followed by
 * NLMSGERR_ATTR_* TLVs (message, offending attribute, missing attribute,
 * and for protocol errors Kafka's code in the cookie as struct
 * krep_err_cookie), which krep_extack_parse() decodes and
 * krep_extack_print() prints as
 *
 *	<prog>: <strerror>: <message> (attribute peers.peer[0].ep.port)
 *	<prog>: <strerror>: <message> [OFFSET_OUT_OF_RANGE]
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netlink/genl/ctrl.h>
#include <netlink/socket.h>

#include <linux/krep.h>

#include "attrs.h"
#include "genl.h"

#define NETNS_RUN_DIR	"/run/netns"

const char *krep_prog = "krep";

/*
 * Move this process into the network namespace @name, as `ip netns exec`
 * does, so that sockets opened afterwards talk to that namespace's broker.
 */
int krep_netns_enter(const char *name)
{
	char path[PATH_MAX];
	int fd, err;

	if (!*name || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, "..") ||
	    snprintf(path, sizeof(path), NETNS_RUN_DIR "/%s", name) >=
	    (int)sizeof(path)) {
		fprintf(stderr, "%s: invalid network namespace name '%s'\n",
			krep_prog, name);
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		if (err == ENOENT)
			fprintf(stderr,
				"%s: network namespace '%s' does not exist (no %s)\n",
				krep_prog, name, path);
		else
			fprintf(stderr,
				"%s: cannot open network namespace '%s': %s: %s\n",
				krep_prog, name, path, strerror(err));
		return -err;
	}
	if (setns(fd, CLONE_NEWNET)) {
		err = errno;
		fprintf(stderr, "%s: cannot enter network namespace '%s': %s\n",
			krep_prog, name, strerror(err));
		close(fd);
		return -err;
	}
	close(fd);
	return 0;
}

static int sockopt_on(struct nl_sock *sk, int opt)
{
	int one = 1;

	if (setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, opt, &one,
		       sizeof(one)))
		return -errno;
	return 0;
}

/*
 * libnl leaves 32 KiB socket buffers (64 KiB once the kernel doubles
 * them): too small for a PRODUCE of a 64 KiB batch (netlink_sendmsg()
 * refuses a message larger than the send buffer) and for a FETCH reply
 * of that size followed by its ack (the ack is dropped when the reply
 * already fills the receive buffer, and recvmsg() then fails with
 * ENOBUFS, which libnl reports as "Out of memory"). Ask for more; the
 * *FORCE options pass net.core.[rw]mem_max with CAP_NET_ADMIN.
 */
#define KREP_SNDBUF	(2 << 20)
#define KREP_RCVBUF	(8 << 20)

static void buf_size(int fd, int force, int opt, int size)
{
	if (setsockopt(fd, SOL_SOCKET, force, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, opt, &size, sizeof(size));
}

static int resolve_family(struct krep_genl *gl)
{
	int id;

	id = genl_ctrl_resolve(gl->sk, KREP_GENL_NAME);
	if (id == -NLE_OBJ_NOTFOUND) {
		fprintf(stderr,
			"krep: module not loaded (generic netlink family '%s' not found)\n",
			KREP_GENL_NAME);
		return -ENOENT;
	}
	if (id < 0) {
		fprintf(stderr,
			"%s: cannot resolve generic netlink family '%s': %s\n",
			krep_prog, KREP_GENL_NAME, nl_geterror(id));
		return -EIO;
	}
	gl->family = id;
	return 0;
}

/*
 * Open a generic netlink socket in the current network namespace with
 * extended acks on. Prints why on failure.
 */
int krep_genl_connect(struct krep_genl *gl)
{
	int err;

	gl->family = -1;
	gl->quiet = false;
	gl->stop = NULL;
	memset(&gl->st, 0, sizeof(gl->st));
	gl->sk = nl_socket_alloc();
	if (!gl->sk) {
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return -ENOMEM;
	}
	err = genl_connect(gl->sk);
	if (err) {
		fprintf(stderr, "%s: cannot open generic netlink socket: %s\n",
			krep_prog, nl_geterror(err));
		krep_genl_close(gl);
		return -EIO;
	}
	err = sockopt_on(gl->sk, NETLINK_EXT_ACK);
	if (err)
		fprintf(stderr,
			"%s: warning: kernel error messages unavailable (NETLINK_EXT_ACK: %s)\n",
			krep_prog, strerror(-err));
	/* Without it errors merely echo the request: krep_extack_parse() copes. */
	sockopt_on(gl->sk, NETLINK_CAP_ACK);
	buf_size(nl_socket_get_fd(gl->sk), SO_SNDBUFFORCE, SO_SNDBUF,
		 KREP_SNDBUF);
	buf_size(nl_socket_get_fd(gl->sk), SO_RCVBUFFORCE, SO_RCVBUF,
		 KREP_RCVBUF);
	return 0;
}

/*
 * krep_genl_connect() and resolve the krep family. Prints why on failure;
 * -ENOENT means the module is not loaded.
 */
int krep_genl_open(struct krep_genl *gl)
{
	int err;

	err = krep_genl_connect(gl);
	if (err)
		return err;
	err = resolve_family(gl);
	if (err)
		krep_genl_close(gl);
	return err;
}

void krep_genl_close(struct krep_genl *gl)
{
	nl_socket_free(gl->sk);
	gl->sk = NULL;
}

struct nl_msg *krep_genl_msg_new(int family, uint8_t cmd, int flags,
				 size_t payload)
{
	size_t size = NLMSG_HDRLEN + GENL_HDRLEN + payload;
	struct nl_msg *msg;

	if (size < 4096)
		size = 4096;
	msg = nlmsg_alloc_size(size);
	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, flags, cmd,
			 KREP_GENL_VERSION)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* The range (or lengths) NLMSGERR_ATTR_POLICY gives for the refused attribute. */
static void policy_parse(const struct nlattr *pol, struct krep_extack *ea)
{
	const struct nlattr *a;
	int rem;

	nla_for_each_nested(a, pol, rem) {
		switch (nla_type(a)) {
		case NL_POLICY_TYPE_ATTR_MIN_VALUE_S:
			if (nla_len(a) < 8)
				break;
			ea->has_range = ea->range_signed = true;
			ea->min_s = (int64_t)nla_get_u64((struct nlattr *)a);
			break;
		case NL_POLICY_TYPE_ATTR_MAX_VALUE_S:
			if (nla_len(a) < 8)
				break;
			ea->has_range = ea->range_signed = true;
			ea->max_s = (int64_t)nla_get_u64((struct nlattr *)a);
			break;
		case NL_POLICY_TYPE_ATTR_MIN_VALUE_U:
			if (nla_len(a) < 8)
				break;
			ea->has_range = true;
			ea->min_u = nla_get_u64((struct nlattr *)a);
			break;
		case NL_POLICY_TYPE_ATTR_MAX_VALUE_U:
			if (nla_len(a) < 8)
				break;
			ea->has_range = true;
			ea->max_u = nla_get_u64((struct nlattr *)a);
			break;
		case NL_POLICY_TYPE_ATTR_MIN_LENGTH:
			if (nla_len(a) < 4)
				break;
			ea->has_len = true;
			ea->min_len = nla_get_u32((struct nlattr *)a);
			break;
		case NL_POLICY_TYPE_ATTR_MAX_LENGTH:
			if (nla_len(a) < 4)
				break;
			ea->has_len = true;
			ea->max_len = nla_get_u32((struct nlattr *)a);
			break;
		}
	}
}

/*
 * Find the NLMSGERR_ATTR_* TLVs of an NLMSG_ERROR message (an error or an
 * ack). They follow the nlmsgerr, and the echoed request payload unless
 * the kernel capped it (NLM_F_CAPPED, which NETLINK_CAP_ACK asks for).
 */
int krep_extack_parse(const struct nlmsghdr *nlh, struct krep_extack *ea)
{
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	const struct nlmsgerr *e = NLMSG_DATA(nlh);
	size_t hlen = sizeof(*e), len;
	struct nlattr *a;

	memset(ea, 0, sizeof(*ea));
	if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
		return -EINVAL;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return 0;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED)) {
		if (e->msg.nlmsg_len < NLMSG_HDRLEN)
			return -EINVAL;
		hlen += e->msg.nlmsg_len - NLMSG_HDRLEN;
	}
	hlen = NLMSG_ALIGN(hlen);
	len = nlh->nlmsg_len - NLMSG_HDRLEN;
	if (hlen > len)
		return -EINVAL;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX,
		      (struct nlattr *)((char *)NLMSG_DATA(nlh) + hlen),
		      len - hlen, NULL))
		return -EINVAL;

	a = tb[NLMSGERR_ATTR_MSG];
	if (a && nla_len(a) > 0) {
		ea->msg = nla_data(a);
		ea->msg_len = strnlen(ea->msg, nla_len(a));
	}
	a = tb[NLMSGERR_ATTR_OFFS];
	if (a && nla_len(a) >= 4) {
		ea->has_offs = true;
		ea->offs = nla_get_u32(a);
	}
	a = tb[NLMSGERR_ATTR_MISS_TYPE];
	if (a && nla_len(a) >= 4) {
		ea->has_miss_type = true;
		ea->miss_type = nla_get_u32(a);
	}
	a = tb[NLMSGERR_ATTR_MISS_NEST];
	if (a && nla_len(a) >= 4) {
		ea->has_miss_nest = true;
		ea->miss_nest = nla_get_u32(a);
	}
	a = tb[NLMSGERR_ATTR_POLICY];
	if (a)
		policy_parse(a, ea);
	a = tb[NLMSGERR_ATTR_COOKIE];
	if (a && nla_len(a) >= (int)sizeof(struct krep_err_cookie)) {
		struct krep_err_cookie ck;

		memcpy(&ck, nla_data(a), sizeof(ck));
		ea->has_kerr = true;
		ea->kerr = ck.kafka_error;
	}
	return 0;
}

/* Name the attribute of @req at offset @off; false if it is not found. */
static bool req_attr_path(struct nl_msg *req, uint32_t off,
			  const struct krep_attr_space **inner,
			  char *buf, size_t size)
{
	const struct nlmsghdr *nlh = nlmsg_hdr(req);

	return !krep_attr_path(nlh, nlh->nlmsg_len, NLMSG_HDRLEN + GENL_HDRLEN,
			       off, buf, size, inner);
}

static void print_missing(FILE *f, const struct krep_extack *ea,
			  struct nl_msg *req)
{
	const struct krep_attr_space *space = &krep_attr_space;
	char nest[256] = "", num[24];

	if (ea->has_miss_nest &&
	    (!req || !req_attr_path(req, ea->miss_nest, &space, nest,
				    sizeof(nest)) || !space)) {
		fprintf(f, " (missing attribute %u)", ea->miss_type);
		return;
	}
	fprintf(f, " (missing attribute %s%s%s)", nest, nest[0] ? "." : "",
		krep_attr_name(space, ea->miss_type, num, sizeof(num)));
}

/*
 * The path of the attribute @ea points at ("records", "peers.peer[1].id")
 * in @buf; -ENOENT when it points at none that @req has.
 */
int krep_extack_attr_path(const struct krep_extack *ea, struct nl_msg *req,
			  char *buf, size_t size)
{
	if (!ea->has_offs || !req ||
	    !req_attr_path(req, ea->offs, NULL, buf, size))
		return -ENOENT;
	return 0;
}

int16_t krep_policy_kafka_error(uint8_t cmd, const char *path)
{
	switch (cmd) {
	case KREP_CMD_BROKER_GET:
	case KREP_CMD_BROKER_SET:
		return KREP_KERR_NONE;	/* broker configuration: no Kafka code */
	case KREP_CMD_TOPIC_NEW:
		if (!strncmp(path, "config", 6) &&
		    (path[6] == '.' || !path[6]))
			return KREP_KERR_INVALID_CONFIG;
		if (!strncmp(path, "assignment", 10))
			return KREP_KERR_INVALID_REPLICA_ASSIGNMENT;
		break;
	case KREP_CMD_FETCH:
		if (!strcmp(path, "max_bytes"))
			return KREP_KERR_INVALID_FETCH_SIZE;
		break;
	}
	return KREP_KERR_INVALID_REQUEST;
}

void krep_extack_infer(struct krep_extack *ea, struct nl_msg *req)
{
	const struct genlmsghdr *gh;
	char path[256];
	int16_t kerr;

	if (ea->has_kerr || !ea->has_offs || !req ||
	    krep_extack_attr_path(ea, req, path, sizeof(path)))
		return;
	gh = nlmsg_data(nlmsg_hdr(req));
	kerr = krep_policy_kafka_error(gh->cmd, path);
	if (kerr == KREP_KERR_NONE)
		return;
	ea->has_kerr = true;
	ea->kerr_inferred = true;
	ea->kerr = kerr;
}

void krep_extack_allowed(const struct krep_extack *ea, char *buf, size_t size)
{
	buf[0] = '\0';
	if (ea->has_range && ea->range_signed)
		snprintf(buf, size, "%" PRId64 "..%" PRId64, ea->min_s,
			 ea->max_s);
	else if (ea->has_range)
		snprintf(buf, size, "%" PRIu64 "..%" PRIu64, ea->min_u,
			 ea->max_u);
	else if (ea->has_len)
		snprintf(buf, size, "length %u..%u", ea->min_len, ea->max_len);
}

/*
 * Print "<prog>: <strerror(-err)>[: <message>][ (attribute <path>[,
 * allowed MIN..MAX])][ [KAFKA_ERROR_NAME]]"; a zero @err (an ack carrying
 * a message) prints "<prog>: warning: ...". A refusal of the netlink
 * policy gets its Kafka code from krep_extack_infer().
 */
void krep_extack_print(FILE *f, int err, const struct krep_extack *eap,
		       struct nl_msg *req)
{
	struct krep_extack ea = *eap;
	char path[256], allowed[64];
	const char *kname;

	if (err)
		krep_extack_infer(&ea, req);
	krep_extack_allowed(&ea, allowed, sizeof(allowed));
	if (err)
		fprintf(f, "%s: %s", krep_prog, strerror(-err));
	else
		fprintf(f, "%s: warning", krep_prog);
	if (ea.msg_len)
		fprintf(f, ": %.*s", ea.msg_len, ea.msg);
	if (ea.has_offs) {
		if (!krep_extack_attr_path(&ea, req, path, sizeof(path)))
			fprintf(f, " (attribute %s", path);
		else
			fprintf(f, " (attribute at offset %u", ea.offs);
		fprintf(f, "%s%s)", allowed[0] ? ", allowed " : "", allowed);
	}
	if (ea.has_miss_type)
		print_missing(f, &ea, req);
	if (ea.has_kerr) {
		kname = krep_kafka_error_name(ea.kerr);
		if (kname)
			fprintf(f, " [%s]", kname);
		else
			fprintf(f, " [kafka error %d]", ea.kerr);
	}
	fputc('\n', f);
}

struct request {
	struct krep_genl *gl;
	struct nl_msg *req;
	krep_genl_reply_fn fn;
	void *arg;
	int err;		/* the kernel's errno, negative */
	int reply_err;		/* first error of the reply callback */
	bool done;
};

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct request *r = arg;
	int err;

	if (!r->fn)
		return NL_OK;
	err = r->fn(msg, r->arg);
	if (err && !r->reply_err)
		r->reply_err = err;
	return NL_OK;
}

static int on_ack(struct nl_msg *msg, void *arg)
{
	struct request *r = arg;
	struct krep_extack ea;

	if (!krep_extack_parse(nlmsg_hdr(msg), &ea) && ea.msg_len)
		krep_extack_print(stderr, 0, &ea, r->req);
	r->done = true;
	return NL_STOP;
}

static int on_finish(struct nl_msg *msg, void *arg)
{
	struct request *r = arg;

	(void)msg;
	r->done = true;
	return NL_STOP;
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	/* libnl hands us the payload of the NLMSG_ERROR message in place. */
	const struct nlmsghdr *nlh =
		(const void *)((const char *)e - NLMSG_HDRLEN);
	struct request *r = arg;
	struct krep_genl_status *st = &r->gl->st;
	struct krep_extack ea;

	(void)nla;
	r->err = e->error < 0 ? e->error : -e->error;
	if (krep_extack_parse(nlh, &ea))
		memset(&ea, 0, sizeof(ea));
	krep_extack_infer(&ea, r->req);
	/* Keep it for the caller: the message lives in libnl's buffer. */
	st->err = r->err;
	st->ea = ea;
	if (ea.msg_len) {
		if (ea.msg_len >= (int)sizeof(st->msg))
			st->ea.msg_len = sizeof(st->msg) - 1;
		memcpy(st->msg, ea.msg, st->ea.msg_len);
		st->msg[st->ea.msg_len] = '\0';
		st->ea.msg = st->msg;
	}
	if (!r->gl->quiet)
		krep_extack_print(stderr, r->err, &ea, r->req);
	r->done = true;
	return NL_STOP;
}

/*
 * Wait until the socket has something to read or *gl->stop is set (then
 * -EINTR). The stop signals are blocked but while ppoll() sleeps, so one
 * that arrives at any point is seen, before or during the wait.
 */
static int wait_readable(struct krep_genl *gl)
{
	struct pollfd pfd = { .fd = nl_socket_get_fd(gl->sk), .events = POLLIN };
	sigset_t old;
	int ret;

	sigprocmask(SIG_BLOCK, &gl->stop_sigs, &old);
	for (;;) {
		if (*gl->stop) {
			ret = -EINTR;
			break;
		}
		ret = ppoll(&pfd, 1, NULL, &old);
		if (ret > 0) {
			ret = 0;
			break;
		}
		if (ret < 0 && errno != EINTR) {
			ret = -errno;
			break;
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ret;
}

/*
 * Send @req (it stays the caller's), call @fn for each reply message, and
 * wait for the ack, or the end of a dump. Returns 0, the kernel's -errno
 * (after printing its message unless @gl->quiet; @gl->st keeps it, with
 * Kafka's error code), the first error @fn returned, -EINTR when
 * *@gl->stop was set, or -EIO for a transport failure (printed).
 */
int krep_genl_request(struct krep_genl *gl, struct nl_msg *req,
		      krep_genl_reply_fn fn, void *arg)
{
	struct request r = { .gl = gl, .req = req, .fn = fn, .arg = arg };
	struct nl_cb *cb;
	int err;

	memset(&gl->st, 0, sizeof(gl->st));
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return -ENOMEM;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &r);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, &r);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_finish, &r);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &r);

	/* The loop below ends on the ack: ask for one whatever libnl's mode. */
	nlmsg_hdr(req)->nlmsg_flags |= NLM_F_ACK;
	err = nl_send_auto(gl->sk, req);
	if (err < 0) {
		fprintf(stderr, "%s: cannot send request: %s\n", krep_prog,
			nl_geterror(err));
		err = -EIO;
		goto out;
	}
	while (!r.done) {
		if (gl->stop) {
			err = wait_readable(gl);
			if (err == -EINTR)
				goto out;
			if (err) {
				fprintf(stderr, "%s: cannot receive reply: %s\n",
					krep_prog, strerror(-err));
				err = -EIO;
				goto out;
			}
		}
		err = nl_recvmsgs(gl->sk, cb);
		if (err < 0 && !r.done) {
			fprintf(stderr, "%s: cannot receive reply: %s\n",
				krep_prog, nl_geterror(err));
			err = -EIO;
			goto out;
		}
	}
	err = r.err ? r.err : r.reply_err;
out:
	nl_cb_put(cb);
	return err;
}

/*
 * Join multicast group @group of the krep family. Returns -ENOENT, without
 * printing anything, when the loaded module has no such group.
 */
int krep_genl_subscribe(struct krep_genl *gl, const char *group)
{
	int grp, err;

	grp = genl_ctrl_resolve_grp(gl->sk, KREP_GENL_NAME, group);
	if (grp == -NLE_OBJ_NOTFOUND)
		return -ENOENT;
	if (grp < 0) {
		fprintf(stderr, "%s: cannot resolve multicast group '%s': %s\n",
			krep_prog, group, nl_geterror(grp));
		return -EIO;
	}
	err = nl_socket_add_membership(gl->sk, grp);
	if (err) {
		fprintf(stderr, "%s: cannot join multicast group '%s': %s\n",
			krep_prog, group, nl_geterror(err));
		return -EIO;
	}
	return 0;
}
