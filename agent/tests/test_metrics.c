// SPDX-License-Identifier: GPL-2.0
/*
 * Host-only test of krepd --metrics' exposition (krep_metrics_render()):
 * a broker snapshot built by hand is rendered, and the text is checked
 * against the Prometheus text format's rules (version 0.0.4) by a small
 * parser here: metric and label names, one HELP and one TYPE per family
 * before its samples, families not interleaved, label values quoted and
 * escaped, values that parse, no sample twice; and against the naming
 * conventions: counters end in _total, durations are in seconds (the one
 * exception, krep_max_follower_lag_ms, is kept for existing dashboards
 * beside krep_max_follower_lag_seconds). Then the values: per-follower
 * lags, seconds, each counter's own HELP, and krep_up 0 without a broker;
 * the controller's families (krepd --controller --metrics), active and
 * standby. With --check FILE it checks a scraped exposition instead
 * (tests/test_ctl.sh, test_etcd.sh).
 * Output is TAP; the exit status is 1 if any check failed.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commit_lat.h"
#include "metrics.h"
#include "snap.h"
#include "tap.h"

#define FAMILIES_MAX	128

struct family {
	char name[96];
	char type[16];
	bool help, samples_done;
};

static bool name_ok(const char *s, size_t n, bool colon)
{
	size_t i;

	if (!n || isdigit((unsigned char)s[0]))
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' &&
		    !(colon && s[i] == ':'))
			return false;
	return true;
}

static struct family *family(struct family *fs, int *nf, const char *name,
			     size_t n)
{
	int i;

	for (i = 0; i < *nf; i++)
		if (strlen(fs[i].name) == n && !strncmp(fs[i].name, name, n))
			return &fs[i];
	if (*nf == FAMILIES_MAX || n >= sizeof(fs[0].name))
		return NULL;
	memset(&fs[*nf], 0, sizeof(fs[0]));
	memcpy(fs[*nf].name, name, n);
	return &fs[(*nf)++];
}

/* The labels of a sample: {name="value",...}; @p after the '{'. */
static const char *labels_parse(const char *p, char *why, size_t size)
{
	const char *n;

	while (*p != '}') {
		n = p;
		while (isalnum((unsigned char)*p) || *p == '_')
			p++;
		if (!name_ok(n, p - n, false) || *p++ != '=' || *p++ != '"') {
			snprintf(why, size, "bad label at '%.100s'", n);
			return NULL;
		}
		while (*p && *p != '"') {
			if (*p == '\\' && !strchr("\\\"n", p[1])) {
				snprintf(why, size, "bad escape in '%.100s'", n);
				return NULL;
			}
			p += *p == '\\' ? 2 : 1;
		}
		if (*p++ != '"') {
			snprintf(why, size, "unterminated label value at '%.100s'", n);
			return NULL;
		}
		if (*p == ',')
			p++;
		else if (*p != '}') {
			snprintf(why, size, "expected ',' or '}' at '%.100s'", p);
			return NULL;
		}
	}
	return p + 1;
}

/* The histogram family a NAME_bucket, NAME_sum or NAME_count sample is of. */
static struct family *histogram_of(struct family *fs, int nf, const char *n,
				   size_t len)
{
	static const char *const sfx[] = { "_bucket", "_sum", "_count" };
	size_t i, k;
	int j;

	for (i = 0; i < 3; i++) {
		k = strlen(sfx[i]);
		if (len <= k || strncmp(n + len - k, sfx[i], k))
			continue;
		for (j = 0; j < nf; j++)
			if (!strcmp(fs[j].type, "histogram") &&
			    strlen(fs[j].name) == len - k &&
			    !strncmp(fs[j].name, n, len - k))
				return &fs[j];
	}
	return NULL;
}

/*
 * The histogram @name in @text: its buckets' le ascending and counts
 * non-decreasing, the last le="+Inf" and equal to _count, a _sum. 0, or
 * -1 with @why.
 */
static int histogram_check(const char *text, const char *name,
			   uint64_t *count, char *why, size_t size)
{
	char key[160];
	const char *p = text;
	double le, prev_le = -1;
	unsigned long long v, prev = 0;
	int nb = 0;
	bool inf = false, sum = false, cnt = false;

	snprintf(key, sizeof(key), "%s_bucket{le=\"", name);
	while ((p = strstr(p, key))) {
		if (p != text && p[-1] != '\n') {
			p++;
			continue;
		}
		p += strlen(key);
		if (inf) {
			snprintf(why, size, "a bucket after +Inf");
			return -1;
		}
		if (!strncmp(p, "+Inf\"} ", 7)) {
			inf = true;
			le = 0;
			p += 7;
		} else if (sscanf(p, "%lf\"} ", &le) != 1 || le <= prev_le) {
			snprintf(why, size, "le not ascending at %.40s", p);
			return -1;
		} else {
			p = strchr(p, ' ') + 1;
		}
		if (sscanf(p, "%llu", &v) != 1 || v < prev) {
			snprintf(why, size, "a bucket count that falls at %.40s", p);
			return -1;
		}
		prev = v;
		prev_le = le;
		nb++;
	}
	snprintf(key, sizeof(key), "\n%s_sum ", name);
	sum = strstr(text, key) != NULL;
	snprintf(key, sizeof(key), "\n%s_count ", name);
	p = strstr(text, key);
	cnt = p && sscanf(p + strlen(key), "%llu", &v) == 1;
	if (!nb || !inf || !sum || !cnt || v != prev) {
		snprintf(why, size, "%d buckets, +Inf %s, _sum %s, _count %s%s",
			 nb, inf ? "yes" : "no", sum ? "yes" : "no",
			 cnt ? "yes" : "no", cnt && v != prev ?
			 " differing from +Inf" : "");
		return -1;
	}
	*count = v;
	return 0;
}

/*
 * Check @text; 0, or -1 with @why. Also the conventions: counters end in
 * _total, no _ms but the one kept name.
 */
static int exposition_check(const char *text, char *why, size_t size)
{
	struct family fs[FAMILIES_MAX], *f, *last = NULL;
	char line[1024], seen[256][160];
	const char *p, *n, *v;
	int nf = 0, nseen = 0, i;
	size_t len;
	char *end;

	while (*text) {
		len = strcspn(text, "\n");
		if (len >= sizeof(line) || !text[len]) {
			snprintf(why, size, "a line too long or without its newline");
			return -1;
		}
		memcpy(line, text, len);
		line[len] = '\0';
		text += len + 1;
		if (!strncmp(line, "# HELP ", 7) || !strncmp(line, "# TYPE ", 7)) {
			n = line + 7;
			p = strchr(n, ' ');
			if (!p || !name_ok(n, p - n, true) ||
			    !(f = family(fs, &nf, n, p - n))) {
				snprintf(why, size, "bad metric name: %.200s", line);
				return -1;
			}
			if (f->samples_done || (line[2] == 'H' ? f->help : f->type[0])) {
				snprintf(why, size, "%s twice or after its samples: %.200s",
					 line[2] == 'H' ? "HELP" : "TYPE", line);
				return -1;
			}
			if (line[2] == 'H') {
				f->help = p[1] != '\0';
			} else {
				if (strcmp(p + 1, "counter") && strcmp(p + 1, "gauge") &&
				    strcmp(p + 1, "histogram") &&
				    strcmp(p + 1, "summary") && strcmp(p + 1, "untyped")) {
					snprintf(why, size, "bad type: %.200s", line);
					return -1;
				}
				snprintf(f->type, sizeof(f->type), "%s", p + 1);
			}
			continue;
		}
		if (line[0] == '#' || !line[0])
			continue;
		n = line;
		p = n;
		while (isalnum((unsigned char)*p) || *p == '_' || *p == ':')
			p++;
		f = histogram_of(fs, nf, n, p - n);
		if (!name_ok(n, p - n, true) ||
		    (!f && !(f = family(fs, &nf, n, p - n)))) {
			snprintf(why, size, "bad sample name: %.200s", line);
			return -1;
		}
		if (!f->type[0] || !f->help) {
			snprintf(why, size, "a sample before its TYPE and HELP: %.200s", line);
			return -1;
		}
		if (f->samples_done || (last && last != f && !last->samples_done)) {
			if (last && last != f)
				last->samples_done = true;
			if (f->samples_done) {
				snprintf(why, size, "family %s interleaved: %.200s",
					 f->name, line);
				return -1;
			}
		}
		last = f;
		if (*p == '{') {
			p = labels_parse(p + 1, why, size);
			if (!p)
				return -1;
		}
		if (*p++ != ' ') {
			snprintf(why, size, "no space before the value: %.200s", line);
			return -1;
		}
		v = p;
		strtod(v, &end);
		if (end == v || *end) {
			snprintf(why, size, "bad value: %.200s", line);
			return -1;
		}
		for (i = 0; i < nseen; i++)
			if (strlen(seen[i]) == (size_t)(v - 1 - line) &&
			    !strncmp(seen[i], line, v - 1 - line)) {
				snprintf(why, size, "sample twice: %.200s", line);
				return -1;
			}
		if (nseen < 256 && (size_t)(v - 1 - line) < sizeof(seen[0]))
			snprintf(seen[nseen++], sizeof(seen[0]), "%.*s",
				 (int)(v - 1 - line), line);
	}
	for (i = 0; i < nf; i++) {
		len = strlen(fs[i].name);
		if (!strcmp(fs[i].type, "counter") &&
		    (len < 6 || strcmp(fs[i].name + len - 6, "_total"))) {
			snprintf(why, size, "counter %s does not end in _total",
				 fs[i].name);
			return -1;
		}
		if (strstr(fs[i].name, "_ms") &&
		    strcmp(fs[i].name, "krep_max_follower_lag_ms")) {
			snprintf(why, size, "%s: a duration not in seconds",
				 fs[i].name);
			return -1;
		}
	}
	return 0;
}

static char *render(const struct krep_snap *s,
		    const struct krep_lat_hist *lat)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	krep_metrics_render(f, s, 3, 2, lat);
	fclose(f);
	return buf;
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p = text;

	while ((p = strstr(p, line))) {
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return true;
		p += n;
	}
	return false;
}

/*
 * test_metrics --check FILE: check an exposition scraped from a krepd
 * (the shell tests' krepd --controller --metrics) by the same rules;
 * exit 0, or 1 with why.
 */
static int check_file(const char *path)
{
	char why[512] = "", *text = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "r"), *m;
	int ch;

	if (!f) {
		fprintf(stderr, "test_metrics: %s: %s\n", path, strerror(errno));
		return 2;
	}
	m = open_memstream(&text, &len);
	if (!m) {
		fclose(f);
		return 2;
	}
	while ((ch = getc(f)) != EOF)
		putc(ch, m);
	fclose(f);
	fclose(m);
	if (!len || exposition_check(text, why, sizeof(why))) {
		fprintf(stderr, "test_metrics: %s: %s\n", path,
			len ? why : "empty");
		free(text);
		return 1;
	}
	free(text);
	return 0;
}

static char *render_ctl(const struct krep_snap *s,
			const struct krep_ctl_figures *cf)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	krep_metrics_render(f, s, 0, 0, NULL);
	krep_metrics_render_controller(f, cf);
	fclose(f);
	return buf;
}

/* The controller's families: active with its view, and a standby. */
static void controller_checks(void)
{
	struct krep_ctl_figures cf = {
		.active = true, .has_epoch = true, .epoch = 7,
		.n = { .elections = { [KREP_CTL_ELECT_LEADER_FENCED] = 3,
				      [KREP_CTL_ELECT_PREFERRED] = 2 },
		       .elr_elections = 1, .fencings = 4, .isr_commits = 9 },
		.has_view = true, .brokers = 3, .fenced_brokers = 1,
		.unreachable_brokers = 2, .partitions = 5,
		.offline_partitions = 1, .under_replicated_partitions = 2,
		.under_min_isr_partitions = 1,
	};
	char why[512] = "", *text;
	int r;

	text = render_ctl(NULL, &cf);
	CHECK(text && !exposition_check(text, why, sizeof(why)),
	      "the active controller's exposition follows the text format and the naming conventions%s%s",
	      why[0] ? ": " : "", why);
	CHECK(text && has_line(text, "krep_controller_active 1") &&
	      has_line(text, "krep_controller_epoch 7") &&
	      has_line(text, "krep_controller_elections_total{reason=\"leader_fenced\"} 3") &&
	      has_line(text, "krep_controller_elections_total{reason=\"preferred\"} 2") &&
	      has_line(text, "krep_controller_elections_total{reason=\"leader_restarted\"} 0") &&
	      has_line(text, "krep_controller_elr_elections_total 1") &&
	      has_line(text, "krep_controller_unclean_elections_total 0") &&
	      has_line(text, "krep_controller_fencings_total 4") &&
	      has_line(text, "krep_controller_isr_commits_total 9") &&
	      has_line(text, "krep_controller_fenced_brokers 1") &&
	      has_line(text, "krep_controller_offline_partitions 1") &&
	      has_line(text, "krep_controller_under_min_isr_partitions 1") &&
	      strstr(text, "# TYPE krep_controller_elections_total counter\n") &&
	      strstr(text, "# TYPE krep_controller_fenced_brokers gauge\n"),
	      "active: krep_controller_active 1, its epoch, the counters (every reason, 0 too), the view's gauges");
	for (r = 0; text && r < KREP_CTL_ELECT_REASONS; r++)
		if (!strstr(text, krep_ctl_elect_reason_name(r)))
			break;
	CHECK(r == KREP_CTL_ELECT_REASONS &&
	      !strcmp(krep_ctl_elect_reason_name(KREP_CTL_ELECT_REASONS), "?"),
	      "every election reason has a label value");
	free(text);

	memset(&cf, 0, sizeof(cf));
	cf.n.elections[KREP_CTL_ELECT_OFFLINE] = 1;	/* from an earlier term */
	text = render_ctl(NULL, &cf);
	CHECK(text && !exposition_check(text, why, sizeof(why)) &&
	      has_line(text, "krep_controller_active 0") &&
	      !strstr(text, "krep_controller_epoch") &&
	      has_line(text, "krep_controller_elections_total{reason=\"offline\"} 1") &&
	      !strstr(text, "krep_controller_fenced_brokers") &&
	      !strstr(text, "krep_controller_offline_partitions"),
	      "a standby: active 0, no epoch while none is known, its counters, no view gauges%s%s",
	      why[0] ? ": " : "", why);
	free(text);
}

int main(int argc, char **argv)
{
	static uint32_t ar[] = { 1, 2, 3 }, isr[] = { 1, 2 }, ar1[] = { 2, 1, 3 };
	struct krep_snap_remote rem[2] = {
		{ .id = 2, .has_leo = true, .leo = 95, .has_caught_up_age = true,
		  .caught_up_age_ms = 1500, .in_isr = 1 },
		{ .id = 3, .has_caught_up_age = true, .caught_up_age_ms = 42000,
		  .in_isr = 0 },
	};
	struct krep_snap_topic topic = {
		.name = "orders", .partitions = 2, .rf = 3, .has_min_isr = true,
		.min_isr = 2,
	};
	struct krep_snap_part parts[2] = {
		{ .topic = "orders", .partition = 0, .role = KREP_ROLE_LEADER,
		  .has_leader = true, .leader = 1, .has_replicas = true,
		  .nreplicas = 3, .replicas = ar, .has_isr = true, .nisr = 2,
		  .isr = isr, .has_leo = true, .leo = 100, .has_hw = true,
		  .hw = 90, .has_lso = true, .lso = 90, .has_remotes = true,
		  .nremotes = 2, .remotes = rem },
		{ .topic = "orders", .partition = 1, .role = KREP_ROLE_FOLLOWER,
		  .has_leader = true, .leader = 2, .has_replicas = true,
		  .nreplicas = 3, .replicas = ar1, .has_isr = true, .nisr = 3,
		  .isr = ar1, .has_leo = true, .leo = 7, .has_hw = true,
		  .hw = 7, .has_lso = true, .lso = 7 },
	};
	struct krep_snap s = {
		.has_broker_id = true, .broker_id = 1, .cluster_id = "c\"1",
		.ntopics = 1, .topics = &topic, .nparts = 2, .parts = parts,
		.has_log_memory = true, .log_memory = 4096,
		.log_memory_max = 1 << 20, .has_stats = true,
	};
	char why[512] = "", *text;
	struct krep_lat_hist lat;
	uint64_t n;

	if (argc == 3 && !strcmp(argv[1], "--check"))
		return check_file(argv[2]);
	if (argc != 1) {
		fprintf(stderr, "usage: test_metrics [--check FILE]\n");
		return 2;
	}

	s.has_stat[KREP_A_STAT_RECORDS] = true;
	s.stat[KREP_A_STAT_RECORDS] = 10;
	s.has_stat[KREP_A_STAT_TX_ZEROCOPY_BYTES] = true;
	s.stat[KREP_A_STAT_TX_ZEROCOPY_BYTES] = 123456;

	printf("TAP version 13\n");
	text = render(&s, NULL);
	CHECK(text && !exposition_check(text, why, sizeof(why)),
	      "a broker's exposition follows the text format and the naming conventions%s%s",
	      text ? ": " : "", text ? why : "");
	CHECK(text && has_line(text, "krep_up 1") &&
	      has_line(text, "krep_isr_shrinks_total 3") &&
	      has_line(text, "krep_broker_info{broker_id=\"1\",cluster_id=\"c\\\"1\"} 1"),
	      "krep_up 1, the ISR counters, an escaped label value");
	CHECK(text && has_line(text, "krep_follower_lag_offsets{topic=\"orders\",partition=\"0\",follower=\"2\"} 5") &&
	      !strstr(text, "krep_follower_lag_offsets{topic=\"orders\",partition=\"0\",follower=\"3\"}") &&
	      !strstr(text, "partition=\"1\",follower="),
	      "per-follower lag in offsets, only while the follower's LEO is known, only where led");
	CHECK(text && has_line(text, "krep_follower_caught_up_age_seconds{topic=\"orders\",partition=\"0\",follower=\"2\"} 1.500") &&
	      has_line(text, "krep_follower_caught_up_age_seconds{topic=\"orders\",partition=\"0\",follower=\"3\"} 42.000") &&
	      has_line(text, "krep_max_follower_lag_seconds 42.000") &&
	      has_line(text, "krep_max_follower_lag_ms 42000"),
	      "durations in seconds (and the kept _ms gauge)");
	CHECK(text && has_line(text, "krep_records_total 10") &&
	      strstr(text, "# HELP krep_records_total Records appended") &&
	      strstr(text, "# HELP krep_tx_zerocopy_bytes_total Log bytes sent"),
	      "each data-path counter with a HELP of its own");
	CHECK(text && has_line(text, "krep_under_replicated_partitions 1") &&
	      has_line(text, "krep_at_min_isr_partitions 1") &&
	      has_line(text, "krep_partition_hw_lag{topic=\"orders\",partition=\"0\"} 10"),
	      "the health gauges of the snapshot");
	free(text);

	text = render(NULL, NULL);
	CHECK(text && !exposition_check(text, why, sizeof(why)) &&
	      !strcmp(text, "# HELP krep_up Whether krepd could read the krep broker of its namespace.\n"
			    "# TYPE krep_up gauge\nkrep_up 0\n"
			    "# HELP krep_isr_shrinks_total Followers removed from the ISR of partitions led here, seen since krepd started.\n"
			    "# TYPE krep_isr_shrinks_total counter\nkrep_isr_shrinks_total 3\n"
			    "# HELP krep_isr_expands_total Followers added to the ISR of partitions led here, seen since krepd started.\n"
			    "# TYPE krep_isr_expands_total counter\nkrep_isr_expands_total 2\n"),
	      "without a broker: krep_up 0 and the ISR counters only");
	free(text);

	/* the commit latency histogram, from trace_pipe lines */
	memset(&lat, 0, sizeof(lat));
	krep_lat_line("  kworker/0:1-42      [000] ..... 812.345678: krep_hw_advance: netns=4026531840 broker=1 orders-0 hw 10 -> 20 epoch=0 isr=3 oldest_append_ns=812345001234",
		      &lat);	/* 676.766 us: (512, 1024] */
	krep_lat_line("krepctl-7 [001] d..1. 5.000003: krep_hw_advance: netns=1 broker=2 a-1 hw 0 -> 1 epoch=0 isr=1 oldest_append_ns=5000002500",
		      &lat);	/* 0.5 us: bucket 0 */
	krep_lat_line("krepctl-7 [001] d..1. 5.000003: krep_hw_advance: netns=1 broker=2 a-1 hw 0 -> 1 epoch=0 isr=1 oldest_append_ns=-1",
		      &lat);	/* a follower's: none */
	krep_lat_line("CPU:1 [LOST 7 EVENTS]", &lat);
	krep_lat_line("krepctl-7 [001] d..1. 5.000003: krep_leo_update: netns=1 broker=2 a-1 replica=2 0 -> 1",
		      &lat);
	CHECK(lat.count == 2 && lat.bucket[10] == 1 && lat.bucket[0] == 1 &&
	      lat.sum_ns == 676766 + 500 && lat.lost == 7,
	      "trace_pipe lines: 2 commits (676.766 us, 0.5 us), a follower's advance and another event skipped, 7 lost (count %llu, sum %llu ns)",
	      (unsigned long long)lat.count, (unsigned long long)lat.sum_ns);
	krep_lat_add(&lat, 2000);		/* 2 us: (1, 2] */
	krep_lat_add(&lat, 3 * 1000000000ULL);	/* 3 s */
	krep_lat_add(&lat, 5000ULL * 1000000000ULL); /* past 2^30 us: +Inf only */
	text = render(&s, &lat);
	CHECK(text && !exposition_check(text, why, sizeof(why)) &&
	      !histogram_check(text, "krep_commit_latency_seconds", &n, why,
			       sizeof(why)) && n == 5,
	      "krep_commit_latency_seconds is a histogram by the text format's rules, 5 commits%s%s",
	      why[0] ? ": " : "", why);
	CHECK(text && has_line(text, "krep_commit_latency_seconds_bucket{le=\"0.000001\"} 1") &&
	      has_line(text, "krep_commit_latency_seconds_bucket{le=\"0.000002\"} 2") &&
	      has_line(text, "krep_commit_latency_seconds_bucket{le=\"0.000512\"} 2") &&
	      has_line(text, "krep_commit_latency_seconds_bucket{le=\"0.001024\"} 3") &&
	      has_line(text, "krep_commit_latency_seconds_bucket{le=\"4.194304\"} 4") &&
	      has_line(text, "krep_commit_latency_seconds_bucket{le=\"1073.741824\"} 4") &&
	      has_line(text, "krep_commit_latency_seconds_bucket{le=\"+Inf\"} 5") &&
	      has_line(text, "krep_commit_latency_seconds_sum 5003.000679266") &&
	      has_line(text, "krep_commit_latency_seconds_count 5") &&
	      has_line(text, "krep_commit_latency_events_lost_total 7"),
	      "its buckets (watch's, in seconds), _sum in seconds, _count, and the lost events");
	free(text);
	text = render(NULL, &lat);
	CHECK(text && !exposition_check(text, why, sizeof(why)) &&
	      has_line(text, "krep_up 0") &&
	      has_line(text, "krep_commit_latency_seconds_count 5"),
	      "without a broker the histogram stays (it counts since krepd started)");
	free(text);
	/* ... and the checker refuses broken ones */
	CHECK(histogram_check("h_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n", "h", &n, why, sizeof(why)) &&
	      histogram_check("h_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 1\nh_count 2\n", "h", &n, why, sizeof(why)) &&
	      histogram_check("h_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n", "h", &n, why, sizeof(why)),
	      "the histogram checker refuses a falling count, +Inf != _count, le not ascending");
	why[0] = '\0';

	/* the checker can fail */
	CHECK(exposition_check("krep_x 1\n", why, sizeof(why)) &&
	      exposition_check("# HELP krep_a a\n# TYPE krep_a counter\nkrep_a 1\n", why, sizeof(why)) &&
	      exposition_check("# HELP krep_t_ms t\n# TYPE krep_t_ms gauge\nkrep_t_ms 1\n", why, sizeof(why)) &&
	      exposition_check("# HELP a a\n# TYPE a gauge\na{x=\"1} 1\n", why, sizeof(why)) &&
	      exposition_check("# HELP a a\n# TYPE a gauge\n# HELP b b\n# TYPE b gauge\na 1\nb 1\na{l=\"2\"} 1\n", why, sizeof(why)) &&
	      exposition_check("# HELP a a\n# TYPE a gauge\na 1\na 2\n", why, sizeof(why)) &&
	      exposition_check("# HELP a a\n# TYPE a gauge\na one\n", why, sizeof(why)),
	      "the checker refuses a sample without TYPE, a counter without _total, _ms, a bad label, interleaving, a sample twice, a bad value");
	controller_checks();
	printf("1..%d\n", tap_ntests);
	printf("# %d passed, %d failed\n", tap_ntests - tap_nfailed, tap_nfailed);
	return tap_nfailed ? 1 : 0;
}
