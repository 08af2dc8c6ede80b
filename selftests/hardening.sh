#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# hardening.sh - the replication sockets against peers that stop reading,
# and teardown that never waits on one: three brokers (cluster.sh), a raw
# "stuck peer" (stuck_peer.py) that says HELLO and AUTH to broker 1 as
# broker 9, pipelines FETCHes of a partition full of records and never
# reads the answers, so that broker 1's send queue to it fills and stays
# full.
#
#   +- netns B1 -------+  +- netns B2 -------+  +- netns B3 -------+  +- netns X -----------+
#   | broker 1         |  | broker 2         |  | broker 3         |  | 10.201.0.9: nothing |
#   | 10.201.0.1:9092  |  | 10.201.0.2:9092  |  | 10.201.0.3:9092  |  | listens; pyserve.py |
#   | peers 2, 3 and 9 |  | peers 1, 3       |  | peers 1, 2       |  | stuck_peer: stuck   |
#   |  (9@10.201.0.9)  |  |                  |  |                  |  | peers, garbage      |
#   +--------|---------+  +--------|---------+  +--------|---------+  +---------|-----------+
#            +---------------- bridge krbr in netns BR -----------------------+
#
# Broker 1 has a fourth peer, 9 at X's address, added once the topics
# below exist (it would change their round-robin assignment): a leader
# takes a HELLO claiming a peer id only from that peer's address, and a
# peer id's new connection replaces its older ones, so the stuck peers
# and the garbage claim 9 from X and never replace broker 3's real
# connection to broker 1. Broker 1 keeps trying to connect out to 9 and
# is refused (harmless); its peer 9 is never up, and the checks of peers
# being up look at brokers 1, 2 and 3 only.
#
# Topics, on every broker: big (1 partition, RF 3, led by broker 1, BIG
# records of ~300 bytes) and work (3 partitions, RF 3, partition p led by
# broker p+1). On broker 1 only, created once peer 9 is configured: stuck
# (1 partition, RF 4: replicas 1, 2, 3, 9, led by broker 1, never
# followed by a real broker, the same BIG records produced with acks=1):
# what the stuck peers fetch as replica 9 (a FETCH from a broker that is
# not a replica is answered with a small error): an answer from offset
# 0 is ~600 KB.
#
# A. module loaded with the default socket_timeout_ms (30 s):
#    0. a HELLO claiming broker 2 from X is refused (the address check)
#       with its logged line; one claiming 9 from X is answered;
#    a stuck peer fills broker 1's send queue (Send-Q >= FULLQ, more than
#    its window could ever take); then, each bounded by BOUND seconds:
#    a. an unrelated namespace is added and deleted, and is really gone
#       (a veth end it held in netns BR disappears: its pre_exit ran);
#    c. the rest works: acks=all on work-1 (led by broker 2), broker 1
#       answers krepctl, and the peer is still stuck afterwards;
#    b. BROKER_SET on broker 1 with its same configuration completes, its
#       peers come back;
#    e. rmmod with a fresh stuck peer completes.
#    A step that does not end in time is a failure; the stuck peer is
#    then reset (its close unblocks a blocked sender), the step's command
#    waited for, and the next step gets a fresh stuck peer.
# B. module loaded with socket_timeout_ms=STO (a module without the
#    parameter, which insmod refuses or ignores, is a failure of d; the
#    rest then runs without it):
#    d. broker 1 closes a stuck peer's connection on its own within 30 s,
#       not before STO ms, while the peer keeps it open: its "connection
#       from broker 9 (ADDR) closed:" line names the peer's address. (The
#       connection gone from ss proves nothing: TCP's abort unhashes the
#       socket whether or not krep ever releases it.)
#    then loops under slub_debug, each followed by: no bad kernel log
#    line, every replica at its leader's LEO with a full ISR, acks=all on
#    all three leaders:
#    (i)   NGARBAGE connections (from X, as broker 9) of random bytes,
#          truncated HELLOs and FETCHes, resets mid-answer, while
#          acks=all produces run;
#    (ii)  NSET BROKER_SETs of broker 2's same configuration, every
#          SETWAIT-th waiting for its peers, while acks=1 produces run;
#    (iii) NFLAP cuts of broker 3's link while producing (acks=1), each
#          until the leader appended more; every fourth until broker 3
#          dropped its connection to broker 1.
# Prints KTAP; leaves the module unloaded and no namespace behind.

# shellcheck disable=SC2317 # functions called through bounded, krep_wait_for
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd jq ip ss sleep /usr/bin/python3

CLUSTER=kreph
NET=10.201.0
PORT=9092
STOPIC=stuck		# the stuck peers' topic, on broker 1 only
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

# module parameters (kmod/param.c), shorter than the defaults
PARAMS="fetch_timeout_ms=1000 reconnect_backoff_max_ms=500 close_log_interval_ms=1000"
STO=2000		# socket_timeout_ms of part B
BOUND=20		# seconds each step under test may take
BIG=2000		# records in big-0 ...
PAD=280			# ... of this many bytes and a few more
LAG=3000		# replica_lag_time_max_ms of work
NFETCH=64		# FETCH frames a stuck peer pipelines
RCVBUF=4096		# its SO_RCVBUF: the kernel doubles it, its window is less
FULLQ=$((4 * RCVBUF))	# a Send-Q this large is more than that window takes
NGARBAGE=300		# garbage connections in loop (i)
NSET=30			# BROKER_SETs in loop (ii) ...
SETWAIT=5		# ... each SETWAIT-th waiting for broker 2's peers
NFLAP=10		# link cuts in loop (iii)
SEED=${KREP_GARBAGE_SEED:-$RANDOM}

tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
mark=hardening-$$

section() { ktap_diag "$1 (at ${SECONDS}s)"; }

isnum() {
	local v
	for v in "$@"; do
		[[ $v =~ ^-?[0-9]+$ ]] || return 1
	done
}

# --- bounded commands ----------------------------------------------------------
# A command blocked in the kernel (uninterruptible) outlives any signal,
# and timeout(1) waits for it: so it runs in the background and is waited
# for at most so long.
#   bounded SECS CMD...  CMD's status, or 124 when it is still running
#                        after SECS (its pid then joins HUNG); its output
#                        (stdout and stderr) in the file $BOUT
#   reap SECS            wait up to SECS for every HUNG command to end;
#                        false if some did not (left in HUNG)
HUNG=()
BN=0
# A background job must not hold the stuck peers' server's FIFOs, nor
# the producers' inputs (fprod_start): they would not see their end.
declare -A FPFD=()
close_fds() {
	local fd
	if [ -n "${_krep_ps_in[sp]:-}" ]; then
		eval "exec ${_krep_ps_in[sp]}>&- ${_krep_ps_out[sp]}<&-"
	fi
	for fd in "${FPFD[@]}"; do
		eval "exec $fd>&-"
	done
}
bounded() {
	local secs=$1 cpid tpid who rc
	shift
	BN=$((BN + 1))
	BOUT=$tmp/bounded.$BN
	(close_fds; "$@") >"$BOUT" 2>&1 &
	cpid=$!
	(close_fds; exec sleep "$secs") &
	tpid=$!
	who=
	wait -n -p who "$cpid" "$tpid"
	rc=$?
	if [ "$who" = "$cpid" ]; then
		kill "$tpid" 2>/dev/null
		wait "$tpid" 2>/dev/null
		return "$rc"
	fi
	HUNG+=("$cpid")
	return 124
}
gone() { ! kill -0 "$1" 2>/dev/null; }
all_gone() {
	local p
	for p in "${HUNG[@]}"; do
		gone "$p" || return 1
	done
}
reap() {
	local p rc=0
	krep_wait_for "$1" all_gone || rc=1
	for p in "${HUNG[@]}"; do
		if gone "$p"; then
			wait "$p" 2>/dev/null
			ktap_diag "the command that hung (pid $p) ended with status $? once released"
		else
			ktap_diag "the command that hung (pid $p) is still blocked: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null); stack: $(tr '\n' ' ' <"/proc/$p/stack" 2>/dev/null)"
		fi
	done
	[ "$rc" = 0 ] && HUNG=()
	return "$rc"
}

# --- the stuck peers' server ---------------------------------------------------
# spc SECS ARGS...: stuck_peer.py ARGS in the server in netns X (started
# below), answered within SECS: its output (stdout and stderr), its status;
# 125 without an answer (the server is then stopped: every socket it held
# is closed)
spc() {
	local secs=$1 line
	shift
	[ -n "${_krep_ps_in[sp]:-}" ] || { echo "no stuck_peer.py server"; return 125; }
	(IFS=$'\x1f'; printf '%s\n' "$*" >&"${_krep_ps_in[sp]}") 2>/dev/null || {
		echo "stuck_peer.py server gone"
		return 125
	}
	while IFS= read -r -t "$secs" -u "${_krep_ps_out[sp]}" line; do
		case $line in
		$'\x1e '*) return "${line#$'\x1e '}" ;;
		"1 "* | "2 "*) printf '%s\n' "${line#? }" ;;
		esac
	done
	echo "stuck_peer.py: no answer in ${secs}s: stopping its server"
	kill "${_krep_ps_pid[sp]}" 2>/dev/null
	krep_pyserve_stop sp
	return 125
}

# SQ: the Send-Q of broker 1's established connection with peer ADDR
sendq() {
	local out
	SQ=
	out=$(ss -N "$B1" -Htn state established dst "$1" 2>/dev/null) &&
		[ -n "$out" ] || return 1
	read -r _ SQ _ <<<"$out"
	isnum "$SQ"
}
# stuck_full ADDR: broker 1 holds more for ADDR than its window takes
stuck_full() { sendq "$1" && [ "$SQ" -ge "$FULLQ" ]; }
# established ADDR: broker 1 has an established connection with ADDR
established() { sendq "$1"; }
# ss_diag ADDR: broker 1's side of the connection with ADDR, as diagnostics
ss_diag() {
	ss -N "$B1" -Htnmi dst "$1" 2>&1 | ktap_diag_stdin || ktap_diag "ss: no connection with $1 in broker 1's namespace"
}

# stuck_open NAME: a stuck peer called NAME; its address in SADDR, its
# readiness (its window is full: the broker's Send-Q passed FULLQ) in
# $tmp/NAME.open; false (with diagnostics) if it did not get there
stuck_open() {
	local out rc re='local ([0-9.]+:[0-9]+) sent'
	SADDR=
	# the current leader epoch of stuck-0, else the one of the set-up
	stuck_epoch
	out=$(spc 60 open "$1" "$NET.1:$PORT" "$CLUSTER" 1 9 "$STOPIC" 0 \
		"$EPOCH" "$NFETCH" "$RCVBUF")
	rc=$?
	echo "$out" >"$tmp/$1.open"
	if [ "$rc" != 0 ] || ! [[ $out =~ $re ]]; then
		ktap_diag "stuck peer $1: exit $rc: $out"
		return 1
	fi
	SADDR=${BASH_REMATCH[1]}
	if ! krep_wait_for "$BOUND" stuck_full "$SADDR"; then
		ktap_diag "stuck peer $1 ($SADDR): broker 1's Send-Q never reached $FULLQ"
		ss_diag "$SADDR"
		return 1
	fi
	echo "$out; broker Send-Q $SQ" >"$tmp/$1.open"
}
# stuck_release NAME: reset NAME's connection (a broker's send blocked on
# it ends); every HUNG command is then waited for
stuck_release() {
	spc 30 release "$1" >/dev/null
	reap 30
}

# --- the cluster -----------------------------------------------------------------

# bset N: broker N's configuration (as cluster_up sets it) once more;
# broker 1's with peer 9 (at X's address) too once WITH9 is 1
WITH9=0
bset() {
	local j peers=
	for j in 1 2 3; do
		[ "$j" = "$1" ] || peers+="${peers:+,}$j@$NET.$j:$PORT"
	done
	[ "$1" != 1 ] || [ "$WITH9" != 1 ] || peers+=",9@$NET.9:$PORT"
	kc "$(bns "$1")" broker set id "$1" cluster "$CLUSTER" \
		listen "$NET.$1:$PORT" peers "$peers" >/dev/null
}

# gen N: broker N's configuration generation, in GEN
gen() {
	local out re='"generation":([0-9]+)'
	GEN=
	out=$(kc "$(bns "$1")" --json broker show 2>/dev/null) &&
		[[ $out =~ $re ]] && GEN=${BASH_REMATCH[1]}
}

# peer_state N P: the state of peer P as broker N sees it, in STATE
peer_state() {
	local out re="\"id\":$2,[^}]*\"state\":\"([a-z_]+)\""
	STATE=
	out=$(kc "$(bns "$1")" --json broker show 2>/dev/null) &&
		[[ $out =~ $re ]] && STATE=${BASH_REMATCH[1]}
}
# peers_up N: broker N sees both its peers among brokers 1-3 up (not
# broker 1's peer 9, which never is)
peers_up() {
	local p
	for p in 1 2 3; do
		[ "$p" = "$1" ] && continue
		peer_state "$1" "$p" && [ "$STATE" = up ] || return 1
	done
}
# brokers_up: every broker sees its peers among brokers 1-3 up
brokers_up() { peers_up 1 && peers_up 2 && peers_up 3; }
# peer_down N P: broker N does not see peer P up
peer_down() { peer_state "$1" "$2" && [ "$STATE" != up ]; }

# leo N TOPIC P: partition P's LEO on broker N, in LEO
leo() {
	local out re="\"partition\":$3,[^{]*\"leo\":([0-9]+)"
	LEO=
	out=$(describe "$(bns "$1")" "$2" 2>/dev/null) && [[ $out =~ $re ]] &&
		LEO=${BASH_REMATCH[1]}
}
leo_above() { leo "$1" "$2" "$3" && [ "$LEO" -gt "$4" ]; }

# converged: every partition on every broker (but broker 1's stuck, which
# no broker follows): one leader, whose HW is its LEO and whose ISR is all
# three, and every replica at that LEO
converged() {
	local i
	: >"$tmp/conv"
	for i in 1 2 3; do
		describe "$(bns "$i")" >>"$tmp/conv" 2>/dev/null || return 1
	done
	jq -e -s --arg s "$STOPIC" '[.[][] | select(.topic != $s)] as $a |
		($a | length) == 12 and
		all($a | group_by([.topic, .partition])[];
		    length == 3 and
		    ([.[] | select(.role == "leader")] | length) == 1 and
		    ([.[] | select(.role == "leader")][0] as $l |
			$l.hw == $l.leo and ($l.isr | length) == 3 and
			all(.[]; .leo == $l.leo)))' "$tmp/conv" >/dev/null 2>&1
}

# acks_all: one record with acks=all to each partition of work, on its
# leader; false (with diagnostics) unless all three succeed
acks_all() {
	local p out rc=0
	for p in 0 1 2; do
		out=$(echo "acks-all-$p" | timeout 30 "$KREPCTL" --netns \
			"$(bns $((p + 1)))" --json produce work partition "$p" \
			acks all timeout 10000 2>&1) || {
			ktap_diag "acks=all to work-$p: $out"
			rc=1
		}
	done
	return "$rc"
}

# after_loop NAME MARK: the checks after a loop, one result
after_loop() {
	local bad conv=0 acks=0 i
	krep_wait_for 60 converged || conv=1
	[ "$conv" = 0 ] && { acks_all || acks=1; }
	bad=$(krep_kmsg_since "$2" | krep_kernel_bad)
	if [ "$conv" = 0 ] && [ "$acks" = 0 ] && [ -z "$bad" ]; then
		ktap_ok "after $1: replicas converge, acks=all on every leader, no bad kernel log"
	else
		[ "$conv" = 0 ] || {
			ktap_diag "not converged in 60 s:"
			jq -c '.[] | {topic, partition, role, leo, hw, isr}' "$tmp/conv" 2>&1 | ktap_diag_stdin
			for i in 1 2 3; do
				kc "$(bns "$i")" --json broker show 2>&1 | ktap_diag_stdin
			done
		}
		[ -z "$bad" ] || ktap_diag "$bad"
		ktap_fail "after $1: replicas converge, acks=all on every leader, no bad kernel log"
	fi
}

# prodloop NAME NS TOPIC P ACKS: produce batches of 20 records until
# $tmp/NAME.stop exists; "ROUNDS FAILURES" in $tmp/NAME.res after each
prodloop() {
	local name=$1 ns=$2 topic=$3 p=$4 acks=$5 n=0 f=0
	while [ ! -e "$tmp/$name.stop" ]; do
		"$KREPCTL" --netns "$ns" produce "$topic" partition "$p" \
			acks "$acks" timeout 10000 batch 10 <"$tmp/recs20" \
			>/dev/null 2>>"$tmp/$name.err" || f=$((f + 1))
		n=$((n + 1))
		echo "$n $f" >"$tmp/$name.res"
	done
}
# prod_start NAME ARGS...: start prodloop NAME ARGS, wait for its first
# round; PROD[NAME] its pid
declare -A PROD=()
prod_start() {
	rm -f "$tmp/$1.stop" "$tmp/$1.res" "$tmp/$1.err"
	(close_fds; prodloop "$@") &
	PROD[$1]=$!
	krep_cleanup_push "touch $tmp/$1.stop; kill ${PROD[$1]} 2>/dev/null"
	krep_wait_for 60 test -s "$tmp/$1.res"
}
# prod_stop NAME: stop it; true if it made ROUNDS >= 1 without a failure
# (RES[NAME] = "ROUNDS FAILURES")
declare -A RES=()
prod_stop() {
	local n='' f=''
	touch "$tmp/$1.stop"
	krep_wait_for 60 gone "${PROD[$1]}"
	wait "${PROD[$1]}" 2>/dev/null
	read -r n f <"$tmp/$1.res" 2>/dev/null
	RES[$1]="${n:-0} rounds, ${f:-?} failed"
	isnum "$n" "$f" && [ "$n" -ge 1 ] && [ "$f" = 0 ] && return 0
	ktap_diag "producer $1: ${RES[$1]}: $(tail -n 3 "$tmp/$1.err" 2>/dev/null)"
	return 1
}

# A producer fed through a FIFO by the loop itself, 20 records at a time:
# one krepctl for the whole loop, its records written as the loop goes.
#   fprod_start NAME NS TOPIC P ACKS  start krepctl NS produce TOPIC ...
#   fprod_write NAME                  20 more records to it
#   fprod_end NAME                    close its input; true if it ended
#                                     with every record produced
#                                     (FPRES[NAME] says how it went)
declare -A FPPID=() FPN=() FPRES=()
fprod_start() {
	local name=$1 fd
	rm -f "$tmp/$name.fifo"
	mkfifo "$tmp/$name.fifo" || return 1
	(close_fds; exec "$KREPCTL" --netns "$2" --json produce "$3" \
		partition "$4" acks "$5" timeout 10000 batch 10 \
		<"$tmp/$name.fifo" >"$tmp/$name.out" 2>"$tmp/$name.err") &
	FPPID[$name]=$!
	krep_cleanup_push "kill ${FPPID[$name]} 2>/dev/null"
	exec {fd}>"$tmp/$name.fifo" || return 1
	FPFD[$name]=$fd
	FPN[$name]=0
}
fprod_write() {
	# in a subshell: a producer that died costs an EPIPE, not this shell
	(printf %s "$RECS20" >&"${FPFD[$1]}") 2>/dev/null || return 1
	FPN[$1]=$((FPN[$1] + 20))
}
fprod_end() {
	local name=$1 rc=none out
	[ -n "${FPFD[$name]:-}" ] && eval "exec ${FPFD[$name]}>&-"
	unset "FPFD[$name]"
	if krep_wait_for 60 gone "${FPPID[$name]}"; then
		wait "${FPPID[$name]}"
		rc=$?
	fi
	out=$(cat "$tmp/$name.out" "$tmp/$name.err" 2>/dev/null)
	FPRES[$name]="${FPN[$name]} records"
	[ "$rc" = 0 ] && [[ $out == *"\"records\":${FPN[$name]},"* ]] &&
		[ "${FPN[$name]}" -gt 0 ] && return 0
	ktap_diag "producer $name: exit $rc after ${FPN[$name]} records written: $out"
	return 1
}

# x_up: netns X (its name in X) on the bridge, with $NET.9/24
x_up() {
	krep_netns_add X x || return 1
	ip link add kr0 netns "$X" type veth peer name px netns "$BR" &&
		ip -n "$BR" link set px master krbr up &&
		printf '%s\n' "link set lo up" "addr add $NET.9/24 dev kr0" \
			"link set kr0 up" | ip -n "$X" -b -
}

# stuck_epoch: stuck-0's leader epoch on broker 1, in EPOCH (left as it
# was when it cannot be read)
stuck_epoch() {
	local out re='"leader_epoch":([0-9]+)'
	out=$(describe "$B1" "$STOPIC" 2>/dev/null) && [[ $out =~ $re ]] &&
		EPOCH=${BASH_REMATCH[1]}
}

# setup WHAT: brokers configured (cluster_up and netns X the first time),
# the topics, big filled; then broker 1 with peer 9 too, and stuck on
# broker 1, filled; every replica caught up; one result
setup() {
	local ok=0 out i
	WITH9=0
	if [ "$1" = first ]; then
		cluster_up "$CLUSTER" || ok=1
		x_up || { ktap_diag "cannot connect netns X to the bridge"; ok=1; }
	else
		for i in 1 2 3; do
			bset "$i" || ok=1
		done
	fi
	cluster_topic big partitions 1 replication-factor 3 || ok=1
	cluster_topic work partitions 3 replication-factor 3 \
		config replica_lag_time_max_ms=$LAG || ok=1
	out=$(kc "$B1" --json produce big batch 100 acks all <"$tmp/big" 2>&1)
	[ "$out" = "{\"topic\":\"big\",\"partition\":0,\"records\":$BIG,\"first_offset\":0,\"last_offset\":$((BIG - 1))}" ] || {
		ktap_diag "produce to big: $out"
		ok=1
	}
	# peer 9 once the topics exist (broker 1 assigns new topics' replicas
	# over its peers), then the topic it is a replica of
	WITH9=1
	bset 1 || { ktap_diag "BROKER_SET of broker 1 with peer 9 failed"; ok=1; }
	out=$(kc "$B1" topic create "$STOPIC" partitions 1 \
		replication-factor 4 config replica_lag_time_max_ms=$LAG 2>&1) || {
		ktap_diag "topic create $STOPIC on broker 1: $out"
		ok=1
	}
	out=$(kc "$B1" --json produce "$STOPIC" batch 100 acks 1 <"$tmp/big" 2>&1)
	[ "$out" = "{\"topic\":\"$STOPIC\",\"partition\":0,\"records\":$BIG,\"first_offset\":0,\"last_offset\":$((BIG - 1))}" ] || {
		ktap_diag "produce to $STOPIC: $out"
		ok=1
	}
	EPOCH=
	stuck_epoch
	out=$(describe "$B1" "$STOPIC" 2>&1)
	jq -e --argjson n "$BIG" 'length == 1 and .[0].role == "leader" and
		.[0].leader == 1 and .[0].replicas == [1, 2, 3, 9] and
		.[0].leo == $n' <<<"$out" >/dev/null 2>&1 || {
		ktap_diag "$STOPIC on broker 1: $out"
		ok=1
	}
	[ "$ok" = 0 ] && { krep_wait_for 60 converged || ok=1; }
	if [ "$ok" = 0 ] && isnum "$EPOCH" && krep_wait_for 30 brokers_up; then
		ktap_ok "$2: 3 brokers, big-0 holds $BIG records on every replica; broker 1 with peer 9 and $STOPIC-0 (replicas 1,2,3,9) of $BIG records"
		return 0
	fi
	describe "$B1" big 2>&1 | ktap_diag_stdin
	for i in 1 2 3; do
		kc "$(bns "$i")" --json broker show 2>&1 | ktap_diag_stdin
	done
	ktap_fail "$2: 3 brokers, big-0 holds $BIG records on every replica; broker 1 with peer 9 and $STOPIC-0 (replicas 1,2,3,9) of $BIG records"
	return 1
}

ktap_plan 17

# the records: big's, and 20 for the producer loops
nums=()
eval "nums=({0..$((BIG - 1))})"
pad=$(printf "%0${PAD}d" 0)
printf -v x "big-%05d-$pad\n" "${nums[@]}"
printf %s "$x" >"$tmp/big"
printf -v RECS20 "loop-%02d-abcdefghijklmnopqrstuvwxyz-0123456789-abcdefghijklmnopqrstuvwxyz\n" {1..20}
printf %s "$RECS20" >"$tmp/recs20"

# --- A: stuck peers with the default socket_timeout_ms -------------------------------

section "A. set-up"
krep_kmsg_mark "$mark"
krep_mod_unload
# shellcheck disable=SC2086 # the parameters are words
krep_mod_load $PARAMS || ktap_bail "insmod krep.ko $PARAMS failed"
setup first "A" || ktap_bail "the cluster did not come up"
krep_pyserve_start sp "$X" stuck_peer || ktap_bail "cannot start stuck_peer.py in $X"

# 0. the address check: a HELLO claiming broker 2 from X is refused, one
# claiming 9 (X's own id) answered
section "0. a HELLO from an address not its broker id's"
krep_kmsg_mark "$mark-0"
desc="0: a HELLO claiming broker 2 from $NET.9 (X, not broker 2's address) is refused with its close line; one claiming broker 9 from there is answered"
# addr_refused: the close line of a connection from $NET.9 as broker 2
addr_refused() {
	local re="krep: connection from broker 2 \\(${NET//./\\.}\\.9:[0-9]+\\) closed: HELLO from an address not configured for its broker id"
	REFUSED=$(krep_kmsg_since "$mark-0" | grep -E "$re")
}
h2=$(spc 30 hello "$NET.1:$PORT" "$CLUSTER" 1 2)
h2rc=$?
h9=$(spc 30 hello "$NET.1:$PORT" "$CLUSTER" 1 9)
h9rc=$?
REFUSED=
if [ "$h2rc" = 0 ] && [[ $h2 == "hello closed "* ]] &&
   krep_wait_for 10 addr_refused && [ "$h9rc" = 0 ] &&
   [ "$h9" = "hello answered" ]; then
	ktap_ok "$desc: '${REFUSED#*] }'"
else
	ktap_diag "as broker 2: exit $h2rc: $h2"
	ktap_diag "as broker 9: exit $h9rc: $h9"
	krep_kmsg_since "$mark-0" | grep -E "krep: " | tail -n 5 | ktap_diag_stdin
	ktap_fail "$desc"
fi

# The stuck peer of part A: STUCK its address, STUCK_NAME its name.
#   need_stuck NAME  STUCK is (still) stuck, or else is released and a
#                    fresh one called NAME opened; false if there is none
#   unstick          reset STUCK's connection, wait for what hung on it
STUCK='' STUCK_NAME=''
need_stuck() {
	[ -n "$STUCK" ] && stuck_full "$STUCK" && return 0
	ktap_diag "no stuck peer before this step: opening $1"
	[ -z "$STUCK_NAME" ] || spc 10 release "$STUCK_NAME" >/dev/null 2>&1
	STUCK='' STUCK_NAME=''
	stuck_open "$1" || return 1
	STUCK=$SADDR STUCK_NAME=$1
}
unstick() {
	[ -z "$STUCK_NAME" ] || stuck_release "$STUCK_NAME"
	STUCK='' STUCK_NAME=''
}

section "A. a stuck peer"
if stuck_open S1; then
	STUCK=$SADDR STUCK_NAME=S1
	ktap_ok "a stuck peer ($STUCK, as broker 9) fills broker 1's send queue: $(<"$tmp/S1.open")"
	ss_diag "$STUCK"
else
	ktap_fail "a stuck peer (as broker 9) fills broker 1's send queue past $FULLQ bytes"
fi

# a. an unrelated namespace added and deleted, really gone
# witness_gone: the veth end the namespace held in BR went with it (and BR
# itself is still there to tell)
witness_gone() {
	ip -n "$BR" link show krbr >/dev/null 2>&1 &&
		! ip -n "$BR" link show hwit >/dev/null 2>&1
}
netns_cycle() {
	ip netns add "$1" || return 1
	ip link add hwit netns "$BR" type veth peer name hwit netns "$1" || return 1
	ip netns del "$1" || return 1
	krep_wait_for "$BOUND" witness_gone
}
section "a. netns add and del"
U=$(krep_netns_name u)
krep_cleanup_push "ip netns del $U"
desc="a: 'ip netns add; ip netns del' of an unrelated namespace completes (its pre_exit ran) within ${BOUND}s while a peer is stuck"
if need_stuck S1a; then
	t0=$SECONDS
	bounded "$BOUND" netns_cycle "$U"
	rc=$?
	if [ "$rc" = 0 ] && stuck_full "$STUCK"; then
		ktap_ok "$desc ($((SECONDS - t0))s)"
	else
		if [ "$rc" = 0 ]; then
			ktap_diag "the peer was no longer stuck afterwards"
		else
			ktap_diag "exit $rc after $((SECONDS - t0))s: $(<"$BOUT")"
			witness_gone || ktap_diag "the namespace's veth end is still in $BR: its cleanup did not get past krep's pre_exit"
		fi
		ss_diag "$STUCK"
		ktap_fail "$desc"
		unstick
		krep_wait_for "$BOUND" witness_gone ||
			ktap_diag "still not gone ${BOUND}s after the stuck peer's reset"
	fi
else
	ktap_fail "$desc (no stuck peer)"
fi

# c. the rest of the cluster works meanwhile
section "c. the cluster with a stuck peer"
desc="c: while the peer is stuck, acks=all on work-1 (led by broker 2) succeeds and broker 1 answers krepctl"
if need_stuck S1c; then
	t0=$SECONDS
	c_produce() {
		echo c-record | kc "$B2" --json produce work partition 1 acks all timeout 10000
	}
	bounded "$BOUND" c_produce
	prc=$?
	pout=$(<"$BOUT")
	bounded "$BOUND" kc "$B1" --json broker show
	src=$?
	sout=$(<"$BOUT")
	re='^\{"topic":"work","partition":1,"records":1,'
	if [ "$prc" = 0 ] && [[ $pout =~ $re ]] && [ "$src" = 0 ] &&
	   [[ $sout == *'"broker_id":1,'* ]] && stuck_full "$STUCK"; then
		ktap_ok "$desc ($((SECONDS - t0))s)"
	else
		ktap_diag "produce exit $prc: $pout"
		ktap_diag "broker show exit $src: $sout"
		stuck_full "$STUCK" || ktap_diag "the peer was no longer stuck afterwards"
		ktap_fail "$desc"
		if [ "$prc" = 124 ] || [ "$src" = 124 ]; then
			unstick
		fi
	fi
else
	ktap_fail "$desc (no stuck peer)"
fi

# b. BROKER_SET on broker 1 re-applying its configuration
section "b. BROKER_SET on broker 1"
desc="b: BROKER_SET of broker 1's same configuration completes within ${BOUND}s while a peer is stuck; its peers come back"
if need_stuck S1b; then
	gen 1
	g0=$GEN
	t0=$SECONDS
	bounded "$BOUND" bset 1
	rc=$?
	t1=$((SECONDS - t0))
	out=$(<"$BOUT")
	if [ "$rc" = 124 ]; then
		ss_diag "$STUCK"
		unstick
	fi
	up=0
	krep_wait_for 30 brokers_up || up=1
	gen 1
	if [ "$rc" = 0 ] && [ "$up" = 0 ] && isnum "$g0" "$GEN" &&
	   [ "$GEN" = $((g0 + 1)) ]; then
		ktap_ok "$desc (${t1}s)"
	else
		ktap_diag "exit $rc after ${t1}s: $out; peers up again: $up; generation $g0 -> $GEN"
		ktap_fail "$desc"
	fi
else
	ktap_fail "$desc (no stuck peer)"
fi
# its connection went with the re-applied configuration: done with it
[ -z "$STUCK_NAME" ] || spc 10 release "$STUCK_NAME" >/dev/null 2>&1
STUCK='' STUCK_NAME=''

# e. rmmod with a stuck peer
section "e. rmmod"
desc="e: rmmod completes within ${BOUND}s while a peer is stuck"
if stuck_open S2; then
	STUCK=$SADDR
	t0=$SECONDS
	bounded "$BOUND" rmmod krep
	rc=$?
	t1=$((SECONDS - t0))
	if [ "$rc" = 0 ] && ! krep_mod_loaded; then
		ktap_ok "$desc (${t1}s)"
	else
		ktap_diag "exit $rc after ${t1}s: $(<"$BOUT")"
		[ "$rc" != 124 ] || ss_diag "$STUCK"
		ktap_fail "$desc"
		[ "$rc" != 124 ] || stuck_release S2
	fi
else
	ktap_fail "$desc (no stuck peer)"
fi
spc 10 release S2 >/dev/null 2>&1
STUCK=
bounded 60 krep_mod_unload || ktap_bail "the module does not unload: $(<"$BOUT")"

# --- B: socket_timeout_ms, then the loops --------------------------------------------

section "B. set-up with socket_timeout_ms=$STO"
STO_OK=0
# shellcheck disable=SC2086 # the parameters are words
if ! out=$(insmod "$KREP_KO" $PARAMS socket_timeout_ms=$STO 2>&1); then
	STO_OK=1
	sto_why="insmod with socket_timeout_ms=$STO failed: $out; $(dmesg | tail -n 3 | tr '\n' ' ')"
	ktap_diag "$sto_why; loading without it for the loops"
	# shellcheck disable=SC2086
	krep_mod_load $PARAMS || ktap_bail "insmod krep.ko $PARAMS failed"
else
	krep_cleanup_push krep_mod_unload
	# a module ignores a parameter it does not know (with a log line)
	v=
	{ read -r v </sys/module/krep/parameters/socket_timeout_ms; } 2>/dev/null
	if [ "$v" != "$STO" ]; then
		STO_OK=1
		sto_why="insmod with socket_timeout_ms=$STO: /sys/module/krep/parameters/socket_timeout_ms is '$v', not $STO; $(dmesg | grep -F socket_timeout_ms | tail -n 1)"
	fi
fi
setup again "B" || ktap_bail "the cluster did not come up again"

section "d. socket_timeout_ms closes a stuck peer"
desc="d: socket_timeout_ms=$STO: broker 1 closes a stuck peer's connection on its own within 30 s, not before ${STO} ms, and logs it"
# The close must be krep's, with its log line: TCP's abort alone takes the
# socket out of ss (it is unhashed) even when krep never releases it.
# closed ADDR: broker 1 logged the close of ADDR's connection since the
# mark: the line in CLOSE, the time from the mark to it (ms) in CLOSE_MS
closed() {
	CLOSE=$(dmesg | awk -v m="krep-selftests: mark $mark-d" \
		-v pat="krep: connection from broker 9 ($1) closed: " '
		function ts(l) {
			if (!match(l, /^\[ *[0-9]+\.[0-9]+\]/))
				return -1
			return substr(l, RSTART + 1, RLENGTH - 2) + 0
		}
		found && index($0, pat) { printf "%d %s\n", (ts($0) - t0) * 1000, $0; exit }
		index($0, m) && substr($0, index($0, m) + length(m)) == "" { found = 1; t0 = ts($0) }')
	[ -n "$CLOSE" ] || return 1
	CLOSE_MS=${CLOSE%% *}
	CLOSE=${CLOSE#* }
}
if [ "$STO_OK" != 0 ]; then
	ktap_diag "$sto_why"
	ktap_fail "$desc"
elif krep_kmsg_mark "$mark-d" && stuck_open S3; then
	STUCK=$SADDR
	t0=$SECONDS
	if krep_wait_for 30 closed "$STUCK"; then
		st=$(spc 10 status S3)
		if [[ $st == *" state established "* ]] && [ "$CLOSE_MS" -ge "$STO" ]; then
			ktap_ok "$desc: $CLOSE_MS ms after the mark, $((SECONDS - t0))s after its window was full: '${CLOSE#*] }'"
		else
			ktap_diag "the stuck peer's own socket: $st"
			ktap_diag "closed $CLOSE_MS ms after the mark (before the connect): $CLOSE"
			ktap_fail "$desc"
		fi
	else
		established "$STUCK" ||
			ktap_diag "the connection is no longer established in broker 1's namespace (TCP gave up on it), but krep logged no close in 30 s"
		ss_diag "$STUCK"
		krep_kmsg_since "$mark-d" | grep -E "krep: " | tail -n 5 | ktap_diag_stdin
		ktap_fail "$desc"
	fi
	spc 10 release S3 >/dev/null 2>&1
	reap 30
else
	ktap_fail "$desc (no stuck peer)"
fi
STUCK=''

# (i) garbage connections while replicating
section "(i) $NGARBAGE garbage connections, seed $SEED"
krep_kmsg_mark "$mark-i"
desc="(i) $NGARBAGE garbage connections to broker 1 (from X, as broker 9) while acks=all produces run"
if prod_start gi "$B1" work 0 all; then
	stuck_epoch
	out=$(spc 300 garbage "$NET.1:$PORT" "$CLUSTER" 9 "$STOPIC" "$EPOCH" \
		"$NGARBAGE" "$SEED")
	grc=$?
	if prod_stop gi && [ "$grc" = 0 ] &&
	   [[ $out == "garbage $NGARBAGE connected $NGARBAGE failed 0"* ]]; then
		ktap_ok "$desc: ${out//$'\n'/; }; producer ${RES[gi]}"
	else
		ktap_diag "garbage exit $grc: $out"
		ktap_fail "$desc"
	fi
else
	prod_stop gi
	ktap_fail "$desc (the producer never got going)"
fi
after_loop "(i)" "$mark-i"

# (ii) BROKER_SET on broker 2, again and again
section "(ii) $NSET BROKER_SETs of broker 2"
krep_kmsg_mark "$mark-ii"
desc="(ii) $NSET BROKER_SETs of broker 2's configuration while its peers reconnect and acks=1 produces run"
ok=0
gen 2
g0=$GEN
t0=${EPOCHREALTIME/./}
if fprod_start s1 "$B1" work 0 1 && fprod_start s2 "$B2" work 1 1; then
	for ((k = 1; k <= NSET; k++)); do
		if ! { fprod_write s1 && fprod_write s2; }; then
			ktap_diag "a producer ended early"
			ok=1
			break
		fi
		bounded "$BOUND" bset 2 || {
			ktap_diag "BROKER_SET $k: exit $?: $(<"$BOUT")"
			ok=1
			break
		}
		if [ $((k % SETWAIT)) = 0 ] && ! krep_wait_for 30 peers_up 2; then
			ktap_diag "after BROKER_SET $k broker 2's peers did not come up"
			ok=1
			break
		fi
	done
else
	ok=1
	ktap_diag "the producers did not start"
fi
t1=${EPOCHREALTIME/./}
fprod_end s1 || ok=1
fprod_end s2 || ok=1
gen 2
if [ "$ok" = 0 ] && isnum "$g0" "$GEN" && [ "$GEN" = $((g0 + NSET)) ]; then
	ktap_ok "$desc: generation $g0 -> $GEN in $(((t1 - t0) / 1000)) ms; produced ${FPRES[s1]} to work-0, ${FPRES[s2]} to work-1"
else
	ktap_diag "generation $g0 -> $GEN"
	ktap_fail "$desc"
fi
after_loop "(ii)" "$mark-ii"

# (iii) broker 3's link cut and restored
section "(iii) $NFLAP cuts of broker 3's link"
krep_kmsg_mark "$mark-iii"
desc="(iii) $NFLAP cuts of broker 3's link while acks=1 produces run"
ok=0
long=0
if fprod_start f1 "$B1" work 0 1 && fprod_start f2 "$B2" work 1 1; then
	for ((k = 1; k <= NFLAP; k++)); do
		leo 1 work 0
		l0=$LEO
		link_down 3 || { ok=1; break; }
		if ! { fprod_write f1 && fprod_write f2; }; then
			ktap_diag "a producer ended early"
			ok=1
			break
		fi
		if ! isnum "$l0" || ! krep_wait_for 30 leo_above 1 work 0 "$l0"; then
			ktap_diag "cut $k: work-0's LEO on broker 1 did not move past '$l0'"
			ok=1
		fi
		if [ $((k % 4)) = 0 ]; then
			if krep_wait_for 30 peer_down 3 1; then
				long=$((long + 1))
			else
				ktap_diag "cut $k: broker 3 never dropped its connection to broker 1"
				ok=1
			fi
		fi
		link_up 3 || ok=1
		[ "$ok" = 0 ] || break
	done
else
	ok=1
	ktap_diag "the producers did not start"
fi
link_up 3
fprod_end f1 || ok=1
fprod_end f2 || ok=1
if [ "$ok" = 0 ]; then
	ktap_ok "$desc: $long of them until broker 3 dropped its connection; produced ${FPRES[f1]} to work-0, ${FPRES[f2]} to work-1"
else
	ktap_fail "$desc"
fi
after_loop "(iii)" "$mark-iii"

section "teardown"
krep_teardown_checks "$mark"
section "done"
ktap_finish
