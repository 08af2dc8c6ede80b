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
 * lags, seconds, each counter's own HELP, and krep_up 0 without a broker.
 * Output is TAP; the exit status is 1 if any check failed.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

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
		if (!name_ok(n, p - n, true) || !(f = family(fs, &nf, n, p - n))) {
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

static char *render(const struct krep_snap *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	krep_metrics_render(f, s, 3, 2);
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

int main(void)
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

	s.has_stat[KREP_A_STAT_RECORDS] = true;
	s.stat[KREP_A_STAT_RECORDS] = 10;
	s.has_stat[KREP_A_STAT_TX_ZEROCOPY_BYTES] = true;
	s.stat[KREP_A_STAT_TX_ZEROCOPY_BYTES] = 123456;

	printf("TAP version 13\n");
	text = render(&s);
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

	text = render(NULL);
	CHECK(text && !exposition_check(text, why, sizeof(why)) &&
	      !strcmp(text, "# HELP krep_up Whether krepd could read the krep broker of its namespace.\n"
			    "# TYPE krep_up gauge\nkrep_up 0\n"
			    "# HELP krep_isr_shrinks_total Followers removed from the ISR of partitions led here, seen since krepd started.\n"
			    "# TYPE krep_isr_shrinks_total counter\nkrep_isr_shrinks_total 3\n"
			    "# HELP krep_isr_expands_total Followers added to the ISR of partitions led here, seen since krepd started.\n"
			    "# TYPE krep_isr_expands_total counter\nkrep_isr_expands_total 2\n"),
	      "without a broker: krep_up 0 and the ISR counters only");
	free(text);

	/* the checker can fail */
	CHECK(exposition_check("krep_x 1\n", why, sizeof(why)) &&
	      exposition_check("# HELP krep_a a\n# TYPE krep_a counter\nkrep_a 1\n", why, sizeof(why)) &&
	      exposition_check("# HELP krep_t_ms t\n# TYPE krep_t_ms gauge\nkrep_t_ms 1\n", why, sizeof(why)) &&
	      exposition_check("# HELP a a\n# TYPE a gauge\na{x=\"1} 1\n", why, sizeof(why)) &&
	      exposition_check("# HELP a a\n# TYPE a gauge\n# HELP b b\n# TYPE b gauge\na 1\nb 1\na{l=\"2\"} 1\n", why, sizeof(why)) &&
	      exposition_check("# HELP a a\n# TYPE a gauge\na 1\na 2\n", why, sizeof(why)) &&
	      exposition_check("# HELP a a\n# TYPE a gauge\na one\n", why, sizeof(why)),
	      "the checker refuses a sample without TYPE, a counter without _total, _ms, a bad label, interleaving, a sample twice, a bad value");
	printf("1..%d\n", tap_ntests);
	printf("# %d passed, %d failed\n", tap_ntests - tap_nfailed, tap_nfailed);
	return tap_nfailed ? 1 : 0;
}
