#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""fuzz_kafka.py - a structure-aware fuzzer of a krep cluster's sockets,
for selftests/fuzz.sh (make fuzz).

Every input starts as a valid request, built field by field as a tree
(sizes, array counts, string lengths, varints, versions, API keys,
correlation ids, record batches with their CRC), and is then mutated in
that tree (integers and prefixes set to boundary values, array items
duplicated or dropped, strings rewritten, nulls) and sometimes as bytes
(flips, inserts, deletes, boundary words, truncation), then sent alone,
pipelined, in small pieces, cut short and stalled, reset or half-closed.

  run --seed S --secs N [options]
      fuzz for N seconds, in one process and many short connections:
        kafka-leader    Kafka requests of every API and version the
                        broker lists (ApiVersions) to --kafka-leader
        kafka-follower  the same to --kafka-follower
        peer-follower   inter-broker frames to --peer (HELLO claiming
                        --peer-id, AUTH, FETCHes): run it from that
                        peer id's configured address
        peer-leader     a fake leader on --listen: the broker, which
                        has --peer-id there as a peer, connects to it;
                        it answers HELLO and the broker's FETCHes
      Everything is drawn from S: session K of target T from
      random.Random("S/T/K") alone. An oracle models how the broker
      frames what was sent and says what it must do and by when: answer
      the last request (a sentinel) or close within its waits plus
      SLACK seconds (a partial request: its 30 s, an idle Kafka
      connection: --kafka-idle-ms, a peer without AUTH:
      --hello-timeout-ms, a fake leader's late answer:
      --fetch-timeout-ms). Also checked: responses come in request
      order with known correlation ids and sane sizes, the broker's
      own frames (HELLO, AUTH, FETCH, FETCH_RESP) parse exactly,
      valid requests sent unmutated are all answered, each leader's
      earliest and latest offsets never move back (a monitor), and
      the listeners keep accepting. Prints "fuzz: ..." lines:
      progress every second, "result TARGET inputs N rate R/s ..."
      at the end, "FAIL ..." lines and, for each failure, a
      FUZZ-REPRO block (the failing connection's inputs and the last
      RING connections of every target, zlib and base64). --ring FILE
      gets the blocks of the last connections at the end whatever
      happened. Exit status 1 on a failure.
  extract CONSOLE OUTDIR
      (on the host) write the FUZZ-REPRO blocks of a console log to
      OUTDIR/repro-SEED-NAME.json and .txt; after a kernel crash,
      where the VM died before any block, regenerate the connections
      in flight (from the seed, the config and the last progress
      line) into OUTDIR/repro-SEED-crash.json.
  replay FILE [SESSION]
      send again the inputs of a reproducer's client sessions (Kafka
      and peer-follower: each to the address it went to; run it where
      they ran, e.g. in fuzz.sh's namespace X), printing what comes
      back.

Exit status 0, 1 on a failure, 2 on usage.
"""

import argparse
import asyncio
import base64
import collections
import copy
import json
import os
import random
import re
import socket
import struct
import sys
import time
import traceback
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from krep_record import crc32c  # noqa: E402

SLACK = 35.0            # seconds a broker may take past its own deadlines
REQUEST_MS = 30000      # kafka.c: KREP_KAFKA_REQUEST_MS
WAIT_MAX_MS = 30000     # kafka_api.c and replica.c: the longest wait
REPLICA_FETCH_WAIT_MS = 500     # fetcher.c
RING = 16               # connections kept per target for a reproducer
KEEP_BYTES = 65536      # bytes of one send kept in a reproducer

# inter-broker wire protocol (uapi/linux/krep_wire.h)
MAGIC = 0x4B524550
WIRE_VERSION = 2
HELLO, FETCH, FETCH_RESP, AUTH = 1, 2, 3, 4
HDR = struct.Struct(">IBBHII")
HELLO_LEN = 264
AUTH_LEN = 32
WIRE_MAX_PAYLOAD = 4 << 20
WIRE_MAX_PARTS = 4096
WIRE_MAX_REQUEST = 16 + WIRE_MAX_PARTS * (2 + 249 + 32)
NO_DIVERGENCE = (1 << 64) - 1
TOPIC_MAX = 249
ADV_MAX = 127

KAPI_NAMES = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata",
              18: "ApiVersions", 23: "OffsetForLeaderEpoch"}

# --- fields as trees -----------------------------------------------------------

MASK = {"b": 0xFF, "h": 0xFFFF, "i": 0xFFFFFFFF, "q": (1 << 64) - 1}
UFMT = {"b": ">B", "h": ">H", "i": ">I", "q": ">Q"}
BITS = {"b": 8, "h": 16, "i": 32, "q": 64}


def uvarint(v, pad=0):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v or pad:
            out.append(b | 0x80)
            if not v:
                pad -= 1
                if pad == 0:
                    out.append(0)
                    return bytes(out)
        else:
            out.append(b)
            return bytes(out)


def zigzag(v):
    return uvarint(((v << 1) ^ (v >> 63)) & ((1 << 64) - 1))


class Node:
    role = ""

    def kids(self):
        return ()

    def walk(self):
        yield self
        for k in self.kids():
            if k is not None:
                yield from k.walk()


class Int(Node):
    """A big-endian integer; auto ones are filled in by their parent
    (lengths, CRCs) until a mutation sets them."""

    def __init__(self, fmt, v, role="", auto=False):
        self.fmt, self.v, self.role, self.auto = fmt, v, role, auto

    def ser(self, auto_v=None):
        v = auto_v if self.auto and auto_v is not None else self.v
        return struct.pack(UFMT[self.fmt], v & MASK[self.fmt])


class UVar(Node):
    def __init__(self, v, role="", pad=0):
        self.v, self.role, self.pad = v, role, pad

    def ser(self):
        return uvarint(self.v, self.pad)


class ZVar(Node):
    def __init__(self, v, role=""):
        self.v, self.role = v, role

    def ser(self):
        return zigzag(self.v)


class Raw(Node):
    def __init__(self, b, role="", fixed=False):
        self.b, self.role, self.fixed = bytes(b), role, fixed

    def ser(self):
        return self.b


class Seq(Node):
    def __init__(self, items, role=""):
        self.items, self.role = list(items), role

    def kids(self):
        return self.items

    def ser(self):
        return b"".join(k.ser() for k in self.items)


class Items(Seq):
    """An array's elements: a mutation may duplicate, drop or reorder them."""


def enc_prefix(kind, n):
    if kind == "i16":
        return struct.pack(">H", (-1 if n is None else n) & 0xFFFF)
    if kind == "i32":
        return struct.pack(">I", (-1 if n is None else n) & 0xFFFFFFFF)
    if kind == "uv1":           # compact: length + 1, 0 for null
        return uvarint(0 if n is None else n + 1)
    if kind == "uv":
        return uvarint(0 if n is None else n)
    if kind == "zv":            # a record's zigzag varint, -1 for null
        return zigzag(-1 if n is None else n)
    raise ValueError(kind)


class Pre(Node):
    """A length (or, with count, an item count) prefix, then the child;
    a None child is null. A mutation sets over, the prefix's value."""

    def __init__(self, kind, child, count=False, role=None):
        self.kind, self.child, self.count = kind, child, count
        self.role = role or ("count" if count else "len")
        self.over = None
        self.pad = 0

    def kids(self):
        return (self.child,) if self.child is not None else ()

    def actual(self):
        if self.child is None:
            return None
        if self.count:
            return len(self.child.items)
        return len(self.child.ser())

    def ser(self):
        body = b"" if self.child is None else self.child.ser()
        if self.over is not None:
            n = self.over
        elif self.child is None:
            n = None
        elif self.count:
            n = len(self.child.items)
        else:
            n = len(body)
        pre = enc_prefix(self.kind, n)
        if self.pad and self.kind in ("uv1", "uv"):     # overlong varint
            pre = uvarint(0 if n is None else n + (self.kind == "uv1"),
                          self.pad)
        return pre + body


class Batch(Node):
    """A RecordBatch v2: batchLength and the CRC-32C over attributes to
    the end are computed unless mutated."""

    FIELDS = ("base", "length", "epoch", "magic", "crc", "attrs", "last",
              "bts", "mts", "pid", "pep", "bseq")

    def __init__(self, base, epoch, attrs, ts, pid, pep, bseq, records,
                 last=None):
        n = len(records)
        self.f = collections.OrderedDict([
            ("base", Int("q", base, "offset")),
            ("length", Int("i", 0, "size", auto=True)),
            ("epoch", Int("i", epoch, "epoch")),
            ("magic", Int("b", 2, "ver")),
            ("crc", Int("i", 0, "crc", auto=True)),
            ("attrs", Int("h", attrs, "flags")),
            ("last", Int("i", n - 1 if last is None else last, "count")),
            ("bts", Int("q", ts, "ts")),
            ("mts", Int("q", ts, "ts")),
            ("pid", Int("q", pid, "id")),
            ("pep", Int("h", pep, "epoch")),
            ("bseq", Int("i", bseq, "")),
        ])
        self.recs = Pre("i32", Items(records), count=True)
        self.role = "batch"
        self.stale_crc = False

    def kids(self):
        return list(self.f.values()) + [self.recs]

    def ser(self):
        f = self.f
        tail = (f["attrs"].ser() + f["last"].ser() + f["bts"].ser() +
                f["mts"].ser() + f["pid"].ser() + f["pep"].ser() +
                f["bseq"].ser() + self.recs.ser())
        crc = f["crc"].ser(crc32c(tail))
        mid = f["epoch"].ser() + f["magic"].ser() + crc + tail
        return f["base"].ser() + f["length"].ser(len(mid)) + mid

    def count(self):
        return len(self.recs.child.items)


class WFrame(Node):
    """An inter-broker frame: header (its length computed) and payload."""

    def __init__(self, ftype, payload, corr=0):
        self.h = [Int("i", MAGIC, "magic"), Int("b", WIRE_VERSION, "ver"),
                  Int("b", ftype, "key"), Int("h", 0, "flags"),
                  Int("i", 0, "size", auto=True), Int("i", corr, "corr")]
        self.payload = payload
        self.role = "frame"

    def kids(self):
        return self.h + [self.payload]

    def ser(self):
        p = self.payload.ser()
        h = self.h
        return (h[0].ser() + h[1].ser() + h[2].ser() + h[3].ser() +
                h[4].ser(len(p)) + h[5].ser() + p)


def record(rnd, i, value, key=None, headers=()):
    body = Seq([Int("b", 0, "flags"), ZVar(rnd.choice([0, 0, 1, 1000]), "ts"),
                ZVar(i, "count"),
                Pre("zv", None if key is None else Raw(key, "data")),
                Pre("zv", None if value is None else Raw(value, "data")),
                Pre("zv", Items([Seq([Pre("zv", Raw(k, "data")),
                                      Pre("zv", Raw(v, "data"))])
                                 for k, v in headers]), count=True)])
    return Pre("zv", body, role="len")


def rand_value(rnd):
    r = rnd.random()
    if r < 0.80:
        n = rnd.randint(0, 120)
    elif r < 0.97:
        n = rnd.randint(120, 2000)
    else:
        n = rnd.randint(2000, 20000)
    return bytes(rnd.getrandbits(8) for _ in range(min(n, 64))) * \
        (n // 64) + bytes(n % 64)


def make_batch(rnd, base=0, epoch=-1, nrec=None, now_ms=None):
    if nrec is None:
        nrec = rnd.choice([1, 1, 1, 2, 3, 5]) if rnd.random() < 0.95 else \
            rnd.randint(6, 40)
    recs = []
    for i in range(nrec):
        key = None if rnd.random() < 0.6 else rand_value(rnd)[:16]
        hdrs = [] if rnd.random() < 0.8 else \
            [(b"h%d" % j, b"v") for j in range(rnd.randint(1, 3))]
        recs.append(record(rnd, i, rand_value(rnd), key, hdrs))
    r = rnd.random()
    attrs, pid, pep, bseq = 0, -1, -1, -1
    if r < 0.05:
        attrs = rnd.randint(1, 4)               # compressed: stored as is
    elif r < 0.09:
        attrs, pid, pep, bseq = 0x10, rnd.randint(1000, 1003), 0, 0
    elif r < 0.11:
        attrs = 0x30                            # a control batch
    ts = now_ms if now_ms is not None else 1700000000000 + rnd.randint(0, 1 << 30)
    return Batch(base, epoch, attrs, ts, pid, pep, bseq, recs)


# --- mutations -------------------------------------------------------------------

ROLE_WEIGHT = {"": 1, "size": 4, "count": 4, "len": 4, "ver": 3, "key": 2,
               "corr": 1, "wait": 3, "offset": 3, "epoch": 3, "acks": 3,
               "ts": 2, "part": 3, "crc": 2, "flags": 2, "id": 2, "magic": 1}


def boundary(rnd, bits, cur):
    c = rnd.choice([0, 1, -1, -2, 2, cur + 1, cur - 1, -cur, cur * 2,
                    (1 << (bits - 1)) - 1, -(1 << (bits - 1)),
                    (1 << bits) - 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF,
                    0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32,
                    (1 << 63) - 1, 1 << 63, 249, 250, 4096, 4097, 65536,
                    rnd.getrandbits(bits)])
    return c


def weighted(rnd, nodes):
    w = [ROLE_WEIGHT.get(n.role, 1) for n in nodes]
    return rnd.choices(nodes, weights=w)[0]


INTERESTING = [b"", b".", b"..", b"a" * 249, b"b" * 250, b"c" * 300,
               b"bad/name", b"fz\0", b"\xff\xfe", b"%s%n", b"fz", b"fz9",
               b"h:1", b"[::1]:9", b"a:0", b"a:65536", b"x" * 127 + b":1"]


def raw_mutate(rnd, node):
    b = bytearray(node.b)
    r = rnd.random()
    if r < 0.3 and b:
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(len(b))
            b[i] ^= 1 << rnd.randrange(8)
    elif r < 0.5:
        b = bytearray(rnd.choice(INTERESTING))
    elif r < 0.65:
        i = rnd.randint(0, len(b))
        b[i:i] = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 16)))
    elif r < 0.8 and b:
        i = rnd.randrange(len(b))
        del b[i:i + rnd.randint(1, 16)]
    elif r < 0.9:
        b = b * rnd.randint(2, 4)
    else:
        b = bytearray()
    if node.fixed:
        n = len(node.b)
        b = (bytes(b) + bytes(n))[:n]
    node.b = bytes(b)


def mutate_tree(rnd, root, n=None):
    """Apply 1-3 structure-aware mutations to @root; a list of what."""
    what = []
    for _ in range(n or rnd.choice([1, 1, 1, 2, 2, 3])):
        nodes = list(root.walk())
        ints = [x for x in nodes if isinstance(x, Int)]
        vars_ = [x for x in nodes if isinstance(x, (UVar, ZVar))]
        pres = [x for x in nodes if isinstance(x, Pre)]
        items = [x for x in nodes if isinstance(x, Items) and x.items]
        raws = [x for x in nodes if isinstance(x, Raw)]
        ops = []
        if ints:
            ops += [("int", 8)]
        if vars_:
            ops += [("var", 2)]
        if pres:
            ops += [("prefix", 5), ("null", 1)]
        if items:
            ops += [("dup", 3), ("del", 2), ("swap", 1)]
        if raws:
            ops += [("raw", 3)]
        op = rnd.choices([o for o, _ in ops], weights=[w for _, w in ops])[0]
        if op == "int":
            x = weighted(rnd, ints)
            x.v = boundary(rnd, BITS[x.fmt], x.v)
            x.auto = False
            what.append("int %s=%d" % (x.role or "?", x.v))
        elif op == "var":
            x = rnd.choice(vars_)
            if isinstance(x, UVar) and rnd.random() < 0.3:
                x.pad = rnd.randint(1, 6)
            else:
                x.v = boundary(rnd, 64, x.v)
            what.append("varint %s=%d" % (x.role or "?", x.v))
        elif op == "prefix":
            x = weighted(rnd, pres)
            cur = x.actual() or 0
            x.over = boundary(rnd, 32 if x.kind != "i16" else 16, cur)
            if rnd.random() < 0.1 and x.kind in ("uv1", "uv"):
                x.pad = rnd.randint(1, 5)
            what.append("%s prefix=%d (is %d)" % (x.role, x.over, cur))
        elif op == "null":
            x = rnd.choice(pres)
            x.child = None
            what.append("null %s" % x.role)
        elif op == "dup":
            x = rnd.choice(items)
            k = 1 if rnd.random() < 0.8 else rnd.randint(2, 50)
            it = x.items[rnd.randrange(len(x.items))]
            for _ in range(k):
                x.items.insert(rnd.randint(0, len(x.items)), copy.deepcopy(it))
            what.append("dup item x%d" % k)
        elif op == "del":
            x = rnd.choice(items)
            del x.items[rnd.randrange(len(x.items))]
            what.append("del item")
        elif op == "swap":
            x = rnd.choice(items)
            rnd.shuffle(x.items)
            what.append("shuffle items")
        else:
            x = rnd.choice(raws)
            raw_mutate(rnd, x)
            what.append("raw %s len %d" % (x.role or "?", len(x.b)))
    return what


def bytes_mutate(rnd, data):
    """Byte-level: flips, inserts, deletes, boundary words, duplication."""
    b = bytearray(data)
    r = rnd.random()
    if not b:
        return bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 8))), \
            "bytes insert"
    if r < 0.3:
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(len(b))
            b[i] ^= 1 << rnd.randrange(8)
        what = "bytes flip"
    elif r < 0.45:
        i = rnd.randint(0, len(b))
        b[i:i] = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 32)))
        what = "bytes insert"
    elif r < 0.6:
        i = rnd.randrange(len(b))
        del b[i:i + rnd.randint(1, 32)]
        what = "bytes delete"
    elif r < 0.85:
        w = rnd.choice([1, 2, 4, 8])
        i = rnd.randrange(max(1, len(b) - w + 1))
        v = boundary(rnd, w * 8, 0) & ((1 << (w * 8)) - 1)
        b[i:i + w] = v.to_bytes(w, "big")
        what = "bytes word %d@%d" % (w, i)
    else:
        i = rnd.randrange(len(b))
        j = rnd.randint(i, min(len(b), i + 64))
        k = rnd.randint(0, len(b))
        b[k:k] = b[i:j]
        what = "bytes dup"
    return bytes(b), what


# --- Kafka requests ------------------------------------------------------------------

def kstr(s, role="len"):
    return Pre("i16", None if s is None else Raw(s, "name"), role=role)


def karr(items):
    return Pre("i32", Items(items), count=True)


def cstr(s):
    return Pre("uv1", None if s is None else Raw(s, "name"))


def tagbuf(rnd):
    tags = []
    if rnd.random() < 0.2:
        tags = [Seq([UVar(rnd.choice([0, 1, 7, 1 << 20]), "id"),
                     Pre("uv", Raw(bytes(rnd.randint(0, 8)), "data"))])
                for _ in range(rnd.randint(1, 3))]
    return Pre("uv", Items(tags), count=True)


class Cfg:
    """What the generators need to know of the cluster (from the command
    line, so that a seed reproduces the same inputs)."""

    def __init__(self, a):
        self.topics = [(t.split(":")[0], int(t.split(":")[1]))
                       for t in a.topics.split(",")]
        self.cluster = a.cluster
        self.peer_id = a.peer_id
        self.epoch9 = a.peer_epoch
        self.peer_topic = a.peer_topic
        self.max_request = a.max_request
        self.apis = {0: (3, 8), 1: (4, 11), 2: (1, 5), 3: (0, 8), 18: (0, 3)}

    def to_json(self):
        return {"topics": self.topics, "cluster": self.cluster,
                "peer_id": self.peer_id, "epoch9": self.epoch9,
                "peer_topic": self.peer_topic,
                "max_request": self.max_request,
                "apis": {str(k): v for k, v in self.apis.items()}}

    @classmethod
    def from_json(cls, j):
        c = cls.__new__(cls)
        c.topics = [tuple(t) for t in j["topics"]]
        c.cluster = j["cluster"]
        c.peer_id = j["peer_id"]
        c.epoch9 = j["epoch9"]
        c.peer_topic = j["peer_topic"]
        c.max_request = j["max_request"]
        c.apis = {int(k): tuple(v) for k, v in j["apis"].items()}
        return c


def pick_topic(rnd, cfg):
    r = rnd.random()
    if r < 0.88:
        t, n = rnd.choice(cfg.topics)
        return t.encode(), n
    return rnd.choice([b"nosuch", b"bad/name", b"", b".", b"a" * 249,
                       b"b" * 250]), 1


def pick_parts(rnd, cfg, k):
    """Up to @k distinct (topic, partition) pairs, grouped by topic."""
    seen, out = set(), collections.OrderedDict()
    for _ in range(k):
        t, n = pick_topic(rnd, cfg)
        r = rnd.random()
        p = rnd.randrange(n) if r < 0.93 else \
            rnd.choice([-1, n, 0x7FFFFFFF, 1023])
        if (t, p) in seen:
            continue
        seen.add((t, p))
        out.setdefault(t, []).append(p)
    return list(out.items())


def kreq(rnd, key, ver, corr, body, flex_hdr=False):
    client = rnd.choice([b"krep-fuzz", b"", None, b"c" * 100])
    hdr = [Int("h", key, "key"), Int("h", ver, "ver"), Int("i", corr, "corr"),
           kstr(client)]
    if flex_hdr:
        hdr.append(tagbuf(rnd))
    return Pre("i32", Seq(hdr + body), role="size")


def pick_wait(rnd):
    r = rnd.random()
    if r < 0.35:
        return 0
    if r < 0.85:
        return rnd.randint(1, 300)
    if r < 0.97:
        return rnd.randint(300, 3000)
    return rnd.choice([5000, 6000, 10000, 30000])


def pick_offset(rnd):
    r = rnd.random()
    if r < 0.35:
        return 0
    if r < 0.6:
        return rnd.randint(0, 50)
    if r < 0.9:
        return rnd.randint(0, 5000)
    return rnd.choice([-1, -2, 1 << 40, (1 << 63) - 1, 1 << 63])


def b_produce(rnd, cfg, ver, meta):
    acks = rnd.choices([1, -1, 0, 2, -2], weights=[45, 35, 14, 3, 3])[0]
    meta["acks"] = acks
    timeout = rnd.choice([0, 100, 1000, 2000, 5000])
    topics = []
    for t, parts in pick_parts(rnd, cfg, rnd.choice([1, 1, 1, 2, 3])):
        ps = []
        for p in parts:
            recs = None if rnd.random() < 0.02 else make_batch(rnd)
            ps.append(Seq([Int("i", p, "part"), Pre("i32", recs, role="size")]))
        topics.append(Seq([kstr(t), karr(ps)]))
    txid = None if rnd.random() < 0.9 else b"txn-fuzz"
    return [kstr(txid), Int("h", acks, "acks"), Int("i", timeout, "wait"),
            karr(topics)]


def b_fetch(rnd, cfg, ver, meta):
    wait = pick_wait(rnd)
    body = [Int("i", -1, "id"), Int("i", wait, "wait"),
            Int("i", rnd.choice([0, 1, 1, 1, 100]), "size"),
            Int("i", rnd.choice([1 << 20, 65536, 1000, 50 << 20]), "size"),
            Int("b", rnd.choice([0, 0, 1]), "flags")]
    if ver >= 7:
        body += [Int("i", 0, "id"), Int("i", -1, "epoch")]
    topics = []
    nparts = 0 if rnd.random() < 0.1 else rnd.choice([1, 1, 1, 2, 3, 4])
    for t, parts in pick_parts(rnd, cfg, nparts):
        ps = []
        for p in parts:
            f = [Int("i", p, "part")]
            if ver >= 9:
                f.append(Int("i", rnd.choice([-1, -1, 0, 0, 1]), "epoch"))
            f.append(Int("q", pick_offset(rnd), "offset"))
            if ver >= 5:
                f.append(Int("q", -1, "offset"))
            f.append(Int("i", rnd.choice([1 << 20, 65536, 4096, 100]), "size"))
            ps.append(Seq(f))
        topics.append(Seq([kstr(t), karr(ps)]))
    body.append(karr(topics))
    if ver >= 7:
        forgotten = []
        if rnd.random() < 0.1:
            forgotten = [Seq([kstr(b"fz"), karr([Int("i", 0, "part")])])]
        body.append(karr(forgotten))
    if ver >= 11:
        body.append(kstr(rnd.choice([b"", None, b"rack-a"])))
    return body


def b_list_offsets(rnd, cfg, ver, meta):
    body = [Int("i", -1, "id")]
    if ver >= 2:
        body.append(Int("b", rnd.choice([0, 1]), "flags"))
    topics = []
    for t, parts in pick_parts(rnd, cfg, rnd.choice([1, 1, 2, 3])):
        ps = []
        for p in parts:
            f = [Int("i", p, "part")]
            if ver >= 4:
                f.append(Int("i", rnd.choice([-1, 0]), "epoch"))
            f.append(Int("q", rnd.choice([-1, -2, -1, -2, 0,
                                          1700000000000,
                                          int(time.time() * 1000)]), "ts"))
            ps.append(Seq(f))
        topics.append(Seq([kstr(t), karr(ps)]))
    body.append(karr(topics))
    return body


def b_metadata(rnd, cfg, ver, meta):
    r = rnd.random()
    if r < 0.2 and ver >= 1:
        topics = Pre("i32", None, count=True)           # null: all topics
    elif r < 0.3:
        topics = karr([])
    else:
        topics = karr([kstr(t) for t, _ in
                       pick_parts(rnd, cfg, rnd.choice([1, 2, 3]))])
    body = [topics]
    if ver >= 4:
        body.append(Int("b", rnd.choice([0, 1]), "flags"))
    if ver >= 8:
        body += [Int("b", rnd.choice([0, 1]), "flags"),
                 Int("b", rnd.choice([0, 1]), "flags")]
    return body


def b_api_versions(rnd, cfg, ver, meta):
    if ver < 3:
        return []
    return [cstr(rnd.choice([b"krep-fuzz", b"", None])),
            cstr(rnd.choice([b"1.0", b""])), tagbuf(rnd)]


def b_epoch(rnd, cfg, ver, meta):
    body = []
    if ver >= 3:
        body.append(Int("i", -1, "id"))
    topics = []
    for t, parts in pick_parts(rnd, cfg, rnd.choice([1, 1, 2])):
        ps = []
        for p in parts:
            f = [Int("i", p, "part")]
            if ver >= 2:
                f.append(Int("i", rnd.choice([-1, 0, 0, 1]), "epoch"))
            f.append(Int("i", rnd.choice([0, 0, 1, -1, 5]), "epoch"))
            ps.append(Seq(f))
        topics.append(Seq([kstr(t), karr(ps)]))
    body.append(karr(topics))
    return body


BUILDERS = {0: b_produce, 1: b_fetch, 2: b_list_offsets, 3: b_metadata,
            18: b_api_versions, 23: b_epoch}
API_WEIGHT = {0: 30, 1: 30, 2: 10, 3: 12, 18: 6, 23: 8}


def sentinel(corr):
    """ApiVersions v0: answered at once, after whatever came before."""
    return struct.pack(">ihhih", 10, 18, 0, corr, -1)


def kafka_unit(rnd, cfg, corr):
    """One Kafka request, built valid and mostly mutated: (bytes, meta)."""
    meta = {"corr": corr}
    apis = [k for k in cfg.apis if k in BUILDERS]
    if rnd.random() < 0.04:
        key = rnd.choice([4, 5, 9, 10, 17, 19, 22, 24, 36, 60, 1234, -1,
                          0x7FFF])
        ver = rnd.randint(0, 3)
        body = [Raw(bytes(rnd.getrandbits(8)
                          for _ in range(rnd.randint(0, 40))), "data")]
        meta["desc"] = "api %d v%d" % (key, ver)
    else:
        key = rnd.choices(apis, weights=[API_WEIGHT.get(k, 5)
                                         for k in apis])[0]
        lo, hi = cfg.apis[key]
        if rnd.random() < 0.93:
            ver = rnd.randint(lo, hi)
        else:
            ver = rnd.choice([lo - 1, hi + 1, -1, 0x7FFF, hi + 5])
        bver = min(max(ver, lo), hi)
        body = BUILDERS[key](rnd, cfg, bver, meta)
        meta["desc"] = "%s v%d" % (KAPI_NAMES.get(key, key), ver)
    meta["key"] = key
    meta["ver"] = ver
    tree = kreq(rnd, key, ver, corr, body,
                flex_hdr=(key == 18 and ver == 3))
    meta["mutated"] = False
    r = rnd.random()
    if r < 0.15:
        data = tree.ser()
    else:
        meta["mutated"] = True
        what = []
        if r < 0.85:
            what = mutate_tree(rnd, tree)
        data = tree.ser()
        if r >= 0.7:
            inner = data[4:]
            inner, w = bytes_mutate(rnd, inner)
            what.append(w)
            if tree.over is None or rnd.random() < 0.5:
                data = struct.pack(">I", len(inner)) + inner
            else:
                data = data[:4] + inner
        meta["desc"] += " [" + "; ".join(what) + "]"
    if key not in cfg.apis or not (cfg.apis[key][0] <= ver <=
                                   cfg.apis[key][1]):
        meta["mutated"] = True
    return data, meta


def kafka_model(data, cfg, idle_ms):
    """How a broker frames @data: (frames, end, delay). frames: one dict a
    request (corr, key, ver, answer: a valid request gets an answer, delay:
    the most it may wait, in seconds); end: "boundary", "tail" (1-3 bytes
    of a size), "partial" (a request not whole) or "bad" (a size out of
    range: closed at once)."""
    frames, pos, delay = [], 0, 0.0
    while True:
        left = len(data) - pos
        if left == 0:
            return frames, "boundary", delay
        if left < 4:
            return frames, "tail", delay
        size = struct.unpack_from(">I", data, pos)[0]
        if size < 10 or size > cfg.max_request:
            return frames, "bad", delay
        if left - 4 < size:
            return frames, "partial", delay
        body = data[pos + 4:pos + 4 + size]
        pos += 4 + size
        key, ver, corr = struct.unpack_from(">hhi", body)
        f = {"corr": corr, "key": key, "ver": ver, "delay": 0.0}
        frames.append(f)
        try:
            off = 8
            clen = struct.unpack_from(">h", body, off)[0]
            off += 2 + max(clen, 0)
            if key == 1:
                wait = struct.unpack_from(">i", body, off + 4)[0]
                f["delay"] = min(max(wait, 0), WAIT_MAX_MS) / 1000.0
            elif key == 0:
                tlen = struct.unpack_from(">h", body, off)[0]
                off += 2 + max(tlen, 0)
                acks, tmo = struct.unpack_from(">hi", body, off)
                f["acks"] = acks
                if acks == -1:
                    f["delay"] = min(max(tmo, 0), WAIT_MAX_MS) / 1000.0
        except struct.error:
            pass
        delay += f["delay"]


# --- inter-broker frames ---------------------------------------------------------------

def hello_node(rnd, broker_id, cluster, adv=b""):
    cid = cluster.encode()
    return Seq([Int("i", broker_id, "id"), Int("h", WIRE_VERSION, "ver"),
                Int("h", 0, "flags"),
                Raw(cid + bytes(64 - len(cid)), "cluster", fixed=True),
                Raw(adv + bytes(128 - len(adv)), "adv", fixed=True),
                Raw(bytes(rnd.getrandbits(8) for _ in range(32)), "nonce",
                    fixed=True),
                Raw(bytes(32), "proof", fixed=True)])


def fetch_part(topic, part, epoch, offset, log_start=0, last_epoch=-1):
    return Seq([Pre("i16", Raw(topic, "name")), Int("i", part, "part"),
                Int("i", epoch, "epoch"), Int("q", offset, "offset"),
                Int("q", log_start, "offset"), Int("i", last_epoch, "epoch"),
                Int("i", 0, "")])


def follower_fetch(rnd, cfg, sentinel_=False):
    """A FETCH payload as --peer-id would send it to the leader."""
    if sentinel_:
        return Seq([Int("i", cfg.peer_id, "id"), Int("i", 0, "wait"),
                    Int("i", 1 << 20, "size"),
                    Pre("i32", Items([]), count=True)])
    parts = []
    for _ in range(rnd.choice([0, 1, 1, 1, 2, 3])):
        r = rnd.random()
        if r < 0.6:
            t, p = cfg.peer_topic.encode(), 1
        elif r < 0.8:
            t, n = pick_topic(rnd, cfg)
            p = rnd.randrange(n)
        else:
            t, p = cfg.peer_topic.encode(), 0
        epoch = cfg.epoch9 if rnd.random() < 0.8 else \
            rnd.choice([0, 1, -1, cfg.epoch9 + 1])
        parts.append(fetch_part(t, p, epoch, pick_offset(rnd),
                                rnd.choice([0, 0, 0, 1, -1]),
                                rnd.choice([-1, -1, epoch, 0])))
    return Seq([Int("i", cfg.peer_id, "id"), Int("i", pick_wait(rnd), "wait"),
                Int("i", rnd.choice([1 << 20, 1000, 0, 1 << 30]), "size"),
                Pre("i32", Items(parts), count=True)])


def adv_ok(s):
    """kmod/broker.c's krep_advertised_check()"""
    if not s or len(s) > ADV_MAX or b":" not in s:
        return False
    colon = s.rindex(b":")
    if colon == 0:
        return False
    port = s[colon + 1:]
    if not re.fullmatch(rb"\+?[0-9]+", port) or not 0 < int(port) < 65536:
        return False
    host = s[:colon]
    if host[:1] == b"[":
        return (host[-1:] == b"]" and len(host) >= 3 and
                re.fullmatch(rb"[0-9a-fA-F:.]*", host[1:-1]) is not None)
    return re.fullmatch(rb"[A-Za-z0-9.-]*", host) is not None


def hello_ok(p, cfg, want_id):
    """Would a broker take this HELLO payload (no secret, configured
    peer @want_id at our address)?"""
    if len(p) != HELLO_LEN:
        return False
    bid, ver, flags = struct.unpack_from(">IHH", p)
    cid = p[8:72].split(b"\0")[0]
    adv = p[72:200]
    if flags or ver != WIRE_VERSION or adv[-1]:
        return False
    adv = adv.split(b"\0")[0]
    if adv and not adv_ok(adv):
        return False
    return cid == cfg.cluster.encode() and bid == want_id


def fetch_payload_ok(p, replica_id):
    """replica.c's parse_fetch(): (ok, max wait in seconds)."""
    if len(p) < 16:
        return False, 0.0
    rid, wait, _, n = struct.unpack_from(">IIII", p)
    if n > WIRE_MAX_PARTS or rid != replica_id:
        return False, 0.0
    off = 16
    for _ in range(n):
        if off + 2 > len(p):
            return False, 0.0
        tlen = struct.unpack_from(">H", p, off)[0]
        if not tlen or tlen > TOPIC_MAX:
            return False, 0.0
        off += 2 + tlen + 32
        if off > len(p) or struct.unpack_from(">I", p, off - 4)[0]:
            return False, 0.0
    return off == len(p), min(wait, WAIT_MAX_MS) / 1000.0


def wire_model_in(data, cfg):
    """How a leader frames @data on an accepted connection: (frames, end,
    authed). frames: (type, corr, delay seconds); end: boundary, tail,
    partial or bad (the broker closes)."""
    frames, pos = [], 0
    hello_rx = authed = False
    while True:
        left = len(data) - pos
        if left == 0:
            return frames, "boundary", authed
        if left < HDR.size:
            return frames, "tail", authed
        magic, ver, typ, flags, length, corr = HDR.unpack_from(data, pos)
        if (magic != MAGIC or ver != WIRE_VERSION or not 1 <= typ <= 4 or
                flags or length > WIRE_MAX_PAYLOAD):
            return frames, "bad", authed
        if not authed and typ != HELLO and (typ != AUTH or not hello_rx):
            return frames, "bad", authed
        if (typ == HELLO and length != HELLO_LEN) or \
                (typ == AUTH and length != AUTH_LEN):
            return frames, "bad", authed
        if typ == FETCH_RESP or length > WIRE_MAX_REQUEST:
            return frames, "bad", authed
        if left - HDR.size < length:
            return frames, "partial", authed
        p = data[pos + HDR.size:pos + HDR.size + length]
        pos += HDR.size + length
        if typ == HELLO:
            if hello_rx or not hello_ok(p, cfg, cfg.peer_id):
                return frames, "bad", authed
            hello_rx = True
            frames.append((HELLO, corr, 0.0))
        elif typ == AUTH:
            if authed:
                return frames, "bad", authed
            authed = True
            frames.append((AUTH, corr, 0.0))
        else:
            ok, delay = fetch_payload_ok(p, cfg.peer_id)
            if not ok:
                return frames, "bad", authed
            frames.append((FETCH, corr, delay))


def parse_fetch_resp(p):
    """A FETCH_RESP payload: [(topic, partition, error, hw, records)];
    ValueError when it does not parse exactly."""
    if len(p) < 4:
        raise ValueError("FETCH_RESP payload of %d bytes" % len(p))
    n = struct.unpack_from(">I", p)[0]
    if n > WIRE_MAX_PARTS:
        raise ValueError("FETCH_RESP with %d partitions" % n)
    off, out = 4, []
    for _ in range(n):
        tlen = struct.unpack_from(">H", p, off)[0]
        if not tlen or tlen > TOPIC_MAX or off + 2 + tlen + 40 > len(p):
            raise ValueError("FETCH_RESP partition at %d" % off)
        topic = p[off + 2:off + 2 + tlen]
        off += 2 + tlen
        part, err, res, hw, ls, de, dep, rlen = struct.unpack_from(
            ">IHHQQQiI", p, off)
        off += 40
        if res or off + rlen > len(p):
            raise ValueError("FETCH_RESP %r-%d: reserved %d, %d bytes of "
                             "records" % (topic, part, res, rlen))
        recs = p[off:off + rlen]
        off += rlen
        pos = 0
        while pos < len(recs):      # whole batches
            if pos + 12 > len(recs):
                raise ValueError("FETCH_RESP %r-%d: a batch cut short" %
                                 (topic, part))
            blen = struct.unpack_from(">i", recs, pos + 8)[0]
            if blen < 49 or pos + 12 + blen > len(recs):
                raise ValueError("FETCH_RESP %r-%d: batch length %d" %
                                 (topic, part, blen))
            pos += 12 + blen
        out.append((topic, part, err, hw, recs))
    if off != len(p):
        raise ValueError("FETCH_RESP: %d bytes past its partitions" %
                         (len(p) - off))
    return out


def parse_leader_fetch(p):
    """A broker's FETCH to its leader: (replica, wait, max bytes, [(topic,
    partition, epoch, offset, log start, last epoch)]); ValueError."""
    if len(p) < 16:
        raise ValueError("FETCH payload of %d bytes" % len(p))
    rid, wait, mb, n = struct.unpack_from(">IIII", p)
    if n > WIRE_MAX_PARTS:
        raise ValueError("FETCH of %d partitions" % n)
    off, parts = 16, []
    for _ in range(n):
        tlen = struct.unpack_from(">H", p, off)[0]
        if not tlen or tlen > TOPIC_MAX or off + 2 + tlen + 32 > len(p):
            raise ValueError("FETCH partition at %d" % off)
        topic = p[off + 2:off + 2 + tlen]
        off += 2 + tlen
        part, ep, fo, ls, le, res = struct.unpack_from(">IIQQiI", p, off)
        off += 32
        if res:
            raise ValueError("FETCH reserved %d" % res)
        parts.append((topic, part, ep, fo, ls, le))
    if off != len(p):
        raise ValueError("FETCH: %d bytes past its partitions" %
                         (len(p) - off))
    return rid, wait, mb, parts


def leader_response(rnd, cfg, req, corr):
    """A FETCH_RESP as the leader --peer-id would send it for @req (the
    broker's FETCH), records included: a tree."""
    now = int(time.time() * 1000)
    parts = []
    for (topic, part, epoch, offset, ls, _) in req:
        r = rnd.random()
        recs, hw, err = [], offset, 0
        log_start = min(ls, offset)
        div_end, div_epoch = NO_DIVERGENCE, -1
        if r < 0.65:
            base = offset
            for _ in range(rnd.choice([1, 1, 2, 3])):
                b = make_batch(rnd, base, epoch, now_ms=now)
                if b.f["attrs"].v & 0x20:
                    b = make_batch(rnd, base, epoch, nrec=1, now_ms=now)
                    b.f["attrs"].v = 0
                recs.append(b)
                base += b.count()
            hw = rnd.choice([base, base, offset, base - 1])
        elif r < 0.75:
            err = rnd.choice([1, 6, 74, 75, 3])
        elif r < 0.85:
            err, log_start = 1, offset + rnd.choice([1, 10, 1000])
        elif r < 0.93:
            div_end = max(0, offset - rnd.choice([0, 1, 5]))
            div_epoch = rnd.choice([-1, epoch, max(0, epoch - 1)])
        parts.append(Seq([Pre("i16", Raw(topic, "name")),
                          Int("i", part, "part"), Int("h", err, "key"),
                          Int("h", 0, ""), Int("q", hw, "offset"),
                          Int("q", log_start, "offset"),
                          Int("q", div_end, "offset"),
                          Int("i", div_epoch, "epoch"),
                          Pre("i32", Items(recs), role="size")]))
    if rnd.random() < 0.1:
        parts.append(Seq([Pre("i16", Raw(rnd.choice([b"nosuch", b"fz"]),
                                          "name")),
                          Int("i", 0, "part"), Int("h", 0, "key"),
                          Int("h", 0, ""), Int("q", 0, "offset"),
                          Int("q", 0, "offset"),
                          Int("q", NO_DIVERGENCE, "offset"),
                          Int("i", -1, "epoch"),
                          Pre("i32", Items([]), role="size")]))
    return WFrame(FETCH_RESP, Seq([Pre("i32", Items(parts), count=True)]),
                  corr)
