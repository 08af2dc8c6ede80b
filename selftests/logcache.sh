#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# logcache.sh - with a log directory, log_memory_max bounds only what is
# not yet on disk: a segment written and synced is served from its file's
# page cache, so a log may be several times larger than the memory cap.
#
# Three brokers (log_memory_max=1 MiB each), a log directory each on an
# ext4 image, topic c (replication factor 3, 128 KiB segments):
# 1. 2 MiB produced with acks=all, 512 KiB at a time: every produce is
#    acknowledged, and after each one every broker's log memory falls
#    back under 192 KiB (the tail segment) once its disk work has caught
#    up. Without eviction the cap refuses appends past 1 MiB.
# 2. With the page cache dropped, so that every read starts from the
#    disk: krepctl consume (netlink fetch), a timestamp lookup, and kcat
#    (Kafka Fetch, page cache pages sent by reference) read it all back.
# 3. Broker 3 comes back with an empty directory: it fetches all 2 MiB
#    from broker 1's segment files and rejoins the ISR.
# 4. The whole cluster restarts: every broker loads a 2 MiB log with only
#    its tail segment in memory (before, such a directory was refused).
# 5. segment_ms: with segment_ms=1 each produce (a batch, more than 1 ms
#    after the one before) starts a segment, in memory and on disk; with
#    the default (7 days) they share one.
# Prints KTAP; leaves the module unloaded, the image unmounted.

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"
NET=10.209.0
KAFKA_PORT=9192
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

krep_require_vm
krep_require_cmd jq ip mkfs.ext4 mount umount kcat /usr/bin/python3

SEG=131072
CAP=1048576
CHUNK=512		# records of 1 KiB a produce
CHUNKS=4
N=$((CHUNK * CHUNKS))
T0=1700000000000	# chunk K's records have timestamp T0 + K
TAILMAX=196608		# log memory once the disk has caught up: the tail
tmp=$(mktemp -d)
mnt=$tmp/mnt
krep_cleanup_push rm -rf "$tmp"
mark=logcache-$$

ktap_plan 14
krep_pyserve_start logdump "" kafka_log_dump ||
	ktap_bail "cannot start kafka_log_dump.py"

values() { # CHUNK: its CHUNK records of 1 KiB, numbered across chunks
	seq -f "%06g-$(printf '%01000d' "$1")" $(($1 * CHUNK)) $((($1 + 1) * CHUNK - 1))
}
mem() { # N: broker N's log memory in bytes
	kc "$(bns "$1")" --json stats | jq -r .log_memory_bytes
}
mems() { echo "$(mem 1) $(mem 2) $(mem 3)"; }
all_small() {
	local i

	for i in 1 2 3; do
		[ "$(mem "$i")" -le "$TAILMAX" ] || return 1
	done
}
drop_caches() { sync && echo 3 >/proc/sys/vm/drop_caches; }
leo() { part "$(bns "$1")" c 0 | jq -r .leo; }
isr_full() { [ "$(part "$B1" c 0 | jq -c .isr)" = "[1,2,3]" ]; }
all_at() { # OFFSET: every replica's LEO and the leader's HW
	[ "$(leo 1) $(leo 2) $(leo 3)" = "$1 $1 $1" ] &&
		[ "$(part "$B1" c 0 | jq -r .hw)" = "$1" ]
}
brokers_up() { # log directories under $mnt/DIRn
	local i j peers

	for i in 1 2 3; do
		peers=
		for j in 1 2 3; do
			[ "$j" = "$i" ] || peers+="${peers:+,}$j@$NET.$j:$PORT"
		done
		kc "$(bns "$i")" broker set id "$i" cluster lc \
			listen "$NET.$i:$PORT" peers "$peers" \
			kafka-listen "$NET.$i:$KAFKA_PORT" log-dir "$mnt/$1$i" \
			>/dev/null || return 1
	done
}

# --- set-up ------------------------------------------------------------------
krep_kmsg_mark "$mark"
krep_mod_unload
krep_ext4_mount "$tmp/disk.img" 128M "$mnt" -O ^has_journal ||
	ktap_bail "cannot make and mount an ext4 image"
for k in $(seq 0 $((CHUNKS - 1))); do values "$k"; done >"$tmp/all.in"
krep_mod_load log_memory_max=$CAP || ktap_bail "insmod failed"
cluster_up lc || ktap_bail "cannot set up three brokers"
cluster_log_dirs "$mnt" || ktap_bail "cannot give the brokers log directories"
cluster_topic c partitions 1 replication-factor 3 \
	config segment_bytes=$SEG || ktap_bail "topic c"
krep_wait_for 60 cluster_peers_up || ktap_bail "peers did not connect"
krep_wait_for 60 isr_full || ktap_bail "c's ISR did not fill"

# --- 1. twice the memory cap, acknowledged ------------------------------------
ok=1
for k in $(seq 0 $((CHUNKS - 1))); do
	if ! values "$k" | kc "$B1" produce c partition 0 acks all batch 60 \
		timestamp $((T0 + k)) >/dev/null 2>"$tmp/produce.err"; then
		ktap_diag "chunk $k (of 512 KiB) refused; log memory: $(mems)"
		ktap_diag_stdin <"$tmp/produce.err"
		ok=0
		break
	fi
	if ! krep_wait_for 60 all_small; then
		ktap_diag "after chunk $k the log memory stays at $(mems) bytes"
		ok=0
		break
	fi
done
if [ "$ok" = 1 ]; then
	ktap_ok "2 MiB produced with acks=all to brokers capped at 1 MiB of log memory; after each 512 KiB every broker is back under 192 KiB (${SECONDS}s)"
else
	ktap_fail "2 MiB produced with acks=all to brokers capped at 1 MiB of log memory"
	ktap_bail "the rest needs the whole log"
fi
# DIR: the bytes of c-0's segment files, in order (a follower's files
# roll elsewhere than its leader's, but hold the same batches)
log_sum() { cat "$1"/c-0/*.log | sha256sum | cut -d' ' -f1; }
same_files() { # DIR DIR
	[ "$(log_sum "$1")" = "$(log_sum "$2")" ]
}
on_disk() { # DIR: c-0's files end with offset N - 1 (kafka_log_dump.py)
	krep_log_dump "$1" --partition c-0 2>/dev/null |
		jq -e --argjson n "$N" '.partitions["c-0"] | .next_offset == $n and (.errors | length) == 0' >/dev/null
}
if krep_wait_for 60 all_at "$N" && krep_wait_for 30 on_disk "$mnt/c1" &&
   krep_wait_for 30 same_files "$mnt/c1" "$mnt/c2" &&
   krep_wait_for 30 same_files "$mnt/c1" "$mnt/c3"; then
	ktap_ok "every replica at LEO $N, HW $N; broker 1's segment files hold offsets 0..$((N - 1)), the others' the same batches"
else
	ktap_fail "every replica at LEO $N and HW $N, in the segment files too"
	ktap_diag "LEO $(leo 1) $(leo 2) $(leo 3); $(part "$B1" c 0)"
fi

# --- 2. read back from disk ------------------------------------------------------
drop_caches
kc "$B1" consume c partition 0 >"$tmp/consume.out" 2>"$tmp/consume.err"
if cmp -s "$tmp/consume.out" "$tmp/all.in"; then
	ktap_ok "page cache dropped: krepctl consume reads the $N records back from the segment files, byte for byte"
else
	ktap_fail "page cache dropped: krepctl consume reads the $N records back"
	ktap_diag "$(wc -l <"$tmp/consume.out") lines; $(head -c 300 "$tmp/consume.err")"
fi
drop_caches
want=$CHUNK
got=$(kc "$B1" offsets c partition 0 $((T0 + 1)))
ktap_check "a timestamp lookup in an evicted segment: T0+1 is offset $want ($got)" \
	test "${got%% *}" = "$want"
drop_caches
timeout 120 ip netns exec "$B2" kcat -C -b "$NET.1:$KAFKA_PORT" -t c -p 0 \
	-o beginning -e -q -f '%s\n' >"$tmp/kcat.out" 2>"$tmp/kcat.err"
if cmp -s "$tmp/kcat.out" "$tmp/all.in"; then
	ktap_ok "kcat (Kafka Fetch) reads the $N records back from the page cache of the segment files, byte for byte"
else
	ktap_fail "kcat reads the $N records back from the segment files"
	ktap_diag "$(wc -l <"$tmp/kcat.out") lines; $(head -c 300 "$tmp/kcat.err")"
fi
ktap_check "broker 1 holds at most 192 KiB of log memory for a 2 MiB log ($(mem 1), ${SECONDS}s)" \
	test "$(mem 1)" -le "$TAILMAX"

# --- 3. a follower catches up from the leader's segment files -------------------
mkdir -p "$mnt/e3"
cluster_broker_recreate 3 lc kafka-listen "$NET.3:$KAFKA_PORT" \
	log-dir "$mnt/e3" || ktap_bail "broker 3 did not come back"
cluster_topic_on 3 c partitions 1 replication-factor 3 \
	config segment_bytes=$SEG || ktap_bail "broker 3: topic c"
drop_caches
caught_up3() { isr_full && [ "$(leo 3)" = "$N" ]; }
if krep_wait_for 120 caught_up3 &&
   krep_wait_for 60 same_files "$mnt/e3" "$mnt/c1"; then
	ktap_ok "broker 3, empty, fetches all $N records from broker 1's segment files, rejoins the ISR, and its files hold the same (${SECONDS}s)"
else
	ktap_fail "broker 3, empty, fetches the log from broker 1's segment files and rejoins the ISR"
	ktap_diag "LEO $(leo 3); $(part "$B1" c 0); log memory $(mems)"
fi

# --- 4. the whole cluster restarts with logs twice its memory --------------------
before=$(for i in 1 2 3; do part "$(bns "$i")" c 0 | jq -c '[.leo, .hw, .log_start]'; done)
krep_mod_unload
krep_kmsg_mark "$mark-restart"
krep_mod_load log_memory_max=$CAP || ktap_bail "insmod failed"
mv "$mnt/e3" "$mnt/c3.new" && rm -rf "$mnt/c3" && mv "$mnt/c3.new" "$mnt/c3" ||
	ktap_bail "cannot move broker 3's directory"
brokers_up c || ktap_bail "brokers did not come back"
cluster_topic c partitions 1 replication-factor 3 \
	config segment_bytes=$SEG >"$tmp/create.err" 2>&1
after=$(for i in 1 2 3; do part "$(bns "$i")" c 0 | jq -c '[.leo, .hw, .log_start]'; done)
nrec=$(krep_kmsg_since "$mark-restart" | grep -c "c-0: recovered offsets 0..$((N - 1)), HW")
if [ "$nrec" = 3 ] && [ "$before" = "$after" ] && all_small; then
	ktap_ok "a full restart: each broker recovers 0..$((N - 1)) with only its tail segment in memory, LEO and HW as before (${SECONDS}s)"
else
	ktap_fail "a full restart: each broker recovers its 2 MiB log with the tail in memory"
	ktap_diag "recovered: $nrec; before: ${before//$'\n'/ } after: ${after//$'\n'/ }; memory $(mems)"
	ktap_diag_stdin <"$tmp/create.err"
fi
drop_caches
kc "$B1" consume c partition 0 >"$tmp/consume2.out" 2>&1
ktap_check "after the restart, the $N records are served from the files" \
	cmp -s "$tmp/consume2.out" "$tmp/all.in"
krep_wait_for 60 cluster_peers_up
values 0 | kc "$B1" produce c partition 0 acks all batch 50 >/dev/null 2>"$tmp/produce.err"
if krep_wait_for 60 all_at $((N + CHUNK)); then
	ktap_ok "appends go on after the restart: every replica at $((N + CHUNK))"
else
	ktap_fail "appends go on after the restart"
	ktap_diag "LEO $(leo 1) $(leo 2) $(leo 3); $(cat "$tmp/produce.err")"
fi

# --- 5. segment_ms ----------------------------------------------------------------
cluster_topic sm partitions 1 replication-factor 3 config segment_ms=1 &&
	cluster_topic sd partitions 1 replication-factor 3 ||
	ktap_bail "topics sm, sd"
for t in sm sd; do
	for k in 1 2 3; do
		echo "$t-$k" | kc "$B1" produce "$t" acks all >/dev/null ||
			ktap_bail "produce $t"
	done
done
nlogs() { # TOPIC: the number of broker 1's segment files of TOPIC-0
	find "$mnt/c1/$1-0" -name '*.log' | wc -l
}
three_segs() {
	[ "$(nlogs sm)" = 3 ] &&
		krep_log_dump "$mnt/c1" --partition sm-0 --values 2>/dev/null |
		jq -e '.partitions["sm-0"].values == ["sm-1", "sm-2", "sm-3"]' >/dev/null
}
if krep_wait_for 30 three_segs; then
	ktap_ok "segment_ms=1: three produces, three segment files, read back in order"
else
	ktap_fail "segment_ms=1: three produces, three segment files ($(nlogs sm))"
fi
ktap_check "segment_ms at its default: three produces share one segment file ($(nlogs sd))" \
	test "$(nlogs sd)" = 1

krep_teardown_checks "$mark"
ktap_finish
