#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""kafka_raw.py - Kafka requests written byte by byte, for selftests/kafka.sh.

Checks what no client library lets a test choose: exact versions, errors,
malformed and oversized requests. Run inside a broker's namespace:

  kafka_raw.py HOST:PORT TOPIC LEADER_ID FOLLOWER_HOST:PORT
  kafka_raw.py --limits HOST:PORT MAX_CONNECTIONS MAX_REQUEST IDLE_MS \
      REQUEST_MS WAIT_MAX_MS
  kafka_raw.py --metadata TOPIC HOST:PORT...
  kafka_raw.py --fill HOST:PORT TOPIC ACKS BYTES VALUE_SIZE
  kafka_raw.py --acked HOST:PORT TOPIC FILE [RESET_AFTER]
  kafka_raw.py --corrupt HOST:PORT TOPIC BYTES

TOPIC must exist with partition 0 led by LEADER_ID (served at HOST:PORT)
and replicated to the broker at FOLLOWER_HOST:PORT. With --limits, the
broker at HOST:PORT was loaded with kafka_max_connections,
kafka_max_request_bytes, kafka_idle_ms, kafka_request_ms and
kafka_wait_max_ms as given (REQUEST_MS above IDLE_MS, WAIT_MAX_MS below
it) and has no other client; --limits reads the kernel log (/dev/kmsg,
as root, on the broker's host) for what closed each connection it resets,
so the broker's close log lines must not be rate-limited away (a fresh
load). Prints one line per check, "ok DESCRIPTION" or "not ok
DESCRIPTION: WHAT", and exits 0 when every check passed, 1 otherwise.
With --metadata, asks each broker for TOPIC's Metadata (v7, with leader
epochs) and prints one JSON line per broker and partition: {"broker":
HOST:PORT, "partition", "error", "leader", "leader_epoch", "replicas",
"isr"}, or {"broker": HOST:PORT, "failed": WHY}; it exits 0.
With --fill, produces batches of one VALUE_SIZE-byte record (Produce v7,
ACKS) to TOPIC's partition 0 on one connection until BYTES of values went
in or one is refused, then asks ApiVersions on the same connection, and
prints one JSON line: {"bytes", "batches", "error": the refusal's code
(0: none), "served": whether the connection still answered} or, when the
connection failed, {"bytes", "batches", "closed": WHY}; it exits 0.
With --acked (powerloss.sh), produces record after record to TOPIC's
partition 0 (Produce v7, acks=all, one record a batch, one request at a
time on one connection), value I of TOPIC being acked_value(TOPIC, I),
until killed, and appends "OFFSET VALUE" to FILE for each one
acknowledged, flushed and fsynced before the next is sent: FILE lists
exactly the records acknowledged so far. It exits 1 on the first error
(its code on stderr). With RESET_AFTER, once that many are acknowledged
it sends the next one and, while that one is in flight, writes FILE.reset
and resets the machine (b to /proc/sysrq-trigger: no sync, no unmount),
so that the power goes right after an acknowledgement.
With --corrupt, produces one batch of a BYTES-byte record whose CRC is
wrong to TOPIC's partition 0 (Produce v7, acks=all) and prints the
partition's error code; it exits 0 when it got an answer.
"""

import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from krep_record import batch  # noqa: E402

FAILED = 0


def check(cond, desc, what=""):
    global FAILED
    if cond:
        print("ok " + desc)
    else:
        FAILED += 1
        print("not ok %s: %s" % (desc, what))


def connect(addr):
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=20)
    return s


def s16(v):
    return struct.pack(">h", v)


def s32(v):
    return struct.pack(">i", v)


def s64(v):
    return struct.pack(">q", v)


def string(v):
    if v is None:
        return s16(-1)
    b = v.encode()
    return s16(len(b)) + b


def request(key, ver, corr, body, flexible=False):
    hdr = s16(key) + s16(ver) + s32(corr) + string("kafka_raw")
    if flexible:
        hdr += b"\0"                    # no tagged fields
    msg = hdr + body
    return s32(len(msg)) + msg


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        part = s.recv(n - len(buf))
        if not part:
            return None
        buf += part
    return buf


def response(s):
    size = recv_exact(s, 4)
    if size is None:
        return None
    return recv_exact(s, struct.unpack(">i", size)[0])


def closed(s):
    """True when the broker closed the connection (EOF or reset)."""
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


class Reader:
    def __init__(self, buf):
        self.b = buf
        self.p = 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.p)
        self.p += struct.calcsize(fmt)
        return v[0]

    def i8(self):
        return self.take(">b")

    def i16(self):
        return self.take(">h")

    def i32(self):
        return self.take(">i")

    def i64(self):
        return self.take(">q")

    def uvarint(self):
        v = shift = 0
        while True:
            c = self.b[self.p]
            self.p += 1
            v |= (c & 0x7f) << shift
            shift += 7
            if not c & 0x80:
                return v

    def string(self):
        n = self.i16()
        if n < 0:
            return None
        v = self.b[self.p:self.p + n].decode()
        self.p += n
        return v

    def done(self):
        return self.p == len(self.b)


def api_versions(addr):
    s = connect(addr)
    s.sendall(request(18, 0, 7, b""))
    r = Reader(response(s))
    corr, err, n = r.i32(), r.i16(), r.i32()
    apis = {}
    for _ in range(n):
        k, lo, hi = r.i16(), r.i16(), r.i16()
        apis[k] = (lo, hi)
    check(corr == 7 and err == 0 and r.done(),
          "ApiVersions v0: correlation id, no error, exact length",
          "corr %d err %d" % (corr, err))
    want = {0: (3, 8), 1: (4, 11), 2: (1, 5), 3: (0, 8), 10: (0, 2),
            18: (0, 3), 22: (0, 1), 23: (0, 3)}
    check(apis == want, "ApiVersions lists Produce 3-8, Fetch 4-11, "
          "ListOffsets 1-5, Metadata 0-8, FindCoordinator 0-2, "
          "ApiVersions 0-3, InitProducerId 0-1, OffsetForLeaderEpoch 0-3",
          repr(apis))

    # v3: flexible body (compact array, tagged fields), header still v0
    body = b"\x0akafka_raw" + b"\x021" + b"\0"
    s.sendall(request(18, 3, 8, body, flexible=True))
    r = Reader(response(s))
    corr, err, n = r.i32(), r.i16(), r.uvarint() - 1
    for _ in range(n):
        r.i16(), r.i16(), r.i16(), r.uvarint()
    throttle, tags = r.i32(), r.uvarint()
    check(corr == 8 and err == 0 and n == 8 and tags == 0 and r.done(),
          "ApiVersions v3: compact array of 8 APIs and tagged fields",
          "corr %d err %d n %d" % (corr, err, n))

    # a version newer than ours: version 0 body with UNSUPPORTED_VERSION
    s.sendall(request(18, 9, 9, b"\0\0\0", flexible=True))
    r = Reader(response(s))
    corr, err, n = r.i32(), r.i16(), r.i32()
    check(corr == 9 and err == 35 and n == 8,
          "ApiVersions v9: UNSUPPORTED_VERSION (35) and the list in v0",
          "corr %d err %d n %d" % (corr, err, n))
    s.close()


def metadata_unknown(addr):
    s = connect(addr)
    body = s32(2) + string("no-such-topic") + string("bad/name") + b"\0"
    s.sendall(request(3, 4, 11, body))
    r = Reader(response(s))
    r.i32(), r.i32()                    # corr, throttle
    for _ in range(r.i32()):
        r.i32(), r.string(), r.i32(), r.string()
    r.string(), r.i32()                 # cluster id, controller
    errs = {}
    for _ in range(r.i32()):
        err, name = r.i16(), r.string()
        r.i8()
        r.i32()                         # no partitions
        errs[name] = err
    check(errs == {"no-such-topic": 3, "bad/name": 17},
          "Metadata: UNKNOWN_TOPIC_OR_PARTITION (3) and "
          "INVALID_TOPIC_EXCEPTION (17), no topic created", repr(errs))
    s.close()


def produce(addr, topic, acks, value, corr):
    return produce_batch(addr, topic, acks, batch(value), corr)


def produce_batch(addr, topic, acks, rec, corr):
    body = (string(None) + s16(acks) + s32(10000) + s32(1) + string(topic) +
            s32(1) + s32(0) + s32(len(rec)) + rec)
    s = connect(addr)
    s.sendall(request(0, 7, corr, body))
    r = Reader(response(s))
    rcorr = r.i32()
    r.i32()                             # topics
    r.string()
    r.i32()                             # partitions
    part, err, base = r.i32(), r.i16(), r.i64()
    s.close()
    return rcorr, err, base


def produce_errors(leader, follower, topic):
    corr, err, base = produce(leader, topic, -1, b"raw-1", 21)
    check(corr == 21 and err == 0 and base >= 0,
          "Produce v7 acks=all to the leader: no error, a base offset",
          "corr %d err %d base %d" % (corr, err, base))
    corr, err, base = produce(follower, topic, 1, b"raw-3", 22)
    check(err == 6 and base == -1,
          "Produce to a follower: NOT_LEADER_OR_FOLLOWER (6)",
          "err %d base %d" % (err, base))
    corr, err, base = produce(leader, "no-such-topic", 1, b"x", 23)
    check(err == 3, "Produce to an unknown topic: "
          "UNKNOWN_TOPIC_OR_PARTITION (3)", "err %d" % err)


def fetch_batch(s, topic, offset, corr):
    """Fetch v4 of partition 0 at @offset on @s: (error, first batch)."""
    body = (s32(-1) + s32(100) + s32(1) + s32(1 << 20) + bytes([0]) +
            s32(1) + string(topic) + s32(1) + s32(0) + s64(offset) +
            s32(1 << 20))
    s.sendall(request(1, 4, corr, body))
    r = Reader(response(s))
    r.i32(), r.i32(), r.i32(), r.string(), r.i32(), r.i32()
    err = r.i16()
    r.i64(), r.i64()                    # HW, LSO
    for _ in range(max(r.i32(), 0)):    # aborted transactions
        r.i64(), r.i64()
    n = r.i32()
    recs = r.b[r.p:r.p + max(n, 0)]
    if len(recs) < 12:
        return err, b""
    return err, recs[:12 + struct.unpack_from(">i", recs, 8)[0]]


def trickle(addr, topic):
    """A Produce sent 16 bytes per segment is appended whole."""
    value = bytes((i * 7 + 3) % 251 for i in range(3000))
    rec = batch(value)
    body = (string(None) + s16(-1) + s32(10000) + s32(1) + string(topic) +
            s32(1) + s32(0) + s32(len(rec)) + rec)
    req = request(0, 7, 41, body)
    s = connect(addr)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for i in range(0, len(req), 16):
        s.sendall(req[i:i + 16])
        time.sleep(0.001)
    r = Reader(response(s))
    corr = r.i32()
    r.i32(), r.string(), r.i32(), r.i32()
    err, base = r.i16(), r.i64()
    check(corr == 41 and err == 0 and base >= 0,
          "a Produce sent 16 bytes per segment: appended",
          "corr %d err %d base %d" % (corr, err, base))
    err, got = fetch_batch(s, topic, max(base, 0), 42)
    # the leader stamps the base offset and its epoch, bytes 0-7 and 12-15
    check(err == 0 and len(got) == len(rec) and got[8:12] == rec[8:12] and
          got[16:] == rec[16:] and struct.unpack_from(">q", got)[0] == base,
          "the batch sent 16 bytes per segment is stored byte for byte",
          "err %d, %d bytes stored of %d" % (err, len(got), len(rec)))
    s.close()


def find_coordinator(addr):
    """FindCoordinator 0-2: COORDINATOR_NOT_AVAILABLE, the connection kept."""
    s = connect(addr)
    got = []
    for ver in (0, 1, 2):
        body = string("a-group") + (bytes([0]) if ver else b"")
        s.sendall(request(10, ver, 50 + ver, body))
        r = Reader(response(s))
        corr = r.i32()
        if ver:
            r.i32()                     # throttle time
        err = r.i16()
        msg = r.string() if ver else ""
        node, host, port = r.i32(), r.string(), r.i32()
        got.append((corr, err, node, host, port, bool(msg), r.done()))
    want = [(50 + v, 15, -1, "", -1, v > 0, True) for v in (0, 1, 2)]
    check(got == want and served(s, 53),
          "FindCoordinator v0-v2: COORDINATOR_NOT_AVAILABLE (15), a "
          "message from v1, no node; the connection still served",
          repr(got))
    s.close()


def crowd(addr, topic):
    """1000 idle connections, and one that reads none of its Fetch answers
    (the broker stops reading its requests once its queue is full): the
    broker goes on serving others and committing appends, and the slow
    reader, once it reads, gets every answer in order."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (1200, max(1200, hard)))
    idle, slow = [], None
    try:
        for _ in range(1000):
            idle.append(connect(addr))
        slow = connect(addr)
        body = (s32(-1) + s32(0) + s32(1) + s32(1 << 20) + bytes([0]) +
                s32(1) + string(topic) + s32(1) + s32(0) + s64(0) +
                s32(1 << 20))
        slow.sendall(b"".join(request(1, 4, 300 + i, body)
                              for i in range(100)))
        s = connect(addr)
        fresh = served(s, 60)
        s.close()
        corr, err, base = produce(addr, topic, -1, b"crowd", 62)
        check(fresh and corr == 62 and err == 0 and base >= 0,
              "with 1000 idle connections and one reading none of its 100 "
              "Fetch answers, a new connection is served and an acks=all "
              "Produce commits", "served %s, Produce error %d" % (fresh, err))
        got = [Reader(response(slow)).i32() for _ in range(100)]
        check(got == [300 + i for i in range(100)],
              "the slow reader, once it reads, gets its 100 answers in order",
              repr(got[:5]))
    except (OSError, TypeError, struct.error) as e:
        check(False, "1000 idle connections and a slow reader", repr(e))
        check(False, "the slow reader gets its answers", "not reached")
    for s in idle + ([slow] if slow else []):
        s.close()


def init_producer_id(addr, txn_id, corr):
    """InitProducerId v1: (corr, error, producer id, epoch, exact length)."""
    s = connect(addr)
    s.sendall(request(22, 1, corr, string(txn_id) + s32(60000)))
    r = Reader(response(s))
    rcorr, _, err, pid, epoch = r.i32(), r.i32(), r.i16(), r.i64(), r.i16()
    s.close()
    return rcorr, err, pid, epoch, r.done()


def idempotence(addr, topic):
    corr, err, pid, epoch, done = init_producer_id(addr, None, 41)
    check(corr == 41 and err == 0 and pid >= 0 and epoch == 0 and done,
          "InitProducerId v1: a producer id, epoch 0",
          "corr %d err %d pid %d epoch %d" % (corr, err, pid, epoch))
    _, terr, tpid, _, _ = init_producer_id(addr, "txn-a", 42)
    check(terr == 42 and tpid == -1, "InitProducerId with a transactional "
          "id: INVALID_REQUEST (42)", "err %d pid %d" % (terr, tpid))
    first = batch(b"idem-0", pid, 0, 0)
    _, e0, b0 = produce_batch(addr, topic, -1, first, 43)
    _, e1, b1 = produce_batch(addr, topic, -1, first, 44)
    _, e2, b2 = produce_batch(addr, topic, -1, batch(b"idem-1", pid, 0, 1),
                              45)
    check(e0 == 0 and e1 == 0 and b1 == b0 and e2 == 0 and b2 == b0 + 1,
          "a retried batch (same producer, epoch and sequences) gets its "
          "first offset back and is not appended again",
          "offsets %d %d %d errors %d %d %d" % (b0, b1, b2, e0, e1, e2))
    _, e, _ = produce_batch(addr, topic, -1, batch(b"gap", pid, 0, 5), 46)
    check(e == 45, "a sequence gap: OUT_OF_ORDER_SEQUENCE_NUMBER (45)",
          "err %d" % e)
    _, e, _ = produce_batch(addr, topic, -1, batch(b"e1", pid, 1, 3), 47)
    check(e == 45, "a new producer epoch not at sequence 0: "
          "OUT_OF_ORDER_SEQUENCE_NUMBER (45)", "err %d" % e)
    _, e1, _ = produce_batch(addr, topic, -1, batch(b"e1", pid, 1, 0), 48)
    _, e0, _ = produce_batch(addr, topic, -1, batch(b"e0", pid, 0, 2), 49)
    check(e1 == 0 and e0 == 47, "epoch 1 from sequence 0 is taken; epoch 0 "
          "afterwards: INVALID_PRODUCER_EPOCH (47)",
          "errors %d %d" % (e1, e0))


def epoch_end(addr, topic):
    """OffsetForLeaderEpoch v3 for partition 0: (error, epoch, end)."""
    def ask(current, epoch=0):
        body = (s32(-1) + s32(1) + string(topic) + s32(1) + s32(0) +
                s32(current) + s32(epoch))
        s = connect(addr)
        s.sendall(request(23, 3, 41, body))
        r = Reader(response(s))
        s.close()
        r.i32(), r.i32(), r.i32()       # corr, throttle, topics
        r.string()
        r.i32()                         # partitions
        err, part, epoch, end = r.i16(), r.i32(), r.i32(), r.i64()
        return err, epoch, end, r.done()
    err, epoch, end, done = ask(-1)
    check(err == 0 and epoch == 0 and end > 0 and done,
          "OffsetForLeaderEpoch v3: epoch 0 of partition 0 ends at its LEO",
          "err %d epoch %d end %d" % (err, epoch, end))
    err, epoch, end, done = ask(-1, 1)
    check(err == 0 and epoch == -1 and end == -1 and done,
          "OffsetForLeaderEpoch for an epoch above the latest: "
          "UNDEFINED epoch and offset (-1, -1), as Kafka's cache",
          "err %d epoch %d end %d" % (err, epoch, end))
    err, epoch, end, done = ask(5)
    check(err == 75 and end == -1,
          "OffsetForLeaderEpoch with a newer current leader epoch: "
          "UNKNOWN_LEADER_EPOCH (75)", "err %d end %d" % (err, end))


def bad_requests(addr):
    s = connect(addr)
    s.sendall(request(1234, 0, 1, b""))
    check(closed(s), "an unknown API key closes the connection")
    s = connect(addr)
    s.sendall(request(0, 2, 1, b""))
    check(closed(s), "Produce v2 (unsupported) closes the connection")
    s = connect(addr)
    s.sendall(request(3, 4, 1, s32(5) + b"\0\0"))
    check(closed(s), "a Metadata request cut short closes the connection")
    s = connect(addr)
    s.sendall(s32(64 << 20))
    check(closed(s), "a request announcing 64 MiB closes the connection")
    # the listener still serves: another connection gets its answer
    s = connect(addr)
    s.sendall(request(18, 0, 5, b""))
    r = response(s)
    check(r is not None and Reader(r).i32() == 5,
          "after the bad requests a new connection is served")
    s.close()


def pipelined(addr):
    """Three requests in one send are answered in order."""
    s = connect(addr)
    s.sendall(request(18, 0, 31, b"") + request(3, 1, 32, s32(0)) +
              request(18, 1, 33, b""))
    got = [Reader(response(s)).i32() for _ in range(3)]
    check(got == [31, 32, 33], "pipelined requests answered in order",
          repr(got))
    s.close()


def served(s, corr):
    """True when an ApiVersions v0 on @s is answered."""
    try:
        s.sendall(request(18, 0, corr, b""))
        r = response(s)
    except OSError:
        return False
    return r is not None and Reader(r).i32() == corr


def closes_logged(host, ports):
    """What the kernel log says closed each Kafka client HOST:PORT
    ({port: why}, None for one it has no line for)."""
    why = dict.fromkeys(ports)
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    try:
        while True:
            try:
                rec = os.read(fd, 8192).decode(errors="replace")
            except BlockingIOError:
                break
            except BrokenPipeError:     # overwritten while read: go on
                continue
            msg = rec.split(";", 1)[-1].split("\n", 1)[0]
            for p in ports:
                head = "krep: Kafka client %s:%d closed: " % (host, p)
                if msg.startswith(head):
                    why[p] = msg[len(head):]
    finally:
        os.close(fd)
    return why


def limits(addr, max_conns, max_req, idle_ms, request_ms, wait_max_ms):
    import time
    conns = [connect(addr) for _ in range(max_conns)]
    ok = all(served(s, 100 + i) for i, s in enumerate(conns))
    extra = connect(addr)
    check(ok and closed(extra),
          "kafka_max_connections=%d: %d connections served, one more "
          "closed at once" % (max_conns, max_conns))
    extra.close()
    for s in conns:
        s.close()
    # connections reset (RST) in the middle of a request give their places
    # back at once, not when kafka_request_ms closes them. The broker's log
    # says which closed each one: the reset ("receive error"), not the
    # deadline ("request not received whole in time"). An order, not a
    # time: on a busy machine the new connections may be served only after
    # kafka_request_ms, but never through the deadline's closes.
    # (Each earlier connection was closed cleanly, which logs nothing.)
    # Each is served a request first: so it was accepted, not refused for
    # want of a place the closes above give back only a little later.
    start = time.monotonic()
    while True:
        conns = [connect(addr) for _ in range(max_conns)]
        if all(served(s, 120 + i) for i, s in enumerate(conns)) or \
           time.monotonic() - start > 10 + 2 * request_ms / 1000:
            break
        for s in conns:
            s.close()
        time.sleep(0.05)
    ports = []
    for s in conns:
        s.sendall(s32(10) + b"\0\x12")
        ports.append(s.getsockname()[1])
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))
        s.close()
    start = time.monotonic()
    ok = False
    while not ok and time.monotonic() - start < 10 + 2 * request_ms / 1000:
        conns = [connect(addr) for _ in range(max_conns)]
        ok = all(served(s, 110 + i) for i, s in enumerate(conns))
        for s in conns:
            s.close()
        if not ok:
            time.sleep(0.05)
    took = (time.monotonic() - start) * 1000
    why = closes_logged(addr.rsplit(":", 1)[0], ports)
    check(ok and all(w == "receive error" for w in why.values()),
          "%d connections reset mid-request give their places back, each "
          "closed by its reset, not by kafka_request_ms (served again "
          "after %.0f ms)" % (max_conns, took),
          "served %s, closed: %s" % (ok, why))
    # a request one byte over the limit closes its connection; one at the
    # limit is read (and answered: an ApiVersions padded with tags is
    # malformed, so the answer is the connection closing only after the
    # whole request came, which a too-large size never lets happen)
    s = connect(addr)
    s.sendall(s32(max_req + 1))
    check(closed(s), "a request of kafka_max_request_bytes + 1 closes its "
          "connection at its size")
    def closed_after(start_with, ms, what):
        """a connection that did start_with(s) is closed, not before ms
        (closed() gives up after the socket's 20 s timeout)"""
        s = connect(addr)
        start = time.monotonic()
        start_with(s)
        gone = closed(s)
        took = (time.monotonic() - start) * 1000
        check(gone and took >= ms * 0.9, "%s, not before (%.0f ms)" %
              (what, took), "closed %s" % gone)
    closed_after(lambda s: served(s, 7), idle_ms,
                 "kafka_idle_ms=%d: an idle connection is closed" % idle_ms)
    # a request begun (its size and two bytes) and never finished: closed
    # by kafka_request_ms, not by the (shorter) idle deadline
    closed_after(lambda s: s.sendall(s32(10) + b"\0\x12"), request_ms,
                 "kafka_request_ms=%d: a request cut short closes its "
                 "connection" % request_ms)
    # a Fetch v4 of nothing with a 20 s max wait is answered once
    # kafka_wait_max_ms ran out
    s = connect(addr)
    start = time.monotonic()
    s.sendall(request(1, 4, 9, s32(-1) + s32(20000) + s32(1) + s32(1 << 20) +
                      b"\0" + s32(0)))
    r = response(s)
    took = (time.monotonic() - start) * 1000
    check(r is not None and Reader(r).i32() == 9 and
          wait_max_ms * 0.9 <= took < 10000,
          "kafka_wait_max_ms=%d: a Fetch's 20 s max wait is cut to it "
          "(%.0f ms)" % (wait_max_ms, took),
          "answered %s" % (r is not None))
    s.close()
    s = connect(addr)
    check(served(s, 8), "a new connection is served afterwards")
    s.close()


def metadata_of(addr, topic):
    """TOPIC's partitions as broker ADDR answers Metadata v7."""
    s = connect(addr)
    s.sendall(request(3, 7, 1, s32(1) + string(topic) + b"\0"))
    buf = response(s)
    s.close()
    if buf is None:
        raise OSError("connection closed")
    r = Reader(buf)
    r.i32(), r.i32()                    # corr, throttle
    for _ in range(r.i32()):
        r.i32(), r.string(), r.i32(), r.string()
    r.string(), r.i32()                 # cluster id, controller
    parts = []
    for _ in range(r.i32()):
        terr, name = r.i16(), r.string()
        r.i8()
        for _ in range(r.i32()):
            p = {"error": r.i16(), "partition": r.i32(), "leader": r.i32(),
                 "leader_epoch": r.i32()}
            p["replicas"] = [r.i32() for _ in range(r.i32())]
            p["isr"] = [r.i32() for _ in range(r.i32())]
            [r.i32() for _ in range(r.i32())]   # offline replicas
            if name == topic:
                parts.append(p)
        if name == topic and terr:
            parts.append({"error": terr, "partition": -1})
    return parts


def metadata(topic, addrs):
    for addr in addrs:
        try:
            for p in metadata_of(addr, topic):
                print(json.dumps(dict(broker=addr, **p)))
        except (OSError, struct.error) as e:
            print(json.dumps({"broker": addr, "failed": str(e)}))
    return 0


def fill(addr, topic, acks, total, size):
    rec = batch(b"m" * size)            # one CRC, the same batch each time
    body = (string(None) + s16(acks) + s32(10000) + s32(1) + string(topic) +
            s32(1) + s32(0) + s32(len(rec)) + rec)
    s = connect(addr)
    s.settimeout(60)
    done = {"bytes": 0, "batches": 0}
    err = 0
    corr = 1000
    try:
        while done["bytes"] < total:
            corr += 1
            s.sendall(request(0, 7, corr, body))
            resp = response(s)
            if resp is None:
                raise ConnectionResetError("the broker closed the connection")
            r = Reader(resp)
            r.i32(), r.i32(), r.string(), r.i32(), r.i32()
            err = r.i16()
            if err:
                break
            done["bytes"] += size
            done["batches"] += 1
    except OSError as e:
        print(json.dumps(dict(done, closed=str(e) or type(e).__name__)))
        return 0
    print(json.dumps(dict(done, error=err, served=served(s, corr + 1))))
    return 0


def corrupt(addr, topic, size):
    rec = bytearray(batch(b"c" * size))
    rec[-1] ^= 0xff                     # the CRC no longer matches
    corr, err, base = produce_batch(addr, topic, -1, bytes(rec), 61)
    print(err)
    return 0 if corr == 61 else 1


def acked_value(topic, i):
    return "%s-%06d-%s" % (topic, i, "abcdefghijklmnopqrstuvwxyz0123456789" * 5)


def acked(addr, topic, path, reset_after=None):
    s = connect(addr)
    s.settimeout(60)
    out = open(path, "a")
    i = 0
    while True:
        value = acked_value(topic, i)
        rec = batch(value.encode())
        body = (string(None) + s16(-1) + s32(30000) + s32(1) + string(topic) +
                s32(1) + s32(0) + s32(len(rec)) + rec)
        s.sendall(request(0, 7, i, body))
        if i == reset_after:
            with open(path + ".reset", "w") as f:
                f.write("reset with record %d in flight\n" % i)
            with open("/proc/sysrq-trigger", "w") as f:
                f.write("b")
            time.sleep(60)
            print("acked: still running after the reset", file=sys.stderr)
            return 1
        resp = response(s)
        if resp is None:
            print("acked: the broker closed the connection", file=sys.stderr)
            return 1
        r = Reader(resp)
        corr, _, _, _, _, err, base = (r.i32(), r.i32(), r.string(), r.i32(),
                                       r.i32(), r.i16(), r.i64())
        if corr != i or err:
            print("acked: record %d: correlation %d, error %d" % (i, corr, err),
                  file=sys.stderr)
            return 1
        out.write("%d %s\n" % (base, value))
        out.flush()
        os.fsync(out.fileno())
        i += 1


def main(argv):
    if len(argv) == 7 and argv[1] == "--fill":
        return fill(argv[2], argv[3], int(argv[4]), int(argv[5]),
                    int(argv[6]))
    if len(argv) in (5, 6) and argv[1] == "--acked":
        return acked(argv[2], argv[3], argv[4],
                     int(argv[5]) if len(argv) == 6 else None)
    if len(argv) == 5 and argv[1] == "--corrupt":
        return corrupt(argv[2], argv[3], int(argv[4]))
    if len(argv) >= 4 and argv[1] == "--metadata":
        return metadata(argv[2], argv[3:])
    if len(argv) == 8 and argv[1] == "--limits":
        limits(argv[2], *(int(a) for a in argv[3:8]))
        return 1 if FAILED else 0
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    addr, topic, _, follower = argv[1:5]
    api_versions(addr)
    metadata_unknown(addr)
    produce_errors(addr, follower, topic)
    idempotence(addr, topic)
    epoch_end(addr, topic)
    pipelined(addr)
    find_coordinator(addr)
    trickle(addr, topic)
    crowd(addr, topic)
    bad_requests(addr)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
