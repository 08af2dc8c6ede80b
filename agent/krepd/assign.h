/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Replica assignment of a new topic by the controller: Kafka's
 * rack-unaware rule (AdminUtils.assignReplicasToBrokers). Partition p's
 * first replica, its preferred leader, is broker (p + start) mod n, so
 * preferred leaders go round the brokers; the other replicas follow it at
 * a distance that grows by one every n partitions, so that the followers
 * of one broker's partitions spread over the others too.
 */
#ifndef KREP_AGENT_ASSIGN_H
#define KREP_AGENT_ASSIGN_H

#include <stddef.h>
#include <stdint.h>

/*
 * Assign @partitions x @rf replicas over @brokers (@n ids, sorted),
 * starting at broker index @start with replica shift @shift (Kafka draws
 * both at random; any value works, it is taken mod n). @out gets
 * @partitions * @rf ids, partition by partition, preferred leader first.
 * Returns 0, or -EINVAL when @rf is 0 or larger than @n.
 */
int krep_assign(const uint32_t *brokers, size_t n, uint32_t partitions,
		uint32_t rf, uint32_t start, uint32_t shift, uint32_t *out);

#endif
