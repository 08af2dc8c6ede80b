#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-only checks of the observability commands' command lines: krepctl
# watch and stats, krepd --metrics. --help exits 0 with the usage on
# stdout; bad command lines exit 2 with a message and the usage on stderr
# before anything is loaded or contacted (no module, no BPF needed). The
# commands themselves run in the VM (selftests/observability.sh). TAP.
#
# Usage: agent/test_obs.sh [KREPCTL [KREPD]]

K=${1:-$(dirname "$0")/krepctl}
D=${2:-$(dirname "$0")/krepd}
n=0
failed=0

ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
	fi
}

help() { # PROG ARGS...: "PROG ARGS --help" exits 0 with its usage
	local out rc

	out=$("$@" --help 2>/dev/null)
	rc=$?
	[ $rc = 0 ] && [[ $out == Usage:* ]]
	ok $? "$(echo "${1##*/}" "${@:2}") --help exits 0 with its usage"
}

usage() { # MESSAGE PROG ARGS...: exits 2, MESSAGE and "Usage:" on stderr
	local msg=$1 err rc

	shift
	err=$("$@" 2>&1 >/dev/null </dev/null)
	rc=$?
	[ $rc = 2 ] && [[ $err == *"$msg"* ]] && [[ $err == *Usage:* ]]
	ok $? "${1##*/} ${*:2} exits 2: $msg"
}

echo "TAP version 13"
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
echo "1..$n"
echo "# $((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
