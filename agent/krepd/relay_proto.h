/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The relay protocol: what `krepd --relay` (relay.c) and a controller's
 * relay session (session_relay.c) say to each other over TCP.
 *
 * Every frame is
 *
 *	be32 length	bytes that follow: the type and the payload,
 *			1..KREP_RELAY_FRAME_MAX (anything else: close)
 *	u8   type	enum krep_relay_type
 *	     payload	length - 1 bytes
 *
 * Handshake (the server speaks first; a frame of any other type, a wrong
 * size or a wrong MAC closes the connection):
 *
 *	server -> HELLO    be16 version (1), server nonce (32 bytes,
 *			   random)
 *	client -> AUTH     be32 flags (KREP_RELAY_F_EVENTS), client nonce
 *			   (32 bytes, random), HMAC-SHA256(secret,
 *			   "krep-relay-client" || server nonce ||
 *			   client nonce)
 *	server -> AUTH_OK  HMAC-SHA256(secret, "krep-relay-server" ||
 *			   client nonce || server nonce), be16 id of the
 *			   "krep" generic netlink family (0: the module is
 *			   not loaded on the relay's host), be32 id of its
 *			   "events" multicast group (0: none)
 *
 * Each side proves it holds the secret without sending it, over nonces
 * the other side chose: a recorded handshake cannot be replayed. Frames
 * after the handshake are neither encrypted nor authenticated: run the
 * relay on a network an attacker cannot write to, or in a tunnel.
 *
 * Then:
 *
 *	client -> REQUEST  one netlink message (nlmsg_len = the payload) of
 *			   the krep family; the relay sends it to the kernel
 *			   from its own socket with nlmsg_pid 0 and the
 *			   client's sequence number (another nlmsg_type is
 *			   answered with -EPERM: the secret opens krep, not
 *			   every generic netlink family)
 *	server -> REPLY    one netlink datagram the kernel sent that socket
 *			   (replies, acks and errors, several messages of a
 *			   dump), as it came; a REQUEST the kernel refused to
 *			   take is answered with an NLMSG_ERROR of the relay's
 *			   making
 *	server -> EVENT    one datagram of the "events" group, when AUTH
 *			   asked for events
 *	server -> EVENTS_LOST  the relay's event socket overran: events were
 *			   dropped
 *	either -> PING     every KREP_RELAY_PING_MS; answered with PONG
 *	either -> PONG
 *
 * A peer from which nothing arrived for KREP_RELAY_DEAD_MS is dead.
 */
#ifndef KREP_AGENT_RELAY_PROTO_H
#define KREP_AGENT_RELAY_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

#define KREP_RELAY_VERSION	1
#define KREP_RELAY_HDR_LEN	5		/* be32 length, u8 type */
/* the length field's maximum */
#define KREP_RELAY_FRAME_MAX	(1U << 20)
#define KREP_RELAY_PAYLOAD_MAX	(KREP_RELAY_FRAME_MAX - 1)
#define KREP_RELAY_NONCE_LEN	32
#define KREP_RELAY_MAC_LEN	KREP_SHA256_LEN

#define KREP_RELAY_PING_MS	1000
#define KREP_RELAY_DEAD_MS	5000
#define KREP_RELAY_AUTH_MS	5000	/* a client's time to AUTH */

#define KREP_RELAY_SECRET_MIN	16
#define KREP_RELAY_SECRET_MAX	4096

enum krep_relay_type {
	KREP_RELAY_HELLO = 1,
	KREP_RELAY_AUTH,
	KREP_RELAY_AUTH_OK,
	KREP_RELAY_REQUEST,
	KREP_RELAY_REPLY,
	KREP_RELAY_EVENT,
	KREP_RELAY_EVENTS_LOST,
	KREP_RELAY_PING,
	KREP_RELAY_PONG,
};

/* AUTH flags */
#define KREP_RELAY_F_EVENTS	(1U << 0)
#define KREP_RELAY_F_ALL	KREP_RELAY_F_EVENTS

#define KREP_RELAY_HELLO_LEN	(2 + KREP_RELAY_NONCE_LEN)
#define KREP_RELAY_AUTH_LEN	\
	(4 + KREP_RELAY_NONCE_LEN + KREP_RELAY_MAC_LEN)
#define KREP_RELAY_AUTH_OK_LEN	(KREP_RELAY_MAC_LEN + 2 + 4)

/* One frame parsed in place: @payload points into the buffer. */
struct krep_relay_frame {
	uint8_t type;
	const uint8_t *payload;
	size_t len;
};

/*
 * A byte queue: bytes [off, len) of data are pending (to send, or
 * received and not parsed yet).
 */
struct krep_relay_buf {
	uint8_t *data;
	size_t off, len, cap;
};

struct krep_relay_secret {
	uint8_t key[KREP_RELAY_SECRET_MAX];
	size_t len;
};

const char *krep_relay_type_name(unsigned int type);

/*
 * Parse the frame at the start of @p (@len bytes). Returns its size in
 * bytes, 0 when more bytes are needed, -EMSGSIZE when its length field is
 * above KREP_RELAY_FRAME_MAX, -EPROTO when it is 0.
 */
long krep_relay_frame_parse(const uint8_t *p, size_t len,
			    struct krep_relay_frame *f);

/* Append a frame of @type; -EMSGSIZE if the payload is too long. */
int krep_relay_frame_put(struct krep_relay_buf *b, uint8_t type,
			 const void *payload, size_t len);

static inline size_t krep_relay_buf_pending(const struct krep_relay_buf *b)
{
	return b->len - b->off;
}

void krep_relay_buf_free(struct krep_relay_buf *b);

/*
 * Receive from the non-blocking stream @fd into @b: as much as is there
 * and fits, with room for at least the frame that starts at b->off.
 * Returns bytes read (> 0), 0 on EOF, -EAGAIN when nothing was there,
 * -EMSGSIZE/-EPROTO for a frame that can never be valid, or -errno.
 */
long krep_relay_buf_recv(int fd, struct krep_relay_buf *b);

/*
 * Take the next complete frame from @b into @f (valid until the next
 * call that changes @b). Returns 1, 0 if there is none yet, or the error
 * of krep_relay_frame_parse().
 */
int krep_relay_buf_next(struct krep_relay_buf *b, struct krep_relay_frame *f);

/* Send what @b holds to non-blocking @fd; 0 (maybe partly sent) or -errno. */
int krep_relay_buf_send(int fd, struct krep_relay_buf *b);

/* The handshake's frames. The _get()s return 0 or -EPROTO (wrong size). */
int krep_relay_hello_put(struct krep_relay_buf *b,
			 const uint8_t snonce[KREP_RELAY_NONCE_LEN]);
int krep_relay_hello_get(const struct krep_relay_frame *f, uint16_t *version,
			 uint8_t snonce[KREP_RELAY_NONCE_LEN]);
int krep_relay_auth_put(struct krep_relay_buf *b, uint32_t flags,
			const uint8_t cnonce[KREP_RELAY_NONCE_LEN],
			const uint8_t mac[KREP_RELAY_MAC_LEN]);
int krep_relay_auth_get(const struct krep_relay_frame *f, uint32_t *flags,
			uint8_t cnonce[KREP_RELAY_NONCE_LEN],
			uint8_t mac[KREP_RELAY_MAC_LEN]);
int krep_relay_auth_ok_put(struct krep_relay_buf *b,
			   const uint8_t mac[KREP_RELAY_MAC_LEN],
			   uint16_t family, uint32_t group);
int krep_relay_auth_ok_get(const struct krep_relay_frame *f,
			   uint8_t mac[KREP_RELAY_MAC_LEN], uint16_t *family,
			   uint32_t *group);

/* The client's and the server's proofs. */
void krep_relay_client_mac(const struct krep_relay_secret *s,
			   const uint8_t snonce[KREP_RELAY_NONCE_LEN],
			   const uint8_t cnonce[KREP_RELAY_NONCE_LEN],
			   uint8_t mac[KREP_RELAY_MAC_LEN]);
void krep_relay_server_mac(const struct krep_relay_secret *s,
			   const uint8_t snonce[KREP_RELAY_NONCE_LEN],
			   const uint8_t cnonce[KREP_RELAY_NONCE_LEN],
			   uint8_t mac[KREP_RELAY_MAC_LEN]);

/*
 * Read the shared secret from @path: the file's bytes without one
 * trailing newline, KREP_RELAY_SECRET_MIN..KREP_RELAY_SECRET_MAX of them,
 * from a regular file no group or other user may access. Returns 0 or a
 * negative errno with the reason in @err.
 */
int krep_relay_secret_load(const char *path, struct krep_relay_secret *s,
			   char *err, size_t errlen);
void krep_relay_secret_wipe(struct krep_relay_secret *s);

/* @len random bytes from getrandom(2); 0 or -errno. */
int krep_relay_random(void *buf, size_t len);

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t krep_relay_now_ms(void);

#endif
