// SPDX-License-Identifier: GPL-2.0
/*
 * A controller session through `krepd --relay`: the relay transport
 * behind session.h (its ops, session_impl.h); see session_relay.h, and
 * relay_proto.h for the protocol.
 *
 * Everything happens in the caller's calls: a request sends its REQUEST
 * and reads frames until the ack of its sequence number or its deadline
 * (replies are parsed by session.c's krep_session_rx_feed());
 * krep_session_read_events() reads what is there. Frames that are not for
 * the current call are dealt with on the way: EVENTs are queued for
 * krep_session_read_events(), PINGs answered, REPLYs to a request that
 * timed out dropped. The descriptor to poll is an epoll instance that
 * holds the TCP socket and an eventfd which is readable while events are
 * queued, so a caller's poll() also wakes for events a request read.
 *
 * Every frame after the handshake is sealed both ways with the session's
 * keys (relay_proto.h). A frame from the relay that fails its check
 * breaks the channel (-EBADMSG) before anything of it is used, with one
 * log line that says why.
 *
 * Timers (no timer of their own: checked in every call and by a request's
 * wait; the relay's PINGs make the descriptor readable every second):
 *   ping     a PING to the relay at most every KREP_RELAY_PING_MS;
 *   dead     nothing from the relay for KREP_RELAY_DEAD_MS: the channel
 *            is broken (-ECONNABORTED);
 *   open     connect and handshake within KREP_RELAY_OPEN_MS.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <netlink/msg.h>

#include "log.h"
#include "relay_proto.h"
#include "session_impl.h"
#include "session_relay.h"

/* events queued and not read yet, at most */
#define EVQ_MAX		(8U << 20)
/* reads from the socket in one call, at most: a flood can't starve us */
#define BURST		64

struct krep_relay_session {
	struct krep_session s;	/* first: what session.c sees */
	int fd;			/* TCP */
	int efd;		/* eventfd: events are queued */
	int epfd;		/* fd and efd: what callers poll */
	bool events;
	char relay[128];	/* HOST:PORT, for the log */
	struct krep_relay_keys keys;
	uint64_t last_rx, last_ping;
	struct krep_relay_buf in, out;
	struct krep_relay_buf evq;	/* EVENT frames as received */
	bool lost;		/* events were dropped */
	struct krep_session_rx *rx;	/* the request waiting for its ack */
	void *dgram;		/* an aligned copy of one datagram */
	size_t dgram_size;
	int broken;		/* 0, or the -errno the channel broke with */
	char why[256];
};

static const struct krep_session_ops relay_ops;

static char open_why[512];

static int broke(struct krep_relay_session *rs, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The channel is gone: remember why, and answer @err from now on. */
static int broke(struct krep_relay_session *rs, int err, const char *fmt, ...)
{
	va_list ap;

	if (rs->broken)
		return rs->broken;
	va_start(ap, fmt);
	vsnprintf(rs->why, sizeof(rs->why), fmt, ap);
	va_end(ap);
	rs->broken = err;
	return err;
}

static void evq_signal(struct krep_relay_session *rs)
{
	uint64_t one = 1;

	if (write(rs->efd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full, and readable anyway */
	}
}

/*
 * @p in rs->dgram, so that netlink headers are aligned (a frame's payload
 * starts at an odd offset); NULL if out of memory.
 */
static void *aligned(struct krep_relay_session *rs, const uint8_t *p,
		     size_t len)
{
	void *d;

	if (len > rs->dgram_size) {
		d = realloc(rs->dgram, len);
		if (!d)
			return NULL;
		rs->dgram = d;
		rs->dgram_size = len;
	}
	memcpy(rs->dgram, p, len);
	return rs->dgram;
}

static void queue_event(struct krep_relay_session *rs,
			const struct krep_relay_frame *f)
{
	if (!rs->events)
		return;
	if (krep_relay_buf_pending(&rs->evq) + KREP_RELAY_HDR_LEN + f->len >
	    EVQ_MAX ||
	    krep_relay_frame_put(&rs->evq, KREP_RELAY_EVENT, f->payload,
				 f->len))
		rs->lost = true;
	evq_signal(rs);
}

/* A frame of the relay failed its check: the channel is gone. */
static int bad_frame(struct krep_relay_session *rs, const char *why)
{
	krep_log(LOG_WARNING, "relay %s: %s: session closed", rs->relay, why);
	return broke(rs, -EBADMSG, "%s", why);
}

/* Queue a sealed frame; 0 or the channel's error. */
static int tx_frame(struct krep_relay_session *rs, uint8_t type,
		    const void *p, size_t len)
{
	int err = krep_relay_seal_put(&rs->out, &rs->keys, type, p, len);

	if (err)
		return broke(rs, err, "cannot queue %s: %s",
			     krep_relay_type_name(type), strerror(-err));
	return 0;
}

/* Act on the complete frames received; 0 or the channel's error. */
static int rx_frames(struct krep_relay_session *rs)
{
	struct krep_relay_frame f;
	char why[256];
	int n, err;
	void *p;

	while ((n = krep_relay_buf_next(&rs->in, &f)) > 0) {
		if (krep_relay_unseal(&rs->keys, &f, why, sizeof(why)))
			return bad_frame(rs, why);
		switch (f.type) {
		case KREP_RELAY_REPLY:
			/* without a request waiting: a reply that came late */
			if (!rs->rx || rs->rx->done)
				break;
			p = aligned(rs, f.payload, f.len);
			if (!p)
				return broke(rs, -ENOMEM, "out of memory");
			if (krep_session_rx_feed(&rs->s, rs->rx, p, f.len))
				return broke(rs, -EPROTO,
					     "protocol error: a REPLY that is not netlink messages");
			break;
		case KREP_RELAY_EVENT:
			queue_event(rs, &f);
			break;
		case KREP_RELAY_EVENTS_LOST:
			if (rs->events) {
				rs->lost = true;
				evq_signal(rs);
			}
			break;
		case KREP_RELAY_PING:
			err = tx_frame(rs, KREP_RELAY_PONG, NULL, 0);
			if (err)
				return err;
			break;
		case KREP_RELAY_PONG:
			break;
		default:
			return broke(rs, -EPROTO,
				     "protocol error: the relay sent a %s frame (type %u)",
				     krep_relay_type_name(f.type), f.type);
		}
	}
	if (n == -EMSGSIZE)
		return broke(rs, -EPROTO,
			     "protocol error: the relay sent a frame longer than 1 MiB");
	if (n < 0)
		return broke(rs, -EPROTO,
			     "protocol error: the relay sent a frame of length 0");
	return 0;
}

/*
 * Read what the socket holds and act on it, check the relay is alive,
 * send a PING when due and what is queued. Never blocks.
 */
static int pump(struct krep_relay_session *rs)
{
	uint64_t now;
	long n;
	int i, err;

	if (rs->broken)
		return rs->broken;
	for (i = 0; i < BURST; i++) {
		n = krep_relay_buf_recv(rs->fd, &rs->in);
		if (n == -EAGAIN)
			break;
		if (!n)
			return broke(rs, -ECONNRESET,
				     "the relay closed the connection");
		if (n == -EMSGSIZE || n == -EPROTO)
			return broke(rs, -EPROTO,
				     "protocol error: the relay sent a frame of a bad length");
		if (n < 0)
			return broke(rs, n, "receive: %s", strerror(-n));
		rs->last_rx = krep_relay_now_ms();
		err = rx_frames(rs);
		if (err)
			return err;
	}
	now = krep_relay_now_ms();
	if (now >= rs->last_rx + KREP_RELAY_DEAD_MS)
		return broke(rs, -ECONNABORTED,
			     "nothing from the relay for %d ms",
			     KREP_RELAY_DEAD_MS);
	if (now >= rs->last_ping + KREP_RELAY_PING_MS) {
		err = tx_frame(rs, KREP_RELAY_PING, NULL, 0);
		if (err)
			return err;
		rs->last_ping = now;
	}
	err = krep_relay_buf_send(rs->fd, &rs->out);
	if (err)
		return broke(rs, err, "send: %s", strerror(-err));
	return 0;
}

/* Wait until the socket is readable (or writable, if there is output). */
static int wait_io(struct krep_relay_session *rs, uint64_t until)
{
	struct pollfd pfd = { .fd = rs->fd, .events = POLLIN };
	uint64_t now = krep_relay_now_ms(), t;
	int ret;

	if (krep_relay_buf_pending(&rs->out))
		pfd.events |= POLLOUT;
	t = rs->last_ping + KREP_RELAY_PING_MS;
	if (t > rs->last_rx + KREP_RELAY_DEAD_MS)
		t = rs->last_rx + KREP_RELAY_DEAD_MS;
	if (t > until)
		t = until;
	ret = poll(&pfd, 1, t > now ? (int)(t - now) : 0);
	if (ret < 0 && errno != EINTR)
		return broke(rs, -errno, "poll: %s", strerror(errno));
	return 0;
}

static struct krep_relay_session *to_relay(const struct krep_session *s)
{
	return (struct krep_relay_session *)s;
}

static int relay_request(struct krep_session *s, struct nl_msg *req,
			 krep_genl_reply_fn fn, void *arg, int timeout_ms)
{
	struct krep_relay_session *rs = to_relay(s);
	struct nlmsghdr *nlh = nlmsg_hdr(req);
	struct krep_session_rx rx;
	uint64_t deadline;
	int err;

	memset(&s->st, 0, sizeof(s->st));
	if (rs->broken)
		return rs->broken;
	if (nlh->nlmsg_len > KREP_RELAY_PAYLOAD_MAX)
		return -EMSGSIZE;
	krep_session_rx_start(s, &rx, req, fn, arg);
	/* not queued, nothing sent (the sequence stays): the channel works */
	err = krep_relay_seal_put(&rs->out, &rs->keys, KREP_RELAY_REQUEST, nlh,
				  nlh->nlmsg_len);
	if (err)
		return err;
	deadline = krep_relay_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	rs->rx = &rx;
	for (;;) {
		err = pump(rs);
		if (err || rx.done)
			break;
		if (krep_relay_now_ms() >= deadline) {
			err = -ETIMEDOUT;
			break;
		}
		err = wait_io(rs, deadline);
		if (err)
			break;
	}
	rs->rx = NULL;
	return err ? err : krep_session_rx_result(&rx);
}

static int relay_read_events(struct krep_session *s, krep_genl_reply_fn fn,
			     void *arg)
{
	struct krep_relay_session *rs = to_relay(s);
	struct krep_relay_buf q;
	struct krep_relay_frame f;
	uint64_t cnt;
	bool lost;
	int err, ferr = 0;
	void *p;

	if (read(rs->efd, &cnt, sizeof(cnt)) < 0) {
		/* EAGAIN: nothing was queued */
	}
	err = pump(rs);
	/* take the queue: @fn may make requests that queue more */
	q = rs->evq;
	memset(&rs->evq, 0, sizeof(rs->evq));
	lost = rs->lost;
	rs->lost = false;
	while (krep_relay_buf_next(&q, &f) > 0) {
		/* not rs->dgram: a request that @fn makes uses that */
		p = malloc(f.len);
		if (!p) {
			lost = true;
			continue;
		}
		memcpy(p, f.payload, f.len);
		if (krep_session_events_feed(s, p, f.len, fn, arg) && !ferr)
			ferr = broke(rs, -EPROTO,
				     "protocol error: an EVENT that is not netlink messages");
		free(p);
	}
	krep_relay_buf_free(&q);
	if (err || ferr)
		return err ? err : ferr;
	return lost ? -ENOBUFS : 0;
}

static int relay_event_fd(const struct krep_session *s)
{
	return to_relay(s)->epfd;
}

static void relay_close(struct krep_session *s)
{
	struct krep_relay_session *rs = to_relay(s);

	if (rs->epfd >= 0)
		close(rs->epfd);
	if (rs->efd >= 0)
		close(rs->efd);
	if (rs->fd >= 0)
		close(rs->fd);
	krep_relay_buf_free(&rs->in);
	krep_relay_buf_free(&rs->out);
	krep_relay_buf_free(&rs->evq);
	krep_relay_keys_wipe(&rs->keys);
	free(rs->dgram);
	free(rs);
}

static const struct krep_session_ops relay_ops = {
	.request	= relay_request,
	.event_fd	= relay_event_fd,
	.read_events	= relay_read_events,
	.close		= relay_close,
};

const char *krep_relay_error(const struct krep_session *s)
{
	if (!s || s->ops != &relay_ops || !to_relay(s)->broken)
		return NULL;
	return to_relay(s)->why;
}

/* ---- opening ------------------------------------------------------- */

static const char *fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static const char *fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(open_why, sizeof(open_why), fmt, ap);
	va_end(ap);
	return open_why;
}

/* "HOST:PORT" or "[IPV6]:PORT" into @host and @port. */
static int split_addr(const char *s, char *host, size_t hsize, char *port,
		      size_t psize, const char **why)
{
	const char *h = s, *colon;
	size_t hlen;

	if (*s == '[') {
		colon = strchr(s, ']');
		if (!colon || colon[1] != ':') {
			*why = "expected [IPV6]:PORT";
			return -EINVAL;
		}
		h = s + 1;
		hlen = colon - h;
		colon++;
	} else {
		colon = strrchr(s, ':');
		if (!colon) {
			*why = "missing ':PORT'";
			return -EINVAL;
		}
		if (memchr(s, ':', colon - s)) {
			*why = "IPv6 addresses need brackets: [ADDR]:PORT";
			return -EINVAL;
		}
		hlen = colon - s;
	}
	if (!hlen || hlen >= hsize) {
		*why = "bad host";
		return -EINVAL;
	}
	if (!colon[1] || strlen(colon + 1) >= psize ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1)) {
		*why = "bad port";
		return -EINVAL;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	strcpy(port, colon + 1);
	return 0;
}

static int remaining(uint64_t deadline)
{
	uint64_t now = krep_relay_now_ms();

	return deadline > now ? (int)(deadline - now) : 0;
}

/* Connect to @ai before @deadline; the socket, or -errno. */
static int connect_one(const struct addrinfo *ai, uint64_t deadline)
{
	struct pollfd pfd;
	socklen_t len;
	int fd, err, one = 1;

	fd = socket(ai->ai_family,
		    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS) {
		err = -errno;
		goto err;
	}
	pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
	for (;;) {
		err = poll(&pfd, 1, remaining(deadline));
		if (err > 0)
			break;
		if (!err) {
			err = -ETIMEDOUT;
			goto err;
		}
		if (errno != EINTR) {
			err = -errno;
			goto err;
		}
	}
	len = sizeof(err);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)) {
		err = -errno;
		goto err;
	}
	if (err) {
		err = -err;
		goto err;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
err:
	close(fd);
	return err;
}

/*
 * The next frame of the handshake, before @deadline: 1 with @f set, or
 * 0 with *why set.
 */
static int handshake_frame(struct krep_relay_session *rs,
			   struct krep_relay_frame *f, uint64_t deadline,
			   const char *closed, const char **why)
{
	struct pollfd pfd = { .fd = rs->fd, .events = POLLIN };
	long n;
	int ret;

	for (;;) {
		n = krep_relay_buf_next(&rs->in, f);
		if (n > 0)
			return 1;
		if (n < 0) {
			*why = fail("protocol error: bad frame length in the handshake");
			return 0;
		}
		ret = poll(&pfd, 1, remaining(deadline));
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0) {
			*why = fail("poll: %s", strerror(errno));
			return 0;
		}
		if (!ret) {
			*why = fail("no answer within %d ms", KREP_RELAY_OPEN_MS);
			return 0;
		}
		n = krep_relay_buf_recv(rs->fd, &rs->in);
		if (n == -EAGAIN)
			continue;
		if (!n) {
			*why = fail("%s", closed);
			return 0;
		}
		if (n < 0) {
			*why = fail("%s", n == -EMSGSIZE || n == -EPROTO ?
				    "protocol error: bad frame length in the handshake" :
				    strerror(-n));
			return 0;
		}
	}
}

/* Send all of rs->out before @deadline; false with *why set. */
static bool handshake_send(struct krep_relay_session *rs, uint64_t deadline,
			   const char **why)
{
	struct pollfd pfd = { .fd = rs->fd, .events = POLLOUT };
	int err;

	for (;;) {
		err = krep_relay_buf_send(rs->fd, &rs->out);
		if (err) {
			*why = fail("send: %s", strerror(-err));
			return false;
		}
		if (!krep_relay_buf_pending(&rs->out))
			return true;
		if (poll(&pfd, 1, remaining(deadline)) == 0) {
			*why = fail("no progress within %d ms",
				    KREP_RELAY_OPEN_MS);
			return false;
		}
	}
}

/* HELLO: the relay's version and nonce. */
static bool handshake_hello(struct krep_relay_session *rs,
			    struct krep_relay_hs *hs, uint64_t deadline,
			    const char **why)
{
	struct krep_relay_frame f;

	if (!handshake_frame(rs, &f, deadline,
			     "the relay closed the connection before HELLO",
			     why))
		return false;
	if (krep_relay_hello_get(&f, &hs->version, hs->snonce)) {
		*why = fail("protocol error: expected HELLO, got %s of %zu bytes",
			    krep_relay_type_name(f.type), f.len);
		return false;
	}
	if (hs->version != KREP_RELAY_VERSION) {
		*why = fail("the relay speaks version %u of the protocol, not %d%s",
			    hs->version, KREP_RELAY_VERSION,
			    hs->version < KREP_RELAY_VERSION ?
			    " (upgrade its krepd)" : "");
		return false;
	}
	return true;
}

/* AUTH_OK: the relay's proof, checked, and the family and group ids. */
static bool handshake_auth_ok(struct krep_relay_session *rs,
			      const struct krep_relay_secret *secret,
			      struct krep_relay_hs *hs, uint64_t deadline,
			      const char **why)
{
	uint8_t want[KREP_RELAY_MAC_LEN];
	struct krep_relay_frame f;

	if (!handshake_frame(rs, &f, deadline,
			     "the relay closed the connection after AUTH (wrong secret?)",
			     why))
		return false;
	if (krep_relay_auth_ok_get(&f, hs->smac, &hs->family, &hs->group)) {
		*why = fail("protocol error: expected AUTH_OK, got %s of %zu bytes",
			    krep_relay_type_name(f.type), f.len);
		return false;
	}
	krep_relay_server_mac(secret, hs->snonce, hs->cnonce, want);
	if (!krep_relay_mac_equal(hs->smac, want)) {
		*why = fail("the relay failed to prove it holds the secret");
		return false;
	}
	if (!hs->family) {
		*why = fail("the krep module is not loaded on the relay's host");
		return false;
	}
	return true;
}

static bool handshake(struct krep_relay_session *rs,
		      const struct krep_relay_secret *secret, uint64_t deadline,
		      const char **why)
{
	struct krep_relay_hs hs = { 0 };
	int err;

	if (!handshake_hello(rs, &hs, deadline, why))
		return false;
	krep_relay_random(hs.cnonce, sizeof(hs.cnonce));
	hs.flags = rs->events ? KREP_RELAY_F_EVENTS : 0;
	krep_relay_client_mac(secret, hs.snonce, hs.cnonce, hs.cmac);
	err = krep_relay_auth_put(&rs->out, hs.flags, hs.cnonce, hs.cmac);
	if (err) {
		*why = fail("cannot queue AUTH: %s", strerror(-err));
		return false;
	}
	if (!handshake_send(rs, deadline, why) ||
	    !handshake_auth_ok(rs, secret, &hs, deadline, why))
		return false;
	/* every frame from now on is sealed */
	krep_relay_keys_derive(&rs->keys, secret, &hs, KREP_RELAY_SIDE_CLIENT);
	rs->s.family = hs.family;
	rs->s.events_group = hs.group;
	return true;
}

struct krep_session *krep_session_relay_open(const struct krep_session_addr *a,
					     bool events, const char **why)
{
	struct addrinfo hints = {
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG,
	};
	struct epoll_event ev = { .events = EPOLLIN };
	struct krep_relay_secret *secret = NULL;
	struct krep_relay_session *rs;
	char host[128], port[8], err_text[512];
	struct addrinfo *res = NULL, *ai;
	const char *bad = NULL;
	uint64_t deadline;
	int err = 0, gai;

	if (krep_relay_crypto_init()) {
		*why = "libsodium cannot be initialized";
		return NULL;
	}
	deadline = krep_relay_now_ms() + KREP_RELAY_OPEN_MS;
	if (split_addr(a->relay, host, sizeof(host), port, sizeof(port),
		       &bad)) {
		*why = fail("relay address '%s': %s", a->relay, bad);
		return NULL;
	}
	rs = calloc(1, sizeof(*rs));
	secret = calloc(1, sizeof(*secret));
	if (!rs || !secret) {
		*why = "out of memory";
		goto err;
	}
	rs->s.ops = &relay_ops;
	rs->s.family = -1;
	rs->fd = rs->efd = rs->epfd = -1;
	rs->events = events;
	snprintf(rs->relay, sizeof(rs->relay), "%s", a->relay);
	if (krep_relay_secret_load(a->secret_file, secret, err_text,
				   sizeof(err_text))) {
		*why = fail("%s", err_text);
		goto err;
	}
	gai = getaddrinfo(host, port, &hints, &res);
	if (gai) {
		*why = fail("relay %s: %s", a->relay, gai == EAI_SYSTEM ?
			    strerror(errno) : gai_strerror(gai));
		goto err;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		err = connect_one(ai, deadline);
		if (err >= 0)
			break;
	}
	freeaddrinfo(res);
	if (err < 0) {
		*why = fail("cannot connect to relay %s: %s", a->relay,
			    strerror(-err));
		goto err;
	}
	rs->fd = err;
	if (!handshake(rs, secret, deadline, &bad)) {
		snprintf(err_text, sizeof(err_text), "%s", bad);
		*why = fail("relay %s: %s", a->relay, err_text);
		goto err;
	}
	krep_relay_secret_wipe(secret);
	free(secret);
	secret = NULL;

	rs->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	rs->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (rs->efd < 0 || rs->epfd < 0 ||
	    epoll_ctl(rs->epfd, EPOLL_CTL_ADD, rs->fd,
		      (ev.data.fd = rs->fd, &ev)) ||
	    epoll_ctl(rs->epfd, EPOLL_CTL_ADD, rs->efd,
		      (ev.data.fd = rs->efd, &ev))) {
		*why = fail("event descriptor: %s", strerror(errno));
		goto err;
	}
	rs->last_rx = rs->last_ping = krep_relay_now_ms();
	/* frames that came with AUTH_OK: no poller would wake for them */
	if (rx_frames(rs)) {
		*why = fail("relay %s: %s", a->relay, rs->why);
		goto err;
	}
	return &rs->s;
err:
	if (secret) {
		krep_relay_secret_wipe(secret);
		free(secret);
	}
	if (rs)
		relay_close(&rs->s);
	return NULL;
}
