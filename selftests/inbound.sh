#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# inbound.sh - bare connections cannot keep the followers out: a broker
# takes at most 128 replication connections at once, but beyond that
# still a few from each configured peer's own address.
#
#   B1 10.209.0.1  B2 10.209.0.2  B3 10.209.0.3 (cluster.sh), topic in
#   (RF 3, led by broker 1); the VM's own namespace on the bridge as
#   10.209.0.9, which no broker has as a peer
#
#   1. broker 3 drops broker 1 from its peers: its connection to broker
#      1 goes, and no slot of broker 1's frees later
#   2. 140 connections from 10.209.0.9 to broker 1 that never say HELLO
#      (hello_timeout_ms=60000 keeps them): with broker 2's they fill
#      the 128 slots, the rest are refused with the log line
#   3. broker 3 has broker 1 as a peer again: broker 1 takes its
#      connection from broker 3's address while the bare ones still
#      hold their slots; acks=all commits on all three
#
# Prints KTAP; leaves the module unloaded.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd jq ip ss /usr/bin/python3

NET=10.209.0
PORT=9092
CLUSTER=kin
NBARE=140
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
krep_cleanup_push krep_mod_unload

ktap_plan 6

krep_mod_unload || ktap_bail "krep is loaded and rmmod fails"
mark=inbound-$$
krep_kmsg_mark "$mark"
krep_mod_load hello_timeout_ms=60000 reconnect_backoff_max_ms=500 ||
	ktap_bail "cannot load krep.ko"
cluster_up "$CLUSTER" || ktap_bail "cannot set up three brokers"
cluster_topic in partitions 1 replication-factor 3 ||
	ktap_bail "cannot create topic in"
ip link add krx type veth peer name px netns "$BR" &&
	ip -n "$BR" link set px master krbr up &&
	ip addr add "$NET.9/24" dev krx && ip link set krx up ||
	ktap_bail "cannot wire the VM's namespace to the bridge"
krep_cleanup_push ip link del krx

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
isr_full() { [ "$(part "$B1" in 0 | jq -c '.isr | sort')" = "[1,2,3]" ]; }
# shellcheck disable=SC2317
peer_up() { # N ID: broker N sees peer ID up
	kc "$(bns "$1")" --json broker show |
		jq -e --argjson id "$2" '.peers[] | select(.id == $id) |
			.state == "up"' >/dev/null
}
krep_wait_for 60 cluster_peers_up && krep_wait_for 60 isr_full ||
	ktap_bail "the cluster did not come up"

# shellcheck disable=SC2317
conn3() { # broker 3's connections to broker 1's replication port
	ip netns exec "$B3" ss -Htn state established \
		"( dport = :$PORT and dst $NET.1 )" | awk '{ print $3 }' |
		sort | tr '\n' ' '
}
# shellcheck disable=SC2317
from3() { # broker 1's accepted connections from broker 3
	ip netns exec "$B1" ss -Htn state established \
		"( sport = :$PORT and dst $NET.3 )" | grep -c .
}
set3() { # PEERS: broker 3's BROKER_SET with these peers
	kc "$B3" broker set id 3 cluster "$CLUSTER" listen "$NET.3:$PORT" \
		peers "$1" >/dev/null
}

# 1. broker 3 leaves broker 1: nothing of it holds a slot there
set3 "2@$NET.2:$PORT" || ktap_diag "broker 3's BROKER_SET failed"
krep_wait_for 30 eval '[ "$(from3)" = 0 ] && [ -z "$(conn3)" ]' ||
	ktap_diag "broker 1 still holds $(from3) connection(s) from broker 3"

# 2. the bare connections, held by one Python process until its stdin ends
krep_kmsg_mark "$mark-bare"
mkfifo "$tmp/hold"
/usr/bin/python3 -c '
import socket, sys
held = []
for i in range(int(sys.argv[2])):
    s = socket.socket()
    s.bind((sys.argv[3], 0))
    s.connect((sys.argv[1], 9092))
    held.append(s)
print("connected", len(held), flush=True)
sys.stdin.read()
' "$NET.1" "$NBARE" "$NET.9" <"$tmp/hold" >"$tmp/bare.out" 2>&1 &
BARE=$!
exec {hold}>"$tmp/hold"
krep_cleanup_push "kill $BARE 2>/dev/null"
# shellcheck disable=SC2317
bare_open() { # broker 1 holds N connections from .9
	[ "$(ip netns exec "$B1" ss -Htn state established \
		"( sport = :$PORT and dst $NET.9 )" | wc -l)" -ge "$1" ]
}
# shellcheck disable=SC2317
refused() {
	krep_kmsg_since "$mark-bare" |
		grep -q "refusing a replication connection: 128 open already"
}
if krep_wait_for 60 grep -q connected "$tmp/bare.out" &&
   krep_wait_for 60 refused && bare_open 100; then
	ktap_ok "$NBARE bare connections from $NET.9: broker 1 holds them up to its 128, refuses the rest"
else
	ktap_fail "$NBARE bare connections from $NET.9: broker 1 holds them up to its 128, refuses the rest"
	cat "$tmp/bare.out" | ktap_diag_stdin
fi

# 3. broker 3 connects to broker 1 again while they hold their slots
set3 "1@$NET.1:$PORT,2@$NET.2:$PORT" || ktap_diag "broker 3's BROKER_SET failed"
# shellcheck disable=SC2317
reconnected() { [ -n "$(conn3)" ] && peer_up 3 1; }
ktap_check "broker 3 connects to broker 1 again from its own address, the slots full" \
	krep_wait_for 30 reconnected
ktap_check "... which still hold their slots (100 or more established from $NET.9)" \
	bare_open 100
ktap_check "acks=all on in-0 commits on all three" \
	eval 'krep_wait_for 60 isr_full &&
		seq 1 10 | kc "$B1" produce in partition 0 acks all >/dev/null'
exec {hold}>&-
wait "$BARE" 2>/dev/null

krep_teardown_checks "$mark"
ktap_finish
