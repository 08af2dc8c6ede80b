#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# logdir_ratio.sh - acks=all throughput and commit latency with a log
# directory beside the in-memory mode, in one VM boot with a disk:
#
#   truncate -s 1G IMG
#   selftests/vm/run.sh --disk IMG --timeout 900 -- bench/logdir_ratio.sh
#
# (make bench runs it after bench/run.sh, in the same boot, on
# build/bench/disk.img; bench/report.py makes the table and the ratios.)
#
#   two clusters of three brokers (selftests/cluster.sh), each topic of
#   1 partition, RF 3, led by broker 1, with make bench's topic config
#   (min ISR 2, 4 MiB segments, 32 MiB retention); krep_load beside the
#   leader, as in make bench
#
# The disk (KREP_VM_DISK, the virtio disk of run.sh --disk, a file on the
# host) is formatted here with ext4 (inode tables and journal written at
# once: no lazy init in the background) and holds each broker's log
# directory. Three modes:
#
#   mem        no log directory: every log in kernel memory (make bench)
#   pagecache  a log directory, the default flush policy: appends reach
#              the page cache from a work item per partition, written
#              back by the kernel (a segment is synced when it rolls)
#   flush1     a log directory and topic config flush_messages=1: a
#              produce is answered once its records are synced
#
# One module load, two clusters side by side (each cluster_up's
# namespaces and bridge): mem's brokers on 10.208.0.N without a log
# directory, topic b1; the disk's on 10.208.1.N, each with its log
# directory on the disk, topics pc (pagecache) and fl (flush1). ROUNDS
# rounds; each runs every mode, in an order rotated from round to round,
# so that the host's noise hits them alike. Before each mode's runs the
# page cache is synced (the previous runs' dirty pages are not left for
# the next mode to write back); then two runs of krep_load, acks=all:
#
#   batch-SIZE   THREADS writers, each request one batch of BATCH_BYTES of
#                SIZE-byte records, for SECS seconds (make bench's p1-ifB)
#   if1-LSIZE    one writer, one LSIZE-byte record per request: commit
#                latency, LAT_N requests or LAT_SECS seconds
#
# Each run prints
#
#	LOGDIR-RAW round=N mode=M case=C RESULT...
#
# (krep_load's RESULT line; bench/report.py pairs each mode's runs with
# mem's of the same round for the ratios) and the set-up one LOGDIR-DISK
# line naming the disk. Environment: ROUNDS [3], THREADS [8], SIZE [1024],
# BATCH_BYTES [16384], SECS [3], LSIZE [100], LAT_N [2000], LAT_SECS [3].
# Timings never fail the run; a set-up or a run that fails does (exit 1,
# with a line on stderr).

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/../selftests/lib.sh"

krep_require_vm
krep_require_cmd mkfs.ext4
NET=10.208.0
PORT=9092
# shellcheck source=selftests/cluster.sh
. "$here/../selftests/cluster.sh"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-8}
SIZE=${SIZE:-1024}
BATCH_BYTES=${BATCH_BYTES:-16384}
SECS=${SECS:-3}
LSIZE=${LSIZE:-100}
LAT_N=${LAT_N:-2000}
LAT_SECS=${LAT_SECS:-3}
LOAD=$here/krep_load
MODES=(mem pagecache flush1)
# make bench's topic config (bench/run.sh KREP_CFG)
CFG=min_insync_replicas=2,retention_bytes=33554432,segment_bytes=4194304
MNT=/tmp/krep-logdir-bench

fail() {
	echo "logdir_ratio: $*" >&2
	exit 1
}

[ -x "$LOAD" ] || fail "$LOAD is not built (make -C bench krep_load)"
[ -b "${KREP_VM_DISK:-}" ] ||
	fail "no disk: run it with selftests/vm/run.sh --disk IMG (IMG: a file of 1 GiB or more, formatted here)"
modprobe ext4 2>/dev/null
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$KREP_VM_DISK" ||
	fail "mkfs.ext4 $KREP_VM_DISK failed"
if ! mkdir -p "$MNT" || ! mount "$KREP_VM_DISK" "$MNT"; then
	fail "cannot mount $KREP_VM_DISK"
fi
krep_cleanup_push umount "$MNT"
echo "LOGDIR-DISK dev=$KREP_VM_DISK fs=ext4 size_mib=$(($(blockdev --getsize64 "$KREP_VM_DISK") >> 20)) backing=\"virtio-blk, a file on the host (qemu cache=writeback: a guest flush is an fsync of the file)\" mem_total_kib=$(awk '/^MemTotal/ { print $2 }' /proc/meminfo)"

declare -A NS=()	# cluster (mem, disk) -> "B1 B2 B3" of its cluster_up
declare -A TOPIC=([mem]=b1 [pagecache]=pc [flush1]=fl)
declare -A CLUSTER=([mem]=mem [pagecache]=disk [flush1]=disk)

use() {	# use MODE: B1 B2 B3 and T of MODE's cluster and topic
	read -r B1 B2 B3 <<<"${NS[${CLUSTER[$1]}]}"
	T=${TOPIC[$1]}
}

# shellcheck disable=SC2317 # krep_wait_for polls it
setup() {
	local i

	krep_mod_load reconnect_backoff_max_ms=500 || return 1
	NET=10.208.0 cluster_up ldmem || return 1
	NS[mem]="$B1 $B2 $B3"
	cluster_topic b1 partitions 1 replication-factor 3 config "$CFG" ||
		return 1
	NET=10.208.1 cluster_up lddisk || return 1
	NS[disk]="$B1 $B2 $B3"
	cluster_log_dirs "$MNT/logs" || return 1
	cluster_topic pc partitions 1 replication-factor 3 config "$CFG" &&
		cluster_topic fl partitions 1 replication-factor 3 \
			config "$CFG,flush_messages=1" || return 1
	for i in "${MODES[@]}"; do
		use "$i"
		krep_wait_for 60 bench_committing "$T" ||
			{ echo "mode $i: no acks=all commit with a full ISR after 60 s" >&2; return 1; }
	done
}

run() {	# run MODE N CASE ARGS...: one krep_load run, its LOGDIR-RAW line
	local mode=$1 n=$2 c=$3 out

	shift 3
	out=$("$LOAD" --topic "$T" --acks all --brokers "$B1,$B2,$B3" "$@") ||
		return 1
	echo "LOGDIR-RAW round=$n mode=$mode case=$c ${out#*RESULT }"
}

round() {	# round MODE N
	use "$1"
	sync
	run "$1" "$2" "batch-$SIZE" -t "$THREADS" -s "$SIZE" \
		-b $((BATCH_BYTES / SIZE)) -n 100000000 -d "$SECS" || return 1
	run "$1" "$2" "if1-$LSIZE" -t 1 -s "$LSIZE" -b 1 \
		-n "$LAT_N" -d "$LAT_SECS" || return 1
}

setup || fail "the clusters could not be set up"
for ((n = 1; n <= ROUNDS; n++)); do
	for ((i = 0; i < ${#MODES[@]}; i++)); do
		mode=${MODES[$(((i + n - 1) % ${#MODES[@]}))]}
		round "$mode" "$n" || fail "round $n, mode $mode could not run"
	done
done
echo "LOGDIR-DONE rounds=$ROUNDS"
krep_cleanup_run
