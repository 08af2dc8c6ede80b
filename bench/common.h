/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every load generator of the benchmark shares: the options that
 * bound a run, the writer threads, per-request latencies, CPU time and
 * the one RESULT line a run prints.
 *
 * A run is N writer threads, each with its own connection, each sending
 * one request (a batch of records) and waiting for it to be committed
 * before the next: N requests are in flight. It stops after --count
 * requests in all or --seconds, whichever comes first, so every load loop
 * is bounded in both.
 *
 * Output, one line on stdout:
 *
 *	RESULT ok=REQUESTS records=R payload_bytes=B secs=S rec_per_s=...
 *	       mb_per_s=... p50_us=... p99_us=... p999_us=... max_us=...
 *	       errors=E vm_cpu_us=... client_cpu_us=... [system's own keys]
 *
 * vm_cpu_us is the busy CPU time of the whole VM over the run (from
 * /proc/stat: servers, kernel and this client), client_cpu_us that of this
 * process. With --lat-out every request's latency is appended to a file
 * as a native-endian u32 of nanoseconds, for percentiles pooled over trials
 * (bench_pctl).
 */
#ifndef KREP_BENCH_COMMON_H
#define KREP_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BENCH_THREADS_MAX	64

struct bench_opts {
	int threads;		/* writers, each with one request in flight */
	int size;		/* payload bytes per record */
	int batch;		/* records per request */
	long count;		/* requests in all, at most */
	double seconds;		/* run time, at most */
	const char *lat_out;	/* append latencies here (u32 ns each) */
};

struct bench_ops {
	/* per-thread set-up (connect); NULL on failure, after printing why */
	void *(*thread_init)(int tid, void *arg);
	/* one request, waiting for its commit: 0, or -1 after printing why */
	int (*op)(void *tctx, uint64_t seq);
	void (*thread_fini)(void *tctx);
};

struct bench_result {
	uint64_t ok, errors;
	double secs;
	uint32_t p50, p99, p999, max;	/* ns */
	uint64_t vm_cpu_us, client_cpu_us;
};

extern const char *bench_prog;

/*
 * Parse the common options (-t/--threads, -s/--size, -b/--batch,
 * -n/--count, -d/--seconds, -l/--lat-out) out of argv; the others are
 * handed to @other(name, value, arg), which returns 0 or -1 (unknown).
 * Long options only take "--name value". Exits 2 on a usage error.
 */
void bench_parse(int argc, char **argv, struct bench_opts *o,
		 int (*other)(const char *name, const char *val, void *arg),
		 void *arg, const char *usage);

/* Run the threads; 0 when at least one request succeeded. */
int bench_run(const struct bench_opts *o, const struct bench_ops *ops,
	      void *arg, struct bench_result *r);

/* The RESULT line; @extra (may be NULL) is appended as it is. */
void bench_print(const struct bench_opts *o, const struct bench_result *r,
		 const char *extra);

/* Exit status for a run: 0 all fine, 3 some errors, 1 nothing worked. */
int bench_status(const struct bench_result *r);

/*
 * Append @n latencies (ns) to o->lat_out if set, sort them and fill the
 * percentiles of @r.
 */
void bench_latencies(const struct bench_opts *o, uint32_t *lat, size_t n,
		     struct bench_result *r);

uint64_t bench_now_ns(void);
/* Busy CPU time of the whole machine (/proc/stat), of this process, µs */
uint64_t bench_vm_cpu_us(void);
uint64_t bench_self_cpu_us(void);
/* Fill @buf with printable bytes that differ from record to record. */
void bench_fill(uint8_t *buf, size_t len, uint64_t seed);
uint32_t bench_pctl(uint32_t *sorted, size_t n, double q);
void bench_sort(uint32_t *v, size_t n);

#endif
