/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A controller's channel to one broker's "krep" generic netlink family,
 * however the broker is reached:
 *
 *   local   a netlink socket in krepd's own network namespace;
 *   netns   a netlink socket opened inside a named namespace
 *           (/run/netns/NAME; the socket stays bound to it);
 *   relay   a TCP connection to `krepd --relay` on the broker's host,
 *           which forwards netlink messages both ways after both ends
 *           proved they hold the shared secret (session_relay.c).
 *
 * Every request has a deadline: a broker that does not answer in time is
 * a failed request (-ETIMEDOUT), never a hung controller. Replies are
 * handed to @fn as libnl messages whatever the transport. A reply that
 * comes after its deadline is dropped by its sequence number.
 *
 * session.c implements local and netns; transports plug in through
 * session_impl.h. krep_session_relay_open() lives in session_relay.c,
 * which is built only when it exists: without it a relay broker cannot
 * be opened ("relay support not built").
 */
#ifndef KREP_AGENT_SESSION_H
#define KREP_AGENT_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "genl.h"

struct krep_session;

enum krep_session_kind {
	KREP_SESSION_LOCAL,
	KREP_SESSION_NETNS,
	KREP_SESSION_RELAY,
};

/* How to reach one broker (one "broker" line of krepd's config). */
struct krep_session_addr {
	enum krep_session_kind kind;
	char netns[64];			/* KREP_SESSION_NETNS */
	char relay[128];		/* KREP_SESSION_RELAY: HOST:PORT */
	char secret_file[256];		/* KREP_SESSION_RELAY */
};

/*
 * Open a channel and, when @events, join the "events" multicast group.
 * Returns NULL with *why set (a static string or one the session keeps)
 * when the broker cannot be reached now; callers retry later.
 */
struct krep_session *krep_session_open(const struct krep_session_addr *a,
				       bool events, const char **why);
struct krep_session *krep_session_relay_open(const struct krep_session_addr *a,
					     bool events, const char **why);
void krep_session_close(struct krep_session *s);

/*
 * True when the broker behind @s is gone for good and the session should
 * be closed (and opened again later): for a netns session, when
 * /run/netns/NAME vanished or now names another namespace than the one
 * the socket was opened in. An open netlink socket keeps its namespace
 * alive, so a deleted namespace is destroyed only once it is closed.
 */
bool krep_session_stale(const struct krep_session *s);

/* The family id to build requests with (krep_genl_msg_new()). */
int krep_session_family(const struct krep_session *s);

/*
 * Send @req and pass each reply to @fn until the ack (or NLMSG_DONE of a
 * dump). Returns 0; the kernel's -errno (details in
 * krep_session_status()); -ETIMEDOUT after @timeout_ms; or another
 * negative errno when the channel broke (the session must be reopened).
 */
int krep_session_request(struct krep_session *s, struct nl_msg *req,
			 krep_genl_reply_fn fn, void *arg, int timeout_ms);
const struct krep_genl_status *krep_session_status(const struct krep_session *s);

/*
 * Events: a descriptor to poll for POLLIN, and a call that hands every
 * queued event to @fn without blocking. Returns 0 or a negative errno
 * when the channel broke.
 */
int krep_session_event_fd(const struct krep_session *s);
int krep_session_read_events(struct krep_session *s, krep_genl_reply_fn fn,
			     void *arg);

#endif
