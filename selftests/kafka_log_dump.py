#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""kafka_log_dump.py - read a Kafka log directory and check it against
Kafka's on-disk format, for the durable logs of issue #22.

  kafka_log_dump.py LOGDIR [--partition TOPIC-N] [--values]

prints one JSON object: {"meta", "clean_shutdown", "checkpoints",
"partitions", "errors"}; each partition {"segments", "leader_epochs",
"log_start", "next_offset", ["values"], "errors"}. A checkpoint file that
is missing has no key, a malformed one is null. --values adds every record
value of the segment files (also those below log_start): a UTF-8 string,
"b64:..." when not UTF-8, null for a null value (control batches have
none; gzip is decoded, other codecs are errors). Segments also count
index_zero_tail and timeindex_zero_tail, the all-zero entries at the end.

The formats, from Apache Kafka (storage/.../internals/log/ and checkpoint/,
server-common CheckpointFile.java, metadata MetaProperties.java):
  <topic>-<partition>/<20-digit base offset>.log   RecordBatch v2, back to
      back (LogFileUtils). .index: 8-byte entries, int32 offset relative to
      the base, int32 position (OffsetIndex); LogSegment.append indexes the
      last offset of an append at the position of its first batch, never
      position 0, offsets and positions increasing. .timeindex: 12-byte
      entries, int64 timestamp, int32 relative offset (TimeIndex), each
      timestamp larger than the one before, the offset the last of a batch
      with that max timestamp (any in it is accepted: before KAFKA-16310 a
      leader wrote the record's); a rolled segment's last entry holds its
      max (onBecomeInactiveSegment). The active segment's indexes are
      preallocated (zeros) and trimmed at roll or clean shutdown, so zero
      entries at the end are accepted (and counted) only in the last
      segment without the .kafka_cleanshutdown marker.
  checkpoints "0\\n" COUNT "\\n" then entries, each line "\\n"-ended; an empty
      file (as created) has none. replication-offset-, recovery-point-
      offset-, log-start-offset-checkpoint: "topic partition offset";
      leader-epoch-checkpoint: "epoch startOffset", both strictly increasing.
  meta.properties   java properties: version 0 (broker.id) or 1 (cluster.id
      and node.id required).
  <20-digit offset>.snapshot   the producer state at that offset
      (ProducerStateManager, version 1): int16 version, uint32 CRC-32C of
      what follows it, int32 count, then entries of int64 producerId,
      int16 epoch, int32 lastSequence, int64 lastOffset, int32 offsetDelta,
      int64 timestamp, int32 coordinatorEpoch, int64 currentTxnFirstOffset;
      listed as the partition's "snapshots".
  <base>.txnindex   aborted transactions whose marker is in that segment
      (TransactionIndex): 34-byte entries of int16 version (0), int64
      producerId, firstOffset, lastOffset (the marker), lastStableOffset;
      listed as the segment's "aborted".

Exit status 0 without an error, 1 with one, 2 on usage.
"""

import argparse
import base64
import bisect
import json
import os
import re
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from krep_record import ATTR_CONTROL, HDR_LEN, crc32c, varint  # noqa: E402

SEG_RE = re.compile(r"(\d{20})\.(log|index|timeindex|snapshot|txnindex)")
SUFFIXES = (".log", ".index", ".timeindex", ".snapshot", ".txnindex")
PART_RE = re.compile(r"([a-zA-Z0-9._-]{1,249})-(0|[1-9][0-9]*)")
NAT = r"(0|[1-9][0-9]*)"			# as Java's toString writes them
INT = r"(-?(?:0|[1-9][0-9]*))"
OFFSET_CKPTS = ("replication-offset-checkpoint",
                "recovery-point-offset-checkpoint", "log-start-offset-checkpoint")


def slurp(path, errs):
    """The bytes of @path; None if it is missing or unreadable (an error)."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        errs.append("%s: %s" % (os.path.basename(path), e.strerror))
        return None


def read_checkpoint(path, entry_re, types, errs):
    """The entries of a checkpoint file as CheckpointFile writes it, each a
    tuple of @types; None (and an error) if it is malformed."""
    name = os.path.basename(path)
    data = slurp(path, errs)
    if data is None:
        return None
    if not data:
        return []
    lines = data.decode("utf-8", "replace").split("\n")
    if lines.pop() != "":
        errs.append("%s: the last line has no newline" % name)
        return None
    if lines[0] != "0":
        errs.append("%s: version %r, not 0" % (name, lines[0]))
        return None
    if len(lines) < 2 or not re.fullmatch(NAT, lines[1]):
        errs.append("%s: no entry count on line 2" % name)
        return None
    out = []
    for n, line in enumerate(lines[2:], 3):
        m = re.fullmatch(entry_re, line)
        if not m:
            errs.append("%s: line %d %r is malformed" % (name, n, line))
            return None
        out.append(tuple(t(g) for t, g in zip(types, m.groups())))
    if len(out) != int(lines[1]):
        errs.append("%s: count %s, %d entries" % (name, lines[1], len(out)))
        return None
    return out


def read_meta(path, errs):
    """meta.properties as a dict of strings (Properties.load, simplified)."""
    data = slurp(path, errs)
    if data is None:
        return None
    props = {}
    for line in data.decode("latin-1").splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        m = re.match(r"((?:\\.|[^\\:=\s])*)\s*[:=]?\s*(.*)", line)
        k, v = (re.sub(r"\\(.)", r"\1", s) for s in m.groups())
        props[k] = v
    ver = props.get("version", "0")
    need = {"0": (), "1": ("cluster.id", "node.id")}.get(ver)
    if need is None:
        errs.append("meta.properties: unknown version %r" % ver)
    for k in need or ():
        if k not in props:
            errs.append("meta.properties: version 1 without %s" % k)
    for k in ("broker.id", "node.id"):
        if k in props and not re.fullmatch(r"-?\d+", props[k]):
            errs.append("meta.properties: %s %r is not an int" % (k, props[k]))
    return props


def record_values(b, out):
    """Append the values of RecordBatch @b (None for a null value) to @out."""
    attrs = struct.unpack_from(">h", b, 21)[0]
    count = struct.unpack_from(">i", b, 57)[0]
    recs = b[HDR_LEN:]
    if attrs & 7 == 1:
        recs = zlib.decompress(recs, 16 + zlib.MAX_WBITS)
    elif attrs & 7:
        raise ValueError("compression codec %d not decoded" % (attrs & 7))
    if attrs & ATTR_CONTROL:
        return
    off = 0
    for _ in range(count):
        length, off = varint(recs, off)
        end = off + length
        _, off = varint(recs, off + 1)		# timestamp delta
        _, off = varint(recs, off)		# offset delta
        klen, off = varint(recs, off)
        vlen, off = varint(recs, off + max(klen, 0))
        if end > len(recs) or off + max(vlen, 0) > end:
            raise ValueError("a record overruns its length")
        out.append(recs[off:off + vlen] if vlen >= 0 else None)
        off = end
    if off != len(recs):
        raise ValueError("%d bytes after the last record" % (len(recs) - off))


def index_entries(data, size, fmt, what, zero_ok, errs):
    """(entries, all-zero entries at the end) of an index file's @data."""
    if data is None:
        errs.append("%s: missing" % what)
        return [], 0
    if len(data) % size:
        errs.append("%s: %d bytes, not a multiple of %d" % (what, len(data), size))
        data = data[:len(data) - len(data) % size]
    used = len(data.rstrip(b"\0"))
    used += -used % size
    zero = (len(data) - used) // size
    if zero and not zero_ok:
        errs.append("%s: %d all-zero entries at the end (Kafka trims an index "
                    "at roll and clean shutdown)" % (what, zero))
    return [struct.unpack_from(fmt, data, i) for i in range(0, used, size)], zero


def read_segment(pdir, base, last, clean, expect, values, errs):
    """The summary of segment @base, its batches and indexes checked;
    @expect is the offset the previous segment ended at (None if first).
    Returns (summary, next offset or None if a bad batch cut it short)."""
    name = "%020d" % base
    seg = {"file": name + ".log", "base": base}
    data = slurp(os.path.join(pdir, name + ".log"), errs) or b""
    batches = []			# (position, base offset, last offset, max ts)
    records = pos = 0
    while pos < len(data):
        where = "%s.log position %d" % (name, pos)
        left = len(data) - pos
        if left < HDR_LEN:
            errs.append("%s: torn tail, %d bytes, less than a batch "
                        "header" % (where, left))
            break
        bbase, blen, _, magic, crc = struct.unpack_from(">qiibI", data, pos)
        if blen < HDR_LEN - 12 or blen > left - 12:
            errs.append("%s: batchLength %d, %d bytes left%s" % (
                where, blen, left - 12, " (torn tail)" if blen > left - 12 else ""))
            break
        b = data[pos:pos + 12 + blen]
        delta = struct.unpack_from(">i", b, 23)[0]
        if magic != 2 or delta < 0:
            errs.append("%s: %s" % (where, "magic %d, not 2" % magic if magic != 2
                                    else "lastOffsetDelta %d" % delta))
            break
        if crc32c(b[21:]) != crc:
            errs.append("%s: CRC-32C mismatch" % where)
            break
        if not batches and bbase < base:
            errs.append("%s: first batch base %d below the segment base" % (where, bbase))
        if expect is not None and bbase != expect:
            errs.append("%s: base offset %d, %d expected (krep does not "
                        "compact)" % (where, bbase, expect))
        batches.append((pos, bbase, bbase + delta,
                        struct.unpack_from(">q", b, 35)[0]))
        records += struct.unpack_from(">i", b, 57)[0]
        expect = bbase + delta + 1
        if values is not None:
            try:
                record_values(b, values)
            except (ValueError, IndexError, zlib.error) as e:
                errs.append("%s: values: %s" % (where, e))
        pos += len(b)
    nxt = batches[-1][2] + 1 if batches else base
    maxts = max([t for *_, t in batches], default=-1)
    seg.update(bytes=len(data), batches=len(batches), records=records,
               first_offset=batches[0][1] if batches else None,
               next_offset=nxt, max_timestamp=maxts)

    zero_ok = last and not clean
    cut = pos < len(data)		# entries past a bad batch: counted once
    past = 0
    starts = {p: i for i, (p, *_) in enumerate(batches)}
    lasts = {lo: i for i, (_, _, lo, _) in enumerate(batches)}
    idx, seg["index_zero_tail"] = index_entries(
        slurp(os.path.join(pdir, name + ".index"), errs), 8, ">ii",
        name + ".index", zero_ok, errs)
    prev_k = -1
    for n, (rel, p) in enumerate(idx):
        w = "%s.index entry %d (%d, %d)" % (name, n, rel, p)
        j, k = starts.get(p), lasts.get(base + rel)
        if cut and p >= pos:
            past += 1
        elif j is None:
            errs.append("%s: position is not the start of a batch" % w)
        elif p == 0:
            errs.append("%s: position 0 (Kafka never indexes the first "
                        "batch)" % w)
        elif k is None or k < j:
            errs.append("%s: offset %d is not the last offset of the batch "
                        "there or of one after it" % (w, base + rel))
        elif j <= prev_k:
            errs.append("%s: not after the previous entry" % w)
        else:
            prev_k = k
    tidx, seg["timeindex_zero_tail"] = index_entries(
        slurp(os.path.join(pdir, name + ".timeindex"), errs), 12, ">qi",
        name + ".timeindex", zero_ok, errs)
    bases = [bb for _, bb, _, _ in batches]
    prev = None
    for n, (ts, rel) in enumerate(tidx):
        w = "%s.timeindex entry %d (%d, %d)" % (name, n, ts, rel)
        i = bisect.bisect_right(bases, base + rel) - 1
        if cut and base + rel >= nxt:
            past += 1
        elif i < 0 or base + rel > batches[i][2]:
            errs.append("%s: offset %d is in no batch" % (w, base + rel))
        elif batches[i][3] != ts:
            errs.append("%s: that batch's max timestamp is %d" % (w, batches[i][3]))
        if prev and (ts <= prev[0] or rel < prev[1]):
            errs.append("%s: timestamp not above, or offset below, the "
                        "previous entry's" % w)
        prev = (ts, rel)
    if past:
        errs.append("%s: %d index and timeindex entries past the last valid "
                    "batch" % (name, past))
    elif (not last or clean) and maxts >= 0 and (not tidx or tidx[-1][0] != maxts):
        errs.append("%s.timeindex: the last entry is not the segment's max "
                    "timestamp %d" % (name, maxts))
    seg.update(index_entries=len(idx), timeindex_entries=len(tidx))
    return seg, None if cut else nxt


SNAP_ENTRY = struct.Struct(">qhiqiqiq")
TXN_ENTRY = struct.Struct(">hqqqq")


def read_snapshot(path, offset, errs):
    """The producers of a .snapshot file, its version and CRC checked."""
    name = os.path.basename(path)
    data = slurp(path, errs) or b""
    if len(data) < 10:
        errs.append("%s: %d bytes, shorter than its header" % (name, len(data)))
        return None
    ver, crc, count = struct.unpack_from(">hIi", data, 0)
    if ver != 1:
        errs.append("%s: version %d, not 1" % (name, ver))
        return None
    if crc32c(data[6:]) != crc:
        errs.append("%s: CRC-32C mismatch" % name)
    if count < 0 or len(data) != 10 + count * SNAP_ENTRY.size:
        errs.append("%s: %d entries do not fill %d bytes" % (name, count, len(data)))
        return None
    keys = ("producer_id", "epoch", "last_sequence", "last_offset",
            "offset_delta", "timestamp", "coordinator_epoch",
            "current_txn_first_offset")
    prods = [dict(zip(keys, SNAP_ENTRY.unpack_from(data, 10 + i * SNAP_ENTRY.size)))
             for i in range(count)]
    for p in prods:
        if p["last_offset"] >= offset or p["current_txn_first_offset"] >= offset:
            errs.append("%s: producer %d has offsets past the snapshot's" %
                        (name, p["producer_id"]))
    return {"offset": offset, "producers": prods}


def read_txnindex(path, base, nxt, errs):
    """The aborted transactions of a .txnindex file; each marker must be in
    its segment, [base, nxt)."""
    name = os.path.basename(path)
    data = slurp(path, errs) or b""
    if len(data) % TXN_ENTRY.size:
        errs.append("%s: %d bytes, not a multiple of %d" % (name, len(data), TXN_ENTRY.size))
    out = []
    for i in range(0, len(data) - len(data) % TXN_ENTRY.size, TXN_ENTRY.size):
        ver, pid, first, last, lso = TXN_ENTRY.unpack_from(data, i)
        if ver != 0 or not first <= last or not base <= last < nxt:
            errs.append("%s: entry %d (version %d, %d..%d) is not an aborted "
                        "transaction ending in this segment" % (name, i // TXN_ENTRY.size,
                                                                ver, first, last))
        out.append({"producer_id": pid, "first_offset": first,
                    "last_offset": last, "last_stable_offset": lso})
    return out


def read_partition(pdir, clean, log_start, want_values):
    errs = []
    part = {"segments": [], "leader_epochs": None, "log_start": None,
            "next_offset": None}
    values = [] if want_values else None
    names = sorted(os.listdir(pdir))
    bases = []
    for f in names:
        m = SEG_RE.fullmatch(f)
        if m and int(m[1]) >= 1 << 63:
            errs.append("%s: base offset above a long" % f)
        elif m and m[2] == "log":
            bases.append(int(m[1]))
        elif m and m[2] in ("index", "timeindex", "txnindex") and m[1] + ".log" not in names:
            errs.append("%s: no %s.log" % (f, m[1]))
        elif not m and f.endswith(SUFFIXES):
            errs.append("%s: not <20-digit base offset>%s" % (f, os.path.splitext(f)[1]))
    if not bases:
        errs.append("no segment (Kafka keeps at least one, maybe empty)")
    expect = None
    for i, base in enumerate(bases):
        if expect is not None and base != expect:
            errs.append("segment %020d: the previous one ends at %d" % (base, expect))
        seg, nxt = read_segment(pdir, base, i == len(bases) - 1, clean,
                                expect, values, errs)
        tpath = os.path.join(pdir, "%020d.txnindex" % base)
        if os.path.exists(tpath):
            seg["aborted"] = read_txnindex(tpath, base, seg["next_offset"], errs)
        part["segments"].append(seg)
        expect = None if nxt is None else max(nxt, expect or 0)
    if bases:
        part["log_start"] = max(bases[0], log_start or 0)
        part["next_offset"] = part["segments"][-1]["next_offset"]
    part["snapshots"] = []
    for f in names:
        m = SEG_RE.fullmatch(f)
        if m and m[2] == "snapshot":
            snap = read_snapshot(os.path.join(pdir, f), int(m[1]), errs)
            if snap:
                part["snapshots"].append(snap)
            if bases and int(m[1]) > part["next_offset"]:
                errs.append("%s: past the log end %d" % (f, part["next_offset"]))
    epochs = read_checkpoint(os.path.join(pdir, "leader-epoch-checkpoint"),
                             NAT + " " + NAT, (int, int), errs)
    if epochs is not None:
        part["leader_epochs"] = [list(e) for e in epochs]
        for a, b in zip(epochs, epochs[1:]):
            if b[0] <= a[0] or b[1] <= a[1]:
                errs.append("leader-epoch-checkpoint: %d %d after %d %d (both "
                            "must increase)" % (b + a))
    if values is not None:
        part["values"] = [v if v is None else text(v) for v in values]
    part["errors"] = errs
    return part


def text(v):
    try:
        return v.decode("utf-8")
    except UnicodeDecodeError:
        return "b64:" + base64.b64encode(v).decode()


def main(argv=None):
    """argv: sys.argv's form (selftests/pyserve.py calls it so); None for
    this process's own"""
    ap = argparse.ArgumentParser(prog="kafka_log_dump.py",
                                 description="Dump and check a Kafka log directory.")
    ap.add_argument("logdir")
    ap.add_argument("--partition", metavar="TOPIC-N")
    ap.add_argument("--values", action="store_true")
    a = ap.parse_args(None if argv is None else argv[1:])
    if not os.path.isdir(a.logdir):
        ap.error("%s is not a directory" % a.logdir)
    if a.partition and not PART_RE.fullmatch(a.partition):
        ap.error("--partition %s is not TOPIC-N" % a.partition)
    errs = []
    out = {"meta": read_meta(os.path.join(a.logdir, "meta.properties"), errs),
           "clean_shutdown": os.path.exists(os.path.join(a.logdir, ".kafka_cleanshutdown")),
           "checkpoints": {}, "partitions": {}, "errors": errs}
    for name in OFFSET_CKPTS:
        path = os.path.join(a.logdir, name)
        if not os.path.exists(path):
            continue
        ents = read_checkpoint(path, r"([a-zA-Z0-9._-]+) %s %s" % (NAT, INT),
                               (str, int, int), errs)
        out["checkpoints"][name] = None if ents is None else {}
        for t, p, off in ents or ():
            tp = "%s-%d" % (t, p)
            if tp in out["checkpoints"][name]:
                errs.append("%s: %s twice" % (name, tp))
            out["checkpoints"][name][tp] = off
    starts = out["checkpoints"].get("log-start-offset-checkpoint") or {}
    dirs = [d for d in sorted(os.listdir(a.logdir))
            if os.path.isdir(os.path.join(a.logdir, d))]
    if a.partition:
        if a.partition not in dirs:
            errs.append("no directory %s" % a.partition)
        dirs = [d for d in dirs if d == a.partition]
    for d in dirs:
        if d.endswith(("-delete", "-future", "-stray")):
            continue			# not a live log (LocalLog.parseTopicPartitionName)
        if not PART_RE.fullmatch(d):
            errs.append("directory %s is not topic-partition (Kafka refuses "
                        "the log directory)" % d)
            continue
        try:
            out["partitions"][d] = read_partition(os.path.join(a.logdir, d),
                                                  out["clean_shutdown"],
                                                  starts.get(d), a.values)
        except Exception as e:	# never a trace: the dump goes on
            errs.append("%s: %s: %s" % (d, type(e).__name__, e))
    json.dump(out, sys.stdout, indent=1)
    print()
    bad = errs or any(p["errors"] for p in out["partitions"].values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
