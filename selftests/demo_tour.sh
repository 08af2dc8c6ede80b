#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# demo_tour.sh - make demo's narrated tour (scripts/demo.sh) as a suite, so
# that the front door is tested on every make check. The tour checks what
# each of its steps claims and exits 1 at the first one that does not
# behave as narrated; here every step is one result: ok once the next step
# began (the last: once the tour ended "all steps behaved as narrated").
# On a failure the tour's last lines are shown. The tour runs without
# bpftrace (KREP_DEMO_BPFTRACE=0): its three scripts of tools/bpftrace are
# observability.sh's to test, where they run too, and each bpftrace start
# costs seconds of LLVM under emulation. Prints KTAP; leaves the module
# unloaded and no namespace behind.
set -u
shopt -s extglob

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd ip jq kcat

STEPS=8
tmp=$(mktemp -d)
mark=demo-tour-$$
krep_cleanup_push rm -rf "$tmp"
# what a tour that stopped half-way leaves
krep_cleanup_push "ip netns del krep-demo-b2; ip netns del krep-demo-b3; ip link del br0; rmmod krep"

ktap_plan $((STEPS + 1))
krep_kmsg_mark "$mark"
krep_mod_unload

# each line of the tour with the suite's clock in front ("SECONDS LINE"),
# without its colours; tour.out without the clock
stamp() {
	local l
	while IFS= read -r l || [ -n "$l" ]; do
		printf '%s %s\n' "$SECONDS" "${l//$'\e['*([0-9;])m/}"
	done
}
KREP_DEMO_BPFTRACE=0 "$KREP_ROOT/scripts/demo.sh" </dev/null 2>&1 |
	stamp >"$tmp/tour.times"
rc=${PIPESTATUS[0]}
while IFS= read -r l; do
	printf '%s\n' "${l#* }"
done <"$tmp/tour.times" >"$tmp/tour.out"

title() { # N: the step's narration line
	sed -n "s/^==> step $1: //p" "$tmp/tour.out" | head -n 1
}
at() { # N: the second step N began (its narration line came)
	sed -n "s/^\([0-9]*\) ==> step $1: .*/\1/p" "$tmp/tour.times" | head -n 1
}
for ((n = 1; n <= STEPS; n++)); do
	t=$(title "$n")
	t0=$(at "$n") t1=$(at $((n + 1)))
	[ -n "$t1" ] || t1=$SECONDS
	[ -z "$t0" ] || ktap_diag "step $n took $((t1 - t0)) s"
	if [ -n "$(title $((n + 1)))" ] ||
	   { [ "$n" = "$STEPS" ] && [ "$rc" = 0 ]; }; then
		ktap_ok "step $n: ${t:0:100}"
	elif [ -n "$t" ]; then
		ktap_diag "the tour's last lines (exit $rc):"
		tail -n 25 "$tmp/tour.out" | ktap_diag_stdin
		ktap_fail "step $n: ${t:0:100}"
	else
		ktap_fail "step $n: not reached"
	fi
done
grep -q '^demo: all steps behaved as narrated$' "$tmp/tour.out" && ended=1 || ended=0
# the tour unloads krep itself; the clean-up would do it for a tour that
# stopped half-way
krep_mod_loaded && loaded=1 || loaded=0
krep_cleanup_run
bad=$(krep_kmsg_since "$mark" | krep_kernel_bad)
if [ "$rc" = 0 ] && [ "$ended" = 1 ] && [ -z "$bad" ] && [ "$loaded" = 0 ]; then
	ktap_ok "the tour ends as narrated; no kernel warning; the tour unloaded krep"
else
	ktap_diag "exit $rc, krep loaded after the tour: $loaded"
	[ -z "$bad" ] || ktap_diag "$bad"
	ktap_fail "the tour ends as narrated; no kernel warning; the tour unloaded krep"
fi
ktap_finish
