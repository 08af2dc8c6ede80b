/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: Kafka's wire protocol for clients, on each broker's kafka_listen
 * port. kafka.c serves the connections (one request at a time, waits,
 * deadlines); kafka_rx.c reads each request off the socket; kafka_api.c
 * answers them.
 */
#ifndef _KREP_KAFKA_H
#define _KREP_KAFKA_H

#include <linux/types.h>
#include <linux/wait.h>

#include "kproto.h"
#include "tx.h"

struct krep_conn;
struct krep_kpark;
struct page;
struct sk_buff;
struct work_struct;

/*
 * Requests over KREP_KAFKA_BIG bytes being read, all of a broker's
 * clients together, hold at most KREP_KAFKA_BIG_BUDGET bytes; one that
 * would pass it closes its connection. So does the socket memory a
 * request's records hold beyond its size (kafka_rx.c), else they are
 * copied. A request must arrive whole
 * within kafka_request_ms of its size, and a connection without a
 * request for kafka_idle_ms (Kafka's connections.max.idle.ms) is closed.
 * A request over kafka_max_request_bytes closes its connection.
 */
#define KREP_KAFKA_BIG			(64U << 10)
#define KREP_KAFKA_BIG_BUDGET		(64U << 20)

/* Kafka's request API keys that krep serves */
enum {
	KREP_KAPI_PRODUCE = 0,
	KREP_KAPI_FETCH = 1,
	KREP_KAPI_LIST_OFFSETS = 2,
	KREP_KAPI_METADATA = 3,
	KREP_KAPI_FIND_COORDINATOR = 10,
	KREP_KAPI_API_VERSIONS = 18,
	KREP_KAPI_INIT_PRODUCER_ID = 22,
	KREP_KAPI_OFFSET_FOR_LEADER_EPOCH = 23,
};

/* bytes of a request left in a socket buffer that carried them */
struct krep_kpiece {
	struct sk_buff *skb;		/* a clone, holding the bytes */
	u32 off;
	u32 len;
};

/*
 * A Produce request's records field: krep_kpiece pieces, or (@flat, when
 * its pieces would hold too much socket memory) its bytes in the
 * request's buffer after its length, as any other field
 */
struct krep_krec {
	u32 first;			/* its first piece */
	u32 npieces;
	u32 len;
	u32 got;			/* bytes of it taken as pieces */
	bool flat;
};

/* partitions named in one request */
#define KREP_KAFKA_MAX_PARTS		4096

/*
 * A request as kafka_rx.c read it: its bytes in @buf, but for the records
 * of a Produce request, whose length stays in @buf and whose bytes are
 * @recs (in the order they come), still in the socket's buffers.
 */
struct krep_kreq {
	u32 size;			/* the request's, after its size field */
	u8 *buf;
	u32 len;			/* bytes in @buf */
	u32 cap;			/* bytes @buf can hold */
	struct krep_kpiece *pieces;
	u32 npieces, pieces_cap;
	struct krep_krec *recs;
	u32 nrecs, recs_cap;
};

/* kafka_rx.c: the reading of one connection's next request */
struct krep_krx {
	u8 size_buf[4];
	u32 size_got;			/* WRITE_ONCE: the deadline work reads it */
	u32 size;
	u32 got;			/* bytes of the request taken */
	u32 charged;			/* of ns->kafka_rx_big */
	u32 pinned;			/* socket memory the pieces hold */
	u8 step;			/* the field being read (kafka_rx.c) */
	u32 need;			/* its bytes still to come */
	s32 topics_left, parts_left;
	struct krep_kreq q;
};

int krep_krx_read(struct krep_conn *c, struct krep_krx *x, const char **why);
void krep_krx_take(struct krep_krx *x, struct krep_kreq *q);
void krep_krx_uncharge(struct krep_conn *c, struct krep_krx *x);
void krep_krx_reset(struct krep_krx *x);
void krep_kreq_free(struct krep_kreq *q);
int krep_krec_copy(const struct krep_kreq *q, const struct krep_krec *rec,
		   void *dst, u32 len);

/* one wait of a parked request on a partition's wait queue */
struct krep_kwait {
	wait_queue_entry_t wq;
	wait_queue_head_t *head;
	struct krep_kpark *kp;
};

/*
 * A request that waits (a Fetch for its max wait, an acks=all Produce
 * for its timeout): its handler's state, with the two callbacks below.
 * While one is parked the connection reads no further request, so the
 * answers stay in order.
 */
struct krep_kpark {
	struct krep_conn *c;
	unsigned long deadline;		/* jiffies */
	/* 1 answered, 0 still waiting, < 0 close the connection */
	int (*resume)(struct krep_kpark *kp, bool final);
	void (*release)(struct krep_kpark *kp);
	unsigned int nwait, maxwait;
	struct krep_kwait *waits;
};

int krep_kpark_init(struct krep_kpark *kp, struct krep_conn *c,
		    unsigned int maxwait, u32 wait_ms);
void krep_kpark_wait_on(struct krep_kpark *kp, wait_queue_head_t *head);
int krep_kafka_park(struct krep_kpark *kp);

/* a response being built: bytes in @w, log pages by reference in @tx */
struct krep_kresp {
	struct krep_kw w;
	struct krep_tx tx;
	u32 flushed;			/* bytes of @w already in @tx */
};

void krep_kresp_begin(struct krep_kresp *rs, s32 corr, bool flex_hdr,
		      bool flex_body);
int krep_kresp_emit(struct page *page, u32 off, u32 len, void *ctx);
int krep_kresp_send(struct krep_conn *c, struct krep_kresp *rs);
void krep_kresp_free(struct krep_kresp *rs);

/* kafka_api.c: answer (or park) one request; it owns @in */
int krep_kafka_handle(struct krep_conn *c, struct krep_kreq *in,
		      const char **why);

/* net.c's hooks for a client connection */
int krep_kafka_conn_init(struct krep_conn *c);
void krep_kafka_conn_start(struct krep_conn *c);
void krep_kafka_conn_release(struct krep_conn *c);
void krep_kafka_conn_free(struct krep_conn *c);
void krep_kafka_rx_work(struct work_struct *work);

#endif /* _KREP_KAFKA_H */
