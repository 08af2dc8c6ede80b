/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: the "krep" generic netlink family. netlink.c holds the family,
 * its op table and the broker ops; nl_topic.c the topic and partition
 * ops; nl_data.c produce, fetch and the other record ops; nl_ctrl.c
 * the controller's ops (LEADER_AND_ISR, OffsetsForLeaderEpoch).
 */
#ifndef _KREP_NETLINK_H
#define _KREP_NETLINK_H

#include <net/genetlink.h>
#include <linux/krep.h>

struct krep_status;
struct krep_partition;

/* the multicast groups, in krep_mcgrps[] order */
enum krep_mcgrp {
	KREP_MCGRP_EVENTS_ID,
};

extern struct genl_family krep_genl_family;

extern const struct nla_policy krep_topic_new_policy[];
extern const struct nla_policy krep_topic_del_policy[];
extern const struct nla_policy krep_topic_get_policy[];
extern const struct nla_policy krep_produce_policy[];
extern const struct nla_policy krep_fetch_policy[];
extern const struct nla_policy krep_list_offsets_policy[];
extern const struct nla_policy krep_delete_records_policy[];
extern const struct nla_policy krep_txn_policy[];

int krep_nl_topic_new(struct sk_buff *skb, struct genl_info *info);
int krep_nl_topic_del(struct sk_buff *skb, struct genl_info *info);
int krep_nl_topic_get(struct sk_buff *skb, struct genl_info *info);
int krep_nl_topic_dump(struct sk_buff *skb, struct netlink_callback *cb);
int krep_nl_partition_dump(struct sk_buff *skb, struct netlink_callback *cb);
int krep_nl_produce(struct sk_buff *skb, struct genl_info *info);
int krep_nl_fetch(struct sk_buff *skb, struct genl_info *info);
int krep_nl_list_offsets(struct sk_buff *skb, struct genl_info *info);
int krep_nl_delete_records(struct sk_buff *skb, struct genl_info *info);
int krep_nl_txn(struct sk_buff *skb, struct genl_info *info);

int krep_nl_leader_and_isr(struct sk_buff *skb, struct genl_info *info);
int krep_nl_epoch_end(struct sk_buff *skb, struct genl_info *info);
extern const struct nla_policy krep_leader_and_isr_policy[];
extern const struct nla_policy krep_epoch_end_policy[];

struct krep_topic;
struct krep_partition *krep_nl_partition(struct genl_info *info,
					 struct krep_topic **tp,
					 struct krep_status *st);
bool krep_nl_require_partition(struct genl_info *info);

int krep_nl_status(struct genl_info *info, int err,
		   const struct krep_status *st);
bool krep_nl_require(struct genl_info *info, int attr, const char *what);
extern const struct nla_policy krep_id_list_policy[KREP_A_MAX + 1];
int krep_nl_parse_ids(struct genl_info *info, struct nlattr *nest, u32 *ids,
		      unsigned int *n);

void krep_nl_alter_isr(struct krep_partition *p, const unsigned long *isr);

int krep_netlink_init(void);
void krep_netlink_exit(void);

#endif /* _KREP_NETLINK_H */
