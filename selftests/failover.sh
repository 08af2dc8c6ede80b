#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# failover.sh - krepd as the controller of three brokers, and brokers dying.
#
# Three brokers in three namespaces (cluster.sh); krepd --controller in the
# initial namespace, on the brokers' bridge as $NET.100, reaches each
# through `krepd --relay` in the broker's namespace (TCP, shared secret),
# as it would reach other hosts. A broker "dies" by losing its link (kr0
# down: its peers and the controller stop hearing it) or by losing its
# namespace (and with it every log). Topics (lag 1000 ms):
#   f   RF 3, replicas 1,2,3           failover, preferred election, faults
#   l   RF 3, replicas 1,2,3, min ISR 2 last replica standing (ELR)
#   o   RF 2, replicas 1,2             offline without an ISR member
#
# 1. krepd claims every broker; a second krepd refuses to act. It creates
#    a topic on every broker with Kafka's assignment (krepctl topic create
#    --controller), creates it again on a broker that lost it (out of its
#    ISRs first), and deletes it from every broker.
# 2. the leader's link goes: a new leader from the ISR within the session
#    timeout, epoch bumped; every acks=all record is there; the old leader
#    returns, follows, rejoins the ISR; `krepctl elect --preferred` moves
#    the leadership back. A consumer following the leader through this,
#    section 3 and section 4's cuts reads every record once and never sees
#    HW go back from one leader (a new leader's may trail, as in Kafka).
# 3. krepd restarts from its state file: the next controller epoch, the
#    same leaders and epochs, nothing elected.
# 4. no ISR member alive, unclean election off: the partition goes offline
#    (a live out-of-sync replica is not elected) and comes back with its
#    ISR member.
# 5. links cut and restored at random for 30 s (KREP_FAULT_SECS) under
#    acks=all producing and consuming: every acknowledged record on every
#    in-sync replica, exactly once, in order, and read by the consumer.
# 6. last replica standing: ISR {1} below min ISR 2 after 3 then 2 leave;
#    broker 1 is lost with its log (namespace deleted, recreated empty);
#    broker 2, an eligible leader replica, is elected when it returns and
#    holds every acknowledged record; the empty broker 1 is never elected.
#    (Last: every partition led by broker 1 loses its only ISR member.)
# The module runs with short deadlines (a cut link is noticed in 2.5 s, a
# restored one used again within 0.5 s); krepd's session timeout is 3 s.
# Prints KTAP; leaves the module unloaded and no namespace behind.

# shellcheck disable=SC2317,SC2016 # the conditions krep_wait_for polls; jq programs
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

krep_require_vm
krep_require_cmd jq ip /usr/bin/python3

LAG=1000
SESSION=3000		# krepd's session timeout (its requests' timeout: a quarter)
FAULT_SECS=${KREP_FAULT_SECS:-30}	# section 5's length; KREP_FAULT_SEED its schedule
tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
mark=failover-$$
SOCK=$tmp/krepd.sock
STATE=$tmp/krepd.state
FH=$here/fault_helper.py

# Each poll below asks krepctl once and jq once (a process start costs
# 0.15 to 0.5 s in the VM).
cv() { # TOPIC FILTER: of krepd's view of TOPIC-0
	local s
	s=$("$KREPCTL" elect --status --socket "$SOCK" 2>/dev/null) || return 1
	jq -r --arg t "$1" "select(.topic == \$t and .partition == 0) | $2" <<<"$s"
}
status() { cv "$1" tojson; }	# TOPIC: krepd's view of TOPIC-0, compact JSON
kbrokers() { # FILTER: of krepd's --brokers, one array: the controller, then
	# the brokers
	local s
	s=$("$KREPCTL" elect --brokers --socket "$SOCK" 2>/dev/null) || return 1
	jq -rs "$1" <<<"$s"
}
seen() { # N: krepd reaches broker N, has it claimed and unfenced
	[ "$(kbrokers ".[1:][] | select(.id == $1) |
		.reachable and .claimed and (.fenced | not)")" = true ]
}

sv() { # N TOPIC FILTER: of broker N's TOPIC-0
	local d
	d=$(describe "$(bns "$1")" "$2") || return 1
	jq -r ".[] | select(.partition == 0) | $3" <<<"$d"
}
st() { sv "$1" "$2" tojson; }	# N TOPIC: compact JSON

# The system under test first: this script and its clients (polls, Python)
# run $NICE steps nicer than krepd and its relays, so that a VM short of
# CPU (software emulation, VMs side by side) delays the checks rather than
# krepd's requests to its brokers (late ones close the session, and a
# broker not read for a session timeout is fenced).
NICE=5
renice -n $NICE -p $$ >/dev/null || ktap_bail "cannot renice the suite"

RPORT=9093		# the relays' port on each broker's address
brokers() { # the --broker options: every broker through its relay
	local n
	for n in 1 2 3; do
		printf -- '--broker %s@relay:%s.%s:%s:%s ' "$n" "$NET" "$n" \
			"$RPORT" "$tmp/secret"
	done
}
relay_start() { # N
	nice -n -$NICE "$KREPD" --relay "$NET.$1:$RPORT" --secret-file "$tmp/secret" \
		--netns "$(bns "$1")" >>"$tmp/relay.$1.log" 2>&1 &
	RELAY[$1]=$!
	krep_cleanup_push "kill ${RELAY[$1]} 2>/dev/null"
}
relay_stop() { # N
	kill "${RELAY[$1]}" 2>/dev/null
	wait "${RELAY[$1]}" 2>/dev/null
}
krepd_start() {
	# shellcheck disable=SC2046 # brokers prints separate words
	nice -n -$NICE "$KREPD" --controller --foreground \
		--session-timeout-ms $SESSION \
		--poll-ms 250 --preferred-interval-ms 0 --state-file "$STATE" \
		--socket "$SOCK" $(brokers) >>"$tmp/krepd.log" 2>&1 &
	KREPD_PID=$!
	krep_cleanup_push "kill $KREPD_PID 2>/dev/null; wait $KREPD_PID 2>/dev/null"
}
krepd_stop() {
	kill "$KREPD_PID" 2>/dev/null
	wait "$KREPD_PID" 2>/dev/null
}
ctl_up() { [ -S "$SOCK" ] && status f | grep -q .; }

fh() { /usr/bin/python3 "$FH" "$@"; }	# for the long runs in the background
all_ns() { echo "$B1,$B2,$B3"; }

produce_to() { # N TOPIC ACKS PREFIX COUNT
	seq -f "$4-%g" 0 $(($5 - 1)) |
		kc "$(bns "$1")" --json produce "$2" acks "$3" timeout 10000
}

leader_is() { # TOPIC N: the controller and broker N agree N leads
	[ "$(cv "$1" .leader)" = "$2" ] && [ "$(sv "$2" "$1" .role)" = leader ]
}
isr_is() { [ "$(cv "$1" '.isr | join(",")')" = "$2" ]; }
isr_full() { [ "$(cv "$1" '.isr | sort | join(",")')" = 1,2,3 ]; }	# TOPIC
led_by_1() { # TOPIC: broker 1 leads it; if not, krepd is asked to make it so
	# (the preferred replica: not eligible until it is in the ISR)
	leader_is "$1" 1 && return 0
	"$KREPCTL" elect --preferred "$1" 0 --socket "$SOCK" >/dev/null 2>&1
	return 1
}

diag_log() { # krepd's last decisions and troubles (not its ISR commits)
	grep -vE ': ISR .*\(ALTER_ISR|was behind' "$tmp/krepd.log" | tail -n 20 |
		ktap_diag_stdin
}
diag_state() { # TOPIC
	status "$1" | ktap_diag_stdin
	for n in 1 2 3; do st "$n" "$1" | ktap_diag_stdin; done
	diag_log
}

ktap_plan 23

# --- set-up ---------------------------------------------------------------

krep_kmsg_mark "$mark"
krep_mod_unload
krep_mod_load fetch_timeout_ms=2000 reconnect_backoff_max_ms=500 ||
	ktap_bail "insmod krep.ko failed"
cluster_up krepf || ktap_bail "cannot set up three brokers"
cluster_topic f partitions 1 replication-factor 3 \
	config replica_lag_time_max_ms=$LAG || ktap_bail "topic f"
cluster_topic l partitions 1 replication-factor 3 \
	config replica_lag_time_max_ms=$LAG,min_insync_replicas=2 ||
	ktap_bail "topic l"
cluster_topic o partitions 1 replication-factor 2 \
	config replica_lag_time_max_ms=$LAG || ktap_bail "topic o"
krep_wait_for 60 cluster_peers_up || ktap_bail "peers did not connect"
# the controller's host: the initial namespace on the bridge
ip link add krc type veth peer name pc netns "$BR" &&
	ip -n "$BR" link set pc master krbr up &&
	ip addr add "$NET.100/24" dev krc && ip link set krc up ||
	ktap_bail "cannot wire the controller's namespace"
# The controller's host gives up on the address of a cut broker within a
# second or two (ARP: 1 s reachable, 1 s delay, probes 100 ms apart), not
# after up to 30 s: a connect to it then fails at once instead of taking
# the 3 s krepd allows a relay session to open, in its one poll loop.
for kv in base_reachable_time_ms=1000 delay_first_probe_time=1 \
	  retrans_time_ms=100 ucast_solicit=2 mcast_solicit=3; do
	echo "${kv#*=}" >"/proc/sys/net/ipv4/neigh/krc/${kv%%=*}" ||
		ktap_bail "cannot set krc's ${kv%%=*}"
done
printf 'failover-secret-%s%s\n' "$RANDOM" "$RANDOM" >"$tmp/secret"
chmod 600 "$tmp/secret"
declare -a RELAY
for n in 1 2 3; do relay_start "$n"; done

# --- 1. one controller --------------------------------------------------------

ktap_diag "1. krepd takes over (at ${SECONDS}s)"
krepd_start
claimed() { # every broker holds krepd's claim at its epoch (asked at once)
	local n rc=0 e
	local -a pids=()
	e=$(kbrokers '.[0].controller_epoch') || return 1
	for n in 1 2 3; do
		ip netns exec "$(bns "$n")" /usr/bin/python3 "$here/ctl_helper.py" \
			broker >"$tmp/claim.$n" 2>&1 &
		pids+=($!)
	done
	for n in 1 2 3; do
		wait "${pids[n - 1]}" || rc=1
		grep -q " ctrl-epoch $e " "$tmp/claim.$n" || rc=1
	done
	return $rc
}
krep_wait_for 30 ctl_up && up=1 || up=0
# meanwhile a second krepd, which must refuse to act while the first lives
# shellcheck disable=SC2046 # brokers prints separate words
timeout 30 "$KREPD" --controller --foreground --session-timeout-ms $SESSION \
	--state-file "$tmp/second.state" --socket "$tmp/second.sock" \
	$(brokers) >"$tmp/second.out" 2>&1 &
second=$!
if [ "$up" = 1 ] && [ "$(cv f .leader)" = 1 ] && claimed; then
	ktap_ok "krepd claims the three brokers and adopts their partitions"
else
	diag_state f
	cat "$tmp"/claim.* 2>&1 | ktap_diag_stdin
	ktap_fail "krepd claims the three brokers and adopts their partitions"
fi
wait "$second" && rc=0 || rc=$?
out=$(cat "$tmp/second.out")
if [ "$rc" = 1 ] && grep -q "another controller is active" <<<"$out"; then
	ktap_ok "a second krepd refuses to act while the first lives"
else
	ktap_diag "exit $rc: $out"
	ktap_fail "a second krepd refuses to act while the first lives"
fi

# --- 1b. topics krepd creates and deletes ---------------------------------------

ktap_diag "1b. krepctl topic create/delete --controller (at ${SECONDS}s)"
out=$("$KREPCTL" topic create c partitions 6 replication-factor 3 \
	config replica_lag_time_max_ms=$LAG --socket "$SOCK" 2>&1) && rc=0 || rc=$?
declare -A AR
while read -r pr reps; do
	AR[${pr#c-}]=${reps#replicas=}
done < <(grep '^c-[0-5] replicas=' <<<"$out")
firsts=$(for p in 0 1 2 3 4 5; do echo "${AR[$p]%%,*}"; done | sort | uniq -c |
	awk '{ print $1 }' | sort -u | tr '\n' ' ')
cdesc() { # FILTER: jq -r FILTER over [describe c on broker 1, 2, 3]
	local d
	d=$(describe "$B1" c && describe "$B2" c && describe "$B3" c) || return 1
	jq -rs "$1" <<<"$d"
}
same_ar() { # every broker has the six partitions of c with these replicas
	local want n p

	want=$(for n in 1 2 3; do
		for p in 0 1 2 3 4 5; do echo "$n $p ${AR[$p]}"; done
	done)
	[ "$(cdesc 'to_entries[] | (.key + 1) as $b | .value | sort_by(.partition)[] |
		"\($b) \(.partition) \(.replicas | join(","))"')" = "$want" ]
}
if [ "$rc" = 0 ] && [ "${#AR[@]}" = 6 ] && [ "$firsts" = "2 " ] &&
   krep_wait_for 10 same_ar; then
	ktap_ok "krepd creates c on every broker: the assignment it printed, each broker the preferred leader of 2 of 6"
else
	ktap_diag "exit $rc: $out" "first replicas per broker: $firsts"
	describe "$B1" c | ktap_diag_stdin
	ktap_fail "krepd creates c on every broker: the assignment it printed, each broker the preferred leader of 2 of 6"
fi
pleader() { echo "${AR[$1]%%,*}"; }	# P: its preferred leader
led() { # every partition of c led by its preferred replica (and no other)
	# at epoch 0, ISR full
	local want p

	want=$(for p in 0 1 2 3 4 5; do echo "$p $(pleader "$p") 0 3"; done)
	[ "$(cdesc '[to_entries[] | (.key + 1) as $b | .value[] |
		select(.role == "leader") |
		{p: .partition, b: $b, e: .leader_epoch, i: (.isr | length)}] |
		sort_by(.p)[] | "\(.p) \(.b) \(.e) \(.i)"')" = "$want" ]
}
rc=0
if krep_wait_for 20 led; then
	for p in 0 1 2 3 4 5; do
		seq -f "c$p-%g" 1 5 | kc "$(bns "$(pleader "$p")")" produce c \
			partition "$p" acks all timeout 10000 >/dev/null || rc=1
	done
fi
if led && [ "$rc" = 0 ]; then
	ktap_ok "each partition of c led by its preferred replica at epoch 0; acks=all on each"
else
	describe "$B1" c | ktap_diag_stdin
	diag_log
	ktap_fail "each partition of c led by its preferred replica at epoch 0; acks=all on each"
fi
kc "$B3" topic delete c
back3() { # broker 3 has c again, caught up, in every ISR; none of it led by 3
	local s d
	s=$("$KREPCTL" elect --status --socket "$SOCK" 2>/dev/null) &&
		d=$(describe "$B1" c && describe "$B2" c && describe "$B3" c) ||
		return 1
	# krepd's view (objects), then the three describes (arrays)
	jq -es '
	def one($d; $p): [$d[] | select(.partition == $p)] |
		if length == 1 then .[0] else null end;
	map(select(type == "object" and .topic == "c")) as $s |
	map(select(type == "array")) as $d |
	($d | length) == 3 and ($s | length) == 6 and
	all($s[]; . as $x | ($x.leader == 1 or $x.leader == 2) and
		(one($d[$x.leader - 1]; $x.partition) |
		 . != null and .role == "leader" and .leo == 5 and (.isr | length) == 3) and
		(one($d[2]; $x.partition) |
		 . != null and .role == "follower" and .leo == 5))' \
		<<<"$s"$'\n'"$d" >/dev/null
}
if krep_wait_for 60 back3 &&
   grep -q 'topic c: created on broker 3 (it had missed it)' "$tmp/krepd.log" &&
   grep -q 'broker 3 lost its replica' "$tmp/krepd.log"; then
	ktap_ok "broker 3 lost c: krepd takes it out of the ISRs, creates c again there, it catches up and rejoins"
else
	describe "$B3" c | ktap_diag_stdin
	"$KREPCTL" elect --status --socket "$SOCK" | grep '"c"' | ktap_diag_stdin
	grep -E 'topic c|^c-' "$tmp/krepd.log" | tail -n 20 | ktap_diag_stdin
	diag_log
	ktap_fail "broker 3 lost c: krepd takes it out of the ISRs, creates c again there, it catches up and rejoins"
fi
out=$("$KREPCTL" topic delete c --controller --socket "$SOCK" 2>&1) && rc=0 || rc=$?
gone() { # each asked, each answers, none has c
	local n out
	for n in 1 2 3; do
		out=$(kc "$(bns "$n")" --json topic list) &&
			jq -e 'type == "array" and all(.[]; .topic != "c")' \
				<<<"$out" >/dev/null || return 1
	done
	out=$("$KREPCTL" elect --status --socket "$SOCK") &&
		jq -se 'length > 0 and all(.[]; .topic != "c")' <<<"$out" \
			>/dev/null || return 1
	[ -s "$STATE" ] && grep -q '^controller-epoch ' "$STATE" &&
		! grep -qE '^(topic|partition) c ' "$STATE"
}
if [ "$rc" = 0 ] && krep_wait_for 20 gone &&
   grep -q 'topic c: deleted from every broker' "$tmp/krepd.log"; then
	ktap_ok "krepctl topic delete c --controller: gone from every broker, krepd's view and its state file"
else
	ktap_diag "exit $rc: $out"
	for n in 1 2 3; do kc "$(bns "$n")" topic list 2>&1 | ktap_diag_stdin; done
	grep -E '^(controller-epoch|topic|partition c )' "$STATE" 2>&1 | ktap_diag_stdin
	ktap_fail "krepctl topic delete c --controller: gone from every broker, krepd's view and its state file"
fi

# --- 2. the leader's link goes ------------------------------------------------

ktap_diag "2. leader failover (at ${SECONDS}s)"
# broker 1 leads f-0, ISR full (whatever happened before)
krep_wait_for 30 led_by_1 f && krep_wait_for 30 isr_full f || diag_state f
out=$(produce_to 1 f all pre 50) && rc=0 || rc=$?
[ "$rc" = 0 ] || ktap_diag "produce: $out"
# the consumer follows f's leader until section 5 (it only needs to outlive
# the failover and the rejoin below, which take well under 40 s)
fh consume f "$(all_ns)" 40 "$tmp/cons.f" >"$tmp/cons.f.out" 2>&1 &
cons=$!
krep_cleanup_push "kill $cons 2>/dev/null"
epoch0=$(cv f .leader_epoch)
link_down 1
t0=$SECONDS
new_leader() { leader_is f 2 || leader_is f 3; }
if krep_wait_for 30 new_leader; then
	new=$(cv f .leader)
	ktap_ok "broker 1 cut off: broker $new leads (epoch $epoch0 -> $(cv f .leader_epoch)) after $((SECONDS - t0)) s"
else
	new=2
	diag_state f
	ktap_fail "broker 1 cut off: a new leader from the ISR"
fi
out=$(produce_to "$new" f all post 20 2>&1) && rc=0 || rc=$?
# the new leader's log, read while broker 1 comes back (a Python start)
ip netns exec "$(bns "$new")" /usr/bin/python3 "$here/repl_helper.py" \
	dump f 0 "$tmp/f" >"$tmp/f.out" 2>&1 &
dump=$!
link_up 1
krep_wait_for 40 isr_full f && [ "$(sv 1 f .role)" = follower ] &&
	[ "$(sv 1 f .leo)" = "$(sv "$new" f .leo)" ] && rejoin=1 || rejoin=0
wait "$dump"
{ seq -f 'pre-%g' 0 49; seq -f 'post-%g' 0 19; } >"$tmp/f.want"
if [ "$rc" = 0 ] && grep -q "records 70 " "$tmp/f.out" &&
   cmp -s "$tmp/f.want" "$tmp/f.0"; then
	ktap_ok "all 50 records acknowledged before, and 20 after, in order on the new leader"
else
	ktap_diag "exit $rc: $out" "$(cat "$tmp/f.out")"
	ktap_fail "all 50 records acknowledged before, and 20 after, in order on the new leader"
fi
if [ "$rejoin" = 1 ]; then
	ktap_ok "broker 1 returns, follows broker $new and rejoins the ISR"
else
	diag_state f
	ktap_fail "broker 1 returns, follows broker $new and rejoins the ISR"
fi
out=$("$KREPCTL" elect --preferred f 0 --socket "$SOCK" 2>&1) && rc=0 || rc=$?
if [ "$rc" = 0 ] && krep_wait_for 15 leader_is f 1; then
	ktap_ok "krepctl elect --preferred: broker 1 leads f-0 again"
else
	ktap_diag "exit $rc: $out"
	diag_state f
	ktap_fail "krepctl elect --preferred: broker 1 leads f-0 again"
fi

# --- 3. krepd restarts ---------------------------------------------------------

ktap_diag "3. krepd restart (at ${SECONDS}s)"
view() { # every partition's leader and leader epoch in krepd's view; f-0's
	# partition epoch and ISR too (l-0 and o-0 may still be taking broker 1
	# back into their ISRs)
	local s
	s=$("$KREPCTL" elect --status --socket "$SOCK" 2>/dev/null) || return 1
	jq -cs 'map(if .topic == "f" then {topic, partition, leader, leader_epoch,
			partition_epoch, isr}
		else {topic, partition, leader, leader_epoch} end) |
		sort_by(.topic, .partition)' <<<"$s"
}
before=$(view)
epoch=$(kbrokers '.[0].controller_epoch')
krepd_stop
nlog=$(wc -l <"$tmp/krepd.log")
newlog() { tail -n +$((nlog + 1)) "$tmp/krepd.log"; }
krepd_start
# up again: every broker claimed at the next epoch, the state file read
restarted() {
	[ "$(kbrokers '.[0].controller_epoch as $e |
		"\($e) \([.[1:][] | select(.claimed)] | length)"')" = "$((epoch + 1)) 3" ] &&
		newlog | grep -qF "state from $STATE: controller epoch $epoch, "
}
same=0
if krep_wait_for 30 restarted; then
	# a few polls of krepd's view (each longer than its 250 ms poll)
	for i in 1 2 3; do
		[ "$(view)" = "$before" ] && same=$((same + 1))
	done
fi
if [ -n "$epoch" ] && [ "$(jq length <<<"$before")" = 3 ] && [ "$same" = 3 ] &&
   ! newlog | grep -q 'adopting' && ! newlog | grep -qE '^[a-z]+-[0-9]+: leader '; then
	ktap_ok "krepd restarts from its state file: controller epoch $epoch -> $((epoch + 1)), nothing elected"
else
	ktap_diag "before: $before" "controller epoch $epoch before; $same of 3 views the same"
	kbrokers . | ktap_diag_stdin
	diag_state f
	newlog | head -n 20 | ktap_diag_stdin
	ktap_fail "krepd restarts from its state file"
fi

# --- 4. offline without an ISR member -------------------------------------------

ktap_diag "4. offline partition (at ${SECONDS}s)"
krep_wait_for 30 led_by_1 o && w0=1 || w0=0
produce_to 1 o all o 10 >/dev/null
link_down 2
krep_wait_for 30 isr_is o 1 && w1=1 || w1=0
link_down 1
offline() { [ "$(cv o '.leader == null or .offline == true')" = true ]; }
krep_wait_for 30 offline && w2=1 || w2=0
link_up 2
# krepd sees broker 2 again (and would elect it now if it were to); then a
# few polls, each longer than krepd's 250 ms poll, in which it must not be
not2() { # o-0 offline, broker 2 not its leader
	offline && case $(sv 2 o .role) in follower|offline) true ;; *) false ;; esac
}
polls=0
if krep_wait_for 60 seen 2; then
	for i in 1 2 3; do
		not2 && polls=$((polls + 1))
	done
fi
if [ "$w0$w1$w2" = 111 ] && [ "$polls" = 3 ]; then
	ktap_ok "no ISR member alive: o-0 offline, the out-of-sync broker 2 is not elected"
else
	ktap_diag "led by 1: $w0, ISR {1}: $w1, offline: $w2, $polls of 3 polls after krepd saw broker 2 again"
	kbrokers . | ktap_diag_stdin
	diag_state o
	ktap_fail "no ISR member alive: o-0 offline, the out-of-sync broker 2 is not elected"
fi
link_up 1
if krep_wait_for 30 leader_is o 1 && produce_to 1 o all back 1 >/dev/null; then
	ktap_ok "broker 1, the ISR member, returns: o-0 leads again and takes acks=all"
else
	diag_state o
	ktap_fail "broker 1, the ISR member, returns: o-0 leads again and takes acks=all"
fi

# the consumer of section 2 followed f's leader through the failover, the
# rejoin, the preferred election, krepd's restart and section 4's cuts
wait "$cons"
read -r _ nread _ hw _ back <"$tmp/cons.f.out"
missing=$(sort -u "$tmp/cons.f" | comm -23 <(sort "$tmp/f.want") - | wc -l)
if [ "${back:-1}" = 0 ] && [ "${nread:-0}" = 70 ] &&
   [ "$(wc -l <"$tmp/cons.f")" = 70 ] && [ "$missing" = 0 ]; then
	ktap_ok "a consumer following the leader read all 70 records once, never saw a leader's HW go back (HW $hw)"
else
	ktap_diag "$(cat "$tmp/cons.f.out")" "records not read: $missing"
	sort "$tmp/cons.f" | uniq -d | head -5 | ktap_diag_stdin
	ktap_fail "a consumer following the leader reads every record once, never sees a leader's HW go back"
fi

# --- 5. random faults ---------------------------------------------------------

ktap_diag "5. random link faults for ${FAULT_SECS}s (at ${SECONDS}s)"
krep_wait_for 40 isr_full f || diag_state f
: >"$tmp/acks"
fh produce f "$(all_ns)" "$FAULT_SECS" "$tmp/acks" >"$tmp/prod.out" 2>&1 &
prod=$!
# the consumer runs 12 s longer than the faults: to read the last
# acknowledged records once every link is back
fh consume f "$(all_ns)" $((FAULT_SECS + 12)) "$tmp/cons.r" >"$tmp/cons.r.out" 2>&1 &
cons=$!
krep_cleanup_push "kill $prod $cons 2>/dev/null"
# the checks' Python, started while the links go up and down (after the
# clients: they would keep its input open)
krep_pyserve_start fh "" fault_helper || ktap_bail "cannot start fault_helper.py"
end=$((SECONDS + FAULT_SECS))
# the cuts' schedule comes from this seed: KREP_FAULT_SEED=N reruns it
seed=${KREP_FAULT_SEED:-$(((RANDOM << 15 | RANDOM) % 1000000))}
ktap_diag "fault schedule seed $seed (rerun: KREP_FAULT_SEED=$seed make check SUITES=failover)"
RANDOM=$seed
nap() { # SECONDS: sleep that long, but not past the end of the faults
	local s=$1 left=$((end - SECONDS))
	[ "$s" -le "$left" ] || s=$left
	[ "$s" -le 0 ] || sleep "$s"
}
cuts=0
while [ "$SECONDS" -lt "$end" ]; do
	n=$((RANDOM % 3 + 1))
	link_down "$n"
	cuts=$((cuts + 1))
	nap $((RANDOM % 4 + 1))
	# sometimes a second broker goes too, for a moment
	if [ $((RANDOM % 4)) = 0 ]; then
		m=$(((n % 3) + 1))
		link_down "$m"
		nap 1
		link_up "$m"
	fi
	link_up "$n"
	nap $((RANDOM % 3 + 1))
done
for n in 1 2 3; do link_up "$n"; done
wait "$prod"
ktap_diag "producer: $(cat "$tmp/prod.out"); $cuts cuts"
# let the ISR fill, then every in-sync replica (all three) must hold every ack
hw_same() { # the three at the leader's HW
	local l h
	l=$(cv f .leader)
	h=$(sv "$l" f .hw)
	[ -n "$h" ] && [ "$(sv 1 f .hw)" = "$h" ] && [ "$(sv 2 f .hw)" = "$h" ] &&
		[ "$(sv 3 f .hw)" = "$h" ]
}
krep_wait_for 60 isr_full f && krep_wait_for 30 hw_same && filled=1 || filled=0
acked=$(wc -l <"$tmp/acks")
checked=0
for n in 1 2 3; do
	out=$(krep_pyserve fh check f "$(bns "$n")" "$tmp/acks" 2>&1) &&
		[ "$out" = "ok $acked" ] && checked=$((checked + 1))
	ktap_diag "broker $n: $out"
done
krep_pyserve_stop fh	# before any namespace goes
if [ "$filled" = 1 ] && [ "$checked" = 3 ] && [ "$acked" -gt 0 ]; then
	ktap_ok "random faults: all $acked acknowledged records on every in-sync replica, once, in order"
else
	ktap_diag "ISR full and HW the same: $filled; $checked of 3 replicas checked"
	diag_state f
	ktap_fail "random faults: every acknowledged record on every in-sync replica"
fi
# section 6 begins while the consumer reads its last records (nothing is
# cut here): l-0 with its full ISR, led by broker 1
krep_wait_for 60 isr_full l || diag_state l
krep_wait_for 30 led_by_1 l || diag_state l
wait "$cons"
read -r _ nread _ hw _ back <"$tmp/cons.r.out"
# every acknowledged value was read (it may also have read records that
# were written but not acknowledged: their producer gave up in time)
missing=$(sort -u "$tmp/cons.r" | comm -23 <(sed 's/^\([0-9]*\) .*/v-\1/' "$tmp/acks" | sort) - | wc -l)
if [ "${back:-1}" = 0 ] && [ "${nread:-0}" -gt 0 ] && [ "$nread" -ge "$acked" ] &&
   [ "$(wc -l <"$tmp/cons.r")" = "$nread" ] && [ "$missing" = 0 ] &&
   [ "$(sort "$tmp/cons.r" | uniq -d | wc -l)" = 0 ]; then
	ktap_ok "the consumer read $nread records ($acked acknowledged, all of them) without a duplicate and never saw a leader's HW go back"
else
	ktap_diag "$(cat "$tmp/cons.r.out")" "acknowledged $acked, of them not read: $missing"
	sort "$tmp/cons.r" | uniq -d | head -5 | ktap_diag_stdin
	ktap_fail "the consumer reads every acknowledged record, none twice, and never sees a leader's HW go back"
fi

# --- 6. last replica standing ---------------------------------------------------

ktap_diag "6. last replica standing (at ${SECONDS}s)"
out=$(produce_to 1 l all committed 30 2>&1) || ktap_diag "produce: $out"
link_down 3
krep_wait_for 30 isr_is l 1,2 || diag_state l
link_down 2
krep_wait_for 30 isr_is l 1 && w1=1 || w1=0
elr=$(cv l '.elr | join(",")')
leo0=$(sv 1 l .leo)
# the error, exactly: --json prints it on stdout
out=$(produce_to 1 l all refused 1 2>"$tmp/refused.err") && rc=0 || rc=$?
err=$(jq -rs 'map(.error // empty) | join(",")' <<<"$out" 2>&1)
leo1=$(sv 1 l .leo)
if [ "$w1" = 1 ] && [ "$rc" != 0 ] && [ "$err" = NOT_ENOUGH_REPLICAS ] &&
   [ "$elr" = 2 ] && [ "$leo0" = 30 ] && [ "$leo1" = 30 ]; then
	ktap_ok "ISR {1} is below min ISR 2: acks=all refused (NOT_ENOUGH_REPLICAS, nothing appended), broker 2 is an eligible leader replica"
else
	ktap_diag "ISR {1}: $w1; exit $rc: $out" "$(cat "$tmp/refused.err")" \
		"error: $err; elr: $elr; LEO before $leo0, after $leo1"
	diag_state l
	ktap_fail "ISR {1} is below min ISR 2: acks=all refused (NOT_ENOUGH_REPLICAS, nothing appended), broker 2 is an eligible leader replica"
fi
produce_to 1 l 1 tail 5 >/dev/null	# broker 1's tail, never committed
# broker 1 is lost with its log: its namespace goes (with its relay), a new
# empty one comes
relay_stop 1
cluster_broker_recreate 1 krepf || ktap_bail "cannot recreate broker 1"
# the controller's host still has the old broker 1's MAC address for it (the
# other two forgot it with their links): ask again, not after its timeout
ip neigh flush to "$NET.1" dev krc
relay_start 1
cluster_topic_on 1 l partitions 1 replication-factor 3 \
	config replica_lag_time_max_ms=$LAG,min_insync_replicas=2
cluster_topic_on 1 f partitions 1 replication-factor 3 \
	config replica_lag_time_max_ms=$LAG
cluster_topic_on 1 o partitions 1 replication-factor 2 \
	config replica_lag_time_max_ms=$LAG
# krepd sees the new broker 1 (its log says so); then a few polls, each
# longer than krepd's 250 ms poll, while only it is up: l-0's leader is
# never 1 (offline: "null")
saw1() { grep -q '^broker 1 restarted (incarnation ' "$tmp/krepd.log"; }
l1=
if krep_wait_for 60 saw1; then
	for i in 1 2 3; do
		l1+="$(cv l .leader) "
	done
fi
link_up 2
not1='^((2|3|null) ){3}$'	# three samples, none of them 1 nor empty
if krep_wait_for 30 leader_is l 2 && [[ $l1 =~ $not1 ]]; then
	ktap_ok "broker 2, from the ELR, leads l-0 (broker 1 came back empty and was not elected)"
else
	ktap_diag "leader while only the empty broker 1 was up, in 3 polls: ${l1:-(krepd did not see broker 1 back)}"
	kbrokers . | ktap_diag_stdin
	diag_state l
	ktap_fail "broker 2, from the ELR, leads l-0 (broker 1 came back empty and was not elected)"
fi
# broker 2's log, read while brokers 1 and 3 catch up (a Python start)
ip netns exec "$B2" /usr/bin/python3 "$here/repl_helper.py" dump l 0 "$tmp/l" \
	>"$tmp/l.out" 2>&1 &
dump=$!
link_up 3
krep_wait_for 40 isr_full l && rejoin=1 || rejoin=0
wait "$dump"
if grep -q "records 30 " "$tmp/l.out" &&
   seq -f 'committed-%g' 0 29 | cmp -s - "$tmp/l.0"; then
	ktap_ok "every committed record of l-0 survives on broker 2"
else
	ktap_diag_stdin <"$tmp/l.out"
	ktap_fail "every committed record of l-0 survives on broker 2"
fi
if [ "$rejoin" = 1 ]; then
	ktap_ok "brokers 1 (empty) and 3 catch up and rejoin l-0's ISR"
else
	diag_state l
	ktap_fail "brokers 1 (empty) and 3 catch up and rejoin l-0's ISR"
fi

# --- teardown ---------------------------------------------------------------

ktap_diag "teardown (at ${SECONDS}s)"
krepd_stop
# the decisions this run had krepd make, as its log words them
# (agent/krepd/view.c, controller.c)
decisions=(
	'^broker 1 fenced: '				# section 2
	'^f-0: leader 1 -> [23] \(from the ISR, '	# section 2
	'^f-0: leader [23] -> 1 \(preferred, asked by krepctl elect'
	'^o-0: leader 1 -> none \(offline, '		# section 4
	'^broker 1 restarted \(incarnation '		# section 6
	'^l-0: leader none -> 2 \(from the ELR, '
)
nolog=()
for re in "${decisions[@]}"; do
	grep -qE "$re" "$tmp/krepd.log" || nolog+=("$re")
done
if [ ${#nolog[@]} = 0 ]; then
	ktap_ok "krepd logged its decisions: failover, fencing, preferred election, offline, restart, ELR election"
else
	ktap_diag "not in krepd's log:" "${nolog[@]}"
	grep -E '^(broker [0-9]|[a-z]+-[0-9]+:) ' "$tmp/krepd.log" | tail -n 30 | ktap_diag_stdin
	ktap_fail "krepd logged its decisions"
fi
krep_teardown_checks "$mark"
ktap_finish
