// SPDX-License-Identifier: GPL-2.0
/*
 * krep: topic names and per-topic configuration, with Kafka's rules and
 * defaults.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bsearch.h>
#include <linux/ctype.h>
#include <linux/rculist.h>
#include <linux/errno.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/wait_bit.h>
#include <linux/krep.h>

#include "krep.h"
#include "broker.h"
#include "disklog.h"
#include "logdir.h"
#include "fetcher.h"
#include "isr.h"
#include "param.h"
#include "partition.h"
#include "topic.h"
#include "topic_meta.h"

/* Kafka's defaults, except segment_bytes: 8 MiB fits a memory log */
void krep_topic_config_default(struct krep_topic_config *tc)
{
	tc->min_insync_replicas = 1;
	tc->replica_lag_time_max_ms = 30000;
	tc->segment_bytes = 8 << 20;
	tc->retention_bytes = -1;
	tc->max_message_bytes = 1048588;
	tc->unclean_leader_election = false;
	tc->flush_messages = KREP_FLUSH_NEVER;
	tc->flush_ms = KREP_FLUSH_NEVER;
	tc->segment_ms = 7LL * 24 * 3600 * 1000;
}

struct topic_key {
	const char *name;
	s64 min, max;
	size_t offset;
	size_t size;
};

#define TOPIC_KEY(_name, _min, _max) {					\
	.name = #_name, .min = (_min), .max = (_max),			\
	.offset = offsetof(struct krep_topic_config, _name),		\
	.size = sizeof_field(struct krep_topic_config, _name),		\
}

static const struct topic_key topic_keys[] = {
	TOPIC_KEY(min_insync_replicas, 1, KREP_RF_MAX),
	TOPIC_KEY(replica_lag_time_max_ms, 10, 3600 * 1000),
	TOPIC_KEY(segment_bytes, 4096, 1 << 30),
	TOPIC_KEY(retention_bytes, -1, S64_MAX),
	TOPIC_KEY(max_message_bytes, 64, 1048588),
	TOPIC_KEY(unclean_leader_election, 0, 1),
	TOPIC_KEY(flush_messages, 1, KREP_FLUSH_NEVER),
	TOPIC_KEY(flush_ms, 0, KREP_FLUSH_NEVER),
	TOPIC_KEY(segment_ms, 1, S64_MAX),
};

/**
 * krep_topic_config_set - set one configuration key by name
 * @tc: configuration to change
 * @key: Kafka-style key with underscores, e.g. "min_insync_replicas"
 * @val: the value
 * @why: set to the reason on failure
 *
 * Return: 0, -ENOENT for an unknown key, -ERANGE for a value out of range.
 */
int krep_topic_config_set(struct krep_topic_config *tc, const char *key,
			  s64 val, const char **why)
{
	const struct topic_key *k;
	void *field;

	for (k = topic_keys; k < topic_keys + ARRAY_SIZE(topic_keys); k++) {
		if (strcmp(k->name, key))
			continue;
		if (val < k->min || val > k->max) {
			*why = "value out of range";
			return -ERANGE;
		}
		field = (char *)tc + k->offset;
		switch (k->size) {
		case sizeof(bool):
			*(bool *)field = val;
			break;
		case sizeof(u32):
			*(u32 *)field = val;
			break;
		default:
			*(s64 *)field = val;
			break;
		}
		return 0;
	}
	*why = "unknown topic config key";
	return -ENOENT;
}

/* Kafka: 1 to 249 characters of [a-zA-Z0-9._-], neither "." nor ".." */
int krep_topic_name_check(const char *name, size_t len, const char **why)
{
	size_t i;

	if (!len) {
		*why = "empty topic name";
		return -EINVAL;
	}
	if (len > KREP_TOPIC_NAME_MAX) {
		*why = "topic name longer than 249 characters";
		return -EINVAL;
	}
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.')) {
		*why = "topic name cannot be '.' or '..'";
		return -EINVAL;
	}
	for (i = 0; i < len; i++) {
		if (!isalnum(name[i]) && name[i] != '.' && name[i] != '_' &&
		    name[i] != '-') {
			*why = "topic name has a character outside [a-zA-Z0-9._-]";
			return -EINVAL;
		}
	}
	return 0;
}

struct krep_topic_spec *krep_topic_spec_alloc(void)
{
	struct krep_topic_spec *ts;

	ts = kzalloc(sizeof(*ts), GFP_KERNEL);
	if (!ts)
		return NULL;
	INIT_LIST_HEAD(&ts->node);
	krep_topic_config_default(&ts->config);
	krep_obj_get(KREP_OBJ_TOPIC_SPEC);
	return ts;
}

void krep_topic_spec_free_list(struct list_head *specs)
{
	struct krep_topic_spec *ts, *tmp;

	list_for_each_entry_safe(ts, tmp, specs, node) {
		list_del(&ts->node);
		kfree(ts);
		krep_obj_put(KREP_OBJ_TOPIC_SPEC);
	}
}

static int cmp_u32(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

/* the sorted broker ids of the cluster: this broker and its peers */
static unsigned int cluster_brokers(const struct krep_broker_cfg *cfg,
				    u32 *ids)
{
	unsigned int n = 0, i, j;

	ids[n++] = cfg->broker_id;
	for (i = 0; i < cfg->npeers; i++)
		ids[n++] = cfg->peers[i].id;
	for (i = 1; i < n; i++) {	/* insertion sort, n <= 65 */
		u32 v = ids[i];

		for (j = i; j > 0 && ids[j - 1] > v; j--)
			ids[j] = ids[j - 1];
		ids[j] = v;
	}
	return n;
}

/* every id of an assignment is a broker of @ids (sorted, @n of them) */
static int assign_check(const u32 *replicas, u32 count, const u32 *ids,
			unsigned int n, struct krep_status *st)
{
	u32 i;

	for (i = 0; i < count; i++) {
		u32 id = replicas[i];

		if (!bsearch(&id, ids, n, sizeof(*ids), cmp_u32))
			return krep_fail(st, KREP_KERR_INVALID_REPLICA_ASSIGNMENT,
					 -EINVAL,
					 "assignment names a broker that is neither this one nor a peer");
	}
	return 0;
}

static void topic_free(struct krep_topic *t)
{
	u32 i;

	for (i = 0; i < t->npartitions; i++)
		krep_partition_free(t->parts[i]);
	kvfree(t->replicas);
	krep_topic_meta_free(t);
	kfree(t);
	krep_obj_put(KREP_OBJ_TOPIC);
}

static void topic_free_work(struct work_struct *work)
{
	struct krep_topic *t = container_of(to_rcu_work(work),
					    struct krep_topic, free_work);
	struct krep_net *kn = t->kn;

	topic_free(t);
	/* the namespace's exit waits for this */
	if (atomic_dec_and_test(&kn->topics_freeing))
		wake_up_var(&kn->topics_freeing);
}

static void topic_release(struct kref *ref)
{
	struct krep_topic *t = container_of(ref, struct krep_topic, ref);

	/* lookups may still hold the pointer under RCU */
	atomic_inc(&t->kn->topics_freeing);
	INIT_RCU_WORK(&t->free_work, topic_free_work);
	queue_rcu_work(system_unbound_wq, &t->free_work);
}

void krep_topic_put(struct krep_topic *t)
{
	if (t)
		kref_put(&t->ref, topic_release);
}

static struct krep_topic *find_locked(struct krep_net *kn, const char *name)
{
	struct krep_topic *t;

	list_for_each_entry(t, &kn->topics, node) {
		if (!strcmp(t->name, name))
			return t;
	}
	return NULL;
}

struct krep_topic *krep_topic_get(struct krep_net *kn, const char *name)
{
	struct krep_topic *t;

	rcu_read_lock();
	list_for_each_entry_rcu(t, &kn->topics, node) {
		if (!strcmp(t->name, name)) {
			if (!kref_get_unless_zero(&t->ref))
				t = NULL;
			rcu_read_unlock();
			return t;
		}
	}
	rcu_read_unlock();
	return NULL;
}

struct krep_partition *krep_topic_partition(struct krep_topic *t, u32 index,
					    struct krep_status *st)
{
	if (index >= t->npartitions)
		return ERR_PTR(krep_fail(st, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
					 -ENOENT, "no such partition"));
	if (!t->parts[index])
		return ERR_PTR(krep_fail(st, KREP_KERR_NOT_LEADER_OR_FOLLOWER,
					 -EREMOTE,
					 "this broker does not host the partition"));
	return t->parts[index];
}

/* a topic being created, between the checks and its publication */
struct creating {
	struct list_head node;		/* in krep_net.creating */
	const char *name;
	u32 nhosted;
};

static bool creating_locked(struct krep_net *kn, const char *name)
{
	struct creating *c;

	list_for_each_entry(c, &kn->creating, node) {
		if (!strcmp(c->name, name))
			return true;
	}
	return false;
}

/*
 * A broker holds at most topics_max topics and hosts at most
 * partitions_max partitions (module parameters), those being created
 * included: the memory of topics and partitions has a bound besides the
 * log memory cap. Called with topics_lock held, where @t would be added.
 */
static int check_limits(struct krep_net *kn, const struct krep_topic *t,
			struct krep_status *st)
{
	u32 ntopics = 1, nhosted = t->nhosted;
	struct krep_topic *o;
	struct creating *c;

	lockdep_assert_held(&kn->topics_lock);
	list_for_each_entry(o, &kn->topics, node) {
		ntopics++;
		nhosted += o->nhosted;
	}
	list_for_each_entry(c, &kn->creating, node) {
		ntopics++;
		nhosted += c->nhosted;
	}
	if (ntopics > krep_param_topics_max())
		return krep_fail(st, KREP_KERR_POLICY_VIOLATION, -EDQUOT,
				 "topics_max reached: the broker holds as many topics as it may");
	if (nhosted > krep_param_partitions_max())
		return krep_fail(st, KREP_KERR_POLICY_VIOLATION, -EDQUOT,
				 "partitions_max reached: the broker would host more partitions than it may");
	return 0;
}

/*
 * With a log directory, each hosted partition recovers its log from it
 * before the topic is seen. Without topics_lock (recovery reads files):
 * the topic's entry on krep_net.creating keeps another create of the
 * name, and a change of the log directory, away meanwhile.
 */
static int open_disks(struct krep_topic *t, struct krep_logdir *ld,
		      struct krep_status *st)
{
	int err;
	u32 i;

	for (i = 0; i < t->npartitions; i++) {
		if (!t->parts[i])
			continue;
		err = krep_disk_open(t->parts[i], ld, st);
		if (err)
			return err;
	}
	return 0;
}

/* after topic_kill(): write the rest out, or remove it with the topic */
static void close_disks(struct krep_topic *t, bool remove)
{
	u32 i;

	for (i = 0; i < t->npartitions; i++) {
		if (t->parts[i])
			krep_disk_close(t->parts[i], remove);
	}
}

/**
 * krep_topic_create - create a topic
 * @kn: the broker
 * @name: a valid topic name
 * @npartitions: 1..KREP_PARTITIONS_MAX
 * @rf: replication factor, 1..number of brokers
 * @cfg: the topic's configuration
 * @assign: the controller's assignment, or NULL
 * @st: Kafka's error code and a reason on failure
 *
 * Without @assign, partition p's replicas are brokers[(p + j) % n] for
 * j < rf over the sorted broker ids, so preferred leaders spread over the
 * brokers. With it, every id it names must be a broker this one knows.
 */
int krep_topic_create(struct krep_net *kn, const char *name, u32 npartitions,
		      u32 rf, const struct krep_topic_config *cfg,
		      const struct krep_topic_assign *assign,
		      struct krep_status *st)
{
	u32 ids[KREP_RF_MAX], replicas[KREP_RF_MAX], self;
	struct krep_broker_cfg *bcfg;
	struct krep_logdir *ld;
	struct creating c;
	unsigned int n, j;
	struct krep_topic *t;
	int err = 0;
	u32 i;

	mutex_lock(&kn->cfg_lock);
	bcfg = krep_broker_cfg_locked(kn);
	if (bcfg->broker_id == KREP_BROKER_ID_UNSET) {
		mutex_unlock(&kn->cfg_lock);
		return krep_fail(st, KREP_KERR_INVALID_REQUEST, -EINVAL,
				 "set the broker id before creating topics");
	}
	self = bcfg->broker_id;
	n = cluster_brokers(bcfg, ids);
	mutex_unlock(&kn->cfg_lock);

	if (!npartitions || npartitions > KREP_PARTITIONS_MAX)
		return krep_fail(st, KREP_KERR_INVALID_PARTITIONS, -EINVAL,
				 "partitions must be 1..1024");
	if (!rf || rf > n)
		return krep_fail(st, KREP_KERR_INVALID_REPLICATION_FACTOR,
				 -EINVAL,
				 "replication factor larger than the number of brokers");
	if (assign) {
		err = assign_check(assign->replicas, npartitions * rf, ids, n,
				   st);
		if (err)
			return err;
	}

	t = kzalloc(struct_size(t, parts, npartitions), GFP_KERNEL_ACCOUNT);
	if (!t)
		return krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, -ENOMEM,
				 "out of memory");
	krep_obj_get(KREP_OBJ_TOPIC);
	kref_init(&t->ref);
	t->kn = kn;
	strscpy(t->name, name, sizeof(t->name));
	t->npartitions = npartitions;
	t->replication_factor = rf;
	t->config = *cfg;
	t->leaderless = assign && assign->leaderless;
	t->replicas = kvmalloc_array((size_t)npartitions * rf,
				     sizeof(*t->replicas), GFP_KERNEL_ACCOUNT);
	if (!t->replicas) {
		topic_free(t);
		return krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, -ENOMEM,
				 "out of memory");
	}
	for (i = 0; i < npartitions; i++) {
		bool hosted = false;

		for (j = 0; j < rf; j++) {
			replicas[j] = assign ? assign->replicas[i * rf + j] :
					       ids[(i + j) % n];
			t->replicas[i * rf + j] = replicas[j];
			hosted |= replicas[j] == self;
		}
		if (!hosted)
			continue;
		t->parts[i] = krep_partition_new(t, i, replicas, rf, self,
						 assign && assign->leaderless);
		if (!t->parts[i]) {
			topic_free(t);
			return krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR,
					 -ENOMEM, "out of memory");
		}
		t->nhosted++;
	}
	if (krep_topic_meta_init(t)) {
		topic_free(t);
		return krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, -ENOMEM,
				 "out of memory");
	}

	mutex_lock(&kn->topics_lock);
	if (READ_ONCE(kn->dying))	/* set without this lock */
		err = krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR, -ESHUTDOWN,
				"broker is shutting down");
	else if (find_locked(kn, name) || creating_locked(kn, name))
		err = krep_fail(st, KREP_KERR_TOPIC_ALREADY_EXISTS, -EEXIST,
				"topic already exists");
	else
		err = check_limits(kn, t, st);
	ld = kn->logdir;
	if (!err && ld) {
		c.name = t->name;
		c.nhosted = t->nhosted;
		list_add(&c.node, &kn->creating);
		mutex_unlock(&kn->topics_lock);
		err = open_disks(t, ld, st);
		mutex_lock(&kn->topics_lock);
		list_del(&c.node);
		if (!err && READ_ONCE(kn->dying))
			err = krep_fail(st, KREP_KERR_UNKNOWN_SERVER_ERROR,
					-ESHUTDOWN, "broker is shutting down");
	}
	if (!err) {
		list_add_tail_rcu(&t->node, &kn->topics);
		krep_logdir_publish(kn, t);
		krep_isr_schedule(kn);
	}
	mutex_unlock(&kn->topics_lock);
	if (err) {
		close_disks(t, false);
		topic_free(t);
	} else {
		krep_fetcher_kick_all(kn);
	}
	return err;
}

static void topic_kill(struct krep_topic *t)
{
	u32 i;

	for (i = 0; i < t->npartitions; i++) {
		if (t->parts[i])
			krep_partition_kill(t->parts[i]);
	}
}

int krep_topic_delete(struct krep_net *kn, const char *name,
		      struct krep_status *st)
{
	struct krep_topic *t;
	u32 i;

	mutex_lock(&kn->topics_lock);
	t = find_locked(kn, name);
	if (!t) {
		mutex_unlock(&kn->topics_lock);
		return krep_fail(st, KREP_KERR_UNKNOWN_TOPIC_OR_PARTITION,
				 -ENOENT, "no such topic");
	}
	list_del_rcu(&t->node);
	krep_logdir_forget(kn, name);
	/* renamed away now: a create of the name finds no old files */
	for (i = 0; i < t->npartitions; i++) {
		if (t->parts[i])
			krep_disk_detach_dir(t->parts[i]);
	}
	mutex_unlock(&kn->topics_lock);
	topic_kill(t);
	close_disks(t, true);
	krep_topic_put(t);
	return 0;
}

/* wake every waiter of every topic for good (module exit) */
void krep_topics_kill_all(struct krep_net *kn)
{
	struct krep_topic *t;

	mutex_lock(&kn->topics_lock);
	list_for_each_entry(t, &kn->topics, node)
		topic_kill(t);
	mutex_unlock(&kn->topics_lock);
}

/* namespace exit: nothing can reach the topics any more */
void krep_topics_destroy(struct krep_net *kn)
{
	struct krep_topic *t, *tmp;

	mutex_lock(&kn->topics_lock);
	list_for_each_entry_safe(t, tmp, &kn->topics, node) {
		list_del_rcu(&t->node);
		topic_kill(t);
		close_disks(t, false);
		krep_topic_put(t);
	}
	mutex_unlock(&kn->topics_lock);
}

bool krep_topics_exist(struct krep_net *kn)
{
	bool any;

	rcu_read_lock();
	any = !list_empty(&kn->topics);
	rcu_read_unlock();
	return any;
}

/* the shortest replica_lag_time_max_ms over the broker's topics, or 0 */
u32 krep_topics_min_lag_ms(struct krep_net *kn)
{
	struct krep_topic *t;
	u32 lag = 0;

	rcu_read_lock();
	list_for_each_entry_rcu(t, &kn->topics, node) {
		if (t->replication_factor > 1 &&
		    (!lag || t->config.replica_lag_time_max_ms < lag))
			lag = t->config.replica_lag_time_max_ms;
	}
	rcu_read_unlock();
	return lag;
}

/* create the topics= topics of the initial namespace, once at load */
int krep_topic_create_specs(struct krep_net *kn)
{
	struct krep_topic_spec *ts;
	struct krep_status st = {};
	int err;

	list_for_each_entry(ts, &kn->topic_specs, node) {
		err = krep_topic_create(kn, ts->name, ts->partitions,
					ts->replication_factor, &ts->config,
					NULL, &st);
		if (err) {
			pr_err("topic '%s': %s\n", ts->name, st.why);
			return err;
		}
	}
	krep_topic_spec_free_list(&kn->topic_specs);
	return 0;
}
