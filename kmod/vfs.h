/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krep: file operations relative to a directory the broker holds.
 *
 * The log directory is opened once (a module parameter's path, or a file
 * descriptor passed over netlink); every later name is looked up one
 * component at a time below it, never as a path, and symlinks are not
 * followed. Callers sleep: work items and netlink handlers only.
 */
#ifndef _KREP_VFS_H
#define _KREP_VFS_H

#include <linux/bits.h>
#include <linux/path.h>
#include <linux/types.h>

struct file;

/* the most names krep_vfs_rmtree() removes from one directory */
#define KREP_VFS_LIST_MAX	BIT(20)

int krep_vfs_mkdir(const struct path *dir, const char *name,
		   struct path *child);
struct file *krep_vfs_open(const struct path *dir, const char *name,
			   int flags);
int krep_vfs_unlink(const struct path *dir, const char *name);
int krep_vfs_rename(const struct path *dir, const char *from, const char *to);
int krep_vfs_rmtree(const struct path *dir, const char *name);
int krep_vfs_write_atomic(const struct path *dir, const char *name,
			  const void *buf, size_t len);
int krep_vfs_write_unsynced(const struct path *dir, const char *name,
			    const void *buf, size_t len);
char *krep_vfs_read_file(const struct path *dir, const char *name, size_t max,
			 size_t *lenp);
int krep_vfs_write_all(struct file *f, const void *buf, size_t len,
		       loff_t *pos);
int krep_vfs_truncate(struct file *f, loff_t len);
int krep_vfs_grow(void **arr, unsigned int *cap, unsigned int n, size_t size,
		  unsigned int max);

/* one name of a directory; return nonzero to stop the listing */
typedef int (*krep_vfs_entry_t)(void *arg, const char *name, int len,
				unsigned int type);
int krep_vfs_list(const struct path *dir, krep_vfs_entry_t fn, void *arg);

#endif /* _KREP_VFS_H */
