/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepd --controller's control socket: a unix stream socket (default
 * /run/krep/krepd.sock, mode 0600) that krepctl elect talks to. One
 * request per connection, as one line; the reply is zero or more lines,
 * each one JSON object, then one final line:
 *
 *   request                          reply objects
 *   status                           one per partition of the controller's
 *                                    view: {"topic","partition","leader"
 *                                    (null when offline),"leader_epoch",
 *                                    "partition_epoch","replicas","isr",
 *                                    "min_isr" (the topic's
 *                                    min_insync_replicas),"elr","offline"}
 *   brokers                          one per broker: {"id","reachable",
 *                                    "fenced","claimed","incarnation"
 *                                    (hex string or null)} and the
 *                                    controller's {"controller_epoch",
 *                                    "owner"} first
 *   elect-preferred [TOPIC [PART]]   one per partition asked: {"topic",
 *                                    "partition","result":"elected"|
 *                                    "ELECTION_NOT_NEEDED"|"not_eligible",
 *                                    "leader","previous_leader",
 *                                    "leader_epoch","reason"}
 *
 *   topic-create NAME PARTITIONS RF [CONFIG]
 *                                    the controller creates a topic (CONFIG:
 *                                    KEY=VAL,... as krepctl topic create's):
 *                                    one object per partition {"topic",
 *                                    "partition","replicas"}, then one per
 *                                    broker {"broker","done","error"}
 *   topic-delete NAME                one object per broker {"broker","done",
 *                                    "error"}; brokers not reached are
 *                                    dealt with when they are
 *
 *   final line: "ok" (done, or nothing needed), "fail" (some partition
 *   was not eligible), or "error KAFKA_ERROR: MESSAGE", Kafka's name of
 *   the refusal first (INVALID_REQUEST for a bad request,
 *   UNKNOWN_TOPIC_OR_PARTITION, NOT_CONTROLLER from a standby or before
 *   the claims, INVALID_CONFIG, KAFKA_STORAGE_ERROR when the state cannot
 *   be written, ...).
 *
 * Lines are at most KREP_CTLSOCK_LINE_MAX bytes; a client that sends no
 * complete line within a second is dropped.
 */
#ifndef KREP_AGENT_CTLSOCK_H
#define KREP_AGENT_CTLSOCK_H

#include <stddef.h>
#include <stdio.h>

/* krepd --controller listens here unless told otherwise */
#define KREP_DEFAULT_SOCKET	"/run/krep/krepd.sock"

#define KREP_CTLSOCK_LINE_MAX	512
#define KREP_CTLSOCK_TIMEOUT_MS	1000

struct krep_ctlsock;

/*
 * Listen on @path (creating its directory if missing). A socket file left
 * by a krepd that is gone is replaced; one that answers is not (-EADDRINUSE).
 * Returns NULL with the reason in @err.
 */
struct krep_ctlsock *krep_ctlsock_open(const char *path, char *err,
				       size_t errlen);
/* Close and remove the socket file. */
void krep_ctlsock_close(struct krep_ctlsock *cs);
int krep_ctlsock_fd(const struct krep_ctlsock *cs);

/*
 * Accept one client, read its request line and answer what @handle writes
 * to @out (objects and the final line). Never blocks for more than
 * KREP_CTLSOCK_TIMEOUT_MS on a client.
 */
typedef void (*krep_ctlsock_handler)(const char *request, FILE *out,
				     void *arg);
void krep_ctlsock_serve(struct krep_ctlsock *cs, krep_ctlsock_handler handle,
			void *arg);

/*
 * Client: send @request to the krepd at @path and read its whole reply
 * into *@reply (malloc'd, NUL-terminated). Returns 0 or -errno (printed
 * by the caller).
 */
int krep_ctlsock_call(const char *path, const char *request, int timeout_ms,
		      char **reply);

#endif
