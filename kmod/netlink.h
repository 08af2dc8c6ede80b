/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: the "krep" generic netlink family.
 */
#ifndef _KREP_NETLINK_H
#define _KREP_NETLINK_H

int krep_netlink_init(void);
void krep_netlink_exit(void);

#endif /* _KREP_NETLINK_H */
