// SPDX-License-Identifier: GPL-2.0
/*
 * krepd: the krep controller daemon.
 *
 * For now a skeleton: it joins the "events" multicast group of the krep
 * family in its network namespace and logs every event it receives, one
 * line each. The controller's duties (electing leaders from the ISR,
 * committing ALTER_ISR requests with LEADER_AND_ISR, bumping epochs) are
 * not implemented yet.
 *
 * Events are logged to stdout with --foreground (warnings and errors to
 * stderr), to syslog otherwise. SIGINT and SIGTERM stop it cleanly; they
 * are taken from a signalfd so the loop is a plain poll().
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <syslog.h>
#include <unistd.h>

#include <netlink/socket.h>

#include <linux/krep.h>

#include "attrs.h"
#include "ep.h"
#include "genl.h"
#include "metrics.h"

#define KREPD_VERSION	"0.1"

struct krepd {
	const char *netns;
	bool foreground;
	bool once;
	bool events;		/* joined the events group */
	unsigned long nevents;
	struct krep_genl gl;
	int sfd;		/* signalfd for SIGINT, SIGTERM */
	const char *metrics_addr;	/* --metrics ADDR:PORT */
	struct krep_metrics *metrics;
};

static bool use_syslog;

static void usage(FILE *f)
{
	fputs("Usage: krepd [--netns NAME] [--foreground] [--once]\n"
	      "             [--metrics ADDR:PORT]\n"
	      "\n"
	      "The krep controller daemon. NOT IMPLEMENTED YET: leader election,\n"
	      "committing ISR changes (ALTER_ISR -> LEADER_AND_ISR) and epoch\n"
	      "bumps. This version only connects to the krep module, listens on\n"
	      "its \"events\" multicast group and logs each event as one line.\n"
	      "\n"
	      "  -n, --netns NAME   run in network namespace NAME (/run/netns/NAME)\n"
	      "  -f, --foreground   stay in the foreground and log to stdout/stderr\n"
	      "                     (otherwise: become a daemon and log to syslog)\n"
	      "  -1, --once         exit after logging the first event; fails if the\n"
	      "                     module has no \"events\" group\n"
	      "  -m, --metrics ADDR:PORT  serve Prometheus metrics at\n"
	      "                     http://ADDR:PORT/metrics (in krepd's namespace):\n"
	      "                     the figures of 'krepctl stats', ISR shrinks and\n"
	      "                     expands counted from the ISRs it sees (once a\n"
	      "                     second and after every ALTER_ISR event), and\n"
	      "                     per-partition HW and LSO lags\n"
	      "  -h, --help         show this help\n"
	      "  -V, --version      show the version\n"
	      "\n"
	      "Stops on SIGINT or SIGTERM. Exit status: 0 success, 1 error,\n"
	      "2 usage error.\n", f);
}

static void logmsg(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void logmsg(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (use_syslog) {
		vsyslog(prio, fmt, ap);
	} else if (prio <= LOG_WARNING) {
		fprintf(stderr, "%s: ", krep_prog);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	} else {
		vprintf(fmt, ap);
		putchar('\n');
		fflush(stdout);
	}
	va_end(ap);
}

/* Log one event: "event <cmd> <attr>=<value> ...". */
static int on_event(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct krepd *d = arg;
	struct genlmsghdr *gh;
	const char *cmd;
	char *line = NULL;
	size_t size = 0;
	FILE *f;

	if (nlh->nlmsg_type != d->gl.family ||
	    !genlmsg_valid_hdr(nlh, 0))
		return NL_SKIP;
	gh = nlmsg_data(nlh);
	f = open_memstream(&line, &size);
	if (!f) {
		logmsg(LOG_ERR, "cannot log event: %s", strerror(errno));
		return NL_SKIP;
	}
	cmd = krep_cmd_name(gh->cmd);
	if (cmd)
		fprintf(f, "event cmd=%u(%s)", gh->cmd, cmd);
	else
		fprintf(f, "event cmd=%u", gh->cmd);
	if (genlmsg_attrlen(gh, 0) > 0) {
		fputc(' ', f);
		krep_attrs_print(f, &krep_attr_space, genlmsg_attrdata(gh, 0),
				 genlmsg_attrlen(gh, 0));
	}
	if (fclose(f)) {
		logmsg(LOG_ERR, "cannot log event: %s", strerror(errno));
	} else {
		logmsg(LOG_INFO, "%s", line);
		d->nevents++;
	}
	free(line);
	/* an ISR changed: let the metrics count it before the next one */
	if (d->metrics && gh->cmd == KREP_CMD_ALTER_ISR)
		krep_metrics_poke(d->metrics);
	return NL_OK;
}

static int events_open(struct krepd *d)
{
	struct nl_sock *sk;
	int err;

	if (krep_genl_open(&d->gl))
		return -1;
	sk = d->gl.sk;
	err = krep_genl_subscribe(&d->gl, KREP_MCGRP_EVENTS);
	if (err == -ENOENT) {
		logmsg(LOG_WARNING,
		       "the krep module has no \"%s\" multicast group yet; %s",
		       KREP_MCGRP_EVENTS,
		       d->once ? "no event to wait for" :
				 "running without events");
		return d->once ? -1 : 0;
	}
	if (err)
		return -1;
	d->events = true;
	/* Events are not replies: no sequence numbers to check. */
	nl_socket_disable_seq_check(sk);
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_event, d);
	err = nl_socket_set_nonblocking(sk);
	if (!err)
		err = nl_socket_set_buffer_size(sk, 1 << 20, 0);
	if (err) {
		fprintf(stderr, "%s: cannot set up the event socket: %s\n",
			krep_prog, nl_geterror(err));
		return -1;
	}
	return 0;
}

static int signals_open(struct krepd *d)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, NULL)) {
		logmsg(LOG_ERR, "sigprocmask: %s", strerror(errno));
		return -1;
	}
	d->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (d->sfd < 0) {
		logmsg(LOG_ERR, "signalfd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Returns 1 when a stop signal arrived, 0 if none, -1 on error. */
static int signal_read(struct krepd *d)
{
	struct signalfd_siginfo si;
	ssize_t n;

	n = read(d->sfd, &si, sizeof(si));
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n != sizeof(si)) {
		logmsg(LOG_ERR, "signalfd read: %s",
		       n < 0 ? strerror(errno) : "short read");
		return -1;
	}
	logmsg(LOG_NOTICE, "received SIG%s, exiting",
	       sigabbrev_np(si.ssi_signo) ?: "?");
	return 1;
}

/* Drain the event socket. Returns 0, or -1 on a fatal error. */
static int events_read(struct krepd *d)
{
	int err;

	err = nl_recvmsgs_default(d->gl.sk);
	if (err == -NLE_NOMEM) {
		/* ENOBUFS: the kernel dropped events for us. */
		logmsg(LOG_WARNING, "event queue overrun: events were lost");
		return 0;
	}
	if (err < 0 && err != -NLE_AGAIN) {
		logmsg(LOG_ERR, "receiving events: %s", nl_geterror(err));
		return -1;
	}
	return 0;
}

static int run(struct krepd *d)
{
	struct pollfd pfd[2 + KREP_METRICS_NFDS] = {
		{ .fd = d->sfd, .events = POLLIN },
		{ .fd = nl_socket_get_fd(d->gl.sk), .events = POLLIN },
	};
	nfds_t n = d->events ? 2 : 1, base = n;
	int ret, timeout = -1;

	logmsg(LOG_NOTICE, "krepd %s started%s%s (controller duties not implemented yet)",
	       KREPD_VERSION, d->netns ? " in network namespace " : "",
	       d->netns ? d->netns : "");
	for (;;) {
		if (d->metrics) {
			n = base + krep_metrics_pollfds(d->metrics, pfd + base);
			timeout = krep_metrics_timeout(d->metrics);
		}
		if (poll(pfd, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			logmsg(LOG_ERR, "poll: %s", strerror(errno));
			return -1;
		}
		if (pfd[0].revents) {
			ret = signal_read(d);
			if (ret)
				return ret < 0 ? -1 : 0;
		}
		if (n > 1 && pfd[1].revents) {
			if (events_read(d))
				return -1;
			if (d->once && d->nevents)
				return 0;
		}
		if (d->metrics)
			krep_metrics_handle(d->metrics, pfd + base, n - base);
	}
}

static int parse_args(struct krepd *d, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "netns",	required_argument,	NULL, 'n' },
		{ "foreground",	no_argument,		NULL, 'f' },
		{ "once",	no_argument,		NULL, '1' },
		{ "metrics",	required_argument,	NULL, 'm' },
		{ "help",	no_argument,		NULL, 'h' },
		{ "version",	no_argument,		NULL, 'V' },
		{ NULL }
	};
	const char *why = NULL;
	struct krep_ep ep;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:f1m:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			d->netns = optarg;
			break;
		case 'f':
			d->foreground = true;
			break;
		case '1':
			d->once = true;
			break;
		case 'm':
			d->metrics_addr = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("krepd %s (krep generic netlink version %d)\n",
			       KREPD_VERSION, KREP_GENL_VERSION);
			return 0;
		case ':':
			fprintf(stderr, "krepd: option '%s' needs a value\n",
				argv[optind - 1]);
			goto usage;
		default:
			if (optopt)
				fprintf(stderr, "krepd: unknown option '-%c'\n",
					optopt);
			else
				fprintf(stderr, "krepd: unknown option '%s'\n",
					argv[optind - 1]);
			goto usage;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "krepd: unexpected argument '%s'\n",
			argv[optind]);
		goto usage;
	}
	if (d->metrics_addr &&
	    (krep_ep_parse(d->metrics_addr, &ep, &why) || !ep.port)) {
		fprintf(stderr, "krepd: --metrics '%s': %s (A.B.C.D:PORT or [IPV6]:PORT)\n",
			d->metrics_addr, why ? why : "port 0");
		goto usage;
	}
	return 1;
usage:
	fputc('\n', stderr);
	usage(stderr);
	return -1;
}

int main(int argc, char **argv)
{
	struct krepd d = { .sfd = -1 };
	int ret;

	krep_prog = "krepd";
	ret = parse_args(&d, argc, argv);
	if (ret <= 0)
		return ret ? 2 : 0;

	if (d.netns && krep_netns_enter(d.netns))
		return 1;
	/* Block signals first so none is lost before the signalfd exists. */
	if (signals_open(&d))
		return 1;
	if (events_open(&d)) {
		ret = 1;
		goto out;
	}
	if (d.metrics_addr) {
		d.metrics = krep_metrics_open(d.metrics_addr, logmsg);
		if (!d.metrics) {
			ret = 1;
			goto out;
		}
	}
	if (!d.foreground) {
		if (daemon(0, 0)) {
			logmsg(LOG_ERR, "daemon: %s", strerror(errno));
			ret = 1;
			goto out;
		}
		openlog("krepd", LOG_PID, LOG_DAEMON);
		use_syslog = true;
	}
	ret = run(&d) ? 1 : 0;
out:
	krep_metrics_close(d.metrics);
	if (d.gl.sk)
		krep_genl_close(&d.gl);
	close(d.sfd);
	if (use_syslog)
		closelog();
	return ret;
}
