// SPDX-License-Identifier: GPL-2.0
/*
 * The writer threads, latencies and the RESULT line shared by the
 * benchmark's load generators (see common.h).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

const char *bench_prog = "bench";

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void bench_fill(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = 'a' + x % 26;
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void bench_sort(uint32_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u32);
}

/* The nearest-rank percentile of a sorted array (0 when empty). */
uint32_t bench_pctl(uint32_t *sorted, size_t n, double q)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(q * n + 0.999999);
	if (i < 1)
		i = 1;
	if (i > n)
		i = n;
	return sorted[i - 1];
}

static void usage_exit(const char *usage, const char *fmt, const char *s)
{
	fprintf(stderr, "%s: ", bench_prog);
	fprintf(stderr, fmt, s);
	fprintf(stderr, "\n%s", usage);
	exit(2);
}

static long num(const char *usage, const char *name, const char *val,
		long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(val, &end, 0);
	if (errno || end == val || *end || v < min || v > max)
		usage_exit(usage, "bad value for %s", name);
	return v;
}

void bench_parse(int argc, char **argv, struct bench_opts *o,
		 int (*other)(const char *name, const char *val, void *arg),
		 void *arg, const char *usage)
{
	const char *name, *val;
	char *end;
	int i;

	o->threads = 1;
	o->size = 100;
	o->batch = 1;
	o->count = 10000;
	o->seconds = 5;
	o->lat_out = NULL;
	for (i = 1; i < argc; i++) {
		name = argv[i];
		if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
			fputs(usage, stdout);
			exit(0);
		}
		if (i + 1 >= argc)
			usage_exit(usage, "%s needs a value", name);
		val = argv[++i];
		if (!strcmp(name, "-t") || !strcmp(name, "--threads")) {
			o->threads = num(usage, name, val, 1, BENCH_THREADS_MAX);
		} else if (!strcmp(name, "-s") || !strcmp(name, "--size")) {
			o->size = num(usage, name, val, 1, 1 << 20);
		} else if (!strcmp(name, "-b") || !strcmp(name, "--batch")) {
			o->batch = num(usage, name, val, 1, 100000);
		} else if (!strcmp(name, "-n") || !strcmp(name, "--count")) {
			o->count = num(usage, name, val, 1, 100000000);
		} else if (!strcmp(name, "-d") || !strcmp(name, "--seconds")) {
			o->seconds = strtod(val, &end);
			if (*end || o->seconds <= 0 || o->seconds > 600)
				usage_exit(usage, "bad value for %s", name);
		} else if (!strcmp(name, "-l") || !strcmp(name, "--lat-out")) {
			o->lat_out = val;
		} else if (!other || other(name, val, arg)) {
			usage_exit(usage, "unknown option %s", name);
		}
	}
}

struct thr {
	pthread_t th;
	int tid;
	bool init_ok;
	uint32_t *lat;
	size_t n, cap;
	uint64_t errors;
};

static struct {
	const struct bench_opts *o;
	const struct bench_ops *ops;
	void *arg;
	pthread_barrier_t ready, go;
	atomic_long issued;
	atomic_int stop;
	uint64_t deadline;
} run;

static void lat_add(struct thr *t, uint64_t ns)
{
	uint32_t *p;

	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 4096;
		p = realloc(t->lat, t->cap * sizeof(*p));
		if (!p) {
			t->cap = t->n;
			return;
		}
		t->lat = p;
	}
	t->lat[t->n++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

static void *thread_main(void *p)
{
	struct thr *t = p;
	void *ctx = run.ops->thread_init(t->tid, run.arg);
	uint64_t t0, t1;
	long seq;
	int rc;

	t->init_ok = ctx != NULL;
	pthread_barrier_wait(&run.ready);
	pthread_barrier_wait(&run.go);
	if (!ctx || atomic_load(&run.stop))
		goto out;
	for (;;) {
		if (atomic_load(&run.stop))
			break;
		seq = atomic_fetch_add(&run.issued, 1);
		if (seq >= run.o->count)
			break;
		t0 = bench_now_ns();
		rc = run.ops->op(ctx, seq);
		t1 = bench_now_ns();
		if (rc)
			t->errors++;
		else
			lat_add(t, t1 - t0);
		if (t1 >= run.deadline)
			atomic_store(&run.stop, 1);
		/* a server that fails every request at once ends the run */
		if (t->errors > 1000 && t->errors > t->n)
			atomic_store(&run.stop, 1);
	}
out:
	if (ctx && run.ops->thread_fini)
		run.ops->thread_fini(ctx);
	return NULL;
}

/* Busy CPU time of the whole machine, in microseconds (/proc/stat). */
uint64_t bench_vm_cpu_us(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	long hz = sysconf(_SC_CLK_TCK);
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 7 || hz <= 0)
		return 0;
	/* user nice system [idle iowait] irq softirq steal */
	return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * 1000000ull / hz;
}

uint64_t bench_self_cpu_us(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000ull +
	       ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

void bench_latencies(const struct bench_opts *o, uint32_t *lat, size_t n,
		     struct bench_result *r)
{
	FILE *f;

	if (o->lat_out) {
		f = fopen(o->lat_out, "a");
		if (!f || fwrite(lat, sizeof(*lat), n, f) != n)
			fprintf(stderr, "%s: cannot write %s: %s\n",
				bench_prog, o->lat_out, strerror(errno));
		if (f)
			fclose(f);
	}
	bench_sort(lat, n);
	r->p50 = bench_pctl(lat, n, 0.50);
	r->p99 = bench_pctl(lat, n, 0.99);
	r->p999 = bench_pctl(lat, n, 0.999);
	r->max = n ? lat[n - 1] : 0;
}

int bench_run(const struct bench_opts *o, const struct bench_ops *ops,
	      void *arg, struct bench_result *r)
{
	struct thr *t = calloc(o->threads, sizeof(*t));
	uint64_t start, end, vm0, cl0;
	uint32_t *all = NULL;
	size_t n = 0, k;
	bool init_ok = true;
	int i;

	memset(r, 0, sizeof(*r));
	if (!t)
		return -1;
	run.o = o;
	run.ops = ops;
	run.arg = arg;
	atomic_store(&run.issued, 0);
	atomic_store(&run.stop, 0);
	pthread_barrier_init(&run.ready, NULL, o->threads + 1);
	pthread_barrier_init(&run.go, NULL, o->threads + 1);
	for (i = 0; i < o->threads; i++) {
		t[i].tid = i;
		if (pthread_create(&t[i].th, NULL, thread_main, &t[i])) {
			fprintf(stderr, "%s: cannot start thread %d\n",
				bench_prog, i);
			exit(1);
		}
	}
	pthread_barrier_wait(&run.ready);
	for (i = 0; i < o->threads; i++)
		init_ok &= t[i].init_ok;
	if (!init_ok)
		atomic_store(&run.stop, 1);
	vm0 = bench_vm_cpu_us();
	cl0 = bench_self_cpu_us();
	start = bench_now_ns();
	run.deadline = start + (uint64_t)(o->seconds * 1e9);
	pthread_barrier_wait(&run.go);
	for (i = 0; i < o->threads; i++)
		pthread_join(t[i].th, NULL);
	end = bench_now_ns();
	r->vm_cpu_us = bench_vm_cpu_us() - vm0;
	r->client_cpu_us = bench_self_cpu_us() - cl0;
	r->secs = (end - start) / 1e9;

	for (i = 0; i < o->threads; i++) {
		r->errors += t[i].errors;
		r->ok += t[i].n;
	}
	all = malloc((r->ok + 1) * sizeof(*all));
	for (i = 0; all && i < o->threads; i++) {
		for (k = 0; k < t[i].n; k++)
			all[n++] = t[i].lat[k];
	}
	if (all)
		bench_latencies(o, all, n, r);
	free(all);
	for (i = 0; i < o->threads; i++)
		free(t[i].lat);
	free(t);
	pthread_barrier_destroy(&run.ready);
	pthread_barrier_destroy(&run.go);
	if (!init_ok)
		return -1;
	return r->ok ? 0 : -1;
}

void bench_print(const struct bench_opts *o, const struct bench_result *r,
		 const char *extra)
{
	double recs = (double)r->ok * o->batch;
	double secs = r->secs > 0 ? r->secs : 1e-9;

	printf("RESULT ok=%llu records=%.0f payload_bytes=%.0f secs=%.3f "
	       "rec_per_s=%.1f mb_per_s=%.3f p50_us=%.1f p99_us=%.1f "
	       "p999_us=%.1f max_us=%.1f errors=%llu vm_cpu_us=%llu "
	       "client_cpu_us=%llu threads=%d size=%d batch=%d%s%s\n",
	       (unsigned long long)r->ok, recs, recs * o->size, r->secs,
	       recs / secs, recs * o->size / secs / 1e6, r->p50 / 1e3,
	       r->p99 / 1e3, r->p999 / 1e3, r->max / 1e3,
	       (unsigned long long)r->errors,
	       (unsigned long long)r->vm_cpu_us,
	       (unsigned long long)r->client_cpu_us, o->threads, o->size,
	       o->batch, extra ? " " : "", extra ? extra : "");
	fflush(stdout);
}

int bench_status(const struct bench_result *r)
{
	if (!r->ok)
		return 1;
	return r->errors ? 3 : 0;
}
