#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fetch_many.sh - a follower of more partitions than one FETCH holds
# (KREP_WIRE_MAX_PARTITIONS, 4096) fetches every one of them: its
# FETCHes take the partitions in turns.
#
#   B1 10.208.0.1  B2 10.208.0.2  B3 10.208.0.3 (cluster.sh)
#   m1..m5: 1000 partitions each, replicas 1,2 (created with that
#   assignment by ctl_helper.py, no controller: broker 1 leads all 5000,
#   broker 2 follows them)
#
#   1. one record to the first and the last partition of each topic on
#      broker 1 (acks=1): broker 2 has all ten, m5-999 (the 5000th
#      followed partition) too
#   2. ten more to m5-999, acks=all: committed, so broker 2 keeps
#      fetching it
#
# Prints KTAP; leaves the module unloaded.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd jq python3

NET=10.208.0
PORT=9092
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

TOPICS="m1 m2 m3 m4 m5"
NP=1000

tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
krep_cleanup_push krep_mod_unload

ktap_plan 6

krep_mod_unload || ktap_bail "krep is loaded and rmmod fails"
mark=fetch-many-$$
krep_kmsg_mark "$mark"
krep_mod_load || ktap_bail "cannot load krep.ko"
cluster_up fmany || ktap_bail "cannot set up three brokers"
for n in 1 2; do
	krep_pyserve_start "ctl$n" "$(bns "$n")" ctl_helper ||
		ktap_bail "cannot start ctl_helper.py on broker $n"
done

assign=$(for ((i = 0; i < NP; i++)); do printf '1,2/'; done)
assign=${assign%/}
ok=0
for t in $TOPICS; do
	for n in 1 2; do
		out=$(krep_pyserve "ctl$n" topic-new - "$t" "$NP" 2 "$assign")
		[ "$out" = ok ] || { ktap_diag "broker $n: topic-new $t: $out"; ok=1; }
	done
done
ktap_check "5 topics of 1000 partitions, replicas 1,2, on brokers 1 and 2" \
	test "$ok" = 0
krep_wait_for 60 cluster_peers_up || ktap_bail "peers did not connect"

# 1. the first and the last partition of each topic
ok=0
for t in $TOPICS; do
	for p in 0 $((NP - 1)); do
		echo "$t-$p" | kc "$B1" produce "$t" partition "$p" acks 1 \
			>/dev/null || ok=1
	done
done
ktap_check "broker 1 takes one record in partitions 0 and 999 of each" \
	test "$ok" = 0
# shellcheck disable=SC2317 # the conditions krep_wait_for polls
leos() { # N: the LEOs of partitions 0 and 999 of every topic on broker N
	local t
	for t in $TOPICS; do
		describe "$(bns "$1")" "$t" |
			jq -r --argjson last $((NP - 1)) \
				'.[] | select(.partition == 0 or .partition == $last) |
				 "\(.topic)-\(.partition)=\(.leo)"'
	done | sort | tr '\n' ' '
}
want=$(leos 1)
# shellcheck disable=SC2317
fetched() { [ "$(leos 2)" = "$want" ]; }
if [ "$(grep -o '=1 ' <<<"$want" | wc -l)" = 10 ] && krep_wait_for 60 fetched; then
	ktap_ok "broker 2 fetched all ten, m5-999 (its 5000th followed partition) too"
else
	ktap_diag "broker 1: $want" "broker 2: $(leos 2)"
	ktap_fail "broker 2 fetched all ten, m5-999 (its 5000th followed partition) too"
fi

# 2. acks=all on the last one: broker 2 fetches it again and again
seq 1 10 | kc "$B1" produce m5 partition $((NP - 1)) acks all batch 1 \
	>"$tmp/all.out" 2>&1 && prc=0 || prc=$?
[ "$prc" = 0 ] || ktap_diag_stdin <"$tmp/all.out"
ktap_check "acks=all on m5-999: ten records committed with broker 2 in the ISR (exit $prc)" \
	eval '[ "$prc" = 0 ] && [ "$(part "$B2" m5 $((NP - 1)) | jq .leo)" -ge 11 ]'

krep_teardown_checks "$mark"
ktap_finish
