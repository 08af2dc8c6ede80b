#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# epochs.sh - leader epochs, LEADER_AND_ISR and controller claims, with a
# scripted controller (ctl_helper.py) choosing every leader, epoch and ISR.
#
# Three brokers in three namespaces (cluster.sh), topics with
# replica_lag_time_max_ms=1000:
#   t   1 partition, RF 3, replicas 1,2,3 (claims, pending ISR, stale leader)
#   r   1 partition, RF 2, replicas 1,2   (tail above HW, then failover)
#   d   1 partition, RF 3, replicas 1,2,3 (double leader change)
#   x   1 partition, RF 2, replicas 1,2   (transactions)
#   k   1 partition, RF 3, replicas 1,2,3 (two rounds of truncation)
#   m   1 partition, RF 2, replicas 1,2   (many producers)
#
# 1. claims: a second owner is refused while the lease runs, a stale epoch
#    after it; LEADER_AND_ISR only from the claim's epoch; bad requests.
#    TOPIC_NEW with the controller's assignment: bad ones refused; with
#    the controller's epoch every replica waits for its LEADER_AND_ISR.
# 2. pending ISR: a cut follower's shrink waits for the controller (acks=all
#    times out meanwhile), the commit applies it, a rejoin is asked for again.
# 3. stale leader: cut off, it keeps refusing acks=all and HW stays; a new
#    leader takes acks=all writes in epoch 1; back, the old leader truncates
#    its uncommitted tail (to the new leader's end of epoch 0, not its HW),
#    follows, and all three logs are identical.
# 4. tail above HW then a leader change: nothing acknowledged is lost.
# 5. fast double leader change: a replica that missed epochs 2 and 3 comes
#    back with a divergent tail of epoch 1 and ends identical.
# 6. producer state on every replica (topic x, RF 2): a follower's LSO
#    stops at an open transaction; after a leader change read_committed
#    skips the aborted one and stops at the open one, which the new
#    leader commits; back on the preferred leader the same; a
#    transaction open past its timeout is aborted with a marker.
# 7. KIP-279 (topic k): a follower whose last epoch the leader never saw
#    truncates in two rounds and ends identical.
# 8. many producers (topic m, insmod producers_max=16): 16 open
#    transactions, 15 writing at once (lookups by producer id among
#    interleaved batches); a 17th producer id refused with
#    POLICY_VIOLATION while the others are served; transactions ended in
#    another order than opened keep LSO at the oldest on both replicas;
#    identical logs and read_committed on the leader and a new leader; idle
#    producers forgotten after producer_id_expiration_ms make room.
# Prints KTAP; leaves the module unloaded and no namespace behind.

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

krep_require_vm
krep_require_cmd jq ip /usr/bin/python3

LAG=1000
PMAX=16			# producers_max, producer ids per partition
PEXP=3000		# producer_id_expiration_ms
CE=2			# the controller epoch the brokers end up claimed with
tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
mark=epochs-$$

# A Python start costs ~0.5 s in the VM: every broker's namespace has one
# long-lived ctl_helper.py (ctlN), started once the namespaces exist, and
# one repl_helper.py (replN), started in section 2 while it waits for
# timeouts (selftests/pyserve.py). Section 8's dozens of TXN requests go
# through ctlN too (as krepctl txn sends them), not a krepctl start each.
ctl() { # N ARGS...: the scripted controller on broker N
	local n=$1
	shift
	krep_pyserve "ctl$n" "$@"
}

dump() { # N TOPIC: "records R ... sha256 H" of partition 0 up to HW;
	# the values, one a line, in $tmp/dump.N.TOPIC.0
	local out
	out=$(krep_pyserve "repl$1" dump "$2" 0 "$tmp/dump.$1.$2") || return
	echo "${out#partition 0 }"
}

st() { ctl "$1" state "$2" 0; }

# field F of a state line
sf() { # N TOPIC FIELD
	local line i
	local -a w
	line=$(st "$1" "$2") || return
	read -ra w <<<"$line"
	for ((i = 0; i + 1 < ${#w[@]}; i += 2)); do	# KEY VALUE pairs
		[ "${w[i]}" != "$3" ] || { echo "${w[i + 1]}"; return 0; }
	done
	return 1
}

lai() { # CEPOCH TOPIC LEADER LEPOCH PEPOCH ISR BROKER...
	local ce=$1 t=$2 l=$3 le=$4 pe=$5 isr=$6 n out rc=0
	shift 6
	for n in "$@"; do
		out=$(ctl "$n" lai "$ce" "$t" 0 "$l" "$le" "$pe" "$isr")
		[ "$out" = ok ] || { ktap_diag "broker $n: lai $ce $t 0 $l $le $pe $isr: $out"; rc=1; }
	done
	return $rc
}

produce() { # N TOPIC ACKS PREFIX COUNT [TIMEOUT]: values PREFIX-0..
	seq -f "$4-%g" 0 $(($5 - 1)) |
		kc "$(bns "$1")" --json produce "$2" acks "$3" timeout "${6:-10000}"
}

expect() { # DESC WANT CMD...: ok when CMD prints WANT
	local desc=$1 want=$2 got
	shift 2
	got=$("$@" 2>&1)
	if [ "$got" = "$want" ]; then
		ktap_ok "$desc"
	else
		ktap_diag "want: $want" "got:  $got"
		ktap_fail "$desc"
	fi
}

same_logs() { # TOPIC N...: identical dumps (records up to HW) on all
	local t=$1 first='' n d
	shift
	for n in "$@"; do
		d=$(dump "$n" "$t") || return 1
		echo "broker $n: $d"
		[ -z "$first" ] && first=$d
		[ "$d" = "$first" ] || return 1
	done
}

ktap_plan 40

# --- set-up ---------------------------------------------------------------

krep_kmsg_mark "$mark"
krep_mod_unload
# short deadlines: a cut link is noticed within 2.5 s, a restored one is
# used again within 0.5 s
# a small producers_max and expiry for section 8
krep_mod_load fetch_timeout_ms=2000 reconnect_backoff_max_ms=500 \
	producers_max=$PMAX producer_id_expiration_ms=$PEXP ||
	ktap_bail "insmod krep.ko failed"
cluster_up kreps || ktap_bail "cannot set up three brokers"
for n in 1 2 3; do
	krep_pyserve_start "ctl$n" "$(bns "$n")" ctl_helper ||
		ktap_bail "cannot start ctl_helper.py"
done
# the topics, the three brokers side by side
for n in 1 2 3; do
	for tr in t:3 r:2 d:3 x:2 k:3 m:2; do
		cluster_topic_on "$n" "${tr%:*}" partitions 1 \
			replication-factor "${tr#*:}" \
			config replica_lag_time_max_ms=$LAG || exit
	done &
	tpid[n]=$!
done
for n in 1 2 3; do
	wait "${tpid[n]}" || ktap_bail "topics t, r, d, x, k, m on broker $n"
done
krep_wait_for 60 cluster_peers_up || ktap_bail "peers did not connect"
full_isr() { [ "$(sf 1 t isr)" = 1,2,3 ] && [ "$(sf 1 d isr)" = 1,2,3 ] &&
	     [ "$(sf 1 r isr)" = 1,2 ] && [ "$(sf 1 x isr)" = 1,2 ] &&
	     [ "$(sf 1 k isr)" = 1,2,3 ] && [ "$(sf 1 m isr)" = 1,2 ]; }
krep_wait_for 60 full_isr || ktap_bail "ISRs did not fill"
# the leader was its own ISR authority until now: its partition epoch
PE=$(sf 1 t pe)

# --- 1. claims --------------------------------------------------------------

ktap_diag "1. controller claims (at ${SECONDS}s)"
out=$(
	ctl 1 claim 1 11 600000		# owner 11 takes broker 1
	ctl 1 claim 2 22 600000		# owner 22: lease runs
	ctl 1 claim 1 11 600000		# renewal
	ctl 1 claim 1 11 0		# release
	ctl 1 claim 1 22 600000		# new owner, same epoch
	ctl 1 claim $CE 22 600000	# new owner, higher epoch
	ctl 1 broker | sed 's/^incarnation [0-9]* //'
)
want="ok
error 16 Device or resource busy: another controller's lease on this broker runs
ok
ok
error 116 Stale file handle: a new controller needs a higher epoch
ok
ctrl-epoch $CE owner 22 lease 600000"
expect "claims: EBUSY while another lease runs, ESTALE for an old epoch, release" \
	"$want" echo "$out"
for n in 2 3; do
	ctl "$n" claim $CE 22 600000 >/dev/null
done

out=$(
	ctl 1 lai 1 t 0 1 0 0 1,2,3		# older controller
	ctl 1 lai 3 t 0 1 0 0 1,2,3		# no such claim
	ctl 1 lai $CE t 0 7 1 1 1,7		# leader outside AR
	ctl 1 lai $CE t 0 2 1 1 1,3		# leader outside ISR
	ctl 1 lai $CE t 0 1 0 "$PE" 1,2,3	# the same again: re-states
	ctl 1 lai $CE nosuch 0 1 0 0 1		# unknown topic
)
want="error 116 Stale file handle: controller epoch older than the broker's controller
error 1 Operation not permitted: no controller claim with this epoch
error 22 Invalid argument: ISR member outside the assigned replicas
error 22 Invalid argument: leader outside the ISR
ok
error 2 No such file or directory: no such topic"
expect "LEADER_AND_ISR: stale and unknown controllers, bad assignments refused" \
	"$want" echo "$out"

out=$(
	ctl 1 topic-new - a 2 2 "1,2/2,3/3,1"	# more partitions
	ctl 1 topic-new - a 2 2 "1,2"		# fewer
	ctl 1 topic-new - a 2 2 "1,2/3"		# a partition short
	ctl 1 topic-new - a 2 2 "1,1/2,3"	# a broker twice
	ctl 1 topic-new - a 2 2 "1,9/2,3"	# an unknown broker
	ctl 1 topic-new 1 a 2 2 "1,2/2,3"	# an older controller
	ctl 1 topic-new 3 a 2 2 "1,2/2,3"	# no such claim
	ctl 1 topic-new - a 2 2 "2,1/2,3"	# broker 2 preferred for a-0
)
want="error 22 Invalid argument: assignment has more partitions than the topic
error 22 Invalid argument: assignment has fewer partitions than the topic
error 22 Invalid argument: a partition's replica count is not the replication factor
error 22 Invalid argument: broker listed twice
error 22 Invalid argument: assignment names a broker that is neither this one nor a peer
error 116 Stale file handle: controller epoch older than the broker's controller
error 1 Operation not permitted: no controller claim with this epoch
ok"
if [ "$out" = "$want" ] && [ "$(sf 1 a role)" = follower ] &&
   [ "$(sf 1 a leader)" = 2 ] &&
   describe "$(bns 1)" a |
	jq -e 'map(.partition) == [0] and .[0].replicas == [2,1]' >/dev/null; then
	ktap_ok "TOPIC_NEW with an assignment: bad ones refused; broker 1 hosts a-0 only, 2 preferred"
else
	ktap_diag "got: $out"
	st 1 a | ktap_diag_stdin
	describe "$(bns 1)" a 2>&1 | ktap_diag_stdin
	ktap_fail "TOPIC_NEW with an assignment: bad ones refused; broker 1 hosts a-0 only, 2 preferred"
fi
# a-1 is not hosted on broker 1: its LEADER_AND_ISR is kept for Metadata,
# with a replica's checks
out=$(
	ctl 1 lai $CE a 1 1 0 0 1,2	# ISR member outside a-1's replicas
	ctl 1 lai $CE a 1 2 0 0 3	# leader outside the ISR
	ctl 1 lai $CE a 1 3 2 5 2,3	# leader 3 at leader epoch 2
	ctl 1 lai $CE a 1 2 1 9 2,3	# an older leader epoch
	ctl 1 lai $CE a 1 3 2 4 3	# an older partition epoch
	ctl 1 lai $CE a 1 3 2 5 2,3	# the same again
	ctl 1 lai $CE a 1 2 3 0 2	# a newer leader epoch
)
want="error 22 Invalid argument: ISR member outside the assigned replicas
error 22 Invalid argument: leader outside the ISR
ok
error 116 Stale file handle: leader or partition epoch older than the broker's
error 116 Stale file handle: leader or partition epoch older than the broker's
ok
ok"
expect "LEADER_AND_ISR for a partition broker 1 does not host: the same checks, epochs never back" \
	"$want" echo "$out"
kc "$(bns 1)" topic delete a

# the controller's own topic: no leader until its LEADER_AND_ISR
out=$(for n in 1 2 3; do ctl "$n" topic-new $CE ca 1 3 "2,3,1"; done)
waiting() {
	local n
	for n in 1 2 3; do
		[ "$(sf "$n" ca role)" = follower ] && [ "$(sf "$n" ca leader)" = none ] &&
			[ "$(sf "$n" ca le)" = 0 ] && [ "$(sf "$n" ca isr)" = 2,3,1 ] ||
			return 1
	done
}
out2=$(produce 2 ca 1 w 1 2>&1)
if [ "$out" = "ok
ok
ok" ] && waiting && grep -q NOT_LEADER_OR_FOLLOWER <<<"$out2"; then
	ktap_ok "TOPIC_NEW from the controller: every replica waits with no leader, produce refused"
else
	ktap_diag "got: $out" "produce: $out2"
	for n in 1 2 3; do st "$n" ca | ktap_diag_stdin; done
	ktap_fail "TOPIC_NEW from the controller: every replica waits with no leader, produce refused"
fi
lai $CE ca 2 0 0 2,3,1 1 2 3 >/dev/null
out=$(produce 2 ca all v 3 2>&1) && rc=0 || rc=$?
hw3() { [ "$(sf 1 ca hw)" = 3 ] && [ "$(sf 3 ca hw)" = 3 ]; }
if [ "$rc" = 0 ] && [ "$(sf 2 ca role)" = leader ] && krep_wait_for 10 hw3; then
	ktap_ok "its LEADER_AND_ISR at epoch 0 makes broker 2 lead: acks=all on 3 replicas"
else
	ktap_diag "exit $rc: $out"
	for n in 1 2 3; do st "$n" ca | ktap_diag_stdin; done
	ktap_fail "its LEADER_AND_ISR at epoch 0 makes broker 2 lead: acks=all on 3 replicas"
fi
for n in 1 2 3; do kc "$(bns "$n")" topic delete ca; done

# --- 2. pending ISR ---------------------------------------------------------

ktap_diag "2. pending ISR (at ${SECONDS}s)"
for n in 1 2 3; do	# for the dumps from section 3 on
	krep_pyserve_start "repl$n" "$(bns "$n")" repl_helper ||
		ktap_bail "cannot start repl_helper.py"
done
produce 1 t all a 5 >/dev/null
link_down 3
# a follower at the leader's LEO stays in sync: the next append starts its lag
out=$(produce 1 t all b 1 3000 2>&1) && rc=0 || rc=$?
if [ "$rc" != 0 ] && grep -q REQUEST_TIMED_OUT <<<"$out"; then
	ktap_ok "acks=all waits for the maximal ISR (times out) while the shrink is pending"
else
	ktap_diag "exit $rc: $out"
	ktap_fail "acks=all waits for the maximal ISR (times out) while the shrink is pending"
fi
pending() { [ "$(sf 1 t pending)" = "$1" ]; }
if krep_wait_for 15 pending 1,2 &&
   [ "$(sf 1 t isr)" = 1,2,3 ] && [ "$(sf 1 t pe)" = "$PE" ]; then
	ktap_ok "a cut follower's shrink is pending: ISR still 1,2,3 at partition epoch $PE"
else
	st 1 t | ktap_diag_stdin
	ktap_fail "a cut follower's shrink is pending: ISR still 1,2,3 at partition epoch $PE"
fi
lai $CE t 1 0 $((PE + 1)) 1,2 1 2 3 >/dev/null
out=$(produce 1 t all c 3 2>&1) && rc=0 || rc=$?
if [ "$rc" = 0 ] && [ "$(sf 1 t isr)" = 1,2 ] &&
   [ "$(sf 1 t pending)" = - ] && [ "$(sf 1 t pe)" = $((PE + 1)) ]; then
	ktap_ok "the controller's commit applies the shrink: acks=all on {1,2}"
else
	ktap_diag "exit $rc: $out"
	st 1 t | ktap_diag_stdin
	ktap_fail "the controller's commit applies the shrink: acks=all on {1,2}"
fi
link_up 3
if krep_wait_for 20 pending 1,2,3; then
	ktap_ok "broker 3 back: its rejoin is asked of the controller"
else
	st 1 t | ktap_diag_stdin
	ktap_fail "broker 3 back: its rejoin is asked of the controller"
fi
lai $CE t 1 0 $((PE + 2)) 1,2,3 1 2 3 >/dev/null
out="$(sf 1 t isr) $(sf 1 t pe) $(sf 1 t pending)"
expect "rejoin committed at partition epoch $((PE + 2))" "1,2,3 $((PE + 2)) -" \
	echo "$out"

# --- 3. a stale leader ------------------------------------------------------

ktap_diag "3. stale leader (at ${SECONDS}s)"
base=$(sf 1 t hw)
link_down 1
produce 1 t 1 stale 4 >/dev/null
out=$(produce 1 t all stale-all 1 1000 2>&1) && rc=0 || rc=$?
if [ "$rc" != 0 ] && grep -q REQUEST_TIMED_OUT <<<"$out" &&
   [ "$(sf 1 t hw)" = "$base" ] && [ "$(sf 1 t leo)" = $((base + 5)) ]; then
	ktap_ok "cut off, the old leader refuses acks=all (timeout) and HW stays at $base"
else
	ktap_diag "exit $rc: $out"
	st 1 t | ktap_diag_stdin
	ktap_fail "cut off, the old leader refuses acks=all (timeout) and HW stays at $base"
fi
lai $CE t 2 1 $((PE + 3)) 2,3 2 3 >/dev/null
out=$(produce 2 t all new 6 2>&1) && rc=0 || rc=$?
if [ "$rc" = 0 ] && [ "$(sf 2 t epochs)" = "0:0,1:$base" ] &&
   [ "$(sf 2 t hw)" = $((base + 6)) ]; then
	ktap_ok "broker 2 leads epoch 1 from offset $base: acks=all on {2,3}"
else
	ktap_diag "exit $rc: $out"
	st 2 t | ktap_diag_stdin
	ktap_fail "broker 2 leads epoch 1 from offset $base: acks=all on {2,3}"
fi
out=$(ctl 2 epoch-end t 0 0; ctl 2 epoch-end t 0 1; ctl 2 epoch-end t 0 5)
expect "OffsetsForLeaderEpoch on the new leader" \
	"epoch 0 end $base
epoch 1 end $((base + 6))
epoch 1 end $((base + 6))" echo "$out"
link_up 1
lai $CE t 2 1 $((PE + 3)) 2,3 1 >/dev/null
caught_up() { # N TOPIC LEO
	[ "$(sf "$1" "$2" leo)" = "$3" ] && [ "$(sf "$1" "$2" role)" = follower ]
}
if krep_wait_for 20 caught_up 1 t $((base + 6)) &&
   [ "$(sf 1 t epochs)" = "0:0,1:$base" ] &&
   krep_kmsg_since "$mark" | grep -q "t-0: truncated from $((base + 5)) to $base"; then
	ktap_ok "the old leader truncates its 5 uncommitted records (to $base) and follows"
else
	st 1 t | ktap_diag_stdin
	krep_kmsg_since "$mark" | grep 't-0' | tail -5 | ktap_diag_stdin
	ktap_fail "the old leader truncates its 5 uncommitted records (to $base) and follows"
fi
out=$(produce 1 t 1 late 1 2>&1) && rc=0 || rc=$?
if [ "$rc" != 0 ] && grep -q NOT_LEADER_OR_FOLLOWER <<<"$out"; then
	ktap_ok "the deposed leader refuses produces"
else
	ktap_diag "exit $rc: $out"
	ktap_fail "the deposed leader refuses produces"
fi
isr3() { [ "$(sf 2 t pending)" = 1,2,3 ]; }
hw_all() { # TOPIC HW BROKER...: every one of them at HW
	local t=$1 h=$2 n
	shift 2
	for n in "$@"; do
		[ "$(sf "$n" "$t" hw)" = "$h" ] || return 1
	done
}
: >"$tmp/same"
if krep_wait_for 20 isr3 && lai $CE t 2 1 $((PE + 4)) 1,2,3 1 2 3 &&
   produce 2 t all more 2 >/dev/null &&
   krep_wait_for 10 hw_all t $((base + 8)) 1 2 3 &&
   same_logs t 1 2 3 >"$tmp/same" && ! grep -q stale "$tmp/dump.1.t.0" &&
   grep -q new-5 "$tmp/dump.1.t.0"; then
	ktap_ok "all three logs identical, without the stale records"
else
	ktap_diag_stdin <"$tmp/same"
	for n in 1 2 3; do st "$n" t | ktap_diag_stdin; done
	ktap_fail "all three logs identical, without the stale records"
fi

# --- 4. a tail above HW, then a leader change -------------------------------

ktap_diag "4. tail above HW, then failover (at ${SECONDS}s)"
out=$(produce 1 r all acked 20) && rc=0 || rc=$?
link_down 1
ktap_diag "broker 2 after the acks: $(st 2 r)"
# broker 2 is told to follow again (as after a restart), then leads
lai $CE r 1 1 1 1,2 2 >/dev/null
lai $CE r 2 2 2 2 2 >/dev/null
if [ "$rc" = 0 ] && [ "$(sf 2 r leo)" = 20 ] && [ "$(sf 2 r hw)" = 20 ] &&
   [ "$(sf 2 r role)" = leader ]; then
	ktap_ok "broker 2 leads epoch 2 with all 20 acknowledged records (no truncation to its HW)"
else
	st 2 r | ktap_diag_stdin
	ktap_fail "broker 2 leads epoch 2 with all 20 acknowledged records (no truncation to its HW)"
fi
d=$(dump 2 r)
if grep -q "^records 20 " <<<"$d" &&
   seq -f 'acked-%g' 0 19 | cmp -s - "$tmp/dump.2.r.0"; then
	ktap_ok "every acknowledged record is there, in order"
else
	ktap_diag "$d"
	ktap_fail "every acknowledged record is there, in order"
fi
link_up 1
lai $CE r 2 2 2 2 1 >/dev/null
produce 2 r 1 after 3 >/dev/null
: >"$tmp/same"
if krep_wait_for 20 caught_up 1 r 23 && krep_wait_for 10 hw_all r 23 1 2 &&
   same_logs r 1 2 >"$tmp/same" && klog=$(krep_kmsg_since "$mark") &&
   ! grep -q 'r-0: truncated' <<<"$klog"; then
	ktap_ok "broker 1 follows in epoch 2 without truncating: identical logs"
else
	ktap_diag_stdin <"$tmp/same"
	st 1 r | ktap_diag_stdin
	krep_kmsg_since "$mark" | grep 'r-0' | tail -5 | ktap_diag_stdin
	ktap_fail "broker 1 follows in epoch 2 without truncating: identical logs"
fi

# --- 5. fast double leader change --------------------------------------------

ktap_diag "5. double leader change (at ${SECONDS}s)"
# epoch 1: broker 3 leads, writes 10 committed records
lai $CE d 3 1 1 1,2,3 1 2 3 >/dev/null
produce 3 d all c1 10 >/dev/null
link_down 3
produce 3 d 1 lost 3 >/dev/null		# its uncommitted tail, epoch 1
# epochs 2 and 3 go by without broker 3
lai $CE d 1 2 2 1,2 1 2 >/dev/null
produce 1 d all e2 4 >/dev/null
lai $CE d 2 3 3 1,2 1 2 >/dev/null
out=$(produce 2 d all e3 4 2>&1) && rc=0 || rc=$?
if [ "$rc" = 0 ] && [ "$(sf 2 d epochs)" = "1:0,2:10,3:14" ] &&
   [ "$(sf 3 d leo)" = 13 ] && [ "$(sf 3 d epochs)" = "1:0" ]; then
	ktap_ok "epochs 2 and 3 pass broker 3 by (it holds 3 uncommitted records of epoch 1)"
else
	ktap_diag "exit $rc: $out"
	st 2 d | ktap_diag_stdin
	st 3 d | ktap_diag_stdin
	ktap_fail "epochs 2 and 3 pass broker 3 by (it holds 3 uncommitted records of epoch 1)"
fi
link_up 3
lai $CE d 2 3 3 1,2 3 >/dev/null
if krep_wait_for 20 caught_up 3 d 18 && [ "$(sf 3 d epochs)" = "1:0,2:10,3:14" ] &&
   krep_kmsg_since "$mark" | grep -q "d-0: truncated from 13 to 10"; then
	ktap_ok "broker 3 truncates to epoch 1's end on the leader (10) and fetches epochs 2, 3"
else
	st 3 d | ktap_diag_stdin
	krep_kmsg_since "$mark" | grep 'd-0' | tail -5 | ktap_diag_stdin
	ktap_fail "broker 3 truncates to epoch 1's end on the leader (10) and fetches epochs 2, 3"
fi
isr123() { [ "$(sf 2 d pending)" = 1,2,3 ]; }
: >"$tmp/same"
if krep_wait_for 20 isr123 && lai $CE d 2 3 4 1,2,3 1 2 3 &&
   produce 2 d all tail 2 >/dev/null && krep_wait_for 10 hw_all d 20 1 2 3 &&
   same_logs d 1 2 3 >"$tmp/same" && ! grep -q lost "$tmp/dump.3.d.0"; then
	ktap_ok "identical logs on all three, the lost tail gone"
else
	ktap_diag_stdin <"$tmp/same"
	for n in 1 2 3; do st "$n" d | ktap_diag_stdin; done
	ktap_fail "identical logs on all three, the lost tail gone"
fi

out=$(lai $CE d none 4 5 - 1 2 3 && echo "$(sf 1 d role) $(sf 2 d role) $(sf 2 d leader)")
expect "no leader (KREP_NO_LEADER, empty ISR): every replica waits offline" \
	"follower follower none" echo "$out"

# --- 6. producer state on every replica ------------------------------------

ktap_diag "6. transactions across leader changes (at ${SECONDS}s)"
ptx() { # N PID:EPOCH PREFIX COUNT: transactional acks=all records
	seq -f "$3-%g" 0 $(($4 - 1)) |
		kc "$(bns "$1")" produce x acks all txn "$2" >/dev/null
}
txn() { kc "$(bns "$1")" txn x "$2" "$3" >/dev/null; }	# N PID:EPOCH OP
committed() { # N: what read_committed reads of x on broker N, one line
	kc "$(bns "$1")" consume x --isolation read_committed | paste -sd,
}
# on broker 1: p-0 p-1 | aborted a-0 a-1, marker | q-0 | open o-0 o-1 | r-0
produce 1 x all p 2 >/dev/null &&
	txn 1 100:0 begin && ptx 1 100:0 a 2 && txn 1 100:0 abort &&
	produce 1 x all q 1 >/dev/null &&
	txn 1 200:0 begin && ptx 1 200:0 o 2 &&
	produce 1 x all r 1 >/dev/null || ktap_diag "section 6 set-up failed"
# the follower's own state: the open transaction holds its LSO at 6
if krep_wait_for 10 hw_all x 9 1 2 && [ "$(sf 2 x lso)" = 6 ] &&
   [ "$(sf 1 x lso)" = 6 ]; then
	ktap_ok "a follower keeps producer state from its log: its LSO stops at the open transaction (6)"
else
	st 1 x | ktap_diag_stdin
	st 2 x | ktap_diag_stdin
	ktap_fail "a follower keeps producer state from its log: its LSO stops at the open transaction (6)"
fi
XPE=$(sf 1 x pe)
lai $CE x 2 1 $((XPE + 1)) 1,2 1 2 >/dev/null
expect "new leader 2: read_committed skips the aborted ones and stops at the open one (LSO $(sf 2 x lso))" \
	"p-0,p-1,q-0" committed 2
out=$(txn 2 200:0 commit 2>&1) && rc=0 || rc=$?
if [ "$rc" = 0 ] && krep_wait_for 10 hw_all x 10 1 2 &&
   [ "$(sf 2 x lso)" = 10 ] && [ "$(committed 2)" = "p-0,p-1,q-0,o-0,o-1,r-0" ]; then
	ktap_ok "the transaction the old leader had open is committed on the new one"
else
	ktap_diag "commit exit $rc: $out; read_committed: $(committed 2)"
	st 2 x | ktap_diag_stdin
	ktap_fail "the transaction the old leader had open is committed on the new one"
fi
# back to the preferred leader: broker 1 followed the marker
lai $CE x 1 2 $((XPE + 2)) 1,2 1 2 >/dev/null
if [ "$(sf 1 x lso)" = 10 ] &&
   [ "$(committed 1)" = "p-0,p-1,q-0,o-0,o-1,r-0" ]; then
	ktap_ok "preferred leader 1 again: the same committed records, LSO 10"
else
	ktap_diag "read_committed: $(committed 1)"
	st 1 x | ktap_diag_stdin
	ktap_fail "preferred leader 1 again: the same committed records, LSO 10"
fi
# a transaction open past its timeout is aborted by the leader
out=$(ctl 1 txn-begin x 0 300 0 1500)
ptx 1 300:0 late 1 || ktap_diag "txn-begin: $out"
expired() { [ "$(sf 1 x lso)" = 12 ] && [ "$(sf 1 x hw)" = 12 ]; }
if [ "$out" = ok ] && krep_wait_for 20 expired &&
   [ "$(committed 1)" = "p-0,p-1,q-0,o-0,o-1,r-0" ] &&
   krep_kmsg_since "$mark" | grep -qE "x-0: producer 300's transaction open for [0-9]+ ms aborted at 11"; then
	ktap_ok "a transaction open past its 1500 ms timeout is aborted with a marker (LSO 12)"
else
	st 1 x | ktap_diag_stdin
	ktap_diag "read_committed: $(committed 1)"
	ktap_fail "a transaction open past its 1500 ms timeout is aborted with a marker (LSO 12)"
fi

# --- 7. two rounds of truncation (KIP-279) -----------------------------------

ktap_diag "7. a follower with an epoch the leader never saw (at ${SECONDS}s)"
# epoch 0 (3 records on all), then broker 3 is cut: brokers 1 and 2 write
# epoch 1 (offsets 3, 4), broker 3 alone leads an epoch 2 the others never
# see (3, 4), and broker 1 leads epoch 3 (5). Broker 3 comes back asking
# for epoch 2: the leader's answer is epoch 1, which broker 3 does not
# have, so it truncates to the end of its epoch 0 (3) and asks again.
KPE=$(sf 1 k pe)
produce 1 k all base 3 >/dev/null
link_down 3
lai $CE k 1 1 $((KPE + 1)) 1,2 1 2 >/dev/null &&
	produce 1 k all e1 2 >/dev/null || ktap_diag "epoch 1 on brokers 1, 2 failed"
lai $CE k 3 2 $((KPE + 1)) 3 3 >/dev/null &&
	produce 3 k 1 lost 2 >/dev/null || ktap_diag "epoch 2 on broker 3 failed"
lai $CE k 1 3 $((KPE + 2)) 1,2 1 2 >/dev/null &&
	produce 1 k all e3 1 >/dev/null || ktap_diag "epoch 3 on brokers 1, 2 failed"
if [ "$(sf 1 k epochs)" = "0:0,1:3,3:5" ] && [ "$(sf 3 k epochs)" = "0:0,2:3" ] &&
   [ "$(sf 3 k leo)" = 5 ]; then
	ktap_ok "broker 3 holds epoch 2 (offsets 3, 4), which leader 1 (epochs 0, 1, 3) never saw"
else
	st 1 k | ktap_diag_stdin
	st 3 k | ktap_diag_stdin
	ktap_fail "broker 3 holds epoch 2 (offsets 3, 4), which leader 1 (epochs 0, 1, 3) never saw"
fi
link_up 3
lai $CE k 1 3 $((KPE + 2)) 1,2 3 >/dev/null
: >"$tmp/same"
if krep_wait_for 20 caught_up 3 k 6 && krep_wait_for 10 hw_all k 6 1 3 &&
   [ "$(sf 3 k epochs)" = "0:0,1:3,3:5" ] &&
   krep_kmsg_since "$mark" | grep -q "k-0: truncated from 5 to 3" &&
   same_logs k 1 3 >"$tmp/same" && ! grep -q lost "$tmp/dump.3.k.0"; then
	ktap_ok "broker 3 truncates to its epoch 0's end (3) in a second round and ends identical"
else
	ktap_diag_stdin <"$tmp/same"
	st 3 k | ktap_diag_stdin
	krep_kmsg_since "$mark" | grep 'k-0' | tail -5 | ktap_diag_stdin
	ktap_fail "broker 3 truncates to its epoch 0's end (3) in a second round and ends identical"
fi

# --- 8. many producers: the hash table and producers_max ---------------------

ktap_diag "8. many producers on one partition, producers_max=$PMAX (at ${SECONDS}s)"
mtxn() { kc "$(bns "$1")" txn m "$2" "$3" 2>&1; }	# N PID:EPOCH OP
ctxn() { [ "$(ctl "$1" txn m 0 "$2" 0 "$3")" = ok ]; }	# N PID OP, epoch 0
mptx() { # N PID:EPOCH PREFIX COUNT: transactional records PREFIX-0..
	seq -f "$3-%g" 0 $(($4 - 1)) |
		kc "$(bns "$1")" --json produce m acks all txn "$2" 2>&1
}
mcommitted() { # N: what read_committed reads of m on broker N, sorted
	kc "$(bns "$1")" consume m --isolation read_committed | sort | paste -sd,
}
lso_at() { # LSO BROKER...: every one of them at LSO
	local l=$1 n
	shift
	for n in "$@"; do
		[ "$(sf "$n" m lso)" = "$l" ] || return 1
	done
}
# producer 1001 opens first, alone: its batch holds LSO at M0; then the
# other 15 write 3 batches each at once, their batches interleaved
M0=$(sf 1 m leo)
fails=0
for ((i = 1001; i <= 1000 + PMAX; i++)); do
	ctxn 1 "$i" begin || fails=$((fails + 1))
done
mptx 1 1001:0 m1001 1 >/dev/null || fails=$((fails + 1))
pids=()
for ((i = 1002; i <= 1000 + PMAX; i++)); do
	mptx 1 "$i:0" "m$i" 3 >"$tmp/m.$i" &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || fails=$((fails + 1))
done
MEND=$((M0 + 1 + 3 * (PMAX - 1)))
if [ "$fails" = 0 ] && krep_wait_for 10 hw_all m $MEND 1 2 &&
   lso_at "$M0" 1 2; then
	ktap_ok "$PMAX producers with open transactions, 15 writing at once: every batch taken, LSO $M0 on leader and follower"
else
	ktap_diag "$fails failed"
	cat "$tmp"/m.1* | ktap_diag_stdin
	st 1 m | ktap_diag_stdin
	st 2 m | ktap_diag_stdin
	ktap_fail "$PMAX producers with open transactions, 15 writing at once: every batch taken, LSO $M0 on leader and follower"
fi
# past the cap: a new producer id is refused, and nothing else
out=$(mtxn 1 "$((1001 + PMAX)):0" begin) && rc=0 || rc=$?
if [ "$rc" != 0 ] && grep -q POLICY_VIOLATION <<<"$out" &&
   grep -q producers_max <<<"$out"; then
	ktap_ok "a producer id past producers_max ($PMAX) is refused: POLICY_VIOLATION"
else
	ktap_diag "exit $rc: $out"
	ktap_fail "a producer id past producers_max ($PMAX) is refused: POLICY_VIOLATION"
fi
# the others are served: plain records; producer 1005's first batch again
# is a retry its entry answers with the offset it has, appending nothing
out=$(produce 1 m all plain 1 2>&1) && rc=0 || rc=$?
MEND=$((MEND + 1))
out2=$(mptx 1 1005:0 m1005 1) && rc2=0 || rc2=$?
o=$(jq -r .first_offset <<<"$out2" 2>/dev/null)
got=$(kc "$(bns 1)" consume m -o "${o:-x}" -c 1 2>&1)
if [ "$rc" = 0 ] && [ "$rc2" = 0 ] && [ "$got" = m1005-0 ] &&
   [ "$(sf 1 m leo)" = $MEND ]; then
	ktap_ok "the partition still serves the others: plain records; producer 1005's retry answered with its offset ($o), not appended"
else
	ktap_diag "plain: exit $rc: $out" "1005: exit $rc2: $out2" "at ${o:-?}: $got"
	st 1 m | ktap_diag_stdin
	ktap_fail "the partition still serves the others: plain records; producer 1005's retry answered with its offset ($o), not appended"
fi
# the newest first: odd ones abort, even ones commit; 1001 stays open
fails=0
for ((i = 1000 + PMAX; i > 1001; i--)); do
	op=commit
	[ $((i % 2)) = 0 ] || op=abort
	ctxn 1 "$i" $op || fails=$((fails + 1))
done
MEND=$((MEND + PMAX - 1))
if [ "$fails" = 0 ] && krep_wait_for 10 hw_all m $MEND 1 2 &&
   lso_at "$M0" 1 2; then
	ktap_ok "15 transactions ended in reverse order: LSO stays at the first open one ($M0) on leader and follower"
else
	st 1 m | ktap_diag_stdin
	st 2 m | ktap_diag_stdin
	ktap_fail "15 transactions ended in reverse order: LSO stays at the first open one ($M0) on leader and follower"
fi
want=$({
	echo m1001-0 plain-0
	for ((i = 1002; i <= 1000 + PMAX; i += 2)); do
		seq -f "m$i-%g" 0 2
	done
} | tr ' ' '\n' | sort | paste -sd,)
MEND=$((MEND + 1))
: >"$tmp/same"
if mtxn 1 1001:0 commit >/dev/null && krep_wait_for 10 hw_all m $MEND 1 2 &&
   krep_wait_for 10 lso_at $MEND 1 2 && [ "$(mcommitted 1)" = "$want" ] &&
   same_logs m 1 2 >"$tmp/same"; then
	ktap_ok "all ended: LSO = HW ($MEND) on both, read_committed skips the aborted ones, identical logs"
else
	ktap_diag "read_committed: $(mcommitted 1)" "want:           $want"
	ktap_diag_stdin <"$tmp/same"
	st 1 m | ktap_diag_stdin
	st 2 m | ktap_diag_stdin
	ktap_fail "all ended: LSO = HW ($MEND) on both, read_committed skips the aborted ones, identical logs"
fi
# broker 2 leads: the same state from its own log
MPE=$(sf 1 m pe)
lai $CE m 2 1 $((MPE + 1)) 1,2 1 2 >/dev/null
MEND=$((MEND + 2))
if [ "$(mcommitted 2)" = "$want" ] && [ "$(sf 2 m lso)" = $((MEND - 2)) ] &&
   mtxn 2 1002:1 begin >/dev/null && mptx 2 1002:1 n1002 1 >/dev/null &&
   mtxn 2 1002:1 commit >/dev/null && krep_wait_for 10 lso_at $MEND 1 2; then
	ktap_ok "new leader 2: the same committed records; producer 1002 goes on in epoch 1"
else
	ktap_diag "read_committed: $(mcommitted 2)"
	st 2 m | ktap_diag_stdin
	ktap_fail "new leader 2: the same committed records; producer 1002 goes on in epoch 1"
fi
# after producer_id_expiration_ms without a batch, the idle producers make
# room for a new one
new_pid() { ctxn 2 $((1001 + PMAX)) begin; }
if krep_wait_for $((3 * PEXP / 1000)) new_pid &&
   mptx 2 "$((1001 + PMAX)):0" late 1 >/dev/null &&
   mtxn 2 "$((1001 + PMAX)):0" commit >/dev/null &&
   kc "$(bns 2)" consume m --isolation read_committed | grep -qx late-0; then
	ktap_ok "producers idle for producer_id_expiration_ms ($PEXP) are forgotten: a new producer id is taken (at ${SECONDS}s)"
else
	ktap_diag "begin: $(mtxn 2 "$((1001 + PMAX)):0" begin)"
	st 2 m | ktap_diag_stdin
	ktap_fail "producers idle for producer_id_expiration_ms ($PEXP) are forgotten: a new producer id is taken"
fi

# --- teardown ---------------------------------------------------------------

ktap_diag "teardown (at ${SECONDS}s)"
krep_teardown_checks "$mark"
ktap_finish
