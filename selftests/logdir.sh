#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# logdir.sh - logs in a log directory, in Kafka's on-disk layout, on an
# ext4 disk image (loop device) in the VM; every file is read back by
# kafka_log_dump.py, a reader written from Kafka's formats.
#
# 1. insmod log_dir= broker_id=1 topics=t:2:1 (16 KiB segments):
#    meta.properties names broker 1; the writer threads run at nice 10,
#    four per CPU; 600 produced records reach the
#    segment files (several segments, indexes, epoch checkpoint).
#    flush.messages=1 and flush.ms move the recovery point; nothing else.
# 2. rmmod: a clean shutdown writes the checkpoints (HW 600), the marker,
#    and each partition's producer state (fm: an aborted and an open
#    transaction) as Kafka's .snapshot and .txnindex; insmod again (page
#    cache dropped): t-0 comes back from the files, byte for byte; the
#    segments below the last are read from their indexes (big: 256 KiB
#    segments, hardly in the page cache after the load), the producer
#    state from its snapshot (LSO, read_committed, a retry, a commit).
#    A snapshot with a flipped byte is refused: the state from the log.
# 3. a crash: no marker and a torn last batch; insmod: the torn tail is
#    cut with a kernel log line naming the file, every batch before it
#    is served, and later appends continue from there.
#    Then a flipped byte, a lost index and a malformed checkpoint.
# 4. the directory of broker 1 is refused for broker 2; a deleted topic's
#    directories go.
# 5. a broker in a namespace gets its log directory with krepctl broker
#    set log-dir (an open directory, not a path); refused while it has
#    topics.
# 6. three brokers with a log directory each: broker 3's namespace goes
#    and comes back; it recovers its log from disk, catches up (fetching
#    only what it lacked) and ends with the leader's log. Then the whole cluster restarts from disk.
# 7. a follower that diverged after a leader change (a scripted
#    controller) truncates its segment files with its log, and its
#    producer state (an open transaction cut away) from a kept state.
# 8. a full disk: appends are refused with KAFKA_STORAGE_ERROR.
# (Log directories under krepd: logdir_krepd.sh; KIP-101 and KIP-279 with
# restarts: logdir_epochs.sh.)
# Prints KTAP; leaves the module unloaded, the image unmounted.

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"
NET=10.207.0
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

krep_require_vm
krep_require_cmd jq ip mkfs.ext4 mount umount /usr/bin/python3

SEG=16384
N=600
tmp=$(mktemp -d)
mnt=$tmp/mnt
krep_cleanup_push rm -rf "$tmp"
mark=logdir-$$

ktap_plan 55
krep_pyserve_start logdump "" kafka_log_dump ||
	ktap_bail "cannot start kafka_log_dump.py"

values() { # PREFIX COUNT
	seq -f "$1-%05g-abcdefghijklmnopqrstuvwxyz0123456789" 0 $(($2 - 1))
}

dump() { krep_log_dump "$@"; }	# DIR [ARGS...]: the JSON, its status kept

# field of t's partition P on the initial namespace's broker
lpart() { # TOPIC P FIELD
	"$KREPCTL" --json topic describe "$1" |
		jq -r --argjson p "$2" ".[] | select(.partition == \$p) | .$3"
}

# --- set-up: an ext4 image on a loop device ----------------------------------
krep_kmsg_mark "$mark"
krep_mod_unload
krep_ext4_mount "$tmp/disk.img" 128M "$mnt" ||
	ktap_bail "cannot make and mount an ext4 image"
D1=$mnt/b1
mkdir -p "$D1"
LOAD=(log_dir="$D1" broker_id=1
      "topics=t:2:1:segment_bytes=$SEG,fl:1:1:flush_messages=1,fm:1:1:flush_ms=200,big:1:1:segment_bytes=262144,rp:1:1:segment_bytes=262144"
      log_checkpoint_ms=500)

# --- 1. write ------------------------------------------------------------------
krep_mod_load "${LOAD[@]}" || ktap_bail "insmod with log_dir failed"
values a "$N" >"$tmp/a.in"
"$KREPCTL" produce t partition 0 acks 1 batch 10 <"$tmp/a.in" >/dev/null &&
	values b 20 | "$KREPCTL" produce t partition 1 acks 1 >/dev/null ||
	ktap_bail "produce failed"
ktap_check "meta.properties names broker 1" \
	grep -qx 'broker.id=1' "$D1/meta.properties"
# the writer threads: four per CPU (up to 64), at nice 10 while not behind
nwr=$(ps -eo ni=,comm= | awk '$2 ~ /^krep_disk\// && $1 == 10' | wc -l)
want=$(($(nproc) * 4))
[ "$want" -gt 64 ] && want=64
if [ "$nwr" -eq "$want" ]; then
	ktap_ok "$nwr writer threads krep_disk/N at nice 10, four per CPU"
else
	ktap_fail "writer threads krep_disk/N at nice 10, four per CPU: $nwr of $want"
	ps -eo pid=,ni=,comm= | grep krep_disk | ktap_diag_stdin
fi
on_disk() { # PART NEXT: the segment files reach offset NEXT
	dump "$D1" --partition "t-$1" 2>/dev/null |
		jq -e --argjson n "$2" ".partitions[\"t-$1\"].next_offset == \$n" >/dev/null
}
if krep_wait_for 30 on_disk 0 "$N"; then
	j=$(dump "$D1" --partition t-0)
	nseg=$(jq '.partitions["t-0"].segments | length' <<<"$j")
	nidx=$(jq '[.partitions["t-0"].segments[].index_entries] | add' <<<"$j")
	if [ "$nseg" -ge 2 ] && [ "$nidx" -ge 2 ]; then
		ktap_ok "the $N records reach $nseg segments of t-0 with $nidx index entries"
	else
		ktap_fail "the $N records reach several segments with index entries ($nseg, $nidx)"
	fi
else
	ktap_fail "the $N records reach t-0's segment files"
	dump "$D1" --partition t-0 | head -c 2000 | ktap_diag_stdin
fi
if out=$(dump "$D1" --partition t-0 2>&1); then
	ktap_ok "kafka_log_dump.py reads t-0 as Kafka's layout, without an error"
else
	ktap_fail "kafka_log_dump.py reads t-0 as Kafka's layout"
	jq -c '.. | .errors? // empty' <<<"$out" | head -5 | ktap_diag_stdin
fi
# kafka-python's own RecordBatch reader (Debian's python3-kafka): every
# batch's CRC, and the offsets and values it finds
kp_records() { # PARTITION_DIR: "OFFSET VALUE" lines, or "crc FILE"
	/usr/bin/python3 - "$1" <<'PY'
import glob, sys
from kafka.record import MemoryRecords
for f in sorted(glob.glob(sys.argv[1] + "/*.log")):
    mr = MemoryRecords(open(f, "rb").read())
    while mr.has_next():
        b = mr.next_batch()
        if not b.validate_crc():
            print("crc", f)
        for r in b:
            print(r.offset, r.value.decode())
PY
}
kp_records "$D1/t-0" >"$tmp/kp.out" 2>&1
if [ "$(awk '{ print $1 }' "$tmp/kp.out")" = "$(seq 0 $((N - 1)))" ] &&
   [ "$(awk '{ print $2 }' "$tmp/kp.out")" = "$(cat "$tmp/a.in")" ]; then
	ktap_ok "kafka-python's RecordBatch reader finds offsets 0..$((N - 1)) and the values produced, every CRC good"
else
	ktap_fail "kafka-python's RecordBatch reader finds the offsets and values produced"
	head -n 3 "$tmp/kp.out" | ktap_diag_stdin
fi
ktap_check "leader-epoch-checkpoint holds epoch 0 from offset 0" \
	eval '[ "$(cat "$D1/t-0/leader-epoch-checkpoint")" = "$(printf "0\n1\n0 0")" ]'

# flush.messages=1: each produce is answered once its records are synced,
# so fl's recovery point follows it; flush.ms=200: fm's is synced within
# 200 ms; t (neither) is synced only when a segment rolls
values f 30 | "$KREPCTL" produce fl acks 1 batch 1 >/dev/null &&
	values m 10 | "$KREPCTL" produce fm acks 1 >/dev/null ||
	ktap_bail "produce fl, fm failed"
rp() { awk -v t="$1" '$1 == t && $2 == 0 { print $3 }' "$D1/recovery-point-offset-checkpoint"; }
synced() { [ "$(rp fl)" = 30 ] && [ "$(rp fm)" = 10 ]; }
if krep_wait_for 30 synced && [ "$(rp t)" -lt "$N" ]; then
	ktap_ok "recovery points: fl (flush_messages=1) 30, fm (flush_ms=200) 10, t (no flush policy) $(rp t) of $N"
else
	ktap_fail "recovery points: fl (flush_messages=1) 30, fm (flush_ms=200) 10, t below $N ($(rp fl), $(rp fm), $(rp t))"
fi

# producer state for the clean restart, on fm (offsets 10..): producer
# 7's transaction aborted (10-11, marker 12), producer 8's left open (13);
# big: 640 records of 1 KiB in 256 KiB segments, 16 KiB batches
"$KREPCTL" txn fm 7:0 begin >/dev/null &&
	printf '%s\n' a1 a2 | "$KREPCTL" produce fm txn 7:0 batch 2 >/dev/null &&
	"$KREPCTL" txn fm 7:0 abort >/dev/null &&
	"$KREPCTL" txn fm 8:0 begin >/dev/null &&
	echo o1 | "$KREPCTL" produce fm txn 8:0 >/dev/null ||
	ktap_bail "the transactions on fm failed"
pad=$(printf '%0980d' 0)
values big 640 | sed "s/\$/$pad/" >"$tmp/big.in"
"$KREPCTL" produce big acks 1 batch 16 <"$tmp/big.in" >/dev/null ||
	ktap_bail "produce big failed"
# the offsets found by time for each t-0 segment's largest timestamp
by_time() {
	local ts
	for ts in $(dump "$D1" --partition t-0 |
		    jq -r '.partitions["t-0"].segments[].max_timestamp'); do
		"$KREPCTL" offsets t partition 0 "$ts"
	done
}
by_time >"$tmp/ts.before"

# --- 2. clean restart ------------------------------------------------------------
krep_mod_unload
if [ -e "$D1/.kafka_cleanshutdown" ] &&
   grep -qx "t 0 $N" "$D1/replication-offset-checkpoint" &&
   grep -qx "t 1 20" "$D1/replication-offset-checkpoint" &&
   grep -qx "t 0 $N" "$D1/recovery-point-offset-checkpoint" &&
   dump "$D1" >/dev/null; then
	ktap_ok "rmmod: a clean shutdown marker, HW $N and 20 checkpointed, the directory reads clean"
else
	ktap_fail "rmmod: a clean shutdown marker and the checkpoints"
	head -5 "$D1"/*-checkpoint | ktap_diag_stdin
fi
# as kafka_log_dump.py reads Kafka's formats: fm-0's producers at its end,
# and producer 7's aborted transaction in the .txnindex of its segment
j=$(dump "$D1" --partition fm-0)
snap=$(jq -c '[.partitions["fm-0"].snapshots[] | .offset,
	([.producers[] | [.producer_id, .epoch, .last_sequence, .last_offset,
			  .current_txn_first_offset]] | sort)]' <<<"$j")
aborted=$(jq -c '[.partitions["fm-0"].segments[].aborted // empty | .[] |
	[.producer_id, .first_offset, .last_offset]]' <<<"$j")
if [ "$snap" = '[14,[[7,0,1,11,-1],[8,0,0,13,13]]]' ] &&
   [ "$aborted" = '[[7,10,12]]' ] && [ -z "$(jq -c '.errors // empty | .[]' <<<"$j")" ]; then
	ktap_ok "rmmod: fm-0's producers 7 and 8 (8's transaction open at 13) in its 14.snapshot, 7's aborted transaction 10..12 in the .txnindex"
else
	ktap_fail "rmmod: fm-0's producer state in a .snapshot and a .txnindex ($snap, $aborted)"
	jq -c '.partitions["fm-0"].errors' <<<"$j" | ktap_diag_stdin
fi
# nothing of the log in the page cache, so that what the load reads shows
sync && echo 3 >/proc/sys/vm/drop_caches
krep_kmsg_mark "$mark-clean"
krep_mod_load "${LOAD[@]}" || ktap_bail "insmod again failed"
if [ "$(lpart t 0 leo)" = "$N" ] && [ "$(lpart t 0 hw)" = "$N" ] &&
   [ "$(lpart t 1 leo)" = 20 ]; then
	ktap_ok "insmod again: t-0 back at LEO and HW $N, t-1 at 20"
else
	ktap_fail "insmod again: t-0 back at LEO and HW $N ($(lpart t 0 leo), $(lpart t 0 hw))"
fi
"$KREPCTL" consume t partition 0 >"$tmp/a.out" 2>&1
ktap_check "the $N records read back are the ones produced" \
	cmp -s "$tmp/a.in" "$tmp/a.out"
ktap_check "the clean marker is consumed by the load" \
	eval '[ ! -e "$D1/.kafka_cleanshutdown" ]'
# after a clean shutdown every segment but the last comes from its
# indexes, and the producer state from its snapshot
log=$(krep_kmsg_since "$mark-clean")
nt=$(find "$D1/t-0" -name '*.log' | wc -l)
nb=$(find "$D1/big-0" -name '*.log' | wc -l)
if grep -q "t-0: recovered offsets 0..$((N - 1)), HW $N (clean shutdown): $((nt - 1)) of $nt segments from their indexes, producer state from the snapshot at $N\$" <<<"$log" &&
   grep -q "big-0: recovered offsets 0..639, HW 640 (clean shutdown): $((nb - 1)) of $nb segments from their indexes, producer state from the snapshot at 640\$" <<<"$log" &&
   grep -q "fm-0: recovered offsets 0..13, HW 14 (clean shutdown): 0 of 1 segments from their indexes, producer state from the snapshot at 14\$" <<<"$log" &&
   [ "$nb" -ge 3 ]; then
	ktap_ok "the load reads t-0's $((nt - 1)) and big-0's $((nb - 1)) segments below the last from their indexes, the producer states from their snapshots"
else
	ktap_fail "the load reads the segments below the last from their indexes, the producer states from their snapshots"
	grep "recovered" <<<"$log" | ktap_diag_stdin
fi
# big-0's full segments were not read: little of them is in the page cache
# (their last batch's header, with readahead), against every page of the
# last one, which the load reads into memory
read_share() { # FILE: percent of its pages in the page cache
	fincore -n -r -b -o RES,SIZE "$1" | awk '{ print int(100 * $1 / $2) }'
}
shares=
for f in $(find "$D1/big-0" -name '*.log' | sort | head -n -1); do
	shares="$shares $(read_share "$f")"
done
last=$(find "$D1/big-0" -name '*.log' | sort | tail -n 1)
if [ -n "$shares" ] && [ "$(read_share "$last")" -ge 90 ] &&
   ! printf '%s\n' $shares | awk '$1 >= 50 { bad = 1 } END { exit !bad }'; then
	ktap_ok "the full segments of big-0 are not read at load (in the page cache:$shares %; the last: $(read_share "$last") %)"
else
	ktap_fail "the full segments of big-0 are not read at load (in the page cache:$shares %; the last: $(read_share "$last") %)"
fi
"$KREPCTL" consume big partition 0 >"$tmp/big.out" 2>&1
by_time >"$tmp/ts.after"
if cmp -s "$tmp/big.in" "$tmp/big.out" && [ -s "$tmp/ts.after" ] &&
   cmp -s "$tmp/ts.before" "$tmp/ts.after"; then
	ktap_ok "big-0's 640 records read back from the files, and t-0's offsets by timestamp are those found before the restart"
else
	ktap_fail "big-0's records read back, t-0's offsets by timestamp unchanged"
	diff "$tmp/ts.before" "$tmp/ts.after" | head -n 5 | ktap_diag_stdin
fi
# what stays: the rolls' snapshots, each at a segment's base (big-0's
# last two), not the clean shutdown's at the log end (a base has a .log);
# no .txnindex (the only aborted transaction is in fm-0's growing tail)
orphans=$(find "$D1" -name '*.snapshot' | while read -r f; do
	[ -e "${f%.snapshot}.log" ] || basename "$f"; done)
names() { # DIR EXT [SED]: the bases of DIR's files *.EXT, on one line
	find "$1" -name "*.$2" -printf '%f\n' | sort | sed -n "${3:-}s/\.$2\$//p" | tr '\n' ' '
}
bigsnaps=$(names "$D1/big-0" snapshot)
bigbases=$(names "$D1/big-0" log '2,$')
ktap_check "the load leaves the rolls' snapshots, at segment bases (big-0: $bigsnaps), none at the log end ($orphans), and no .txnindex" \
	eval '[ -z "$orphans" ] && [ -n "$bigbases" ] && [ "$bigsnaps" = "$bigbases" ] &&
	      [ -z "$(find "$D1" -name "*.txnindex")" ]'
# the state read back: LSO at producer 8's open transaction, 7's records
# hidden from read_committed, a retry of 8's batch answered with its
# offset (not appended), and 8's commit moves LSO to HW
committed() { "$KREPCTL" consume fm partition 0 --isolation read_committed; }
if [ "$(lpart fm 0 lso)" = 13 ] && [ "$(lpart fm 0 hw)" = 14 ] &&
   [ "$(committed)" = "$(values m 10)" ]; then
	ktap_ok "fm-0: LSO 13 at producer 8's open transaction, HW 14, read_committed without 7's aborted records"
else
	ktap_fail "fm-0: LSO 13 at producer 8's open transaction, HW 14 (LSO $(lpart fm 0 lso), HW $(lpart fm 0 hw))"
	committed 2>&1 | tail -n 3 | ktap_diag_stdin
fi
retry=$(echo o1 | "$KREPCTL" produce fm txn 8:0 2>&1)
ktap_check "a retry of producer 8's batch is answered with offset 13, not appended again ($retry)" \
	eval '[ "$retry" = "produced 1 record to fm-0, offsets 13..13" ] && [ "$(lpart fm 0 leo)" = 14 ]'
out=$("$KREPCTL" txn fm 8:0 commit 2>&1)
if [ "$out" = "offset=14 lso=15" ] &&
   [ "$(committed)" = "$(values m 10; echo o1)" ]; then
	ktap_ok "producer 8's commit after the restart: marker at 14, LSO 15, read_committed ends with o1"
else
	ktap_fail "producer 8's commit after the restart: marker at 14, LSO 15 ($out)"
fi

# --- 2b. a corrupt snapshot: the state comes from the log ---------------------------
krep_mod_unload
snapf=$D1/fm-0/00000000000000000015.snapshot
if [ -s "$snapf" ]; then
	printf '\377' | dd of="$snapf" bs=1 seek=20 conv=notrunc status=none
fi
krep_kmsg_mark "$mark-snap"
krep_mod_load "${LOAD[@]}" || ktap_bail "insmod after the snapshot's corruption failed"
log=$(krep_kmsg_since "$mark-snap")
if grep -q "fm-0: the producer snapshot at 15 cannot be used (-22)\$" <<<"$log" &&
   grep -q "fm-0: recovered offsets 0..14, HW 15 (clean shutdown): .*, producer state from the log" <<<"$log" &&
   [ "$(lpart fm 0 lso)" = 15 ] && [ "$(committed)" = "$(values m 10; echo o1)" ]; then
	ktap_ok "a snapshot with a flipped byte is refused with a kernel log line; fm-0's state comes from the log (LSO 15, read_committed as before)"
else
	ktap_fail "a snapshot with a flipped byte is refused, the state from the log"
	grep "fm-0" <<<"$log" | ktap_diag_stdin
fi

# --- 2c. a crash after rolls: the newest roll's snapshot, the log after it ----------
# rp (256 KiB segments): producer 7's transaction aborted at 0..2, 600
# records of 1 KiB (three segments), producer 8's transaction open at 603
"$KREPCTL" txn rp 7:0 begin >/dev/null &&
	printf '%s\n' a1 a2 | "$KREPCTL" produce rp txn 7:0 batch 2 >/dev/null &&
	"$KREPCTL" txn rp 7:0 abort >/dev/null &&
	values r 600 | sed "s/\$/$pad/" | tee "$tmp/rp.in" |
	"$KREPCTL" produce rp acks 1 batch 16 >/dev/null &&
	"$KREPCTL" txn rp 8:0 begin >/dev/null &&
	echo o1 | "$KREPCTL" produce rp txn 8:0 >/dev/null ||
	ktap_bail "produce rp failed"
# each roll writes the state kept at its base as <base>.snapshot, after
# the .txnindex of the segments below it: 7's abort is in the first's
# (a clean shutdown of the empty rp-0 left one at 0)
rolled() {
	j=$(dump "$D1" --partition rp-0) &&
	rpbases=$(jq -r '[.partitions["rp-0"].segments[1:][].base] | @sh' <<<"$j") &&
	[ "$(jq -r '[.partitions["rp-0"].snapshots[].offset | select(. > 0)] | @sh' <<<"$j")" = "$rpbases" ] &&
	[ "$(jq -r '.partitions["rp-0"].next_offset' <<<"$j")" = 604 ] &&
	[ "$(jq -c '[.partitions["rp-0"].segments[0].aborted[]? |
		      [.producer_id, .first_offset, .last_offset]]' <<<"$j")" = '[[7,0,2]]' ]
}
if krep_wait_for 30 rolled && [ "$(wc -w <<<"$rpbases")" = 2 ]; then
	ktap_ok "rp-0's two rolls wrote their snapshots at $rpbases, and 7's aborted transaction 0..2 in the first segment's .txnindex"
else
	ktap_fail "rp-0's rolls wrote their snapshots and the first segment's .txnindex"
	jq -c '.partitions["rp-0"] | [.next_offset, [.segments[] | [.base, .aborted]],
		[.snapshots[].offset], .errors]' <<<"$j" | ktap_diag_stdin
fi
tailbase=${rpbases##* }
# a crash after the last roll: no marker, no snapshot at the log end, the
# recovery point at the last roll
krep_mod_unload
rm -f "$D1/.kafka_cleanshutdown" "$D1"/rp-0/00000000000000000604.snapshot
sed -i "s/^rp 0 .*/rp 0 $tailbase/" "$D1/recovery-point-offset-checkpoint"
sync && echo 3 >/proc/sys/vm/drop_caches
krep_kmsg_mark "$mark-roll"
krep_mod_load "${LOAD[@]}" || ktap_bail "insmod after the crash after rolls failed"
log=$(krep_kmsg_since "$mark-roll")
shares=
for f in $(find "$D1/rp-0" -name '*.log' | sort | head -n -1); do
	shares="$shares $(read_share "$f")"
done
if grep -q "rp-0: recovered offsets 0..603, HW 604: 2 of 3 segments from their indexes, producer state from the snapshot at $tailbase and the log after it\$" <<<"$log" &&
   [ -n "$shares" ] && ! printf '%s\n' $shares | awk '$1 >= 50 { bad = 1 } END { exit !bad }'; then
	ktap_ok "after the crash, rp-0's segments below the recovery point come from their indexes (in the page cache:$shares %), the producer state from the snapshot at $tailbase and the log after it"
else
	ktap_fail "after the crash, rp-0's segments below the recovery point from their indexes (in the page cache:$shares %), the producer state from the snapshot at $tailbase"
	grep "rp-0" <<<"$log" | ktap_diag_stdin
fi
rpc() { "$KREPCTL" consume rp partition 0 --isolation read_committed; }
retry=$(echo o1 | "$KREPCTL" produce rp txn 8:0 2>&1)
if [ "$(lpart rp 0 lso)" = 603 ] && [ "$(lpart rp 0 hw)" = 604 ] &&
   rpc >"$tmp/rp.out" 2>&1 && cmp -s "$tmp/rp.in" "$tmp/rp.out" &&
   [ "$retry" = "produced 1 record to rp-0, offsets 603..603" ] &&
   [ "$(lpart rp 0 leo)" = 604 ]; then
	ktap_ok "rp-0's state: LSO 603 at 8's open transaction, read_committed without 7's aborted records, a retry of 8's batch answered with 603"
else
	ktap_fail "rp-0's state: LSO 603, read_committed without 7's records, 8's retry at 603 (LSO $(lpart rp 0 lso), $retry)"
	head -c 300 "$tmp/rp.out" | ktap_diag_stdin
fi

# a crash right after the last roll, its first batch torn: the tail is cut
# away whole, and the roll's snapshot, now at the log end, is the state
krep_mod_unload
rm -f "$D1/.kafka_cleanshutdown" "$D1"/rp-0/00000000000000000604.snapshot
sed -i "s/^rp 0 .*/rp 0 $tailbase/" "$D1/recovery-point-offset-checkpoint"
truncate -s 7 "$(printf '%s/rp-0/%020d.log' "$D1" "$tailbase")"
krep_kmsg_mark "$mark-roll2"
krep_mod_load "${LOAD[@]}" || ktap_bail "insmod after the torn roll failed"
log=$(krep_kmsg_since "$mark-roll2")
if grep -q "rp-0: recovered offsets 0..$((tailbase - 1)), HW $tailbase: 2 of 2 segments from their indexes, producer state from the snapshot at $tailbase\$" <<<"$log" &&
   [ "$(lpart rp 0 lso)" = "$tailbase" ]; then
	ktap_ok "the last roll's first batch torn: rp-0 ends at $tailbase, its state from the roll's snapshot there (LSO $tailbase)"
else
	ktap_fail "the last roll's first batch torn: rp-0 ends at $tailbase, its state from the roll's snapshot (LSO $(lpart rp 0 lso))"
	grep "rp-0" <<<"$log" | ktap_diag_stdin
fi

# a crash with no snapshot left: the state comes from the whole log, and
# the closed segments' .txnindex files that hold what it gives stay as
# they are: the next roll does not write 7's abort again (a write is a
# new file renamed over the old: a new inode)
krep_mod_unload
rm -f "$D1/.kafka_cleanshutdown" "$D1"/rp-0/*.snapshot
txi=$D1/rp-0/00000000000000000000.txnindex
cp "$txi" "$tmp/txi.before"
ino=$(stat -c %i "$txi")
krep_kmsg_mark "$mark-nosnap"
krep_mod_load "${LOAD[@]}" || ktap_bail "insmod without snapshots failed"
log=$(krep_kmsg_since "$mark-nosnap")
values s 300 | sed "s/\$/$pad/" |
	"$KREPCTL" produce rp acks 1 batch 16 >/dev/null || ktap_bail "produce rp failed"
# shellcheck disable=SC2317 # the condition krep_wait_for polls
rolled_above() { # OFFSET: a roll above OFFSET wrote its snapshot
	find "$D1/rp-0" -name '*.snapshot' | sort | tail -n 1 |
		awk -F/ -v b="$1" '{ sub(/[.]snapshot$/, "", $NF) } $NF + 0 > b + 0' | grep -q .
}
if grep -q "rp-0: recovered offsets 0..$((tailbase - 1)), HW $tailbase: .*, producer state from the log\$" <<<"$log" &&
   krep_wait_for 30 rolled_above "$tailbase" && [ "$(stat -c %i "$txi")" = "$ino" ] &&
   cmp -s "$txi" "$tmp/txi.before"; then
	ktap_ok "no snapshot: rp-0's state from the log, and the next roll leaves the first segment's .txnindex (7's abort) as it was"
else
	ktap_fail "no snapshot: rp-0's state from the log, the next roll leaves the first segment's .txnindex (inode $ino, now $(stat -c %i "$txi"))"
	grep "rp-0" <<<"$log" | ktap_diag_stdin
	find "$D1/rp-0" -printf "%f\n" | sort | ktap_diag_stdin
fi

# ... and one that does not hold what the log gives (emptied here) is
# written again by the next roll, with 7's abort
krep_mod_unload
rm -f "$D1/.kafka_cleanshutdown" "$D1"/rp-0/*.snapshot
: >"$txi"
ino=$(stat -c %i "$txi")
krep_mod_load "${LOAD[@]}" || ktap_bail "insmod with an emptied .txnindex failed"
leo=$(lpart rp 0 leo)
values u 300 | sed "s/\$/$pad/" |
	"$KREPCTL" produce rp acks 1 batch 16 >/dev/null || ktap_bail "produce rp failed"
if krep_wait_for 30 rolled_above "$leo" && [ "$(stat -c %i "$txi")" != "$ino" ] &&
   cmp -s "$txi" "$tmp/txi.before"; then
	ktap_ok "an emptied .txnindex is not kept: the next roll writes 7's abort in it again"
else
	ktap_fail "an emptied .txnindex is written again by the next roll ($(stat -c %s "$txi") bytes)"
	find "$D1/rp-0" -printf "%f\n" | sort | ktap_diag_stdin
fi

# --- 3. crash: a torn last batch -------------------------------------------------------
krep_mod_unload
rm -f "$D1/.kafka_cleanshutdown"
last=$(find "$D1/t-0" -name '*.log' | sort | tail -n 1)
size=$(stat -c %s "$last")
truncate -s $((size - 7)) "$last"
krep_kmsg_mark "$mark-torn"
krep_mod_load "${LOAD[@]}" || ktap_bail "insmod after the crash failed"
leo=$(lpart t 0 leo)
if krep_kmsg_since "$mark-torn" |
   grep -q "t-0: $(basename "$last"): a torn or malformed batch at byte .* (offset $leo): truncated there" &&
   [ "$leo" -lt "$N" ] && [ "$leo" -ge $((N - 10)) ]; then
	ktap_ok "the torn last batch is cut at offset $leo with a kernel log line naming $(basename "$last")"
else
	ktap_fail "the torn last batch is cut with a kernel log line (LEO $leo)"
	krep_kmsg_since "$mark-torn" | grep krep | tail -n 5 | ktap_diag_stdin
fi
"$KREPCTL" consume t partition 0 >"$tmp/c.out" 2>&1
ktap_check "the $leo records before the cut read back unchanged" \
	cmp -s "$tmp/c.out" <(head -n "$leo" "$tmp/a.in")
mkfifo "$D1/replication-offset-checkpoint.tmp"	# left by someone
values c 5 | "$KREPCTL" produce t partition 0 acks 1 >/dev/null
if krep_wait_for 30 on_disk 0 $((leo + 5)) && dump "$D1" --partition t-0 >/dev/null; then
	ktap_ok "appends continue at $leo, on disk too, and the files read clean"
else
	ktap_fail "appends continue at $leo, on disk too"
fi
ktap_check "a FIFO left as the checkpoint's temporary file does not stop the checkpoints (HW $((leo + 5)))" \
	krep_wait_for 30 grep -qx "t 0 $((leo + 5))" "$D1/replication-offset-checkpoint"

# --- 3b. corruption: a flipped byte, a lost index, a bad checkpoint ---------------
krep_mod_unload
rm -f "$D1/.kafka_cleanshutdown"
last=$(find "$D1/t-0" -name '*.log' | sort | tail -n 1)
first=$(find "$D1/t-0" -name '*.log' | sort | head -n 1)
# flip a byte inside the records of the last segment's second batch,
# whose base offset is printed
bad=$(/usr/bin/python3 - "$last" <<'PY'
import struct, sys
f = open(sys.argv[1], "r+b")
data = f.read()
pos = 12 + struct.unpack(">i", data[8:12])[0]
base = struct.unpack(">q", data[pos:pos + 8])[0]
f.seek(pos + 70)
f.write(bytes([data[pos + 70] ^ 0x40]))
print(base)
PY
)
rm -f "${first%.log}.index"
printf '0\n2\nt 0 x\n' >"$D1/replication-offset-checkpoint"
# an epoch checkpoint ahead of the batches (as a cut that did not reach
# the disk would leave it): epoch 3 from the last segment's base, whose
# batches are of epoch 0
lbase=$(basename "$last" .log | sed 's/^0*\([0-9]\)/\1/')
printf '0\n2\n0 0\n3 %s\n' "$lbase" >"$D1/t-0/leader-epoch-checkpoint"
krep_kmsg_mark "$mark-bad"
krep_mod_load "${LOAD[@]}" || ktap_bail "insmod after the corruption failed"
log=$(krep_kmsg_since "$mark-bad")
if grep -q "t-0: $(basename "$last"): a batch whose CRC-32C does not match at byte [0-9]* (offset $bad): truncated there" <<<"$log" &&
   [ "$(lpart t 0 leo)" = "$bad" ]; then
	ktap_ok "a flipped byte: the log is cut before that batch (offset $bad), with its log line"
else
	ktap_fail "a flipped byte: the log is cut before that batch (offset $bad)"
	grep krep <<<"$log" | tail -n 4 | ktap_diag_stdin
fi
# the leader sets HW from the log once the partition is loaded, and the
# next checkpoint round writes it over the malformed file: both waited for
# (the dump reads the checkpoint files too)
hw_at() { [ "$(lpart t 0 hw)" = "$1" ]; }
if grep -q "replication-offset-checkpoint in the log directory is malformed: ignored" <<<"$log" &&
   [ -s "${first%.log}.index" ] && krep_wait_for 30 hw_at "$bad" &&
   krep_wait_for 30 grep -qx "t 0 $bad" "$D1/replication-offset-checkpoint" &&
   dump "$D1" --partition t-0 >"$tmp/dump.out" 2>&1; then
	ktap_ok "a lost index is rebuilt, a malformed checkpoint ignored (HW from the log: $bad) and written anew, the files read clean"
else
	ktap_fail "a lost index is rebuilt, a malformed checkpoint ignored and written anew, the files read clean"
	ktap_diag "$(basename "${first%.log}.index"): $(stat -c %s "${first%.log}.index" 2>&1) bytes; HW $(lpart t 0 hw), LEO $(lpart t 0 leo), want $bad"
	ktap_diag "replication-offset-checkpoint: $(tr '\n' ' ' <"$D1/replication-offset-checkpoint")"
	grep krep <<<"$log" | tail -n 6 | ktap_diag_stdin
	tail -n 5 "$tmp/dump.out" 2>/dev/null | ktap_diag_stdin
fi
epochs=$("$KREPCTL" --json topic describe t |
	jq -r '.[] | select(.partition == 0) | [.epochs[] | "\(.epoch)@\(.start_offset)"] | join(",")')
ktap_check "an epoch checkpoint ahead of the batches (3@$lbase over batches of epoch 0) yields to them: epochs $epochs" \
	test "$epochs" = "0@0"

# --- 4. another broker's directory; a deleted topic ---------------------------------
krep_mod_unload
krep_kmsg_mark "$mark-b2"
if insmod "$KREP_KO" log_dir="$D1" broker_id=2 2>/dev/null; then
	krep_mod_unload
	ktap_fail "broker 2 refuses broker 1's log directory"
elif krep_kmsg_since "$mark-b2" | grep -q "bad log_dir '$D1': the log directory belongs to another broker id"; then
	ktap_ok "broker 2 refuses broker 1's log directory, saying whose it is"
else
	ktap_fail "broker 2 refuses broker 1's log directory, saying whose it is"
fi
krep_mod_load "${LOAD[@]}" || ktap_bail "insmod failed"
"$KREPCTL" topic delete t >/dev/null
ktap_check "a deleted topic's directories go" \
	eval '[ ! -e "$D1/t-0" ] && [ ! -e "$D1/t-1" ] && ! ls -d "$D1"/*-delete 2>/dev/null'
"$KREPCTL" topic create t partitions 1 replication-factor 1 >/dev/null
ktap_check "a topic created again under the name starts empty" \
	eval '[ "$(lpart t 0 leo)" = 0 ]'
"$KREPCTL" topic delete t >/dev/null
krep_mod_unload
ktap_check "... and so do its checkpoint lines" \
	eval '! grep -q "^t " "$D1/replication-offset-checkpoint"'

# --- 5. krepctl broker set log-dir --------------------------------------------------
krep_mod_load || ktap_bail "insmod failed"
krep_netns_add B5 lb5 || ktap_bail "netns"
D5=$mnt/b5
mkdir -p "$D5"
kc "$B5" broker set id 5 >/dev/null
if kc "$B5" broker set log-dir "$D5" &&
   [ "$(kc "$B5" --json broker show | jq -r .log_dir)" = "$D5" ]; then
	ktap_ok "broker set log-dir: broker show gives $D5"
else
	ktap_fail "broker set log-dir: broker show gives $D5"
fi
kc "$B5" topic create u partitions 1 replication-factor 1 >/dev/null
out=$(kc "$B5" broker set log-dir none 2>&1)
ktap_check "log-dir none is refused while the broker has topics" \
	grep -q "only while the broker has no topics" <<<"$out"
ktap_check "the same directory again is accepted (nothing changes)" \
	kc "$B5" broker set log-dir "$D5"
krep_netns_add B6 lb6 || ktap_bail "netns"
kc "$B6" broker set id 6 >/dev/null
out=$(kc "$B6" broker set log-dir "$D5" 2>&1)
ktap_check "another broker is refused the directory while broker 5 holds it (.lock)" \
	grep -q "in use by another broker" <<<"$out"
out=$(kc "$B5" broker set log-dir "$D5/meta.properties" 2>&1)
ktap_check "a file that is not a directory is refused by krepctl" \
	grep -q "log-dir $D5/meta.properties: Not a directory" <<<"$out"
ktap_check "u-0's directory is made in $D5" test -d "$D5/u-0"
ip netns del "$B5"
ip netns del "$B6"
krep_mod_unload

# --- 6. three brokers: broker 3 restarts from its log directory -----------------------
krep_mod_load || ktap_bail "insmod failed"
cluster_up krepld || ktap_bail "cannot set up three brokers"
cluster_log_dirs "$mnt" || ktap_bail "cannot give the brokers log directories"
cluster_topic r partitions 1 replication-factor 3 \
	config segment_bytes=$SEG || ktap_bail "topic r"
krep_wait_for 60 cluster_peers_up || ktap_bail "peers did not connect"
values r 100 | kc "$B1" produce r acks all batch 10 >/dev/null ||
	ktap_bail "produce r"
synced3() { [ "$(pf3 leo)" = 100 ]; }
pf3() { part "$B3" r 0 | jq -r ".$1"; }
krep_wait_for 30 synced3 || ktap_bail "broker 3 did not reach 100"
krep_kmsg_mark "$mark-b3"
cluster_broker_recreate 3 krepld || ktap_bail "broker 3 did not come back"
# what the old broker 3 left on disk: its namespace's exit wrote it all
held=$(cat "$mnt/c3"/r-0/*.log | wc -c)
values s 100 | kc "$B1" produce r acks 1 batch 10 >/dev/null
# record bytes broker 1 sends by reference; broker 2 has all 200 first
zc() { kc "$B1" --json stats | jq '.counters.tx_zerocopy_bytes'; }
krep_wait_for 30 eval '[ "$(part "$B2" r 0 | jq -r .leo)" = 200 ]' ||
	ktap_bail "broker 2 did not reach 200"
zc0=$(zc)
kc "$B3" broker set log-dir "$mnt/c3" >/dev/null &&
	cluster_topic_on 3 r partitions 1 replication-factor 3 \
		config segment_bytes=$SEG || ktap_bail "broker 3: topic r"
ktap_check "broker 3 recovers offsets 0..99 from its log directory" \
	eval 'krep_kmsg_since "$mark-b3" | grep -q "r-0: recovered offsets 0..99, HW"'
in_isr() { [ "$(part "$B1" r 0 | jq -c .isr)" = "[1,2,3]" ] && [ "$(pf3 leo)" = 200 ]; }
if krep_wait_for 60 in_isr &&
   krep_wait_for 30 eval 'dump "$mnt/c3" --partition r-0 --values | jq -e ".partitions[\"r-0\"].next_offset == 200" >/dev/null' &&
   [ "$(dump "$mnt/c3" --partition r-0 --values | jq -c '.partitions["r-0"].values')" = \
     "$(dump "$mnt/c1" --partition r-0 --values | jq -c '.partitions["r-0"].values')" ]; then
	ktap_ok "broker 3 catches up to 200, rejoins the ISR, and its files hold the leader's records"
else
	ktap_fail "broker 3 catches up, rejoins the ISR, and its files hold the leader's records"
	part "$B1" r 0 | ktap_diag_stdin
fi
# the record bytes broker 1 sent meanwhile (only broker 3 fetched any)
# cover what broker 3 lacked and are less than the whole log, as they
# would not be had it fetched 0..99 again
got=$(($(zc) - zc0))
total=$(cat "$mnt/c3"/r-0/*.log | wc -c)
ktap_check "broker 3 fetched only what it lacked: broker 1 sent $got record bytes, $((total - held)) lacked of $total" \
	test "$held" -gt 0 -a "$got" -ge $((total - held)) -a "$got" -lt "$total"

# --- 6b. the whole cluster restarts from its log directories --------------------
before=$(for i in 1 2 3; do part "$(bns "$i")" r 0 | jq -c '[.leo, .hw, .epochs]'; done)
krep_mod_unload
krep_mod_load || ktap_bail "insmod failed"
for i in 1 2 3; do
	peers=
	for j in 1 2 3; do
		[ "$j" = "$i" ] || peers+="${peers:+,}$j@$NET.$j:$PORT"
	done
	kc "$(bns "$i")" broker set id "$i" cluster krepld listen "$NET.$i:$PORT" \
		peers "$peers" log-dir "$mnt/c$i" >/dev/null &&
		kc "$(bns "$i")" topic create r partitions 1 replication-factor 3 \
			config segment_bytes=$SEG >/dev/null ||
		ktap_bail "broker $i: back"
done
after=$(for i in 1 2 3; do part "$(bns "$i")" r 0 | jq -c '[.leo, .hw, .epochs]'; done)
kc "$B1" consume r partition 0 >"$tmp/r.out" 2>&1
if [ "$before" = "$after" ] &&
   cmp -s "$tmp/r.out" <(values r 100; values s 100); then
	ktap_ok "a full cluster restart: every broker's LEO, HW and epochs as before, the 200 records served"
else
	ktap_fail "a full cluster restart: every broker's LEO, HW and epochs as before"
	ktap_diag "before: $(echo $before) after: $(echo $after)"
fi
krep_wait_for 60 cluster_peers_up || ktap_bail "peers did not reconnect"

# --- 7. a follower's divergent suffix is cut on disk too ------------------------------
# d: replicas 1,2 (4 KiB segments, one ~160-byte record a batch). Broker 2
# is cut off at 50; broker 1 appends 30 more, in producer 9's transaction;
# a scripted controller (ctl_helper.py) makes broker 2 leader at epoch 1,
# which appends 20 of its own; broker 1 follows it: its log, and its
# segment files, go back to 50, and its producer state with them (from
# the state kept at a segment start below 50, not from the log start).
big() { # PREFIX FROM TO
	seq -f "$1-%04g-$(printf '%0100d' 0)" "$2" $(($3 - 1))
}
# the producer state's rebuilds (each reads the whole log), through tracefs
tr=/sys/kernel/tracing
[ -d "$tr/events/krep" ] || tr=/sys/kernel/debug/tracing
echo >"$tr/trace"
echo 1 >"$tr/events/krep/krep_producer_rebuild/enable"
cluster_topic d partitions 1 replication-factor 2 \
	config segment_bytes=4096 || ktap_bail "topic d"
big d 0 50 | kc "$B1" produce d acks all batch 1 >/dev/null || ktap_bail "produce d"
at50() { [ "$(part "$B2" d 0 | jq -r .leo)" = 50 ]; }
krep_wait_for 30 at50 || ktap_bail "broker 2 did not reach 50"
link_down 2
kc "$B1" txn d 9:0 begin >/dev/null &&
	big e 50 80 | kc "$B1" produce d acks 1 txn 9:0 batch 1 >/dev/null ||
	ktap_bail "produce e"
ktap_check "broker 1: d-0's LSO 50 at producer 9's open transaction (e-50..79)" \
	test "$(part "$B1" d 0 | jq -r .lso)" = 50
krep_pyserve_start ctl1 "$B1" ctl_helper && krep_pyserve_start ctl2 "$B2" ctl_helper ||
	ktap_bail "cannot start ctl_helper.py"
pe=$(part "$B2" d 0 | jq .partition_epoch)
out="$(krep_pyserve ctl2 claim 1 77 600000) $(krep_pyserve ctl2 lai 1 d 0 2 1 $((pe + 1)) 2)"
[ "$out" = "ok ok" ] || ktap_bail "electing broker 2: $out"
big f 50 70 | kc "$B2" produce d acks 1 batch 1 >/dev/null || ktap_bail "produce f"
krep_kmsg_mark "$mark-cut"
out="$(krep_pyserve ctl1 claim 1 77 600000) $(krep_pyserve ctl1 lai 1 d 0 2 1 $((pe + 1)) 2)"
[ "$out" = "ok ok" ] || ktap_bail "making broker 1 follow: $out"
link_up 2
vals() { dump "$mnt/c$1" --partition d-0 --values | jq -c '.partitions["d-0"].values'; }
same70() {
	[ "$(part "$B1" d 0 | jq -r .leo)" = 70 ] &&
		dump "$mnt/c1" --partition d-0 >/dev/null &&
		[ "$(vals 1)" = "$(vals 2)" ] &&
		[ "$(vals 1 | jq length)" = 70 ]
}
if krep_wait_for 60 same70 && [ "$(vals 1)" = "$( (big d 0 50; big f 50 70) | jq -Rsc 'split("\n")[:-1]')" ]; then
	ktap_ok "broker 1's segment files end as broker 2's: d-0..49, then f-50..69, no e, and read clean"
else
	ktap_fail "broker 1's segment files end as broker 2's after the cut"
	dump "$mnt/c1" --partition d-0 | jq -c '.partitions["d-0"] | {next_offset, errors, segments: [.segments[] | {file, first_offset, next_offset}]}' | ktap_diag_stdin
fi
ktap_check "the kernel log says broker 1's d-0 was truncated from 80 to 50" \
	eval 'krep_kmsg_since "$mark-cut" | grep -q "d-0: truncated from 80 to 50"'
# broker 1 made d-0's producer state once from the log, as it created the
# topic (empty), then at the cut from a state kept at a segment start
echo 0 >"$tr/events/krep/krep_producer_rebuild/enable"
rebuilt=$(grep -o "broker=1 d-0 replica=1 .*" "$tr/trace")
from=$(sed -n '2s/.* \([0-9]*\) -> 50$/\1/p' <<<"$rebuilt")
if [ "$(sed -n 1p <<<"$rebuilt")" = "broker=1 d-0 replica=1 0 -> 0" ] &&
   [ "$(wc -l <<<"$rebuilt")" = 2 ] && [ -n "$from" ] &&
   [ "$from" -gt 0 ] && [ "$from" -le 50 ]; then
	ktap_ok "broker 1 remade d-0's producer state at the cut from the state kept at offset $from, not from the log start"
else
	ktap_fail "broker 1 remade d-0's producer state at the cut from a kept state ($(echo $rebuilt))"
fi
lso_hw() { [ "$(part "$B1" d 0 | jq -r '"\(.lso) \(.hw)"')" = "70 70" ]; }
ktap_check "producer 9's transaction went with the cut: broker 1's LSO is its HW 70" \
	krep_wait_for 30 lso_hw

# --- 8. a full disk (2 MiB): the partition refuses appends with KAFKA_STORAGE_ERROR ----------
small=$tmp/small
krep_ext4_mount "$tmp/small.img" 2M "$small" -O ^has_journal ||
	ktap_bail "cannot mount a small image"
krep_netns_add B7 lb7 || ktap_bail "netns"
kc "$B7" broker set id 7 log-dir "$small" >/dev/null &&
	kc "$B7" topic create full partitions 1 replication-factor 1 \
		config segment_bytes=1048576 >/dev/null || ktap_bail "broker 7"
krep_kmsg_mark "$mark-full"
# 2200 records of 1 KiB: more than the disk holds
seq -f "x-%04g-$(printf '%01000d' 0)" 0 2199 |
	kc "$B7" produce full acks 1 batch 16 >/dev/null 2>"$tmp/full.err"
refused() {
	big y 0 50 | kc "$B7" produce full acks 1 batch 50 >/dev/null 2>"$tmp/full.err"
	grep -q KAFKA_STORAGE_ERROR "$tmp/full.err"
}
if krep_wait_for 60 refused &&
   [ "$(krep_kmsg_since "$mark-full" | grep -c "full-0: log directory: writing a segment failed (-28); the partition takes no more appends here")" = 1 ]; then
	ktap_ok "a full disk: the kernel log says so once, and produces get KAFKA_STORAGE_ERROR"
else
	ktap_fail "a full disk: the kernel log says so once, and produces get KAFKA_STORAGE_ERROR"
	ktap_diag_stdin <"$tmp/full.err"
fi
ip netns del "$B7"

krep_teardown_checks "$mark"
ktap_finish
