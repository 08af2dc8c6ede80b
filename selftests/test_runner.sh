#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# test_runner.sh - the suite queue of selftests/run_all.sh --claim, on the
# host (make check runs it beside the VMs: make runner-test), with suites
# of its own: a list of four in a scratch directory (KREP_SUITES_LIST),
# run as host-side suites so that neither the host's kernel log nor its
# modules are looked at.
#
#   1. two runs given one claim directory take every suite, each exactly
#      once, both at work at once (the first's first suite, a.sh, waits
#      until the second has claimed the next, b.sh), and both pass;
#   2. a run alone takes them longest first (secs=), whatever the list's
#      order;
#   3. a run that finds every suite taken runs none, says so and passes;
#   4. a suite whose claim cannot be made (a file in the way) is named
#      and not run;
#   5. a failing suite a run took fails that run;
#   6. --claim of a directory that is not there is refused (exit 2).
#
# Prints KTAP.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

if [ "${KREP_VM:-}" = 1 ]; then
	echo "test_runner.sh: runs on the host (run_all.sh --host refuses the VM)" >&2
	exit 2
fi

tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
RUN_ALL=$here/run_all.sh
export KREP_SUITES_LIST=$tmp/suites.list

# SUITE NAME: prints one passing (or with FAIL=1, failing) KTAP result
# and records that it ran; with WAIT_FOR set, suite WAIT_IN first waits
# (60 s at most: make check runs this beside its VMs) for that claim to
# exist
suite() { # NAME
	cat >"$tmp/$1" <<EOF
#!/bin/bash
echo "TAP version 13"
echo "1..1"
echo "$1" >>"$tmp/ran"
if [ -n "\${WAIT_FOR:-}" ] && [ "$1" = "\${WAIT_IN:-}" ]; then
	for _ in \$(seq 600); do
		[ -d "\$WAIT_FOR" ] && break
		sleep 0.1
	done
	[ -d "\$WAIT_FOR" ] || { echo "not ok 1 $1: \$WAIT_FOR never claimed"; exit 1; }
fi
if [ "\${FAIL:-}" = "$1" ]; then
	echo "not ok 1 $1"
	exit 1
fi
echo "ok 1 $1"
EOF
	chmod +x "$tmp/$1"
}
for n in d c b a; do suite "$n.sh"; done
# in the list's order d, c, b, a: the queue's is a (40 s), b, c, d
printf '%s\n' "d.sh secs=5 host" "c.sh secs=10 host" "b.sh secs=20 host" \
	"a.sh secs=40 host" >"$KREP_SUITES_LIST"

began() { sed -n 's/^# suite: //p' "$1" | tr '\n' ' '; }	# LOG

ktap_plan 6

# 1. two runs, one claim directory. The first takes a.sh, which waits
# for b.sh's claim: the second run makes it, so both were at work at once.
claims=$tmp/claims1
mkdir "$claims"
: >"$tmp/ran"
WAIT_FOR=$claims/b.sh WAIT_IN=a.sh "$RUN_ALL" --host --claim "$claims" >"$tmp/r1" 2>&1 &
p1=$!
krep_wait_for 60 test -d "$claims/a.sh"
WAIT_FOR=$claims/b.sh WAIT_IN=a.sh "$RUN_ALL" --host --claim "$claims" >"$tmp/r2" 2>&1
rc2=$?
wait "$p1"
rc1=$?
ran=$(sort "$tmp/ran" | tr '\n' ' ')
both=$({ began "$tmp/r1"; began "$tmp/r2"; } | tr ' ' '\n' | sed '/^$/d' | sort | tr '\n' ' ')
if [ "$rc1$rc2" = 00 ] && [ "$ran" = "a.sh b.sh c.sh d.sh " ] &&
   [ "$both" = "a.sh b.sh c.sh d.sh " ] &&
   [ "$(began "$tmp/r1" | cut -d ' ' -f 1)" = a.sh ] &&
   [ "$(began "$tmp/r2" | cut -d ' ' -f 1)" = b.sh ]; then
	ktap_ok "two runs, one claim directory: each suite run once ($(began "$tmp/r1")| $(began "$tmp/r2")), both pass"
else
	ktap_fail "two runs, one claim directory: each suite run once, both pass"
	ktap_diag "exit $rc1 and $rc2; ran: $ran; first: $(began "$tmp/r1"); second: $(began "$tmp/r2")"
	ktap_diag_stdin <"$tmp/r1"
	ktap_diag_stdin <"$tmp/r2"
fi

# 2. alone: longest first
mkdir "$tmp/claims2"
"$RUN_ALL" --host --claim "$tmp/claims2" >"$tmp/r3" 2>&1
rc=$?
if [ "$rc" = 0 ] && [ "$(began "$tmp/r3")" = "a.sh b.sh c.sh d.sh " ]; then
	ktap_ok "a run alone takes the suites longest first: $(began "$tmp/r3")"
else
	ktap_fail "a run alone takes the suites longest first"
	ktap_diag "exit $rc, began: $(began "$tmp/r3")"
fi

# 3. nothing left
"$RUN_ALL" --host --claim "$tmp/claims2" >"$tmp/r4" 2>&1
rc=$?
if [ "$rc" = 0 ] && [ -z "$(began "$tmp/r4")" ] &&
   grep -qx '# every suite was claimed by another run' "$tmp/r4" &&
   grep -qx 'selftests: 0 passed, 0 failed' "$tmp/r4"; then
	ktap_ok "a run that finds every suite taken runs none, says so and passes"
else
	ktap_fail "a run that finds every suite taken runs none, says so and passes"
	ktap_diag "exit $rc"
	ktap_diag_stdin <"$tmp/r4"
fi

# 4. a claim that cannot be made
mkdir "$tmp/claims3"
: >"$tmp/claims3/b.sh"
: >"$tmp/ran"
"$RUN_ALL" --host --claim "$tmp/claims3" >"$tmp/r5" 2>&1
rc=$?
if [ "$rc" = 0 ] && [ "$(began "$tmp/r5")" = "a.sh c.sh d.sh " ] &&
   ! grep -qx b.sh "$tmp/ran" &&
   grep -q '^# suite b.sh: cannot claim it: ' "$tmp/r5"; then
	ktap_ok "a suite whose claim cannot be made is named and not run"
else
	ktap_fail "a suite whose claim cannot be made is named and not run"
	ktap_diag "exit $rc"
	ktap_diag_stdin <"$tmp/r5"
fi

# 5. a failing suite fails the run that took it
mkdir "$tmp/claims4"
FAIL=c.sh "$RUN_ALL" --host --claim "$tmp/claims4" >"$tmp/r6" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -qx '# suite c.sh: 0 passed, 1 failed, 0 skipped (exit 1, [0-9]*s, cpu [0-9]*%)' "$tmp/r6" &&
   grep -qx 'selftests: 3 passed, 1 failed' "$tmp/r6"; then
	ktap_ok "a failing suite fails the run that took it"
else
	ktap_fail "a failing suite fails the run that took it"
	ktap_diag "exit $rc"
	ktap_diag_stdin <"$tmp/r6"
fi

# 6. no such directory
"$RUN_ALL" --host --claim "$tmp/none" >"$tmp/r7" 2>&1
rc=$?
if [ "$rc" = 2 ] && grep -q "^run_all.sh: --claim $tmp/none: not a writable directory" "$tmp/r7" &&
   [ -z "$(began "$tmp/r7")" ]; then
	ktap_ok "--claim of a missing directory is refused (exit 2)"
else
	ktap_fail "--claim of a missing directory is refused (exit 2)"
	ktap_diag "exit $rc"
	ktap_diag_stdin <"$tmp/r7"
fi

ktap_finish
