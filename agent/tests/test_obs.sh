#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-only checks of the observability commands' command lines: krepctl
# watch and stats, krepd --metrics. --help exits 0 with the usage on
# stdout; bad command lines exit 2 with a message and the usage on stderr
# before anything is loaded or contacted (no module, no BPF needed). The
# commands themselves run in the VM (selftests/observability.sh). And
# krepd --metrics without the module: it serves krep_up 0 and stops on
# SIGTERM with status 0. KTAP (selftests/lib.sh).
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

# krepd --metrics without the module: krep_up 0, still answering, and a
# clean exit. (Skipped as passed where krep is loaded on the host.)
metrics_down() {
	local tmp port addr pid out n rc=1

	if [ -e /sys/module/krep ]; then
		ktap_diag "krep is loaded on this host: not checked"
		return 0
	fi
	tmp=$(mktemp -d) || return 1
	for n in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 20000))
		addr=127.0.0.1:$port
		"$D" --foreground --metrics "$addr" >"$tmp/out" 2>"$tmp/err" &
		pid=$!
		out=
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			out=$(scrape "$addr" 2>/dev/null) && [ -n "$out" ] && break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && break
		wait "$pid"		# the port was taken: another
	done
	# twice: the first scrape and a later one, both answered
	sleep 1.2
	out+=$'\n'$(scrape "$addr" 2>/dev/null)
	kill -TERM "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	if [ "$rc" = 0 ] && [ "$(grep -c '^HTTP/1.0 200 OK' <<<"$out")" = 2 ] &&
	   [ "$(grep -c '^krep_up 0' <<<"$out")" = 2 ] &&
	   grep -q '^krep_isr_shrinks_total 0' <<<"$out" &&
	   grep -q 'not loaded: serving krep_up 0' "$tmp/out" "$tmp/err"; then
		rc=0
	else
		ktap_diag "krepd exit $rc"
		head -n 20 "$tmp/out" "$tmp/err" | ktap_diag_stdin
		head -n 12 <<<"$out" | ktap_diag_stdin
		rc=1
	fi
	rm -rf "$tmp"
	return $rc
}

ktap_plan 16
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
metrics_down
ok $? "krepd --metrics without the module: krep_up 0 at two scrapes, exit 0 on SIGTERM"
ktap_finish
