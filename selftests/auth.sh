#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# auth.sh - brokers prove a shared cluster secret to each other in HELLO
# (HMAC-SHA256 over both nonces and both ids, uapi/linux/krep_wire.h).
#
#   B1 10.204.0.1  B2 10.204.0.2  B3 10.204.0.3, topic at, RF 3, led by 1
#
#   1. the same secret on all three (krepctl broker set secret-file):
#      every peer up, ISR full, acks=all commits; GET says a secret is
#      set and never shows it
#   2. broker 3 with another secret: broker 1 refuses it (wrong proof),
#      broker 3 leaves the ISR; the right secret again: it rejoins
#   3. broker 3 without a secret: refused by broker 1 ("peer has no
#      cluster secret"); back with it
#   4. raw peers from broker 3's address (repl_helper.py): a HELLO
#      without a secret, and one claiming a secret whose AUTH carries a
#      made-up proof, are both closed with their reason
#   5. krepctl refuses a secret file others can read, and one too short
#
# Prints KTAP; leaves the module unloaded.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd jq python3 head od setpriv

NET=10.204.0
PORT=9092
CLUSTER=auth
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
krep_cleanup_push krep_mod_unload

ktap_plan 17

krep_mod_unload || ktap_bail "krep is loaded and rmmod fails"
mark=auth-$$
krep_kmsg_mark "$mark"
krep_mod_load reconnect_backoff_max_ms=500 || ktap_bail "cannot load krep.ko"
cluster_up "$CLUSTER" || ktap_bail "cannot set up three brokers"

umask 077
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/secret"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/other"
secret=$(<"$tmp/secret")

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
isr_is() {
	[ "$(describe "$B1" at | jq -c '.[0].isr')" = "$1" ]
}
# shellcheck disable=SC2317
peer_state() {	# peer_state N ID STATE: broker N sees peer ID in STATE
	kc "$(bns "$1")" --json broker show |
		jq -e --argjson id "$2" --arg s "$3" \
			'.peers[] | select(.id == $id) | .state == $s' >/dev/null
}
set_secret() {	# set_secret N FILE|none
	kc "$(bns "$1")" broker set secret-file "$2" >/dev/null
}

# 1. the same secret everywhere
ok=0
for i in 1 2 3; do
	set_secret "$i" "$tmp/secret" || ok=1
done
cluster_topic at partitions 1 replication-factor 3 \
	config replica_lag_time_max_ms=2000 || ok=1
krep_wait_for 60 cluster_peers_up || ok=1
krep_wait_for 60 isr_is '[1,2,3]' || ok=1
if [ "$ok" = 0 ]; then
	ktap_ok "the same secret on all three: every peer up, ISR {1,2,3}"
else
	for ns in "$B1" "$B2" "$B3"; do
		kc "$ns" --json broker show | ktap_diag_stdin
	done
	ktap_fail "the same secret on all three: every peer up, ISR {1,2,3}"
fi
ktap_check "acks=all commits between authenticated brokers" \
	kc "$B1" produce at acks all timeout 10000 <<<"with-secret"
ktap_check "broker show --json says a secret is set" \
	eval 'kc "$B1" --json broker show | jq -e ".cluster_secret == true"'
shown=$( { kc "$B1" broker show; kc "$B1" --json broker show; } 2>&1)
if [ -n "$shown" ] && [[ $shown != *"$secret"* ]]; then
	ktap_ok "broker show never prints the secret"
else
	ktap_fail "broker show never prints the secret"
fi

# the cluster id, which a HELLO must present: for admins only
cid_admin=$(kc "$B1" --json broker show | jq -r .cluster_id)
cid_user=$(ip netns exec "$B1" setpriv --bounding-set -net_admin \
	"$KREPCTL" --json broker show | jq -r .cluster_id)
if [ "$cid_admin" = "$CLUSTER" ] && [ "$cid_user" = null ]; then
	ktap_ok "broker show gives the cluster id to CAP_NET_ADMIN only"
else
	ktap_diag "with CAP_NET_ADMIN: $cid_admin, without: $cid_user"
	ktap_fail "broker show gives the cluster id to CAP_NET_ADMIN only"
fi

# 2. broker 3 with another secret
krep_kmsg_mark "$mark-2"
set_secret 3 "$tmp/other"
# broker 1's connection to broker 3 checks broker 3's proof in its HELLO
krep_wait_for 30 eval 'krep_kmsg_since "$mark-2" |
	grep -q "krep: connection to broker 3 ($NET.3:[0-9]*) closed: peer.s proof of the cluster secret is wrong"'
ktap_check "another secret on broker 3: broker 1 closes its connection to 3 for a wrong proof" \
	test $? = 0
# a follower at the leader's LEO stays in the ISR (as in Kafka) until a
# record it cannot fetch leaves it behind
kc "$B1" produce at acks 1 <<<"while-3-is-out" >/dev/null
krep_wait_for 30 isr_is '[1,2]'
ktap_check "... and, once a record leaves it behind, broker 3 leaves the ISR" \
	test $? = 0
ktap_check "... while broker 2 stays up on broker 1" peer_state 2 1 up
set_secret 3 "$tmp/secret"
krep_wait_for 60 isr_is '[1,2,3]'
ktap_check "the right secret again: broker 3 rejoins the ISR" test $? = 0

# 3. broker 3 without a secret
krep_kmsg_mark "$mark-3"
set_secret 3 none
krep_wait_for 30 eval 'krep_kmsg_since "$mark-3" |
	grep -q "krep: connection from broker 3 ($NET.3:[0-9]*) closed: peer has no cluster secret"'
ktap_check "no secret on broker 3: broker 1 refuses it ('peer has no cluster secret')" \
	test $? = 0
set_secret 3 "$tmp/secret"
krep_wait_for 60 isr_is '[1,2,3]'
ktap_check "the secret back: broker 3 rejoins the ISR" test $? = 0

# 4. raw peers from broker 3's address
krep_kmsg_mark "$mark-4"
out=$(ip netns exec "$B3" /usr/bin/python3 "$here/repl_helper.py" badpeer \
	"$NET.1:$PORT" "$CLUSTER" 1 3 hello forged-auth 2>&1)
log=$(krep_kmsg_since "$mark-4")
re_none="closed: peer has no cluster secret"
re_forged="closed: peer's proof of the cluster secret is wrong"
if [[ $out == *"hello no HELLO answer"* ]] && [[ $log == *"$re_none"* ]]; then
	ktap_ok "a raw HELLO without a secret is closed unanswered"
else
	ktap_diag "helper: $out"
	ktap_diag_stdin <<<"$log"
	ktap_fail "a raw HELLO without a secret is closed unanswered"
fi
if [[ $out == *"forged-auth closed "* ]] && [[ $log == *"$re_forged"* ]]; then
	ktap_ok "a HELLO claiming the secret with a made-up proof in AUTH is closed"
else
	ktap_diag "helper: $out"
	ktap_diag_stdin <<<"$log"
	ktap_fail "a HELLO claiming the secret with a made-up proof in AUTH is closed"
fi

# 5. secret files krepctl refuses
cp "$tmp/secret" "$tmp/open"
chmod 644 "$tmp/open"
out=$(kc "$B1" broker set secret-file "$tmp/open" 2>&1)
rc=$?
if [ "$rc" = 2 ] && [[ $out == *"accessible by group or others"* ]]; then
	ktap_ok "krepctl refuses a secret file others can read (exit 2)"
else
	ktap_diag "exit $rc: $out"
	ktap_fail "krepctl refuses a secret file others can read (exit 2)"
fi
printf 'short' >"$tmp/short"
out=$(kc "$B1" broker set secret-file "$tmp/short" 2>&1)
rc=$?
if [ "$rc" = 2 ] && [[ $out == *"at least 16 are needed"* ]]; then
	ktap_ok "krepctl refuses a secret of 5 bytes (exit 2)"
else
	ktap_diag "exit $rc: $out"
	ktap_fail "krepctl refuses a secret of 5 bytes (exit 2)"
fi

krep_teardown_checks "$mark"
ktap_finish
