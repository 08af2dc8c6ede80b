/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Generic netlink client for the "krep" family, shared by krepctl and
 * krepd: socket setup with extended acks, family and multicast group
 * resolution, request/reply with the kernel's error messages (and
 * Kafka's error code) printed or handed to the caller, and entering a
 * named network namespace.
 */
#ifndef KREP_AGENT_GENL_H
#define KREP_AGENT_GENL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <linux/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

/* Prefix of every message printed to stderr ("krepctl", "krepd"). */
extern const char *krep_prog;

/* What the kernel said besides the errno (NLMSGERR_ATTR_*). */
struct krep_extack {
	const char *msg;	/* not NUL-terminated: use msg_len */
	int msg_len;
	bool has_offs;
	uint32_t offs;		/* of the offending attribute in the request */
	bool has_miss_type;
	uint32_t miss_type;	/* type of a missing required attribute */
	bool has_miss_nest;
	uint32_t miss_nest;	/* offset of the nest it is missing from */
	bool has_kerr;
	int16_t kerr;		/* Kafka's code (struct krep_err_cookie) */
	bool kerr_inferred;	/* ... set by krep_extack_infer(), not sent */
	/* NLMSGERR_ATTR_POLICY: what the refused attribute's policy allows */
	bool has_range, range_signed;
	int64_t min_s, max_s;
	uint64_t min_u, max_u;
	bool has_len;
	uint32_t min_len, max_len;
};

/*
 * How the last krep_genl_request() on a socket ended: 0, or the errno of
 * the kernel's NLMSG_ERROR with its extack (the message is copied into
 * @msg). Transport and local failures leave @err 0: they are printed.
 */
struct krep_genl_status {
	int err;		/* the kernel's -errno, or 0 */
	struct krep_extack ea;	/* ea.msg points into msg */
	char msg[256];
};

struct krep_genl {
	struct nl_sock *sk;
	int family;
	bool quiet;		/* don't print kernel errors: the caller does */
	struct krep_genl_status st;
	/*
	 * When set, krep_genl_request() gives up with -EINTR (printing
	 * nothing) once *stop is nonzero: a handler of the signals in
	 * stop_sigs sets it. Waiting for a reply then never outlasts such a
	 * signal, even when the kernel sends none.
	 */
	volatile sig_atomic_t *stop;
	sigset_t stop_sigs;
};

int krep_netns_enter(const char *name);

int krep_genl_connect(struct krep_genl *gl);
int krep_genl_open(struct krep_genl *gl);
void krep_genl_close(struct krep_genl *gl);

/* A request for @cmd with room for @payload bytes of attributes. */
struct nl_msg *krep_genl_msg_new(int family, uint8_t cmd, int flags,
				 size_t payload);

/* Called for each reply message; returns 0 or -errno (e.g. malformed). */
typedef int (*krep_genl_reply_fn)(struct nl_msg *msg, void *arg);

int krep_genl_request(struct krep_genl *gl, struct nl_msg *req,
		      krep_genl_reply_fn fn, void *arg);

int krep_genl_subscribe(struct krep_genl *gl, const char *group);

int krep_extack_parse(const struct nlmsghdr *nlh, struct krep_extack *ea);
void krep_extack_print(FILE *f, int err, const struct krep_extack *ea,
		       struct nl_msg *req);
int krep_extack_attr_path(const struct krep_extack *ea, struct nl_msg *req,
			  char *buf, size_t size);

/*
 * The netlink policy refuses an attribute before krep's handlers run, so
 * the kernel sends no Kafka code with it: give @ea the one Kafka answers
 * such a request with, from @req's command and the attribute @ea names
 * (config.* INVALID_CONFIG, fetch max_bytes INVALID_FETCH_SIZE,
 * ..., else INVALID_REQUEST; none for BROKER_GET and BROKER_SET). Does
 * nothing when the kernel sent a code or named no attribute.
 */
void krep_extack_infer(struct krep_extack *ea, struct nl_msg *req);
int16_t krep_policy_kafka_error(uint8_t cmd, const char *path);

/* "0..30000", or "length 1..249", from @ea's policy; "" if it has none. */
void krep_extack_allowed(const struct krep_extack *ea, char *buf,
			 size_t size);

#endif
