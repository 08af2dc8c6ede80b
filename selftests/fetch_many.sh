#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fetch_many.sh - a follower of more partitions than one FETCH holds
# (KREP_WIRE_MAX_PARTITIONS, 4096) fetches every one of them: its
# FETCHes take the partitions in turns.
#
#   B1 10.208.0.1  B2 10.208.0.2  B3 10.208.0.3 (cluster.sh)
#   m1..m4: 1024 partitions each, m5: 8, replicas 1,2 (created with that
#   assignment by ctl_helper.py, no controller: broker 1 leads all 4104,
#   broker 2 follows them)
#
#   1. one record each to m1-0 (the first followed partition), m4-1023
#      (the 4096th) and m5-7 (the 4104th) on broker 1 (acks=1): broker 2
#      has all three
#   2. ten more to m5-7, acks=all: committed, so broker 2 keeps fetching
#      it
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

TOPICS="m1:1024 m2:1024 m3:1024 m4:1024 m5:8"

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

ok=0
for tp in $TOPICS; do
	t=${tp%:*} np=${tp#*:}
	assign=$(for ((i = 0; i < np; i++)); do printf '1,2/'; done)
	for n in 1 2; do
		out=$(krep_pyserve "ctl$n" topic-new - "$t" "$np" 2 "${assign%/}")
		[ "$out" = ok ] || { ktap_diag "broker $n: topic-new $t: $out"; ok=1; }
	done
done
ktap_check "4104 partitions in 5 topics, replicas 1,2, on brokers 1 and 2" \
	test "$ok" = 0
krep_wait_for 60 cluster_peers_up || ktap_bail "peers did not connect"

# 1. the first, the 4096th and the 4104th followed partition
PARTS="m1:0 m4:1023 m5:7"
ok=0
for tp in $PARTS; do
	echo "$tp" | kc "$B1" produce "${tp%:*}" partition "${tp#*:}" acks 1 \
		>/dev/null || ok=1
done
ktap_check "broker 1 takes one record each in m1-0, m4-1023 and m5-7" \
	test "$ok" = 0
# shellcheck disable=SC2317 # the conditions krep_wait_for polls
leos() { # N: "TOPIC-P=LEO " of the three on broker N
	local tp
	for tp in $PARTS; do
		describe "$(bns "$1")" "${tp%:*}" |
			jq -r --argjson p "${tp#*:}" '.[] | select(.partition == $p) |
				"\(.topic)-\(.partition)=\(.leo)"'
	done | tr '\n' ' '
}
want=$(leos 1)
# shellcheck disable=SC2317
fetched() { [ "$(leos 2)" = "$want" ]; }
if [ "$want" = "m1-0=1 m4-1023=1 m5-7=1 " ] && krep_wait_for 60 fetched; then
	ktap_ok "broker 2 fetched all three, m5-7 (its 4104th followed partition) too"
else
	ktap_diag "broker 1: $want" "broker 2: $(leos 2)"
	ktap_fail "broker 2 fetched all three, m5-7 (its 4104th followed partition) too"
fi

# 2. acks=all on the last one: broker 2 fetches it again and again
seq 1 10 | kc "$B1" produce m5 partition 7 acks all batch 1 \
	>"$tmp/all.out" 2>&1 && prc=0 || prc=$?
[ "$prc" = 0 ] || ktap_diag_stdin <"$tmp/all.out"
ktap_check "acks=all on m5-7: ten records committed with broker 2 in the ISR (exit $prc)" \
	eval '[ "$prc" = 0 ] && [ "$(part "$B2" m5 7 | jq .leo)" -ge 11 ]'

krep_teardown_checks "$mark"
ktap_finish
