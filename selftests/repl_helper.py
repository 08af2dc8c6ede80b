#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""repl_helper.py - raw krep clients for selftests/replication.sh.

Run it inside a network namespace (ip netns exec NS repl_helper.py ...):

  badpeer HOST:PORT CLUSTER LEADER_ID PEER_ID CASE...
      connect to a broker's listener once per CASE and break the wire
      protocol (uapi/linux/krep_wire.h) in that case's way; print
      "CASE closed SECONDS" when the broker closes the connection, or
      "CASE open SECONDS" when it is still open after the case's wait.
      Cases:
        garbage      17 bytes of text instead of a frame header
        short-hello  a HELLO frame with a 40-byte (truncated) payload
        trunc-hold   a header announcing a whole HELLO, 20 bytes of it,
                     then silence: only the HELLO deadline ends it
        oversized    a header announcing 4 MiB + 1 bytes of payload
        bad-type     a header of frame type 9
        fetch-first  a FETCH frame before any HELLO
        bad-cluster  a HELLO from PEER_ID with another cluster id
        unknown-id   a HELLO from broker 77, not a configured peer
        bad-fetch    a good HELLO from PEER_ID (the broker must answer
                     with its own HELLO: LEADER_ID, CLUSTER), our AUTH,
                     then a FETCH whose payload is 3 bytes long. Run
                     it from PEER_ID's address: a broker takes a HELLO
                     claiming a peer id only from that peer's address
        forged-auth  a HELLO claiming a cluster secret (and encryption),
                     answered, then an AUTH with a random proof
        no-tls       a HELLO claiming a cluster secret without encryption
                     (KREP_WIRE_HELLO_F_TLS clear)
        skip-tls     a HELLO claiming the secret and encryption, the right
                     AUTH (the secret is read from the file named by the
                     environment variable KREP_SECRET_FILE, as krepctl
                     reads it), then a FETCH in the clear instead of a
                     TLS record
        wrong-addr   a good HELLO claiming PEER_ID, sent from an address
                     that is not PEER_ID's (run it elsewhere)
        hello        a good HELLO from PEER_ID, answered as above; the
                     connection is then closed by us ("CASE answered")

  sniff IFACE PORT READY
      capture the TCP segments to or from PORT on IFACE (AF_PACKET) until
      SIGTERM; READY is created once capturing. Then rebuild each
      direction of each connection seen from its SYN and print one line
      per direction,
        "flow SRC>DST frames F records R partial P rest N sha256 HEX",
      parsing its bytes as krep frames (uapi/linux/krep_wire.h) as long
      as they are frames, then as TLS records (type 23, version 0x0303,
      a length): F frames, then R whole records and P bytes of an
      unfinished last one, then N bytes that are neither (0 when the
      switch came exactly at a frame boundary). Then, for every word W
      of the environment variable SNIFF_FIND, "find W yes" or "find W
      no": whether any direction's bytes contain W.

  flood HOST:PORT N WAIT
      open N connections that never send a byte; print
      "flood opened A closed B early E open C max SECONDS": how many the
      broker closed (E of them within 1 s: refused) in WAIT seconds.
      With the environment variable FLOOD_READY=PATH, touch PATH once
      all N are connected.

  dump TOPIC P[,P...] PREFIX
      read each partition P from offset 0 up to the replica's high
      watermark with KREP_CMD_FETCH and KREP_A_FOLLOWER_READ (a leader
      or a follower serves it), 1 MiB a request (so in several
      KREP_A_RECORDS attributes); write every record's value, one a
      line, to PREFIX.P and print "partition P records N batches B
      bytes S hw H sha256 HEX", the hash over the raw batches as the
      broker stores them. Batches must be contiguous RecordBatch v2
      (magic 2) without compression.

Exit status 0, 1 on an error (with a message on stderr), 2 on usage.
"""

import hashlib
import hmac
import os
import re
import select
import signal
import socket
import struct
import sys
import time

from krep_record import batch_values, batches

HERE = os.path.dirname(os.path.abspath(__file__))
UAPI = os.path.join(HERE, "..", "uapi", "linux", "krep.h")

MAGIC = 0x4B524550
HELLO, FETCH, AUTH = 1, 2, 4
HDR = struct.Struct(">IBBHII")


def die(msg):
    print("repl_helper.py: %s" % msg, file=sys.stderr)
    sys.exit(1)


# --- inter-broker wire protocol -------------------------------------------

WIRE_VERSION = 4
HELLO_LEN = 264         # struct krep_wire_hello, versions 2 to 4
F_AUTH, F_TLS = 1, 2    # KREP_WIRE_HELLO_F_*


def frame(ftype, payload, length=None, version=WIRE_VERSION, corr=0):
    if length is None:
        length = len(payload)
    return HDR.pack(MAGIC, version, ftype, 0, length, corr) + payload


def hello_payload(broker_id, cluster, flags=0, nonce=None):
    """A follower's HELLO: a random nonce (or NONCE), no proof, no Kafka
    listener; flags F_AUTH claims a cluster secret, F_TLS encryption."""
    cid = cluster.encode()
    return (struct.pack(">IHH", broker_id, WIRE_VERSION, flags) + cid +
            b"\0" * (64 - len(cid)) + b"\0" * 128 +
            (nonce or os.urandom(32)) + b"\0" * 32)


def secret_read():
    """The cluster secret as krepctl reads it: the file's bytes, without
    one final newline."""
    path = os.environ.get("KREP_SECRET_FILE")
    if not path:
        die("skip-tls needs KREP_SECRET_FILE")
    with open(path, "rb") as f:
        key = f.read()
    return key[:-1] if key.endswith(b"\n") else key


def proof(key, label, nonce_a, nonce_b, id_a, id_b):
    """krep_auth_proof(): HMAC-SHA256 over label, both nonces, both ids."""
    return hmac.new(key, label + nonce_a + nonce_b +
                    struct.pack(">II", id_a, id_b), hashlib.sha256).digest()


def auth_frame():
    """The follower's AUTH that ends the handshake, without a secret."""
    return frame(AUTH, b"\0" * 32)


def connect(addr):
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_exact(s, n, timeout):
    buf = b""
    end = time.monotonic() + timeout
    while len(buf) < n:
        left = end - time.monotonic()
        if left <= 0:
            return None
        s.settimeout(left)
        try:
            got = s.recv(n - len(buf))
        except (socket.timeout, OSError):
            return None
        if not got:
            return None
        buf += got
    return buf


def wait_closed(s, timeout):
    """Seconds until the peer closes (EOF or reset), or None."""
    start = time.monotonic()
    end = start + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return None
        s.settimeout(left)
        try:
            got = s.recv(65536)
        except socket.timeout:
            return None
        except OSError:
            return time.monotonic() - start
        if not got:
            return time.monotonic() - start


def expect_hello(s, leader_id, cluster, body_out=None):
    """The broker's answer to a good HELLO; an error string or None.
    Its payload is appended to BODY_OUT (a list) when given."""
    hdr = recv_exact(s, HDR.size, 10)
    if hdr is None:
        return "no HELLO answer"
    magic, ver, ftype, flags, length, _ = HDR.unpack(hdr)
    if (magic, ver, ftype, flags, length) != (MAGIC, WIRE_VERSION, HELLO, 0,
                                              HELLO_LEN):
        return "bad HELLO answer header %r" % (HDR.unpack(hdr),)
    body = recv_exact(s, length, 10)
    if body is None:
        return "short HELLO answer"
    bid, bver, _ = struct.unpack(">IHH", body[:8])
    cid = body[8:72].rstrip(b"\0").decode(errors="replace")
    if (bid, bver, cid) != (leader_id, WIRE_VERSION, cluster):
        return "HELLO answer from %d v%d cluster %r" % (bid, bver, cid)
    if body_out is not None:
        body_out.append(body)
    return None


def badpeer(addr, cluster, leader_id, peer_id, cases):
    rc = 0
    for case in cases:
        wait = 10
        s = connect(addr)
        start = time.monotonic()
        if case == "garbage":
            s.sendall(b"GET / HTTP/1.0\r\n\r\n"[:17])
        elif case == "short-hello":
            s.sendall(frame(HELLO, hello_payload(peer_id, cluster)[:40]))
        elif case == "trunc-hold":
            s.sendall(frame(HELLO, hello_payload(peer_id, cluster)[:20],
                            length=HELLO_LEN))
            wait = 20
        elif case == "oversized":
            s.sendall(frame(HELLO, b"", length=(4 << 20) + 1))
        elif case == "bad-type":
            s.sendall(frame(9, b"\0" * 8))
        elif case == "fetch-first":
            s.sendall(frame(FETCH, struct.pack(">IIII", peer_id, 0, 0, 0)))
        elif case == "bad-cluster":
            s.sendall(frame(HELLO, hello_payload(peer_id, "not-" + cluster)))
        elif case == "unknown-id":
            s.sendall(frame(HELLO, hello_payload(77, cluster)))
        elif case == "forged-auth":
            # claims a secret, then an AUTH with a proof made up
            s.sendall(frame(HELLO, hello_payload(peer_id, cluster,
                                                 F_AUTH | F_TLS)))
            if expect_hello(s, leader_id, cluster):
                print("forged-auth no HELLO answer")
                rc = 1
                s.close()
                continue
            s.sendall(frame(AUTH, os.urandom(32)))
        elif case == "no-tls":
            s.sendall(frame(HELLO, hello_payload(peer_id, cluster, F_AUTH)))
        elif case == "skip-tls":
            # the whole handshake, right, then no switch to records
            key = secret_read()
            nonce_f = os.urandom(32)
            s.sendall(frame(HELLO, hello_payload(peer_id, cluster,
                                                 F_AUTH | F_TLS, nonce_f)))
            got = []
            err = expect_hello(s, leader_id, cluster, got)
            if not err:
                nonce_l, proof_l = got[0][200:232], got[0][232:264]
                if proof_l != proof(key, b"krep-hello-leader", nonce_f,
                                    nonce_l, leader_id, peer_id):
                    err = "leader's proof does not verify"
            if err:
                print("skip-tls %s" % err)
                rc = 1
                s.close()
                continue
            s.sendall(frame(AUTH, proof(key, b"krep-hello-follower", nonce_l,
                                        nonce_f, peer_id, leader_id)) +
                      frame(FETCH, struct.pack(">IIII", peer_id, 0, 0, 0),
                            corr=1))
        elif case == "wrong-addr":
            # a good HELLO, from an address not PEER_ID's: refused
            s.sendall(frame(HELLO, hello_payload(peer_id, cluster)))
        elif case in ("bad-fetch", "hello"):
            s.sendall(frame(HELLO, hello_payload(peer_id, cluster)))
            err = expect_hello(s, leader_id, cluster)
            if err:
                print("%s %s" % (case, err))
                rc = 1
                s.close()
                continue
            if case == "hello":
                print("hello answered")
                s.close()
                continue
            s.sendall(auth_frame() + frame(FETCH, b"\0\0\0", corr=1))
        else:
            die("unknown case %s" % case)
        t = wait_closed(s, wait)
        if t is None:
            print("%s open %.2f" % (case, time.monotonic() - start))
        else:
            print("%s closed %.2f" % (case, t))
        sys.stdout.flush()
        s.close()
    return rc


ETH_P_ALL = 0x0003


def sniff_parse(data):
    """(frames, records, partial, rest) of one direction's bytes."""
    off, frames, records = 0, 0, 0
    while off + HDR.size <= len(data):
        magic, _, _, _, length, _ = HDR.unpack_from(data, off)
        if magic != MAGIC or off + HDR.size + length > len(data):
            break
        off += HDR.size + length
        frames += 1
    while off + 5 <= len(data):
        rtype, ver, rlen = struct.unpack_from(">BHH", data, off)
        if rtype != 23 or ver != 0x0303 or rlen > (1 << 14) + 256:
            break
        if off + 5 + rlen > len(data):
            return frames, records, len(data) - off, 0
        off += 5 + rlen
        records += 1
    if off < len(data) and len(data) - off < 5 and data[off] == 23:
        return frames, records, len(data) - off, 0
    return frames, records, 0, len(data) - off


def sniff(iface, port, ready):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                      socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    s.bind((iface, 0))
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    open(ready, "w").close()
    flows = {}          # (src, dst) -> [isn, {seq: payload}]

    def take(pkt):
        if len(pkt) < 14 + 20 or pkt[12:14] != b"\x08\x00":
            return
        ip = pkt[14:]
        ihl = (ip[0] & 15) * 4
        total = struct.unpack_from(">H", ip, 2)[0]
        if ip[9] != 6 or len(ip) < ihl + 20:
            return
        tcp = ip[ihl:total]
        sport, dport, seq = struct.unpack_from(">HHI", tcp)
        if port not in (sport, dport):
            return
        doff, tflags = (tcp[12] >> 4) * 4, tcp[13]
        key = ("%s:%d" % (socket.inet_ntoa(ip[12:16]), sport),
               "%s:%d" % (socket.inet_ntoa(ip[16:20]), dport))
        if tflags & 2:          # SYN: a connection from its start
            flows[key] = [seq + 1, {}]
        elif key in flows and len(tcp) > doff:
            flows[key][1].setdefault(seq, tcp[doff:])

    # one interface: what it sends is seen once, what it gets once; the
    # timeout lets the loop see SIGTERM (recv restarts after a handler)
    s.settimeout(0.1)
    while not stop:
        try:
            take(s.recv(65536))
        except (socket.timeout, InterruptedError):
            continue
    s.setblocking(False)
    while True:         # what was captured before SIGTERM
        try:
            take(s.recv(65536))
        except (BlockingIOError, InterruptedError):
            break
    streams = []
    for (src, dst), (isn, segs) in sorted(flows.items()):
        data, nxt = bytearray(), isn
        for seq in sorted(segs, key=lambda q: (q - isn) & 0xffffffff):
            seg = segs[seq]
            skip = (nxt - seq) & 0xffffffff
            if skip > (1 << 31):        # a hole: stop at it
                break
            if skip < len(seg):         # new bytes (a retransmission: some)
                data += seg[skip:]
                nxt = (seq + len(seg)) & 0xffffffff
        streams.append(bytes(data))
        f, r, p, rest = sniff_parse(bytes(data))
        print("flow %s>%s frames %d records %d partial %d rest %d "
              "sha256 %s" % (src, dst, f, r, p, rest,
                             hashlib.sha256(data).hexdigest()[:16]))
    for word in os.environ.get("SNIFF_FIND", "").split():
        found = any(word.encode() in d for d in streams)
        print("find %s %s" % (word, "yes" if found else "no"))
    return 0


def flood(addr, n, wait):
    host, port = addr.rsplit(":", 1)
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect((host, int(port)))
        except BlockingIOError:
            pass
        socks.append(s)
    opened = time.monotonic()
    # wait for every connect to finish
    pending = set(socks)
    end = opened + 10
    while pending and time.monotonic() < end:
        _, w, _ = select.select([], list(pending), [], 0.5)
        for s in w:
            pending.discard(s)
    good = [s for s in socks
            if s not in pending and
            s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0]
    ready = os.environ.get("FLOOD_READY")
    if ready:
        open(ready, "w").close()
    start = time.monotonic()
    closed = {}
    end = start + wait
    live = set(good)
    while live and time.monotonic() < end:
        r, _, _ = select.select(list(live), [], [], 0.5)
        for s in r:
            try:
                got = s.recv(4096)
            except OSError:
                got = b""
            if not got:
                closed[s] = time.monotonic() - start
                live.discard(s)
    early = sum(1 for t in closed.values() if t < 1.0)
    tmax = max(closed.values()) if closed else 0.0
    print("flood opened %d closed %d early %d open %d max %.2f" %
          (len(good), len(closed), early, len(live), tmax))
    for s in socks:
        s.close()
    return 0


# --- generic netlink --------------------------------------------------------

def uapi_enum(name):
    """{NAME: value} of an enum of uapi/linux/krep.h (implicit values)."""
    with open(UAPI) as f:
        text = f.read()
    m = re.search(r"enum %s \{(.*?)\};" % name, text, re.S)
    if not m:
        die("enum %s not in %s" % (name, UAPI))
    vals, nxt = {}, 0
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    for item in body.split(","):
        item = item.strip()
        if not item:
            continue
        if item.startswith("__"):
            break
        if "=" in item:
            k, v = (x.strip() for x in item.split("=", 1))
            nxt = int(v, 0) if re.match(r"^-?(0x)?[0-9a-fA-F]+$", v) \
                else vals[v]
        else:
            k = item
        vals[k] = nxt
        nxt += 1
    return vals


NLMSG_ERROR = 2
NLMSG_DONE = 3
NLM_F_REQUEST = 1
NLM_F_ACK = 4
NLM_F_DUMP = 0x300
GENL_ID_CTRL = 16
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
SOL_NETLINK = 270
NETLINK_EXT_ACK = 11
NLMSGERR_ATTR_MSG = 1


def nla(atype, data):
    hdr = struct.pack("=HH", 4 + len(data), atype)
    return hdr + data + b"\0" * ((4 - len(data) % 4) % 4)


def parse_attrs(buf):
    """{type: [payload, ...]}: an attribute may repeat."""
    out, off = {}, 0
    while off + 4 <= len(buf):
        alen, atype = struct.unpack_from("=HH", buf, off)
        if alen < 4 or off + alen > len(buf):
            raise ValueError("attribute %d of length %d at %d/%d" %
                             (atype, alen, off, len(buf)))
        out.setdefault(atype & 0x3FFF, []).append(buf[off + 4:off + alen])
        off += (alen + 3) & ~3
    return out


def check_ack(payload):
    """An NLMSG_ERROR's payload: OSError(errno, "strerror: extack
    message") unless it is an acknowledgement."""
    err = struct.unpack_from("=i", payload)[0]
    if err == 0:
        return
    why = ""
    olen = struct.unpack_from("=I", payload, 4)[0]
    try:
        ext = parse_attrs(payload[4 + olen:])
        why = ext.get(NLMSGERR_ATTR_MSG, [b""])[0].rstrip(b"\0").decode()
    except ValueError:
        pass
    raise OSError(-err, "%s: %s" % (os.strerror(-err), why))


class Genl:
    """A NETLINK_GENERIC socket, the "krep" family's id in .family."""

    def __init__(self):
        self.s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 16)
        self.s.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.s.bind((0, 0))
        self.seq = 0
        reply = self.request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1,
                             nla(CTRL_ATTR_FAMILY_NAME, b"krep\0"))
        self.family = struct.unpack("=H",
                                    reply[CTRL_ATTR_FAMILY_ID][0][:2])[0]

    def send(self, ftype, cmd, version, flags, attrs):
        self.seq += 1
        body = struct.pack("=BBH", cmd, version, 0) + attrs
        self.s.send(struct.pack("=IHHII", 16 + len(body), ftype,
                                NLM_F_REQUEST | flags, self.seq, 0) + body)

    def replies(self):
        """(type, payload) of every message answering the last request."""
        while True:
            data = self.s.recv(8 << 20)
            off = 0
            while off + 16 <= len(data):
                mlen, mtype, _, seq, _ = struct.unpack_from("=IHHII", data,
                                                            off)
                payload = data[off + 16:off + mlen]
                off += (mlen + 3) & ~3
                if seq == self.seq:
                    yield mtype, payload

    def request(self, ftype, cmd, version, attrs, ack=False):
        """Send a request: the attributes of its reply; OSError (check_ack)
        when it is refused. Without @ack, the reply ends it (a reply of
        a MiB of records may leave the receive buffer no room for an
        ack: ENOBUFS); with it, the ack does, {} when there is no reply."""
        self.send(ftype, cmd, version, NLM_F_ACK if ack else 0, attrs)
        reply = {}
        for mtype, payload in self.replies():
            if mtype != NLMSG_ERROR:
                reply = parse_attrs(payload[4:])
                if not ack:
                    return reply
                continue
            check_ack(payload)
            return reply

    def dump(self, cmd, attrs):
        """A dump of the "krep" family: the attributes of each message."""
        self.send(self.family, cmd, 1, NLM_F_DUMP, attrs)
        out = []
        for mtype, payload in self.replies():
            if mtype == NLMSG_DONE:
                return out
            if mtype == NLMSG_ERROR:
                check_ack(payload)
                return out
            out.append(parse_attrs(payload[4:]))


def dump_one(g, a, c, topic, partition, path):
    """One partition from offset 0 to HW: its summary line."""
    h = hashlib.sha256()
    offset = hw = nbytes = nbatches = nrec = 0
    values = []
    while True:
        attrs = (nla(a["KREP_A_TOPIC"], topic.encode() + b"\0") +
                 nla(a["KREP_A_PARTITION"], struct.pack("=I", partition)) +
                 nla(a["KREP_A_OFFSET"], struct.pack("=Q", offset)) +
                 nla(a["KREP_A_MAX_BYTES"], struct.pack("=I", 1 << 20)) +
                 nla(a["KREP_A_FOLLOWER_READ"], b""))
        try:
            reply = g.request(g.family, c["KREP_CMD_FETCH"], 1, attrs)
        except OSError as e:
            die("FETCH %s-%d at %d: %s" % (topic, partition, offset,
                                           e.strerror))
        hw = struct.unpack("=Q", reply[a["KREP_A_HW"]][0])[0]
        # KREP_A_RECORDS repeats, whole batches in each, in offset order
        recs = b"".join(reply.get(a["KREP_A_RECORDS"], []))
        if not recs:
            break
        for base, b in batches(recs):
            blen = struct.unpack_from(">i", b, 8)[0]
            magic = b[16] if len(b) > 16 else -1
            if magic != 2 or len(b) != 12 + blen or base != offset:
                die("%s-%d: bad batch at %d: base %d magic %d len %d" %
                    (topic, partition, offset, base, magic, blen))
            h.update(b)
            nrec += batch_values(b, values)
            offset = base + struct.unpack_from(">i", b, 23)[0] + 1
            nbytes += len(b)
            nbatches += 1
        if offset >= hw:
            break
    with open(path, "wb") as f:
        for v in values:
            f.write(v + b"\n")
    return ("partition %d records %d batches %d bytes %d hw %d sha256 %s" %
            (partition, nrec, nbatches, nbytes, hw, h.hexdigest()))


def dump(topic, partitions, prefix):
    a = uapi_enum("krep_attr")
    c = uapi_enum("krep_cmd")
    g = Genl()
    for p in partitions:
        print(dump_one(g, a, c, topic, p, "%s.%d" % (prefix, p)))
    return 0


def main(argv):
    if len(argv) >= 6 and argv[1] == "badpeer":
        return badpeer(argv[2], argv[3], int(argv[4]), int(argv[5]),
                       argv[6:])
    if len(argv) == 5 and argv[1] == "sniff":
        return sniff(argv[2], int(argv[3]), argv[4])
    if len(argv) == 5 and argv[1] == "flood":
        return flood(argv[2], int(argv[3]), float(argv[4]))
    if len(argv) == 5 and argv[1] == "dump":
        return dump(argv[2], [int(x) for x in argv[3].split(",")], argv[4])
    return usage()


def usage():
    print(__doc__.split("\n\n", 1)[1].split("Exit status")[0],
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
