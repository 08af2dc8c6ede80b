// SPDX-License-Identifier: GPL-2.0
/*
 * A controller's channel to one broker (session.h): the local and netns
 * transports, and the reply parsing every transport shares
 * (session_impl.h).
 *
 * The local and netns transports are plain nonblocking NETLINK_GENERIC
 * sockets rather than libnl's: a request is sent, then replies are read
 * with poll() until its deadline, so no broker can hang krepd, and a
 * reply that arrives after the deadline is recognised by its sequence
 * number and dropped. A netns session creates its sockets after
 * setns() into /run/netns/NAME and then returns to krepd's own
 * namespace; the sockets stay bound to the broker's. The namespace file's
 * identity (st_dev, st_ino) is kept so that krep_session_stale() can tell
 * when the name vanished or was reused.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <netlink/genl/genl.h>

#include <linux/krep.h>

#include "session_impl.h"

#define NETNS_RUN_DIR		"/run/netns"
#define RESOLVE_TIMEOUT_MS	2000
#define SNDBUF			(2 << 20)
#define RCVBUF			(8 << 20)

#ifndef SOL_NETLINK
#define SOL_NETLINK		270
#endif

struct sock_session {
	struct krep_session s;
	int fd;			/* requests and replies */
	int efd;		/* events, or -1 */
	bool netns;
	char path[sizeof(NETNS_RUN_DIR) + 64];	/* /run/netns/NAME */
	dev_t ns_dev;
	ino_t ns_ino;
	void *buf;		/* receive buffer */
	size_t bufsize;
};

/* Why the last open failed, when no static string says it. */
static char why_buf[320];

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- reply parsing, shared by every transport ------------------------ */

void krep_session_rx_start(struct krep_session *s, struct krep_session_rx *rx,
			   struct nl_msg *req, krep_genl_reply_fn fn, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(req);

	memset(&s->st, 0, sizeof(s->st));
	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = ++s->seq;
	nlh->nlmsg_pid = 0;
	memset(rx, 0, sizeof(*rx));
	rx->seq = nlh->nlmsg_seq;
	rx->fn = fn;
	rx->arg = arg;
}

/* The kernel said no: keep its errno and extack for krep_session_status(). */
static void rx_error(struct krep_session *s, struct krep_session_rx *rx,
		     const struct nlmsghdr *nlh, int error)
{
	struct krep_genl_status *st = &s->st;
	struct krep_extack ea;

	rx->err = error < 0 ? error : -error;
	if (krep_extack_parse(nlh, &ea))
		memset(&ea, 0, sizeof(ea));
	st->err = rx->err;
	st->ea = ea;
	st->ea.msg = NULL;
	st->ea.msg_len = 0;
	if (ea.msg_len) {
		st->ea.msg_len = ea.msg_len < (int)sizeof(st->msg) ?
				 ea.msg_len : (int)sizeof(st->msg) - 1;
		memcpy(st->msg, ea.msg, st->ea.msg_len);
		st->msg[st->ea.msg_len] = '\0';
		st->ea.msg = st->msg;
	}
}

static void rx_valid(struct krep_session_rx *rx, struct nlmsghdr *nlh)
{
	struct nl_msg *msg;
	int err;

	if (!rx->fn)
		return;
	msg = nlmsg_convert(nlh);
	if (!msg) {
		err = -ENOMEM;
	} else {
		err = rx->fn(msg, rx->arg);
		nlmsg_free(msg);
	}
	if (err < 0 && !rx->reply_err)
		rx->reply_err = err;
}

int krep_session_rx_feed(struct krep_session *s, struct krep_session_rx *rx,
			 const void *buf, size_t len)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	int rem = len;

	for (; !rx->done && nlmsg_ok(nlh, rem); nlh = nlmsg_next(nlh, &rem)) {
		if (nlh->nlmsg_seq != rx->seq)
			continue;	/* a late reply to an earlier request */
		switch (nlh->nlmsg_type) {
		case NLMSG_NOOP:
		case NLMSG_OVERRUN:
			break;
		case NLMSG_ERROR: {
			const struct nlmsgerr *e = nlmsg_data(nlh);

			if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
				return -EPROTO;
			if (e->error)
				rx_error(s, rx, nlh, e->error);
			rx->done = true;
			break;
		}
		case NLMSG_DONE: {
			int v = 0;

			if (nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(v)))
				memcpy(&v, nlmsg_data(nlh), sizeof(v));
			if (v < 0) {
				/* a dump's error: extack TLVs follow the int */
				s->st.err = rx->err = v;
			}
			rx->done = true;
			break;
		}
		default:
			rx_valid(rx, nlh);
		}
	}
	if (!rx->done && rem > 0 && (size_t)rem == len)
		return -EPROTO;
	return 0;
}

int krep_session_rx_result(const struct krep_session_rx *rx)
{
	return rx->err ? rx->err : rx->reply_err;
}

int krep_session_events_feed(struct krep_session *s, const void *buf,
			     size_t len, krep_genl_reply_fn fn, void *arg)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	struct krep_session_rx rx = { .fn = fn, .arg = arg };
	int rem = len;

	for (; nlmsg_ok(nlh, rem); nlh = nlmsg_next(nlh, &rem))
		if (nlh->nlmsg_type == s->family)
			rx_valid(&rx, nlh);
	if (rem > 0 && (size_t)rem == len)
		return -EPROTO;
	return 0;
}

/* CTRL_CMD_GETFAMILY reply: the family id and the "events" group. */
static int family_reply(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[CTRL_ATTR_MAX + 1], *gtb[CTRL_ATTR_MCAST_GRP_MAX + 1];
	struct krep_session *s = arg;
	struct nlattr *g;
	int rem;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, CTRL_ATTR_MAX, NULL) ||
	    !tb[CTRL_ATTR_FAMILY_ID] || nla_len(tb[CTRL_ATTR_FAMILY_ID]) < 2)
		return -EPROTO;
	s->family = nla_get_u16(tb[CTRL_ATTR_FAMILY_ID]);
	if (!tb[CTRL_ATTR_MCAST_GROUPS])
		return 0;
	nla_for_each_nested(g, tb[CTRL_ATTR_MCAST_GROUPS], rem) {
		if (nla_parse_nested(gtb, CTRL_ATTR_MCAST_GRP_MAX, g, NULL))
			return -EPROTO;
		if (!gtb[CTRL_ATTR_MCAST_GRP_NAME] ||
		    !gtb[CTRL_ATTR_MCAST_GRP_ID] ||
		    nla_len(gtb[CTRL_ATTR_MCAST_GRP_ID]) < 4)
			continue;
		if (!strcmp(nla_get_string(gtb[CTRL_ATTR_MCAST_GRP_NAME]),
			    KREP_MCGRP_EVENTS))
			s->events_group = nla_get_u32(gtb[CTRL_ATTR_MCAST_GRP_ID]);
	}
	return 0;
}

int krep_session_resolve(struct krep_session *s, int timeout_ms,
			 const char **why)
{
	struct nl_msg *req;
	int err;

	s->family = -1;
	s->events_group = 0;
	req = nlmsg_alloc();
	if (!req) {
		*why = "out of memory";
		return -ENOMEM;
	}
	if (!genlmsg_put(req, NL_AUTO_PORT, NL_AUTO_SEQ, GENL_ID_CTRL, 0, 0,
			 CTRL_CMD_GETFAMILY, 1) ||
	    nla_put_string(req, CTRL_ATTR_FAMILY_NAME, KREP_GENL_NAME)) {
		nlmsg_free(req);
		*why = "out of memory";
		return -ENOMEM;
	}
	err = s->ops->request(s, req, family_reply, s, timeout_ms);
	nlmsg_free(req);
	if (err == -ENOENT) {
		*why = "krep module not loaded (no generic netlink family 'krep')";
		return err;
	}
	if (!err && s->family < 0)
		err = -EPROTO;
	if (err) {
		snprintf(why_buf, sizeof(why_buf),
			 "cannot resolve generic netlink family '%s': %s",
			 KREP_GENL_NAME, strerror(-err));
		*why = why_buf;
	}
	return err;
}

/* ---- public calls: dispatch to the transport ------------------------- */

void krep_session_close(struct krep_session *s)
{
	if (s)
		s->ops->close(s);
}

bool krep_session_stale(const struct krep_session *s)
{
	return s->ops->stale && s->ops->stale(s);
}

int krep_session_family(const struct krep_session *s)
{
	return s->family;
}

int krep_session_request(struct krep_session *s, struct nl_msg *req,
			 krep_genl_reply_fn fn, void *arg, int timeout_ms)
{
	int err = s->ops->request(s, req, fn, arg, timeout_ms);

	/* a refusal of the netlink policy: the Kafka code it would carry */
	if (err && s->st.err)
		krep_extack_infer(&s->st.ea, req);
	return err;
}

const struct krep_genl_status *krep_session_status(const struct krep_session *s)
{
	return &s->st;
}

int krep_session_event_fd(const struct krep_session *s)
{
	return s->ops->event_fd(s);
}

int krep_session_read_events(struct krep_session *s, krep_genl_reply_fn fn,
			     void *arg)
{
	return s->ops->read_events(s, fn, arg);
}

/* ---- the socket transport: local and netns -------------------------- */

static struct sock_session *to_sock(const struct krep_session *s)
{
	return (struct sock_session *)s;
}

/*
 * Receive one datagram into ss->buf (grown to fit). Returns its length,
 * -EAGAIN when there is none, or another negative errno.
 */
static ssize_t sock_recv(struct sock_session *ss, int fd)
{
	ssize_t n;
	void *nb;

	n = recv(fd, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if ((size_t)n > ss->bufsize || !ss->buf) {
		size_t size = n > 65536 ? (size_t)n : 65536;

		nb = realloc(ss->buf, size);
		if (!nb)
			return -ENOMEM;
		ss->buf = nb;
		ss->bufsize = size;
	}
	n = recv(fd, ss->buf, ss->bufsize, MSG_DONTWAIT);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

/* Wait for @events on @fd until @deadline. 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int64_t left;
	int ret;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		ret = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (ret > 0)
			return 0;
		if (ret < 0 && errno != EINTR)
			return -errno;
	}
}

static int sock_request(struct krep_session *s, struct nl_msg *req,
			krep_genl_reply_fn fn, void *arg, int timeout_ms)
{
	static const struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct sock_session *ss = to_sock(s);
	int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 1);
	struct krep_session_rx rx;
	struct nlmsghdr *nlh;
	ssize_t n;
	int err;

	krep_session_rx_start(s, &rx, req, fn, arg);
	nlh = nlmsg_hdr(req);
	for (;;) {
		n = sendto(ss->fd, nlh, nlh->nlmsg_len, 0,
			   (const struct sockaddr *)&kernel, sizeof(kernel));
		if (n >= 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		err = wait_fd(ss->fd, POLLOUT, deadline);
		if (err)
			return err;
	}
	while (!rx.done) {
		n = sock_recv(ss, ss->fd);
		if (n == -EAGAIN) {
			err = wait_fd(ss->fd, POLLIN, deadline);
			if (err)
				return err;
			continue;
		}
		if (n == -EINTR)
			continue;
		if (n < 0)
			return n;	/* ENOBUFS: replies were lost */
		err = krep_session_rx_feed(s, &rx, ss->buf, n);
		if (err)
			return err;
	}
	return krep_session_rx_result(&rx);
}

static int sock_event_fd(const struct krep_session *s)
{
	return to_sock(s)->efd;
}

static int sock_read_events(struct krep_session *s, krep_genl_reply_fn fn,
			    void *arg)
{
	struct sock_session *ss = to_sock(s);
	bool lost = false;
	ssize_t n;
	int err;

	if (ss->efd < 0)
		return 0;
	for (;;) {
		n = sock_recv(ss, ss->efd);
		if (n == -EAGAIN)
			break;
		if (n == -EINTR)
			continue;
		if (n == -ENOBUFS) {
			lost = true;	/* the kernel dropped events for us */
			continue;
		}
		if (n < 0)
			return n;
		err = krep_session_events_feed(s, ss->buf, n, fn, arg);
		if (err)
			return err;
	}
	return lost ? -ENOBUFS : 0;
}

static bool sock_stale(const struct krep_session *s)
{
	const struct sock_session *ss = to_sock(s);
	struct stat st;

	if (!ss->netns)
		return false;
	if (stat(ss->path, &st))
		return errno == ENOENT || errno == ENOTDIR;
	return st.st_dev != ss->ns_dev || st.st_ino != ss->ns_ino;
}

static void sock_close(struct krep_session *s)
{
	struct sock_session *ss = to_sock(s);

	if (ss->fd >= 0)
		close(ss->fd);
	if (ss->efd >= 0)
		close(ss->efd);
	free(ss->buf);
	free(ss);
}

static const struct krep_session_ops sock_ops = {
	.request	= sock_request,
	.event_fd	= sock_event_fd,
	.read_events	= sock_read_events,
	.stale		= sock_stale,
	.close		= sock_close,
};

static void bufsize(int fd, int force, int opt, int size)
{
	if (setsockopt(fd, SOL_SOCKET, force, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, opt, &size, sizeof(size));
}

/* A NETLINK_GENERIC socket in the current namespace, or -errno. */
static int nl_socket_new(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int fd, one = 1, err;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    NETLINK_GENERIC);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	/* without them errors echo the request and carry no message */
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	bufsize(fd, SO_SNDBUFFORCE, SO_SNDBUF, SNDBUF);
	bufsize(fd, SO_RCVBUFFORCE, SO_RCVBUF, RCVBUF);
	return fd;
}

static int sockets_new(struct sock_session *ss, bool events)
{
	ss->fd = nl_socket_new();
	if (ss->fd < 0)
		return ss->fd;
	if (events) {
		ss->efd = nl_socket_new();
		if (ss->efd < 0)
			return ss->efd;
	}
	return 0;
}

static bool netns_name_ok(const char *name)
{
	return *name && !strchr(name, '/') && strcmp(name, ".") &&
	       strcmp(name, "..") &&
	       strlen(name) < sizeof(((struct krep_session_addr *)0)->netns);
}

/*
 * Create the sockets inside the namespace /run/netns/NAME, then go back.
 * Failing to go back would leave krepd in a broker's namespace, with its
 * own local sessions and control socket in the wrong place: that is not
 * survivable, so it ends the process.
 */
static int netns_sockets(struct sock_session *ss, const char *name,
			 bool events, const char **why)
{
	struct stat st;
	int self, target, err;

	snprintf(ss->path, sizeof(ss->path), NETNS_RUN_DIR "/%s", name);
	target = open(ss->path, O_RDONLY | O_CLOEXEC);
	if (target < 0) {
		err = -errno;
		if (err == -ENOENT)
			snprintf(why_buf, sizeof(why_buf),
				 "network namespace '%s' does not exist (no %s)",
				 name, ss->path);
		else
			snprintf(why_buf, sizeof(why_buf),
				 "cannot open %s: %s", ss->path, strerror(-err));
		*why = why_buf;
		return err;
	}
	if (fstat(target, &st)) {
		err = -errno;
		close(target);
		*why = "cannot stat the network namespace";
		return err;
	}
	ss->ns_dev = st.st_dev;
	ss->ns_ino = st.st_ino;
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0) {
		err = -errno;
		close(target);
		snprintf(why_buf, sizeof(why_buf),
			 "cannot open krepd's own network namespace: %s",
			 strerror(-err));
		*why = why_buf;
		return err;
	}
	if (setns(target, CLONE_NEWNET)) {
		err = -errno;
		snprintf(why_buf, sizeof(why_buf),
			 "cannot enter network namespace '%s': %s", name,
			 strerror(-err));
		*why = why_buf;
		goto out;
	}
	err = sockets_new(ss, events);
	if (err) {
		snprintf(why_buf, sizeof(why_buf),
			 "cannot open a netlink socket in network namespace '%s': %s",
			 name, strerror(-err));
		*why = why_buf;
	}
	if (setns(self, CLONE_NEWNET)) {
		fprintf(stderr,
			"%s: cannot return to the original network namespace: %s\n",
			krep_prog, strerror(errno));
		_exit(1);
	}
out:
	close(self);
	close(target);
	return err;
}

struct krep_session *krep_session_open(const struct krep_session_addr *a,
				       bool events, const char **why)
{
	struct sock_session *ss;
	int err;

	if (a->kind == KREP_SESSION_RELAY) {
#ifdef KREP_HAVE_RELAY
		return krep_session_relay_open(a, events, why);
#else
		*why = "relay support not built";
		return NULL;
#endif
	}
	if (a->kind != KREP_SESSION_LOCAL && a->kind != KREP_SESSION_NETNS) {
		*why = "unknown session kind";
		return NULL;
	}
	if (a->kind == KREP_SESSION_NETNS && !netns_name_ok(a->netns)) {
		*why = "invalid network namespace name";
		return NULL;
	}
	ss = calloc(1, sizeof(*ss));
	if (!ss) {
		*why = "out of memory";
		return NULL;
	}
	ss->s.ops = &sock_ops;
	ss->s.family = -1;
	ss->fd = ss->efd = -1;
	if (a->kind == KREP_SESSION_NETNS) {
		ss->netns = true;
		err = netns_sockets(ss, a->netns, events, why);
	} else {
		err = sockets_new(ss, events);
		if (err) {
			snprintf(why_buf, sizeof(why_buf),
				 "cannot open a netlink socket: %s",
				 strerror(-err));
			*why = why_buf;
		}
	}
	if (!err)
		err = krep_session_resolve(&ss->s, RESOLVE_TIMEOUT_MS, why);
	if (!err && ss->efd >= 0) {
		uint32_t grp = ss->s.events_group;

		if (!grp) {
			/* an older module: no events, PARTITION_GET only */
			close(ss->efd);
			ss->efd = -1;
		} else if (setsockopt(ss->efd, SOL_NETLINK,
				      NETLINK_ADD_MEMBERSHIP, &grp,
				      sizeof(grp))) {
			err = -errno;
			snprintf(why_buf, sizeof(why_buf),
				 "cannot join multicast group '%s': %s",
				 KREP_MCGRP_EVENTS, strerror(-err));
			*why = why_buf;
		}
	}
	if (err) {
		sock_close(&ss->s);
		return NULL;
	}
	return &ss->s;
}
