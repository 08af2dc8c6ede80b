// SPDX-License-Identifier: GPL-2.0
/*
 * krepd --controller's state file (state.h): reading, atomic writing and
 * the lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ep.h"
#include "errf.h"
#include "state.h"

#define WORDS_MAX	20


void krep_state_free(struct krep_state *st)
{
	free(st->brokers);
	free(st->topics);
	free(st->parts);
	memset(st, 0, sizeof(*st));
}

static void *grow(void *v, size_t n, size_t size)
{
	/* one more element; callers keep n small (a cluster's worth) */
	return realloc(v, (n + 1) * size);
}

static int u32_of(const char *s, uint32_t *v)
{
	return krep_u32_parse(s, v);
}

static int flag_of(const char *s, bool *v)
{
	if (!strcmp(s, "0") || !strcmp(s, "1")) {
		*v = s[0] == '1';
		return 0;
	}
	return -EINVAL;
}

static int broker_line(struct krep_state *st, char **w, int n, const char **why)
{
	struct krep_state_broker b = { 0 }, *v;
	char *end;

	if (n != 6 || strcmp(w[2], "incarnation") || strcmp(w[4], "fenced")) {
		*why = "expected 'broker ID incarnation HEX|- fenced 0|1'";
		return -EINVAL;
	}
	if (u32_of(w[1], &b.id)) {
		*why = "bad broker id";
		return -EINVAL;
	}
	if (strcmp(w[3], "-")) {
		errno = 0;
		b.incarnation = strtoull(w[3], &end, 16);
		if (errno || *end || !*w[3]) {
			*why = "bad incarnation";
			return -EINVAL;
		}
		b.has_incarnation = true;
	}
	if (flag_of(w[5], &b.fenced)) {
		*why = "fenced is not 0 or 1";
		return -EINVAL;
	}
	v = grow(st->brokers, st->nbrokers, sizeof(*v));
	if (!v)
		return -ENOMEM;
	st->brokers = v;
	v[st->nbrokers++] = b;
	return 0;
}

static int topic_line(struct krep_state *st, char **w, int n, const char **why)
{
	struct krep_state_topic t = { 0 }, *v;

	char reason[256];
	int i;

	if (n < 6 || n % 2 || strcmp(w[2], "min-isr") ||
	    strcmp(w[4], "unclean")) {
		*why = "expected 'topic NAME min-isr N unclean 0|1 [KEY VALUE]...'";
		return -EINVAL;
	}
	if (strlen(w[1]) > KREP_TOPIC_NAME_MAX) {
		*why = "topic name too long";
		return -EINVAL;
	}
	strcpy(t.name, w[1]);
	if (u32_of(w[3], &t.tc.min_isr) || flag_of(w[5], &t.tc.unclean)) {
		*why = "bad min-isr or unclean";
		return -EINVAL;
	}
	for (i = 6; i < n; i += 2) {
		const char *k = w[i], *val = w[i + 1];
		bool bad;

		if (!strcmp(k, "partitions")) {
			bad = u32_of(val, &t.partitions) || !t.partitions;
		} else if (!strcmp(k, "rf")) {
			bad = u32_of(val, &t.rf) || !t.rf;
		} else if (!strcmp(k, "config")) {
			bad = strcmp(val, "-") &&
			      krep_tconfig_parse(val, &t.cfg, reason,
						 sizeof(reason));
		} else if (!strcmp(k, "held")) {
			bad = krep_ids_parse(val, &t.held);
		} else if (!strcmp(k, "deleting")) {
			bad = flag_of(val, &t.deleting);
		} else {
			*why = "expected partitions N, rf N, config CFG, held IDS or deleting 0|1 after unclean";
			return -EINVAL;
		}
		if (bad) {
			*why = "bad topic partitions, rf, config, held or deleting";
			return -EINVAL;
		}
	}
	t.managed = t.partitions;
	if (t.managed != !!t.rf) {
		*why = "topic partitions and rf go together";
		return -EINVAL;
	}
	v = grow(st->topics, st->ntopics, sizeof(*v));
	if (!v)
		return -ENOMEM;
	st->topics = v;
	v[st->ntopics++] = t;
	return 0;
}

static int part_line(struct krep_state *st, char **w, int n, const char **why)
{
	static const char * const kw[] = {
		NULL, NULL, NULL, "leader", NULL, "leader-epoch", NULL,
		"partition-epoch", NULL, "replicas", NULL, "isr", NULL, "elr",
	};
	struct krep_state_part p = { 0 }, *v;
	struct krep_pstate *ps = &p.ps;
	uint32_t i;
	int k;

	if (n != 15) {
		*why = "expected 'partition TOPIC P leader ID|none leader-epoch N partition-epoch N replicas IDS isr IDS elr IDS'";
		return -EINVAL;
	}
	for (k = 0; k < 14; k++) {
		if (kw[k] && strcmp(w[k], kw[k])) {
			*why = "expected 'partition TOPIC P leader ID|none leader-epoch N partition-epoch N replicas IDS isr IDS elr IDS'";
			return -EINVAL;
		}
	}
	if (strlen(w[1]) > KREP_TOPIC_NAME_MAX) {
		*why = "topic name too long";
		return -EINVAL;
	}
	strcpy(p.topic, w[1]);
	if (u32_of(w[2], &p.partition)) {
		*why = "bad partition";
		return -EINVAL;
	}
	if (!strcmp(w[4], "none"))
		ps->leader = KREP_NO_LEADER;
	else if (u32_of(w[4], &ps->leader) || ps->leader > KREP_BROKER_ID_MAX) {
		*why = "bad leader";
		return -EINVAL;
	}
	if (u32_of(w[6], &ps->leader_epoch) ||
	    u32_of(w[8], &ps->partition_epoch)) {
		*why = "bad epoch";
		return -EINVAL;
	}
	if (krep_ids_parse(w[10], &ps->ar) || krep_ids_parse(w[12], &ps->isr) ||
	    krep_ids_parse(w[14], &ps->elr)) {
		*why = "bad broker id list";
		return -EINVAL;
	}
	for (i = 0; i < ps->isr.n; i++)
		if (!krep_ids_has(&ps->ar, ps->isr.id[i]))
			goto outside;
	for (i = 0; i < ps->elr.n; i++)
		if (!krep_ids_has(&ps->ar, ps->elr.id[i]) ||
		    krep_ids_has(&ps->isr, ps->elr.id[i]))
			goto outside;
	if (ps->leader != KREP_NO_LEADER && !krep_ids_has(&ps->isr, ps->leader))
		goto outside;
	v = grow(st->parts, st->nparts, sizeof(*v));
	if (!v)
		return -ENOMEM;
	st->parts = v;
	v[st->nparts++] = p;
	return 0;
outside:
	*why = "leader, ISR or ELR outside the replicas (or ISR and ELR overlap, or the leader is outside the ISR)";
	return -EINVAL;
}

static int state_line(struct krep_state *st, char *line, bool *versioned,
		      const char **why)
{
	char *w[WORDS_MAX], *p, *save = NULL;
	int n = 0;

	p = strchr(line, '#');
	if (p)
		*p = '\0';
	for (p = strtok_r(line, " \t\r\n", &save); p;
	     p = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == WORDS_MAX) {
			*why = "too many words";
			return -EINVAL;
		}
		w[n++] = p;
	}
	if (!n)
		return 0;
	if (!strcmp(w[0], "version")) {
		if (n != 2 || strcmp(w[1], "1")) {
			*why = "unsupported version (this krepd writes version 1)";
			return -EINVAL;
		}
		*versioned = true;
		return 0;
	}
	if (!*versioned) {
		*why = "the first statement must be 'version 1'";
		return -EINVAL;
	}
	if (!strcmp(w[0], "controller-epoch")) {
		if (n != 2 || u32_of(w[1], &st->controller_epoch)) {
			*why = "expected 'controller-epoch N'";
			return -EINVAL;
		}
		return 0;
	}
	if (!strcmp(w[0], "broker"))
		return broker_line(st, w, n, why);
	if (!strcmp(w[0], "topic"))
		return topic_line(st, w, n, why);
	if (!strcmp(w[0], "partition"))
		return part_line(st, w, n, why);
	*why = "unknown statement";
	return -EINVAL;
}

int krep_state_load(const char *path, struct krep_state *st, char *err,
		    size_t errlen)
{
	char *line = NULL;
	const char *why = NULL;
	bool versioned = false;
	unsigned int lineno = 0;
	size_t size = 0;
	int ret = 0;
	FILE *f;

	memset(st, 0, sizeof(*st));
	f = fopen(path, "r");
	if (!f) {
		ret = -errno;
		if (ret != -ENOENT)
			krep_errf(err, errlen, ret, "cannot open %s: %s", path,
			     strerror(-ret));
		return ret;
	}
	while (getline(&line, &size, f) >= 0) {
		lineno++;
		ret = state_line(st, line, &versioned, &why);
		if (ret == -ENOMEM) {
			krep_errf(err, errlen, ret, "%s: out of memory", path);
			break;
		}
		if (ret) {
			krep_errf(err, errlen, ret, "%s:%u: %s", path, lineno, why);
			break;
		}
	}
	if (!ret && ferror(f))
		ret = krep_errf(err, errlen, -EIO, "cannot read %s", path);
	if (!ret && !versioned)
		ret = krep_errf(err, errlen, -EINVAL, "%s: empty state file", path);
	free(line);
	fclose(f);
	if (ret)
		krep_state_free(st);
	return ret;
}

void krep_state_put_epoch(FILE *f, uint32_t controller_epoch)
{
	fprintf(f, "controller-epoch %u\n", controller_epoch);
}

void krep_state_put_broker(FILE *f, const struct krep_state_broker *b)
{
	if (b->has_incarnation)
		fprintf(f, "broker %u incarnation %016" PRIx64 " fenced %d\n",
			b->id, b->incarnation, b->fenced);
	else
		fprintf(f, "broker %u incarnation - fenced %d\n", b->id,
			b->fenced);
}

void krep_state_put_topic(FILE *f, const struct krep_state_topic *t)
{
	char cfg[KREP_TCONFIG_STR_MAX], held[KREP_ELECT_MAX * 11];

	fprintf(f, "topic %s min-isr %u unclean %d", t->name, t->tc.min_isr,
		t->tc.unclean);
	if (t->managed) {
		krep_tconfig_format(&t->cfg, cfg, sizeof(cfg));
		fprintf(f, " partitions %u rf %u config %s held %s",
			t->partitions, t->rf, cfg[0] ? cfg : "-",
			krep_ids_format(&t->held, held, sizeof(held)));
	}
	if (t->deleting)
		fputs(" deleting 1", f);
	fputc('\n', f);
}

void krep_state_put_part(FILE *f, const struct krep_state_part *p)
{
	const struct krep_pstate *ps = &p->ps;
	char ar[KREP_ELECT_MAX * 11], isr[sizeof(ar)], elr[sizeof(ar)];
	char leader[16];

	if (ps->leader == KREP_NO_LEADER)
		strcpy(leader, "none");
	else
		snprintf(leader, sizeof(leader), "%u", ps->leader);
	fprintf(f, "partition %s %u leader %s leader-epoch %u partition-epoch %u replicas %s isr %s elr %s\n",
		p->topic, p->partition, leader, ps->leader_epoch,
		ps->partition_epoch, krep_ids_format(&ps->ar, ar, sizeof(ar)),
		krep_ids_format(&ps->isr, isr, sizeof(isr)),
		krep_ids_format(&ps->elr, elr, sizeof(elr)));
}

static int fsync_dir(const char *path)
{
	char buf[PATH_MAX];
	int fd, ret = 0;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	fd = open(dirname(buf), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

int krep_state_save(const char *path, void (*emit)(FILE *f, void *arg),
		    void *arg, char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	int fd, ret;
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return krep_errf(err, errlen, -ENAMETOOLONG, "%s: name too long",
			    path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		return krep_errf(err, errlen, ret, "cannot create %s: %s", tmp,
			    strerror(-ret));
	}
	f = fdopen(fd, "w");
	if (!f) {
		ret = -errno;
		close(fd);
		unlink(tmp);
		return krep_errf(err, errlen, ret, "%s: %s", tmp, strerror(-ret));
	}
	fputs("# krepd controller state: written by krepd --controller, do not edit while it runs\n"
	      "version 1\n", f);
	emit(f, arg);
	if (fflush(f) || fsync(fd)) {
		ret = -errno;
		fclose(f);
		unlink(tmp);
		return krep_errf(err, errlen, ret, "cannot write %s: %s", tmp,
			    strerror(-ret));
	}
	if (fclose(f)) {
		ret = -errno;
		unlink(tmp);
		return krep_errf(err, errlen, ret, "cannot write %s: %s", tmp,
			    strerror(-ret));
	}
	if (rename(tmp, path)) {
		ret = -errno;
		unlink(tmp);
		return krep_errf(err, errlen, ret, "cannot rename %s to %s: %s", tmp,
			    path, strerror(-ret));
	}
	ret = fsync_dir(path);
	if (ret)
		return krep_errf(err, errlen, ret, "cannot sync the directory of %s: %s",
			    path, strerror(-ret));
	return 0;
}

int krep_state_lock(const char *path, char *err, size_t errlen)
{
	char lock[PATH_MAX], dir[PATH_MAX];
	int fd, ret;

	if (snprintf(lock, sizeof(lock), "%s.lock", path) >= (int)sizeof(lock))
		return krep_errf(err, errlen, -ENAMETOOLONG, "%s: name too long",
			    path);
	strcpy(dir, lock);
	if (mkdir(dirname(dir), 0755) && errno != EEXIST) {
		ret = -errno;
		return krep_errf(err, errlen, ret, "cannot create the directory of %s: %s",
			    path, strerror(-ret));
	}
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		return krep_errf(err, errlen, ret, "cannot open %s: %s", lock,
			    strerror(-ret));
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		ret = -errno;
		close(fd);
		if (ret == -EWOULDBLOCK)
			return krep_errf(err, errlen, ret,
				    "%s is locked: another krepd --controller uses state file %s",
				    lock, path);
		return krep_errf(err, errlen, ret, "cannot lock %s: %s", lock,
			    strerror(-ret));
	}
	return fd;
}
