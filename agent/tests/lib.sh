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
#   scrape ADDR              GET /metrics from ADDR (A.B.C.D:PORT) over
#                            bash's /dev/tcp: the whole response
#   scrape_body ADDR FILE    the same, the body alone into FILE, if the
#                            answer is a 200
#   free_port                a TCP port of 127.0.0.1 nothing listens on
#   etcd_start DIR           a one-member etcd on loopback (Debian's
#                            etcd-server; scripts/deps.sh installs it), its
#                            data and log in DIR: sets EP (its URL) and
#                            ETCD_PID; bails out unless it answers
#   ectl ARGS...             etcdctl ARGS against $EP

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

scrape() {
	exec 3<>"/dev/tcp/${1%:*}/${1##*:}" || return 1
	printf 'GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" >&3
	cat <&3
	exec 3<&-
}

scrape_body() {
	local out

	out=$(scrape "$1" 2>/dev/null) && [[ $out == "HTTP/1.0 200 OK"* ]] || return 1
	sed '1,/^\r$/d' <<<"$out" >"$2"
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

etcd_start() {
	local port peer

	command -v etcd >/dev/null ||
		ktap_bail "no etcd (scripts/deps.sh installs etcd-server)"
	port=$(free_port)
	peer=$(free_port)
	while [ "$peer" = "$port" ]; do
		peer=$(free_port)
	done
	EP=http://127.0.0.1:$port
	peer=http://127.0.0.1:$peer
	etcd --name t --data-dir "$1/etcd" --listen-client-urls "$EP" \
		--advertise-client-urls "$EP" --listen-peer-urls "$peer" \
		--initial-advertise-peer-urls "$peer" \
		--initial-cluster "t=$peer" --log-level error >"$1/etcd.log" 2>&1 &
	# shellcheck disable=SC2034 # the caller's cleanup kills it
	ETCD_PID=$!
	krep_wait_for 20 eval 'ectl put /probe x >/dev/null 2>&1' ||
		ktap_bail "etcd did not start: $(tail -n 3 "$1/etcd.log")"
}

ectl() {
	ETCDCTL_API=3 etcdctl --endpoints "$EP" --command-timeout=2s "$@"
}
