#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# nl_wait.sh - netlink requests that wait are answered from a work item,
# never by a handler sleeping under genetlink's lock (nl_wait.py does the
# requests).
#
# One broker (1, at $NET.1) whose peers 2 and 3 never come, so that an
# ISR holding them never catches up. Topics: w (RF 1: a FETCH at its end
# waits for a record) and a (RF 3, replica_lag_time_max_ms 600000: the
# ISR stays {1,2,3} and an acks=all record never commits).
#
# 1. a FETCH waiting 20 s on w: modprobe wireguard (a generic netlink
#    family, registered under genetlink's lock taken for writing) returns
#    while the FETCH still waits; a record answers it.
# 2. acks=all to a with a 1.5 s timeout: the wait ends in the error a
#    handler would have answered (REQUEST_TIMED_OUT, its message), from
#    the work item.
# 2b. a FETCH with a wait and a current leader epoch above the leader's is
#    refused at once (UNKNOWN_LEADER_EPOCH, errno EAGAIN), not parked
#    until its deadline (make fuzz found that one)
# 3. 1025 FETCHes waiting on w from one socket: 1024 (the namespace's
#    limit) wait, the next is refused at once with EBUSY, and one record
#    answers the 1024.
# 4. rmmod with a FETCH waiting: the module unloads and the FETCH is
#    answered with an error, not left hanging.
# Prints KTAP; leaves the module unloaded and no namespace behind.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd jq ip modprobe /usr/bin/python3

NET=10.206.0
CLUSTER_BROKERS=1	# 2 and 3 never come
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

WAIT=20000
tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
mark=nl-wait-$$
krep_cleanup_push krep_mod_unload

nlw() { # ARGS...: nl_wait.py ARGS in broker 1's namespace
	KREPCTL=$KREPCTL ip netns exec "$B1" /usr/bin/python3 \
		"$here/nl_wait.py" "$@"
}
check() { # DESC OUTPUT: ok when OUTPUT starts with "ok"
	if [[ $2 == ok* ]]; then
		ktap_ok "$1: ${2#ok }"
	else
		ktap_diag "$2"
		ktap_fail "$1"
	fi
}

ktap_plan 7

krep_mod_unload || ktap_bail "krep is loaded and rmmod fails"
# the family must be registered during the test, not before it
modprobe -r wireguard 2>/dev/null
[ ! -e /sys/module/wireguard ] || ktap_bail "wireguard is loaded and cannot be removed"
krep_kmsg_mark "$mark"
krep_mod_load || ktap_bail "cannot load krep.ko"
cluster_up nlw || ktap_bail "cannot set up the namespaces"
kc "$B1" topic create w partitions 1 replication-factor 1 >/dev/null &&
	kc "$B1" topic create a partitions 1 replication-factor 3 \
		config replica_lag_time_max_ms=600000 >/dev/null ||
	ktap_bail "topics"

check "a FETCH waits while another family registers" \
	"$(nlw registers w "$WAIT" wireguard)"
modprobe -r wireguard 2>/dev/null
check "acks=all's timeout answered from the work item" \
	"$(nlw timeout a 1500)"
check "a FETCH with a wait and an unknown leader epoch is refused, not parked" \
	"$(nlw epoch w "$WAIT")"
check "the namespace's limit on waiting requests" \
	"$(nlw limit w 1025 "$WAIT")"

nlw parked w "$WAIT" >"$tmp/parked" 2>&1 &
pid=$!
is_parked() { grep -q '^parked' "$tmp/parked"; }
krep_wait_for 30 is_parked || ktap_diag "the FETCH did not start: $(cat "$tmp/parked")"
if krep_mod_unload; then
	wait "$pid"
	check "rmmod with a FETCH waiting: unloaded, the FETCH answered" \
		"$(tail -n 1 "$tmp/parked")"
else
	kill "$pid" 2>/dev/null
	ktap_fail "rmmod with a FETCH waiting: unloaded, the FETCH answered"
fi

krep_teardown_checks "$mark"
ktap_finish
