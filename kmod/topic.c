// SPDX-License-Identifier: GPL-2.0
/*
 * krep: topic names and per-topic configuration, with Kafka's rules and
 * defaults.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
#include <linux/errno.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/krep.h>

#include "krep.h"
#include "topic.h"

/* Kafka's defaults, except segment_bytes, which fits a memory log */
void krep_topic_config_default(struct krep_topic_config *tc)
{
	tc->min_insync_replicas = 1;
	tc->replica_lag_time_max_ms = 30000;
	tc->segment_bytes = 1 << 20;
	tc->retention_bytes = -1;
	tc->max_message_bytes = 1048588;
	tc->unclean_leader_election = false;
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
	TOPIC_KEY(max_message_bytes, 64, 64 << 20),
	TOPIC_KEY(unclean_leader_election, 0, 1),
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
