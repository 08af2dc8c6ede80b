/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: ISR expiration.
 */
#ifndef _KREP_ISR_H
#define _KREP_ISR_H

struct krep_net;
struct krep_partition;

void krep_isr_init(struct krep_net *kn);
void krep_isr_schedule(struct krep_net *kn);
void krep_isr_stop(struct krep_net *kn);
void krep_isr_change(struct krep_partition *p, const unsigned long *isr);

#endif /* _KREP_ISR_H */
