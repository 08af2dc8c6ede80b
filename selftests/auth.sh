#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# auth.sh - brokers prove a shared cluster secret to each other in HELLO
# (HMAC-SHA256 over both nonces and both ids, uapi/linux/krep_wire.h),
# then encrypt the replication stream with kTLS keyed from it (ktls.c).
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
#      without a secret, one claiming a secret whose AUTH carries a
#      made-up proof, one claiming a secret but no encryption, and one
#      with the right AUTH that then sends a FETCH in the clear instead
#      of a TLS record, are all closed with their reason
#   5. the wire, captured on broker 1's kr0 (repl_helper.py sniff) while
#      broker 1's connections start over: a record produced with
#      acks=all reaches both followers (follower read up to their HW);
#      each direction of each connection is one or two frames (HELLO,
#      AUTH) and then only TLS records; the record's bytes are not there
#   6. krepctl refuses a secret file others can read, and one too short
#   7. insmod replication_tls=0 and three new brokers with the secret:
#      they replicate, and the record's bytes are on the wire, in frames
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

ktap_plan 25

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
out=$(KREP_SECRET_FILE=$tmp/secret ip netns exec "$B3" /usr/bin/python3 \
	"$here/repl_helper.py" badpeer "$NET.1:$PORT" "$CLUSTER" 1 3 \
	hello forged-auth no-tls skip-tls 2>&1)
log=$(krep_kmsg_since "$mark-4")
re_none="closed: peer has no cluster secret"
re_forged="closed: peer's proof of the cluster secret is wrong"
re_notls="closed: peer does not encrypt (replication_tls=0 there)"
re_skip="closed: record does not decrypt (peer skipped encryption, or data altered)"
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

if [[ $out == *"no-tls closed "* ]] && [[ $log == *"$re_notls"* ]]; then
	ktap_ok "a HELLO claiming the secret but not encryption is closed"
else
	ktap_diag "helper: $out"
	ktap_diag_stdin <<<"$log"
	ktap_fail "a HELLO claiming the secret but not encryption is closed"
fi
if [[ $out == *"skip-tls closed "* ]] && [[ $log == *"$re_skip"* ]]; then
	ktap_ok "the right AUTH, then a FETCH in the clear: closed ('record does not decrypt')"
else
	ktap_diag "helper: $out"
	ktap_diag_stdin <<<"$log"
	ktap_fail "the right AUTH, then a FETCH in the clear: closed ('record does not decrypt')"
fi

# 5. the wire
sniff_start() {	# sniff_start OUT WORD: capture broker 1's kr0 into OUT
	rm -f "$tmp/ready"
	SNIFF_FIND=$2 ip netns exec "$B1" /usr/bin/python3 \
		"$here/repl_helper.py" sniff kr0 "$PORT" "$tmp/ready" >"$1" 2>&1 &
	sniff_pid=$!
	krep_cleanup_push "kill $sniff_pid 2>/dev/null"
	krep_wait_for 30 test -e "$tmp/ready"
}
sniff_stop() {
	kill -TERM "$sniff_pid"
	wait "$sniff_pid"
}
# shellcheck disable=SC2317
follower_has() {	# follower_has N WORD: broker N serves WORD below its HW
	ip netns exec "$(bns "$1")" /usr/bin/python3 "$here/repl_helper.py" \
		dump at 0 "$tmp/dump$1" >/dev/null 2>&1 &&
		grep -qx "$2" "$tmp/dump$1.0"
}
# shellcheck disable=SC2317
wire_ok() {	# wire_ok NEEDLE: both followers serve it
	follower_has 2 "$1" && follower_has 3 "$1"
}
needle=encrypted-$RANDOM$RANDOM$RANDOM
sniff_start "$tmp/sniff-tls" "$needle" || ktap_diag "no sniffer: $(cat "$tmp/sniff-tls")"
# broker 1's connections start over, seen from their SYN
set_secret 1 "$tmp/secret"
ok=0
krep_wait_for 60 cluster_peers_up || ok=1
krep_wait_for 60 isr_is '[1,2,3]' || ok=1
kc "$B1" produce at acks all timeout 10000 <<<"$needle" >/dev/null || ok=1
krep_wait_for 30 wire_ok "$needle" || ok=1
sniff_stop
if [ "$ok" = 0 ]; then
	ktap_ok "encrypted: acks=all commits, both followers serve the record below their HW"
else
	ktap_fail "encrypted: acks=all commits, both followers serve the record below their HW"
fi
# every direction: the handshake's frames, then records only
bad=$(awk '$1 == "flow" && ($10 != 0 || ($6 > 0 && ($4 < 1 || $4 > 2)))' "$tmp/sniff-tls")
nrec=$(awk '$1 == "flow" && $6 > 0' "$tmp/sniff-tls" | wc -l)
if [ -z "$bad" ] && [ "$nrec" -ge 8 ]; then
	ktap_ok "on the wire: HELLO (and AUTH), then only TLS records, in $nrec directions"
else
	ktap_diag_stdin <"$tmp/sniff-tls"
	ktap_fail "on the wire: HELLO (and AUTH), then only TLS records, in $nrec directions"
fi
if grep -qx "find $needle no" "$tmp/sniff-tls"; then
	ktap_ok "the record's bytes are not on the wire"
else
	ktap_diag_stdin <"$tmp/sniff-tls"
	ktap_fail "the record's bytes are not on the wire"
fi
ip netns exec "$B1" cat /proc/net/tls_stat >"$tmp/tls_stat" 2>&1
if awk '$1 == "TlsCurrTxSw" && $2 >= 4 { t = 1 } $1 == "TlsCurrRxSw" && $2 >= 4 { r = 1 }
	END { exit !(t && r) }' "$tmp/tls_stat"; then
	ktap_ok "broker 1's namespace has its four connections in kTLS (tls_stat)"
else
	ktap_diag_stdin <"$tmp/tls_stat"
	ktap_fail "broker 1's namespace has its four connections in kTLS (tls_stat)"
fi

# 6. secret files krepctl refuses
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

# 7. encryption off: replication_tls=0, three new brokers with the secret
krep_mod_unload
if krep_mod_load reconnect_backoff_max_ms=500 replication_tls=0 &&
	cluster_up "$CLUSTER"; then
	ok=0
	for i in 1 2 3; do
		set_secret "$i" "$tmp/secret" || ok=1
	done
	cluster_topic at partitions 1 replication-factor 3 || ok=1
	needle=cleartext-$RANDOM$RANDOM$RANDOM
	sniff_start "$tmp/sniff-clear" "$needle" || ok=1
	set_secret 1 "$tmp/secret"
	krep_wait_for 60 cluster_peers_up || ok=1
	krep_wait_for 60 isr_is '[1,2,3]' || ok=1
	kc "$B1" produce at acks all timeout 10000 <<<"$needle" >/dev/null || ok=1
	krep_wait_for 30 wire_ok "$needle" || ok=1
	sniff_stop
else
	ok=1
fi
ktap_check "replication_tls=0 with the secret: acks=all commits, both followers serve the record" \
	test "$ok" = 0
nrec=$(awk '$1 == "flow" && $6 > 0' "$tmp/sniff-clear" | wc -l)
if grep -qx "find $needle yes" "$tmp/sniff-clear" && [ "$nrec" = 0 ]; then
	ktap_ok "replication_tls=0: the record's bytes are on the wire, in frames (no TLS record)"
else
	ktap_diag_stdin <"$tmp/sniff-clear"
	ktap_fail "replication_tls=0: the record's bytes are on the wire, in frames (no TLS record)"
fi

krep_teardown_checks "$mark"
ktap_finish
