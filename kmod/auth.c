// SPDX-License-Identifier: GPL-2.0
/*
 * krep: broker authentication proofs.
 *
 * The leader proves it holds the cluster secret over the follower's
 * nonce then its own; the follower, over the leader's nonce then its
 * own. Each proof also binds both broker ids and its direction's label,
 * so a proof cannot be replayed on another connection, reflected back
 * to its sender, or moved to another pair of brokers.
 *
 * The same secret, both nonces and both ids key the connection's kTLS
 * (ktls.c): HKDF-SHA256, one key, salt and IV per direction.
 */
#include <crypto/hash.h>
#include <crypto/algapi.h>
#include <crypto/sha2.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/uio.h>

#include "auth.h"

static const char label_leader[] = "krep-hello-leader";
static const char label_follower[] = "krep-hello-follower";
static const char label_l2f[] = "krep-tls13 leader to follower";
static const char label_f2l[] = "krep-tls13 follower to leader";

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

/* HMAC-SHA256(@key, the @n pieces @parts) into @out */
static int hmac_parts(struct crypto_shash *tfm, const u8 *key, u32 klen,
		      const struct kvec *parts, unsigned int n,
		      u8 out[SHA256_DIGEST_SIZE])
{
	SHASH_DESC_ON_STACK(desc, tfm);
	unsigned int i;
	int err;

	err = crypto_shash_setkey(tfm, key, klen);
	if (err)
		return err;
	desc->tfm = tfm;
	err = crypto_shash_init(desc);
	for (i = 0; !err && i < n; i++)
		err = crypto_shash_update(desc, parts[i].iov_base,
					  parts[i].iov_len);
	if (!err)
		err = crypto_shash_final(desc, out);
	shash_desc_zero(desc);
	return err;
}

/* HKDF-Expand(@prk, @label, sizeof(*out)) (RFC 5869): key, salt, IV */
static int hkdf_expand(struct crypto_shash *tfm,
		       const u8 prk[SHA256_DIGEST_SIZE], const char *label,
		       struct krep_tls_dir *out)
{
	u8 okm[2 * SHA256_DIGEST_SIZE], t[SHA256_DIGEST_SIZE];
	u8 ctr;
	int err = 0;

	BUILD_BUG_ON(sizeof(*out) > sizeof(okm));
	for (ctr = 1; !err && ctr <= 2; ctr++) {
		struct kvec parts[] = {
			{ t, ctr > 1 ? sizeof(t) : 0 },
			{ (void *)label, strlen(label) },
			{ &ctr, 1 },
		};

		err = hmac_parts(tfm, prk, SHA256_DIGEST_SIZE, parts,
				 ARRAY_SIZE(parts), t);
		memcpy(okm + (ctr - 1) * sizeof(t), t, sizeof(t));
	}
	if (!err) {
		memcpy(out->key, okm, sizeof(out->key));
		memcpy(out->salt, okm + sizeof(out->key), sizeof(out->salt));
		memcpy(out->iv, okm + sizeof(out->key) + sizeof(out->salt),
		       sizeof(out->iv));
	}
	memzero_explicit(okm, sizeof(okm));
	memzero_explicit(t, sizeof(t));
	return err;
}

/**
 * krep_auth_tls_keys - a connection's record keys, HKDF-SHA256 of the
 * secret, both nonces and both ids (uapi/linux/krep_wire.h)
 * @s: the secret
 * @nonce_l: the leader's nonce
 * @nonce_f: the follower's
 * @id_l: the leader's broker id
 * @id_f: the follower's
 * @l2f: the keys of what the leader sends
 * @f2l: the keys of what the follower sends
 *
 * May sleep. Return: 0 or a negative errno (both outputs then zero).
 */
int krep_auth_tls_keys(const struct krep_secret *s, const u8 *nonce_l,
		       const u8 *nonce_f, u32 id_l, u32 id_f,
		       struct krep_tls_dir *l2f, struct krep_tls_dir *f2l)
{
	u8 salt[2 * KREP_WIRE_NONCE_LEN + 8], prk[SHA256_DIGEST_SIZE];
	__be32 ids[2] = { cpu_to_be32(id_l), cpu_to_be32(id_f) };
	struct kvec ikm = { (void *)s->key, s->len };
	struct crypto_shash *tfm;
	int err;

	memcpy(salt, nonce_l, KREP_WIRE_NONCE_LEN);
	memcpy(salt + KREP_WIRE_NONCE_LEN, nonce_f, KREP_WIRE_NONCE_LEN);
	memcpy(salt + 2 * KREP_WIRE_NONCE_LEN, ids, sizeof(ids));
	tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	err = hmac_parts(tfm, salt, sizeof(salt), &ikm, 1, prk) ?:
	      hkdf_expand(tfm, prk, label_l2f, l2f) ?:
	      hkdf_expand(tfm, prk, label_f2l, f2l);
	crypto_free_shash(tfm);
	memzero_explicit(prk, sizeof(prk));
	if (err) {
		memzero_explicit(l2f, sizeof(*l2f));
		memzero_explicit(f2l, sizeof(*f2l));
	}
	return err;
}

void krep_secret_wipe(struct krep_secret *s)
{
	memzero_explicit(s, sizeof(*s));
}
