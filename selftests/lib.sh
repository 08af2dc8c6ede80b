# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# lib.sh - helpers for krep's shell selftests. Source it, do not run it:
#
#	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
#	. "$here/lib.sh"
#
# Paths
#   KREP_ROOT                the repo root; KREP_KO, KREPCTL, KREPD
#   jq ARGS...               gojq ARGS (Debian's gojq, the same language):
#                            jq 1.6 compiles its builtins at every start,
#                            0.3 s of CPU in the emulated VM against gojq's
#                            0.08 s, and the suites start jq hundreds of
#                            times. gojq prints an object's keys sorted.
#
# KTAP output (kselftest style: "TAP version 13", "1..N", "ok N desc")
#   ktap_plan N              header and plan
#   ktap_ok DESC             ok N DESC
#   ktap_fail DESC           not ok N DESC
#   ktap_skip DESC REASON    ok N DESC # SKIP REASON
#   ktap_check DESC CMD...   ok if CMD succeeds, else not ok with CMD's
#                            status and output as "# " lines
#   ktap_expect_fail DESC CMD...  ok if CMD fails, else not ok (with output)
#   ktap_diag MSG...         MSG as "# " lines
#   ktap_diag_stdin          stdin as "# " lines; true if there was any
#   ktap_bail REASON         "Bail out! REASON", totals, exit 1
#   ktap_skip_all REASON     "1..0 # SKIP REASON", exit 4 (KSFT_SKIP); before
#                            ktap_plan
#   ktap_finish              "# Totals: pass:X fail:Y skip:Z"; a plan that
#                            was not met counts as a failure; exits 1 on
#                            failures, else 0
#
# Clean-up registry (LIFO, run on exit, errors ignored)
#   krep_cleanup_push CMD... one command (several words: exactly these
#                            arguments; one word: a shell snippet). The first
#                            push installs the EXIT/INT/TERM traps; a suite
#                            with a trap of its own calls krep_cleanup_run
#                            from it. Never push from a $(...) subshell.
#   krep_cleanup_run         run and forget the registered commands now
#
# Namespaces, module, misc
#   krep_netns_name BASE     print a unique netns name (krep-BASE-<pid>-<random>)
#   krep_netns_add VAR BASE  create such a netns, store its name in VAR and
#                            register its deletion
#   krep_mod_load [PARAM...] insmod $KREP_KO and register its unloading
#   krep_mod_unload          rmmod krep if it is loaded
#   krep_mod_loaded          true if krep is loaded
#   krep_wait_for SECONDS CMD...  poll CMD every 0.1 s until it succeeds;
#                            false on timeout
#   krep_kmsg_mark NAME      write a marker line into the kernel log
#   krep_kmsg_since NAME     the kernel log after that marker; without the
#                            marker (or the log) a "BUG:" line saying so and
#                            the whole log, and false: krep_kernel_bad then
#                            reports it, so no check passes on an empty log
#   krep_kernel_bad          filter stdin for kernel log lines that fail a
#                            test (selftests/kernel-bad.ere: WARNING, BUG,
#                            oops, slub_debug's reports, krep: leak, ...);
#                            true if there was any
#   krep_teardown_checks MARK  run the clean-up now, then two checks: the
#                            module is unloaded, and the kernel log since
#                            MARK has no line krep_kernel_bad reports
#   krep_pyserve_start NAME NS MODULE  a long-lived selftests/pyserve.py
#                            for selftests/MODULE.py in netns NS ("" for
#                            this one), called NAME; stopped on exit
#   krep_pyserve NAME ARGS...  MODULE's main(ARGS) in server NAME: its
#                            output on stdout and stderr, its status
#   krep_pyserve_stop NAME   end server NAME (before its netns goes)
#   krep_log_dump DIR [ARGS...]  selftests/kafka_log_dump.py's JSON of the
#                            log directory DIR, and its status, from the
#                            server "logdump" (krep_pyserve_start logdump
#                            "" kafka_log_dump, at set-up); the whole
#                            answer is read before any of it is written, so
#                            a reader that stops early (head) leaves
#                            nothing behind for the next call
#   krep_ext4_mount IMG SIZE DIR [MKFS_OPT...]  a new ext4 image IMG of
#                            SIZE (truncate's) mounted on DIR by a loop
#                            device, unmounted on exit; false on failure
#   krep_require_vm          skip the whole suite outside the test VM
#   krep_require_cmd CMD...  fail the whole suite if a command is missing
#                            (scripts/deps.sh installs them all: in make
#                            check a missing tool is a failure, not a skip)

[ -n "${KREP_LIB_SH:-}" ] && return 0
KREP_LIB_SH=1

jq() { gojq "$@"; }

# shellcheck disable=SC2034 # for the suites
{
	KREP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
	KREP_KO=$KREP_ROOT/kmod/krep.ko
	KREPCTL=$KREP_ROOT/agent/krepctl/krepctl
	KREPD=$KREP_ROOT/agent/krepd/krepd
}
# iproute2's ip, not busybox's
case ":$PATH:" in
:/usr/sbin:/sbin:*) ;;
*) PATH=/usr/sbin:/sbin:$PATH ;;
esac
export PATH

_ktap_n=0
_ktap_pass=0
_ktap_fail=0
_ktap_skip=0
_ktap_plan=

ktap_plan() {
	_ktap_plan=$1
	echo "TAP version 13"
	echo "1..$1"
}

ktap_diag() {
	local line

	while IFS= read -r line; do
		echo "# $line"
	done <<<"$*"
}

ktap_diag_stdin() {
	local line any=1

	while IFS= read -r line || [ -n "$line" ]; do
		echo "# $line"
		any=0
	done
	return $any
}

ktap_ok() {
	_ktap_n=$((_ktap_n + 1))
	_ktap_pass=$((_ktap_pass + 1))
	echo "ok $_ktap_n $*"
}

ktap_fail() {
	_ktap_n=$((_ktap_n + 1))
	_ktap_fail=$((_ktap_fail + 1))
	echo "not ok $_ktap_n $*"
}

ktap_skip() {
	_ktap_n=$((_ktap_n + 1))
	_ktap_skip=$((_ktap_skip + 1))
	echo "ok $_ktap_n $1 # SKIP ${2:-}"
}

ktap_check() {
	local desc=$1 out rc
	shift

	out=$("$@" 2>&1) && rc=0 || rc=$?
	if [ "$rc" = 0 ]; then
		ktap_ok "$desc"
		return 0
	fi
	ktap_diag "exit $rc: $*"
	[ -z "$out" ] || ktap_diag "$out"
	ktap_fail "$desc"
	return 1
}

ktap_expect_fail() {
	local desc=$1 out rc
	shift

	out=$("$@" 2>&1) && rc=0 || rc=$?
	if [ "$rc" != 0 ]; then
		ktap_ok "$desc"
		return 0
	fi
	ktap_diag "succeeded but should fail: $*"
	[ -z "$out" ] || ktap_diag "$out"
	ktap_fail "$desc"
	return 1
}

_ktap_totals() {
	echo "# Totals: pass:$_ktap_pass fail:$_ktap_fail skip:$_ktap_skip"
}

ktap_bail() {
	echo "Bail out! $*"
	_ktap_totals
	exit 1
}

ktap_skip_all() {
	echo "TAP version 13"
	echo "1..0 # SKIP $*"
	exit 4
}

ktap_finish() {
	if [ -n "$_ktap_plan" ] && [ "$_ktap_n" != "$_ktap_plan" ]; then
		ktap_diag "planned $_ktap_plan tests, ran $_ktap_n"
		_ktap_fail=$((_ktap_fail + 1))
	fi
	_ktap_totals
	[ "$_ktap_fail" = 0 ] || exit 1
	exit 0
}

_krep_cleanups=()

krep_cleanup_run() {
	local i

	for ((i = ${#_krep_cleanups[@]} - 1; i >= 0; i--)); do
		eval "${_krep_cleanups[i]}" >/dev/null 2>&1 || true
	done
	_krep_cleanups=()
}

krep_cleanup_push() {
	if [ ${#_krep_cleanups[@]} = 0 ] && [ -z "${_krep_traps:-}" ]; then
		_krep_traps=1
		trap krep_cleanup_run EXIT
		trap 'exit 130' INT
		trap 'exit 143' TERM
	fi
	if [ $# = 1 ]; then
		_krep_cleanups+=("$1")
	else
		_krep_cleanups+=("$(printf '%q ' "$@")")
	fi
}

krep_netns_name() {
	local name

	# $RANDOM is reseeded in every subshell: unique even from $(...)
	while name=krep-$1-$$-$RANDOM && [ -e "/run/netns/$name" ]; do :; done
	echo "$name"
}

krep_netns_add() {
	local -n _ns_var=$1
	local name

	name=$(krep_netns_name "$2")
	ip netns add "$name" || return 1
	krep_cleanup_push ip netns del "$name"
	# shellcheck disable=SC2034 # nameref
	_ns_var=$name
}

krep_mod_loaded() {
	grep -q '^krep ' /proc/modules
}

krep_mod_unload() {
	! krep_mod_loaded || rmmod krep
}

krep_mod_load() {
	insmod "$KREP_KO" "$@" || return
	krep_cleanup_push krep_mod_unload
}

# krep_parked PID: PID waits for the answer of a netlink request that
# krep.ko parked (kmod/nl_park.c: an acks=all PRODUCE, a FETCH with a
# wait): its send has returned and it sleeps in netlink's recvmsg, or in
# ppoll (krepctl with a stop signal set). A request answered at once has
# its answer queued before its send returns, so it never sleeps there.
krep_parked() {
	grep -qE 'netlink_recvmsg|do_sys_poll' "/proc/$1/stack" 2>/dev/null
}

# krep_nap SECONDS: sleep without a process. In the emulated VM an exec of
# sleep costs more CPU than the 0.1 s it waits, CPU the system under test
# needs: a read that times out on a FIFO nobody writes (opened once, its
# name removed at once) waits instead; sleep if the FIFO cannot be made.
_krep_nap_fd=
krep_nap() {
	local d

	if [ -z "$_krep_nap_fd" ]; then
		d=$(mktemp -d) && mkfifo "$d/nap" && exec {_krep_nap_fd}<>"$d/nap"
		rm -rf "$d"
		[ -n "$_krep_nap_fd" ] || { sleep "$1"; return 0; }
	fi
	read -r -t "$1" -u "$_krep_nap_fd" _ || true
}

krep_wait_for() {
	local deadline=$((SECONDS + $1))
	shift

	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		krep_nap 0.1
	done
}

krep_kmsg_mark() {
	echo "<6>krep-selftests: mark $1" >/dev/kmsg
}

# Never nothing when the log cannot tell: without the mark (the ring buffer
# wrapped, the mark was never written) a first line saying so and then the
# whole log, as run_all.sh does; without a log at all, that line alone. Each
# such line has "BUG:", so krep_kernel_bad reports it and no "no kernel
# warning" check passes for want of a log. False in both cases.
krep_kmsg_since() {
	local log

	if ! log=$(dmesg 2>&1); then
		echo "krep-selftests: BUG: cannot read the kernel log: $log"
		return 1
	fi
	awk -v m="krep-selftests: mark $1" '
	found { print; next }
	index($0, m) && substr($0, index($0, m) + length(m)) == "" { found = 1; next }
	{ before[n++] = $0 }
	END {
		if (found)
			exit 0
		print "krep-selftests: BUG: no \"" m "\" in the kernel log (wrapped, or never written); all of it follows"
		for (i = 0; i < n; i++)
			print before[i]
		exit 1
	}' <<<"$log"
}

krep_require_vm() {
	[ "${KREP_VM:-}" = 1 ] ||
		ktap_skip_all "not in the test VM (run it with selftests/vm/run.sh)"
}

krep_require_cmd() {
	local c

	for c in "$@"; do
		[ "$c" = jq ] && c=gojq
		command -v "$c" >/dev/null 2>&1 && continue
		echo "TAP version 13"
		echo "1..1"
		echo "not ok 1 $c is installed (scripts/deps.sh installs it)"
		exit 1
	done
}

krep_ext4_mount() {
	local img=$1 size=$2 dir=$3

	shift 3
	modprobe loop 2>/dev/null
	modprobe ext4 2>/dev/null
	mkdir -p "$dir" && truncate -s "$size" "$img" &&
		mkfs.ext4 -q -F "$@" "$img" && mount -o loop "$img" "$dir" ||
		return 1
	krep_cleanup_push umount "$dir"
}

krep_kernel_bad() {
	grep -aE -f "$KREP_ROOT/selftests/kernel-bad.ere"
}

krep_teardown_checks() {
	local bad

	krep_cleanup_run
	if krep_mod_loaded; then
		ktap_fail "rmmod after the scenarios"
	else
		ktap_ok "rmmod after the scenarios"
	fi
	bad=$(krep_kmsg_since "$1" | krep_kernel_bad)
	if [ -n "$bad" ]; then
		ktap_diag "$bad"
		ktap_fail "no kernel warning, oops or leak"
	else
		ktap_ok "no kernel warning, oops or leak"
	fi
}

# Long-lived Python helpers: a Python start costs ~0.5 s in the VM. Each
# server is selftests/pyserve.py on a pair of FIFOs; its fds are kept in
# _krep_ps_in[NAME] and _krep_ps_out[NAME].
declare -A _krep_ps_in _krep_ps_out _krep_ps_pid

krep_pyserve_start() {
	local name=$1 ns=$2 mod=$3 dir fin fout f
	local -a pre=()

	dir=$(mktemp -d) || return 1
	krep_cleanup_push rm -rf "$dir"
	mkfifo "$dir/in" "$dir/out" || return 1
	[ -z "$ns" ] || pre=(ip netns exec "$ns")
	# without the other servers' FIFOs: a server holding another's input
	# would keep it from seeing EOF when krep_pyserve_stop closes it
	(
		for f in "${_krep_ps_in[@]}" "${_krep_ps_out[@]}"; do
			eval "exec $f>&-"
		done
		exec "${pre[@]}" /usr/bin/python3 \
			"$KREP_ROOT/selftests/pyserve.py" "$mod"
	) <"$dir/in" >"$dir/out" &
	_krep_ps_pid[$name]=$!
	exec {fin}>"$dir/in" {fout}<"$dir/out" || return 1
	_krep_ps_in[$name]=$fin
	_krep_ps_out[$name]=$fout
	krep_cleanup_push "krep_pyserve_stop $name"
}

krep_pyserve() {
	local name=$1 line rc=1
	shift
	[ -n "${_krep_ps_in[$name]:-}" ] || { echo "krep_pyserve: no server $name" >&2; return 2; }
	(IFS=$'\x1f'; printf '%s\n' "$*") >&"${_krep_ps_in[$name]}" || return 1
	while IFS= read -r line <&"${_krep_ps_out[$name]}"; do
		case $line in
		"1 "*) printf '%s\n' "${line#1 }" ;;
		"2 "*) printf '%s\n' "${line#2 }" >&2 ;;
		$'\x1e '*) rc=${line#$'\x1e '}; break ;;
		esac
	done
	return "$rc"
}

krep_log_dump() {
	local out rc

	out=$(krep_pyserve logdump "$@")
	rc=$?
	printf '%s\n' "$out"
	return "$rc"
}

krep_pyserve_stop() {
	local name=$1
	[ -n "${_krep_ps_in[$name]:-}" ] || return 0
	eval "exec ${_krep_ps_in[$name]}>&- ${_krep_ps_out[$name]}<&-"
	wait "${_krep_ps_pid[$name]}" 2>/dev/null
	unset "_krep_ps_in[$name]" "_krep_ps_out[$name]" "_krep_ps_pid[$name]"
}

