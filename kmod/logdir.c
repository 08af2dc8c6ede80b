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
#include <linux/bsearch.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>

#include "broker.h"
#include "disklog.h"
#include "logdir.h"
#include "param.h"
#include "partition.h"
#include "topic.h"
#include "vfs.h"

#define KREP_META_MAX		4096
#define KREP_CKPT_FILE_MAX	(16 << 20)
#define KREP_CKPT_MAX		65536		/* lines of each file */
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
	size_t len;
	int err;

	buf = krep_vfs_read_file(&ld->root, "meta.properties", KREP_META_MAX,
				 &len);
	if (PTR_ERR_OR_ZERO(buf) == -ENOENT) {
		buf = kvmalloc(KREP_META_MAX, GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
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
	if (IS_ERR(buf)) {
		*why = "cannot read meta.properties in the log directory";
		return PTR_ERR(buf);
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
	kvfree(buf);
	return err;
}

/*
 * As Kafka: an exclusive flock() on <dir>/.lock for as long as the broker
 * holds the directory, so that no second broker (another namespace's, or a
 * Kafka broker) writes into it; the lock goes with the file's last fput()
 */
static int flock_file(struct file *f, unsigned char type)
{
	struct file_lock fl;
	int err;

	locks_init_lock(&fl);
	fl.fl_flags = FL_FLOCK;
	fl.fl_type = type;
	fl.fl_file = f;
	fl.fl_owner = f;
	fl.fl_pid = current->tgid;
	fl.fl_end = OFFSET_MAX;
	err = locks_lock_file_wait(f, &fl);	/* no FL_SLEEP: -EAGAIN if held */
	if (fl.fl_ops && fl.fl_ops->fl_release_private)
		fl.fl_ops->fl_release_private(&fl);
	return err;
}

static int lock_dir(struct krep_logdir *ld)
{
	struct file *f;
	int err;

	f = krep_vfs_open(&ld->root, ".lock", O_RDWR | O_CREAT);
	if (IS_ERR(f))
		return PTR_ERR(f);
	err = flock_file(f, F_WRLCK);
	if (err) {
		fput(f);
		return err;
	}
	ld->lock = f;
	return 0;
}

static int ckpt_cmp(const void *a, const void *b)
{
	const struct krep_ckpt_entry *x = a, *y = b;
	int c = strcmp(x->topic, y->topic);

	if (c)
		return c;
	return x->partition < y->partition ? -1 : x->partition > y->partition;
}

static struct krep_ckpt_entry *find_entry(struct krep_logdir *ld,
					  const char *topic, u32 partition)
{
	struct krep_ckpt_entry key = { .partition = partition };

	strscpy(key.topic, topic, sizeof(key.topic));
	return bsearch(&key, ld->ckpt, ld->nckpt, sizeof(key), ckpt_cmp);
}

/*
 * The lines of one checkpoint file, appended to ld->ckpt (one entry per
 * line, has = BIT(@which)); a malformed file adds nothing and is logged
 */
static int load_ckpt(struct krep_logdir *ld, int which, unsigned int *cap)
{
	unsigned int ver, count, n = 0, part, first = ld->nckpt;
	char *buf, *cur, *line, *topic;
	struct krep_ckpt_entry *e;
	const char *why;
	size_t len;
	u64 val;

	buf = krep_vfs_read_file(&ld->root, ckpt_file[which],
				 KREP_CKPT_FILE_MAX, &len);
	if (PTR_ERR_OR_ZERO(buf) == -ENOENT)
		return 0;
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	cur = buf;
	line = strsep(&cur, "\n");
	if (!line || kstrtouint(line, 10, &ver) || ver)
		goto bad;
	line = strsep(&cur, "\n");
	if (!line || kstrtouint(line, 10, &count) || count > KREP_CKPT_MAX)
		goto bad;
	while ((line = strsep(&cur, "\n")) && *line) {
		topic = strsep(&line, " ");
		if (!line || sscanf(line, "%u %llu", &part, &val) != 2 ||
		    val > S64_MAX ||
		    krep_topic_name_check(topic, strlen(topic), &why) ||
		    ++n > count)
			goto bad;
		if (krep_vfs_grow((void **)&ld->ckpt, cap, ld->nckpt,
				  sizeof(*e), KREP_CKPT_MAX))
			goto bad;	/* too many lines, or no memory */
		e = &ld->ckpt[ld->nckpt++];
		memset(e, 0, sizeof(*e));
		strscpy(e->topic, topic, sizeof(e->topic));
		e->partition = part;
		e->val[which] = val;
		e->has = BIT(which);
	}
	if (n == count) {
		kvfree(buf);
		return 0;
	}
bad:
	kvfree(buf);
	ld->nckpt = first;
	pr_warn("%s in the log directory is malformed: ignored\n",
		ckpt_file[which]);
	return 0;
}

/* the three files' lines, merged into one sorted entry per partition */
static int load_ckpts(struct krep_logdir *ld)
{
	unsigned int cap = 0, i, k = 0;
	int which, err;

	for (which = 0; which < CKPT_FILES; which++) {
		err = load_ckpt(ld, which, &cap);
		if (err)
			return err;
	}
	sort(ld->ckpt, ld->nckpt, sizeof(*ld->ckpt), ckpt_cmp, NULL);
	for (i = 0; i < ld->nckpt; i++) {
		struct krep_ckpt_entry *e = &ld->ckpt[i];

		if (k && !ckpt_cmp(&ld->ckpt[k - 1], e)) {
			struct krep_ckpt_entry *m = &ld->ckpt[k - 1];

			which = __ffs(e->has);
			m->val[which] = e->val[which];
			m->has |= e->has;
		} else {
			ld->ckpt[k++] = *e;
		}
	}
	ld->nckpt = k;
	return 0;
}

/* what the checkpoints held for a partition being created */
void krep_logdir_lookup(struct krep_logdir *ld, const char *topic,
			u32 partition, struct krep_disk_ckpt *ck)
{
	struct krep_ckpt_entry *e;

	memset(ck, 0, sizeof(*ck));
	e = find_entry(ld, topic, partition);
	if (!e)
		return;
	ck->hw = e->val[CKPT_HW];
	ck->has_hw = e->has & BIT(CKPT_HW);
	ck->recovery = e->val[CKPT_RECOVERY];
	ck->has_recovery = e->has & BIT(CKPT_RECOVERY);
	ck->log_start = e->val[CKPT_START];
	ck->has_start = e->has & BIT(CKPT_START);
}

/* a partition directory found at load and not recovered yet: it goes */
static void pending_drop(struct krep_logdir *ld, const char *name)
{
	unsigned int i;

	for (i = 0; i < ld->npending; i++) {
		if (!strcmp(ld->pending[i], name)) {
			kfree(ld->pending[i]);
			ld->pending[i] = ld->pending[--ld->npending];
			return;
		}
	}
}

/**
 * krep_logdir_publish - topic @t was created with its partitions' logs
 * @kn: the broker, topics_lock held
 * @t: the topic, just put on the list
 *
 * From now on its partitions write their own checkpoint lines, and their
 * directories count as checked for the clean-shutdown marker.
 */
void krep_logdir_publish(struct krep_net *kn, struct krep_topic *t)
{
	struct krep_logdir *ld = kn->logdir;
	char name[KREP_TOPIC_NAME_MAX + 12];
	struct krep_ckpt_entry *e;
	u32 i;

	lockdep_assert_held(&kn->topics_lock);
	for (i = 0; ld && i < t->npartitions; i++) {
		if (!t->parts[i])
			continue;
		e = find_entry(ld, t->name, i);
		if (e)
			e->live = true;
		snprintf(name, sizeof(name), "%s-%u", t->name, i);
		pending_drop(ld, name);
	}
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
 * The text of the three checkpoint files, from the hosted partitions;
 * topics_lock held. @flush: write every partition's log out first (a
 * clean shutdown). Return: 0, or the first partition's I/O error.
 */
static int build_ckpts(struct krep_logdir *ld, struct tbuf *t, bool flush)
{
	struct krep_net *kn = ld->kn;
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
	return err;
}

/* write what build_ckpts() made, without topics_lock */
static int write_ckpts(struct krep_logdir *ld, struct tbuf *t)
{
	int i, err = 0;

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

	struct tbuf t[CKPT_FILES] = {};
	bool mine;

	mutex_lock(&kn->topics_lock);
	mine = kn->logdir == ld;
	if (mine)
		build_ckpts(ld, t, false);
	mutex_unlock(&kn->topics_lock);
	if (mine)
		err = write_ckpts(ld, t);
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
	if (ld->lock) {
		/* now, not at a deferred last fput(): the next load may lock */
		flock_file(ld->lock, F_UNLCK);
		fput(ld->lock);
	}
	path_put(&ld->root);
	kvfree(ld->ckpt);
	while (ld->npending)
		kfree(ld->pending[--ld->npending]);
	kvfree(ld->pending);
	kfree(ld);
}

struct root_scan {
	struct krep_logdir *ld;
	char **del;			/* "-delete" directories */
	unsigned int ndel, cap_del, cap_pending;
	int err;
};

static int add_name(char ***arr, unsigned int *n, unsigned int *cap,
		    const char *name, int len)
{
	int err = krep_vfs_grow((void **)arr, cap, *n, sizeof(**arr),
				KREP_VFS_LIST_MAX);

	if (err)
		return err;
	(*arr)[*n] = kmemdup_nul(name, len, GFP_KERNEL);
	if (!(*arr)[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* the partition directories and the deleted ones, of the root */
static int root_entry(void *arg, const char *name, int len, unsigned int type)
{
	struct root_scan *rs = arg;
	struct krep_logdir *ld = rs->ld;

	if (type != DT_DIR && type != DT_UNKNOWN)
		return 0;
	if (len > 7 && !memcmp(name + len - 7, "-delete", 7))
		rs->err = add_name(&rs->del, &rs->ndel, &rs->cap_del, name, len);
	else if (!ld->clean && memchr(name, '-', len))
		rs->err = add_name(&ld->pending, &ld->npending,
				   &rs->cap_pending, name, len);
	return rs->err;
}

/*
 * Finish what an earlier broker left: remove the directories of deleted
 * topics; after an unclean shutdown, note the partition directories, so
 * that the next marker is written only once each was checked
 */
static int scan_root(struct krep_logdir *ld)
{
	struct root_scan rs = { .ld = ld };
	unsigned int i;
	int err;

	err = krep_vfs_list(&ld->root, root_entry, &rs) ?: rs.err;
	for (i = 0; i < rs.ndel; i++) {
		if (!err && krep_vfs_rmtree(&ld->root, rs.del[i]))
			pr_warn("log directory: cannot remove %s\n", rs.del[i]);
		kfree(rs.del[i]);
	}
	kvfree(rs.del);
	return err;
}

static struct krep_logdir *logdir_new(struct krep_net *kn, struct path *root,
				      s64 broker_id, const char *cluster_id,
				      const char **why)
{
	struct krep_logdir *ld;
	int err;

	ld = kzalloc(sizeof(*ld), GFP_KERNEL);
	if (!ld) {
		path_put(root);
		return ERR_PTR(-ENOMEM);
	}
	ld->root = *root;		/* the reference is ours now */
	ld->kn = kn;
	INIT_DELAYED_WORK(&ld->ckpt_work, ckpt_work);
	err = lock_dir(ld);
	if (err) {
		*why = err == -EAGAIN ?
		       "the log directory is in use by another broker (.lock)" :
		       "cannot lock the log directory (.lock)";
		err = err == -EAGAIN ? -EBUSY : err;
		goto fail;
	}
	err = check_meta(ld, broker_id, cluster_id, why);
	if (err)
		goto fail;
	err = load_ckpts(ld);
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
	err = scan_root(ld);
	if (err) {
		*why = "cannot list the log directory";
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
	if (root && kn->logdir && path_equal(&kn->logdir->root, root)) {
		path_put(root);		/* the directory it has already */
		return 0;
	}
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
	if (!list_empty(&kn->topics) || !list_empty(&kn->creating)) {
		mutex_unlock(&kn->topics_lock);
		logdir_free(ld);
		*why = "the log directory can change only while the broker has no topics";
		return -EBUSY;
	}
	old = kn->logdir;
	kn->logdir = ld;
	atomic_set(&kn->logdir_failed, 0);	/* no replica uses it yet */
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
	for (i = 0; ld && i < ld->npending;) {
		size_t n = strlen(name);

		if (!strncmp(ld->pending[i], name, n) &&
		    ld->pending[i][n] == '-') {
			kfree(ld->pending[i]);
			ld->pending[i] = ld->pending[--ld->npending];
		} else {
			i++;
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

	/* set and cleared under cfg_lock (but at the broker's end) */
	lockdep_assert_held(&kn->cfg_lock);
	if (kn->logdir) {
		p = d_path(&kn->logdir->root, buf, size);
		err = IS_ERR(p) ? PTR_ERR(p) : 0;
		if (!err)
			memmove(buf, p, strlen(p) + 1);
	}
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
	struct tbuf t[CKPT_FILES] = {};
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
	err = build_ckpts(ld, t, true);
	kn->logdir = NULL;
	mutex_unlock(&kn->topics_lock);
	err = write_ckpts(ld, t) ?: err;
	/* a marker vouches for every directory: each was checked, or clean */
	if (!err && (ld->clean || !ld->npending))
		err = krep_vfs_write_atomic(&ld->root, KREP_CLEAN_MARKER, "", 0);
	else if (!err)
		pr_info("log directory: %u partition directories were not recovered since an unclean shutdown: no clean-shutdown marker\n",
			ld->npending);
	if (err)
		pr_err("log directory: shutdown not clean (%d): the next load checks every batch\n",
		       err);
	logdir_free(ld);
}
