/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kafka's default partitioner for keyed records: murmur2 of the key's
 * bytes (org.apache.kafka.common.utils.Utils.murmur2, seed 0x9747b28c),
 * made positive by clearing the sign bit, modulo the partition count.
 * The same key lands on the same partition as with a Java, librdkafka
 * (partitioner=murmur2_random) or kafka-python client.
 */
#ifndef KREP_AGENT_MURMUR2_H
#define KREP_AGENT_MURMUR2_H

#include <stddef.h>
#include <stdint.h>

/* Utils.murmur2(data): the signed 32-bit hash Java returns. */
int32_t krep_murmur2(const void *data, size_t len);

/* toPositive(murmur2(key)) % @npartitions; @npartitions must be >= 1. */
uint32_t krep_key_partition(const void *key, size_t len,
			    uint32_t npartitions);

#endif
