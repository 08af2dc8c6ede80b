#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# controller_ha.sh - three krepd --controller --etcd, one active, on a
# three-member etcd cluster: the active one killed, paused past its lease,
# all of them restarted, and etcd losing one member, then its majority.
#
#   initial namespace ($NET.100, krc)        E1 $NET.11   E2 $NET.12   E3 $NET.13
#     krepd k1, k2, k3 --etcd E1,E2,E3         etcd e1      etcd e2      etcd e3
#     (brokers reached as netns sessions)        |            |            |
#            |                                   +---- BR: bridge krbr ----+
#            +-----------------------------------+     |      |      |
#                                                     B1     B2     B3
#                                               broker 1  broker 2  broker 3
#                                               $NET.1    $NET.2    $NET.3
#
# 1. one of the three is active and claims the brokers; it creates topic t,
#    whose partition state etcd holds in ZooKeeper's shape; a krepd beside
#    each broker registers it (P/brokers/ids/N, under its lease): killed,
#    its registration goes;
# 2. kill -9 the active one: a standby is active within the lease and a
#    round, at a higher controller epoch; then t-0's leader's link goes and
#    the new controller moves leadership, acknowledged records kept;
# 3. SIGSTOP the active one past its lease; another takes over and creates
#    topic u; SIGCONT: the old one steps down, and nothing of it lands in
#    etcd (no key written after it woke, at its epoch) or on a broker (every
#    claim stays the new epoch's);
# 4. restart all three: the state comes back from etcd (no state file);
# 5. one etcd member cut off: commits go on (topic v); two: no commit, the
#    active one says so and steps down, brokers keep serving; etcd back:
#    a controller is active again and commits (topic w).
#
# etcd runs with a 500 ms heartbeat and a 5 s election timeout (under
# software emulation, a 2 s one had etcd electing a leader every 20 s);
# krepd's lease is then at least etcd's shortest, 7.5 s: 8 s.
# Every wait polls a condition with a deadline. Prints KTAP; leaves the
# module unloaded and no namespace or process behind.

# shellcheck disable=SC2317,SC2016,SC2120 # the conditions krep_wait_for polls; jq programs; SKIP
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

krep_require_vm
krep_require_cmd jq ip etcd etcdctl /usr/bin/python3

LEASE=8000		# krepd's lease, ms (the etcd lease: 8 s)
POLL=500		# krepd's poll-ms: one round
SESSION=3000		# krepd's session timeout
PREFIX=/krep/ha
tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
mark=controller-ha-$$
EP="http://$NET.11:2379,http://$NET.12:2379,http://$NET.13:2379"
NICE=5
renice -n $NICE -p $$ >/dev/null || ktap_bail "cannot renice the suite"

ectl() { ETCDCTL_API=3 etcdctl --endpoints "$EP" --command-timeout=3s "$@"; }
eget() { # KEY below the prefix; a read that times out (etcd busy under
	# emulation) is tried again, up to three times
	local i
	for i in 1 2 3; do
		ectl get --print-value-only "$PREFIX/$1" 2>/dev/null && return 0
	done
	ectl get --print-value-only "$PREFIX/$1"
}

declare -a ETCD KPID
etcd_start() { # N
	local n=$1 cluster=
	local i
	for i in 1 2 3; do
		cluster+="${cluster:+,}e$i=http://$NET.1$i:2380"
	done
	ip netns exec "$(ens "$n")" nice -n -$NICE etcd --name "e$n" \
		--data-dir "$tmp/e$n" \
		--listen-client-urls "http://$NET.1$n:2379" \
		--advertise-client-urls "http://$NET.1$n:2379" \
		--listen-peer-urls "http://$NET.1$n:2380" \
		--initial-advertise-peer-urls "http://$NET.1$n:2380" \
		--initial-cluster "$cluster" --initial-cluster-state new \
		--initial-cluster-token "krep-ha-$$" \
		--heartbeat-interval 500 --election-timeout 5000 \
		--log-level warn >>"$tmp/etcd.$n.log" 2>&1 &
	ETCD[n]=$!
	krep_cleanup_push "kill ${ETCD[n]} 2>/dev/null; wait ${ETCD[n]} 2>/dev/null"
}
ens() { local v=E$1; echo "${!v}"; }
etcd_link() { ip -n "$(ens "$1")" link set kr0 "$2"; }	# N up|down
etcd_ok() { ectl put "$PREFIX-probe" x >/dev/null 2>&1; }

stamp() { # each line with the suite's clock in front (no fork a line)
	local l
	while IFS= read -r l; do
		printf '%.3f %s\n' "$(( ${EPOCHREALTIME/./} / 1000 - T0 ))e-3" "$l"
	done
}
T0=$(( ${EPOCHREALTIME/./} / 1000 ))
now_s() { printf '%.3f' "$(( ${EPOCHREALTIME/./} / 1000 - T0 ))e-3"; }
krepd_start() { # I
	local i=$1
	nice -n -$NICE "$KREPD" --controller --foreground --etcd "$EP" \
		--etcd-prefix $PREFIX --name "k$i" --socket "$tmp/k$i.sock" \
		--state-file "$tmp/k$i.state" --session-timeout-ms $SESSION \
		--lease-ms $LEASE --poll-ms $POLL --preferred-interval-ms 0 \
		--broker "1@netns:$B1" --broker "2@netns:$B2" \
		--broker "3@netns:$B3" > >(stamp >>"$tmp/k$i.log") 2>&1 &
	KPID[i]=$!
	krep_cleanup_push "kill -CONT ${KPID[i]} 2>/dev/null; kill ${KPID[i]} 2>/dev/null; wait ${KPID[i]} 2>/dev/null"
}
krepd_stop() { # I
	kill -CONT "${KPID[$1]}" 2>/dev/null
	kill "${KPID[$1]}" 2>/dev/null
	wait "${KPID[$1]}" 2>/dev/null
}
alive() { kill -0 "${KPID[$1]}" 2>/dev/null; }

ctl() { # I: krepd I's controller line (the first of "elect --brokers")
	local l
	IFS= read -r l < <("$KREPCTL" elect --brokers --socket "$tmp/k$1.sock" \
		2>/dev/null) && echo "$l"
}
lines() { # [SKIP]: the controller lines of the running krepds (but SKIP)
	local i l
	for i in 1 2 3; do
		[ "$i" = "${1:-}" ] && continue
		alive "$i" || continue
		l=$(ctl "$i") && [ -n "$l" ] || return 1
		echo "$l"
	done
}
ACTIVE='' EPOCH=''
one_active() { # [SKIP]: exactly one of the running krepds (but SKIP) is
	# active, and all name it; sets ACTIVE and EPOCH
	local out r
	out=$(lines "${1:-}") || return 1
	r=$(jq -rs '[.[] | select(.active)] as $a |
		if ($a | length) == 1 and ([.[].active_name] | unique | length) == 1
		then "\($a[0].name) \($a[0].controller_epoch)" else empty end' \
		<<<"$out") && [ -n "$r" ] || return 1
	ACTIVE=${r%% *}
	ACTIVE=${ACTIVE#k}
	EPOCH=${r#* }
}
no_active() { # none of the running krepds is active
	local out
	out=$(lines) || return 1
	jq -se 'all(.[]; .active | not)' <<<"$out" >/dev/null
}
elected_at() { # I: the suite's clock when krepd I last logged its election
	grep "etcd: elected:" "$tmp/k$1.log" | tail -n 1 | cut -d ' ' -f 1
}

claims_at() { # EPOCH [above]: every broker holds a claim at EPOCH (above it)
	local n e
	for n in 1 2 3; do
		ip netns exec "$(bns "$n")" /usr/bin/python3 "$here/ctl_helper.py" \
			broker >"$tmp/claim.$n" 2>&1 || return 1
		e=$(sed -n 's/.* ctrl-epoch \([0-9]*\) .*/\1/p' "$tmp/claim.$n")
		if [ "${2:-}" = above ]; then
			[ "${e:-0}" -gt "$1" ] || return 1
		else
			[ "${e:-0}" = "$1" ] || return 1
		fi
	done
}
sv() { # N TOPIC FILTER: of broker N's TOPIC-0
	local d
	d=$(describe "$(bns "$1")" "$2") || return 1
	jq -r ".[] | select(.partition == 0) | $3" <<<"$d"
}
on_all() { # TOPIC: every broker has TOPIC-0 with a leader
	local n
	for n in 1 2 3; do
		[ "$(sv "$n" "$1" '.leader // -1')" -ge 1 ] 2>/dev/null || return 1
	done
}
leader_of() { sv 1 "$1" .leader; }	# TOPIC: as broker 1 sees it
pstate() { eget "brokers/topics/$1/partitions/0/state"; }	# TOPIC
create() { # TOPIC via the active krepd
	"$KREPCTL" topic create "$1" partitions 1 replication-factor 3 \
		config min_insync_replicas=2,replica_lag_time_max_ms=1000 \
		--controller --socket "$tmp/k$ACTIVE.sock" >/dev/null 2>&1
}
diag() { # what the krepds and etcd said last
	local i
	for i in 1 2 3; do
		ktap_diag "k$i (pid ${KPID[i]:-}):"
		tail -n 8 "$tmp/k$i.log" 2>/dev/null | ktap_diag_stdin
	done
	ectl get --prefix "$PREFIX" 2>&1 | tail -n 20 | ktap_diag_stdin
}

# The conditions below start several processes each (krepctl, jq, etcdctl,
# a Python helper: 0.2 to 0.5 s of CPU apiece in the VM): poll them at a
# pace that leaves the CPU to etcd and the krepds under test.
paced() { sleep 0.5; "$@"; }

ktap_plan 16

# --- set-up -----------------------------------------------------------------

krep_kmsg_mark "$mark"
krep_mod_unload
krep_mod_load fetch_timeout_ms=2000 reconnect_backoff_max_ms=500 ||
	ktap_bail "insmod krep.ko failed"
cluster_up krepha || ktap_bail "cannot set up three brokers"
ip link add krc type veth peer name pc netns "$BR" &&
	ip -n "$BR" link set pc master krbr up &&
	ip addr add "$NET.100/24" dev krc && ip link set krc up ||
	ktap_bail "cannot wire the controllers' namespace"
for n in 1 2 3; do
	krep_netns_add "E$n" "e$n" || ktap_bail "netns e$n"
	ip link add kr0 netns "$(ens "$n")" type veth peer name "pe$n" \
		netns "$BR" &&
		ip -n "$BR" link set "pe$n" master krbr up &&
		printf '%s\n' "link set lo up" "addr add $NET.1$n/24 dev kr0" \
			"link set kr0 up" | ip -n "$(ens "$n")" -b - ||
		ktap_bail "cannot wire etcd member $n"
done
t0=$SECONDS
for n in 1 2 3; do etcd_start "$n"; done
krep_wait_for 90 paced etcd_ok || { tail -n 5 "$tmp"/etcd.*.log | ktap_diag_stdin
	ktap_bail "etcd did not come up"; }
ktap_diag "etcd: 3 members up in $((SECONDS - t0)) s"
krep_wait_for 60 cluster_peers_up || ktap_bail "peers did not connect"
declare -a REG
reg_start() { # N: the krepd beside broker N, registering it in etcd
	nice -n -$NICE "$KREPD" --netns "$(bns "$1")" --foreground \
		--etcd "$EP" --etcd-prefix $PREFIX >>"$tmp/reg.$1.log" 2>&1 &
	REG[$1]=$!
	krep_cleanup_push "kill ${REG[$1]} 2>/dev/null; wait ${REG[$1]} 2>/dev/null"
}
for n in 1 2 3; do reg_start "$n"; done

# --- 1. one active ----------------------------------------------------------

ktap_diag "1. three krepds, one active (at ${SECONDS}s)"
for i in 1 2 3; do krepd_start "$i"; done
if krep_wait_for 60 paced one_active && krep_wait_for 40 paced claims_at "$EPOCH"; then
	ktap_ok "one of three krepds is active (k$ACTIVE, epoch $EPOCH) and claims the brokers"
else
	diag
	ktap_fail "one of three krepds is active and claims the brokers"
fi
shape() { # TOPIC: etcd has its partition state, ZooKeeper's shape plus ELR
	# and partition epoch, with the leader the brokers have
	local s l
	s=$(pstate "$1") && l=$(leader_of "$1") || return 1
	jq -e --argjson l "$l" '.version == 1 and .leader == $l and
		(.controller_epoch | type) == "number" and
		(.leader_epoch | type) == "number" and
		(.isr | type) == "array" and (.elr | type) == "array" and
		(.partition_epoch | type) == "number"' <<<"$s" >/dev/null
}
if create t && krep_wait_for 30 paced on_all t && krep_wait_for 20 paced shape t; then
	ktap_ok "the active krepd creates t; etcd holds t-0's state: $(pstate t)"
else
	diag
	ktap_fail "the active krepd creates t; etcd holds t-0's state"
fi

registered() { # IDS: exactly these brokers are registered, in etcd and as
	# the active krepd says
	local want=$1 got
	got=$(ectl get --prefix --keys-only "$PREFIX/brokers/ids/" |
		sed -n 's|.*/ids/||p' | sort -n | paste -sd, -) &&
		[ "$got" = "$want" ] || return 1
	got=$("$KREPCTL" elect --brokers --socket "$tmp/k$ACTIVE.sock" 2>/dev/null |
		jq -rs '[.[1:][] | select(.registered) | .id] | join(",")') &&
		[ "$got" = "$want" ]
}
if krep_wait_for 30 paced registered 1,2,3 &&
   [ "$(eget brokers/ids/2 | jq -r .broker_id)" = 2 ] &&
   [ "$(ectl get -w json "$PREFIX/brokers/ids/2" | jq -r '.kvs[0].lease')" != null ]; then
	ktap_ok "the krepd beside each broker registers it, under a lease: $(eget brokers/ids/2)"
else
	diag
	tail -n 5 "$tmp"/reg.*.log | ktap_diag_stdin
	ktap_fail "the krepd beside each broker registers it, under a lease"
fi
kill -9 "${REG[3]}"
wait "${REG[3]}" 2>/dev/null
if krep_wait_for 30 paced registered 1,2; then
	ktap_ok "the krepd beside broker 3 killed: its registration goes with its lease"
else
	diag
	ktap_fail "the krepd beside broker 3 killed: its registration goes with its lease"
fi
reg_start 3

# --- 2. kill -9 the active one ------------------------------------------------

ktap_diag "2. kill -9 the active krepd (at ${SECONDS}s)"
L=$(leader_of t)
seq -f "r%g" 1 20 | kc "$(bns "$L")" produce t acks all timeout 10000 \
	>/dev/null 2>&1 || ktap_diag "produce of 20 records to t failed"
old=$ACTIVE old_epoch=$EPOCH
t_kill=$(now_s)
ktap_diag "$t_kill kill -9 k$old"
kill -9 "${KPID[old]}"
wait "${KPID[old]}" 2>/dev/null
if krep_wait_for 40 paced one_active "$old" && [ "$EPOCH" -gt "$old_epoch" ]; then
	# from the kill to the election, by the krepds' logs' clock
	ms=$(awk -v a="$(elected_at "$ACTIVE")" -v k="$t_kill" \
		'BEGIN { printf "%d", (a - k) * 1000 }')
	# the lease, one standby round, and etcd's expiry (checked each 0.5 s)
	if [ "$ms" -le $((LEASE + POLL + 1500)) ]; then
		ktap_ok "k$ACTIVE takes over $ms ms after the kill (lease $LEASE ms, round $POLL ms), epoch $old_epoch -> $EPOCH"
	else
		diag
		ktap_fail "k$ACTIVE takes over $ms ms after the kill, more than the lease ($LEASE ms) and a round"
	fi
else
	diag
	ktap_fail "a standby takes over from a killed krepd"
fi
krepd_start "$old"	# a standby again, for what follows
moved() { # t's leader is not $L any more, in etcd and on the brokers
	local l
	l=$(leader_of t) && [ "$l" != "$L" ] && [ "$l" -ge 1 ] &&
		[ "$(pstate t | jq -r .leader)" = "$l" ]
}
le0=$(pstate t | jq -r .leader_epoch)
link_down "$L"
if krep_wait_for 40 paced moved; then
	l=$(leader_of t)
	n=$(kc "$(bns "$l")" consume t -o beginning -c 20 wait 2000 2>/dev/null |
		grep -c '^r')
	if [ "$n" = 20 ] && [ "$(pstate t | jq -r .leader_epoch)" -gt "$le0" ]; then
		ktap_ok "t-0's leader $L cut off: the new controller moves it to $l (in etcd too), the 20 acknowledged records kept"
	else
		ktap_fail "t-0's leader moved to $l, but $n of 20 records, leader epoch $le0 -> $(pstate t | jq -r .leader_epoch)"
	fi
else
	diag
	ktap_fail "t-0's leader $L cut off: the new controller moves it"
fi
link_up "$L"
krep_wait_for 60 cluster_peers_up || ktap_diag "peers did not reconnect"

# --- 3. SIGSTOP the active one past its lease -----------------------------------

ktap_diag "3. SIGSTOP the active krepd (at ${SECONDS}s)"
krep_wait_for 60 paced one_active || ktap_diag "no single active krepd before section 3"
A=$ACTIVE a_epoch=$EPOCH
ktap_diag "$(now_s) kill -STOP k$A"
kill -STOP "${KPID[A]}"
if krep_wait_for 90 paced one_active "$A" && [ "$EPOCH" -gt "$a_epoch" ] &&
   krep_wait_for 60 paced claims_at "$EPOCH" && create u &&
   krep_wait_for 60 paced on_all u; then
	ktap_ok "k$A stopped: k$ACTIVE takes over (epoch $a_epoch -> $EPOCH), claims the brokers and creates u"
else
	diag
	ktap_fail "k$A stopped: another krepd takes over and creates u"
fi
B=$ACTIVE b_epoch=$EPOCH
rev=$(ectl get "$PREFIX/controller_epoch" -w json | jq -r .header.revision)
ktap_diag "$(now_s) kill -CONT k$A"
kill -CONT "${KPID[A]}"
stepped() { grep -q "stepped down" "$tmp/k$A.log" &&
	[ "$(ctl "$A" | jq -r .active)" = false ]; }
late_writes() { # keys written after the SIGCONT at the old epoch, or the
	# election key and epoch no longer the new controller's
	ectl get --prefix "$PREFIX/" -w json | jq -r --argjson r "$rev" \
		--argjson e "$a_epoch" '.kvs[] | select((.mod_revision | tonumber) > $r) |
		(.value | @base64d) as $v | select(($v | fromjson? |
		.controller_epoch? // .epoch?) == $e) | .key | @base64d'
	[ "$(eget controller_epoch)" -gt "$a_epoch" ] ||
		echo "controller_epoch $(eget controller_epoch)"
	[ "$(eget controller | jq -r .epoch)" -gt "$a_epoch" ] ||
		echo "controller $(eget controller)"
}
if krep_wait_for 60 paced stepped && krep_wait_for 60 paced one_active; then
	w=$(late_writes)
	if [ -z "$w" ] && claims_at "$a_epoch" above; then
		ktap_ok "k$A woken: it steps down; nothing of it in etcd, every broker above its epoch $a_epoch"
	else
		ktap_diag "written: $w"
		cat "$tmp"/claim.* | ktap_diag_stdin
		ktap_fail "k$A woken: something of it landed in etcd or on a broker"
	fi
else
	diag
	ktap_fail "k$A woken: it steps down and k$B stays active"
fi

# --- 4. restart every krepd -----------------------------------------------------

ktap_diag "4. restart every krepd (at ${SECONDS}s)"
before=$(pstate t | jq -c '{leader, leader_epoch, isr}')
for i in 1 2 3; do krepd_stop "$i"; done
for i in 1 2 3; do krepd_start "$i"; done
if krep_wait_for 90 paced one_active && [ "$EPOCH" -gt "$b_epoch" ] &&
   grep -q "state from etcd: .* [2-9] topics" "$tmp/k$ACTIVE.log" &&
   ! ls "$tmp"/k?.state >/dev/null 2>&1 && krep_wait_for 60 paced claims_at "$EPOCH"; then
	ktap_ok "all restarted: k$ACTIVE active at epoch $EPOCH with the state from etcd (no state file)"
else
	diag
	ktap_fail "all restarted: the state comes back from etcd"
fi
view_t() { "$KREPCTL" elect --status --socket "$tmp/k$ACTIVE.sock" 2>/dev/null |
	jq -c 'select(.topic == "t" and .partition == 0) | {leader, leader_epoch, isr}'; }
if [ "$(view_t)" = "$before" ] || [ "$(view_t | jq -c '{leader}')" = "$(jq -c '{leader}' <<<"$before")" ]; then
	ktap_ok "its view of t-0 is etcd's: $(view_t)"
else
	ktap_fail "its view of t-0 $(view_t) is not etcd's $before"
fi

# --- 5. etcd loses one member, then its majority -----------------------------------

ktap_diag "5. etcd members cut off (at ${SECONDS}s)"
etcd_link 3 down
if krep_wait_for 60 paced one_active && create v && krep_wait_for 30 paced on_all v &&
   krep_wait_for 20 eval 'pstate v | grep -q leader'; then
	ktap_ok "etcd member 3 cut off: k$ACTIVE still commits (v created, in etcd)"
else
	diag
	ktap_fail "etcd member 3 cut off: the controller still commits"
fi
C=$ACTIVE
etcd_link 2 down
create x	# refused or never committed: etcd has no quorum
said() { grep -qE "etcd: (cannot|the controller lease)" "$tmp/k$C.log"; }
if krep_wait_for 40 paced said && krep_wait_for 60 paced no_active; then
	L=$(leader_of t)
	if seq -f "m%g" 1 5 | kc "$(bns "$L")" produce t acks 1 >/dev/null 2>&1; then
		ktap_ok "etcd's majority lost: k$C says so and steps down, brokers keep serving (t-0 on $L)"
	else
		ktap_fail "etcd's majority lost: t-0's leader $L refuses a produce"
	fi
else
	diag
	ktap_fail "etcd's majority lost: the controller says so and stops"
fi
etcd_link 2 up
etcd_link 3 up
if krep_wait_for 60 paced etcd_ok && krep_wait_for 90 paced one_active &&
   create w && krep_wait_for 30 paced on_all w &&
   krep_wait_for 20 eval 'pstate w | grep -q leader'; then
	ktap_ok "etcd back: k$ACTIVE active (epoch $EPOCH) and commits again (w)"
else
	diag
	ktap_fail "etcd back: a controller is active and commits again"
fi
if grep -h "error\|cannot" "$tmp"/k?.log | grep -vq "etcd\|broker\|claim"; then
	grep -h "error\|cannot" "$tmp"/k?.log | grep -v "etcd\|broker\|claim" |
		head -n 5 | ktap_diag_stdin
fi

# --- teardown ---------------------------------------------------------------

ktap_diag "teardown (at ${SECONDS}s)"
if [ "$_ktap_fail" != 0 ] || [ -n "${KREP_HA_LOGS:-}" ]; then
	for i in 1 2 3; do
		ktap_diag "k$i's log:"
		grep -vE "ISR .*ALTER_ISR|was behind" "$tmp/k$i.log" | ktap_diag_stdin
	done
	for n in 1 2 3; do
		ktap_diag "etcd e$n's log (last lines):"
		tail -n 15 "$tmp/etcd.$n.log" | cut -c 1-300 | ktap_diag_stdin
	done
fi
for i in 1 2 3; do krepd_stop "$i"; done
if grep -q "resigned as the active controller" "$tmp"/k?.log; then
	ktap_ok "the active krepd resigns on SIGTERM"
else
	ktap_fail "the active krepd resigns on SIGTERM"
fi
krep_teardown_checks "$mark"
ktap_finish
