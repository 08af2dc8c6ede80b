// SPDX-License-Identifier: GPL-2.0
/*
 * krepd: the krep daemon, in one of two modes.
 *
 * krepd --controller (controller.h) is the cluster's controller: it
 * claims every broker of its configuration (cluster.h), fences and
 * unfences them, elects leaders, commits or turns down ISR changes, and
 * answers krepctl elect on its control socket (ctlsock.h). With --metrics
 * it serves an observer's metrics and its own (krep_controller_*).
 *
 * Without --controller it is an observer of the broker of its network
 * namespace: it joins the "events" multicast group of the krep family and
 * logs every event it receives, one line each, and with --metrics serves
 * Prometheus metrics (metrics.h).
 *
 * Logs go to stdout with --foreground (warnings and errors to stderr), to
 * syslog otherwise (log.h). SIGINT and SIGTERM stop it cleanly; they are
 * taken from a signalfd so the loop is a plain poll().
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
#include <time.h>
#include <unistd.h>

#include <netlink/socket.h>

#include <linux/krep.h>

#include "attrs.h"
#include "cluster.h"
#include "controller.h"
#include "ep.h"
#include "genl.h"
#include "log.h"
#include "metrics.h"
#include "relay.h"
#include "etcd_register.h"

#define KREPD_VERSION	"0.1"

struct krepd {
	const char *netns;
	bool foreground;
	bool once;
	bool events;		/* joined the events group */
	bool wait_module;	/* --metrics or --etcd: without the module,
				 * wait for it (krep_up 0) rather than exit */
	uint64_t next_check;	/* when to look for the module again (ms) */
	unsigned long nevents;
	struct krep_genl gl;
	int sfd;		/* signalfd for SIGINT, SIGTERM */
	const char *metrics_addr;	/* --metrics ADDR:PORT */
	struct krep_metrics *metrics;
	bool controller;		/* --controller */
	struct krep_cluster cluster;	/* its configuration */
	const char *relay, *secret_file;	/* --relay, --secret-file */
	bool etcd;			/* --etcd without --controller: */
	struct krep_ha_opts ha;		/* ... register the broker there */
	struct krep_reg *reg;
};

static void usage(FILE *f)
{
	fputs("Usage: krepd --controller [--config FILE] [--broker ID@WHERE]...\n"
	      "             [--session-timeout-ms N] [--poll-ms N] [--lease-ms N]\n"
	      "             [--preferred-interval-ms N] [--state-file PATH]\n"
	      "             [--socket PATH] [--netns NAME] [--foreground]\n"
	      "             [--metrics ADDR:PORT]\n"
	      "             [--etcd URL[,URL...] [--etcd-prefix P] [--name NAME]\n"
	      "              [--etcd-cacert FILE] [--etcd-cert FILE] [--etcd-key FILE]\n"
	      "              [--etcd-user NAME] [--etcd-password-file FILE]\n"
	      "              [--etcd-timeout-ms N]]\n"
	      "       krepd [--netns NAME] [--foreground] [--once]\n"
	      "             [--metrics ADDR:PORT] [--etcd URL[,URL...] [--etcd-prefix P]]\n"
	      "       krepd --relay ADDR:PORT --secret-file PATH [--netns NAME]\n"
	      "\n"
	      "With --controller, krepd is the cluster's controller: it claims every\n"
	      "broker it is given (one controller per cluster: a second one exits 1),\n"
	      "reads them every poll, fences a broker out of touch for longer than the\n"
	      "session timeout, elects leaders from the ISR (then the ELR, then, where\n"
	      "a topic opts in, any live replica), commits or turns down the leaders'\n"
	      "ISR changes, bumps epochs, writes every decision to its state file\n"
	      "before sending it with LEADER_AND_ISR, and moves leadership back to the\n"
	      "preferred replica periodically and when 'krepctl elect --preferred'\n"
	      "asks. 'krepctl elect --status' prints its view; so does SIGUSR1, to\n"
	      "the log.\n"
	      "Without --controller, krepd logs every event of the krep module of its\n"
	      "namespace, one line each, and can serve metrics.\n"
	      "\n"
	      "Controller options:\n"
	      "  -c, --controller   run as the cluster's controller\n"
	      "  -C, --config FILE  brokers and settings, one per line ('#' comments):\n"
	      "                       broker ID local\n"
	      "                       broker ID netns NAME\n"
	      "                       broker ID relay HOST:PORT secret-file PATH\n"
	      "                       session-timeout-ms N      (6000)\n"
	      "                       poll-ms N                 (250)\n"
	      "                       lease-ms N                (the session timeout)\n"
	      "                       preferred-election-interval-ms N (300000, 0: off)\n"
	      "                       state-file PATH  (" KREP_DEFAULT_STATE_FILE ")\n"
	      "                       socket PATH      (" KREP_DEFAULT_SOCKET ")\n"
	      "  -b, --broker ID@local | ID@netns:NAME | ID@relay:HOST:PORT:SECRETFILE\n"
	      "                     a broker (repeat it); added to --config's\n"
	      "      --session-timeout-ms N, --poll-ms N, --lease-ms N,\n"
	      "      --preferred-interval-ms N, --state-file PATH, --socket PATH\n"
	      "                     override --config's settings\n"
	      "      --etcd URL[,URL...]  several controllers, one active: elect it in\n"
	      "                     etcd (v3, http:// or https://) and keep the state\n"
	      "                     there instead of the state file\n"
	      "      --etcd-prefix P   the cluster's keys in etcd (/krep/default)\n"
	      "      --name NAME       this krepd in etcd and krepctl (HOST:PID)\n"
	      "      --etcd-cacert FILE, --etcd-cert FILE, --etcd-key FILE  TLS\n"
	      "      --etcd-user NAME, --etcd-password-file FILE  etcd authentication\n"
	      "      --etcd-timeout-ms N  how long one etcd request may wait for its\n"
	      "                     answer on one endpoint (10..60000, at most half\n"
	      "                     of lease-ms; default: a quarter of lease-ms,\n"
	      "                     within 100..1000); a write whose answer does not\n"
	      "                     come, in time or at all, is read back before it\n"
	      "                     counts as failed\n"
	      "  -m, --metrics ADDR:PORT  what an observer serves (below), and the\n"
	      "                     controller's own: krep_controller_active (0 on\n"
	      "                     a standby), krep_controller_epoch, elections by\n"
	      "                     reason, fenced and unreachable brokers, offline,\n"
	      "                     under-replicated and under-min-ISR partitions\n"
	      "\n"
	      "Observer options:\n"
	      "      --etcd URL[,URL...]  register this namespace's broker in etcd\n"
	      "                     (P/brokers/ids/ID, under a lease of this krepd;\n"
	      "                     --etcd-prefix, the TLS and user options and\n"
	      "                     --etcd-timeout-ms, at most 3000 here, apply)\n"
	      "  -1, --once         exit after logging the first event; fails if the\n"
	      "                     module has no \"events\" group\n"
	      "  -m, --metrics ADDR:PORT  serve Prometheus metrics at\n"
	      "                     http://ADDR:PORT/metrics (in krepd's namespace):\n"
	      "                     the figures of 'krepctl stats', ISR shrinks and\n"
	      "                     expands counted from the ISRs it sees (once a\n"
	      "                     second and after every ALTER_ISR event),\n"
	      "                     per-partition HW and LSO lags and the commit latency\n"
	      "                     histogram (from the krep_hw_advance trace event,\n"
	      "                     as root); without the module it answers\n"
	      "                     krep_up 0 until it is loaded\n"
	      "\n"
	      "Relay options (the broker's end of a controller's relay session):\n"
	      "      --relay ADDR:PORT  forward the krep family of krepd's namespace\n"
	      "                     over TCP to controllers that prove they hold the\n"
	      "                     secret; stays in the foreground\n"
	      "      --secret-file PATH  the shared secret: 16 bytes or more, in a\n"
	      "                     file only its owner may read\n"
	      "\n"
	      "Both:\n"
	      "  -n, --netns NAME   run in network namespace NAME (/run/netns/NAME)\n"
	      "  -f, --foreground   stay in the foreground and log to stdout/stderr\n"
	      "                     (otherwise: become a daemon and log to syslog)\n"
	      "  -h, --help         show this help\n"
	      "  -V, --version      show the version\n"
	      "\n"
	      "Stops on SIGINT or SIGTERM (the controller releases its claims and\n"
	      "writes its state). Exit status: 0 success, 1 error (another\n"
	      "controller is active, ...), 2 usage or configuration error.\n", f);
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
		krep_log(LOG_ERR, "cannot log event: %s", strerror(errno));
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
		krep_log(LOG_ERR, "cannot log event: %s", strerror(errno));
	} else {
		krep_log(LOG_INFO, "%s", line);
		d->nevents++;
	}
	free(line);
	/* an ISR changed: let the metrics count it before the next one */
	if (d->metrics && gh->cmd == KREP_CMD_ALTER_ISR)
		krep_metrics_poke(d->metrics);
	return NL_OK;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The krep module is loaded (its sysfs directory is global to namespaces). */
static bool module_loaded(void)
{
	return !access("/sys/module/krep", F_OK);
}

static int events_open(struct krepd *d)
{
	struct nl_sock *sk;
	int err;

	if (d->wait_module && !module_loaded()) {
		krep_log(LOG_NOTICE,
			 "the krep module is not loaded: %s until it is",
			 d->metrics_addr ? "serving krep_up 0" :
					   "waiting");
		return 0;
	}
	err = krep_genl_open(&d->gl);
	if (err == -ENOENT && d->wait_module) {
		krep_log(LOG_NOTICE, "krep has no generic netlink family yet: waiting for it");
		return 0;
	}
	if (err)
		return -1;
	sk = d->gl.sk;
	err = krep_genl_subscribe(&d->gl, KREP_MCGRP_EVENTS);
	if (err == -ENOENT) {
		krep_log(LOG_WARNING,
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
		krep_log(LOG_ERR, "sigprocmask: %s", strerror(errno));
		return -1;
	}
	d->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (d->sfd < 0) {
		krep_log(LOG_ERR, "signalfd: %s", strerror(errno));
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
		krep_log(LOG_ERR, "signalfd read: %s",
		       n < 0 ? strerror(errno) : "short read");
		return -1;
	}
	krep_log(LOG_NOTICE, "received SIG%s, exiting",
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
		krep_log(LOG_WARNING, "event queue overrun: events were lost");
		return 0;
	}
	if (err < 0 && err != -NLE_AGAIN) {
		krep_log(LOG_ERR, "receiving events: %s", nl_geterror(err));
		return -1;
	}
	return 0;
}

/*
 * Once a second while waiting for the module: join the events group when
 * it is loaded; and when it is gone (rmmod), leave the old family's
 * socket, so that its next load is joined again.
 */
static int module_check(struct krepd *d)
{
	uint64_t now = now_ms();

	if (!d->wait_module || now < d->next_check)
		return 0;
	d->next_check = now + 1000;
	if (d->gl.sk && !module_loaded()) {
		krep_log(LOG_NOTICE, "the krep module was unloaded: waiting for it");
		krep_genl_close(&d->gl);
		d->events = false;
		return 0;
	}
	if (d->gl.sk || !module_loaded())
		return 0;
	if (events_open(d))
		return -1;
	if (d->gl.sk)
		krep_log(LOG_NOTICE, "the krep module is loaded: %s",
			 d->events ? "logging its events" : "running without events");
	return 0;
}

static int run(struct krepd *d)
{
	struct pollfd pfd[2 + KREP_METRICS_NFDS] = {
		{ .fd = d->sfd, .events = POLLIN },
		{ .fd = -1, .events = POLLIN },
	};
	nfds_t n, base;
	int ret, timeout;

	krep_log(LOG_NOTICE, "krepd %s started%s%s (observer: logging events%s%s)",
	       KREPD_VERSION, d->netns ? " in network namespace " : "",
	       d->netns ? d->netns : "", d->metrics ? ", serving metrics" : "",
	       d->reg ? ", registering the broker in etcd" : "");
	for (;;) {
		if (module_check(d))
			return -1;
		pfd[1].fd = d->events ? nl_socket_get_fd(d->gl.sk) : -1;
		pfd[1].revents = 0;
		n = base = 2;	/* poll() skips a negative fd */
		timeout = -1;
		if (d->wait_module)
			timeout = d->next_check > now_ms() ?
				  (int)(d->next_check - now_ms()) : 0;
		if (d->metrics) {
			n = base + krep_metrics_pollfds(d->metrics, pfd + base);
			if (timeout < 0 ||
			    krep_metrics_timeout(d->metrics) < timeout)
				timeout = krep_metrics_timeout(d->metrics);
		}
		if (d->reg && (timeout < 0 || krep_reg_timeout(d->reg) < timeout))
			timeout = krep_reg_timeout(d->reg);
		if (poll(pfd, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			krep_log(LOG_ERR, "poll: %s", strerror(errno));
			return -1;
		}
		if (pfd[0].revents) {
			ret = signal_read(d);
			if (ret)
				return ret < 0 ? -1 : 0;
		}
		if (d->events && pfd[1].revents) {
			if (events_read(d))
				return -1;
			if (d->once && d->nevents)
				return 0;
		}
		if (d->metrics)
			krep_metrics_handle(d->metrics, pfd + base, n - base);
		if (d->reg)
			krep_reg_tick(d->reg);
	}
}

/* Long options without a short one. */
enum {
	OPT_SESSION_TIMEOUT = 256,
	OPT_POLL,
	OPT_LEASE,
	OPT_PREFERRED,
	OPT_STATE_FILE,
	OPT_SOCKET,
	OPT_RELAY,
	OPT_SECRET_FILE,
	OPT_ETCD,		/* --etcd and its options, in ha_field() order */
	OPT_ETCD_PREFIX,
	OPT_NAME,
	OPT_ETCD_CACERT,
	OPT_ETCD_CERT,
	OPT_ETCD_KEY,
	OPT_ETCD_USER,
	OPT_ETCD_PASSWORD_FILE,
	OPT_ETCD_LAST = OPT_ETCD_PASSWORD_FILE,
	OPT_ETCD_TIMEOUT,
};

/* Where each --etcd option goes in struct krep_ha_opts, and its size. */
static char *ha_field(struct krep_ha_opts *o, int opt, size_t *size)
{
#define F(x) (*size = sizeof(o->x), o->x)
	switch (opt) {
	case OPT_ETCD:			return F(endpoints);
	case OPT_ETCD_PREFIX:		return F(prefix);
	case OPT_NAME:			return F(name);
	case OPT_ETCD_CACERT:		return F(cacert);
	case OPT_ETCD_CERT:		return F(cert);
	case OPT_ETCD_KEY:		return F(key);
	case OPT_ETCD_USER:		return F(user);
	default:			return F(password_file);
	}
#undef F
}

/* --etcd-timeout-ms VAL into @o. 0, or -1 with the reason printed. */
static int etcd_timeout(struct krep_ha_opts *o, const char *val)
{
	if (!krep_u32_parse(val, &o->timeout_ms) &&
	    o->timeout_ms >= KREP_HA_TIMEOUT_MIN_MS &&
	    o->timeout_ms <= KREP_HA_TIMEOUT_MAX_MS)
		return 0;
	fprintf(stderr, "krepd: --etcd-timeout-ms '%s': not a number of milliseconds in %u..%u\n",
		val, KREP_HA_TIMEOUT_MIN_MS, KREP_HA_TIMEOUT_MAX_MS);
	return -1;
}

/*
 * --etcd-timeout-ms leaves time to renew a lease of @lease_ms (@what's).
 * 0, or -1 with the reason printed.
 */
static int etcd_timeout_fits(const struct krep_ha_opts *o, uint32_t lease_ms,
			     const char *what)
{
	if (o->timeout_ms <= lease_ms / 2)
		return 0;
	fprintf(stderr, "krepd: --etcd-timeout-ms %u must be at most half of %s (%u ms)\n",
		o->timeout_ms, what, lease_ms);
	return -1;
}

#define FLAGS_MAX	(2 * KREP_CLUSTER_BROKERS_MAX + 16)

/* "broker" for 'b': the long name of option @c, for messages. */
static const char *flag_name(const struct option *opts, int c)
{
	for (; opts->name; opts++)
		if (opts->val == c)
			return opts->name;
	return "?";
}

static int parse_args(struct krepd *d, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "netns",	required_argument,	NULL, 'n' },
		{ "foreground",	no_argument,		NULL, 'f' },
		{ "once",	no_argument,		NULL, '1' },
		{ "metrics",	required_argument,	NULL, 'm' },
		{ "controller",	no_argument,		NULL, 'c' },
		{ "config",	required_argument,	NULL, 'C' },
		{ "broker",	required_argument,	NULL, 'b' },
		{ "session-timeout-ms", required_argument, NULL, OPT_SESSION_TIMEOUT },
		{ "poll-ms",	required_argument,	NULL, OPT_POLL },
		{ "lease-ms",	required_argument,	NULL, OPT_LEASE },
		{ "preferred-interval-ms", required_argument, NULL, OPT_PREFERRED },
		{ "state-file",	required_argument,	NULL, OPT_STATE_FILE },
		{ "socket",	required_argument,	NULL, OPT_SOCKET },
		{ "relay",	required_argument,	NULL, OPT_RELAY },
		{ "secret-file", required_argument,	NULL, OPT_SECRET_FILE },
		{ "etcd",	required_argument,	NULL, OPT_ETCD },
		{ "etcd-prefix", required_argument,	NULL, OPT_ETCD_PREFIX },
		{ "name",	required_argument,	NULL, OPT_NAME },
		{ "etcd-cacert", required_argument,	NULL, OPT_ETCD_CACERT },
		{ "etcd-cert",	required_argument,	NULL, OPT_ETCD_CERT },
		{ "etcd-key",	required_argument,	NULL, OPT_ETCD_KEY },
		{ "etcd-user",	required_argument,	NULL, OPT_ETCD_USER },
		{ "etcd-password-file", required_argument, NULL, OPT_ETCD_PASSWORD_FILE },
		{ "etcd-timeout-ms", required_argument, NULL, OPT_ETCD_TIMEOUT },
		{ "help",	no_argument,		NULL, 'h' },
		{ "version",	no_argument,		NULL, 'V' },
		{ NULL }
	};
	static const enum krep_cluster_setting setting_of[] = {
		[OPT_SESSION_TIMEOUT - 256]	= KREP_CS_SESSION_TIMEOUT,
		[OPT_POLL - 256]		= KREP_CS_POLL,
		[OPT_LEASE - 256]		= KREP_CS_LEASE,
		[OPT_PREFERRED - 256]		= KREP_CS_PREFERRED,
		[OPT_STATE_FILE - 256]		= KREP_CS_STATE_FILE,
		[OPT_SOCKET - 256]		= KREP_CS_SOCKET,
	};
	/* controller flags in order, applied after --config */
	struct { int opt; const char *val; const char *name; } flags[FLAGS_MAX];
	const char *why = NULL, *config = NULL;
	struct krep_cluster *cl = &d->cluster;
	char err[512];
	struct krep_ha_opts ha = { .prefix = "/krep/default" };
	bool ha_set = false;
	struct krep_ep ep;
	int c, nflags = 0, i;
	size_t size;
	char *dst;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:f1m:cC:b:hV", opts, NULL)) != -1) {
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
		case 'c':
			d->controller = true;
			break;
		case 'C':
			config = optarg;
			break;
		case 'b':
		case OPT_SESSION_TIMEOUT:
		case OPT_POLL:
		case OPT_LEASE:
		case OPT_PREFERRED:
		case OPT_STATE_FILE:
		case OPT_SOCKET:
			if (nflags == FLAGS_MAX) {
				fprintf(stderr, "krepd: too many options\n");
				goto usage;
			}
			flags[nflags].opt = c;
			flags[nflags].val = optarg;
			flags[nflags++].name = flag_name(opts, c);
			break;
		case OPT_RELAY:
			d->relay = optarg;
			break;
		case OPT_SECRET_FILE:
			d->secret_file = optarg;
			break;
		case OPT_ETCD ... OPT_ETCD_LAST:
			dst = ha_field(&ha, c, &size);
			if (strlen(optarg) >= size || !optarg[0]) {
				fprintf(stderr, "krepd: --%s: %s\n",
					flag_name(opts, c), optarg[0] ?
					"too long" : "empty");
				goto usage;
			}
			strcpy(dst, optarg);
			ha_set = true;
			break;
		case OPT_ETCD_TIMEOUT:
			if (etcd_timeout(&ha, optarg))
				goto usage;
			ha_set = true;
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
	if (!d->relay != !d->secret_file) {
		fprintf(stderr, "krepd: %s needs %s\n",
			d->relay ? "--relay" : "--secret-file",
			d->relay ? "--secret-file" : "--relay");
		goto usage;
	}
	if (d->relay && (d->controller || d->once || d->metrics_addr)) {
		fprintf(stderr, "krepd: --relay takes only --secret-file, --netns and --foreground\n");
		goto usage;
	}
	if (ha_set && (!ha.endpoints[0] || d->relay)) {
		fprintf(stderr, "krepd: %s\n", d->relay ?
			"--relay takes no etcd option" :
			"the etcd options need --etcd");
		goto usage;
	}
	d->etcd = ha_set && !d->controller;
	d->ha = ha;
	if (ha.prefix[0] != '/' || ha.prefix[strlen(ha.prefix) - 1] == '/') {
		fprintf(stderr, "krepd: --etcd-prefix '%s': it starts with '/' and does not end with one\n",
			ha.prefix);
		goto usage;
	}
	if (!d->controller && (config || nflags)) {
		fprintf(stderr, "krepd: --%s needs --controller\n",
			config ? "config" : flags[0].name);
		goto usage;
	}
	if (d->controller && d->once) {
		fprintf(stderr, "krepd: --once is not a controller option\n");
		goto usage;
	}
	if (d->metrics_addr &&
	    (krep_ep_parse(d->metrics_addr, &ep, &why) || !ep.port)) {
		fprintf(stderr, "krepd: --metrics '%s': %s (A.B.C.D:PORT or [IPV6]:PORT)\n",
			d->metrics_addr, why ? why : "port 0");
		goto usage;
	}
	if (!d->controller)
		return etcd_timeout_fits(&ha, KREP_DEFAULT_SESSION_TIMEOUT_MS,
					 "the registration's lease") ? -1 : 1;
	krep_cluster_init(cl);
	cl->ha = ha;
	if (config && krep_cluster_load(cl, config))
		return -1;	/* every bad line was printed */
	for (i = 0; i < nflags; i++) {
		if (flags[i].opt == 'b') {
			if (krep_cluster_broker_flag(cl, flags[i].val, err,
						     sizeof(err))) {
				fprintf(stderr, "krepd: --broker '%s': %s\n",
					flags[i].val, err);
				goto usage;
			}
		} else if (krep_cluster_set(cl, setting_of[flags[i].opt - 256],
					    flags[i].val, err, sizeof(err))) {
			goto bad_flag;
		}
	}
	if (krep_cluster_finish(cl, err, sizeof(err))) {
		fprintf(stderr, "krepd: %s%s%s\n", config ? config : "",
			config ? ": " : "", err);
		return -1;
	}
	if (etcd_timeout_fits(&cl->ha, cl->lease_ms, "lease-ms"))
		return -1;
	return 1;
bad_flag:
	fprintf(stderr, "krepd: %s\n", err);	/* it names the setting */
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
	if (d.relay)
		return krep_relay_main(d.relay, d.secret_file, d.netns);

	if (d.netns && krep_netns_enter(d.netns))
		return 1;
	if (d.controller) {
		/* its figures beside the broker's (krep_up 0 without one) */
		if (d.metrics_addr) {
			d.metrics = krep_metrics_open(d.metrics_addr, krep_log);
			if (!d.metrics)
				return 1;
		}
		ret = krep_controller_run(&d.cluster, d.foreground, d.metrics);
		krep_metrics_close(d.metrics);
		return ret;
	}
	/* Block signals first so none is lost before the signalfd exists. */
	if (signals_open(&d))
		return 1;
	/* an exporter or a registration outlives the module (krep_up 0) */
	d.wait_module = !d.once && (d.metrics_addr || d.etcd);
	if (events_open(&d)) {
		ret = 1;
		goto out;
	}
	if (d.metrics_addr) {
		d.metrics = krep_metrics_open(d.metrics_addr, krep_log);
		if (!d.metrics) {
			ret = 1;
			goto out;
		}
	}
	if (d.etcd) {
		d.reg = krep_reg_open(&d.ha, KREP_DEFAULT_SESSION_TIMEOUT_MS);
		if (!d.reg) {
			ret = 1;
			goto out;
		}
	}
	if (!d.foreground) {
		if (daemon(0, 0)) {
			krep_log(LOG_ERR, "daemon: %s", strerror(errno));
			ret = 1;
			goto out;
		}
		krep_log_syslog("krepd");
	}
	ret = run(&d) ? 1 : 0;
out:
	krep_reg_close(d.reg);
	krep_metrics_close(d.metrics);
	if (d.gl.sk)
		krep_genl_close(&d.gl);
	close(d.sfd);
	krep_log_close();
	return ret;
}
