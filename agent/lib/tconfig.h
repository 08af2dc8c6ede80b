/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Topic configuration keys (KREP_A_TCFG_*), as "KEY=VAL[,KEY=VAL...]":
 * parsed by krepctl topic create and by krepd --controller's topic
 * creation, written to the state file and put in TOPIC_NEW.
 */
#ifndef KREP_AGENT_TCONFIG_H
#define KREP_AGENT_TCONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <netlink/msg.h>

enum krep_tcfg_key {
	KREP_TCFG_MIN_INSYNC_REPLICAS,
	KREP_TCFG_REPLICA_LAG_TIME_MAX_MS,
	KREP_TCFG_SEGMENT_BYTES,
	KREP_TCFG_RETENTION_BYTES,
	KREP_TCFG_MAX_MESSAGE_BYTES,
	KREP_TCFG_UNCLEAN_LEADER_ELECTION,
	KREP_TCFG_FLUSH_MESSAGES,
	KREP_TCFG_FLUSH_MS,
	KREP_TCFG_SEGMENT_MS,
	KREP_TCFG_NKEYS
};

/* The keys given; the kernel fills in the rest with its defaults. */
struct krep_tconfig {
	bool has[KREP_TCFG_NKEYS];
	int64_t v[KREP_TCFG_NKEYS];
};

/* The longest krep_tconfig_format() output, with its NUL. */
#define KREP_TCONFIG_STR_MAX	256

/* The key's name (Kafka's, with underscores) and its KREP_A_TCFG_*. */
const char *krep_tconfig_name(enum krep_tcfg_key k);
int krep_tconfig_attr(enum krep_tcfg_key k);

/*
 * Add "KEY=VAL[,KEY=VAL...]" to @tc. Keys may use Kafka's dots
 * (min.insync.replicas); unclean_leader_election takes true/false too.
 * Returns 0, or -EINVAL with the reason in @why ("unknown config key
 * 'x'", ...).
 */
int krep_tconfig_parse(const char *s, struct krep_tconfig *tc, char *why,
		       size_t whylen);

/*
 * Whether the kernel takes every value of @tc (min_insync_replicas 1..65,
 * replica_lag_time_max_ms 10..3600000, segment_bytes 4096..2^30,
 * retention_bytes -1 or more, max_message_bytes 64..1048588,
 * unclean_leader_election 0..1, flush_messages 1 or more, flush_ms 0 or
 * more, segment_ms 1 or more). Returns 0, or -ERANGE with "KEY must be
 * MIN..MAX, not V" in @why: Kafka's INVALID_CONFIG.
 */
int krep_tconfig_check(const struct krep_tconfig *tc, char *why,
		       size_t whylen);

/* The KREP_A_TOPIC_CONFIG nest of @tc (nothing when it is empty). */
int krep_tconfig_put(struct nl_msg *msg, const struct krep_tconfig *tc);

/* "key=val,..." in key order, "" when empty; parses back to @tc. */
void krep_tconfig_format(const struct krep_tconfig *tc, char *buf,
			 size_t size);

#endif
