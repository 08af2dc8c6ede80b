// SPDX-License-Identifier: GPL-2.0
/*
 * The relay protocol's framing, handshake frames, proofs, session keys,
 * sealed frames and secret; see relay_proto.h for the wire format. The
 * cryptography is libsodium's: HMAC-SHA256 for the proofs and the keys,
 * ChaCha20-Poly1305 (IETF) for the frames.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "relay_proto.h"
#include "secret.h"

_Static_assert(KREP_RELAY_MAC_LEN == crypto_auth_hmacsha256_BYTES,
	       "a proof is an HMAC-SHA256");
_Static_assert(KREP_RELAY_KEY_LEN == crypto_aead_chacha20poly1305_ietf_KEYBYTES,
	       "a session key is a ChaCha20-Poly1305 key");
_Static_assert(KREP_RELAY_TAG_LEN == crypto_aead_chacha20poly1305_ietf_ABYTES,
	       "a sealed frame's tag is a Poly1305 tag");
_Static_assert(4 + KREP_RELAY_SEQ_LEN ==
	       crypto_aead_chacha20poly1305_ietf_NPUBBYTES,
	       "a sealed frame's nonce is be32 direction || be64 seq");

#define BUF_MIN		(64 * 1024)
/* an empty buffer larger than this is given back */
#define BUF_KEEP	(256 * 1024)

static const char CLIENT_LABEL[] = "krep-relay-client";
static const char SERVER_LABEL[] = "krep-relay-server";
static const char C2S_LABEL[] = "krep-relay-key-c2s";
static const char S2C_LABEL[] = "krep-relay-key-s2c";

/* additional data of a sealed frame: its header and seq */
#define SEAL_AD_LEN	(KREP_RELAY_HDR_LEN + KREP_RELAY_SEQ_LEN)

const char *krep_relay_type_name(unsigned int type)
{
	static const char * const names[] = {
		[KREP_RELAY_HELLO]	= "HELLO",
		[KREP_RELAY_AUTH]	= "AUTH",
		[KREP_RELAY_AUTH_OK]	= "AUTH_OK",
		[KREP_RELAY_REQUEST]	= "REQUEST",
		[KREP_RELAY_REPLY]	= "REPLY",
		[KREP_RELAY_EVENT]	= "EVENT",
		[KREP_RELAY_EVENTS_LOST] = "EVENTS_LOST",
		[KREP_RELAY_PING]	= "PING",
		[KREP_RELAY_PONG]	= "PONG",
	};

	if (type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "unknown";
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, v >> 32);
	put_be32(p + 4, v);
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

/* The length field of a frame header: 0 (valid), -EPROTO or -EMSGSIZE. */
static int length_check(uint32_t n)
{
	if (!n)
		return -EPROTO;
	if (n > KREP_RELAY_FRAME_MAX)
		return -EMSGSIZE;
	return 0;
}

long krep_relay_frame_parse(const uint8_t *p, size_t len,
			    struct krep_relay_frame *f)
{
	uint32_t n;
	int err;

	if (len < 4)
		return 0;
	n = get_be32(p);
	err = length_check(n);
	if (err)
		return err;
	if (len - 4 < n)
		return 0;
	f->type = p[4];
	f->payload = p + KREP_RELAY_HDR_LEN;
	f->len = n - 1;
	return 4 + (long)n;
}

/* Make room for @more bytes after b->len. */
static int buf_reserve(struct krep_relay_buf *b, size_t more)
{
	size_t pending = b->len - b->off, cap;
	uint8_t *d;

	if (b->cap - b->len >= more)
		return 0;
	if (b->off) {
		memmove(b->data, b->data + b->off, pending);
		b->off = 0;
		b->len = pending;
		if (b->cap - b->len >= more)
			return 0;
	}
	cap = b->cap ? b->cap : BUF_MIN;
	while (cap - pending < more)
		cap *= 2;
	d = realloc(b->data, cap);
	if (!d)
		return -ENOMEM;
	b->data = d;
	b->cap = cap;
	return 0;
}

/* All of @b was consumed: start over at 0, give a large buffer back. */
static void buf_reset(struct krep_relay_buf *b)
{
	b->off = b->len = 0;
	if (b->cap > BUF_KEEP) {
		free(b->data);
		b->data = NULL;
		b->cap = 0;
	}
}

void krep_relay_buf_free(struct krep_relay_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

int krep_relay_frame_put(struct krep_relay_buf *b, uint8_t type,
			 const void *payload, size_t len)
{
	uint8_t *p;
	int err;

	if (len > KREP_RELAY_PAYLOAD_MAX)
		return -EMSGSIZE;
	err = buf_reserve(b, KREP_RELAY_HDR_LEN + len);
	if (err)
		return err;
	p = b->data + b->len;
	put_be32(p, 1 + len);
	p[4] = type;
	if (len)
		memcpy(p + KREP_RELAY_HDR_LEN, payload, len);
	b->len += KREP_RELAY_HDR_LEN + len;
	return 0;
}

long krep_relay_buf_recv(int fd, struct krep_relay_buf *b)
{
	size_t pending = b->len - b->off, need = KREP_RELAY_HDR_LEN;
	ssize_t n;
	int err;

	if (pending >= 4) {
		uint32_t flen = get_be32(b->data + b->off);

		err = length_check(flen);
		if (err)
			return err;
		need = 4 + (size_t)flen;
	}
	/* room for the rest of this frame at least */
	err = buf_reserve(b, need > pending ? need - pending : 1);
	if (err)
		return err;
	n = recv(fd, b->data + b->len, b->cap - b->len, MSG_DONTWAIT);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	b->len += n;
	return n;
}

int krep_relay_buf_next(struct krep_relay_buf *b, struct krep_relay_frame *f)
{
	long n;

	/* the previous frame's bytes stay until this call: @f pointed there */
	if (b->off == b->len) {
		buf_reset(b);
		return 0;
	}
	n = krep_relay_frame_parse(b->data + b->off, b->len - b->off, f);
	if (n <= 0)
		return n;
	b->off += n;
	return 1;
}

int krep_relay_buf_send(int fd, struct krep_relay_buf *b)
{
	ssize_t n;

	while (b->off < b->len) {
		n = send(fd, b->data + b->off, b->len - b->off,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		b->off += n;
	}
	buf_reset(b);
	return 0;
}

/* ---- handshake ----------------------------------------------------- */

/* The handshake's payloads, as sent and as the session keys hash them. */
static void hello_encode(uint8_t p[KREP_RELAY_HELLO_LEN], uint16_t version,
			 const uint8_t snonce[KREP_RELAY_NONCE_LEN])
{
	put_be16(p, version);
	memcpy(p + 2, snonce, KREP_RELAY_NONCE_LEN);
}

static void auth_encode(uint8_t p[KREP_RELAY_AUTH_LEN], uint32_t flags,
			const uint8_t cnonce[KREP_RELAY_NONCE_LEN],
			const uint8_t mac[KREP_RELAY_MAC_LEN])
{
	put_be32(p, flags);
	memcpy(p + 4, cnonce, KREP_RELAY_NONCE_LEN);
	memcpy(p + 4 + KREP_RELAY_NONCE_LEN, mac, KREP_RELAY_MAC_LEN);
}

static void auth_ok_encode(uint8_t p[KREP_RELAY_AUTH_OK_LEN],
			   const uint8_t mac[KREP_RELAY_MAC_LEN],
			   uint16_t family, uint32_t group)
{
	memcpy(p, mac, KREP_RELAY_MAC_LEN);
	put_be16(p + KREP_RELAY_MAC_LEN, family);
	put_be32(p + KREP_RELAY_MAC_LEN + 2, group);
}

int krep_relay_hello_put(struct krep_relay_buf *b,
			 const uint8_t snonce[KREP_RELAY_NONCE_LEN])
{
	uint8_t p[KREP_RELAY_HELLO_LEN];

	hello_encode(p, KREP_RELAY_VERSION, snonce);
	return krep_relay_frame_put(b, KREP_RELAY_HELLO, p, sizeof(p));
}

int krep_relay_hello_get(const struct krep_relay_frame *f, uint16_t *version,
			 uint8_t snonce[KREP_RELAY_NONCE_LEN])
{
	if (f->type != KREP_RELAY_HELLO || f->len != KREP_RELAY_HELLO_LEN)
		return -EPROTO;
	*version = get_be16(f->payload);
	memcpy(snonce, f->payload + 2, KREP_RELAY_NONCE_LEN);
	return 0;
}

int krep_relay_auth_put(struct krep_relay_buf *b, uint32_t flags,
			const uint8_t cnonce[KREP_RELAY_NONCE_LEN],
			const uint8_t mac[KREP_RELAY_MAC_LEN])
{
	uint8_t p[KREP_RELAY_AUTH_LEN];

	auth_encode(p, flags, cnonce, mac);
	return krep_relay_frame_put(b, KREP_RELAY_AUTH, p, sizeof(p));
}

int krep_relay_auth_get(const struct krep_relay_frame *f, uint32_t *flags,
			uint8_t cnonce[KREP_RELAY_NONCE_LEN],
			uint8_t mac[KREP_RELAY_MAC_LEN])
{
	if (f->type != KREP_RELAY_AUTH || f->len != KREP_RELAY_AUTH_LEN)
		return -EPROTO;
	*flags = get_be32(f->payload);
	memcpy(cnonce, f->payload + 4, KREP_RELAY_NONCE_LEN);
	memcpy(mac, f->payload + 4 + KREP_RELAY_NONCE_LEN, KREP_RELAY_MAC_LEN);
	return 0;
}

int krep_relay_auth_ok_put(struct krep_relay_buf *b,
			   const uint8_t mac[KREP_RELAY_MAC_LEN],
			   uint16_t family, uint32_t group)
{
	uint8_t p[KREP_RELAY_AUTH_OK_LEN];

	auth_ok_encode(p, mac, family, group);
	return krep_relay_frame_put(b, KREP_RELAY_AUTH_OK, p, sizeof(p));
}

int krep_relay_auth_ok_get(const struct krep_relay_frame *f,
			   uint8_t mac[KREP_RELAY_MAC_LEN], uint16_t *family,
			   uint32_t *group)
{
	if (f->type != KREP_RELAY_AUTH_OK || f->len != KREP_RELAY_AUTH_OK_LEN)
		return -EPROTO;
	memcpy(mac, f->payload, KREP_RELAY_MAC_LEN);
	*family = get_be16(f->payload + KREP_RELAY_MAC_LEN);
	*group = get_be32(f->payload + KREP_RELAY_MAC_LEN + 2);
	return 0;
}

/* ---- proofs and keys ---------------------------------------------- */

int krep_relay_crypto_init(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

/* HMAC-SHA256(secret, label || a || b), the label without its NUL. */
static void hmac(const struct krep_relay_secret *s, const char *label,
		 const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
		 uint8_t mac[KREP_RELAY_MAC_LEN])
{
	crypto_auth_hmacsha256_state h;

	crypto_auth_hmacsha256_init(&h, s->key, s->len);
	crypto_auth_hmacsha256_update(&h, (const uint8_t *)label,
				      strlen(label));
	crypto_auth_hmacsha256_update(&h, a, alen);
	if (blen)
		crypto_auth_hmacsha256_update(&h, b, blen);
	crypto_auth_hmacsha256_final(&h, mac);
	sodium_memzero(&h, sizeof(h));
}

void krep_relay_client_mac(const struct krep_relay_secret *s,
			   const uint8_t snonce[KREP_RELAY_NONCE_LEN],
			   const uint8_t cnonce[KREP_RELAY_NONCE_LEN],
			   uint8_t mac[KREP_RELAY_MAC_LEN])
{
	hmac(s, CLIENT_LABEL, snonce, KREP_RELAY_NONCE_LEN, cnonce,
	     KREP_RELAY_NONCE_LEN, mac);
}

void krep_relay_server_mac(const struct krep_relay_secret *s,
			   const uint8_t snonce[KREP_RELAY_NONCE_LEN],
			   const uint8_t cnonce[KREP_RELAY_NONCE_LEN],
			   uint8_t mac[KREP_RELAY_MAC_LEN])
{
	hmac(s, SERVER_LABEL, cnonce, KREP_RELAY_NONCE_LEN, snonce,
	     KREP_RELAY_NONCE_LEN, mac);
}

bool krep_relay_mac_equal(const uint8_t a[KREP_RELAY_MAC_LEN],
			  const uint8_t b[KREP_RELAY_MAC_LEN])
{
	return !sodium_memcmp(a, b, KREP_RELAY_MAC_LEN);
}

void krep_relay_keys_derive(struct krep_relay_keys *k,
			    const struct krep_relay_secret *s,
			    const struct krep_relay_hs *hs,
			    enum krep_relay_side side)
{
	uint8_t t[KREP_RELAY_HELLO_LEN + KREP_RELAY_AUTH_LEN +
		  KREP_RELAY_AUTH_OK_LEN];
	uint8_t *c2s, *s2c;

	hello_encode(t, hs->version, hs->snonce);
	auth_encode(t + KREP_RELAY_HELLO_LEN, hs->flags, hs->cnonce, hs->cmac);
	auth_ok_encode(t + KREP_RELAY_HELLO_LEN + KREP_RELAY_AUTH_LEN,
		       hs->smac, hs->family, hs->group);
	memset(k, 0, sizeof(*k));
	if (side == KREP_RELAY_SIDE_CLIENT) {
		c2s = k->tx_key;
		s2c = k->rx_key;
		k->tx_dir = KREP_RELAY_SIDE_CLIENT;
		k->rx_dir = KREP_RELAY_SIDE_SERVER;
	} else {
		c2s = k->rx_key;
		s2c = k->tx_key;
		k->tx_dir = KREP_RELAY_SIDE_SERVER;
		k->rx_dir = KREP_RELAY_SIDE_CLIENT;
	}
	hmac(s, C2S_LABEL, t, sizeof(t), NULL, 0, c2s);
	hmac(s, S2C_LABEL, t, sizeof(t), NULL, 0, s2c);
	sodium_memzero(t, sizeof(t));
}

void krep_relay_keys_wipe(struct krep_relay_keys *k)
{
	sodium_memzero(k, sizeof(*k));
}

/* ---- sealed frames ------------------------------------------------- */

static void seal_nonce(uint8_t n[crypto_aead_chacha20poly1305_ietf_NPUBBYTES],
		       uint32_t dir, uint64_t seq)
{
	put_be32(n, dir);
	put_be64(n + 4, seq);
}

int krep_relay_seal_put(struct krep_relay_buf *b, struct krep_relay_keys *k,
			uint8_t type, const void *payload, size_t len)
{
	uint8_t nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES];
	size_t total = KREP_RELAY_HDR_LEN + KREP_RELAY_SEAL_LEN + len;
	uint8_t *p, *text;
	int err;

	if (len > KREP_RELAY_PAYLOAD_MAX)
		return -EMSGSIZE;
	if (k->tx_seq == UINT64_MAX)
		return -EOVERFLOW;
	err = buf_reserve(b, total);
	if (err)
		return err;
	p = b->data + b->len;
	put_be32(p, total - 4);
	p[4] = type;
	put_be64(p + KREP_RELAY_HDR_LEN, k->tx_seq);
	text = p + SEAL_AD_LEN;
	if (len)
		memcpy(text, payload, len);
	seal_nonce(nonce, k->tx_dir, k->tx_seq);
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(text, text + len,
			NULL, text, len, p, SEAL_AD_LEN, NULL, nonce,
			k->tx_key);
	k->tx_seq++;
	b->len += total;
	return 0;
}

int krep_relay_unseal(struct krep_relay_keys *k, struct krep_relay_frame *f,
		      char *why, size_t whylen)
{
	uint8_t nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES];
	const char *type = krep_relay_type_name(f->type);
	/* the payload is in the buffer krep_relay_buf_next() parsed */
	uint8_t *p = (uint8_t *)f->payload, *text;
	uint64_t seq;
	size_t len;

	if (f->len < KREP_RELAY_SEAL_LEN) {
		snprintf(why, whylen,
			 "bad frame: frame %" PRIu64 " (%s, type %u) of %zu bytes, too short to be sealed (at least %d): truncated, or sent in the clear",
			 k->rx_seq, type, f->type, f->len, KREP_RELAY_SEAL_LEN);
		return -EBADMSG;
	}
	len = f->len - KREP_RELAY_SEAL_LEN;
	seq = get_be64(p);
	text = p + KREP_RELAY_SEQ_LEN;
	seal_nonce(nonce, k->rx_dir, seq);
	/* the header and seq, as they came, precede the payload */
	if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(text, NULL,
			text, len, text + len, p - KREP_RELAY_HDR_LEN,
			SEAL_AD_LEN, nonce, k->rx_key)) {
		snprintf(why, whylen,
			 "bad frame: frame %" PRIu64 " (%s, type %u) failed authentication: altered, truncated, or not sealed by this connection's peer",
			 k->rx_seq, type, f->type);
		return -EBADMSG;
	}
	if (seq != k->rx_seq) {
		snprintf(why, whylen,
			 "bad frame: %s frame %" PRIu64 " when frame %" PRIu64 " was expected (%s)",
			 type, seq, k->rx_seq, seq < k->rx_seq ?
			 "replayed or reordered" : "frames lost or reordered");
		return -EBADMSG;
	}
	k->rx_seq++;
	f->payload = text;
	f->len = len;
	return 0;
}

/* ---- secret, randomness, time -------------------------------------- */

int krep_relay_secret_load(const char *path, struct krep_relay_secret *s,
			   char *err, size_t errlen)
{
	size_t len;
	int ret;

	ret = krep_secret_file_read(path, s->key, KREP_RELAY_SECRET_MIN,
				    KREP_RELAY_SECRET_MAX, &len, err, errlen);
	s->len = ret ? 0 : len;
	return ret;
}

void krep_relay_secret_wipe(struct krep_relay_secret *s)
{
	sodium_memzero(s, sizeof(*s));
}

void krep_relay_random(void *buf, size_t len)
{
	randombytes_buf(buf, len);
}

uint64_t krep_relay_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
