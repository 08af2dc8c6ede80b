// SPDX-License-Identifier: GPL-2.0
/*
 * krepd --relay: see relay.h, and relay_proto.h for the protocol.
 *
 * One poll() loop serves every client; all sockets are non-blocking. A
 * client is accepted (at most KREP_RELAY_CLIENTS at a time, others are
 * closed at once), sent HELLO and given KREP_RELAY_AUTH_MS to AUTH. Once
 * it proved it holds the secret it gets two netlink sockets of its own in
 * the relay's namespace: one to which its REQUESTs are written and whose
 * every datagram goes back as a REPLY, and, if it asked for events, one
 * in the "events" group whose datagrams go back as EVENTs. From then on
 * every frame is sealed both ways with the session's keys
 * (relay_proto.h): a frame that fails its check closes the client, with
 * one log line that says why.
 *
 * Timers, all checked by the loop (its poll() timeout is the nearest):
 *   auth     accept + auth_ms: an unauthenticated client is closed;
 *   ping     every ping_ms once authenticated: a PING is queued;
 *   dead     dead_ms after the last byte from the client: it is closed.
 *
 * Flow control: while more than OUT_HIGH bytes wait to go to a client,
 * neither its TCP socket nor its netlink sockets are read, so a client
 * that does not read holds back its own replies in the kernel (its event
 * socket then overruns: EVENTS_LOST) and nothing else.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/socket.h>

#include <linux/krep.h>

#include "ep.h"
#include "genl.h"
#include "log.h"
#include "relay.h"

#define OUT_HIGH	(2U << 20)
/* datagrams or reads taken from one socket per turn of the loop */
#define BURST		64

struct client {
	int fd;				/* -1: the slot is free */
	char name[KREP_EP_STRLEN];
	bool authed;
	uint8_t snonce[KREP_RELAY_NONCE_LEN];
	struct krep_relay_nl nl;	/* once authed */
	struct krep_relay_keys keys;	/* once authed */
	struct krep_relay_buf in, out;
	uint64_t since, last_rx, last_ping;
	unsigned long nreq;
};

struct relay {
	const struct krep_relay_cfg *cfg;
	const struct krep_relay_nl_ops *ops;
	struct client clients[KREP_RELAY_CLIENTS];
	uint8_t *scratch;		/* one netlink datagram */
};

enum which { W_TCP, W_REQ, W_EV };

/* ---- netlink sockets ----------------------------------------------- */

struct nl_pair {
	struct krep_genl req, ev;
};

static int kernel_open(void *ctx, bool events, struct krep_relay_nl *nl,
		   const char **why)
{
	struct nl_pair *p;
	int id, grp;

	(void)ctx;
	p = calloc(1, sizeof(*p));
	if (!p) {
		*why = "out of memory";
		return -ENOMEM;
	}
	nl->priv = p;
	nl->req_fd = nl->ev_fd = -1;
	nl->family = 0;
	nl->group = 0;
	if (krep_genl_connect(&p->req)) {
		*why = "cannot open a generic netlink socket";
		goto err;
	}
	nl->req_fd = nl_socket_get_fd(p->req.sk);
	id = genl_ctrl_resolve(p->req.sk, KREP_GENL_NAME);
	if (id <= 0 || id > UINT16_MAX)
		return 0;	/* not loaded: AUTH_OK says so */
	nl->family = id;
	if (!events)
		return 0;
	grp = genl_ctrl_resolve_grp(p->req.sk, KREP_GENL_NAME,
				    KREP_MCGRP_EVENTS);
	if (grp <= 0)
		return 0;	/* no events group: AUTH_OK says so */
	if (krep_genl_connect(&p->ev)) {
		*why = "cannot open a generic netlink socket for events";
		goto err;
	}
	if (nl_socket_add_membership(p->ev.sk, grp)) {
		*why = "cannot join the events multicast group";
		goto err;
	}
	nl->ev_fd = nl_socket_get_fd(p->ev.sk);
	nl->group = grp;
	return 0;
err:
	if (p->ev.sk)
		krep_genl_close(&p->ev);
	if (p->req.sk)
		krep_genl_close(&p->req);
	free(p);
	nl->priv = NULL;
	nl->req_fd = nl->ev_fd = -1;
	return -EIO;
}

/* To the kernel (the socket's default destination, port 0). */
static int kernel_send(void *ctx, struct krep_relay_nl *nl, const void *msg,
		   size_t len)
{
	ssize_t n;

	(void)ctx;
	do {
		n = send(nl->req_fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return 0;
}

static void kernel_close(void *ctx, struct krep_relay_nl *nl)
{
	struct nl_pair *p = nl->priv;

	(void)ctx;
	if (p) {
		if (p->ev.sk)
			krep_genl_close(&p->ev);
		if (p->req.sk)
			krep_genl_close(&p->req);
		free(p);
	}
	nl->priv = NULL;
	nl->req_fd = nl->ev_fd = -1;
}

static const struct krep_relay_nl_ops kernel_ops = {
	.open	= kernel_open,
	.send	= kernel_send,
	.close	= kernel_close,
};

/* ---- clients ------------------------------------------------------- */

static void client_close(struct relay *r, struct client *c, int prio,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Log one line "client NAME ..." and free the slot. */
static void client_close(struct relay *r, struct client *c, int prio,
			 const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (c->authed)
		r->cfg->log(prio, "client %s disconnected after %lu request%s: %s",
			    c->name, c->nreq, c->nreq == 1 ? "" : "s", why);
	else
		r->cfg->log(prio, "client %s: %s", c->name, why);
	if (c->authed)
		r->ops->close(r->cfg->ctx, &c->nl);
	close(c->fd);
	krep_relay_buf_free(&c->in);
	krep_relay_buf_free(&c->out);
	krep_relay_keys_wipe(&c->keys);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->nl.req_fd = c->nl.ev_fd = -1;
}

/* @err of queueing a @type frame: false (and the client is gone) if set. */
static bool client_queued(struct relay *r, struct client *c, int err,
			  uint8_t type)
{
	if (err)
		client_close(r, c, LOG_WARNING, "cannot queue a %s frame: %s",
			     krep_relay_type_name(type), strerror(-err));
	return !err;
}

/* Queue a frame of an authenticated client: sealed. */
static bool client_queue(struct relay *r, struct client *c, uint8_t type,
			 const void *p, size_t len)
{
	return client_queued(r, c, krep_relay_seal_put(&c->out, &c->keys, type,
							p, len),
			     type);
}

static bool client_flush(struct relay *r, struct client *c)
{
	int err = krep_relay_buf_send(c->fd, &c->out);

	if (err && c->authed)
		client_close(r, c, LOG_INFO, "send: %s", strerror(-err));
	else if (err)
		client_close(r, c, LOG_WARNING,
			     "authentication failed: send before AUTH: %s",
			     strerror(-err));
	return !err;
}

static bool client_auth(struct relay *r, struct client *c,
			const struct krep_relay_frame *f, uint64_t now)
{
	struct krep_relay_hs hs = { .version = KREP_RELAY_VERSION };
	uint8_t want[KREP_RELAY_MAC_LEN];
	const char *why = "?";
	int err;

	if (f->type != KREP_RELAY_AUTH) {
		client_close(r, c, LOG_WARNING,
			     "authentication failed: sent %s instead of AUTH",
			     krep_relay_type_name(f->type));
		return false;
	}
	if (krep_relay_auth_get(f, &hs.flags, hs.cnonce, hs.cmac)) {
		client_close(r, c, LOG_WARNING,
			     "authentication failed: AUTH of %zu bytes, not %d",
			     f->len, KREP_RELAY_AUTH_LEN);
		return false;
	}
	krep_relay_client_mac(r->cfg->secret, c->snonce, hs.cnonce, want);
	if (!krep_relay_mac_equal(hs.cmac, want)) {
		client_close(r, c, LOG_WARNING,
			     "authentication failed: wrong secret");
		return false;
	}
	if (hs.flags & ~KREP_RELAY_F_ALL) {
		client_close(r, c, LOG_WARNING,
			     "authentication failed: unknown AUTH flags %#x",
			     hs.flags & ~KREP_RELAY_F_ALL);
		return false;
	}
	err = r->ops->open(r->cfg->ctx, hs.flags & KREP_RELAY_F_EVENTS, &c->nl,
			   &why);
	if (err) {
		client_close(r, c, LOG_ERR, "%s", why);
		return false;
	}
	c->authed = true;
	c->last_rx = c->last_ping = now;
	memcpy(hs.snonce, c->snonce, sizeof(hs.snonce));
	krep_relay_server_mac(r->cfg->secret, c->snonce, hs.cnonce, hs.smac);
	hs.family = c->nl.family;
	hs.group = c->nl.group;
	/* AUTH_OK is the last frame in the clear; the keys hash it too */
	krep_relay_keys_derive(&c->keys, r->cfg->secret, &hs,
			       KREP_RELAY_SIDE_SERVER);
	return client_queued(r, c, krep_relay_auth_ok_put(&c->out, hs.smac,
							   hs.family,
							   hs.group),
			     KREP_RELAY_AUTH_OK);
}

/*
 * Answer @req as the kernel would have, with an NLMSG_ERROR of @err for
 * its sequence number, @text as the message: the kernel did not take it,
 * or the relay does not forward it.
 */
static bool reply_error(struct relay *r, struct client *c,
			const struct nlmsghdr *req, int err, const char *text)
{
	struct {
		struct nlmsghdr nlh;
		struct nlmsgerr e;
		struct nlattr a;
		char text[96];
	} m;
	size_t tlen = strlen(text) + 1;

	if (tlen > sizeof(m.text))
		tlen = sizeof(m.text);
	memset(&m, 0, sizeof(m));
	m.nlh.nlmsg_type = NLMSG_ERROR;
	m.nlh.nlmsg_flags = NLM_F_CAPPED | NLM_F_ACK_TLVS;
	m.nlh.nlmsg_seq = req->nlmsg_seq;
	m.e.error = err;
	m.e.msg = *req;
	m.e.msg.nlmsg_len = NLMSG_HDRLEN;
	m.a.nla_type = NLMSGERR_ATTR_MSG;
	m.a.nla_len = NLA_HDRLEN + tlen;
	memcpy(m.text, text, tlen - 1);
	m.nlh.nlmsg_len = offsetof(typeof(m), text) + NLA_ALIGN(tlen);
	return client_queue(r, c, KREP_RELAY_REPLY, &m, m.nlh.nlmsg_len);
}

static bool client_request(struct relay *r, struct client *c,
			   const struct krep_relay_frame *f)
{
	struct nlmsghdr nlh;
	char text[96];
	uint8_t *msg;
	int err;

	if (f->len < NLMSG_HDRLEN) {
		client_close(r, c, LOG_WARNING,
			     "protocol error: REQUEST of %zu bytes", f->len);
		return false;
	}
	memcpy(&nlh, f->payload, sizeof(nlh));
	if (nlh.nlmsg_len != f->len) {
		client_close(r, c, LOG_WARNING,
			     "protocol error: REQUEST of %zu bytes holds a message of %u",
			     f->len, nlh.nlmsg_len);
		return false;
	}
	c->nreq++;
	/* its secret opens the krep family to a client, no other */
	if (nlh.nlmsg_type != c->nl.family || !c->nl.family)
		return reply_error(r, c, &nlh, -EPERM,
				   "krep relay: only the krep family is relayed");
	/* The payload is ours until the next read: send it from there. */
	msg = (uint8_t *)f->payload;
	nlh.nlmsg_pid = 0;
	memcpy(msg, &nlh, sizeof(nlh));
	err = r->ops->send(r->cfg->ctx, &c->nl, msg, f->len);
	if (err) {
		snprintf(text, sizeof(text),
			 "krep relay: cannot send to the kernel: %s",
			 strerror(-err));
		return reply_error(r, c, &nlh, err, text);
	}
	return true;
}

/* Handle one frame; false if the client was closed. */
static bool client_frame(struct relay *r, struct client *c,
			 struct krep_relay_frame *f, uint64_t now)
{
	char why[256];

	if (!c->authed)
		return client_auth(r, c, f, now);
	if (krep_relay_unseal(&c->keys, f, why, sizeof(why))) {
		client_close(r, c, LOG_WARNING, "%s", why);
		return false;
	}
	switch (f->type) {
	case KREP_RELAY_REQUEST:
		return client_request(r, c, f);
	case KREP_RELAY_PING:
		return client_queue(r, c, KREP_RELAY_PONG, NULL, 0);
	case KREP_RELAY_PONG:
		return true;
	default:
		client_close(r, c, LOG_WARNING,
			     "protocol error: unexpected %s frame (type %u)",
			     krep_relay_type_name(f->type), f->type);
		return false;
	}
}

static const char *frame_error(long err)
{
	if (err == -EMSGSIZE)
		return "protocol error: frame longer than 1 MiB";
	if (err == -EPROTO)
		return "protocol error: frame of length 0";
	return strerror(-err);
}

static void client_read(struct relay *r, struct client *c, uint64_t now)
{
	struct krep_relay_frame f;
	long n;
	int i;

	for (i = 0; i < BURST; i++) {
		if (krep_relay_buf_pending(&c->out) >= OUT_HIGH)
			break;
		n = krep_relay_buf_recv(c->fd, &c->in);
		if (n == -EAGAIN)
			break;
		if (!n) {
			client_close(r, c, c->authed ? LOG_INFO : LOG_WARNING,
				     c->authed ? "closed by the client" :
				     "authentication failed: closed before AUTH");
			return;
		}
		if (n < 0) {
			/* a reset before AUTH (a port probe that closed with
			 * our challenge unread) is a failed authentication
			 */
			client_close(r, c, LOG_WARNING, "%s%s",
				     c->authed ? "" : "authentication failed: ",
				     frame_error(n));
			return;
		}
		c->last_rx = now;
		while ((n = krep_relay_buf_next(&c->in, &f)) > 0)
			if (!client_frame(r, c, &f, now))
				return;
		if (n < 0) {
			client_close(r, c, LOG_WARNING, "%s%s",
				     c->authed ? "" : "authentication failed: ",
				     frame_error(n));
			return;
		}
	}
	client_flush(r, c);
}

/* Forward datagrams of @fd as @type frames. */
static void client_nl_read(struct relay *r, struct client *c, int fd,
			   uint8_t type)
{
	const char *what = type == KREP_RELAY_EVENT ? "event" : "request";
	ssize_t n;
	int i;

	for (i = 0; i < BURST; i++) {
		if (krep_relay_buf_pending(&c->out) >= OUT_HIGH)
			break;
		n = recv(fd, r->scratch, KREP_RELAY_PAYLOAD_MAX,
			 MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0 && errno == ENOBUFS && type == KREP_RELAY_EVENT) {
			if (!client_queue(r, c, KREP_RELAY_EVENTS_LOST, NULL,
					  0))
				return;
			continue;
		}
		if (n < 0) {
			client_close(r, c, LOG_ERR, "netlink %s socket: %s%s",
				     what, strerror(errno), errno == ENOBUFS ?
				     " (replies were lost)" : "");
			return;
		}
		if (!n) {
			client_close(r, c, LOG_ERR, "netlink %s socket closed",
				     what);
			return;
		}
		if (n > KREP_RELAY_PAYLOAD_MAX) {
			if (type == KREP_RELAY_EVENT) {
				if (!client_queue(r, c, KREP_RELAY_EVENTS_LOST,
						  NULL, 0))
					return;
				continue;
			}
			client_close(r, c, LOG_ERR,
				     "a reply of %zd bytes does not fit in a frame (at most %u)",
				     n, KREP_RELAY_PAYLOAD_MAX);
			return;
		}
		if (!client_queue(r, c, type, r->scratch, n))
			return;
	}
	client_flush(r, c);
}

/* Deadlines of @c; returns false if it was closed. *next: the nearest. */
static bool client_timers(struct relay *r, struct client *c, uint64_t now,
			  uint64_t *next)
{
	const struct krep_relay_cfg *cfg = r->cfg;
	uint64_t t;

	if (!c->authed) {
		t = c->since + cfg->auth_ms;
		if (now >= t) {
			client_close(r, c, LOG_WARNING,
				     "authentication failed: no AUTH within %d ms",
				     cfg->auth_ms);
			return false;
		}
		if (t < *next)
			*next = t;
		return true;
	}
	if (now >= c->last_rx + cfg->dead_ms) {
		/* while its output is held back, it was not read either */
		if (krep_relay_buf_pending(&c->out) >= OUT_HIGH)
			client_close(r, c, LOG_WARNING,
				     "too slow: %zu bytes not taken in %d ms",
				     krep_relay_buf_pending(&c->out),
				     cfg->dead_ms);
		else
			client_close(r, c, LOG_WARNING, "silent for %d ms",
				     cfg->dead_ms);
		return false;
	}
	if (now >= c->last_ping + cfg->ping_ms) {
		c->last_ping = now;
		if (!client_queue(r, c, KREP_RELAY_PING, NULL, 0) ||
		    !client_flush(r, c))
			return false;
	}
	t = c->last_ping + cfg->ping_ms;
	if (c->last_rx + cfg->dead_ms < t)
		t = c->last_rx + cfg->dead_ms;
	if (t < *next)
		*next = t;
	return true;
}

static void peer_name(const struct sockaddr_storage *ss, char *buf,
		      size_t size)
{
	struct krep_ep ep = { .family = AF_UNSPEC };

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		ep.family = AF_INET;
		ep.addr.v4 = in->sin_addr;
		ep.port = ntohs(in->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		ep.family = AF_INET6;
		ep.addr.v6 = in6->sin6_addr;
		ep.port = ntohs(in6->sin6_port);
	}
	krep_ep_format(&ep, buf, size);
	if (ep.family == AF_UNSPEC)
		snprintf(buf, size, "(unix)");
}

static void relay_accept(struct relay *r, int lfd, uint64_t now)
{
	struct sockaddr_storage ss;
	char name[KREP_EP_STRLEN];
	struct client *c;
	socklen_t len;
	uint8_t nonce[KREP_RELAY_NONCE_LEN];
	int fd, i, one = 1;

	for (;;) {
		len = sizeof(ss);
		fd = accept4(lfd, (struct sockaddr *)&ss, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				r->cfg->log(LOG_ERR, "accept: %s",
					    strerror(errno));
			return;
		}
		peer_name(&ss, name, sizeof(name));
		c = NULL;
		for (i = 0; i < r->cfg->max_clients; i++) {
			if (r->clients[i].fd < 0) {
				c = &r->clients[i];
				break;
			}
		}
		if (!c) {
			r->cfg->log(LOG_WARNING,
				    "client %s refused: %d clients already",
				    name, r->cfg->max_clients);
			close(fd);
			continue;
		}
		krep_relay_random(nonce, sizeof(nonce));
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		snprintf(c->name, sizeof(c->name), "%s", name);
		memcpy(c->snonce, nonce, sizeof(nonce));
		c->since = now;
		r->cfg->log(LOG_INFO, "client %s connected", c->name);
		if (client_queued(r, c, krep_relay_hello_put(&c->out, nonce),
				  KREP_RELAY_HELLO))
			client_flush(r, c);
	}
}

static void relay_free(struct relay *r)
{
	int i;

	for (i = 0; i < KREP_RELAY_CLIENTS; i++)
		if (r->clients[i].fd >= 0)
			client_close(r, &r->clients[i], LOG_INFO,
				     "the relay is stopping");
	free(r->scratch);
}

int krep_relay_serve(int lfd, int stop_fd, const struct krep_relay_cfg *cfg)
{
	struct pollfd pfd[2 + 3 * KREP_RELAY_CLIENTS];
	struct {
		struct client *c;
		enum which which;
	} map[2 + 3 * KREP_RELAY_CLIENTS];
	struct relay r = {
		.cfg = cfg,
		.ops = cfg->ops ? cfg->ops : &kernel_ops,
	};
	uint64_t now, next;
	nfds_t n, i, base;
	struct client *c;
	int k, timeout, ret = 0;

	if (cfg->max_clients < 1 || cfg->max_clients > KREP_RELAY_CLIENTS)
		return -EINVAL;
	for (k = 0; k < KREP_RELAY_CLIENTS; k++) {
		r.clients[k].fd = -1;
		r.clients[k].nl.req_fd = r.clients[k].nl.ev_fd = -1;
	}
	r.scratch = malloc(KREP_RELAY_PAYLOAD_MAX);
	if (!r.scratch)
		return -ENOMEM;
	for (;;) {
		now = krep_relay_now_ms();
		next = UINT64_MAX;
		for (k = 0; k < cfg->max_clients; k++)
			if (r.clients[k].fd >= 0)
				client_timers(&r, &r.clients[k], now, &next);
		n = 0;
		if (stop_fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = stop_fd,
						    .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		base = n;
		for (k = 0; k < cfg->max_clients; k++) {
			bool room;

			c = &r.clients[k];
			if (c->fd < 0)
				continue;
			room = krep_relay_buf_pending(&c->out) < OUT_HIGH;
			map[n].c = c;
			map[n].which = W_TCP;
			pfd[n++] = (struct pollfd){
				.fd = c->fd,
				.events = (room ? POLLIN : 0) |
					  (krep_relay_buf_pending(&c->out) ?
					   POLLOUT : 0),
			};
			if (!c->authed || !room)
				continue;
			map[n].c = c;
			map[n].which = W_REQ;
			pfd[n++] = (struct pollfd){ .fd = c->nl.req_fd,
						    .events = POLLIN };
			if (c->nl.ev_fd >= 0) {
				map[n].c = c;
				map[n].which = W_EV;
				pfd[n++] = (struct pollfd){ .fd = c->nl.ev_fd,
							    .events = POLLIN };
			}
		}
		timeout = -1;
		if (next != UINT64_MAX)
			timeout = next > now ? (int)(next - now) : 0;
		if (poll(pfd, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			cfg->log(LOG_ERR, "poll: %s", strerror(errno));
			break;
		}
		if (stop_fd >= 0 && pfd[0].revents)
			break;
		now = krep_relay_now_ms();
		for (i = base; i < n; i++) {
			c = map[i].c;
			/* closed earlier in this turn (reused only below) */
			if (c->fd < 0 || !pfd[i].revents)
				continue;
			switch (map[i].which) {
			case W_TCP:
				if (pfd[i].revents & POLLOUT &&
				    !client_flush(&r, c))
					break;
				if (pfd[i].revents &
				    (POLLIN | POLLERR | POLLHUP))
					client_read(&r, c, now);
				break;
			case W_REQ:
				if (c->authed)
					client_nl_read(&r, c, c->nl.req_fd,
						       KREP_RELAY_REPLY);
				break;
			case W_EV:
				if (c->authed && c->nl.ev_fd >= 0)
					client_nl_read(&r, c, c->nl.ev_fd,
						       KREP_RELAY_EVENT);
				break;
			}
		}
		if (pfd[base - 1].revents)
			relay_accept(&r, lfd, now);
	}
	relay_free(&r);
	return ret;
}

/* ---- krepd --relay ------------------------------------------------- */

static int relay_listen(const struct krep_ep *ep, const char *addr)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int fd, one = 1;

	if (ep->family == AF_INET) {
		struct sockaddr_in *in = (void *)&ss;

		in->sin_family = AF_INET;
		in->sin_addr = ep->addr.v4;
		in->sin_port = htons(ep->port);
		len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (void *)&ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_addr = ep->addr.v6;
		in6->sin6_port = htons(ep->port);
		len = sizeof(*in6);
	}
	fd = socket(ep->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "%s: relay: socket: %s\n", krep_prog,
			strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) ||
	    listen(fd, KREP_RELAY_CLIENTS)) {
		fprintf(stderr, "%s: relay: cannot listen on %s: %s\n",
			krep_prog, addr, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int krep_relay_main(const char *listen, const char *secret_file,
		    const char *netns)
{
	struct krep_relay_cfg cfg = {
		.log = krep_log,
		.max_clients = KREP_RELAY_CLIENTS,
		.auth_ms = KREP_RELAY_AUTH_MS,
		.ping_ms = KREP_RELAY_PING_MS,
		.dead_ms = KREP_RELAY_DEAD_MS,
	};
	struct krep_relay_secret *secret;
	struct signalfd_siginfo si;
	const char *why = NULL;
	char err[512];
	struct krep_ep ep;
	int lfd = -1, sfd = -1, ret = 1;
	sigset_t set;

	if (krep_ep_parse(listen, &ep, &why) || !ep.port) {
		fprintf(stderr, "%s: --relay '%s': %s (A.B.C.D:PORT or [IPV6]:PORT)\n",
			krep_prog, listen, why ? why : "port 0");
		return 2;
	}
	if (krep_relay_crypto_init()) {
		fprintf(stderr, "%s: relay: libsodium cannot be initialized\n",
			krep_prog);
		return 1;
	}
	secret = calloc(1, sizeof(*secret));
	if (!secret) {
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return 1;
	}
	if (krep_relay_secret_load(secret_file, secret, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", krep_prog, err);
		goto out;
	}
	cfg.secret = secret;
	if (netns && krep_netns_enter(netns))
		goto out;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, NULL) ||
	    (sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", krep_prog,
			strerror(errno));
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);
	lfd = relay_listen(&ep, listen);
	if (lfd < 0)
		goto out;
	cfg.log(LOG_NOTICE, "relay listening on %s%s%s", listen,
		netns ? " in network namespace " : "", netns ? netns : "");
	if (krep_relay_serve(lfd, sfd, &cfg))
		goto out;
	if (read(sfd, &si, sizeof(si)) == sizeof(si))
		cfg.log(LOG_NOTICE, "received SIG%s, exiting",
			sigabbrev_np(si.ssi_signo) ?: "?");
	ret = 0;
out:
	if (lfd >= 0)
		close(lfd);
	if (sfd >= 0)
		close(sfd);
	krep_relay_secret_wipe(secret);
	free(secret);
	return ret;
}
