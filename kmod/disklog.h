/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: a partition's log in Kafka's on-disk layout (docs/design.md §6).
 *
 * <log dir>/<topic>-<partition>/ holds the segments
 * <20-digit base offset>.log (the RecordBatch v2 batches as stored),
 * .index (relative offset, position) and .timeindex (timestamp, relative
 * offset), and leader-epoch-checkpoint. The pages in memory stay the log
 * every reader is served from; a work item writes each change behind the
 * appends (grow, truncate, log start), and a load recovers the memory log
 * from the files.
 */
#ifndef _KREP_DISKLOG_H
#define _KREP_DISKLOG_H

#include <linux/types.h>

struct krep_logdir;
struct krep_partition;
struct krep_status;

struct krep_disk_ckpt {
	u64 hw;
	u64 log_start;
	u64 recovery;
	bool has_hw, has_start, has_recovery;
};

int krep_disk_open(struct krep_partition *p, struct krep_logdir *ld,
		   struct krep_status *st);
int krep_disk_flush(struct krep_partition *p);
void krep_disk_detach_dir(struct krep_partition *p);
void krep_disk_kick(struct krep_partition *p);
void krep_disk_close(struct krep_partition *p, bool remove);
u64 krep_disk_recovery_point(struct krep_partition *p);
bool krep_disk_failed(const struct krep_partition *p);

int krep_disk_init(void);
void krep_disk_exit(void);

#endif /* _KREP_DISKLOG_H */
