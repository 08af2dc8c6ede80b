/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: the proofs brokers authenticate each other with in HELLO
 * (uapi/linux/krep_wire.h), HMAC-SHA256 from the kernel crypto API, and
 * the keys of a connection's encryption derived from the same handshake.
 */
#ifndef _KREP_AUTH_H
#define _KREP_AUTH_H

#include <linux/types.h>
#include <linux/krep_wire.h>

/* a copy of a broker's secret, taken under RCU, wiped after use */
struct krep_secret {
	u8 key[64];
	u32 len;			/* 0: none */
};

int krep_auth_proof(const struct krep_secret *s, bool leader,
		    const u8 *nonce_a, const u8 *nonce_b, u32 id_a, u32 id_b,
		    u8 out[KREP_WIRE_PROOF_LEN]);
bool krep_auth_check(const struct krep_secret *s, bool leader,
		     const u8 *nonce_a, const u8 *nonce_b, u32 id_a, u32 id_b,
		     const u8 *proof);
/* one direction's TLS 1.3 record keys: AES-256-GCM key, static IV */
struct krep_tls_dir {
	u8 key[32];
	u8 salt[4];
	u8 iv[8];
};

int krep_auth_tls_keys(const struct krep_secret *s, const u8 *nonce_l,
		       const u8 *nonce_f, u32 id_l, u32 id_f,
		       struct krep_tls_dir *l2f, struct krep_tls_dir *f2l);
void krep_secret_wipe(struct krep_secret *s);

#endif /* _KREP_AUTH_H */
