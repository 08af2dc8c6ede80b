// SPDX-License-Identifier: GPL-2.0
/*
 * krepd --metrics: the Prometheus text endpoint; see metrics.h.
 *
 * Everything runs in krepd's poll() loop: the listening socket and the
 * clients are non-blocking, a client is read until the end of its request
 * head, answered from a buffer and closed (HTTP/1.0, no keep-alive). A
 * client gets 10 s in all. Once a second, for every scrape and right after
 * krepd sees an ALTER_ISR event (krep_metrics_poke()), a snapshot of the
 * broker (snap.c) is taken; the ISR of each partition this broker
 * leads is compared with the previous snapshot's: members that left count
 * as ISR shrinks, members that joined as expands (one per follower, as the
 * krep_isr_shrink and krep_isr_expand tracepoints count). If the ISR is
 * the same but the partition epoch moved by 2k under the same leader, the
 * poll missed k shrink-expand pairs, and counts them. A change of leader
 * starts the comparison afresh. The snapshot, not the event, is what
 * counts: once a controller commits ISR changes, an ALTER_ISR event is a
 * request that may not take effect.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <linux/krep.h>

#include "commit_lat.h"
#include "ep.h"
#include "genl.h"
#include "metrics.h"
#include "snap.h"

#define POLL_MS		1000
#define CLIENT_MS	10000
#define REQ_MAX		4096

struct client {
	int fd;			/* -1: free */
	uint64_t deadline;
	size_t inlen;
	char in[REQ_MAX];
	char *out;		/* the whole response, once the request is in */
	size_t outlen, outoff;
};

struct isr_seen {
	char *topic;
	uint32_t partition;
	uint32_t leader_epoch, partition_epoch;
	size_t nisr;
	uint32_t *isr;
	bool alive;		/* in the latest snapshot */
};

struct krep_metrics {
	krep_metrics_log_fn log;
	int lfd;
	struct client clients[KREP_METRICS_CLIENTS];
	int pfd_client[KREP_METRICS_NFDS];	/* pfd index -> client, -1 */
	int npfd;
	struct krep_genl gl;
	bool up;		/* the last snapshot worked */
	struct krep_snap snap;	/* the last one, when up */
	struct isr_seen *seen;
	size_t nseen;
	uint64_t shrinks, expands;
	uint64_t next_poll;
	uint64_t polls, poll_errors;
	struct krep_lat *lat;	/* tracing krep_hw_advance while up */
	bool lat_tried;		/* since the module (re)appeared */
	bool lat_seen;		/* traced once: export the histogram */
	struct krep_lat_hist lat_hist;
	krep_metrics_ctl_fn ctl_fn;	/* krepd --controller: its figures */
	void *ctl_arg;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- ISR changes ------------------------------------------------------- */

static bool has_id(const uint32_t *v, size_t n, uint32_t id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

static struct isr_seen *seen_find(struct krep_metrics *m, const char *topic,
				  uint32_t partition)
{
	size_t i;

	for (i = 0; i < m->nseen; i++)
		if (m->seen[i].partition == partition &&
		    !strcmp(m->seen[i].topic, topic))
			return &m->seen[i];
	return NULL;
}

static void seen_free(struct isr_seen *s)
{
	free(s->topic);
	free(s->isr);
}

/* Record @p's ISR in @s; false on ENOMEM. */
static bool seen_set(struct isr_seen *s, const struct krep_snap_part *p)
{
	uint32_t *isr = malloc((p->nisr ? p->nisr : 1) * sizeof(*isr));

	if (!isr)
		return false;
	memcpy(isr, p->isr, p->nisr * sizeof(*isr));
	free(s->isr);
	s->isr = isr;
	s->nisr = p->nisr;
	s->leader_epoch = p->leader_epoch;
	s->partition_epoch = p->partition_epoch;
	s->alive = true;
	return true;
}

static void isr_account(struct krep_metrics *m, const struct krep_snap *snap)
{
	size_t i, k, removed, added;
	struct isr_seen *s, *ns;
	uint32_t d;

	for (i = 0; i < m->nseen; i++)
		m->seen[i].alive = false;
	for (i = 0; i < snap->nparts; i++) {
		const struct krep_snap_part *p = &snap->parts[i];

		if (p->role != KREP_ROLE_LEADER || !p->has_isr)
			continue;
		s = seen_find(m, p->topic, p->partition);
		if (!s) {
			ns = realloc(m->seen, (m->nseen + 1) * sizeof(*m->seen));
			if (!ns)
				continue;
			m->seen = ns;
			s = &m->seen[m->nseen];
			memset(s, 0, sizeof(*s));
			s->topic = strdup(p->topic);
			if (!s->topic || !seen_set(s, p)) {
				seen_free(s);
				continue;
			}
			m->nseen++;
			continue;	/* the first sight is the baseline */
		}
		if (s->leader_epoch == p->leader_epoch) {
			removed = added = 0;
			for (k = 0; k < s->nisr; k++)
				removed += !has_id(p->isr, p->nisr, s->isr[k]);
			for (k = 0; k < p->nisr; k++)
				added += !has_id(s->isr, s->nisr, p->isr[k]);
			d = p->partition_epoch - s->partition_epoch;
			if (!removed && !added && d >= 2 && d < (1U << 31)) {
				removed = d / 2;
				added = d / 2;
			}
			m->shrinks += removed;
			m->expands += added;
		}
		seen_set(s, p);
	}
	/* partitions no longer led here (or gone): forget them */
	for (i = 0; i < m->nseen;) {
		if (m->seen[i].alive) {
			i++;
			continue;
		}
		seen_free(&m->seen[i]);
		m->seen[i] = m->seen[--m->nseen];
	}
}

/*
 * Commit latency (commit_lat.h): trace while the module is there, once
 * per load; a failure (not root, no tracefs) is logged once per load and
 * leaves the histogram out.
 */
static void lat_poll(struct krep_metrics *m)
{
	struct stat st;
	char why[256];

	if (!m->up) {
		if (m->lat) {
			krep_lat_read(m->lat, &m->lat_hist);
			krep_lat_close(m->lat);
			m->lat = NULL;
		}
		m->lat_tried = false;
		return;
	}
	if (!m->lat && !m->lat_tried) {
		m->lat_tried = true;
		if (stat("/proc/self/ns/net", &st)) {
			m->log(LOG_WARNING, "metrics: no commit latency: /proc/self/ns/net: %s",
			       strerror(errno));
			return;
		}
		m->lat = krep_lat_open((unsigned int)st.st_ino, why,
				       sizeof(why));
		if (!m->lat) {
			m->log(LOG_WARNING, "metrics: no commit latency (krep_commit_latency_seconds): cannot trace krep_hw_advance: %s",
			       why);
			return;
		}
		m->lat_seen = true;
	}
	if (m->lat)
		krep_lat_read(m->lat, &m->lat_hist);
}

/* Take a snapshot, count ISR changes; m->up says whether it worked. */
static void metrics_poll(struct krep_metrics *m)
{
	struct krep_snap snap;

	m->next_poll = now_ms() + POLL_MS;
	m->polls++;
	/*
	 * krep_genl_open() would say "module not loaded" at every poll:
	 * krepd says it once (krepd.c), here it is krep_up 0
	 */
	if (!m->gl.sk && (access("/sys/module/krep", F_OK) ||
			  krep_genl_open(&m->gl)))
		goto down;
	m->gl.quiet = true;
	if (krep_snap_take(&m->gl, NULL, &snap)) {
		/* the module may have gone: reconnect next time */
		krep_genl_close(&m->gl);
		goto down;
	}
	isr_account(m, &snap);
	if (m->up)
		krep_snap_free(&m->snap);
	m->snap = snap;
	if (!m->up && m->polls > 1)
		m->log(LOG_NOTICE, "metrics: the krep broker can be read again");
	m->up = true;
	lat_poll(m);
	return;
down:
	m->poll_errors++;
	if (m->up) {
		krep_snap_free(&m->snap);
		m->log(LOG_WARNING, "metrics: cannot read the krep broker");
	}
	m->up = false;
	lat_poll(m);
}

/* ---- the exposition ---------------------------------------------------- */

static void label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void head(FILE *f, const char *name, const char *type,
		 const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void metric(FILE *f, const char *name, const char *type,
		   const char *help, uint64_t v)
{
	head(f, name, type, help);
	fprintf(f, "%s %" PRIu64 "\n", name, v);
}

static void part_gauge(FILE *f, const struct krep_snap *s, const char *name,
		       const char *help, bool lso)
{
	struct krep_part_health h;
	size_t i;

	head(f, name, "gauge", help);
	for (i = 0; i < s->nparts; i++) {
		krep_part_health(s, &s->parts[i], &h);
		if (lso ? !h.has_lso_lag : !h.has_hw_lag)
			continue;
		fprintf(f, "%s{topic=\"", name);
		label_value(f, s->parts[i].topic);
		fprintf(f, "\",partition=\"%u\"} %" PRIu64 "\n",
			s->parts[i].partition, lso ? h.lso_lag : h.hw_lag);
	}
}

/* ms as seconds, Prometheus' unit, with the ms kept */
static void seconds(FILE *f, uint64_t ms)
{
	fprintf(f, "%" PRIu64 ".%03" PRIu64 "\n", ms / 1000, ms % 1000);
}

/*
 * Per follower of each partition led here: its lag in offsets (leader
 * LEO - its LEO, while known) and the seconds since it was last caught up.
 */
static void follower_gauges(FILE *f, const struct krep_snap *s)
{
	static const struct {
		const char *name, *help;
	} g[2] = {
		{ "krep_follower_lag_offsets",
		  "Leader LEO - follower LEO, per follower of a partition led here (while its LEO is known)." },
		{ "krep_follower_caught_up_age_seconds",
		  "Seconds since a follower of a partition led here was last caught up with the leader." },
	};
	const struct krep_snap_remote *r;
	const struct krep_snap_part *p;
	size_t i, k;
	int n;

	for (n = 0; n < 2; n++) {
		head(f, g[n].name, "gauge", g[n].help);
		for (i = 0; i < s->nparts; i++) {
			p = &s->parts[i];
			if (p->role != KREP_ROLE_LEADER)
				continue;
			for (k = 0; k < p->nremotes; k++) {
				r = &p->remotes[k];
				if (n == 0 ? !r->has_leo || !p->has_leo :
					     !r->has_caught_up_age)
					continue;
				fprintf(f, "%s{topic=\"", g[n].name);
				label_value(f, p->topic);
				fprintf(f, "\",partition=\"%u\",follower=\"%u\"} ",
					p->partition, r->id);
				if (n == 0)
					fprintf(f, "%" PRIu64 "\n",
						p->leo > r->leo ? p->leo - r->leo : 0);
				else
					seconds(f, r->caught_up_age_ms);
			}
		}
	}
}

/* The HELP of each KREP_A_STATS counter, by its name in snap.c */
static const char *stat_help(const char *name)
{
	static const struct {
		const char *name, *help;
	} helps[] = {
		{ "records", "Records appended to logs this broker leads, since the broker was created." },
		{ "produce_bytes", "Record batch bytes copied into logs by produces, since the broker was created." },
		{ "follower_bytes", "Bytes a follower copied into its logs from its leaders (through a buffer), since the broker was created." },
		{ "rx_copy_bytes", "Bytes copied out of sockets, records into a follower's logs included, since the broker was created." },
		{ "tx_zerocopy_bytes", "Log bytes sent to followers and consumers by page reference, without a copy, since the broker was created." },
		{ "fetch_responses", "FETCH responses with records this broker sent as a leader, since the broker was created." },
	};
	size_t i;

	for (i = 0; i < sizeof(helps) / sizeof(helps[0]); i++)
		if (!strcmp(helps[i].name, name))
			return helps[i].help;
	return "A broker data-path counter (KREP_A_STATS) since the broker was created.";
}

static void render(struct krep_metrics *m, FILE *f)
{
	struct krep_ctl_figures cf;

	krep_metrics_render(f, m->up ? &m->snap : NULL, m->shrinks,
			    m->expands, m->lat_seen ? &m->lat_hist : NULL);
	if (m->ctl_fn) {
		memset(&cf, 0, sizeof(cf));
		m->ctl_fn(m->ctl_arg, &cf);
		krep_metrics_render_controller(f, &cf);
	}
}

const char *krep_ctl_elect_reason_name(enum krep_ctl_elect_reason r)
{
	static const char *const names[KREP_CTL_ELECT_REASONS] = {
		[KREP_CTL_ELECT_LEADER_FENCED]		= "leader_fenced",
		[KREP_CTL_ELECT_LEADER_RESTARTED]	= "leader_restarted",
		[KREP_CTL_ELECT_LEADER_LEFT_ISR]	= "leader_left_isr",
		[KREP_CTL_ELECT_OFFLINE]		= "offline",
		[KREP_CTL_ELECT_REPLICA_LOST]		= "replica_lost",
		[KREP_CTL_ELECT_PREFERRED]		= "preferred",
		[KREP_CTL_ELECT_LEADER_OFFLINE]		= "leader_offline",
	};

	return (unsigned int)r < KREP_CTL_ELECT_REASONS ? names[r] : "?";
}

/*
 * krepd --controller: whether it is the active controller, its epoch, its
 * decisions since krepd started (every reason's counter, at 0 too), and
 * while active the view's gauges. A standby has no view: no gauges.
 */
void krep_metrics_render_controller(FILE *f, const struct krep_ctl_figures *cf)
{
	int r;

	metric(f, "krep_controller_active", "gauge",
	       "1 on the active controller, 0 on a standby (krepd --controller --etcd waiting to be elected).",
	       cf->active);
	if (cf->has_epoch)
		metric(f, "krep_controller_epoch", "gauge",
		       "The controller epoch: this krepd's while active; on a standby, the active controller's as etcd tells it.",
		       cf->epoch);
	head(f, "krep_controller_elections_total", "counter",
	     "Leaders this krepd elected while active, since it started, by reason: the old leader fenced, restarted without its logs, out of the ISR, no leader (offline), its replica lost, or a preferred election.");
	for (r = 0; r < KREP_CTL_ELECT_REASONS; r++)
		fprintf(f, "krep_controller_elections_total{reason=\"%s\"} %" PRIu64 "\n",
			krep_ctl_elect_reason_name(r), cf->n.elections[r]);
	metric(f, "krep_controller_elr_elections_total", "counter",
	       "Of krep_controller_elections_total: leaders elected from the ELR (eligible leader replicas, KIP-966), the ISR having none live.",
	       cf->n.elr_elections);
	metric(f, "krep_controller_unclean_elections_total", "counter",
	       "Of krep_controller_elections_total: unclean elections, of a live replica outside ISR and ELR (topics with unclean_leader_election only).",
	       cf->n.unclean_elections);
	metric(f, "krep_controller_partitions_offlined_total", "counter",
	       "Partitions whose leader this krepd took away with no replica eligible to replace it (they went offline), since it started.",
	       cf->n.offline_transitions);
	metric(f, "krep_controller_isr_commits_total", "counter",
	       "ALTER_ISR requests of the leaders this krepd committed while active, since it started.",
	       cf->n.isr_commits);
	metric(f, "krep_controller_fencings_total", "counter",
	       "Brokers this krepd fenced while active, since it started.",
	       cf->n.fencings);
	if (!cf->has_view)
		return;
	metric(f, "krep_controller_brokers", "gauge",
	       "Brokers in the controller's configuration.", cf->brokers);
	metric(f, "krep_controller_fenced_brokers", "gauge",
	       "Brokers the controller holds fenced: out of every ISR, no leader.",
	       cf->fenced_brokers);
	metric(f, "krep_controller_unreachable_brokers", "gauge",
	       "Brokers the controller's last poll could not read.",
	       cf->unreachable_brokers);
	metric(f, "krep_controller_partitions", "gauge",
	       "Partitions in the controller's view.", cf->partitions);
	metric(f, "krep_controller_offline_partitions", "gauge",
	       "Partitions in the controller's view without a leader.",
	       cf->offline_partitions);
	metric(f, "krep_controller_under_replicated_partitions", "gauge",
	       "Partitions in the controller's view whose ISR is smaller than their replica list.",
	       cf->under_replicated_partitions);
	metric(f, "krep_controller_under_min_isr_partitions", "gauge",
	       "Partitions in the controller's view whose ISR is below min(min_insync_replicas, replicas).",
	       cf->under_min_isr_partitions);
}

void krep_metrics_controller(struct krep_metrics *m, krep_metrics_ctl_fn fn,
			     void *arg)
{
	m->ctl_fn = fn;
	m->ctl_arg = arg;
}

void krep_metrics_render(FILE *f, const struct krep_snap *s, uint64_t shrinks,
			 uint64_t expands, const struct krep_lat_hist *lat)
{
	struct krep_broker_health h;
	const char *name;
	char buf[96];
	unsigned int t;

	metric(f, "krep_up", "gauge",
	       "Whether krepd could read the krep broker of its namespace.",
	       s != NULL);
	metric(f, "krep_isr_shrinks_total", "counter",
	       "Followers removed from the ISR of partitions led here, seen since krepd started.",
	       shrinks);
	metric(f, "krep_isr_expands_total", "counter",
	       "Followers added to the ISR of partitions led here, seen since krepd started.",
	       expands);
	if (lat)
		krep_lat_render(f, lat);
	if (!s)
		return;
	krep_broker_health(s, &h);
	head(f, "krep_broker_info", "gauge",
	     "The broker of krepd's namespace: id and cluster id.");
	fputs("krep_broker_info{broker_id=\"", f);
	if (s->has_broker_id)
		fprintf(f, "%u", s->broker_id);
	fputs("\",cluster_id=\"", f);
	label_value(f, s->cluster_id ? s->cluster_id : "");
	fputs("\"} 1\n", f);
	metric(f, "krep_partitions", "gauge",
	       "Partition replicas hosted by this broker.", h.partitions);
	metric(f, "krep_leader_partitions", "gauge",
	       "Partitions led by this broker.", h.leader_partitions);
	metric(f, "krep_under_replicated_partitions", "gauge",
	       "Partitions led here whose ISR is smaller than their replica list.",
	       h.under_replicated);
	metric(f, "krep_under_min_isr_partitions", "gauge",
	       "Partitions led here whose ISR is below min(min_insync_replicas, replicas): acks=all fails.",
	       h.under_min_isr);
	metric(f, "krep_at_min_isr_partitions", "gauge",
	       "Partitions led here whose ISR is exactly min(min_insync_replicas, replicas).",
	       h.at_min_isr);
	metric(f, "krep_offline_partitions", "gauge",
	       "Local replicas offline, without a leader, or whose leader's peer is down.",
	       h.offline);
	metric(f, "krep_max_follower_lag_offsets", "gauge",
	       "The largest leader LEO - follower LEO over the followers of partitions led here.",
	       h.max_follower_lag);
	metric(f, "krep_max_follower_lag_ms", "gauge",
	       "The longest time since a follower of a partition led here was last caught up, in ms (krep_max_follower_lag_seconds in Prometheus' unit).",
	       h.max_follower_lag_ms);
	head(f, "krep_max_follower_lag_seconds", "gauge",
	     "The longest time since a follower of a partition led here was last caught up, in seconds.");
	fputs("krep_max_follower_lag_seconds ", f);
	seconds(f, h.max_follower_lag_ms);
	if (s->has_log_memory) {
		metric(f, "krep_log_memory_bytes", "gauge",
		       "Bytes of log pages this broker holds, all partitions.",
		       s->log_memory);
		metric(f, "krep_log_memory_max_bytes", "gauge",
		       "The broker's log memory cap (log_memory_max): appends past it are refused.",
		       s->log_memory_max);
	}
	part_gauge(f, s, "krep_partition_hw_lag",
		   "LEO - HW of a local replica: records not yet committed.",
		   false);
	part_gauge(f, s, "krep_partition_lso_lag",
		   "HW - LSO of a local replica: committed records held back by open transactions.",
		   true);
	follower_gauges(f, s);
	for (t = 1; t <= KREP_A_STAT_MAX; t++) {
		if (!s->has_stat[t])
			continue;
		name = krep_snap_stat_name(t);
		if (!name)
			continue;
		snprintf(buf, sizeof(buf), "krep_%s_total", name);
		metric(f, buf, "counter", stat_help(name), s->stat[t]);
	}
}

/* ---- HTTP -------------------------------------------------------------- */

static void client_close(struct client *c)
{
	close(c->fd);
	free(c->out);
	c->out = NULL;
	c->fd = -1;
}

static int respond(struct krep_metrics *m, struct client *c, int status,
		   const char *reason, bool with_body, const char *extra)
{
	char *body = NULL, *out = NULL;
	size_t blen = 0, olen = 0;
	FILE *f;

	f = open_memstream(&body, &blen);
	if (!f)
		return -ENOMEM;
	if (status == 200)
		render(m, f);
	else
		fprintf(f, "%d %s\n", status, reason);
	if (fclose(f)) {
		free(body);
		return -ENOMEM;
	}
	f = open_memstream(&out, &olen);
	if (!f) {
		free(body);
		return -ENOMEM;
	}
	fprintf(f, "HTTP/1.0 %d %s\r\n"
		"Server: krepd\r\n"
		"Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
		"Content-Length: %zu\r\n"
		"%s"
		"Connection: close\r\n\r\n", status, reason, blen,
		extra ? extra : "");
	if (with_body)
		fwrite(body, 1, blen, f);
	free(body);
	if (fclose(f)) {
		free(out);
		return -ENOMEM;
	}
	c->out = out;
	c->outlen = olen;
	c->outoff = 0;
	return 0;
}

/* The request head is in: "METHOD SP PATH SP VERSION". */
static int request(struct krep_metrics *m, struct client *c)
{
	char method[16], path[256], version[16];
	bool get, headm;
	char *q;

	c->in[c->inlen] = '\0';
	if (sscanf(c->in, "%15s %255s %15s", method, path, version) != 3 ||
	    strncmp(version, "HTTP/", 5))
		return respond(m, c, 400, "Bad Request", true, NULL);
	get = !strcmp(method, "GET");
	headm = !strcmp(method, "HEAD");
	if (!get && !headm)
		return respond(m, c, 405, "Method Not Allowed", true,
			       "Allow: GET, HEAD\r\n");
	q = strchr(path, '?');
	if (q)
		*q = '\0';
	if (strcmp(path, "/metrics"))
		return respond(m, c, 404, "Not Found (try /metrics)", get,
			       NULL);
	metrics_poll(m);
	return respond(m, c, 200, "OK", get, NULL);
}

static void client_read(struct krep_metrics *m, struct client *c)
{
	ssize_t n;

	n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - 1 - c->inlen, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(c);
		return;
	}
	c->inlen += n;
	c->in[c->inlen] = '\0';
	if (strstr(c->in, "\r\n\r\n") || strstr(c->in, "\n\n")) {
		if (request(m, c))
			client_close(c);
		return;
	}
	if (c->inlen == sizeof(c->in) - 1 &&
	    respond(m, c, 431, "Request Header Fields Too Large", true, NULL))
		client_close(c);
}

static void client_write(struct client *c)
{
	ssize_t n;

	n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
		 MSG_NOSIGNAL);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		client_close(c);
		return;
	}
	c->outoff += n;
	if (c->outoff == c->outlen) {
		shutdown(c->fd, SHUT_WR);
		client_close(c);
	}
}

static void accept_all(struct krep_metrics *m)
{
	struct client *c;
	int fd, i;

	for (;;) {
		fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				m->log(LOG_WARNING, "metrics: accept: %s",
				       strerror(errno));
			return;
		}
		c = NULL;
		for (i = 0; i < KREP_METRICS_CLIENTS; i++) {
			if (m->clients[i].fd < 0) {
				c = &m->clients[i];
				break;
			}
		}
		if (!c) {
			close(fd);	/* busy: the scraper retries */
			continue;
		}
		c->fd = fd;
		c->inlen = 0;
		c->deadline = now_ms() + CLIENT_MS;
	}
}

/* ---- the poll() loop's side -------------------------------------------- */

int krep_metrics_pollfds(struct krep_metrics *m, struct pollfd *pfd)
{
	int i, n = 0;

	pfd[n].fd = m->lfd;
	pfd[n].events = POLLIN;
	pfd[n].revents = 0;
	m->pfd_client[n++] = -1;
	for (i = 0; i < KREP_METRICS_CLIENTS; i++) {
		struct client *c = &m->clients[i];

		if (c->fd < 0)
			continue;
		pfd[n].fd = c->fd;
		pfd[n].events = c->out ? POLLOUT : POLLIN;
		pfd[n].revents = 0;
		m->pfd_client[n++] = i;
	}
	m->npfd = n;
	return n;
}

void krep_metrics_poke(struct krep_metrics *m)
{
	m->next_poll = 0;
}

int krep_metrics_timeout(struct krep_metrics *m)
{
	uint64_t now = now_ms(), next = m->next_poll;
	int i;

	for (i = 0; i < KREP_METRICS_CLIENTS; i++)
		if (m->clients[i].fd >= 0 && m->clients[i].deadline < next)
			next = m->clients[i].deadline;
	return next <= now ? 0 : (int)(next - now);
}

void krep_metrics_handle(struct krep_metrics *m, const struct pollfd *pfd,
			 int n)
{
	uint64_t now;
	int i;

	for (i = 0; i < n && i < m->npfd; i++) {
		struct client *c;

		if (!pfd[i].revents)
			continue;
		if (m->pfd_client[i] < 0) {
			accept_all(m);
			continue;
		}
		c = &m->clients[m->pfd_client[i]];
		if (c->fd != pfd[i].fd)
			continue;
		if (c->out)
			client_write(c);
		else
			client_read(m, c);
	}
	now = now_ms();
	for (i = 0; i < KREP_METRICS_CLIENTS; i++)
		if (m->clients[i].fd >= 0 && m->clients[i].deadline <= now)
			client_close(&m->clients[i]);
	if (now >= m->next_poll)
		metrics_poll(m);
}

struct krep_metrics *krep_metrics_open(const char *addr,
				       krep_metrics_log_fn log)
{
	struct sockaddr_storage ss = { 0 };
	struct krep_metrics *m;
	struct krep_ep ep;
	const char *why = NULL;
	socklen_t len;
	int one = 1, i;

	if (krep_ep_parse(addr, &ep, &why)) {
		fprintf(stderr, "%s: --metrics '%s': %s (A.B.C.D:PORT or [IPV6]:PORT)\n",
			krep_prog, addr, why ? why : "invalid address");
		return NULL;
	}
	if (ep.family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(ep.port);
		sin->sin_addr = ep.addr.v4;
		len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(ep.port);
		sin6->sin6_addr = ep.addr.v6;
		len = sizeof(*sin6);
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return NULL;
	}
	m->log = log;
	for (i = 0; i < KREP_METRICS_CLIENTS; i++)
		m->clients[i].fd = -1;
	m->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			0);
	if (m->lfd < 0 ||
	    setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(m->lfd, (struct sockaddr *)&ss, len) ||
	    listen(m->lfd, 16)) {
		fprintf(stderr, "%s: --metrics %s: %s\n", krep_prog, addr,
			strerror(errno));
		if (m->lfd >= 0)
			close(m->lfd);
		free(m);
		return NULL;
	}
	metrics_poll(m);
	return m;
}

void krep_metrics_close(struct krep_metrics *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < KREP_METRICS_CLIENTS; i++)
		if (m->clients[i].fd >= 0)
			client_close(&m->clients[i]);
	close(m->lfd);
	krep_lat_close(m->lat);
	if (m->gl.sk)
		krep_genl_close(&m->gl);
	if (m->up)
		krep_snap_free(&m->snap);
	for (i = 0; i < m->nseen; i++)
		seen_free(&m->seen[i]);
	free(m->seen);
	free(m);
}
