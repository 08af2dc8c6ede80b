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
        peer-leader     a fake leader on --listen: the brokers that
                        have --peer-id there as a peer (--followers)
                        connect to it; it answers their HELLOs and
                        FETCHes, a session per connection
      Everything is drawn from S: session K of target T from
      random.Random("S/T/K") alone. An oracle models how the broker
      frames what was sent and says what it must do and by when: answer
      the last request (a sentinel) or close within its waits plus
      SLACK seconds (a partial request: --kafka-request-ms, a Kafka
      wait: at most --kafka-wait-max-ms, an idle Kafka connection:
      --kafka-idle-ms, a peer without AUTH:
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
      they ran, e.g. in fuzz.sh's namespace X; genl: each netlink
      request to the "krep" family of the namespace it runs in, as
      root), printing what comes back.

The genl target's blocks ("fuzz: genl FUZZ-REPRO") come from fuzz_genl
(selftests/fuzz_genl.c); extract reads them too, and after a kernel
crash regenerates the inputs its workers were at (fuzz_genl gen).

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
import subprocess
import sys
import time
import traceback
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from krep_record import crc32c  # noqa: E402

SLACK = 35.0            # seconds a broker may take past its own deadlines
REQUEST_MS = 30000      # kafka_request_ms's default (--kafka-request-ms)
KAFKA_WAIT_MAX_MS = 30000   # kafka_wait_max_ms's (--kafka-wait-max-ms)
WAIT_MAX_MS = 30000     # replica.c: the longest wait of a peer's FETCH
REPLICA_FETCH_WAIT_MS = 500     # fetcher.c
RING = 16               # connections kept per target for a reproducer
KEEP_BYTES = 65536      # bytes of one send kept in a reproducer

# inter-broker wire protocol (uapi/linux/krep_wire.h)
MAGIC = 0x4B524550
WIRE_VERSION = 4
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
    """LEB128 of @v; @pad extra groups make it overlong (same value)."""
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if not v:
            out.append(b)
            break
        out.append(b | 0x80)
    if pad:
        out[-1] |= 0x80
        out += b"\x80" * (pad - 1) + b"\0"
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


def enc_prefix(kind, n, pad=0):
    if kind == "i16":
        return struct.pack(">H", (-1 if n is None else n) & 0xFFFF)
    if kind == "i32":
        return struct.pack(">I", (-1 if n is None else n) & 0xFFFFFFFF)
    if kind == "uv1":           # compact: length + 1, 0 for null
        return uvarint(0 if n is None else n + 1, pad)
    if kind == "uv":
        return uvarint(0 if n is None else n, pad)
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
        return enc_prefix(self.kind, n, self.pad) + body


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
    pat = rnd.randbytes(min(n, 64)) or b"x"
    return (pat * (n // len(pat) + 1))[:n]


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

ROLE_WEIGHT = {"": 1, "size": 3, "count": 3, "len": 3, "ver": 3, "key": 2,
               "corr": 1, "wait": 4, "offset": 4, "epoch": 4, "acks": 3,
               "ts": 3, "part": 3, "crc": 2, "flags": 2, "id": 2, "magic": 1}


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
        b[i:i] = rnd.randbytes(rnd.randint(1, 16))
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
        return rnd.randbytes(rnd.randint(1, 8)), \
            "bytes insert"
    if r < 0.3:
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(len(b))
            b[i] ^= 1 << rnd.randrange(8)
        what = "bytes flip"
    elif r < 0.45:
        i = rnd.randint(0, len(b))
        b[i:i] = rnd.randbytes(rnd.randint(1, 32))
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
        self.idle_ms = getattr(a, "kafka_idle_ms", 600000)
        self.request_ms = getattr(a, "kafka_request_ms", REQUEST_MS)
        self.wait_max_ms = getattr(a, "kafka_wait_max_ms", KAFKA_WAIT_MAX_MS)
        self.apis = {0: (3, 8), 1: (4, 11), 2: (1, 5), 3: (0, 8), 18: (0, 3)}

    def to_json(self):
        return {"topics": self.topics, "cluster": self.cluster,
                "peer_id": self.peer_id, "epoch9": self.epoch9,
                "peer_topic": self.peer_topic,
                "max_request": self.max_request, "idle_ms": self.idle_ms,
                "request_ms": self.request_ms,
                "wait_max_ms": self.wait_max_ms,
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
        c.idle_ms = j.get("idle_ms", 600000)
        c.request_ms = j.get("request_ms", REQUEST_MS)
        c.wait_max_ms = j.get("wait_max_ms", KAFKA_WAIT_MAX_MS)
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
        body = [Raw(rnd.randbytes(rnd.randint(0, 40)), "data")]
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
                f["delay"] = min(max(wait, 0), cfg.wait_max_ms) / 1000.0
            elif key == 0:
                tlen = struct.unpack_from(">h", body, off)[0]
                off += 2 + max(tlen, 0)
                acks, tmo = struct.unpack_from(">hi", body, off)
                f["acks"] = acks
                if acks == -1:
                    f["delay"] = min(max(tmo, 0), cfg.wait_max_ms) / 1000.0
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
                Raw(rnd.randbytes(32), "nonce",
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
        elif r < 0.64:
            # the wire's names are any 1..249 bytes: with a NUL in them
            t, p = rnd.choice([b"\0", cfg.peer_topic.encode() + b"\0",
                               cfg.peer_topic.encode() + b"\0x"]), 1
        elif r < 0.8:
            t, n = pick_topic(rnd, cfg)
            p = rnd.randrange(n)
            if not 0 < len(t) <= TOPIC_MAX:
                t = b"nosuch"           # the wire's names are 1..249 bytes
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


# the kernel's isalnum(): ASCII and ISO 8859-1's letters (lib/ctype.c)
ALNUM = set(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") | \
    set(range(192, 215)) | set(range(216, 247)) | set(range(248, 256))


def adv_ok(s):
    """kmod/broker.c's krep_advertised_check()"""
    if not s or len(s) > ADV_MAX or b":" not in s:
        return False
    colon = s.rindex(b":")
    if colon == 0:
        return False
    port = s[colon + 1:]        # kstrtouint(): "+", a newline at the end
    m = re.fullmatch(rb"\+?([0-9]+)\n?", port)
    if not m or not 0 < int(m.group(1)) < 65536:
        return False
    host = s[:colon]
    if host[:1] == b"[":
        return (host[-1:] == b"]" and len(host) >= 3 and
                re.fullmatch(rb"[0-9a-fA-F:.]*", host[1:-1]) is not None)
    return all(c in ALNUM or c in b".-" for c in host)


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
    """replica.c's parse_fetch(): (ok, max wait in seconds, [(topic,
    partition)])."""
    if len(p) < 16:
        return False, 0.0, None
    rid, wait, _, n = struct.unpack_from(">IIII", p)
    if n > WIRE_MAX_PARTS or rid != replica_id:
        return False, 0.0, None
    off, parts = 16, []
    for _ in range(n):
        if off + 2 > len(p):
            return False, 0.0, None
        tlen = struct.unpack_from(">H", p, off)[0]
        if not tlen or tlen > TOPIC_MAX:
            return False, 0.0, None
        if off + 2 + tlen + 32 > len(p):
            return False, 0.0, None
        parts.append((p[off + 2:off + 2 + tlen],
                      struct.unpack_from(">I", p, off + 2 + tlen)[0]))
        off += 2 + tlen + 32
        if struct.unpack_from(">I", p, off - 4)[0]:
            return False, 0.0, None
    return off == len(p), min(wait, WAIT_MAX_MS) / 1000.0, parts


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
            frames.append((HELLO, corr, 0.0, None))
        elif typ == AUTH:
            if authed:
                return frames, "bad", authed
            authed = True
            frames.append((AUTH, corr, 0.0, None))
        else:
            ok, delay, parts = fetch_payload_ok(p, cfg.peer_id)
            if not ok:
                return frames, "bad", authed
            frames.append((FETCH, corr, delay, parts))


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
        if not tlen or tlen > TOPIC_MAX or off + 2 + tlen + 64 > len(p):
            raise ValueError("FETCH_RESP partition at %d" % off)
        topic = p[off + 2:off + 2 + tlen]
        off += 2 + tlen
        (part, err, res, hw, ls, de, dep, pe, isr0, isr1, res2,
         rlen) = struct.unpack_from(">IHHQQQiIQQII", p, off)
        off += 64
        if res or res2 or off + rlen > len(p):
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
                          Int("i", rnd.choice([0, 1, 7]), "epoch"),
                          Int("q", rnd.choice([1, 3, 7, 0, -1]), "offset"),
                          Int("q", 0, "offset"), Int("i", 0, ""),
                          Pre("i32", Items(recs), role="size")]))
    if rnd.random() < 0.1:
        parts.append(Seq([Pre("i16", Raw(rnd.choice([b"nosuch", b"fz"]),
                                          "name")),
                          Int("i", 0, "part"), Int("h", 0, "key"),
                          Int("h", 0, ""), Int("q", 0, "offset"),
                          Int("q", 0, "offset"),
                          Int("q", NO_DIVERGENCE, "offset"),
                          Int("i", -1, "epoch"),
                          Int("i", 0, "epoch"), Int("q", 0, "offset"),
                          Int("q", 0, "offset"), Int("i", 0, ""),
                          Pre("i32", Items([]), role="size")]))
    return WFrame(FETCH_RESP, Seq([Pre("i32", Items(parts), count=True)]),
                  corr)


def wframe_mutate(rnd, f):
    """Mutate a wire frame's tree, sometimes its payload's bytes too (the
    header's length then follows, mostly): (bytes, what)."""
    what = mutate_tree(rnd, f) if rnd.random() < 0.8 else []
    data = f.ser()
    if not what or rnd.random() < 0.25:
        p, w = bytes_mutate(rnd, data[HDR.size:])
        what.append(w)
        hdr = bytearray(data[:HDR.size])
        if f.h[4].auto or rnd.random() < 0.3:
            struct.pack_into(">I", hdr, 8, len(p))
        data = bytes(hdr) + p
    return data, "; ".join(what)


# --- plans: what a session sends, drawn from its own generator ------------------------

def session_rng(seed, target, idx):
    return random.Random("%s/%s/%d" % (seed, target, idx))


class Plan:
    def __init__(self, mode):
        self.mode = mode
        self.units = []         # (label, bytes, mutated, desc)
        self.sentinels = []     # per phase: bytes
        self.chunked = False
        self.cut = None         # bytes of the stream sent (stall, reset)
        self.strict = False
        self.extra = {}


def plan_kafka(rnd, cfg, idx):
    mode = rnd.choices(["pipeline", "lockstep", "stall", "idle", "reset",
                        "close", "halfclose", "noread"],
                       weights=[52, 19, 2, 2, 9, 4, 6, 3])[0]
    pl = Plan(mode)
    n = rnd.choices([1, 2, 3, 4, 6], weights=[50, 20, 12, 10, 8])[0]
    base = (idx * 16) & 0x3FFFFFFF
    for i in range(n):
        data, meta = kafka_unit(rnd, cfg, base + i)
        pl.units.append((meta["desc"].split(" ")[0], data, meta["mutated"],
                         meta["desc"]))
        pl.extra.setdefault("acks0", False)
        if meta.get("acks") == 0 and meta["key"] == 0:
            pl.extra["acks0"] = True
    if mode == "idle":
        # then a request that may wait (a Fetch of nothing parks for its
        # max wait), and silence: the idle deadline still closes it
        wait = rnd.choice([0, 100, cfg.idle_ms // 2, cfg.idle_ms + 1000,
                           2 * cfg.idle_ms, cfg.wait_max_ms])
        t = kreq(rnd, 1, 4, base + n, [
            Int("i", -1), Int("i", wait, "wait"), Int("i", 1), Int("i", 1 << 20),
            Int("b", 0), karr([])])
        pl.units.append(("Fetch", t.ser(), False,
                         "Fetch v4 of nothing, max wait %d ms" % wait))
    nsent = n if mode == "lockstep" else 1
    pl.sentinels = [sentinel(-(((idx * 16) & 0x3FFFFFFF) + i + 1))
                    for i in range(nsent)]
    pl.chunked = rnd.random() < 0.15
    stream = b"".join(u[1] for u in pl.units)
    if mode == "stall" or (mode == "reset" and rnd.random() < 0.5):
        pl.cut = rnd.randint(1, max(1, len(stream) - 1))
    if mode == "noread":
        pl.extra["repeat"] = rnd.randint(1, 8)
        pl.extra["hold"] = rnd.uniform(0.2, 2.0)
    pl.extra["linger"] = rnd.uniform(0, 0.05)
    pl.extra["reset_end"] = rnd.random() < 0.3
    pl.strict = (mode in ("pipeline", "lockstep") and
                 not any(u[2] for u in pl.units) and not pl.extra["acks0"])
    return pl


def plan_peer_follower(rnd, cfg, idx):
    mode = rnd.choices(["lockstep", "burst", "stall", "reset"],
                       weights=[72, 12, 8, 8])[0]
    pl = Plan(mode)
    adv = rnd.choice([b"", b"", b"10.9.9.9:9192", b"fz9.example:19092"])
    f = WFrame(HELLO, hello_node(rnd, cfg.peer_id, cfg.cluster, adv))
    if rnd.random() < 0.25:
        data, what = wframe_mutate(rnd, f)
        pl.units.append(("HELLO", data, True, "HELLO [%s]" % what))
    else:
        pl.units.append(("HELLO", f.ser(), False, "HELLO"))
    f = WFrame(AUTH, Raw(bytes(32), "proof", fixed=True))
    if rnd.random() < 0.08:
        data, what = wframe_mutate(rnd, f)
        pl.units.append(("AUTH", data, True, "AUTH [%s]" % what))
    else:
        pl.units.append(("AUTH", f.ser(), False, "AUTH"))
    base = (idx * 16) & 0x3FFFFFFF
    for i in range(rnd.choice([1, 1, 2, 3, 5])):
        f = WFrame(FETCH, follower_fetch(rnd, cfg), corr=base + i)
        if rnd.random() < 0.5:
            data, what = wframe_mutate(rnd, f)
            pl.units.append(("FETCH", data, True, "FETCH [%s]" % what))
        else:
            pl.units.append(("FETCH", f.ser(), False, "FETCH"))
    if rnd.random() < 0.08:
        k = rnd.choice(["hello-again", "fetch-resp", "type9", "random"])
        if k == "hello-again":
            g = WFrame(HELLO, hello_node(rnd, cfg.peer_id, cfg.cluster))
        elif k == "fetch-resp":
            g = WFrame(FETCH_RESP, Raw(struct.pack(">I", 0)), corr=1)
        elif k == "type9":
            g = WFrame(9, Raw(bytes(8)))
        else:
            g = Raw(rnd.randbytes(rnd.randint(1, 64)))
        pl.units.insert(rnd.randint(0, len(pl.units)),
                        ("GARBAGE", g.ser(), True, "garbage " + k))
    pl.sentinels = [WFrame(FETCH, follower_fetch(rnd, cfg, True),
                           corr=0x7E000000 | (idx & 0xFFFFFF)).ser()]
    pl.chunked = rnd.random() < 0.15
    stream = b"".join(u[1] for u in pl.units)
    if mode == "stall" or (mode == "reset" and rnd.random() < 0.5):
        pl.cut = rnd.randint(1, max(1, len(stream) - 1))
    pl.extra["reset_end"] = rnd.random() < 0.3
    return pl


def plan_peer_leader(rnd):
    """The fake leader's choices: what it answers the broker's HELLO
    with, and how many FETCHes it answers; the answers themselves depend
    on the FETCHes and are drawn from @rnd as they come."""
    pl = Plan(rnd.choices(["valid", "mutated", "none", "partial", "reset",
                           "garbage"], weights=[72, 14, 4, 4, 3, 3])[0])
    pl.extra["exchanges"] = rnd.randint(1, 12)
    pl.extra["end"] = rnd.choices(["close", "reset", "silent", "partial"],
                                  weights=[50, 25, 15, 10])[0]
    pl.extra["adv"] = rnd.choice([b"", b"10.9.9.9:9192", b"fz9.example:1"])
    return pl


# --- connections ---------------------------------------------------------------------

def kafka_frames(buf):
    """A Kafka response at the start of @buf: (bytes, (corr, size))."""
    if len(buf) < 4:
        return 0, None
    n = struct.unpack_from(">i", buf)[0]
    if n < 4 or n > (64 << 20):
        raise ValueError("a response of size %d" % n)
    if len(buf) < 4 + n:
        return 0, None
    return 4 + n, (struct.unpack_from(">i", buf, 4)[0], n)


def wire_frames(buf):
    """A broker's frame at the start of @buf: (bytes, (type, corr,
    payload))."""
    if len(buf) < HDR.size:
        return 0, None
    magic, ver, typ, flags, length, corr = HDR.unpack_from(buf)
    if magic != MAGIC or ver != WIRE_VERSION or flags or \
            typ not in (HELLO, FETCH, FETCH_RESP, AUTH) or length > (64 << 20):
        raise ValueError("a frame header %r" % (HDR.unpack_from(buf),))
    if len(buf) < HDR.size + length:
        return 0, None
    return HDR.size + length, (typ, corr,
                               bytes(buf[HDR.size:HDR.size + length]))


class Rec:
    """What one connection sent, for a reproducer."""

    def __init__(self, target, idx, addr, plan):
        self.t0 = time.monotonic()
        self.d = {"target": target, "idx": idx, "addr": addr,
                  "mode": plan.mode, "actions": [], "outcome": "running",
                  "units": [[u[0], u[3]] for u in plan.units]}

    def act(self, kind, data=None):
        a = [round(time.monotonic() - self.t0, 3), kind]
        if data is not None:
            a.append(data[:KEEP_BYTES].hex())
            if len(data) > KEEP_BYTES:
                a.append(len(data))
        self.d["actions"].append(a)


class Conn:
    def __init__(self, sock, rec, parser):
        self.sock, self.rec, self.parser = sock, rec, parser
        self.buf = bytearray()
        self.items = []
        self.closed = None
        self.bad = None
        self.ev = asyncio.Event()
        self.task = None
        self.loop = asyncio.get_running_loop()

    def start(self):
        self.task = asyncio.ensure_future(self._read())

    async def _read(self):
        while True:
            try:
                data = await self.loop.sock_recv(self.sock, 1 << 18)
            except OSError:
                data = b""
            if not data:
                self.closed = self.loop.time()
                self.ev.set()
                return
            self.buf += data
            while True:
                try:
                    n, item = self.parser(self.buf)
                except ValueError as e:
                    self.bad = str(e)
                    self.closed = self.loop.time()
                    self.ev.set()
                    return
                if not n:
                    break
                del self.buf[:n]
                self.items.append(item)
            self.ev.set()

    async def wait(self, pred, timeout):
        """"ok" once @pred(), "closed", or "timeout"."""
        end = self.loop.time() + timeout
        while True:
            self.ev.clear()
            if pred():
                return "ok"
            if self.closed is not None:
                return "closed"
            left = end - self.loop.time()
            if left <= 0:
                return "timeout"
            try:
                await asyncio.wait_for(self.ev.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def send(self, data, rnd, chunked, timeout):
        """True once sent; False when the broker closed or reset; None when
        it took nothing for @timeout seconds."""
        self.rec.act("send", data)
        chunks = [data]
        if chunked and len(data) > 1:
            chunks, pos = [], 0
            while pos < len(data):
                k = rnd.randint(1, max(1, min(len(data) - pos, 600)))
                chunks.append(data[pos:pos + k])
                pos += k
        for i, c in enumerate(chunks):
            try:
                await asyncio.wait_for(self.loop.sock_sendall(self.sock, c),
                                       timeout)
            except asyncio.TimeoutError:
                return None
            except OSError:
                return False
            if i + 1 < len(chunks):
                await asyncio.sleep(rnd.uniform(0, 0.01))
        return True

    async def finish(self, reset=False):
        if self.task:
            self.task.cancel()
            try:
                await self.task
            except (asyncio.CancelledError, Exception):
                pass
        if reset:
            self.rec.act("reset")
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                     struct.pack("ii", 1, 0))
            except OSError:
                pass
        else:
            self.rec.act("close")
        self.sock.close()


def subsequence(got, sent):
    """Is @got (response correlation ids) in the order of @sent?"""
    it = iter(sent)
    return all(any(c == s for s in it) for c in got)


# --- the fuzzer ----------------------------------------------------------------------

class Slot:
    """A session's place among its target's concurrent ones; one that
    only waits for a broker's deadline (seconds) moves to the long ones,
    so that it does not hold back the short ones."""

    def __init__(self, sem, long_sem):
        self.sem, self.long_sem, self.long = sem, long_sem, False

    async def detach(self):
        if not self.long:
            await self.long_sem.acquire()
            self.long = True
            self.sem.release()

    def release(self):
        (self.long_sem if self.long else self.sem).release()


class Target:
    def __init__(self, name, addr, conc, conc_long=64):
        self.name, self.addr, self.conc = name, addr, conc
        self.conc_long = conc_long
        self.next_idx = 0
        self.inflight = set()
        self.ring = collections.deque(maxlen=RING)
        self.inputs = self.sessions = self.answered = self.closed = 0
        self.strict = self.failures = self.late = 0
        self.secs = 0.0


def hostport(s):
    h, p = s.rsplit(":", 1)
    return h, int(p)


class Fuzz:
    def __init__(self, a):
        self.a = a
        self.seed = a.seed
        self.cfg = Cfg(a)
        self.idle = a.kafka_idle_ms / 1000.0
        self.hello_to = a.hello_timeout_ms / 1000.0
        self.fetch_to = (REPLICA_FETCH_WAIT_MS + a.fetch_timeout_ms) / 1000.0
        self.targets = collections.OrderedDict()
        self.nfail = 0
        self.nrepro = 0
        self.errors = 0
        self.stop = False

    def out(self, msg):
        print("fuzz: " + msg, flush=True)

    def rings(self):
        return {t.name: [r.d for r in t.ring] for t in self.targets.values()}

    def emit(self, name, obj, out=None):
        raw = base64.b64encode(zlib.compress(json.dumps(obj).encode(), 9))
        b = raw.decode()
        lines = ["FUZZ-REPRO-BEGIN %s %d" % (name, len(b))]
        lines += ["FUZZ-REPRO %s" % b[i:i + 120] for i in range(0, len(b), 120)]
        lines.append("FUZZ-REPRO-END %s" % name)
        if out:
            out.write("\n".join(lines) + "\n")
        else:
            for line in lines:
                self.out(line)

    def fail(self, T, rec, kind, detail):
        self.nfail += 1
        if T:
            T.failures += 1
        if rec:
            rec.d["outcome"] = "FAIL %s: %s" % (kind, detail)
        who = "%s #%d" % (T.name, rec.d["idx"]) if T and rec else \
            (T.name if T else "fuzz")
        self.out("FAIL %s: %s: %s" % (who, kind, detail))
        if rec:
            self.out("  mode %s, sent: %s" % (
                rec.d["mode"], " | ".join(u[1] for u in rec.d["units"])[:2000]))
        if self.nrepro < 3:
            self.nrepro += 1
            self.emit("%s-%s" % (self.seed, who.replace(" #", "-")),
                      {"seed": self.seed, "reason": "%s: %s: %s" %
                       (who, kind, detail), "config": self.cfg.to_json(),
                       "failing": rec.d if rec else None,
                       "rings": self.rings()})
        if self.nfail >= self.a.max_failures:
            self.stop = True

    async def connect(self, T, rec, addr, rcvbuf=None):
        loop = asyncio.get_running_loop()
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        try:
            await asyncio.wait_for(loop.sock_connect(s, hostport(addr)), 10)
        except (OSError, asyncio.TimeoutError) as e:
            s.close()
            self.fail(T, rec, "connect", "cannot connect to %s: %r" %
                      (addr, e))
            return None
        rec.act("connect")
        return s

    # --- Kafka ---

    def kafka_expect(self, sent, sentinel_corr):
        frames, end, delay = kafka_model(sent, self.cfg, self.idle)
        if end == "boundary" and sentinel_corr is not None and frames and \
                frames[-1]["corr"] == sentinel_corr:
            return "answer", delay + SLACK, frames, end
        if end == "bad":
            return "close", delay + SLACK, frames, end
        if end == "partial":
            return ("close", delay + self.cfg.request_ms / 1000 + SLACK,
                    frames, end)
        return "close", delay + self.idle + SLACK, frames, "idle"

    async def kafka_session(self, T, idx, slot):
        rnd = session_rng(self.seed, T.name, idx)
        pl = plan_kafka(rnd, self.cfg, idx)
        rec = Rec(T.name, idx, T.addr, pl)
        T.ring.append(rec)
        T.inputs += len(pl.units)
        s = await self.connect(T, rec, T.addr,
                               4096 if pl.mode == "noread" else None)
        if s is None:
            return
        c = Conn(s, rec, kafka_frames)
        stream = b"".join(u[1] for u in pl.units)
        if pl.mode != "noread":
            c.start()
        if pl.mode == "lockstep":
            phases = [(u[1] + pl.sentinels[i], pl.sentinels[i])
                      for i, u in enumerate(pl.units)]
        elif pl.mode in ("pipeline", "halfclose"):
            phases = [(stream + pl.sentinels[0], pl.sentinels[0])]
        elif pl.mode == "noread":
            phases = [(stream * pl.extra["repeat"], None)]
        elif pl.cut is not None:
            phases = [(stream[:pl.cut], None)]
        else:
            phases = [(stream, None)]
        sent = b""
        outcome = "done"
        send_secs = 0.0
        for data, sent_req in phases:
            _, _, delay = kafka_model(sent + data, self.cfg, self.idle)
            t_send = time.monotonic()
            ok = await c.send(data, rnd, pl.chunked, delay + SLACK)
            send_secs = max(send_secs, time.monotonic() - t_send)
            if ok is None:
                self.fail(T, rec, "hang", "the broker took none of %d bytes "
                          "for %.0f s" % (len(data), delay + SLACK))
                await c.finish(True)
                return
            sent += data
            if not ok:
                outcome = "closed"
                break
            if pl.mode in ("reset", "close", "noread"):
                break
            if pl.mode == "halfclose":
                rec.act("shutwr")
                try:
                    s.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
            corr = struct.unpack_from(">i", sent_req, 8)[0] if sent_req \
                else None
            want, tmo, frames, end = self.kafka_expect(sent, corr)
            if (end == "idle" and self.idle > 60) or \
                    (end in ("partial", "idle") and
                     pl.mode not in ("stall", "idle") and rnd.random() < 0.75):
                # a mutation left a request unfinished: its deadline is
                # checked on some of them, the others are let go
                outcome = "let go"
                break
            if want == "close" or tmo > SLACK + 1:
                await slot.detach()
            got = await c.wait((lambda: any(i[0] == corr for i in c.items))
                               if want == "answer" else (lambda: False), tmo)
            if c.bad:
                self.fail(T, rec, "bad response", c.bad)
                await c.finish(True)
                return
            if got == "timeout":
                last = frames[-1] if frames else None
                self.fail(T, rec, "hang", "%s expected within %.1f s of the "
                          "last byte sent; %d responses came (model: %d "
                          "requests, last %r)" % (
                              "an answer to correlation id %d or a close" %
                              corr if want == "answer" else "a close", tmo,
                              len(c.items), len(frames), last))
                await c.finish(True)
                return
            if got == "closed":
                outcome = "closed"
                break
        if pl.mode == "noread":
            await slot.detach()
            await asyncio.sleep(pl.extra["hold"])
        elif pl.mode in ("reset", "close"):
            await asyncio.sleep(pl.extra["linger"])
        order = [f["corr"] for f in kafka_model(sent, self.cfg,
                                                self.idle)[0]]
        got = [i[0] for i in c.items]
        if c.bad:
            self.fail(T, rec, "bad response", c.bad)
        elif not subsequence(got, order):
            self.fail(T, rec, "order", "responses %r to requests %r" %
                      (got[:20], order[:20]))
        elif pl.strict and outcome == "closed" and \
                send_secs * 1000 >= self.cfg.request_ms - 100:
            # this process, stalled by a loaded machine, took longer to send
            # the request's pieces than the broker's request deadline: the
            # broker closes it as it must (kafka_request_ms)
            T.late += 1
            rec.d["late_send_secs"] = round(send_secs, 3)
        elif pl.strict and (outcome != "done" or
                            any(f["corr"] not in got for f in
                                kafka_model(sent, self.cfg, self.idle)[0])):
            self.fail(T, rec, "valid request refused",
                      "unmutated requests: answered %r of %r, %s" %
                      (got[:20], order[:20], outcome))
        elif pl.strict:
            T.strict += 1
        if outcome == "closed":
            T.closed += 1
        elif pl.mode in ("pipeline", "lockstep", "halfclose"):
            T.answered += 1
        rec.d["outcome"] = outcome
        await c.finish(pl.extra["reset_end"] or pl.mode in ("reset",
                                                           "noread"))

    # --- a fake follower ---

    def check_wire_in(self, T, rec, c, model_fetches):
        """The leader's frames on an accepted connection parse exactly;
        FETCH_RESPs answer our FETCHes (@model_fetches: (corr, [(topic,
        partition)])) in order, each partition of the FETCH in its order,
        its topic named as the FETCH named it."""
        resps = []
        asked = list(model_fetches)
        for typ, corr, p in c.items:
            if typ == HELLO:
                if len(p) != HELLO_LEN:
                    return "a HELLO of %d bytes" % len(p)
                bid, ver, flags = struct.unpack_from(">IHH", p)
                cid = p[8:72].split(b"\0")[0].decode(errors="replace")
                if bid != self.a.broker_id or ver != WIRE_VERSION or flags \
                        or cid != self.cfg.cluster:
                    return "HELLO answer from %d v%d flags %d cluster %r" % (
                        bid, ver, flags, cid)
            elif typ == FETCH_RESP:
                try:
                    got = parse_fetch_resp(p)
                except (ValueError, struct.error) as e:
                    return "a malformed FETCH_RESP: %s" % e
                resps.append(corr)
                for k, (fc, parts) in enumerate(asked):
                    if fc != corr:
                        continue
                    del asked[:k + 1]
                    names = [(g[0], g[1]) for g in got]
                    if names != parts:
                        return "FETCH_RESP %d answers %r to a FETCH of %r" % (
                            corr, names[:8], parts[:8])
                    break
            else:
                return "a frame of type %d from the leader" % typ
        if not subsequence(resps, [f[0] for f in model_fetches]):
            return "FETCH_RESPs %r to FETCHes %r" % (resps[:20],
                                                     model_fetches[:20])
        return None

    async def peer_follower_session(self, T, idx, slot):
        rnd = session_rng(self.seed, T.name, idx)
        pl = plan_peer_follower(rnd, self.cfg, idx)
        rec = Rec(T.name, idx, T.addr, pl)
        T.ring.append(rec)
        T.inputs += len(pl.units)
        s = await self.connect(T, rec, T.addr)
        if s is None:
            return
        c = Conn(s, rec, wire_frames)
        c.start()
        stream = b"".join(u[1] for u in pl.units)
        if pl.mode == "lockstep":
            phases = [u[1] for u in pl.units] + pl.sentinels
        elif pl.mode == "burst":
            phases = [stream + pl.sentinels[0]]
        elif pl.cut is not None:
            phases = [stream[:pl.cut]]
        else:
            phases = [stream]
        sent = b""
        outcome = "done"
        answered = 0
        for k, data in enumerate(phases):
            if pl.mode == "lockstep" and k == len(phases) - 1:
                fr, end, authed = wire_model_in(sent, self.cfg)
                if end != "boundary" or not authed:
                    break           # no sentinel where it cannot parse
            ok = await c.send(data, rnd, pl.chunked, 60 + SLACK)
            if ok is None:
                self.fail(T, rec, "hang", "the leader took none of %d bytes "
                          "for %.0f s" % (len(data), 60 + SLACK))
                await c.finish(True)
                return
            sent += data
            if not ok:
                outcome = "closed"
                break
            if pl.mode == "reset":
                break
            frames, end, authed = wire_model_in(sent, self.cfg)
            fetches = [f for f in frames if f[0] == FETCH]
            delay = sum(f[2] for f in fetches)
            if end == "bad":
                want, tmo = None, delay + SLACK
            elif (end != "boundary" or not authed) and \
                    (k == len(phases) - 1 or pl.mode != "lockstep"):
                # the handshake never ends: the HELLO deadline closes it
                if authed:
                    break
                want, tmo = None, delay + self.hello_to + SLACK
            elif fetches:
                want, tmo = fetches[-1][1], delay + SLACK
            else:
                continue
            if want is None or tmo > SLACK + 1:
                await slot.detach()
            got = await c.wait((lambda: any(i[0] == FETCH_RESP and
                                            i[1] == want for i in c.items))
                               if want is not None else (lambda: False), tmo)
            if c.bad:
                break
            if got == "timeout":
                self.fail(T, rec, "hang", "%s expected within %.1f s of the "
                          "last byte sent (model: frames %r, end %s, "
                          "authed %s)" % (
                              "a FETCH_RESP to correlation id %d or a close" %
                              want if want is not None else "a close", tmo,
                              [(f[0], f[1]) for f in frames][-6:], end,
                              authed))
                await c.finish(True)
                return
            if got == "closed":
                outcome = "closed"
                break
            answered += 1
        if pl.mode == "reset":
            await asyncio.sleep(rnd.uniform(0, 0.05))
        frames = wire_model_in(sent, self.cfg)[0]
        why = c.bad and "a bad frame from the leader: %s" % c.bad or \
            self.check_wire_in(T, rec, c, [(f[1], f[3]) for f in frames
                                           if f[0] == FETCH])
        if why:
            self.fail(T, rec, "bad response", why)
        if outcome == "closed":
            T.closed += 1
        elif answered:
            T.answered += 1
        rec.d["outcome"] = outcome
        await c.finish(pl.extra["reset_end"] or pl.mode == "reset")

    # --- a fake leader ---

    def check_broker_hello(self, p, want):
        if len(p) != HELLO_LEN:
            return "HELLO of %d bytes" % len(p)
        bid, ver, flags = struct.unpack_from(">IHH", p)
        cid = p[8:72].split(b"\0")[0].decode(errors="replace")
        adv = p[72:200]
        if bid != want or ver != WIRE_VERSION or flags or \
                cid != self.cfg.cluster or adv[-1] or \
                (adv[0] and not adv_ok(adv.split(b"\0")[0])):
            return "HELLO from %d v%d flags %d cluster %r adv %r" % (
                bid, ver, flags, cid, adv.rstrip(b"\0"))
        return None

    async def peer_leader_session(self, T, idx, s, bid):
        rnd = session_rng(self.seed, T.name, idx)
        pl = plan_peer_leader(rnd)
        rec = Rec(T.name, idx, self.a.listen, pl)
        T.ring.append(rec)
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c = Conn(s, rec, wire_frames)
        c.start()
        got = await c.wait(lambda: c.items, SLACK)
        if got == "timeout":
            self.fail(T, rec, "hang", "the broker connected and sent no "
                      "HELLO in %.0f s" % SLACK)
            await c.finish(True)
            return
        if c.bad or not c.items:
            if c.bad:
                self.fail(T, rec, "bad frame", c.bad)
            await c.finish()
            return
        typ, _, p = c.items[0]
        why = self.check_broker_hello(p, bid) if typ == HELLO else \
            "a frame of type %d first" % typ
        if why:
            self.fail(T, rec, "bad HELLO", why)
            await c.finish(True)
            return
        f = WFrame(HELLO, hello_node(rnd, self.cfg.peer_id, self.cfg.cluster,
                                     pl.extra["adv"]))
        data = f.ser()
        desc = "HELLO"
        if pl.mode == "mutated":
            data, what = wframe_mutate(rnd, f)
            desc = "HELLO [%s]" % what
        elif pl.mode == "partial":
            data = data[:rnd.randint(1, len(data) - 1)]
            desc = "HELLO cut at %d" % len(data)
        elif pl.mode == "garbage":
            data = rnd.randbytes(rnd.randint(1, 300))
            desc = "garbage"
        rec.d["units"].append(["HELLO", desc])
        T.inputs += 1
        if pl.mode == "reset":
            await c.finish(True)
            return
        if pl.mode != "none":
            if not await c.send(data, rnd, rnd.random() < 0.15, SLACK):
                await c.finish()
                T.closed += 1
                return
        seen, exchanges, outcome = 1, 0, "done"
        authed = False
        while not self.stop:
            silent = exchanges == pl.extra["exchanges"] and \
                pl.extra["end"] in ("silent", "partial")
            tmo = (self.hello_to if not authed or pl.mode in
                   ("none", "partial", "garbage") else self.fetch_to) + SLACK
            got = await c.wait(lambda: len(c.items) > seen, tmo)
            if c.bad:
                self.fail(T, rec, "bad frame", c.bad)
                break
            if got == "timeout":
                self.fail(T, rec, "hang", "the broker neither sent a frame "
                          "nor closed in %.1f s (after %d answers, %s)" % (
                              tmo, exchanges,
                              "the last one cut short" if silent and
                              pl.extra["end"] == "partial" else
                              "the last FETCH unanswered" if silent else
                              "HELLO %s" % pl.mode))
                await c.finish(True)
                return
            if got == "closed":
                outcome = "closed"
                break
            typ, corr, p = c.items[seen]
            seen += 1
            if typ == AUTH:
                if authed or len(p) != AUTH_LEN or any(p):
                    self.fail(T, rec, "bad AUTH", "%d bytes %s" % (
                        len(p), p[:40].hex()))
                    break
                authed = True
                continue
            if typ != FETCH or not authed:
                self.fail(T, rec, "bad frame", "type %d (after AUTH: %s)" %
                          (typ, authed))
                break
            try:
                rid, wait, mb, parts = parse_leader_fetch(p)
            except (ValueError, struct.error) as e:
                self.fail(T, rec, "bad FETCH", str(e))
                break
            if rid != bid or wait != REPLICA_FETCH_WAIT_MS or \
                    mb != 1 << 20:
                self.fail(T, rec, "bad FETCH", "replica %d wait %d bytes %d"
                          % (rid, wait, mb))
                break
            if exchanges == pl.extra["exchanges"]:
                if pl.extra["end"] == "silent":
                    continue        # and wait for the fetch deadline
                if pl.extra["end"] != "partial":
                    break
            f = leader_response(rnd, self.cfg, parts, corr)
            desc = "FETCH_RESP %d parts" % len(parts)
            if rnd.random() < 0.35:
                data, what = wframe_mutate(rnd, f)
                desc += " [%s]" % what
            else:
                data = f.ser()
            if exchanges == pl.extra["exchanges"]:
                data = data[:rnd.randint(1, max(1, len(data) - 1))]
                desc += " cut at %d" % len(data)
            exchanges += 1
            rec.d["units"].append(["FETCH_RESP", desc])
            T.inputs += 1
            ok = await c.send(data, rnd, rnd.random() < 0.15, SLACK)
            if ok is None:
                self.fail(T, rec, "hang", "the broker took none of our "
                          "FETCH_RESP in %.0f s" % SLACK)
                await c.finish(True)
                return
            if not ok:
                outcome = "closed"
                break
        if outcome == "closed":
            T.closed += 1
        elif exchanges:
            T.answered += 1
        rec.d["outcome"] = outcome
        await c.finish(pl.extra["end"] == "reset")

    async def peer_leader_loop(self, T, end):
        """Accept the brokers that follow --peer-id (--followers), each
        connection a session of its own."""
        loop = asyncio.get_running_loop()
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(hostport(self.a.listen))
        ls.listen(8)
        ls.setblocking(False)
        who = {}
        for f in (self.a.followers or "%d@" % self.a.broker_id).split(","):
            i, _, addr = f.partition("@")
            who[addr] = int(i)
        last = {i: loop.time() for i in who.values()}
        busy = {i: False for i in who.values()}
        pending = set()

        async def one(idx, s, bid):
            busy[bid] = True
            try:
                await self.peer_leader_session(T, idx, s, bid)
            except Exception:
                self.fuzzer_error(T, idx)
            T.inflight.discard(idx)
            busy[bid] = False
            last[bid] = loop.time()

        while loop.time() < end and not self.stop:
            try:
                s, addr = await asyncio.wait_for(
                    loop.sock_accept(ls), max(0.1, min(1.0, end - loop.time())))
            except asyncio.TimeoutError:
                s = None
            if s is not None:
                bid = who.get(addr[0], who.get(""))
                if bid is None:
                    self.fail(T, None, "stranger", "a connection from %s" %
                              (addr,))
                    s.close()
                    continue
                last[bid] = loop.time()
                idx = T.next_idx
                T.next_idx += 1
                T.inflight.add(idx)
                T.sessions += 1
                t = asyncio.ensure_future(one(idx, s, bid))
                pending.add(t)
                t.add_done_callback(pending.discard)
            for bid, t in last.items():
                if not busy[bid] and loop.time() - t > SLACK + 10:
                    self.fail(T, None, "no connection", "broker %d did not "
                              "connect to its peer %d in %.0f s" %
                              (bid, self.cfg.peer_id, loop.time() - t))
                    last[bid] = loop.time()
        ls.close()
        if pending:
            await asyncio.gather(*pending)

    # --- runs ---

    def fuzzer_error(self, T, idx):
        self.errors += 1
        self.out("fuzzer error in %s #%d:" % (T.name, idx))
        for line in traceback.format_exc().splitlines():
            self.out("  " + line)
        if self.errors >= 5:
            self.stop = True

    async def runner(self, T, fn, end):
        loop = asyncio.get_running_loop()
        sem = asyncio.Semaphore(T.conc)
        long_sem = asyncio.Semaphore(T.conc_long)
        pending = set()

        async def one(idx):
            slot = Slot(sem, long_sem)
            try:
                await fn(T, idx, slot)
            except Exception:
                self.fuzzer_error(T, idx)
            finally:
                T.inflight.discard(idx)
                slot.release()

        while loop.time() < end and not self.stop:
            await sem.acquire()
            if loop.time() >= end or self.stop:
                sem.release()
                break
            idx = T.next_idx
            T.next_idx += 1
            T.inflight.add(idx)
            T.sessions += 1
            t = asyncio.ensure_future(one(idx))
            pending.add(t)
            t.add_done_callback(pending.discard)
        if pending:
            await asyncio.gather(*pending)

    async def monitor(self, addr, end):
        """Each leader's earliest and latest offsets never move back, and
        the listener answers."""
        loop = asyncio.get_running_loop()
        last, ok_at, corr = {}, loop.time(), 0
        topics = self.cfg.topics
        body = struct.pack(">ii", -1, len(topics))
        for t, n in topics:
            body += struct.pack(">h", len(t)) + t.encode() + \
                struct.pack(">i", 2 * n)
            for p in range(n):
                body += struct.pack(">iqiq", p, -2, p, -1)
        s = None
        while loop.time() < end and not self.stop:
            try:
                if s is None:
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    s.setblocking(False)
                    await asyncio.wait_for(
                        loop.sock_connect(s, hostport(addr)), 10)
                corr += 1
                req = struct.pack(">hhih", 2, 1, corr, 7) + b"monitor" + body
                await asyncio.wait_for(loop.sock_sendall(
                    s, struct.pack(">i", len(req)) + req), 10)
                buf = b""
                while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(
                        ">i", buf)[0]:
                    d = await asyncio.wait_for(loop.sock_recv(s, 65536), 10)
                    if not d:
                        raise ConnectionError("closed")
                    buf += d
                r = Reader(buf[4:])
                if r.i32() != corr:
                    raise ValueError("monitor: correlation id")
                vals = {}
                for _ in range(r.i32()):
                    t = r.string()
                    for _ in range(r.i32()):
                        p, err, _, off = r.i32(), r.i16(), r.i64(), r.i64()
                        if not err:
                            vals.setdefault((addr, t, p), []).append(off)
                ok_at = loop.time()
                for k, v in vals.items():
                    if len(v) != 2:
                        continue
                    early, late = v
                    prev = last.get(k)
                    last[k] = (early, late)
                    if early > late:
                        self.fail(None, None, "offsets", "%s %s-%d: earliest "
                                  "%d past latest %d" % (k + (early, late)))
                    if prev and early < prev[0]:
                        self.fail(None, None, "offsets", "%s %s-%d: earliest "
                                  "went back %d -> %d" % (k + (prev[0], early)))
                    if prev and late < prev[1]:
                        self.fail(None, None, "offsets", "%s %s-%d: latest "
                                  "(HW) went back %d -> %d" %
                                  (k + (prev[1], late)))
            except (OSError, ValueError, struct.error, IndexError,
                    asyncio.TimeoutError, ConnectionError) as e:
                if s is not None:
                    s.close()
                    s = None
                if loop.time() - ok_at > SLACK:
                    self.fail(None, None, "listener", "%s has not answered "
                              "ListOffsets for %.0f s: %r" %
                              (addr, loop.time() - ok_at, e))
                    ok_at = loop.time()
            await asyncio.sleep(0.5)
        if s is not None:
            s.close()
        self.out("monitor %s: %d partitions led there checked" %
                 (addr, len(last)))

    async def progress(self):
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        while not self.done:
            await asyncio.sleep(1.0)
            self.out("progress t=%.0f %s" % (loop.time() - t0, " ".join(
                "%s=%d/%d/%d" % (t.name, t.next_idx,
                                 min(t.inflight) if t.inflight else
                                 t.next_idx, t.inputs)
                for t in self.targets.values())))

    async def learn_apis(self, addr):
        """The APIs and versions the broker lists: ApiVersions v0."""
        loop = asyncio.get_running_loop()
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            await asyncio.wait_for(loop.sock_connect(s, hostport(addr)), 10)
            await loop.sock_sendall(s, sentinel(1))
            buf = b""
            while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(
                    ">i", buf)[0]:
                d = await asyncio.wait_for(loop.sock_recv(s, 65536), 10)
                if not d:
                    raise ConnectionError("closed")
                buf += d
        finally:
            s.close()
        r = Reader(buf[4:])
        r.i32()
        if r.i16():
            raise ValueError("ApiVersions error")
        apis = {}
        for _ in range(r.i32()):
            k, lo, hi = r.i16(), r.i16(), r.i16()
            apis[k] = (lo, hi)
        return apis

    async def main(self):
        loop = asyncio.get_running_loop()
        a = self.a
        if a.kafka_leader:
            try:
                apis = await self.learn_apis(a.kafka_leader)
            except (OSError, ValueError, struct.error,
                    asyncio.TimeoutError) as e:
                self.fail(None, None, "ApiVersions", "%s: %r" %
                          (a.kafka_leader, e))
                return
            self.cfg.apis = {k: v for k, v in apis.items() if k in BUILDERS}
            self.out("apis %s" % " ".join(
                "%s:%d-%d" % (KAPI_NAMES.get(k, k), v[0], v[1])
                for k, v in sorted(apis.items())))
        cj = self.cfg.to_json()
        cj["targets"] = {"kafka-leader": a.kafka_leader,
                         "kafka-follower": a.kafka_follower,
                         "peer-follower": a.peer, "peer-leader": a.listen}
        self.out("config %s" % json.dumps(cj, separators=(",", ":")))
        jobs = []
        end = loop.time() + a.secs
        if a.kafka_leader:
            T = self.targets["kafka-leader"] = Target("kafka-leader",
                                                      a.kafka_leader, a.conc)
            jobs.append(self.runner(T, self.kafka_session, end))
            jobs.append(self.monitor(a.kafka_leader, end))
        if a.kafka_follower:
            T = self.targets["kafka-follower"] = Target(
                "kafka-follower", a.kafka_follower, max(1, a.conc // 2))
            jobs.append(self.runner(T, self.kafka_session, end))
            jobs.append(self.monitor(a.kafka_follower, end))
        if a.peer:
            T = self.targets["peer-follower"] = Target("peer-follower",
                                                       a.peer, 2)
            jobs.append(self.runner(T, self.peer_follower_session, end))
        if a.listen:
            T = self.targets["peer-leader"] = Target("peer-leader",
                                                     a.listen, 1)
            jobs.append(self.peer_leader_loop(T, end))
        self.done = False
        prog = asyncio.ensure_future(self.progress())
        t0 = loop.time()
        await asyncio.gather(*jobs)
        self.done = True
        prog.cancel()
        for T in self.targets.values():
            T.secs = min(a.secs, loop.time() - t0)
        self.out("all connections ended %.1f s after the start" %
                 (loop.time() - t0))


class Reader:
    def __init__(self, b):
        self.b, self.p = b, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.p)[0]
        self.p += struct.calcsize(fmt)
        return v

    def i16(self):
        return self.take(">h")

    def i32(self):
        return self.take(">i")

    def i64(self):
        return self.take(">q")

    def string(self):
        n = self.i16()
        v = self.b[self.p:self.p + max(n, 0)].decode(errors="replace")
        self.p += max(n, 0)
        return v


def cmd_run(a):
    F = Fuzz(a)
    F.out("seed %s (KREP_FUZZ_SEED=%s reproduces the inputs)" % (a.seed,
                                                                 a.seed))
    start = time.monotonic()
    try:
        asyncio.run(F.main())
    except KeyboardInterrupt:
        F.out("interrupted")
    total = 0
    for T in F.targets.values():
        secs = T.secs or (time.monotonic() - start)
        total += T.inputs
        F.out("result %s inputs %d sessions %d secs %.1f rate %.1f/s "
              "answered %d closed %d valid %d failures %d late %d" % (
                  T.name, T.inputs, T.sessions, secs,
                  T.inputs / secs if secs else 0.0, T.answered, T.closed,
                  T.strict, T.failures, T.late))
    F.out("total inputs %d in %.1f s, failures %d, fuzzer errors %d" % (
        total, time.monotonic() - start, F.nfail, F.errors))
    if a.ring:
        with open(a.ring, "w") as f:
            F.emit("%s-last" % a.seed, {"seed": a.seed, "reason": "the last "
                                        "connections of the run",
                                        "config": F.cfg.to_json(),
                                        "failing": None,
                                        "rings": F.rings()}, f)
    return 1 if F.nfail or F.errors else 0


# --- on the host: reproducers from a console log ---------------------------------------

def regenerate(seed, cfg, target, lo, hi, addr=None):
    """The sessions @lo..@hi of @target, as a seed draws them."""
    out = []
    for idx in range(max(0, lo), hi):
        rnd = session_rng(seed, target, idx)
        if target.startswith("kafka"):
            pl = plan_kafka(rnd, cfg, idx)
        elif target == "peer-follower":
            pl = plan_peer_follower(rnd, cfg, idx)
        else:
            pl = plan_peer_leader(rnd)
            out.append({"target": target, "idx": idx, "mode": pl.mode,
                        "extra": {k: (v.decode() if isinstance(v, bytes)
                                      else v) for k, v in pl.extra.items()},
                        "units": [], "actions": []})
            continue
        stream = b"".join(u[1] for u in pl.units)
        acts = [[0, "send", (stream + (pl.sentinels[0] if pl.sentinels and
                                       pl.cut is None else b"")
                              )[:pl.cut].hex()]]
        out.append({"target": target, "idx": idx, "mode": pl.mode,
                    "addr": addr,
                    "units": [[u[0], u[3]] for u in pl.units],
                    "actions": acts, "outcome": "regenerated"})
    return out


def write_repro(outdir, name, obj):
    os.makedirs(outdir, exist_ok=True)
    base = os.path.join(outdir, "repro-%s" % name)
    with open(base + ".json", "w") as f:
        json.dump(obj, f, indent=1)
    with open(base + ".txt", "w") as f:
        f.write("reproducer %s\nreason: %s\n" % (name, obj.get("reason")))
        if obj.get("kernel"):
            f.write("kernel log:\n%s\n" % "\n".join(obj["kernel"]))
        sess = ([obj["failing"]] if obj.get("failing") else []) + \
            [r for ring in obj.get("rings", {}).values() for r in ring]
        for k, r in enumerate(sess):
            full = k == 0 and obj.get("failing")
            f.write("\n== %s #%s to %s, mode %s, outcome %s\n" % (
                r.get("target"), r.get("idx"), r.get("addr"),
                r.get("mode"), r.get("outcome")))
            for u in r.get("units", []):
                f.write("  unit %s: %s\n" % (u[0], u[1]))
            for a in r.get("actions", []):
                f.write("  %8.3fs %s" % (a[0], a[1]))
                if len(a) > 2:
                    f.write(" %d bytes%s: %s" % (
                        len(a[2]) // 2, " (of %d)" % a[3] if len(a) > 3
                        else "", a[2] if full else a[2][:512]))
                f.write("\n")
    return base


def genl_regenerate(seed, at):
    """The inputs fuzz_genl's workers were at (@at: "w0=N w1=M ..."),
    and the 16 before each, as fuzz_genl gen draws them."""
    prog = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "fuzz_genl")
    rings = {}
    for m in re.finditer(r"w(\d+)=(\d+)", at):
        k, n = int(m.group(1)), int(m.group(2))
        try:
            outp = subprocess.run([prog, "gen", "--seed", seed, "--worker",
                                   str(k), "--from", str(max(0, n - 16)),
                                   "--to", str(n + 1)], capture_output=True,
                                  text=True, check=True).stdout
            rings["genl-w%d" % k] = json.loads(outp)
        except (OSError, subprocess.CalledProcessError, ValueError) as e:
            print("fuzz_kafka.py: fuzz_genl gen: %s" % e, file=sys.stderr)
    return rings


def cmd_extract(a):
    blocks, found = {}, []
    cur = {"": None, "genl": None}
    seed = cfg = None
    progress, bad, done = None, [], False
    gseed, gat, gdone = None, None, False
    text = open(a.console, errors="replace").read().splitlines()
    for line in text:
        # fuzz_kafka.py's blocks and fuzz_genl's may interleave
        key = "genl" if "genl FUZZ-REPRO" in line else ""
        m = re.search(r"FUZZ-REPRO-BEGIN (\S+)", line)
        if m:
            cur[key] = m.group(1)
            blocks[cur[key]] = []
            continue
        m = re.search(r"FUZZ-REPRO-END (\S+)", line)
        if m:
            if cur[key]:
                found.append(cur[key])
            cur[key] = None
            continue
        m = re.search(r"FUZZ-REPRO ([A-Za-z0-9+/=]+)\s*$", line)
        if m and cur[key]:
            blocks[cur[key]].append(m.group(1))
            continue
        m = re.search(r"fuzz: genl seed (\S+)", line)
        if m:
            gseed = m.group(1)
        m = re.search(r"fuzz: genl progress .* at((?: w\d+=\d+)+)", line)
        if m:
            gat = m.group(1)
        if re.search(r"fuzz: genl result", line):
            gdone = True
        m = re.search(r"fuzz: seed (\S+)", line)
        if m:
            seed = m.group(1)
        m = re.search(r"fuzz: config (\{.*\})", line)
        if m:
            cfg = json.loads(m.group(1))
        m = re.search(r"fuzz: progress t=\S+ (.*)$", line)
        if m:
            progress = m.group(1)
        if re.search(r"fuzz: total inputs", line):
            done = True
        if re.search(r"\[ *\d+\.\d+\] .*(WARNING:|BUG:|Oops|general "
                     r"protection|Kernel panic|KASAN|UBSAN|refcount_t|"
                     r"soft lockup|hard LOCKUP|blocked for more than|"
                     r"krep: leak|Poison overwritten|Redzone|double free|"
                     r"Object already free|list_(add|del) corruption)", line):
            bad.append(line)
    written = []
    for name in found:
        try:
            obj = json.loads(zlib.decompress(base64.b64decode(
                "".join(blocks[name]))))
        except (ValueError, zlib.error) as e:
            print("fuzz_kafka.py: block %s does not decode: %s" % (name, e),
                  file=sys.stderr)
            continue
        if bad:
            obj["kernel"] = bad[:40]
        written.append(write_repro(a.outdir, name, obj))
    if bad and not done and seed and cfg:
        # the VM died in the run: the connections in flight, drawn again
        obj = {"seed": seed, "reason": "the kernel died during the run; "
               "the connections in flight at the last progress line, "
               "drawn again from the seed (timing and the broker's FETCHes "
               "are not replayed)", "kernel": bad[:40],
               "progress": progress, "failing": None, "rings": {}}
        c = Cfg.from_json(cfg)
        addrs = cfg.get("targets", {})
        for m in re.finditer(r"(\S+)=(\d+)/(\d+)/\d+", progress or ""):
            t, started, low = m.group(1), int(m.group(2)), int(m.group(3))
            # those that ran since a little before the last progress line
            # (and then some); older ones still in flight were waiting
            obj["rings"][t] = regenerate(seed, c, t,
                                         max(low, started - 200),
                                         started + 40, addrs.get(t))
        written.append(write_repro(a.outdir, "%s-crash" % seed, obj))
    if bad and not gdone and gseed and gat:
        obj = {"seed": gseed, "reason": "the kernel died during the run; "
               "the netlink requests fuzz_genl's workers were at, and the 16 "
               "before each, drawn again from the seed (as drawn: the "
               "workers cut waits to 50 ms before sending)",
               "kernel": bad[:40], "progress": gat, "failing": None,
               "rings": genl_regenerate(gseed, gat)}
        written.append(write_repro(a.outdir, "%s-genl-crash" % gseed, obj))
    for w in written:
        print("fuzz: reproducer %s.json (%s.txt)" % (w, w))
    if not written:
        print("fuzz: no reproducer in %s" % a.console)
    return 0


def genl_replay(r, wait):
    """A genl session: its request to this namespace's "krep" family."""
    from repl_helper import Genl  # noqa: E402 (needs the module loaded)
    g = Genl()
    for act in r["actions"]:
        req = bytearray(bytes.fromhex(act[2]))
        if len(req) < 16:
            continue
        g.seq += 1
        struct.pack_into("=HHI", req, 4, g.family,
                         struct.unpack_from("=H", req, 6)[0], g.seq)
        print("== genl #%s (worker %s): %s, %d bytes" % (
            r.get("idx"), r.get("mode"), r["units"][0][0], len(req)))
        g.s.settimeout(wait)
        g.s.send(bytes(req))
        try:
            while True:
                data = g.s.recv(8 << 20)
                off, end = 0, False
                while off + 16 <= len(data):
                    mlen, mtype = struct.unpack_from("=IH", data, off)
                    if mtype in (2, 3):     # NLMSG_ERROR, NLMSG_DONE
                        err = struct.unpack_from("=i", data, off + 16)[0]
                        print("answer: %s %d" % ("error" if mtype == 2
                                                  else "done", err))
                        end = True
                    else:
                        print("answer: type %d, %d bytes" % (mtype, mlen))
                    off += max(16, (mlen + 3) & ~3)
                if end:
                    break
        except socket.timeout:
            print("no answer within %.1f s" % wait)


def cmd_replay(a):
    obj = json.load(open(a.file))
    sess = ([obj["failing"]] if obj.get("failing") else []) + \
        [r for ring in obj.get("rings", {}).values() for r in ring]
    for r in sess:
        if a.session is not None and r.get("idx") != a.session:
            continue
        if r.get("target") == "genl":
            genl_replay(r, a.wait)
            continue
        if r.get("target") == "peer-leader" or not r.get("addr"):
            print("skip %s #%s (a fake leader's session)" % (r.get("target"),
                                                            r.get("idx")))
            continue
        print("== %s #%s to %s" % (r["target"], r["idx"], r["addr"]))
        s = socket.create_connection(hostport(r["addr"]), timeout=10)
        t0 = time.monotonic()
        for act in r["actions"]:
            time.sleep(max(0.0, act[0] - (time.monotonic() - t0)))
            if act[1] == "send":
                s.sendall(bytes.fromhex(act[2]))
            elif act[1] == "shutwr":
                s.shutdown(socket.SHUT_WR)
            elif act[1] == "reset":
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                             struct.pack("ii", 1, 0))
                break
            elif act[1] == "close":
                break
        got = b""
        s.settimeout(a.wait)
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    print("closed by the broker")
                    break
                got += d
        except socket.timeout:
            print("still open after %.1f s" % a.wait)
        except OSError as e:
            print("reset: %s" % e)
        print("received %d bytes: %s" % (len(got), got[:200].hex()))
        s.close()
    return 0


def main(argv):
    ap = argparse.ArgumentParser(prog="fuzz_kafka.py",
                                 description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    r = sub.add_parser("run")
    r.add_argument("--seed", default=str(random.SystemRandom().getrandbits(32)))
    r.add_argument("--secs", type=float, default=60)
    r.add_argument("--kafka-leader")
    r.add_argument("--kafka-follower")
    r.add_argument("--peer", help="HOST:PORT of a broker's replication "
                   "listener, fuzzed as --peer-id")
    r.add_argument("--listen", help="HOST:PORT of --peer-id, where the "
                   "broker connects to its fake leader")
    r.add_argument("--broker-id", type=int, default=1,
                   help="the broker at --peer (and the one that connects "
                   "to --listen, without --followers)")
    r.add_argument("--followers", help="ID@ADDR,...: the brokers that "
                   "connect to --listen, their ids by address")
    r.add_argument("--peer-id", type=int, default=9)
    r.add_argument("--peer-topic", default="fz9",
                   help="partition 1 led by the broker with --peer-id a "
                   "replica; partition 0 led by --peer-id")
    r.add_argument("--peer-epoch", type=int, default=0)
    r.add_argument("--cluster", default="fuzz")
    r.add_argument("--topics", default="fz:3,fz9:2")
    r.add_argument("--conc", type=int, default=12)
    r.add_argument("--max-request", type=int, default=8 << 20)
    r.add_argument("--kafka-idle-ms", type=int, default=600000)
    r.add_argument("--kafka-request-ms", type=int, default=REQUEST_MS)
    r.add_argument("--kafka-wait-max-ms", type=int, default=KAFKA_WAIT_MAX_MS)
    r.add_argument("--hello-timeout-ms", type=int, default=5000)
    r.add_argument("--fetch-timeout-ms", type=int, default=3000)
    r.add_argument("--max-failures", type=int, default=10)
    r.add_argument("--ring")
    e = sub.add_parser("extract")
    e.add_argument("console")
    e.add_argument("outdir")
    p = sub.add_parser("replay")
    p.add_argument("file")
    p.add_argument("session", nargs="?", type=int)
    p.add_argument("--wait", type=float, default=5.0)
    a = ap.parse_args(argv[1:])
    if a.cmd == "run":
        return cmd_run(a)
    if a.cmd == "extract":
        return cmd_extract(a)
    if a.cmd == "replay":
        return cmd_replay(a)
    ap.print_usage(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
