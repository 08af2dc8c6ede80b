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
#    returns, follows, rejoins the ISR; while it is fenced, the new leader
#    holds it ineligible (KREP_A_INELIGIBLE: not counted towards HW, not
#    asked into the ISR), and no more once it is unfenced; `krepctl elect --preferred` moves
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
# Every wait polls a condition with a deadline; the conditions are asked of
# one long-lived Python (selftests/krep_probe.py, through
# selftests/pyserve.py: krepd's control socket and the brokers' netlink),
# so that a poll starts no process (a poll of krepd's view and three
# brokers through krepctl and jq took 2 to 8 s in the VM). The clients
# that follow the leader (fault_helper.py) run until told where to stop,
# not for a fixed time. With KREP_TIMES set, each wait says how long it
# took. Prints KTAP; leaves the module unloaded and no namespace behind.

# shellcheck disable=SC2317,SC2016 # the conditions poll calls; jq programs
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"
# shellcheck source=selftests/krep_probe.sh
. "$here/krep_probe.sh"

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

# The conditions: questions to krep_probe.py (its docstring lists them),
# in one Python started first (krep_probe.sh: probe, pv); a question costs
# no process start, nor a fork unless its answer is taken with $(...)
cv() { probe view "$@"; }	# TOPIC FIELD: of krepd's view of TOPIC-0
sv() { probe part "$@"; }	# N TOPIC FIELD: of broker N's TOPIC-0
seen() { probe seen "$1"; }	# N: krepd reaches broker N, claimed, unfenced
# for the diagnostics only: krepctl and jq
status() { # TOPIC: krepd's view of TOPIC-0, compact JSON
	"$KREPCTL" elect --status --socket "$SOCK" 2>/dev/null |
		jq -c --arg t "$1" 'select(.topic == $t and .partition == 0)'
}
kbrokers() { # krepd's --brokers: the controller, then the brokers
	"$KREPCTL" elect --brokers --socket "$SOCK" 2>&1
}
st() { # N TOPIC: broker N's TOPIC-0, compact JSON
	describe "$(bns "$1")" "$2" | jq -c '.[] | select(.partition == 0)'
}

probe_nap_open "$tmp" || ktap_bail "cannot make a FIFO"

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
ctl_up() { [ -S "$SOCK" ] && cv f leader >/dev/null; }

# fault_helper.py ARG... in the background, its output in file OUT: a fork
# of the conditions' Python (no interpreter start); sets FH_PID (a reap
# waits for it, and gives its status)
fh() { # OUT ARG...
	pv FH_PID spawn "$1" fh "${@:2}" ||
		ktap_bail "cannot start fault_helper.py ${*:2}"
	krep_cleanup_push "kill $FH_PID 2>/dev/null"
}
fh_reap() { probe reap "$1"; }	# PID
nlines() { # FILE N: FILE has N lines or more
	local -a _l
	mapfile -t _l <"$1"
	[ "${#_l[@]}" -ge "$2" ]
}
# Text checks without a process (a grep, seq, cmp or cat starts in 0.2 to
# 1 s in a busy VM):
slurp() { # VAR FILE: VAR = FILE's text ("" if it cannot be read)
	IFS= read -r -d '' "$1" <"$2" || true
}
has() { # FILE ERE: a line of FILE matches ERE (a "^" in front: at its start)
	local _t _re=$2
	slurp _t "$1"
	[ "${_re:0:1}" != "^" ] || _re="(^|"$'\n'")${_re:1}"
	[[ $_t =~ $_re ]]
}
values() { # PREFIX FIRST LAST: the lines PREFIX-FIRST .. PREFIX-LAST
	local _n
	eval "_n=({$2..$3})"
	printf "$1-%d\n" "${_n[@]}"
}
same() { # FILE TEXT: FILE holds exactly the lines of TEXT
	local _t
	slurp _t "$1"
	[ "${_t%$'\n'}" = "${2%$'\n'}" ]
}
all_ns() { echo "$B1,$B2,$B3"; }

produce_to() { # N TOPIC ACKS PREFIX COUNT
	values "$4" 0 $(($5 - 1)) |
		kc "$(bns "$1")" --json produce "$2" acks "$3" timeout 10000
}

leader_is() { probe leader_is "$@"; }	# TOPIC N: krepd and broker N agree N leads
isr_is() { # TOPIC ISR ("1,2": krepd's order)
	local i
	pv i isr "$1" && [ "$i" = "$2" ]
}
isr_full() { probe isr_full "$1"; }	# TOPIC
led_by_1() { # TOPIC: broker 1 leads it; if not, krepd is asked to make it so
	# (the preferred replica: not eligible until it is in the ISR)
	probe led_by_1 "$1"
}

diag_log() { # krepd's last decisions and troubles (not its ISR commits)
	grep -vE ': ISR .*\(ALTER_ISR|was behind' "$tmp/krepd.log" | tail -n 20 |
		ktap_diag_stdin
}
diag_state() { # TOPIC
	status "$1" | ktap_diag_stdin
	tail -n 5 "$tmp/probe.err" | ktap_diag_stdin
	for n in 1 2 3; do st "$n" "$1" | ktap_diag_stdin; done
	diag_log
}

ktap_plan 24

# --- set-up ---------------------------------------------------------------

krep_kmsg_mark "$mark"
# the conditions' Python first (its start overlaps the set-up)
probe_start KREP_PROBE_SOCK="$SOCK" KREP_PROBE_NS="$tmp/brokers" \
	KREP_PROBE_ERR="$tmp/probe.err" || ktap_bail "cannot start krep_probe.py"
krep_mod_unload
krep_mod_load fetch_timeout_ms=2000 reconnect_backoff_max_ms=500 ||
	ktap_bail "insmod krep.ko failed"
stamp "module loaded"
cluster_up krepf || ktap_bail "cannot set up three brokers"
stamp "cluster up"
echo "$B1 $B2 $B3" >"$tmp/brokers"	# for the conditions' Python
# which ends before the namespaces go (its sockets would keep them)
krep_cleanup_push probe_quit
# the topics, the three brokers side by side
for n in 1 2 3; do
	{
		cluster_topic_on "$n" f partitions 1 replication-factor 3 \
			config replica_lag_time_max_ms=$LAG &&
		cluster_topic_on "$n" l partitions 1 replication-factor 3 \
			config replica_lag_time_max_ms=$LAG,min_insync_replicas=2 &&
		cluster_topic_on "$n" o partitions 1 replication-factor 2 \
			config replica_lag_time_max_ms=$LAG
	} &
	tpid[n]=$!
done
for n in 1 2 3; do
	wait "${tpid[n]}" || ktap_bail "topics f, l, o on broker $n"
done
stamp "topics created"
# the relays (listening before krepd comes)
printf 'failover-secret-%s%s\n' "$RANDOM" "$RANDOM" >"$tmp/secret"
chmod 600 "$tmp/secret"
declare -a RELAY
for n in 1 2 3; do relay_start "$n"; done
poll 60 probe peers_up || ktap_bail "peers did not connect"
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

# --- 1. one controller --------------------------------------------------------

ktap_diag "1. krepd takes over (at ${SECONDS}s)"
krepd_start
# up, and every broker holds its claim at its epoch
claimed() { probe claimed >"$tmp/claims" 2>&1; }
poll 30 ctl_up && poll 30 claimed && up=1 || up=0
# then a second krepd, which must refuse to act while the first lives
# shellcheck disable=SC2046 # brokers prints separate words
timeout 30 "$KREPD" --controller --foreground --session-timeout-ms $SESSION \
	--state-file "$tmp/second.state" --socket "$tmp/second.sock" \
	$(brokers) >"$tmp/second.out" 2>&1 &
second=$!
if [ "$up" = 1 ] && [ "$(cv f leader)" = 1 ]; then
	ktap_ok "krepd claims the three brokers and adopts their partitions"
else
	diag_state f
	ktap_diag_stdin <"$tmp/claims"
	ktap_fail "krepd claims the three brokers and adopts their partitions"
fi
wait "$second" && rc=0 || rc=$?
stamp "second krepd exited"
slurp out "$tmp/second.out"
if [ "$rc" = 1 ] && [[ $out == *"another controller is active"* ]]; then
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
while read -r pr reps; do	# its "c-P replicas=R,R,R" lines
	[[ $pr == c-[0-5] && $reps == replicas=* ]] || continue
	AR[${pr#c-}]=${reps#replicas=}
done <<<"$out"
# how many partitions each broker is the first replica of: each number
# once, in order ("2 ": two each)
declare -A nfirst=()
for p in "${!AR[@]}"; do
	nfirst[${AR[$p]%%,*}]=$((${nfirst[${AR[$p]%%,*}]:-0} + 1))
done
firsts=
for k in 1 2 3 4 5 6; do
	[[ " ${nfirst[*]} " != *" $k "* ]] || firsts+="$k "
done
ar=
for p in "${!AR[@]}"; do ar+="${ar:+ }$p:${AR[$p]}"; done
if [ "$rc" = 0 ] && [ "${#AR[@]}" = 6 ] && [ "$firsts" = "2 " ] &&
   poll 10 probe same_ar c "$ar"; then
	ktap_ok "krepd creates c on every broker: the assignment it printed, each broker the preferred leader of 2 of 6"
else
	ktap_diag "exit $rc: $out" "first replicas per broker: $firsts"
	describe "$B1" c | ktap_diag_stdin
	ktap_fail "krepd creates c on every broker: the assignment it printed, each broker the preferred leader of 2 of 6"
fi
pleader() { echo "${AR[$1]%%,*}"; }	# P: its preferred leader
# every partition of c led by its preferred replica (and no other) at
# epoch 0, ISR full
led() { probe led c "$ar"; }
rc=0
if poll 20 led; then
	# the six side by side
	pids=()
	for p in 0 1 2 3 4 5; do
		values "c$p" 1 5 | kc "$(bns "$(pleader "$p")")" produce c \
			partition "$p" acks all timeout 10000 >/dev/null &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
fi
if led && [ "$rc" = 0 ]; then
	ktap_ok "each partition of c led by its preferred replica at epoch 0; acks=all on each"
else
	describe "$B1" c | ktap_diag_stdin
	diag_log
	ktap_fail "each partition of c led by its preferred replica at epoch 0; acks=all on each"
fi
kc "$B3" topic delete c
# broker 3 has c again, caught up (LEO 5), in every ISR; none of it led
# by 3: krepd's view and the three brokers agree
if poll 60 probe back3 c 5 &&
   has "$tmp/krepd.log" 'topic c: created on broker 3 \(it had missed it\)' &&
   has "$tmp/krepd.log" 'broker 3 lost its replica'; then
	ktap_ok "broker 3 lost c: krepd takes it out of the ISRs, creates c again there, it catches up and rejoins"
else
	describe "$B3" c | ktap_diag_stdin
	"$KREPCTL" elect --status --socket "$SOCK" | grep '"c"' | ktap_diag_stdin
	grep -E 'topic c|^c-' "$tmp/krepd.log" | tail -n 20 | ktap_diag_stdin
	diag_log
	ktap_fail "broker 3 lost c: krepd takes it out of the ISRs, creates c again there, it catches up and rejoins"
fi
out=$("$KREPCTL" topic delete c --controller --socket "$SOCK" 2>&1) && rc=0 || rc=$?
# each broker answers with its other topics and without c; krepd's view
# has partitions, none of c; its state file a controller epoch and no c
if [ "$rc" = 0 ] && poll 20 probe gone c "$STATE" &&
   has "$tmp/krepd.log" 'topic c: deleted from every broker'; then
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
poll 30 led_by_1 f && poll 30 isr_full f || diag_state f
out=$(produce_to 1 f all pre 50) && rc=0 || rc=$?
[ "$rc" = 0 ] || ktap_diag "produce: $out"
# the consumer follows f's leader through sections 2 to 4, until told (at
# the end of section 4) to stop once it has read all 70 records; 300 s at
# most. It has read the first 50 before the cut.
: >"$tmp/cons.f"
fh "$tmp/cons.f.out" consume f "$(all_ns)" 300 "$tmp/cons.f" "$tmp/cons.f.until"
cons=$FH_PID
poll 30 nlines "$tmp/cons.f" 50 || ktap_diag "the consumer has not read the first 50 records: $(cat "$tmp/cons.f.out")"
epoch0=$(cv f leader_epoch)
link_down 1
t0=$SECONDS
new_leader() { leader_is f 2 || leader_is f 3; }
if poll 30 new_leader; then
	new=$(cv f leader)
	ktap_ok "broker 1 cut off: broker $new leads (epoch $epoch0 -> $(cv f leader_epoch)) after $((SECONDS - t0)) s"
else
	new=2
	diag_state f
	ktap_fail "broker 1 cut off: a new leader from the ISR"
fi
out=$(produce_to "$new" f all post 20 2>&1) && rc=0 || rc=$?
# the new leader's log (repl_helper.py dump)
probe dump f "$new" "$tmp/f" >"$tmp/f.out" 2>&1
inel() { [ "$(sv "$new" f ineligible)" = "$1" ]; }	# LIST: new leader's
poll 15 inel 1 && fenced_inel=1 || fenced_inel=0
link_up 1
poll 40 isr_full f && [ "$(sv 1 f role)" = follower ] &&
	[ "$(sv 1 f leo)" = "$(sv "$new" f leo)" ] && rejoin=1 || rejoin=0
if [ "$fenced_inel" = 1 ] && inel null; then
	ktap_ok "broker 1 fenced: ineligible on the new leader's f-0; unfenced: eligible again"
else
	ktap_diag "while fenced: $fenced_inel (1: ineligible 1); after: $(sv "$new" f ineligible)"
	ktap_fail "broker 1 fenced: ineligible on the new leader's f-0; unfenced: eligible again"
fi
{ values pre 0 49; values post 0 19; } >"$tmp/f.want"
want=
slurp want "$tmp/f.want"
if [ "$rc" = 0 ] && has "$tmp/f.out" "records 70 " && same "$tmp/f.0" "$want"; then
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
if [ "$rc" = 0 ] && poll 15 leader_is f 1; then
	ktap_ok "krepctl elect --preferred: broker 1 leads f-0 again"
else
	ktap_diag "exit $rc: $out"
	diag_state f
	ktap_fail "krepctl elect --preferred: broker 1 leads f-0 again"
fi

# --- 3. krepd restarts ---------------------------------------------------------

ktap_diag "3. krepd restart (at ${SECONDS}s)"
# every partition's leader and leader epoch in krepd's view (their number
# first); f-0's partition epoch and ISR too (l-0 and o-0 may still be
# taking broker 1 back into their ISRs)
view() { probe snapshot; }
before=$(view)
epoch=$(probe ctrl_epoch)
krepd_stop
nbytes=$(stat -c %s "$tmp/krepd.log")
newlog() { tail -c +$((nbytes + 1)) "$tmp/krepd.log"; }
krepd_start
# up again: every broker claimed at the next epoch, the state file read
same=0
if [ -n "$epoch" ] && poll 30 probe restarted "$epoch" "$STATE" "$tmp/krepd.log" "$nbytes"; then
	# three polls of krepd's view, 300 ms apart (more than its 250 ms poll)
	for i in 1 2 3; do
		nap 0.3
		[ "$(view)" = "$before" ] && same=$((same + 1))
	done
fi
if [ -n "$epoch" ] && [ "${before%% *}" = 3 ] && [ "$same" = 3 ] &&
   newlog >"$tmp/krepd.new" && ! has "$tmp/krepd.new" 'adopting' &&
   ! has "$tmp/krepd.new" '^[a-z]+-[0-9]+: leader '; then
	ktap_ok "krepd restarts from its state file: controller epoch $epoch -> $((epoch + 1)), nothing elected"
else
	ktap_diag "before: $before" "controller epoch $epoch before; $same of 3 views the same"
	kbrokers | ktap_diag_stdin
	diag_state f
	newlog | head -n 20 | ktap_diag_stdin
	ktap_fail "krepd restarts from its state file"
fi

# --- 4. offline without an ISR member -------------------------------------------

ktap_diag "4. offline partition (at ${SECONDS}s)"
poll 30 led_by_1 o && w0=1 || w0=0
produce_to 1 o all o 10 >/dev/null
link_down 2
# one more record, which broker 2 never fetches: broker 1 drops it from
# the ISR once it lags (1 s), before krepd would fence it (3 s)
produce_to 1 o 1 lag 1 >/dev/null
poll 30 isr_is o 1 && w1=1 || w1=0
link_down 1
offline() { probe offline o; }
poll 30 offline && w2=1 || w2=0
link_up 2
# krepd sees broker 2 again (and would elect it now if it were to); then
# three polls, 300 ms apart (more than krepd's 250 ms poll), in which it
# must not be
not2() { # o-0 offline, broker 2 not its leader
	offline && case $(sv 2 o role) in follower|offline) true ;; *) false ;; esac
}
polls=0
if poll 60 seen 2; then
	for i in 1 2 3; do
		nap 0.3
		not2 && polls=$((polls + 1))
	done
fi
if [ "$w0$w1$w2" = 111 ] && [ "$polls" = 3 ]; then
	ktap_ok "no ISR member alive: o-0 offline, the out-of-sync broker 2 is not elected"
else
	ktap_diag "led by 1: $w0, ISR {1}: $w1, offline: $w2, $polls of 3 polls after krepd saw broker 2 again"
	kbrokers | ktap_diag_stdin
	diag_state o
	ktap_fail "no ISR member alive: o-0 offline, the out-of-sync broker 2 is not elected"
fi
link_up 1
if poll 30 leader_is o 1 && produce_to 1 o all back 1 >/dev/null; then
	ktap_ok "broker 1, the ISR member, returns: o-0 leads again and takes acks=all"
else
	diag_state o
	ktap_fail "broker 1, the ISR member, returns: o-0 leads again and takes acks=all"
fi

# the consumer of section 2 followed f's leader through the failover, the
# rejoin, the preferred election, krepd's restart and section 4's cuts: it
# stops once it has read the 70 records
echo 70 >"$tmp/cons.f.until"
fh_reap "$cons"
read -r _ nread _ hw _ back <"$tmp/cons.f.out"
# the lines it wrote, and the values of f.want not among them
read -r _ lines _ _ _ missing < <(probe consumed "$tmp/cons.f" "$tmp/f.want")
if [ "${back:-1}" = 0 ] && [ "${nread:-0}" = 70 ] &&
   [ "${lines:-0}" = 70 ] && [ "${missing:-1}" = 0 ]; then
	ktap_ok "a consumer following the leader read all 70 records once, never saw a leader's HW go back (HW $hw)"
else
	ktap_diag "$(cat "$tmp/cons.f.out")" "records not read: $missing"
	sort "$tmp/cons.f" | uniq -d | head -5 | ktap_diag_stdin
	ktap_fail "a consumer following the leader reads every record once, never sees a leader's HW go back"
fi

# --- 5. random faults ---------------------------------------------------------

ktap_diag "5. random link faults for ${FAULT_SECS}s (at ${SECONDS}s)"
poll 40 isr_full f || diag_state f
: >"$tmp/acks"
# the producer runs until the faults are over (told below; FAULT_SECS +
# 120 s at most)
fh "$tmp/prod.out" produce f "$(all_ns)" $((FAULT_SECS + 120)) "$tmp/acks" v \
	"$tmp/prod.stop"
prod=$FH_PID
# the consumer runs until it has read the last acknowledged record, once
# every link is back (told below; FAULT_SECS + 120 s at most)
fh "$tmp/cons.r.out" consume f "$(all_ns)" $((FAULT_SECS + 120)) "$tmp/cons.r" \
	"$tmp/cons.r.until"
cons=$FH_PID
# the faults begin once the producer is under way: its first record is
# acknowledged
acking() { [ -s "$tmp/acks" ]; }
poll 60 acking || ktap_diag "no record acknowledged yet: $(cat "$tmp/prod.out")"
end=$((SECONDS + FAULT_SECS))
# the cuts' schedule comes from this seed: KREP_FAULT_SEED=N reruns it
seed=${KREP_FAULT_SEED:-$(((RANDOM << 15 | RANDOM) % 1000000))}
ktap_diag "fault schedule seed $seed (rerun: KREP_FAULT_SEED=$seed make check SUITES=failover)"
RANDOM=$seed
fault_nap() { # SECONDS: sleep that long, but not past the end of the faults
	local s=$1 left=$((end - SECONDS))
	[ "$s" -le "$left" ] || s=$left
	[ "$s" -le 0 ] || nap "$s"
}
cuts=0
while [ "$SECONDS" -lt "$end" ]; do
	n=$((RANDOM % 3 + 1))
	link_down "$n"
	cuts=$((cuts + 1))
	fault_nap $((RANDOM % 4 + 1))
	# sometimes a second broker goes too, for a moment
	if [ $((RANDOM % 4)) = 0 ]; then
		m=$(((n % 3) + 1))
		link_down "$m"
		fault_nap 1
		link_up "$m"
	fi
	link_up "$n"
	fault_nap $((RANDOM % 3 + 1))
done
# the faults are over: the producer stops (after the request it may be
# waiting on) while the links come back
touch "$tmp/prod.stop"
for n in 1 2 3; do link_up "$n"; done
fh_reap "$prod"
slurp out "$tmp/prod.out"
ktap_diag "producer: ${out%$'\n'}; $cuts cuts"
# the consumer stops once it has read every offset up to the last
# acknowledged one (acknowledged offsets only grow)
mapfile -t ackl <"$tmp/acks"
last="0 -1"
[ ${#ackl[@]} = 0 ] || last=${ackl[${#ackl[@]} - 1]}
echo $((${last#* } + 1)) >"$tmp/cons.r.until"
# let the ISR fill, then every in-sync replica (all three) must hold every
# ack: the three at the leader's HW
poll 60 isr_full f && poll 30 probe hw_same f && filled=1 || filled=0
acked=${#ackl[@]}
checked=0
for n in 1 2 3; do
	out=$(krep_pyserve probe fh check f "$(bns "$n")" "$tmp/acks" 2>&1) &&
		[ "$out" = "ok $acked" ] && checked=$((checked + 1))
	ktap_diag "broker $n: $out"
done
if [ "$filled" = 1 ] && [ "$checked" = 3 ] && [ "$acked" -gt 0 ]; then
	ktap_ok "random faults: all $acked acknowledged records on every in-sync replica, once, in order"
else
	ktap_diag "ISR full and HW the same: $filled; $checked of 3 replicas checked"
	diag_state f
	ktap_fail "random faults: every acknowledged record on every in-sync replica"
fi
# section 6 begins while the consumer reads its last records (nothing is
# cut here): l-0 with its full ISR, led by broker 1
poll 60 isr_full l || diag_state l
poll 30 led_by_1 l || diag_state l
fh_reap "$cons"
read -r _ nread _ hw _ back <"$tmp/cons.r.out"
# every acknowledged value was read (it may also have read records that
# were written but not acknowledged: their producer gave up in time)
read -r _ lines _ distinct _ missing < <(probe consumed "$tmp/cons.r" "$tmp/acks" acks)
if [ "${back:-1}" = 0 ] && [ "${nread:-0}" -gt 0 ] && [ "$nread" -ge "$acked" ] &&
   [ "${lines:-0}" = "$nread" ] && [ "${missing:-1}" = 0 ] &&
   [ "${distinct:-0}" = "$lines" ]; then
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
poll 30 isr_is l 1,2 || diag_state l
link_down 2
poll 30 isr_is l 1 && w1=1 || w1=0
elr=$(cv l elr)
leo0=$(sv 1 l leo)
# the error, exactly: --json prints it on stdout
out=$(produce_to 1 l all refused 1 2>"$tmp/refused.err") && rc=0 || rc=$?
err=$(jq -rs 'map(.error // empty) | join(",")' <<<"$out" 2>&1)
leo1=$(sv 1 l leo)
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
stamp "broker 1 goes"
# broker 1 is lost with its log: its namespace goes (with its relay), a new
# empty one comes
relay_stop 1
probe drop 1	# its socket would keep the namespace alive
cluster_broker_recreate 1 krepf || ktap_bail "cannot recreate broker 1"
# the controller's host still has the old broker 1's MAC address for it (the
# other two forgot it with their links): ask again, not after its timeout
ip neigh flush to "$NET.1" dev krc
stamp "broker 1 recreated"
relay_start 1
# its topics, side by side
cluster_topic_on 1 l partitions 1 replication-factor 3 \
	config replica_lag_time_max_ms=$LAG,min_insync_replicas=2 &
tpid[1]=$!
cluster_topic_on 1 f partitions 1 replication-factor 3 \
	config replica_lag_time_max_ms=$LAG &
tpid[2]=$!
cluster_topic_on 1 o partitions 1 replication-factor 2 \
	config replica_lag_time_max_ms=$LAG &
tpid[3]=$!
wait "${tpid[1]}" "${tpid[2]}" "${tpid[3]}"
# krepd sees the new broker 1 (its log says so); then three polls, 300 ms
# apart (more than krepd's 250 ms poll), while only it is up: l-0's leader
# is never 1 (offline: "null")
saw1() { has "$tmp/krepd.log" '^broker 1 restarted \(incarnation '; }
l1=
if poll 60 saw1; then
	for i in 1 2 3; do
		nap 0.3
		l1+="$(cv l leader) "
	done
fi
link_up 2
not1='^((2|3|null) ){3}$'	# three samples, none of them 1 nor empty
if poll 30 leader_is l 2 && [[ $l1 =~ $not1 ]]; then
	ktap_ok "broker 2, from the ELR, leads l-0 (broker 1 came back empty and was not elected)"
else
	ktap_diag "leader while only the empty broker 1 was up, in 3 polls: ${l1:-(krepd did not see broker 1 back)}"
	kbrokers | ktap_diag_stdin
	diag_state l
	ktap_fail "broker 2, from the ELR, leads l-0 (broker 1 came back empty and was not elected)"
fi
# broker 2's log (repl_helper.py dump), before brokers 1 and 3 catch up
probe dump l 2 "$tmp/l" >"$tmp/l.out" 2>&1
link_up 3
poll 40 isr_full l && rejoin=1 || rejoin=0
if has "$tmp/l.out" "records 30 " && same "$tmp/l.0" "$(values committed 0 29)"; then
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
	has "$tmp/krepd.log" "$re" || nolog+=("$re")
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
