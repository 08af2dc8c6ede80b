#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# module_load.sh - krep.ko loads and unloads cleanly, again and again.
#
#   initial netns
#   +-------------------------------------------+
#   |  insmod krep.ko [params]  -> genl "krep"  |   x 50
#   |  rmmod krep               -> nothing left |
#   +-------------------------------------------+
#
# 50 load/unload cycles without parameters and with every kind of
# parameter; the module and its genl family exist exactly while it is
# loaded; a namespace whose broker was configured over netlink may outlive
# the module; afterwards the kernel log has no "krep: leak", no WARNING, no
# BUG or oops, and as many "krep: unloaded" as "krep: loaded" lines.
# Prints KTAP; leaves the module unloaded.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd genl jq modinfo

CYCLES=50

# parameter sets the cycles go through ("" = none)
PARAM_SETS=(
	""
	"broker_id=1"
	"broker_id=1 cluster_id=prod listen=10.0.0.1:9092"
	"broker_id=1 listen=[fd00::1]:9092 peers=2@10.0.0.2:9092,3@[fd00::3]:9092"
	"broker_id=1 peers=2@10.0.0.2:9092,3@10.0.0.3:9092 topics=orders:3:3:min_insync_replicas=2,audit:1:1"
	"broker_id=7 log_memory_max=1048576 topics=t0:16:1"
)

krep_cleanup_push krep_mod_unload

# the genl family "krep" is registered (a dump: a lookup by name would try
# to autoload the module)
family_present() {
	genl ctrl list 2>/dev/null | grep -qx 'Name: krep'
}

ktap_plan 9

krep_kmsg_mark module_load-$$
krep_mod_unload
ktap_expect_fail "module not loaded at start" krep_mod_loaded

ktap_check "module alias lets a genl lookup autoload it" \
	sh -c "modinfo -F alias '$KREP_KO' | grep -qx net-pf-16-proto-16-family-krep"

# the cycles
fail=""
for ((i = 0; i < CYCLES; i++)); do
	params=${PARAM_SETS[i % ${#PARAM_SETS[@]}]}
	# shellcheck disable=SC2086 # the parameters are words
	if ! out=$(insmod "$KREP_KO" $params 2>&1); then
		fail="cycle $i: insmod $params: $out"
		break
	fi
	# (a family left behind by the last rmmod would have made this insmod
	# fail: genl_register_family refuses a name twice)
	if [ ! -d /sys/module/krep ] || { ((i % 5 == 0)) && ! family_present; }
	then
		fail="cycle $i: loaded, but no /sys/module/krep or genl family"
		break
	fi
	# use the family every few cycles, so that rmmod follows real traffic
	if ((i % 5 == 4)) && ! "$KREPCTL" broker show >/dev/null; then
		fail="cycle $i: krepctl broker show failed"
		break
	fi
	if ! out=$(rmmod krep 2>&1); then
		fail="cycle $i: rmmod: $out"
		break
	fi
	if [ -d /sys/module/krep ] || { ((i % 5 == 0)) && family_present; }; then
		fail="cycle $i: unloaded, but /sys/module/krep or the genl family remains"
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
	got=$("$KREPCTL" --netns "$NS" --json broker show | jq -c .)
	want='{"broker_id":null,"cluster_id":null,"listen":null,"generation":0,"peers":[]}'
	[ "$got" = "$want" ] || { ktap_diag "after reload: $got"; ok=0; }
fi
krep_mod_unload
ip netns del "$NS" 2>/dev/null
if [ "$ok" = 1 ]; then
	ktap_ok "rmmod with a configured namespace; a reload starts it afresh"
else
	ktap_fail "rmmod with a configured namespace; a reload starts it afresh"
fi

ktap_expect_fail "module not loaded at the end" krep_mod_loaded
ktap_expect_fail "no genl family krep at the end" family_present

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
