/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepctl's observability commands: watch (watch.c, BPF on the krep:*
 * tracepoints), stats (stats.c, netlink snapshots) and health (health.c,
 * the same snapshot as an exit status).
 */
#ifndef KREP_AGENT_OBS_H
#define KREP_AGENT_OBS_H

#include <stdbool.h>
#include <stdio.h>

#include "krepctl.h"

void krepctl_watch_usage(FILE *f);
int krepctl_watch_run(struct krepctl *ctl, int argc, char **argv);

void krepctl_stats_usage(FILE *f);
int krepctl_stats_run(struct krepctl *ctl, int argc, char **argv);

struct krep_snap;

void krepctl_health_usage(FILE *f);
int krepctl_health_run(struct krepctl *ctl, int argc, char **argv);
/* Is a partition of @s under-replicated, under min ISR or offline? */
bool krepctl_snap_unhealthy(const struct krep_snap *s);

#endif
