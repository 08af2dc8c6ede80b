/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepd --relay ADDR:PORT --secret-file PATH [--netns NAME]: forwards the
 * "krep" generic netlink family of the relay's network namespace to
 * controllers on other hosts over TCP (relay_proto.h). It holds no
 * controller logic and parses no krep attribute: after the handshake it
 * moves netlink messages, as bytes, between each client and a pair of
 * netlink sockets of that client's own (requests and replies; events).
 */
#ifndef KREP_AGENT_RELAY_H
#define KREP_AGENT_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relay_proto.h"

#define KREP_RELAY_CLIENTS	16

/*
 * One client's side of netlink: descriptors the relay polls and reads
 * datagrams from with recv() (netlink sockets, or in tests anything that
 * keeps datagram boundaries), and the ids AUTH_OK announces.
 */
struct krep_relay_nl {
	int req_fd;		/* replies to this client's requests */
	int ev_fd;		/* events; -1 when not asked for or none */
	uint16_t family;	/* 0: no "krep" family (module not loaded) */
	uint32_t group;		/* "events" group; 0: none */
	void *priv;
};

struct krep_relay_nl_ops {
	/* Returns 0, or -errno with *why set (a static string). */
	int (*open)(void *ctx, bool events, struct krep_relay_nl *nl,
		    const char **why);
	/* Send one request; 0, or -errno that the relay answers with. */
	int (*send)(void *ctx, struct krep_relay_nl *nl, const void *msg,
		    size_t len);
	void (*close)(void *ctx, struct krep_relay_nl *nl);
};

typedef void (*krep_relay_log_fn)(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

struct krep_relay_cfg {
	const struct krep_relay_secret *secret;
	const struct krep_relay_nl_ops *ops;	/* NULL: netlink sockets */
	void *ctx;
	krep_relay_log_fn log;
	int max_clients;	/* at most KREP_RELAY_CLIENTS */
	int auth_ms;		/* KREP_RELAY_AUTH_MS */
	int ping_ms;		/* KREP_RELAY_PING_MS */
	int dead_ms;		/* KREP_RELAY_DEAD_MS */
};

/*
 * Serve clients accepted on the listening socket @lfd until @stop_fd (if
 * not -1) becomes readable; it is not read. Returns 0, or -errno when the
 * loop itself failed.
 */
int krep_relay_serve(int lfd, int stop_fd, const struct krep_relay_cfg *cfg);

/*
 * krepd --relay: listen on @listen ("A.B.C.D:PORT", "[IPV6]:PORT") in
 * network namespace @netns (NULL: the current one) and serve until SIGINT
 * or SIGTERM. Returns the exit status: 0, 1 (error) or 2 (usage).
 */
int krep_relay_main(const char *listen, const char *secret_file,
		    const char *netns);

#endif
