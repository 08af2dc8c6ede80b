// SPDX-License-Identifier: GPL-2.0
/*
 * Host-only unit tests of krepd --controller's pure parts: the election
 * and ISR rules (elect.c: leader from the ISR in AR order, the ELR
 * fallback, unclean election as an opt-in, offline partitions, ALTER_ISR
 * commits and rejections, the ELR joining and clearing, brokers that
 * restarted with a new incarnation, preferred leaders), the configuration
 * (cluster.c: every kind of bad line and flag) and the state file
 * (state.c: round trip, bad lines) and the replica assignment of new
 * topics (assign.c: Kafka's example, spread). No kernel module is
 * needed. Output is TAP; the exit status is 1 if any check failed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "assign.h"
#include "cluster.h"
#include "elect.h"
#include "genl.h"
#include "state.h"
#include "tap.h"


/* ---- helpers ------------------------------------------------------------ */

static struct krep_ids ids(const char *s)
{
	struct krep_ids v;

	if (krep_ids_parse(s, &v)) {
		fprintf(stderr, "bad ids '%s' in a test\n", s);
		exit(2);
	}
	return v;
}

/* @got equals "1,2,3" exactly, in that order */
static bool ids_are(const struct krep_ids *got, const char *want)
{
	char buf[256];

	krep_ids_format(got, buf, sizeof(buf));
	if (strcmp(buf, want)) {
		printf("#   got %s, want %s\n", buf, want);
		return false;
	}
	return true;
}

static struct krep_pstate part(uint32_t leader, uint32_t le, uint32_t pe,
			       const char *ar, const char *isr, const char *elr)
{
	struct krep_pstate p = {
		.leader = leader, .leader_epoch = le, .partition_epoch = pe,
		.ar = ids(ar), .isr = ids(isr), .elr = ids(elr),
	};

	return p;
}

static const struct krep_tconf tc1 = { .min_isr = 1 };
static const struct krep_tconf tc2 = { .min_isr = 2 };
static const struct krep_tconf tc1_unclean = { .min_isr = 1, .unclean = true };
static const struct krep_ids none = { 0 };

#define NL	KREP_NO_LEADER

/* ---- elections ---------------------------------------------------------- */

static void test_isr_first(void)
{
	struct krep_pstate p = part(3, 4, 7, "3,1,2", "3,1,2", "-"), n;
	struct krep_ids live = ids("1,2");
	struct krep_elect_out out;

	krep_elect_step(&p, &tc1, &live, &none, &n, &out);
	CHECK(out.how == KREP_ELECT_ISR && n.leader == 1,
	      "leader 3 fenced: the first live ISR member in AR order (1) leads");
	CHECK(n.leader_epoch == 5 && n.partition_epoch == 8 && out.bumped &&
	      out.changed, "the election bumps the leader and partition epochs");
	CHECK(ids_are(&n.isr, "1,2") && ids_are(&n.elr, "-"),
	      "the fenced leader leaves the ISR; min ISR 1: no ELR");

	p = part(1, 0, 0, "2,3,1", "1,3", "-");
	live = ids("2,3");
	krep_elect_step(&p, &tc1, &live, &none, &n, &out);
	CHECK(n.leader == 3 && ids_are(&n.isr, "3"),
	      "AR order, not id order: 2 is live but out of the ISR, 3 leads");

	p = part(1, 2, 3, "1,2,3", "1,2,3", "-");
	live = ids("1,2,3");
	krep_elect_step(&p, &tc1, &live, &none, &n, &out);
	CHECK(!out.changed && !out.bumped && out.how == KREP_ELECT_NONE &&
	      n.leader_epoch == 2 && n.partition_epoch == 3,
	      "nothing fenced: no change, no epoch bump");

	live = ids("1,2");
	krep_elect_step(&p, &tc1, &live, &none, &n, &out);
	CHECK(out.how == KREP_ELECT_NONE && n.leader == 1 &&
	      n.leader_epoch == 2 && n.partition_epoch == 4 &&
	      ids_are(&n.isr, "1,2"),
	      "a fenced follower leaves the ISR: partition epoch only");
}

static void test_offline(void)
{
	struct krep_pstate p = part(1, 2, 3, "1,2,3", "1", "-"), n, n2;
	struct krep_ids live = ids("2,3");
	struct krep_elect_out out;

	krep_elect_step(&p, &tc1, &live, &none, &n, &out);
	CHECK(out.how == KREP_ELECT_OFFLINE && n.leader == NL &&
	      n.leader_epoch == 3 && n.partition_epoch == 4,
	      "the only ISR member fenced, no ELR, no unclean: offline, epochs bumped");
	CHECK(ids_are(&n.isr, "1"),
	      "the last ISR member stays in the ISR while offline");

	krep_elect_step(&n, &tc1, &live, &none, &n2, &out);
	CHECK(!out.changed && n2.leader == NL && n2.leader_epoch == 3,
	      "offline and still nobody eligible: no change, no bump");

	live = ids("1,2,3");
	krep_elect_step(&n, &tc1, &live, &none, &n2, &out);
	CHECK(out.how == KREP_ELECT_ISR && n2.leader == 1 &&
	      n2.leader_epoch == 4 && n2.partition_epoch == 5,
	      "the ISR member returns: it leads again at a new epoch");

	p = part(1, 0, 0, "1,2,3", "1,2", "-");
	live = ids("3");
	krep_elect_step(&p, &tc1, &live, &none, &n, &out);
	CHECK(n.leader == NL && ids_are(&n.isr, "1,2"),
	      "every ISR member fenced at once: the ISR stays as it was");
	live = ids("2,3");
	krep_elect_step(&n, &tc1, &live, &none, &n2, &out);
	CHECK(n2.leader == 2 && ids_are(&n2.isr, "2"),
	      "then any of them that returns leads; the others leave the ISR");
}

static void test_unclean(void)
{
	struct krep_pstate p = part(1, 2, 3, "1,2,3", "1", "-"), n;
	struct krep_ids live = ids("2,3");
	struct krep_elect_out out;

	krep_elect_step(&p, &tc1_unclean, &live, &none, &n, &out);
	CHECK(out.how == KREP_ELECT_UNCLEAN && n.leader == 2 &&
	      ids_are(&n.isr, "2") && ids_are(&n.elr, "-") &&
	      n.leader_epoch == 3 && n.partition_epoch == 4,
	      "unclean_leader_election: the first live replica leads, ISR just it");
	krep_elect_step(&p, &tc1, &live, &none, &n, &out);
	CHECK(out.how == KREP_ELECT_OFFLINE && n.leader == NL,
	      "without the opt-in the same partition goes offline");

	p = part(1, 2, 3, "1,2,3", "1", "3");
	krep_elect_step(&p, &(struct krep_tconf){ .min_isr = 2, .unclean = true },
			&live, &none, &n, &out);
	CHECK(out.how == KREP_ELECT_ELR && n.leader == 3,
	      "the ELR comes before unclean election");
}

static void test_elr(void)
{
	struct krep_pstate p = part(1, 5, 9, "1,2,3", "1,2", "-"), n, n2;
	struct krep_ids live = ids("1,3");
	struct krep_elect_out out;
	enum krep_alter_result res;
	char why[128];

	krep_elect_step(&p, &tc2, &live, &none, &n, &out);
	CHECK(ids_are(&n.isr, "1") && ids_are(&n.elr, "2") &&
	      n.partition_epoch == 10 && n.leader == 1,
	      "min ISR 2: the fenced broker leaving ISR {1,2} joins the ELR");

	p = part(1, 5, 9, "1,2,3", "1,2,3", "-");
	live = ids("1,2");
	krep_elect_step(&p, &tc2, &live, &none, &n, &out);
	CHECK(ids_are(&n.isr, "1,2") && ids_are(&n.elr, "-"),
	      "an ISR still at min ISR after the change: no ELR");

	p = part(NL, 6, 10, "1,2,3", "1", "2");
	live = ids("2,3");
	krep_elect_step(&p, &tc2, &live, &none, &n, &out);
	CHECK(out.how == KREP_ELECT_ELR && n.leader == 2 &&
	      ids_are(&n.isr, "2") && ids_are(&n.elr, "1") &&
	      n.leader_epoch == 7 && n.partition_epoch == 11,
	      "no live ISR member: the first live ELR member leads; the old ISR member joins the ELR");

	p = part(1, 6, 10, "1,2,3", "1", "3,2");
	live = ids("2,3");
	krep_elect_step(&p, &tc2, &live, &none, &n, &out);
	CHECK(n.leader == 2, "ELR fallback in AR order (2 before 3)");

	/* ALTER_ISR back to min ISR clears the ELR */
	p = part(2, 7, 11, "1,2,3", "2", "1");
	live = ids("1,2,3");
	res = krep_elect_alter_isr(&p, &tc2, &live, 2, 7, 11, &(struct krep_ids){ 2, { 2, 3 } },
				   &n2, why, sizeof(why));
	CHECK(res == KREP_ALTER_COMMIT && ids_are(&n2.isr, "2,3") &&
	      ids_are(&n2.elr, "-") && n2.partition_epoch == 12,
	      "ISR back at min ISR: the ELR is cleared");

	p = part(1, 1, 1, "1,2,3", "1,2,3", "-");
	res = krep_elect_alter_isr(&p, &tc2, &live, 1, 1, 1, &(struct krep_ids){ 1, { 1 } },
				   &n2, why, sizeof(why));
	CHECK(res == KREP_ALTER_COMMIT && ids_are(&n2.isr, "1") &&
	      ids_are(&n2.elr, "2,3"),
	      "a leader's shrink below min ISR: the brokers leaving join the ELR");

	p = part(2, 7, 11, "1,2,3", "2", "1,3");
	res = krep_elect_alter_isr(&p, &tc2, &live, 2, 7, 11, &(struct krep_ids){ 1, { 2 } },
				   &n2, why, sizeof(why));
	CHECK(res == KREP_ALTER_REJECT && strstr(why, "already"),
	      "an ALTER_ISR that changes nothing is turned down (%s)", why);
	{
		struct krep_ids pr = ids("2,3");

		p = part(2, 7, 11, "1,2,3", "2", "1,3");
		res = krep_elect_alter_isr(&p, &(struct krep_tconf){ .min_isr = 3 },
					   &live, 2, 7, 11, &pr, &n2, why,
					   sizeof(why));
		CHECK(res == KREP_ALTER_COMMIT && ids_are(&n2.isr, "2,3") &&
		      ids_are(&n2.elr, "1"),
		      "ISR and ELR never overlap: a broker rejoining the ISR leaves the ELR");
	}
}

static void test_alter(void)
{
	struct krep_pstate p = part(1, 3, 5, "1,2,3", "1,2", "-"), n;
	struct krep_ids live = ids("1,2,3"), pr;
	enum krep_alter_result res;
	char why[128];

	pr = ids("1,2,3");
	res = krep_elect_alter_isr(&p, &tc1, &live, 1, 3, 5, &pr, &n, why,
				   sizeof(why));
	CHECK(res == KREP_ALTER_COMMIT && ids_are(&n.isr, "1,2,3") &&
	      n.partition_epoch == 6 && n.leader_epoch == 3 && n.leader == 1,
	      "ALTER_ISR from the leader at the current epochs: committed, partition epoch + 1");

	pr = ids("3,1");
	res = krep_elect_alter_isr(&p, &tc1, &live, 1, 3, 5, &pr, &n, why,
				   sizeof(why));
	CHECK(res == KREP_ALTER_COMMIT && ids_are(&n.isr, "1,3"),
	      "the committed ISR is kept in AR order");

	pr = ids("1,2,3");
	res = krep_elect_alter_isr(&p, &tc1, &live, 1, 3, 4, &pr, &n, why,
				   sizeof(why));
	CHECK(res == KREP_ALTER_REJECT && strstr(why, "partition epoch 4") &&
	      n.partition_epoch == 5 && ids_are(&n.isr, "1,2"),
	      "stale partition epoch: rejected, nothing changes (%s)", why);
	res = krep_elect_alter_isr(&p, &tc1, &live, 1, 2, 5, &pr, &n, why,
				   sizeof(why));
	CHECK(res == KREP_ALTER_REJECT && strstr(why, "leader epoch 2"),
	      "stale leader epoch: rejected (%s)", why);
	res = krep_elect_alter_isr(&p, &tc1, &live, 1, 3, 6, &pr, &n, why,
				   sizeof(why));
	CHECK(res == KREP_ALTER_REJECT,
	      "a partition epoch from the future: rejected (%s)", why);
	res = krep_elect_alter_isr(&p, &tc1, &live, 2, 3, 5, &pr, &n, why,
				   sizeof(why));
	CHECK(res == KREP_ALTER_REJECT && strstr(why, "not the leader"),
	      "from a broker that is not the leader: rejected (%s)", why);
	pr = ids("1,4");
	res = krep_elect_alter_isr(&p, &tc1, &live, 1, 3, 5, &pr, &n, why,
				   sizeof(why));
	CHECK(res == KREP_ALTER_REJECT && strstr(why, "4 is not a replica"),
	      "an ISR outside AR: rejected (%s)", why);
	pr = ids("2,3");
	res = krep_elect_alter_isr(&p, &tc1, &live, 1, 3, 5, &pr, &n, why,
				   sizeof(why));
	CHECK(res == KREP_ALTER_REJECT && strstr(why, "hold the leader"),
	      "an ISR without the leader: rejected (%s)", why);
	live = ids("1,2");
	pr = ids("1,2,3");
	res = krep_elect_alter_isr(&p, &tc1, &live, 1, 3, 5, &pr, &n, why,
				   sizeof(why));
	CHECK(res == KREP_ALTER_REJECT && strstr(why, "3 is fenced"),
	      "adding a fenced broker: rejected (%s)", why);
	p = part(1, 3, 5, "1,2,3", "1,2,3", "-");
	pr = ids("1,2");
	res = krep_elect_alter_isr(&p, &tc1, &live, 1, 3, 5, &pr, &n, why,
				   sizeof(why));
	CHECK(res == KREP_ALTER_COMMIT && ids_are(&n.isr, "1,2"),
	      "removing a fenced broker is fine");
	p = part(NL, 3, 5, "1,2,3", "1", "-");
	pr = ids("1,2");
	res = krep_elect_alter_isr(&p, &tc1, &live, 1, 3, 5, &pr, &n, why,
				   sizeof(why));
	CHECK(res == KREP_ALTER_REJECT && strstr(why, "no leader"),
	      "an offline partition takes no ALTER_ISR (%s)", why);
}

static void test_reborn(void)
{
	struct krep_pstate p = part(1, 3, 5, "1,2,3", "1,2,3", "-"), n;
	struct krep_ids live = ids("1,2,3"), reborn = ids("2");
	struct krep_elect_out out;

	krep_elect_step(&p, &tc2, &live, &reborn, &n, &out);
	CHECK(n.leader == 1 && ids_are(&n.isr, "1,3") &&
	      ids_are(&n.elr, "-") && n.partition_epoch == 6 &&
	      n.leader_epoch == 3,
	      "a restarted follower leaves the ISR although it is live");

	p = part(2, 3, 5, "1,2,3", "2,3", "-");
	krep_elect_step(&p, &tc2, &live, &reborn, &n, &out);
	CHECK(n.leader == 3 && ids_are(&n.isr, "3") && ids_are(&n.elr, "-") &&
	      n.leader_epoch == 4 && n.partition_epoch == 6,
	      "a restarted leader: the next ISR member leads; the restarted one never joins the ELR");

	p = part(2, 3, 5, "1,2,3", "2", "-");
	krep_elect_step(&p, &tc1, &live, &reborn, &n, &out);
	CHECK(n.leader == NL && ids_are(&n.isr, "-") && n.leader_epoch == 4,
	      "a restarted sole ISR member: offline with an empty ISR, never elected on lost data");
	krep_elect_step(&p, &tc1_unclean, &live, &reborn, &n, &out);
	CHECK(n.leader == 1 && ids_are(&n.isr, "1"),
	      "... unless unclean election is on: the first live replica");

	p = part(1, 3, 5, "1,2,3", "1", "2,3");
	krep_elect_step(&p, &tc2, &live, &reborn, &n, &out);
	CHECK(ids_are(&n.elr, "3") && out.changed && !out.bumped &&
	      n.partition_epoch == 5,
	      "a restarted broker leaves the ELR (the ELR alone: no epoch bump)");

	p = part(NL, 3, 5, "1,2,3", "1", "2");
	live = ids("2,3");
	krep_elect_step(&p, &tc2, &live, &reborn, &n, &out);
	CHECK(n.leader == NL && ids_are(&n.elr, "-"),
	      "a restarted ELR member is not elected from the ELR");
}

static void test_preferred(void)
{
	struct krep_pstate p = part(2, 3, 5, "1,2,3", "1,2,3", "-"), n;
	struct krep_ids live = ids("1,2,3");
	enum krep_pref_result r;
	char why[128];

	r = krep_elect_preferred(&p, &live, &n, why, sizeof(why));
	CHECK(r == KREP_PREF_ELECTED && n.leader == 1 && n.leader_epoch == 4 &&
	      n.partition_epoch == 6 && ids_are(&n.isr, "1,2,3"),
	      "preferred replica live and in the ISR: it leads, both epochs bumped");
	p.leader = 1;
	r = krep_elect_preferred(&p, &live, &n, why, sizeof(why));
	CHECK(r == KREP_PREF_NOT_NEEDED && n.leader_epoch == 3,
	      "already the leader: ELECTION_NOT_NEEDED (%s)", why);
	p = part(2, 3, 5, "1,2,3", "2,3", "-");
	r = krep_elect_preferred(&p, &live, &n, why, sizeof(why));
	CHECK(r == KREP_PREF_NOT_ELIGIBLE && strstr(why, "not in the ISR") &&
	      n.leader == 2, "preferred replica out of the ISR: not eligible (%s)",
	      why);
	p = part(2, 3, 5, "1,2,3", "1,2,3", "-");
	live = ids("2,3");
	r = krep_elect_preferred(&p, &live, &n, why, sizeof(why));
	CHECK(r == KREP_PREF_NOT_ELIGIBLE && strstr(why, "fenced"),
	      "preferred replica fenced: not eligible (%s)", why);
}

static void test_ids(void)
{
	struct krep_ids v;
	char buf[64];

	CHECK(!krep_ids_parse("3,1,2", &v) && v.n == 3 && v.id[0] == 3 &&
	      !strcmp(krep_ids_format(&v, buf, sizeof(buf)), "3,1,2"),
	      "broker id lists: parse and format keep the order");
	CHECK(!krep_ids_parse("-", &v) && !v.n &&
	      !strcmp(krep_ids_format(&v, buf, sizeof(buf)), "-"),
	      "the empty list is '-'");
	CHECK(krep_ids_parse("1,1", &v) && krep_ids_parse("1,", &v) &&
	      krep_ids_parse("", &v) && krep_ids_parse("a", &v) &&
	      krep_ids_parse("2147483648", &v),
	      "duplicates, empty items, words and ids above the maximum are refused");
}

/* ---- the configuration ------------------------------------------------ */

static void bad_line(const char *line, const char *want)
{
	struct krep_cluster c;
	char err[256] = "";
	int ret;

	krep_cluster_init(&c);
	krep_cluster_parse_line(&c, "broker 7 local", err, sizeof(err));
	ret = krep_cluster_parse_line(&c, line, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, want), "config '%s': %s", line,
	      err);
}

static void bad_flag(const char *flag, const char *want)
{
	struct krep_cluster c;
	char err[256] = "";
	int ret;

	krep_cluster_init(&c);
	krep_cluster_broker_flag(&c, "7@local", err, sizeof(err));
	ret = krep_cluster_broker_flag(&c, flag, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, want), "--broker '%s': %s", flag,
	      err);
}

static void test_config(void)
{
	struct krep_cluster c;
	char err[256];
	int ret = 0;

	krep_cluster_init(&c);
	ret |= krep_cluster_parse_line(&c, "# brokers", err, sizeof(err));
	ret |= krep_cluster_parse_line(&c, "  broker 1 local   # here", err,
				       sizeof(err));
	ret |= krep_cluster_parse_line(&c, "broker 2 netns b2", err,
				       sizeof(err));
	ret |= krep_cluster_parse_line(&c, "broker 3 relay [fd00::3]:9093 secret-file /etc/krep/s",
				       err, sizeof(err));
	ret |= krep_cluster_parse_line(&c, "\tpoll-ms 100", err, sizeof(err));
	ret |= krep_cluster_parse_line(&c, "session-timeout-ms 3000", err,
				       sizeof(err));
	ret |= krep_cluster_parse_line(&c, "preferred-election-interval-ms 0",
				       err, sizeof(err));
	ret |= krep_cluster_parse_line(&c, "state-file /tmp/x.state", err,
				       sizeof(err));
	ret |= krep_cluster_parse_line(&c, "socket /tmp/x.sock", err,
				       sizeof(err));
	ret |= krep_cluster_parse_line(&c, "", err, sizeof(err));
	ret |= krep_cluster_finish(&c, err, sizeof(err));
	CHECK(!ret && c.nbrokers == 3 && c.poll_ms == 100 &&
	      c.session_timeout_ms == 3000 && c.preferred_ms == 0 &&
	      c.lease_ms == 3000 && !strcmp(c.state_file, "/tmp/x.state") &&
	      !strcmp(c.socket, "/tmp/x.sock"),
	      "a good config: brokers, settings, comments, blank lines");
	CHECK(c.brokers[1].addr.kind == KREP_SESSION_NETNS &&
	      !strcmp(c.brokers[1].addr.netns, "b2") &&
	      c.brokers[2].addr.kind == KREP_SESSION_RELAY &&
	      !strcmp(c.brokers[2].addr.relay, "[fd00::3]:9093") &&
	      !strcmp(c.brokers[2].addr.secret_file, "/etc/krep/s"),
	      "broker lines: netns name, relay address and secret file");

	krep_cluster_init(&c);
	krep_cluster_parse_line(&c, "broker 1 local", err, sizeof(err));
	ret = krep_cluster_finish(&c, err, sizeof(err));
	CHECK(!ret && c.session_timeout_ms == 6000 && c.poll_ms == 250 &&
	      c.lease_ms == 6000 && c.preferred_ms == 300000 &&
	      !strcmp(c.state_file, "/var/lib/krep/krepd.state") &&
	      !strcmp(c.socket, "/run/krep/krepd.sock"),
	      "defaults: 6000, 250, lease = session timeout, 300000, paths");

	bad_line("broker x local", "'x' is not a broker id");
	bad_line("broker 2147483648 local", "is not a broker id");
	bad_line("broker 7 local", "broker 7 given twice");
	bad_line("broker 1 tcp 1.2.3.4", "unknown kind 'tcp'");
	bad_line("broker 1", "expected 'broker ID");
	bad_line("broker 1 netns", "missing namespace name");
	bad_line("broker 1 netns a/b", "invalid network namespace name");
	bad_line("broker 1 netns ..", "invalid network namespace name");
	bad_line("broker 1 local extra", "unexpected 'extra'");
	bad_line("broker 1 relay h:9093", "expected 'secret-file PATH'");
	bad_line("broker 1 relay h:9093 secret /s", "expected 'secret-file PATH'");
	bad_line("broker 1 relay h secret-file /s", "not HOST:PORT");
	bad_line("broker 1 relay h:0 secret-file /s", "is not 1..65535");
	bad_line("broker 1 relay h:70000 secret-file /s", "is not 1..65535");
	bad_line("broker 1 relay fd00::1:9 secret-file /s", "not HOST:PORT");
	bad_line("poll-ms", "expected one value");
	bad_line("poll-ms 5", "poll-ms: 5 is not in 10..60000");
	bad_line("poll-ms soon", "'soon' is not a number");
	bad_line("lease-ms 600001", "is not in 100..600000");
	bad_line("session-timeout-ms -1", "is not a number");
	bad_line("colour red", "unknown keyword 'colour'");
	{
		krep_cluster_init(&c);
		krep_cluster_parse_line(&c, "poll-ms 100", err, sizeof(err));
		ret = krep_cluster_parse_line(&c, "poll-ms 200", err,
					      sizeof(err));
		CHECK(ret == -EINVAL && strstr(err, "poll-ms given twice"),
		      "config: a setting twice: %s", err);
	}

	bad_flag("1@netns:a/b", "invalid network namespace name");
	bad_flag("x@local", "'x' is not a broker id");
	bad_flag("1local", "expected ID@local");
	bad_flag("1@tcp:h", "expected ID@local");
	bad_flag("7@netns:b7", "broker 7 given twice");
	bad_flag("1@relay:h:9093", "expected ID@relay:HOST:PORT:SECRETFILE");
	bad_flag("1@relay:h:0:/s", "is not 1..65535");
	bad_flag("1@relay:h:9093:", "empty path");
	krep_cluster_init(&c);
	ret = krep_cluster_broker_flag(&c, "1@netns:b1", err, sizeof(err));
	ret |= krep_cluster_broker_flag(&c, "2@relay:[::1]:9000:/etc/s", err,
					sizeof(err));
	ret |= krep_cluster_broker_flag(&c, "3@relay:h:1:/a:b", err,
					sizeof(err));
	ret |= krep_cluster_broker_flag(&c, "4@local", err, sizeof(err));
	CHECK(!ret && c.nbrokers == 4 && !strcmp(c.brokers[0].addr.netns, "b1") &&
	      !strcmp(c.brokers[1].addr.relay, "[::1]:9000") &&
	      !strcmp(c.brokers[1].addr.secret_file, "/etc/s") &&
	      !strcmp(c.brokers[2].addr.relay, "h:1") &&
	      !strcmp(c.brokers[2].addr.secret_file, "/a:b") &&
	      c.brokers[3].addr.kind == KREP_SESSION_LOCAL,
	      "--broker: netns, relay ([v6], a secret file with ':'), local");

	krep_cluster_init(&c);
	ret = krep_cluster_finish(&c, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "no brokers"), "finish: %s", err);
	krep_cluster_init(&c);
	krep_cluster_parse_line(&c, "broker 1 local", err, sizeof(err));
	krep_cluster_set(&c, KREP_CS_POLL, "1000", err, sizeof(err));
	krep_cluster_set(&c, KREP_CS_SESSION_TIMEOUT, "1500", err, sizeof(err));
	ret = krep_cluster_finish(&c, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "at least 2 x poll-ms"),
	      "finish: %s", err);
	krep_cluster_init(&c);
	krep_cluster_parse_line(&c, "broker 1 local", err, sizeof(err));
	krep_cluster_set(&c, KREP_CS_LEASE, "400", err, sizeof(err));
	ret = krep_cluster_finish(&c, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "lease-ms 400 must be at least 2 x poll-ms"),
	      "finish: %s", err);
	krep_cluster_init(&c);
	krep_cluster_parse_line(&c, "broker 1 local", err, sizeof(err));
	krep_cluster_set(&c, KREP_CS_POLL, "10", err, sizeof(err));
	krep_cluster_set(&c, KREP_CS_SESSION_TIMEOUT, "100", err, sizeof(err));
	ret = krep_cluster_finish(&c, err, sizeof(err));
	CHECK(!ret && c.lease_ms == 100,
	      "a short session timeout: the lease stays within 100..600000");
}

/* ---- the state file ------------------------------------------------------ */

struct emit_arg {
	struct krep_state_broker b;
	struct krep_state_topic t, t2, t3;
	struct krep_state_part p[2];
};

static void emit(FILE *f, void *arg)
{
	struct emit_arg *a = arg;

	krep_state_put_epoch(f, 42);
	krep_state_put_broker(f, &a->b);
	krep_state_put_topic(f, &a->t);
	krep_state_put_topic(f, &a->t2);
	krep_state_put_topic(f, &a->t3);
	krep_state_put_part(f, &a->p[0]);
	krep_state_put_part(f, &a->p[1]);
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static void bad_state(const char *dir, const char *text, const char *want)
{
	struct krep_state st;
	char path[512], err[512] = "";
	int ret;

	snprintf(path, sizeof(path), "%s/bad.state", dir);
	write_file(path, text);
	ret = krep_state_load(path, &st, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, want), "state file: %s", err);
}

static void test_state(void)
{
	char dir[] = "/tmp/krep-test-elect-XXXXXX", path[512], err[512] = "";
	struct emit_arg a = {
		.b = { .id = 3, .has_incarnation = true,
		       .incarnation = 0xfeedface01ULL, .fenced = true },
		.t = { .name = "orders", .tc = { .min_isr = 2, .unclean = true } },
		.t2 = { .name = "made", .tc = { .min_isr = 2 }, .managed = true,
			.partitions = 6, .rf = 3, .held = { .n = 2, .id = { 3, 1 } },
			.cfg = { .has = { [KREP_TCFG_MIN_INSYNC_REPLICAS] = true,
					  [KREP_TCFG_RETENTION_BYTES] = true },
				 .v = { [KREP_TCFG_MIN_INSYNC_REPLICAS] = 2,
					[KREP_TCFG_RETENTION_BYTES] = -1 } } },
		.t3 = { .name = "gone", .tc = { .min_isr = 1 }, .managed = true,
			.partitions = 1, .rf = 1, .deleting = true },
	};
	struct krep_state st;
	int ret, fd, fd2;

	if (!mkdtemp(dir)) {
		CHECK(false, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/krepd.state", dir);
	strcpy(a.p[0].topic, "orders");
	a.p[0].partition = 0;
	a.p[0].ps = part(2, 4, 9, "1,2,3", "2,3", "1");
	strcpy(a.p[1].topic, "orders");
	a.p[1].partition = 1;
	a.p[1].ps = part(NL, 1, 2, "2,3,1", "2", "-");

	CHECK(krep_state_load(path, &st, err, sizeof(err)) == -ENOENT,
	      "no state file: -ENOENT");
	ret = krep_state_save(path, emit, &a, err, sizeof(err));
	CHECK(!ret && access(path, F_OK) == 0 &&
	      access(strcat(strcpy((char[600]){ 0 }, path), ".tmp"), F_OK) != 0,
	      "state saved atomically (no .tmp left) %s", err);
	ret = krep_state_load(path, &st, err, sizeof(err));
	CHECK(!ret && st.controller_epoch == 42 && st.nbrokers == 1 &&
	      st.brokers[0].id == 3 && st.brokers[0].has_incarnation &&
	      st.brokers[0].incarnation == 0xfeedface01ULL &&
	      st.brokers[0].fenced && st.ntopics == 3 &&
	      st.topics[0].tc.min_isr == 2 && st.topics[0].tc.unclean &&
	      !st.topics[0].managed && !st.topics[0].deleting,
	      "state round trip: epoch, broker, topic %s", err);
	CHECK(!ret && st.ntopics == 3 && st.topics[1].managed &&
	      st.topics[1].partitions == 6 && st.topics[1].rf == 3 &&
	      !memcmp(&st.topics[1].cfg, &a.t2.cfg, sizeof(a.t2.cfg)) &&
	      ids_are(&st.topics[1].held, "3,1") && !st.topics[2].held.n &&
	      !st.topics[1].deleting && st.topics[2].managed &&
	      st.topics[2].deleting && !st.topics[2].cfg.has[0],
	      "state round trip: the controller's topics, their config, deleting");
	CHECK(!ret && st.nparts == 2 && st.parts[0].ps.leader == 2 &&
	      st.parts[0].ps.leader_epoch == 4 &&
	      st.parts[0].ps.partition_epoch == 9 &&
	      ids_are(&st.parts[0].ps.ar, "1,2,3") &&
	      ids_are(&st.parts[0].ps.isr, "2,3") &&
	      ids_are(&st.parts[0].ps.elr, "1") &&
	      st.parts[1].ps.leader == NL && ids_are(&st.parts[1].ps.ar, "2,3,1"),
	      "state round trip: partitions, offline leader, AR order");
	if (!ret)
		krep_state_free(&st);

	fd = krep_state_lock(path, err, sizeof(err));
	fd2 = krep_state_lock(path, err, sizeof(err));
	CHECK(fd >= 0 && fd2 == -EWOULDBLOCK && strstr(err, "another krepd"),
	      "the state lock is exclusive: %s", err);
	if (fd >= 0)
		close(fd);

	bad_state(dir, "controller-epoch 1\n", "the first statement must be 'version 1'");
	bad_state(dir, "version 2\n", "unsupported version");
	bad_state(dir, "version 1\ncontroller-epoch x\n", ":2: expected 'controller-epoch N'");
	bad_state(dir, "version 1\nbroker 1 incarnation zz fenced 0\n", ":2: bad incarnation");
	bad_state(dir, "version 1\n\nbroker 1 incarnation - fenced 2\n", ":3: fenced is not 0 or 1");
	bad_state(dir, "version 1\npartition t 0 leader 4 leader-epoch 1 partition-epoch 1 replicas 1,2,3 isr 1,2 elr -\n",
		  "outside the replicas");
	bad_state(dir, "version 1\npartition t 0 leader 1 leader-epoch 1 partition-epoch 1 replicas 1,2,3 isr 1,2 elr 2\n",
		  "overlap");
	bad_state(dir, "version 1\npartition t 0 leader 1 leader-epoch 1 replicas 1,2,3 isr 1,2 elr -\n",
		  "expected 'partition TOPIC");
	bad_state(dir, "version 1\nbogus\n", ":2: unknown statement");
	bad_state(dir, "version 1\ntopic t min-isr 1 unclean 0 partitions\n",
		  ":2: expected 'topic NAME min-isr N unclean 0|1 [KEY VALUE]...'");
	bad_state(dir, "version 1\ntopic t min-isr 1 unclean 0 partitions 3 color red\n",
		  ":2: expected partitions N, rf N, config CFG, held IDS or deleting");
	bad_state(dir, "version 1\ntopic t min-isr 1 unclean 0 partitions 3 config x=1\n",
		  ":2: bad topic partitions, rf, config, held or deleting");
	bad_state(dir, "version 1\ntopic t min-isr 1 unclean 0 partitions 2 rf 1 held 1,1\n",
		  ":2: bad topic partitions, rf, config, held or deleting");
	bad_state(dir, "version 1\ntopic t min-isr 1 unclean 0 partitions 0 rf 1\n",
		  ":2: bad topic partitions");
	bad_state(dir, "version 1\ntopic t min-isr 1 unclean 0 partitions 2 deleting 1\n",
		  ":2: topic partitions and rf go together");
	bad_state(dir, "", "empty state file");

	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path))
		fprintf(stderr, "cannot remove %s\n", dir);
}

/* ---- replica assignment -------------------------------------------------- */

/* Each of @n brokers is the first replica of partitions/n (+1) partitions. */
static bool spread(const uint32_t *a, uint32_t np, uint32_t rf, size_t n,
		   size_t at)
{
	unsigned int first[8] = { 0 }, any[8] = { 0 };
	uint32_t p, j, k;
	size_t i;

	for (p = 0; p < np; p++) {
		for (j = 0; j < rf; j++) {
			for (k = 0; k < j; k++)
				if (a[p * rf + j] == a[p * rf + k])
					return false;	/* twice in one */
			any[a[p * rf + j] - 1]++;
		}
		first[a[p * rf] - 1]++;
	}
	for (i = 0; i < n; i++)
		if (first[i] < np / n || first[i] > (np + n - 1) / n ||
		    any[i] < (size_t)np * rf / n ||
		    any[i] > ((size_t)np * rf + n - 1) / n)
			return false;
	return at < n;
}

static void test_assign(void)
{
	static const uint32_t five[] = { 0, 1, 2, 3, 4 }, three[] = { 1, 2, 3 };
	uint32_t a[64 * 3], s, start;
	char buf[64];
	bool ok = true;

	/* Kafka's example (AdminUtils): 5 brokers, 10 partitions, RF 3 */
	CHECK(!krep_assign(five, 5, 10, 3, 0, 0, a), "assign: 5 brokers");
	CHECK(a[0] == 0 && a[1] == 1 && a[2] == 2 &&	/* p0 */
	      a[12] == 4 && a[13] == 0 && a[14] == 1 &&	/* p4 */
	      a[15] == 0 && a[16] == 2 && a[17] == 3 &&	/* p5 */
	      a[27] == 4 && a[28] == 1 && a[29] == 2,	/* p9 */
	      "assign: Kafka's 5-broker example (p0 0,1,2; p4 4,0,1; p5 0,2,3; p9 4,1,2)");
	for (start = 0; start < 7 && ok; start++)
		for (s = 0; s < 7 && ok; s++) {
			ok = !krep_assign(three, 3, 6, 3, start, s, a) &&
			     spread(a, 6, 3, 3, 0) &&
			     !krep_assign(three, 3, 9, 2, start, s, a) &&
			     spread(a, 9, 2, 3, 0);
			if (!ok)
				snprintf(buf, sizeof(buf), "start %u shift %u",
					 start, s);
		}
	CHECK(ok, "assign: 3 brokers, 6x3 and 9x2, any start and shift: distinct replicas, leaders and replicas spread evenly%s%s",
	      ok ? "" : ": ", ok ? "" : buf);
	CHECK(!krep_assign(three, 3, 3, 1, 1, 0, a) && a[0] == 2 && a[1] == 3 &&
	      a[2] == 1, "assign: RF 1 goes round from the start broker");
	CHECK(krep_assign(three, 3, 1, 4, 0, 0, a) == -EINVAL &&
	      krep_assign(three, 3, 1, 0, 0, 0, a) == -EINVAL,
	      "assign: RF 0 or above the broker count is refused");
}

int main(void)
{
	krep_prog = "test_elect";
	printf("TAP version 13\n");
	test_ids();
	test_isr_first();
	test_offline();
	test_unclean();
	test_elr();
	test_alter();
	test_reborn();
	test_preferred();
	test_config();
	test_state();
	test_assign();
	printf("1..%d\n# %d passed, %d failed\n", tap_ntests, tap_ntests - tap_nfailed,
	       tap_nfailed);
	return tap_nfailed ? 1 : 0;
}
