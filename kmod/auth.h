/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: the proofs brokers authenticate each other with in HELLO
 * (uapi/linux/krep_wire.h), HMAC-SHA256 from the kernel crypto API.
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
void krep_secret_wipe(struct krep_secret *s);

#endif /* _KREP_AUTH_H */
