// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl stats: the health of this namespace's broker from one
 * BROKER_GET and the TOPIC_GET and PARTITION_GET dumps (snap.c): the
 * figures krepd --metrics exports, once.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <linux/krep.h>

#include "attrs.h"
#include "json.h"
#include "obs.h"
#include "snap.h"

void krepctl_stats_usage(FILE *f)
{
	fputs("Usage: krepctl [--json] stats [TOPIC] [--check]\n"
	      "\n"
	      "The health of this network namespace's broker (of topic TOPIC's\n"
	      "partitions only, if given), from one BROKER_GET and the TOPIC_GET\n"
	      "and PARTITION_GET dumps, as Kafka's broker metrics count it:\n"
	      "\n"
	      "  under-replicated partitions  led here, ISR smaller than the replicas\n"
	      "  under-min-ISR partitions     led here, ISR < min ISR, where min ISR\n"
	      "                               is min(min_insync_replicas, replicas):\n"
	      "                               acks=all produces fail\n"
	      "  at-min-ISR partitions        led here, ISR = min ISR: one more\n"
	      "                               follower lost and acks=all fails\n"
	      "  offline partitions           local replica offline, no leader, or\n"
	      "                               (on a follower) the leader's peer down\n"
	      "  ISR changes                  the partition epochs of the partitions\n"
	      "                               led here (every ISR change bumps it):\n"
	      "                               shrinks and expands cannot be told apart\n"
	      "                               from a snapshot; 'krepctl watch' and\n"
	      "                               'krepd --metrics' count them\n"
	      "  max follower lag             over the followers of the partitions led\n"
	      "                               here: leader LEO - follower LEO, and the\n"
	      "                               ms since a follower was last caught up\n"
	      "  HW lag, LSO lag              LEO - HW and HW - LSO, every replica\n"
	      "  log memory                   log pages held, of the broker's cap\n"
	      "                               (log_memory_max); past it appends are\n"
	      "                               refused with KAFKA_STORAGE_ERROR\n"
	      "  counters                     the broker's KREP_A_STATS counters\n"
	      "\n"
	      "Then one line per local replica:\n"
	      "  TOPIC PARTITION ROLE LEADER ISR/REPLICAS MIN_ISR HW_LAG LSO_LAG\n"
	      "  FOLLOWER_LAG LAG_MS FLAGS  ('-' where it does not apply)\n"
	      "\n"
	      "With --json one object: {\"broker_id\",\"cluster_id\",\"partitions\",\n"
	      "\"leader_partitions\",\"under_replicated_partitions\",\n"
	      "\"under_min_isr_partitions\",\"at_min_isr_partitions\",\n"
	      "\"offline_partitions\",\"isr_shrinks\":null,\"isr_expands\":null,\n"
	      "\"isr_changes\",\"max_follower_lag_offsets\",\"max_follower_lag_ms\",\n"
	      "\"max_hw_lag\",\"total_hw_lag\",\"max_lso_lag\",\"total_lso_lag\",\n"
	      "\"counters\":{NAME:N,...},\"by_partition\":[{\"topic\",\"partition\",\n"
	      "\"role\",\"leader\",\"partition_epoch\",\"isr_size\",\"replicas\",\n"
	      "\"min_isr\",\"under_replicated\",\"under_min_isr\",\"at_min_isr\",\n"
	      "\"offline\",\"hw_lag\",\"lso_lag\",\"max_follower_lag_offsets\",\n"
	      "\"max_follower_lag_ms\"}]} (null where unknown or not a leader).\n"
	      "\n"
	      "--check: exit 1 when a partition is under-replicated, under min\n"
	      "ISR or offline (as 'krepctl health' does), else 0.\n",
	      f);
}

static void opt_u64(struct json *j, const char *key, bool has, uint64_t v)
{
	json_key(j, key);
	if (has)
		json_u64(j, v);
	else
		json_null(j);
}

static void u64_key(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	json_u64(j, v);
}

static const char *stat_name(unsigned int t, char *buf, size_t size)
{
	const char *name = krep_snap_stat_name(t);

	if (name)
		return name;
	snprintf(buf, size, "stat_%u", t);
	return buf;
}

static void part_json(struct json *j, const struct krep_snap *s,
		      const struct krep_snap_part *p)
{
	struct krep_part_health h;
	const char *role;

	krep_part_health(s, p, &h);
	json_obj_begin(j);
	json_key(j, "topic");
	json_str(j, p->topic);
	u64_key(j, "partition", p->partition);
	json_key(j, "role");
	role = p->role >= 0 ? krep_role_name(p->role) : NULL;
	if (role)
		json_str(j, role);
	else
		json_null(j);
	opt_u64(j, "leader", p->has_leader, p->leader);
	opt_u64(j, "partition_epoch", p->has_partition_epoch,
		p->partition_epoch);
	opt_u64(j, "isr_size", p->has_isr, p->nisr);
	opt_u64(j, "replicas", p->has_replicas, p->nreplicas);
	opt_u64(j, "min_isr", h.has_min_isr, h.min_isr);
	json_key(j, "under_replicated");
	json_bool(j, h.under_replicated);
	json_key(j, "under_min_isr");
	json_bool(j, h.under_min_isr);
	json_key(j, "at_min_isr");
	json_bool(j, h.at_min_isr);
	json_key(j, "offline");
	json_bool(j, h.offline);
	opt_u64(j, "hw_lag", h.has_hw_lag, h.hw_lag);
	opt_u64(j, "lso_lag", h.has_lso_lag, h.lso_lag);
	opt_u64(j, "max_follower_lag_offsets", h.has_follower_lag,
		h.follower_lag);
	opt_u64(j, "max_follower_lag_ms", h.has_follower_lag_ms,
		h.follower_lag_ms);
	json_obj_end(j);
}

static void stats_json(FILE *f, const struct krep_snap *s)
{
	struct krep_broker_health h;
	struct json j;
	char buf[24];
	unsigned int t;
	size_t i;

	krep_broker_health(s, &h);
	json_init(&j, f);
	json_obj_begin(&j);
	opt_u64(&j, "broker_id", s->has_broker_id, s->broker_id);
	json_key(&j, "cluster_id");
	if (s->cluster_id)
		json_str(&j, s->cluster_id);
	else
		json_null(&j);
	u64_key(&j, "partitions", h.partitions);
	u64_key(&j, "leader_partitions", h.leader_partitions);
	u64_key(&j, "under_replicated_partitions", h.under_replicated);
	u64_key(&j, "under_min_isr_partitions", h.under_min_isr);
	u64_key(&j, "at_min_isr_partitions", h.at_min_isr);
	u64_key(&j, "offline_partitions", h.offline);
	json_key(&j, "isr_shrinks");
	json_null(&j);
	json_key(&j, "isr_expands");
	json_null(&j);
	u64_key(&j, "isr_changes", h.isr_changes);
	opt_u64(&j, "max_follower_lag_offsets", h.has_follower_lag,
		h.max_follower_lag);
	opt_u64(&j, "max_follower_lag_ms", h.has_follower_lag_ms,
		h.max_follower_lag_ms);
	u64_key(&j, "max_hw_lag", h.max_hw_lag);
	u64_key(&j, "total_hw_lag", h.total_hw_lag);
	u64_key(&j, "max_lso_lag", h.max_lso_lag);
	u64_key(&j, "total_lso_lag", h.total_lso_lag);
	opt_u64(&j, "log_memory_bytes", s->has_log_memory, s->log_memory);
	opt_u64(&j, "log_memory_max_bytes", s->has_log_memory,
		s->log_memory_max);
	json_key(&j, "counters");
	if (s->has_stats) {
		json_obj_begin(&j);
		for (t = 1; t <= KREP_A_STAT_MAX; t++)
			if (s->has_stat[t])
				u64_key(&j, stat_name(t, buf, sizeof(buf)),
					s->stat[t]);
		json_obj_end(&j);
	} else {
		json_null(&j);
	}
	json_key(&j, "by_partition");
	json_arr_begin(&j);
	for (i = 0; i < s->nparts; i++)
		part_json(&j, s, &s->parts[i]);
	json_arr_end(&j);
	json_obj_end(&j);
	fputc('\n', f);
}

static void col_u64(FILE *f, int width, bool has, uint64_t v)
{
	if (has)
		fprintf(f, " %*" PRIu64, width, v);
	else
		fprintf(f, " %*s", width, "-");
}

static void part_line(FILE *f, const struct krep_snap *s,
		      const struct krep_snap_part *p)
{
	struct krep_part_health h;
	const char *role, *sep = "";
	char isr[24];

	krep_part_health(s, p, &h);
	role = p->role >= 0 ? krep_role_name(p->role) : NULL;
	snprintf(isr, sizeof(isr), "%zu/%zu", p->nisr, p->nreplicas);
	fprintf(f, "  %-20s %5u %-8s", p->topic, p->partition,
		role ? role : "-");
	col_u64(f, 6, p->has_leader, p->leader);
	fprintf(f, " %7s", isr);
	col_u64(f, 7, h.has_min_isr, h.min_isr);
	col_u64(f, 8, h.has_hw_lag, h.hw_lag);
	col_u64(f, 8, h.has_lso_lag, h.lso_lag);
	col_u64(f, 12, h.has_follower_lag, h.follower_lag);
	col_u64(f, 8, h.has_follower_lag_ms, h.follower_lag_ms);
	fputc(' ', f);
	if (h.under_replicated) {
		fprintf(f, "%sunder_replicated", sep);
		sep = ",";
	}
	if (h.under_min_isr) {
		fprintf(f, "%sunder_min_isr", sep);
		sep = ",";
	}
	if (h.at_min_isr) {
		fprintf(f, "%sat_min_isr", sep);
		sep = ",";
	}
	if (h.offline) {
		fprintf(f, "%soffline", sep);
		sep = ",";
	}
	fprintf(f, "%s\n", *sep ? "" : "-");
}

static void stats_print(FILE *f, const struct krep_snap *s)
{
	struct krep_broker_health h;
	char buf[24];
	unsigned int t;
	size_t i;

	krep_broker_health(s, &h);
	if (s->has_broker_id)
		fprintf(f, "broker %u", s->broker_id);
	else
		fputs("broker (no id)", f);
	fprintf(f, ", cluster %s: %" PRIu64 " partitions, leader of %" PRIu64 "\n",
		s->cluster_id ? s->cluster_id : "-", h.partitions,
		h.leader_partitions);
	fprintf(f, "  %-30s %" PRIu64 "\n", "under-replicated partitions",
		h.under_replicated);
	fprintf(f, "  %-30s %" PRIu64 "\n", "under-min-ISR partitions",
		h.under_min_isr);
	fprintf(f, "  %-30s %" PRIu64 "\n", "at-min-ISR partitions",
		h.at_min_isr);
	fprintf(f, "  %-30s %" PRIu64 "\n", "offline partitions", h.offline);
	fprintf(f, "  %-30s %" PRIu64 " (partition epochs of the led partitions)\n",
		"ISR changes", h.isr_changes);
	fprintf(f, "  %-30s n/a (no history in a snapshot: see 'krepctl watch', 'krepd --metrics')\n",
		"ISR shrinks, expands");
	fprintf(f, "  %-30s ", "max follower lag");
	if (h.has_follower_lag)
		fprintf(f, "%" PRIu64 " offsets", h.max_follower_lag);
	else
		fputs("- offsets", f);
	if (h.has_follower_lag_ms)
		fprintf(f, ", %" PRIu64 " ms since caught up\n",
			h.max_follower_lag_ms);
	else
		fputs(", - ms since caught up\n", f);
	fprintf(f, "  %-30s max %" PRIu64 ", total %" PRIu64 "\n",
		"HW lag (LEO - HW)", h.max_hw_lag, h.total_hw_lag);
	fprintf(f, "  %-30s max %" PRIu64 ", total %" PRIu64 "\n",
		"LSO lag (HW - LSO)", h.max_lso_lag, h.total_lso_lag);
	if (s->has_log_memory)
		fprintf(f, "  %-30s %" PRIu64 " of %" PRIu64 " bytes (%" PRIu64 "%%)\n",
			"log memory", s->log_memory, s->log_memory_max,
			s->log_memory_max ?
			s->log_memory * 100 / s->log_memory_max : 0);
	if (s->has_stats) {
		fputs("counters\n", f);
		for (t = 1; t <= KREP_A_STAT_MAX; t++)
			if (s->has_stat[t])
				fprintf(f, "  %-30s %" PRIu64 "\n",
					stat_name(t, buf, sizeof(buf)),
					s->stat[t]);
	}
	if (!s->nparts)
		return;
	fprintf(f, "partitions\n  %-20s %5s %-8s %6s %7s %7s %8s %8s %12s %8s %s\n",
		"TOPIC", "PART", "ROLE", "LEADER", "ISR/AR", "MIN_ISR",
		"HW_LAG", "LSO_LAG", "FOLLOWER_LAG", "LAG_MS", "FLAGS");
	for (i = 0; i < s->nparts; i++)
		part_line(f, s, &s->parts[i]);
}

int krepctl_stats_run(struct krepctl *ctl, int argc, char **argv)
{
	const char *topic = NULL;
	bool check = false, bad;
	struct krep_snap s;
	int i;

	for (i = 1; i < argc; i++) {
		if (krepctl_is_help(argv[i])) {
			krepctl_stats_usage(stdout);
			return KREP_EXIT_OK;
		}
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json")) {
			ctl->json = true;
			continue;
		}
		if (!strcmp(argv[i], "--check")) {
			check = true;
			continue;
		}
		if (argv[i][0] == '-' || topic)
			return krepctl_usage_error(krepctl_stats_usage,
						   "stats: unexpected argument '%s'",
						   argv[i]);
		topic = argv[i];
	}
	if (krepctl_connect(ctl))
		return KREP_EXIT_ERR;
	if (krepctl_snap(ctl, topic, &s))
		return KREP_EXIT_ERR;
	if (ctl->json)
		stats_json(stdout, &s);
	else
		stats_print(stdout, &s);
	bad = check && krepctl_snap_unhealthy(&s);
	krep_snap_free(&s);
	return bad ? KREP_EXIT_ERR : KREP_EXIT_OK;
}
