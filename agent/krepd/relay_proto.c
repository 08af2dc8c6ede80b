// SPDX-License-Identifier: GPL-2.0
/*
 * The relay protocol's framing, handshake frames, proofs and secret; see
 * relay_proto.h for the wire format.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "relay_proto.h"
#include "secret.h"

#define BUF_MIN		(64 * 1024)
/* an empty buffer larger than this is given back */
#define BUF_KEEP	(256 * 1024)

static const char CLIENT_LABEL[] = "krep-relay-client";
static const char SERVER_LABEL[] = "krep-relay-server";

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

int krep_relay_hello_put(struct krep_relay_buf *b,
			 const uint8_t snonce[KREP_RELAY_NONCE_LEN])
{
	uint8_t p[KREP_RELAY_HELLO_LEN];

	put_be16(p, KREP_RELAY_VERSION);
	memcpy(p + 2, snonce, KREP_RELAY_NONCE_LEN);
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

	put_be32(p, flags);
	memcpy(p + 4, cnonce, KREP_RELAY_NONCE_LEN);
	memcpy(p + 4 + KREP_RELAY_NONCE_LEN, mac, KREP_RELAY_MAC_LEN);
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

	memcpy(p, mac, KREP_RELAY_MAC_LEN);
	put_be16(p + KREP_RELAY_MAC_LEN, family);
	put_be32(p + KREP_RELAY_MAC_LEN + 2, group);
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

/* HMAC-SHA256(secret, label || a || b), the label without its NUL. */
static void proof(const struct krep_relay_secret *s, const char *label,
		  size_t label_len, const uint8_t *a, const uint8_t *b,
		  uint8_t mac[KREP_RELAY_MAC_LEN])
{
	struct krep_hmac_sha256 h;

	krep_hmac_sha256_init(&h, s->key, s->len);
	krep_hmac_sha256_update(&h, label, label_len);
	krep_hmac_sha256_update(&h, a, KREP_RELAY_NONCE_LEN);
	krep_hmac_sha256_update(&h, b, KREP_RELAY_NONCE_LEN);
	krep_hmac_sha256_final(&h, mac);
	krep_sha256_wipe(&h, sizeof(h));
}

void krep_relay_client_mac(const struct krep_relay_secret *s,
			   const uint8_t snonce[KREP_RELAY_NONCE_LEN],
			   const uint8_t cnonce[KREP_RELAY_NONCE_LEN],
			   uint8_t mac[KREP_RELAY_MAC_LEN])
{
	proof(s, CLIENT_LABEL, sizeof(CLIENT_LABEL) - 1, snonce, cnonce, mac);
}

void krep_relay_server_mac(const struct krep_relay_secret *s,
			   const uint8_t snonce[KREP_RELAY_NONCE_LEN],
			   const uint8_t cnonce[KREP_RELAY_NONCE_LEN],
			   uint8_t mac[KREP_RELAY_MAC_LEN])
{
	proof(s, SERVER_LABEL, sizeof(SERVER_LABEL) - 1, cnonce, snonce, mac);
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
	krep_sha256_wipe(s, sizeof(*s));
}

int krep_relay_random(void *buf, size_t len)
{
	uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

uint64_t krep_relay_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
