// SPDX-License-Identifier: GPL-2.0
/*
 * The controller's election and ISR rules (elect.h): pure functions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep.h"
#include "elect.h"

bool krep_ids_has(const struct krep_ids *s, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < s->n; i++)
		if (s->id[i] == id)
			return true;
	return false;
}

bool krep_ids_equal(const struct krep_ids *a, const struct krep_ids *b)
{
	uint32_t i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++)
		if (!krep_ids_has(b, a->id[i]))
			return false;
	return true;
}

bool krep_ids_add(struct krep_ids *s, uint32_t id)
{
	if (krep_ids_has(s, id))
		return true;
	if (s->n >= KREP_ELECT_MAX)
		return false;
	s->id[s->n++] = id;
	return true;
}

void krep_ids_del(struct krep_ids *s, uint32_t id)
{
	uint32_t i, j;

	for (i = j = 0; i < s->n; i++)
		if (s->id[i] != id)
			s->id[j++] = s->id[i];
	s->n = j;
}

const char *krep_ids_format(const struct krep_ids *s, char *buf, size_t size)
{
	size_t off = 0;
	uint32_t i;
	int n;

	if (!size)
		return buf;
	buf[0] = '\0';
	if (!s->n) {
		snprintf(buf, size, "-");
		return buf;
	}
	for (i = 0; i < s->n && off < size; i++) {
		n = snprintf(buf + off, size - off, "%s%u", i ? "," : "",
			     s->id[i]);
		if (n < 0)
			break;
		off += n;
	}
	return buf;
}

int krep_ids_parse(const char *str, struct krep_ids *s)
{
	char num[16];
	const char *p = str, *end;
	uint32_t id;
	size_t len;

	memset(s, 0, sizeof(*s));
	if (!strcmp(str, "-"))
		return 0;
	for (;;) {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		if (!len || len >= sizeof(num))
			return -EINVAL;
		memcpy(num, p, len);
		num[len] = '\0';
		if (krep_u32_parse(num, &id) || id > KREP_BROKER_ID_MAX ||
		    krep_ids_has(s, id) || s->n >= KREP_ELECT_MAX)
			return -EINVAL;
		s->id[s->n++] = id;
		if (!end)
			return 0;
		p = end + 1;
	}
}

const char *krep_elect_how_name(enum krep_elect_how how)
{
	switch (how) {
	case KREP_ELECT_NONE:
		return "none";
	case KREP_ELECT_ISR:
		return "from the ISR";
	case KREP_ELECT_ELR:
		return "from the ELR";
	case KREP_ELECT_UNCLEAN:
		return "unclean";
	case KREP_ELECT_OFFLINE:
		return "offline";
	case KREP_ELECT_PREFERRED:
		return "preferred";
	}
	return "?";
}

uint32_t krep_elect_min_isr(const struct krep_pstate *p,
			    const struct krep_tconf *tc)
{
	uint32_t m = tc->min_isr;

	if (m > p->ar.n)
		m = p->ar.n;
	return m ? m : 1;
}

/* The members of @in that are also in @keep, in AR order. */
static void ar_filter(const struct krep_ids *ar, const struct krep_ids *in,
		      const struct krep_ids *keep, bool keep_has,
		      struct krep_ids *out)
{
	struct krep_ids r = { 0 };
	uint32_t i, id;

	for (i = 0; i < ar->n; i++) {
		id = ar->id[i];
		if (krep_ids_has(in, id) &&
		    (!keep || krep_ids_has(keep, id) == keep_has))
			r.id[r.n++] = id;
	}
	*out = r;
}

/* The first member of @in (in AR order) that is live, or KREP_NO_LEADER. */
static uint32_t first_live(const struct krep_ids *ar, const struct krep_ids *in,
			   const struct krep_ids *live)
{
	uint32_t i;

	for (i = 0; i < ar->n; i++)
		if ((!in || krep_ids_has(in, ar->id[i])) &&
		    krep_ids_has(live, ar->id[i]))
			return ar->id[i];
	return KREP_NO_LEADER;
}

/*
 * The ISR of @p becomes @isr (a subset of AR); @old is the ISR the
 * brokers that leave are counted from. The ELR follows (elect.h).
 */
static void set_isr(struct krep_pstate *p, const struct krep_tconf *tc,
		    const struct krep_ids *old, const struct krep_ids *isr)
{
	struct krep_ids elr = p->elr, removed, sorted;
	uint32_t i;

	ar_filter(&p->ar, isr, NULL, true, &sorted);
	ar_filter(&p->ar, old, &sorted, false, &removed);
	if (sorted.n >= krep_elect_min_isr(p, tc)) {
		elr.n = 0;
	} else {
		for (i = 0; i < removed.n; i++)
			krep_ids_add(&elr, removed.id[i]);
		for (i = 0; i < sorted.n; i++)
			krep_ids_del(&elr, sorted.id[i]);
	}
	ar_filter(&p->ar, &elr, NULL, true, &p->elr);
	p->isr = sorted;
}

void krep_elect_step(const struct krep_pstate *cur, const struct krep_tconf *tc,
		     const struct krep_ids *live, const struct krep_ids *reborn,
		     struct krep_pstate *next, struct krep_elect_out *out)
{
	struct krep_pstate n = *cur;
	struct krep_ids isr0, isr, one = { .n = 1 };
	uint32_t cand;

	memset(out, 0, sizeof(*out));
	/* reborn brokers hold none of the data: out of ISR and ELR */
	ar_filter(&n.ar, &cur->isr, reborn, false, &isr0);
	ar_filter(&n.ar, &cur->elr, reborn, false, &n.elr);
	n.isr = isr0;
	/* fenced brokers leave the ISR, which never empties that way */
	ar_filter(&n.ar, &isr0, live, true, &isr);
	if (!isr.n)
		isr = isr0;

	if (n.leader != KREP_NO_LEADER && krep_ids_has(live, n.leader) &&
	    krep_ids_has(&isr, n.leader)) {
		out->how = KREP_ELECT_NONE;
		set_isr(&n, tc, &isr0, &isr);
	} else if ((cand = first_live(&n.ar, &isr, live)) != KREP_NO_LEADER) {
		out->how = KREP_ELECT_ISR;
		n.leader = cand;
		set_isr(&n, tc, &isr0, &isr);
	} else if ((cand = first_live(&n.ar, &n.elr, live)) != KREP_NO_LEADER) {
		out->how = KREP_ELECT_ELR;
		n.leader = cand;
		one.id[0] = cand;
		set_isr(&n, tc, &isr0, &one);
	} else if (tc->unclean &&
		   (cand = first_live(&n.ar, NULL, live)) != KREP_NO_LEADER) {
		out->how = KREP_ELECT_UNCLEAN;
		n.leader = cand;
		one.id[0] = cand;
		n.isr = one;
		n.elr.n = 0;
	} else {
		out->how = KREP_ELECT_OFFLINE;
		n.leader = KREP_NO_LEADER;
		set_isr(&n, tc, &isr0, &isr);
	}
	if (n.leader != cur->leader) {
		n.leader_epoch++;
		n.partition_epoch++;
		out->bumped = true;
	} else if (!krep_ids_equal(&n.isr, &cur->isr)) {
		n.partition_epoch++;
		out->bumped = true;
	}
	if (!out->bumped && out->how == KREP_ELECT_OFFLINE)
		out->how = KREP_ELECT_NONE;	/* it was offline already */
	out->changed = out->bumped || !krep_ids_equal(&n.elr, &cur->elr);
	*next = n;
}

enum krep_alter_result krep_elect_alter_isr(const struct krep_pstate *cur,
					    const struct krep_tconf *tc,
					    const struct krep_ids *live,
					    uint32_t sender,
					    uint32_t leader_epoch,
					    uint32_t partition_epoch,
					    const struct krep_ids *proposed,
					    struct krep_pstate *next,
					    char *why, size_t whylen)
{
	struct krep_pstate n = *cur;
	uint32_t i, id;

	*next = *cur;
	if (cur->leader == KREP_NO_LEADER) {
		snprintf(why, whylen, "the partition has no leader");
		return KREP_ALTER_REJECT;
	}
	if (sender != cur->leader) {
		snprintf(why, whylen, "broker %u is not the leader (%u is)",
			 sender, cur->leader);
		return KREP_ALTER_REJECT;
	}
	if (leader_epoch != cur->leader_epoch) {
		snprintf(why, whylen, "leader epoch %u is not the current %u",
			 leader_epoch, cur->leader_epoch);
		return KREP_ALTER_REJECT;
	}
	if (partition_epoch != cur->partition_epoch) {
		snprintf(why, whylen, "partition epoch %u is not the current %u",
			 partition_epoch, cur->partition_epoch);
		return KREP_ALTER_REJECT;
	}
	for (i = 0; i < proposed->n; i++) {
		id = proposed->id[i];
		if (!krep_ids_has(&cur->ar, id)) {
			snprintf(why, whylen, "broker %u is not a replica", id);
			return KREP_ALTER_REJECT;
		}
	}
	if (!krep_ids_has(proposed, cur->leader)) {
		snprintf(why, whylen, "the ISR must hold the leader %u",
			 cur->leader);
		return KREP_ALTER_REJECT;
	}
	for (i = 0; i < proposed->n; i++) {
		id = proposed->id[i];
		if (!krep_ids_has(&cur->isr, id) && !krep_ids_has(live, id)) {
			snprintf(why, whylen, "broker %u is fenced", id);
			return KREP_ALTER_REJECT;
		}
	}
	if (krep_ids_equal(proposed, &cur->isr)) {
		snprintf(why, whylen, "the ISR is that already");
		return KREP_ALTER_REJECT;
	}
	set_isr(&n, tc, &cur->isr, proposed);
	n.partition_epoch++;
	*next = n;
	return KREP_ALTER_COMMIT;
}

enum krep_pref_result krep_elect_preferred(const struct krep_pstate *cur,
					   const struct krep_ids *live,
					   struct krep_pstate *next,
					   char *why, size_t whylen)
{
	uint32_t pref;

	*next = *cur;
	if (!cur->ar.n) {
		snprintf(why, whylen, "no replicas known");
		return KREP_PREF_NOT_ELIGIBLE;
	}
	pref = cur->ar.id[0];
	if (cur->leader == pref) {
		snprintf(why, whylen, "broker %u leads already", pref);
		return KREP_PREF_NOT_NEEDED;
	}
	if (!krep_ids_has(live, pref)) {
		snprintf(why, whylen, "preferred replica %u is fenced", pref);
		return KREP_PREF_NOT_ELIGIBLE;
	}
	if (!krep_ids_has(&cur->isr, pref)) {
		snprintf(why, whylen, "preferred replica %u is not in the ISR",
			 pref);
		return KREP_PREF_NOT_ELIGIBLE;
	}
	next->leader = pref;
	next->leader_epoch++;
	next->partition_epoch++;
	return KREP_PREF_ELECTED;
}
