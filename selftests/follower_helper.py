#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""follower_helper.py - a scripted follower on the inter-broker protocol,
for selftests/hw_exact.sh.

Made to run in a long-lived selftests/pyserve.py inside the network
namespace that holds a configured peer's address (a broker takes a HELLO
claiming a peer id only from there): its connections outlive the call.

  open NAME HOST:PORT CLUSTER LEADER_ID PEER_ID
      connect to the leader's replication listener, HELLO as PEER_ID,
      check the leader's HELLO, send AUTH (no cluster secret); "NAME open"
  fetch NAME TOPIC PARTITION EPOCH OFFSET LAST_EPOCH
      one FETCH (uapi/linux/krep_wire.h, version 4) of TOPIC-PARTITION at
      OFFSET, current leader epoch EPOCH, last fetched epoch LAST_EPOCH
      (-1: none), max wait 0: the follower's LEO is OFFSET from the
      leader's point of view, whatever it holds. Prints the answer:
      "error E hw H log_start L pe P isr I,... records N" (ISR as replica
      indexes, N the records' count)
  close NAME
      close the connection; "NAME closed"

Exit status 0, 1 on an error (with a message on stderr), 2 on usage.
"""

import socket
import struct
import sys

from repl_helper import (FETCH, HDR, HELLO, MAGIC, WIRE_VERSION, auth_frame,
                         expect_hello, frame, hello_payload, recv_exact)

FETCH_RESP = 3
RESP_PART = struct.Struct(">IHHQQQiIQQII")      # struct krep_wire_resp_part
SOCKS = {}


def err(msg):
    print("follower_helper.py: %s" % msg, file=sys.stderr)
    return 1


def open_conn(name, addr, cluster, leader_id, peer_id):
    if name in SOCKS:
        return err("%s is already open" % name)
    host, port = addr.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect((host, int(port)))
        s.sendall(frame(HELLO, hello_payload(peer_id, cluster)))
        why = expect_hello(s, leader_id, cluster)
        if not why:
            s.sendall(auth_frame())
    except OSError as e:
        why = "connect, HELLO or AUTH to %s: %s" % (addr, e)
    if why:
        s.close()
        return err("%s: %s" % (name, why))
    SOCKS[name] = (s, peer_id)
    print("%s open" % name)
    return 0


def records_count(recs):
    n, pos = 0, 0
    while pos + 61 <= len(recs):
        blen = struct.unpack_from(">i", recs, pos + 8)[0]
        n += struct.unpack_from(">i", recs, pos + 57)[0]
        pos += 12 + blen
    return n


def fetch(name, topic, partition, epoch, offset, last_epoch):
    if name not in SOCKS:
        return err("no connection %s" % name)
    s, peer_id = SOCKS[name]
    t = topic.encode()
    payload = (struct.pack(">IIII", peer_id, 0, 1 << 20, 1) +
               struct.pack(">H", len(t)) + t +
               struct.pack(">IIQQiI", partition, epoch, offset, 0,
                           last_epoch, 0))
    try:
        s.sendall(frame(FETCH, payload, corr=offset + 1))
        hdr = recv_exact(s, HDR.size, 10)
        if hdr is None:
            return err("%s: the leader closed the connection" % name)
        magic, ver, ftype, _, length, corr = HDR.unpack(hdr)
        body = recv_exact(s, length, 10) if length else b""
    except OSError as e:
        return err("%s: FETCH: %s" % (name, e))
    if (magic, ver, ftype, corr) != (MAGIC, WIRE_VERSION, FETCH_RESP,
                                     offset + 1) or body is None:
        return err("%s: not the FETCH_RESP expected: %r" %
                   (name, (magic, ver, ftype, corr)))
    n = struct.unpack_from(">I", body)[0]
    tlen = struct.unpack_from(">H", body, 4)[0]
    if n != 1 or body[6:6 + tlen] != t:
        return err("%s: FETCH_RESP for %r" % (name, body[6:6 + tlen]))
    (_, error, _, hw, log_start, _, _, pe, isr0, isr1, _,
     rlen) = RESP_PART.unpack_from(body, 6 + tlen)
    recs = body[6 + tlen + RESP_PART.size:]
    if len(recs) != rlen:
        return err("%s: %d bytes of records, %d announced" %
                   (name, len(recs), rlen))
    isr = [i for i in range(128) if ((isr1 << 64) | isr0) >> i & 1]
    print("error %d hw %d log_start %d pe %d isr %s records %d" %
          (error, hw, log_start, pe, ",".join(map(str, isr)) or "-",
           records_count(recs)))
    return 0


def close(name):
    if name not in SOCKS:
        return err("no connection %s" % name)
    SOCKS.pop(name)[0].close()
    print("%s closed" % name)
    return 0


def main(argv):
    if len(argv) == 7 and argv[1] == "open":
        return open_conn(argv[2], argv[3], argv[4], int(argv[5]),
                         int(argv[6]))
    if len(argv) == 8 and argv[1] == "fetch":
        return fetch(argv[2], argv[3], int(argv[4]), int(argv[5]),
                     int(argv[6]), int(argv[7]))
    if len(argv) == 3 and argv[1] == "close":
        return close(argv[2])
    print(__doc__.split("\n\n", 1)[1].split("Exit status")[0],
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
