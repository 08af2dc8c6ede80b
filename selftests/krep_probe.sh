# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# krep_probe.sh - the shell side of selftests/krep_probe.py, for the suites
# that poll brokers and krepd often (failover.sh, replication.sh). Source
# it after lib.sh:
#
#   probe_start [VAR=VALUE...]  export these variables (KREP_PROBE_NS,
#                            KREP_PROBE_SOCK, ...: its environment) and
#                            start krep_probe.py in a long-lived
#                            selftests/pyserve.py (lib.sh's
#                            krep_pyserve_start, server "probe")
#   pv VAR QUESTION ARG...   VAR = its answer (what it printed), status its
#                            status; what it wrote on stderr is appended
#                            to file $KREP_PROBE_ERR (or goes to ours)
#   probe QUESTION ARG...    the same, the answer on stdout
#   probe_quit               end it now (before the namespaces it has
#                            sockets in go); later questions fail
#   probe_nap_open DIR       make DIR/nap, a FIFO nobody writes, for nap
#                            (its fd in $KREP_NAP)
#   nap SECONDS              sleep without a process
#   poll SECONDS CMD...      CMD every 0.2 s (a nap) until it succeeds;
#                            false once SECONDS have passed. With
#                            KREP_TIMES set, a line for each: how long
#   stamp TEXT               with KREP_TIMES set, TEXT and the time
#
# krep_probe.py's docstring lists the questions. Unlike krep_pyserve, a
# question here costs no fork: in the emulated VM a fork of the suite's
# shell costs about 20 ms of CPU (an exec of a small program 150 ms), and a
# suite asks hundreds of questions while the system under test needs that
# CPU. pv and probe write to the server's FIFO from this shell: a server
# that died would make that write raise SIGPIPE, which probe_start turns
# into exit 141 (the clean-up runs) instead of a silent death.

probe_start() {
	local kv

	for kv in "$@"; do
		# shellcheck disable=SC2163 # exported by name
		export "$kv"
	done
	krep_pyserve_start probe "" krep_probe || return 1
	trap 'exit 141' PIPE
}

pv() {
	local -n _pv_var=$1
	local _pv_in=${_krep_ps_in[probe]:-} _pv_out=${_krep_ps_out[probe]:-}
	local _pv_req _pv_l _pv_a= _pv_rc=1
	shift
	_pv_var=
	[ -n "$_pv_in" ] || { echo "pv: no probe" >&2; return 2; }
	printf -v _pv_req '%s\x1f' "$@"
	printf '%s\n' "${_pv_req%$'\x1f'}" >&"$_pv_in" || return 1
	while IFS= read -r _pv_l <&"$_pv_out"; do
		case $_pv_l in
		"1 "*) _pv_a+=${_pv_l#1 }$'\n' ;;
		"2 "*) printf '%s\n' "${_pv_l#2 }" >>"${KREP_PROBE_ERR:-/dev/stderr}" ;;
		$'\x1e '*) _pv_rc=${_pv_l#$'\x1e '}; break ;;
		esac
	done
	_pv_var=${_pv_a%$'\n'}
	return "$_pv_rc"
}

probe() {
	local _pr_a _pr_rc
	pv _pr_a "$@"
	_pr_rc=$?
	[ -z "$_pr_a" ] || printf '%s\n' "$_pr_a"
	return "$_pr_rc"
}

probe_quit() {
	local _pq
	pv _pq quit 2>/dev/null
	krep_pyserve_stop probe
}

probe_nap_open() {
	mkfifo "$1/nap" && exec {KREP_NAP}<>"$1/nap"
}

nap() { read -r -t "$1" -u "$KREP_NAP" _ || true; }

poll() {
	local deadline=$((SECONDS + $1)) t=${EPOCHREALTIME/./} rc=0
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || { rc=1; break; }
		nap 0.2
	done
	[ -z "${KREP_TIMES:-}" ] ||
		ktap_diag "at ${SECONDS}s: $(( (${EPOCHREALTIME/./} - t) / 1000 )) ms, status $rc: $*"
	return $rc
}
stamp() { [ -z "${KREP_TIMES:-}" ] || ktap_diag "at ${SECONDS}s: $*"; }
