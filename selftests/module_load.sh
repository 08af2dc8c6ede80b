#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# module_load.sh - krep.ko loads and unloads cleanly, again and again.
#
#   initial netns
#   +-------------------------------------------+
#   |  insmod krep.ko [params]  -> genl "krep"  |   x 14
#   |  rmmod krep               -> nothing left |
#   +-------------------------------------------+
#
# Load/unload cycles without parameters and with every kind of parameter:
# each parameter set twice, the second time with netlink traffic before
# the rmmod. After every load the module and its genl family exist, after
# every unload the module does not; a family an unload leaves registered
# makes the next insmod fail (genl_register_family refuses a name twice),
# and the last one is looked for at the end. Two rounds find what more
# would: what an unload leaves behind fails the next load, and every
# unload checks the module's own allocation counters ("krep: leak"). A
# namespace whose broker was configured over netlink may outlive the
# module; afterwards the kernel log has no "krep: leak", no WARNING, no
# BUG or oops, and as many "krep: unloaded" as "krep: loaded" lines.
# Prints KTAP; leaves the module unloaded.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd genl jq modinfo


# parameter sets the cycles go through ("" = none)
PARAM_SETS=(
	""
	"broker_id=1"
	"broker_id=1 cluster_id=prod listen=10.0.0.1:9092"
	"broker_id=1 listen=[fd00::1]:9092 peers=2@10.0.0.2:9092,3@[fd00::3]:9092"
	"broker_id=1 peers=2@10.0.0.2:9092,3@10.0.0.3:9092 topics=orders:3:3:min_insync_replicas=2,audit:1:1"
	"broker_id=7 log_memory_max=1048576 topics=t0:16:1"
	"hello_timeout_ms=100 fetch_timeout_ms=600000 reconnect_backoff_max_ms=100 close_log_interval_ms=600000"
)
CYCLES=$((2 * ${#PARAM_SETS[@]}))

krep_cleanup_push krep_mod_unload

# the genl family "krep" is registered (a dump: a lookup by name would try
# to autoload the module); one process: they are slow in an emulated VM
family_present() {
	local out

	out=$(genl ctrl list 2>/dev/null) || return 2
	[[ $'\n'$out$'\n' == *$'\nName: krep\n'* ]]
}

ktap_plan 7

krep_kmsg_mark module_load-$$
krep_mod_unload || ktap_bail "krep is loaded and rmmod fails"

ktap_check "module alias lets a genl lookup autoload it" \
	sh -c "modinfo -F alias '$KREP_KO' | grep -qx net-pf-16-proto-16-family-krep"

# the cycles (no $(...) around insmod and rmmod: a fork is slow in an
# emulated VM)
errf=$(mktemp)
krep_cleanup_push rm -f "$errf"
fail=""
for ((i = 0; i < CYCLES; i++)); do
	params=${PARAM_SETS[i % ${#PARAM_SETS[@]}]}
	# shellcheck disable=SC2086 # the parameters are words
	if ! insmod "$KREP_KO" $params 2>"$errf"; then
		fail="cycle $i: insmod $params: $(<"$errf")"
		break
	fi
	# (a family left behind by the last rmmod would have made this insmod
	# fail: genl_register_family refuses a name twice)
	if [ ! -d /sys/module/krep ] || ! family_present; then
		fail="cycle $i: loaded, but no /sys/module/krep or genl family"
		break
	fi
	# the second round uses the family, so that rmmod follows real traffic
	if ((i >= CYCLES / 2)) && ! "$KREPCTL" broker show >/dev/null; then
		fail="cycle $i: krepctl broker show failed"
		break
	fi
	if ! rmmod krep 2>"$errf"; then
		fail="cycle $i: rmmod: $(<"$errf")"
		break
	fi
	if [ -d /sys/module/krep ]; then
		fail="cycle $i: unloaded, but /sys/module/krep remains"
		break
	fi
done
if [ -z "$fail" ]; then
	ktap_ok "$CYCLES load/unload cycles, with and without parameters"
else
	ktap_diag "$fail"
	ktap_fail "$CYCLES load/unload cycles, with and without parameters"
fi

# a namespace whose broker was configured outlives the module, and the
# module can come back while it exists
ok=1
krep_netns_add NS load || ok=0
[ "$ok" = 1 ] &&
	insmod "$KREP_KO" broker_id=1 &&
	"$KREPCTL" --netns "$NS" broker set id 5 cluster gone \
		listen 10.9.9.9:9092 peers 6@10.9.9.8:9092 >/dev/null &&
	rmmod krep &&
	insmod "$KREP_KO" || ok=0
# the reloaded module starts the surviving namespace from scratch
if [ "$ok" = 1 ]; then
	got=$("$KREPCTL" --netns "$NS" --json broker show | jq -c .)	# keys sorted (gojq)
	want='{"broker_id":null,"cluster_id":null,"cluster_secret":false,"generation":0,"kafka_advertised":null,"kafka_listen":null,"listen":null,"log_dir":null,"peers":[]}'
	[ "$got" = "$want" ] || { ktap_diag "after reload: $got"; ok=0; }
fi
krep_mod_unload || ok=0
ip netns del "$NS" 2>/dev/null
if [ "$ok" = 1 ]; then
	ktap_ok "rmmod with a configured namespace; a reload starts it afresh"
else
	ktap_fail "rmmod with a configured namespace; a reload starts it afresh"
fi

family_present
present=$?
if [ "$present" = 1 ]; then
	ktap_ok "no genl family krep at the end"
else
	ktap_diag "genl ctrl list: $([ "$present" = 0 ] && echo "krep is there" || echo failed)"
	ktap_fail "no genl family krep at the end"
fi

log=$(krep_kmsg_since module_load-$$)
loaded=$(grep -c 'krep: loaded' <<<"$log")
unloaded=$(grep -c 'krep: unloaded' <<<"$log")

if grep 'krep: leak' <<<"$log" | ktap_diag_stdin; then
	ktap_fail "no 'krep: leak' in the kernel log"
else
	ktap_ok "no 'krep: leak' in the kernel log"
fi
if krep_kernel_bad <<<"$log" | ktap_diag_stdin; then
	ktap_fail "no WARNING, BUG or oops in the kernel log"
else
	ktap_ok "no WARNING, BUG or oops in the kernel log"
fi
if [ "$loaded" -ge $((CYCLES + 2)) ] && [ "$loaded" = "$unloaded" ]; then
	ktap_ok "every load logged, and every unload ($loaded)"
else
	ktap_diag "'krep: loaded' $loaded times, 'krep: unloaded' $unloaded times"
	ktap_fail "every load logged, and every unload"
fi

ktap_finish
