#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-only checks of krepd --controller --etcd against a one-member etcd
# on loopback (Debian's etcd-server; scripts/deps.sh installs it), with
# brokers that cannot be reached (network namespaces that do not exist),
# so no module is needed: the etcd options' command lines; the store
# (tests/test_etcd against this etcd); two krepds,
# one active, the other a standby that says who is; the election key, the
# controller epoch and a broker's state in etcd; the active one killed:
# the standby takes over within the lease and a round at the next epoch;
# SIGSTOP past the lease: the stopped one steps down when it runs again;
# SIGTERM revokes the lease: the other takes over at once. --metrics:
# krep_controller_active 1 on the active one, 0 on the standby. The VM suite
# selftests/controller_ha.sh does this with a three-member etcd and real
# brokers. KTAP (selftests/lib.sh).
#
# Usage: agent/tests/test_etcd.sh [KREPCTL [KREPD]]

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=agent/tests/lib.sh
. "$here/lib.sh"

K=${1:-$KREPCTL}
D=${2:-$KREPD}
tmp=$(mktemp -d)
declare -a PID
ETCD_PID=
cleanup() {
	local p
	for p in "${PID[@]}" $ETCD_PID; do
		kill -CONT "$p" 2>/dev/null
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

usage() { # MESSAGE ARGS...: krepd ARGS exits 2 with MESSAGE on stderr
	local msg=$1 err rc

	shift
	err=$("$D" "$@" 2>&1 >/dev/null </dev/null)
	rc=$?
	[ $rc = 2 ] && [[ $err == *"$msg"* ]]
	ok $? "krepd ${*} exits 2: $msg"
	[ $rc = 2 ] || ktap_diag "exit $rc: $err"
}

B=(--broker "1@netns:krep-test-etcd-none-$$")
LEASE=4000
POLL=200

ktap_plan 21

usage "the etcd options need --etcd" --controller \
	--etcd-prefix /x "${B[@]}"
usage "it starts with '/' and does not end with one" --controller \
	--etcd http://127.0.0.1:1 --etcd-prefix /x/ "${B[@]}"
usage "--etcd-timeout-ms '5': not a number of milliseconds in 10..60000" \
	--controller --etcd http://127.0.0.1:1 --etcd-timeout-ms 5 "${B[@]}"
usage "--etcd-timeout-ms 2001 must be at most half of lease-ms (4000 ms)" \
	--controller --etcd http://127.0.0.1:1 --etcd-timeout-ms 2001 \
	--lease-ms 4000 "${B[@]}"
usage "--etcd-timeout-ms 3001 must be at most half of the registration's lease (6000 ms)" \
	--etcd http://127.0.0.1:1 --etcd-timeout-ms 3001

etcd_start "$tmp"

# the store (etcd_store.c) against it: tests/test_etcd's own checks
out=$("$here/test_etcd" "$EP" 2>&1)
ok $? "etcd_store: 150 partitions in transactions of 64, read back, deleted; fenced and compare-and-set writes refused ($(tail -n 1 <<<"$out"))"
grep "^not ok" <<<"$out" | ktap_diag_stdin

# krepd I's --metrics
MADDR=("" "127.0.0.1:$(free_port)" "127.0.0.1:$(free_port)")
start() { # I
	"$D" --controller --foreground --etcd "http://127.0.0.1:1,$EP" \
		--etcd-prefix /krep/t --name "k$1" --socket "$tmp/k$1.sock" \
		--lease-ms $LEASE --poll-ms $POLL --session-timeout-ms $LEASE \
		--metrics "${MADDR[$1]}" "${B[@]}" >"$tmp/k$1.log" 2>&1 &
	PID[$1]=$!
}
# scraped I LINE...: krepd I's metrics (into $tmp/mI) have every LINE and
# pass the text format's checks
scraped() {
	local i=$1 l

	shift
	scrape_body "${MADDR[$i]}" "$tmp/m$i" || return 1
	for l; do
		grep -qxF -- "$l" "$tmp/m$i" || return 1
	done
	"$here/test_metrics" --check "$tmp/m$i" 2>/dev/null
}
line() { # I: krepd I's controller line
	local l
	IFS= read -r l < <("$K" elect --brokers --socket "$tmp/k$1.sock" 2>/dev/null) &&
		echo "$l"
}
active() { [ "$(line "$1" | jq -r .active)" = true ]; }	# I
names() { [ "$(line "$1" | jq -r .active_name)" = "k$2" ]; }	# I J: I says J is active

start 1
krep_wait_for 20 active 1
ok $? "krepd --etcd (the first endpoint unreachable): the only one is elected"
start 2
krep_wait_for 20 names 2 1 && ! active 2
ok $? "a second one is a standby, and says the first is active"
err=$("$K" topic describe --socket "$tmp/k2.sock" 2>&1)
rc=$?
want="krepctl: krepd: NOT_CONTROLLER: this krepd is a standby: the active controller is k1 (epoch $(line 1 | jq -r .controller_epoch))"
[ $rc = 1 ] && [ "$err" = "$want" ]
ok $? "the standby refuses what only the active one does: NOT_CONTROLLER, naming it"
[ "$err" = "$want" ] || ktap_diag "exit $rc: $err"
e1=$(line 1 | jq -r .controller_epoch)
krep_wait_for 20 scraped 1 "krep_controller_active 1" "krep_controller_epoch $e1" \
	"krep_controller_fenced_brokers 1" "krep_controller_fencings_total 1" &&
	krep_wait_for 20 scraped 2 "krep_controller_active 0" \
		"krep_controller_epoch $e1" "krep_controller_fencings_total 0" &&
	! grep -q "^krep_controller_fenced_brokers" "$tmp/m2"
ok $? "--metrics: k1 active 1 at epoch $e1, broker 1 fenced; the standby k2 active 0, the active's epoch, no view"
c=$(ectl get --print-value-only /krep/t/controller)
[ "$(jq -r .name <<<"$c")" = k1 ] &&
	[ "$(ectl get --print-value-only /krep/t/controller_epoch)" = "$e1" ] &&
	[ "$(ectl get -w json /krep/t/controller | jq -r '.kvs[0].lease')" != null ]
ok $? "etcd: the election key (k1's, with a lease) and k1's controller epoch ($e1)"
# jq -n -e 'input | ...': jq -e alone passes when the key is not there
krep_wait_for 20 eval \
	'ectl get --print-value-only /krep/t/brokers/state/1 | jq -n -e "input | .fenced == true and .version == 1" >/dev/null 2>&1'
ok $? "etcd: broker 1's state, fenced once out of reach for the session timeout"

{ kill -9 "${PID[1]}"; wait "${PID[1]}"; } 2>/dev/null
t0=$(date +%s%N)
krep_wait_for 20 active 2
ms=$((($(date +%s%N) - t0) / 1000000))
e2=$(line 2 | jq -r .controller_epoch)
[ "$e2" -gt "$e1" ] && [ "$ms" -le $((LEASE + 2000)) ]
ok $? "k1 killed: k2 takes over in $ms ms (lease $LEASE ms), at epoch $e2 (k1's: $e1)"
grep -q "state from etcd: controller epoch $e2, 1 brokers" "$tmp/k2.log"
ok $? "k2 reads the state from etcd"
krep_wait_for 20 scraped 2 "krep_controller_active 1" "krep_controller_epoch $e2" \
	"krep_controller_fenced_brokers 1"
ok $? "--metrics: k2, elected, active 1 at epoch $e2"

start 1
krep_wait_for 20 names 1 2
kill -STOP "${PID[2]}"
krep_wait_for 20 active 1 && e3=$(line 1 | jq -r .controller_epoch) &&
	[ "$e3" -gt "$e2" ]
ok $? "k2 stopped past its lease: k1 takes over at epoch ${e3:-?}"
kill -CONT "${PID[2]}"
krep_wait_for 20 grep -q "stepped down" "$tmp/k2.log" && ! active 2 &&
	active 1
ok $? "k2 runs again: it steps down, k1 stays active"
c=$(ectl get --print-value-only /krep/t/controller)
[ "$(ectl get --print-value-only /krep/t/controller_epoch)" -ge "${e3:-0}" ] &&
	[ "$(jq -r .name <<<"$c")" != k2 ] && [ "$(jq -r .epoch <<<"$c")" -ge "${e3:-0}" ]
ok $? "etcd: nothing of k2 (the key: $c)"

kill "${PID[1]}"
t0=$(date +%s%N)
wait "${PID[1]}"
rc=$?
krep_wait_for 20 active 2
ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc = 0 ] && grep -q "resigned" "$tmp/k1.log" && [ "$ms" -lt $LEASE ]
ok $? "SIGTERM: k1 exits 0 and resigns; k2 takes over in $ms ms, before a lease would run out"
! ls "$tmp"/*.state >/dev/null 2>&1
ok $? "no state file is written"
kill "${PID[2]}"
wait "${PID[2]}"
ok $? "SIGTERM: k2 exits 0"
if [ "$_ktap_fail" != 0 ]; then
	for i in 1 2; do
		ktap_diag "k$i's log:"
		ktap_diag_stdin <"$tmp/k$i.log"
	done
fi
ktap_finish
