// SPDX-License-Identifier: GPL-2.0
/*
 * krepd --controller (controller.h): start-up, the poll loop, the
 * sessions to the brokers, the claims on them and fencing. The view of
 * the partitions and every decision on them is view.c's.
 *
 * Timers (all in the one poll() loop, on CLOCK_MONOTONIC):
 *   next_poll_ms   every poll-ms: read every broker, renew claims that are
 *                  lease-ms/3 old, fence/unfence, decide, propagate,
 *                  reconcile
 *   next_pref_ms   every preferred-election-interval-ms (unless 0): the
 *                  periodic preferred leader election
 *   next_open_ms   per broker: when to try opening its session again
 *                  (max(poll-ms, 1 s) after a failure)
 *
 * Log lines, one per decision (view.c adds the partitions' ones):
 *   broker N fenced: requests failing for T ms
 *   broker N fenced: brokers A,B have not seen it up for more than T ms
 *   broker N unfenced (...)
 *   broker N restarted (incarnation X -> Y): its logs are gone
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <linux/krep.h>

#include "attrs.h"
#include "controller.h"
#include "ep.h"
#include "json.h"
#include "log.h"
#include "view.h"

#define REOPEN_MIN_MS	1000

int64_t krep_ctl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct cbroker *krep_ctl_broker(struct ctl *c, uint32_t id)
{
	size_t i;

	for (i = 0; i < c->nb; i++)
		if (c->b[i].id == id)
			return &c->b[i];
	return NULL;
}

void krep_ctl_live(const struct ctl *c, struct krep_ids *live)
{
	size_t i;

	live->n = 0;
	for (i = 0; i < c->nb; i++)
		if (!c->b[i].fenced)
			live->id[live->n++] = c->b[i].id;
}

static void session_close(struct ctl *c, struct cbroker *b)
{
	krep_session_close(b->s);
	b->s = NULL;
	b->claimed = false;
	b->reachable = false;
	krep_view_forget_broker(c, b - c->b);
}

int krep_ctl_request(struct ctl *c, struct cbroker *b, struct nl_msg *req,
		     krep_genl_reply_fn fn, void *arg)
{
	int err;

	if (!b->s)
		return -ENOTCONN;
	err = krep_session_request(b->s, req, fn, arg, c->req_timeout_ms);
	/*
	 * The channel broke, or a broker did not answer in time (a dump it
	 * may still be sending would make the next one fail with EBUSY):
	 * open it again. A reply we could not parse leaves it open.
	 */
	if (err < 0 && !krep_session_status(b->s)->err && err != -EPROTO &&
	    err != -ENOMEM && err != -EMSGSIZE)
		session_close(c, b);
	return err;
}

const char *krep_ctl_err_str(const struct cbroker *b, int err, char *buf,
			     size_t size)
{
	const struct krep_genl_status *st = b->s ? krep_session_status(b->s) :
						   NULL;
	const char *kname = NULL;

	if (!st || !st->err) {
		snprintf(buf, size, "%s", strerror(-err));
		return buf;
	}
	if (st->ea.has_kerr)
		kname = krep_kafka_error_name(st->ea.kerr);
	snprintf(buf, size, "%s%s%.*s%s%s%s", strerror(-err),
		 st->ea.msg_len ? ": " : "", st->ea.msg_len,
		 st->ea.msg ? st->ea.msg : "", kname ? " [" : "",
		 kname ? kname : "", kname ? "]" : "");
	return buf;
}

static const char *addr_str(const struct krep_session_addr *a, char *buf,
			    size_t size)
{
	switch (a->kind) {
	case KREP_SESSION_LOCAL:
		snprintf(buf, size, "local");
		break;
	case KREP_SESSION_NETNS:
		snprintf(buf, size, "netns %s", a->netns);
		break;
	case KREP_SESSION_RELAY:
		snprintf(buf, size, "relay %s", a->relay);
		break;
	}
	return buf;
}

/* ---- reading the brokers ----------------------------------------------- */

static void broker_fail(struct cbroker *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* This poll could not read @b; say so once per distinct reason. */
static void broker_fail(struct cbroker *b, const char *fmt, ...)
{
	char msg[sizeof(b->last_err)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	b->reachable = false;
	if (b->has_snap)
		krep_snap_free(&b->snap);
	b->has_snap = false;
	if (strcmp(msg, b->last_err)) {
		snprintf(b->last_err, sizeof(b->last_err), "%s", msg);
		krep_log(LOG_WARNING, "broker %u: %s", b->id, msg);
	}
}

struct snap_ctx {
	struct ctl *c;
	struct cbroker *b;
};

static int snap_rq(void *arg, struct nl_msg *req, krep_genl_reply_fn fn,
		   void *fnarg)
{
	struct snap_ctx *x = arg;

	return krep_ctl_request(x->c, x->b, req, fn, fnarg);
}

static void incarnation(struct ctl *c, struct cbroker *b)
{
	uint64_t inc = b->snap.incarnation;

	if (!b->snap.has_incarnation)
		return;
	if (b->has_incarnation && b->incarnation == inc)
		return;
	if (b->has_incarnation) {
		krep_log(LOG_NOTICE, "broker %u restarted (incarnation %016" PRIx64 " -> %016" PRIx64 "): its logs are gone",
			 b->id, b->incarnation, inc);
		b->reborn = true;
		b->claimed = false;
		krep_view_forget_broker(c, b - c->b);
	} else {
		krep_log(LOG_INFO, "broker %u: incarnation %016" PRIx64,
			 b->id, inc);
	}
	b->has_incarnation = true;
	b->incarnation = inc;
	c->dirty = true;
}

static void poll_broker(struct ctl *c, struct cbroker *b, int64_t now)
{
	struct snap_ctx x = { c, b };
	const char *why = NULL;
	char buf[320];
	int err;

	if (b->s && krep_session_stale(b->s)) {
		krep_log(LOG_NOTICE, "broker %u: network namespace %s is gone or was replaced: session closed",
			 b->id, b->addr->netns);
		session_close(c, b);
	}
	if (!b->s) {
		if (now < b->next_open_ms) {
			broker_fail(b, "%s", b->last_err);
			return;
		}
		b->s = krep_session_open(b->addr, true, &why);
		if (!b->s) {
			b->next_open_ms = now + (c->cfg->poll_ms > REOPEN_MIN_MS ?
						 c->cfg->poll_ms : REOPEN_MIN_MS);
			broker_fail(b, "cannot reach it (%s): %s",
				    addr_str(b->addr, buf, sizeof(buf)), why);
			return;
		}
		krep_log(LOG_INFO, "broker %u: session open (%s%s)", b->id,
			 addr_str(b->addr, buf, sizeof(buf)),
			 krep_session_event_fd(b->s) < 0 ? ", no events" : "");
		b->claimed = false;
		krep_view_forget_broker(c, b - c->b);
	}
	if (b->has_snap)
		krep_snap_free(&b->snap);
	b->has_snap = false;
	err = krep_snap_take_via(snap_rq, &x, krep_session_family(b->s), NULL,
				 &b->snap);
	if (err) {
		broker_fail(b, "poll failed: %s",
			    krep_ctl_err_str(b, err, buf, sizeof(buf)));
		return;
	}
	if (!b->snap.has_broker_id || b->snap.broker_id != b->id) {
		if (b->snap.has_broker_id)
			snprintf(buf, sizeof(buf), "%u", b->snap.broker_id);
		else
			snprintf(buf, sizeof(buf), "not set");
		krep_snap_free(&b->snap);
		broker_fail(b, "its broker id is %s, not %u: not using it",
			    buf, b->id);
		return;
	}
	b->has_snap = true;
	b->reachable = true;
	b->last_ok_ms = now;
	if (b->last_err[0]) {
		krep_log(LOG_INFO, "broker %u: reachable", b->id);
		b->last_err[0] = '\0';
	}
	incarnation(c, b);
	/* a broker that lost our claim (restart, lease ran out) gets it again */
	if (!b->snap.has_claim || b->snap.claim_owner != c->owner ||
	    b->snap.claim_epoch != c->epoch || !b->snap.claim_lease_ms)
		b->claimed = false;
}

/* ---- claims ------------------------------------------------------------ */

static int claim(struct ctl *c, struct cbroker *b, uint32_t lease_ms)
{
	struct nl_msg *msg;
	struct nlattr *nest;
	int err;

	if (!b->s)
		return -ENOTCONN;
	msg = krep_genl_msg_new(krep_session_family(b->s), KREP_CMD_BROKER_SET,
				0, 64);
	if (!msg)
		return -ENOMEM;
	nest = nla_nest_start(msg, KREP_A_CONTROLLER | NLA_F_NESTED);
	if (!nest || nla_put_u32(msg, KREP_A_CTRL_EPOCH, c->epoch) ||
	    nla_put_u64(msg, KREP_A_CTRL_OWNER, c->owner) ||
	    nla_put_u32(msg, KREP_A_CTRL_LEASE_MS, lease_ms)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, nest);
	err = krep_ctl_request(c, b, msg, NULL, NULL);
	nlmsg_free(msg);
	if (!err) {
		b->claimed = lease_ms > 0;
		b->claim_ms = krep_ctl_now();
		b->claim_err[0] = '\0';
	}
	return err;
}

/* Log a failed claim once per distinct reason. */
static void claim_failed(struct cbroker *b, const char *why)
{
	if (!strcmp(why, b->claim_err))
		return;
	snprintf(b->claim_err, sizeof(b->claim_err), "%s", why);
	krep_log(LOG_WARNING, "broker %u: claim failed: %s", b->id, why);
}

/* Another controller holds @b: say who, and give up. */
static void refuse(struct cbroker *b)
{
	if (b->has_snap && b->snap.has_claim)
		krep_log(LOG_ERR, "broker %u is held by controller %016" PRIx64 " (epoch %u): another controller is active",
			 b->id, b->snap.claim_owner, b->snap.claim_epoch);
	else
		krep_log(LOG_ERR, "broker %u is held by another controller: another controller is active",
			 b->id);
}

/*
 * Claim every reachable broker that needs it (never claimed, lost it, or
 * the claim is lease/3 old). A claim refused with ESTALE means a broker
 * knew a higher controller epoch: take one above it and claim everything
 * again. Returns 0, or -EBUSY when another controller is active.
 */
static int claims(struct ctl *c, int64_t now)
{
	uint32_t renew = c->cfg->lease_ms / 3;
	struct cbroker *b;
	int pass, err;
	char buf[320];
	size_t i;

	/* --etcd: no claim is made or renewed unless our lease surely runs */
	if (c->ha && krep_ha_tick(c->ha)) {
		c->step_down = true;
		return -ESTALE;
	}
	for (pass = 0; pass < 3; pass++) {
		bool again = false;

		for (i = 0; i < c->nb; i++) {
			b = &c->b[i];
			if (!b->reachable || !b->s)
				continue;
			if (b->claimed && now - b->claim_ms < renew)
				continue;
			err = claim(c, b, c->cfg->lease_ms);
			if (!err)
				continue;
			if (err == -EBUSY && c->ha) {
				/* the last controller's lease still runs */
				claim_failed(b, krep_ctl_err_str(b, err, buf,
								 sizeof(buf)));
				continue;
			}
			if (err == -EBUSY) {
				refuse(b);
				return -EBUSY;
			}
			if (err == -ESTALE && c->ha && c->started) {
				/* only a newer election hands out a higher epoch */
				krep_log(LOG_ERR, "broker %u knows a controller epoch above %u: stepping down",
					 b->id, c->epoch);
				c->step_down = true;
				return -ESTALE;
			}
			if (err == -ESTALE) {
				uint32_t old = c->epoch;

				if (b->has_snap && b->snap.has_claim &&
				    b->snap.claim_epoch >= c->epoch)
					c->epoch = b->snap.claim_epoch + 1;
				else
					c->epoch++;
				krep_log(LOG_NOTICE, "controller epoch %u -> %u: broker %u knew a newer one",
					 old, c->epoch, b->id);
				c->dirty = true;
				for (size_t k = 0; k < c->nb; k++)
					c->b[k].claimed = false;
				again = true;
				break;
			}
			claim_failed(b, krep_ctl_err_str(b, err, buf, sizeof(buf)));
		}
		if (!again)
			return 0;
		if (krep_view_save(c))
			return 0;	/* retried at the next poll */
	}
	return 0;
}

static void release(struct ctl *c)
{
	size_t i;

	for (i = 0; i < c->nb; i++)
		if (c->b[i].s && c->b[i].claimed && !claim(c, &c->b[i], 0))
			c->b[i].claimed = false;
}

/* ---- fencing ----------------------------------------------------------- */

static int peer_state(const struct krep_snap *s, uint32_t id)
{
	size_t i;

	for (i = 0; i < s->npeers; i++)
		if (s->peers[i].id == id)
			return s->peers[i].state;
	return -2;	/* not a peer */
}

/* What each reachable broker says of its connection to each other one. */
static void opinions(struct ctl *c, int64_t now)
{
	struct cbroker *r;
	size_t i, j;
	int st;

	for (j = 0; j < c->nb; j++) {
		r = &c->b[j];
		for (i = 0; i < c->nb; i++) {
			st = i == j || !r->has_snap ? -2 :
			     peer_state(&r->snap, c->b[i].id);
			if (st == -2) {
				r->opinion[i] = false;
				r->down_since[i] = 0;
				continue;
			}
			r->opinion[i] = true;
			if (st == KREP_PEER_UP)
				r->down_since[i] = 0;
			else if (!r->down_since[i])
				r->down_since[i] = now;
		}
	}
}

/*
 * The reachable, unfenced brokers other than @i that have it as a peer:
 * how many, how many see it up, and whether all the others have not seen
 * it up for longer than the session timeout. Their names go to @who.
 */
static void witnesses(const struct ctl *c, size_t i, int64_t now,
		      int *n, int *up, bool *all_down, char *who, size_t size)
{
	const struct cbroker *r;
	size_t j, off = 0;

	*n = *up = 0;
	*all_down = true;
	if (who && size)
		who[0] = '\0';
	for (j = 0; j < c->nb; j++) {
		r = &c->b[j];
		if (j == i || !r->reachable || r->fenced || !r->opinion[i])
			continue;
		(*n)++;
		if (!r->down_since[i])
			(*up)++;
		if (!r->down_since[i] ||
		    now - r->down_since[i] <= c->cfg->session_timeout_ms)
			*all_down = false;
		if (who && off < size)
			off += snprintf(who + off, size - off, "%s%u",
					off ? "," : "", r->id);
	}
	if (!*n)
		*all_down = false;
}

bool krep_ctl_suspect(const struct ctl *c, const struct cbroker *b,
		      char *who, size_t size)
{
	bool all_down;
	int n, up;

	witnesses(c, b - c->b, krep_ctl_now(), &n, &up, &all_down, who, size);
	return n && !up;
}

/* How many partitions of the view @id leads. */
static size_t leads(const struct ctl *c, uint32_t id)
{
	size_t i, n = 0;

	for (i = 0; i < c->np; i++)
		n += c->parts[i].st.ps.leader == id;
	return n;
}

/*
 * Broker @i's witnesses all see it down for longer than the session
 * timeout, but one of them, @w, is in the same state towards @i and not
 * yet for that long (two brokers that lost each other, seen from each
 * side a poll apart): wait for both, so that the choice between them is
 * made on both, not by who was noticed first. Not for longer than another
 * session timeout.
 */
static bool held(const struct ctl *c, size_t i, int64_t now)
{
	const struct cbroker *b = &c->b[i], *w;
	bool all_down;
	int n, up;
	size_t j;

	for (j = 0; j < c->nb; j++) {
		w = &c->b[j];
		if (j == i || !w->reachable || w->fenced || !w->opinion[i] ||
		    !w->down_since[i] || !b->opinion[j] || !b->down_since[j])
			continue;
		if (now - w->down_since[i] > 2 * (int64_t)c->cfg->session_timeout_ms)
			continue;
		witnesses(c, j, now, &n, &up, &all_down, NULL, 0);
		if (n && !up && !all_down)
			return true;
	}
	return false;
}

/*
 * Fence brokers whose requests have failed for longer than the session
 * timeout; then, one at a time, brokers that every other reachable,
 * unfenced broker has not seen up for that long: of several, the one
 * leading the fewest partitions (then the lowest id), since once it is
 * fenced its own reports no longer count against the others. So a broker
 * cut off from two others is fenced, not the two; and of two brokers that
 * only lost each other (the third one gone too), the one that leads stays.
 * Unfence those that answer and that another broker sees up (or that no
 * other broker can tell about).
 */
static void fencing(struct ctl *c, int64_t now)
{
	uint32_t timeout = c->cfg->session_timeout_ms;
	struct cbroker *b;
	bool all_down;
	char who[256];
	ssize_t best;
	int n, up;
	size_t i;

	for (i = 0; i < c->nb; i++) {
		b = &c->b[i];
		if (b->fenced || b->reachable || now - b->last_ok_ms <= timeout)
			continue;
		krep_log(LOG_NOTICE, "broker %u fenced: requests failing for %" PRId64 " ms",
			 b->id, now - b->last_ok_ms);
		b->fenced = true;
		c->dirty = true;
		c->n->fencings++;
	}
	for (;;) {
		best = -1;
		for (i = 0; i < c->nb; i++) {
			b = &c->b[i];
			if (b->fenced)
				continue;
			witnesses(c, i, now, &n, &up, &all_down, NULL, 0);
			if (!all_down || held(c, i, now))
				continue;
			if (best < 0 || leads(c, b->id) < leads(c, c->b[best].id))
				best = i;
		}
		if (best < 0)
			break;
		b = &c->b[best];
		witnesses(c, best, now, &n, &up, &all_down, who, sizeof(who));
		krep_log(LOG_NOTICE, "broker %u fenced: broker%s %s %s not seen it up for more than %u ms",
			 b->id, n > 1 ? "s" : "", who, n > 1 ? "have" : "has",
			 timeout);
		b->fenced = true;
		c->dirty = true;
		c->n->fencings++;
	}
	for (i = 0; i < c->nb; i++) {
		b = &c->b[i];
		if (!b->fenced || !b->reachable)
			continue;
		witnesses(c, i, now, &n, &up, &all_down, who, sizeof(who));
		if (!up && n)
			continue;
		if (up)
			krep_log(LOG_NOTICE, "broker %u unfenced: it answers and %d of broker%s %s see%s it up",
				 b->id, up, n > 1 ? "s" : "", who,
				 up > 1 ? "" : "s");
		else
			krep_log(LOG_NOTICE, "broker %u unfenced: it answers (no other broker can tell)",
				 b->id);
		b->fenced = false;
		c->dirty = true;
	}
}

/* ---- the poll ---------------------------------------------------------- */

static void read_all(struct ctl *c)
{
	int64_t now = krep_ctl_now();
	size_t i;

	for (i = 0; i < c->nb; i++) {
		c->b[i].reborn = false;
		poll_broker(c, &c->b[i], now);
	}
}

/*
 * Everything after reading the brokers. Returns -EBUSY to stop, -ESTALE
 * to step down (--etcd).
 */
static int decide(struct ctl *c)
{
	int64_t now = krep_ctl_now();
	int err;

	err = claims(c, now);
	if (err)
		return err;
	opinions(c, now);
	fencing(c, now);
	krep_view_merge(c);
	krep_view_decide(c);
	krep_view_pending(c);
	krep_view_propagate(c);
	krep_ctl_topics_reconcile(c);
	krep_view_reconcile(c);
	if (c->cfg->preferred_ms && now >= c->next_pref_ms) {
		krep_view_preferred(c, NULL, -1, NULL);
		c->next_pref_ms = now + c->cfg->preferred_ms;
	}
	krep_view_save(c);
	return c->step_down ? -ESTALE : 0;
}

/* ---- the control socket ------------------------------------------------ */

/* --etcd: which krepd is active, as members of the first "brokers" line. */
static void ha_status(struct ctl *c, struct json *j)
{
	struct krep_ha_info hi;
	char hex[20];

	if (!c->ha)
		return;
	krep_ha_info(c->ha, &hi);
	json_key(j, "active");
	json_bool(j, hi.active);
	json_key(j, "name");
	json_str(j, hi.name);
	json_key(j, "etcd");
	json_str(j, hi.endpoint);
	json_key(j, "active_name");
	if (hi.known)
		json_str(j, hi.active_name);
	else
		json_null(j);
	json_key(j, "active_owner");
	snprintf(hex, sizeof(hex), "%016" PRIx64, hi.active_owner);
	if (hi.known)
		json_str(j, hex);
	else
		json_null(j);
	json_key(j, "active_epoch");
	if (hi.known)
		json_u64(j, hi.active_epoch);
	else
		json_null(j);
}

/* --etcd, standby: the "brokers" request's first line, and no brokers. */
static void serve_standby(const char *request, FILE *out, void *arg)
{
	struct ctl *c = arg;
	struct krep_ha_info hi;
	struct json j;

	if (strcmp(request, "brokers")) {
		krep_ha_info(c->ha, &hi);
		if (hi.known)
			fprintf(out, "error NOT_CONTROLLER: this krepd is a standby: the active controller is %s (epoch %u)\n",
				hi.active_name, hi.active_epoch);
		else
			fputs("error NOT_CONTROLLER: this krepd is a standby: no active controller known yet\n",
			      out);
		return;
	}
	json_init(&j, out);
	json_obj_begin(&j);
	json_key(&j, "controller_epoch");
	krep_ha_info(c->ha, &hi);
	json_u64(&j, hi.known ? hi.active_epoch : 0);
	ha_status(c, &j);
	json_obj_end(&j);
	fputs("\nok\n", out);
}

static void brokers_status(struct ctl *c, FILE *out)
{
	uint32_t reg[KREP_CTL_BROKERS];
	const struct cbroker *b;
	bool has_reg = false;
	size_t i, k, nreg = 0;
	char hex[20];
	struct json j;

	/* --etcd: which brokers the krepds beside them registered */
	if (c->ha)
		has_reg = !krep_ha_registered(c->ha, reg, KREP_CTL_BROKERS,
					      &nreg);

	json_init(&j, out);
	json_obj_begin(&j);
	json_key(&j, "controller_epoch");
	json_u64(&j, c->epoch);
	json_key(&j, "owner");
	snprintf(hex, sizeof(hex), "%016" PRIx64, c->owner);
	json_str(&j, hex);
	ha_status(c, &j);
	json_obj_end(&j);
	fputc('\n', out);
	for (i = 0; i < c->nb; i++) {
		b = &c->b[i];
		json_init(&j, out);
		json_obj_begin(&j);
		json_key(&j, "id");
		json_u64(&j, b->id);
		json_key(&j, "reachable");
		json_bool(&j, b->reachable);
		json_key(&j, "fenced");
		json_bool(&j, b->fenced);
		json_key(&j, "claimed");
		json_bool(&j, b->claimed);
		if (c->ha) {
			json_key(&j, "registered");
			for (k = 0; k < nreg && reg[k] != b->id; k++)
				;
			if (has_reg)
				json_bool(&j, k < nreg);
			else
				json_null(&j);
		}
		json_key(&j, "incarnation");
		if (b->has_incarnation) {
			snprintf(hex, sizeof(hex), "%016" PRIx64, b->incarnation);
			json_str(&j, hex);
		} else {
			json_null(&j);
		}
		json_obj_end(&j);
		fputc('\n', out);
	}
}

static void serve(const char *request, FILE *out, void *arg)
{
	char buf[KREP_CTLSOCK_LINE_MAX + 1], *w[6], *p, *save = NULL;
	struct ctl *c = arg;
	uint32_t part;
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", request);
	for (p = strtok_r(buf, " \t", &save); p && n < 6;
	     p = strtok_r(NULL, " \t", &save))
		w[n++] = p;
	if (p) {
		fputs("error INVALID_REQUEST: too many words in the request\n", out);
	} else if (n >= 1 && !strcmp(w[0], "topic-create")) {
		krep_ctl_topic_create(c, w + 1, n - 1, out);
	} else if (n == 2 && !strcmp(w[0], "topic-delete")) {
		krep_ctl_topic_delete(c, w[1], out);
	} else if (n == 1 && !strcmp(w[0], "status")) {
		krep_view_status(c, out);
		fputs("ok\n", out);
	} else if (n == 1 && !strcmp(w[0], "brokers")) {
		brokers_status(c, out);
		fputs("ok\n", out);
	} else if (n >= 1 && n <= 3 && !strcmp(w[0], "elect-preferred")) {
		if (n == 3 && krep_u32_parse(w[2], &part)) {
			fprintf(out, "error INVALID_REQUEST: '%s' is not a partition number\n",
				w[2]);
			return;
		}
		krep_view_preferred(c, n >= 2 ? w[1] : NULL,
				    n == 3 ? (int64_t)part : -1, out);
	} else {
		fprintf(out, "error INVALID_REQUEST: unknown request (status, brokers, elect-preferred [TOPIC [PARTITION]], topic-create NAME PARTITIONS RF [CONFIG], topic-delete NAME)\n");
	}
}

/* ---- start, run, stop -------------------------------------------------- */

static int signals_open(struct ctl *c)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGPIPE);
	if (sigprocmask(SIG_BLOCK, &set, NULL)) {
		krep_log(LOG_ERR, "sigprocmask: %s", strerror(errno));
		return -1;
	}
	sigdelset(&set, SIGPIPE);
	c->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (c->sfd < 0) {
		krep_log(LOG_ERR, "signalfd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* 1: stop, 0: go on. SIGUSR1 logs the view. */
static int signal_read(struct ctl *c)
{
	struct signalfd_siginfo si;
	char *text = NULL, *line, *save = NULL;
	size_t size = 0;
	FILE *f;

	while (read(c->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo != SIGUSR1) {
			krep_log(LOG_NOTICE, "received SIG%s, stopping",
				 sigabbrev_np(si.ssi_signo) ?: "?");
			return 1;
		}
		f = open_memstream(&text, &size);
		if (!f)
			continue;
		krep_view_status(c, f);
		if (!fclose(f))
			for (line = strtok_r(text, "\n", &save); line;
			     line = strtok_r(NULL, "\n", &save))
				krep_log(LOG_INFO, "view %s", line);
		free(text);
		text = NULL;
	}
	return 0;
}

/* A relative path stays valid once the daemon changed to "/". */
static int absolute(char *path, size_t size)
{
	char cwd[PATH_MAX], buf[PATH_MAX];

	if (path[0] == '/')
		return 0;
	if (!getcwd(cwd, sizeof(cwd)) ||
	    snprintf(buf, sizeof(buf), "%s/%s", cwd, path) >= (int)size)
		return -1;
	strcpy(path, buf);
	return 0;
}

static uint64_t owner_draw(void)
{
	uint64_t v = 0;

	while (!v)
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = 0;
	return v;
}

/* The state: from the state file (locked), or from etcd (--etcd). */
static int load(struct ctl *c, bool *had_state)
{
	struct krep_state st;
	char err[512];
	int ret;

	if (c->ha) {
		ret = krep_estore_load(krep_ha_store(c->ha), &st, err,
				       sizeof(err));
		if (ret) {
			krep_log(LOG_ERR, "etcd: cannot read the state: %s", err);
			return ret == -EPROTO ? -1 : -EAGAIN;
		}
		*had_state = st.nparts || st.ntopics || st.nbrokers;
		krep_view_load(c, &st);
		c->epoch = krep_ha_epoch(c->ha);
		krep_log(LOG_INFO, "state from etcd: controller epoch %u, %zu brokers, %zu topics, %zu partitions",
			 c->epoch, st.nbrokers, st.ntopics, st.nparts);
		krep_state_free(&st);
		return 0;
	}
	c->lockfd = krep_state_lock(c->cfg->state_file, err, sizeof(err));
	if (c->lockfd < 0) {
		krep_log(LOG_ERR, "%s", err);
		return -1;
	}
	ret = krep_state_load(c->cfg->state_file, &st, err, sizeof(err));
	if (ret && ret != -ENOENT) {
		krep_log(LOG_ERR, "%s", err);
		return -1;
	}
	*had_state = !ret;
	if (!ret) {
		krep_view_load(c, &st);
		c->epoch = st.controller_epoch;
		krep_log(LOG_INFO, "state from %s: controller epoch %u, %zu partitions",
			 c->cfg->state_file, st.controller_epoch, st.nparts);
		krep_state_free(&st);
	}
	return 0;
}

/*
 * Load the state, read the brokers, take the controller epoch and claim
 * them. Returns 0, -EBUSY (another controller is active), -EAGAIN (--etcd:
 * step down and campaign again) or -1.
 */
static int start(struct ctl *c, bool *had_state)
{
	char err[512];
	uint32_t max = 0;
	size_t i;
	int ret;

	if (absolute(c->cfg->state_file, sizeof(c->cfg->state_file)) ||
	    absolute(c->cfg->socket, sizeof(c->cfg->socket))) {
		krep_log(LOG_ERR, "state file or socket path too long");
		return -1;
	}
	ret = load(c, had_state);
	if (ret)
		return ret;
	if (!c->cs) {
		c->cs = krep_ctlsock_open(c->cfg->socket, err, sizeof(err));
		if (!c->cs) {
			krep_log(LOG_ERR, "%s", err);
			return -1;
		}
	}
	if (c->sfd < 0 && signals_open(c))
		return -1;
	if (!c->owner)
		c->owner = owner_draw();
	for (i = 0; i < c->nb; i++)
		c->b[i].last_ok_ms = krep_ctl_now();
	read_all(c);
	for (i = 0; i < c->nb; i++)
		if (c->b[i].has_snap && c->b[i].snap.has_claim &&
		    c->b[i].snap.claim_epoch > max)
			max = c->b[i].snap.claim_epoch;
	/* with --etcd the election bumped it; above any broker's, still */
	if (!c->ha || max >= c->epoch)
		c->epoch = (max > c->epoch ? max : c->epoch) + 1;
	c->dirty = true;
	/* the epoch is written down before any broker sees it */
	if (krep_view_save(c))
		return c->ha ? -EAGAIN : -1;
	krep_log(LOG_NOTICE, "krepd controller: epoch %u, owner %016" PRIx64 ", %zu brokers, session timeout %u ms, poll %u ms, lease %u ms",
		 c->epoch, c->owner, c->nb, c->cfg->session_timeout_ms,
		 c->cfg->poll_ms, c->cfg->lease_ms);
	ret = claims(c, krep_ctl_now());
	if (ret)
		return ret == -ESTALE ? -EAGAIN : ret;
	c->started = true;
	return 0;
}

/* run()'s result besides 0 (stopped by a signal) and 1 (error) */
#define RUN_STEP_DOWN	2

/*
 * --metrics: its fds after the @n of @pfd (room for KREP_METRICS_NFDS
 * more), and *@timeout (ms, -1: none) lowered to its own. Returns the
 * new count.
 */
static nfds_t metrics_fds(struct ctl *c, struct pollfd *pfd, nfds_t n,
			  int *timeout)
{
	int t;

	if (!c->metrics)
		return n;
	t = krep_metrics_timeout(c->metrics);
	if (*timeout < 0 || t < *timeout)
		*timeout = t;
	return n + krep_metrics_pollfds(c->metrics, pfd + n);
}

/* --metrics: serve what poll() said of its fds, from @base to @n. */
static void metrics_serve(struct ctl *c, struct pollfd *pfd, nfds_t base,
			  nfds_t n)
{
	if (c->metrics)
		krep_metrics_handle(c->metrics, pfd + base, n - base);
}

static int run(struct ctl *c)
{
	struct pollfd pfd[2 + KREP_CTL_BROKERS + KREP_METRICS_NFDS];
	struct cbroker *who[2 + KREP_CTL_BROKERS];
	struct krep_view_from from;
	int64_t now;
	nfds_t n, nev;
	size_t i;
	int err, fd, timeout;

	c->next_poll_ms = krep_ctl_now();
	c->next_pref_ms = c->next_poll_ms + c->cfg->preferred_ms;
	for (;;) {
		n = 0;
		pfd[n++] = (struct pollfd){ .fd = c->sfd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = krep_ctlsock_fd(c->cs),
					    .events = POLLIN };
		for (i = 0; i < c->nb; i++) {
			fd = c->b[i].s ? krep_session_event_fd(c->b[i].s) : -1;
			if (fd < 0)
				continue;
			who[n] = &c->b[i];
			pfd[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
		}
		nev = n;
		now = krep_ctl_now();
		timeout = c->next_poll_ms > now ? (int)(c->next_poll_ms - now) : 0;
		n = metrics_fds(c, pfd, nev, &timeout);
		if (poll(pfd, n, timeout) < 0 &&
		    errno != EINTR) {
			krep_log(LOG_ERR, "poll: %s", strerror(errno));
			return 1;
		}
		if (pfd[0].revents && signal_read(c))
			return 0;
		/* --etcd: nothing more unless the lease surely runs */
		if (c->ha && krep_ha_tick(c->ha))
			return RUN_STEP_DOWN;
		metrics_serve(c, pfd, nev, n);
		for (i = 2; i < nev; i++) {
			if (!pfd[i].revents || !who[i]->s)
				continue;
			from = (struct krep_view_from){ c, who[i] };
			err = krep_session_read_events(who[i]->s,
						       krep_view_event, &from);
			if (err == -ENOBUFS) {
				krep_log(LOG_INFO, "broker %u: events were lost; the next poll reads pending ISR changes",
					 who[i]->id);
			} else if (err) {
				krep_log(LOG_WARNING, "broker %u: reading events: %s: session closed",
					 who[i]->id, strerror(-err));
				session_close(c, who[i]);
			}
		}
		if (nev > 2)
			krep_view_propagate(c);	/* commits from events */
		if (pfd[1].revents)
			krep_ctlsock_serve(c->cs, serve, c);
		if (c->step_down)
			return RUN_STEP_DOWN;
		now = krep_ctl_now();
		if (now >= c->next_poll_ms) {
			c->next_poll_ms = now + c->cfg->poll_ms;
			read_all(c);
			err = decide(c);
			if (err == -ESTALE)
				return RUN_STEP_DOWN;
			if (err)
				return 1;
		}
	}
}

/*
 * What --metrics reads at a scrape: the controller of the current term
 * (run_etcd() makes a new one for each) and the counters of them all.
 */
struct ctl_run {
	struct ctl *c;
	struct krep_ctl_counters n;
	struct krep_metrics *metrics;
};

static struct ctl_run the_run;

static void figures(void *arg, struct krep_ctl_figures *cf)
{
	static const struct krep_tconf dflt = { .min_isr = 1 };
	const struct krep_state_topic *t;
	struct ctl_run *r = arg;
	const struct krep_pstate *ps;
	struct ctl *c = r->c;
	struct krep_ha_info hi;
	size_t i;

	cf->n = r->n;
	if (!c)
		return;
	cf->active = c->started && !c->step_down;
	if (!cf->active) {
		if (c->ha) {
			krep_ha_info(c->ha, &hi);
			cf->has_epoch = hi.known;
			cf->epoch = hi.active_epoch;
		}
		return;
	}
	cf->has_epoch = true;
	cf->epoch = c->epoch;
	cf->has_view = true;
	cf->brokers = c->nb;
	for (i = 0; i < c->nb; i++) {
		cf->fenced_brokers += c->b[i].fenced;
		cf->unreachable_brokers += !c->b[i].reachable;
	}
	cf->partitions = c->np;
	for (i = 0; i < c->np; i++) {
		ps = &c->parts[i].st.ps;
		t = krep_view_topic(c, c->parts[i].st.topic);
		cf->offline_partitions += ps->leader == KREP_NO_LEADER;
		cf->under_replicated_partitions += ps->isr.n < ps->ar.n;
		cf->under_min_isr_partitions +=
			ps->isr.n < krep_elect_min_isr(ps, t ? &t->tc : &dflt);
	}
}

static struct ctl *ctl_new(struct krep_cluster *cfg)
{
	struct ctl *c;
	size_t i, j;

	c = calloc(1, sizeof(*c));
	if (!c) {
		krep_log(LOG_ERR, "%s", strerror(ENOMEM));
		return NULL;
	}
	c->cfg = cfg;
	c->n = &the_run.n;
	c->metrics = the_run.metrics;
	the_run.c = c;
	c->lockfd = c->sfd = -1;
	c->req_timeout_ms = cfg->session_timeout_ms / 4;
	if (c->req_timeout_ms < 200)
		c->req_timeout_ms = 200;
	if (c->req_timeout_ms > 5000)
		c->req_timeout_ms = 5000;
	/* brokers in id order: fencing looks at them in that order */
	for (i = 0; i < cfg->nbrokers; i++) {
		for (j = c->nb; j > 0 && c->b[j - 1].id > cfg->brokers[i].id; j--)
			c->b[j] = c->b[j - 1];
		memset(&c->b[j], 0, sizeof(c->b[j]));
		c->b[j].id = cfg->brokers[i].id;
		c->b[j].addr = &cfg->brokers[i].addr;
		c->nb++;
	}
	return c;
}

/* Everything but the control socket, the signalfd and the election. */
static void ctl_free(struct ctl *c)
{
	size_t i;

	for (i = 0; i < c->nb; i++) {
		krep_session_close(c->b[i].s);
		if (c->b[i].has_snap)
			krep_snap_free(&c->b[i].snap);
	}
	if (c->lockfd >= 0)
		close(c->lockfd);
	free(c->parts);
	free(c->topics);
	if (the_run.c == c)
		the_run.c = NULL;
	free(c);
}

static void ctl_close(struct ctl *c)
{
	krep_ctlsock_close(c->cs);
	if (c->sfd >= 0)
		close(c->sfd);
	ctl_free(c);
}

/* One host: the state file, one controller. */
static int run_one_host(struct krep_cluster *cfg, bool foreground)
{
	struct ctl *c;
	bool had_state = false;
	int ret;

	c = ctl_new(cfg);
	if (!c)
		return 1;
	ret = start(c, &had_state);
	if (ret == -EBUSY) {
		release(c);
		ret = 1;
		goto out;
	}
	if (ret) {
		ret = 1;
		goto out;
	}
	if (!had_state)
		krep_log(LOG_INFO, "no state file yet: adopting the brokers' view");
	if (!foreground) {
		if (daemon(0, 0)) {
			krep_log(LOG_ERR, "daemon: %s", strerror(errno));
			release(c);
			ret = 1;
			goto out;
		}
		krep_log_syslog("krepd");
	}
	if (decide(c)) {
		release(c);
		ret = 1;
		goto out;
	}
	ret = run(c);
	release(c);
	c->dirty = true;
	if (krep_view_save(c))
		ret = 1;
out:
	ctl_close(c);
	return ret;
}

/*
 * --etcd, standby: one election round every poll-ms, serving the control
 * socket, until this krepd wins (1), a stop signal (0) or an error (-1).
 */
static int standby(struct ctl *c)
{
	struct pollfd pfd[2 + KREP_METRICS_NFDS] = { { .fd = -1 } };
	int64_t next = 0, now;
	int ret, timeout;
	nfds_t n;

	for (;;) {
		/* a request woke it: a round too; not a scrape or its timer */
		now = krep_ctl_now();
		if (now >= next || pfd[1].revents) {
			ret = krep_ha_round(c->ha, c->owner);
			if (ret)
				return ret;
			now = krep_ctl_now();
			next = now + c->cfg->poll_ms;
		}
		pfd[0] = (struct pollfd){ .fd = c->sfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = krep_ctlsock_fd(c->cs),
					  .events = POLLIN };
		timeout = next > now ? (int)(next - now) : 0;
		n = metrics_fds(c, pfd, 2, &timeout);
		if (poll(pfd, n, timeout) < 0 && errno != EINTR) {
			krep_log(LOG_ERR, "poll: %s", strerror(errno));
			return -1;
		}
		if (pfd[0].revents && signal_read(c))
			return 0;
		if (pfd[1].revents)
			krep_ctlsock_serve(c->cs, serve_standby, c);
		metrics_serve(c, pfd, 2, n);
	}
}

/*
 * --etcd: standby until elected, active until the election is lost (then
 * standby again), until a stop signal.
 */
static int run_etcd(struct krep_cluster *cfg, bool foreground)
{
	struct krep_ctlsock *cs = NULL;
	struct krep_ha *ha;
	struct ctl *c;
	bool had_state;
	int sfd, ret;
	char err[512];

	ha = krep_ha_open(&cfg->ha, cfg->lease_ms, cfg->socket);
	if (!ha)
		return 1;
	c = ctl_new(cfg);
	if (!c) {
		krep_ha_close(ha);
		return 1;
	}
	c->ha = ha;
	if (absolute(cfg->socket, sizeof(cfg->socket))) {
		krep_log(LOG_ERR, "socket path too long");
		ret = 1;
		goto out;
	}
	c->cs = krep_ctlsock_open(cfg->socket, err, sizeof(err));
	if (!c->cs) {
		krep_log(LOG_ERR, "%s", err);
		ret = 1;
		goto out;
	}
	if (signals_open(c)) {
		ret = 1;
		goto out;
	}
	if (!foreground) {
		if (daemon(0, 0)) {
			krep_log(LOG_ERR, "daemon: %s", strerror(errno));
			ret = 1;
			goto out;
		}
		krep_log_syslog("krepd");
	}
	krep_log(LOG_NOTICE, "krepd controller on etcd %s, prefix %s, request timeout %u ms: standby until elected",
		 cfg->ha.endpoints, cfg->ha.prefix,
		 krep_ha_timeout_ms(&cfg->ha, cfg->lease_ms));
	for (;;) {
		c->owner = owner_draw();
		ret = standby(c);
		if (ret <= 0) {
			krep_ha_step_down(ha, false);	/* the standby's lease */
			ret = ret ? 1 : 0;
			break;
		}
		had_state = false;
		ret = start(c, &had_state);
		if (!ret) {
			if (!had_state)
				krep_log(LOG_INFO, "nothing in etcd yet: adopting the brokers' view");
			ret = decide(c) == -ESTALE ? RUN_STEP_DOWN : 0;
			if (!ret && !c->step_down)
				ret = run(c);
			else
				ret = RUN_STEP_DOWN;
		} else if (ret == -EAGAIN || ret == -EBUSY) {
			ret = RUN_STEP_DOWN;
		} else {
			ret = 1;
		}
		/* the next controller need not wait for our claims to run out */
		release(c);
		if (ret != RUN_STEP_DOWN) {
			krep_ha_step_down(ha, true);
			break;
		}
		krep_ha_step_down(ha, false);
		/* a fresh view for the next term; the socket and signals stay */
		cs = c->cs;
		sfd = c->sfd;
		c->cs = NULL;
		c->sfd = -1;
		ctl_free(c);
		c = ctl_new(cfg);
		if (!c) {
			krep_ctlsock_close(cs);
			close(sfd);
			krep_ha_close(ha);
			return 1;
		}
		c->ha = ha;
		c->cs = cs;
		c->sfd = sfd;
	}
out:
	ctl_close(c);
	krep_ha_close(ha);
	return ret;
}

int krep_controller_run(struct krep_cluster *cfg, bool foreground,
			struct krep_metrics *metrics)
{
	the_run.metrics = metrics;
	if (metrics)
		krep_metrics_controller(metrics, figures, &the_run);
	if (cfg->ha.endpoints[0])
		return run_etcd(cfg, foreground);
	return run_one_host(cfg, foreground);
}
