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
 *          Kafka advertised address,
 *          nonce F}                        -->
 *                                          <-- HELLO {its own, nonce L,
 *                                              proof L}
 *   AUTH {proof F}                         -->
 *
 * Authentication: brokers that hold a cluster secret K (BROKER_SET
 * KREP_A_SECRET) set KREP_WIRE_HELLO_F_AUTH and prove it, each binding
 * both nonces and both ids (L the leader's id, F the follower's):
 *   proof L = HMAC-SHA256(K, "krep-hello-leader" || nonce F || nonce L ||
 *                         be32 L || be32 F)
 *   proof F = HMAC-SHA256(K, "krep-hello-follower" || nonce L || nonce F ||
 *                         be32 F || be32 L)
 * Without a secret the proofs are zero and both flags clear; a broker
 * with a secret refuses one without, and the other way round. A leader
 * serves no FETCH before the AUTH; it accepts a HELLO claiming a peer id
 * only from that peer's configured address, and a new authenticated
 * connection of a peer id replaces the old one.
 *
 * Encryption (version 4): brokers with a secret also set
 * KREP_WIRE_HELLO_F_TLS unless their module was loaded with
 * replication_tls=0; both must agree, or the HELLO is refused. With it,
 * every byte after the handshake is a TLS 1.3 record (RFC 8446 section
 * 5.2, application_data, AES-256-GCM; record sequence numbers from 0, no
 * other record type), one key per direction from HKDF-SHA256 (RFC 5869):
 *   PRK = HKDF-Extract(salt = nonce L || nonce F || be32 L || be32 F,
 *                      IKM = K)
 *   key || salt || iv = HKDF-Expand(PRK, "krep-tls13 leader to follower"
 *                       or "krep-tls13 follower to leader", 32 + 4 + 8)
 * and the record nonce (salt || iv) XOR the sequence number, as TLS 1.3.
 * The switch is at a frame boundary: the leader's records start right
 * after its HELLO, the follower's right after its AUTH. The keys are not
 * updated: a broker closes a connection once 2^38 bytes came in on it
 * (below AES-GCM's key use limit), and the follower connects anew.
 *   FETCH {replica id, max wait, max bytes,
 *          per partition: topic, partition,
 *          current leader epoch, fetch offset,
 *          last fetched epoch, log start}  -->
 *                                          <-- FETCH_RESP {per partition:
 *                                              error, HW, log start,
 *                                              diverging epoch, partition
 *                                              epoch, ISR, records}
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
#define KREP_WIRE_VERSION	4
#define KREP_WIRE_MAX_PAYLOAD	(4U << 20)	/* bytes, per frame */
#define KREP_WIRE_MAX_PARTITIONS 4096		/* per FETCH */

enum krep_wire_type {
	KREP_WIRE_HELLO = 1,
	KREP_WIRE_FETCH = 2,
	KREP_WIRE_FETCH_RESP = 3,
	KREP_WIRE_AUTH = 4,
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
#define KREP_WIRE_NONCE_LEN		32
#define KREP_WIRE_PROOF_LEN		32	/* HMAC-SHA256 */

#define KREP_WIRE_HELLO_F_AUTH		0x1	/* the sender has a secret */
#define KREP_WIRE_HELLO_F_TLS		0x2	/* ... and encrypts (version 4) */

struct krep_wire_hello {
	__be32 broker_id;
	__be16 version;		/* KREP_WIRE_VERSION */
	__be16 flags;		/* KREP_WIRE_HELLO_F_*, others 0 */
	char cluster_id[KREP_WIRE_CLUSTER_ID_LEN];	/* NUL-padded */
	/*
	 * "HOST:PORT" where the sender serves Kafka clients (what the
	 * brokers list of a Metadata response gives for it); NUL-padded,
	 * empty when it has no Kafka listener. Version 2.
	 */
	char kafka_advertised[KREP_WIRE_ADVERTISED_LEN];
	__u8 nonce[KREP_WIRE_NONCE_LEN];	/* random, per connection */
	__u8 proof[KREP_WIRE_PROOF_LEN];	/* the leader's; else 0 */
};

struct krep_wire_auth {
	__u8 proof[KREP_WIRE_PROOF_LEN];	/* the follower's, or 0 */
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
	/*
	 * Version 3: the leader's partition epoch and committed ISR, so
	 * that followers know them without a controller. The ISR is a
	 * bitmap over the partition's replicas in assignment order (the
	 * same on every replica): bit i of isr[i / 64] is replicas[i].
	 */
	__be32 partition_epoch;
	__be64 isr[2];
	__be32 reserved2;		/* 0 */
	__be32 records_len;		/* RecordBatch v2 bytes that follow */
};

#endif /* _UAPI_LINUX_KREP_WIRE_H */
