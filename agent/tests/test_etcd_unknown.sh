#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# krepd --controller --etcd when etcd applies a write but its answer never
# comes back (issue #18): the outcome is unknown, not a failure. Between
# krepd and a one-member etcd on loopback sits etcd_proxy.py, which lets
# every request through to etcd and then loses the answers its rules pick,
# so each case happens on every run, whatever the machine's load:
#
#   hold:txn             the campaign's answer held past --etcd-timeout-ms:
#                        krepd reads its keys back and takes office
#   drop:txn hold:range  the campaign's connection dropped after etcd
#                        applied it, and the read back held past the
#                        timeout too: the next round finds P/controller
#                        with this krepd's owner and lease and takes office
#   pass:txn drop:txn    the first state write's answer dropped: read back
#                        as applied, the controller stays in office and
#                        writes on, fenced as before
#
# Each time: krepd is active and names itself, never a standby naming
# itself; etcd saw each write once (no write sent again after etcd applied
# it). Brokers cannot be reached (network namespaces that do not exist), so
# no module is needed. KTAP (selftests/lib.sh).
#
# Usage: agent/tests/test_etcd_unknown.sh [KREPCTL [KREPD]]

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=agent/tests/lib.sh
. "$here/lib.sh"

K=${1:-$KREPCTL}
D=${2:-$KREPD}
tmp=$(mktemp -d)
declare -a PIDS
ETCD_PID=
cleanup() {
	local p

	for p in "${PIDS[@]}" $ETCD_PID; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

B=(--broker "1@netns:krep-test-etcd-none-$$")
TIMEOUT=1000

ktap_plan 10
etcd_start "$tmp"

# run NAME RULE...: etcd_proxy.py with RULEs in front of etcd, and krepd
# NAME through it alone, on prefix /krep/NAME
run() {
	local name=$1 port

	shift
	python3 "$here/etcd_proxy.py" "$EP" "$tmp/$name.port" "$@" \
		>"$tmp/$name.proxy" 2>&1 &
	PIDS+=($!)
	krep_wait_for 20 test -s "$tmp/$name.port" ||
		ktap_bail "etcd_proxy.py did not start: $(cat "$tmp/$name.proxy")"
	port=$(cat "$tmp/$name.port")
	"$D" --controller --foreground --etcd "http://127.0.0.1:$port" \
		--etcd-prefix "/krep/$name" --name "$name" \
		--socket "$tmp/$name.sock" --lease-ms 4000 --poll-ms 200 \
		--session-timeout-ms 1000 --etcd-timeout-ms $TIMEOUT \
		"${B[@]}" >"$tmp/$name.log" 2>&1 &
	PIDS+=($!)
}
line() { # NAME: krepd NAME's controller line
	local l

	IFS= read -r l < <("$K" elect --brokers --socket "$tmp/$1.sock" 2>/dev/null) &&
		echo "$l"
}
# NAME: active, and naming itself
active() {
	[ "$(line "$1" | jq -r '"\(.active) \(.active_name)"')" = "true $1" ]
}
# NAME: a standby that names itself as the active controller (the bug)
stuck() {
	[ "$(line "$1" | jq -r '"\(.active) \(.active_name)"')" = "false $1" ]
}
# NAME: whichever comes first
settled() { active "$1" || stuck "$1"; }
# NAME KIND: etcd_proxy.py lost a KIND answer, and etcd had applied it
lost_applied() {
	grep -E "^(drop|hold) $2 200 " "$tmp/$1.proxy" | head -n 1 |
		grep -q '"succeeded":true'
}
# NAME: every transaction etcd saw was applied: none was sent again after
# it had been (a second campaign, or a write whose compares then fail)
once_each() {
	[ "$(grep -c " txn " "$tmp/$1.proxy")" -gt 0 ] &&
		! grep " txn " "$tmp/$1.proxy" | grep -vq '"succeeded":true'
}
# NAME: broker 1's state in etcd says fenced (jq -e alone passes on no input)
fenced() {
	ectl get --print-value-only "/krep/$1/brokers/state/1" |
		jq -n -e 'input | .fenced == true' >/dev/null 2>&1
}
# NAME: P/controller names NAME, under a lease, at controller epoch 1
key_is() {
	local c

	c=$(ectl get -w json "/krep/$1/controller") &&
		[ "$(jq -r '.kvs[0].value | @base64d | fromjson | "\(.name) \(.epoch)"' <<<"$c")" = "$1 1" ] &&
		[ "$(jq -r '.kvs[0].lease' <<<"$c")" != null ]
}
diag() { # NAME
	ktap_diag "$1's status: $(line "$1")"
	ktap_diag "$1's log:"
	ktap_diag_stdin <"$tmp/$1.log"
	ktap_diag "etcd_proxy.py's log:"
	ktap_diag_stdin <"$tmp/$1.proxy"
}

# 1. the campaign's answer held past --etcd-timeout-ms: read back
run held hold:txn
krep_wait_for 20 settled held && active held && key_is held
ok $? "the campaign's answer held past --etcd-timeout-ms $TIMEOUT: krepd takes office at epoch 1 and names itself, not a standby naming itself"
lost_applied held txn &&
	grep -q "etcd: a transaction's answer was lost (.*Timeout was reached); its keys read back show it applied" "$tmp/held.log"
ok $? "etcd had applied the campaign; krepd says it read its keys back"
once_each held
ok $? "etcd saw the campaign once: krepd did not send it again"
[ "$_ktap_fail" = 0 ] || diag held

# 2. the connection dropped after etcd applied the campaign, and the read
# back held too: the next round's read of P/controller settles it
f=$_ktap_fail
run dropped drop:txn hold:range
krep_wait_for 20 settled dropped && active dropped && key_is dropped
ok $? "the campaign's connection dropped and its read back held: krepd takes office at epoch 1, not a standby naming itself"
lost_applied dropped txn &&
	grep -q "etcd: campaign (the next round's read of the election key settles it): .*its outcome is unknown" "$tmp/dropped.log" &&
	grep -q "is this krepd's own (owner [0-9a-f]*, lease [0-9a-f]*): its campaign won though the answer was lost: taking office" "$tmp/dropped.log"
ok $? "etcd had applied the campaign; unknown after the read back failed; the next round found this krepd's owner and lease"
once_each dropped
ok $? "etcd saw the campaign once"
[ "$_ktap_fail" = "$f" ] || diag dropped

# 3. the first state write's answer dropped (broker 1 not fenced yet: it
# was just read): read back, still in office; the next write (broker 1
# fenced after the session timeout) goes through the compares only if the
# store took the revision it read back
f=$_ktap_fail
run store pass:txn drop:txn
krep_wait_for 20 fenced store
ok $? "the first state write's answer dropped: krepd writes on (broker 1 fenced after the session timeout)"
lost_applied store txn &&
	grep -q "etcd: a transaction's answer was lost (.*Server returned nothing.*); its keys read back show it applied" "$tmp/store.log"
ok $? "etcd had applied the write; krepd says it read its keys back"
active store && key_is store && [ "$(grep -c "etcd: elected" "$tmp/store.log")" = 1 ] &&
	! grep -q "stepped down\|refused" "$tmp/store.log"
ok $? "krepd stayed in office: elected once, never stepped down, still epoch 1"
once_each store
ok $? "etcd saw every write once, and applied each"
[ "$_ktap_fail" = "$f" ] || diag store
ktap_finish
