#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# controller_smoke.sh - krepd --controller on three brokers: it claims
# them, a second controller is refused, a leader cut off from its peers is
# fenced and replaced at a higher leader epoch (and, still reachable by the
# controller, told to follow), acks=all goes on without it and nothing
# acknowledged is lost, the old leader follows once its link is back and
# rejoins the ISR through the controller, krepctl elect --preferred moves
# leadership back; a broker whose namespace is deleted is let go (so the
# namespace is destroyed), fenced, and a new broker of the same id (a new
# incarnation) is brought back into every ISR; a restarted controller
# takes over at once from its state file and its periodic preferred
# election moves leadership back. KREP_SMOKE_LOG=1 prints krepd's logs at
# the end.
#
#   +- netns B1 (krep-b1-*) -+  +- netns B2 (krep-b2-*) -+  +- netns B3 (krep-b3-*) -+
#   | broker 1, cluster krepc|  | broker 2, cluster krepc|  | broker 3, cluster krepc|
#   | listen 10.202.0.1:9092 |  | listen 10.202.0.2:9092 |  | listen 10.202.0.3:9092 |
#   | kr0 10.202.0.1/24      |  | kr0 10.202.0.2/24      |  | kr0 10.202.0.3/24      |
#   +-----------|------------+  +-----------|------------+  +-----------|------------+
#               | veth                      | veth                      | veth
#   +- netns BR |(krep-br-*) ---------------|---------------------------|-----------+
#   |           p1 ------------ bridge krbr p2 ------------------------ p3          |
#   +-------------------------------------------------------------------------------+
#
#   krepd --controller (initial namespace), one netns session per broker:
#   --broker 1@netns:B1 --broker 2@netns:B2 --broker 3@netns:B3
#
# Every broker creates topic orders (3 partitions, RF 3, partition p led
# by broker p+1 at first, replica_lag_time_max_ms=1000). Broker 1 is cut
# off by taking its kr0 down: its peers lose it, the controller does not
# (its session is netlink, not the wire).
# Prints KTAP; leaves the module unloaded and no namespace behind.

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd jq ip

CLUSTER=krepc
NET=10.202.0
PORT=9092
LAG=1000		# replica_lag_time_max_ms
SESSION=3000		# krepd --session-timeout-ms
POLL=200		# krepd --poll-ms
RECORDS=200		# acknowledged before the cut, checked after it

KBAD='WARNING:|BUG:|BUG [^ ]+ \(|kernel BUG at|Oops|general protection|Kernel panic|INFO: task .* blocked|detected stall|UBSAN:|krep: leak'

tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
mark=controller-$$
STATE=$tmp/krepd.state
SOCK=$tmp/krepd.sock

kc() { # NS ARGS...: krepctl in broker namespace NS
	local ns=$1
	shift
	"$KREPCTL" --netns "$ns" "$@"
}

part() { # NS TOPIC P: one partition's replica on broker NS, compact JSON
	"$KREPCTL" --netns "$1" --json topic describe "$2" |
		jq -c --argjson p "$3" '.[] | select(.partition == $p)'
}

view() { # P: the controller's view of orders-P
	"$KREPCTL" elect --status --socket "$SOCK" |
		jq -c --argjson p "$1" 'select(.topic == "orders" and .partition == $p)'
}

brokers() { # the controller's brokers, one JSON object a line
	"$KREPCTL" elect --brokers --socket "$SOCK"
}

jf() { # JSON FILTER
	jq -r "$2" <<<"$1"
}

section() {
	ktap_diag "$1 (at ${SECONDS}s)"
}

KREPD_PID=
krepd_start() { # LOG [ARGS...]: krepd --controller in the background
	local log=$1
	shift
	"$KREPD" --controller --foreground --broker "1@netns:$B1" \
		--broker "2@netns:$B2" --broker "3@netns:$B3" \
		--session-timeout-ms "$SESSION" --poll-ms "$POLL" \
		--preferred-interval-ms 0 --state-file "$STATE" --socket "$SOCK" \
		"$@" >"$log" 2>&1 &
	KREPD_PID=$!
	krep_cleanup_push "kill $KREPD_PID 2>/dev/null"
	krep_wait_for 30 test -S "$SOCK"
}

diag_all() {
	local ns
	ktap_diag "controller brokers:"
	brokers 2>&1 | ktap_diag_stdin
	ktap_diag "controller view:"
	"$KREPCTL" elect --status --socket "$SOCK" 2>&1 | ktap_diag_stdin
	for ns in "$B1" "$B2" "$B3"; do
		ktap_diag "broker $ns:"
		"$KREPCTL" --netns "$ns" --json topic describe orders 2>&1 |
			jq -c '.[] | del(.remotes)' 2>&1 | ktap_diag_stdin
	done
	ktap_diag "krepd log (last 30 lines):"
	tail -n 30 "$tmp/krepd.log" | ktap_diag_stdin
}

ktap_plan 17

# --- set-up ---------------------------------------------------------------

krep_kmsg_mark "$mark"
krep_mod_unload
modprobe veth 2>/dev/null
modprobe bridge 2>/dev/null
# shellcheck disable=SC2119 # no module parameters: one broker per netns
krep_mod_load || ktap_bail "insmod krep.ko failed"

for n in B1 B2 B3 BR; do
	krep_netns_add "$n" "${n,,}" || ktap_bail "ip netns add failed"
done
for i in 1 2 3; do
	v=B$i
	echo "link add kr0 netns ${!v} type veth peer name p$i netns $BR"
done | ip -b - || ktap_bail "cannot create the veth links"
printf '%s\n' "link add krbr type bridge" "link set krbr up" \
	"link set p1 master krbr up" "link set p2 master krbr up" \
	"link set p3 master krbr up" |
	ip -n "$BR" -b - || ktap_bail "cannot set up the bridge"
for i in 1 2 3; do
	v=B$i
	printf '%s\n' "link set lo up" "addr add $NET.$i/24 dev kr0" \
		"link set kr0 up" | ip -n "${!v}" -b - ||
		ktap_bail "cannot address netns ${!v}"
done

setup_ok=0
for i in 1 2 3; do
	v=B$i
	peers=
	for j in 1 2 3; do
		[ "$j" = "$i" ] || peers+="${peers:+,}$j@$NET.$j:$PORT"
	done
	kc "${!v}" broker set id "$i" cluster "$CLUSTER" \
		listen "$NET.$i:$PORT" peers "$peers" || setup_ok=1
	kc "${!v}" topic create orders partitions 3 replication-factor 3 \
		config replica_lag_time_max_ms=$LAG || setup_ok=1
done
peers_up() {
	local ns
	for ns in "$B1" "$B2" "$B3"; do
		kc "$ns" --json broker show |
			jq -e 'all(.peers[]; .state == "up")' >/dev/null || return 1
	done
}
isr_full() {
	local ns
	for ns in "$B1" "$B2" "$B3"; do
		"$KREPCTL" --netns "$ns" --json topic describe orders |
			jq -e 'all(.[] | select(.role == "leader"); (.isr | length) == 3)' \
			>/dev/null || return 1
	done
}
krep_wait_for 60 peers_up || setup_ok=1
krep_wait_for 60 isr_full || setup_ok=1
if [ "$setup_ok" = 0 ]; then
	ktap_ok "3 brokers up: peers connected, orders-0..2 with full ISRs"
else
	ktap_fail "3 brokers up: peers connected, orders-0..2 with full ISRs"
	ktap_bail "the cluster did not come up"
fi

# --- 1. the controller claims the cluster --------------------------------

section "1. claims"

krepd_start "$tmp/krepd.log" || ktap_diag "no control socket"
claimed() {
	brokers >"$tmp/brokers" 2>/dev/null &&
		[ "$(jq -s '[.[] | select(.id) | select(.reachable and .claimed and (.fenced | not))] | length' "$tmp/brokers")" = 3 ]
}
viewed() {
	"$KREPCTL" elect --status --socket "$SOCK" >"$tmp/view" 2>/dev/null &&
		jq -s -e 'length == 3 and all(.[]; .leader == .replicas[0] and (.isr | length) == 3 and (.offline | not))' \
			"$tmp/view" >/dev/null
}
if krep_wait_for 30 claimed && krep_wait_for 30 viewed; then
	CE=$(jq -s -r '.[0].controller_epoch' "$tmp/brokers")
	ktap_ok "krepd --controller claims brokers 1-3 (controller epoch $CE) and adopts their view: 3 partitions, preferred leaders, full ISRs"
else
	CE=0
	diag_all
	ktap_fail "krepd --controller claims brokers 1-3 and adopts their view"
fi

# (bounded: a controller that is not refused would run forever)
err=$(timeout 30 "$KREPD" --controller --foreground --broker "1@netns:$B1" \
	--broker "2@netns:$B2" --broker "3@netns:$B3" \
	--state-file "$tmp/other.state" --socket "$tmp/other.sock" 2>&1 </dev/null)
rc=$?
if [ "$rc" = 1 ] && grep -qE "broker [123] is held by controller [0-9a-f]{16} \(epoch $CE\): another controller is active" <<<"$err"; then
	ktap_ok "a second controller on the same cluster refuses: exit 1, names the owner and epoch"
else
	ktap_diag "exit $rc: $err"
	ktap_fail "a second controller on the same cluster refuses: exit 1, names the owner and epoch"
fi

# --- 2. broker 1, leader of orders-0, is cut off ------------------------

section "2. failover"

seq 1 "$RECORDS" | sed 's/^/before-cut-/' >"$tmp/before"
out=$(kc "$B1" --json produce orders acks all timeout 10000 batch 20 <"$tmp/before" 2>&1)
rc=$?
v0=$(view 0)
if [ "$rc" = 0 ] && [ "$(jf "$out" .records)" = "$RECORDS" ]; then
	ktap_ok "$RECORDS records to orders-0 with acks=all on leader 1"
else
	ktap_diag "exit $rc: $out"
	ktap_fail "$RECORDS records to orders-0 with acks=all on leader 1"
fi

le0=$(jf "$v0" .leader_epoch)
t_cut=$SECONDS
ip -n "$B1" link set kr0 down
failed_over() {
	local v
	v=$(view 0) && jq -e --argjson e "$le0" \
		'.leader == 2 and .leader_epoch == $e + 1 and (.isr | index(1) | not)' \
		<<<"$v" >/dev/null &&
	part "$B2" orders 0 | jq -e --argjson e "$le0" \
		'.role == "leader" and .leader_epoch == $e + 1' >/dev/null
}
krep_wait_for 60 failed_over
fo=$?
t_fo=$((SECONDS - t_cut))
v1=$(view 0)
if [ "$fo" = 0 ] && grep -q "broker 1 fenced" "$tmp/krepd.log" &&
   grep -qE "orders-0: leader 1 -> 2 \(from the ISR" "$tmp/krepd.log"; then
	ktap_ok "broker 1's link down: fenced, orders-0 led by 2 at leader epoch $((le0 + 1)) (ISR $(jf "$v1" '.isr | map(tostring) | join(",")'), ${t_fo}s)"
else
	diag_all
	ktap_fail "broker 1's link down: fenced, orders-0 led by broker 2 at leader epoch $((le0 + 1))"
fi

demoted() {
	part "$B1" orders 0 | jq -e --argjson e "$le0" \
		'.role == "follower" and .leader == 2 and .leader_epoch == $e + 1' >/dev/null
}
if krep_wait_for 20 demoted; then
	ktap_ok "the cut-off old leader was told over its session: broker 1 follows 2 at epoch $((le0 + 1))"
else
	ktap_diag "broker 1: $(part "$B1" orders 0)"
	ktap_fail "the cut-off old leader was told over its session: broker 1 follows 2"
fi

out=$(echo after-cut | kc "$B2" --json produce orders acks all timeout 10000 2>&1)
rc=$?
kc "$B2" consume orders -c "$RECORDS" >"$tmp/after" 2>"$tmp/consume.err"
crc=$?
if [ "$rc" = 0 ] && [ "$crc" = 0 ] && cmp -s "$tmp/before" "$tmp/after"; then
	ktap_ok "acks=all completes on the new leader; all $RECORDS acknowledged records are there"
else
	ktap_diag "produce exit $rc: $out; consume exit $crc: $(cat "$tmp/consume.err")"
	diff "$tmp/before" "$tmp/after" | head -n 5 | ktap_diag_stdin
	ktap_fail "acks=all completes on the new leader; all $RECORDS acknowledged records are there"
fi

# --- 3. broker 1 comes back ------------------------------------------------

section "3. return"

ip -n "$B1" link set kr0 up
back() {
	local v
	brokers | jq -s -e '.[] | select(.id == 1) | (.fenced | not)' >/dev/null &&
	v=$(view 0) && jq -e '.leader == 2 and (.isr | sort) == [1, 2, 3]' <<<"$v" >/dev/null &&
	part "$B2" orders 0 | jq -e '(.isr | sort) == [1, 2, 3]' >/dev/null &&
	part "$B1" orders 0 | jq -e --argjson e "$le0" \
		'.role == "follower" and .leader == 2 and .leader_epoch == $e + 1 and .hw == .leo' >/dev/null
}
t_up=$SECONDS
krep_wait_for 90 back
bk=$?
t_up=$((SECONDS - t_up))
if [ "$bk" = 0 ] && grep -q "broker 1 unfenced" "$tmp/krepd.log" &&
   grep -qE "orders-0: ISR [0-9,]+ -> 1,2,3 \(ALTER_ISR from leader 2" "$tmp/krepd.log"; then
	ktap_ok "link back: broker 1 unfenced, follows 2, rejoins the ISR through the controller's commit (${t_up}s)"
else
	diag_all
	ktap_fail "link back: broker 1 unfenced, follows 2, rejoins the ISR through the controller's commit"
fi

# --- 4. preferred leader ---------------------------------------------------

section "4. preferred"

out=$("$KREPCTL" elect --preferred orders 0 --socket "$SOCK" 2>&1)
rc=$?
v2=$(view 0)
led() {
	part "$B1" orders 0 | jq -e --argjson e "$le0" \
		'.role == "leader" and .leader_epoch == $e + 2' >/dev/null
}
krep_wait_for 10 led
ld=$?
if [ "$rc" = 0 ] && [[ $out == "orders-0: elected broker 1 (was 2;"* ]] &&
   [ "$(jf "$v2" .leader)" = 1 ] && [ "$ld" = 0 ]; then
	ktap_ok "krepctl elect --preferred orders 0: broker 1 leads again at epoch $((le0 + 2)), exit 0"
else
	ktap_diag "exit $rc: $out"
	diag_all
	ktap_fail "krepctl elect --preferred orders 0: broker 1 leads again"
fi
out=$("$KREPCTL" elect --preferred orders 0 --socket "$SOCK" 2>&1)
rc=$?
if [ "$rc" = 0 ] && [[ $out == "orders-0: ELECTION_NOT_NEEDED"* ]]; then
	ktap_ok "again: ELECTION_NOT_NEEDED, exit 0"
else
	ktap_diag "exit $rc: $out"
	ktap_fail "again: ELECTION_NOT_NEEDED, exit 0"
fi

# --- 5. broker 3's namespace deleted, then a new broker 3 -------------------

section "5. broker 3 deleted and recreated"

ip netns del "$B3"
gone() { # peers 1 and 2 lost broker 3: its namespace was really destroyed
	local ns
	for ns in "$B1" "$B2"; do
		kc "$ns" --json broker show |
			jq -e '.peers[] | select(.id == 3) | .state != "up"' >/dev/null || return 1
	done
}
fenced3() {
	brokers | jq -s -e '.[] | select(.id == 3) | .fenced' >/dev/null &&
		view 2 | jq -e '.leader == 1' >/dev/null
}
krep_wait_for 30 gone
gn=$?
krep_wait_for 30 fenced3
f3=$?
if [ "$gn" = 0 ] && [ "$f3" = 0 ] &&
   grep -q "broker 3: network namespace $B3 is gone or was replaced: session closed" "$tmp/krepd.log"; then
	ktap_ok "ip netns del: krepd lets go of the namespace (it is destroyed: peers lose broker 3), fences 3, orders-2 led by 1"
else
	ktap_diag "peers lost 3: $gn; fenced and failed over: $f3"
	diag_all
	ktap_fail "ip netns del: krepd lets go of the namespace, fences 3, orders-2 led by 1"
fi

# the same name, a new broker 3: an empty log, a new incarnation
ip netns add "$B3" || ktap_diag "cannot add netns $B3 again"
ip link add kr0 netns "$B3" type veth peer name p3 netns "$BR"
ip -n "$BR" link set p3 master krbr up
printf '%s\n' "link set lo up" "addr add $NET.3/24 dev kr0" "link set kr0 up" |
	ip -n "$B3" -b -
kc "$B3" broker set id 3 cluster "$CLUSTER" listen "$NET.3:$PORT" \
	peers "1@$NET.1:$PORT,2@$NET.2:$PORT" >/dev/null
kc "$B3" topic create orders partitions 3 replication-factor 3 \
	config replica_lag_time_max_ms=$LAG >/dev/null
rejoined3() {
	brokers | jq -s -e '.[] | select(.id == 3) | (.fenced | not) and .claimed' >/dev/null &&
	"$KREPCTL" elect --status --socket "$SOCK" |
		jq -s -e 'all(.[]; (.isr | length) == 3)' >/dev/null &&
	part "$B3" orders 2 | jq -e '.role == "follower" and .leader == 1 and .leader_epoch > 0' >/dev/null
}
krep_wait_for 90 rejoined3
rj=$?
if [ "$rj" = 0 ] && grep -qE "broker 3 restarted \(incarnation [0-9a-f]{16} -> [0-9a-f]{16}\)" "$tmp/krepd.log"; then
	ktap_ok "a new broker 3 (new incarnation): seen as restarted, told the current leaders, back in every ISR"
else
	diag_all
	ktap_fail "a new broker 3 (new incarnation): seen as restarted, told the current leaders, back in every ISR"
fi

# --- 6. restart ------------------------------------------------------------

section "6. restart"

kill -TERM "$KREPD_PID"
wait "$KREPD_PID"
rc=$?
mv "$tmp/krepd.log" "$tmp/krepd.1.log"
# orders-2 is still led by 1: the periodic preferred election moves it back
krepd_start "$tmp/krepd.log" --preferred-interval-ms 1000
restarted() {
	claimed && viewed
}
krep_wait_for 30 restarted
rs=$?
ce2=$(jq -s -r '.[0].controller_epoch' "$tmp/brokers" 2>/dev/null)
if [ "$rc" = 0 ] && [ "$rs" = 0 ] && [ "$ce2" = $((CE + 1)) ] &&
   grep -q "state from $STATE" "$tmp/krepd.log" &&
   [ "$(jf "$(view 0)" .leader_epoch)" = $((le0 + 2)) ]; then
	ktap_ok "SIGTERM releases the claims: a new controller takes over at once (epoch $ce2) from the state file"
else
	ktap_diag "exit $rc on SIGTERM; epoch ${ce2:-?} after $CE"
	diag_all
	ktap_fail "SIGTERM releases the claims: a new controller takes over at once from the state file"
fi
if grep -qE "orders-2: leader 1 -> 3 \(preferred, periodic" "$tmp/krepd.log" &&
   part "$B3" orders 2 | jq -e '.role == "leader"' >/dev/null; then
	ktap_ok "preferred-election-interval-ms: orders-2 moved back to broker 3 by the periodic election"
else
	diag_all
	ktap_fail "preferred-election-interval-ms: orders-2 moved back to broker 3 by the periodic election"
fi
out=$("$KREPCTL" elect --preferred --socket "$SOCK" 2>&1)
rc=$?
if [ "$rc" = 0 ] && [ "$(grep -c "ELECTION_NOT_NEEDED" <<<"$out")" = 3 ]; then
	ktap_ok "krepctl elect --preferred (every partition): ELECTION_NOT_NEEDED x 3, exit 0"
else
	ktap_diag "exit $rc: $out"
	ktap_fail "krepctl elect --preferred (every partition): ELECTION_NOT_NEEDED x 3, exit 0"
fi

kill -TERM "$KREPD_PID"
wait "$KREPD_PID"
rc=$?
if [ "$rc" = 0 ]; then
	ktap_ok "krepd --controller stops on SIGTERM with exit 0"
else
	ktap_fail "krepd --controller stops on SIGTERM with exit 0 (exit $rc)"
fi

# --- clean-up and the kernel log ---------------------------------------------

ok=0
timeout 60 rmmod krep || ok=1
for ns in "$B1" "$B2" "$B3" "$BR"; do
	ip netns del "$ns" || ok=1
done
log=$(krep_kmsg_since "$mark")
if [ "$ok" = 0 ] && grep -E "$KBAD" <<<"$log" | ktap_diag_stdin; then
	ktap_fail "kernel log: no WARNING, BUG, oops or leak"
elif [ "$ok" != 0 ]; then
	ktap_fail "kernel log: no WARNING, BUG, oops or leak (rmmod or netns del failed)"
else
	ktap_ok "kernel log: no WARNING, BUG, oops or leak; module unloaded"
fi

if [ "${KREP_SMOKE_LOG:-0}" = 1 ]; then
	ktap_diag "krepd logs:"
	cat "$tmp/krepd.1.log" "$tmp/krepd.log" | ktap_diag_stdin
fi
ktap_finish
