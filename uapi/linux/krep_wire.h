/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * krep: the wire protocol between brokers.
 *
 * A TCP stream of frames. Every frame is a fixed header followed by
 * hdr.length bytes of payload; all integers are big-endian. Payloads are
 * the structs below, field by field in order, with no padding between a
 * topic name and the struct that follows it (read them unaligned). A frame whose
 * magic, version, type or length is wrong, or whose payload does not parse
 * exactly, closes that connection and nothing else.
 *
 *   follower (client)                         leader (server, `listen`)
 *   HELLO {broker id, cluster id, version,
 *          Kafka advertised address}       -->
 *                                          <-- HELLO {its own}
 *   FETCH {replica id, max wait, max bytes,
 *          per partition: topic, partition,
 *          current leader epoch, fetch offset,
 *          last fetched epoch, log start}  -->
 *                                          <-- FETCH_RESP {per partition:
 *                                              error, HW, log start,
 *                                              diverging epoch, records}
 *
 * The leader answers a FETCH at once when any partition has records past
 * the fetch offset (or an error), else after max wait or as soon as an
 * append gives it something to send. A follower keeps one FETCH in flight
 * per leader.
 */
#ifndef _UAPI_LINUX_KREP_WIRE_H
#define _UAPI_LINUX_KREP_WIRE_H

#include <linux/types.h>

#define KREP_WIRE_MAGIC		0x4b524550	/* "KREP" */
#define KREP_WIRE_VERSION	2
#define KREP_WIRE_MAX_PAYLOAD	(4U << 20)	/* bytes, per frame */
#define KREP_WIRE_MAX_PARTITIONS 4096		/* per FETCH */

enum krep_wire_type {
	KREP_WIRE_HELLO = 1,
	KREP_WIRE_FETCH = 2,
	KREP_WIRE_FETCH_RESP = 3,
};

struct krep_wire_hdr {
	__be32 magic;
	__u8 version;
	__u8 type;		/* enum krep_wire_type */
	__be16 flags;		/* 0 */
	__be32 length;		/* payload bytes after this header */
	__be32 correlation_id;	/* a FETCH_RESP echoes its FETCH's */
};

#define KREP_WIRE_CLUSTER_ID_LEN	64
#define KREP_WIRE_ADVERTISED_LEN	128

struct krep_wire_hello {
	__be32 broker_id;
	__be16 version;		/* KREP_WIRE_VERSION */
	__be16 reserved;	/* 0 */
	char cluster_id[KREP_WIRE_CLUSTER_ID_LEN];	/* NUL-padded */
	/*
	 * "HOST:PORT" where the sender serves Kafka clients (what the
	 * brokers list of a Metadata response gives for it); NUL-padded,
	 * empty when it has no Kafka listener. Version 2.
	 */
	char kafka_advertised[KREP_WIRE_ADVERTISED_LEN];
};

struct krep_wire_fetch {
	__be32 replica_id;
	__be32 max_wait_ms;
	__be32 max_bytes;
	__be32 npartitions;
	/* then npartitions x: krep_wire_topic, krep_wire_fetch_part */
};

/* a topic name: length, then that many bytes (no NUL) */
struct krep_wire_topic {
	__be16 len;		/* 1..249 */
	/* char name[len]; */
};

struct krep_wire_fetch_part {
	__be32 partition;
	__be32 current_leader_epoch;
	__be64 fetch_offset;
	__be64 log_start_offset;
	__be32 last_fetched_epoch;	/* -1: none */
	__be32 reserved;		/* 0 */
};

struct krep_wire_fetch_resp {
	__be32 npartitions;
	/* then npartitions x: krep_wire_topic, krep_wire_resp_part, records */
};

struct krep_wire_resp_part {
	__be32 partition;
	__be16 error;			/* enum krep_kafka_error */
	__be16 reserved;		/* 0 */
	__be64 high_watermark;
	__be64 log_start_offset;
	__be64 diverging_end_offset;
	__be32 diverging_epoch;		/* -1: none */
	__be32 records_len;		/* RecordBatch v2 bytes that follow */
};

#endif /* _UAPI_LINUX_KREP_WIRE_H */
