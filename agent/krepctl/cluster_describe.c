// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl topic describe --controller: the whole cluster's partitions as
 * krepd --controller sees them (its "status" over the control socket):
 * leader, epochs, replicas, ISR, ELR, offline, with describe's filters.
 *
 * Text: one line per partition,
 *	TOPIC PARTITION leader=ID|- epoch=N partition_epoch=N replicas=A,B
 *	isr=A,B min_isr=N elr=A|- offline=0|1
 * --json: krepd's objects in an array. min_isr is the topic's
 * min_insync_replicas as krepd knows it (from the brokers, or from its own
 * topic-create); --under-min-isr and --at-min-isr compare the ISR with
 * min(min_isr, replicas), as krepctl stats does on a broker ("-" and no
 * match from a krepd that does not send it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctlsock.h"
#include "json.h"
#include "krepctl.h"

#define STATUS_TIMEOUT_MS	30000

struct cluster_view {
	const char *topic;	/* only this one, or NULL */
	unsigned int filters;	/* KREP_DESCRIBE_* */
	FILE *out;		/* --json: the objects, printed at the end */
	size_t n;		/* partitions printed */
};

/* How many ids krepd's array text "1,2,3" holds ("" is none). */
static size_t ids_count(const char *s)
{
	size_t n = *s ? 1 : 0;

	for (; *s; s++)
		n += *s == ',';
	return n;
}

/* @min_isr < 0: krepd did not say */
static bool wanted(const struct cluster_view *v, const char *topic,
		   size_t nreplicas, size_t nisr, long min_isr, bool offline)
{
	size_t need = min_isr < 0 ? 0 :
		      (size_t)min_isr < nreplicas ? (size_t)min_isr : nreplicas;

	if (v->topic && strcmp(v->topic, topic))
		return false;
	if (!v->filters)
		return true;
	return ((v->filters & KREP_DESCRIBE_UNDER_REPLICATED) &&
		nisr < nreplicas) ||
	       ((v->filters & KREP_DESCRIBE_UNDER_MIN_ISR) && min_isr >= 0 &&
		nisr < need) ||
	       ((v->filters & KREP_DESCRIBE_AT_MIN_ISR) && min_isr >= 0 &&
		nisr == need) ||
	       ((v->filters & KREP_DESCRIBE_UNAVAILABLE) && offline);
}

static void each_partition(const char *line, void *arg)
{
	char topic[256], part[16], leader[16], epoch[16], pepoch[16];
	char replicas[512], isr[512], elr[512], offline[8], min_isr[16];
	struct cluster_view *v = arg;
	long mi = -1;
	char *end;

	if (!krepctl_krepd_field(line, "topic", topic, sizeof(topic)) ||
	    !krepctl_krepd_field(line, "partition", part, sizeof(part)) ||
	    !krepctl_krepd_field(line, "leader", leader, sizeof(leader)) ||
	    !krepctl_krepd_field(line, "leader_epoch", epoch, sizeof(epoch)) ||
	    !krepctl_krepd_field(line, "partition_epoch", pepoch,
				 sizeof(pepoch)) ||
	    !krepctl_krepd_field(line, "replicas", replicas, sizeof(replicas)) ||
	    !krepctl_krepd_field(line, "isr", isr, sizeof(isr)) ||
	    !krepctl_krepd_field(line, "elr", elr, sizeof(elr)) ||
	    !krepctl_krepd_field(line, "offline", offline, sizeof(offline))) {
		fprintf(stderr, "%s: krepd's status line is not a partition: %s\n",
			krep_prog, line);
		return;
	}
	if (krepctl_krepd_field(line, "min_isr", min_isr, sizeof(min_isr))) {
		mi = strtol(min_isr, &end, 10);
		if (*end || end == min_isr || mi < 0)
			mi = -1;
	}
	if (mi < 0)
		snprintf(min_isr, sizeof(min_isr), "-");
	if (!wanted(v, topic, ids_count(replicas), ids_count(isr), mi,
		    !strcmp(offline, "true")))
		return;
	if (v->out) {
		fprintf(v->out, "%s%s", v->n ? "," : "", line);
	} else {
		printf("%s %s leader=%s epoch=%s partition_epoch=%s replicas=%s isr=%s min_isr=%s elr=%s offline=%d\n",
		       topic, part, strcmp(leader, "null") ? leader : "-",
		       epoch, pepoch, *replicas ? replicas : "-",
		       *isr ? isr : "-", min_isr, *elr ? elr : "-",
		       !strcmp(offline, "true"));
	}
	v->n++;
}

int krepctl_describe_controller(struct krepctl *ctl, const char *sock,
				const char *topic, unsigned int filters)
{
	struct cluster_view v = { .topic = topic, .filters = filters };
	char *buf = NULL;
	size_t len = 0;
	int ret;

	if (ctl->json) {
		v.out = open_memstream(&buf, &len);
		if (!v.out) {
			fprintf(stderr, "%s: %s\n", krep_prog, strerror(errno));
			return KREP_EXIT_ERR;
		}
	}
	ret = krepctl_krepd_call(sock, "status", STATUS_TIMEOUT_MS,
				 each_partition, &v);
	if (v.out) {
		fclose(v.out);
		if (ret == KREP_EXIT_OK)
			printf("[%s]\n", buf);
		free(buf);
	}
	return ret;
}
