// SPDX-License-Identifier: GPL-2.0
/*
 * krepd --controller: the topics it creates and deletes (view.h).
 *
 * "topic-create NAME PARTITIONS RF [CONFIG]" on the control socket
 * assigns the replicas over the unfenced brokers by Kafka's rule
 * (assign.h, a random start as Kafka draws it), writes the topic and its
 * partitions (preferred replica leading at leader epoch 0, ISR = AR) to
 * the state file, then sends every reachable broker TOPIC_NEW with the
 * assignment and the controller epoch -- its replicas wait, with no
 * leader, for the LEADER_AND_ISR that follows. A broker that could not be
 * reached gets the topic when it can (every poll, from the state file's
 * record), and so does one that came back empty (a new incarnation) or
 * lost the topic otherwise: first it leaves the topic's ISRs and ELRs (a
 * new leader where it led), since it holds none of their records. Which
 * brokers had the topic once is in the state file ("held"): one that
 * never had it has nothing to lose and stays in the ISRs.
 *
 * "topic-delete NAME" marks the topic as being deleted in the state file,
 * drops its partitions from the view and sends TOPIC_DEL to every broker
 * that has it, again every poll until none has; then the record goes.
 *
 * Log lines:
 *   topic NAME created: P partitions, RF replicas (on brokers A,B; C later)
 *   topic NAME: created on broker N (it had missed it)
 *   topic NAME: TOPIC_NEW to broker N failed: why          (once per reason)
 *   topic NAME: deleting (...); topic NAME: deleted from every broker
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <linux/krep.h>

#include "assign.h"
#include "attrs.h"
#include "ep.h"
#include "json.h"
#include "log.h"
#include "view.h"

#define PARTITIONS_MAX	1024	/* the kernel's KREP_PARTITIONS_MAX */

/* Kafka's topic name rule, as the kernel checks it. */
static const char *name_check(const char *name)
{
	size_t i, n = strlen(name);

	if (!n || n > KREP_TOPIC_NAME_MAX)
		return "a topic name has 1..249 characters";
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return "a topic name cannot be '.' or '..'";
	for (i = 0; i < n; i++) {
		char ch = name[i];

		if (!(ch >= 'a' && ch <= 'z') && !(ch >= 'A' && ch <= 'Z') &&
		    !(ch >= '0' && ch <= '9') && ch != '.' && ch != '_' &&
		    ch != '-')
			return "a topic name holds only [a-zA-Z0-9._-]";
	}
	return NULL;
}

/*
 * TOPIC_NEW of @t with the view's assignment, to broker @b. Returns 0 or
 * -errno; *@why is set when the request did not go out (else the
 * broker's answer is in its session status).
 */
static int send_topic_new(struct ctl *c, struct cbroker *b,
			  struct krep_state_topic *t, const char **why)
{
	struct nlattr *nest;
	struct nl_msg *msg;
	struct cpart *p;
	uint32_t i;
	int err;

	*why = "out of memory";
	msg = krep_genl_msg_new(krep_session_family(b->s), KREP_CMD_TOPIC_NEW,
				0, 512 + t->partitions * (8 + t->rf * 8));
	if (!msg)
		return -ENOMEM;
	if (nla_put_string(msg, KREP_A_TOPIC, t->name) ||
	    nla_put_u32(msg, KREP_A_PARTITIONS, t->partitions) ||
	    nla_put_u32(msg, KREP_A_REPLICATION_FACTOR, t->rf) ||
	    nla_put_u32(msg, KREP_A_CONTROLLER_EPOCH, c->epoch) ||
	    krep_tconfig_put(msg, &t->cfg))
		goto full;
	nest = nla_nest_start(msg, KREP_A_ASSIGNMENT | NLA_F_NESTED);
	if (!nest)
		goto full;
	for (i = 0; i < t->partitions; i++) {
		p = krep_view_part(c, t->name, i);
		if (!p || p->st.ps.ar.n != t->rf) {
			nlmsg_free(msg);
			*why = "a partition of the topic is missing from krepd's view or its state file";
			return -EINVAL;
		}
		if (krep_view_put_ids(msg, KREP_A_REPLICAS, &p->st.ps.ar))
			goto full;
	}
	nla_nest_end(msg, nest);
	*why = NULL;
	err = krep_ctl_request(c, b, msg, NULL, NULL);
	nlmsg_free(msg);
	if (!err && !krep_ids_has(&t->held, b->id)) {
		krep_ids_add(&t->held, b->id);
		c->dirty = true;
	}
	return err;
full:
	nlmsg_free(msg);
	*why = "the topic does not fit in one netlink message";
	return -EMSGSIZE;
}

/* Some broker's last poll reported topic @name. */
static bool on_some_broker(const struct ctl *c, const char *name)
{
	size_t k;

	for (k = 0; k < c->nb; k++)
		if (c->b[k].has_snap && krep_snap_topic(&c->b[k].snap, name))
			return true;
	return false;
}

static int send_topic_del(struct ctl *c, struct cbroker *b, const char *name)
{
	struct nl_msg *msg;
	int err;

	msg = krep_genl_msg_new(krep_session_family(b->s), KREP_CMD_TOPIC_DEL,
				0, 512);
	if (!msg)
		return -ENOMEM;
	if (nla_put_string(msg, KREP_A_TOPIC, name)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	err = krep_ctl_request(c, b, msg, NULL, NULL);
	nlmsg_free(msg);
	return err;
}

/* "A,B" + ",ID" */
static void id_append(char *buf, size_t size, uint32_t id)
{
	size_t n = strlen(buf);

	snprintf(buf + n, size - n, "%s%u", n ? "," : "", id);
}

static void put_broker_result(FILE *out, uint32_t id, bool done,
			      const char *err)
{
	struct json j;

	json_init(&j, out);
	json_obj_begin(&j);
	json_key(&j, "broker");
	json_u64(&j, id);
	json_key(&j, "done");
	json_bool(&j, done);
	json_key(&j, "error");
	if (err)
		json_str(&j, err);
	else
		json_null(&j);
	json_obj_end(&j);
	fputc('\n', out);
}

static void put_partition(FILE *out, const struct cpart *p)
{
	struct json j;
	uint32_t i;

	json_init(&j, out);
	json_obj_begin(&j);
	json_key(&j, "topic");
	json_str(&j, p->st.topic);
	json_key(&j, "partition");
	json_u64(&j, p->st.partition);
	json_key(&j, "replicas");
	json_arr_begin(&j);
	for (i = 0; i < p->st.ps.ar.n; i++)
		json_u64(&j, p->st.ps.ar.id[i]);
	json_arr_end(&j);
	json_obj_end(&j);
	fputc('\n', out);
}

/* @t's record and partitions from an assignment over the live brokers. */
static int topic_build(struct ctl *c, const char *name, uint32_t np,
		       uint32_t rf, const struct krep_tconfig *cfg,
		       const char **why)
{
	uint32_t rnd[2] = { 0, 0 }, *ar, i, j;
	struct krep_state_topic *t;
	struct krep_ids live;
	struct cpart *p;

	krep_ctl_live(c, &live);	/* by id: c->b is sorted */
	if (rf > live.n) {
		*why = "INVALID_REPLICATION_FACTOR: replication factor larger than the number of live brokers";
		return -EINVAL;
	}
	ar = calloc((size_t)np * rf, sizeof(*ar));
	t = ar ? krep_view_topic_add(c, name) : NULL;
	if (!t) {
		free(ar);
		*why = "UNKNOWN_SERVER_ERROR: out of memory";
		return -ENOMEM;
	}
	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd[0] = rnd[1] = (uint32_t)krep_ctl_now();
	krep_assign(live.id, live.n, np, rf, rnd[0], rnd[1], ar);
	t->managed = true;
	t->partitions = np;
	t->rf = rf;
	t->cfg = *cfg;
	t->tc.min_isr = cfg->has[KREP_TCFG_MIN_INSYNC_REPLICAS] ?
			cfg->v[KREP_TCFG_MIN_INSYNC_REPLICAS] : 1;
	t->tc.unclean = cfg->has[KREP_TCFG_UNCLEAN_LEADER_ELECTION] &&
			cfg->v[KREP_TCFG_UNCLEAN_LEADER_ELECTION];
	for (i = 0; i < np; i++) {
		p = krep_view_part_add(c, name, i);
		if (!p) {
			free(ar);
			krep_view_topic_drop(c, name, false);
			*why = "UNKNOWN_SERVER_ERROR: out of memory";
			return -ENOMEM;
		}
		p->st.ps.ar.n = 0;
		for (j = 0; j < rf; j++)
			krep_ids_add(&p->st.ps.ar, ar[(size_t)i * rf + j]);
		p->st.ps.isr = p->st.ps.ar;
		p->st.ps.elr.n = 0;
		p->st.ps.leader = p->st.ps.ar.id[0];
		p->st.ps.leader_epoch = 0;
		p->st.ps.partition_epoch = 0;
		krep_view_part_changed(c, p);
	}
	free(ar);
	return 0;
}

void krep_ctl_topic_create(struct ctl *c, char **w, int n, FILE *out)
{
	char why_buf[256], ids_ok[256] = "", ids_later[256] = "";
	char ids_failed[256] = "";
	struct krep_tconfig cfg = { 0 };
	struct krep_state_topic *t;
	const char *name, *why = NULL;
	uint32_t np, rf, i;
	struct cbroker *b;
	size_t ok = 0, k;
	int err;

	if (n < 3 || n > 4) {
		fputs("error INVALID_REQUEST: usage: topic-create NAME PARTITIONS RF [CONFIG]\n",
		      out);
		return;
	}
	name = w[0];
	why = name_check(name);
	if (why) {
		fprintf(out, "error INVALID_TOPIC_EXCEPTION: %s\n", why);
		return;
	}
	if (krep_u32_parse(w[1], &np) || !np || np > PARTITIONS_MAX) {
		fputs("error INVALID_PARTITIONS: partitions must be 1..1024\n",
		      out);
		return;
	}
	if (krep_u32_parse(w[2], &rf) || !rf || rf > KREP_ELECT_MAX) {
		fputs("error INVALID_REPLICATION_FACTOR: replication factor must be 1..65\n",
		      out);
		return;
	}
	if (n == 4 &&
	    (krep_tconfig_parse(w[3], &cfg, why_buf, sizeof(why_buf)) ||
	     krep_tconfig_check(&cfg, why_buf, sizeof(why_buf)))) {
		fprintf(out, "error INVALID_CONFIG: %s\n", why_buf);
		return;
	}
	if (!c->started) {
		fputs("error NOT_CONTROLLER: not the controller yet: no claims held\n", out);
		return;
	}
	t = krep_view_topic(c, name);
	if (t && t->deleting) {
		fputs("error TOPIC_ALREADY_EXISTS: the topic is still being deleted\n",
		      out);
		return;
	}
	if (krep_view_part(c, name, 0) || (t && t->managed) ||
	    on_some_broker(c, name)) {
		fputs("error TOPIC_ALREADY_EXISTS: topic already exists\n", out);
		return;
	}
	if (t)	/* a topic the brokers had once, without partitions now */
		krep_view_topic_drop(c, name, false);
	err = topic_build(c, name, np, rf, &cfg, &why);
	if (err) {
		fprintf(out, "error %s\n", why);
		return;
	}
	if (krep_view_save(c)) {
		/* still dirty: what else was not written is written later */
		krep_view_topic_drop(c, name, false);
		fputs("error KAFKA_STORAGE_ERROR: cannot write the state file: nothing was created\n",
		      out);
		return;
	}
	t = krep_view_topic(c, name);
	for (i = 0; i < np; i++)
		put_partition(out, krep_view_part(c, name, i));
	for (k = 0; k < c->nb; k++) {
		b = &c->b[k];
		if (!krep_view_can_send(b)) {
			put_broker_result(out, b->id, false,
					  "not reachable now: it gets the topic when it is");
			id_append(ids_later, sizeof(ids_later), b->id);
			continue;
		}
		err = send_topic_new(c, b, t, &why);
		if (err && !why)
			why = krep_ctl_err_str(b, err, why_buf, sizeof(why_buf));
		put_broker_result(out, b->id, !err, why);
		if (!err)
			ok++;
		/* EEXIST: it has a topic of that name already, not ours */
		id_append(!err ? ids_ok : err == -EEXIST ? ids_failed :
			  ids_later, sizeof(ids_ok), b->id);
	}
	krep_log(LOG_NOTICE, "topic %s created: %u partition%s, %u replica%s (on broker%s %s%s%s%s%s%s%s)",
		 name, np, np == 1 ? "" : "s", rf, rf == 1 ? "" : "s",
		 ok == 1 ? "" : "s", ids_ok[0] ? ids_ok : "none",
		 ids_later[0] ? "; " : "", ids_later, ids_later[0] ? " later" : "",
		 ids_failed[0] ? "; refused by " : "", ids_failed,
		 ids_failed[0] ? ", which has a topic of that name" : "");
	krep_view_propagate(c);		/* LEADER_AND_ISR to every replica */
	fputs("ok\n", out);
}

void krep_ctl_topic_delete(struct ctl *c, const char *name, FILE *out)
{
	struct krep_state_topic *t = krep_view_topic(c, name);
	char why_buf[256];
	struct cbroker *b;
	bool known;
	size_t k;
	int err;

	if (!c->started) {
		fputs("error NOT_CONTROLLER: not the controller yet: no claims held\n", out);
		return;
	}
	if (t && t->deleting) {
		fputs("error UNKNOWN_TOPIC_OR_PARTITION: the topic is already being deleted\n", out);
		return;
	}
	known = t || krep_view_part(c, name, 0);
	if (!known) {
		fputs("error UNKNOWN_TOPIC_OR_PARTITION: no such topic\n", out);
		return;
	}
	if (!t)
		t = krep_view_topic_add(c, name);
	if (!t) {
		fputs("error UNKNOWN_SERVER_ERROR: out of memory\n", out);
		return;
	}
	t->deleting = true;
	krep_view_topic_drop(c, name, true);
	if (krep_view_save(c)) {
		fputs("error KAFKA_STORAGE_ERROR: cannot write the state file: nothing was deleted yet (krepd retries)\n",
		      out);
		return;
	}
	krep_log(LOG_NOTICE, "topic %s: deleting", name);
	for (k = 0; k < c->nb; k++) {
		b = &c->b[k];
		if (!krep_view_can_send(b)) {
			put_broker_result(out, b->id, false,
					  "not reachable now: deleted when it is");
			continue;
		}
		err = send_topic_del(c, b, name);
		if (err == -ENOENT)
			err = 0;	/* never had it */
		put_broker_result(out, b->id, !err, err ?
				  krep_ctl_err_str(b, err, why_buf,
						   sizeof(why_buf)) : NULL);
	}
	fputs("ok\n", out);
}

/*
 * Log a failure towards broker @b once while it stays the same (one line
 * is kept per broker: two topics failing there both log every poll).
 */
static void topic_failed(struct cbroker *b, const char *what,
			 const char *name, int err, const char *local)
{
	char why[256], line[512];

	snprintf(line, sizeof(line), "topic %s: %s to broker %u failed: %s",
		 name, what, b->id,
		 local ? local : krep_ctl_err_str(b, err, why, sizeof(why)));
	if (strcmp(line, b->topic_err)) {
		snprintf(b->topic_err, sizeof(b->topic_err), "%s", line);
		krep_log(LOG_WARNING, "%s", line);
	}
}

/* One topic of krep_ctl_topics_reconcile(); false once @t is dropped. */
static bool topic_reconcile(struct ctl *c, struct krep_state_topic *t)
{
	bool all = true, present = false;
	const char *why;
	struct cbroker *b;
	size_t k;
	int err;

	for (k = 0; k < c->nb; k++) {
		b = &c->b[k];
		if (!b->has_snap) {
			all = false;
			continue;
		}
		present = krep_snap_topic(&b->snap, t->name);
		if (present && !t->deleting && !krep_ids_has(&t->held, b->id)) {
			krep_ids_add(&t->held, b->id);	/* one of 65 brokers */
			c->dirty = true;
		}
		if (!krep_view_can_send(b) || present == !t->deleting)
			continue;	/* nothing to do, or not now */
		if (t->deleting) {
			err = send_topic_del(c, b, t->name);
			if (err && err != -ENOENT)
				topic_failed(b, "TOPIC_DEL", t->name, err, NULL);
			continue;
		}
		/*
		 * Whatever it had of the topic is gone: out of every ISR. A
		 * broker that never had it stays: HW waits for its first
		 * FETCH, or for the ISR shrink that the leader asks for.
		 */
		if (krep_ids_has(&t->held, b->id))
			krep_view_replica_lost(c, t->name, b->id);
		if (krep_view_save(c))
			continue;	/* nothing goes out that is not written */
		err = send_topic_new(c, b, t, &why);
		if (err) {
			topic_failed(b, "TOPIC_NEW", t->name, err, why);
			continue;
		}
		b->topic_err[0] = '\0';
		krep_view_topic_unknown(c, t->name, k);
		/* its replicas wait: LEADER_AND_ISR after the next poll */
		krep_log(LOG_NOTICE, "topic %s: created on broker %u (it had missed it)",
			 t->name, b->id);
	}
	if (!t->deleting || !all)
		return true;
	for (k = 0; k < c->nb; k++)
		if (krep_snap_topic(&c->b[k].snap, t->name))
			return true;	/* TOPIC_DEL went out this poll */
	krep_log(LOG_NOTICE, "topic %s: deleted from every broker", t->name);
	krep_view_topic_drop(c, t->name, false);
	return false;
}

void krep_ctl_topics_reconcile(struct ctl *c)
{
	struct krep_state_topic *t;
	size_t i = 0;

	if (!c->started || c->dirty)
		return;		/* what is not written down is not sent */
	while (i < c->nt) {
		t = &c->topics[i];
		if ((!t->managed && !t->deleting) || topic_reconcile(c, t))
			i++;
	}
	krep_view_save(c);
}
