#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""stuck_peer.py - raw replication peers that stop reading, and garbage
connections, for selftests/hardening.sh.

Made to run in a long-lived selftests/pyserve.py inside a network
namespace (ip netns exec NS pyserve.py stuck_peer): the sockets of
"open" outlive the call, in this process, until "release" (or until
the process ends). It also runs on its own: stuck_peer.py COMMAND ARGS.

  open NAME HOST:PORT CLUSTER LEADER_ID PEER_ID TOPIC PARTITION EPOCH
       NFETCH RCVBUF
      connect to a broker's replication listener with SO_RCVBUF RCVBUF
      (set before the connect, so the window stays small), send a HELLO
      claiming PEER_ID (run it from PEER_ID's configured address: a
      broker takes a HELLO claiming a peer id only from there), check
      the broker's HELLO (LEADER_ID, CLUSTER), send the AUTH that ends
      the handshake (no cluster secret: a zero proof), then pipeline
      NFETCH FETCH frames (uapi/linux/krep_wire.h) for TOPIC-PARTITION
      at offset 0, leader epoch EPOCH, max_wait 0 and max_bytes 1 MiB,
      each of which a leader with records answers at once (PEER_ID must
      be one of the partition's replicas, or the answers are small
      errors), and never read again. Returns once every FETCH is sent
      (waiting up to 20 s for room) and the first answer's bytes have
      arrived (up to 20 s); prints
      "NAME local ADDR:PORT sent N inq BYTES".
  status NAME
      "NAME state STATE inq BYTES outq BYTES": the socket's TCP state
      (established, close, ...) and its queues, without reading.
  release NAME
      close NAME's socket with a reset (SO_LINGER 0), which also ends
      any send of the broker blocked on it; "NAME released".
  hello HOST:PORT CLUSTER LEADER_ID PEER_ID
      one connection: a good HELLO claiming PEER_ID; prints "hello
      answered" when the broker answers with its own HELLO (LEADER_ID,
      CLUSTER; we then close), "hello closed SECONDS" when it closes the
      connection without answering, "hello open SECONDS" when it does
      neither in 10 s, "hello bad-answer WHY" for a wrong answer.
  garbage HOST:PORT CLUSTER PEER_ID TOPIC EPOCH N SEED
      N connections one after the other, each of a kind picked at
      random (seeded with SEED): random bytes; a truncated HELLO; a
      HELLO header of a wrong length; a good HELLO then random bytes; a
      good HELLO and AUTH then a truncated FETCH; a good HELLO, AUTH
      and a FETCH of TOPIC-0 at offset 0 then a reset before its answer
      is read. Run it from PEER_ID's address, so that the good HELLOs
      pass. Each is closed by us right after (some with a reset). A
      broker that closed first, refused or reset us is fine; a connect
      that fails is not. Prints "garbage N connected C failed F" and
      the count of each kind; exit status 1 if F > 0.

Exit status 0, 1 on an error (with a message on stderr), 2 on usage.
"""

import errno
import fcntl
import random
import select
import socket
import struct
import sys
import termios
import time

from repl_helper import (FETCH, HDR, HELLO, auth_frame, expect_hello, frame,
                         hello_payload)

SIOCOUTQ = 0x5411
TCP_STATES = {1: "established", 2: "syn_sent", 3: "syn_recv",
              4: "fin_wait1", 5: "fin_wait2", 6: "time_wait", 7: "close",
              8: "close_wait", 9: "last_ack", 10: "listen", 11: "closing"}

SOCKS = {}


def err(msg):
    print("stuck_peer.py: %s" % msg, file=sys.stderr)
    return 1


def hostport(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def fetch_payload(replica_id, topic, partition, epoch, offset,
                  max_bytes=1 << 20, max_wait=0):
    t = topic.encode()
    return (struct.pack(">IIII", replica_id, max_wait, max_bytes, 1) +
            struct.pack(">H", len(t)) + t +
            struct.pack(">IIQQiI", partition, epoch, offset, 0, -1, 0))


def ioctl_int(s, req):
    buf = fcntl.ioctl(s.fileno(), req, struct.pack("i", 0))
    return struct.unpack("i", buf)[0]


def tcp_state(s):
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)
    return TCP_STATES.get(info[0], str(info[0]))


def send_all_nb(s, data, timeout):
    """Send @data on a non-blocking socket, waiting for room up to
    @timeout seconds in all: the bytes sent."""
    sent = 0
    end = time.monotonic() + timeout
    while sent < len(data):
        try:
            sent += s.send(data[sent:])
            continue
        except BlockingIOError:
            pass
        left = end - time.monotonic()
        if left <= 0:
            break
        select.select([], [s], [], left)
    return sent


def stuck_open(name, addr, cluster, leader_id, peer_id, topic, partition,
               epoch, nfetch, rcvbuf):
    if name in SOCKS:
        return err("%s is already open" % name)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(10)
    try:
        s.connect(hostport(addr))
        s.sendall(frame(HELLO, hello_payload(peer_id, cluster)))
    except OSError as e:
        s.close()
        return err("%s: connect or HELLO to %s: %s" % (name, addr, e))
    why = expect_hello(s, leader_id, cluster)
    if why:
        s.close()
        return err("%s: %s" % (name, why))
    try:
        s.sendall(auth_frame())
    except OSError as e:
        s.close()
        return err("%s: AUTH to %s: %s" % (name, addr, e))
    payload = fetch_payload(peer_id, topic, partition, epoch, 0)
    data = b"".join(frame(FETCH, payload, corr=i + 1) for i in range(nfetch))
    s.setblocking(False)
    sent = send_all_nb(s, data, 20)
    frames = sent // len(frame(FETCH, payload))
    if sent < len(data):
        s.close()
        return err("%s: only %d of %d FETCH frames went out in 20 s" %
                   (name, frames, nfetch))
    # the first answer is on its way: something to read
    r, _, _ = select.select([s], [], [], 20)
    inq = ioctl_int(s, termios.FIONREAD)
    if not r or not inq:
        s.close()
        return err("%s: no answer to %d FETCH frames in 20 s" %
                   (name, nfetch))
    SOCKS[name] = s
    local = s.getsockname()
    print("%s local %s:%d sent %d inq %d" %
          (name, local[0], local[1], frames, inq))
    return 0


def stuck_status(name):
    s = SOCKS.get(name)
    if s is None:
        return err("no socket %s" % name)
    print("%s state %s inq %d outq %d" %
          (name, tcp_state(s), ioctl_int(s, termios.FIONREAD),
           ioctl_int(s, SIOCOUTQ)))
    return 0


def stuck_release(name):
    s = SOCKS.pop(name, None)
    if s is None:
        return err("no socket %s" % name)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                 struct.pack("ii", 1, 0))
    s.close()
    print("%s released" % name)
    return 0


def hello_try(addr, cluster, leader_id, peer_id):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(hostport(addr))
        start = time.monotonic()
        s.sendall(frame(HELLO, hello_payload(peer_id, cluster)))
    except OSError as e:
        s.close()
        return err("hello: connect or HELLO to %s: %s" % (addr, e))
    # the broker's first byte, or its close, without taking it
    try:
        got = s.recv(1, socket.MSG_PEEK)
    except socket.timeout:
        got = None
    except OSError:
        got = b""
    t = time.monotonic() - start
    if got is None:
        print("hello open %.2f" % t)
    elif not got:
        print("hello closed %.2f" % t)
    else:
        why = expect_hello(s, leader_id, cluster)
        print("hello bad-answer %s" % why if why else "hello answered")
    s.close()
    return 0


KINDS = ("random", "short-hello", "big-header", "hello-random",
         "hello-short-fetch", "hello-fetch-reset")


def garbage_one(addr, cluster, peer_id, topic, epoch, kind, rnd):
    """One connection of @kind: True if it connected."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(hostport(addr))
    except OSError as e:
        print("connect %s: %s" % (kind, e), file=sys.stderr)
        s.close()
        return False
    reset = rnd.random() < 0.5
    hello = frame(HELLO, hello_payload(peer_id, cluster))
    auth = auth_frame()
    try:
        if kind == "random":
            s.sendall(rnd.randbytes(rnd.randint(1, 300)))
        elif kind == "short-hello":
            s.sendall(hello[:rnd.randint(1, len(hello) - 1)])
        elif kind == "big-header":
            # any length but the HELLO's
            n = rnd.randint(1, 1 << 30)
            n += n == len(hello) - HDR.size
            s.sendall(frame(HELLO, b"", length=n))
        elif kind == "hello-random":
            s.sendall(hello + rnd.randbytes(rnd.randint(1, 300)))
        elif kind == "hello-short-fetch":
            f = frame(FETCH, fetch_payload(peer_id, topic, 0, epoch, 0),
                      corr=1)
            s.sendall(hello + auth + f[:rnd.randint(1, len(f) - 1)])
        elif kind == "hello-fetch-reset":
            s.sendall(hello + auth +
                      frame(FETCH, fetch_payload(peer_id, topic, 0, epoch, 0),
                            corr=1))
            # the broker's HELLO, maybe the first bytes of its answer
            s.recv(200)
            reset = True
    except OSError as e:
        # the broker may close first (a bad frame) or refuse us
        if e.errno not in (errno.ECONNRESET, errno.EPIPE, errno.EAGAIN,
                           errno.ETIMEDOUT):
            print("send %s: %s" % (kind, e), file=sys.stderr)
    if reset:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))
    s.close()
    return True


def garbage(addr, cluster, peer_id, topic, epoch, n, seed):
    rnd = random.Random(seed)
    counts = dict((k, 0) for k in KINDS)
    ok = 0
    for _ in range(n):
        kind = rnd.choice(KINDS)
        counts[kind] += 1
        ok += garbage_one(addr, cluster, peer_id, topic, epoch, kind, rnd)
    print("garbage %d connected %d failed %d" % (n, ok, n - ok))
    print(" ".join("%s=%d" % (k, counts[k]) for k in KINDS))
    return 0 if ok == n else 1


def main(argv):
    a = argv[1:]
    try:
        if len(a) == 11 and a[0] == "open":
            return stuck_open(a[1], a[2], a[3], int(a[4]), int(a[5]), a[6],
                              int(a[7]), int(a[8]), int(a[9]), int(a[10]))
        if len(a) == 2 and a[0] == "status":
            return stuck_status(a[1])
        if len(a) == 2 and a[0] == "release":
            return stuck_release(a[1])
        if len(a) == 5 and a[0] == "hello":
            return hello_try(a[1], a[2], int(a[3]), int(a[4]))
        if len(a) == 8 and a[0] == "garbage":
            return garbage(a[1], a[2], int(a[3]), a[4], int(a[5]),
                           int(a[6]), int(a[7]))
    except ValueError as e:
        err(str(e))
        return 2
    print(__doc__.split("\n\n", 1)[1].split("Exit status")[0],
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
