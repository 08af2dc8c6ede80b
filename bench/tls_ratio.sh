#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tls_ratio.sh - replication throughput with and without kTLS, in one VM
# boot: selftests/vm/run.sh --timeout 900 -- bench/tls_ratio.sh
#
#   B1 10.207.0.1  B2 10.207.0.2  B3 10.207.0.3 (selftests/cluster.sh),
#   all with the same cluster secret, topic b1: 1 partition, RF 3, led
#   by broker 1; krep_load in B1's namespace
#
# Rounds alternate: insmod replication_tls=1 (encrypted), then
# replication_tls=0 (authenticated, in the clear), ROUNDS times each.
# Each round sets the cluster up anew, waits for a full ISR, and runs
# krep_load with acks=all: THREADS writers, each request one batch of
# BATCH records of SIZE bytes, for SECS seconds. Each round prints
#
#	TLS-RAW tls=0|1 round=N RESULT...
#
# (krep_load's RESULT line) and the end one line per setting with the
# median of its rounds' rec_per_s and their ratio:
#
#	TLS-RATIO tls_rec_per_s=X clear_rec_per_s=Y ratio=X/Y
#
# Environment: ROUNDS [3], THREADS [8], SIZE [1024], BATCH [16], SECS [5].
# Timings never fail the run; a round that cannot start does (exit 1).

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/../selftests/lib.sh"

krep_require_vm
NET=10.207.0
PORT=9092
# shellcheck source=selftests/cluster.sh
. "$here/../selftests/cluster.sh"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-8}
SIZE=${SIZE:-1024}
BATCH=${BATCH:-16}
SECS=${SECS:-5}
LOAD=$here/krep_load

tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
umask 077
head -c 32 /dev/urandom >"$tmp/secret"

# shellcheck disable=SC2317 # krep_wait_for polls it
round() {	# round TLS N
	local i out

	krep_mod_unload || return 1
	krep_mod_load reconnect_backoff_max_ms=500 replication_tls="$1" ||
		return 1
	cluster_up tls || return 1
	for i in 1 2 3; do
		kc "$(bns "$i")" broker set secret-file "$tmp/secret" \
			>/dev/null || return 1
	done
	cluster_topic b1 partitions 1 replication-factor 3 || return 1
	krep_wait_for 60 bench_committing b1 || return 1
	out=$("$LOAD" --topic b1 --acks all --brokers "$B1,$B2,$B3" \
		-t "$THREADS" -s "$SIZE" -b "$BATCH" -d "$SECS") || return 1
	echo "TLS-RAW tls=$1 round=$2 $out"
	rate=$(sed -n 's/.* rec_per_s=\([0-9.]*\).*/\1/p' <<<"$out")
	echo "$rate" >>"$tmp/rate.$1"
}

median() {
	sort -g "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

for ((n = 1; n <= ROUNDS; n++)); do
	for tls in 1 0; do
		round "$tls" "$n" || {
			echo "round tls=$tls $n could not run" >&2
			exit 1
		}
	done
done
on=$(median "$tmp/rate.1")
off=$(median "$tmp/rate.0")
echo "TLS-RATIO tls_rec_per_s=$on clear_rec_per_s=$off" \
	"ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.3f", a / b }')"
krep_cleanup_run
