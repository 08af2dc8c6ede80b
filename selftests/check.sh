#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check.sh - run the selftest suites in several qemu VMs side by side (on
# the host; `make check` calls it) and print one result for the whole run.
#
# Usage: selftests/check.sh [-j VMS] [--beside CMD] [SUITE...]
#
# The suites are those of selftests/suites.list (SUITE arguments, or the
# SUITES variable, pick some by name; ".sh" may be left out). VMS virtual
# machines (-j, KREP_CHECK_VMS, default 3) run side by side, each
# selftests/run_all.sh --claim: they take the suites from one queue,
# longest first by suites.list's typical times (secs=N), each the next
# suite no VM has taken (a directory made in the run's directory, shared
# with every VM), so that a VM that finishes early goes on with what is
# left and none waits on a share that took longer than expected. When
# two CPUs each would outnumber the host's, each VM has one
# (KREP_VM_SMP=1). Each run keeps its logs in a
# directory of its own, build/vm/check.XXXXXX (VM K's output, and its
# host-side suites', in vm.K.log, its console in console.K.log;
# build/vm/check.last points at the newest), so that runs side by side
# do not mix; what every suite prints is also shown, prefixed with its
# VM's number.
#
# A host-side suite ("host" in suites.list) boots VMs of its own, so it
# runs on the host: the host-side suites are shared out over the VMS
# VMs, and run on the host (run_all.sh --host, with KREP_CHECK_LOGDIR
# naming the run's directory for its files) before their VM boots, so
# that no more than VMS VMs run at once. Its result counts as any
# other's.
#
# --beside CMD runs the shell command CMD on the host while the VMs run
# (make check's sparse, checkpatch and agent tests, which would otherwise
# keep the VMs waiting on them, while the emulation leaves part of the
# host's CPUs idle); its output, kept in beside.log, is shown once the VMs
# are done, and a failure of it counts as one.
#
# At the end comes a table of every suite (its VM, passed, failed,
# skipped, seconds, the time suites.list expects and the VM's CPU use),
# each failed check again with its first diagnostics, then the line
#
#	selftests: N passed, M failed
#
# always, even when a VM died: a suite that started and never reported
# (kernel panic on a WARN or an oops, the VM's timeout) counts as one
# failure, and so does every suite that no VM began (the others take
# what a dead VM leaves, until their time limit). A skip
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
# shellcheck disable=SC2086 # SUITES is a list of words
[ $# -gt 0 ] || set -- ${SUITES:-}

# name<TAB>secs<TAB>timeout<TAB>path<TAB>where of the suites to run, in
# suites.list's order
mapfile -t suites < <("$here/suites.sh" "$@") || exit 2
[ ${#suites[@]} -gt 0 ] || { echo "check.sh: no suite to run" >&2; exit 2; }
[ "$vms" -le ${#suites[@]} ] || vms=${#suites[@]}

# The VMs take the suites from one queue, longest first (run_all.sh
# --claim: the next one no VM has taken), so that each goes on while any
# is left. The host-side suites are shared out over the VMs, longest
# first, each to the VM with the least time so far: host[K] runs on the
# host before VM K boots, so that no more than VMS VMs run at once.
declare -a load host
vmsuites=() vmsum=0 vmmax=0
for ((k = 0; k < vms; k++)); do
	load[k]=0
	host[k]=
done
while IFS=$'\t' read -r name secs t _ where; do
	if [ "$where" = host ]; then
		best=0
		for ((k = 1; k < vms; k++)); do
			[ "${load[k]}" -lt "${load[best]}" ] && best=$k
		done
		load[best]=$((load[best] + secs))
		host[best]+="$name "
	else
		vmsuites+=("$name")
		vmsum=$((vmsum + t))
		[ "$t" -le "$vmmax" ] || vmmax=$t
	fi
done < <(printf '%s\n' "${suites[@]}" | sort -t$'\t' -k2,2nr -s)

# A VM's limit: its part of the suites' timeouts, the longest of them
# (the one it may have begun last), boot and slack. A VM that dies
# leaves the rest to the others; one past this limit is stopped, and
# what it never began is counted as never run.
vm_timeout=$((120 + (vmsum + vms - 1) / vms + vmmax))

mkdir -p "$vmdir"
logdir=$(mktemp -d "$vmdir/check.XXXXXX") || exit 1
ln -sfn "${logdir##*/}" "$vmdir/check.last"
# One initramfs for all (run.sh would otherwise build it in every VM at once).
"$here/vm/mkinitrd.sh" --outdir "$vmdir" "$("$here/vm/run.sh" --print-kernel)" >/dev/null ||
	exit 1

# More guest CPUs than host CPUs in all (two VMs of two on two cores)
# made a process start four to five times slower under emulation: a
# guest CPU waiting for another (a TLB flush, an IPI, a lock) spins
# while the host has not scheduled the thread of the one it waits for.
# One host thread per VM taking two CPUs in turns (KREP_VM_TCG=single)
# still spun to the end of its turn on a lock the other CPU held, and
# paid for the IPIs: with one CPU per VM, whole runs of three VMs took
# 9 % less host CPU (614 against 678 CPU-s, two runs each, alternated)
# and every suite passed.
# So when the VMs' CPUs would outnumber the host's, each VM has one (a
# VM alone keeps two, on a thread each).
if [ -z "${KREP_VM_SMP:-}" ] && [ $((vms * 2)) -gt "$(nproc)" ]; then
	export KREP_VM_SMP=1
fi
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
claims=$logdir/claimed
mkdir "$claims" || exit 1
pids=()
for ((k = 0; k < vms; k++)); do
	what=()
	[ -z "${host[k]}" ] || what+=("on the host ${host[k]% }")
	[ ${#vmsuites[@]} = 0 ] || what+=("the suites it takes from the queue")
	echo "# vm $k: ${what[0]}${what[1]:+, then ${what[1]}}"
	log=$logdir/vm.$k.log
	{
		if [ -n "${host[k]}" ]; then
			# shellcheck disable=SC2086 # the names are words
			KREP_CHECK_LOGDIR=$logdir "$here/run_all.sh" --host ${host[k]} 2>&1
			echo "KREP-CHECK-HOST-RC=$?"
		fi
		# no boot if the others have taken every suite meanwhile
		taken=$(find "$claims" -mindepth 1 -maxdepth 1 -type d | wc -l)
		if [ "$taken" -lt ${#vmsuites[@]} ]; then
			"$here/vm/run.sh" --console "$logdir/console.$k.log" \
				--share "$claims" --timeout "$vm_timeout" -- \
				selftests/run_all.sh --claim "$claims" "${vmsuites[@]}" 2>&1
			echo "KREP-CHECK-VM-RC=$?"
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
declare -A began	# a suite's VM, once a log shows it began
row() { # NAME K P F S T C
	local secs

	secs=$(printf '%s\n' "${suites[@]}" | awk -F'\t' -v n="$1" '$1 == n { print $2 }')
	printf '%-26s %3s %6s %6s %6s %7s %8s %5s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$secs" "${7:--}"
	[ "$4" = 0 ] || failed_suites+=("$1")
	passed=$((passed + $3))
	failed=$((failed + $4))
	skipped=$((skipped + $5))
}
ends=()
for ((k = 0; k < vms; k++)); do
	log=$logdir/vm.$k.log
	vmrc=$(sed -n 's/^KREP-CHECK-VM-RC=//p' "$log" | tail -n 1)
	hostrc=$(sed -n 's/^KREP-CHECK-HOST-RC=//p' "$log" | tail -n 1)
	why=$(grep -a -m1 '^run.sh: ' "$log" | sed 's/^run.sh: \(FAIL: \)\{0,1\}//')
	ends[k]=${why:-VM exit status ${vmrc:-unknown}}
	# the suites in the order VM K (or its host-side run) began them
	while IFS= read -r name; do
		began[$name]=$k
		if [[ " ${host[k]}" = *" $name "* ]]; then
			ended="the host-side run's exit status ${hostrc:-unknown}"
		else
			ended=${ends[k]}
		fi
		res=$(grep -aE "^# suite ${name//./[.]}: [0-9]+ passed" "$log" | tail -n 1)
		if [ -n "$res" ]; then
			read -r p f s t c < <(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped \(exit [0-9]+, ([0-9]+)s(, cpu ([0-9]+)%)?\).*/\1 \2 \3 \4 \6/' <<<"$res")
			row "$name" "$k" "$p" "$f" "$s" "$t" "$c"
		else
			echo "# suite $name: FAIL: did not finish: $ended (vm $k, ${logdir#"$root"/}/console.$k.log)"
			row "$name" "$k" 0 1 0 - ""
		fi
	done < <(sed -n 's/^# suite: //p' "$log")
	if [ -n "$why" ] && [ "$vmrc" != 0 ]; then
		echo "# vm $k: $why"
	fi
done
# what no VM began: a host-side suite after its run ended, a VM's
# after every VM ended
for s in "${suites[@]}"; do
	IFS=$'\t' read -r name _ _ _ where <<<"$s"
	[ -z "${began[$name]:-}" ] || continue
	if [ "$where" = host ]; then
		for ((k = 0; k < vms; k++)); do
			[[ " ${host[k]}" != *" $name "* ]] || break
		done
		hostrc=$(sed -n 's/^KREP-CHECK-HOST-RC=//p' "$logdir/vm.$k.log" | tail -n 1)
		echo "# suite $name: FAIL: never ran: the host-side run's exit status ${hostrc:-unknown} (vm $k)"
	else
		ended=
		for ((k = 0; k < vms; k++)); do
			ended+="${ended:+; }vm $k: ${ends[k]}"
		done
		echo "# suite $name: FAIL: never ran: no VM took it ($ended)"
	fi
	row "$name" - 0 1 0 - ""
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
