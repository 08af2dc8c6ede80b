// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl: administer the krep broker of a network namespace.
 *
 *	krepctl [--netns NAME] [--json] COMMAND [ARGS...]
 *
 * Global options come before the command; every command and subcommand
 * has its own --help. Command lines are checked completely before the
 * kernel is contacted, so usage errors (exit 2) never depend on the
 * module being loaded. To add a command, add a row to cmds[] below and,
 * for a group such as "topic", a table of its own dispatched with
 * krepctl_dispatch() as broker.c does.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <linux/krep.h>

#include "krepctl.h"
#include "obs.h"

static void usage(FILE *f);
static void help_usage(FILE *f);
static int help_run(struct krepctl *ctl, int argc, char **argv);

static const struct krepctl_cmd cmds[] = {
	{ "broker", krepctl_broker_run, krepctl_broker_usage,
	  "show or change this namespace's broker" },
	{ "topic", krepctl_topic_run, krepctl_topic_usage,
	  "create, delete, list or describe topics" },
	{ "produce", krepctl_produce_run, krepctl_produce_usage,
	  "produce lines of standard input as records" },
	{ "consume", krepctl_consume_run, krepctl_consume_usage,
	  "print the records of a partition" },
	{ "offsets", krepctl_offsets_run, krepctl_offsets_usage,
	  "look up an offset: earliest, latest or by time" },
	{ "delete-records", krepctl_delete_records_run,
	  krepctl_delete_records_usage,
	  "delete the records below an offset" },
	{ "txn", krepctl_txn_run, krepctl_txn_usage,
	  "begin, commit or abort a producer's transaction" },
	{ "watch", krepctl_watch_run, krepctl_watch_usage,
	  "a live view of the partitions from the krep tracepoints (BPF)" },
	{ "stats", krepctl_stats_run, krepctl_stats_usage,
	  "under-replicated, offline partitions, lags and counters" },
	{ "health", krepctl_health_run, krepctl_health_usage,
	  "exit 1 if a partition is under-replicated, under min ISR or offline" },
	{ "elect", krepctl_elect_run, krepctl_elect_usage,
	  "ask krepd --controller: preferred leaders, its view" },
	{ "help", help_run, help_usage, "show help for a command" },
	{ NULL }
};

static void usage(FILE *f)
{
	fputs("Usage: krepctl [OPTIONS] COMMAND [ARGS...]\n"
	      "       krepctl help [COMMAND...]\n"
	      "\n"
	      "Administer the krep broker of a network namespace (one broker per\n"
	      "namespace) over generic netlink.\n"
	      "\n"
	      "Options (before COMMAND):\n"
	      "  -n, --netns NAME  act in network namespace NAME (/run/netns/NAME),\n"
	      "                    like 'ip netns exec NAME krepctl ...'\n"
	      "  -j, --json        print results as JSON (errors too: an object\n"
	      "                    {\"error\",\"code\",\"errno\",\"message\"} on stdout)\n"
	      "  -h, --help        show this help\n"
	      "  -V, --version     show the version\n"
	      "\n"
	      "Commands:\n", f);
	krepctl_list_cmds(f, cmds);
	fputs("\nRun 'krepctl COMMAND --help' for a command's arguments.\n"
	      "Exit status: 0 success, 1 error, 2 usage error.\n", f);
}

static void help_usage(FILE *f)
{
	fputs("Usage: krepctl help [COMMAND [SUBCOMMAND]]\n"
	      "\n"
	      "Show the help of krepctl or of a command, as COMMAND --help does.\n",
	      f);
}

/*
 * "krepctl help broker set" runs "krepctl broker set --help": every
 * command prints its own help, so there is one place to keep it.
 */
static int help_run(struct krepctl *ctl, int argc, char **argv)
{
	char **args;
	int i, ret;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		help_usage(stdout);
		return KREP_EXIT_OK;
	}
	if (argc < 2) {
		usage(stdout);
		return KREP_EXIT_OK;
	}
	args = calloc(argc + 2, sizeof(*args));
	if (!args) {
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return KREP_EXIT_ERR;
	}
	args[0] = argv[0];
	for (i = 1; i < argc; i++)
		args[i] = argv[i];
	args[argc] = "--help";
	krepctl_cmd_path_reset();
	ret = krepctl_dispatch(ctl, NULL, cmds, NULL, usage, argc + 1, args);
	free(args);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "netns",	required_argument,	NULL, 'n' },
		{ "json",	no_argument,		NULL, 'j' },
		{ "help",	no_argument,		NULL, 'h' },
		{ "version",	no_argument,		NULL, 'V' },
		{ NULL }
	};
	struct krepctl ctl = { 0 };
	int c, ret;

	krep_prog = "krepctl";
	/* --json anywhere: usage errors come as JSON too */
	for (c = 1; c < argc; c++)
		if (!strcmp(argv[c], "--json") || !strcmp(argv[c], "-j"))
			krepctl_json_errors = true;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:n:jhV", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			ctl.netns = optarg;
			break;
		case 'j':
			ctl.json = true;
			break;
		case 'h':
			usage(stdout);
			return KREP_EXIT_OK;
		case 'V':
			printf("krepctl %s (krep generic netlink version %d)\n",
			       KREP_AGENT_VERSION, KREP_GENL_VERSION);
			return KREP_EXIT_OK;
		case ':':
			return krepctl_usage_error(usage, "option '%s' needs a value",
						   argv[optind - 1]);
		default:
			if (optopt)
				return krepctl_usage_error(usage,
							   "unknown option '-%c'",
							   optopt);
			return krepctl_usage_error(usage, "unknown option '%s'",
						   argv[optind - 1]);
		}
	}
	ret = krepctl_dispatch(&ctl, NULL, cmds, NULL, usage,
			       argc - optind + 1, argv + optind - 1);
	if (ctl.gl.sk)
		krep_genl_close(&ctl.gl);
	if (fflush(stdout) && ret == KREP_EXIT_OK) {
		fprintf(stderr, "%s: write error: %s\n", krep_prog,
			strerror(errno));
		ret = KREP_EXIT_ERR;
	}
	return ret;
}
