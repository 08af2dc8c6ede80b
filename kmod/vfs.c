// SPDX-License-Identifier: GPL-2.0
/*
 * krep: file operations relative to a directory the broker holds (see
 * vfs.h). The patterns are the in-kernel file servers' (nfsd, ksmbd):
 * lookup_one() under the parent's lock, then vfs_mkdir(),
 * vfs_unlink(), vfs_rename(), each inside mnt_want_write().
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dcache.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uio.h>

#include "vfs.h"

static struct user_namespace *userns(const struct path *dir)
{
	return mnt_user_ns(dir->mnt);
}

/* @name in @dir, whose inode the caller locked */
static struct dentry *lookup(const struct path *dir, const char *name)
{
	return lookup_one(userns(dir), name, dir->dentry, strlen(name));
}

static void unlock_dir(const struct path *dir)
{
	inode_unlock(d_inode(dir->dentry));
	mnt_drop_write(dir->mnt);
}

/* write access, @dir locked and @name's dentry; unlock_dir() undoes it */
static struct dentry *lock_lookup(const struct path *dir, const char *name)
{
	struct dentry *d;
	int err;

	err = mnt_want_write(dir->mnt);
	if (err)
		return ERR_PTR(err);
	inode_lock_nested(d_inode(dir->dentry), I_MUTEX_PARENT);
	d = lookup(dir, name);
	if (IS_ERR(d))
		unlock_dir(dir);
	return d;
}

/**
 * krep_vfs_grow - room for one more element in a growing array
 * @arr: the array (kvmalloc'ed, or NULL)
 * @cap: its capacity in elements
 * @n: the elements it holds
 * @size: an element's size
 * @max: the most it may hold
 *
 * Return: 0, -E2BIG at @max elements, or -ENOMEM.
 */
int krep_vfs_grow(void **arr, unsigned int *cap, unsigned int n, size_t size,
		  unsigned int max)
{
	unsigned int want;
	void *more;

	if (n < *cap)
		return 0;
	if (n >= max)
		return -E2BIG;
	want = min(max, *cap * 2 + 16);
	more = kvrealloc(*arr, (size_t)*cap * size, (size_t)want * size,
			 GFP_KERNEL);
	if (!more)
		return -ENOMEM;
	*arr = more;
	*cap = want;
	return 0;
}

/**
 * krep_vfs_mkdir - the subdirectory @name of @dir, made if absent
 * @dir: the parent
 * @name: one path component
 * @child: set on success; path_put() it
 *
 * Return: 0, -ENOTDIR when @name is something else, or the VFS's error.
 */
static int subdir(const struct path *dir, const char *name,
		  struct path *child, bool create)
{
	struct inode *inode = d_inode(dir->dentry);
	struct dentry *d;
	int err = 0;

	d = lock_lookup(dir, name);
	if (IS_ERR(d))
		return PTR_ERR(d);
	if (d_really_is_negative(d))
		err = create ? vfs_mkdir(userns(dir), inode, d, 0755) : -ENOENT;
	if (!err && d_unhashed(d)) {
		/* some filesystems leave the dentry unhashed: look again */
		dput(d);
		d = lookup(dir, name);
		if (IS_ERR(d)) {
			err = PTR_ERR(d);
			goto out;
		}
	}
	if (!err && !d_is_dir(d))
		err = -ENOTDIR;
	if (err) {
		dput(d);
	} else {
		child->mnt = mntget(dir->mnt);
		child->dentry = d;
	}
out:
	unlock_dir(dir);
	return err;
}

int krep_vfs_mkdir(const struct path *dir, const char *name,
		   struct path *child)
{
	return subdir(dir, name, child, true);
}

/*
 * open the regular file @name in @dir: never through a symlink, and never
 * a FIFO or a device someone left there (checked before the open, which
 * is non-blocking too, and after it)
 */
struct file *krep_vfs_open(const struct path *dir, const char *name, int flags)
{
	struct dentry *d;
	struct file *f;

	if (strchr(name, '/'))
		return ERR_PTR(-EINVAL);
	d = lookup_one_unlocked(userns(dir), name, dir->dentry, strlen(name));
	if (IS_ERR(d))
		return ERR_CAST(d);
	if (d_really_is_positive(d) && !d_is_reg(d)) {
		dput(d);
		return ERR_PTR(-EINVAL);
	}
	dput(d);
	f = file_open_root(dir, name, flags | O_NOFOLLOW | O_LARGEFILE |
			   O_NONBLOCK, 0644);
	if (!IS_ERR(f) && !S_ISREG(file_inode(f)->i_mode)) {
		fput(f);
		return ERR_PTR(-EINVAL);
	}
	return f;
}

/* remove the file @name of @dir (-ENOENT when there is none) */
static int remove_at(const struct path *dir, const char *name, bool is_dir)
{
	struct inode *inode = d_inode(dir->dentry);
	struct dentry *d;
	int err;

	d = lock_lookup(dir, name);
	if (IS_ERR(d))
		return PTR_ERR(d);
	if (d_really_is_negative(d))
		err = -ENOENT;
	else if (is_dir)
		err = vfs_rmdir(userns(dir), inode, d);
	else
		err = vfs_unlink(userns(dir), inode, d, NULL);
	dput(d);
	unlock_dir(dir);
	return err;
}

int krep_vfs_unlink(const struct path *dir, const char *name)
{
	return remove_at(dir, name, false);
}

struct name_list {
	char **names;
	unsigned int n, cap;
	int err;
};

static int collect_name(void *arg, const char *name, int len,
			unsigned int type)
{
	struct name_list *nl = arg;

	if (type == DT_DIR)
		return 0;
	nl->err = krep_vfs_grow((void **)&nl->names, &nl->cap, nl->n,
				sizeof(*nl->names), KREP_VFS_LIST_MAX);
	if (nl->err)
		return 1;
	nl->names[nl->n] = kmemdup_nul(name, len, GFP_KERNEL);
	if (!nl->names[nl->n]) {
		nl->err = -ENOMEM;
		return 1;
	}
	nl->n++;
	return 0;
}

/**
 * krep_vfs_rmtree - remove the directory @name of @dir and the files in it
 * @dir: the parent
 * @name: a partition's directory (it holds files only)
 *
 * Return: 0 (also when it does not exist) or the first error.
 */
int krep_vfs_rmtree(const struct path *dir, const char *name)
{
	struct name_list nl = {};
	struct path sub;
	unsigned int i;
	int err;

	err = subdir(dir, name, &sub, false);
	if (err)
		return err == -ENOENT ? 0 : err;
	err = krep_vfs_list(&sub, collect_name, &nl) ?: nl.err;
	for (i = 0; i < nl.n; i++) {
		int e = krep_vfs_unlink(&sub, nl.names[i]);

		if (e && e != -ENOENT && !err)
			err = e;
		kfree(nl.names[i]);
	}
	kvfree(nl.names);
	path_put(&sub);
	if (!err)
		err = remove_at(dir, name, true);
	return err == -ENOENT ? 0 : err;
}

/* write all of @buf at *@pos, advancing it */
int krep_vfs_write_all(struct file *f, const void *buf, size_t len,
		       loff_t *pos)
{
	while (len) {
		ssize_t n = kernel_write(f, buf, len, pos);

		if (n < 0)
			return n;
		if (!n)
			return -EIO;
		buf += n;
		len -= n;
	}
	return 0;
}

int krep_vfs_truncate(struct file *f, loff_t len)
{
	return vfs_truncate(&f->f_path, len);
}

/* rename @from to @to, both in @dir */
int krep_vfs_rename(const struct path *dir, const char *from, const char *to)
{
	struct inode *inode = d_inode(dir->dentry);
	struct renamedata rd = {};
	struct dentry *old, *new;
	int err;

	err = mnt_want_write(dir->mnt);
	if (err)
		return err;
	lock_rename(dir->dentry, dir->dentry);
	old = lookup(dir, from);
	if (IS_ERR(old)) {
		err = PTR_ERR(old);
		goto out;
	}
	new = lookup(dir, to);
	if (IS_ERR(new)) {
		err = PTR_ERR(new);
		goto out_old;
	}
	if (d_really_is_negative(old)) {
		err = -ENOENT;
	} else {
		rd.old_mnt_userns = userns(dir);
		rd.old_dir = inode;
		rd.old_dentry = old;
		rd.new_mnt_userns = userns(dir);
		rd.new_dir = inode;
		rd.new_dentry = new;
		err = vfs_rename(&rd);
	}
	dput(new);
out_old:
	dput(old);
out:
	unlock_rename(dir->dentry, dir->dentry);
	mnt_drop_write(dir->mnt);
	return err;
}

static int fsync_dir(const struct path *dir)
{
	struct file *f = dentry_open(dir, O_RDONLY | O_DIRECTORY,
				     current_cred());
	int err;

	if (IS_ERR(f))
		return PTR_ERR(f);
	err = vfs_fsync(f, 0);
	fput(f);
	return err;
}

static int write_renamed(const struct path *dir, const char *name,
			 const void *buf, size_t len, bool sync)
{
	char *tmp = kasprintf(GFP_KERNEL, "%s.tmp", name);
	struct file *f;
	loff_t pos = 0;
	int err;

	if (!tmp)
		return -ENOMEM;
	err = krep_vfs_unlink(dir, tmp);
	if (err && err != -ENOENT)
		goto out;
	f = krep_vfs_open(dir, tmp, O_WRONLY | O_CREAT | O_EXCL);
	if (IS_ERR(f)) {
		err = PTR_ERR(f);
		goto out;
	}
	err = krep_vfs_write_all(f, buf, len, &pos);
	if (!err && sync)
		err = vfs_fsync(f, 0);
	fput(f);
	if (!err)
		err = krep_vfs_rename(dir, tmp, name);
	if (!err && sync)
		err = fsync_dir(dir);
out:
	kfree(tmp);
	return err;
}

/**
 * krep_vfs_write_atomic - replace the file @name of @dir with @buf
 * @dir: the directory
 * @name: the file
 * @buf: its new content
 * @len: bytes
 *
 * As Kafka's checkpoint files: written to "@name.tmp", synced, renamed
 * over @name, and the directory synced, so a crash leaves the old file or
 * the new one, never a mix.
 *
 * Return: 0 or the VFS's error.
 */
int krep_vfs_write_atomic(const struct path *dir, const char *name,
			  const void *buf, size_t len)
{
	return write_renamed(dir, name, buf, len, true);
}

/**
 * krep_vfs_write_unsynced - krep_vfs_write_atomic() without its syncs
 * @dir: the directory
 * @name: the file
 * @buf: its new content
 * @len: bytes
 *
 * For a file whose reader checks it whole (a CRC) and can do without
 * it: after a crash @name may be missing, or short, under its name.
 *
 * Return: 0 or the VFS's error.
 */
int krep_vfs_write_unsynced(const struct path *dir, const char *name,
			    const void *buf, size_t len)
{
	return write_renamed(dir, name, buf, len, false);
}

/**
 * krep_vfs_read_file - read the whole file @name of @dir
 * @dir: the directory
 * @name: the file
 * @max: the largest size accepted (-EFBIG beyond)
 * @lenp: set to the bytes read
 *
 * Return: a NUL-terminated buffer to kvfree(), or ERR_PTR(-ENOENT) when
 * there is no such file, or another error.
 */
char *krep_vfs_read_file(const struct path *dir, const char *name, size_t max,
			 size_t *lenp)
{
	struct file *f = krep_vfs_open(dir, name, O_RDONLY);
	loff_t size, pos = 0;
	char *buf;
	ssize_t n;

	if (IS_ERR(f))
		return ERR_CAST(f);
	size = i_size_read(file_inode(f));
	if (size > max) {
		fput(f);
		return ERR_PTR(-EFBIG);
	}
	buf = kvmalloc(size + 1, GFP_KERNEL);
	if (!buf) {
		fput(f);
		return ERR_PTR(-ENOMEM);
	}
	while (pos < size) {
		n = kernel_read(f, buf + pos, size - pos, &pos);
		if (n <= 0) {
			fput(f);
			kvfree(buf);
			return ERR_PTR(n ? n : -EIO);	/* it shrank */
		}
	}
	fput(f);
	buf[pos] = '\0';
	*lenp = pos;
	return buf;
}

struct list_ctx {
	struct dir_context ctx;
	krep_vfs_entry_t fn;
	void *arg;
	bool stopped;
};

static bool list_actor(struct dir_context *ctx, const char *name, int len,
		       loff_t off, u64 ino, unsigned int type)
{
	struct list_ctx *lc = container_of(ctx, struct list_ctx, ctx);

	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return true;
	if (lc->fn(lc->arg, name, len, type))
		lc->stopped = true;
	return !lc->stopped;
}

/**
 * krep_vfs_list - call @fn for each name in @dir but "." and ".."
 * @dir: the directory
 * @fn: called with the directory locked: it must not touch @dir
 * @arg: for @fn
 *
 * Return: 0 or the VFS's error.
 */
int krep_vfs_list(const struct path *dir, krep_vfs_entry_t fn, void *arg)
{
	struct list_ctx lc = { .ctx.actor = list_actor, .fn = fn, .arg = arg };
	struct file *f;
	int err;

	f = dentry_open(dir, O_RDONLY | O_DIRECTORY, current_cred());
	if (IS_ERR(f))
		return PTR_ERR(f);
	do {
		loff_t before = lc.ctx.pos;

		err = iterate_dir(f, &lc.ctx);
		if (err || lc.ctx.pos == before)
			break;
	} while (!lc.stopped);
	fput(f);
	return err;
}
