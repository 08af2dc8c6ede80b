#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""fault_helper.py - clients that follow the leader, for selftests/failover.sh.

Each opens one krep genl socket in every broker namespace (/run/netns/NAME)
and talks to whichever broker leads, as a Kafka client follows metadata:

  produce TOPIC NS,NS,... SECONDS LOG [PREFIX [STOP]]
      one record at a time, acks=all, timeout 3000 ms, values PREFIX-N
      (default "v"); after each acknowledgement append "N OFFSET" to LOG
      (flushed). A refusal (not leader, timeout, not enough replicas)
      moves on to the broker that now leads. For SECONDS at most; with
      STOP, a file: until it exists. Prints "acked A failed F".
  consume TOPIC NS,NS,... SECONDS LOG [UNTIL]
      FETCH (read_uncommitted) from the leader from offset 0 on; append
      every value read to LOG, one a line, for SECONDS at most; with
      UNTIL, a file: once it holds a number N, stop as soon as every
      offset below N has been read (at once if it already has), or 30 s
      later if they cannot all be read. Prints
      "read R hw H backward B":
      B counts replies whose HW was below one the same leader gave before
      (must be 0). A new leader's HW may trail its predecessor's, as in
      Kafka (fetches up to it are served at once); that is not counted.
  check TOPIC NS ACKLOG
      read the replica in NS (follower read, up to its HW) and check that
      every acknowledged value is there exactly once at the offset it was
      acknowledged with. Prints "ok N" or the first problem.

Exit status 0, 1 on an error, 2 on usage.
"""

import ctypes
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from krep_record import batch, batch_values, batches  # noqa: E402
from repl_helper import Genl, nla, uapi_enum  # noqa: E402
from ctl_helper import dump_partitions, get  # noqa: E402
import ctl_helper  # noqa: E402

A = uapi_enum("krep_attr")
C = uapi_enum("krep_cmd")
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def setns(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns " + path)
    finally:
        os.close(fd)


def sockets(names):
    """A Genl per namespace, opened inside it."""
    here = os.open("/proc/self/ns/net", os.O_RDONLY)
    out = []
    try:
        for n in names:
            setns("/run/netns/" + n)
            out.append(Genl())
    finally:
        _libc.setns(here, CLONE_NEWNET)
        os.close(here)
    return out


# --- requests -----------------------------------------------------------------

def part_attrs(topic, p=0):
    return (nla(A["KREP_A_TOPIC"], topic.encode() + b"\0") +
            nla(A["KREP_A_PARTITION"], struct.pack("=I", p)))


def leader_of(socks, topic):
    """Index of the broker that says it leads at the highest epoch."""
    best, best_epoch = None, -1
    for i, g in enumerate(socks):
        try:
            for m in dump_partitions(g, topic):
                if get(m, "KREP_A_PARTITION") == 0 and \
                        get(m, "KREP_A_ROLE", "=B") == 0 and \
                        get(m, "KREP_A_LEADER_EPOCH") > best_epoch:
                    best, best_epoch = i, get(m, "KREP_A_LEADER_EPOCH")
        except OSError:
            pass
    return best


def produce(topic, names, seconds, log, prefix="v", stop=None):
    socks = sockets(names)
    acked = failed = n = 0
    cur = None
    end = time.monotonic() + seconds
    with open(log, "a") as f:
        while time.monotonic() < end:
            if stop is not None and os.path.exists(stop):
                break
            if cur is None:
                cur = leader_of(socks, topic)
                if cur is None:
                    time.sleep(0.2)
                    continue
            value = ("%s-%d" % (prefix, n)).encode()
            attrs = (part_attrs(topic) +
                     nla(A["KREP_A_RECORDS"], batch(value)) +
                     nla(A["KREP_A_ACKS"], struct.pack("=h", -1)) +
                     nla(A["KREP_A_TIMEOUT_MS"], struct.pack("=I", 3000)))
            try:
                r = ctl_helper.request(socks[cur], "KREP_CMD_PRODUCE", attrs)
            except OSError:
                failed += 1
                n += 1			# the value may be in a log, unacked
                cur = None
                time.sleep(0.1)
                continue
            off = struct.unpack("=Q", r[A["KREP_A_OFFSET"]][0])[0]
            f.write("%d %d\n" % (n, off))
            f.flush()
            acked += 1
            n += 1
    print("acked %d failed %d" % (acked, failed))
    return 0


def fetch(g, topic, offset, follower=False):
    attrs = (part_attrs(topic) +
             nla(A["KREP_A_OFFSET"], struct.pack("=Q", offset)) +
             nla(A["KREP_A_MAX_BYTES"], struct.pack("=I", 64 << 10)))
    if follower:
        attrs += nla(A["KREP_A_FOLLOWER_READ"], b"")
    r = ctl_helper.request(g, "KREP_CMD_FETCH", attrs)
    hw = struct.unpack("=Q", r[A["KREP_A_HW"]][0])[0]
    recs = b"".join(r.get(A["KREP_A_RECORDS"], []))
    out = []
    for base, b in batches(recs):
        vals = []
        batch_values(b, vals)
        for i, v in enumerate(vals):
            out.append((base + i, v))
    return hw, out


def until_offset(path):
    """The number in file PATH, None while it has none."""
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def consume(topic, names, seconds, log, until=None):
    socks = sockets(names)
    offset = hw_max = backward = nread = hw_leader = 0
    cur = prev = None
    end = time.monotonic() + seconds
    told = False
    with open(log, "w") as f:
        while time.monotonic() < end:
            if until is not None and not told:
                stop = until_offset(until)
                if stop is not None:
                    told = True
                    end = min(end, time.monotonic() + 30)
            if told and offset >= stop:
                break
            if cur is None:
                cur = leader_of(socks, topic)
                if cur is None:
                    time.sleep(0.2)
                    continue
                if cur != prev:
                    hw_leader = 0  # another leader: its own HW
                    prev = cur
            try:
                hw, recs = fetch(socks[cur], topic, offset)
            except OSError:
                cur = None
                time.sleep(0.1)
                continue
            if hw < hw_leader:
                backward += 1
            hw_leader = max(hw_leader, hw)
            hw_max = max(hw_max, hw)
            for off, v in recs:
                if off >= offset:
                    f.write(v.decode() + "\n")
                    nread += 1
                    offset = off + 1
            f.flush()
            if not recs:
                time.sleep(0.05)
    print("read %d hw %d backward %d" % (nread, hw_max, backward))
    return 0


def check(topic, name, acklog):
    g = sockets([name])[0]
    got, offset = {}, 0
    while True:
        hw, recs = fetch(g, topic, offset, follower=True)
        for off, v in recs:
            got[off] = v.decode()
            offset = off + 1
        if not recs or offset >= hw:
            break
    seen = {}
    for v in got.values():
        seen[v] = seen.get(v, 0) + 1
    n = 0
    with open(acklog) as f:
        for line in f:
            num, off = (int(x) for x in line.split())
            v = "v-%d" % num
            if got.get(off) != v:
                print("acknowledged %s at %d: the replica has %r there "
                      "(HW %d)" % (v, off, got.get(off), hw))
                return 1
            if seen[v] != 1:
                print("%s appears %d times" % (v, seen[v]))
                return 1
            n += 1
    print("ok %d" % n)
    return 0


def main(argv):
    if len(argv) in (6, 7, 8) and argv[1] == "produce":
        return produce(argv[2], argv[3].split(","), float(argv[4]), argv[5],
                       *(argv[6:]))
    if len(argv) in (6, 7) and argv[1] == "consume":
        return consume(argv[2], argv[3].split(","), float(argv[4]), argv[5],
                       *(argv[6:]))
    if len(argv) == 5 and argv[1] == "check":
        return check(argv[2], argv[3], argv[4])
    print(__doc__.split("\n\n", 1)[1].split("Exit status")[0],
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
