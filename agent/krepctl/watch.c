// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl watch: a live view of a broker's partitions from BPF programs on
 * the krep:* tracepoints (bpf/watch.bpf.c, loaded through the skeleton
 * bpftool generated at build time) and a PARTITION_GET snapshot per
 * refresh for the fields the tracepoints do not carry.
 *
 * The tracepoint records are declared by hand (bpf/watch.h): krep.ko has
 * no BTF. Before loading anything, every field the programs read is
 * checked against /sys/kernel/tracing/events/krep/<event>/format, so a
 * module whose records changed is refused with a message instead of being
 * misread.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <linux/krep.h>

#include "attrs.h"
#include "bpf/watch.h"
#include "bpf/watch.skel.h"
#include "json.h"
#include "obs.h"
#include "snap.h"

#define WATCH_INTERVAL_MS	1000
#define WATCH_TARGETS_MAX	64

void krepctl_watch_usage(FILE *f)
{
	fputs("Usage: krepctl [--netns NAME] [--json] watch [TOPIC] [--all]\n"
	      "              [--interval MS] [--count N] [--once] [--verbose]\n"
	      "\n"
	      "A live view of the broker's partitions (of topic TOPIC only, if\n"
	      "given), refreshed every interval: BPF programs on the krep:*\n"
	      "tracepoints count HW advances, ISR shrinks and expands and measure\n"
	      "the commit latency (a batch's append on the leader until the HW\n"
	      "passes it) in power-of-two microsecond buckets; a PARTITION_GET\n"
	      "snapshot per refresh adds leader, epochs, ISR, LEO and HW. Counts\n"
	      "start when watch starts. Needs root (CAP_BPF and CAP_PERFMON) and\n"
	      "the krep module loaded.\n"
	      "\n"
	      "  --all           every broker: the one of krepctl's namespace and\n"
	      "                  those of the named namespaces (/run/netns, 'ip\n"
	      "                  netns'); default: only the broker of krepctl's\n"
	      "                  namespace (or --netns NAME), whose events are\n"
	      "                  told apart by the namespace's inode number\n"
	      "  --interval MS   refresh every MS milliseconds (default 1000); the\n"
	      "                  first refresh comes one interval after the\n"
	      "                  programs are attached\n"
	      "  --count N       exit after N refreshes\n"
	      "  --once          the same as --count 1\n"
	      "  --json          one JSON document per refresh, one a line\n"
	      "  --verbose       show libbpf's messages\n"
	      "\n"
	      "Columns: TOPIC PART ROLE LEADER EPOCH ISR/AR (ISR size/replicas) LEO\n"
	      "HW HW_LAG (LEO-HW) URP (under-replicated: ISR < replicas) UMI (under\n"
	      "min ISR: ISR < min(min_insync_replicas, replicas)) SHRINK EXPAND\n"
	      "(ISR changes seen) HW/S (offsets committed per second) P50 P99\n"
	      "(commit latency, upper bound of the bucket, us); with --all also\n"
	      "NETNS and BROKER. Below, the commit-latency histogram.\n"
	      "\n"
	      "--json: {\"partitions\":[{\"netns\",\"broker\",\"topic\",\"partition\",\n"
	      "\"role\",\"leader\",\"leader_epoch\",\"isr\",\"isr_size\",\"replicas\",\n"
	      "\"min_isr\",\"leo\",\"hw\",\"hw_lag\",\"under_replicated\",\n"
	      "\"under_min_isr\",\"isr_shrinks\",\"isr_expands\",\"hw_advances\",\n"
	      "\"leader_changes\",\"produce_records\",\"commits\"}],\n"
	      "\"commit_latency_us\":{\"buckets\":[{\"le\":N,\"count\":N}...],\n"
	      "\"count\":N}}; a bucket counts the commits that took more than the\n"
	      "previous bucket's \"le\" and at most its own (microseconds).\n"
	      "\n"
	      "Exit status 1 when BPF may not be loaded (EPERM) or the krep\n"
	      "tracepoints are missing.\n", f);
}

/* ---- the tracepoint records, checked against tracefs ------------------- */

struct tp_field {
	const char *event;
	const char *name;
	size_t offset, size;
};

#define TPF(ev, type, member, fname)					\
	{ #ev, fname, offsetof(struct type, member),			\
	  sizeof(((struct type *)0)->member) }
#define TPF_PART(ev, type)						\
	TPF(ev, type, p.netns, "netns"),				\
	TPF(ev, type, p.broker, "broker"),				\
	TPF(ev, type, p.topic, "topic"),				\
	TPF(ev, type, p.partition, "partition")

static const struct tp_field tp_fields[] = {
	TPF_PART(krep_hw_advance, krep_tp_hw_advance),
	TPF(krep_hw_advance, krep_tp_hw_advance, new_hw, "new_hw"),
	TPF(krep_hw_advance, krep_tp_hw_advance, leader_epoch, "leader_epoch"),
	TPF(krep_hw_advance, krep_tp_hw_advance, isr_size, "isr_size"),
	TPF(krep_hw_advance, krep_tp_hw_advance, oldest_append_ns,
	    "oldest_append_ns"),
	TPF_PART(krep_isr_shrink, krep_tp_isr),
	TPF(krep_isr_shrink, krep_tp_isr, isr_size, "isr_size"),
	TPF_PART(krep_isr_expand, krep_tp_isr),
	TPF(krep_isr_expand, krep_tp_isr, isr_size, "isr_size"),
	TPF_PART(krep_leo_update, krep_tp_offset),
	TPF(krep_leo_update, krep_tp_offset, replica, "replica"),
	TPF(krep_leo_update, krep_tp_offset, new_val, "new_val"),
	TPF_PART(krep_truncate, krep_tp_offset),
	TPF(krep_truncate, krep_tp_offset, new_val, "new_val"),
	TPF_PART(krep_leader_change, krep_tp_leader_change),
	TPF(krep_leader_change, krep_tp_leader_change, leader_epoch,
	    "leader_epoch"),
	TPF_PART(krep_produce, krep_tp_produce),
	TPF(krep_produce, krep_tp_produce, count, "count"),
	TPF(krep_produce, krep_tp_produce, error, "error"),
};

static const char * const tracefs_dirs[] = {
	"/sys/kernel/tracing",
	"/sys/kernel/debug/tracing",
};

static void perm_error(const char *what)
{
	fprintf(stderr,
		"%s: watch: %s: permission denied: watch loads BPF programs and needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)\n",
		krep_prog, what);
}

static void missing_error(const char *what)
{
	fprintf(stderr,
		"%s: watch: the krep tracepoints are missing (%s): is krep.ko loaded, and tracefs mounted on /sys/kernel/tracing?\n",
		krep_prog, what);
}

/*
 * Find "field:... NAME;\toffset:N;\tsize:N;" for @name in the format file
 * text @fmt. Returns 0, or -ENOENT.
 */
static int format_field(const char *fmt, const char *name, size_t *off,
			size_t *size)
{
	const char *line = fmt, *end, *semi, *p, *q;
	size_t n = strlen(name);
	unsigned long o, s;

	for (; *line; line = *end ? end + 1 : end) {
		end = strchrnul(line, '\n');
		p = strstr(line, "field:");
		if (!p || p > end)
			continue;
		semi = memchr(p, ';', end - p);
		if (!semi)
			continue;
		/* the name is the last word before ';', maybe with [N] */
		q = semi;
		if (q > p && q[-1] == ']')
			while (q > p && *q != '[')
				q--;
		if ((size_t)(q - p) < n || memcmp(q - n, name, n) ||
		    (q[-(long)n - 1] != ' ' && q[-(long)n - 1] != '\t'))
			continue;
		if (sscanf(semi + 1, " offset:%lu; size:%lu;", &o, &s) != 2)
			continue;
		*off = o;
		*size = s;
		return 0;
	}
	return -ENOENT;
}

/* Read the whole of a small file; NULL and errno on failure. */
static char *read_text(const char *path)
{
	char *buf = NULL, *nb;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		if (cap - len < 1024) {
			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap);
			if (!nb) {
				err = ENOMEM;
				goto fail;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			goto fail;
		}
		if (!n)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
fail:
	free(buf);
	close(fd);
	errno = err;
	return NULL;
}

/*
 * Check every field the BPF programs read against tracefs. Prints why and
 * returns -1 when the tracepoints are missing, unreadable or laid out
 * differently.
 */
static int tracepoints_check(void)
{
	const char *dir = NULL, *ev = NULL;
	char path[PATH_MAX], *fmt = NULL;
	size_t i, k, off, size;
	int err = 0;

	for (k = 0; k < sizeof(tracefs_dirs) / sizeof(tracefs_dirs[0]); k++) {
		snprintf(path, sizeof(path), "%s/events", tracefs_dirs[k]);
		if (!access(path, F_OK)) {
			dir = tracefs_dirs[k];
			break;
		}
		if (errno == EACCES)
			err = EACCES;
	}
	if (!dir) {
		if (err == EACCES)
			perm_error("cannot read tracefs");
		else
			missing_error("no tracefs events directory");
		return -1;
	}
	for (i = 0; i < sizeof(tp_fields) / sizeof(tp_fields[0]); i++) {
		const struct tp_field *f = &tp_fields[i];

		if (!ev || strcmp(ev, f->event)) {
			free(fmt);
			ev = f->event;
			snprintf(path, sizeof(path), "%s/events/krep/%s/format",
				 dir, ev);
			fmt = read_text(path);
			if (!fmt) {
				if (errno == EACCES || errno == EPERM) {
					perm_error(path);
				} else {
					snprintf(path, sizeof(path),
						 "no krep:%s in %s", ev, dir);
					missing_error(path);
				}
				return -1;
			}
		}
		if (format_field(fmt, f->name, &off, &size)) {
			fprintf(stderr,
				"%s: watch: krep:%s has no field '%s': this krepctl does not match the loaded krep module\n",
				krep_prog, ev, f->name);
			goto mismatch;
		}
		if (off != f->offset || size != f->size) {
			fprintf(stderr,
				"%s: watch: krep:%s field '%s' is at offset %zu size %zu, this krepctl expects offset %zu size %zu: it does not match the loaded krep module\n",
				krep_prog, ev, f->name, off, size, f->offset,
				f->size);
			goto mismatch;
		}
	}
	free(fmt);
	return 0;
mismatch:
	free(fmt);
	return -1;
}

/* ---- brokers to watch -------------------------------------------------- */

struct target {
	char name[NAME_MAX + 1];	/* netns name, "" for krepctl's own */
	uint32_t netns;			/* its inode number */
	struct krep_genl gl;
	struct krep_snap snap;
	bool has_snap;
};

struct watch {
	struct krepctl *ctl;
	const char *topic;
	bool all, json, verbose;
	unsigned long interval_ms;
	unsigned long count;		/* 0: until stopped */
	struct target *targets;
	size_t ntargets;
	struct watch_bpf *skel;
	/* the map's entries this refresh, and HW last refresh */
	struct krep_watch_key *keys;
	struct krep_watch_val *vals;
	size_t nentries, entries_cap;
	struct prev {
		uint32_t netns, partition;
		char *topic;
		uint64_t hw;
	} *prev;
	size_t nprev;
	struct timespec prev_ts;
	bool tty;
	bool prev_shown;	/* a frame was printed */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int netns_ino(int fd, uint32_t *ino)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	*ino = st.st_ino;
	return 0;
}

static struct target *target_add(struct watch *w, const char *name,
				 uint32_t ino)
{
	struct target *t;
	size_t i;

	for (i = 0; i < w->ntargets; i++)
		if (w->targets[i].netns == ino)
			return NULL;
	if (w->ntargets == WATCH_TARGETS_MAX)
		return NULL;
	t = &w->targets[w->ntargets];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->netns = ino;
	return t;
}

/* krepctl's namespace (entered by --netns already), the only target */
static int targets_self(struct watch *w)
{
	struct target *t;
	uint32_t ino = 0;
	int fd;

	fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || netns_ino(fd, &ino)) {
		fprintf(stderr, "%s: watch: /proc/self/ns/net: %s\n", krep_prog,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	t = target_add(w, w->ctl->netns ? w->ctl->netns : "", ino);
	/* the socket krepctl_connect() opened in that namespace */
	t->gl = w->ctl->gl;
	w->ctl->gl.sk = NULL;
	w->ntargets++;
	return 0;
}

/*
 * Every named namespace of /run/netns besides krepctl's: a genl socket in
 * each (a socket belongs to the namespace it was created in).
 */
static int targets_named(struct watch *w)
{
	struct target *t;
	struct dirent *de;
	int self, fd, ret = 0;
	uint32_t ino = 0;
	DIR *d;

	d = opendir("/run/netns");
	if (!d)
		return 0;
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0) {
		closedir(d);
		return -1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (netns_ino(fd, &ino)) {
			close(fd);
			continue;
		}
		t = target_add(w, de->d_name, ino);
		if (!t || setns(fd, CLONE_NEWNET)) {
			close(fd);
			continue;
		}
		close(fd);
		if (!krep_genl_open(&t->gl))
			w->ntargets++;
		if (setns(self, CLONE_NEWNET)) {
			fprintf(stderr, "%s: watch: cannot return to the namespace: %s\n",
				krep_prog, strerror(errno));
			ret = -1;
			break;
		}
	}
	close(self);
	closedir(d);
	return ret;
}

static void targets_free(struct watch *w)
{
	size_t i;

	for (i = 0; i < w->ntargets; i++) {
		if (w->targets[i].has_snap)
			krep_snap_free(&w->targets[i].snap);
		if (w->targets[i].gl.sk)
			krep_genl_close(&w->targets[i].gl);
	}
	free(w->targets);
}

/* ---- BPF --------------------------------------------------------------- */

static bool libbpf_verbose;

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	(void)level;
	return libbpf_verbose ? vfprintf(stderr, fmt, ap) : 0;
}

static int bpf_start(struct watch *w)
{
	const char *hint = w->verbose ? "" :
			   " (--verbose shows libbpf's messages)";
	int err;

	libbpf_verbose = w->verbose;
	libbpf_set_print(libbpf_print);
	w->skel = watch_bpf__open();
	if (!w->skel) {
		fprintf(stderr, "%s: watch: cannot open the BPF object: %s%s\n",
			krep_prog, strerror(errno), hint);
		return -1;
	}
	w->skel->rodata->filter_netns = w->all ? 0 : w->targets[0].netns;
	err = watch_bpf__load(w->skel);
	if (err == -EPERM || err == -EACCES) {
		perm_error("cannot load the BPF programs");
		return -1;
	}
	if (err) {
		fprintf(stderr, "%s: watch: cannot load the BPF programs: %s%s\n",
			krep_prog, strerror(-err), hint);
		return -1;
	}
	err = watch_bpf__attach(w->skel);
	if (err == -EPERM || err == -EACCES) {
		perm_error("cannot attach to the krep tracepoints");
		return -1;
	}
	if (err == -ENOENT) {
		missing_error("attaching failed");
		return -1;
	}
	if (err) {
		fprintf(stderr, "%s: watch: cannot attach to the krep tracepoints: %s%s\n",
			krep_prog, strerror(-err), hint);
		return -1;
	}
	return 0;
}

/* Copy the "parts" map into w->keys/w->vals. */
static int bpf_read(struct watch *w)
{
	struct bpf_map *map = w->skel->maps.parts;
	struct krep_watch_key key, prev;
	bool first = true;
	size_t cap;
	void *nv;

	w->nentries = 0;
	while (!bpf_map__get_next_key(map, first ? NULL : &prev, &key,
				      sizeof(key))) {
		first = false;
		prev = key;
		if (w->nentries == w->entries_cap) {
			cap = w->entries_cap ? w->entries_cap * 2 : 64;
			nv = realloc(w->keys, cap * sizeof(*w->keys));
			if (!nv)
				return -ENOMEM;
			w->keys = nv;
			nv = realloc(w->vals, cap * sizeof(*w->vals));
			if (!nv)
				return -ENOMEM;
			w->vals = nv;
			w->entries_cap = cap;
		}
		/* entries are never deleted: the lookup cannot miss */
		if (bpf_map__lookup_elem(map, &key, sizeof(key),
					 &w->vals[w->nentries],
					 sizeof(*w->vals), 0))
			continue;
		w->keys[w->nentries++] = key;
	}
	return 0;
}

static const struct krep_watch_val *bpf_find(const struct watch *w,
					     uint32_t netns, const char *topic,
					     uint32_t partition)
{
	size_t i;

	for (i = 0; i < w->nentries; i++) {
		const struct krep_watch_key *k = &w->keys[i];

		if (k->netns == netns && k->partition == partition &&
		    !strncmp(k->topic, topic, sizeof(k->topic)))
			return &w->vals[i];
	}
	return NULL;
}

/* ---- one refresh ------------------------------------------------------- */

struct row {
	const struct target *t;
	const struct krep_snap_part *p;
	struct krep_part_health h;
	const struct krep_watch_val *v;	/* NULL: no event seen yet */
	bool has_rate;
	double rate;			/* HW offsets per second */
};

/* The upper bound in us of bucket @b. */
static uint64_t bucket_le(unsigned int b)
{
	return 1ULL << b;
}

/* The upper bound of the bucket holding quantile @q of @lat; 0 if empty. */
static uint64_t quantile(const __u64 *lat, double q, bool *has)
{
	uint64_t total = 0, seen = 0, want;
	unsigned int b;

	for (b = 0; b < KREP_WATCH_BUCKETS; b++)
		total += lat[b];
	*has = total > 0;
	if (!total)
		return 0;
	want = (uint64_t)(q * total + 0.999999);
	if (!want)
		want = 1;
	for (b = 0; b < KREP_WATCH_BUCKETS; b++) {
		seen += lat[b];
		if (seen >= want)
			return bucket_le(b);
	}
	return bucket_le(KREP_WATCH_BUCKETS - 1);
}

static const struct prev *prev_find(const struct watch *w, uint32_t netns,
				    const char *topic, uint32_t partition)
{
	size_t i;

	for (i = 0; i < w->nprev; i++)
		if (w->prev[i].netns == netns &&
		    w->prev[i].partition == partition &&
		    !strcmp(w->prev[i].topic, topic))
			return &w->prev[i];
	return NULL;
}

static void prev_free(struct watch *w)
{
	size_t i;

	for (i = 0; i < w->nprev; i++)
		free(w->prev[i].topic);
	free(w->prev);
	w->prev = NULL;
	w->nprev = 0;
}

/* Remember this refresh's HWs for the next one's rates. */
static void prev_save(struct watch *w, const struct row *rows, size_t n,
		      const struct timespec *now)
{
	size_t i;

	prev_free(w);
	w->prev = calloc(n ? n : 1, sizeof(*w->prev));
	if (!w->prev)
		return;
	for (i = 0; i < n; i++) {
		if (!rows[i].p->has_hw)
			continue;
		w->prev[w->nprev].topic = strdup(rows[i].p->topic);
		if (!w->prev[w->nprev].topic)
			break;
		w->prev[w->nprev].netns = rows[i].t->netns;
		w->prev[w->nprev].partition = rows[i].p->partition;
		w->prev[w->nprev].hw = rows[i].p->hw;
		w->nprev++;
	}
	w->prev_ts = *now;
}

static void opt_u64(struct json *j, const char *key, bool has, uint64_t v)
{
	json_key(j, key);
	if (has)
		json_u64(j, v);
	else
		json_null(j);
}

static void ids_json(struct json *j, const char *key, bool has,
		     const uint32_t *v, size_t n)
{
	size_t i;

	json_key(j, key);
	if (!has) {
		json_null(j);
		return;
	}
	json_arr_begin(j);
	for (i = 0; i < n; i++)
		json_u64(j, v[i]);
	json_arr_end(j);
}

static void row_json(struct json *j, const struct row *r)
{
	const struct krep_snap_part *p = r->p;
	const struct krep_watch_val *v = r->v;
	const char *role = p->role >= 0 ? krep_role_name(p->role) : NULL;

	json_obj_begin(j);
	json_key(j, "netns");
	json_u64(j, r->t->netns);
	opt_u64(j, "broker", r->t->snap.has_broker_id, r->t->snap.broker_id);
	json_key(j, "topic");
	json_str(j, p->topic);
	json_key(j, "partition");
	json_u64(j, p->partition);
	json_key(j, "role");
	if (role)
		json_str(j, role);
	else
		json_null(j);
	opt_u64(j, "leader", p->has_leader, p->leader);
	opt_u64(j, "leader_epoch", p->has_leader_epoch, p->leader_epoch);
	ids_json(j, "isr", p->has_isr, p->isr, p->nisr);
	opt_u64(j, "isr_size", p->has_isr, p->nisr);
	ids_json(j, "replicas", p->has_replicas, p->replicas, p->nreplicas);
	opt_u64(j, "min_isr", r->h.has_min_isr, r->h.min_isr);
	opt_u64(j, "leo", p->has_leo, p->leo);
	opt_u64(j, "hw", p->has_hw, p->hw);
	opt_u64(j, "hw_lag", r->h.has_hw_lag, r->h.hw_lag);
	json_key(j, "under_replicated");
	json_bool(j, r->h.under_replicated);
	json_key(j, "under_min_isr");
	json_bool(j, r->h.under_min_isr);
	json_key(j, "isr_shrinks");
	json_u64(j, v ? v->isr_shrinks : 0);
	json_key(j, "isr_expands");
	json_u64(j, v ? v->isr_expands : 0);
	json_key(j, "hw_advances");
	json_u64(j, v ? v->hw_advances : 0);
	json_key(j, "leader_changes");
	json_u64(j, v ? v->leader_changes : 0);
	json_key(j, "produce_records");
	json_u64(j, v ? v->produce_records : 0);
	json_key(j, "commits");
	json_u64(j, v ? v->commits : 0);
	json_obj_end(j);
}

/* The commit-latency histogram: the global map, or the rows' sum. */
static void hist_get(const struct watch *w, const struct row *rows, size_t n,
		     __u64 *lat)
{
	unsigned int b;
	size_t i;
	__u32 key;
	__u64 v;

	memset(lat, 0, KREP_WATCH_BUCKETS * sizeof(*lat));
	if (w->topic) {
		for (i = 0; i < n; i++)
			for (b = 0; rows[i].v && b < KREP_WATCH_BUCKETS; b++)
				lat[b] += rows[i].v->lat[b];
		return;
	}
	for (key = 0; key < KREP_WATCH_BUCKETS; key++)
		if (!bpf_map__lookup_elem(w->skel->maps.hist, &key, sizeof(key),
					  &v, sizeof(v), 0))
			lat[key] = v;
}

/* The first and last non-empty buckets; false if all are empty. */
static bool hist_range(const __u64 *lat, unsigned int *lo, unsigned int *hi)
{
	unsigned int b;
	bool any = false;

	for (b = 0; b < KREP_WATCH_BUCKETS; b++) {
		if (!lat[b])
			continue;
		if (!any)
			*lo = b;
		*hi = b;
		any = true;
	}
	return any;
}

static void frame_json(const struct watch *w, const struct row *rows,
		       size_t n, const __u64 *lat)
{
	unsigned int b, lo = 0, hi = 0;
	uint64_t total = 0;
	struct json j;
	size_t i;

	json_init(&j, stdout);
	json_obj_begin(&j);
	json_key(&j, "partitions");
	json_arr_begin(&j);
	for (i = 0; i < n; i++)
		row_json(&j, &rows[i]);
	json_arr_end(&j);
	json_key(&j, "commit_latency_us");
	json_obj_begin(&j);
	json_key(&j, "buckets");
	json_arr_begin(&j);
	if (hist_range(lat, &lo, &hi)) {
		for (b = lo; b <= hi; b++) {
			json_obj_begin(&j);
			json_key(&j, "le");
			json_u64(&j, bucket_le(b));
			json_key(&j, "count");
			json_u64(&j, lat[b]);
			json_obj_end(&j);
			total += lat[b];
		}
	}
	json_arr_end(&j);
	json_key(&j, "count");
	json_u64(&j, total);
	json_obj_end(&j);
	json_obj_end(&j);
	putchar('\n');
	(void)w;
}

static void col_u64(bool has, int width, uint64_t v)
{
	if (has)
		printf(" %*" PRIu64, width, v);
	else
		printf(" %*s", width, "-");
}

static void frame_text(struct watch *w, const struct row *rows,
		       size_t n, const __u64 *lat)
{
	unsigned int b, lo = 0, hi = 0;
	uint64_t total = 0, max = 0, q;
	char tbuf[32], isr[24];
	struct tm tm;
	time_t now;
	bool has;
	size_t i;
	int bar;

	if (w->tty)
		fputs("\033[H\033[2J", stdout);
	else if (w->prev_shown)
		putchar('\n');
	w->prev_shown = true;
	now = time(NULL);
	localtime_r(&now, &tm);
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
	printf("krepctl watch  %s  every %lu ms", tbuf, w->interval_ms);
	for (i = 0; i < w->ntargets; i++) {
		const struct target *t = &w->targets[i];

		if (!t->has_snap || (!t->snap.has_broker_id && !t->snap.nparts))
			continue;
		if (t->snap.has_broker_id)
			printf("  broker %u", t->snap.broker_id);
		else
			printf("  broker -");
		printf(" (netns %u%s%s)", t->netns, *t->name ? " " : "",
		       t->name);
	}
	putchar('\n');
	if (w->all)
		printf("%-10s %6s ", "NETNS", "BROKER");
	printf("%-16s %4s %-8s %6s %5s %6s %10s %10s %7s %3s %3s %6s %6s %8s %8s %8s\n",
	       "TOPIC", "PART", "ROLE", "LEADER", "EPOCH", "ISR/AR", "LEO", "HW",
	       "HW_LAG", "URP", "UMI", "SHRINK", "EXPAND", "HW/S", "P50(us)",
	       "P99(us)");
	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		const struct krep_snap_part *p = r->p;
		const char *role = p->role >= 0 ? krep_role_name(p->role) : NULL;

		if (w->all) {
			printf("%-10u", r->t->netns);
			col_u64(r->t->snap.has_broker_id, 6,
				r->t->snap.broker_id);
			putchar(' ');
		}
		snprintf(isr, sizeof(isr), "%zu/%zu", p->nisr, p->nreplicas);
		printf("%-16.16s %4u %-8s", p->topic, p->partition,
		       role ? role : "-");
		col_u64(p->has_leader, 6, p->leader);
		col_u64(p->has_leader_epoch, 5, p->leader_epoch);
		printf(" %6s", isr);
		col_u64(p->has_leo, 10, p->leo);
		col_u64(p->has_hw, 10, p->hw);
		col_u64(r->h.has_hw_lag, 7, r->h.hw_lag);
		printf(" %3s %3s", r->h.under_replicated ? "yes" : "-",
		       r->h.under_min_isr ? "yes" : "-");
		col_u64(true, 6, r->v ? r->v->isr_shrinks : 0);
		col_u64(true, 6, r->v ? r->v->isr_expands : 0);
		if (r->has_rate)
			printf(" %8.0f", r->rate);
		else
			printf(" %8s", "-");
		q = r->v ? quantile(r->v->lat, 0.5, &has) : (has = false, 0);
		col_u64(has, 8, q);
		q = r->v ? quantile(r->v->lat, 0.99, &has) : (has = false, 0);
		col_u64(has, 8, q);
		putchar('\n');
	}
	if (!n)
		puts("(no partitions)");
	if (!hist_range(lat, &lo, &hi)) {
		puts("\ncommit latency (append -> HW passes it): no commit yet");
		return;
	}
	for (b = lo; b <= hi; b++) {
		total += lat[b];
		if (lat[b] > max)
			max = lat[b];
	}
	printf("\ncommit latency (append -> HW passes it), %" PRIu64 " commits, p50 <= %" PRIu64 " us, p99 <= %" PRIu64 " us:\n",
	       total, quantile(lat, 0.5, &has), quantile(lat, 0.99, &has));
	printf("  %12s %10s\n", "<= us", "count");
	for (b = lo; b <= hi; b++) {
		bar = max ? (int)((lat[b] * 40 + max - 1) / max) : 0;
		printf("  %12" PRIu64 " %10" PRIu64 " |%-40.*s|\n", bucket_le(b),
		       (uint64_t)lat[b], bar,
		       "########################################");
	}
}

static int refresh(struct watch *w)
{
	__u64 lat[KREP_WATCH_BUCKETS];
	struct row *rows = NULL;
	struct timespec now;
	size_t i, k, n = 0, cap = 0;
	double dt;
	int err;

	for (i = 0; i < w->ntargets; i++) {
		struct target *t = &w->targets[i];

		if (t->has_snap)
			krep_snap_free(&t->snap);
		t->has_snap = false;
		t->gl.quiet = w->all && i > 0;
		err = krep_snap_take(&t->gl, w->topic, &t->snap);
		if (err) {
			if (!w->all || i == 0)
				return -1;
			continue;
		}
		t->has_snap = true;
		cap += t->snap.nparts;
	}
	if (bpf_read(w)) {
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return -1;
	}
	rows = calloc(cap ? cap : 1, sizeof(*rows));
	if (!rows) {
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	dt = (now.tv_sec - w->prev_ts.tv_sec) +
	     (now.tv_nsec - w->prev_ts.tv_nsec) / 1e9;
	for (i = 0; i < w->ntargets; i++) {
		const struct target *t = &w->targets[i];

		if (!t->has_snap)
			continue;
		for (k = 0; k < t->snap.nparts; k++) {
			const struct krep_snap_part *p = &t->snap.parts[k];
			struct row *r = &rows[n++];
			const struct prev *pv;

			r->t = t;
			r->p = p;
			krep_part_health(&t->snap, p, &r->h);
			r->v = bpf_find(w, t->netns, p->topic, p->partition);
			pv = prev_find(w, t->netns, p->topic, p->partition);
			if (pv && p->has_hw && dt > 0) {
				r->has_rate = true;
				r->rate = p->hw >= pv->hw ?
					  (p->hw - pv->hw) / dt : 0;
			}
		}
	}
	hist_get(w, rows, n, lat);
	if (w->json)
		frame_json(w, rows, n, lat);
	else
		frame_text(w, rows, n, lat);
	fflush(stdout);
	prev_save(w, rows, n, &now);
	free(rows);
	return 0;
}

/* Sleep @ms or until a stop signal; false when stopped. */
static bool nap(unsigned long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (!stop && nanosleep(&ts, &ts) && errno == EINTR)
		;
	return !stop;
}

static int parse(struct watch *w, int argc, char **argv)
{
	const char *a, *val;
	uint32_t v;
	int i;

	w->interval_ms = WATCH_INTERVAL_MS;
	for (i = 1; i < argc; i++) {
		a = argv[i];
		if (krepctl_is_help(a))
			return 1;
		if (!strcmp(a, "--all")) {
			w->all = true;
		} else if (!strcmp(a, "--once")) {
			w->count = 1;
		} else if (!strcmp(a, "-j") || !strcmp(a, "--json")) {
			w->json = true;
		} else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			w->verbose = true;
		} else if (!strcmp(a, "--interval") || !strcmp(a, "--count")) {
			if (i + 1 >= argc) {
				krepctl_usage_error(krepctl_watch_usage,
						    "watch: '%s' needs a value", a);
				return -EINVAL;
			}
			val = argv[++i];
			if (krepctl_parse_u32(krepctl_watch_usage, "watch", a,
					      val, &v))
				return -EINVAL;
			if (!v || (a[2] == 'i' && v < 10)) {
				krepctl_usage_error(krepctl_watch_usage,
						    "watch: %s must be at least %d",
						    a, a[2] == 'i' ? 10 : 1);
				return -EINVAL;
			}
			if (a[2] == 'i')
				w->interval_ms = v;
			else
				w->count = v;
		} else if (a[0] == '-' || w->topic) {
			krepctl_usage_error(krepctl_watch_usage,
					    "watch: unexpected argument '%s'", a);
			return -EINVAL;
		} else {
			w->topic = a;
		}
	}
	if (w->all && w->ctl->netns) {
		krepctl_usage_error(krepctl_watch_usage,
				    "watch: --all watches every namespace: drop --netns");
		return -EINVAL;
	}
	return 0;
}

int krepctl_watch_run(struct krepctl *ctl, int argc, char **argv)
{
	struct watch w = { .ctl = ctl };
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned long done = 0;
	int ret = KREP_EXIT_ERR, err;

	err = parse(&w, argc, argv);
	if (err > 0) {
		krepctl_watch_usage(stdout);
		return KREP_EXIT_OK;
	}
	if (err)
		return KREP_EXIT_USAGE;
	w.json |= ctl->json;
	w.tty = !w.json && isatty(STDOUT_FILENO);
	/* first, so that a missing module is named by its tracepoints */
	if (tracepoints_check() || krepctl_connect(ctl))
		return KREP_EXIT_ERR;
	w.targets = calloc(WATCH_TARGETS_MAX, sizeof(*w.targets));
	if (!w.targets) {
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
		return KREP_EXIT_ERR;
	}
	if (targets_self(&w) || (w.all && targets_named(&w)))
		goto out;
	if (bpf_start(&w))
		goto out;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &w.prev_ts);
	ret = KREP_EXIT_OK;
	while (nap(w.interval_ms)) {
		if (refresh(&w)) {
			ret = KREP_EXIT_ERR;
			break;
		}
		if (w.count && ++done >= w.count)
			break;
	}
out:
	watch_bpf__destroy(w.skel);
	prev_free(&w);
	free(w.keys);
	free(w.vals);
	targets_free(&w);
	return ret;
}
