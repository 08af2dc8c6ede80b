# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# lib.sh - helpers for the agent's host-only shell tests (test_cli.sh,
# test_obs.sh, test_ctl.sh). Source it, do not run it:
#
#	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
#	. "$here/lib.sh"
#
# It sources selftests/lib.sh, whose KTAP helpers (ktap_plan, ktap_ok,
# ktap_fail, ktap_diag, ktap_finish, ...) and paths (KREP_ROOT, KREPCTL,
# KREPD) the tests use; on top of them:
#
#   ok STATUS DESC           ktap_ok DESC if STATUS is 0, else ktap_fail DESC
#                            (after a check: "[ ... ]; ok $? DESC")
#   help PROG [ARGS...]      "PROG ARGS --help" exits 0 with "Usage:..." on
#                            stdout; the check is named after PROG's basename

[ -n "${KREP_AGENT_TESTS_LIB_SH:-}" ] && return 0
KREP_AGENT_TESTS_LIB_SH=1

# shellcheck source=selftests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"

ok() {
	if [ "$1" = 0 ]; then
		ktap_ok "$2"
	else
		ktap_fail "$2"
	fi
}

help() {
	local out rc

	out=$("$@" --help 2>/dev/null)
	rc=$?
	[ $rc = 0 ] && [[ $out == Usage:* ]]
	ok $? "${1##*/}${2:+ ${*:2}} --help exits 0 with its usage"
}
