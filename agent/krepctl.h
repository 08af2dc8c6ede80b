/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepctl: command table and what every subcommand shares.
 *
 * A command is { name, run, usage, summary }. run() gets argv with
 * argv[0] = its own name and returns the exit status: KREP_EXIT_OK,
 * KREP_EXIT_ERR (the kernel or the system said no) or KREP_EXIT_USAGE
 * (bad command line, detected before anything is sent). Commands that
 * have subcommands dispatch through krepctl_dispatch() with their own
 * table, so "krepctl topic create ..." later works like "broker set".
 */
#ifndef KREP_AGENT_KREPCTL_H
#define KREP_AGENT_KREPCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ep.h"
#include "genl.h"

#define KREP_AGENT_VERSION	"0.1"

enum {
	KREP_EXIT_OK	= 0,
	KREP_EXIT_ERR	= 1,
	KREP_EXIT_USAGE	= 2,
};

struct krepctl {
	const char *netns;	/* --netns NAME, or NULL */
	bool json;		/* --json */
	struct krep_genl gl;	/* opened by krepctl_connect() */
};

struct krepctl_cmd {
	const char *name;
	int (*run)(struct krepctl *ctl, int argc, char **argv);
	void (*usage)(FILE *f);
	const char *summary;
};

/* cmd.c */
int krepctl_dispatch(struct krepctl *ctl, const char *parent,
		     const struct krepctl_cmd *cmds, const char *dflt,
		     void (*usage)(FILE *f), int argc, char **argv);
void krepctl_list_cmds(FILE *f, const struct krepctl_cmd *cmds);
bool krepctl_is_help(const char *arg);
int krepctl_usage_error(void (*usage)(FILE *f), const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int krepctl_connect(struct krepctl *ctl);

/* broker.c */
void krepctl_broker_usage(FILE *f);
int krepctl_broker_run(struct krepctl *ctl, int argc, char **argv);
int krep_broker_reply_print(struct nl_msg *reply, bool json, FILE *f);

/* A parsed "broker set" command line (broker.c; test_parse.c uses these). */
struct krep_broker_set {
	bool has_id;
	uint32_t id;
	const char *cluster;	/* NULL: leave unchanged */
	bool has_listen;
	struct krep_ep listen;
	bool has_peers;
	struct krep_peers peers;
};

int krep_broker_set_parse(int argc, char **argv, struct krep_broker_set *set);
struct nl_msg *krep_broker_set_msg(int family, const struct krep_broker_set *set);
void krep_broker_set_free(struct krep_broker_set *set);

#endif
