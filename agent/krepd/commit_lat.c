// SPDX-License-Identifier: GPL-2.0
/*
 * krepd --metrics' commit latency from the krep_hw_advance trace event;
 * see commit_lat.h.
 *
 * A line of the instance's trace_pipe reads (TP_printk of kmod/trace.h,
 * after ftrace's context, the timestamp in seconds with the "mono" clock):
 *
 *   kworker/0:1-42 [000] ..... 812.345678: krep_hw_advance: netns=4026531840
 *     broker=1 orders-0 hw 10 -> 20 epoch=0 isr=3 oldest_append_ns=812345001234
 *
 * and the commit latency is the timestamp minus oldest_append_ns (both
 * CLOCK_MONOTONIC), counted in the log2 microsecond buckets of krepctl
 * watch. A "CPU:N [LOST M EVENTS]" line counts M lost events.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commit_lat.h"

#define EVENT		"events/krep/krep_hw_advance"
#define PIPE_BUF_SIZE	65536

struct krep_lat {
	char dir[128];		/* the instance */
	int fd;			/* its trace_pipe */
	size_t carry;		/* bytes of a line not yet complete */
	char buf[PIPE_BUF_SIZE + 1];
};

static const char *const tracefs_roots[] = {
	"/sys/kernel/tracing",
	"/sys/kernel/debug/tracing",
};

/* Write @val to @dir/@file; -errno. */
static int put(const char *dir, const char *file, const char *val)
{
	char path[256];
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		err = -errno;
	else if ((size_t)n != strlen(val))
		err = -EIO;
	close(fd);
	return err;
}

/* Instances left by krepds that are gone (killed before they cleaned up). */
static void remove_stale(const char *instances)
{
	char path[512];
	struct dirent *de;
	unsigned long pid;
	char *end;
	DIR *d;

	d = opendir(instances);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "krepd-", 6))
			continue;
		pid = strtoul(de->d_name + 6, &end, 10);
		if (*end || !pid || !kill((pid_t)pid, 0) || errno != ESRCH)
			continue;	/* not one of ours, or still running */
		snprintf(path, sizeof(path), "%s/%s", instances, de->d_name);
		rmdir(path);	/* which disables its events */
	}
	closedir(d);
}

struct krep_lat *krep_lat_open(unsigned int netns, char *why, size_t size)
{
	char instances[64], filter[96], what[64] = "";
	const char *root = NULL;
	struct krep_lat *l;
	struct stat st;
	size_t i;
	int err;

	for (i = 0; i < sizeof(tracefs_roots) / sizeof(tracefs_roots[0]); i++) {
		snprintf(instances, sizeof(instances), "%s/instances",
			 tracefs_roots[i]);
		if (!stat(instances, &st)) {
			root = tracefs_roots[i];
			break;
		}
	}
	if (!root) {
		snprintf(why, size, "no tracefs (/sys/kernel/tracing/instances)");
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(why, size, "%s", strerror(ENOMEM));
		return NULL;
	}
	l->fd = -1;
	remove_stale(instances);
	snprintf(l->dir, sizeof(l->dir), "%s/krepd-%d", instances, getpid());
	if (mkdir(l->dir, 0700) && errno != EEXIST) {
		snprintf(why, size, "mkdir %s: %s", l->dir, strerror(errno));
		free(l);
		return NULL;
	}
	snprintf(filter, sizeof(filter), "netns == %u && oldest_append_ns > 0",
		 netns);
	/* the module's ktime_get_ns() is the "mono" clock's */
	err = put(l->dir, "trace_clock", "mono");
	if (err)
		snprintf(what, sizeof(what), "trace_clock");
	if (!err) {
		put(l->dir, "buffer_size_kb", "256");	/* per CPU */
		err = put(l->dir, EVENT "/filter", filter);
		if (err)
			snprintf(what, sizeof(what), "%s/filter", EVENT);
	}
	if (!err) {
		err = put(l->dir, EVENT "/enable", "1");
		if (err)
			snprintf(what, sizeof(what), "%s/enable", EVENT);
	}
	if (!err) {
		char path[192];

		snprintf(path, sizeof(path), "%s/trace_pipe", l->dir);
		l->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (l->fd < 0) {
			err = -errno;
			snprintf(what, sizeof(what), "trace_pipe");
		}
	}
	if (err) {
		snprintf(why, size, "%s/%s: %s", l->dir, what, strerror(-err));
		krep_lat_close(l);
		return NULL;
	}
	return l;
}

void krep_lat_close(struct krep_lat *l)
{
	if (!l)
		return;
	if (l->fd >= 0)
		close(l->fd);
	put(l->dir, EVENT "/enable", "0");
	rmdir(l->dir);
	free(l);
}

void krep_lat_add(struct krep_lat_hist *h, uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned int b = 0;

	/* bucket 0: 0..1 us; b: (2^(b-1), 2^b] us, as watch.bpf.c */
	if (us > 1) {
		b = 64 - __builtin_clzll(us - 1);
		if (b >= KREP_LAT_BUCKETS)
			b = KREP_LAT_BUCKETS - 1;
	}
	h->bucket[b]++;
	h->count++;
	h->sum_ns += ns;
}

void krep_lat_line(const char *line, struct krep_lat_hist *h)
{
	static const char tag[] = ": krep_hw_advance: ";
	unsigned long long sec, usec, lost;
	const char *t, *p, *q;
	long long oldest;
	uint64_t now;
	char *end;

	if (sscanf(line, "CPU:%*u [LOST %llu EVENTS]", &lost) == 1) {
		h->lost += lost;
		return;
	}
	t = strstr(line, tag);
	if (!t)
		return;
	/* the timestamp ends at the tag: "SEC.USEC" after the last blank */
	for (p = t; p > line && p[-1] != ' '; p--)
		;
	sec = strtoull(p, &end, 10);
	if (end == p || *end != '.')
		return;
	q = end + 1;
	usec = strtoull(q, &end, 10);
	if (end != q + 6 || end != t)
		return;
	p = strstr(t, " oldest_append_ns=");
	if (!p)
		return;
	oldest = strtoll(p + strlen(" oldest_append_ns="), &end, 10);
	if (oldest <= 0)
		return;
	now = (uint64_t)sec * 1000000000ULL + (uint64_t)usec * 1000;
	/* the timestamp lost its nanoseconds: it may fall just before */
	krep_lat_add(h, now > (uint64_t)oldest ? now - (uint64_t)oldest : 0);
}

void krep_lat_read(struct krep_lat *l, struct krep_lat_hist *h)
{
	char *line, *nl;
	ssize_t n;
	int rounds;

	/* a bounded drain: the ring buffer keeps the rest for next time */
	for (rounds = 0; rounds < 64; rounds++) {
		n = read(l->fd, l->buf + l->carry, PIPE_BUF_SIZE - l->carry);
		if (n <= 0)
			return;
		l->buf[l->carry + n] = '\0';
		line = l->buf;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			krep_lat_line(line, h);
			line = nl + 1;
		}
		l->carry = strlen(line);
		if (l->carry == PIPE_BUF_SIZE)	/* no line is that long */
			l->carry = 0;
		memmove(l->buf, line, l->carry);
	}
}

/* @us microseconds as seconds: "0.000001", "1073.741824" */
static void seconds_us(FILE *f, uint64_t us)
{
	fprintf(f, "%" PRIu64 ".%06" PRIu64, us / 1000000, us % 1000000);
}

void krep_lat_render(FILE *f, const struct krep_lat_hist *h)
{
	static const char name[] = "krep_commit_latency_seconds";
	uint64_t cum = 0;
	unsigned int b;

	fprintf(f, "# HELP %s From a batch's append on a leader of this broker to the HW passing it (acks=all's wait), from the krep_hw_advance trace event since krepd started; buckets as krepctl watch's.\n"
		"# TYPE %s histogram\n", name, name);
	for (b = 0; b < KREP_LAT_BUCKETS - 1; b++) {
		cum += h->bucket[b];
		fprintf(f, "%s_bucket{le=\"", name);
		seconds_us(f, 1ULL << b);
		fprintf(f, "\"} %" PRIu64 "\n", cum);
	}
	fprintf(f, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, h->count);
	fprintf(f, "%s_sum %" PRIu64 ".%09" PRIu64 "\n", name,
		h->sum_ns / 1000000000, h->sum_ns % 1000000000);
	fprintf(f, "%s_count %" PRIu64 "\n", name, h->count);
	fprintf(f, "# HELP krep_commit_latency_events_lost_total krep_hw_advance events the trace's ring buffer dropped before krepd read them (not in krep_commit_latency_seconds).\n"
		"# TYPE krep_commit_latency_events_lost_total counter\n"
		"krep_commit_latency_events_lost_total %" PRIu64 "\n", h->lost);
}
