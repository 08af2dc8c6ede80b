// SPDX-License-Identifier: GPL-2.0
/*
 * krepd --controller's view of the partitions (view.h): adopted from the
 * brokers' reports, changed only by the rules of elect.h, written to the
 * state file before any broker hears of a change, and pushed to the
 * replicas with LEADER_AND_ISR until each reports it. The brokers that
 * have the topic but not the partition get the same LEADER_AND_ISR once
 * per change (and again when they come back new), for Kafka's Metadata.
 *
 * Log lines, one per decision:
 *   TOPIC-P: leader OLD -> NEW (HOW, why; leader epoch E, partition epoch P,
 *            ISR A -> B[, ELR C -> D])
 *   TOPIC-P: ISR A -> B (why; partition epoch P[, ELR C -> D])
 *   TOPIC-P: ALTER_ISR from broker N (ISR A -> B) rejected: why
 *   TOPIC-P: adopted from broker N: leader L, leader epoch E, ...
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/krep.h>

#include "attrs.h"
#include "json.h"
#include "log.h"
#include "view.h"

#define IDS_STR	(KREP_ELECT_MAX * 11)

static const struct krep_tconf default_tconf = { .min_isr = 1 };

/* ---- lookups --------------------------------------------------------- */

static int part_cmp(const char *ta, uint32_t pa, const char *tb, uint32_t pb)
{
	int r = strcmp(ta, tb);

	if (r)
		return r;
	return pa < pb ? -1 : pa > pb;
}

/* The index of (@topic, @partition) in c->parts, or where it would go. */
static size_t part_pos(const struct ctl *c, const char *topic,
		       uint32_t partition, bool *found)
{
	size_t lo = 0, hi = c->np, mid;
	int r;

	*found = false;
	while (lo < hi) {
		mid = (lo + hi) / 2;
		r = part_cmp(c->parts[mid].st.topic, c->parts[mid].st.partition,
			     topic, partition);
		if (!r) {
			*found = true;
			return mid;
		}
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct cpart *part_find(struct ctl *c, const char *topic,
			       uint32_t partition)
{
	bool found;
	size_t i = part_pos(c, topic, partition, &found);

	return found ? &c->parts[i] : NULL;
}

/*
 * Room for one more of @n @size-byte elements in *@v (capacity *@cap,
 * doubled from @first); false when out of memory (*@v unchanged).
 */
static bool room(void **v, size_t n, size_t *cap, size_t first, size_t size)
{
	size_t c = *cap ? *cap * 2 : first;
	void *nv;

	if (n < *cap)
		return true;
	nv = realloc(*v, c * size);
	if (!nv)
		return false;
	*v = nv;
	*cap = c;
	return true;
}

static struct cpart *part_add(struct ctl *c, const char *topic,
			      uint32_t partition)
{
	struct cpart *v;
	bool found;
	size_t i;

	if (strlen(topic) > KREP_TOPIC_NAME_MAX)
		return NULL;
	i = part_pos(c, topic, partition, &found);
	if (found)
		return &c->parts[i];
	if (!room((void **)&c->parts, c->np, &c->np_cap, 64, sizeof(*v)))
		return NULL;
	memmove(&c->parts[i + 1], &c->parts[i], (c->np - i) * sizeof(*v));
	c->np++;
	v = &c->parts[i];
	memset(v, 0, sizeof(*v));
	strcpy(v->st.topic, topic);
	v->st.partition = partition;
	v->st.ps.leader = KREP_NO_LEADER;
	return v;
}

static void part_del(struct ctl *c, size_t i)
{
	memmove(&c->parts[i], &c->parts[i + 1],
		(c->np - i - 1) * sizeof(c->parts[0]));
	c->np--;
}

static struct krep_state_topic *topic_find(struct ctl *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->nt; i++)
		if (!strcmp(c->topics[i].name, name))
			return &c->topics[i];
	return NULL;
}

/* A new, zeroed topic record; NULL when out of memory or too long. */
static struct krep_state_topic *topic_add(struct ctl *c, const char *name)
{
	struct krep_state_topic *t;

	if (strlen(name) > KREP_TOPIC_NAME_MAX)
		return NULL;
	if (!room((void **)&c->topics, c->nt, &c->nt_cap, 16, sizeof(*t)))
		return NULL;
	t = &c->topics[c->nt++];
	memset(t, 0, sizeof(*t));
	strcpy(t->name, name);
	return t;
}

/* A topic the controller is deleting: what the brokers say of it is old. */
static bool deleting(struct ctl *c, const char *name)
{
	const struct krep_state_topic *t = topic_find(c, name);

	return t && t->deleting;
}

struct krep_state_topic *krep_view_topic(struct ctl *c, const char *name)
{
	return topic_find(c, name);
}

struct krep_state_topic *krep_view_topic_add(struct ctl *c, const char *name)
{
	return topic_add(c, name);
}

void krep_view_topic_drop(struct ctl *c, const char *name, bool parts_only)
{
	size_t i;

	for (i = c->np; i-- > 0;)
		if (!strcmp(c->parts[i].st.topic, name))
			part_del(c, i);
	for (i = 0; i < c->nt && !parts_only; i++) {
		if (strcmp(c->topics[i].name, name))
			continue;
		memmove(&c->topics[i], &c->topics[i + 1],
			(c->nt - i - 1) * sizeof(c->topics[0]));
		c->nt--;
		break;
	}
	c->dirty = true;
}

static const struct krep_tconf *tconf(struct ctl *c, const char *topic)
{
	const struct krep_state_topic *t = topic_find(c, topic);

	return t ? &t->tc : &default_tconf;
}

static size_t broker_index(const struct ctl *c, const struct cbroker *b)
{
	return b - c->b;
}

static int snap_part_cmp(const void *a, const void *b)
{
	const struct krep_snap_part *x = a, *y = b;

	return part_cmp(x->topic, x->partition, y->topic, y->partition);
}

/* @b's report of (@topic, @partition); its parts are sorted by merge. */
static const struct krep_snap_part *report(const struct cbroker *b,
					   const char *topic,
					   uint32_t partition)
{
	struct krep_snap_part key = { .topic = (char *)topic,
				      .partition = partition };

	if (!b->has_snap || !b->snap.nparts)
		return NULL;
	return bsearch(&key, b->snap.parts, b->snap.nparts,
		       sizeof(key), snap_part_cmp);
}

/* ---- small helpers ----------------------------------------------------- */

static const char *leader_str(uint32_t leader, char *buf, size_t size)
{
	if (leader == KREP_NO_LEADER)
		snprintf(buf, size, "none");
	else
		snprintf(buf, size, "%u", leader);
	return buf;
}

/* @v (@n ids) in AR order, keeping only replicas. */
static void ids_from(const uint32_t *v, size_t n, const struct krep_ids *ar,
		     struct krep_ids *out)
{
	uint32_t i;
	size_t j;

	out->n = 0;
	for (i = 0; i < ar->n; i++)
		for (j = 0; j < n; j++)
			if (v[j] == ar->id[i]) {
				out->id[out->n++] = ar->id[i];
				break;
			}
}

/* The partition's leader, epochs or ISR changed: every replica must hear. */
static void part_changed(struct ctl *c, struct cpart *p)
{
	memset(p->known, 0, sizeof(p->known));
	p->send = true;
	c->dirty = true;
}

struct cpart *krep_view_part(struct ctl *c, const char *topic,
			     uint32_t partition)
{
	return part_find(c, topic, partition);
}

struct cpart *krep_view_part_add(struct ctl *c, const char *topic,
				 uint32_t partition)
{
	return part_add(c, topic, partition);
}

void krep_view_part_changed(struct ctl *c, struct cpart *p)
{
	part_changed(c, p);
}

void krep_view_forget_broker(struct ctl *c, size_t bi)
{
	size_t i;

	for (i = 0; i < c->np; i++)
		c->parts[i].known[bi] = false;
}

/* Broker (index) @bi has @topic afresh: it knows nothing of its partitions. */
void krep_view_topic_unknown(struct ctl *c, const char *topic, size_t bi)
{
	size_t i;

	for (i = 0; i < c->np; i++)
		if (!strcmp(c->parts[i].st.topic, topic))
			c->parts[i].known[bi] = false;
}

/* ---- the state file ---------------------------------------------------- */

void krep_view_load(struct ctl *c, const struct krep_state *st)
{
	struct krep_state_topic *t;
	struct cbroker *b;
	struct cpart *p;
	size_t i;

	for (i = 0; i < st->nbrokers; i++) {
		b = krep_ctl_broker(c, st->brokers[i].id);
		if (!b)
			continue;	/* no longer configured */
		b->has_incarnation = st->brokers[i].has_incarnation;
		b->incarnation = st->brokers[i].incarnation;
		b->fenced = st->brokers[i].fenced;
	}
	for (i = 0; i < st->ntopics; i++) {
		if (topic_find(c, st->topics[i].name))
			continue;
		t = topic_add(c, st->topics[i].name);
		if (t)
			*t = st->topics[i];
	}
	for (i = 0; i < st->nparts; i++) {
		p = part_add(c, st->parts[i].topic, st->parts[i].partition);
		if (p)
			p->st = st->parts[i];
	}
}

static void emit(FILE *f, void *arg)
{
	struct ctl *c = arg;
	struct krep_state_broker sb;
	size_t i;

	krep_state_put_epoch(f, c->epoch);
	for (i = 0; i < c->nb; i++) {
		sb.id = c->b[i].id;
		sb.has_incarnation = c->b[i].has_incarnation;
		sb.incarnation = c->b[i].incarnation;
		sb.fenced = c->b[i].fenced;
		krep_state_put_broker(f, &sb);
	}
	for (i = 0; i < c->nt; i++)
		krep_state_put_topic(f, &c->topics[i]);
	for (i = 0; i < c->np; i++)
		krep_state_put_part(f, &c->parts[i].st);
}

int krep_view_state(struct ctl *c, struct krep_state *st)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	st->controller_epoch = c->epoch;
	st->brokers = calloc(c->nb + 1, sizeof(*st->brokers));
	st->topics = calloc(c->nt + 1, sizeof(*st->topics));
	st->parts = calloc(c->np + 1, sizeof(*st->parts));
	if (!st->brokers || !st->topics || !st->parts) {
		krep_state_free(st);
		return -ENOMEM;
	}
	for (i = 0; i < c->nb; i++) {
		st->brokers[i].id = c->b[i].id;
		st->brokers[i].has_incarnation = c->b[i].has_incarnation;
		st->brokers[i].incarnation = c->b[i].incarnation;
		st->brokers[i].fenced = c->b[i].fenced;
	}
	st->nbrokers = c->nb;
	memcpy(st->topics, c->topics, c->nt * sizeof(*st->topics));
	st->ntopics = c->nt;
	for (i = 0; i < c->np; i++)
		st->parts[i] = c->parts[i].st;
	st->nparts = c->np;
	return 0;
}

/* --etcd: the changed keys, in compare-and-set transactions (ha.h). */
static int save_etcd(struct ctl *c)
{
	struct krep_state st;
	int ret;

	if (krep_view_state(c, &st)) {
		krep_log(LOG_ERR, "cannot write the state: %s", strerror(ENOMEM));
		return -1;
	}
	ret = krep_ha_save(c->ha, &st);
	krep_state_free(&st);
	if (ret == -ESTALE)
		c->step_down = true;
	if (ret)
		return -1;	/* logged */
	c->dirty = false;
	return 0;
}

int krep_view_save(struct ctl *c)
{
	char err[512];

	if (!c->dirty)
		return 0;
	if (c->ha)
		return save_etcd(c);
	if (krep_state_save(c->cfg->state_file, emit, c, err, sizeof(err))) {
		krep_log(LOG_ERR, "cannot write the state: %s; no decision goes out until it is written",
			 err);
		return -1;
	}
	c->dirty = false;
	return 0;
}

/* ---- adoption from the brokers' reports -------------------------------- */

/* @b's topic configurations, where no broker before it reported the topic. */
static void merge_topics(struct ctl *c, size_t bi)
{
	const struct cbroker *b = &c->b[bi];
	const struct krep_snap_topic *st;
	struct krep_state_topic *t;
	struct krep_tconf tc;
	size_t i, j;

	for (i = 0; i < b->snap.ntopics; i++) {
		st = &b->snap.topics[i];
		if (strlen(st->name) > KREP_TOPIC_NAME_MAX ||
		    deleting(c, st->name))
			continue;
		for (j = 0; j < bi; j++)
			if (c->b[j].has_snap &&
			    krep_snap_topic(&c->b[j].snap, st->name))
				break;
		if (j < bi)
			continue;	/* an earlier broker's word counts */
		tc.min_isr = st->has_min_isr ? st->min_isr : 1;
		tc.unclean = st->has_unclean && st->unclean;
		t = topic_find(c, st->name);
		if (t && t->tc.min_isr == tc.min_isr &&
		    t->tc.unclean == tc.unclean)
			continue;
		if (!t)
			t = topic_add(c, st->name);
		if (!t)
			continue;
		t->tc = tc;
		c->dirty = true;
		krep_log(LOG_INFO, "topic %s: min_insync_replicas %u, unclean_leader_election %s (from broker %u)",
			 t->name, tc.min_isr, tc.unclean ? "on" : "off", b->id);
	}
}

/* Take @r's leader, epochs and ISR into @p: it is newer than the view. */
static void adopt(struct ctl *c, struct cpart *p, const struct cbroker *b,
		  const struct krep_snap_part *r, bool fresh)
{
	struct krep_pstate *ps = &p->st.ps;
	char isr[IDS_STR], l[16];
	uint32_t i;

	if (!ps->ar.n || fresh) {
		ps->ar.n = 0;
		for (i = 0; i < r->nreplicas && i < KREP_ELECT_MAX; i++)
			krep_ids_add(&ps->ar, r->replicas[i]);
	}
	ps->leader = r->has_leader ? r->leader : KREP_NO_LEADER;
	ps->leader_epoch = r->leader_epoch;
	ps->partition_epoch = r->partition_epoch;
	ids_from(r->isr, r->nisr, &ps->ar, &ps->isr);
	for (i = 0; i < ps->isr.n; i++)
		krep_ids_del(&ps->elr, ps->isr.id[i]);
	memset(p->known, 0, sizeof(p->known));
	c->dirty = true;
	krep_log(LOG_INFO, "%s-%u: %s from broker %u: leader %s, leader epoch %u, partition epoch %u, ISR %s",
		 p->st.topic, p->st.partition,
		 fresh ? "adopted" : "adopted newer state", b->id,
		 leader_str(ps->leader, l, sizeof(l)), ps->leader_epoch,
		 ps->partition_epoch,
		 krep_ids_format(&ps->isr, isr, sizeof(isr)));
}

static bool newer(const struct krep_snap_part *r, const struct krep_pstate *ps)
{
	return r->leader_epoch > ps->leader_epoch ||
	       (r->leader_epoch == ps->leader_epoch &&
		r->partition_epoch > ps->partition_epoch);
}

static bool behind(const struct krep_snap_part *r, const struct krep_pstate *ps)
{
	return r->leader_epoch < ps->leader_epoch ||
	       (r->leader_epoch == ps->leader_epoch &&
		r->partition_epoch < ps->partition_epoch);
}

void krep_view_merge(struct ctl *c)
{
	const struct krep_snap_part *r;
	bool all = true;
	struct cbroker *b;
	struct cpart *p;
	size_t i, j;

	for (i = 0; i < c->np; i++) {
		c->parts[i].seen = false;
		memset(c->parts[i].known, 0, sizeof(c->parts[i].known));
	}
	for (j = 0; j < c->nb; j++) {
		b = &c->b[j];
		if (!b->has_snap) {
			all = false;
			continue;
		}
		qsort(b->snap.parts, b->snap.nparts, sizeof(*b->snap.parts),
		      snap_part_cmp);
		merge_topics(c, j);
		for (i = 0; i < b->snap.nparts; i++) {
			r = &b->snap.parts[i];
			if (!r->has_leader_epoch || !r->has_partition_epoch ||
			    !r->has_replicas || !r->nreplicas ||
			    deleting(c, r->topic))
				continue;
			p = part_find(c, r->topic, r->partition);
			if (!p) {
				p = part_add(c, r->topic, r->partition);
				if (!p)
					continue;
				adopt(c, p, b, r, true);
			} else if (newer(r, &p->st.ps)) {
				adopt(c, p, b, r, false);
			}
			p->seen = true;
		}
	}
	if (!all)
		return;
	/*
	 * every broker answered and none has it: the topic was deleted (but
	 * the controller's own topics are created again where missing)
	 */
	for (i = c->np; i-- > 0;) {
		const struct krep_state_topic *t = topic_find(c,
							      c->parts[i].st.topic);

		if (c->parts[i].seen || (t && t->managed))
			continue;
		krep_log(LOG_INFO, "%s-%u: no broker has it any more: forgotten",
			 c->parts[i].st.topic, c->parts[i].st.partition);
		part_del(c, i);
		c->dirty = true;
	}
}

/* ---- elections --------------------------------------------------------- */

/*
 * Broker @b reports its replica of @p Offline: its log directory failed
 * (Kafka's offline log directory). Until it reports otherwise, that
 * replica neither leads nor stays in the ISR.
 */
static bool replica_offline(const struct cbroker *b, const struct cpart *p)
{
	const struct krep_snap_part *r = report(b, p->st.topic,
						p->st.partition);

	return r && r->role == KREP_ROLE_OFFLINE;
}

/* @live without the brokers whose replica of @p is offline; how many left */
static uint32_t part_live(struct ctl *c, const struct cpart *p,
			  const struct krep_ids *live, struct krep_ids *out)
{
	const struct cbroker *b;
	uint32_t k, n = 0;

	*out = *live;
	for (k = 0; k < p->st.ps.ar.n; k++) {
		b = krep_ctl_broker(c, p->st.ps.ar.id[k]);
		if (b && krep_ids_has(out, b->id) && replica_offline(b, p)) {
			krep_ids_del(out, b->id);
			n++;
		}
	}
	return n;
}

/* Why @p's leader must change, for the log. */
static const char *why_elect(struct ctl *c, const struct cpart *p,
			     char *buf, size_t size)
{
	const struct krep_pstate *ps = &p->st.ps;
	struct cbroker *b;

	if (ps->leader == KREP_NO_LEADER)
		return "was offline";
	b = krep_ctl_broker(c, ps->leader);
	if (b && !b->reborn && !b->fenced && replica_offline(b, p))
		snprintf(buf, size, "leader %u's replica is offline: its log directory failed",
			 ps->leader);
	else if (!b)
		snprintf(buf, size, "leader %u is not a configured broker",
			 ps->leader);
	else if (b->reborn)
		snprintf(buf, size, "leader %u restarted", ps->leader);
	else if (b->fenced)
		snprintf(buf, size, "leader %u fenced", ps->leader);
	else
		snprintf(buf, size, "leader %u left the ISR", ps->leader);
	return buf;
}

/* why_elect()'s reason, for krep_controller_elections_total. */
static enum krep_ctl_elect_reason elect_reason(struct ctl *c,
					       const struct cpart *p)
{
	const struct krep_pstate *ps = &p->st.ps;
	struct cbroker *b;

	if (ps->leader == KREP_NO_LEADER)
		return KREP_CTL_ELECT_OFFLINE;
	b = krep_ctl_broker(c, ps->leader);
	if (!b)
		return KREP_CTL_ELECT_LEADER_FENCED;	/* counts as fenced */
	if (b->reborn)
		return KREP_CTL_ELECT_LEADER_RESTARTED;
	if (b->fenced)
		return KREP_CTL_ELECT_LEADER_FENCED;
	if (replica_offline(b, p))
		return KREP_CTL_ELECT_LEADER_OFFLINE;
	return KREP_CTL_ELECT_LEADER_LEFT_ISR;
}

/* Count what krep_elect_step() decided on @old (the metrics' counters). */
static void count_step(struct ctl *c, const struct krep_pstate *old,
		       const struct krep_elect_out *out,
		       enum krep_ctl_elect_reason reason)
{
	struct krep_ctl_counters *n = c->n;

	switch (out->how) {
	case KREP_ELECT_ELR:
		n->elr_elections++;
		break;
	case KREP_ELECT_UNCLEAN:
		n->unclean_elections++;
		break;
	case KREP_ELECT_ISR:
		break;
	case KREP_ELECT_OFFLINE:
		if (old->leader != KREP_NO_LEADER)
			n->offline_transitions++;
		return;
	default:
		return;
	}
	n->elections[reason]++;
}

static void log_change(struct ctl *c, const struct cpart *p,
		       const struct krep_pstate *old,
		       const struct krep_pstate *new,
		       const char *how, const char *why)
{
	char a[IDS_STR], bb[IDS_STR], e1[IDS_STR], e2[IDS_STR], elr[2 * IDS_STR + 16];
	char l1[16], l2[16];

	(void)c;
	elr[0] = '\0';
	if (!krep_ids_equal(&old->elr, &new->elr))
		snprintf(elr, sizeof(elr), ", ELR %s -> %s",
			 krep_ids_format(&old->elr, e1, sizeof(e1)),
			 krep_ids_format(&new->elr, e2, sizeof(e2)));
	krep_ids_format(&old->isr, a, sizeof(a));
	krep_ids_format(&new->isr, bb, sizeof(bb));
	if (old->leader != new->leader)
		krep_log(LOG_NOTICE, "%s-%u: leader %s -> %s (%s, %s; leader epoch %u, partition epoch %u, ISR %s -> %s%s)",
			 p->st.topic, p->st.partition,
			 leader_str(old->leader, l1, sizeof(l1)),
			 leader_str(new->leader, l2, sizeof(l2)), how, why,
			 new->leader_epoch, new->partition_epoch, a, bb, elr);
	else if (!krep_ids_equal(&old->isr, &new->isr))
		krep_log(LOG_NOTICE, "%s-%u: ISR %s -> %s (%s; partition epoch %u%s)",
			 p->st.topic, p->st.partition, a, bb, why,
			 new->partition_epoch, elr);
	else if (elr[0])
		krep_log(LOG_NOTICE, "%s-%u: %s (%s)", p->st.topic,
			 p->st.partition, elr + 2, why);
}

/* Warn once per partition about replicas krepd does not know. */
static void check_replicas(struct ctl *c, struct cpart *p)
{
	char msg[sizeof(p->last_warn)];
	uint32_t i;

	for (i = 0; i < p->st.ps.ar.n; i++) {
		if (krep_ctl_broker(c, p->st.ps.ar.id[i]))
			continue;
		snprintf(msg, sizeof(msg),
			 "replica %u is not a configured broker: it counts as fenced",
			 p->st.ps.ar.id[i]);
		if (strcmp(msg, p->last_warn)) {
			snprintf(p->last_warn, sizeof(p->last_warn), "%s", msg);
			krep_log(LOG_WARNING, "%s-%u: %s", p->st.topic,
				 p->st.partition, msg);
		}
		return;
	}
}

void krep_view_decide(struct ctl *c)
{
	struct krep_ids live, plive, reborn = { 0 };
	struct krep_elect_out out;
	struct krep_pstate next;
	uint32_t offline;
	struct cpart *p;
	const char *why;
	char buf[96];
	size_t i;

	krep_ctl_live(c, &live);
	for (i = 0; i < c->nb; i++)
		if (c->b[i].reborn)
			reborn.id[reborn.n++] = c->b[i].id;
	for (i = 0; i < c->np; i++) {
		p = &c->parts[i];
		check_replicas(c, p);
		offline = part_live(c, p, &live, &plive);
		krep_elect_step(&p->st.ps, tconf(c, p->st.topic), &plive,
				&reborn, &next, &out);
		if (!out.changed)
			continue;
		if (out.how != KREP_ELECT_NONE)
			why = why_elect(c, p, buf, sizeof(buf));
		else if (offline)
			why = "offline replicas out (log directory failed)";
		else
			why = reborn.n ? "restarted or fenced brokers out" :
					 "fenced brokers out";
		log_change(c, p, &p->st.ps, &next, krep_elect_how_name(out.how),
			   why);
		count_step(c, &p->st.ps, &out, elect_reason(c, p));
		p->st.ps = next;
		c->dirty = true;
		if (out.bumped)
			part_changed(c, p);
	}
}

void krep_view_replica_lost(struct ctl *c, const char *topic, uint32_t id)
{
	struct krep_ids live, lost = { .n = 1, .id = { id } };
	struct krep_elect_out out;
	struct krep_pstate next;
	struct cpart *p;
	char why[64];
	size_t i;

	krep_ctl_live(c, &live);
	snprintf(why, sizeof(why), "broker %u lost its replica", id);
	for (i = 0; i < c->np; i++) {
		p = &c->parts[i];
		if (strcmp(p->st.topic, topic) || !krep_ids_has(&p->st.ps.ar, id))
			continue;
		krep_elect_step(&p->st.ps, tconf(c, topic), &live, &lost, &next,
				&out);
		if (!out.changed)
			continue;
		log_change(c, p, &p->st.ps, &next, krep_elect_how_name(out.how),
			   why);
		count_step(c, &p->st.ps, &out, p->st.ps.leader == id ?
			   KREP_CTL_ELECT_REPLICA_LOST : elect_reason(c, p));
		p->st.ps = next;
		c->dirty = true;
		if (out.bumped)
			part_changed(c, p);
	}
}

/* ---- LEADER_AND_ISR ---------------------------------------------------- */

int krep_view_put_ids(struct nl_msg *msg, int type, const struct krep_ids *ids)
{
	struct nlattr *nest;
	uint32_t i;

	/* libnl drops an empty nest; an offline partition's ISR may be one */
	if (!ids->n)
		return nla_put(msg, type | NLA_F_NESTED, 0, NULL) ? -EMSGSIZE : 0;
	nest = nla_nest_start(msg, type | NLA_F_NESTED);
	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < ids->n; i++)
		if (nla_put_u32(msg, KREP_A_BROKER_ID, ids->id[i]))
			return -EMSGSIZE;
	nla_nest_end(msg, nest);
	return 0;
}

/*
 * Log a failed LEADER_AND_ISR once per broker and reason (the partition
 * is sent again every poll while the broker is behind).
 */
static void send_failed(struct cpart *p, struct cbroker *b, size_t bi, int err)
{
	const struct krep_genl_status *st = b->s ? krep_session_status(b->s) :
						   NULL;
	const char *kname = NULL;
	int key = err;

	if (st && st->err && st->ea.has_kerr) {
		kname = krep_kafka_error_name(st->ea.kerr);
		key = err * 1000 - st->ea.kerr;
	}
	if (p->send_err[bi] != key) {
		p->send_err[bi] = key;
		krep_log(LOG_WARNING, "%s-%u: LEADER_AND_ISR to broker %u failed: %s%s%.*s%s%s%s",
			 p->st.topic, p->st.partition, b->id, strerror(-err),
			 st && st->ea.msg_len ? ": " : "",
			 st ? st->ea.msg_len : 0,
			 st && st->ea.msg ? st->ea.msg : "",
			 kname ? " [" : "", kname ? kname : "", kname ? "]" : "");
	}
	if (err == -EPERM || (kname && !strcmp(kname, "STALE_CONTROLLER_EPOCH")))
		b->claimed = false;	/* claim again at the next poll */
	if (err == -ETIMEDOUT || !b->s)
		b->reachable = false;	/* no more waiting on it this round */
}

/*
 * The replicas of @p whose brokers are fenced: Kafka's ineligible
 * replicas, which a leader neither counts towards HW outside the ISR nor
 * asks to add to it.
 */
static void ineligible(struct ctl *c, const struct cpart *p,
		       struct krep_ids *out)
{
	const struct krep_ids *ar = &p->st.ps.ar;
	const struct cbroker *b;
	uint32_t k;

	out->n = 0;
	for (k = 0; k < ar->n; k++) {
		b = krep_ctl_broker(c, ar->id[k]);
		if (b && b->fenced)
			out->id[out->n++] = ar->id[k];
	}
}

/* broker @r reports another ineligible set of @p than @want */
static bool inel_differs(const struct krep_snap_part *r,
			 const struct krep_ids *want)
{
	struct krep_ids got = { .n = 0 };
	size_t i;

	for (i = 0; i < r->nineligible; i++)
		if (!krep_ids_add(&got, r->ineligible[i]))
			return true;
	return !krep_ids_equal(&got, want);
}

/* Tell broker @b the view of @p. */
static int send_lai(struct ctl *c, struct cbroker *b, struct cpart *p)
{
	const struct krep_pstate *ps = &p->st.ps;
	struct krep_ids inel;
	struct nl_msg *msg;
	int err;

	ineligible(c, p, &inel);

	msg = krep_genl_msg_new(krep_session_family(b->s),
				KREP_CMD_LEADER_AND_ISR, 0, 1024);
	if (!msg)
		return -ENOMEM;
	if (nla_put_u32(msg, KREP_A_CONTROLLER_EPOCH, c->epoch) ||
	    nla_put_string(msg, KREP_A_TOPIC, p->st.topic) ||
	    nla_put_u32(msg, KREP_A_PARTITION, p->st.partition) ||
	    nla_put_u32(msg, KREP_A_LEADER, ps->leader) ||
	    nla_put_u32(msg, KREP_A_LEADER_EPOCH, ps->leader_epoch) ||
	    nla_put_u32(msg, KREP_A_PARTITION_EPOCH, ps->partition_epoch) ||
	    krep_view_put_ids(msg, KREP_A_ISR, &ps->isr) ||
	    krep_view_put_ids(msg, KREP_A_REPLICAS, &ps->ar) ||
	    (inel.n && krep_view_put_ids(msg, KREP_A_INELIGIBLE, &inel))) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	err = krep_ctl_request(c, b, msg, NULL, NULL);
	nlmsg_free(msg);
	if (err) {
		send_failed(p, b, broker_index(c, b), err);
		return err;
	}
	p->known[broker_index(c, b)] = true;
	p->send_err[broker_index(c, b)] = 0;
	return 0;
}

bool krep_view_can_send(const struct cbroker *b)
{
	return b && b->s && b->reachable && b->claimed;
}

/*
 * A broker that has @p's topic but not @p keeps its leader for Kafka's
 * Metadata only (Kafka's UpdateMetadata): it hears every change too.
 */
static bool meta_only(const struct cbroker *b, const struct cpart *p)
{
	return krep_view_can_send(b) && !krep_ids_has(&p->st.ps.ar, b->id) &&
	       b->has_snap && krep_snap_topic(&b->snap, p->st.topic);
}

void krep_view_propagate(struct ctl *c)
{
	struct cbroker *b;
	struct cpart *p;
	bool any = false;
	size_t i;
	uint32_t k;

	if (!c->started)
		return;
	for (i = 0; i < c->np; i++)
		any |= c->parts[i].send;
	if (!any && !c->dirty)
		return;
	if (krep_view_save(c))
		return;		/* nothing goes out that is not written down */
	for (i = 0; i < c->np; i++) {
		p = &c->parts[i];
		if (!p->send)
			continue;
		p->send = false;	/* laggards: krep_view_reconcile() */
		for (k = 0; k < p->st.ps.ar.n; k++) {
			b = krep_ctl_broker(c, p->st.ps.ar.id[k]);
			if (krep_view_can_send(b))
				send_lai(c, b, p);
		}
		for (k = 0; k < c->nb; k++)
			if (meta_only(&c->b[k], p))
				send_lai(c, &c->b[k], p);
	}
}

void krep_view_reconcile(struct ctl *c)
{
	const struct krep_snap_part *r;
	const struct krep_pstate *ps;
	struct krep_ids inel;
	struct cbroker *b;
	struct cpart *p;
	uint32_t leader, k;
	size_t i;

	if (!c->started || c->dirty)
		return;		/* what is not written down is not sent */
	for (i = 0; i < c->np; i++) {
		p = &c->parts[i];
		ps = &p->st.ps;
		for (k = 0; k < c->nb; k++)	/* they report nothing of it */
			if (meta_only(&c->b[k], p) && !p->known[k])
				send_lai(c, &c->b[k], p);
		for (k = 0; k < ps->ar.n; k++) {
			b = krep_ctl_broker(c, ps->ar.id[k]);
			if (!krep_view_can_send(b) || p->known[broker_index(c, b)])
				continue;
			r = report(b, p->st.topic, p->st.partition);
			if (!r || !r->has_leader_epoch || !r->has_partition_epoch)
				continue;
			leader = r->has_leader ? r->leader : KREP_NO_LEADER;
			ineligible(c, p, &inel);
			if (!behind(r, ps) && leader == ps->leader &&
			    inel_differs(r, &inel)) {
				if (!send_lai(c, b, p))
					krep_log(LOG_INFO, "%s-%u: broker %u told of %u fenced replica%s",
						 p->st.topic, p->st.partition,
						 b->id, inel.n,
						 inel.n == 1 ? "" : "s");
			} else if (behind(r, ps) || leader != ps->leader) {
				if (!send_lai(c, b, p))
					krep_log(LOG_INFO, "%s-%u: broker %u was behind (leader %d, epochs %u/%u): sent leader %d, epochs %u/%u",
						 p->st.topic, p->st.partition,
						 b->id, (int)leader,
						 r->leader_epoch,
						 r->partition_epoch,
						 (int)ps->leader,
						 ps->leader_epoch,
						 ps->partition_epoch);
			}
		}
	}
}

/* ---- ALTER_ISR --------------------------------------------------------- */

/* @proposed drops a member of @isr. */
static bool shrinks(const struct krep_ids *isr, const struct krep_ids *proposed)
{
	uint32_t i;

	for (i = 0; i < isr->n; i++)
		if (!krep_ids_has(proposed, isr->id[i]))
			return true;
	return false;
}

/*
 * A request of broker @b to change the ISR of @topic-@partition to
 * @proposed, based on @le/@pe: committed (and sent to every replica once
 * written down) or turned down (the current state re-sent to @b, which
 * ends its pending change).
 *
 * One more rule than elect.h's: a shrink from a leader that no other
 * broker sees up waits. A leader cut off from its followers (but not from
 * the controller) asks to drop them all after replica_lag_time_max_ms,
 * before its peers' reports fence it after the session timeout; committed,
 * that shrink would leave it the only ISR member, and fencing it then
 * would take the partition offline instead of failing over to a follower
 * that holds every committed record. Not answering keeps the request
 * pending on the leader (it sends it again every KREP_ALTER_ISR_RETRY_MS):
 * it is committed once the leader is seen up again, or becomes stale when
 * the leader is fenced and replaced. Waiting is safe: the leader's HW
 * counts the members it wants to drop until the commit.
 */
static void alter(struct ctl *c, struct cbroker *b, const char *topic,
		  uint32_t partition, uint32_t le, uint32_t pe,
		  const struct krep_ids *proposed, const char *via)
{
	char why[128], msg[sizeof(((struct cpart *)0)->last_reject)];
	char a[IDS_STR], pr[IDS_STR], e1[IDS_STR], e2[IDS_STR], who[64];
	const struct krep_snap_part *r;
	struct krep_ids live, all;
	struct krep_pstate next;
	struct cpart *p;
	size_t bi = broker_index(c, b);

	p = part_find(c, topic, partition);
	if (!p || !c->started)
		return;
	krep_ctl_live(c, &all);
	part_live(c, p, &all, &live);	/* an offline replica does not rejoin */
	if (shrinks(&p->st.ps.isr, proposed) && le == p->st.ps.leader_epoch &&
	    pe == p->st.ps.partition_epoch && b->id == p->st.ps.leader &&
	    krep_ctl_suspect(c, b, who, sizeof(who))) {
		snprintf(msg, sizeof(msg), "ALTER_ISR from broker %u (ISR %s -> %s) waits: broker%s %s do%s not see it up",
			 b->id, krep_ids_format(&p->st.ps.isr, a, sizeof(a)),
			 krep_ids_format(proposed, pr, sizeof(pr)),
			 strchr(who, ',') ? "s" : "", who,
			 strchr(who, ',') ? "" : "es");
		if (strcmp(msg, p->last_reject)) {
			snprintf(p->last_reject, sizeof(p->last_reject), "%s",
				 msg);
			krep_log(LOG_NOTICE, "%s-%u: %s", topic, partition, msg);
		}
		return;
	}
	if (krep_elect_alter_isr(&p->st.ps, tconf(c, topic), &live, b->id, le,
				 pe, proposed, &next, why, sizeof(why)) ==
	    KREP_ALTER_COMMIT) {
		krep_log(LOG_NOTICE, "%s-%u: ISR %s -> %s (ALTER_ISR from leader %u, %s; partition epoch %u%s%s%s%s)",
			 topic, partition,
			 krep_ids_format(&p->st.ps.isr, a, sizeof(a)),
			 krep_ids_format(&next.isr, pr, sizeof(pr)), b->id, via,
			 next.partition_epoch,
			 krep_ids_equal(&p->st.ps.elr, &next.elr) ? "" : ", ELR ",
			 krep_ids_equal(&p->st.ps.elr, &next.elr) ? "" :
				krep_ids_format(&p->st.ps.elr, e1, sizeof(e1)),
			 krep_ids_equal(&p->st.ps.elr, &next.elr) ? "" : " -> ",
			 krep_ids_equal(&p->st.ps.elr, &next.elr) ? "" :
				krep_ids_format(&next.elr, e2, sizeof(e2)));
		p->st.ps = next;
		p->last_reject[0] = '\0';
		part_changed(c, p);
		c->n->isr_commits++;
		return;
	}
	/*
	 * Based on older epochs while @b already has the current ones: an
	 * old event or a report from before the commit, not a live request.
	 */
	r = report(b, topic, partition);
	if ((le < p->st.ps.leader_epoch ||
	     (le == p->st.ps.leader_epoch && pe < p->st.ps.partition_epoch)) &&
	    (p->known[bi] || (r && r->has_leader_epoch && r->has_partition_epoch &&
			      !behind(r, &p->st.ps) && !r->has_pending_isr)))
		return;
	snprintf(msg, sizeof(msg), "ALTER_ISR from broker %u (ISR %s -> %s) rejected: %s",
		 b->id, krep_ids_format(&p->st.ps.isr, a, sizeof(a)),
		 krep_ids_format(proposed, pr, sizeof(pr)), why);
	if (strcmp(msg, p->last_reject)) {
		snprintf(p->last_reject, sizeof(p->last_reject), "%s", msg);
		krep_log(LOG_NOTICE, "%s-%u: %s", topic, partition, msg);
	}
	/* the same epochs again: the leader drops its pending change */
	if (!c->dirty && krep_view_can_send(b))
		send_lai(c, b, p);
}

void krep_view_pending(struct ctl *c)
{
	const struct krep_snap_part *r;
	struct krep_ids proposed;
	struct cbroker *b;
	size_t i, j, k;

	for (j = 0; j < c->nb; j++) {
		b = &c->b[j];
		if (!b->has_snap)
			continue;
		for (i = 0; i < b->snap.nparts; i++) {
			r = &b->snap.parts[i];
			if (!r->has_pending_isr || !r->has_leader_epoch ||
			    !r->has_partition_epoch)
				continue;
			proposed.n = 0;
			for (k = 0; k < r->npending_isr; k++)
				if (!krep_ids_add(&proposed, r->pending_isr[k]))
					break;
			alter(c, b, r->topic, r->partition, r->leader_epoch,
			      r->partition_epoch, &proposed, "pending");
		}
	}
}

static struct nla_policy event_policy[KREP_A_MAX + 1] = {
	[KREP_A_TOPIC]		= { .type = NLA_STRING },
	[KREP_A_PARTITION]	= { .type = NLA_U32 },
	[KREP_A_LEADER]		= { .type = NLA_U32 },
	[KREP_A_LEADER_EPOCH]	= { .type = NLA_U32 },
	[KREP_A_PARTITION_EPOCH] = { .type = NLA_U32 },
	[KREP_A_ISR]		= { .type = NLA_NESTED },
	[KREP_A_CONTROLLER_EPOCH] = { .type = NLA_U32 },
};

int krep_view_event(struct nl_msg *msg, void *arg)
{
	struct krep_view_from *from = arg;
	struct nlattr *tb[KREP_A_MAX + 1], *a;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct krep_ids proposed = { 0 };
	struct genlmsghdr *gh;
	int rem;

	if (!genlmsg_valid_hdr(nlh, 0))
		return 0;
	gh = nlmsg_data(nlh);
	if (gh->cmd != KREP_CMD_ALTER_ISR)
		return 0;
	if (genlmsg_parse(nlh, 0, tb, KREP_A_MAX, event_policy) ||
	    !tb[KREP_A_TOPIC] || !tb[KREP_A_PARTITION] || !tb[KREP_A_LEADER] ||
	    !tb[KREP_A_LEADER_EPOCH] || !tb[KREP_A_PARTITION_EPOCH] ||
	    !tb[KREP_A_ISR])
		return 0;
	/* without a controller epoch the leader applied it itself */
	if (!tb[KREP_A_CONTROLLER_EPOCH] ||
	    nla_get_u32(tb[KREP_A_CONTROLLER_EPOCH]) != from->c->epoch ||
	    nla_get_u32(tb[KREP_A_LEADER]) != from->b->id)
		return 0;
	nla_for_each_nested(a, tb[KREP_A_ISR], rem) {
		if (nla_type(a) != KREP_A_BROKER_ID || nla_len(a) != 4)
			return 0;
		if (!krep_ids_add(&proposed, nla_get_u32(a)))
			return 0;
	}
	alter(from->c, from->b, nla_get_string(tb[KREP_A_TOPIC]),
	      nla_get_u32(tb[KREP_A_PARTITION]),
	      nla_get_u32(tb[KREP_A_LEADER_EPOCH]),
	      nla_get_u32(tb[KREP_A_PARTITION_EPOCH]), &proposed, "event");
	return 0;
}

/* ---- preferred leaders ------------------------------------------------- */

static void json_ids(struct json *j, const struct krep_ids *ids)
{
	uint32_t i;

	json_arr_begin(j);
	for (i = 0; i < ids->n; i++)
		json_u64(j, ids->id[i]);
	json_arr_end(j);
}

static void json_leader(struct json *j, uint32_t leader)
{
	if (leader == KREP_NO_LEADER)
		json_null(j);
	else
		json_u64(j, leader);
}

void krep_view_preferred(struct ctl *c, const char *topic, int64_t partition,
			 FILE *out)
{
	enum krep_pref_result res;
	struct krep_pstate next;
	struct krep_ids live;
	size_t i, matched = 0, failed = 0;
	struct cpart *p;
	char why[128], l1[16], l2[16];
	struct json j;

	krep_ctl_live(c, &live);
	for (i = 0; i < c->np; i++) {
		p = &c->parts[i];
		if ((topic && strcmp(p->st.topic, topic)) ||
		    (partition >= 0 && p->st.partition != partition))
			continue;
		matched++;
		if (!out && p->st.ps.ar.n && p->st.ps.leader == p->st.ps.ar.id[0])
			continue;
		res = krep_elect_preferred(&p->st.ps, &live, &next, why,
					   sizeof(why));
		if (res == KREP_PREF_ELECTED) {
			krep_log(LOG_NOTICE, "%s-%u: leader %s -> %s (preferred, %s; leader epoch %u, partition epoch %u)",
				 p->st.topic, p->st.partition,
				 leader_str(p->st.ps.leader, l1, sizeof(l1)),
				 leader_str(next.leader, l2, sizeof(l2)),
				 out ? "asked by krepctl elect" : "periodic",
				 next.leader_epoch, next.partition_epoch);
		} else if (res == KREP_PREF_NOT_ELIGIBLE) {
			failed++;
		}
		if (out) {
			json_init(&j, out);
			json_obj_begin(&j);
			json_key(&j, "topic");
			json_str(&j, p->st.topic);
			json_key(&j, "partition");
			json_u64(&j, p->st.partition);
			json_key(&j, "result");
			json_str(&j, res == KREP_PREF_ELECTED ? "elected" :
				     res == KREP_PREF_NOT_NEEDED ?
				     "ELECTION_NOT_NEEDED" : "not_eligible");
			json_key(&j, "leader");
			json_leader(&j, next.leader);
			json_key(&j, "previous_leader");
			json_leader(&j, p->st.ps.leader);
			json_key(&j, "leader_epoch");
			json_u64(&j, next.leader_epoch);
			if (res != KREP_PREF_ELECTED) {
				json_key(&j, "reason");
				json_str(&j, why);
			}
			json_obj_end(&j);
			fputc('\n', out);
		}
		if (res == KREP_PREF_ELECTED) {
			p->st.ps = next;
			part_changed(c, p);
			c->n->elections[KREP_CTL_ELECT_PREFERRED]++;
		}
	}
	krep_view_propagate(c);
	if (!out)
		return;
	if (!matched && topic)
		fprintf(out, "error UNKNOWN_TOPIC_OR_PARTITION: unknown topic or partition\n");
	else if (c->dirty)
		fprintf(out, "error KAFKA_STORAGE_ERROR: cannot write the state file: nothing was sent\n");
	else
		fprintf(out, "%s\n", failed ? "fail" : "ok");
}

/* ---- status -------------------------------------------------------------- */

void krep_view_status(struct ctl *c, FILE *out)
{
	const struct krep_pstate *ps;
	struct json j;
	size_t i;

	for (i = 0; i < c->np; i++) {
		ps = &c->parts[i].st.ps;
		json_init(&j, out);
		json_obj_begin(&j);
		json_key(&j, "topic");
		json_str(&j, c->parts[i].st.topic);
		json_key(&j, "partition");
		json_u64(&j, c->parts[i].st.partition);
		json_key(&j, "leader");
		json_leader(&j, ps->leader);
		json_key(&j, "leader_epoch");
		json_u64(&j, ps->leader_epoch);
		json_key(&j, "partition_epoch");
		json_u64(&j, ps->partition_epoch);
		json_key(&j, "replicas");
		json_ids(&j, &ps->ar);
		json_key(&j, "isr");
		json_ids(&j, &ps->isr);
		/* the topic's min_insync_replicas, as elections use it */
		json_key(&j, "min_isr");
		json_u64(&j, tconf(c, c->parts[i].st.topic)->min_isr);
		json_key(&j, "elr");
		json_ids(&j, &ps->elr);
		json_key(&j, "offline");
		json_bool(&j, ps->leader == KREP_NO_LEADER);
		json_obj_end(&j);
		fputc('\n', out);
	}
}
