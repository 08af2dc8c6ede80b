// SPDX-License-Identifier: GPL-2.0
/*
 * bench_pctl - percentiles of the latencies the load generators appended
 * to their --lat-out files (native u32 nanoseconds each), pooled over all
 * the files given:
 *
 *	PCTL n=N p50_us=... p90_us=... p99_us=... p999_us=... max_us=...
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

int main(int argc, char **argv)
{
	uint32_t *v = NULL, *p;
	size_t n = 0, cap = 0, got;
	FILE *f;
	int i;

	bench_prog = "bench_pctl";
	if (argc < 2) {
		fputs("Usage: bench_pctl FILE...\n", stderr);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		f = fopen(argv[i], "r");
		if (!f) {
			fprintf(stderr, "%s: %s: %s\n", bench_prog, argv[i],
				strerror(errno));
			continue;
		}
		do {
			if (n == cap) {
				cap = cap ? cap * 2 : 65536;
				p = realloc(v, cap * sizeof(*v));
				if (!p)
					return 1;
				v = p;
			}
			got = fread(v + n, sizeof(*v), cap - n, f);
			n += got;
		} while (got);
		fclose(f);
	}
	if (!n) {
		printf("PCTL n=0\n");
		return 1;
	}
	bench_sort(v, n);
	printf("PCTL n=%zu p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f\n",
	       n, bench_pctl(v, n, 0.5) / 1e3, bench_pctl(v, n, 0.9) / 1e3,
	       bench_pctl(v, n, 0.99) / 1e3, bench_pctl(v, n, 0.999) / 1e3,
	       v[n - 1] / 1e3);
	free(v);
	return 0;
}
