/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: module parameters, the configuration of the initial namespace.
 */
#ifndef _KREP_PARAM_H
#define _KREP_PARAM_H

#include <linux/list.h>
#include <linux/types.h>

struct krep_broker_cfg;

u64 krep_param_log_memory_max(void);
const char *krep_param_log_dir(void);
u32 krep_param_log_checkpoint_ms(void);
u32 krep_param_hello_timeout_ms(void);
u32 krep_param_fetch_timeout_ms(void);
u32 krep_param_reconnect_backoff_max_ms(void);
u32 krep_param_socket_timeout_ms(void);
u32 krep_param_close_log_interval_ms(void);
bool krep_param_replication_tls(void);
u32 krep_param_kafka_idle_ms(void);
u32 krep_param_kafka_request_ms(void);
u32 krep_param_kafka_wait_max_ms(void);
u32 krep_param_kafka_max_request_bytes(void);
u32 krep_param_kafka_max_connections(void);
u32 krep_param_producers_max(void);
u32 krep_param_topics_max(void);
u32 krep_param_partitions_max(void);
u32 krep_param_producer_id_expiration_ms(void);
int krep_param_parse(struct krep_broker_cfg **cfgp, struct list_head *topics);

#endif /* _KREP_PARAM_H */
