#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deps.sh - install the Debian packages krep's build, VM and tests need.
#
# Usage: scripts/deps.sh [--bench] [--check|--list]
#
#   (none)    install what is missing (apt-get, as root or through sudo);
#             silent and quick when everything is there
#   --bench   the packages only `make bench` needs instead: the peers it
#             measures krep against and their client libraries (never
#             pulled in by make check)
#   --check   exit 1, naming what is missing, if anything is; installs nothing
#   --list    print the package list

set -eu

PKGS=(
	build-essential make gcc pkg-config perl	# build
	libnl-3-dev libnl-genl-3-dev libbpf-dev clang llvm
	libsodium-dev				# krepd --relay's crypto
	zlib1g-dev				# fuzz_genl's reproducers
	linux-headers-amd64 linux-source-6.1 sparse
	linux-image-amd64 qemu-system-x86 busybox-static	# the test VM
	kmod cpio xz-utils zstd
	iproute2 bpftrace bpftool jq gojq python3 util-linux	# tests and tools
	kcat python3-kafka nodejs		# Kafka clients (KafkaJS: npm)
	librdkafka-dev python3-confluent-kafka
	libcurl4-openssl-dev libjson-c-dev	# krepd --etcd
	etcd-server etcd-client			# controller_ha.sh
	e2fsprogs				# logdir.sh, powerloss.sh: ext4 disk images
	dmsetup					# powerloss.sh: a slow disk (dm-delay)
)
# npm comes with some nodejs builds (NodeSource's) and is a package of its
# own in Debian's: ask apt for it only when there is no npm command
command -v npm >/dev/null || PKGS+=(npm)
KAFKAJS=kafkajs@2.2.4
NPM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/npm

# KafkaJS for selftests/kafkajs_client.js, in build/npm (not committed)
npm_deps() {
	[ -f "$NPM_DIR/node_modules/kafkajs/package.json" ] && return 0
	if [ "$mode" = check ]; then
		echo "deps.sh: missing npm package $KAFKAJS" >&2
		return 1
	fi
	echo "deps.sh: installing $KAFKAJS from npm into $NPM_DIR" >&2
	mkdir -p "$NPM_DIR"
	npm install --silent --no-audit --no-fund --prefix "$NPM_DIR" "$KAFKAJS"
}

BENCH_PKGS=(
	redis-server redis-tools libhiredis-dev	# Redis 7, WAIT
	nats-server libnats-dev			# NATS JetStream
	etcd-server etcd-client			# etcd 3.4
	iperf3 python3				# calibration
	librdkafka-dev				# krep through its Kafka port
)

usage() {
	sed -n '/^# Usage:/,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}

# The packages of PKGS that are not installed.
missing() {
	local installed p

	installed=$(dpkg-query -W -f '${Package} ${db:Status-Status}\n' "${PKGS[@]}" 2>/dev/null |
		awk '$2 == "installed" { sub(/:.*/, "", $1); print $1 }') || true
	for p in "${PKGS[@]}"; do
		grep -qxF "$p" <<<"$installed" || echo "$p"
	done
}

mode=install
if [ "${1:-}" = --bench ]; then
	PKGS=("${BENCH_PKGS[@]}")
	shift
fi
case ${1:-} in
"") ;;
--check) mode=check ;;
--list) printf '%s\n' "${PKGS[@]}"; exit 0 ;;
*) usage ;;
esac
[ $# -le 1 ] || usage

command -v dpkg-query >/dev/null || { echo "deps.sh: not a Debian system (no dpkg-query)" >&2; exit 1; }

mapfile -t need < <(missing)
if [ ${#need[@]} = 0 ]; then
	[ "${PKGS[0]}" = redis-server ] || npm_deps
	exit
fi

if [ "$mode" = check ]; then
	echo "deps.sh: missing packages: ${need[*]}" >&2
	exit 1
fi

if [ "$(id -u)" = 0 ]; then
	sudo=()
elif command -v sudo >/dev/null; then
	sudo=(sudo)
else
	echo "deps.sh: missing packages: ${need[*]}; run as root (no sudo here)" >&2
	exit 1
fi

echo "deps.sh: installing ${need[*]}" >&2
# RUNLEVEL=1 keeps the bench servers' packages from starting their
# services on the host: the benchmark runs its own instances in the VM.
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq \
	--no-install-recommends "${need[@]}"

mapfile -t need < <(missing)
if [ ${#need[@]} != 0 ]; then
	echo "deps.sh: still missing after apt-get: ${need[*]}" >&2
	exit 1
fi
[ "${PKGS[0]}" = redis-server ] || npm_deps
