// SPDX-License-Identifier: GPL-2.0
/*
 * krep: a broker's log directory (see logdir.h).
 *
 * Timers: krep_logdir.ckpt_work, armed when the directory is set and by
 * itself every log_checkpoint_ms while ckpt's gate (stopped) is open;
 * stopped with cancel_delayed_work_sync() before the directory goes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dcache.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/namei.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "broker.h"
#include "disklog.h"
#include "logdir.h"
#include "param.h"
#include "partition.h"
#include "topic.h"
#include "vfs.h"

#define KREP_META_MAX		4096
#define KREP_CKPT_FILE_MAX	(64 << 20)
#define KREP_CLEAN_MARKER	".kafka_cleanshutdown"

enum { CKPT_HW, CKPT_RECOVERY, CKPT_START, CKPT_FILES };

static const char * const ckpt_file[CKPT_FILES] = {
	[CKPT_HW] = "replication-offset-checkpoint",
	[CKPT_RECOVERY] = "recovery-point-offset-checkpoint",
	[CKPT_START] = "log-start-offset-checkpoint",
};

struct krep_ckpt_entry {
	char topic[KREP_TOPIC_NAME_MAX + 1];
	u32 partition;
	u64 val[CKPT_FILES];
	u8 has;				/* BIT(CKPT_*) */
	bool live;			/* hosted now: its partition writes it */
};

/* insmod log_dir=PATH: the only path the module resolves itself */
int krep_logdir_open_path(const char *path, struct path *root)
{
	int err = kern_path(path, LOOKUP_FOLLOW | LOOKUP_DIRECTORY, root);

	if (!err && !d_is_dir(root->dentry)) {
		path_put(root);
		err = -ENOTDIR;
	}
	return err;
}

/* krepctl's open directory, passed over netlink */
int krep_logdir_open_fd(int fd, struct path *root)
{
	struct fd f = fdget(fd);

	if (!f.file)
		return -EBADF;
	if (!d_is_dir(f.file->f_path.dentry)) {
		fdput(f);
		return -ENOTDIR;
	}
	*root = f.file->f_path;
	path_get(root);
	fdput(f);
	return 0;
}

/* the key=value of one meta.properties line, or NULL */
static char *prop(char *line, const char *key)
{
	size_t n = strlen(key);

	return !strncmp(line, key, n) && line[n] == '=' ? line + n + 1 : NULL;
}

/*
 * meta.properties: written when absent; otherwise it must name this
 * broker (and this cluster, when both know theirs)
 */
static int check_meta(struct krep_logdir *ld, s64 broker_id,
		      const char *cluster_id, const char **why)
{
	char *buf, *cur, *line, *v;
	s64 id = KREP_BROKER_ID_UNSET;
	ssize_t len;
	int err;

	buf = kmalloc(KREP_META_MAX, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	len = krep_vfs_read_small(&ld->root, "meta.properties", buf,
				  KREP_META_MAX);
	if (len == -ENOENT) {
		len = scnprintf(buf, KREP_META_MAX,
				"#\n#Written by krep\nversion=0\nbroker.id=%lld\n%s%s%s",
				broker_id, *cluster_id ? "cluster.id=" : "",
				cluster_id, *cluster_id ? "\n" : "");
		err = krep_vfs_write_atomic(&ld->root, "meta.properties", buf,
					    len);
		if (err)
			*why = "cannot write meta.properties in the log directory";
		ld->broker_id = broker_id;
		strscpy(ld->cluster_id, cluster_id, sizeof(ld->cluster_id));
		goto out;
	}
	err = len < 0 ? len : 0;
	if (err) {
		*why = "cannot read meta.properties in the log directory";
		goto out;
	}
	cur = buf;
	while ((line = strsep(&cur, "\n"))) {
		line = strim(line);
		v = prop(line, "broker.id") ?: prop(line, "node.id");
		if (v && (kstrtoll(v, 10, &id) || id < 0))
			id = -2;
		v = prop(line, "cluster.id");
		if (v)
			strscpy(ld->cluster_id, v, sizeof(ld->cluster_id));
	}
	err = -EINVAL;
	if (id < 0)
		*why = "meta.properties in the log directory names no valid broker.id";
	else if (id != broker_id)
		*why = "the log directory belongs to another broker id (meta.properties)";
	else if (*ld->cluster_id && *cluster_id &&
		 strcmp(ld->cluster_id, cluster_id))
		*why = "the log directory belongs to another cluster (meta.properties)";
	else
		err = 0;
	ld->broker_id = id;
out:
	kfree(buf);
	return err;
}

static struct krep_ckpt_entry *find_entry(struct krep_ckpt_entry *e,
					  unsigned int n, const char *topic,
					  u32 partition)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (e[i].partition == partition && !strcmp(e[i].topic, topic))
			return &e[i];
	}
	return NULL;
}

/* one checkpoint file into ld->ckpt; a malformed one is skipped, logged */
static int load_ckpt(struct krep_logdir *ld, int which, char *buf)
{
	unsigned int ver, count, n = 0, part;
	struct krep_ckpt_entry *e, *more;
	char *cur = buf, *line, *topic;
	const char *why;
	ssize_t len;
	u64 val;

	len = krep_vfs_read_small(&ld->root, ckpt_file[which], buf,
				  KREP_CKPT_FILE_MAX);
	if (len == -ENOENT)
		return 0;
	if (len < 0)
		return len;
	line = strsep(&cur, "\n");
	if (!line || kstrtouint(line, 10, &ver) || ver)
		goto bad;
	line = strsep(&cur, "\n");
	if (!line || kstrtouint(line, 10, &count))
		goto bad;
	while ((line = strsep(&cur, "\n")) && *line) {
		topic = strsep(&line, " ");
		if (!line || sscanf(line, "%u %llu", &part, &val) != 2 ||
		    krep_topic_name_check(topic, strlen(topic), &why))
			goto bad;
		e = find_entry(ld->ckpt, ld->nckpt, topic, part);
		if (!e) {
			more = krealloc_array(ld->ckpt, ld->nckpt + 1,
					      sizeof(*more), GFP_KERNEL);
			if (!more)
				return -ENOMEM;
			ld->ckpt = more;
			e = &ld->ckpt[ld->nckpt++];
			memset(e, 0, sizeof(*e));
			strscpy(e->topic, topic, sizeof(e->topic));
			e->partition = part;
		}
		e->val[which] = val;
		e->has |= BIT(which);
		n++;
	}
	if (n == count)
		return 0;
bad:
	pr_warn("%s in the log directory is malformed: ignored\n",
		ckpt_file[which]);
	return 0;
}

/*
 * what the checkpoints held for a partition being created (topics_lock
 * held); from now on the partition writes its own lines
 */
void krep_logdir_lookup(struct krep_logdir *ld, const char *topic,
			u32 partition, struct krep_disk_ckpt *ck)
{
	struct krep_ckpt_entry *e;

	lockdep_assert_held(&ld->kn->topics_lock);
	memset(ck, 0, sizeof(*ck));
	e = find_entry(ld->ckpt, ld->nckpt, topic, partition);
	if (!e)
		return;
	e->live = true;
	ck->hw = e->val[CKPT_HW];
	ck->has_hw = e->has & BIT(CKPT_HW);
	ck->recovery = e->val[CKPT_RECOVERY];
	ck->has_recovery = e->has & BIT(CKPT_RECOVERY);
	ck->log_start = e->val[CKPT_START];
	ck->has_start = e->has & BIT(CKPT_START);
}

/* a growing text buffer for the checkpoint files */
struct tbuf {
	char *s;
	size_t len, cap;
	unsigned int lines;
	bool oom;
};

static void tb_line(struct tbuf *t, const char *topic, u32 part, u64 val)
{
	size_t need = strlen(topic) + 2 * 21 + 3;
	char *more;

	if (t->oom)
		return;
	if (t->len + need > t->cap) {
		more = kvrealloc(t->s, t->cap, t->cap * 2 + need + 256,
				 GFP_KERNEL);
		if (!more) {
			t->oom = true;
			return;
		}
		t->s = more;
		t->cap = t->cap * 2 + need + 256;
	}
	t->len += scnprintf(t->s + t->len, t->cap - t->len, "%s %u %llu\n",
			    topic, part, val);
	t->lines++;
}

/*
 * The three checkpoint files from the hosted partitions, topics_lock
 * held. @flush: write every partition's log out first (a clean
 * shutdown). Return: 0 when all of it reached the disk.
 */
static int write_ckpts(struct krep_logdir *ld, bool flush)
{
	struct krep_net *kn = ld->kn;
	struct tbuf t[CKPT_FILES] = {};
	struct krep_topic *top;
	int i, err = 0;
	u32 k;

	lockdep_assert_held(&kn->topics_lock);
	list_for_each_entry(top, &kn->topics, node) {
		for (k = 0; k < top->npartitions; k++) {
			struct krep_partition *p = top->parts[k];
			u64 hw, start;

			if (!p)
				continue;
			if (flush)
				err = krep_disk_flush(p) ?: err;
			mutex_lock(&p->lock);
			hw = p->hw;
			start = p->log.start_offset;
			if (p->disk) {
				tb_line(&t[CKPT_HW], top->name, k, hw);
				tb_line(&t[CKPT_RECOVERY], top->name, k,
					krep_disk_recovery_point(p));
				tb_line(&t[CKPT_START], top->name, k, start);
			}
			mutex_unlock(&p->lock);
		}
	}
	/* partitions of topics not created since the load keep their lines */
	for (k = 0; k < ld->nckpt; k++) {
		struct krep_ckpt_entry *e = &ld->ckpt[k];

		for (i = 0; i < CKPT_FILES && !e->live; i++) {
			if (e->has & BIT(i))
				tb_line(&t[i], e->topic, e->partition,
					e->val[i]);
		}
	}
	for (i = 0; i < CKPT_FILES; i++) {
		char head[24];
		char *buf;
		int n;

		if (t[i].oom) {
			err = -ENOMEM;
			continue;
		}
		n = scnprintf(head, sizeof(head), "0\n%u\n", t[i].lines);
		buf = kvmalloc(n + t[i].len, GFP_KERNEL);
		if (!buf) {
			err = -ENOMEM;
			continue;
		}
		memcpy(buf, head, n);
		if (t[i].len)
			memcpy(buf + n, t[i].s, t[i].len);
		err = krep_vfs_write_atomic(&ld->root, ckpt_file[i], buf,
					    n + t[i].len) ?: err;
		kvfree(buf);
	}
	for (i = 0; i < CKPT_FILES; i++)
		kvfree(t[i].s);
	return err;
}

static void ckpt_work(struct work_struct *work)
{
	struct krep_logdir *ld = container_of(to_delayed_work(work),
					      struct krep_logdir, ckpt_work);
	struct krep_net *kn = ld->kn;
	int err = 0;

	mutex_lock(&kn->topics_lock);
	if (kn->logdir == ld)
		err = write_ckpts(ld, false);
	mutex_unlock(&kn->topics_lock);
	if (err)
		pr_warn_ratelimited("writing the log directory's checkpoints failed (%d)\n",
				    err);
	if (!READ_ONCE(ld->stopped))
		queue_delayed_work(system_unbound_wq, &ld->ckpt_work,
				   msecs_to_jiffies(krep_param_log_checkpoint_ms()));
}

static void logdir_free(struct krep_logdir *ld)
{
	if (!ld)
		return;
	WRITE_ONCE(ld->stopped, true);
	cancel_delayed_work_sync(&ld->ckpt_work);
	path_put(&ld->root);
	kfree(ld->ckpt);
	kfree(ld);
}

static struct krep_logdir *logdir_new(struct krep_net *kn, struct path *root,
				      s64 broker_id, const char *cluster_id,
				      const char **why)
{
	struct krep_logdir *ld;
	char *buf;
	int err, i;

	ld = kzalloc(sizeof(*ld), GFP_KERNEL);
	if (!ld) {
		path_put(root);
		return ERR_PTR(-ENOMEM);
	}
	ld->root = *root;		/* the reference is ours now */
	ld->kn = kn;
	INIT_DELAYED_WORK(&ld->ckpt_work, ckpt_work);
	err = check_meta(ld, broker_id, cluster_id, why);
	if (err)
		goto fail;
	buf = kvmalloc(KREP_CKPT_FILE_MAX, GFP_KERNEL);
	if (!buf) {
		err = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < CKPT_FILES && !err; i++)
		err = load_ckpt(ld, i, buf);
	kvfree(buf);
	if (err) {
		*why = "cannot read the log directory's checkpoint files";
		goto fail;
	}
	/* as Kafka: the marker covers this load only */
	err = krep_vfs_unlink(&ld->root, KREP_CLEAN_MARKER);
	ld->clean = !err;
	if (err && err != -ENOENT) {
		*why = "cannot remove the log directory's clean-shutdown marker";
		goto fail;
	}
	return ld;
fail:
	logdir_free(ld);
	return ERR_PTR(err);
}

/**
 * krep_logdir_set - give the broker its log directory, or none
 * @kn: the broker, cfg_lock held
 * @root: the directory (the reference is taken over), or NULL for none
 * @broker_id: the broker's id (set)
 * @cluster_id: its cluster id, or ""
 * @why: the reason on failure
 *
 * Only while the broker has no topics: the partitions created afterwards
 * recover from the directory.
 *
 * Return: 0, -EBUSY with topics, -EINVAL for a directory of another
 * broker or cluster, or the VFS's error.
 */
int krep_logdir_set(struct krep_net *kn, struct path *root, s64 broker_id,
		    const char *cluster_id, const char **why)
{
	struct krep_logdir *ld = NULL, *old;

	lockdep_assert_held(&kn->cfg_lock);
	if (krep_topics_exist(kn)) {
		if (root)
			path_put(root);
		*why = "the log directory can change only while the broker has no topics";
		return -EBUSY;
	}
	if (root) {
		ld = logdir_new(kn, root, broker_id, cluster_id, why);
		if (IS_ERR(ld))
			return PTR_ERR(ld);
	}
	mutex_lock(&kn->topics_lock);
	if (!list_empty(&kn->topics)) {
		mutex_unlock(&kn->topics_lock);
		logdir_free(ld);
		*why = "the log directory can change only while the broker has no topics";
		return -EBUSY;
	}
	old = kn->logdir;
	kn->logdir = ld;
	if (ld)
		queue_delayed_work(system_unbound_wq, &ld->ckpt_work,
				   msecs_to_jiffies(krep_param_log_checkpoint_ms()));
	mutex_unlock(&kn->topics_lock);
	logdir_free(old);
	return 0;
}

/* topic @name was deleted (topics_lock held): its lines go */
void krep_logdir_forget(struct krep_net *kn, const char *name)
{
	struct krep_logdir *ld = kn->logdir;
	unsigned int i;

	lockdep_assert_held(&kn->topics_lock);
	for (i = 0; ld && i < ld->nckpt; i++) {
		if (!strcmp(ld->ckpt[i].topic, name)) {
			ld->ckpt[i].has = 0;
			ld->ckpt[i].live = false;
		}
	}
}

/* a new broker id or cluster id must still match the directory's */
int krep_logdir_check_cfg(struct krep_net *kn, s64 broker_id,
			  const char *cluster_id, const char **why)
{
	struct krep_logdir *ld = kn->logdir;

	lockdep_assert_held(&kn->cfg_lock);
	if (!ld)
		return 0;
	if (broker_id != ld->broker_id) {
		*why = "the log directory belongs to the current broker id: set log-dir none first";
		return -EBUSY;
	}
	if (*ld->cluster_id && *cluster_id && strcmp(ld->cluster_id, cluster_id)) {
		*why = "the log directory belongs to another cluster: set log-dir none first";
		return -EBUSY;
	}
	return 0;
}

/* the directory's path as the caller's root sees it, for BROKER_GET */
int krep_logdir_name(struct krep_net *kn, char *buf, size_t size)
{
	char *p;
	int err = -ENOENT;

	mutex_lock(&kn->topics_lock);
	if (kn->logdir) {
		p = d_path(&kn->logdir->root, buf, size);
		err = IS_ERR(p) ? PTR_ERR(p) : 0;
		if (!err)
			memmove(buf, p, strlen(p) + 1);
	}
	mutex_unlock(&kn->topics_lock);
	return err;
}

/**
 * krep_logdir_shutdown - the broker goes: write everything out
 * @kn: the broker; nothing changes its logs any more
 *
 * Every partition's log is written and synced, then the checkpoints,
 * then the clean-shutdown marker when all of it succeeded.
 */
void krep_logdir_shutdown(struct krep_net *kn)
{
	struct krep_logdir *ld;
	int err;

	mutex_lock(&kn->topics_lock);
	ld = kn->logdir;
	if (!ld) {
		mutex_unlock(&kn->topics_lock);
		return;
	}
	WRITE_ONCE(ld->stopped, true);
	mutex_unlock(&kn->topics_lock);
	cancel_delayed_work_sync(&ld->ckpt_work);

	mutex_lock(&kn->topics_lock);
	err = write_ckpts(ld, true);
	if (!err)
		err = krep_vfs_write_atomic(&ld->root, KREP_CLEAN_MARKER, "", 0);
	if (err)
		pr_err("log directory: shutdown not clean (%d): the next load checks every batch\n",
		       err);
	kn->logdir = NULL;
	mutex_unlock(&kn->topics_lock);
	logdir_free(ld);
}
