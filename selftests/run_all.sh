#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run_all.sh - run every krep selftest suite, inside the test VM:
#
#	selftests/vm/run.sh -- selftests/run_all.sh [SUITE...]
#
# Usage: selftests/run_all.sh [--host] [--claim DIR] [SUITE...]
#
# The suites are those of selftests/suites.list, in its order (see
# selftests/suites.sh for its format); SUITE arguments pick some by name
# (as printed after "# suite:", ".sh" may be left out). make check runs
# them through selftests/check.sh, which shares them out over several VMs:
# with --claim DIR, the suites are taken longest first (suites.list's
# secs=), each only once this run has claimed it by making the directory
# DIR/NAME ("/" in NAME as "%"). Runs side by side given the same DIR (a
# directory of the host, each VM's run.sh --share) each take the next
# suite no other has taken, so each VM goes on while suites are left and
# none waits on a share that turned out longer than expected. A suite
# another run took is left out without a line; a run left with none to
# take says so and passes (check.sh counts the suites).
# Only the suites of one side run: those of the VM, or with --host those
# marked "host" in suites.list, which run on the host and boot VMs of
# their own (check.sh runs them so); the others are named and left out.
#
# Each suite runs in its own directory with stdin /dev/null and the time
# limit suites.list gives it; its output is shown indented. Its KTAP result
# lines count: "ok" passed, "not ok" failed (also "# TODO"), "# SKIP"
# skipped. A skip is also a failure: everything a suite needs is installed
# by scripts/deps.sh, so nothing may pass by skipping (a suite that skips
# as a whole, "1..0 # SKIP" or exit 4, counts one skip and one failure).
# One more failure for the first of: a timeout, a non-zero exit without a
# "not ok" line, "Bail out!", fewer results than planned, no results at
# all. One more for a kernel log (dmesg since the suite started) with a
# line of selftests/kernel-bad.ere (WARNING, BUG, oops, slub_debug's
# reports, "krep: leak", ...), and one more if the krep module is still
# loaded afterwards (it is then unloaded). Processes a suite leaves in its
# process group are killed. The suites load and unload krep themselves.
# With --host neither the kernel log nor the module is looked at: the
# kernel under test is that of the suite's VMs, whose consoles run.sh
# checks, and whose kernel logs the suite checks.
#
# After each suite: "# suite NAME: P passed, F failed, S skipped (exit RC,
# Ts, cpu C%)", C the share of the machine's CPU time busy while it ran
# (all CPUs: 100 is every CPU busy all along; a suite far below it mostly
# waits, on timers or on other processes). The last line is "selftests: N passed, M failed" (", K skipped"
# when K > 0); exit status 1 if M > 0 or nothing passed. Refuses to run
# outside the VM (KREP_VM=1, set by selftests/vm/run.sh) unless
# KREP_ALLOW_HOST=1, and with --host inside it.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
root=$(cd "$here/.." && pwd -P)
indent='  '

# the kernel log lines that fail a suite (one pattern a line)
KERNEL_BAD=$here/kernel-bad.ere

usage() {
	sed -n '/^# Usage:/,/^# Each suite/{/^# Each suite/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit "${1:-2}"
}

side=vm
claim=
while [ $# -gt 0 ]; do
	case $1 in
	--host) side=host; shift ;;
	--claim) [ $# -ge 2 ] || usage; claim=$2; shift 2 ;;
	-h|--help) usage 0 ;;
	--) shift; break ;;
	-*) usage ;;
	*) break ;;
	esac
done

if [ "$side" = host ] && [ "${KREP_VM:-}" = 1 ]; then
	echo "run_all.sh: --host: the host-side suites boot VMs; run them on the host" >&2
	exit 2
fi
if [ "$side" = vm ] && [ "${KREP_VM:-}" != 1 ] && [ "${KREP_ALLOW_HOST:-}" != 1 ]; then
	echo "run_all.sh: refusing to run outside the test VM;" \
	     "use selftests/vm/run.sh -- selftests/run_all.sh (or KREP_ALLOW_HOST=1)" >&2
	exit 2
fi

export PATH=/usr/sbin:/sbin:$PATH
export KREP_ROOT=$root

passed=0
failed=0
skipped=0
failed_suites=()

# the suites to run: "name<TAB>secs<TAB>timeout<TAB>path<TAB>where" lines
mapfile -t suites < <("$here/suites.sh" "$@") || exit 2
[ "${#suites[@]}" -gt 0 ] || { echo "run_all.sh: no suite to run" >&2; exit 2; }
if [ -n "$claim" ]; then
	if [ ! -d "$claim" ] || [ ! -w "$claim" ]; then
		echo "run_all.sh: --claim $claim: not a writable directory" >&2
		exit 2
	fi
	# longest first, suites.list's order among equals
	mapfile -t suites < <(printf '%s\n' "${suites[@]}" | sort -t$'\t' -k2,2nr -s)
fi

module_loaded() {
	grep -q '^krep ' /proc/modules 2>/dev/null
}

kmsg() { # at KERN_INFO: in the log, not on the console
	echo "<6>$*" >/dev/kmsg 2>/dev/null
}

# busy and all jiffies of every CPU so far (/proc/stat: idle and iowait
# are not busy)
cpu_jiffies() {
	awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i
			   print t - $5 - $6, t; exit }' /proc/stat
}

# KTAP counts of a suite's output: pass fail skip plan bail
count_results() {
	awk '
	/^(not )?ok( |$)/ {
		if ($0 ~ /#[ \t]*[Ss][Kk][Ii][Pp]/) skip++
		else if ($0 ~ /^not ok/) fail++
		else pass++
		next
	}
	/^1\.\.[0-9]+/ { split($0, a, /[^0-9.]/); sub(/^1\.\./, "", a[1]); plan = a[1] + 0
		if (plan == 0 && $0 ~ /#[ \t]*[Ss][Kk][Ii][Pp]/) skipall = 1 }
	/^Bail out!/ { bail = 1 }
	END { printf "%d %d %d %d %d %d\n", pass, fail, skip, plan, bail, skipall }
	' "$1"
}

if [ "$side" = vm ] && module_loaded; then
	echo "# krep was loaded before the first suite: unloading it"
	rmmod krep || echo "# rmmod krep failed"
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
idx=0

for s in "${suites[@]}"; do
	IFS=$'\t' read -r name _ t path where <<<"$s"
	if [ "$where" != "$side" ]; then
		if [ "$where" = host ]; then
			echo "# suite $name: not run here: a host-side suite (run_all.sh --host on the host; check.sh runs it)"
		else
			echo "# suite $name: not run here: a suite of the VM (run_all.sh in the VM)"
		fi
		continue
	fi
	# mkdir is atomic on the host: one of the runs sharing DIR makes it
	if [ -n "$claim" ] && ! err=$(mkdir "$claim/${name//\//%}" 2>&1); then
		[ -d "$claim/${name//\//%}" ] ||
			echo "# suite $name: cannot claim it: $err"
		continue
	fi
	idx=$((idx + 1))
	echo "# suite: $name"
	reasons=()
	p=0 f=0 sk=0 plan=0 bail=0 skipall=0

	if [ ! -f "$path" ] || [ ! -x "$path" ]; then
		echo "# suite $name: FAIL: $path is missing or not executable"
		failed=$((failed + 1))
		failed_suites+=("$name")
		continue
	fi

	mark="krep-selftests: suite $idx $name"
	[ "$side" = host ] || kmsg "$mark"
	start=$SECONDS
	cpu0=$(cpu_jiffies)
	: >"$out"
	# timeout makes itself the leader of a process group holding the suite
	(cd "$(dirname "$path")" && KREP_SUITE=$name exec timeout -k 10 "$t" "$path") \
		</dev/null >"$out" 2>&1 &
	pid=$!
	tail -n +1 -s 0.2 -f --pid="$pid" "$out" 2>/dev/null | sed -u "s/^/$indent/" &
	tail_pid=$!
	wait "$pid"
	rc=$?
	wait "$tail_pid"
	elapsed=$((SECONDS - start))
	# Anything the suite left running in its group goes now.
	if kill -0 -- "-$pid" 2>/dev/null; then
		echo "# suite $name: killing processes it left behind:" \
			"$(ps -eo pgid=,pid=,args= | awk -v g="$pid" '$1 == g { $1 = ""; printf "%s;", $0 }' | cut -c 1-300)"
		kill -TERM -- "-$pid" 2>/dev/null
		sleep 1
		kill -KILL -- "-$pid" 2>/dev/null
	fi

	read -r p f sk plan bail skipall <<<"$(count_results "$out")"

	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		reasons+=("timed out after ${t}s")
	elif [ "$rc" = 4 ] && [ "$f" = 0 ] && [ $((p + sk)) = 0 ]; then
		sk=1 # KSFT_SKIP, the whole suite
	elif [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		reasons+=("exit status $rc without a failed test")
	elif [ "$bail" = 1 ]; then
		reasons+=("bailed out")
	elif [ "$skipall" = 1 ]; then
		[ $((p + f + sk)) -gt 0 ] || sk=1
	elif [ "$plan" -gt 0 ] && [ $((p + f + sk)) -lt "$plan" ]; then
		reasons+=("$((p + f + sk)) results for a plan of $plan")
	elif [ $((p + f + sk)) = 0 ]; then
		reasons+=("no KTAP results")
	fi
	[ ${#reasons[@]} = 0 ] || f=$((f + 1))
	if [ "$sk" -gt 0 ]; then
		grep -aE '^(not )?ok .*#[[:space:]]*[Ss][Kk][Ii][Pp]|^1\.\.0' "$out" | head -n 5 |
			sed 's/^/# suite '"$name"': skipped: /'
		reasons+=("$sk skipped: a skip is a failure in make check")
		f=$((f + sk))
	fi

	if [ "$side" = host ]; then
		: # the suite's VMs: their consoles and kernel logs are its own checks
	elif klog=$(dmesg 2>/dev/null); then
		since=$(awk -v m="$mark" 'found { print } index($0, m) && substr($0, index($0, m) + length(m)) == "" { found = 1 }' <<<"$klog")
		[ -n "$since" ] || grep -qF "$mark" <<<"$klog" || since=$klog
		bad=$(grep -aE -f "$KERNEL_BAD" <<<"$since" | head -n 20)
		if [ -n "$bad" ]; then
			reasons+=("kernel log:")
			f=$((f + 1))
			while IFS= read -r l; do
				reasons+=("$indent$l")
			done <<<"$bad"
		fi
	else
		echo "# suite $name: cannot read the kernel log (dmesg)"
	fi

	if [ "$side" = vm ] && module_loaded; then
		reasons+=("module left loaded")
		f=$((f + 1))
		rmmod krep 2>&1 | sed "s/^/# /"
	fi

	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + sk))
	[ "$f" = 0 ] || failed_suites+=("$name")
	for r in "${reasons[@]}"; do
		echo "# suite $name: FAIL: $r"
	done
	read -r busy total <<<"$(cpu_jiffies)"
	read -r busy0 total0 <<<"$cpu0"
	echo "# suite $name: $p passed, $f failed, $sk skipped (exit $rc, ${elapsed}s, cpu $((100 * (busy - busy0) / (total - total0 > 0 ? total - total0 : 1)))%)"
done

if [ -n "$claim" ] && [ "$idx" = 0 ]; then
	echo "# every suite was claimed by another run"
elif [ "$passed" = 0 ]; then
	echo "# no test passed"
	failed=$((failed + 1))
fi
[ ${#failed_suites[@]} = 0 ] || echo "# failed suites: ${failed_suites[*]}"
summary="selftests: $passed passed, $failed failed"
[ "$skipped" = 0 ] || summary+=", $skipped skipped"
echo "$summary"
[ "$failed" = 0 ]
