#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# memcg.sh - what peers and Kafka clients make a broker allocate is
# charged to the memory cgroup of whoever gave the broker its id.
#
#   cgroup2 at /sys/fs/cgroup, memory controller on below the root:
#     krep-b1-PID   the `broker set` that set broker 1 up (then empty)
#     krep-b2-PID   the same for broker 2
#     krep-cl-PID   the Kafka client
#
#     B1 10.204.0.1 ---- krbr (BR) ---- B2 10.204.0.2        (B3: unused)
#     replication :9093, Kafka :9092; topic m: 1 partition, replicas
#     1,2, led by broker 1
#
# 1. 8 MiB of records through broker 1's Kafka port, acks=all: the
#    leader's log pages are appended in its receive work and the
#    follower's in its fetcher's; each broker's cgroup (memory.stat
#    "kernel") grows by about 8 MiB, the client's by far less.
# 2. memory.max a little above each broker's usage: the producer's
#    appends are refused with UNKNOWN_SERVER_ERROR (-1, the errno ENOMEM of
#    the log) on a connection that still answers, the leader's log keeps
#    only what was acknowledged, the follower drops what it cannot keep
#    and says why; no OOM kill, no warning.
# 3. The topic deleted: the leader's cgroup gets its log memory back. The
#    namespaces deleted and the cgroups removed: no cgroup stays dying, so
#    the brokers dropped their references.
# Prints KTAP; leaves the module unloaded, no namespace and no cgroup.

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"
NET=10.204.0
PORT=9093
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

krep_require_vm
krep_require_cmd jq ip /usr/bin/python3

CG=/sys/fs/cgroup
MIB=$((1 << 20))
VOL=$((8 * MIB))	# section 1: bytes of values, acks=all
VSIZE=65536		# one record per batch, one batch per request
HEAD=$((3 * MIB))	# section 2: broker 1's memory.max above its usage
HEAD2=$((1 * MIB))	# broker 2's
MORE=$((16 * MIB))	# section 2: offered, far past HEAD
mark=memcg-$$

kstat() { # CGROUP: bytes of kernel memory charged to it
	awk '$1 == "kernel" { print $2 }' "$CG/$1/memory.stat"
}

event() { # CGROUP NAME: a memory.events counter
	awk -v n="$2" '$1 == n { print $2 }' "$CG/$1/memory.events"
}

dying() { awk '$1 == "nr_dying_descendants" { print $2 }' "$CG/cgroup.stat"; }

in_cgroup() { # CGROUP CMD...: run CMD as a member of CGROUP
	local cg=$1
	shift
	(echo "$BASHPID" >"$CG/$cg/cgroup.procs" && exec "$@")
}

fill() { # CGROUP ACKS BYTES: kafka_raw.py --fill to broker 1's topic m
	in_cgroup "$1" ip netns exec "$B1" /usr/bin/python3 \
		"$here/kafka_raw.py" --fill "$NET.1:9092" m "$2" "$3" "$VSIZE"
}

pf() { # N FIELD: partition m-0 on broker N
	part "$(bns "$1")" m 0 | jq -cr ".$2"
}

ktap_plan 11

# --- set-up ---------------------------------------------------------------

grep -qw memory "$CG/cgroup.controllers" 2>/dev/null ||
	ktap_bail "no cgroup2 with the memory controller at $CG"
echo +memory >"$CG/cgroup.subtree_control" ||
	ktap_bail "cannot enable the memory controller below $CG"
d0=$(dying)
for g in b1 b2 cl; do
	mkdir "$CG/krep-$g-$$" || ktap_bail "mkdir $CG/krep-$g-$$"
	krep_cleanup_push rmdir "$CG/krep-$g-$$"
done
G1=krep-b1-$$ G2=krep-b2-$$ GC=krep-cl-$$

krep_kmsg_mark "$mark"
krep_mod_unload
krep_mod_load || ktap_bail "insmod krep.ko failed"
CLUSTER_BROKERS=none cluster_up krepg || ktap_bail "cannot set up the namespaces"
in_cgroup "$G1" "$KREPCTL" --netns "$B1" broker set id 1 cluster krepg \
	listen "$NET.1:$PORT" peers "2@$NET.2:$PORT" \
	kafka-listen "$NET.1:9092" >/dev/null || ktap_bail "broker 1"
in_cgroup "$G2" "$KREPCTL" --netns "$B2" broker set id 2 cluster krepg \
	listen "$NET.2:$PORT" peers "1@$NET.1:$PORT" >/dev/null ||
	ktap_bail "broker 2"
for n in 1 2; do
	cluster_topic_on "$n" m partitions 1 replication-factor 2 ||
		ktap_bail "topic m on broker $n"
done
in_sync() { [ "$(pf 1 isr)" = "[1,2]" ]; }
krep_wait_for 60 in_sync || ktap_bail "m's ISR did not fill: $(pf 1 isr)"
# Python's first start (its files, its imports) is charged to the root
fill "" 1 0 >/dev/null

# --- 1. charged to the brokers' cgroups -------------------------------------

ktap_diag "1. $((VOL / MIB)) MiB through broker 1's Kafka port (at ${SECONDS}s)"
k1=$(kstat "$G1") k2=$(kstat "$G2") kc0=$(kstat "$GC")
out=$(fill "$GC" -1 "$VOL")
n1=$((VOL / VSIZE))
caught_up() { [ "$(pf 2 leo)" = "$n1" ] && [ "$(pf 1 hw)" = "$n1" ]; }
if jq -e --argjson b "$VOL" '.bytes == $b and .error == 0' <<<"$out" \
	>/dev/null && krep_wait_for 30 caught_up; then
	ktap_ok "$n1 batches of $VSIZE B acknowledged with acks=all, on both brokers"
else
	ktap_diag "$out; broker 1: $(part "$B1" m 0); broker 2: $(part "$B2" m 0)"
	ktap_fail "$n1 batches of $VSIZE B acknowledged with acks=all, on both brokers"
fi
d1=$(($(kstat "$G1") - k1)) d2=$(($(kstat "$G2") - k2))
dc=$(($(kstat "$GC") - kc0))
ktap_diag "kernel memory grew by $d1 B (broker 1), $d2 B (broker 2), $dc B (client) for $VOL B of values"
for x in "1 $G1 $d1 leader" "2 $G2 $d2 follower"; do
	read -r n g d what <<<"$x"
	if [ "$d" -ge $((VOL * 9 / 10)) ]; then
		ktap_ok "broker $n's cgroup is charged for the $what's log: $d B"
	else
		ktap_fail "broker $n's cgroup is charged for the $what's log: $d B of at least $((VOL * 9 / 10))"
	fi
done
if [ "$dc" -lt $((VOL / 2)) ]; then
	ktap_ok "the Kafka client's cgroup is not charged for the log: $dc B"
else
	ktap_fail "the Kafka client's cgroup is not charged for the log: $dc B"
fi

# --- 2. memory.max ------------------------------------------------------------

ktap_diag "2. memory.max $((HEAD / MIB)) MiB above broker 1's usage, $((HEAD2 / MIB)) above broker 2's (at ${SECONDS}s)"
krep_kmsg_mark "$mark-max"
echo $(($(cat "$CG/$G2/memory.current") + HEAD2)) >"$CG/$G2/memory.max"
echo $(($(cat "$CG/$G1/memory.current") + HEAD)) >"$CG/$G1/memory.max"
# the producer offers far more than fits: what its requests need until
# they are answered goes uncharged when the cgroup is full, so each is
# answered, and the append is what is refused
out=$(fill "$GC" 1 "$MORE")
acked=$((n1 + $(jq '.batches' <<<"$out")))
closes=$(krep_kmsg_since "$mark-max" | grep "Kafka client .* closed")
if jq -e --argjson m "$MORE" '.error == -1 and .served and .bytes < $m' \
	<<<"$out" >/dev/null && [ "$(pf 1 leo)" = "$acked" ] && [ -z "$closes" ]; then
	ktap_ok "appends past memory.max refused with UNKNOWN_SERVER_ERROR (-1) after $(jq '.bytes' <<<"$out") more B, the connection still served, the log ends at the $acked acknowledged batches"
else
	ktap_diag "$out; broker 1: $(part "$B1" m 0)"
	krep_kmsg_since "$mark-max" | grep -v "records from broker" |
		tail -n 20 | ktap_diag_stdin
	ktap_fail "appends past memory.max refused with UNKNOWN_SERVER_ERROR (-1), the connection still served, the log ends at the acknowledged batches"
fi
dropped() {
	krep_kmsg_since "$mark-max" |
		grep -q "records from broker 1 dropped: out of memory"
}
if krep_wait_for 30 dropped && [ "$(pf 2 leo)" -lt "$acked" ]; then
	ktap_ok "broker 2 stops at LEO $(pf 2 leo) of $acked: records from broker 1 dropped: out of memory (kernel log)"
else
	krep_kmsg_since "$mark-max" | tail -n 5 | ktap_diag_stdin
	ktap_fail "broker 2 stops short and says why: records from broker 1 dropped: out of memory (LEO $(pf 2 leo) of $acked)"
fi
ev="$(event "$G1" max) $(event "$G1" oom) $(event "$G1" oom_kill) $(event "$G2" max) $(event "$G2" oom) $(event "$G2" oom_kill)"
if [ "$(event "$G1" max)" -gt 0 ] && [ "$(event "$G2" max)" -gt 0 ] &&
   [ "$(event "$G1" oom)$(event "$G1" oom_kill)" = 00 ] &&
   [ "$(event "$G2" oom)$(event "$G2" oom_kill)" = 00 ] &&
   ! krep_kmsg_since "$mark-max" | grep -q "oom-killer\|out of memory: Killed"; then
	ktap_ok "both cgroups hit memory.max, no OOM kill (memory.events max/oom/oom_kill: $ev)"
else
	ktap_diag "memory.events max/oom/oom_kill, broker 1 then 2: $ev"
	krep_kmsg_since "$mark-max" | grep -i "oom" | head -n 5 | ktap_diag_stdin
	ktap_fail "both cgroups hit memory.max, no OOM kill"
fi

# --- 3. freed, and the references dropped -------------------------------------

ktap_diag "3. topic m deleted, the brokers gone (at ${SECONDS}s)"
echo max >"$CG/$G1/memory.max"
echo max >"$CG/$G2/memory.max"
before=$(kstat "$G1")
logb=$(pf 1 log_bytes)
kc "$B1" topic delete m || ktap_diag "topic delete m failed"
freed() { [ $((before - $(kstat "$G1"))) -ge $((logb * 9 / 10)) ]; }
if krep_wait_for 30 freed; then
	ktap_ok "broker 1's cgroup gets its log memory back: $((before - $(kstat "$G1"))) B for $logb log bytes"
else
	ktap_fail "broker 1's cgroup gets its log memory back: $((before - $(kstat "$G1"))) B for $logb log bytes"
fi
# the namespaces go (their brokers with them), then the cgroups: page cache
# they were charged for is reclaimed first, so only a reference can keep
# one dying
for ns in "$B1" "$B2" "$B3" "$BR"; do
	ip netns del "$ns"
done
for g in "$G1" "$G2" "$GC"; do
	echo 1G >"$CG/$g/memory.reclaim" 2>/dev/null
done
gone() { rmdir "$CG/$G1" "$CG/$G2" "$CG/$GC" 2>/dev/null; [ ! -e "$CG/$G1" ]; }
# A page charged to a removed cgroup keeps it dying until it is reclaimed,
# and nothing presses the VM's memory to reclaim it (a page the suite's
# processes read or wrote after memory.reclaim above, on a busy VM): drop
# the clean page cache every 5 s of the wait. What a broker holds (a
# socket's memcg, its log's pages) is not page cache, and stays.
next_drop=0
undead() {
	[ "$(dying)" -le "$d0" ] && return 0
	if [ "$SECONDS" -ge "$next_drop" ]; then
		sync
		echo 3 >/proc/sys/vm/drop_caches
		next_drop=$((SECONDS + 5))
	fi
	return 1
}
if krep_wait_for 30 gone && krep_wait_for 60 undead; then
	ktap_ok "the cgroups removed, none stays dying: the brokers dropped their references"
else
	ktap_fail "the cgroups removed, none stays dying ($(dying) dying, $d0 before)"
fi

# --- teardown -----------------------------------------------------------------

ktap_diag "teardown (at ${SECONDS}s)"
krep_teardown_checks "$mark"
ktap_finish
