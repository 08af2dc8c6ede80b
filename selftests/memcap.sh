#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# memcap.sh - a follower at its broker's memory cap (log_memory_max).
#
# Three brokers in three namespaces (cluster.sh), the module loaded with
# log_memory_max=4 MiB (each broker's own cap):
#   fill  2 partitions, RF 1: fill-1 lives on broker 2 alone and takes
#         most of broker 2's memory
#   rep   1 partition, RF 3, led by broker 1, replica_lag_time_max_ms=1000
#   ps    3 partitions, RF 3: ps-2 led by broker 3, one small record in it
#         before the fill, so broker 2's replica has room in its last page
#
# 1. broker 2 holds ~3 MiB of fill-1; 2 MiB of acks=1 records to rep fit
#    brokers 1 and 3, not broker 2: its LEO stops short, the leader drops
#    it from the ISR and commits on {1,3}; the kernel log says why.
# 2. broker 2 backs off instead of refetching at once: the leader answers
#    it a few times a second, not thousands; a producer to broker 2's own
#    partition gets the clear storage error.
#    Producer state counts against the cap too: new producer ids on
#    broker 2's own partition (TXN begin) take the last bytes, then one is
#    refused with the cap's error. A transaction on ps-2 (broker 3 leads)
#    lands in broker 2's last page, but its producer state does not fit:
#    broker 2's state goes stale and its LSO stays at the transaction's
#    first offset after the commit, where broker 1's reaches HW.
# 3. fill deleted: broker 2's memory is free, it catches up, rejoins the
#    ISR and ends with the same log as the others; its ps-2 producer
#    state is rebuilt from its log and its LSO reaches HW.
# Prints KTAP; leaves the module unloaded and no namespace behind.

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"
NET=10.203.0
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

krep_require_vm
krep_require_cmd jq ip /usr/bin/python3

CAP=$((4 << 20))
LAG=1000
SEG=$((1 << 20))
FILL=3000		# records of VSIZE bytes to fill-1: ~3 MiB of 4
REP=2000		# records of VSIZE bytes to rep: ~2 MiB
VSIZE=1000
tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
mark=memcap-$$

values() { # PREFIX COUNT: COUNT lines of VSIZE bytes
	local pad
	pad=$(head -c "$VSIZE" /dev/zero | tr '\0' x)
	seq -f "$1-%08g-$pad" 0 $(($2 - 1)) | cut -c1-"$VSIZE"
}

# field of one partition's describe on broker N
pf() { # N TOPIC P FIELD
	part "$(bns "$1")" "$2" "$3" | jq -cr ".$4"
}

resps() { # N: the leader's fetch_responses counter
	kc "$(bns "$1")" --json stats | jq '.counters.fetch_responses'
}

ktap_plan 12

# --- set-up ---------------------------------------------------------------

krep_kmsg_mark "$mark"
krep_mod_unload
krep_mod_load log_memory_max=$CAP || ktap_bail "insmod krep.ko failed"
cluster_up krepm || ktap_bail "cannot set up three brokers"
cluster_topic fill partitions 2 replication-factor 1 \
	config segment_bytes=$SEG || ktap_bail "topic fill"
cluster_topic rep partitions 1 replication-factor 3 \
	config replica_lag_time_max_ms=$LAG,segment_bytes=$SEG ||
	ktap_bail "topic rep"
cluster_topic ps partitions 3 replication-factor 3 || ktap_bail "topic ps"
krep_wait_for 60 cluster_peers_up || ktap_bail "peers did not connect"
full_isr() { [ "$(pf 1 rep 0 isr)" = "[1,2,3]" ]; }
krep_wait_for 60 full_isr || ktap_bail "rep's ISR did not fill: $(part "$B1" rep 0)"
ps_full() { [ "$(pf 3 ps 2 isr)" = "[3,1,2]" ]; }
krep_wait_for 60 ps_full || ktap_bail "ps-2's ISR did not fill: $(part "$B3" ps 2)"
echo seed | kc "$B3" produce ps partition 2 acks all >/dev/null ||
	ktap_bail "acks=all to ps-2: $(part "$B3" ps 2)"

values fill "$FILL" | kc "$B2" --json produce fill partition 1 acks 1 \
	batch 50 >"$tmp/fill.out" 2>&1
mem() { # N: "USED MAX" of broker N's log memory (krepctl stats)
	kc "$(bns "$1")" --json stats |
		jq -r '"\(.log_memory_bytes) \(.log_memory_max_bytes)"'
}
read -r used max < <(mem 2)
fb=$(pf 2 fill 1 log_bytes)
if jq -e --argjson n "$FILL" '.records == $n' "$tmp/fill.out" >/dev/null &&
   [ "$max" = "$CAP" ] && [ "$used" -ge "$fb" ] && [ "$used" -le "$CAP" ]; then
	ktap_ok "broker 2 holds $FILL records of $VSIZE B in fill-1: log memory $used of $max B ($fb log bytes)"
else
	ktap_diag_stdin <"$tmp/fill.out"
	ktap_diag "log memory: $used of $max; fill-1 log bytes $fb"
	ktap_fail "broker 2 holds $FILL records of $VSIZE B in fill-1, log memory counted against the cap"
fi

# --- 1. the follower stops short ------------------------------------------

ktap_diag "1. a follower at its memory cap (at ${SECONDS}s)"
values rep "$REP" >"$tmp/rep.in"
kc "$B1" --json produce rep acks 1 batch 50 <"$tmp/rep.in" >"$tmp/rep.out" 2>&1
shrunk() {
	[ "$(pf 1 rep 0 isr)" = "[1,3]" ] && [ "$(pf 1 rep 0 hw)" = "$REP" ] &&
		[ "$(pf 3 rep 0 leo)" = "$REP" ]
}
if jq -e --argjson n "$REP" '.records == $n' "$tmp/rep.out" >/dev/null &&
   krep_wait_for 30 shrunk && leo2=$(pf 2 rep 0 leo) && [ "$leo2" -lt "$REP" ]; then
	ktap_ok "rep: broker 2 stops at LEO $leo2 of $REP, the ISR shrinks to {1,3}, HW reaches $REP"
else
	ktap_diag_stdin <"$tmp/rep.out"
	for n in 1 2 3; do part "$(bns "$n")" rep 0 | ktap_diag_stdin; done
	ktap_fail "rep: broker 2 stops short, the ISR shrinks to {1,3}, HW reaches the end"
fi
if krep_kmsg_since "$mark" |
   grep -q "records from broker 1 dropped: log_memory_max reached"; then
	ktap_ok "the kernel log names the cap: records from broker 1 dropped: log_memory_max reached"
else
	krep_kmsg_since "$mark" | tail -n 10 | ktap_diag_stdin
	ktap_fail "the kernel log names the cap"
fi

# --- 2. back-off, and the producer's error --------------------------------

ktap_diag "2. back-off (at ${SECONDS}s)"
# every FETCH of broker 2 is answered with records it cannot keep; broker
# 3 is caught up and parked (nothing counted). Broker 2 backs off 100 ms
# a time: 10 responses take at least 900 ms, where a refetch at once
# would answer them in a few ms. (A busy machine only makes them slower.)
ms() { echo $(($(date +%s%N) / 1000000)); }
r0=$(resps 1)
t0=$(ms)
backed() { [ $(($(resps 1) - r0)) -ge 10 ]; }
if krep_wait_for 60 backed; then
	t=$(($(ms) - t0))
	n=$(($(resps 1) - r0))
	if [ "$t" -ge 900 ]; then
		ktap_ok "broker 2 backs off: $n responses with records in $t ms"
	else
		ktap_fail "broker 2 backs off: $n responses with records in $t ms (a 100 ms back-off takes >= 900 ms for 10)"
	fi
else
	ktap_fail "broker 2 backs off: fewer than 10 responses with records in 60 s ($(($(resps 1) - r0)))"
fi
# broker 2's own partition takes records until its memory is full: then
# its producer gets the cap's error (a few records may still fit after
# the follower stopped short: its FETCH responses need more room than one
# small batch)
refused=0
for ((i = 0; i < CAP / VSIZE / 100; i++)); do
	if ! values more 100 | kc "$B2" produce fill partition 1 acks 1 batch 100 \
		>"$tmp/more.out" 2>&1; then
		refused=1
		break
	fi
done
read -r used max < <(mem 2)
if [ "$refused" = 1 ] && grep -q "memory cap" "$tmp/more.out" &&
   [ "$used" -le "$CAP" ]; then
	ktap_ok "a producer to broker 2's own partition is refused after $((i * 100)) more records: $(head -n 1 "$tmp/more.out"); log memory $used of $max B"
else
	ktap_diag_stdin <"$tmp/more.out"
	ktap_diag "log memory: $used of $max after $((i * 100)) more records"
	ktap_fail "a producer to broker 2's own partition is refused with the memory cap's error"
fi

# --- 2b. producer state at the cap -----------------------------------------

# broker 2's memory is full to within a few pages (its producer of 100
# KB batches was just refused): batches of one small record take it to
# within a page, then each new producer id takes an entry of its own
# (about 260 B), so one of 40 at most finds no room
yes x | head -n 20000 |
	kc "$B2" produce fill partition 1 acks 1 batch 1 >"$tmp/top.out" 2>&1
grep -q "memory cap" "$tmp/top.out" ||
	ktap_diag "one-record batches to fill-1 were not refused: $(tail -n 1 "$tmp/top.out")"
refused=0
for ((pid = 1000; pid < 1040; pid++)); do
	if ! kc "$B2" txn fill partition 1 "$pid:0" begin >"$tmp/txn.out" 2>&1; then
		refused=1
		break
	fi
done
read -r used max < <(mem 2)
if [ "$refused" = 1 ] && grep -q "KAFKA_STORAGE_ERROR" "$tmp/txn.out" &&
   grep -q "producer state" "$tmp/txn.out" && [ "$used" -le "$CAP" ]; then
	ktap_ok "producer state counts against the cap: new producer id $((pid - 1000 + 1)) on broker 2 is refused: $(head -n 1 "$tmp/txn.out"); log memory $used of $max B"
else
	ktap_diag_stdin <"$tmp/txn.out"
	ktap_diag "log memory: $used of $max after $((pid - 1000)) producer ids"
	ktap_fail "producer state counts against the cap: a new producer id on broker 2 is refused with KAFKA_STORAGE_ERROR"
fi
# a transaction on ps-2: its batch and marker fit broker 2's last page of
# ps-2, its producer state does not (broker 2 goes stale at offset 1)
lso_hw() { # N: "LSO HW" of broker N's ps-2
	part "$(bns "$1")" ps 2 | jq -r '"\(.lso) \(.hw)"'
}
out=$({ kc "$B3" txn ps partition 2 900:0 begin &&
	echo t-0 | kc "$B3" produce ps partition 2 txn 900:0 acks all &&
	kc "$B3" txn ps partition 2 900:0 commit; } 2>&1) && rc=0 || rc=$?
stale() { [ "$(lso_hw 2)" = "1 3" ] && [ "$(lso_hw 1)" = "3 3" ]; }
if [ "$rc" = 0 ] && krep_wait_for 30 stale &&
   krep_kmsg_since "$mark" |
   grep -q "ps-2: no memory (or log_memory_max reached) for producer state at offset 1:"; then
	ktap_ok "ps-2's transaction committed at 2: broker 2 has it but no room for its state: LSO 1 (stale), HW 3; broker 1 LSO 3"
else
	ktap_diag "exit $rc: $out"
	ktap_diag "LSO HW: broker 1 $(lso_hw 1), broker 2 $(lso_hw 2), broker 3 $(lso_hw 3)"
	krep_kmsg_since "$mark" | grep ps-2 | tail -n 5 | ktap_diag_stdin
	ktap_fail "ps-2's transaction: broker 2's producer state goes stale at offset 1, its LSO stays there"
fi

# --- 3. memory freed: catch up --------------------------------------------

ktap_diag "3. fill deleted (at ${SECONDS}s)"
for n in 1 2 3; do
	kc "$(bns "$n")" topic delete fill || ktap_diag "broker $n: topic delete fill failed"
done
caught_up() {
	full_isr && [ "$(pf 2 rep 0 leo)" = "$REP" ] && [ "$(pf 2 rep 0 hw)" = "$REP" ]
}
if krep_wait_for 30 caught_up && read -r used max < <(mem 2) &&
   rb=$(pf 2 rep 0 log_bytes) && [ "$used" -ge "$rb" ] &&
   [ "$used" -lt "$fb" ]; then
	ktap_ok "broker 2 catches up to $REP and rejoins the ISR {1,2,3}; log memory $used B (rep's $rb log bytes)"
else
	ktap_diag "log memory: $used of $max"
	for n in 1 2 3; do part "$(bns "$n")" rep 0 | ktap_diag_stdin; done
	ktap_fail "broker 2 catches up and rejoins the ISR"
fi
rebuilt() { [ "$(lso_hw 2)" = "3 3" ]; }
if krep_wait_for 30 rebuilt && krep_kmsg_since "$mark" |
   grep -q "ps-2: producer state rebuilt from the log"; then
	ktap_ok "broker 2's ps-2 producer state is rebuilt from its log: LSO 3 = HW"
else
	ktap_diag "LSO HW: broker 2 $(lso_hw 2)"
	krep_kmsg_since "$mark" | grep ps-2 | tail -n 5 | ktap_diag_stdin
	ktap_fail "broker 2's ps-2 producer state is rebuilt from its log: LSO reaches HW"
fi
for n in 1 2 3; do
	ip netns exec "$(bns "$n")" /usr/bin/python3 "$here/repl_helper.py" \
		dump rep 0 "$tmp/dump.$n" 2>&1 | sed 's/^partition 0 //' >"$tmp/sum.$n"
done
if cmp -s "$tmp/rep.in" "$tmp/dump.1.0" && cmp -s "$tmp/sum.1" "$tmp/sum.2" &&
   cmp -s "$tmp/sum.1" "$tmp/sum.3"; then
	ktap_ok "rep: the same batches (sha256) on all three, the values byte-exact: $(cut -d' ' -f1-6 "$tmp/sum.1")"
else
	for n in 1 2 3; do
		ktap_diag "broker $n: $(cat "$tmp/sum.$n"); $(wc -l <"$tmp/dump.$n.0") values"
	done
	ktap_fail "rep: the same batches on all three, the values byte-exact"
fi

# --- teardown ---------------------------------------------------------------

ktap_diag "teardown (at ${SECONDS}s)"
krep_teardown_checks "$mark"
ktap_finish
