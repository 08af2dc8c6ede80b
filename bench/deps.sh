#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deps.sh - install the Debian packages that only `make bench` needs: the
# peers it measures krep against and their client libraries. Kept apart
# from scripts/deps.sh so that `make check` never pulls them in.
#
# Usage: bench/deps.sh [--check|--list]
#
#   (none)    install what is missing (apt-get, as root or through sudo);
#             silent and quick when everything is there
#   --check   exit 1, naming what is missing, if anything is
#   --list    print the package list

set -eu

PKGS=(
	redis-server redis-tools libhiredis-dev	# Redis 7, WAIT
	nats-server libnats-dev			# NATS JetStream
	etcd-server etcd-client			# etcd 3.4
	iperf3 python3				# calibration
)

usage() {
	sed -n '/^# Usage:/,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}

missing() {
	local installed p

	installed=$(dpkg-query -W -f '${Package} ${db:Status-Status}\n' "${PKGS[@]}" 2>/dev/null |
		awk '$2 == "installed" { sub(/:.*/, "", $1); print $1 }') || true
	for p in "${PKGS[@]}"; do
		grep -qxF "$p" <<<"$installed" || echo "$p"
	done
}

mode=install
case ${1:-} in
"") ;;
--check) mode=check ;;
--list) printf '%s\n' "${PKGS[@]}"; exit 0 ;;
*) usage ;;
esac
[ $# -le 1 ] || usage

command -v dpkg-query >/dev/null || { echo "bench/deps.sh: not a Debian system (no dpkg-query)" >&2; exit 1; }

mapfile -t need < <(missing)
[ ${#need[@]} = 0 ] && exit 0

if [ "$mode" = check ]; then
	echo "bench/deps.sh: missing packages: ${need[*]}" >&2
	exit 1
fi

if [ "$(id -u)" = 0 ]; then
	sudo=()
elif command -v sudo >/dev/null; then
	sudo=(sudo)
else
	echo "bench/deps.sh: missing packages: ${need[*]}; run as root (no sudo here)" >&2
	exit 1
fi

echo "bench/deps.sh: installing ${need[*]}" >&2
# The servers' packages start their services on the host when installed:
# the benchmark runs its own instances in the VM, so keep them from
# starting (policy-rc.d answers 101 = action forbidden) where we can.
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq \
	--no-install-recommends "${need[@]}"

mapfile -t need < <(missing)
if [ ${#need[@]} != 0 ]; then
	echo "bench/deps.sh: still missing after apt-get: ${need[*]}" >&2
	exit 1
fi
