#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# suites.sh - the selftest suites of selftests/suites.list, one per line:
#
#	NAME<TAB>SECS<TAB>TIMEOUT<TAB>PATH<TAB>WHERE
#
# Usage: selftests/suites.sh [SUITE...]
#
# suites.list has a line per suite, "PATH secs=N [timeout=S] [host]" ("#"
# starts a comment): PATH relative to selftests/ or to the repo root, N its
# typical time in seconds in the test VM under software emulation, S its
# time limit (default 2 x N + 60). WHERE is "vm" for a suite that runs in
# the test VM, "host" (option host) for one that runs on the host and
# boots VMs of its own (selftests/check.sh runs it; run_all.sh --host). NAME is PATH relative to selftests/ (or to
# the root, for a suite outside it). SUITE arguments pick suites by name
# (".sh" may be left out), in suites.list's order; a name that matches no
# suite is an error (exit 2). KREP_SUITES_LIST names another list (the
# runner's own test, selftests/test_runner.sh), whose PATHs are relative
# to its directory.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
root=$(cd "$here/.." && pwd -P)
list=${KREP_SUITES_LIST:-$here/suites.list}
dir=$(cd "$(dirname "$list")" 2>/dev/null && pwd -P) || dir=$here

[ -r "$list" ] || { echo "suites.sh: cannot read $list" >&2; exit 2; }

lines=()
n=0
while IFS= read -r line || [ -n "$line" ]; do
	n=$((n + 1))
	line=${line%%#*}
	read -r p opts <<<"$line" || true
	[ -n "${p:-}" ] || continue
	secs='' t='' where=vm
	for o in ${opts:-}; do
		case $o in
		secs=[0-9]*) secs=${o#secs=} ;;
		timeout=[0-9]*) t=${o#timeout=} ;;
		host) where=host ;;
		*) echo "suites.sh: suites.list:$n: unknown option '$o'" >&2; exit 2 ;;
		esac
	done
	case $secs in
	''|*[!0-9]*) echo "suites.sh: suites.list:$n: $p has no secs=N" >&2; exit 2 ;;
	esac
	[ -n "$t" ] || t=$((2 * secs + 60))
	if [ -e "$dir/$p" ] || [ ! -e "$root/$p" ]; then
		path=$dir/$p
		name=$p
	else
		path=$root/$p
		name=$p
	fi
	lines+=("$name"$'\t'"$secs"$'\t'"$t"$'\t'"$path"$'\t'"$where")
done <"$list"

if [ $# = 0 ]; then
	printf '%s\n' "${lines[@]}"
	exit 0
fi

rc=0
for a in "$@"; do
	found=0
	for l in "${lines[@]}"; do
		name=${l%%$'\t'*}
		if [ "$name" = "$a" ] || [ "$name" = "$a.sh" ] ||
		   [ "${name##*/}" = "$a" ] || [ "${name##*/}" = "$a.sh" ]; then
			found=1
		fi
	done
	if [ "$found" = 0 ]; then
		echo "suites.sh: no suite '$a' in suites.list" >&2
		rc=2
	fi
done
[ "$rc" = 0 ] || exit "$rc"
for l in "${lines[@]}"; do
	name=${l%%$'\t'*}
	for a in "$@"; do
		if [ "$name" = "$a" ] || [ "$name" = "$a.sh" ] ||
		   [ "${name##*/}" = "$a" ] || [ "${name##*/}" = "$a.sh" ]; then
			printf '%s\n' "$l"
			break
		fi
	done
done
