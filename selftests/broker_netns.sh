#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# broker_netns.sh - one broker per network namespace, configured with
# krepctl, each seeing only its own configuration.
#
#   initial netns                  (module parameters, never changed here)
#   broker 0  cluster init
#   listen 10.255.0.1:9092
#
#   +- netns A (krep-a-*) ------+   +- netns B (krep-b-*) ---------------+
#   | broker 1  cluster alpha   |   | broker 2  cluster beta             |
#   | listen 10.0.0.1:9092      |   | listen [fd00::2]:9093              |
#   | peers  2@10.0.0.2:9092    |   | peers  1@10.0.0.1:9092,            |
#   |                           |   |        3@[fd00::3]:9094            |
#   | set with krepctl --netns  |   | set with ip netns exec ... krepctl |
#   +---------------------------+   +------------------------------------+
#
#   +- netns C (krep-c-*) -------------+   +- 20 x netns (krep-churn-*) -----+
#   | broker 3, peers 4@10.4.0.1:9092  |   | configured, then deleted while  |
#   | alive across rmmod, deleted      |   | the module is loaded            |
#   | after it                         |   +---------------------------------+
#   +----------------------------------+
#
# No links: brokers are only configured here, nothing connects yet.
# Checks that each namespace sees its own broker (whichever way krepctl
# enters it), that the initial namespace is unaffected, that every SET bumps
# the generation by one and a rejected one does not, and that namespaces can
# be deleted while configured, before and after rmmod, without a leak.
# Prints KTAP; leaves the module unloaded and no namespace behind.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd jq

NCHURN=20

# norm: JSON from stdin, compact, peer states (which follow the connections)
# removed when they are valid
norm() {
	jq -c '.peers |= map(if (.state | IN("configured", "connecting", "up",
		"down")) then del(.state) else . end)'
}

# show [NS]: the broker of NS, else of the initial netns, through norm
show() {
	if [ $# -gt 0 ]; then
		"$KREPCTL" --netns "$1" --json broker show | norm
	else
		"$KREPCTL" --json broker show | norm
	fi
}

# gen NS: the generation of NS's broker (krepctl prints compact JSON)
gen() {
	local out

	out=$("$KREPCTL" --netns "$1" --json broker show) &&
		[[ $out =~ \"generation\":([0-9]+) ]] && echo "${BASH_REMATCH[1]}"
}

# same DESC WANT GOT: ok if the JSON values are equal
same() {
	if jq -e -n --argjson w "$2" --argjson g "$3" '$w == $g' >/dev/null 2>&1; then
		ktap_ok "$1"
	else
		ktap_diag "want: $2"
		ktap_diag "got:  $3"
		ktap_fail "$1"
	fi
}

ktap_plan 21

krep_kmsg_mark broker_netns-$$
krep_mod_unload
krep_mod_load broker_id=0 cluster_id=init listen=10.255.0.1:9092 ||
	ktap_bail "insmod krep.ko failed"
INIT=$(show)

if ! krep_netns_add NSA a || ! krep_netns_add NSB b ||
   ! krep_netns_add NSC c; then
	ktap_bail "ip netns add failed"
fi

tmp_err=$(mktemp)
krep_cleanup_push rm -f "$tmp_err"

FRESH='{"broker_id":null,"cluster_id":null,"listen":null,"kafka_listen":null,"kafka_advertised":null,"cluster_secret":false,"log_dir":null,"generation":0,"peers":[]}'
same "a new namespace starts with an empty broker" "$FRESH" "$(show "$NSA")"

# namespace A, with krepctl --netns
ktap_check "set namespace A with krepctl --netns" \
	"$KREPCTL" --netns "$NSA" broker set id 1 cluster alpha \
	listen 10.0.0.1:9092 peers 2@10.0.0.2:9092

# namespace B, with ip netns exec, in two steps
ktap_check "set namespace B with ip netns exec" \
	ip netns exec "$NSB" "$KREPCTL" broker set id 2 cluster beta \
	listen '[fd00::2]:9093'
ktap_check "set namespace B's peers" \
	ip netns exec "$NSB" "$KREPCTL" broker set \
	peers '1@10.0.0.1:9092,3@[fd00::3]:9094'

A='{"broker_id":1,"cluster_id":"alpha","listen":"10.0.0.1:9092","kafka_listen":null,"kafka_advertised":null,"cluster_secret":false,"log_dir":null,"generation":1,
    "peers":[{"id":2,"addr":"10.0.0.2:9092"}]}'
B='{"broker_id":2,"cluster_id":"beta","listen":"[fd00::2]:9093","kafka_listen":null,"kafka_advertised":null,"cluster_secret":false,"log_dir":null,"generation":2,
    "peers":[{"id":1,"addr":"10.0.0.1:9092"},{"id":3,"addr":"[fd00::3]:9094"}]}'
same "namespace A sees its own broker" "$A" "$(show "$NSA")"
same "namespace B sees its own broker" "$B" "$(show "$NSB")"
same "krepctl --netns and ip netns exec agree" "$(show "$NSB")" \
	"$(ip netns exec "$NSB" "$KREPCTL" --json broker show | norm)"
same "the initial namespace is unaffected" "$INIT" "$(show)"

# generations
ok=1
g=$(gen "$NSA")
for port in 9101 9102 9103; do
	"$KREPCTL" --netns "$NSA" broker set listen "10.0.0.1:$port" >/dev/null ||
		ok=0
	g=$((g + 1))
	[ "$(gen "$NSA")" = "$g" ] || { ktap_diag "generation $(gen "$NSA"), want $g"; ok=0; }
done
if [ "$ok" = 1 ]; then
	ktap_ok "every SET bumps the generation by one"
else
	ktap_fail "every SET bumps the generation by one"
fi

before=$(show "$NSA")
err=$("$KREPCTL" --netns "$NSA" broker set peers 1@10.0.0.9:9092 2>&1)
rc=$?
if [ "$rc" = 1 ] &&
   [ "$err" = "krepctl: Invalid argument: peer id equals the broker's own id" ]; then
	ktap_ok "a rejected SET fails with the kernel's reason"
else
	ktap_diag "exit $rc: $err"
	ktap_fail "a rejected SET fails with the kernel's reason"
fi
same "a rejected SET changes nothing, generation included" "$before" "$(show "$NSA")"
same "namespace B is unaffected by A's changes" "$B" "$(show "$NSB")"

# the error names the namespace and why it cannot be opened; nothing on
# stdout
none=krep-none-$$
out=$("$KREPCTL" --netns "$none" broker show 2>"$tmp_err")
rc=$?
err=$(<"$tmp_err")
want="krepctl: network namespace '$none' does not exist (no /run/netns/$none)"
if [ "$rc" = 1 ] && [ -z "$out" ] && [ "$err" = "$want" ]; then
	ktap_ok "an unknown namespace is an error naming it and the missing /run/netns file"
else
	ktap_diag "exit $rc, stdout: $out"
	ktap_diag "stderr: $err"
	ktap_diag "want:   $want"
	ktap_fail "an unknown namespace is an error naming it and the missing /run/netns file"
fi

# deleting a configured namespace, and making it again
ktap_check "delete configured namespace A" ip netns del "$NSA"
ktap_check "namespace B survives" test "$(show "$NSB" | jq -r .cluster_id)" = beta
ip netns add "$NSA"
krep_cleanup_push ip netns del "$NSA"
same "a namespace made again under A's name starts empty" "$FRESH" "$(show "$NSA")"
ip netns del "$NSA"

# churn: configure and delete many namespaces (made and deleted by one
# ip -batch each: processes are slow in an emulated VM)
ok=1
churn=()
for ((i = 0; i < NCHURN; i++)); do
	churn+=("krep-churn-$$-$i")	# unique: this suite's pid
done
# (one process at exit, whatever is left)
krep_cleanup_push "printf 'netns del %s\n' ${churn[*]} | ip -force -b -"
printf 'netns add %s\n' "${churn[@]}" | ip -b - ||
	{ ok=0; ktap_diag "ip netns add of the churn namespaces failed"; }
for ((i = 0; i < NCHURN; i++)); do
	ns=${churn[i]}
	"$KREPCTL" --netns "$ns" broker set id "$i" cluster "c$i" \
		listen "10.3.0.$((i + 1)):9092" \
		peers "$((i + 1))@10.3.1.1:9092,$((i + 2))@[fd00::$i]:9092" \
		>/dev/null || ok=0
	# krepctl prints compact JSON, keys in a fixed order
	out=$("$KREPCTL" --netns "$ns" --json broker show)
	[[ $out == '{"broker_id":'"$i"',"cluster_id":"c'"$i"'",'* ]] ||
		{ ok=0; ktap_diag "namespace $i: $out"; }
done
printf 'netns del %s\n' "${churn[@]}" | ip -b - ||
	{ ok=0; ktap_diag "ip netns del of the churn namespaces failed"; }
if [ "$ok" = 1 ]; then
	ktap_ok "$NCHURN namespaces configured and deleted"
else
	ktap_fail "$NCHURN namespaces configured and deleted"
fi
same "the initial namespace is still unaffected" "$INIT" "$(show)"

# rmmod while configured namespaces exist (B, and C set just before);
# delete them afterwards
C='{"broker_id":3,"cluster_id":null,"listen":null,"kafka_listen":null,"kafka_advertised":null,"cluster_secret":false,"log_dir":null,"generation":1,
    "peers":[{"id":4,"addr":"10.4.0.1:9092"}]}'
if ! out=$("$KREPCTL" --netns "$NSC" broker set id 3 peers 4@10.4.0.1:9092 2>&1); then
	ktap_diag "broker set in namespace C: $out"
	ktap_fail "rmmod with configured namespaces"
elif ! jq -e -n --argjson w "$C" --argjson g "$(show "$NSC")" '$w == $g' >/dev/null; then
	ktap_diag "namespace C: $(show "$NSC")"
	ktap_fail "rmmod with configured namespaces"
else
	ktap_check "rmmod with configured namespaces" rmmod krep
fi
krep_mod_unload
ktap_check "delete namespaces after rmmod" \
	sh -c "ip netns del '$NSB' && ip netns del '$NSC'"

log=$(krep_kmsg_since broker_netns-$$)
if krep_kernel_bad <<<"$log" |
	ktap_diag_stdin; then
	ktap_fail "no leak, WARNING, BUG or oops in the kernel log"
else
	ktap_ok "no leak, WARNING, BUG or oops in the kernel log"
fi

ktap_finish
