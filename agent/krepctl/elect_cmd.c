// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl elect: ask krepd --controller, over its control socket
 * (ctlsock.h), for a preferred leader election or for its view.
 *
 *	krepctl elect --preferred [TOPIC [PARTITION]] [--socket PATH]
 *	krepctl elect --status [--socket PATH]
 *	krepctl elect --brokers [--socket PATH]
 *
 * --status and --brokers print krepd's JSON objects as they come, one per
 * line. --preferred prints one line per partition, or with --json the
 * objects. Exit status: 0 when every partition was elected or needed no
 * election, 1 when one was not eligible or krepd could not be asked, 2
 * for a bad command line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctlsock.h"
#include "krepctl.h"

#define ELECT_TIMEOUT_MS	30000

void krepctl_elect_usage(FILE *f)
{
	fputs("Usage: krepctl elect --preferred [TOPIC [PARTITION]] [--socket PATH]\n"
	      "       krepctl elect --status [--socket PATH]\n"
	      "       krepctl elect --brokers [--socket PATH]\n"
	      "\n"
	      "Talk to the cluster's controller, krepd --controller, over its control\n"
	      "socket (not to a broker: no --netns).\n"
	      "\n"
	      "  -p, --preferred   move the leadership of every partition (of TOPIC, or\n"
	      "                    just PARTITION of it) to its preferred replica, the\n"
	      "                    first in its replica list, where that one is not\n"
	      "                    fenced and is in the ISR; both epochs are bumped.\n"
	      "                    One line per partition: 'elected', 'ELECTION_NOT_NEEDED'\n"
	      "                    or 'not eligible' with the reason (--json: krepd's\n"
	      "                    objects {\"topic\",\"partition\",\"result\",\"leader\",\n"
	      "                    \"previous_leader\",\"leader_epoch\",\"reason\"})\n"
	      "  -s, --status      print the controller's view, one JSON object per\n"
	      "                    partition and line: topic, partition, leader (null\n"
	      "                    when offline), leader_epoch, partition_epoch,\n"
	      "                    replicas, isr, elr, offline\n"
	      "  -B, --brokers     print the controller's epoch and owner, then one JSON\n"
	      "                    object per broker: id, reachable, fenced, claimed,\n"
	      "                    incarnation\n"
	      "  -S, --socket PATH krepd's control socket (" KREP_DEFAULT_SOCKET ")\n"
	      "  -j, --json        see --preferred\n"
	      "\n"
	      "Exit status: 0 when every partition was elected or needed no election,\n"
	      "1 when one was not eligible or krepd could not be asked, 2 usage error.\n",
	      f);
}

static void print_preferred(const char *line)
{
	char topic[256], part[16], res[32], leader[16], prev[16], epoch[16];
	char reason[256];

	if (!krepctl_krepd_field(line, "topic", topic, sizeof(topic)) ||
	    !krepctl_krepd_field(line, "partition", part, sizeof(part)) ||
	    !krepctl_krepd_field(line, "result", res, sizeof(res))) {
		printf("%s\n", line);
		return;
	}
	if (!krepctl_krepd_field(line, "reason", reason, sizeof(reason)))
		reason[0] = '\0';
	if (!strcmp(res, "elected")) {
		krepctl_krepd_field(line, "leader", leader, sizeof(leader));
		krepctl_krepd_field(line, "previous_leader", prev, sizeof(prev));
		krepctl_krepd_field(line, "leader_epoch", epoch, sizeof(epoch));
		printf("%s-%s: elected broker %s (was %s; leader epoch %s)\n",
		       topic, part, leader,
		       strcmp(prev, "null") ? prev : "none", epoch);
	} else if (!strcmp(res, "ELECTION_NOT_NEEDED")) {
		printf("%s-%s: ELECTION_NOT_NEEDED: %s\n", topic, part, reason);
	} else {
		printf("%s-%s: not eligible: %s\n", topic, part, reason);
	}
}

/* krepd's objects as they come (*@raw), or as --preferred's lines */
static void each_line(const char *line, void *raw)
{
	if (*(const bool *)raw)
		printf("%s\n", line);
	else
		print_preferred(line);
}

/* The request an option asks for, or NULL. */
static const char *mode_of(const char *opt)
{
	if (!strcmp(opt, "-p") || !strcmp(opt, "--preferred"))
		return "preferred";
	if (!strcmp(opt, "-s") || !strcmp(opt, "--status"))
		return "status";
	if (!strcmp(opt, "-B") || !strcmp(opt, "--brokers"))
		return "brokers";
	return NULL;
}

int krepctl_elect_run(struct krepctl *ctl, int argc, char **argv)
{
	const char *sock = KREP_DEFAULT_SOCKET, *topic = NULL, *part = NULL;
	const char *mode = NULL;
	char req[KREP_CTLSOCK_LINE_MAX];
	uint32_t p;
	bool raw;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (krepctl_is_help(a)) {
			krepctl_elect_usage(stdout);
			return KREP_EXIT_OK;
		}
		if (mode_of(a)) {
			const char *m = mode_of(a);

			if (mode && strcmp(mode, m))
				return krepctl_usage_error(krepctl_elect_usage,
							   "elect: give one of --preferred, --status and --brokers");
			mode = m;
		} else if (!strcmp(a, "-S") || !strcmp(a, "--socket")) {
			if (++i == argc)
				return krepctl_usage_error(krepctl_elect_usage,
							   "elect: option '%s' needs a value",
							   a);
			sock = argv[i];
		} else if (!strncmp(a, "--socket=", 9)) {
			sock = a + 9;
		} else if (!strcmp(a, "-j") || !strcmp(a, "--json")) {
			ctl->json = true;
		} else if (a[0] == '-') {
			return krepctl_usage_error(krepctl_elect_usage,
						   "elect: unknown option '%s'",
						   a);
		} else if (!topic) {
			topic = a;
		} else if (!part) {
			part = a;
		} else {
			return krepctl_usage_error(krepctl_elect_usage,
						   "elect: unexpected argument '%s'",
						   a);
		}
	}
	if (!mode)
		return krepctl_usage_error(krepctl_elect_usage,
					   "elect: give --preferred, --status or --brokers");
	if (topic && strcmp(mode, "preferred"))
		return krepctl_usage_error(krepctl_elect_usage,
					   "elect: unexpected argument '%s'",
					   topic);
	if (part && krepctl_parse_u32(krepctl_elect_usage, "elect", "partition",
				      part, &p))
		return KREP_EXIT_USAGE;
	if (topic && (!*topic || strchr(topic, ' ') ||
		      strlen(topic) > 249))
		return krepctl_usage_error(krepctl_elect_usage,
					   "elect: '%s' is not a topic name",
					   topic);
	if (!*sock)
		return krepctl_usage_error(krepctl_elect_usage,
					   "elect: empty --socket");
	if (ctl->netns)
		return krepctl_usage_error(krepctl_elect_usage,
					   "elect talks to krepd's control socket, not to a broker: drop --netns");

	if (!strcmp(mode, "preferred"))
		snprintf(req, sizeof(req), "elect-preferred%s%s%s%s",
			 topic ? " " : "", topic ? topic : "",
			 part ? " " : "", part ? part : "");
	else
		snprintf(req, sizeof(req), "%s", mode);
	raw = strcmp(mode, "preferred") || ctl->json;
	return krepctl_krepd_call(sock, req, ELECT_TIMEOUT_MS, each_line, &raw);
}
