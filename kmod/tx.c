// SPDX-License-Identifier: GPL-2.0
/*
 * krep: a connection's send queue (the nvme-tcp model).
 *
 * A sender (the fetcher, a FETCH being answered, a HELLO) appends its
 * frame to the connection's queue under tx_lock and pushes the queue
 * with MSG_DONTWAIT: TCP takes what fits in the socket's send buffer and
 * the rest stays queued. When the buffer drains, sk_write_space queues
 * the connection's tx_work, which pushes on. So a peer that stops
 * reading never blocks a worker or a producer; its connection is closed
 * by TCP_USER_TIMEOUT (socket_timeout_ms) once its window stays shut.
 *
 * The queue is bounded by the protocol: a follower keeps one FETCH in
 * flight and the leader answers one at a time. A peer that pipelines
 * requests without reading the answers finds its connection paused
 * (KREP_CONN_RX_PAUSED: rx_work stops reading) while more than
 * KREP_CONN_TXQ_MAX bytes wait to go, and resumed below half of it.
 *
 * Encryption (ktls.c): a switch marker on the queue, after the last
 * plaintext frame, installs kTLS's TLS_TX when the push reaches it: the
 * bytes before it went to TCP as they are, those after it go as records.
 *
 * Work in this file: krep_conn.tx_work, queued by sk_write_space (and by
 * the state change that completes an outbound connect); cancelled by the
 * connection's release, which then purges the queue under tx_lock, so
 * nothing sends on a released socket.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/list.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/socket.h>
#include <net/sock.h>
#include <net/tcp_states.h>

#include "krep.h"
#include "broker.h"
#include "ktls.h"
#include "net.h"
#include "tx.h"
#include "wire.h"

/* one frame on the queue: its header, its payload, and how far it went */
struct tx_frame {
	struct list_head node;
	struct krep_wire_hdr hdr;	/* inter-broker frames only */
	u32 hdr_len;			/* 0 for a Kafka response */
	u32 hdr_sent;
	struct krep_tx tx;
	unsigned int item;		/* the piece being sent */
	u32 off;			/* bytes of it sent */
	void *tls;			/* a switch marker's TLS_TX keys */
};

/* append a piece; a page piece takes a reference on the page */
int krep_tx_add(struct krep_tx *tx, struct page *page, u32 off, u32 len)
{
	struct krep_tx_item *last = tx->n ? &tx->items[tx->n - 1] : NULL;

	if (!len)
		return 0;
	if (tx->bytes + len > KREP_WIRE_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (last && last->page == page && last->off + last->len == off) {
		last->len += len;	/* contiguous: same page or header */
	} else {
		if (tx->n == tx->cap) {
			unsigned int cap = max(16U, tx->cap * 2);
			struct krep_tx_item *items;

			items = kvmalloc_array(cap, sizeof(*items), GFP_KERNEL);
			if (!items)
				return -ENOMEM;
			if (tx->n)
				memcpy(items, tx->items, tx->n * sizeof(*items));
			kvfree(tx->items);
			tx->items = items;
			tx->cap = cap;
		}
		if (page)
			get_page(page);
		tx->items[tx->n++] = (struct krep_tx_item){ page, off, len };
	}
	tx->bytes += len;
	if (page)
		tx->page_bytes += len;
	return 0;
}

void krep_tx_release(struct krep_tx *tx)
{
	unsigned int i;

	for (i = 0; i < tx->n; i++) {
		if (tx->items[i].page)
			put_page(tx->items[i].page);
	}
	kvfree(tx->items);
	kvfree(tx->hbuf);
	memset(tx, 0, sizeof(*tx));
}

static void frame_free(struct tx_frame *f)
{
	kfree_sensitive(f->tls);
	krep_tx_release(&f->tx);
	kfree(f);
}

static int send_bytes(struct socket *sock, const void *buf, u32 len,
		      int flags)
{
	struct kvec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = {
		.msg_flags = flags | MSG_DONTWAIT | MSG_NOSIGNAL,
	};

	return kernel_sendmsg(sock, &msg, &iov, 1, len);
}

static void queued_sub(struct krep_conn *c, u32 n)
{
	WRITE_ONCE(c->tx_queued, c->tx_queued - n);
}

/*
 * Hand TCP as much of the queue as it takes now. Return: 0 when the
 * queue is empty, -EAGAIN when the socket is full (sk_write_space will
 * queue tx_work), or the send's error.
 */
static int push(struct krep_conn *c)
{
	struct socket *sock = c->sock;
	struct tx_frame *f;
	int ret;

	lockdep_assert_held(&c->tx_lock);
	while ((f = list_first_entry_or_null(&c->txq, struct tx_frame,
					     node))) {
		/* a switch marker is no more bytes: no MSG_MORE before it */
		bool later = !list_is_last(&f->node, &c->txq) &&
			     !list_next_entry(f, node)->tls;

		if (f->tls) {
			ret = krep_tls_tx_install(c, f->tls);
			if (ret)
				return ret;
			list_del(&f->node);
			frame_free(f);
			continue;
		}
		while (f->hdr_sent < f->hdr_len) {
			ret = send_bytes(sock, (u8 *)&f->hdr + f->hdr_sent,
					 f->hdr_len - f->hdr_sent,
					 f->tx.n || later ? MSG_MORE : 0);
			if (ret <= 0)
				return ret ? ret : -EPIPE;
			f->hdr_sent += ret;
			queued_sub(c, ret);
		}
		while (f->item < f->tx.n) {
			const struct krep_tx_item *it = &f->tx.items[f->item];
			bool more = f->item + 1 < f->tx.n || later;

			if (it->page)
				ret = kernel_sendpage(sock, it->page,
						      it->off + f->off,
						      it->len - f->off,
						      MSG_DONTWAIT | MSG_NOSIGNAL |
						      (more ? MSG_MORE |
						       MSG_SENDPAGE_NOTLAST : 0));
			else
				ret = send_bytes(sock,
						 f->tx.hbuf + it->off + f->off,
						 it->len - f->off,
						 more ? MSG_MORE : 0);
			if (ret <= 0)
				return ret ? ret : -EPIPE;
			f->off += ret;
			queued_sub(c, ret);
			if (f->off == it->len) {
				f->item++;
				f->off = 0;
			}
		}
		/* kTLS copies the pages into its records */
		if (!test_bit(KREP_CONN_TLS_TX, &c->flags))
			atomic64_add(f->tx.page_bytes,
				     &c->kn->stats.tx_zerocopy_bytes);
		list_del(&f->node);
		frame_free(f);
	}
	return 0;
}

/* resume reading requests once the peer has read most of its answers */
static void maybe_resume_rx(struct krep_conn *c)
{
	/* pairs with krep_conn_tx_over(): one of us sees the other */
	smp_mb();
	if (READ_ONCE(c->tx_queued) <= KREP_CONN_TXQ_MAX / 2 &&
	    test_and_clear_bit(KREP_CONN_RX_PAUSED, &c->flags))
		krep_conn_queue(c, &c->rx_work);
}

/* push under tx_lock; -EAGAIN (socket full) is not an error here */
static int push_locked(struct krep_conn *c)
{
	int err;

	lockdep_assert_held(&c->tx_lock);
	if (test_bit(KREP_CONN_DEAD, &c->flags))
		return -ENOTCONN;
	err = push(c);
	return err == -EAGAIN ? 0 : err;
}

static int enqueue(struct krep_conn *c, struct tx_frame *f)
{
	int err;

	mutex_lock(&c->tx_lock);
	/* DEAD under tx_lock: the release purges the queue under it too */
	if (test_bit(KREP_CONN_DEAD, &c->flags)) {
		mutex_unlock(&c->tx_lock);
		frame_free(f);
		return -ENOTCONN;
	}
	list_add_tail(&f->node, &c->txq);
	WRITE_ONCE(c->tx_queued, c->tx_queued + f->hdr_len + f->tx.bytes);
	err = push_locked(c);
	mutex_unlock(&c->tx_lock);
	/* an inline push may have drained what paused the receive side */
	if (!err)
		maybe_resume_rx(c);
	return err;
}

/**
 * krep_conn_send_tx - queue one frame whose payload is @tx and push:
 * header bytes copied, log pages handed to TCP by reference
 * (kernel_sendpage); never blocks
 * @c: the connection
 * @type: frame type
 * @correlation: correlation id
 * @tx: the pieces; the queue takes them over (@tx is left empty, and
 *	releasing it is still allowed)
 *
 * Return: 0 (sent or queued), or an error: the caller closes @c.
 */
int krep_conn_send_tx(struct krep_conn *c, u8 type, u32 correlation,
		      struct krep_tx *tx)
{
	struct tx_frame *f = kzalloc(sizeof(*f), GFP_KERNEL);

	if (!f)
		return -ENOMEM;
	krep_wire_hdr_init(&f->hdr, type, tx->bytes, correlation);
	f->hdr_len = sizeof(f->hdr);
	f->tx = *tx;
	memset(tx, 0, sizeof(*tx));
	return enqueue(c, f);
}

/**
 * krep_conn_send_raw - queue @tx as it is (a Kafka response, which
 * carries its own size) and push; never blocks
 * @c: the connection
 * @tx: the pieces; the queue takes them over, as krep_conn_send_tx()
 *
 * Return: 0 (sent or queued), or an error: the caller closes @c.
 */
int krep_conn_send_raw(struct krep_conn *c, struct krep_tx *tx)
{
	struct tx_frame *f = kzalloc(sizeof(*f), GFP_KERNEL);

	if (!f)
		return -ENOMEM;
	f->tx = *tx;
	memset(tx, 0, sizeof(*tx));
	return enqueue(c, f);
}

/**
 * krep_conn_send_tls_switch - queue the switch to kTLS records after
 * what is queued now, and push; never blocks
 * @c: the connection
 * @ci: its TLS_TX crypto info (kmalloc'ed); the queue takes it over and
 *	wipes it
 *
 * Return: 0 (installed or queued), or an error: the caller closes @c.
 */
int krep_conn_send_tls_switch(struct krep_conn *c, void *ci)
{
	struct tx_frame *f = kzalloc(sizeof(*f), GFP_KERNEL);

	if (!f) {
		kfree_sensitive(ci);
		return -ENOMEM;
	}
	f->tls = ci;
	return enqueue(c, f);
}

/* queue one frame whose payload is copied from @payload; never blocks */
int krep_conn_send(struct krep_conn *c, u8 type, u32 correlation,
		   const void *payload, u32 len)
{
	struct krep_tx tx = {};
	int err = 0;

	if (len) {
		tx.hbuf = kvmalloc(len, GFP_KERNEL);
		if (!tx.hbuf)
			return -ENOMEM;
		memcpy(tx.hbuf, payload, len);
		err = krep_tx_add(&tx, NULL, 0, len);
	}
	if (!err)
		err = krep_conn_send_tx(c, type, correlation, &tx);
	krep_tx_release(&tx);
	return err;
}

/*
 * rx_work asks before it reads the next request: true, and the
 * connection is paused until the queue drains, when its peer does not
 * read the answers it already has.
 */
bool krep_conn_tx_over(struct krep_conn *c)
{
	/*
	 * Not over once TCP gave up (TCP_USER_TIMEOUT, a reset: an error
	 * and CLOSE): the receive work must read on, see it and close. A
	 * peer that only half-closed stays paused.
	 */
	if (READ_ONCE(c->tx_queued) <= KREP_CONN_TXQ_MAX ||
	    READ_ONCE(c->sock->sk->sk_err) ||
	    READ_ONCE(c->sock->sk->sk_state) == TCP_CLOSE)
		return false;
	set_bit(KREP_CONN_RX_PAUSED, &c->flags);
	/* pairs with the push's drain: one of us sees the other */
	smp_mb__after_atomic();
	if (READ_ONCE(c->tx_queued) > KREP_CONN_TXQ_MAX / 2)
		return true;
	clear_bit(KREP_CONN_RX_PAUSED, &c->flags);
	return false;
}

void krep_conn_tx_work(struct work_struct *work)
{
	struct krep_conn *c = container_of(work, struct krep_conn, tx_work);
	int err;

	mutex_lock(&c->tx_lock);
	err = push_locked(c);
	mutex_unlock(&c->tx_lock);
	if (err && err != -ENOTCONN)
		krep_conn_close(c, "send error");
	else
		maybe_resume_rx(c);
	krep_conn_put(c);
}

/* the socket's send buffer has room again: push from the work */
void krep_conn_write_space(struct sock *sk)
{
	struct krep_conn *c;

	read_lock_bh(&sk->sk_callback_lock);
	c = sk->sk_user_data;
	if (c && sk_stream_is_writeable(sk)) {
		clear_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
		krep_conn_queue(c, &c->tx_work);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

/* the connection is released: drop what never went out */
void krep_conn_tx_purge(struct krep_conn *c)
{
	struct tx_frame *f, *tmp;

	lockdep_assert_held(&c->tx_lock);
	list_for_each_entry_safe(f, tmp, &c->txq, node) {
		list_del(&f->node);
		frame_free(f);
	}
	WRITE_ONCE(c->tx_queued, 0);
}
