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
 *             KREP_A_CLUSTER_ID      string absent while unset, and for
 *                                          callers without CAP_NET_ADMIN
 *                                          over the namespace (the events
 *                                          of the group carry it)
 *             KREP_A_LISTEN          nest  KREP_A_EP_*, absent while unset
 *             KREP_A_KAFKA_LISTEN    nest  KREP_A_EP_*: the Kafka client
 *                                          listener, absent while unset
 *             KREP_A_KAFKA_ADVERTISED string HOST:PORT that Metadata gives
 *                                          clients for this broker, absent
 *                                          while there is no Kafka listener
 *             KREP_A_AUTH            u8    1 when the broker holds a cluster
 *                                          secret (never the secret itself)
 *             KREP_A_PEERS           nest  of KREP_A_PEER (nest):
 *                 KREP_A_PEER_ID     u32
 *                 KREP_A_PEER_EP     nest  KREP_A_EP_*
 *                 KREP_A_PEER_STATE  u8    enum krep_peer_state
 *             KREP_A_GENERATION      u32   bumped by every successful SET
 *                                          that changes the configuration
 *             KREP_A_INCARNATION     u64   random, drawn when the broker's
 *                                          namespace came up: a new value
 *                                          means every log was lost
 *             KREP_A_CONTROLLER      nest  KREP_A_CTRL_*: the controller's
 *                                          claim (epoch, owner, lease,
 *                                          AGE_MS since it was renewed),
 *                                          absent while none was made
 *             KREP_A_STATS           nest  KREP_A_STAT_* counters: records
 *                                          appended, payload bytes copied
 *                                          (produce, replication, socket
 *                                          reads) and sent without a copy
 *             KREP_A_LOG_MEMORY      u64   bytes of log pages this broker
 *                                          holds (all its partitions)
 *             KREP_A_LOG_MEMORY_MAX  u64   its cap (log_memory_max): an
 *                                          append past it is refused
 *                                          (ENOSPC, KAFKA_STORAGE_ERROR)
 *             KREP_A_LOG_DIR         string the log directory (absent: logs
 *                                          in memory only), as the caller's
 *                                          root sees it; for admins only
 *
 * KREP_CMD_BROKER_SET  (do)          CAP_NET_ADMIN in the namespace's owner
 *   request:  any non-empty subset of
 *             KREP_A_BROKER_ID       u32   0..KREP_BROKER_ID_MAX
 *             KREP_A_CLUSTER_ID      string 1..KREP_CLUSTER_ID_MAX chars of
 *                                          [A-Za-z0-9_-]
 *             KREP_A_LISTEN          nest  KREP_A_EP_*: exactly one address
 *                                          and a port
 *             KREP_A_KAFKA_LISTEN    nest  KREP_A_EP_*: the Kafka client
 *                                          listener (an empty nest: none)
 *             KREP_A_SECRET          binary KREP_SECRET_MIN..KREP_SECRET_MAX
 *                                          bytes: the cluster secret brokers
 *                                          authenticate each other with
 *                                          (krep_wire.h); empty: none.
 *                                          Write-only; peers reconnect
 *             KREP_A_KAFKA_ADVERTISED string HOST:PORT (1..KREP_ADVERTISED_MAX
 *                                          chars; "" clears it): what
 *                                          Metadata gives for this broker;
 *                                          needed when KREP_A_KAFKA_LISTEN
 *                                          is a wildcard address
 *             KREP_A_PEERS           nest  of KREP_A_PEER, replaces the whole
 *                                          peer list (an empty nest clears it);
 *                                          at most KREP_PEERS_MAX, ids unique
 *                                          and different from the broker's own
 *             KREP_A_CONTROLLER      nest  a controller's claim on this
 *                                          broker: KREP_A_CTRL_EPOCH (>= 1),
 *                                          KREP_A_CTRL_OWNER (u64, nonzero:
 *                                          who claims), KREP_A_CTRL_LEASE_MS
 *                                          (0 releases, else 100..600000).
 *             KREP_A_LOG_DIR_FD      s32   a directory the caller opened
 *                                          (O_DIRECTORY or O_PATH): the
 *                                          broker's log directory, in Kafka's
 *                                          layout; -1: none. Only while the
 *                                          broker has no topics (EBUSY) and
 *                                          has an id; CAP_SYS_ADMIN in the
 *                                          initial user namespace (EPERM);
 *                                          another broker's (.lock) is EBUSY;
 *                                          meta.properties must
 *                                          name this broker (and cluster),
 *                                          else EINVAL. The kernel never
 *                                          resolves a path named here.
 *                                          With a log directory set, a new
 *                                          broker id is refused (EBUSY).
 *             A claim while another owner's lease runs fails EBUSY
 *             (NOT_CONTROLLER); after it ran out (or was released) a new
 *             owner needs a higher epoch, else ESTALE
 *             (STALE_CONTROLLER_EPOCH). The owner renews with the same
 *             epoch or a higher one. Once a claim was made, the broker's
 *             ISR changes wait for that controller's commit.
 *   The request is validated as a whole before anything changes: it either
 *   applies completely or not at all. A listener (KREP_A_LISTEN,
 *   KREP_A_KAFKA_LISTEN) the SET would move is tried first: an address in
 *   use or not allowed fails with the bind's errno (EADDRINUSE, ...); an
 *   address not on an interface yet is fine (IP_FREEBIND). The two
 *   listeners on one port of one address (or of a wildcard address and
 *   another) fail with EADDRINUSE.
 *
 * KREP_CMD_TOPIC_NEW   (do)          CAP_NET_ADMIN
 *   request:  KREP_A_TOPIC (1..249 chars of [a-zA-Z0-9._-], not . or ..),
 *             KREP_A_PARTITIONS (1..1024), KREP_A_REPLICATION_FACTOR
 *             (1..number of brokers), KREP_A_TOPIC_CONFIG (optional nest of
 *             KREP_A_TCFG_*). Replicas are assigned round-robin over the
 *             sorted broker ids (own id and peers); the first is the
 *             preferred leader, which leads at epoch 0; ISR = AR.
 *             KREP_A_ASSIGNMENT (optional): the controller's assignment
 *             instead, one KREP_A_REPLICAS nest per partition in partition
 *             order, each of exactly KREP_A_REPLICATION_FACTOR distinct
 *             broker ids known to this broker (its own and its peers').
 *             KREP_A_CONTROLLER_EPOCH (optional, with an assignment only):
 *             the topic is the controller's (the claim must hold that
 *             epoch): its replicas start with no leader, ISR = AR, leader
 *             and partition epoch 0, and wait for the LEADER_AND_ISR that
 *             names their leader. Without it the first replica leads.
 *   errors:   EEXIST (TOPIC_ALREADY_EXISTS), EINVAL (INVALID_TOPIC_EXCEPTION,
 *             INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG,
 *             INVALID_REPLICA_ASSIGNMENT: an assignment of the wrong size,
 *             a broker twice in a partition or one this broker does not
 *             know), ESTALE/EPERM as LEADER_AND_ISR for the controller epoch
 * KREP_CMD_TOPIC_DEL   (do)          CAP_NET_ADMIN
 *   request:  KREP_A_TOPIC; ENOENT (UNKNOWN_TOPIC_OR_PARTITION) if unknown.
 *             Waiting produces and fetches on it end with ENOENT.
 * KREP_CMD_TOPIC_GET   (do, dump)    any user
 *   request:  KREP_A_TOPIC (do only)
 *   reply:    KREP_A_TOPIC, KREP_A_PARTITIONS, KREP_A_REPLICATION_FACTOR,
 *             KREP_A_TOPIC_CONFIG (every KREP_A_TCFG_*)
 * KREP_CMD_PARTITION_GET (dump)      any user
 *   request:  KREP_A_TOPIC (optional filter)
 *   reply:    one message per local replica: KREP_A_TOPIC, KREP_A_PARTITION,
 *             KREP_A_ROLE, KREP_A_LEADER, KREP_A_LEADER_EPOCH,
 *             KREP_A_PARTITION_EPOCH, KREP_A_REPLICAS, KREP_A_ISR,
 *             KREP_A_LEO, KREP_A_HW, KREP_A_LSO, KREP_A_LOG_START,
 *             KREP_A_LOW_WATERMARK, KREP_A_LOG_BYTES, KREP_A_EPOCHS (the
 *             leader epoch cache: a KREP_A_EPOCH_ENTRY nest per epoch,
 *             oldest first, the newest KREP_EPOCH_CACHE_MAX of them),
 *             KREP_A_PENDING_ISR while an ALTER_ISR waits for the
 *             controller, KREP_A_INELIGIBLE when the controller named
 *             fenced replicas, and on a leader
 *             KREP_A_REMOTES: a KREP_A_REMOTE nest per follower
 *             (KREP_A_REMOTE_*: id, LEO, log start, ms since its last
 *             fetch and since it was last caught up, ISR membership)
 * KREP_CMD_PRODUCE     (do)          CAP_NET_ADMIN
 *   request:  KREP_A_TOPIC, KREP_A_PARTITION, KREP_A_RECORDS (exactly one
 *             RecordBatch v2, magic 2, CRC-32C valid, at most 65531 bytes
 *             as a netlink attribute; baseOffset and partitionLeaderEpoch
 *             are overwritten by the leader),
 *             KREP_A_ACKS (default -1), KREP_A_TIMEOUT_MS (default and max 30000),
 *             KREP_A_LEADER_EPOCH (optional: the epoch the client knows;
 *             FENCED_LEADER_EPOCH (ESTALE) when older than the leader's,
 *             UNKNOWN_LEADER_EPOCH (EAGAIN) when newer)
 *   reply:    KREP_A_OFFSET (base offset assigned), KREP_A_HW
 *   errors:   MESSAGE_TOO_LARGE (EMSGSIZE), CORRUPT_MESSAGE (EBADMSG),
 *             INVALID_RECORD (EINVAL), NOT_ENOUGH_REPLICAS (EAGAIN, nothing
 *             appended), NOT_ENOUGH_REPLICAS_AFTER_APPEND (EAGAIN),
 *             REQUEST_TIMED_OUT (ETIMEDOUT), NOT_LEADER_OR_FOLLOWER
 *             (EREMOTE), KAFKA_STORAGE_ERROR (ENOSPC: broker memory cap),
 *             INVALID_TXN_STATE (EINVAL); for a batch with a producer id,
 *             POLICY_VIOLATION (EUSERS: a new producer id past the module
 *             parameter producers_max), KAFKA_STORAGE_ERROR (ENOSPC: no
 *             room under the memory cap for its producer state) and
 *             UNKNOWN_SERVER_ERROR (ENOMEM: no memory for it); nothing
 *             appended
 * KREP_CMD_FETCH       (do)          any user
 *   request:  KREP_A_TOPIC, KREP_A_PARTITION, KREP_A_OFFSET,
 *             KREP_A_MAX_BYTES (default 1 MiB; at least one whole batch is
 *             returned), KREP_A_MAX_WAIT_MS (default 0, max 30000), KREP_A_ISOLATION,
 *             KREP_A_FOLLOWER_READ (flag: accept a follower replica too, as
 *             Kafka's fetch-from-follower; it serves up to its own HW,
 *             or LSO for read_committed),
 *             KREP_A_LEADER_EPOCH (optional, checked as in PRODUCE)
 *   reply:    KREP_A_RECORDS, repeated: whole batches as stored, in offset
 *             order, at most 65531 bytes per attribute (none when there
 *             is nothing to read; read_committed stops at LSO and leaves
 *             out batches of aborted transactions), KREP_A_HW, KREP_A_LSO,
 *             KREP_A_LOG_START
 *   errors:   OFFSET_OUT_OF_RANGE (ERANGE) below log start or above LEO
 *             (a new leader answers fetches up to its HW at once)
 * KREP_CMD_LIST_OFFSETS (do)         any user
 *   request:  KREP_A_TOPIC, KREP_A_PARTITION, KREP_A_TIMESTAMP
 *             (KREP_TS_EARLIEST, KREP_TS_LATEST = HW, or a time in ms),
 *             KREP_A_ISOLATION (read_committed: LATEST is LSO, a time is
 *             looked up below LSO)
 *   reply:    KREP_A_OFFSET (the first offset whose timestamp is at least
 *             the one asked; HW when none is), KREP_A_TIMESTAMP
 *   errors:   OFFSET_NOT_AVAILABLE (EAGAIN) for LATEST, or a time no
 *             record below HW matches, while a new leader's HW is below
 *             its epoch's start offset (EARLIEST is always answered)
 * KREP_CMD_DELETE_RECORDS (do)       CAP_NET_ADMIN
 *   request:  KREP_A_TOPIC, KREP_A_PARTITION, KREP_A_OFFSET (<= HW),
 *             KREP_A_TIMEOUT_MS (default and max 30000)
 *   The leader moves its log start, then answers once the low watermark
 *   (the smallest log start over it and the followers that fetched
 *   within replica_lag_time_max_ms) has reached the offset, as Kafka's
 *   delayed DeleteRecords.
 *   reply:    KREP_A_LOW_WATERMARK, KREP_A_LOG_START
 *   errors:   OFFSET_OUT_OF_RANGE (ERANGE) beyond HW, REQUEST_TIMED_OUT
 *             (ETIMEDOUT) when the low watermark did not get there
 * KREP_CMD_TXN         (do)          CAP_NET_ADMIN
 *   request:  KREP_A_TOPIC, KREP_A_PARTITION, KREP_A_PRODUCER_ID,
 *             KREP_A_PRODUCER_EPOCH, KREP_A_TXN_OP, KREP_A_TIMEOUT_MS
 *             (BEGIN only: 1..900000, default 60000; the leader aborts the
 *             transaction once it has been open that long). BEGIN opens a
 *             transaction (records then come as transactional batches of
 *             that producer); COMMIT/ABORT append a control batch and
 *             close it. Every replica keeps the open transactions and the
 *             aborted index from its log (docs/design.md, LSO and
 *             transactions), so a new leader can commit or abort one.
 *   reply:    KREP_A_OFFSET (offset of the control record), KREP_A_LSO
 *   errors:   INVALID_TXN_STATE (EINVAL): commit/abort without begin, begin
 *             twice; INVALID_PRODUCER_EPOCH (EINVAL): an epoch older than
 *             the producer's last; in PRODUCE, a transactional batch with no open
 *             transaction; INVALID_PRODUCER_EPOCH (EINVAL) in PRODUCE, a
 *             transactional batch of another producer epoch;
 *             POLICY_VIOLATION (EUSERS): BEGIN of a new producer id past
 *             producers_max; KAFKA_STORAGE_ERROR (ENOSPC): the broker's
 *             memory cap leaves no room for the producer's state;
 *             UNKNOWN_SERVER_ERROR (ENOMEM): out of memory
 *
 * KREP_CMD_LEADER_AND_ISR (do)       CAP_NET_ADMIN; only from the controller
 *   The controller's word on one partition (docs/design.md §2, Roles).
 *   request:  KREP_A_CONTROLLER_EPOCH (u32: the epoch this broker's
 *             controller claim holds, see KREP_A_CONTROLLER),
 *             KREP_A_TOPIC, KREP_A_PARTITION,
 *             KREP_A_LEADER (u32 broker id, or KREP_NO_LEADER: offline),
 *             KREP_A_LEADER_EPOCH, KREP_A_PARTITION_EPOCH,
 *             KREP_A_ISR (nest of KREP_A_BROKER_ID, a subset of AR holding
 *             the leader), KREP_A_REPLICAS (optional: must equal AR),
 *             KREP_A_INELIGIBLE (optional nest of KREP_A_BROKER_ID, within
 *             AR: the replicas the controller has fenced; absent: none)
 *   A higher leader epoch changes roles: the named leader records
 *   (epoch, LEO) in its leader epoch cache and starts the epoch; every
 *   other replica follows it and truncates by the leader's epoch
 *   answer on its next FETCH. The same leader epoch with a higher
 *   partition epoch only replaces the ISR (the commit of an ALTER_ISR).
 *   The same leader and partition epochs again re-states the committed
 *   ISR: it ends a pending ALTER_ISR that the controller turned down.
 *   Every LEADER_AND_ISR replaces the ineligible set (Kafka's fenced
 *   brokers): a leader neither counts an ineligible follower outside
 *   the ISR towards HW nor asks for it to join the ISR.
 *   With KREP_NO_LEADER the ISR may be empty and every replica waits.
 *   On a broker that has the topic but does not host the partition, the
 *   leader, epochs and ISR are kept (with the same checks) for Kafka's
 *   Metadata only.
 *   errors:   ESTALE: STALE_CONTROLLER_EPOCH (an older controller),
 *             FENCED_LEADER_EPOCH (an older leader epoch, or an older
 *             partition epoch in the same leader epoch);
 *             EPERM: NOT_CONTROLLER (no claim with this epoch);
 *             EINVAL: INVALID_REPLICA_ASSIGNMENT (leader or ISR outside
 *             AR, leader outside the ISR, REPLICAS differ from AR);
 *             ENOENT: UNKNOWN_TOPIC_OR_PARTITION
 * KREP_CMD_OFFSETS_FOR_LEADER_EPOCH (do)  any user
 *   Kafka's OffsetsForLeaderEpoch, answered from the leader epoch cache.
 *   request:  KREP_A_TOPIC, KREP_A_PARTITION, KREP_A_LEADER_EPOCH (the
 *             epoch asked), KREP_A_FOLLOWER_READ (flag: a follower may
 *             answer from its own cache)
 *   reply:    KREP_A_LEADER_EPOCH (the largest epoch <= the one asked)
 *             and KREP_A_OFFSET (its end offset: the start of the next
 *             epoch, or LEO for the latest); both absent when the asked
 *             epoch is older than every epoch the replica knows
 *   errors:   NOT_LEADER_OR_FOLLOWER (EREMOTE)
 *
 * KREP_CMD_ALTER_ISR   (event, multicast group "events")
 *   A leader's ISR change: KREP_A_TOPIC, KREP_A_PARTITION, KREP_A_LEADER,
 *   KREP_A_LEADER_EPOCH, KREP_A_PARTITION_EPOCH, KREP_A_ISR (the new ISR),
 *   KREP_A_CONTROLLER_EPOCH when a controller is registered.
 *   With no controller registered the leader is its own ISR authority and
 *   the change is already applied (the partition epoch in the event is the
 *   new one). With a controller it is a request: the partition epoch is
 *   the one it is based on, the leader keeps it pending (PARTITION_GET
 *   shows KREP_A_PENDING_ISR; HW counts the maximal ISR) until the
 *   controller commits it with LEADER_AND_ISR at a higher partition
 *   epoch, and sends it again every KREP_ALTER_ISR_RETRY_MS meanwhile.
 *
 * Endpoints (KREP_A_EP_*): KREP_A_EP_IPV4 (__be32) or KREP_A_EP_IPV6 (16 bytes),
 * and KREP_A_EP_PORT (u16, host order, 1..65535).
 *
 * Errors: the errno of the NLMSG_ERROR reply, with an extack message naming
 * the reason and, where one attribute is at fault, that attribute:
 *   EINVAL   missing, malformed or wrongly sized attribute, a string
 *            without its NUL within the maximum length, empty SET
 *   ERANGE   a value outside its documented range (policy checks)
 *   EEXIST   two peers with the same id
 *   EBUSY    a new broker id while the broker has topics
 *   E2BIG    more than KREP_PEERS_MAX peers
 *   EPERM    a state-changing command without CAP_NET_ADMIN
 * Operations on partitions answer Kafka's protocol error codes
 * (enum krep_kafka_error) beside the nearest errno: the NLMSG_ERROR carries
 * struct krep_err_cookie in NLMSGERR_ATTR_COOKIE (enable NETLINK_EXT_ACK).
 */
#ifndef _UAPI_LINUX_KREP_H
#define _UAPI_LINUX_KREP_H

#include <linux/types.h>

#define KREP_GENL_NAME		"krep"
#define KREP_GENL_VERSION	1
#define KREP_MCGRP_EVENTS	"events"

#define KREP_BROKER_ID_MAX	0x7fffffffU	/* Kafka node ids are int32 >= 0 */
#define KREP_CLUSTER_ID_MAX	64		/* characters, without the NUL */
#define KREP_ADVERTISED_MAX	127		/* characters, without the NUL */
#define KREP_SECRET_MIN		16		/* bytes of a cluster secret */
#define KREP_SECRET_MAX		64
#define KREP_PEERS_MAX		64
#define KREP_DEFAULT_PORT	9092
#define KREP_NO_LEADER		0xffffffffU	/* KREP_A_LEADER: none */
#define KREP_EPOCH_CACHE_MAX	64		/* newest epochs PARTITION_GET lists */
#define KREP_ALTER_ISR_RETRY_MS	2000

enum krep_cmd {
	KREP_CMD_UNSPEC,
	KREP_CMD_BROKER_GET,
	KREP_CMD_BROKER_SET,
	KREP_CMD_TOPIC_NEW,
	KREP_CMD_TOPIC_DEL,
	KREP_CMD_TOPIC_GET,
	KREP_CMD_PARTITION_GET,
	KREP_CMD_PRODUCE,
	KREP_CMD_FETCH,
	KREP_CMD_LIST_OFFSETS,
	KREP_CMD_DELETE_RECORDS,
	KREP_CMD_TXN,
	KREP_CMD_ALTER_ISR,	/* event */
	KREP_CMD_LEADER_AND_ISR,
	KREP_CMD_OFFSETS_FOR_LEADER_EPOCH,

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
	KREP_A_KAFKA_ERROR,	/* s16: enum krep_kafka_error (events) */
	KREP_A_TOPIC,		/* string: topic name */
	KREP_A_PARTITIONS,	/* u32: partition count */
	KREP_A_REPLICATION_FACTOR, /* u32 */
	KREP_A_TOPIC_CONFIG,	/* nest: enum krep_tcfg_attr */
	KREP_A_PARTITION,	/* u32: partition index */
	KREP_A_ROLE,		/* u8: enum krep_role */
	KREP_A_LEADER,		/* u32: broker id of the leader */
	KREP_A_LEADER_EPOCH,	/* u32 */
	KREP_A_PARTITION_EPOCH,	/* u32 */
	KREP_A_REPLICAS,	/* nest: KREP_A_BROKER_ID ... (AR, in order) */
	KREP_A_ISR,		/* nest: KREP_A_BROKER_ID ... */
	KREP_A_LEO,		/* u64 */
	KREP_A_HW,		/* u64 */
	KREP_A_LSO,		/* u64 */
	KREP_A_LOG_START,	/* u64 */
	KREP_A_LOW_WATERMARK,	/* u64 */
	KREP_A_RECORDS,		/* binary: RecordBatch v2, one or more */
	KREP_A_ACKS,		/* s16: 0, 1 or -1 (all), Kafka's values */
	KREP_A_TIMEOUT_MS,	/* u32 */
	KREP_A_OFFSET,		/* u64 */
	KREP_A_MAX_BYTES,	/* u32 */
	KREP_A_MAX_WAIT_MS,	/* u32 */
	KREP_A_ISOLATION,	/* u8: enum krep_isolation */
	KREP_A_TIMESTAMP,	/* s64: ms, or KREP_TS_EARLIEST/LATEST */
	KREP_A_PRODUCER_ID,	/* u64 (Kafka's int64 >= 0) */
	KREP_A_PRODUCER_EPOCH,	/* u16 */
	KREP_A_TXN_OP,		/* u8: enum krep_txn_op */
	KREP_A_LOG_BYTES,	/* u64: bytes held by the log */
	KREP_A_PAD,		/* for 64-bit alignment */
	KREP_A_REMOTES,		/* nest: KREP_A_REMOTE ... (leader only) */
	KREP_A_REMOTE,		/* nest: enum krep_remote_attr */
	KREP_A_FOLLOWER_READ,	/* flag: FETCH from a follower (KIP-392) */
	KREP_A_STATS,		/* nest: enum krep_stat_attr (BROKER_GET) */
	KREP_A_CONTROLLER,	/* nest: enum krep_ctrl_attr */
	KREP_A_CONTROLLER_EPOCH, /* u32 */
	KREP_A_PENDING_ISR,	/* nest: KREP_A_BROKER_ID ... */
	KREP_A_EPOCHS,		/* nest: KREP_A_EPOCH_ENTRY ... */
	KREP_A_EPOCH_ENTRY,	/* nest: enum krep_epoch_attr */
	KREP_A_INCARNATION,	/* u64 (BROKER_GET) */
	KREP_A_ASSIGNMENT,	/* nest: KREP_A_REPLICAS ... (TOPIC_NEW) */
	KREP_A_LOG_MEMORY,	/* u64: log bytes held (BROKER_GET) */
	KREP_A_LOG_MEMORY_MAX,	/* u64: the broker's cap (BROKER_GET) */
	KREP_A_KAFKA_LISTEN,	/* nest: enum krep_ep_attr */
	KREP_A_KAFKA_ADVERTISED, /* string: HOST:PORT */
	KREP_A_SECRET,		/* binary: the cluster secret (SET only) */
	KREP_A_AUTH,		/* u8: 1 when a cluster secret is set (GET) */
	KREP_A_LOG_DIR_FD,	/* s32: an open directory, -1: none (SET) */
	KREP_A_LOG_DIR,		/* string: the log directory's path (GET) */
	KREP_A_INELIGIBLE,	/* nest: KREP_A_BROKER_ID ... (fenced replicas) */

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

/* per-topic configuration, Kafka's keys with underscores */
enum krep_tcfg_attr {
	KREP_A_TCFG_UNSPEC,
	KREP_A_TCFG_MIN_INSYNC_REPLICAS,	/* u32, default 1 */
	KREP_A_TCFG_REPLICA_LAG_TIME_MAX_MS,	/* u32, default 30000 */
	KREP_A_TCFG_SEGMENT_BYTES,		/* u32, default 8 MiB */
	KREP_A_TCFG_RETENTION_BYTES,		/* s64, -1 = unlimited */
	KREP_A_TCFG_MAX_MESSAGE_BYTES,		/* u32, 64..1048588 (default) */
	KREP_A_TCFG_UNCLEAN_LEADER_ELECTION,	/* u8, 0 or 1 */
	KREP_A_TCFG_PAD,			/* 64-bit alignment */
	KREP_A_TCFG_FLUSH_MESSAGES,		/* s64, >= 1; default never */
	KREP_A_TCFG_FLUSH_MS,			/* s64, >= 0; default never */
	KREP_A_TCFG_SEGMENT_MS,			/* s64, >= 1; default 7 days */

	__KREP_A_TCFG_MAX,
	KREP_A_TCFG_MAX = __KREP_A_TCFG_MAX - 1
};

/* a broker's data-path counters since it was created (BROKER_GET) */
enum krep_stat_attr {
	KREP_A_STAT_UNSPEC,
	KREP_A_STAT_RECORDS,		/* u64: records appended as leader */
	KREP_A_STAT_PRODUCE_BYTES,	/* u64: batch bytes copied into logs */
	KREP_A_STAT_FOLLOWER_BYTES,	/* u64: replicated, via a buffer */
	KREP_A_STAT_RX_COPY_BYTES,	/* u64: copied from sockets, records
					 * into a follower's log included
					 */
	KREP_A_STAT_TX_ZEROCOPY_BYTES,	/* u64: log bytes sent by reference */
	KREP_A_STAT_PAD,
	KREP_A_STAT_FETCH_RESPONSES,	/* u64: FETCH responses with records
					 * sent as a leader
					 */

	__KREP_A_STAT_MAX,
	KREP_A_STAT_MAX = __KREP_A_STAT_MAX - 1
};

/* a controller's claim on a broker (BROKER_GET/SET) */
enum krep_ctrl_attr {
	KREP_A_CTRL_UNSPEC,
	KREP_A_CTRL_EPOCH,		/* u32, >= 1 */
	KREP_A_CTRL_OWNER,		/* u64, nonzero */
	KREP_A_CTRL_LEASE_MS,		/* u32: 0 releases, else 100..600000 */
	KREP_A_CTRL_AGE_MS,		/* u64: ms since renewed (reply only) */
	KREP_A_CTRL_PAD,

	__KREP_A_CTRL_MAX,
	KREP_A_CTRL_MAX = __KREP_A_CTRL_MAX - 1
};

/* one entry of a leader epoch cache (PARTITION_GET) */
enum krep_epoch_attr {
	KREP_A_EPOCH_UNSPEC,
	KREP_A_EPOCH_EPOCH,		/* u32 */
	KREP_A_EPOCH_START,		/* u64: its first offset */
	KREP_A_EPOCH_PAD,

	__KREP_A_EPOCH_MAX,
	KREP_A_EPOCH_MAX = __KREP_A_EPOCH_MAX - 1
};

/* what a leader knows of one follower (PARTITION_GET) */
enum krep_remote_attr {
	KREP_A_REMOTE_UNSPEC,
	KREP_A_REMOTE_ID,		/* u32: broker id */
	KREP_A_REMOTE_LEO,		/* u64: absent while unknown */
	KREP_A_REMOTE_LOG_START,	/* u64 */
	KREP_A_REMOTE_FETCH_AGE_MS,	/* u64: ms since its last FETCH */
	KREP_A_REMOTE_CAUGHT_UP_AGE_MS,	/* u64: ms since last caught up */
	KREP_A_REMOTE_IN_ISR,		/* u8: 0 or 1 */
	KREP_A_REMOTE_PAD,

	__KREP_A_REMOTE_MAX,
	KREP_A_REMOTE_MAX = __KREP_A_REMOTE_MAX - 1
};

enum krep_role {
	KREP_ROLE_LEADER,
	KREP_ROLE_FOLLOWER,
	KREP_ROLE_OFFLINE,
};

enum krep_isolation {
	KREP_READ_UNCOMMITTED,
	KREP_READ_COMMITTED,
};

enum krep_txn_op {
	KREP_TXN_BEGIN = 1,
	KREP_TXN_COMMIT,
	KREP_TXN_ABORT,
};

/* KREP_A_TIMESTAMP in LIST_OFFSETS: Kafka's special values */
#define KREP_TS_LATEST		(-1LL)
#define KREP_TS_EARLIEST	(-2LL)

/*
 * On a protocol-level error the NLMSG_ERROR carries the nearest errno and,
 * in NLMSGERR_ATTR_COOKIE, this struct with Kafka's error code.
 */
struct krep_err_cookie {
	__s16 kafka_error;	/* enum krep_kafka_error */
	__u16 reserved;
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
