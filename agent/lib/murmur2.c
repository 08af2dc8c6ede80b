// SPDX-License-Identifier: GPL-2.0
/*
 * murmur2 as Kafka's Java client computes it (see murmur2.h): 32-bit
 * MurmurHash2 over little-endian 4-byte words, the seed xored with the
 * length, Java's signed int arithmetic done in uint32_t.
 */
#include "murmur2.h"

#define MURMUR2_SEED	0x9747b28cU
#define MURMUR2_M	0x5bd1e995U
#define MURMUR2_R	24

int32_t krep_murmur2(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t h = MURMUR2_SEED ^ (uint32_t)len, k;
	size_t i, words = len / 4;

	for (i = 0; i < words; i++, p += 4) {
		k = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
		    (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		k *= MURMUR2_M;
		k ^= k >> MURMUR2_R;
		k *= MURMUR2_M;
		h *= MURMUR2_M;
		h ^= k;
	}
	switch (len % 4) {
	case 3:
		h ^= (uint32_t)p[2] << 16;
		/* fall through */
	case 2:
		h ^= (uint32_t)p[1] << 8;
		/* fall through */
	case 1:
		h ^= p[0];
		h *= MURMUR2_M;
	}
	h ^= h >> 13;
	h *= MURMUR2_M;
	h ^= h >> 15;
	return (int32_t)h;
}

uint32_t krep_key_partition(const void *key, size_t len, uint32_t npartitions)
{
	return ((uint32_t)krep_murmur2(key, len) & 0x7fffffffU) % npartitions;
}
