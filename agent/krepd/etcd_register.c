// SPDX-License-Identifier: GPL-2.0
/*
 * A broker's registration in etcd (etcd_register.h).
 *
 * Timers (driven by krepd's observer loop, on CLOCK_MONOTONIC):
 *   next_ms        read the broker and renew the lease: every third of
 *                  the lease (at least 500 ms)
 *   lease_until_ms the lease surely runs until then; past it, a new one
 *                  is granted and the key put again
 *
 * Log lines (each once per distinct reason):
 *   etcd: broker N registered at P/brokers/ids/N
 *   etcd: broker unregistered: REASON
 *   etcd: cannot register the broker: REASON
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "etcd_register.h"
#include "genl.h"
#include "log.h"
#include "snap.h"

struct krep_reg {
	struct krep_etcd *e;
	struct krep_genl gl;
	char prefix[128];
	int64_t ttl_s, every_ms;
	int64_t lease, lease_until_ms;
	int64_t next_ms;
	char key[160];			/* registered under it, "" if not */
	char *value;			/* what was put */
	char last_err[512];
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(struct krep_reg *r, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(struct krep_reg *r, int prio, const char *fmt, ...)
{
	char msg[sizeof(r->last_err)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!strcmp(msg, r->last_err))
		return;
	snprintf(r->last_err, sizeof(r->last_err), "%s", msg);
	krep_log(prio, "etcd: %s", msg);
}

struct krep_reg *krep_reg_open(const struct krep_ha_opts *o, uint32_t lease_ms)
{
	struct krep_reg *r = calloc(1, sizeof(*r));

	if (!r) {
		krep_log(LOG_ERR, "%s", strerror(ENOMEM));
		return NULL;
	}
	r->e = krep_ha_etcd_open(o, lease_ms);
	if (!r->e) {
		free(r);
		return NULL;
	}
	snprintf(r->prefix, sizeof(r->prefix), "%s", o->prefix);
	r->ttl_s = krep_ha_ttl_s(lease_ms);
	r->every_ms = r->ttl_s * 1000 / 3;
	if (r->every_ms < 500)
		r->every_ms = 500;
	return r;
}

/* Revoke the lease: the key goes with it. */
static void unregister(struct krep_reg *r, const char *why)
{
	char err[512];

	if (r->lease && krep_etcd_lease_revoke(r->e, r->lease, err,
					       sizeof(err)))
		krep_log(LOG_WARNING, "etcd: cannot revoke the registration's lease: %s (it runs out in %" PRId64 " s)",
			 err, r->ttl_s);
	if (r->key[0])
		say(r, LOG_NOTICE, "broker unregistered: %s", why);
	r->lease = 0;
	r->key[0] = '\0';
	free(r->value);
	r->value = NULL;
}

void krep_reg_close(struct krep_reg *r)
{
	if (!r)
		return;
	unregister(r, "krepd stops");
	if (r->gl.sk)
		krep_genl_close(&r->gl);
	krep_etcd_close(r->e);
	free(r);
}

int krep_reg_timeout(const struct krep_reg *r)
{
	int64_t left = r->next_ms - now_ms();

	return left < 0 ? 0 : (int)left;
}

static char *value_of(const struct krep_snap *s)
{
	json_object *o = json_object_new_object();
	char hex[20], host[64], *v = NULL;

	if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';
	snprintf(hex, sizeof(hex), "%016" PRIx64, s->incarnation);
	if (o && !json_object_object_add(o, "version", json_object_new_int(1)) &&
	    !json_object_object_add(o, "broker_id",
				    json_object_new_int64(s->broker_id)) &&
	    !json_object_object_add(o, "cluster_id",
				    json_object_new_string(s->cluster_id ?: "")) &&
	    !json_object_object_add(o, "incarnation", s->has_incarnation ?
				    json_object_new_string(hex) : NULL) &&
	    !json_object_object_add(o, "host", json_object_new_string(host)) &&
	    !json_object_object_add(o, "pid", json_object_new_int(getpid())))
		v = strdup(json_object_to_json_string_ext(o,
				JSON_C_TO_STRING_PLAIN |
				JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return v;
}

/* The lease: granted, renewed, or found gone. 0, or -1 (logged). */
static int lease(struct krep_reg *r)
{
	int64_t sent = now_ms(), ttl;
	char err[512];

	if (r->lease && sent < r->lease_until_ms) {
		if (krep_etcd_lease_keepalive(r->e, r->lease, &ttl, err,
					      sizeof(err))) {
			say(r, LOG_ERR, "cannot renew the registration's lease: %s",
			    err);
			return -1;
		}
		if (ttl) {
			r->lease_until_ms = sent + ttl * 1000;
			return 0;
		}
	}
	/* none yet, or it ran out: a new one, and the key again */
	r->lease = 0;
	free(r->value);
	r->value = NULL;
	if (krep_etcd_lease_grant(r->e, r->ttl_s, &r->lease, &ttl, err,
				  sizeof(err))) {
		r->lease = 0;
		say(r, LOG_ERR, "cannot register the broker: %s", err);
		return -1;
	}
	r->lease_until_ms = sent + ttl * 1000;
	return 0;
}

void krep_reg_tick(struct krep_reg *r)
{
	struct krep_etcd_txn *t;
	struct krep_snap snap;
	char key[160], err[512], *v;
	int64_t rev;
	bool ok;
	int ret;

	if (now_ms() < r->next_ms)
		return;
	r->next_ms = now_ms() + r->every_ms;
	/* access() first: krep_genl_open() would print it at every tick */
	if (!r->gl.sk && (access("/sys/module/krep", F_OK) ||
			  krep_genl_open(&r->gl))) {
		unregister(r, "the krep module is not loaded");
		return;
	}
	r->gl.quiet = true;
	if (krep_snap_take(&r->gl, NULL, &snap)) {
		krep_genl_close(&r->gl);	/* the module may have gone */
		unregister(r, "the broker does not answer");
		return;
	}
	if (!snap.has_broker_id) {
		krep_snap_free(&snap);
		unregister(r, "the broker has no id");
		return;
	}
	snprintf(key, sizeof(key), "%s/brokers/ids/%u", r->prefix,
		 snap.broker_id);
	v = value_of(&snap);
	krep_snap_free(&snap);
	if (!v) {
		say(r, LOG_ERR, "%s", strerror(ENOMEM));
		return;
	}
	if (r->key[0] && strcmp(key, r->key))
		unregister(r, "its broker id changed");
	if (lease(r)) {
		free(v);
		return;
	}
	if (r->value && !strcmp(v, r->value)) {
		free(v);
		return;		/* registered as it is */
	}
	t = krep_etcd_txn_new();
	ret = !t || krep_etcd_txn_put(t, key, v, r->lease) ? -ENOMEM :
	      krep_etcd_txn_commit(r->e, t, &ok, &rev, err, sizeof(err));
	krep_etcd_txn_free(t);
	if (ret) {
		say(r, LOG_ERR, "cannot register the broker: %s",
		    ret == -ENOMEM ? strerror(ENOMEM) : err);
		free(v);
		return;
	}
	free(r->value);
	r->value = v;
	if (!r->key[0])
		say(r, LOG_NOTICE, "broker registered at %s", key);
	snprintf(r->key, sizeof(r->key), "%s", key);
}
