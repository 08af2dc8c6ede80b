#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-only checks of the observability commands' command lines: krepctl
# watch and stats, krepd --metrics. --help exits 0 with the usage on
# stdout; bad command lines exit 2 with a message and the usage on stderr
# before anything is loaded or contacted (no module, no BPF needed). The
# commands themselves run in the VM (selftests/observability.sh). KTAP
# (selftests/lib.sh).
#
# Usage: agent/tests/test_obs.sh [KREPCTL [KREPD]]

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=agent/tests/lib.sh
. "$here/lib.sh"

K=${1:-$KREPCTL}
D=${2:-$KREPD}

# usage MESSAGE PROG ARGS...: exits 2 with MESSAGE on stderr, and krepd's
# "Usage:" or krepctl's "Try 'krepctl COMMAND --help'."
usage() {
	local msg=$1 err rc

	shift
	err=$("$@" 2>&1 >/dev/null </dev/null)
	rc=$?
	[ $rc = 2 ] && [[ $err == *"$msg"* ]] &&
		[[ $err == *Usage:* || $err == *"Try 'krepctl "*" --help'."* ]]
	ok $? "${1##*/} ${*:2} exits 2: $msg"
}

ktap_plan 15
help "$K" watch
help "$K" stats
help "$D"
usage "needs a value" "$K" watch --interval
usage "is not a number" "$K" watch --interval soon
usage "must be at least 10" "$K" watch --interval 5
usage "must be at least 1" "$K" watch --count 0
usage "unexpected argument 'b'" "$K" watch a b
usage "unexpected argument '--bogus'" "$K" watch --bogus
usage "drop --netns" "$K" --netns x watch --all
usage "unexpected argument 'b'" "$K" stats a b
usage "missing ':PORT'" "$D" --metrics 127.0.0.1
usage "port 0" "$D" --metrics 127.0.0.1:0
usage "needs a value" "$D" --metrics
"$K" help | grep -q '^  watch ' && "$K" help | grep -q '^  stats '
ok $? "krepctl help lists watch and stats"
ktap_finish
