/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepd --metrics' commit latency: the time from a batch's append on the
 * leader to the HW passing it, as krepctl watch and commit-latency.bt
 * measure it, from the krep_hw_advance trace event (its oldest_append_ns
 * against the event's own timestamp).
 *
 * The events come from a tracefs instance of krepd's own
 * (instances/krepd-PID: its own ring buffer, trace clock "mono" as the
 * module's ktime_get_ns(), a filter on krepd's network namespace and on
 * oldest_append_ns > 0), read from its trace_pipe without blocking. No
 * BPF program: nothing holds the module, rmmod works while krepd runs
 * (krep_lat_close() before the module comes back, krep_lat_open() after).
 * Needs root (tracefs); timestamps have microsecond resolution.
 */
#ifndef KREP_AGENT_COMMIT_LAT_H
#define KREP_AGENT_COMMIT_LAT_H

#include <stdint.h>
#include <stdio.h>

/*
 * Buckets as krepctl watch's (bpf/watch.h): bucket 0 holds 0..1 us,
 * bucket b > 0 holds (2^(b-1), 2^b] us, the last one everything above.
 */
#define KREP_LAT_BUCKETS	32

struct krep_lat_hist {
	uint64_t bucket[KREP_LAT_BUCKETS];	/* not cumulative */
	uint64_t count;
	uint64_t sum_ns;
	uint64_t lost;		/* events the ring buffer dropped */
};

struct krep_lat;

/*
 * Start tracing the events of network namespace @netns (its inode).
 * Returns NULL with the reason in @why on failure.
 */
struct krep_lat *krep_lat_open(unsigned int netns, char *why, size_t size);
/* Read what the trace holds into @h. */
void krep_lat_read(struct krep_lat *l, struct krep_lat_hist *h);
/* Stop tracing and remove the instance. */
void krep_lat_close(struct krep_lat *l);

/* Count one trace_pipe line of a krep_hw_advance event into @h (tests). */
void krep_lat_line(const char *line, struct krep_lat_hist *h);
/* Count a latency of @ns nanoseconds into @h. */
void krep_lat_add(struct krep_lat_hist *h, uint64_t ns);

/* The krep_commit_latency_seconds histogram family of @h. */
void krep_lat_render(FILE *f, const struct krep_lat_hist *h);

#endif
