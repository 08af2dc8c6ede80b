/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: Kafka's wire protocol for clients, on each broker's kafka_listen
 * port. kafka.c serves the connections (framing, one request at a time,
 * waits); kafka_api.c answers the requests.
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
struct work_struct;

/*
 * Requests over KREP_KAFKA_BIG bytes being read, all of a broker's
 * clients together, hold at most KREP_KAFKA_BIG_BUDGET bytes; one that
 * would pass it closes its connection. A request must arrive whole
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
	KREP_KAPI_API_VERSIONS = 18,
	KREP_KAPI_INIT_PRODUCER_ID = 22,
	KREP_KAPI_OFFSET_FOR_LEADER_EPOCH = 23,
};

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

/* kafka_api.c: answer (or park) one request; it owns @buf */
int krep_kafka_handle(struct krep_conn *c, u8 *buf, u32 len,
		      const char **why);

/* net.c's hooks for a client connection */
int krep_kafka_conn_init(struct krep_conn *c);
void krep_kafka_conn_start(struct krep_conn *c);
void krep_kafka_conn_release(struct krep_conn *c);
void krep_kafka_conn_free(struct krep_conn *c);
void krep_kafka_rx_work(struct work_struct *work);

#endif /* _KREP_KAFKA_H */
