/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepd --etcd without --controller, beside a broker: register the broker
 * of krepd's network namespace in etcd, under the lease of this krepd, at
 *
 *   P/brokers/ids/ID   {"version":1,"broker_id":ID,"cluster_id":"...",
 *                       "incarnation":"HEX","host":"...","pid":N}
 *
 * as a Kafka broker registered its ephemeral znode /brokers/ids/ID: when
 * this krepd or its host dies, the lease runs out and the key goes; when
 * the broker stops answering (module unloaded, namespace gone, broker id
 * unset), this krepd revokes the lease at once. The controllers show the
 * registrations ("registered" in krepctl elect --brokers).
 */
#ifndef KREP_AGENT_ETCD_REGISTER_H
#define KREP_AGENT_ETCD_REGISTER_H

#include <stdint.h>

#include "ha.h"

struct krep_reg;

/* NULL with the reason logged. */
struct krep_reg *krep_reg_open(const struct krep_ha_opts *o, uint32_t lease_ms);
/* Revoke the lease (the key goes) and free. */
void krep_reg_close(struct krep_reg *r);
/* Milliseconds until krep_reg_tick() has work (for poll()). */
int krep_reg_timeout(const struct krep_reg *r);
/* Read the broker, keep the lease and the key up to date, when due. */
void krep_reg_tick(struct krep_reg *r);

#endif
