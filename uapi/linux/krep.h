/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * krep: Kafka's partition replication protocol in the kernel.
 * Generic netlink API of the "krep" family.
 *
 * One broker lives in each network namespace; every command addresses the
 * broker of the namespace the netlink socket belongs to.
 *
 * Commands and their attribute trees (attributes are KREP_A_*):
 *
 * KREP_CMD_BROKER_GET  (do)          any user
 *   request:  (none)
 *   reply:    KREP_CMD_BROKER_GET
 *             KREP_A_BROKER_ID       u32   absent while the broker has no id
 *             KREP_A_CLUSTER_ID      string absent while unset
 *             KREP_A_LISTEN          nest  KREP_A_EP_*, absent while unset
 *             KREP_A_PEERS           nest  of KREP_A_PEER (nest):
 *                 KREP_A_PEER_ID     u32
 *                 KREP_A_PEER_EP     nest  KREP_A_EP_*
 *                 KREP_A_PEER_STATE  u8    enum krep_peer_state
 *             KREP_A_GENERATION      u32   bumped by every successful SET
 *
 * KREP_CMD_BROKER_SET  (do)          CAP_NET_ADMIN in the namespace's owner
 *   request:  any non-empty subset of
 *             KREP_A_BROKER_ID       u32   0..KREP_BROKER_ID_MAX
 *             KREP_A_CLUSTER_ID      string 1..KREP_CLUSTER_ID_MAX chars of
 *                                          [A-Za-z0-9_-]
 *             KREP_A_LISTEN          nest  KREP_A_EP_*: exactly one address
 *                                          and a port
 *             KREP_A_PEERS           nest  of KREP_A_PEER, replaces the whole
 *                                          peer list (an empty nest clears it);
 *                                          at most KREP_PEERS_MAX, ids unique
 *                                          and different from the broker's own
 *   The request is validated as a whole before anything changes: it either
 *   applies completely or not at all.
 *
 * Endpoints (KREP_A_EP_*): KREP_A_EP_IPV4 (__be32) or KREP_A_EP_IPV6 (16 bytes),
 * and KREP_A_EP_PORT (u16, host order, 1..65535).
 *
 * Errors: the errno of the NLMSG_ERROR reply, with an extack message naming
 * the reason and, where one attribute is at fault, that attribute:
 *   EINVAL   missing, malformed or out-of-range attribute, empty SET
 *   ERANGE   a value outside its documented range (policy checks)
 *   EEXIST   two peers with the same id
 *   E2BIG    more than KREP_PEERS_MAX peers
 *   EPERM    a state-changing command without CAP_NET_ADMIN
 * Operations on partitions answer Kafka's protocol error codes
 * (enum krep_kafka_error) in KREP_A_KAFKA_ERROR beside the nearest errno.
 */
#ifndef _UAPI_LINUX_KREP_H
#define _UAPI_LINUX_KREP_H

#define KREP_GENL_NAME		"krep"
#define KREP_GENL_VERSION	1
#define KREP_MCGRP_EVENTS	"events"

#define KREP_BROKER_ID_MAX	0x7fffffffU	/* Kafka node ids are int32 >= 0 */
#define KREP_CLUSTER_ID_MAX	64		/* characters, without the NUL */
#define KREP_PEERS_MAX		64
#define KREP_DEFAULT_PORT	9092

enum krep_cmd {
	KREP_CMD_UNSPEC,
	KREP_CMD_BROKER_GET,
	KREP_CMD_BROKER_SET,

	__KREP_CMD_MAX,
	KREP_CMD_MAX = __KREP_CMD_MAX - 1
};

enum krep_attr {
	KREP_A_UNSPEC,
	KREP_A_BROKER_ID,	/* u32 */
	KREP_A_CLUSTER_ID,	/* string */
	KREP_A_LISTEN,		/* nest: enum krep_ep_attr */
	KREP_A_PEERS,		/* nest: KREP_A_PEER ... */
	KREP_A_PEER,		/* nest: enum krep_peer_attr */
	KREP_A_GENERATION,	/* u32 */
	KREP_A_KAFKA_ERROR,	/* s16: enum krep_kafka_error */

	__KREP_A_MAX,
	KREP_A_MAX = __KREP_A_MAX - 1
};

enum krep_ep_attr {
	KREP_A_EP_UNSPEC,
	KREP_A_EP_IPV4,		/* __be32 */
	KREP_A_EP_IPV6,		/* binary, 16 bytes */
	KREP_A_EP_PORT,		/* u16, host byte order */

	__KREP_A_EP_MAX,
	KREP_A_EP_MAX = __KREP_A_EP_MAX - 1
};

enum krep_peer_attr {
	KREP_A_PEER_UNSPEC,
	KREP_A_PEER_ID,		/* u32 */
	KREP_A_PEER_EP,		/* nest: enum krep_ep_attr */
	KREP_A_PEER_STATE,	/* u8: enum krep_peer_state (reply only) */

	__KREP_A_PEER_MAX,
	KREP_A_PEER_MAX = __KREP_A_PEER_MAX - 1
};

enum krep_peer_state {
	KREP_PEER_CONFIGURED,	/* known, no connection attempted yet */
	KREP_PEER_CONNECTING,
	KREP_PEER_UP,
	KREP_PEER_DOWN,
};

/*
 * Kafka's protocol error codes, with Kafka's names and numbers, so that
 * tools and a Kafka-protocol front end can pass them through unchanged.
 */
enum krep_kafka_error {
	KREP_KERR_UNKNOWN_SERVER_ERROR			= -1,
	KREP_KERR_NONE					= 0,
	KREP_KERR_OFFSET_OUT_OF_RANGE			= 1,
	KREP_KERR_CORRUPT_MESSAGE			= 2,
	KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION		= 3,
	KREP_KERR_INVALID_FETCH_SIZE			= 4,
	KREP_KERR_LEADER_NOT_AVAILABLE			= 5,
	KREP_KERR_NOT_LEADER_OR_FOLLOWER		= 6,
	KREP_KERR_REQUEST_TIMED_OUT			= 7,
	KREP_KERR_BROKER_NOT_AVAILABLE			= 8,
	KREP_KERR_REPLICA_NOT_AVAILABLE			= 9,
	KREP_KERR_MESSAGE_TOO_LARGE			= 10,
	KREP_KERR_STALE_CONTROLLER_EPOCH		= 11,
	KREP_KERR_NETWORK_EXCEPTION			= 13,
	KREP_KERR_INVALID_TOPIC_EXCEPTION		= 17,
	KREP_KERR_RECORD_LIST_TOO_LARGE			= 18,
	KREP_KERR_NOT_ENOUGH_REPLICAS			= 19,
	KREP_KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND	= 20,
	KREP_KERR_INVALID_REQUIRED_ACKS			= 21,
	KREP_KERR_INVALID_TIMESTAMP			= 32,
	KREP_KERR_UNSUPPORTED_VERSION			= 35,
	KREP_KERR_TOPIC_ALREADY_EXISTS			= 36,
	KREP_KERR_INVALID_PARTITIONS			= 37,
	KREP_KERR_INVALID_REPLICATION_FACTOR		= 38,
	KREP_KERR_INVALID_REPLICA_ASSIGNMENT		= 39,
	KREP_KERR_INVALID_CONFIG			= 40,
	KREP_KERR_NOT_CONTROLLER			= 41,
	KREP_KERR_INVALID_REQUEST			= 42,
	KREP_KERR_POLICY_VIOLATION			= 44,
	KREP_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER		= 45,
	KREP_KERR_DUPLICATE_SEQUENCE_NUMBER		= 46,
	KREP_KERR_INVALID_PRODUCER_EPOCH		= 47,
	KREP_KERR_INVALID_TXN_STATE			= 48,
	KREP_KERR_KAFKA_STORAGE_ERROR			= 56,
	KREP_KERR_FENCED_LEADER_EPOCH			= 74,
	KREP_KERR_UNKNOWN_LEADER_EPOCH			= 75,
	KREP_KERR_OFFSET_NOT_AVAILABLE			= 78,
	KREP_KERR_ELIGIBLE_LEADERS_NOT_AVAILABLE	= 83,
	KREP_KERR_ELECTION_NOT_NEEDED			= 84,
	KREP_KERR_INVALID_RECORD			= 87,
};

#endif /* _UAPI_LINUX_KREP_H */
