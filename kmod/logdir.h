/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: a broker's log directory (docs/design.md §6).
 *
 * meta.properties names the cluster and broker the directory belongs to;
 * replication-offset-checkpoint (HW), recovery-point-offset-checkpoint and
 * log-start-offset-checkpoint hold one line per partition, in Kafka's text
 * format, rewritten atomically every log_checkpoint_ms and at a clean
 * shutdown, which also leaves .kafka_cleanshutdown for the next load.
 * The directory is set while the broker has no topics, and kept until the
 * broker goes; krep_net.topics_lock guards krep_net.logdir.
 */
#ifndef _KREP_LOGDIR_H
#define _KREP_LOGDIR_H

#include <linux/path.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/krep.h>

struct krep_net;
struct krep_disk_ckpt;

struct krep_ckpt_entry;

/* the longest log directory path BROKER_GET gives */
#define KREP_LOG_DIR_NAME_MAX	1024

struct krep_logdir {
	struct path root;
	struct file *lock;		/* .lock, flock()ed while we hold it */
	struct krep_net *kn;
	bool clean;			/* found a clean-shutdown marker */
	s64 broker_id;			/* meta.properties' */
	char cluster_id[KREP_CLUSTER_ID_MAX + 1];
	unsigned int nckpt;		/* what the checkpoints held at load */
	struct krep_ckpt_entry *ckpt;
	/* partition dirs not checked since an unclean shutdown */
	char **pending;
	unsigned int npending;
	struct delayed_work ckpt_work;	/* every log_checkpoint_ms */
	bool stopped;			/* ckpt_work's gate */
};

int krep_logdir_open_path(const char *path, struct path *root);
int krep_logdir_open_fd(int fd, struct path *root);
int krep_logdir_set(struct krep_net *kn, struct path *root, s64 broker_id,
		    const char *cluster_id, const char **why);
int krep_logdir_check_cfg(struct krep_net *kn, s64 broker_id,
			  const char *cluster_id, const char **why);
int krep_logdir_name(struct krep_net *kn, char *buf, size_t size);
void krep_logdir_lookup(struct krep_logdir *ld, const char *topic,
			u32 partition, struct krep_disk_ckpt *ck);
void krep_logdir_forget(struct krep_net *kn, const char *name);
struct krep_topic;
void krep_logdir_publish(struct krep_net *kn, struct krep_topic *t);
void krep_logdir_shutdown(struct krep_net *kn);

#endif /* _KREP_LOGDIR_H */
