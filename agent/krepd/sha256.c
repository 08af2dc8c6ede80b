// SPDX-License-Identifier: GPL-2.0
/*
 * SHA-256 as FIPS 180-4 section 6.2 describes it, and HMAC over it as
 * RFC 2104 does (keys longer than a block are hashed first). Tested
 * against the FIPS 180-4 examples and RFC 4231 in test_relay.c.
 */
#include <string.h>

#include "sha256.h"

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5,
	0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
	0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
	0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
	0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, unsigned int n)
{
	return (x >> n) | (x << (32 - n));
}

static uint32_t load_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void store_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* FIPS 180-4 6.2.2: one 512-bit block into the hash value. */
static void compress(uint32_t h[8], const uint8_t *block)
{
	uint32_t w[64], a, b, c, d, e, f, g, hh, t1, t2;
	int t;

	for (t = 0; t < 16; t++)
		w[t] = load_be32(block + 4 * t);
	for (t = 16; t < 64; t++) {
		uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^
			      (w[t - 15] >> 3);
		uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^
			      (w[t - 2] >> 10);

		w[t] = w[t - 16] + s0 + w[t - 7] + s1;
	}
	a = h[0];
	b = h[1];
	c = h[2];
	d = h[3];
	e = h[4];
	f = h[5];
	g = h[6];
	hh = h[7];
	for (t = 0; t < 64; t++) {
		t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +
		     ((e & f) ^ (~e & g)) + K[t] + w[t];
		t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +
		     ((a & b) ^ (a & c) ^ (b & c));
		hh = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += hh;
	krep_sha256_wipe(w, sizeof(w));
}

void krep_sha256_init(struct krep_sha256 *c)
{
	static const uint32_t h0[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(c->h, h0, sizeof(h0));
	c->bytes = 0;
	c->nbuf = 0;
}

void krep_sha256_update(struct krep_sha256 *c, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t n;

	c->bytes += len;
	if (c->nbuf) {
		n = KREP_SHA256_BLOCK - c->nbuf;
		if (n > len)
			n = len;
		memcpy(c->buf + c->nbuf, p, n);
		c->nbuf += n;
		p += n;
		len -= n;
		if (c->nbuf < KREP_SHA256_BLOCK)
			return;
		compress(c->h, c->buf);
		c->nbuf = 0;
	}
	for (; len >= KREP_SHA256_BLOCK; p += KREP_SHA256_BLOCK,
	     len -= KREP_SHA256_BLOCK)
		compress(c->h, p);
	memcpy(c->buf, p, len);
	c->nbuf = len;
}

/* FIPS 180-4 5.1.1: a 1 bit, zeros, and the length in bits (64 bits). */
void krep_sha256_final(struct krep_sha256 *c, uint8_t out[KREP_SHA256_LEN])
{
	uint64_t bits = c->bytes * 8;
	int i;

	c->buf[c->nbuf++] = 0x80;
	if (c->nbuf > KREP_SHA256_BLOCK - 8) {
		memset(c->buf + c->nbuf, 0, KREP_SHA256_BLOCK - c->nbuf);
		compress(c->h, c->buf);
		c->nbuf = 0;
	}
	memset(c->buf + c->nbuf, 0, KREP_SHA256_BLOCK - 8 - c->nbuf);
	store_be32(c->buf + 56, bits >> 32);
	store_be32(c->buf + 60, bits);
	compress(c->h, c->buf);
	for (i = 0; i < 8; i++)
		store_be32(out + 4 * i, c->h[i]);
	krep_sha256_wipe(c, sizeof(*c));
}

void krep_sha256(const void *data, size_t len, uint8_t out[KREP_SHA256_LEN])
{
	struct krep_sha256 c;

	krep_sha256_init(&c);
	krep_sha256_update(&c, data, len);
	krep_sha256_final(&c, out);
}

/* RFC 2104: H(K ^ opad || H(K ^ ipad || text)). */
void krep_hmac_sha256_init(struct krep_hmac_sha256 *h, const void *key,
			   size_t keylen)
{
	uint8_t k[KREP_SHA256_BLOCK] = { 0 }, pad[KREP_SHA256_BLOCK];
	int i;

	if (keylen > KREP_SHA256_BLOCK)
		krep_sha256(key, keylen, k);
	else
		memcpy(k, key, keylen);
	for (i = 0; i < KREP_SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x36;
	krep_sha256_init(&h->inner);
	krep_sha256_update(&h->inner, pad, sizeof(pad));
	for (i = 0; i < KREP_SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x5c;
	krep_sha256_init(&h->outer);
	krep_sha256_update(&h->outer, pad, sizeof(pad));
	krep_sha256_wipe(k, sizeof(k));
	krep_sha256_wipe(pad, sizeof(pad));
}

void krep_hmac_sha256_update(struct krep_hmac_sha256 *h, const void *data,
			     size_t len)
{
	krep_sha256_update(&h->inner, data, len);
}

void krep_hmac_sha256_final(struct krep_hmac_sha256 *h,
			    uint8_t out[KREP_SHA256_LEN])
{
	uint8_t ih[KREP_SHA256_LEN];

	krep_sha256_final(&h->inner, ih);
	krep_sha256_update(&h->outer, ih, sizeof(ih));
	krep_sha256_final(&h->outer, out);
	krep_sha256_wipe(ih, sizeof(ih));
}

bool krep_sha256_equal(const void *a, const void *b, size_t len)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;
	size_t i;

	for (i = 0; i < len; i++)
		d |= x[i] ^ y[i];
	return !d;
}

void krep_sha256_wipe(void *p, size_t len)
{
	volatile uint8_t *v = p;

	while (len--)
		*v++ = 0;
}
