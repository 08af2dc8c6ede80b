// SPDX-License-Identifier: GPL-2.0
/*
 * A snapshot of one broker (BROKER_GET, TOPIC_GET and PARTITION_GET
 * dumps) and the health figures derived from it; see snap.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/krep.h>

#include "snap.h"

static struct nla_policy broker_policy[KREP_A_MAX + 1] = {
	[KREP_A_BROKER_ID]	= { .type = NLA_U32 },
	[KREP_A_CLUSTER_ID]	= { .type = NLA_STRING },
	[KREP_A_PEERS]		= { .type = NLA_NESTED },
	[KREP_A_STATS]		= { .type = NLA_NESTED },
	[KREP_A_CONTROLLER]	= { .type = NLA_NESTED },
	[KREP_A_INCARNATION]	= { .type = NLA_U64 },
	[KREP_A_LOG_MEMORY]	= { .type = NLA_U64 },
	[KREP_A_LOG_MEMORY_MAX]	= { .type = NLA_U64 },
};

static struct nla_policy peer_policy[KREP_A_PEER_MAX + 1] = {
	[KREP_A_PEER_ID]	= { .type = NLA_U32 },
	[KREP_A_PEER_STATE]	= { .type = NLA_U8 },
	[KREP_A_PEER_EP]	= { .type = NLA_NESTED },
};

static struct nla_policy topic_policy[KREP_A_MAX + 1] = {
	[KREP_A_TOPIC]		= { .type = NLA_STRING },
	[KREP_A_PARTITIONS]	= { .type = NLA_U32 },
	[KREP_A_REPLICATION_FACTOR] = { .type = NLA_U32 },
	[KREP_A_TOPIC_CONFIG]	= { .type = NLA_NESTED },
};

static struct nla_policy part_policy[KREP_A_MAX + 1] = {
	[KREP_A_TOPIC]		= { .type = NLA_STRING },
	[KREP_A_PARTITION]	= { .type = NLA_U32 },
	[KREP_A_ROLE]		= { .type = NLA_U8 },
	[KREP_A_LEADER]		= { .type = NLA_U32 },
	[KREP_A_LEADER_EPOCH]	= { .type = NLA_U32 },
	[KREP_A_PARTITION_EPOCH] = { .type = NLA_U32 },
	[KREP_A_REPLICAS]	= { .type = NLA_NESTED },
	[KREP_A_ISR]		= { .type = NLA_NESTED },
	[KREP_A_LEO]		= { .type = NLA_U64 },
	[KREP_A_HW]		= { .type = NLA_U64 },
	[KREP_A_LSO]		= { .type = NLA_U64 },
	[KREP_A_LOG_START]	= { .type = NLA_U64 },
	[KREP_A_LOW_WATERMARK]	= { .type = NLA_U64 },
	[KREP_A_REMOTES]	= { .type = NLA_NESTED },
	[KREP_A_PENDING_ISR]	= { .type = NLA_NESTED },
	[KREP_A_INELIGIBLE]	= { .type = NLA_NESTED },
};

const char *krep_snap_stat_name(unsigned int attr)
{
	static const char * const names[] = {
		[KREP_A_STAT_RECORDS]		= "records",
		[KREP_A_STAT_PRODUCE_BYTES]	= "produce_bytes",
		[KREP_A_STAT_FOLLOWER_BYTES]	= "follower_bytes",
		[KREP_A_STAT_RX_COPY_BYTES]	= "rx_copy_bytes",
		[KREP_A_STAT_TX_ZEROCOPY_BYTES]	= "tx_zerocopy_bytes",
		[KREP_A_STAT_FETCH_RESPONSES]	= "fetch_responses",
	};

	if (attr < sizeof(names) / sizeof(names[0]))
		return names[attr];
	return NULL;
}

/* Make room for one more element of @size bytes in *@v (@n used). */
static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *nv;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	nv = realloc(*v, ncap * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

static void part_free(struct krep_snap_part *p)
{
	free(p->topic);
	free(p->replicas);
	free(p->isr);
	free(p->pending_isr);
	free(p->ineligible);
	free(p->remotes);
}

void krep_snap_free(struct krep_snap *s)
{
	size_t i;

	free(s->cluster_id);
	free(s->peers);
	for (i = 0; i < s->ntopics; i++)
		free(s->topics[i].name);
	free(s->topics);
	for (i = 0; i < s->nparts; i++)
		part_free(&s->parts[i]);
	free(s->parts);
	memset(s, 0, sizeof(*s));
}

/* ---- BROKER_GET -------------------------------------------------------- */

static int peers_get(struct nlattr *list, struct krep_snap *s)
{
	struct nlattr *tb[KREP_A_PEER_MAX + 1];
	struct krep_snap_peer *p;
	struct nlattr *a;
	size_t n = 0;
	int rem;

	nla_for_each_nested(a, list, rem)
		n += nla_type(a) == KREP_A_PEER;
	if (!n)
		return 0;
	s->peers = calloc(n, sizeof(*s->peers));
	if (!s->peers)
		return -ENOMEM;
	nla_for_each_nested(a, list, rem) {
		if (nla_type(a) != KREP_A_PEER)
			continue;
		if (nla_parse_nested(tb, KREP_A_PEER_MAX, a, peer_policy) ||
		    !tb[KREP_A_PEER_ID])
			return -EINVAL;
		p = &s->peers[s->npeers++];
		p->id = nla_get_u32(tb[KREP_A_PEER_ID]);
		p->state = tb[KREP_A_PEER_STATE] ?
			   nla_get_u8(tb[KREP_A_PEER_STATE]) : -1;
		p->has_ep = tb[KREP_A_PEER_EP] &&
			    !krep_ep_get(tb[KREP_A_PEER_EP], &p->ep);
	}
	return 0;
}

static int stats_get(struct nlattr *nest, struct krep_snap *s)
{
	struct nlattr *a;
	int rem, t;

	nla_for_each_nested(a, nest, rem) {
		t = nla_type(a);
		if (t <= 0 || t > KREP_A_STAT_MAX || t == KREP_A_STAT_PAD)
			continue;	/* from a newer kernel, or padding */
		if (nla_len(a) != 8)
			return -EINVAL;
		s->has_stat[t] = true;
		s->stat[t] = nla_get_u64(a);
	}
	s->has_stats = true;
	return 0;
}

/* KREP_A_CONTROLLER: the claim a controller holds on the broker */
static int claim_get(struct nlattr *nest, struct krep_snap *s)
{
	struct nlattr *a;
	int rem;

	nla_for_each_nested(a, nest, rem) {
		switch (nla_type(a)) {
		case KREP_A_CTRL_EPOCH:
			if (nla_len(a) != 4)
				return -EPROTO;
			s->claim_epoch = nla_get_u32(a);
			break;
		case KREP_A_CTRL_OWNER:
			if (nla_len(a) != 8)
				return -EPROTO;
			s->claim_owner = nla_get_u64(a);
			break;
		case KREP_A_CTRL_LEASE_MS:
			if (nla_len(a) != 4)
				return -EPROTO;
			s->claim_lease_ms = nla_get_u32(a);
			break;
		case KREP_A_CTRL_AGE_MS:
			if (nla_len(a) != 8)
				return -EPROTO;
			s->has_claim_age = true;
			s->claim_age_ms = nla_get_u64(a);
			break;
		}
	}
	s->has_claim = true;
	return 0;
}

static int broker_get(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[KREP_A_MAX + 1];
	struct krep_snap *s = arg;
	int err;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, KREP_A_MAX, broker_policy))
		return -EPROTO;
	if (tb[KREP_A_BROKER_ID]) {
		s->has_broker_id = true;
		s->broker_id = nla_get_u32(tb[KREP_A_BROKER_ID]);
	}
	if (tb[KREP_A_CLUSTER_ID] && !s->cluster_id) {
		s->cluster_id = strdup(nla_get_string(tb[KREP_A_CLUSTER_ID]));
		if (!s->cluster_id)
			return -ENOMEM;
	}
	if (tb[KREP_A_PEERS] && !s->peers) {
		err = peers_get(tb[KREP_A_PEERS], s);
		if (err)
			return err == -ENOMEM ? err : -EPROTO;
	}
	if (tb[KREP_A_STATS] && stats_get(tb[KREP_A_STATS], s))
		return -EPROTO;
	if (tb[KREP_A_INCARNATION]) {
		s->has_incarnation = true;
		s->incarnation = nla_get_u64(tb[KREP_A_INCARNATION]);
	}
	if (tb[KREP_A_CONTROLLER] && claim_get(tb[KREP_A_CONTROLLER], s))
		return -EPROTO;
	if (tb[KREP_A_LOG_MEMORY] && tb[KREP_A_LOG_MEMORY_MAX]) {
		s->has_log_memory = true;
		s->log_memory = nla_get_u64(tb[KREP_A_LOG_MEMORY]);
		s->log_memory_max = nla_get_u64(tb[KREP_A_LOG_MEMORY_MAX]);
	}
	return 0;
}

/* ---- TOPIC_GET --------------------------------------------------------- */

static int topic_get(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[KREP_A_MAX + 1];
	struct krep_snap *s = arg;
	struct krep_snap_topic *t;
	struct nlattr *a;
	int rem;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, KREP_A_MAX, topic_policy) ||
	    !tb[KREP_A_TOPIC])
		return -EPROTO;
	if (grow((void **)&s->topics, &s->ntopics_cap, s->ntopics,
		 sizeof(*s->topics)))
		return -ENOMEM;
	t = &s->topics[s->ntopics];
	memset(t, 0, sizeof(*t));
	t->name = strdup(nla_get_string(tb[KREP_A_TOPIC]));
	if (!t->name)
		return -ENOMEM;
	s->ntopics++;
	if (tb[KREP_A_PARTITIONS])
		t->partitions = nla_get_u32(tb[KREP_A_PARTITIONS]);
	if (tb[KREP_A_REPLICATION_FACTOR])
		t->rf = nla_get_u32(tb[KREP_A_REPLICATION_FACTOR]);
	if (!tb[KREP_A_TOPIC_CONFIG])
		return 0;
	nla_for_each_nested(a, tb[KREP_A_TOPIC_CONFIG], rem) {
		switch (nla_type(a)) {
		case KREP_A_TCFG_MIN_INSYNC_REPLICAS:
			if (nla_len(a) != 4)
				return -EPROTO;
			t->has_min_isr = true;
			t->min_isr = nla_get_u32(a);
			break;
		case KREP_A_TCFG_UNCLEAN_LEADER_ELECTION:
			if (nla_len(a) != 1)
				return -EPROTO;
			t->has_unclean = true;
			t->unclean = nla_get_u8(a);
			break;
		}
	}
	return 0;
}

/* ---- PARTITION_GET ----------------------------------------------------- */

static int ids_get(struct nlattr *nest, uint32_t **v, size_t *n)
{
	struct nlattr *a;
	size_t cnt = 0;
	int rem;

	nla_for_each_nested(a, nest, rem)
		cnt += nla_type(a) == KREP_A_BROKER_ID;
	*v = calloc(cnt ? cnt : 1, sizeof(**v));
	if (!*v)
		return -ENOMEM;
	nla_for_each_nested(a, nest, rem) {
		if (nla_type(a) != KREP_A_BROKER_ID)
			continue;
		if (nla_len(a) != 4)
			return -EPROTO;
		(*v)[(*n)++] = nla_get_u32(a);
	}
	return 0;
}

static int u64_get(struct nlattr *a, bool *has, uint64_t *v)
{
	if (nla_len(a) != 8)
		return -EPROTO;
	*has = true;
	*v = nla_get_u64(a);
	return 0;
}

static int remotes_get(struct nlattr *nest, struct krep_snap_part *p)
{
	struct krep_snap_remote *r;
	struct nlattr *a, *f;
	int rem, frem, err;
	size_t n = 0;

	nla_for_each_nested(a, nest, rem)
		n += nla_type(a) == KREP_A_REMOTE;
	p->remotes = calloc(n ? n : 1, sizeof(*p->remotes));
	if (!p->remotes)
		return -ENOMEM;
	p->has_remotes = true;
	nla_for_each_nested(a, nest, rem) {
		if (nla_type(a) != KREP_A_REMOTE)
			continue;
		r = &p->remotes[p->nremotes++];
		r->in_isr = -1;
		nla_for_each_nested(f, a, frem) {
			err = 0;
			switch (nla_type(f)) {
			case KREP_A_REMOTE_ID:
				if (nla_len(f) != 4)
					return -EPROTO;
				r->id = nla_get_u32(f);
				break;
			case KREP_A_REMOTE_LEO:
				err = u64_get(f, &r->has_leo, &r->leo);
				break;
			case KREP_A_REMOTE_FETCH_AGE_MS:
				err = u64_get(f, &r->has_fetch_age,
					      &r->fetch_age_ms);
				break;
			case KREP_A_REMOTE_CAUGHT_UP_AGE_MS:
				err = u64_get(f, &r->has_caught_up_age,
					      &r->caught_up_age_ms);
				break;
			case KREP_A_REMOTE_IN_ISR:
				if (nla_len(f) != 1)
					return -EPROTO;
				r->in_isr = nla_get_u8(f);
				break;
			}
			if (err)
				return err;
		}
	}
	return 0;
}

static int part_get(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[KREP_A_MAX + 1];
	struct krep_snap *s = arg;
	struct krep_snap_part *p;
	int err = 0;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, KREP_A_MAX, part_policy) ||
	    !tb[KREP_A_TOPIC] || !tb[KREP_A_PARTITION])
		return -EPROTO;
	if (grow((void **)&s->parts, &s->nparts_cap, s->nparts,
		 sizeof(*s->parts)))
		return -ENOMEM;
	p = &s->parts[s->nparts];
	memset(p, 0, sizeof(*p));
	p->topic = strdup(nla_get_string(tb[KREP_A_TOPIC]));
	if (!p->topic)
		return -ENOMEM;
	s->nparts++;
	p->partition = nla_get_u32(tb[KREP_A_PARTITION]);
	p->role = tb[KREP_A_ROLE] ? nla_get_u8(tb[KREP_A_ROLE]) : -1;
	if (tb[KREP_A_LEADER]) {
		p->has_leader = true;
		p->leader = nla_get_u32(tb[KREP_A_LEADER]);
	}
	if (tb[KREP_A_LEADER_EPOCH]) {
		p->has_leader_epoch = true;
		p->leader_epoch = nla_get_u32(tb[KREP_A_LEADER_EPOCH]);
	}
	if (tb[KREP_A_PARTITION_EPOCH]) {
		p->has_partition_epoch = true;
		p->partition_epoch = nla_get_u32(tb[KREP_A_PARTITION_EPOCH]);
	}
	if (tb[KREP_A_LEO])
		u64_get(tb[KREP_A_LEO], &p->has_leo, &p->leo);
	if (tb[KREP_A_HW])
		u64_get(tb[KREP_A_HW], &p->has_hw, &p->hw);
	if (tb[KREP_A_LSO])
		u64_get(tb[KREP_A_LSO], &p->has_lso, &p->lso);
	if (tb[KREP_A_LOG_START])
		u64_get(tb[KREP_A_LOG_START], &p->has_log_start,
			&p->log_start);
	if (tb[KREP_A_LOW_WATERMARK])
		u64_get(tb[KREP_A_LOW_WATERMARK], &p->has_lw, &p->lw);
	if (tb[KREP_A_REPLICAS]) {
		p->has_replicas = true;
		err = ids_get(tb[KREP_A_REPLICAS], &p->replicas,
			      &p->nreplicas);
	}
	if (!err && tb[KREP_A_ISR]) {
		p->has_isr = true;
		err = ids_get(tb[KREP_A_ISR], &p->isr, &p->nisr);
	}
	if (!err && tb[KREP_A_PENDING_ISR]) {
		p->has_pending_isr = true;
		err = ids_get(tb[KREP_A_PENDING_ISR], &p->pending_isr,
			      &p->npending_isr);
	}
	if (!err && tb[KREP_A_INELIGIBLE])
		err = ids_get(tb[KREP_A_INELIGIBLE], &p->ineligible,
			      &p->nineligible);
	if (!err && tb[KREP_A_REMOTES])
		err = remotes_get(tb[KREP_A_REMOTES], p);
	return err;
}

static int dump(krep_snap_request_fn rq, void *ctx, int family, uint8_t cmd,
		int flags, const char *topic, krep_genl_reply_fn fn, void *arg)
{
	struct nl_msg *msg;
	int err;

	msg = krep_genl_msg_new(family, cmd, flags,
				topic ? nla_total_size(strlen(topic) + 1) : 0);
	if (!msg)
		return -ENOMEM;
	if (topic && nla_put_string(msg, KREP_A_TOPIC, topic)) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	err = rq(ctx, msg, fn, arg);
	nlmsg_free(msg);
	return err;
}

int krep_snap_take_via(krep_snap_request_fn rq, void *ctx, int family,
		       const char *topic, struct krep_snap *s)
{
	int err;

	memset(s, 0, sizeof(*s));
	err = dump(rq, ctx, family, KREP_CMD_BROKER_GET, 0, NULL, broker_get,
		   s);
	if (!err)
		err = dump(rq, ctx, family, KREP_CMD_TOPIC_GET, NLM_F_DUMP,
			   NULL, topic_get, s);
	if (!err)
		err = dump(rq, ctx, family, KREP_CMD_PARTITION_GET,
			   NLM_F_DUMP, topic, part_get, s);
	if (err)
		krep_snap_free(s);
	return err;
}

static int genl_rq(void *ctx, struct nl_msg *req, krep_genl_reply_fn fn,
		   void *arg)
{
	return krep_genl_request(ctx, req, fn, arg);
}

int krep_snap_take(struct krep_genl *gl, const char *topic,
		   struct krep_snap *s)
{
	int err;

	err = krep_snap_take_via(genl_rq, gl, gl->family, topic, s);
	if (err == -EPROTO)
		fprintf(stderr, "%s: malformed reply from the kernel\n",
			krep_prog);
	else if (err == -ENOMEM)
		fprintf(stderr, "%s: %s\n", krep_prog, strerror(ENOMEM));
	return err;
}

/* ---- health ------------------------------------------------------------ */

const struct krep_snap_topic *krep_snap_topic(const struct krep_snap *s,
					      const char *name)
{
	size_t i;

	for (i = 0; i < s->ntopics; i++)
		if (!strcmp(s->topics[i].name, name))
			return &s->topics[i];
	return NULL;
}

static int peer_state(const struct krep_snap *s, uint32_t id)
{
	size_t i;

	for (i = 0; i < s->npeers; i++)
		if (s->peers[i].id == id)
			return s->peers[i].state;
	return -1;
}

void krep_part_health(const struct krep_snap *s, const struct krep_snap_part *p,
		      struct krep_part_health *h)
{
	const struct krep_snap_topic *t = krep_snap_topic(s, p->topic);
	uint64_t lag;
	size_t i;

	memset(h, 0, sizeof(*h));
	h->leader = p->role == KREP_ROLE_LEADER;
	h->rf = p->has_replicas ? p->nreplicas : t ? t->rf : 0;
	h->isr_size = p->nisr;
	if (h->rf) {
		/* Kafka's default min.insync.replicas is 1 */
		h->min_isr = t && t->has_min_isr ? t->min_isr : 1;
		if (h->min_isr > h->rf)
			h->min_isr = h->rf;
		h->has_min_isr = true;
	}
	if (p->has_isr && h->rf) {
		h->under_replicated = h->isr_size < h->rf;
		h->under_min_isr = h->isr_size < h->min_isr;
		h->at_min_isr = h->isr_size == h->min_isr;
	}
	h->offline = p->role == KREP_ROLE_OFFLINE || !p->has_leader ||
		     (p->role == KREP_ROLE_FOLLOWER &&
		      (!s->has_broker_id || p->leader != s->broker_id) &&
		      peer_state(s, p->leader) == KREP_PEER_DOWN);
	if (p->has_leo && p->has_hw) {
		h->has_hw_lag = true;
		h->hw_lag = p->leo > p->hw ? p->leo - p->hw : 0;
	}
	if (p->has_hw && p->has_lso) {
		h->has_lso_lag = true;
		h->lso_lag = p->hw > p->lso ? p->hw - p->lso : 0;
	}
	if (!h->leader)
		return;
	for (i = 0; i < p->nremotes; i++) {
		const struct krep_snap_remote *r = &p->remotes[i];

		if (r->has_leo && p->has_leo) {
			lag = p->leo > r->leo ? p->leo - r->leo : 0;
			if (!h->has_follower_lag || lag > h->follower_lag)
				h->follower_lag = lag;
			h->has_follower_lag = true;
		}
		if (r->has_caught_up_age) {
			if (!h->has_follower_lag_ms ||
			    r->caught_up_age_ms > h->follower_lag_ms)
				h->follower_lag_ms = r->caught_up_age_ms;
			h->has_follower_lag_ms = true;
		}
	}
}

void krep_broker_health(const struct krep_snap *s, struct krep_broker_health *h)
{
	struct krep_part_health ph;
	size_t i;

	memset(h, 0, sizeof(*h));
	for (i = 0; i < s->nparts; i++) {
		const struct krep_snap_part *p = &s->parts[i];

		krep_part_health(s, p, &ph);
		h->partitions++;
		h->offline += ph.offline;
		if (ph.has_hw_lag) {
			h->total_hw_lag += ph.hw_lag;
			if (ph.hw_lag > h->max_hw_lag)
				h->max_hw_lag = ph.hw_lag;
		}
		if (ph.has_lso_lag) {
			h->total_lso_lag += ph.lso_lag;
			if (ph.lso_lag > h->max_lso_lag)
				h->max_lso_lag = ph.lso_lag;
		}
		if (!ph.leader)
			continue;
		h->leader_partitions++;
		h->under_replicated += ph.under_replicated;
		h->under_min_isr += ph.under_min_isr;
		h->at_min_isr += ph.at_min_isr;
		h->isr_changes += p->partition_epoch;
		if (ph.has_follower_lag &&
		    (!h->has_follower_lag || ph.follower_lag > h->max_follower_lag)) {
			h->max_follower_lag = ph.follower_lag;
			h->has_follower_lag = true;
		}
		if (ph.has_follower_lag_ms &&
		    (!h->has_follower_lag_ms ||
		     ph.follower_lag_ms > h->max_follower_lag_ms)) {
			h->max_follower_lag_ms = ph.follower_lag_ms;
			h->has_follower_lag_ms = true;
		}
	}
}
