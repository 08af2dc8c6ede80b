/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The relay transport of a controller session (session.h): a TCP
 * connection to `krepd --relay` on the broker's host (relay_proto.h).
 * krep_session_relay_open() (declared in session.h) connects, proves it
 * holds the secret of a->secret_file, checks that the relay holds it too,
 * and takes the family and "events" group ids from the relay's AUTH_OK;
 * the session's calls then reach session_relay.c through its ops
 * (session_impl.h). HOST in a->relay may be a name (getaddrinfo()).
 *
 * What a caller of a relay session must know:
 *  - krep_session_event_fd() is never -1, even without events, and must
 *    be polled, with krep_session_read_events() called when it is
 *    readable: that is how the relay's PINGs (one a second) are
 *    answered. A session left unread for KREP_RELAY_DEAD_MS is dropped
 *    by the relay; its next call then fails with a channel error.
 *  - krep_session_read_events() returns -ENOBUFS, after handing over what
 *    was queued, when events were lost on the way (the relay's event
 *    socket overran, or this side's queue did), as a netlink socket
 *    does; the channel still works, but the caller missed events.
 *  - The channel broke: -ECONNRESET (closed or reset by the relay),
 *    -ECONNABORTED (nothing from the relay for KREP_RELAY_DEAD_MS),
 *    -EPROTO (the relay broke the protocol), -EBADMSG (a frame from the
 *    relay failed its check: altered, replayed, lost on the way; also
 *    logged), or a socket's -errno;
 *    krep_relay_error() says why. Every later call returns the same:
 *    close the session and open another.
 *  - -EMSGSIZE, and the channel still works, for a request larger than a
 *    frame (KREP_RELAY_PAYLOAD_MAX); the relay drops the connection
 *    rather than forward a reply larger than that.
 */
#ifndef KREP_AGENT_SESSION_RELAY_H
#define KREP_AGENT_SESSION_RELAY_H

#include "session.h"

/* connect and handshake, together */
#define KREP_RELAY_OPEN_MS	3000

/* Why @s, a relay session, broke; NULL while it works or if not a relay. */
const char *krep_relay_error(const struct krep_session *s);

#endif
