/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepctl's observability commands: watch (watch.c, BPF on the krep:*
 * tracepoints) and stats (stats.c, netlink snapshots).
 */
#ifndef KREP_AGENT_OBS_H
#define KREP_AGENT_OBS_H

#include <stdio.h>

#include "krepctl.h"

void krepctl_watch_usage(FILE *f);
int krepctl_watch_run(struct krepctl *ctl, int argc, char **argv);

void krepctl_stats_usage(FILE *f);
int krepctl_stats_run(struct krepctl *ctl, int argc, char **argv);

#endif
