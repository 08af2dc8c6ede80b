/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: module parameters, the configuration of the initial namespace.
 */
#ifndef _KREP_PARAM_H
#define _KREP_PARAM_H

#include <linux/list.h>

struct krep_broker_cfg;

int krep_param_parse(struct krep_broker_cfg **cfgp, struct list_head *topics);

#endif /* _KREP_PARAM_H */
