/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Between session.c and the transports behind it (session.h's public
 * calls dispatch through ops): what a transport such as the relay
 * (session_relay.c) implements, and the netlink reply parsing every
 * transport shares.
 *
 * A transport allocates a structure that starts with struct krep_session,
 * fills in ops, resolves the family with krep_session_resolve() and
 * returns &its->s. Bytes that arrive for a request (whole netlink
 * messages, as a netlink socket would deliver them) go through
 * krep_session_rx_feed(); bytes on the event channel through
 * krep_session_events_feed(). Both skip what they do not expect, so a
 * late reply to a request that timed out is dropped by its sequence
 * number rather than taken for the answer to the next one.
 */
#ifndef KREP_AGENT_SESSION_IMPL_H
#define KREP_AGENT_SESSION_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session.h"

struct krep_session_ops {
	/* as krep_session_request(); @req is the caller's */
	int (*request)(struct krep_session *s, struct nl_msg *req,
		       krep_genl_reply_fn fn, void *arg, int timeout_ms);
	int (*event_fd)(const struct krep_session *s);	/* -1: none */
	int (*read_events)(struct krep_session *s, krep_genl_reply_fn fn,
			   void *arg);
	bool (*stale)(const struct krep_session *s);	/* NULL: never */
	void (*close)(struct krep_session *s);		/* frees it all */
};

struct krep_session {
	const struct krep_session_ops *ops;
	int family;			/* "krep" in the broker's namespace */
	uint32_t events_group;		/* "events", 0 if the module has none */
	uint32_t seq;			/* of the last request */
	struct krep_genl_status st;	/* how the last request ended */
};

/* One request's progress through its replies. */
struct krep_session_rx {
	uint32_t seq;			/* the request's */
	krep_genl_reply_fn fn;
	void *arg;
	int err;			/* the kernel's -errno */
	int reply_err;			/* first error @fn returned */
	bool done;			/* ack, error or end of dump seen */
};

/*
 * Number @req (nlmsg_seq from ++s->seq, NLM_F_REQUEST | NLM_F_ACK), clear
 * s->st and set @rx up to collect its replies.
 */
void krep_session_rx_start(struct krep_session *s, struct krep_session_rx *rx,
			   struct nl_msg *req, krep_genl_reply_fn fn, void *arg);
/*
 * Handle @len bytes of netlink messages: replies of @rx's request go to
 * its fn, an NLMSG_ERROR or NLMSG_DONE ends it (the kernel's error and
 * extack are kept in s->st). Returns 0, or -EPROTO for bytes that are not
 * netlink messages.
 */
int krep_session_rx_feed(struct krep_session *s, struct krep_session_rx *rx,
			 const void *buf, size_t len);
/* The result of a finished @rx, as krep_session_request() returns it. */
int krep_session_rx_result(const struct krep_session_rx *rx);

/* Hand each message of the krep family in @buf to @fn. 0 or -EPROTO. */
int krep_session_events_feed(struct krep_session *s, const void *buf,
			     size_t len, krep_genl_reply_fn fn, void *arg);

/*
 * Ask the broker's generic netlink controller (through ops->request) for
 * the "krep" family and its "events" group; sets s->family and
 * s->events_group. Returns 0, -ENOENT when the module is not loaded
 * (*why says so), or the request's error.
 */
int krep_session_resolve(struct krep_session *s, int timeout_ms,
			 const char **why);

#endif
