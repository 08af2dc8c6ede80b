// SPDX-License-Identifier: GPL-2.0
/*
 * The controller's election in etcd (ha.h).
 *
 * Timers (driven by the caller's loop, on CLOCK_MONOTONIC):
 *   next_ka_ms     renew the lease (a third of its TTL after the last
 *                  renewal; 200 ms after a failed one)
 *   lease_until_ms the lease surely runs until then: the send time of the
 *                  last successful keepalive (or grant) plus its TTL
 *
 * Log lines:
 *   etcd: elected: controller epoch N (P/controller, lease L)
 *   etcd: standby: the active controller is NAME (epoch N)
 *   etcd: cannot reach etcd: ...            (once per reason)
 *   etcd: reachable again (URL)
 *   etcd: the lease ended ...: stepping down
 *   etcd: a transaction's answer was lost (...); its keys read back show
 *         it applied (revision R)
 *   etcd: campaign (the next round's read of the election key settles
 *         it): ...; its outcome is unknown: cannot read its keys back: ...
 *   etcd: P/controller is this krepd's own (owner O, lease L): its
 *         campaign won though the answer was lost: taking office
 *   etcd: P/controller names this krepd (owner O) under lease L, not its
 *         lease M: revoking that one, then campaigning again
 *
 * A campaign whose answer is lost is read back (etcd.h). When even that
 * fails, the next round's read of P/controller settles it: this krepd's
 * owner id and lease there mean it won; its owner id under another lease
 * (one it gave up, still running in etcd) is revoked, then it campaigns
 * again. A standby never names itself as the active controller.
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

#include "ha.h"
#include "log.h"

#define RETRY_KA_MS	200

struct krep_ha {
	struct krep_etcd *e;
	struct krep_estore *store;
	char ckey[160], ekey[160];
	char prefix[128];
	char name[64];
	char socket[108];
	int64_t ttl_s;
	int64_t lease;			/* 0: none */
	int64_t lease_until_ms, next_ka_ms;
	bool active;
	int64_t create_rev;		/* of P/controller, while active */
	uint32_t epoch;
	uint64_t owner;
	struct krep_ha_info seen;	/* the active one, as read */
	char last_err[512];		/* the etcd failure logged last */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* etcd failed: say so once per reason. */
static void etcd_fail(struct krep_ha *ha, const char *what, const char *err)
{
	char msg[sizeof(ha->last_err)];

	snprintf(msg, sizeof(msg), "%s: %s", what, err);
	if (!strcmp(msg, ha->last_err))
		return;
	snprintf(ha->last_err, sizeof(ha->last_err), "%s", msg);
	krep_log(LOG_ERR, "etcd: %s", msg);
}

static void etcd_ok(struct krep_ha *ha)
{
	if (!ha->last_err[0])
		return;
	ha->last_err[0] = '\0';
	krep_log(LOG_NOTICE, "etcd: reachable again (%s)",
		 krep_etcd_endpoint(ha->e));
}

static int read_password(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	if (!fgets(buf, size, f)) {
		fclose(f);
		return -EINVAL;
	}
	fclose(f);
	n = strcspn(buf, "\r\n");
	buf[n] = '\0';
	return 0;
}

uint32_t krep_ha_timeout_ms(const struct krep_ha_opts *o, uint32_t lease_ms)
{
	uint32_t ms = lease_ms / 4;

	if (o->timeout_ms)
		return o->timeout_ms;
	return ms < 100 ? 100 : ms > 1000 ? 1000 : ms;
}

struct krep_etcd *krep_ha_etcd_open(const struct krep_ha_opts *o,
				    uint32_t lease_ms)
{
	struct krep_etcd_opts eo = {
		.endpoints = o->endpoints,
		.cacert = o->cacert[0] ? o->cacert : NULL,
		.cert = o->cert[0] ? o->cert : NULL,
		.key = o->key[0] ? o->key : NULL,
		.user = o->user[0] ? o->user : NULL,
	};
	char err[512], password[256];
	struct krep_etcd *e;
	int ret;

	if (o->password_file[0]) {
		ret = read_password(o->password_file, password, sizeof(password));
		if (ret) {
			krep_log(LOG_ERR, "--etcd-password-file %s: %s",
				 o->password_file, ret == -EINVAL ?
				 "empty" : strerror(-ret));
			return NULL;
		}
		eo.password = password;
	}
	eo.timeout_ms = krep_ha_timeout_ms(o, lease_ms);
	e = krep_etcd_open(&eo, err, sizeof(err));
	memset(password, 0, sizeof(password));
	if (!e)
		krep_log(LOG_ERR, "%s", err);
	return e;
}

int64_t krep_ha_ttl_s(uint32_t lease_ms)
{
	int64_t ttl = (lease_ms + 999) / 1000;

	return ttl < 2 ? 2 : ttl;
}

struct krep_ha *krep_ha_open(const struct krep_ha_opts *o, uint32_t lease_ms,
			     const char *socket)
{
	struct krep_ha *ha;
	char host[64];

	ha = calloc(1, sizeof(*ha));
	if (!ha) {
		krep_log(LOG_ERR, "%s", strerror(ENOMEM));
		return NULL;
	}
	ha->ttl_s = krep_ha_ttl_s(lease_ms);
	ha->e = krep_ha_etcd_open(o, lease_ms);
	if (!ha->e)
		goto fail;
	ha->store = krep_estore_new(ha->e, o->prefix);
	if (!ha->store) {
		krep_log(LOG_ERR, "%s", strerror(ENOMEM));
		goto fail;
	}
	snprintf(ha->ckey, sizeof(ha->ckey), "%s/controller", o->prefix);
	snprintf(ha->ekey, sizeof(ha->ekey), "%s/controller_epoch", o->prefix);
	snprintf(ha->prefix, sizeof(ha->prefix), "%s", o->prefix);
	if (o->name[0]) {
		snprintf(ha->name, sizeof(ha->name), "%s", o->name);
	} else {
		if (gethostname(host, sizeof(host)))
			snprintf(host, sizeof(host), "krepd");
		host[sizeof(host) - 1] = '\0';
		snprintf(ha->name, sizeof(ha->name), "%.40s:%d", host,
			 (int)getpid());
	}
	snprintf(ha->socket, sizeof(ha->socket), "%s", socket);
	return ha;
fail:
	krep_ha_close(ha);
	return NULL;
}

void krep_ha_close(struct krep_ha *ha)
{
	if (!ha)
		return;
	krep_estore_free(ha->store);
	krep_etcd_close(ha->e);
	free(ha);
}

uint32_t krep_ha_epoch(const struct krep_ha *ha)
{
	return ha->epoch;
}

struct krep_estore *krep_ha_store(struct krep_ha *ha)
{
	return ha->store;
}

/* ---- the lease --------------------------------------------------------- */

static int grant(struct krep_ha *ha)
{
	int64_t sent = now_ms(), ttl;
	char err[512];

	if (krep_etcd_lease_grant(ha->e, ha->ttl_s, &ha->lease, &ttl, err,
				  sizeof(err))) {
		ha->lease = 0;
		etcd_fail(ha, "cannot get a lease", err);
		return -1;
	}
	ha->lease_until_ms = sent + ttl * 1000;
	ha->next_ka_ms = sent + ttl * 1000 / 3;
	return 0;
}

/* 0: renewed or not due; -ESTALE: the lease is gone; -EIO: no answer. */
static int keepalive(struct krep_ha *ha)
{
	int64_t sent = now_ms(), ttl;
	char err[512];

	if (sent < ha->next_ka_ms)
		return 0;
	if (krep_etcd_lease_keepalive(ha->e, ha->lease, &ttl, err,
				      sizeof(err))) {
		ha->next_ka_ms = sent + RETRY_KA_MS;
		etcd_fail(ha, "cannot renew the lease", err);
		return -EIO;
	}
	etcd_ok(ha);
	if (!ttl)
		return -ESTALE;
	ha->lease_until_ms = sent + ttl * 1000;
	ha->next_ka_ms = sent + ttl * 1000 / 3;
	return 0;
}

/* ---- standby ----------------------------------------------------------- */

/* What P/controller says of the active controller. */
static void seen_parse(struct krep_ha *ha, const struct krep_etcd_kv *kv)
{
	json_object *o = json_tokener_parse(kv->value), *f;
	struct krep_ha_info *s = &ha->seen;
	char *end;

	memset(s, 0, sizeof(*s));
	s->known = true;
	snprintf(s->active_name, sizeof(s->active_name), "(unreadable)");
	if (!o || !json_object_is_type(o, json_type_object))
		goto out;
	if (json_object_object_get_ex(o, "name", &f) &&
	    json_object_is_type(f, json_type_string))
		snprintf(s->active_name, sizeof(s->active_name), "%s",
			 json_object_get_string(f));
	if (json_object_object_get_ex(o, "epoch", &f) &&
	    json_object_is_type(f, json_type_int) &&
	    json_object_get_int64(f) >= 0 &&
	    json_object_get_int64(f) <= UINT32_MAX)
		s->active_epoch = json_object_get_int64(f);
	if (json_object_object_get_ex(o, "owner", &f) &&
	    json_object_is_type(f, json_type_string)) {
		errno = 0;
		s->active_owner = strtoull(json_object_get_string(f), &end, 16);
		if (errno || *end)
			s->active_owner = 0;
	}
out:
	json_object_put(o);
}

/* A write counted on its keys read back: say so. */
static void etcd_noted(struct krep_ha *ha)
{
	char note[640];

	if (krep_etcd_note(ha->e, note, sizeof(note)))
		krep_log(LOG_WARNING, "etcd: %s", note);
}

/* Won: P/controller, created at @create_rev, holds @epoch and our lease. */
static int take_office(struct krep_ha *ha, int64_t create_rev, uint32_t epoch)
{
	ha->active = true;
	ha->next_ka_ms = 0;	/* renew at once: the term starts with a full lease */
	ha->create_rev = create_rev;
	ha->epoch = epoch;
	memset(&ha->seen, 0, sizeof(ha->seen));
	krep_log(LOG_NOTICE, "etcd: elected: controller epoch %u (%s, lease %" PRIx64 ", %" PRId64 " s)",
		 ha->epoch, ha->ckey, ha->lease, ha->ttl_s);
	return 1;
}

static char *controller_value(struct krep_ha *ha, uint32_t epoch)
{
	json_object *o = json_object_new_object();
	char hex[20], *s = NULL;

	snprintf(hex, sizeof(hex), "%016" PRIx64, ha->owner);
	if (o && !json_object_object_add(o, "version", json_object_new_int(1)) &&
	    !json_object_object_add(o, "owner", json_object_new_string(hex)) &&
	    !json_object_object_add(o, "epoch", json_object_new_int64(epoch)) &&
	    !json_object_object_add(o, "name", json_object_new_string(ha->name)) &&
	    !json_object_object_add(o, "socket",
				    json_object_new_string(ha->socket)))
		s = strdup(json_object_to_json_string_ext(o,
				JSON_C_TO_STRING_PLAIN |
				JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return s;
}

static int campaign(struct krep_ha *ha)
{
	struct krep_etcd_kvs kvs;
	struct krep_etcd_txn *t;
	uint32_t old = 0;
	int64_t erev = 0, rev;
	char err[512], num[12], *val;
	bool ok = false;
	int ret;

	if (krep_etcd_range(ha->e, ha->ekey, false, &kvs, err, sizeof(err))) {
		etcd_fail(ha, "cannot read the controller epoch", err);
		return 0;
	}
	if (kvs.n) {
		erev = kvs.kv[0].mod_rev;
		if (sscanf(kvs.kv[0].value, "%10u", &old) != 1 ||
		    old == UINT32_MAX) {
			krep_log(LOG_ERR, "etcd: %s is '%.20s', not a controller epoch",
				 ha->ekey, kvs.kv[0].value);
			krep_etcd_kvs_free(&kvs);
			return -1;
		}
	}
	krep_etcd_kvs_free(&kvs);
	snprintf(num, sizeof(num), "%u", old + 1);
	val = controller_value(ha, old + 1);
	t = krep_etcd_txn_new();
	if (!val || !t ||
	    krep_etcd_txn_cmp(t, ha->ckey, KREP_ETCD_CREATE, 0) ||
	    krep_etcd_txn_cmp(t, ha->ekey, KREP_ETCD_MOD, erev) ||
	    krep_etcd_txn_put(t, ha->ckey, val, ha->lease) ||
	    krep_etcd_txn_put(t, ha->ekey, num, 0)) {
		free(val);
		krep_etcd_txn_free(t);
		krep_log(LOG_ERR, "%s", strerror(ENOMEM));
		return 0;
	}
	ret = krep_etcd_txn_commit(ha->e, t, &ok, &rev, err, sizeof(err));
	free(val);
	krep_etcd_txn_free(t);
	if (ret) {
		etcd_fail(ha, ret == -ETIMEDOUT ?
			  "campaign (the next round's read of the election key settles it)" :
			  "campaign", err);
		return 0;
	}
	if (!ok)
		return 0;	/* another one won: the next round reads it */
	etcd_noted(ha);
	return take_office(ha, rev, old + 1);
}

/*
 * P/controller (@kv, parsed into ha->seen) names this krepd: 1 when under
 * its lease (a campaign whose answer was lost won: take office); else 0,
 * that other lease of ours revoked (the key goes with it) for the next
 * round to campaign again.
 */
static int own_key(struct krep_ha *ha, const struct krep_etcd_kv *kv)
{
	char err[512];

	if (kv->lease == ha->lease && ha->seen.active_epoch) {
		krep_log(LOG_WARNING, "etcd: %s is this krepd's own (owner %016" PRIx64 ", lease %" PRIx64 "): its campaign won though the answer was lost: taking office",
			 ha->ckey, ha->owner, ha->lease);
		return take_office(ha, kv->create_rev, ha->seen.active_epoch);
	}
	krep_log(LOG_WARNING, "etcd: %s names this krepd (owner %016" PRIx64 ") under lease %" PRIx64 ", not its lease %" PRIx64 ": revoking that one, then campaigning again",
		 ha->ckey, ha->owner, kv->lease, ha->lease);
	if (kv->lease && krep_etcd_lease_revoke(ha->e, kv->lease, err,
						sizeof(err)))
		etcd_fail(ha, "cannot revoke the lease under the election key", err);
	memset(&ha->seen, 0, sizeof(ha->seen));
	return 0;
}

/* P/controller (@kv) as a standby read it: 1 when this krepd takes office. */
static int standby_saw(struct krep_ha *ha, const struct krep_etcd_kv *kv)
{
	struct krep_ha_info before = ha->seen;

	seen_parse(ha, kv);
	if (ha->owner && ha->seen.active_owner == ha->owner)
		return own_key(ha, kv);
	if (!before.known || before.active_epoch != ha->seen.active_epoch ||
	    strcmp(before.active_name, ha->seen.active_name))
		krep_log(LOG_NOTICE, "etcd: standby: the active controller is %s (epoch %u)",
			 ha->seen.active_name, ha->seen.active_epoch);
	return 0;
}

int krep_ha_round(struct krep_ha *ha, uint64_t owner)
{
	struct krep_etcd_kvs kvs;
	char err[512];
	int ret;

	ha->owner = owner;
	if (ha->active)
		return 1;
	if (!ha->lease || now_ms() >= ha->lease_until_ms) {
		if (grant(ha))
			return 0;
	} else {
		ret = keepalive(ha);
		if (ret == -ESTALE)
			ha->lease = 0;	/* a new one next round */
		if (ret)
			return 0;
	}
	if (krep_etcd_range(ha->e, ha->ckey, false, &kvs, err, sizeof(err))) {
		etcd_fail(ha, "cannot read the election key", err);
		return 0;
	}
	etcd_ok(ha);
	if (kvs.n) {
		ret = standby_saw(ha, &kvs.kv[0]);
		krep_etcd_kvs_free(&kvs);
		return ret;
	}
	krep_etcd_kvs_free(&kvs);
	return campaign(ha);
}

/* ---- active ------------------------------------------------------------ */

bool krep_ha_valid(struct krep_ha *ha)
{
	return ha->active && now_ms() < ha->lease_until_ms;
}

int krep_ha_tick(struct krep_ha *ha)
{
	int ret;

	if (!ha->active)
		return -ESTALE;
	if (now_ms() >= ha->lease_until_ms) {
		krep_log(LOG_ERR, "etcd: the controller lease ran out %" PRId64 " ms ago without a renewal (etcd out of reach, or this process stood still): stepping down",
			 now_ms() - ha->lease_until_ms);
		return -ESTALE;
	}
	ret = keepalive(ha);
	if (ret == -ESTALE) {
		krep_log(LOG_ERR, "etcd: the controller lease is gone: stepping down");
		return -ESTALE;
	}
	return 0;
}

void krep_ha_step_down(struct krep_ha *ha, bool resign)
{
	char err[512];

	if (ha->lease && krep_etcd_lease_revoke(ha->e, ha->lease, err,
						sizeof(err)) && resign)
		krep_log(LOG_WARNING, "etcd: cannot revoke the lease: %s (it runs out in %" PRId64 " s)",
			 err, ha->ttl_s);
	if (ha->active)
		krep_log(LOG_NOTICE, "etcd: %s (controller epoch %u)",
			 resign ? "resigned as the active controller" :
			 "stepped down: standby again", ha->epoch);
	ha->lease = 0;
	ha->active = false;
	ha->create_rev = 0;
}

int krep_ha_save(struct krep_ha *ha, const struct krep_state *st)
{
	char err[512];
	int ret;

	if (krep_ha_tick(ha))
		return -ESTALE;	/* logged */
	ret = krep_estore_save(ha->store, st, ha->ckey, ha->create_rev, err,
			       sizeof(err));
	if (ret == -ESTALE) {
		krep_log(LOG_ERR, "etcd: a write was refused (%s): stepping down",
			 err);
		return ret;
	}
	if (ret) {
		etcd_fail(ha, "cannot commit the controller's state (no decision goes out until it is written)",
			  err);
		return ret;
	}
	etcd_ok(ha);
	etcd_noted(ha);
	ha->epoch = st->controller_epoch;
	return 0;
}

void krep_ha_info(struct krep_ha *ha, struct krep_ha_info *info)
{
	*info = ha->seen;
	info->active = ha->active;
	info->name = ha->name;
	info->endpoint = krep_etcd_endpoint(ha->e);
	if (ha->active) {
		info->known = true;
		snprintf(info->active_name, sizeof(info->active_name), "%s",
			 ha->name);
		info->active_owner = ha->owner;
		info->active_epoch = ha->epoch;
	}
}

int krep_ha_registered(struct krep_ha *ha, uint32_t *ids, size_t max,
		       size_t *n)
{
	struct krep_etcd_kvs kvs;
	char key[160], err[512];
	size_t i, len;
	uint32_t id;
	int end;

	*n = 0;
	len = snprintf(key, sizeof(key), "%s/brokers/ids/", ha->prefix);
	if (krep_etcd_range(ha->e, key, true, &kvs, err, sizeof(err))) {
		etcd_fail(ha, "cannot read the brokers' registrations", err);
		return -EIO;
	}
	for (i = 0; i < kvs.n && *n < max; i++) {
		end = 0;
		if (sscanf(kvs.kv[i].key + len, "%10u%n", &id, &end) == 1 &&
		    !kvs.kv[i].key[len + end])
			ids[(*n)++] = id;
	}
	krep_etcd_kvs_free(&kvs);
	return 0;
}
