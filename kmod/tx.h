/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: a connection's send queue. Frames are handed to TCP with
 * MSG_DONTWAIT; what the socket does not take waits on the queue and is
 * continued from sk_write_space, so no sender ever blocks on a peer.
 */
#ifndef _KREP_TX_H
#define _KREP_TX_H

#include <linux/bits.h>
#include <linux/types.h>

struct krep_conn;
struct page;
struct sock;
struct work_struct;

/*
 * Bytes queued on one connection past which it stops reading requests
 * (its peer is not reading its answers); reading resumes below half.
 */
#define KREP_CONN_TXQ_MAX	BIT(20)

/*
 * A frame's payload in pieces: bytes of @hbuf (page NULL, @off into it) and
 * log pages sent with kernel_sendpage(), each holding a page reference.
 */
struct krep_tx_item {
	struct page *page;
	u32 off;
	u32 len;
};

struct krep_tx {
	u8 *hbuf;
	struct krep_tx_item *items;
	unsigned int n, cap;
	u32 bytes;
	u32 page_bytes;
};

int krep_tx_add(struct krep_tx *tx, struct page *page, u32 off, u32 len);
void krep_tx_release(struct krep_tx *tx);

int krep_conn_send_tx(struct krep_conn *c, u8 type, u32 correlation,
		      struct krep_tx *tx);
int krep_conn_send_raw(struct krep_conn *c, struct krep_tx *tx);
int krep_conn_send_tls_switch(struct krep_conn *c, void *ci);
int krep_conn_send(struct krep_conn *c, u8 type, u32 correlation,
		   const void *payload, u32 len);
bool krep_conn_tx_over(struct krep_conn *c);
void krep_conn_tx_work(struct work_struct *work);
void krep_conn_write_space(struct sock *sk);
void krep_conn_tx_purge(struct krep_conn *c);

#endif /* _KREP_TX_H */
