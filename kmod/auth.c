// SPDX-License-Identifier: GPL-2.0
/*
 * krep: broker authentication proofs.
 *
 * The leader proves it holds the cluster secret over the follower's
 * nonce then its own; the follower, over the leader's nonce then its
 * own. Each proof also binds both broker ids and its direction's label,
 * so a proof cannot be replayed on another connection, reflected back
 * to its sender, or moved to another pair of brokers.
 */
#include <crypto/hash.h>
#include <crypto/algapi.h>
#include <linux/err.h>
#include <linux/string.h>

#include "auth.h"

static const char label_leader[] = "krep-hello-leader";
static const char label_follower[] = "krep-hello-follower";

/**
 * krep_auth_proof - HMAC-SHA256(secret, label || nonce_a || nonce_b ||
 * be32 id_a || be32 id_b)
 * @s: the secret
 * @leader: the leader's label, else the follower's
 * @nonce_a: the first nonce (the other side's)
 * @nonce_b: the second (the prover's)
 * @id_a: the prover's broker id
 * @id_b: the other side's
 * @out: the proof
 *
 * May sleep. Return: 0 or a negative errno.
 */
int krep_auth_proof(const struct krep_secret *s, bool leader,
		    const u8 *nonce_a, const u8 *nonce_b, u32 id_a, u32 id_b,
		    u8 out[KREP_WIRE_PROOF_LEN])
{
	const char *label = leader ? label_leader : label_follower;
	__be32 ids[2] = { cpu_to_be32(id_a), cpu_to_be32(id_b) };
	struct crypto_shash *tfm;
	int err;

	tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	err = crypto_shash_setkey(tfm, s->key, s->len);
	if (!err) {
		SHASH_DESC_ON_STACK(desc, tfm);

		desc->tfm = tfm;
		err = crypto_shash_init(desc) ?:
		      crypto_shash_update(desc, label, strlen(label)) ?:
		      crypto_shash_update(desc, nonce_a, KREP_WIRE_NONCE_LEN) ?:
		      crypto_shash_update(desc, nonce_b, KREP_WIRE_NONCE_LEN) ?:
		      crypto_shash_update(desc, (const u8 *)ids, sizeof(ids)) ?:
		      crypto_shash_final(desc, out);
		shash_desc_zero(desc);
	}
	crypto_free_shash(tfm);
	return err;
}

/* is @proof the one krep_auth_proof() makes? in constant time */
bool krep_auth_check(const struct krep_secret *s, bool leader,
		     const u8 *nonce_a, const u8 *nonce_b, u32 id_a, u32 id_b,
		     const u8 *proof)
{
	u8 want[KREP_WIRE_PROOF_LEN];
	bool ok;

	if (krep_auth_proof(s, leader, nonce_a, nonce_b, id_a, id_b, want))
		return false;
	ok = !crypto_memneq(want, proof, sizeof(want));
	memzero_explicit(want, sizeof(want));
	return ok;
}

void krep_secret_wipe(struct krep_secret *s)
{
	memzero_explicit(s, sizeof(*s));
}
