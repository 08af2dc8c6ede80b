/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepd --metrics ADDR:PORT: a Prometheus text endpoint (GET /metrics,
 * plain HTTP/1.0, one request per connection) served from krepd's poll()
 * loop, with the figures of krepctl stats (snap.h) and ISR shrink and
 * expand counters kept by comparing the ISR of every partition this broker
 * leads from one PARTITION_GET to the next (once a second, at every
 * scrape, and at once after an ALTER_ISR event), and the commit latency
 * histogram from the krep_hw_advance trace event (commit_lat.h).
 *
 *	struct pollfd pfd[... + KREP_METRICS_NFDS];
 *	n = krep_metrics_pollfds(m, pfd + base);
 *	poll(pfd, base + n, krep_metrics_timeout(m));
 *	krep_metrics_handle(m, pfd + base, n);
 */
#ifndef KREP_AGENT_METRICS_H
#define KREP_AGENT_METRICS_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define KREP_METRICS_CLIENTS	16
#define KREP_METRICS_NFDS	(1 + KREP_METRICS_CLIENTS)

struct krep_metrics;

typedef void (*krep_metrics_log_fn)(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Listen on @addr ("A.B.C.D:PORT" or "[IPV6]:PORT") in the current network
 * namespace and talk to its broker. Prints why and returns NULL on failure.
 */
struct krep_metrics *krep_metrics_open(const char *addr,
				       krep_metrics_log_fn log);
void krep_metrics_close(struct krep_metrics *m);

/* Fill @pfd (room for KREP_METRICS_NFDS); returns how many were filled. */
int krep_metrics_pollfds(struct krep_metrics *m, struct pollfd *pfd);
/* Milliseconds until krep_metrics_handle() has work without any fd. */
int krep_metrics_timeout(struct krep_metrics *m);
/* Take the next snapshot at once (an ALTER_ISR event arrived). */
void krep_metrics_poke(struct krep_metrics *m);
/* Serve what poll() reported in the @n entries of @pfd, poll when due. */
void krep_metrics_handle(struct krep_metrics *m, const struct pollfd *pfd,
			 int n);

/*
 * krepd --controller --metrics: what the controller exports beside the
 * broker's figures. Why a leader was elected, as the controller tells it
 * (view.c's why_elect()): its leader fenced (or not a configured broker:
 * it counts as fenced), its leader restarted without its logs, its leader
 * out of the ISR, no leader (offline), the leader's replica lost (its
 * topic created again there), a preferred election.
 */
enum krep_ctl_elect_reason {
	KREP_CTL_ELECT_LEADER_FENCED,
	KREP_CTL_ELECT_LEADER_RESTARTED,
	KREP_CTL_ELECT_LEADER_LEFT_ISR,
	KREP_CTL_ELECT_OFFLINE,
	KREP_CTL_ELECT_REPLICA_LOST,
	KREP_CTL_ELECT_PREFERRED,
	KREP_CTL_ELECT_LEADER_OFFLINE,
	KREP_CTL_ELECT_REASONS
};

/* Counted since krepd started, over every term as the active controller. */
struct krep_ctl_counters {
	uint64_t elections[KREP_CTL_ELECT_REASONS];
	uint64_t elr_elections;		/* of those: from the ELR */
	uint64_t unclean_elections;	/* of those: unclean */
	uint64_t offline_transitions;	/* leader lost, nobody eligible */
	uint64_t isr_commits;		/* ALTER_ISR committed */
	uint64_t fencings;		/* brokers fenced */
};

struct krep_ctl_figures {
	bool active;			/* the active controller, not a standby */
	bool has_epoch;
	uint32_t epoch;			/* its own; a standby's: the active's */
	struct krep_ctl_counters n;
	bool has_view;			/* active: the gauges below are real */
	uint32_t brokers, fenced_brokers, unreachable_brokers;
	uint64_t partitions, offline_partitions;
	uint64_t under_replicated_partitions, under_min_isr_partitions;
};

/* The controller's figures at each scrape; @arg is krep_metrics_controller()'s. */
typedef void (*krep_metrics_ctl_fn)(void *arg, struct krep_ctl_figures *cf);
/* Export the controller's figures too (krepd --controller --metrics). */
void krep_metrics_controller(struct krep_metrics *m, krep_metrics_ctl_fn fn,
			     void *arg);
/* The controller's families alone; for the tests too. */
void krep_metrics_render_controller(FILE *f, const struct krep_ctl_figures *cf);
/* "leader_fenced", ...: the reason label's value. */
const char *krep_ctl_elect_reason_name(enum krep_ctl_elect_reason r);

struct krep_snap;
struct krep_lat_hist;

/*
 * The exposition itself: @s the broker's snapshot, or NULL while it cannot
 * be read (krep_up 0, and the counters only); @lat the commit latency
 * histogram (commit_lat.h), or NULL when krep_hw_advance could not be
 * traced. For the tests too.
 */
void krep_metrics_render(FILE *f, const struct krep_snap *s, uint64_t shrinks,
			 uint64_t expands, const struct krep_lat_hist *lat);

#endif
