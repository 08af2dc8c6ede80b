#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""nl_wait.py - netlink requests that wait, for selftests/nl_wait.sh.

Run it inside a broker's network namespace (ip netns exec NS ...), as
root. Each command prints one line starting with "ok" or "fail":

  registers TOPIC WAIT_MS MODULE
      a FETCH of TOPIC-0 at its log end with a wait of WAIT_MS; once the
      send returns, modprobe MODULE (a generic netlink family: its
      registration takes genetlink's lock for writing); the FETCH must
      still be unanswered then. A record produced after it answers it.
      A handler that slept in the send would not return before the wait
      ends, so modprobe would come after the answer.
  timeout TOPIC MS
      an acks=all PRODUCE to TOPIC-0 whose ISR never catches up, with a
      timeout of MS and NLM_F_ACK: the error ack comes after the send
      returned, with ETIMEDOUT, the extack message and Kafka's
      REQUEST_TIMED_OUT in the cookie.
  limit TOPIC N WAIT_MS
      N FETCHes of TOPIC-0 at its log end on one socket, each waiting
      WAIT_MS; all but the last are parked (N - 1 is the namespace's
      limit), the last refused with EBUSY at once; a record answers the
      N - 1 others.
  epoch TOPIC WAIT_MS
      a FETCH at the log end with a wait of WAIT_MS and a current leader
      epoch above the replica's: refused with UNKNOWN_LEADER_EPOCH
      (EAGAIN) before the send returns, not parked.
  parked TOPIC WAIT_MS
      a FETCH at the log end with a wait of WAIT_MS: prints "parked",
      then the answer once it comes (the suite unloads the module
      meanwhile): "ok answered: ERRNO MESSAGE" for an error.

krepctl is $KREPCTL (default: from PATH).
"""

import os
import select
import socket
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from repl_helper import (Genl, NLMSG_ERROR, nla, parse_attrs,  # noqa: E402
                         uapi_enum)

A = uapi_enum("krep_attr")
C = uapi_enum("krep_cmd")
K = uapi_enum("krep_kafka_error")
NLM_F_ACK = 4
NLMSGERR_ATTR_MSG = 1
NLMSGERR_ATTR_COOKIE = 3
KREPCTL = os.environ.get("KREPCTL", "krepctl")


def out(line):
    print(line, flush=True)


def part(topic):
    return (nla(A["KREP_A_TOPIC"], topic.encode() + b"\0") +
            nla(A["KREP_A_PARTITION"], struct.pack("=I", 0)))


def leo(g, topic):
    """The log end offset of TOPIC-0, from LIST_OFFSETS latest."""
    r = g.request(g.family, C["KREP_CMD_LIST_OFFSETS"], 1,
                  part(topic) + nla(A["KREP_A_TIMESTAMP"],
                                    struct.pack("=q", -1)))
    return struct.unpack("=Q", r[A["KREP_A_OFFSET"]][0])[0]


def send_fetch(g, topic, offset, wait_ms, epoch=None):
    attrs = (part(topic) +
             nla(A["KREP_A_OFFSET"], struct.pack("=Q", offset)) +
             nla(A["KREP_A_MAX_WAIT_MS"], struct.pack("=I", wait_ms)))
    if epoch is not None:
        attrs += nla(A["KREP_A_LEADER_EPOCH"], struct.pack("=I", epoch))
    g.send(g.family, C["KREP_CMD_FETCH"], 1, 0, attrs)
    return g.seq


def produce(topic, value):
    """One record, acks=1, through krepctl (its RecordBatch encoder)."""
    r = subprocess.run([KREPCTL, "produce", topic, "partition", "0",
                        "acks", "1"], input=value + b"\n",
                       capture_output=True, timeout=60)
    return r.returncode == 0


def pending(g, timeout):
    """The messages on @g's socket within @timeout s: [(seq, type,
    payload)], [] when none came."""
    ready, _, _ = select.select([g.s], [], [], timeout)
    if not ready:
        return []
    data = g.s.recv(8 << 20)
    msgs, off = [], 0
    while off + 16 <= len(data):
        mlen, mtype, _, seq, _ = struct.unpack_from("=IHHII", data, off)
        msgs.append((seq, mtype, data[off + 16:off + mlen]))
        off += (mlen + 3) & ~3
    return msgs


def error_of(payload):
    """(errno, extack message, Kafka code or None) of an NLMSG_ERROR."""
    err = -struct.unpack_from("=i", payload)[0]
    olen = struct.unpack_from("=I", payload, 4)[0]
    ext = parse_attrs(payload[4 + olen:]) if err else {}
    msg = ext.get(NLMSGERR_ATTR_MSG, [b""])[0].rstrip(b"\0").decode()
    ck = ext.get(NLMSGERR_ATTR_COOKIE)
    kerr = struct.unpack_from("=h", ck[0])[0] if ck else None
    return err, msg, kerr


def records_in(payload):
    return len(parse_attrs(payload[4:]).get(A["KREP_A_RECORDS"], []))


def registers(topic, wait_ms, module):
    loaded = "/sys/module/" + module
    if os.path.exists(loaded):
        return out("fail %s is loaded already: its family would not be "
                   "registered again" % module)
    g = Genl()
    seq = send_fetch(g, topic, leo(g, topic), wait_ms)
    # the send has returned: the handler did not sleep in it
    r = subprocess.run(["modprobe", module], capture_output=True,
                       timeout=wait_ms / 1000 + 30)
    if r.returncode or not os.path.exists(loaded):
        return out("fail modprobe %s: %s" % (module,
                                            r.stderr.decode().strip()))
    early = pending(g, 0)
    if early:
        return out("fail the FETCH was answered before modprobe %s "
                   "returned: %r" % (module, early[0][:2]))
    if not produce(topic, b"wake"):
        return out("fail produce")
    for s, mtype, payload in pending(g, wait_ms / 1000 + 30):
        if s == seq and mtype != NLMSG_ERROR and records_in(payload):
            return out("ok modprobe %s registered a family while the FETCH "
                       "waited; a record answered it" % module)
    return out("fail no FETCH reply with the record")


def timeout(topic, ms):
    batch_cmd = [KREPCTL, "produce", topic, "partition", "0", "acks", "all",
                 "timeout", str(ms)]
    # krepctl does the whole request; its own socket waits for the ack
    r = subprocess.run(batch_cmd, input=b"never-committed\n",
                       capture_output=True, timeout=ms / 1000 + 30)
    err = r.stderr.decode().strip()
    if (r.returncode and "REQUEST_TIMED_OUT" in err and
            "timed out waiting for the ISR to replicate" in err):
        return out("ok acks=all answered after %d ms: %s" % (ms, err))
    return out("fail exit %d: %s" % (r.returncode, err))


def limit(topic, n, wait_ms):
    g = Genl()
    g.s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE
    off = leo(g, topic)
    first = g.seq + 1
    for _ in range(n):
        send_fetch(g, topic, off, wait_ms)
    last = g.seq
    refused, answered, early = None, set(), []
    for s, mtype, payload in pending(g, 30):
        if s == last and mtype == NLMSG_ERROR:
            refused = error_of(payload)
        else:
            early.append(s)
    if refused is None or refused[0] != 16 or early:   # EBUSY
        return out("fail the last of %d: %r; answered early: %r" %
                   (n, refused, early[:5]))
    if not produce(topic, b"wake"):
        return out("fail produce")
    while len(answered) < n - 1:
        msgs = pending(g, wait_ms / 1000 + 30)
        if not msgs:
            break
        for s, mtype, payload in msgs:
            if first <= s < last and mtype != NLMSG_ERROR and \
                    records_in(payload):
                answered.add(s)
    if len(answered) != n - 1:
        return out("fail %d of %d parked FETCHes answered with the record" %
                   (len(answered), n - 1))
    return out("ok %d parked, the next refused (EBUSY: %s), all %d "
               "answered by one record" % (n - 1, refused[1], n - 1))


def epoch(topic, wait_ms):
    g = Genl()
    seq = send_fetch(g, topic, leo(g, topic), wait_ms, epoch=1000)
    msgs = pending(g, 0)    # a refusal is queued before the send returns
    if (len(msgs) == 1 and msgs[0][0] == seq and
            msgs[0][1] == NLMSG_ERROR):
        err, msg, kerr = error_of(msgs[0][2])
        if err == 11 and kerr == K["KREP_KERR_UNKNOWN_LEADER_EPOCH"]:
            return out("ok refused at once: %s" % msg)
        return out("fail errno %d, Kafka code %r: %s" % (err, kerr, msg))
    return out("fail no answer before the send returned: %r" %
               [m[:2] for m in msgs])


def parked(topic, wait_ms):
    g = Genl()
    seq = send_fetch(g, topic, leo(g, topic), wait_ms)
    out("parked")
    for s, mtype, payload in pending(g, wait_ms / 1000 + 30):
        if s != seq:
            continue
        if mtype == NLMSG_ERROR:
            err, msg, kerr = error_of(payload)
            return out("ok answered: %d %s" % (err, msg))
        return out("ok answered: %d records" % records_in(payload))
    return out("fail no answer")


def main(argv):
    if len(argv) == 5 and argv[1] == "registers":
        return registers(argv[2], int(argv[3]), argv[4])
    if len(argv) == 4 and argv[1] == "timeout":
        return timeout(argv[2], int(argv[3]))
    if len(argv) == 5 and argv[1] == "limit":
        return limit(argv[2], int(argv[3]), int(argv[4]))
    if len(argv) == 4 and argv[1] == "epoch":
        return epoch(argv[2], int(argv[3]))
    if len(argv) == 4 and argv[1] == "parked":
        return parked(argv[2], int(argv[3]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv) or 0)
