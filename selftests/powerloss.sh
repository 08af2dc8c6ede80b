#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# powerloss.sh - a power loss under acks=all, on a disk that outlives the
# VM. A host-side suite ("host" in suites.list): selftests/check.sh runs it
# on the host, and it boots two VMs (selftests/vm/run.sh), one after the
# other, on one ext4 image made here with mkfs.ext4.
#
#   host                        VM 1                          VM 2
#   ----                        ----                          ----
#   disk.img (mkfs.ext4) --> /dev/vda: broker 1's      --> /dev/vda: the same
#     (run.sh --disk)        log_dir, topics fl, df        log_dir, recovered
#   DIR (run.sh --share) <-- acked.fl, acked.df       --> before.json, describe.*,
#                            (fsynced), acked.fl.reset     consumed.*, after.json,
#                                                          dmesg
#
# Boot 1: insmod log_dir= on /dev/vda (through dm-delay: every cache
#   flush 100 ms late, so that a sync takes a while) with topics fl
#   (flush.messages=1) and df (the default policy: no forced sync), 16 KiB
#   segments, and the guest's dirty page writeback every 0.5 s (so that
#   df's tail reaches the disk piecemeal). One producer per topic
#   (kafka_raw.py --acked: acks=all, one record at a time, each
#   acknowledged record written to DIR and fsynced before the next is
#   sent). Right after fl's $N-th
#   acknowledgement, with its next record sent and df's producer going
#   on, fl's producer writes b to /proc/sysrq-trigger: a reset without
#   sync or unmount (qemu runs with -no-reboot: it exits). An
#   acknowledgement given before its record is synced loses that record.
# Boot 2: the log directory as the power loss left it, read by
#   kafka_log_dump.py (before.json); insmod with the same log_dir recovers
#   it; what the broker then serves (describe, consume) goes to DIR; after
#   rmmod (a clean shutdown) what its files hold (after.json) too.
# The host checks: every record acknowledged on fl is served, and is in
# the segment files, at the offset it was acknowledged at, byte for byte;
# df is a valid prefix of what was produced (every batch valid, offsets
# contiguous from 0, read clean by kafka_log_dump.py); a partition whose
# tail the crash tore is cut where the tear begins, with its kernel log
# line, one that was whole keeps every batch; HW at the log end (RF 1),
# the checkpoints of the clean shutdown at it; no kernel warning in either
# boot. DIR is the run's log directory (KREP_CHECK_LOGDIR, from check.sh)
# /powerloss, else build/vm/powerloss.XXXXXX; the disk image goes when
# every check passed.
#
# Usage: selftests/powerloss.sh                 (on the host)
#        selftests/powerloss.sh --boot1|--boot2 DIR   (in the VMs it boots)

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

N=30		# records acknowledged on fl before the reset
PORT=9192
LOAD=(broker_id=1 "kafka_listen=127.0.0.1:$PORT" log_checkpoint_ms=100
      "topics=fl:1:1:flush_messages=1:segment_bytes=16384,df:1:1:segment_bytes=16384")
DUMP=$here/kafka_log_dump.py
self=$here/${BASH_SOURCE[0]##*/}
RAW=$here/kafka_raw.py

# --- in the VMs ---------------------------------------------------------------
mount_disk() { # MNT
	modprobe ext4 && mkdir -p "$1" && mount "$KREP_VM_DISK" "$1"
}

boot1() {
	local dir=$1 mnt=/tmp/powerloss dev=/dev/mapper/powerloss

	# every cache flush to the disk 100 ms late (dm-delay; reads and
	# writes on time): a sync takes a while, so an acknowledgement that
	# does not wait for it comes before it
	local d=$KREP_VM_DISK
	modprobe dm_delay &&
		dmsetup create --noudevsync powerloss --table \
			"0 $(blockdev --getsz "$d") delay $d 0 0 $d 0 0 $d 0 100" &&
		dmsetup mknodes powerloss || exit 1
	KREP_VM_DISK=$dev mount_disk "$mnt" && mkdir -p "$mnt/b1" || exit 1
	sysctl -q vm.dirty_expire_centisecs=50 vm.dirty_writeback_centisecs=50
	insmod "$KREP_KO" log_dir="$mnt/b1" "${LOAD[@]}" || exit 1
	/usr/bin/python3 "$RAW" --acked "127.0.0.1:$PORT" df "$dir/acked.df" \
		2>"$dir/producer.df.err" &
	# the reset comes from fl's producer, right after its Nth ack
	/usr/bin/python3 "$RAW" --acked "127.0.0.1:$PORT" fl "$dir/acked.fl" "$N" \
		2>"$dir/producer.fl.err"
	echo "boot 1: fl's producer ended without the reset:"
	cat "$dir"/producer.*.err
	exit 1
}

boot2() {
	local dir=$1 mnt=/tmp/powerloss t

	mount_disk "$mnt" || exit 1
	/usr/bin/python3 "$DUMP" "$mnt/b1" >"$dir/before.json"
	krep_kmsg_mark powerloss-boot2
	insmod "$KREP_KO" log_dir="$mnt/b1" "${LOAD[@]}" || exit 1
	for t in fl df; do
		"$KREPCTL" --json topic describe "$t" >"$dir/describe.$t.json" &&
			"$KREPCTL" consume "$t" partition 0 -f '%o %s\n' \
				>"$dir/consumed.$t" || exit 1
	done
	rmmod krep || exit 1
	/usr/bin/python3 "$DUMP" "$mnt/b1" --values >"$dir/after.json"
	krep_kmsg_since powerloss-boot2 >"$dir/dmesg"
	umount "$mnt"
}

case ${1:-} in
--boot1|--boot2)
	[ "${KREP_VM:-}" = 1 ] && [ $# = 2 ] && [ -n "${KREP_VM_DISK:-}" ] ||
		{ echo "powerloss.sh $1: only in the VMs powerloss.sh boots" >&2; exit 2; }
	"${1#--}" "$2"
	exit
	;;
'') ;;
*) sed -n '/^# Usage:/,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
esac

# --- on the host -----------------------------------------------------------------
[ "${KREP_VM:-}" != 1 ] ||
	ktap_skip_all "a host-side suite: selftests/check.sh runs it on the host"
krep_require_cmd mkfs.ext4 dmsetup qemu-system-x86_64 jq /usr/bin/python3

ktap_plan 8

base=${KREP_CHECK_LOGDIR:-$KREP_ROOT/build/vm}
mkdir -p "$base"
if [ -n "${KREP_CHECK_LOGDIR:-}" ]; then
	dir=$base/powerloss
	rm -rf "$dir" && mkdir "$dir"
else
	dir=$(mktemp -d "$base/powerloss.XXXXXX")
fi || ktap_bail "cannot make the suite's directory"
echo "# files in ${dir#"$KREP_ROOT"/}"
img=$dir/disk.img
truncate -s 128M "$img" && mkfs.ext4 -q -F "$img" || ktap_bail "cannot make an ext4 image"

vm() { # BOOT: run powerloss.sh --bootBOOT in a VM on the image; its status
	"$here/vm/run.sh" --disk "$img" --share "$dir" --timeout 300 \
		--console "$dir/console.$1.log" -- "$self" "--boot$1" "$dir" \
		>"$dir/vm.$1.log" 2>&1
}

vm 1
rc=$?
why=$(grep -a '^run.sh: ' "$dir/vm.1.log")
if [ "$rc" = 125 ] && [ -s "$dir/acked.fl.reset" ] &&
   [ "$(wc -l <"$dir/acked.fl")" = "$N" ] &&
   grep -q '^run.sh: FAIL: no exit marker from the guest (qemu exited with status 0' <<<"$why"; then
	ktap_ok "boot 1: reset (sysrq b) right after $N acks on fl, its next record in flight, $(wc -l <"$dir/acked.df") acks on df, its producer running; no kernel warning"
else
	ktap_fail "boot 1: reset right after $N acks on fl while producing, no kernel warning (run.sh status $rc)"
	ktap_diag "$why"
	tail -n 20 "$dir/vm.1.log" | ktap_diag_stdin
	ktap_bail "boot 1 did not end in a power loss"
fi

vm 2
rc=$?
if [ "$rc" = 0 ]; then
	ktap_ok "boot 2 on the same disk: the log directory recovered, read and unloaded, no kernel warning on the console"
else
	ktap_fail "boot 2 on the same disk (run.sh status $rc)"
	tail -n 20 "$dir/vm.2.log" | ktap_diag_stdin
	ktap_bail "boot 2 failed"
fi

# The checks on what the two boots left in $dir: "ok DESC" or "not ok DESC",
# then "# " lines.
/usr/bin/python3 - "$dir" "$RAW" >"$dir/checks" 2>&1 <<'PY'
import importlib.util, json, re, sys

d = sys.argv[1]
spec = importlib.util.spec_from_file_location("kafka_raw", sys.argv[2])
raw = importlib.util.module_from_spec(spec)
spec.loader.exec_module(raw)


def load(name):
    with open("%s/%s" % (d, name)) as f:
        return json.load(f)


def result(ok, desc, diag=()):
    print(("ok " if ok else "not ok ") + desc)
    for line in diag:
        print("# " + str(line)[:400])


before, after = load("before.json"), load("after.json")
desc = {t: load("describe.%s.json" % t)[0] for t in ("fl", "df")}
consumed = {}
for t in ("fl", "df"):
    with open("%s/consumed.%s" % (d, t)) as f:
        consumed[t] = [tuple(l.rstrip("\n").split(" ", 1)) for l in f]
with open(d + "/acked.fl") as f:
    acked = [tuple(l.rstrip("\n").split(" ", 1)) for l in f]
with open(d + "/dmesg") as f:
    dmesg = f.read()
leo = {t: desc[t]["leo"] for t in ("fl", "df")}

# fl: every acknowledged record, at its offset, byte for byte
served = dict(consumed["fl"])
files = after["partitions"]["fl-0"].get("values") or []
bad = [(o, v) for o, v in acked if served.get(o) != v]
badf = [(o, v) for o, v in acked if int(o) >= len(files) or files[int(o)] != v]
inorder = [int(o) for o, _ in acked] == list(range(len(acked)))
result(not bad and inorder,
       "fl (flush.messages=1): the %d records acknowledged are served at the "
       "offsets they were acknowledged at, byte for byte (LEO %d)"
       % (len(acked), leo["fl"]),
       ["missing or different at offset %s: %.20s..." % b for b in bad[:5]] +
       ([] if inorder else ["acknowledged offsets not 0, 1, 2, ..."]))
result(not badf and not after["partitions"]["fl-0"]["errors"],
       "fl: ... and its segment files hold them, read clean by kafka_log_dump.py",
       ["not in the files at offset %s: %.20s..." % b for b in badf[:5]] +
       after["partitions"]["fl-0"]["errors"][:5])

# df: a valid prefix of what was produced
p = after["partitions"]["df-0"]
want = [raw.acked_value("df", i) for i in range(leo["df"])]
result(not p["errors"] and not after["errors"] and p["log_start"] == 0 and
       p["next_offset"] == leo["df"] and p["values"] == want and
       consumed["df"] == [(str(i), v) for i, v in enumerate(want)],
       "df (default flush policy): recovered to its first %d records (%s "
       "were acknowledged), every batch valid, contiguous from 0, served and "
       "in the files as produced" % (leo["df"], sum(1 for _ in open(d + "/acked.df"))),
       p["errors"][:5] + after["errors"][:5] +
       ["log_start %s next_offset %s values %s" % (p["log_start"], p["next_offset"],
                                                  "as produced" if p["values"] == want else "differ")])

# a torn tail is cut where it begins, with its log line; a whole one stays
diag, ok = [], True
for t in ("fl", "df"):
    b = before["partitions"]["%s-0" % t]
    line = re.search(r"krep: %s-0: (\d{20}\.log): (.*) at byte (\d+) \(offset (\d+)\): "
                     r"truncated there" % t, dmesg)
    # the offset the first bad batch begins at, as kafka_log_dump.py read
    # it (an index pointing past the log is rebuilt, not a cut)
    logerr = [e for e in b["errors"] if re.match(r"\d{20}\.log position", e)]
    torn = bool(logerr)
    whole = b["next_offset"]
    for s in b["segments"]:
        if any(e.startswith(s["file"] + " ") for e in logerr):
            whole = s["next_offset"]
            break
    if torn:
        good = bool(line) and int(line.group(4)) == whole == leo[t]
        diag.append("%s-0: %s; cut at %s, LEO %d" % (
            t, "; ".join(logerr[:2]), line.group(0) if line else "no log line", leo[t]))
    else:
        good = not line and b["next_offset"] == leo[t]
        diag.append("%s-0: whole on disk up to %s; LEO %d%s" % (
            t, b["next_offset"], leo[t], "; " + line.group(0) if line else ""))
    ok = ok and good
result(ok, "recovery: a torn tail cut where the tear begins with its kernel log "
       "line, a whole log kept", diag)

# HW, log start, epochs, checkpoints
fin = after["checkpoints"]
ck = before["checkpoints"].get("replication-offset-checkpoint") or {}
diag = ["%s-0: HW checkpointed before the power loss %s, after recovery HW %d, "
        "LEO %d, epochs %s" % (t, ck.get(t + "-0"), desc[t]["hw"], leo[t],
                               desc[t].get("epochs")) for t in leo]
ok = all(desc[t]["hw"] == leo[t] and desc[t]["log_start"] == 0 for t in leo)
for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
    got = fin.get(name)
    ok = ok and got == {"%s-0" % t: leo[t] for t in leo}
    diag.append("final %s: %s" % (name, got))
for t in leo:
    e = after["partitions"]["%s-0" % t]["leader_epochs"]
    ok = ok and e is not None and all(s <= leo[t] for _, s in e)
ok = ok and after["clean_shutdown"] and not after["errors"] and \
    not any(p["errors"] for p in after["partitions"].values())
result(ok, "HW at the log end (RF 1), log start 0, epochs within the log; "
       "the clean shutdown's checkpoints at the log end, read clean", diag)
PY
checks=$(grep -cE '^(not )?ok ' "$dir/checks")
while IFS= read -r l; do
	case $l in
	"ok "*) ktap_ok "${l#ok }" ;;
	"not ok "*) ktap_fail "${l#not ok }" ;;
	"#"*) echo "$l" ;;
	*) echo "# $l" ;;
	esac
done <"$dir/checks"
[ "$checks" = 5 ] || ktap_fail "the checks of boot 2's files ran ($checks of 5 results)"

bad=$(krep_kernel_bad <"$dir/dmesg")
if [ -z "$bad" ]; then
	ktap_ok "boot 2's kernel log: no warning, oops or leak"
else
	ktap_fail "boot 2's kernel log: no warning, oops or leak"
	ktap_diag "$bad"
fi

# shellcheck disable=SC2154 # lib.sh's count
[ "$_ktap_fail" != 0 ] || rm -f "$img"
ktap_finish
