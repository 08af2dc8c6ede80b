// SPDX-License-Identifier: GPL-2.0
/*
 * The controller's state in etcd (etcd_store.h): the keys' JSON values,
 * reading them back with every field checked, and compare-and-set
 * transactions of what changed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ep.h"
#include "errf.h"
#include "etcd_store.h"

/* operations per transaction: etcd's --max-txn-ops is 128 by default */
#define TXN_OPS_MAX	64

struct centry {
	char *key;
	char *cmp;		/* the value without what changes alone */
	int64_t rev;		/* its mod_revision */
};

struct krep_estore {
	struct krep_etcd *e;
	char prefix[256];
	size_t n, cap;
	struct centry *c;
};

/* One key to write: its value, and what is compared with the cache. */
struct gen {
	char *key, *value, *cmp;
};

struct gens {
	size_t n, cap;
	struct gen *g;
	bool oom;
};


struct krep_estore *krep_estore_new(struct krep_etcd *e, const char *prefix)
{
	struct krep_estore *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->e = e;
	snprintf(s->prefix, sizeof(s->prefix), "%s", prefix);
	return s;
}

static void cache_clear(struct krep_estore *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		free(s->c[i].key);
		free(s->c[i].cmp);
	}
	s->n = 0;
}

void krep_estore_free(struct krep_estore *s)
{
	if (!s)
		return;
	cache_clear(s);
	free(s->c);
	free(s);
}

static struct centry *cache_find(struct krep_estore *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->c[i].key, key))
			return &s->c[i];
	return NULL;
}

/* Remember @key at @rev with @cmp (NULL: forget it). 0 or -ENOMEM. */
static int cache_set(struct krep_estore *s, const char *key, const char *cmp,
		     int64_t rev)
{
	struct centry *c = cache_find(s, key), *v;
	char *k, *m;

	if (!cmp) {
		if (c) {
			free(c->key);
			free(c->cmp);
			*c = s->c[--s->n];
		}
		return 0;
	}
	m = strdup(cmp);
	if (!m)
		return -ENOMEM;
	if (c) {
		free(c->cmp);
		c->cmp = m;
		c->rev = rev;
		return 0;
	}
	if (s->n == s->cap) {
		v = realloc(s->c, (s->cap * 2 + 16) * sizeof(*v));
		if (!v) {
			free(m);
			return -ENOMEM;
		}
		s->c = v;
		s->cap = s->cap * 2 + 16;
	}
	k = strdup(key);
	if (!k) {
		free(m);
		return -ENOMEM;
	}
	s->c[s->n++] = (struct centry){ k, m, rev };
	return 0;
}

/* ---- values ------------------------------------------------------------ */

static json_object *ids_json(const struct krep_ids *ids)
{
	json_object *a = json_object_new_array();
	uint32_t i;

	for (i = 0; a && i < ids->n; i++)
		if (json_object_array_add(a, json_object_new_int64(ids->id[i]))) {
			json_object_put(a);
			return NULL;
		}
	return a;
}

/* Add to @o; on failure @o is freed and NULL returned. */
static json_object *add(json_object *o, const char *key, json_object *v)
{
	if (!o || !v || json_object_object_add(o, key, v)) {
		json_object_put(o);
		json_object_put(v);
		return NULL;
	}
	return o;
}

static char *str_of(json_object *o)
{
	char *s = o ? strdup(json_object_to_json_string_ext(o,
				JSON_C_TO_STRING_PLAIN |
				JSON_C_TO_STRING_NOSLASHESCAPE)) : NULL;

	json_object_put(o);
	return s;
}

char *krep_estore_part_json(const struct krep_state_part *p, uint32_t epoch)
{
	const struct krep_pstate *ps = &p->ps;
	json_object *o = json_object_new_object();

	o = add(o, "controller_epoch", json_object_new_int64(epoch));
	o = add(o, "leader", json_object_new_int64(ps->leader == KREP_NO_LEADER ?
						   -1 : (int64_t)ps->leader));
	o = add(o, "version", json_object_new_int(1));
	o = add(o, "leader_epoch", json_object_new_int64(ps->leader_epoch));
	o = add(o, "isr", ids_json(&ps->isr));
	o = add(o, "elr", ids_json(&ps->elr));
	o = add(o, "partition_epoch", json_object_new_int64(ps->partition_epoch));
	return str_of(o);
}

static char *broker_json(const struct krep_state_broker *b)
{
	json_object *o = json_object_new_object();
	char hex[20];

	snprintf(hex, sizeof(hex), "%016" PRIx64, b->incarnation);
	o = add(o, "version", json_object_new_int(1));
	if (o && !b->has_incarnation)
		json_object_object_add(o, "incarnation", NULL);
	else
		o = add(o, "incarnation", json_object_new_string(hex));
	o = add(o, "fenced", json_object_new_boolean(b->fenced));
	return str_of(o);
}

static char *topic_json(const struct krep_state *st,
			const struct krep_state_topic *t)
{
	json_object *o = json_object_new_object(), *m = json_object_new_object();
	char num[12], cfg[KREP_TCONFIG_STR_MAX];
	size_t i;

	for (i = 0; m && i < st->nparts; i++) {
		if (strcmp(st->parts[i].topic, t->name))
			continue;
		snprintf(num, sizeof(num), "%u", st->parts[i].partition);
		m = add(m, num, ids_json(&st->parts[i].ps.ar));
	}
	o = add(o, "version", json_object_new_int(1));
	o = add(o, "partitions", m);
	o = add(o, "min_isr", json_object_new_int64(t->tc.min_isr));
	o = add(o, "unclean", json_object_new_boolean(t->tc.unclean));
	o = add(o, "managed", json_object_new_boolean(t->managed));
	if (t->managed) {
		krep_tconfig_format(&t->cfg, cfg, sizeof(cfg));
		o = add(o, "partition_count", json_object_new_int64(t->partitions));
		o = add(o, "rf", json_object_new_int64(t->rf));
		o = add(o, "config", json_object_new_string(cfg));
		o = add(o, "held", ids_json(&t->held));
	}
	o = add(o, "deleting", json_object_new_boolean(t->deleting));
	return str_of(o);
}

/* ---- parsing ----------------------------------------------------------- */

static json_object *field(json_object *o, const char *key, json_type type)
{
	json_object *f;

	if (!json_object_object_get_ex(o, key, &f) || !f ||
	    !json_object_is_type(f, type))
		return NULL;
	return f;
}

static int u32_field(json_object *o, const char *key, uint32_t *v)
{
	json_object *f = field(o, key, json_type_int);
	int64_t x;

	if (!f)
		return -EPROTO;
	x = json_object_get_int64(f);
	if (x < 0 || x > UINT32_MAX)
		return -EPROTO;
	*v = x;
	return 0;
}

static int bool_field(json_object *o, const char *key, bool *v)
{
	json_object *f = field(o, key, json_type_boolean);

	if (!f)
		return -EPROTO;
	*v = json_object_get_boolean(f);
	return 0;
}

static int ids_of(json_object *a, struct krep_ids *ids)
{
	json_object *x;
	int64_t v;
	size_t i;

	ids->n = 0;
	if (!a || !json_object_is_type(a, json_type_array))
		return -EPROTO;
	for (i = 0; i < json_object_array_length(a); i++) {
		x = json_object_array_get_idx(a, i);
		if (!json_object_is_type(x, json_type_int))
			return -EPROTO;
		v = json_object_get_int64(x);
		if (v < 0 || v > KREP_BROKER_ID_MAX ||
		    krep_ids_has(ids, v) || !krep_ids_add(ids, v))
			return -EPROTO;
	}
	return 0;
}

static json_object *parse_obj(const char *s)
{
	json_object *o = json_tokener_parse(s);

	if (o && !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

int krep_estore_part_parse(const char *json, struct krep_state_part *p,
			   uint32_t *epoch, const char **why)
{
	struct krep_pstate *ps = &p->ps;
	json_object *o = parse_obj(json), *f;
	uint32_t version;
	int64_t leader;
	int ret = -EPROTO;

	*why = "not a JSON object";
	if (!o)
		return -EPROTO;
	*why = "version is not 1";
	if (u32_field(o, "version", &version) || version != 1)
		goto out;
	*why = "bad controller_epoch, leader_epoch or partition_epoch";
	if (u32_field(o, "controller_epoch", epoch) ||
	    u32_field(o, "leader_epoch", &ps->leader_epoch) ||
	    u32_field(o, "partition_epoch", &ps->partition_epoch))
		goto out;
	*why = "bad leader";
	f = field(o, "leader", json_type_int);
	if (!f)
		goto out;
	leader = json_object_get_int64(f);
	if (leader < -1 || leader > KREP_BROKER_ID_MAX)
		goto out;
	ps->leader = leader < 0 ? KREP_NO_LEADER : (uint32_t)leader;
	*why = "bad isr or elr";
	if (ids_of(field(o, "isr", json_type_array), &ps->isr) ||
	    ids_of(field(o, "elr", json_type_array), &ps->elr))
		goto out;
	ret = 0;
out:
	json_object_put(o);
	return ret;
}

static int broker_parse(const char *json, struct krep_state_broker *b,
			const char **why)
{
	json_object *o = parse_obj(json), *f;
	uint32_t version;
	char *end;
	int ret = -EPROTO;

	*why = "not a JSON object";
	if (!o)
		return -EPROTO;
	*why = "version is not 1, or bad fenced";
	if (u32_field(o, "version", &version) || version != 1 ||
	    bool_field(o, "fenced", &b->fenced))
		goto out;
	*why = "bad incarnation";
	if (!json_object_object_get_ex(o, "incarnation", &f))
		goto out;
	b->has_incarnation = f != NULL;
	if (f) {
		if (!json_object_is_type(f, json_type_string))
			goto out;
		errno = 0;
		b->incarnation = strtoull(json_object_get_string(f), &end, 16);
		if (errno || *end || !*json_object_get_string(f))
			goto out;
	}
	ret = 0;
out:
	json_object_put(o);
	return ret;
}

/*
 * A topic's value into @t; its assignment map stays in *@map (a
 * reference the caller puts).
 */
static int topic_parse(const char *json, struct krep_state_topic *t,
		       json_object **map, const char **why)
{
	json_object *o = parse_obj(json), *f;
	char reason[256];
	uint32_t version;
	int ret = -EPROTO;

	*map = NULL;
	*why = "not a JSON object";
	if (!o)
		return -EPROTO;
	*why = "bad version, min_isr, unclean, managed, deleting or partitions";
	if (u32_field(o, "version", &version) || version != 1 ||
	    u32_field(o, "min_isr", &t->tc.min_isr) ||
	    bool_field(o, "unclean", &t->tc.unclean) ||
	    bool_field(o, "managed", &t->managed) ||
	    bool_field(o, "deleting", &t->deleting) ||
	    !(f = field(o, "partitions", json_type_object)))
		goto out;
	*map = json_object_get(f);
	if (t->managed) {
		*why = "bad partition_count, rf, config or held";
		f = field(o, "config", json_type_string);
		if (u32_field(o, "partition_count", &t->partitions) ||
		    !t->partitions || u32_field(o, "rf", &t->rf) || !t->rf ||
		    !f || ids_of(field(o, "held", json_type_array), &t->held))
			goto out;
		if (*json_object_get_string(f) &&
		    krep_tconfig_parse(json_object_get_string(f), &t->cfg,
				       reason, sizeof(reason)))
			goto out;
	}
	ret = 0;
out:
	if (ret) {
		json_object_put(*map);
		*map = NULL;
	}
	json_object_put(o);
	return ret;
}

/* ---- keys -------------------------------------------------------------- */

static int gen_add(struct gens *g, char *key, char *value, char *cmp)
{
	struct gen *v;

	if (!key || !value || !cmp || g->oom)
		goto oom;
	if (g->n == g->cap) {
		v = realloc(g->g, (g->cap * 2 + 16) * sizeof(*v));
		if (!v)
			goto oom;
		g->g = v;
		g->cap = g->cap * 2 + 16;
	}
	g->g[g->n++] = (struct gen){ key, value, cmp };
	return 0;
oom:
	free(key);
	if (cmp != value)
		free(cmp);
	free(value);
	g->oom = true;
	return -ENOMEM;
}

static void gens_free(struct gens *g)
{
	size_t i;

	for (i = 0; i < g->n; i++) {
		free(g->g[i].key);
		if (g->g[i].cmp != g->g[i].value)
			free(g->g[i].cmp);
		free(g->g[i].value);
	}
	free(g->g);
}

static char *key_of(const struct krep_estore *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static char *key_of(const struct krep_estore *s, const char *fmt, ...)
{
	char *rest = NULL, *key = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&rest, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	if (asprintf(&key, "%s/%s", s->prefix, rest) < 0)
		key = NULL;
	free(rest);
	return key;
}

/* Every key of @st, as it should be in etcd. */
static int generate(struct krep_estore *s, const struct krep_state *st,
		    struct gens *g)
{
	const struct krep_state_part *p;
	char *v, num[12];
	size_t i;

	snprintf(num, sizeof(num), "%u", st->controller_epoch);
	v = strdup(num);
	gen_add(g, key_of(s, "controller_epoch"), v, v);
	for (i = 0; i < st->nbrokers; i++) {
		v = broker_json(&st->brokers[i]);
		gen_add(g, key_of(s, "brokers/state/%u", st->brokers[i].id),
			v, v);
	}
	for (i = 0; i < st->ntopics; i++) {
		v = topic_json(st, &st->topics[i]);
		gen_add(g, key_of(s, "brokers/topics/%s", st->topics[i].name),
			v, v);
	}
	for (i = 0; i < st->nparts; i++) {
		p = &st->parts[i];
		gen_add(g, key_of(s, "brokers/topics/%s/partitions/%u/state",
				  p->topic, p->partition),
			krep_estore_part_json(p, st->controller_epoch),
			krep_estore_part_json(p, 0));
	}
	return g->oom ? -ENOMEM : 0;
}

/* ---- load -------------------------------------------------------------- */

static int grow(void **v, size_t n, size_t size)
{
	void *p = realloc(*v, (n + 1) * size);

	if (!p)
		return -ENOMEM;
	*v = p;
	return 0;
}

/* @rest of a key below the prefix: which kind, and its names. */
enum kind { K_OTHER, K_EPOCH, K_BROKER, K_TOPIC, K_PART };

static enum kind kind_of(const char *rest, char *topic, uint32_t *num)
{
	char tail[8];
	int n = 0;

	if (!strcmp(rest, "controller_epoch"))
		return K_EPOCH;
	if (sscanf(rest, "brokers/state/%10u%n", num, &n) == 1 && !rest[n])
		return K_BROKER;
	if (strncmp(rest, "brokers/topics/", 15))
		return K_OTHER;
	rest += 15;
	n = strcspn(rest, "/");
	if (!n || n > KREP_TOPIC_NAME_MAX)
		return K_OTHER;
	memcpy(topic, rest, n);
	topic[n] = '\0';
	rest += n;
	if (!*rest)
		return K_TOPIC;
	n = 0;
	if (sscanf(rest, "/partitions/%10u/%5s%n", num, tail, &n) == 2 &&
	    !rest[n] && !strcmp(tail, "state"))
		return K_PART;
	return K_OTHER;
}

static int load_one(struct krep_estore *s, struct krep_state *st,
		    const struct krep_etcd_kv *kv, json_object ***maps,
		    bool parts, const char **why)
{
	char topic[KREP_TOPIC_NAME_MAX + 1], num[12], *cmp;
	struct krep_state_part p = { 0 };
	struct krep_state_broker b = { 0 };
	struct krep_state_topic t = { 0 };
	json_object *map, *ar;
	uint32_t id = 0, epoch;
	size_t i;
	int ret;

	switch (kind_of(kv->key + strlen(s->prefix) + 1, topic, &id)) {
	case K_EPOCH:
		if (parts)
			return 0;
		*why = "not a number";
		if (krep_u32_parse(kv->value, &st->controller_epoch))
			return -EPROTO;
		return cache_set(s, kv->key, kv->value, kv->mod_rev);
	case K_BROKER:
		if (parts)
			return 0;
		ret = broker_parse(kv->value, &b, why);
		if (ret || (ret = grow((void **)&st->brokers, st->nbrokers,
				       sizeof(b))))
			return ret;
		b.id = id;
		st->brokers[st->nbrokers++] = b;
		cmp = broker_json(&b);
		break;
	case K_TOPIC:
		if (parts)
			return 0;
		ret = topic_parse(kv->value, &t, &map, why);
		if (ret)
			return ret;
		if (grow((void **)&st->topics, st->ntopics, sizeof(t)) ||
		    grow((void **)maps, st->ntopics, sizeof(*maps))) {
			json_object_put(map);
			return -ENOMEM;
		}
		strcpy(t.name, topic);
		(*maps)[st->ntopics] = map;
		st->topics[st->ntopics++] = t;
		return 0;	/* cached after its partitions */
	case K_PART:
		if (!parts)
			return 0;
		ret = krep_estore_part_parse(kv->value, &p, &epoch, why);
		if (ret)
			return ret;
		strcpy(p.topic, topic);
		p.partition = id;
		for (i = 0; i < st->ntopics; i++)
			if (!strcmp(st->topics[i].name, topic))
				break;
		*why = "its topic has no assignment for it";
		snprintf(num, sizeof(num), "%u", id);
		if (i == st->ntopics ||
		    !json_object_object_get_ex((*maps)[i], num, &ar) ||
		    ids_of(ar, &p.ps.ar))
			return -EPROTO;
		if (grow((void **)&st->parts, st->nparts, sizeof(p)))
			return -ENOMEM;
		st->parts[st->nparts++] = p;
		cmp = krep_estore_part_json(&p, 0);
		break;
	default:
		return 0;	/* P/controller, P/brokers/ids/..., others' */
	}
	if (!cmp)
		return -ENOMEM;
	ret = cache_set(s, kv->key, cmp, kv->mod_rev);
	free(cmp);
	return ret;
}

int krep_estore_load(struct krep_estore *s, struct krep_state *st, char *err,
		     size_t errlen)
{
	struct krep_etcd_kvs kvs;
	json_object **maps = NULL;
	const char *why = NULL;
	char *key, *cmp;
	size_t i, pass;
	int ret;

	memset(st, 0, sizeof(*st));
	cache_clear(s);
	key = key_of(s, "%s", "");
	if (!key)
		return krep_errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	ret = krep_etcd_range(s->e, key, true, &kvs, err, errlen);
	free(key);
	if (ret)
		return ret;
	for (pass = 0; pass < 2 && !ret; pass++)
		for (i = 0; i < kvs.n && !ret; i++) {
			why = strerror(ENOMEM);
			ret = load_one(s, st, &kvs.kv[i], &maps, pass, &why);
			if (ret)
				krep_errf(err, errlen, ret, "etcd key %s: %s",
				     kvs.kv[i].key, why);
		}
	/* topics are compared as they would be written, assignments included */
	for (i = 0; !ret && i < st->ntopics; i++) {
		key = key_of(s, "brokers/topics/%s", st->topics[i].name);
		cmp = topic_json(st, &st->topics[i]);
		ret = key && cmp ? 0 : -ENOMEM;
		for (size_t k = 0; !ret && k < kvs.n; k++)
			if (!strcmp(kvs.kv[k].key, key))
				ret = cache_set(s, key, cmp, kvs.kv[k].mod_rev);
		if (ret == -ENOMEM)
			krep_errf(err, errlen, ret, "%s", strerror(ENOMEM));
		free(key);
		free(cmp);
	}
	for (i = 0; maps && i < st->ntopics; i++)
		json_object_put(maps[i]);
	free(maps);
	krep_etcd_kvs_free(&kvs);
	if (ret) {
		krep_state_free(st);
		cache_clear(s);
	}
	return ret;
}

/* ---- save -------------------------------------------------------------- */

/* One write: a put (@value) or a delete (@value NULL) of @key at @rev. */
struct op {
	const char *key, *value, *cmp;
	char *own;		/* a deleted key's copy of its name */
	int64_t rev;		/* its mod_revision as we know it, 0: absent */
};

/*
 * @n operations in one transaction fenced by @fence_key's create_revision;
 * on success the cache follows.
 */
static int commit(struct krep_estore *s, const struct op *ops, size_t n,
		  const char *fence_key, int64_t fence_rev, char *err,
		  size_t errlen)
{
	struct krep_etcd_txn *t = krep_etcd_txn_new();
	int64_t rev;
	bool ok;
	size_t i;
	int ret;

	if (!t || krep_etcd_txn_cmp(t, fence_key, KREP_ETCD_CREATE, fence_rev))
		goto oom;
	for (i = 0; i < n; i++)
		if (krep_etcd_txn_cmp(t, ops[i].key, KREP_ETCD_MOD, ops[i].rev) ||
		    (ops[i].value ? krep_etcd_txn_put(t, ops[i].key,
						      ops[i].value, 0) :
		     krep_etcd_txn_del(t, ops[i].key)))
			goto oom;
	ret = krep_etcd_txn_commit(s->e, t, &ok, &rev, err, errlen);
	krep_etcd_txn_free(t);
	if (ret)
		return ret;
	if (!ok)
		return krep_errf(err, errlen, -ESTALE,
			    "a compare failed: another controller was elected or changed a key");
	for (i = 0; i < n; i++)
		if (cache_set(s, ops[i].key, ops[i].value ? ops[i].cmp : NULL,
			      rev))
			return krep_errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	return 0;
oom:
	krep_etcd_txn_free(t);
	return krep_errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
}

int krep_estore_save(struct krep_estore *s, const struct krep_state *st,
		     const char *fence_key, int64_t fence_rev, char *err,
		     size_t errlen)
{
	struct gens g = { 0 };
	struct op *ops = NULL;
	struct centry *c;
	size_t i, n = 0, done;
	bool *keep = NULL;
	int ret = 0;

	if (generate(s, st, &g))
		goto oom;
	keep = calloc(s->n + 1, sizeof(*keep));
	ops = calloc(g.n + s->n + 1, sizeof(*ops));
	if (!keep || !ops)
		goto oom;
	/* what changed or is new, then what is gone (by name: the cache moves) */
	for (i = 0; i < g.n; i++) {
		c = cache_find(s, g.g[i].key);
		if (c)
			keep[c - s->c] = true;
		if (c && !strcmp(c->cmp, g.g[i].cmp))
			continue;
		ops[n++] = (struct op){ .key = g.g[i].key, .value = g.g[i].value,
					.cmp = g.g[i].cmp, .rev = c ? c->rev : 0 };
	}
	for (i = 0; i < s->n; i++) {
		if (keep[i])
			continue;
		ops[n].own = strdup(s->c[i].key);
		if (!ops[n].own)
			goto oom;
		ops[n].key = ops[n].own;
		ops[n++].rev = s->c[i].rev;
	}
	/* etcd takes at most --max-txn-ops (128) operations a transaction */
	for (done = 0; done < n && !ret; done += TXN_OPS_MAX)
		ret = commit(s, ops + done, n - done < TXN_OPS_MAX ?
			     n - done : TXN_OPS_MAX, fence_key, fence_rev, err,
			     errlen);
	goto out;
oom:
	ret = krep_errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
out:
	for (i = 0; ops && i < n; i++)
		free(ops[i].own);
	free(ops);
	free(keep);
	gens_free(&g);
	return ret;
}
