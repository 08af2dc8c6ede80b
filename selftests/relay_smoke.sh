#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# relay_smoke.sh - a controller's session to a broker through
# `krepd --relay`: the relay runs in the broker's namespace, the client
# (agent/tests/test_relay probe, a relay session as krepd --controller opens
# one) in another, over TCP on a veth pair.
#
#   initial netns: broker 1 (insmod broker_id=1), never asked here
#
#   +- netns C (krep-rc-*) -------+          +- netns R (krep-rr-*) ------------+
#   | test_relay probe            |          | broker 7 (krepctl broker set)    |
#   |   10.203.0.2:7070 SECRET    |          | krepd --relay 10.203.0.2:7070    |
#   | kr0 10.203.0.1/24 ---------------veth-------- kr0 10.203.0.2/24          |
#   +-----------------------------+          +----------------------------------+
#
# 1. BROKER_GET through the relay answers with R's broker (7), not the
#    initial namespace's (1).
# 2. A wrong secret is refused, and the relay logs why.
# 3. The kernel's error and extack message come back through the relay.
# 4. A BROKER_SET through the relay takes effect, and its event comes back
#    on the same connection.
# 5. krepd --relay refuses a secret file others can read.
# 6. SIGTERM stops the relay (exit 0); one log line per connect, auth
#    failure and disconnect; no kernel warning.
# Prints KTAP; leaves the module unloaded and no namespace behind.

# shellcheck disable=SC2317 # relay_up is what krep_wait_for polls
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd ip jq

PROBE=$KREP_ROOT/agent/tests/test_relay
[ -x "$PROBE" ] || ktap_skip_all "agent/tests/test_relay not built (make -C agent tests/test_relay)"

NET=10.203.0
PORT=7070

tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
mark=relay_smoke-$$

# probe ARGS...: the relay client, in namespace C
probe() {
	ip netns exec "$NSC" "$PROBE" probe "$NET.2:$PORT" "$@"
}

relay_up() {
	ip netns exec "$NSC" bash -c "exec 3<>/dev/tcp/$NET.2/$PORT" 2>/dev/null
}

ktap_plan 12

krep_kmsg_mark "$mark"
krep_mod_unload
krep_mod_load broker_id=1 || ktap_bail "insmod krep.ko failed"
if ! krep_netns_add NSR rr || ! krep_netns_add NSC rc; then
	ktap_bail "ip netns add failed"
fi
modprobe veth 2>/dev/null
ip link add kr0 netns "$NSC" type veth peer name kr0 netns "$NSR" ||
	ktap_bail "cannot create the veth link"
for i in 1 2; do
	case $i in 1) ns=$NSC ;; 2) ns=$NSR ;; esac
	printf '%s\n' "link set lo up" "addr add $NET.$i/24 dev kr0" \
		"link set kr0 up" | ip -n "$ns" -b - ||
		ktap_bail "cannot address netns $ns"
done
"$KREPCTL" --netns "$NSR" broker set id 7 >/dev/null ||
	ktap_bail "krepctl broker set in $NSR failed"

umask 077
printf 'relay-smoke-secret-%s\n' "$RANDOM$RANDOM" >"$tmp/secret"
printf 'some-other-secret-%s\n' "$RANDOM$RANDOM" >"$tmp/wrong"
cp "$tmp/secret" "$tmp/open" && chmod 644 "$tmp/open"

"$KREPD" --relay "$NET.2:$PORT" --secret-file "$tmp/secret" --netns "$NSR" \
	>"$tmp/relay.log" 2>&1 &
relay=$!
krep_cleanup_push "kill $relay 2>/dev/null; wait $relay 2>/dev/null"

if krep_wait_for 30 relay_up; then
	ktap_ok "krepd --relay listens in the broker's namespace"
else
	ktap_diag_stdin <"$tmp/relay.log"
	ktap_bail "the relay does not listen on $NET.2:$PORT"
fi

# 1. BROKER_GET
out=$(probe "$tmp/secret" get 2>&1) && rc=0 || rc=$?
if [ "$rc" = 0 ] && grep -q '^reply cmd=broker_get .*broker_id=7\b' <<<"$out"; then
	ktap_ok "BROKER_GET through the relay: the relay's namespace's broker"
else
	ktap_diag "exit $rc: $out"
	ktap_fail "BROKER_GET through the relay: the relay's namespace's broker"
fi

# 2. a wrong secret
out=$(probe "$tmp/wrong" get 2>&1) && rc=0 || rc=$?
if [ "$rc" = 1 ] && grep -q 'closed the connection after AUTH' <<<"$out"; then
	ktap_ok "a wrong secret is refused"
else
	ktap_diag "exit $rc: $out"
	ktap_fail "a wrong secret is refused"
fi
if krep_wait_for 20 grep -q 'authentication failed: wrong secret$' "$tmp/relay.log"; then
	ktap_ok "the relay logs the wrong secret"
else
	ktap_diag_stdin <"$tmp/relay.log"
	ktap_fail "the relay logs the wrong secret"
fi

# 3. the kernel's error
out=$(probe "$tmp/secret" bad-set 2>&1) && rc=0 || rc=$?
if [ "$rc" = 0 ] && grep -q '^error -22 (Invalid argument): nothing to set$' <<<"$out"; then
	ktap_ok "the kernel's error and message come back through the relay"
else
	ktap_diag "exit $rc: $out"
	ktap_fail "the kernel's error and message come back through the relay"
fi

# 4. a change, and its event
out=$(probe "$tmp/secret" set-cluster relayed 2>&1) && rc=0 || rc=$?
if [ "$rc" = 0 ] && grep -q '^event cmd=broker_set .*cluster_id="\?relayed' <<<"$out"; then
	ktap_ok "BROKER_SET through the relay, and its event back"
else
	ktap_diag "exit $rc: $out"
	ktap_fail "BROKER_SET through the relay, and its event back"
fi
ktap_check "the change took effect in the relay's namespace" \
	bash -c "'$KREPCTL' --netns '$NSR' --json broker show |
		jq -e '.broker_id == 7 and .cluster_id == \"relayed\"'"
# the initial namespace's broker as insmod made it: id 1, no cluster id
if out=$("$KREPCTL" --json broker show 2>&1) &&
   jq -e '.broker_id == 1 and .cluster_id == null' >/dev/null 2>&1 <<<"$out"; then
	ktap_ok "the initial namespace is unaffected (broker 1, no cluster id)"
else
	ktap_diag "krepctl --json broker show: $out"
	ktap_fail "the initial namespace is unaffected (broker 1, no cluster id)"
fi

# 5. a secret file others may read
out=$("$KREPD" --relay "$NET.2:$((PORT + 1))" --secret-file "$tmp/open" \
	--netns "$NSR" 2>&1) && rc=0 || rc=$?
if [ "$rc" = 1 ] && grep -q 'accessible by group or others (mode 0644)' <<<"$out"; then
	ktap_ok "krepd --relay refuses a secret file others can read"
else
	ktap_diag "exit $rc: $out"
	ktap_fail "krepd --relay refuses a secret file others can read"
fi

# 6. stop, log, kernel
kill -TERM "$relay"
wait "$relay" && rc=0 || rc=$?
if [ "$rc" = 0 ] && grep -q 'received SIGTERM, exiting' "$tmp/relay.log"; then
	ktap_ok "SIGTERM stops the relay"
else
	ktap_diag "exit $rc"
	ktap_diag_stdin <"$tmp/relay.log"
	ktap_fail "SIGTERM stops the relay"
fi
# the listener probe, get, wrong, bad-set, set-cluster: 5 connections
conn=$(grep -c ' connected$' "$tmp/relay.log")
gone=$(grep -c -e ' disconnected after ' -e ': authentication failed: ' \
	"$tmp/relay.log")
if [ "$conn" = 5 ] && [ "$gone" = 5 ]; then
	ktap_ok "one log line per connect and per disconnect or auth failure"
else
	ktap_diag "connected: $conn, gone: $gone"
	ktap_diag_stdin <"$tmp/relay.log"
	ktap_fail "one log line per connect and per disconnect or auth failure"
fi

krep_cleanup_run
bad=$(krep_kmsg_since "$mark" | krep_kernel_bad)
if [ -z "$bad" ] && ! krep_mod_loaded; then
	ktap_ok "no kernel warning, module unloaded"
else
	ktap_diag "$bad"
	ktap_fail "no kernel warning, module unloaded"
fi
ktap_finish
