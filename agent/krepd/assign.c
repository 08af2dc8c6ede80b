// SPDX-License-Identifier: GPL-2.0
/*
 * Replica assignment of a new topic (assign.h).
 */
#include <errno.h>

#include "assign.h"

/* Kafka's AdminUtils.replicaIndex */
static size_t replica_index(size_t first, size_t shift, size_t j, size_t n)
{
	return (first + 1 + (shift + j) % (n - 1)) % n;
}

int krep_assign(const uint32_t *brokers, size_t n, uint32_t partitions,
		uint32_t rf, uint32_t start, uint32_t shift, uint32_t *out)
{
	size_t first, sh = shift % (n ? n : 1);
	uint32_t p, j;

	if (!rf || rf > n)
		return -EINVAL;
	start %= n;
	for (p = 0; p < partitions; p++) {
		if (p > 0 && p % n == 0)
			sh++;
		first = (p + start) % n;
		out[(size_t)p * rf] = brokers[first];
		for (j = 0; j + 1 < rf; j++)
			out[(size_t)p * rf + j + 1] =
				brokers[replica_index(first, sh, j, n)];
	}
	return 0;
}
