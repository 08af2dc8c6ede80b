/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepd --controller's configuration: the brokers it controls and its
 * timings, from a file (--config FILE) and command-line flags.
 *
 * File syntax, one statement per line, '#' starts a comment:
 *
 *   broker ID local                          this namespace's broker
 *   broker ID netns NAME                     the broker in /run/netns/NAME
 *   broker ID relay HOST:PORT secret-file PATH   through krepd --relay
 *   session-timeout-ms N   fence a broker after N ms out of touch (6000)
 *   poll-ms N              look at every broker every N ms (250)
 *   lease-ms N             the claim on each broker, renewed every N/3 ms
 *                          (default: the session timeout, at least
 *                          2 x poll-ms; 100..600000)
 *   preferred-election-interval-ms N   move leadership back to the
 *                          preferred replica every N ms (300000; 0: never)
 *   state-file PATH        (/var/lib/krep/krepd.state)
 *   socket PATH            the control socket (/run/krep/krepd.sock)
 *
 * Flags (krepd.c) add brokers ("ID@local", "ID@netns:NAME",
 * "ID@relay:HOST:PORT:SECRETFILE") and override settings. Broker ids are
 * unique, 0..KREP_BROKER_ID_MAX; a setting appears at most once in a file.
 */
#ifndef KREP_AGENT_CLUSTER_H
#define KREP_AGENT_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/krep.h>

#include "ctlsock.h"	/* KREP_DEFAULT_SOCKET */
#include "ha.h"
#include "session.h"

#define KREP_CLUSTER_BROKERS_MAX	(KREP_PEERS_MAX + 1)
#define KREP_DEFAULT_STATE_FILE		"/var/lib/krep/krepd.state"
#define KREP_DEFAULT_SESSION_TIMEOUT_MS	6000
#define KREP_DEFAULT_POLL_MS		250
#define KREP_DEFAULT_PREFERRED_MS	300000

struct krep_cluster_broker {
	uint32_t id;
	struct krep_session_addr addr;
};

enum krep_cluster_setting {
	KREP_CS_SESSION_TIMEOUT,
	KREP_CS_POLL,
	KREP_CS_LEASE,
	KREP_CS_PREFERRED,
	KREP_CS_STATE_FILE,
	KREP_CS_SOCKET,
	KREP_CS_NSETTINGS
};

struct krep_cluster {
	size_t nbrokers;
	struct krep_cluster_broker brokers[KREP_CLUSTER_BROKERS_MAX];
	uint32_t session_timeout_ms;
	uint32_t poll_ms;
	uint32_t lease_ms;		/* 0 until krep_cluster_finish() */
	uint32_t preferred_ms;		/* 0: no automatic preferred election */
	char state_file[256];
	char socket[108];		/* sun_path */
	bool set[KREP_CS_NSETTINGS];	/* given in the file */
	struct krep_ha_opts ha;		/* --etcd and its flags (krepd.c) */
};

void krep_cluster_init(struct krep_cluster *c);

/*
 * One line of a config file (without its newline). Returns 0, or -EINVAL
 * with the reason in @err.
 */
int krep_cluster_parse_line(struct krep_cluster *c, const char *line,
			    char *err, size_t errlen);
/*
 * Read @path; every bad line is printed to stderr as
 * "krepd: PATH:LINE: reason". Returns 0 or -1.
 */
int krep_cluster_load(struct krep_cluster *c, const char *path);

/* --broker VALUE: "ID@local", "ID@netns:NAME", "ID@relay:HOST:PORT:FILE". */
int krep_cluster_broker_flag(struct krep_cluster *c, const char *val,
			     char *err, size_t errlen);
/* --session-timeout-ms etc.: @setting from the text @val. */
int krep_cluster_set(struct krep_cluster *c, enum krep_cluster_setting setting,
		     const char *val, char *err, size_t errlen);

/* Defaults and cross-checks, after the file and the flags. 0 or -EINVAL. */
int krep_cluster_finish(struct krep_cluster *c, char *err, size_t errlen);

const struct krep_cluster_broker *krep_cluster_broker(const struct krep_cluster *c,
						      uint32_t id);

#endif
