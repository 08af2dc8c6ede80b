// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl health: exit 1 when a partition of this broker is
 * under-replicated, under its min ISR or offline, for scripts and
 * monitoring; the same counts as krepctl stats (snap.c).
 */
#include <string.h>

#include "json.h"
#include "krepctl.h"
#include "obs.h"
#include "snap.h"

void krepctl_health_usage(FILE *f)
{
	fputs("Usage: krepctl [--json] health [TOPIC]\n"
	      "\n"
	      "Check this broker's partitions (of TOPIC only, if given) as\n"
	      "'krepctl stats' counts them: under-replicated and under min ISR\n"
	      "among the partitions led here, offline among every local replica.\n"
	      "Prints one line per finding,\n"
	      "  TOPIC-P under-replicated isr=N/REPLICAS\n"
	      "  TOPIC-P under-min-isr isr=N min_isr=M\n"
	      "  TOPIC-P offline\n"
	      "then 'healthy: N partitions' or 'unhealthy: ...'. With --json\n"
	      "{\"healthy\":BOOL,\"partitions\":N,\"under_replicated\":[\"TOPIC-P\",...],\n"
	      "\"under_min_isr\":[...],\"offline\":[...]}.\n"
	      "\n"
	      "Exit status: 0 healthy, 1 unhealthy or an error, 2 usage error.\n"
	      "'krepctl stats --check' exits the same way after its report.\n", f);
}

enum { H_UNDER_REPLICATED, H_UNDER_MIN_ISR, H_OFFLINE, H_N };

static const char *const h_names[H_N] = {
	"under_replicated", "under_min_isr", "offline"
};

/* Is @p in finding @k? */
static bool finding(const struct krep_part_health *h, int k)
{
	switch (k) {
	case H_UNDER_REPLICATED:
		return h->leader && h->under_replicated;
	case H_UNDER_MIN_ISR:
		return h->leader && h->under_min_isr;
	default:
		return h->offline;
	}
}

static void health_print(const struct krep_snap *s, bool json, uint64_t *bad)
{
	struct krep_part_health h;
	uint64_t n[H_N] = { 0 };
	struct json j;
	char name[320];
	size_t i;
	int k;

	if (json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
	}
	for (k = 0; k < H_N; k++) {
		if (json) {
			json_key(&j, h_names[k]);
			json_arr_begin(&j);
		}
		for (i = 0; i < s->nparts; i++) {
			const struct krep_snap_part *p = &s->parts[i];

			krep_part_health(s, p, &h);
			if (!finding(&h, k))
				continue;
			n[k]++;
			snprintf(name, sizeof(name), "%s-%u", p->topic,
				 p->partition);
			if (json)
				json_str(&j, name);
			else if (k == H_UNDER_REPLICATED)
				printf("%s under-replicated isr=%u/%u\n", name,
				       h.isr_size, h.rf);
			else if (k == H_UNDER_MIN_ISR)
				printf("%s under-min-isr isr=%u min_isr=%u\n",
				       name, h.isr_size, h.min_isr);
			else
				printf("%s offline\n", name);
		}
		if (json)
			json_arr_end(&j);
	}
	*bad = n[H_UNDER_REPLICATED] + n[H_UNDER_MIN_ISR] + n[H_OFFLINE];
	if (json) {
		json_key(&j, "healthy");
		json_bool(&j, !*bad);
		json_key(&j, "partitions");
		json_u64(&j, s->nparts);
		json_obj_end(&j);
		putchar('\n');
	} else if (*bad) {
		printf("unhealthy: %llu under-replicated, %llu under min ISR, %llu offline, of %zu partitions\n",
		       (unsigned long long)n[H_UNDER_REPLICATED],
		       (unsigned long long)n[H_UNDER_MIN_ISR],
		       (unsigned long long)n[H_OFFLINE], s->nparts);
	} else {
		printf("healthy: %zu partitions\n", s->nparts);
	}
}

int krepctl_health_run(struct krepctl *ctl, int argc, char **argv)
{
	const char *topic = NULL;
	struct krep_snap s;
	uint64_t bad;
	int i;

	for (i = 1; i < argc; i++) {
		if (krepctl_is_help(argv[i])) {
			krepctl_health_usage(stdout);
			return KREP_EXIT_OK;
		}
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json")) {
			ctl->json = true;
			continue;
		}
		if (argv[i][0] == '-' || topic)
			return krepctl_usage_error(krepctl_health_usage,
						   "health: unexpected argument '%s'",
						   argv[i]);
		topic = argv[i];
	}
	if (krepctl_connect(ctl))
		return KREP_EXIT_ERR;
	if (krepctl_snap(ctl, topic, &s))
		return KREP_EXIT_ERR;
	health_print(&s, ctl->json, &bad);
	krep_snap_free(&s);
	return bad ? KREP_EXIT_ERR : KREP_EXIT_OK;
}

bool krepctl_snap_unhealthy(const struct krep_snap *s)
{
	struct krep_part_health h;
	size_t i;
	int k;

	for (i = 0; i < s->nparts; i++) {
		krep_part_health(s, &s->parts[i], &h);
		for (k = 0; k < H_N; k++)
			if (finding(&h, k))
				return true;
	}
	return false;
}
