// SPDX-License-Identifier: GPL-2.0
/*
 * krep: a broker's sockets, served from callbacks and the krep workqueue
 * (the nvmet-tcp model).
 *
 * Work and timers in this file, per broker:
 *   listener.accept_work   queued by a listener's data_ready; accepts
 *                          with kernel_accept(O_NONBLOCK) in a loop (the
 *                          replication port, and the Kafka clients' port
 *                          whose connections kafka.c serves).
 *   peer.connect_work      starts a non-blocking connect to a peer;
 *                          re-armed with backoff (100 ms doubling to
 *                          reconnect_backoff_max_ms) when the connection
 *                          fails or drops, unless the net state stopped.
 *   peer.fetch_work        the fetcher (fetcher.c): sends the next FETCH.
 *   conn.rx_work           queued by data_ready/state_change; reads what
 *                          the socket has, frames it, dispatches frames.
 *   conn.tx_work           tx.c: pushes the send queue; queued by
 *                          write_space and when a connect completes.
 *   conn.release_work      queued once by krep_conn_close(); stops the
 *                          connection's work and drops the list reference.
 *   conn.fetch_work        replica.c: the HELLO deadline (of a connect
 *                          and HELLO on an outbound connection, of the
 *                          HELLO on an accepted one), then an accepted
 *                          connection's parked FETCH.
 * Every arming of a peer's work happens under the net state's lock and
 * checks "stopped"; a connection's works are armed only while it is not
 * DEAD (or before its callbacks are attached).
 *
 * Nothing here blocks on a peer: connects are non-blocking (the state
 * change completes them), sends go through the send queue (tx.c), and
 * every socket has TCP_USER_TIMEOUT (socket_timeout_ms) and keepalive, so
 * a peer that vanishes or stops reading is closed by TCP.
 *
 * At most KREP_MAX_INBOUND accepted connections live at once; a flood of
 * connections that never say HELLO is closed after hello_timeout_ms.
 * Beyond the cap a connection is still taken from a configured peer's
 * address, KREP_PEER_INBOUND at once from each: bare connections from
 * elsewhere cannot keep the followers out.
 * krep_net_stop() marks the state stopped (the gate every re-arm checks),
 * closes the listener and every connection (shutting each socket down
 * first), waits for this broker's connections to be released, then
 * cancels this broker's works: never anything another broker shares.
 *
 * A frame that breaks the protocol closes its connection, with one
 * rate-limited line naming the peer and the reason, and nothing else.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bvec.h>
#include <linux/inet.h>
#include <linux/random.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <linux/uio.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "krep.h"
#include "auth.h"
#include "broker.h"
#include "fetcher.h"
#include "kafka.h"
#include "ktls.h"
#include "net.h"
#include "param.h"
#include "replica.h"
#include "wire.h"

struct workqueue_struct *krep_wq;

#define KREP_BACKOFF_MIN_MS	100
#define KREP_MAX_INBOUND	128	/* connections accepted at once */
#define KREP_PEER_INBOUND	4	/* more, from each peer's own address */
/* the largest FETCH: header plus the maximum of partition entries */
#define KREP_WIRE_MAX_REQUEST	(sizeof(struct krep_wire_fetch) +	\
				 KREP_WIRE_MAX_PARTITIONS *		\
				 (2 + 249 + sizeof(struct krep_wire_fetch_part)))

static void conn_release(struct kref *ref)
{
	struct krep_conn *c = container_of(ref, struct krep_conn, ref);

	krep_kafka_conn_free(c);
	kvfree(c->payload);
	kfree(c);
	krep_obj_put(KREP_OBJ_CONN);
}

void krep_conn_put(struct krep_conn *c)
{
	kref_put(&c->ref, conn_release);
}

/*
 * The CPU a connection's receive work runs on (nvme-tcp's io_cpu): the
 * ids of its two ends spread a broker's connections over the online
 * CPUs, so a leader's followers, and the followers' fetchers, are served
 * in parallel rather than one after the other on the CPU that took the
 * packet.
 */
static int conn_cpu(u32 self, u32 peer)
{
	unsigned int k = (self + peer) % num_online_cpus();
	int cpu;

	for_each_online_cpu(cpu) {
		if (!k--)
			return cpu;
	}
	return -1;
}

static void conn_set_cpu(struct krep_conn *c)
{
	struct krep_broker_cfg *cfg;
	u32 self;

	rcu_read_lock();
	cfg = rcu_dereference(c->kn->cfg);
	self = cfg->broker_id;
	rcu_read_unlock();
	WRITE_ONCE(c->io_cpu, conn_cpu(self, c->peer_id));
}

/* the CPU for @c's work, or WORK_CPU_UNBOUND (the local one) */
int krep_conn_cpu(const struct krep_conn *c)
{
	int cpu = READ_ONCE(c->io_cpu);

	return cpu < 0 || !cpu_online(cpu) ? WORK_CPU_UNBOUND : cpu;
}

/* bytes the socket takes now without blocking (an estimate, unlocked) */
u32 krep_conn_send_room(struct krep_conn *c)
{
	int room = sk_stream_wspace(c->sock->sk) - READ_ONCE(c->tx_queued);

	return room > 0 ? room : 0;
}

/* queue @work of a live connection, holding a reference for it */
void krep_conn_queue(struct krep_conn *c, struct work_struct *work)
{
	if (test_bit(KREP_CONN_DEAD, &c->flags))
		return;
	kref_get(&c->ref);
	if (!queue_work_on(krep_conn_cpu(c), krep_wq, work))
		krep_conn_put(c);
}

static void conn_data_ready(struct sock *sk)
{
	struct krep_conn *c;

	read_lock_bh(&sk->sk_callback_lock);
	c = sk->sk_user_data;
	if (c)
		krep_conn_queue(c, &c->rx_work);
	read_unlock_bh(&sk->sk_callback_lock);
}

static void conn_state_change(struct sock *sk)
{
	void (*saved)(struct sock *sk) = NULL;
	struct krep_conn *c;

	read_lock_bh(&sk->sk_callback_lock);
	c = sk->sk_user_data;
	if (c) {
		saved = c->saved_state_change;
		/* a connect completed: the queued HELLO goes out */
		if (sk->sk_state == TCP_ESTABLISHED)
			krep_conn_queue(c, &c->tx_work);
		/* the rx work sees the end of the stream and closes */
		else
			krep_conn_queue(c, &c->rx_work);
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (saved)
		saved(sk);
}

/* an error (a reset; a record kTLS refuses): the rx work reads it */
static void conn_error_report(struct sock *sk)
{
	void (*saved)(struct sock *sk) = NULL;
	struct krep_conn *c;

	read_lock_bh(&sk->sk_callback_lock);
	c = sk->sk_user_data;
	if (c) {
		saved = c->saved_error_report;
		krep_conn_queue(c, &c->rx_work);
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (saved)
		saved(sk);
}

static void conn_attach(struct krep_conn *c)
{
	struct sock *sk = c->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = c;
	c->saved_data_ready = sk->sk_data_ready;
	c->saved_state_change = sk->sk_state_change;
	c->saved_write_space = sk->sk_write_space;
	c->saved_error_report = sk->sk_error_report;
	sk->sk_data_ready = conn_data_ready;
	sk->sk_state_change = conn_state_change;
	sk->sk_write_space = krep_conn_write_space;
	sk->sk_error_report = conn_error_report;
	write_unlock_bh(&sk->sk_callback_lock);
}

static void conn_detach(struct krep_conn *c)
{
	struct sock *sk = c->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	if (sk->sk_user_data == c) {
		sk->sk_user_data = NULL;
		/*
		 * kTLS may have wrapped these two: it goes on calling ours,
		 * which do nothing now, until krep_tls_unhook()
		 */
		if (sk->sk_data_ready == conn_data_ready)
			sk->sk_data_ready = c->saved_data_ready;
		sk->sk_state_change = c->saved_state_change;
		if (sk->sk_write_space == krep_conn_write_space)
			sk->sk_write_space = c->saved_write_space;
		sk->sk_error_report = c->saved_error_report;
	}
	write_unlock_bh(&sk->sk_callback_lock);
}

static void conn_release_work(struct work_struct *work)
{
	struct krep_conn *c = container_of(work, struct krep_conn,
					   release_work);
	struct krep_net_state *ns = c->kn->ns;
	struct krep_peer *peer;

	/*
	 * The socket is shut down: nothing running waits on the peer. The
	 * send work may queue the receive work (a resume): it goes first. A
	 * receive work queued after this (by park_work) finds DEAD and
	 * touches nothing.
	 */
	if (cancel_work_sync(&c->tx_work))
		krep_conn_put(c);	/* the queued work's reference */
	if (cancel_work_sync(&c->rx_work))
		krep_conn_put(c);
	if (c->kc) {
		krep_kafka_conn_release(c);
	} else {
		krep_fetcher_rx_free(c);
		krep_replica_cancel_delayed(c);
	}
	/* senders test DEAD under tx_lock: none touches the socket after */
	mutex_lock(&c->tx_lock);
	krep_conn_tx_purge(c);
	krep_tls_unhook(c, conn_data_ready);
	sock_release(c->sock);
	c->sock = NULL;
	mutex_unlock(&c->tx_lock);

	mutex_lock(&ns->lock);
	list_del(&c->node);
	if (c->kc)
		ns->nclients--;
	else if (!c->outbound)
		ns->ninbound--;
	peer = c->peer;
	if (peer && peer->conn == c) {
		peer->conn = NULL;
		peer->fetch_inflight = false;
		WRITE_ONCE(peer->state, KREP_PEER_DOWN);
		/* a connect or HELLO that failed backs off further */
		if (!test_bit(KREP_CONN_HELLO, &c->flags))
			peer->backoff_ms =
				clamp(peer->backoff_ms * 2, KREP_BACKOFF_MIN_MS,
				      krep_param_reconnect_backoff_max_ms());
		if (!ns->stopped)
			queue_delayed_work(krep_wq, &peer->connect_work,
					   msecs_to_jiffies(peer->backoff_ms));
	}
	/* under the lock: krep_net_stop() sees the list empty only after */
	if (list_empty(&ns->conns))
		wake_up(&ns->conns_wq);
	mutex_unlock(&ns->lock);
	krep_conn_put(c);	/* the list's reference */
	krep_conn_put(c);	/* this work's */
}

/**
 * krep_conn_close - close a connection, once; safe from any context that
 * may sleep, including the connection's own work
 * @c: the connection
 * @why: logged (rate-limited per broker) when not NULL
 */
void krep_conn_close(struct krep_conn *c, const char *why)
{
	if (test_and_set_bit(KREP_CONN_DEAD, &c->flags))
		return;
	if (why && __ratelimit(&c->kn->ns->close_rs)) {
		if (c->kc)
			pr_info("Kafka client %s closed: %s\n", c->addr, why);
		else
			pr_info("connection %s broker %lld (%s) closed: %s\n",
				c->outbound ? "to" : "from", c->peer_id,
				c->addr, why);
	}
	conn_detach(c);
	/* first: wakes whatever waits on the socket and ends its sends */
	kernel_sock_shutdown(c->sock, SHUT_RDWR);
	kref_get(&c->ref);
	queue_work(krep_wq, &c->release_work);
}

/*
 * Every replication socket: no Nagle; TCP_USER_TIMEOUT, so data a peer
 * leaves unacknowledged (a zero window included) ends the connection
 * after socket_timeout_ms; keepalive, so a silent dead peer does too.
 */
static void sock_setup(struct sock *sk)
{
	u32 ms = krep_param_socket_timeout_ms();
	int secs = max_t(int, 1, ms / 3000);

	tcp_sock_set_nodelay(sk);
	tcp_sock_set_user_timeout(sk, ms);
	sock_set_keepalive(sk);
	tcp_sock_set_keepidle(sk, secs);
	tcp_sock_set_keepintvl(sk, secs);
	tcp_sock_set_keepcnt(sk, 3);
}

static struct krep_conn *conn_alloc(struct krep_net *kn, struct socket *sock,
				    struct krep_peer *peer, bool kafka)
{
	struct krep_conn *c;

	c = kzalloc(sizeof(*c), KREP_GFP_DATA);
	if (!c)
		return NULL;
	kref_init(&c->ref);
	krep_obj_get(KREP_OBJ_CONN);
	c->kn = kn;
	c->sock = sock;
	c->peer = peer;
	c->outbound = !!peer;
	c->peer_id = peer ? peer->id : -1;
	c->from_peer = -1;
	c->io_cpu = -1;
	if (peer)
		conn_set_cpu(c);
	mutex_init(&c->tx_lock);
	INIT_LIST_HEAD(&c->txq);
	get_random_bytes(c->nonce, sizeof(c->nonce));
	INIT_WORK(&c->tx_work, krep_conn_tx_work);
	INIT_WORK(&c->rx_work, kafka ? krep_kafka_rx_work : krep_conn_rx_work);
	INIT_WORK(&c->release_work, conn_release_work);
	krep_replica_conn_init(c);
	if (kafka && krep_kafka_conn_init(c)) {
		krep_conn_put(c);
		return NULL;
	}
	if (peer)
		snprintf(c->addr, sizeof(c->addr), "%pISpc", &peer->ep.sa);
	return c;
}

/* a connection a peer or a client opens is charged to the broker's cgroup */
static struct krep_conn *conn_new(struct krep_net *kn, struct socket *sock,
				  struct krep_peer *peer, bool kafka)
{
	struct mem_cgroup *old = krep_memcg_enter(kn);
	struct krep_conn *c = conn_alloc(kn, sock, peer, kafka);

	krep_memcg_leave(old);
	return c;
}

static int conn_recvmsg(struct krep_conn *c, struct msghdr *msg)
{
	int ret = sock_recvmsg(c->sock, msg, MSG_DONTWAIT);

	if (ret > 0) {
		atomic64_add(ret, &c->kn->stats.rx_copy_bytes);
		c->rx_bytes += ret;
	}
	return ret;
}

/* read up to @len bytes without blocking; 0 at the end of the stream */
int krep_conn_recv(struct krep_conn *c, void *buf, u32 len)
{
	struct kvec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };

	iov_iter_kvec(&msg.msg_iter, ITER_DEST, &iov, 1, len);
	return conn_recvmsg(c, &msg);
}

/* the same into the page pieces @bv (@len bytes), past the first @skip */
int krep_conn_recv_pages(struct krep_conn *c, const struct bio_vec *bv,
			 unsigned int nr, u32 len, u32 skip)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };

	iov_iter_bvec(&msg.msg_iter, ITER_DEST, bv, nr, len);
	iov_iter_advance(&msg.msg_iter, skip);
	return conn_recvmsg(c, &msg);
}

/*
 * Our HELLO: opening an outbound connection, or answering a peer's on
 * an accepted one, with our proof over its nonce and ours when we hold
 * a secret.
 */
static int send_hello(struct krep_conn *c)
{
	struct krep_wire_hello hello = {};
	struct krep_broker_cfg *cfg;
	struct krep_secret sec;
	u32 self;
	int err = 0;

	rcu_read_lock();
	cfg = rcu_dereference(c->kn->cfg);
	self = cfg->broker_id;
	hello.broker_id = cpu_to_be32(self);
	/* NUL-padded, and a full-length id has no NUL: memcpy */
	memcpy(hello.cluster_id, cfg->cluster_id,
	       strnlen(cfg->cluster_id, sizeof(hello.cluster_id)));
	krep_broker_advertised(cfg, hello.kafka_advertised,
			       sizeof(hello.kafka_advertised));
	rcu_read_unlock();
	hello.version = cpu_to_be16(KREP_WIRE_VERSION);
	memcpy(hello.nonce, c->nonce, sizeof(hello.nonce));
	krep_broker_secret(c->kn, &sec);
	if (sec.len) {
		/* and with it, encryption (ktls.c) unless turned off */
		hello.flags = cpu_to_be16(KREP_WIRE_HELLO_F_AUTH |
					  (krep_param_replication_tls() ?
					   KREP_WIRE_HELLO_F_TLS : 0));
		if (!c->outbound)
			err = krep_auth_proof(&sec, true, c->peer_nonce,
					      c->nonce, self, c->peer_id,
					      hello.proof);
	}
	krep_secret_wipe(&sec);
	if (!err)
		err = krep_conn_send(c, KREP_WIRE_HELLO, 0, &hello,
				     sizeof(hello));
	memzero_explicit(hello.proof, sizeof(hello.proof));
	return err;
}

/* the follower's AUTH, its proof over the leader's nonce and its own */
static int send_auth(struct krep_conn *c, const struct krep_secret *sec,
		     u32 self)
{
	struct krep_wire_auth auth = {};
	int err = 0;

	if (sec->len)
		err = krep_auth_proof(sec, false, c->peer_nonce, c->nonce,
				      self, c->peer_id, auth.proof);
	if (!err)
		err = krep_conn_send(c, KREP_WIRE_AUTH, 0, &auth,
				     sizeof(auth));
	memzero_explicit(&auth, sizeof(auth));
	return err;
}

/* the remote address (IP) of @sk is @ep's? */
static bool sk_addr_is(const struct sock *sk, const struct krep_endpoint *ep)
{
	if (ep->sa.sa_family != sk->sk_family)
		return false;
	if (ep->sa.sa_family == AF_INET)
		return ep->in4.sin_addr.s_addr == sk->sk_daddr;
	return ipv6_addr_equal(&ep->in6.sin6_addr, &sk->sk_v6_daddr);
}

/* the peer's address (its IP) is the one configured for its id? */
static bool peer_addr_ok(struct krep_conn *c, const struct krep_endpoint *ep)
{
	return sk_addr_is(c->sock->sk, ep);
}

/*
 * Checks of a peer's HELLO that need the configuration: cluster, a
 * configured id, its address (inbound), the same secret setting.
 */
static const char *hello_config_check(struct krep_conn *c,
				      const struct krep_wire_hello *h, u32 id,
				      const char *cluster)
{
	bool auth = be16_to_cpu(h->flags) & KREP_WIRE_HELLO_F_AUTH;
	bool tls = be16_to_cpu(h->flags) & KREP_WIRE_HELLO_F_TLS;
	struct krep_broker_cfg *cfg;
	const char *why = NULL;
	bool known = false;
	unsigned int i;

	rcu_read_lock();
	cfg = rcu_dereference(c->kn->cfg);
	if (strcmp(cluster, cfg->cluster_id))
		why = "cluster id mismatch";
	for (i = 0; !why && i < cfg->npeers; i++) {
		if (cfg->peers[i].id != id)
			continue;
		known = true;
		if (!c->outbound && !peer_addr_ok(c, &cfg->peers[i].ep))
			why = "HELLO from an address not configured for its broker id";
	}
	if (!why && !known)
		why = "broker id is not a configured peer";
	if (!why && auth && !cfg->secret_len)
		why = "peer authenticates but this broker has no cluster secret";
	if (!why && !auth && cfg->secret_len)
		why = "peer has no cluster secret";
	/* no fallback to the clear: a flag stripped on the way is refused */
	if (!why && auth && tls && !krep_param_replication_tls())
		why = "peer encrypts but this broker has replication_tls=0";
	if (!why && auth && !tls && krep_param_replication_tls())
		why = "peer does not encrypt (replication_tls=0 there)";
	rcu_read_unlock();
	if (!why && c->outbound && id != c->peer->id)
		why = "peer answered with another broker id";
	return why;
}

/* a newly authenticated peer id replaces its older connections */
static void replace_older(struct krep_conn *c)
{
	struct krep_net_state *ns = c->kn->ns;
	struct krep_conn *o;

	mutex_lock(&ns->lock);
	list_for_each_entry(o, &ns->conns, node) {
		if (o != c && !o->outbound && !o->kc &&
		    o->peer_id == c->peer_id &&
		    test_bit(KREP_CONN_HELLO_RX, &o->flags))
			krep_conn_close(o, "replaced by a new connection of its broker id");
	}
	mutex_unlock(&ns->lock);
}

/* a peer's HELLO: same cluster and version, a configured peer id */
static int handle_hello(struct krep_conn *c, const u8 *buf, u32 len,
			const char **why)
{
	const struct krep_wire_hello *h = (const void *)buf;
	char cluster[KREP_WIRE_CLUSTER_ID_LEN + 1];
	struct krep_secret sec;
	const char *adv_why;
	u32 id, self;
	bool ok;
	int err;

	if (test_bit(KREP_CONN_HELLO_RX, &c->flags) || len != sizeof(*h) ||
	    (be16_to_cpu(h->flags) & ~(KREP_WIRE_HELLO_F_AUTH |
					KREP_WIRE_HELLO_F_TLS)) ||
	    be16_to_cpu(h->flags) == KREP_WIRE_HELLO_F_TLS) {
		*why = "malformed or repeated HELLO";
		return -EPROTO;
	}
	if (be16_to_cpu(h->version) != KREP_WIRE_VERSION) {
		*why = "protocol version mismatch";
		return -EPROTO;
	}
	id = be32_to_cpu(h->broker_id);
	memcpy(cluster, h->cluster_id, sizeof(h->cluster_id));
	cluster[sizeof(h->cluster_id)] = '\0';
	/* empty, or a HOST:PORT ending in NUL */
	if (h->kafka_advertised[sizeof(h->kafka_advertised) - 1] ||
	    (h->kafka_advertised[0] &&
	     krep_advertised_check(h->kafka_advertised, &adv_why))) {
		*why = "malformed Kafka advertised address in HELLO";
		return -EPROTO;
	}
	c->peer_id = id;
	*why = hello_config_check(c, h, id, cluster);
	if (*why)
		return -EPROTO;
	memcpy(c->peer_nonce, h->nonce, sizeof(c->peer_nonce));
	set_bit(KREP_CONN_HELLO_RX, &c->flags);
	if (!c->outbound) {
		conn_set_cpu(c);
		/* HELLO counts once the AUTH that follows proves the peer */
		return send_hello(c);
	}

	/* the leader proves the secret; we prove it back in AUTH */
	krep_broker_secret(c->kn, &sec);
	rcu_read_lock();
	self = rcu_dereference(c->kn->cfg)->broker_id;
	rcu_read_unlock();
	ok = !sec.len || krep_auth_check(&sec, true, c->nonce, c->peer_nonce,
					 id, self, h->proof);
	err = ok ? send_auth(c, &sec, self) : -EACCES;
	if (err)
		*why = ok ? "cannot send AUTH" :
			    "peer's proof of the cluster secret is wrong";
	/* the leader's records start after its HELLO, ours after AUTH */
	else if (be16_to_cpu(h->flags) & KREP_WIRE_HELLO_F_TLS)
		err = krep_tls_start(c, &sec, self, why);
	krep_secret_wipe(&sec);
	if (err)
		return err;
	set_bit(KREP_CONN_HELLO, &c->flags);
	{
		struct krep_net_state *ns = c->kn->ns;

		/* the peers array lives while this connection is listed */
		mutex_lock(&ns->lock);
		strscpy(c->peer->advertised, h->kafka_advertised,
			sizeof(c->peer->advertised));
		WRITE_ONCE(c->peer->state, KREP_PEER_UP);
		c->peer->backoff_ms = KREP_BACKOFF_MIN_MS;
		krep_fetcher_kick(c->peer);
		mutex_unlock(&ns->lock);
	}
	return 0;
}

/* the follower's AUTH on an accepted connection ends the handshake */
static int handle_auth(struct krep_conn *c, const u8 *buf, u32 len,
		       const char **why)
{
	const struct krep_wire_auth *a = (const void *)buf;
	struct krep_secret sec;
	u32 self;
	bool ok;
	int err;

	if (c->outbound || !test_bit(KREP_CONN_HELLO_RX, &c->flags) ||
	    test_bit(KREP_CONN_HELLO, &c->flags) || len != sizeof(*a)) {
		*why = "unexpected AUTH";
		return -EPROTO;
	}
	krep_broker_secret(c->kn, &sec);
	rcu_read_lock();
	self = rcu_dereference(c->kn->cfg)->broker_id;
	rcu_read_unlock();
	ok = !sec.len || krep_auth_check(&sec, false, c->nonce, c->peer_nonce,
					 c->peer_id, self, a->proof);
	err = ok ? 0 : -EACCES;
	if (!ok)
		*why = "peer's proof of the cluster secret is wrong";
	/* our HELLO said F_TLS, and the peer's too (hello_config_check) */
	else if (sec.len && krep_param_replication_tls())
		err = krep_tls_start(c, &sec, self, why);
	krep_secret_wipe(&sec);
	if (err)
		return err;
	set_bit(KREP_CONN_HELLO, &c->flags);
	replace_older(c);
	return 0;
}

static int dispatch(struct krep_conn *c, const char **why)
{
	u32 len = be32_to_cpu(c->hdr.length);
	u32 corr = be32_to_cpu(c->hdr.correlation_id);

	switch (c->hdr.type) {
	case KREP_WIRE_HELLO:
		return handle_hello(c, c->payload, len, why);
	case KREP_WIRE_AUTH:
		return handle_auth(c, c->payload, len, why);
	case KREP_WIRE_FETCH:
		if (c->outbound || !test_bit(KREP_CONN_HELLO, &c->flags)) {
			*why = "FETCH before HELLO or on an outbound connection";
			return -EPROTO;
		}
		return krep_replica_serve(c, corr, &c->payload, len, why);
	}
	*why = "unknown frame type";
	return -EPROTO;
}

/* a FETCH response is read as it arrives (fetcher.c), not buffered */
static int stream_start(struct krep_conn *c, const char **why)
{
	u32 len = be32_to_cpu(c->hdr.length);
	u32 corr = be32_to_cpu(c->hdr.correlation_id);
	int err;

	if (!c->outbound || !test_bit(KREP_CONN_HELLO, &c->flags)) {
		*why = "unexpected FETCH response";
		return -EPROTO;
	}
	err = krep_fetcher_rx_start(c, corr, len, why);
	c->rx_stream = !err;
	return err;
}

/* read and dispatch every complete frame the socket holds */
static void conn_rx(struct krep_conn *c)
{
	const char *why = NULL;
	int ret, budget = 64;
	u32 len;

	while (!test_bit(KREP_CONN_DEAD, &c->flags) && budget--) {
		/* a peer that reads none of its answers gets no more */
		if (!c->hdr_got && krep_conn_tx_over(c))
			goto paused;
		if (!c->hdr_got && krep_tls_rx_spent(c)) {
			why = "2^38 bytes in under one key: closed for new keys";
			goto bad;
		}
		if (c->hdr_got < sizeof(c->hdr)) {
			ret = krep_conn_recv(c, (u8 *)&c->hdr + c->hdr_got,
					     sizeof(c->hdr) - c->hdr_got);
			if (ret <= 0)
				goto out;
			c->hdr_got += ret;
			if (c->hdr_got < sizeof(c->hdr))
				continue;
			if (krep_wire_hdr_check(&c->hdr, &why))
				goto bad;
			if (!test_bit(KREP_CONN_HELLO, &c->flags) &&
			    c->hdr.type != KREP_WIRE_HELLO &&
			    (c->hdr.type != KREP_WIRE_AUTH ||
			     !test_bit(KREP_CONN_HELLO_RX, &c->flags))) {
				why = "first frame is not HELLO";
				goto bad;
			}
			/* nothing big is allocated for a peer not yet known */
			if ((c->hdr.type == KREP_WIRE_HELLO &&
			     be32_to_cpu(c->hdr.length) !=
			     sizeof(struct krep_wire_hello)) ||
			    (c->hdr.type == KREP_WIRE_AUTH &&
			     be32_to_cpu(c->hdr.length) !=
			     sizeof(struct krep_wire_auth))) {
				why = "malformed or repeated HELLO";
				goto bad;
			}
			if (c->hdr.type == KREP_WIRE_FETCH_RESP) {
				if (stream_start(c, &why))
					goto bad;
				continue;
			}
			/* only a leader's response may be large */
			if (be32_to_cpu(c->hdr.length) > KREP_WIRE_MAX_REQUEST) {
				why = "oversized request frame";
				goto bad;
			}
			c->payload_got = 0;
			len = max_t(u32, 1, be32_to_cpu(c->hdr.length));
			c->payload = krep_kvmalloc_brief(len, 0);
			if (!c->payload) {
				why = "out of memory for a frame";
				goto bad;
			}
		}
		if (c->rx_stream) {
			ret = krep_fetcher_rx(c, &why);
			if (ret == -EAGAIN)
				goto out;
			if (ret) {
				why = krep_tls_rx_why(c, ret) ?: why;
				goto bad;
			}
			c->rx_stream = false;
			c->hdr_got = 0;
			continue;
		}
		if (c->payload_got < be32_to_cpu(c->hdr.length)) {
			ret = krep_conn_recv(c, c->payload + c->payload_got,
					     be32_to_cpu(c->hdr.length) -
					     c->payload_got);
			if (ret <= 0)
				goto out;
			c->payload_got += ret;
			if (c->payload_got < be32_to_cpu(c->hdr.length))
				continue;
		}
		ret = dispatch(c, &why);
		kvfree(c->payload);	/* NULL if the handler kept it */
		c->payload = NULL;
		c->hdr_got = 0;
		if (ret)
			goto bad;
	}
	if (budget < 0)		/* more to read: yield and come back */
		krep_conn_queue(c, &c->rx_work);
paused:			/* the tx work queues us again (tx.c) */
	krep_conn_put(c);
	return;
out:
	if (ret == 0 || (ret < 0 && ret != -EAGAIN)) {
		/* a refused connect is not news: its peer shows DOWN */
		if (ret == 0 || (c->outbound &&
				 !test_bit(KREP_CONN_HELLO, &c->flags)))
			why = NULL;
		else
			why = krep_tls_rx_why(c, ret) ?: "receive error";
		krep_conn_close(c, why);
	}
	krep_conn_put(c);
	return;
bad:
	krep_conn_close(c, why);
	krep_conn_put(c);
}

void krep_conn_rx_work(struct work_struct *work)
{
	struct krep_conn *c = container_of(work, struct krep_conn, rx_work);
	struct mem_cgroup *old = krep_memcg_enter(c->kn);

	conn_rx(c);
	krep_memcg_leave(old);
}

static void listen_data_ready(struct sock *sk)
{
	struct krep_listener *l;

	read_lock_bh(&sk->sk_callback_lock);
	l = sk->sk_user_data;
	if (l && sk->sk_state == TCP_LISTEN)
		queue_work(krep_wq, &l->accept_work);
	read_unlock_bh(&sk->sk_callback_lock);
}

static void conn_set_addr(struct krep_conn *c, struct socket *sock)
{
	if (sock->sk->sk_family == AF_INET6)
		snprintf(c->addr, sizeof(c->addr), "[%pI6c]:%u",
			 &sock->sk->sk_v6_daddr, ntohs(sock->sk->sk_dport));
	else
		snprintf(c->addr, sizeof(c->addr), "%pI4:%u",
			 &sock->sk->sk_daddr, ntohs(sock->sk->sk_dport));
}

/* the configured peer whose address @sk comes from, or -1 (ns->lock) */
static s64 addr_peer(struct krep_net_state *ns, const struct sock *sk)
{
	unsigned int i;

	for (i = 0; i < ns->npeers; i++) {
		if (sk_addr_is(sk, &ns->peers[i].ep))
			return ns->peers[i].id;
	}
	return -1;
}

/* may one more connection from peer @id's address come in? (ns->lock) */
static bool peer_room(struct krep_net_state *ns, s64 id)
{
	struct krep_conn *c;
	unsigned int n = 0;

	if (id < 0)
		return false;
	list_for_each_entry(c, &ns->conns, node)
		n += c->from_peer == id;
	return n < KREP_PEER_INBOUND;
}

/* accept one connection under ns->lock: false when there is none */
static bool accept_one(struct krep_listener *l)
{
	struct krep_net *kn = l->kn;
	struct krep_net_state *ns = kn->ns;
	unsigned int *count = l->kafka ? &ns->nclients : &ns->ninbound;
	unsigned int max = l->kafka ? krep_param_kafka_max_connections() :
				      KREP_MAX_INBOUND;
	struct socket *sock;
	struct krep_conn *c;
	s64 from;

	lockdep_assert_held(&ns->lock);
	if (!l->sock || ns->stopped || kernel_accept(l->sock, &sock, O_NONBLOCK))
		return false;
	from = l->kafka ? -1 : addr_peer(ns, sock->sk);
	c = *count < max || peer_room(ns, from) ?
	    conn_new(kn, sock, NULL, l->kafka) : NULL;
	if (!c) {
		pr_info_ratelimited("refusing a %s connection: %u open already\n",
				    l->kafka ? "Kafka client" : "replication",
				    *count);
		sock_release(sock);
		return true;
	}
	(*count)++;
	c->from_peer = from;
	conn_set_addr(c, sock);
	sock_setup(sock->sk);
	list_add_tail(&c->node, &ns->conns);
	/* armed before any callback can close and release it */
	if (l->kafka)
		krep_kafka_conn_start(c);
	else
		krep_replica_hello_deadline(c);
	conn_attach(c);
	krep_conn_queue(c, &c->rx_work);
	return true;
}

static void accept_work(struct work_struct *work)
{
	struct krep_listener *l = container_of(work, struct krep_listener,
					       accept_work);
	struct krep_net_state *ns = l->kn->ns;
	bool more;

	do {
		mutex_lock(&ns->lock);
		more = accept_one(l);
		mutex_unlock(&ns->lock);
		cond_resched();
	} while (more);
}

static int listener_start(struct krep_listener *l,
			  const struct krep_endpoint *ep)
{
	struct socket *sock;
	int len, err;

	err = sock_create_kern(l->kn->net, ep->sa.sa_family, SOCK_STREAM,
			       IPPROTO_TCP, &sock);
	if (err)
		return err;
	sock_set_reuseaddr(sock->sk);
	/* an address not (yet) on an interface: listen all the same */
	ip_sock_set_freebind(sock->sk);
	len = ep->sa.sa_family == AF_INET ? sizeof(ep->in4) : sizeof(ep->in6);
	err = kernel_bind(sock, (struct sockaddr *)&ep->sa, len);
	if (!err)
		err = kernel_listen(sock, 128);
	if (err) {
		sock_release(sock);
		return err;
	}
	write_lock_bh(&sock->sk->sk_callback_lock);
	sock->sk->sk_user_data = l;
	l->saved_data_ready = sock->sk->sk_data_ready;
	sock->sk->sk_data_ready = listen_data_ready;
	write_unlock_bh(&sock->sk->sk_callback_lock);
	l->sock = sock;
	return 0;
}

static bool ep_same(const struct krep_endpoint *a,
		    const struct krep_endpoint *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return a->in4.sin_addr.s_addr == b->in4.sin_addr.s_addr &&
		       a->in4.sin_port == b->in4.sin_port;
	return ipv6_addr_equal(&a->in6.sin6_addr, &b->in6.sin6_addr) &&
	       a->in6.sin6_port == b->in6.sin6_port;
}

/**
 * krep_net_can_listen - can a listener move from @now to @next?
 * @net: the broker's namespace
 * @now: where it listens today (AF_UNSPEC: nowhere)
 * @next: where it would (AF_UNSPEC: nowhere)
 *
 * A trial bind on @next when it differs from @now, as listener_start()
 * binds (SO_REUSEADDR, IP_FREEBIND: an address not on an interface yet
 * is fine), so BROKER_SET can refuse a listener that could not start.
 *
 * Return: 0 or the bind's error (-EADDRINUSE, -EACCES, ...).
 */
int krep_net_can_listen(struct net *net, const struct krep_endpoint *now,
			const struct krep_endpoint *next)
{
	struct socket *sock;
	int len, err;

	if (!krep_endpoint_valid(next) || ep_same(now, next))
		return 0;
	err = sock_create_kern(net, next->sa.sa_family, SOCK_STREAM,
			       IPPROTO_TCP, &sock);
	if (err)
		return err;
	sock_set_reuseaddr(sock->sk);
	ip_sock_set_freebind(sock->sk);
	len = next->sa.sa_family == AF_INET ? sizeof(next->in4) :
					      sizeof(next->in6);
	err = kernel_bind(sock, (struct sockaddr *)&next->sa, len);
	sock_release(sock);
	return err;
}

static void listener_stop(struct krep_listener *l)
{
	struct socket *sock = l->sock;

	if (!sock)
		return;
	write_lock_bh(&sock->sk->sk_callback_lock);
	sock->sk->sk_user_data = NULL;
	sock->sk->sk_data_ready = l->saved_data_ready;
	write_unlock_bh(&sock->sk->sk_callback_lock);
	l->sock = NULL;
	kernel_sock_shutdown(sock, SHUT_RDWR);
	sock_release(sock);
}

static void listener_init(struct krep_listener *l, struct krep_net *kn,
			  bool kafka)
{
	l->kn = kn;
	l->kafka = kafka;
	INIT_WORK(&l->accept_work, accept_work);
}

/*
 * Start connecting to @peer without waiting: the connection is listed
 * and its callbacks attached first, its HELLO queued; the state change
 * to ESTABLISHED pushes the HELLO (tx_work), a refused or timed-out
 * connect closes it (rx_work), and the HELLO deadline bounds the whole.
 * Its release re-arms this work with the back-off.
 */
static void connect_work(struct work_struct *work)
{
	struct krep_peer *peer = container_of(to_delayed_work(work),
					      struct krep_peer, connect_work);
	struct krep_net *kn = peer->kn;
	struct krep_net_state *ns = kn->ns;
	struct socket *sock;
	struct krep_conn *c;
	int len, err;

	if (READ_ONCE(ns->stopped))
		return;
	WRITE_ONCE(peer->state, KREP_PEER_CONNECTING);
	err = sock_create_kern(kn->net, peer->ep.sa.sa_family, SOCK_STREAM,
			       IPPROTO_TCP, &sock);
	if (err)
		goto retry;
	sock_setup(sock->sk);
	c = conn_new(kn, sock, peer, false);
	if (!c) {
		sock_release(sock);
		goto retry;
	}
	mutex_lock(&ns->lock);
	if (ns->stopped) {
		mutex_unlock(&ns->lock);
		sock_release(sock);
		krep_conn_put(c);
		return;
	}
	list_add_tail(&c->node, &ns->conns);
	peer->conn = c;
	krep_replica_hello_deadline(c);
	conn_attach(c);
	/* krep_net_stop() may close and release it from here on */
	kref_get(&c->ref);
	mutex_unlock(&ns->lock);

	len = peer->ep.sa.sa_family == AF_INET ? sizeof(peer->ep.in4) :
						 sizeof(peer->ep.in6);
	mutex_lock(&c->tx_lock);	/* the socket lives while not DEAD */
	err = -ENOTCONN;
	if (!test_bit(KREP_CONN_DEAD, &c->flags))
		err = kernel_connect(sock, (struct sockaddr *)&peer->ep.sa,
				     len, O_NONBLOCK);
	mutex_unlock(&c->tx_lock);
	if (!err || err == -EINPROGRESS)
		err = send_hello(c);
	/* a refused connect is not news (it may surface in the push) */
	if (err && err != -EINPROGRESS)
		krep_conn_close(c, err == -ENOMEM ? "cannot send HELLO" : NULL);
	krep_conn_put(c);
	return;

retry:
	WRITE_ONCE(peer->state, KREP_PEER_DOWN);
	peer->backoff_ms = clamp(peer->backoff_ms * 2, KREP_BACKOFF_MIN_MS,
				 krep_param_reconnect_backoff_max_ms());
	mutex_lock(&ns->lock);
	if (!ns->stopped)
		queue_delayed_work(krep_wq, &peer->connect_work,
				   msecs_to_jiffies(peer->backoff_ms));
	mutex_unlock(&ns->lock);
}

static bool conns_empty(struct krep_net_state *ns)
{
	bool empty;

	mutex_lock(&ns->lock);
	empty = list_empty(&ns->conns);
	mutex_unlock(&ns->lock);
	return empty;
}

/* close every socket and wait for all work; the state may restart */
void krep_net_stop(struct krep_net *kn)
{
	struct krep_net_state *ns = kn->ns;
	struct krep_conn *c;
	unsigned int i;

	mutex_lock(&ns->lock);
	WRITE_ONCE(ns->stopped, true);	/* connect_work peeks unlocked */
	listener_stop(&ns->listener);
	listener_stop(&ns->klistener);
	list_for_each_entry(c, &ns->conns, node)
		krep_conn_close(c, NULL);
	mutex_unlock(&ns->lock);
	cancel_work_sync(&ns->listener.accept_work);
	cancel_work_sync(&ns->klistener.accept_work);
	/*
	 * Each connection's release cancels its works and unlists it; a
	 * connect_work still running lists nothing once stopped. Only this
	 * broker's connections are waited for, never the shared queue.
	 */
	wait_event(ns->conns_wq, list_empty_careful(&ns->conns));
	/* the last release work may still be in ns->lock, waking us */
	mutex_lock(&ns->lock);
	mutex_unlock(&ns->lock);
	/* nothing re-arms these once stopped and no connection is left */
	for (i = 0; i < ns->npeers; i++) {
		cancel_delayed_work_sync(&ns->peers[i].connect_work);
		cancel_delayed_work_sync(&ns->peers[i].fetch_work);
	}
	/* a connect_work that ran past the wait may have listed one */
	WARN_ON_ONCE(!conns_empty(ns));
	kfree(ns->peers);
	ns->peers = NULL;
	ns->npeers = 0;
}

/**
 * krep_net_apply - (re)start the sockets for the broker's configuration:
 * the listener on `listen`, and a connection to every peer
 * @kn: the broker; its configuration is read under cfg_lock
 *
 * Return: 0, or the error of binding the listener (logged).
 */
int krep_net_apply(struct krep_net *kn)
{
	struct krep_net_state *ns = kn->ns;
	struct krep_broker_cfg *cfg;
	struct krep_endpoint listen, klisten;
	struct krep_peer *peers;
	unsigned int i, n;
	int err = 0;

	mutex_lock(&ns->apply_lock);
	krep_net_stop(kn);

	mutex_lock(&kn->cfg_lock);
	cfg = krep_broker_cfg_locked(kn);
	n = cfg->broker_id == KREP_BROKER_ID_UNSET ? 0 : cfg->npeers;
	peers = n ? kcalloc(n, sizeof(*peers), GFP_KERNEL) : NULL;
	if (n && !peers) {
		mutex_unlock(&kn->cfg_lock);
		mutex_unlock(&ns->apply_lock);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		peers[i].kn = kn;
		peers[i].id = cfg->peers[i].id;
		peers[i].ep = cfg->peers[i].ep;
		peers[i].state = KREP_PEER_CONFIGURED;
		peers[i].backoff_ms = KREP_BACKOFF_MIN_MS;
		INIT_DELAYED_WORK(&peers[i].connect_work, connect_work);
		INIT_DELAYED_WORK(&peers[i].fetch_work, krep_fetcher_work);
	}
	listen = cfg->listen;
	klisten = cfg->kafka_listen;
	if (cfg->broker_id == KREP_BROKER_ID_UNSET) {
		listen.sa.sa_family = AF_UNSPEC;
		klisten.sa.sa_family = AF_UNSPEC;
	}
	mutex_unlock(&kn->cfg_lock);

	mutex_lock(&ns->lock);
	ns->peers = peers;
	ns->npeers = n;
	WRITE_ONCE(ns->stopped, false);
	if (krep_endpoint_valid(&listen)) {
		err = listener_start(&ns->listener, &listen);
		if (err)
			pr_warn("cannot listen on %pISpc: error %d\n",
				&listen.sa, err);
	}
	if (krep_endpoint_valid(&klisten)) {
		int kerr = listener_start(&ns->klistener, &klisten);

		if (kerr)
			pr_warn("cannot listen for Kafka clients on %pISpc: error %d\n",
				&klisten.sa, kerr);
		err = err ?: kerr;
	}
	for (i = 0; i < n; i++)
		queue_delayed_work(krep_wq, &peers[i].connect_work, 0);
	mutex_unlock(&ns->lock);
	mutex_unlock(&ns->apply_lock);
	return err;
}

u8 krep_net_peer_state(struct krep_net *kn, u32 id)
{
	struct krep_net_state *ns = kn->ns;
	u8 state = KREP_PEER_CONFIGURED;
	unsigned int i;

	mutex_lock(&ns->lock);
	for (i = 0; i < ns->npeers; i++) {
		if (ns->peers[i].id == id)
			state = READ_ONCE(ns->peers[i].state);
	}
	mutex_unlock(&ns->lock);
	return state;
}

/* the peers that told us where their Kafka clients go; under the lock */
unsigned int krep_net_peer_eps(struct krep_net *kn, struct krep_broker_ep *eps,
			       unsigned int max)
{
	struct krep_net_state *ns = kn->ns;
	unsigned int i, n = 0;

	mutex_lock(&ns->lock);
	for (i = 0; i < ns->npeers && n < max; i++) {
		if (!ns->peers[i].advertised[0])
			continue;
		eps[n].id = ns->peers[i].id;
		strscpy(eps[n].advertised, ns->peers[i].advertised,
			sizeof(eps[n].advertised));
		n++;
	}
	mutex_unlock(&ns->lock);
	return n;
}

int krep_net_state_alloc(struct krep_net *kn)
{
	struct krep_net_state *ns = kzalloc(sizeof(*ns), GFP_KERNEL);

	if (!ns)
		return -ENOMEM;
	ns->kn = kn;
	mutex_init(&ns->lock);
	mutex_init(&ns->apply_lock);
	INIT_LIST_HEAD(&ns->conns);
	init_waitqueue_head(&ns->conns_wq);
	listener_init(&ns->listener, kn, false);
	listener_init(&ns->klistener, kn, true);
	/* 30 lines per window and broker: a flood of bad peers stays bounded */
	ratelimit_state_init(&ns->close_rs,
			     msecs_to_jiffies(krep_param_close_log_interval_ms()),
			     30);
	ns->stopped = true;
	kn->ns = ns;
	return 0;
}

void krep_net_state_free(struct krep_net *kn)
{
	mutex_lock(&kn->ns->apply_lock);
	krep_net_stop(kn);
	mutex_unlock(&kn->ns->apply_lock);
	kfree(kn->ns);
	kn->ns = NULL;
}

int krep_net_module_init(void)
{
	/* per-CPU, not unbound: connections pick their CPU (conn_cpu()) */
	krep_wq = alloc_workqueue("krep", WQ_MEM_RECLAIM, 0);
	return krep_wq ? 0 : -ENOMEM;
}

void krep_net_module_exit(void)
{
	destroy_workqueue(krep_wq);
}
