/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: replication connections switched to kTLS records after their
 * handshake, with keys derived from it (auth.c).
 */
#ifndef _KREP_KTLS_H
#define _KREP_KTLS_H

#include <linux/bits.h>
#include <linux/types.h>

struct krep_conn;
struct krep_secret;
struct sock;

/*
 * Bytes a connection takes in under one key before it is closed (and
 * connected anew, with new keys): 2^38, below AES-GCM's limit of about
 * 2^24.5 full records of 2^14 bytes (RFC 8446, section 5.5). 6.1's kTLS
 * cannot update keys in place.
 */
#define KREP_TLS_BYTES_MAX	BIT_ULL(38)

int krep_tls_start(struct krep_conn *c, const struct krep_secret *sec,
		   u32 self, const char **why);
int krep_tls_tx_install(struct krep_conn *c, const void *ci);
void krep_tls_unhook(struct krep_conn *c, void (*data_ready)(struct sock *sk));
const char *krep_tls_rx_why(const struct krep_conn *c, int err);
bool krep_tls_rx_spent(const struct krep_conn *c);

#endif /* _KREP_KTLS_H */
