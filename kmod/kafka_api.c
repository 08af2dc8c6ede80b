// SPDX-License-Identifier: GPL-2.0
/*
 * krep: the Kafka requests a broker answers, by API key and version:
 *
 *   ApiVersions   0-3   (3 is flexible; a newer version is answered in
 *                        version 0 with UNSUPPORTED_VERSION, as Kafka does)
 *   Metadata      0-8   brokers (this one and the peers that told their
 *                        advertised address in HELLO), topics, partitions
 *   Produce       3-8   one RecordBatch v2 per partition, acks 0, 1, all
 *   Fetch         4-11  full fetches (no sessions), records by page
 *   ListOffsets   1-5   earliest, latest (HW, or LSO read_committed), time
 *   OffsetForLeaderEpoch 0-3  the end offset of a leader epoch (KIP-101,
 *                        KIP-320: clients check their position after a
 *                        leader change)
 *   InitProducerId 0-1   a producer id for an idempotent producer (no
 *                        transactional id: transactions are krepctl's)
 *   FindCoordinator 0-2  COORDINATOR_NOT_AVAILABLE: krep has no group or
 *                        transaction coordinator, and a client that needs
 *                        one is told so (retriable, as Kafka while its
 *                        coordinator loads) instead of losing its
 *                        connection to an unknown API key
 *
 * Each request is parsed whole with one bounded cursor (kproto.c) before
 * anything is done; a request that does not parse exactly, an unknown
 * API key or an unsupported version closes the connection. Errors of a
 * partition are Kafka's codes in the response, as the netlink path gives
 * them (partition.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/random.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/krep.h>

#include "krep.h"
#include "broker.h"
#include "kafka.h"
#include "net.h"
#include "param.h"
#include "partition.h"
#include "topic.h"
#include "topic_meta.h"
#include "trace.h"

#define KAFKA_MAX_PARTS		KREP_KAFKA_MAX_PARTS
#define KAFKA_FETCH_BUDGET	BIT(20)	/* record bytes in one response */
#define KAFKA_NO_AUTH_OPS	(-2147483647 - 1)	/* INT32_MIN */
#define KAFKA_FETCH_SESSION_ID_NOT_FOUND	70
#define KAFKA_COORDINATOR_NOT_AVAILABLE		15

static const struct {
	s16 key, min, max;
} kafka_apis[] = {
	{ KREP_KAPI_PRODUCE, 3, 8 },
	{ KREP_KAPI_FETCH, 4, 11 },
	{ KREP_KAPI_LIST_OFFSETS, 1, 5 },
	{ KREP_KAPI_METADATA, 0, 8 },
	{ KREP_KAPI_API_VERSIONS, 0, 3 },
	{ KREP_KAPI_INIT_PRODUCER_ID, 0, 1 },
	{ KREP_KAPI_OFFSET_FOR_LEADER_EPOCH, 0, 3 },
	{ KREP_KAPI_FIND_COORDINATOR, 0, 2 },
};

/* one request being answered */
struct kreq {
	struct krep_conn *c;
	struct krep_net *kn;
	s16 key, ver;
	s32 corr;
	struct krep_kr r;
	const struct krep_kreq *in;	/* as read (kafka_rx.c) */
	u32 nrec;			/* of in->recs, parsed so far */
};

/* a topic name from a request, checked and NUL-terminated */
struct kname {
	char s[KREP_TOPIC_NAME_MAX + 1];
	bool valid;
};

static void read_name(struct krep_kr *r, struct kname *n)
{
	const char *why;
	u16 len;
	const char *s = krep_kr_string(r, &len);

	n->valid = false;
	n->s[0] = '\0';
	if (!s)
		return;
	if (len > KREP_TOPIC_NAME_MAX)
		return;
	memcpy(n->s, s, len);
	n->s[len] = '\0';
	n->valid = !krep_topic_name_check(n->s, len, &why);
}

static void put_name(struct krep_kw *w, const struct kname *n)
{
	krep_kw_string(w, n->s, strlen(n->s));
}

/* the partition @n names, with a reference on its topic, or the error */
static struct krep_partition *lookup(struct krep_net *kn,
				     const struct kname *n, s32 index,
				     struct krep_topic **tp, s16 *kerr,
				     const char **why)
{
	struct krep_status st = {};
	struct krep_partition *p;

	*tp = NULL;
	if (!n->valid) {
		*kerr = KREP_KERR_INVALID_TOPIC_EXCEPTION;
		*why = "invalid topic name";
		return NULL;
	}
	*tp = krep_topic_get(kn, n->s);
	if (!*tp || index < 0) {
		*kerr = KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION;
		*why = "unknown topic or partition";
		return NULL;
	}
	p = krep_topic_partition(*tp, index, &st);
	if (IS_ERR(p)) {
		*kerr = st.kerr;
		*why = st.why;
		return NULL;
	}
	return p;
}

/*
 * Room for element @n of the array *@arr of @size-byte elements, which
 * holds 16, then 32, 64, ... of them: allocated or doubled when @n
 * reaches its size. Return: 0 or -ENOMEM.
 */
static int parts_room(void **arr, u32 n, size_t size)
{
	u32 cap = n < 16 ? 16 : n * 2;
	void *p;

	if (*arr && (n < 16 || (n & (n - 1))))
		return 0;
	p = krep_kvcalloc_brief(cap, size);
	if (!p)
		return -ENOMEM;
	if (*arr)
		memcpy(p, *arr, n * size);
	kvfree(*arr);
	*arr = p;
	return 0;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Does a request name one partition twice? (Kafka's clients never do;
 * a request that does could multiply the broker's work and waits.)
 */
static int partitions_unique(struct krep_partition **ps, unsigned int n)
{
	unsigned int i;

	sort(ps, n, sizeof(*ps), cmp_ptr, NULL);
	for (i = 1; i < n; i++) {
		if (ps[i] == ps[i - 1])
			return -EPROTO;
	}
	return 0;
}

/* --- ApiVersions --- */

static int api_versions(struct kreq *q, const char **why)
{
	bool supported = q->ver <= 3;
	struct krep_kresp rs;
	unsigned int i;
	u16 len;

	if (supported && q->ver >= 3) {
		krep_kr_string(&q->r, &len);	/* client software name */
		krep_kr_string(&q->r, &len);	/* and version */
		krep_kr_tags(&q->r);
	}
	if (supported && !krep_kr_done(&q->r)) {
		*why = "malformed ApiVersions request";
		return -EPROTO;
	}
	/* the response header is version 0 even for a flexible body */
	krep_kresp_begin(&rs, q->corr, false, supported && q->ver >= 3);
	krep_kw_i16(&rs.w, supported ? 0 : KREP_KERR_UNSUPPORTED_VERSION);
	krep_kw_array(&rs.w, ARRAY_SIZE(kafka_apis));
	for (i = 0; i < ARRAY_SIZE(kafka_apis); i++) {
		krep_kw_i16(&rs.w, kafka_apis[i].key);
		krep_kw_i16(&rs.w, kafka_apis[i].min);
		krep_kw_i16(&rs.w, kafka_apis[i].max);
		krep_kw_tags(&rs.w);
	}
	if (supported && q->ver >= 1)
		krep_kw_i32(&rs.w, 0);		/* throttle time */
	krep_kw_tags(&rs.w);
	return krep_kresp_send(q->c, &rs);
}

/* --- Metadata --- */

/* HOST:PORT or [V6]:PORT, checked when it was configured or received */
static void put_broker(struct krep_kw *w, s16 ver, u32 id, const char *adv)
{
	const char *colon = strrchr(adv, ':');
	const char *host = adv;
	unsigned int port = 0;
	size_t hlen;

	if (!colon)
		colon = adv + strlen(adv);
	else if (kstrtouint(colon + 1, 10, &port))
		port = 0;
	hlen = colon - adv;
	if (hlen >= 2 && adv[0] == '[') {
		host++;
		hlen -= 2;
	}
	krep_kw_i32(w, id);
	krep_kw_string(w, host, hlen);
	krep_kw_i32(w, port);
	if (ver >= 1)
		krep_kw_nullstring(w);		/* rack */
}

static void put_ids(struct krep_kw *w, const u32 *ids, unsigned int n)
{
	unsigned int i;

	krep_kw_array(w, n);
	for (i = 0; i < n; i++)
		krep_kw_i32(w, ids[i]);
}

/*
 * A partition this broker does not host: its assignment from the topic's
 * creation, and the leader, epoch and ISR the controller last sent here
 * (topic_meta.c). Without a controller (a topic not created leaderless,
 * on a broker never claimed) the preferred replica leads at epoch 0, as
 * on its replicas; the ISR is then given as the assignment, which this
 * broker cannot check. A controller's partition it has not heard of yet:
 * LEADER_NOT_AVAILABLE, so that the client asks again.
 */
static void guess_partition(struct krep_topic *t, u32 index, u32 *replicas,
			    unsigned int *nr, u32 *isr, unsigned int *nisr,
			    s64 *leader, u32 *epoch)
{
	unsigned int i;

	*nr = t->replication_factor;
	for (i = 0; i < *nr; i++)
		replicas[i] = t->replicas[index * *nr + i];
	if (krep_topic_meta_get(t, index, leader, epoch, isr, nisr))
		return;
	if (t->leaderless || READ_ONCE(t->kn->ctrl.epoch))
		return;
	*leader = replicas[0];
	memcpy(isr, replicas, *nr * sizeof(*isr));
	*nisr = *nr;
}

static void put_partition(struct krep_kw *w, s16 ver, struct krep_topic *t,
			  u32 index)
{
	u32 isr[KREP_RF_MAX], replicas[KREP_RF_MAX];
	struct krep_partition *p = t->parts[index];
	unsigned int i, nr = 0, nisr = 0;
	s64 leader = -1;
	u32 epoch = 0;

	if (!p)
		guess_partition(t, index, replicas, &nr, isr, &nisr, &leader,
				&epoch);
	if (p) {
		mutex_lock(&p->lock);
		leader = p->dead ? -1 : p->leader;
		epoch = p->leader_epoch;
		nr = p->nreplicas;
		for (i = 0; i < nr; i++) {
			replicas[i] = p->replicas[i];
			if (test_bit(i, p->isr))
				isr[nisr++] = p->replicas[i];
		}
		mutex_unlock(&p->lock);
	}
	krep_kw_i16(w, leader < 0 ? KREP_KERR_LEADER_NOT_AVAILABLE : 0);
	krep_kw_i32(w, index);
	krep_kw_i32(w, leader);
	if (ver >= 7)
		krep_kw_i32(w, leader < 0 ? -1 : epoch);
	put_ids(w, replicas, nr);
	put_ids(w, isr, nisr);
	if (ver >= 5)
		krep_kw_array(w, 0);		/* offline replicas */
}

static void put_topic(struct krep_kw *w, s16 ver, struct krep_topic *t)
{
	u32 i;

	krep_kw_i16(w, 0);
	krep_kw_string(w, t->name, strlen(t->name));
	if (ver >= 1)
		krep_kw_i8(w, 0);		/* is internal */
	krep_kw_array(w, t->npartitions);
	for (i = 0; i < t->npartitions; i++)
		put_partition(w, ver, t, i);
	if (ver >= 8)
		krep_kw_i32(w, KAFKA_NO_AUTH_OPS);
}

static void put_missing_topic(struct krep_kw *w, s16 ver,
			      const struct kname *n)
{
	krep_kw_i16(w, n->valid ? KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION :
			KREP_KERR_INVALID_TOPIC_EXCEPTION);
	put_name(w, n);
	if (ver >= 1)
		krep_kw_i8(w, 0);
	krep_kw_array(w, 0);
	if (ver >= 8)
		krep_kw_i32(w, KAFKA_NO_AUTH_OPS);
}

static void put_all_topics(struct krep_kw *w, s16 ver, struct krep_net *kn)
{
	struct krep_topic *t;
	u32 at, n = 0;

	at = krep_kw_reserve32(w);
	mutex_lock(&kn->topics_lock);
	list_for_each_entry(t, &kn->topics, node) {
		put_topic(w, ver, t);
		n++;
	}
	mutex_unlock(&kn->topics_lock);
	krep_kw_patch32(w, at, n);
}

static int metadata(struct kreq *q, const char **why)
{
	struct krep_broker_ep *eps;
	struct krep_broker_cfg *cfg;
	char self_adv[KREP_WIRE_ADVERTISED_LEN];
	char cluster[KREP_CLUSTER_ID_MAX + 1];
	struct kname *names = NULL;
	struct krep_kresp rs;
	unsigned int neps, i;
	s64 self_id;
	s32 n;
	int err;

	n = krep_kr_array(&q->r, KAFKA_MAX_PARTS);
	if (n > 0) {
		names = krep_kvcalloc_brief(n, sizeof(*names));
		if (!names)
			return -ENOMEM;
	}
	for (i = 0; n > 0 && i < n; i++)
		read_name(&q->r, &names[i]);
	if (q->ver >= 4)
		krep_kr_i8(&q->r);		/* allow auto topic creation */
	if (q->ver >= 8) {
		krep_kr_i8(&q->r);		/* include cluster ops */
		krep_kr_i8(&q->r);		/* include topic ops */
	}
	if (!krep_kr_done(&q->r)) {
		kvfree(names);
		*why = "malformed Metadata request";
		return -EPROTO;
	}
	eps = kcalloc(KREP_PEERS_MAX, sizeof(*eps), GFP_KERNEL);
	if (!eps) {
		kvfree(names);
		return -ENOMEM;
	}
	neps = krep_net_peer_eps(q->kn, eps, KREP_PEERS_MAX);
	rcu_read_lock();
	cfg = rcu_dereference(q->kn->cfg);
	self_id = cfg->broker_id;
	strscpy(cluster, cfg->cluster_id, sizeof(cluster));
	krep_broker_advertised(cfg, self_adv, sizeof(self_adv));
	rcu_read_unlock();

	krep_kresp_begin(&rs, q->corr, false, false);
	if (q->ver >= 3)
		krep_kw_i32(&rs.w, 0);		/* throttle time */
	krep_kw_array(&rs.w, neps + (self_id >= 0));
	if (self_id >= 0)
		put_broker(&rs.w, q->ver, self_id, self_adv);
	for (i = 0; i < neps; i++)
		put_broker(&rs.w, q->ver, eps[i].id, eps[i].advertised);
	if (q->ver >= 2) {
		if (cluster[0])
			krep_kw_string(&rs.w, cluster, strlen(cluster));
		else
			krep_kw_nullstring(&rs.w);
	}
	if (q->ver >= 1)
		krep_kw_i32(&rs.w, -1);		/* controller: krepd, no broker */
	if (n < 0 || (q->ver == 0 && n == 0)) {
		put_all_topics(&rs.w, q->ver, q->kn);
	} else {
		krep_kw_array(&rs.w, n);
		for (i = 0; i < n; i++) {
			struct krep_topic *t = names[i].valid ?
				krep_topic_get(q->kn, names[i].s) : NULL;

			if (t)
				put_topic(&rs.w, q->ver, t);
			else
				put_missing_topic(&rs.w, q->ver, &names[i]);
			krep_topic_put(t);
		}
	}
	if (q->ver >= 8)
		krep_kw_i32(&rs.w, KAFKA_NO_AUTH_OPS);
	kfree(eps);
	kvfree(names);
	err = krep_kresp_send(q->c, &rs);
	return err;
}

/* --- Produce --- */

struct kprod_part {
	u32 topic;			/* index into kprod.names */
	s32 index;
	const u8 *rec;			/* in the request; NULL once appended */
	const struct krep_krec *src;	/* or still in the socket's buffers */
	const struct krep_kreq *in;	/* that hold @src */
	struct krep_topic *t;
	struct krep_partition *p;
	u32 len;
	s16 kerr;
	const char *why;
	bool pending;			/* acks=all: not yet committed */
	struct krep_append_result res;
};

struct kprod {
	struct krep_kpark kp;
	s32 corr;
	s16 ver, acks;
	u32 timeout_ms;
	u32 ntopics, nparts;
	struct kname *names;
	u32 *topic_parts;		/* partitions per topic */
	struct kprod_part *parts;
};

static void kprod_free(struct kprod *pr)
{
	u32 i;

	for (i = 0; pr->parts && i < pr->nparts; i++)
		krep_topic_put(pr->parts[i].t);
	kvfree(pr->parts);
	kvfree(pr->names);
	kvfree(pr->topic_parts);
	kfree(pr);
}

static void kprod_release(struct krep_kpark *kp)
{
	kprod_free(container_of(kp, struct kprod, kp));
}

static int kprod_respond(struct kprod *pr, struct krep_conn *c)
{
	struct krep_kresp rs;
	u32 i, j, k = 0;

	krep_kresp_begin(&rs, pr->corr, false, false);
	krep_kw_array(&rs.w, pr->ntopics);
	for (i = 0; i < pr->ntopics; i++) {
		put_name(&rs.w, &pr->names[i]);
		krep_kw_array(&rs.w, pr->topic_parts[i]);
		for (j = 0; j < pr->topic_parts[i]; j++, k++) {
			struct kprod_part *pp = &pr->parts[k];

			krep_kw_i32(&rs.w, pp->index);
			/* INVALID_RECORD exists from version 8 on */
			krep_kw_i16(&rs.w, pp->kerr == KREP_KERR_INVALID_RECORD &&
				    pr->ver < 8 ? KREP_KERR_CORRUPT_MESSAGE :
				    pp->kerr);
			krep_kw_i64(&rs.w, pp->kerr ? -1 : pp->res.base);
			krep_kw_i64(&rs.w, -1);		/* log append time */
			if (pr->ver >= 5)
				krep_kw_i64(&rs.w, pp->p && !pp->kerr ?
					    READ_ONCE(pp->p->log.start_offset) :
					    -1);
			if (pr->ver >= 8) {
				krep_kw_array(&rs.w, 0);	/* record errors */
				if (pp->kerr && pp->why)
					krep_kw_string(&rs.w, pp->why,
						       strlen(pp->why));
				else
					krep_kw_nullstring(&rs.w);
			}
		}
	}
	krep_kw_i32(&rs.w, 0);			/* throttle time */
	return krep_kresp_send(c, &rs);
}

/* acks=all: answer once every append committed, failed or timed out */
static int kprod_resume(struct krep_kpark *kp, bool final)
{
	struct kprod *pr = container_of(kp, struct kprod, kp);
	struct krep_status st = {};
	bool waiting = false;
	u32 i;
	int err;

	for (i = 0; i < pr->nparts; i++) {
		struct kprod_part *pp = &pr->parts[i];

		if (!pp->pending)
			continue;
		err = pr->acks == -1 ?
		      krep_partition_commit_check(pp->p, pp->res.last, &st) : 0;
		if (!err && pp->res.flush)
			err = krep_partition_flush_check(pp->p, pp->res.last,
							 &st);
		if (err == -EINPROGRESS && !final) {
			waiting = true;
			continue;
		}
		if (err == -EINPROGRESS) {
			pp->kerr = KREP_KERR_REQUEST_TIMED_OUT;
			pp->why = pp->res.flush && pr->acks != -1 ?
				  "timed out waiting for the log to be flushed" :
				  "timed out waiting for the ISR to replicate";
		} else if (err) {
			pp->kerr = st.kerr;
			pp->why = st.why;
		}
		pp->pending = false;
		if (pr->acks == -1)
			krep_partition_trace_produce(pp->p, &pp->res, pp->len,
						     pp->kerr);
	}
	if (waiting)
		return 0;
	return kprod_respond(pr, kp->c) ? -EIO : 1;
}

/*
 * A partition's records: the next of those kafka_rx.c left in the socket's
 * buffers (in the order they come), else bytes of the request
 */
static void take_records(struct kreq *q, struct kprod_part *pp)
{
	const struct krep_krec *rec;
	struct krep_kr *r = &q->r;
	const u8 *at = r->p;
	s32 n = krep_kr_i32(r);

	if (r->bad || n < 0 || q->nrec == q->in->nrecs) {
		r->p = at;
		pp->rec = krep_kr_records(r, &pp->len);
		return;
	}
	rec = &q->in->recs[q->nrec++];
	if (rec->len != n) {
		r->bad = true;
		return;
	}
	pp->len = n;
	if (rec->flat) {		/* its bytes follow, in the request */
		pp->rec = krep_kr_bytes(r, n);
		return;
	}
	pp->in = q->in;
	pp->src = rec;
}

static int produce_parse(struct kreq *q, struct kprod *pr, const char **why)
{
	struct krep_kr *r = &q->r;
	u32 i, j;
	u16 len;
	s32 n, m;

	krep_kr_string(r, &len);		/* transactional id */
	pr->acks = krep_kr_i16(r);
	n = krep_kr_i32(r);
	pr->timeout_ms = n < 0 ? 0 :
		min_t(u32, n, krep_param_kafka_wait_max_ms());
	n = krep_kr_array(r, KAFKA_MAX_PARTS);
	if (n < 0)
		r->bad = true;
	if (r->bad)
		goto bad;
	pr->ntopics = n;
	pr->names = krep_kvcalloc_brief(max(n, 1), sizeof(*pr->names));
	pr->topic_parts = krep_kvcalloc_brief(max(n, 1), sizeof(u32));
	if (!pr->names || !pr->topic_parts ||
	    parts_room((void **)&pr->parts, 0, sizeof(*pr->parts)))
		return -ENOMEM;
	for (i = 0; i < n && !r->bad; i++) {
		read_name(r, &pr->names[i]);
		m = krep_kr_array(r, KAFKA_MAX_PARTS);
		if (m < 0 || pr->nparts + m > KAFKA_MAX_PARTS)
			r->bad = true;
		for (j = 0; j < m && !r->bad; j++) {
			struct kprod_part *pp;

			if (parts_room((void **)&pr->parts, pr->nparts,
				       sizeof(*pr->parts)))
				return -ENOMEM;
			pp = &pr->parts[pr->nparts];
			pp->topic = i;
			pp->index = krep_kr_i32(r);
			take_records(q, pp);
			pr->nparts++;
			pr->topic_parts[i]++;
		}
	}
	/* every records field kafka_rx.c found, the parse found too */
	if (krep_kr_done(r) && q->nrec == q->in->nrecs)
		return 0;
bad:
	*why = "malformed Produce request";
	return -EPROTO;
}

/* resolve every partition, then refuse a request naming one twice */
static int produce_lookup(struct kreq *q, struct kprod *pr, const char **why)
{
	struct krep_partition **ps;
	unsigned int i, n = 0;
	int err;

	ps = krep_kvcalloc_brief(max(pr->nparts, 1U), sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	for (i = 0; i < pr->nparts; i++) {
		struct kprod_part *pp = &pr->parts[i];

		if (pr->acks != 0 && pr->acks != 1 && pr->acks != -1) {
			pp->kerr = KREP_KERR_INVALID_REQUIRED_ACKS;
			pp->why = "acks must be 0, 1 or -1";
			continue;
		}
		pp->p = lookup(q->kn, &pr->names[pp->topic], pp->index, &pp->t,
			       &pp->kerr, &pp->why);
		if (pp->p)
			ps[n++] = pp->p;
	}
	err = partitions_unique(ps, n);
	kvfree(ps);
	if (err)
		*why = "a Produce request names a partition twice";
	return err;
}

/* a krep_copy_t: a partition's records, socket buffers to log */
static int copy_records(void *dst, u32 len, void *arg)
{
	struct kprod_part *pp = arg;

	return krep_krec_copy(pp->in, pp->src, dst, len);
}

static int produce(struct kreq *q, const char **why)
{
	struct kprod *pr = krep_kzalloc_brief(sizeof(*pr));
	struct krep_status st;
	bool pending = false;
	u32 i;
	int err;

	if (!pr)
		return -ENOMEM;
	pr->corr = q->corr;
	pr->ver = q->ver;
	err = produce_parse(q, pr, why);
	if (err)
		goto out;
	err = produce_lookup(q, pr, why);
	if (err)
		goto out;
	for (i = 0; i < pr->nparts; i++) {
		struct kprod_part *pp = &pr->parts[i];

		if (!pp->p) {
			pp->rec = NULL;
			pp->src = NULL;
			continue;
		}
		if (!pp->rec && !pp->src) {
			pp->kerr = KREP_KERR_INVALID_RECORD;
			pp->why = "no records";
			continue;
		}
		st = (struct krep_status){};
		if (pp->src)
			err = krep_partition_append_copy(pp->p, pp->len,
							 copy_records, pp,
							 pr->acks, -1,
							 &pp->res, &st);
		else
			err = krep_partition_append(pp->p, pp->rec, pp->len,
						    pr->acks, -1, &pp->res,
						    &st);
		/* the request goes once answered */
		pp->rec = NULL;
		pp->src = NULL;
		if (err) {
			pp->kerr = st.kerr;
			pp->why = st.why;
		} else if (pr->acks == -1 || pp->res.flush) {
			pp->pending = true;	/* committed, or synced */
			pending = true;
		}
	}
	err = 0;
	if (pr->acks == 0) {
		/* no response; a failure closes the connection (as Kafka) */
		for (i = 0; i < pr->nparts; i++) {
			if (pr->parts[i].kerr) {
				*why = "a partition refused an acks=0 Produce";
				err = -EPROTO;
			}
		}
		goto out;
	}
	if (!pending) {
		err = kprod_respond(pr, q->c);
		goto out;
	}
	err = krep_kpark_init(&pr->kp, q->c, pr->nparts, pr->timeout_ms);
	if (err)
		goto out;
	pr->kp.resume = kprod_resume;
	pr->kp.release = kprod_release;
	for (i = 0; i < pr->nparts; i++) {
		if (pr->parts[i].pending)
			krep_kpark_wait_on(&pr->kp, &pr->parts[i].p->commit_wq);
	}
	return krep_kafka_park(&pr->kp);
out:
	kprod_free(pr);
	return err;
}

/* --- Fetch --- */

struct kfetch_part {
	u32 topic;
	s32 index;
	s32 leader_epoch;
	s64 offset;
	s32 max_bytes;
	struct krep_topic *t;
	struct krep_partition *p;
	s16 kerr;			/* of the lookup */
};

struct kfetch {
	struct krep_kpark kp;
	s32 corr;
	s16 ver;
	u8 isolation;
	s32 min_bytes;
	u32 max_bytes;
	s16 error;			/* top level (sessions) */
	u32 ntopics, nparts;
	struct kname *names;
	u32 *topic_parts;
	struct kfetch_part *parts;
};

static void kfetch_free(struct kfetch *f)
{
	u32 i;

	for (i = 0; f->parts && i < f->nparts; i++)
		krep_topic_put(f->parts[i].t);
	kvfree(f->parts);
	kvfree(f->names);
	kvfree(f->topic_parts);
	kfree(f);
}

static void kfetch_release(struct krep_kpark *kp)
{
	kfetch_free(container_of(kp, struct kfetch, kp));
}

/*
 * Build the response; send it when it has records or an error, or when
 * @final. Return: 1 sent, 0 nothing to send yet, < 0 error.
 */
static int kfetch_resume(struct krep_kpark *kp, bool final)
{
	struct kfetch *f = container_of(kp, struct kfetch, kp);
	u32 budget = min_t(u32, f->max_bytes, KAFKA_FETCH_BUDGET);
	bool anything = final || f->error || f->min_bytes <= 0;
	struct krep_kresp rs;
	u32 i, j, k = 0, total = 0;

	krep_kresp_begin(&rs, f->corr, false, false);
	krep_kw_i32(&rs.w, 0);			/* throttle time */
	if (f->ver >= 7) {
		krep_kw_i16(&rs.w, f->error);
		krep_kw_i32(&rs.w, 0);		/* no session */
	}
	krep_kw_array(&rs.w, f->error ? 0 : f->ntopics);
	for (i = 0; !f->error && i < f->ntopics; i++) {
		put_name(&rs.w, &f->names[i]);
		krep_kw_array(&rs.w, f->topic_parts[i]);
		for (j = 0; j < f->topic_parts[i]; j++, k++) {
			struct kfetch_part *fp = &f->parts[k];
			struct krep_read_result res = {};
			struct krep_status st = {};
			u32 at_err, at_wm, at_len;
			long n = 0;
			s16 kerr = fp->kerr;

			krep_kw_i32(&rs.w, fp->index);
			at_err = rs.w.len;
			krep_kw_i16(&rs.w, 0);
			at_wm = rs.w.len;
			krep_kw_i64(&rs.w, -1);		/* high watermark */
			krep_kw_i64(&rs.w, -1);		/* last stable offset */
			if (f->ver >= 5)
				krep_kw_i64(&rs.w, -1);	/* log start */
			/* aborted transactions: read_committed skips them */
			krep_kw_array(&rs.w, f->isolation ? 0 : -1);
			if (f->ver >= 11)
				krep_kw_i32(&rs.w, -1);	/* preferred replica */
			at_len = krep_kw_reserve32(&rs.w);
			if (fp->p && fp->offset < 0) {
				kerr = KREP_KERR_OFFSET_OUT_OF_RANGE;
			} else if (fp->p) {
				unsigned int pieces = rs.tx.n;
				struct krep_fetch_req req = {
					.offset = fp->offset,
					/* a first batch may pass the budget */
					.max_bytes = min_t(u32, total >= budget ?
							   0 : budget - total,
							   max(fp->max_bytes, 0)),
					.isolation = f->isolation,
					.leader_epoch = fp->leader_epoch,
				};

				n = krep_partition_consumer_read(fp->p, &req,
								 !total,
								 krep_kresp_emit,
								 &rs, &res, &st);
				/* records already in: the response is broken */
				if (n < 0 && rs.tx.n != pieces) {
					krep_kresp_free(&rs);
					return -EIO;
				}
				if (n < 0) {
					kerr = st.kerr;
					n = 0;
				}
			}
			if (rs.w.err) {
				krep_kresp_free(&rs);
				return -ENOMEM;
			}
			total += n;
			anything |= n || kerr;
			krep_kw_patch16(&rs.w, at_err, kerr);
			if (fp->p && !kerr) {
				krep_kw_patch64(&rs.w, at_wm, res.hw);
				krep_kw_patch64(&rs.w, at_wm + 8, res.lso);
				if (f->ver >= 5)
					krep_kw_patch64(&rs.w, at_wm + 16,
							res.log_start);
			}
			krep_kw_patch32(&rs.w, at_len, n);
		}
	}
	if (!anything) {
		krep_kresp_free(&rs);
		return 0;
	}
	return krep_kresp_send(kp->c, &rs) ? -EIO : 1;
}

static int fetch_parse(struct kreq *q, struct kfetch *f, s32 *max_wait,
		       const char **why)
{
	struct krep_kr *r = &q->r;
	s32 n, m, session;
	u32 i, j;
	u16 len;

	krep_kr_i32(r);				/* replica id */
	*max_wait = krep_kr_i32(r);
	f->min_bytes = krep_kr_i32(r);
	n = krep_kr_i32(r);
	f->max_bytes = n <= 0 ? 0 : n;
	f->isolation = krep_kr_i8(r) == 1;
	session = 0;
	if (q->ver >= 7) {
		session = krep_kr_i32(r);
		krep_kr_i32(r);			/* session epoch */
	}
	/* full fetches only: a session id we never gave is unknown */
	if (session)
		f->error = KAFKA_FETCH_SESSION_ID_NOT_FOUND;
	n = krep_kr_array(r, KAFKA_MAX_PARTS);
	if (n < 0)
		r->bad = true;
	if (r->bad)
		goto bad;
	f->ntopics = n;
	f->names = krep_kvcalloc_brief(max(n, 1), sizeof(*f->names));
	f->topic_parts = krep_kvcalloc_brief(max(n, 1), sizeof(u32));
	if (!f->names || !f->topic_parts ||
	    parts_room((void **)&f->parts, 0, sizeof(*f->parts)))
		return -ENOMEM;
	for (i = 0; i < n && !r->bad; i++) {
		read_name(r, &f->names[i]);
		m = krep_kr_array(r, KAFKA_MAX_PARTS);
		if (m < 0 || f->nparts + m > KAFKA_MAX_PARTS)
			r->bad = true;
		for (j = 0; j < m && !r->bad; j++) {
			struct kfetch_part *fp;

			if (parts_room((void **)&f->parts, f->nparts,
				       sizeof(*f->parts)))
				return -ENOMEM;
			fp = &f->parts[f->nparts++];
			fp->topic = i;
			fp->index = krep_kr_i32(r);
			fp->leader_epoch = q->ver >= 9 ? krep_kr_i32(r) : -1;
			fp->offset = krep_kr_i64(r);
			if (q->ver >= 5)
				krep_kr_i64(r);		/* log start */
			fp->max_bytes = krep_kr_i32(r);
			f->topic_parts[i]++;
		}
	}
	if (q->ver >= 7) {			/* forgotten topics */
		m = krep_kr_array(r, KAFKA_MAX_PARTS);
		for (i = 0; m > 0 && i < m && !r->bad; i++) {
			krep_kr_string(r, &len);
			n = krep_kr_array(r, KAFKA_MAX_PARTS);
			for (j = 0; n > 0 && j < n; j++)
				krep_kr_i32(r);
		}
	}
	if (q->ver >= 11)
		krep_kr_string(r, &len);	/* rack id */
	if (krep_kr_done(r))
		return 0;
bad:
	*why = "malformed Fetch request";
	return -EPROTO;
}

static int fetch(struct kreq *q, const char **why)
{
	struct kfetch *f = krep_kzalloc_brief(sizeof(*f));
	struct krep_partition **ps;
	s32 max_wait = 0;
	u32 i, n = 0;
	int err;

	if (!f)
		return -ENOMEM;
	f->corr = q->corr;
	f->ver = q->ver;
	err = fetch_parse(q, f, &max_wait, why);
	if (err)
		goto fail;
	ps = krep_kvcalloc_brief(max(f->nparts, 1U), sizeof(*ps));
	err = -ENOMEM;
	if (!ps)
		goto fail;
	for (i = 0; i < f->nparts; i++) {
		struct kfetch_part *fp = &f->parts[i];
		const char *lwhy;

		fp->p = lookup(q->kn, &f->names[fp->topic], fp->index, &fp->t,
			       &fp->kerr, &lwhy);
		if (fp->p)
			ps[n++] = fp->p;
	}
	err = partitions_unique(ps, n);
	kvfree(ps);
	if (err) {
		*why = "a Fetch request names a partition twice";
		goto fail;
	}
	err = krep_kpark_init(&f->kp, q->c, f->nparts,
			      max_wait < 0 ? 0 :
			      min_t(u32, max_wait,
				    krep_param_kafka_wait_max_ms()));
	if (err)
		goto fail;
	f->kp.resume = kfetch_resume;
	f->kp.release = kfetch_release;
	for (i = 0; i < f->nparts; i++) {
		if (f->parts[i].p)
			krep_kpark_wait_on(&f->kp, &f->parts[i].p->waitq);
	}
	return krep_kafka_park(&f->kp);
fail:
	kvfree(f->kp.waits);
	kfetch_free(f);
	return err;
}

/* --- ListOffsets --- */

/*
 * A topic of a ListOffsets or OffsetForLeaderEpoch request: its name and
 * partition count read and echoed in the response; the count (or the
 * cursor goes bad past KAFKA_MAX_PARTS partitions in all, @total)
 */
static s32 echo_topic(struct krep_kr *r, struct krep_kw *w, struct kname *name,
		      s32 *total)
{
	s32 m;

	read_name(r, name);
	put_name(w, name);
	m = krep_kr_array(r, KAFKA_MAX_PARTS);
	*total += max(m, 0);
	if (m < 0 || *total > KAFKA_MAX_PARTS)
		r->bad = true;
	krep_kw_array(w, max(m, 0));
	return m;
}

static int list_offsets(struct kreq *q, const char **why)
{
	struct krep_kr *r = &q->r;
	struct krep_kresp rs;
	bool committed = false;
	s32 n, m, i, j, total = 0;

	krep_kr_i32(r);				/* replica id */
	if (q->ver >= 2)
		committed = krep_kr_i8(r) == 1;
	krep_kresp_begin(&rs, q->corr, false, false);
	if (q->ver >= 2)
		krep_kw_i32(&rs.w, 0);		/* throttle time */
	n = krep_kr_array(r, KAFKA_MAX_PARTS);
	if (n < 0)
		r->bad = true;
	krep_kw_array(&rs.w, max(n, 0));
	for (i = 0; i < n && !r->bad; i++) {
		struct kname name;

		m = echo_topic(r, &rs.w, &name, &total);
		for (j = 0; j < m && !r->bad; j++) {
			struct krep_status st = {};
			struct krep_partition *p;
			struct krep_topic *t;
			s64 ts, found_ts = -1;
			u64 offset = 0;
			const char *lwhy;
			s16 kerr = 0;
			s32 index;

			index = krep_kr_i32(r);
			if (q->ver >= 4)
				krep_kr_i32(r);		/* leader epoch */
			ts = krep_kr_i64(r);
			p = lookup(q->kn, &name, index, &t, &kerr, &lwhy);
			if (p && ts < KREP_TS_EARLIEST)
				kerr = KREP_KERR_INVALID_REQUEST;
			else if (p && krep_partition_list_offset(p, ts, committed,
								 &offset,
								 &found_ts,
								 &st))
				kerr = st.kerr;
			krep_topic_put(t);
			krep_kw_i32(&rs.w, index);
			krep_kw_i16(&rs.w, kerr);
			krep_kw_i64(&rs.w, kerr ? -1 : found_ts);
			krep_kw_i64(&rs.w, kerr ? -1 : (s64)offset);
			if (q->ver >= 4)
				krep_kw_i32(&rs.w, -1);	/* leader epoch */
		}
	}
	if (!krep_kr_done(r)) {
		krep_kresp_free(&rs);
		*why = "malformed ListOffsets request";
		return -EPROTO;
	}
	return krep_kresp_send(q->c, &rs);
}

/* --- OffsetForLeaderEpoch --- */

/* one partition: the end of @epoch, as Kafka's leader epoch cache says */
static void put_epoch_end(struct krep_kw *w, s16 ver, struct krep_net *kn,
			  const struct kname *name, s32 index, s32 cur_epoch,
			  s32 epoch)
{
	struct krep_status st = {};
	struct krep_partition *p;
	struct krep_topic *t;
	const char *why;
	s32 found = -1;
	s64 end = -1;
	s16 kerr = 0;

	p = lookup(kn, name, index, &t, &kerr, &why);
	if (p && krep_partition_kafka_epoch_end(p, cur_epoch, epoch, &found,
						&end, &st))
		kerr = st.kerr;
	krep_topic_put(t);
	krep_kw_i16(w, kerr);
	krep_kw_i32(w, index);
	if (ver >= 1)
		krep_kw_i32(w, kerr ? -1 : found);
	krep_kw_i64(w, kerr ? -1 : end);
}

static int offset_for_leader_epoch(struct kreq *q, const char **why)
{
	struct krep_kr *r = &q->r;
	struct krep_kresp rs;
	s32 n, m, i, j, total = 0;

	if (q->ver >= 3)
		krep_kr_i32(r);			/* replica id */
	krep_kresp_begin(&rs, q->corr, false, false);
	if (q->ver >= 2)
		krep_kw_i32(&rs.w, 0);		/* throttle time */
	n = krep_kr_array(r, KAFKA_MAX_PARTS);
	if (n < 0)
		r->bad = true;
	krep_kw_array(&rs.w, max(n, 0));
	for (i = 0; i < n && !r->bad; i++) {
		struct kname name;

		m = echo_topic(r, &rs.w, &name, &total);
		for (j = 0; j < m && !r->bad; j++) {
			s32 index = krep_kr_i32(r);
			s32 cur_epoch = q->ver >= 2 ? krep_kr_i32(r) : -1;
			s32 epoch = krep_kr_i32(r);

			if (!r->bad)
				put_epoch_end(&rs.w, q->ver, q->kn, &name, index,
					      cur_epoch, epoch);
		}
	}
	if (!krep_kr_done(r)) {
		krep_kresp_free(&rs);
		*why = "malformed OffsetForLeaderEpoch request";
		return -EPROTO;
	}
	return krep_kresp_send(q->c, &rs);
}

/* --- InitProducerId --- */

/*
 * An idempotent producer's id: 63 random bits, so that brokers need not
 * agree on a counter and a reloaded broker does not hand out an id that
 * other brokers still keep state for. Epoch 0; the producer's batches
 * then carry sequences, which every replica checks (producer.c).
 */
static int init_producer_id(struct kreq *q, const char **why)
{
	struct krep_kresp rs;
	const char *txn_id;
	s16 kerr = 0;
	u16 len;

	txn_id = krep_kr_string(&q->r, &len);
	krep_kr_i32(&q->r);			/* transaction timeout */
	if (!krep_kr_done(&q->r)) {
		*why = "malformed InitProducerId request";
		return -EPROTO;
	}
	if (txn_id) {
		kerr = KREP_KERR_INVALID_REQUEST;
		net_info_ratelimited("krep: InitProducerId with a transactional id: transactions are not served to Kafka clients\n");
	}
	krep_kresp_begin(&rs, q->corr, false, false);
	krep_kw_i32(&rs.w, 0);			/* throttle time */
	krep_kw_i16(&rs.w, kerr);
	krep_kw_i64(&rs.w, kerr ? -1 : (s64)(get_random_u64() & S64_MAX));
	krep_kw_i16(&rs.w, kerr ? -1 : 0);
	return krep_kresp_send(q->c, &rs);
}

/* no coordinator of either kind: the client is told, and asks again */
static int find_coordinator(struct kreq *q, const char **why)
{
	static const char msg[] = "krep has no group or transaction coordinator";
	struct krep_kresp rs;
	u16 len;

	krep_kr_string(&q->r, &len);		/* the group or transactional id */
	if (q->ver >= 1)
		krep_kr_i8(&q->r);		/* key type */
	if (!krep_kr_done(&q->r)) {
		*why = "malformed FindCoordinator request";
		return -EPROTO;
	}
	krep_kresp_begin(&rs, q->corr, false, false);
	if (q->ver >= 1)
		krep_kw_i32(&rs.w, 0);		/* throttle time */
	krep_kw_i16(&rs.w, KAFKA_COORDINATOR_NOT_AVAILABLE);
	if (q->ver >= 1)
		krep_kw_string(&rs.w, msg, sizeof(msg) - 1);
	krep_kw_i32(&rs.w, -1);			/* node id */
	krep_kw_string(&rs.w, "", 0);		/* host */
	krep_kw_i32(&rs.w, -1);			/* port */
	return krep_kresp_send(q->c, &rs);
}

/**
 * krep_kafka_handle - answer one whole request (or park it)
 * @c: the client connection
 * @in: the request after its size, as kafka_rx.c read it; freed here
 * @why: set to the reason when the connection must close
 *
 * Return: 0, or < 0 to close the connection.
 */
int krep_kafka_handle(struct krep_conn *c, struct krep_kreq *in,
		      const char **why)
{
	struct kreq q = { .c = c, .kn = c->kn, .in = in };
	unsigned int i;
	bool known = false;
	u16 cid_len;
	int err;

	krep_kr_init(&q.r, in->buf, in->len, false);
	q.key = krep_kr_i16(&q.r);
	q.ver = krep_kr_i16(&q.r);
	q.corr = krep_kr_i32(&q.r);
	krep_kr_string(&q.r, &cid_len);		/* client id, never compact */
	for (i = 0; i < ARRAY_SIZE(kafka_apis); i++) {
		if (kafka_apis[i].key != q.key)
			continue;
		known = true;
		if (q.ver < kafka_apis[i].min ||
		    (q.ver > kafka_apis[i].max &&
		     q.key != KREP_KAPI_API_VERSIONS)) {
			*why = "unsupported API version";
			err = -EPROTO;
			goto out;
		}
	}
	if (!known || q.r.bad) {
		*why = known ? "malformed request header" : "unknown API key";
		err = -EPROTO;
		goto out;
	}
	/* of ours, only ApiVersions 3 is flexible (request header v2) */
	if (q.key == KREP_KAPI_API_VERSIONS && q.ver == 3) {
		q.r.flex = true;
		krep_kr_tags(&q.r);
	}
	switch (q.key) {
	case KREP_KAPI_API_VERSIONS:
		err = api_versions(&q, why);
		break;
	case KREP_KAPI_METADATA:
		err = metadata(&q, why);
		break;
	case KREP_KAPI_PRODUCE:
		err = produce(&q, why);
		break;
	case KREP_KAPI_FETCH:
		err = fetch(&q, why);
		break;
	case KREP_KAPI_OFFSET_FOR_LEADER_EPOCH:
		err = offset_for_leader_epoch(&q, why);
		break;
	case KREP_KAPI_INIT_PRODUCER_ID:
		err = init_producer_id(&q, why);
		break;
	case KREP_KAPI_FIND_COORDINATOR:
		err = find_coordinator(&q, why);
		break;
	default:
		err = list_offsets(&q, why);
		break;
	}
	if (err && !*why)
		*why = err == -ENOMEM ? "out of memory for a request" :
					"cannot send a response";
out:
	trace_krep_kafka_request(c->kn, q.key, q.ver, q.corr, in->size, err);
	krep_kreq_free(in);
	return err;
}
