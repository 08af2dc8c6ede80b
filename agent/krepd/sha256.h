/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the relay's
 * handshake (relay_proto.c): small, portable, no library. Not hardened
 * against timing attacks beyond what the algorithm is (no table lookups
 * on secret data); compare MACs with krep_sha256_equal().
 */
#ifndef KREP_AGENT_SHA256_H
#define KREP_AGENT_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KREP_SHA256_LEN		32
#define KREP_SHA256_BLOCK	64

struct krep_sha256 {
	uint32_t h[8];
	uint64_t bytes;			/* hashed so far */
	uint8_t buf[KREP_SHA256_BLOCK];
	size_t nbuf;
};

void krep_sha256_init(struct krep_sha256 *c);
void krep_sha256_update(struct krep_sha256 *c, const void *data, size_t len);
void krep_sha256_final(struct krep_sha256 *c, uint8_t out[KREP_SHA256_LEN]);
void krep_sha256(const void *data, size_t len, uint8_t out[KREP_SHA256_LEN]);

struct krep_hmac_sha256 {
	struct krep_sha256 inner, outer;
};

void krep_hmac_sha256_init(struct krep_hmac_sha256 *h, const void *key,
			   size_t keylen);
void krep_hmac_sha256_update(struct krep_hmac_sha256 *h, const void *data,
			     size_t len);
void krep_hmac_sha256_final(struct krep_hmac_sha256 *h,
			    uint8_t out[KREP_SHA256_LEN]);

/* Compare @len bytes in time that depends only on @len. */
bool krep_sha256_equal(const void *a, const void *b, size_t len);

/* Overwrite @len bytes of @p in a way the compiler keeps. */
void krep_sha256_wipe(void *p, size_t len);

#endif
