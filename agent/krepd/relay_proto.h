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
 * size or a wrong MAC closes the connection). Its frames are as above, in
 * the clear:
 *
 *	server -> HELLO    be16 version (2), server nonce (32 bytes,
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
 * the other side chose: a recorded handshake cannot be replayed. (A
 * recorded handshake does let an eavesdropper test guesses of the
 * secret offline: make it random, not a passphrase.) Version 1 had the
 * same handshake and sent every later frame in the clear; the two do not
 * talk to each other (a client refuses a HELLO of another version).
 *
 * Session keys, one per direction, bind the whole handshake: with T the
 * payloads of HELLO, AUTH and AUTH_OK as sent (34 + 68 + 38 bytes),
 *
 *	key c2s = HMAC-SHA256(secret, "krep-relay-key-c2s" || T)
 *	key s2c = HMAC-SHA256(secret, "krep-relay-key-s2c" || T)
 *
 * so they are new for every connection (both nonces are in T), and a
 * flags, family or group field altered on the way gives the two sides
 * different keys: the first sealed frame then fails. Every frame after
 * the handshake, in both directions, is sealed with ChaCha20-Poly1305
 * (IETF, libsodium's crypto_aead_chacha20poly1305_ietf):
 *
 *	be32 length	1 + 8 + n + 16
 *	u8   type	enum krep_relay_type, in the clear
 *	be64 seq	0 for a direction's first sealed frame, then +1
 *	     n bytes	the payload, encrypted
 *	     16 bytes	the Poly1305 tag over the 13 bytes of length, type
 *			and seq (additional data) and the encrypted payload
 *
 * with the key of its direction and the 12-byte nonce be32 direction
 * (1: client to relay, 2: relay to client) || be64 seq. The receiver
 * checks the tag (in constant time), then the seq, and refuses, closing
 * the connection with one log line saying which: a frame shorter than
 * seq and tag (truncated, or a short one in the clear), a tag that does
 * not verify (any bit altered, bytes cut from the end, a frame in the
 * clear, one of the other direction or of another connection), and a
 * frame whose (authenticated) seq is not the next one (replayed,
 * reordered, or one before it was removed). Nothing of a frame is acted
 * on before it passed.
 *
 * Then (payloads as they are before sealing):
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

#define KREP_RELAY_VERSION	2
#define KREP_RELAY_HDR_LEN	5		/* be32 length, u8 type */
/* the length field's maximum */
#define KREP_RELAY_FRAME_MAX	(1U << 20)
#define KREP_RELAY_NONCE_LEN	32
#define KREP_RELAY_MAC_LEN	32		/* HMAC-SHA256 */
#define KREP_RELAY_KEY_LEN	32		/* a direction's key */
#define KREP_RELAY_SEQ_LEN	8
#define KREP_RELAY_TAG_LEN	16		/* Poly1305 */
/* what sealing adds to a payload: seq and tag */
#define KREP_RELAY_SEAL_LEN	(KREP_RELAY_SEQ_LEN + KREP_RELAY_TAG_LEN)
/* the largest payload, sealed or not (a sealed frame of it is the largest) */
#define KREP_RELAY_PAYLOAD_MAX	(KREP_RELAY_FRAME_MAX - 1 - KREP_RELAY_SEAL_LEN)

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

/* What the handshake's frames carried: the input of the session keys. */
struct krep_relay_hs {
	uint16_t version;
	uint8_t snonce[KREP_RELAY_NONCE_LEN];
	uint32_t flags;
	uint8_t cnonce[KREP_RELAY_NONCE_LEN];
	uint8_t cmac[KREP_RELAY_MAC_LEN];	/* the client's proof */
	uint8_t smac[KREP_RELAY_MAC_LEN];	/* the server's proof */
	uint16_t family;
	uint32_t group;
};

/* The two sides; a sealed frame's direction is the side that sent it. */
enum krep_relay_side {
	KREP_RELAY_SIDE_CLIENT = 1,
	KREP_RELAY_SIDE_SERVER = 2,
};

/* One end's sealing state once the handshake is done. */
struct krep_relay_keys {
	uint8_t tx_key[KREP_RELAY_KEY_LEN], rx_key[KREP_RELAY_KEY_LEN];
	uint32_t tx_dir, rx_dir;
	uint64_t tx_seq;	/* of the next frame sent */
	uint64_t rx_seq;	/* of the next frame expected */
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

/*
 * Load libsodium (sodium_init()); call before anything below. 0, or -EIO
 * if it cannot be used. Calling it again is harmless.
 */
int krep_relay_crypto_init(void);

/* The client's and the server's proofs. */
void krep_relay_client_mac(const struct krep_relay_secret *s,
			   const uint8_t snonce[KREP_RELAY_NONCE_LEN],
			   const uint8_t cnonce[KREP_RELAY_NONCE_LEN],
			   uint8_t mac[KREP_RELAY_MAC_LEN]);
void krep_relay_server_mac(const struct krep_relay_secret *s,
			   const uint8_t snonce[KREP_RELAY_NONCE_LEN],
			   const uint8_t cnonce[KREP_RELAY_NONCE_LEN],
			   uint8_t mac[KREP_RELAY_MAC_LEN]);

/* Compare two proofs in constant time. */
bool krep_relay_mac_equal(const uint8_t a[KREP_RELAY_MAC_LEN],
			  const uint8_t b[KREP_RELAY_MAC_LEN]);

/*
 * @side's keys of a session whose handshake carried @hs (sequence numbers
 * from 0); krep_relay_keys_wipe() them when the connection closes.
 */
void krep_relay_keys_derive(struct krep_relay_keys *k,
			    const struct krep_relay_secret *s,
			    const struct krep_relay_hs *hs,
			    enum krep_relay_side side);
void krep_relay_keys_wipe(struct krep_relay_keys *k);

/*
 * Append a sealed frame of @type (the next sequence number of @k):
 * 0, -EMSGSIZE if the payload is above KREP_RELAY_PAYLOAD_MAX, -ENOMEM.
 */
int krep_relay_seal_put(struct krep_relay_buf *b, struct krep_relay_keys *k,
			uint8_t type, const void *payload, size_t len);

/*
 * Check and decrypt, in place, the sealed frame @f that
 * krep_relay_buf_next() took (its header is still in front of its
 * payload, and its bytes are writable until the next call on that
 * buffer), and leave @f as the payload sent. Returns 0, or
 * -EBADMSG with the reason in @why ("bad frame: ..."), for a frame that
 * is too short, fails authentication, or is not the next one.
 */
int krep_relay_unseal(struct krep_relay_keys *k, struct krep_relay_frame *f,
		      char *why, size_t whylen);

/*
 * Read the shared secret from @path: the file's bytes without one
 * trailing newline, KREP_RELAY_SECRET_MIN..KREP_RELAY_SECRET_MAX of them,
 * from a regular file no group or other user may access. Returns 0 or a
 * negative errno with the reason in @err.
 */
int krep_relay_secret_load(const char *path, struct krep_relay_secret *s,
			   char *err, size_t errlen);
void krep_relay_secret_wipe(struct krep_relay_secret *s);

/* @len random bytes (libsodium's randombytes_buf(), which cannot fail). */
void krep_relay_random(void *buf, size_t len);

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t krep_relay_now_ms(void);

#endif
