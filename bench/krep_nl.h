/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the krep load generators share over generic netlink: a socket in
 * one broker's network namespace, a request and its reply, the brokers'
 * KREP_A_STATS (BROKER_GET) and the leaders' ISR (PARTITION_GET), and the
 * stats part of their RESULT line.
 */
#ifndef KREP_BENCH_NL_H
#define KREP_BENCH_NL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/krep.h>

#define BROKERS_MAX	8

struct nl_sock;
struct nl_msg;
struct nlmsghdr;

/* A generic netlink socket of the namespace it was opened in. */
struct gsock {
	struct nl_sock *sk;
	int fd, family;
	uint32_t seq;
	uint8_t *rbuf;
};

int gsock_open(struct gsock *g);
void gsock_close(struct gsock *g);
/* The bytes of a complete netlink message, to be sent over and over. */
uint8_t *msg_bytes(struct nl_msg *msg, size_t *len);
/*
 * Send @req (a complete netlink message), receive the reply: 0 with the
 * reply's header in *@reply (NULL for a bare ack), or -errno after
 * printing the kernel's reason when @loud.
 */
int transact(struct gsock *g, uint8_t *req, size_t len,
	     struct nlmsghdr **reply, bool loud);

struct stats {
	bool present;
	uint64_t v[KREP_A_STAT_MAX + 1];
};

int stats_get(struct gsock *g, struct stats *s);
/*
 * The smallest ISR among the partitions of @topic that this broker leads
 * (PARTITION_GET dump), or -1 if it leads none or the dump fails; @behind
 * (if not NULL) counts those whose HW is below their LEO.
 */
int isr_min(struct gsock *g, const char *topic, int *behind);

/* A network namespace by name ("-": this process's own), as an fd. */
int ns_open(const char *name);

/*
 * Every broker of the cluster, a socket in each one's namespace (the
 * --brokers option: namespaces in broker id order, "-" for this
 * process's own), for the stats before and after a run.
 */
struct brokers {
	int n;
	char *names[BROKERS_MAX];
	int ns_fd[BROKERS_MAX];
	struct gsock gs[BROKERS_MAX];
	struct stats before[BROKERS_MAX];
	bool stats;
};

/* Parse a --brokers value (NS1,NS2,...): 0, or -1 if malformed. */
int brokers_parse(struct brokers *b, const char *val);
/* Open a socket in each namespace: 0, or -1 after printing why. */
int brokers_open(struct brokers *b);
/* Read every broker's stats into b->before. */
void brokers_stats_begin(struct brokers *b);
/*
 * Read them again and write the deltas summed over the brokers into
 * @buf (isr_min= of @topic, then krep_records= copy_bytes= ...
 * fetch_resps=, or stats=absent); close the sockets.
 */
void brokers_stats_end(struct brokers *b, const char *topic, char *buf,
		       size_t size);

#endif
