// SPDX-License-Identifier: GPL-2.0
/*
 * krep: encryption of replication connections with the kernel's TLS
 * record layer (kTLS, net/tls), keyed from the HELLO/AUTH handshake.
 *
 * Brokers that hold a cluster secret and both say KREP_WIRE_HELLO_F_TLS
 * switch their connection to TLS 1.3 records (AES-256-GCM) once the
 * handshake is done, each direction at a frame boundary: what the
 * leader sends after its HELLO, and what the follower sends after its
 * AUTH, is records (uapi/linux/krep_wire.h). There is no TLS handshake:
 * both ends derive the keys (auth.c) and install them with the "tls"
 * ULP's TLS_RX and TLS_TX socket options, which Debian's 6.1 accepts
 * from kernel callers through sock->ops->setsockopt and KERNEL_SOCKPTR.
 *
 * Receive: installed by the receive work right after it dispatched the
 * last plaintext frame (the leader's HELLO on the follower, the AUTH on
 * the leader). The receive work reads exact frame lengths, so nothing
 * past that frame was taken off the socket; what already waits there is
 * parsed as records from the first byte (net/tls checks the receive
 * queue when TLS_RX is set). From then on net/tls calls our data_ready
 * once a whole record is in, and recvmsg returns plaintext.
 *
 * Transmit: a switch marker follows the last plaintext frame on the
 * send queue (tx.c); the push installs TLS_TX when the marker reaches
 * the head, so every byte queued before it went to TCP in the clear and
 * every byte after it goes through the records. kernel_sendmsg and
 * kernel_sendpage (which then copies the log page into the record) both
 * go through net/tls's sendmsg and sendpage.
 *
 * net/tls wraps the socket's data_ready and write_space, calling ours;
 * before the socket is released we hand it back the socket's own
 * (krep_tls_unhook), so nothing of this module stays on it.
 *
 * No work or timer of its own.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/sockptr.h>
#include <linux/tcp.h>
#include <linux/tls.h>
#include <net/sock.h>
#include <net/tls.h>

#include "auth.h"
#include "ktls.h"
#include "net.h"
#include "tx.h"

static const char ulp_name[] = "tls";

static void crypto_info_fill(struct tls12_crypto_info_aes_gcm_256 *ci,
			     const struct krep_tls_dir *d)
{
	BUILD_BUG_ON(sizeof(ci->key) != sizeof(d->key) ||
		     sizeof(ci->salt) != sizeof(d->salt) ||
		     sizeof(ci->iv) != sizeof(d->iv));
	memset(ci, 0, sizeof(*ci));
	ci->info.version = TLS_1_3_VERSION;
	ci->info.cipher_type = TLS_CIPHER_AES_GCM_256;
	memcpy(ci->key, d->key, sizeof(ci->key));
	memcpy(ci->salt, d->salt, sizeof(ci->salt));
	memcpy(ci->iv, d->iv, sizeof(ci->iv));
	/* rec_seq: records count from 0 */
}

static int set_keys(struct socket *sock, int optname,
		    const struct tls12_crypto_info_aes_gcm_256 *ci)
{
	return sock->ops->setsockopt(sock, SOL_TLS, optname,
				     KERNEL_SOCKPTR((void *)ci), sizeof(*ci));
}

/**
 * krep_tls_start - switch @c to records after its handshake: TLS_RX at
 * once, TLS_TX once what is queued before now has gone out
 * @c: the connection; from its receive work, right after the frame that
 *     ends the handshake on this side was dispatched
 * @sec: the cluster secret
 * @self: this broker's id
 * @why: set on error
 *
 * Return: 0 or a negative errno; the caller closes @c.
 */
int krep_tls_start(struct krep_conn *c, const struct krep_secret *sec,
		   u32 self, const char **why)
{
	struct tls12_crypto_info_aes_gcm_256 rx, *tx;
	struct krep_tls_dir l2f, f2l;
	bool leader = !c->outbound;
	int err;

	tx = kmalloc(sizeof(*tx), GFP_KERNEL);
	if (!tx) {
		*why = "out of memory for encryption";
		return -ENOMEM;
	}
	err = krep_auth_tls_keys(sec, leader ? c->nonce : c->peer_nonce,
				 leader ? c->peer_nonce : c->nonce,
				 leader ? self : c->peer_id,
				 leader ? c->peer_id : self, &l2f, &f2l);
	if (err) {
		kfree(tx);
		*why = "cannot derive the encryption keys";
		return err;
	}
	crypto_info_fill(&rx, leader ? &f2l : &l2f);
	crypto_info_fill(tx, leader ? &l2f : &f2l);
	memzero_explicit(&l2f, sizeof(l2f));
	memzero_explicit(&f2l, sizeof(f2l));

	/* the socket lives while not DEAD, under tx_lock */
	mutex_lock(&c->tx_lock);
	err = -ENOTCONN;
	if (!test_bit(KREP_CONN_DEAD, &c->flags)) {
		err = c->sock->ops->setsockopt(c->sock, SOL_TCP, TCP_ULP,
					       KERNEL_SOCKPTR((void *)ulp_name),
					       sizeof(ulp_name) - 1);
		if (!err)
			err = set_keys(c->sock, TLS_RX, &rx);
		if (!err)
			set_bit(KREP_CONN_TLS_RX, &c->flags);
	}
	mutex_unlock(&c->tx_lock);
	memzero_explicit(&rx, sizeof(rx));
	if (err) {
		kfree_sensitive(tx);
		*why = err == -ENOENT ?
		       "cannot start encryption: no kTLS (CONFIG_TLS, the tls module)" :
		       "cannot start encryption";
		pr_warn_ratelimited("connection %s broker %lld (%s): TLS_RX: error %d\n",
				    c->outbound ? "to" : "from", c->peer_id,
				    c->addr, err);
		return err;
	}
	/* the queue owns @tx from here, and wipes it */
	err = krep_conn_send_tls_switch(c, tx);
	if (err)
		*why = "cannot start encryption";
	return err;
}

/**
 * krep_tls_tx_install - TLS_TX with the keys of a switch marker, all that
 * was queued before it handed to TCP (tx.c's push, tx_lock held)
 * @c: the connection
 * @ci: the transmit keys
 *
 * Return: 0 or a negative errno (the push fails, and @c closes).
 */
int krep_tls_tx_install(struct krep_conn *c, const void *ci)
{
	int err;

	lockdep_assert_held(&c->tx_lock);
	err = set_keys(c->sock, TLS_TX, ci);
	if (err) {
		pr_warn_ratelimited("connection %s broker %lld (%s): TLS_TX: error %d\n",
				    c->outbound ? "to" : "from", c->peer_id,
				    c->addr, err);
		return err;
	}
	set_bit(KREP_CONN_TLS_TX, &c->flags);
	return 0;
}

/**
 * krep_tls_unhook - give net/tls back the socket's own callbacks where it
 * saved ours, so none of ours is left on the socket once released
 * @c: the connection, detached; its works cancelled, tx_lock held (no
 *     install runs)
 * @data_ready: our data_ready
 */
void krep_tls_unhook(struct krep_conn *c, void (*data_ready)(struct sock *sk))
{
	struct sock *sk = c->sock->sk;
	struct tls_context *ctx;

	lockdep_assert_held(&c->tx_lock);
	if (!test_bit(KREP_CONN_TLS_RX, &c->flags))
		return;		/* no ULP, or nothing wrapped yet */
	write_lock_bh(&sk->sk_callback_lock);
	ctx = tls_get_ctx(sk);
	if (ctx) {
		struct tls_sw_context_rx *rx = tls_sw_ctx_rx(ctx);

		/* net/tls calls it without the lock: either one is fine */
		if (rx && rx->saved_data_ready == data_ready)
			WRITE_ONCE(rx->saved_data_ready, c->saved_data_ready);
		if (test_bit(KREP_CONN_TLS_TX, &c->flags) &&
		    ctx->sk_write_space == krep_conn_write_space)
			ctx->sk_write_space = c->saved_write_space;
	}
	write_unlock_bh(&sk->sk_callback_lock);
}

/**
 * krep_tls_rx_why - what a receive error of @c means, when it has to do
 * with its records
 * @c: the connection
 * @err: recvmsg's error
 *
 * Return: the reason to log, or NULL.
 */
const char *krep_tls_rx_why(const struct krep_conn *c, int err)
{
	if (!test_bit(KREP_CONN_TLS_RX, &c->flags))
		return NULL;
	switch (err) {
	case -EBADMSG:	/* the tag does not verify */
	case -EMSGSIZE:	/* a length no record has */
	case -EINVAL:	/* not a TLS 1.3 record header */
	case -EIO:	/* a record type other than data */
		return "record does not decrypt (peer skipped encryption, or data altered)";
	}
	return NULL;
}

/* has @c taken in all that one key may protect? (at a frame boundary) */
bool krep_tls_rx_spent(const struct krep_conn *c)
{
	return test_bit(KREP_CONN_TLS_RX, &c->flags) &&
	       c->rx_bytes >= KREP_TLS_BYTES_MAX;
}

/* modprobe loads net/tls first (insmod: the ULP lookup autoloads it) */
MODULE_SOFTDEP("pre: tls");
