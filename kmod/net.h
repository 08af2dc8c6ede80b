/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: a broker's sockets: the listener, the connections to and from its
 * peers, and framing.
 */
#ifndef _KREP_NET_H
#define _KREP_NET_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/ratelimit.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/krep_wire.h>

#include "broker.h"
#include "tx.h"

struct net;
struct socket;
struct sock;
struct bio_vec;
struct krep_delayed_fetch;
struct krep_fetch_rx;
struct krep_kconn;

/*
 * One TCP connection between two brokers. Outbound connections are made
 * by this broker to a peer it follows (the fetcher); inbound ones were
 * accepted by the listener (the peer fetches from us).
 *
 * Lifetime: the net core's list holds one reference; socket callbacks
 * only queue work and reach the connection through sk_user_data under
 * sk_callback_lock. krep_conn_close() detaches the callbacks, and the
 * release work stops the rest and drops the list's reference.
 */
struct krep_conn {
	struct kref ref;
	struct krep_net *kn;
	struct socket *sock;
	struct list_head node;		/* krep_net_state.conns */
	struct krep_peer *peer;		/* outbound: whom we fetch from */
	bool outbound;
	struct krep_kconn *kc;		/* a Kafka client's (kafka.c) */
	s64 peer_id;			/* -1 until HELLO */
	s64 from_peer;			/* accepted from this peer's address */
	u8 nonce[KREP_WIRE_NONCE_LEN];	/* ours, for this connection */
	u8 peer_nonce[KREP_WIRE_NONCE_LEN];
	char addr[64];			/* the peer's address, for messages */
	unsigned long flags;
	u64 rx_bytes;			/* taken in, for the key limit (ktls.h) */
	int io_cpu;			/* the CPU of rx_work; -1: any */
	struct work_struct rx_work;
	struct work_struct release_work;
	/* the send queue (tx.c) */
	struct mutex tx_lock;		/* guards txq, and sock once DEAD */
	struct list_head txq;
	u32 tx_queued;			/* bytes on txq not yet sent */
	struct work_struct tx_work;
	/* receive framing */
	struct krep_wire_hdr hdr;
	u32 hdr_got;
	u8 *payload;
	u32 payload_got;
	bool rx_stream;			/* a FETCH response read as it comes */
	struct krep_fetch_rx *frx;	/* its state (fetcher.c) */
	/* leader side: the FETCH parked until data or its max wait */
	struct mutex delayed_lock;
	struct krep_delayed_fetch *delayed;
	struct delayed_work fetch_work;
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	void (*saved_error_report)(struct sock *sk);
};

#define KREP_CONN_DEAD		0	/* flags bit: closing */
#define KREP_CONN_HELLO		1	/* flags bit: handshake done (AUTH) */
#define KREP_CONN_WOKEN		2	/* flags bit: parked FETCH woken */
#define KREP_CONN_RX_PAUSED	3	/* flags bit: answers not read (tx.c) */
#define KREP_CONN_HELLO_RX	4	/* flags bit: the peer's HELLO came */
#define KREP_CONN_TLS_RX	5	/* flags bit: kTLS receives (ktls.c) */
#define KREP_CONN_TLS_TX	6	/* flags bit: kTLS sends */

/* a configured peer and our outbound connection to it */
struct krep_peer {
	struct krep_net *kn;
	u32 id;
	struct krep_endpoint ep;
	u8 state;			/* enum krep_peer_state */
	unsigned int backoff_ms;
	struct delayed_work connect_work;
	struct delayed_work fetch_work;
	struct krep_conn *conn;		/* under krep_net_state.lock */
	/* its Kafka HOST:PORT, from its last HELLO; under the lock */
	char advertised[KREP_WIRE_ADVERTISED_LEN];
	u32 correlation;
	bool fetch_inflight;
	unsigned long fetch_sent;	/* jiffies */
	unsigned int fetch_next;	/* the next FETCH's first partition */
};

/* a listening socket: the replication port, or the Kafka clients' */
struct krep_listener {
	struct krep_net *kn;
	struct socket *sock;		/* under krep_net_state.lock */
	bool kafka;
	struct work_struct accept_work;
	void (*saved_data_ready)(struct sock *sk);
};

struct krep_net_state {
	struct krep_net *kn;
	struct mutex apply_lock;	/* serialises stop and restart */
	struct mutex lock;		/* guards peers, listeners, conns */
	struct krep_listener listener;
	struct krep_listener klistener;
	struct list_head conns;
	wait_queue_head_t conns_wq;	/* woken as conns empties */
	unsigned int ninbound;		/* accepted peer connections */
	unsigned int nclients;		/* Kafka client connections */
	atomic_t kafka_rx_big;		/* bytes of large requests being read */
	unsigned int npeers;
	struct krep_peer *peers;
	bool stopped;
	/* this broker's connection-close lines: one namespace's burst of
	 * bad peers cannot silence another's
	 */
	struct ratelimit_state close_rs;
};

int krep_net_module_init(void);
void krep_net_module_exit(void);
int krep_net_state_alloc(struct krep_net *kn);
void krep_net_state_free(struct krep_net *kn);
int krep_net_apply(struct krep_net *kn);
void krep_net_stop(struct krep_net *kn);
u8 krep_net_peer_state(struct krep_net *kn, u32 id);
int krep_net_can_listen(struct net *net, const struct krep_endpoint *now,
			const struct krep_endpoint *next);

/* a broker and where Kafka clients reach it */
struct krep_broker_ep {
	u32 id;
	char advertised[KREP_WIRE_ADVERTISED_LEN];
};

unsigned int krep_net_peer_eps(struct krep_net *kn, struct krep_broker_ep *eps,
			       unsigned int max);

void krep_conn_close(struct krep_conn *c, const char *why);
void krep_conn_put(struct krep_conn *c);
int krep_conn_cpu(const struct krep_conn *c);
u32 krep_conn_send_room(struct krep_conn *c);
int krep_conn_recv(struct krep_conn *c, void *buf, u32 len);
int krep_conn_recv_pages(struct krep_conn *c, const struct bio_vec *bv,
			 unsigned int nr, u32 len, u32 skip);
void krep_conn_queue(struct krep_conn *c, struct work_struct *work);
void krep_conn_rx_work(struct work_struct *work);

extern struct workqueue_struct *krep_wq;

#endif /* _KREP_NET_H */
