#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check.sh - run the selftest suites in several qemu VMs side by side (on
# the host; `make check` calls it) and print one result for the whole run.
#
# Usage: selftests/check.sh [-j VMS] [--beside CMD] [SUITE...]
#
# The suites are those of selftests/suites.list (SUITE arguments, or the
# SUITES variable, pick some by name; ".sh" may be left out). Each line
# there gives a suite's typical time (secs=N); the suites are shared out
# over VMS virtual machines (-j, KREP_CHECK_VMS, default 3) so that each
# VM's total is about the same, longest first, and every VM runs its share
# with selftests/run_all.sh (under emulation on one host thread per VM
# when the VMs' CPUs outnumber the host's: KREP_VM_TCG=single). Each run keeps its logs in a directory of its
# own, build/vm/check.XXXXXX (VM K's output in vm.K.log, its console in
# console.K.log; build/vm/check.last points at the newest), so that runs
# side by side do not mix; what every suite prints is also shown, prefixed
# with its VM's number.
#
# A host-side suite ("host" in suites.list) boots VMs of its own, so it
# runs on the host: it is shared out like the others, and runs in its
# VM's turn, once that VM is done (run_all.sh --host, with
# KREP_CHECK_LOGDIR naming the run's directory for its files), so that no
# more than VMS VMs run at once. Its result counts as any other's.
#
# --beside CMD runs the shell command CMD on the host while the VMs run
# (make check's sparse, checkpatch and agent tests, which would otherwise
# keep the VMs waiting on them, while the emulation leaves part of the
# host's CPUs idle); its output, kept in beside.log, is shown once the VMs
# are done, and a failure of it counts as one.
#
# At the end comes a table of every suite (VM, seconds, passed, failed,
# skipped, and the time suites.list expects), each failed check again
# with its first diagnostics, then the line
#
#	selftests: N passed, M failed
#
# always, even when a VM died: a suite that started and never reported
# (kernel panic on a WARN or an oops, the VM's timeout) counts as one
# failure, and so does every suite of that VM that never started. A skip
# is a failure (run_all.sh counts it so), and so is a run with no passed
# test. Exit status 0 only when M is 0.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
root=$(cd "$here/.." && pwd -P)
vmdir=$root/build/vm
vms=${KREP_CHECK_VMS:-3}
beside=

usage() {
	sed -n '/^# Usage:/,/^# The suites/{/^# The suites/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	-j) [ $# -ge 2 ] || usage; vms=$2; shift 2 ;;
	--beside) [ $# -ge 2 ] || usage; beside=$2; shift 2 ;;
	-h|--help) usage ;;
	--) shift; break ;;
	-*) usage ;;
	*) break ;;
	esac
done
case $vms in
''|*[!0-9]*|0) echo "check.sh: -j wants a positive number of VMs" >&2; exit 2 ;;
esac
# shellcheck disable=SC2206 # SUITES is a list of words
[ $# -gt 0 ] || set -- ${SUITES:-}

# name<TAB>secs<TAB>timeout<TAB>path<TAB>where of the suites to run, in
# suites.list's order
mapfile -t suites < <("$here/suites.sh" "$@") || exit 2
[ ${#suites[@]} -gt 0 ] || { echo "check.sh: no suite to run" >&2; exit 2; }
[ "$vms" -le ${#suites[@]} ] || vms=${#suites[@]}

# Longest first, each to the VM with the least time so far: share[K] is
# what runs in VM K, host[K] what runs on the host in its turn.
declare -a load share host
for ((k = 0; k < vms; k++)); do
	load[k]=0
	share[k]=
	host[k]=
done
while IFS=$'\t' read -r name secs _ _ where; do
	best=0
	for ((k = 1; k < vms; k++)); do
		[ "${load[k]}" -lt "${load[best]}" ] && best=$k
	done
	load[best]=$((load[best] + secs))
	if [ "$where" = host ]; then
		host[best]+="$name "
	else
		share[best]+="$name "
	fi
done < <(printf '%s\n' "${suites[@]}" | sort -t$'\t' -k2,2nr -s)

# A VM's limit: its suites' timeouts, plus boot and slack.
vm_timeout() { # NAMES...
	local n t=120 s

	for n in "$@"; do
		s=$(printf '%s\n' "${suites[@]}" | awk -F'\t' -v n="$n" '$1 == n { print $3 }')
		t=$((t + s))
	done
	echo "$t"
}

mkdir -p "$vmdir"
logdir=$(mktemp -d "$vmdir/check.XXXXXX") || exit 1
ln -sfn "${logdir##*/}" "$vmdir/check.last"
# One initramfs for all (run.sh would otherwise build it in every VM at once).
"$here/vm/mkinitrd.sh" --outdir "$vmdir" "$("$here/vm/run.sh" --print-kernel)" >/dev/null ||
	exit 1

# Under emulation, more guest CPUs than host CPUs in all (two VMs of two
# on two cores) made a process start four to five times slower: a guest
# CPU waiting for another (a TLB flush, an IPI) spins while the host has
# not scheduled the thread of the one it waits for. One host thread per
# VM, taking its CPUs in turns, does not wait so (KREP_VM_TCG=single; a
# VM alone keeps one thread per CPU).
if [ -z "${KREP_VM_TCG:-}" ] &&
   [ $((vms * ${KREP_VM_SMP:-2})) -gt "$(nproc)" ]; then
	export KREP_VM_TCG=single
fi

start=$SECONDS
if [ -n "$beside" ]; then
	echo "# beside the VMs, on the host: $beside"
	{
		bstart=$SECONDS
		bash -c "$beside"
		echo "KREP-CHECK-BESIDE-RC=$? $((SECONDS - bstart))"
	} >"$logdir/beside.log" 2>&1 </dev/null &
fi
pids=()
for ((k = 0; k < vms; k++)); do
	# shellcheck disable=SC2086 # the names are words
	set -- ${share[k]}
	echo "# vm $k: $*${host[k]:+, then on the host: ${host[k]% }} (about ${load[k]}s)"
	log=$logdir/vm.$k.log
	{
		if [ $# -gt 0 ]; then
			"$here/vm/run.sh" --console "$logdir/console.$k.log" \
				--timeout "$(vm_timeout "$@")" -- selftests/run_all.sh "$@" 2>&1
			echo "KREP-CHECK-VM-RC=$?"
		fi
		if [ -n "${host[k]}" ]; then
			# shellcheck disable=SC2086 # the names are words
			KREP_CHECK_LOGDIR=$logdir "$here/run_all.sh" --host ${host[k]} 2>&1
			echo "KREP-CHECK-HOST-RC=$?"
		fi
	} >"$log" 2>&1 &
	pids+=($!)
	tail -n +1 -s 0.5 -f --pid=$! "$log" 2>/dev/null |
		grep --line-buffered -avE '^KREP-CHECK-(VM|HOST)-RC=' | sed -u "s/^/[$k] /" &
done
wait "${pids[@]}"
vms_elapsed=$((SECONDS - start))
wait
elapsed=$((SECONDS - start))
beside_rc=
if [ -n "$beside" ]; then
	echo
	grep -av '^KREP-CHECK-BESIDE-RC=' "$logdir/beside.log" | sed 's/^/[host] /'
	read -r beside_rc beside_secs < <(sed -n 's/^KREP-CHECK-BESIDE-RC=//p' "$logdir/beside.log")
fi

# Per suite: passed failed skipped seconds, or why it has no result.
echo
printf '%-26s %3s %6s %6s %6s %7s %8s %5s\n' suite vm passed failed skipped seconds expected cpu%
passed=0 failed=0 skipped=0 failed_suites=()
for ((k = 0; k < vms; k++)); do
	log=$logdir/vm.$k.log
	vmrc=$(sed -n 's/^KREP-CHECK-VM-RC=//p' "$log" | tail -n 1)
	hostrc=$(sed -n 's/^KREP-CHECK-HOST-RC=//p' "$log" | tail -n 1)
	why=$(grep -a -m1 '^run.sh: ' "$log" | sed 's/^run.sh: \(FAIL: \)\{0,1\}//')
	for name in ${share[k]} ${host[k]}; do
		if [[ " ${host[k]}" = *" $name "* ]]; then
			ended="the host-side run's exit status ${hostrc:-unknown}"
		else
			ended=${why:-VM exit status ${vmrc:-unknown}}
		fi
		secs=$(printf '%s\n' "${suites[@]}" | awk -F'\t' -v n="$name" '$1 == n { print $2 }')
		res=$(grep -aE "^# suite $(sed 's/[.]/[.]/g' <<<"$name"): [0-9]+ passed" "$log" | tail -n 1)
		if [ -n "$res" ]; then
			read -r p f s t c < <(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped \(exit [0-9]+, ([0-9]+)s(, cpu ([0-9]+)%)?\).*/\1 \2 \3 \4 \6/' <<<"$res")
		elif grep -aqxF "# suite: $name" "$log"; then
			p=0 f=1 s=0 t=- c=
			echo "# suite $name: FAIL: did not finish: $ended (vm $k, ${logdir#"$root"/}/console.$k.log)"
		else
			p=0 f=1 s=0 t=- c=
			echo "# suite $name: FAIL: never ran: $ended (vm $k)"
		fi
		[ "$f" = 0 ] || failed_suites+=("$name")
		printf '%-26s %3s %6s %6s %6s %7s %8s %5s\n' "$name" "$k" "$p" "$f" "$s" "$t" "$secs" "${c:--}"
		passed=$((passed + p))
		failed=$((failed + f))
		skipped=$((skipped + s))
	done
	if [ -n "$why" ] && [ "$vmrc" != 0 ]; then
		echo "# vm $k: $why"
	fi
done
echo "# wall time ${elapsed}s, the VMs' ${vms_elapsed}s in $vms VMs"
if [ -n "$beside" ]; then
	if [ "${beside_rc:-}" = 0 ]; then
		echo "# beside the VMs: ok in ${beside_secs}s: $beside"
	else
		echo "# beside the VMs: FAIL (exit ${beside_rc:-unknown}): $beside"
		failed=$((failed + 1))
		failed_suites+=("beside the VMs")
	fi
fi
if [ "$passed" = 0 ]; then
	echo "# no test passed"
	failed=$((failed + 1))
fi
# the failed checks again, each with its first diagnostics, where the
# last lines of a long log (all a CI summary may keep) show them
for name in "${failed_suites[@]}"; do
	for ((k = 0; k < vms; k++)); do
		awk -v n="$name" '
			$0 == "# suite: " n { on = 1; next }
			index($0, "# suite " n ": ") == 1 { on = 0 }
			!on { next }
			{ sub(/^[ \t]+/, "") }
			/^not ok / { print "# " n ": " $0; diag = 6; next }
			diag > 0 && /^#/ { print "#   " $0; diag--; next }
			{ diag = 0 }' "$logdir/vm.$k.log"
	done
done
[ ${#failed_suites[@]} = 0 ] || echo "# failed suites: ${failed_suites[*]}"
summary="selftests: $passed passed, $failed failed"
[ "$skipped" = 0 ] || summary+=", $skipped skipped"
echo "$summary"
[ "$failed" = 0 ]
