#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""krep_probe.py - what selftests/failover.sh and replication.sh ask, from
one long-lived Python (selftests/pyserve.py), so that a poll starts no
process (a start of krepctl, jq or Python costs 0.15 to 1 s in the emulated
VM, and a poll of krepd's view and three brokers took four to eight).

It asks krepd's control socket (KREP_PROBE_SOCK: "status", "brokers",
"elect-preferred", as krepctl elect does) and the brokers over krep's
generic netlink (PARTITION_GET, TOPIC_GET, BROKER_GET), on a socket opened
in each broker's namespace. A broker B is a namespace's name, or N, the
Nth name in file KREP_PROBE_NS (one line, broker 1 first: read at the first
question that needs it). Every question answers status 0 for yes (printing
its value, if any) and 1 for no, or when something did not answer.

The brokers:
  describe B [TOPIC]      krepctl --json topic describe, as one line (the
                          same fields, in the same order)
  peers_up                every broker of KREP_PROBE_NS has both its
                          peers up
  drop B                  close the socket in B's namespace (before it is
                          deleted: the socket would keep it alive)
  sample B TOPIC OUT RUNNING  every 250 ms, a line appended to OUT:
                          {"t0":US,"t1":US,"broker":N,"running":R,"d":D},
                          D the describe of TOPIC asked at t0 and answered
                          at t1 (us, the real-time clock; null if it
                          failed), N B's number, R whether file RUNNING
                          exists; until two lines after it is gone (1000
                          at most). Run it with spawn.
  ready B=P,P... ...       on every broker B, the partitions it leads are
                          exactly these ("topic-partition"), each with its
                          whole AR in the ISR and every follower in the ISR
                          with a known LEO
  topic_new B NAME PARTITIONS RF [KEY=VALUE,...]  TOPIC_NEW on broker B, as
                          krepctl topic create NAME partitions PARTITIONS
                          replication-factor RF config KEY=VALUE,... sends it
  repl B ARG...           repl_helper.py ARG... in B's namespace

replication.sh's conditions, each over one describe of TOPIC per broker B
(written to FILE, one a line, for its diagnostics and later checks):
  final FILE TOPIC N M B B B  the three brokers have three partitions of
                          TOPIC each, every replica of TOPIC-0 at LEO =
                          HW = LSO = N, of the others at M; each
                          partition's log_bytes the same on every broker
  caught FILE TOPIC N B...  the first B leads TOPIC-0 at LEO N with HW =
                          LEO, every remote at LEO, the others at HW = LEO
  kept FILE TOPIC MAX LEO B...  the first B's TOPIC-0 at LEO, every
                          replica's log_bytes <= MAX and its log_start that
                          of the first, above 0: prints "LOG_BYTES
                          LOG_START" of the first
  dumps TOPIC P,P DIR B...  repl_helper.py dump TOPIC P,P in each B's
                          namespace: the values in DIR/dump.N.P, its lines
                          in DIR/sum.N (N: 1 for the first B, ...)
  same FILE FILE...       every FILE has the bytes of the first; prints
                          those that do not

krepd (failover.sh):
  view TOPIC FIELD...     krepd's TOPIC-0: each FIELD (leader,
                          leader_epoch, partition_epoch, isr, elr,
                          offline, ...) on a line; lists as "1,2,3",
                          null as "null"
  offline TOPIC           krepd has TOPIC-0 without a leader, or offline
  ctrl_epoch              krepd's controller epoch
  seen N                  krepd reaches broker N, has it claimed, unfenced
  claimed                 every broker holds a claim at krepd's epoch
                          (prints each broker's)
  restarted EPOCH STATE LOG OFFSET  krepd is at controller epoch
                          EPOCH + 1 with the three brokers claimed, and LOG
                          after its first OFFSET bytes says it read its
                          state file STATE at EPOCH
  snapshot                every partition's leader and leader epoch in
                          krepd's view (f-0's partition epoch and ISR
                          too): "N JSON", N the number of partitions
  part B TOPIC FIELD...   broker B's TOPIC-0: each FIELD (role, leader,
                          leader_epoch, isr, leo, hw, ...) on a line
  leader_is TOPIC N       krepd and broker N agree N leads TOPIC-0
  led_by_1 TOPIC          leader_is TOPIC 1; if not, asks krepd for the
                          preferred leader (broker 1 once in the ISR)
  isr TOPIC               krepd's ISR of TOPIC-0 as "1,2" (its order)
  isr_full TOPIC          krepd's ISR of TOPIC-0 is {1,2,3}
  hw_same TOPIC           the three replicas of TOPIC-0 at the leader's HW
  same_ar C P:R,R,R...    every broker has topic C's partitions with these
                          replicas, and no other
  led C P:R,R,R...        each partition of C is led by its first replica
                          (on that broker, and on no other) at leader
                          epoch 0 with the full ISR
  back3 C LEO             krepd's view of C's partitions led by 1 or 2,
                          each leader (with LEO, the full ISR) and broker
                          3 (a follower at LEO) agreeing
  gone C STATE            no broker, nor krepd's view, nor its state
                          file STATE has topic C; every broker lists f, l
                          and o, krepd's view has partitions, STATE a
                          controller epoch
  fh ARG...               fault_helper.py ARG... (check TOPIC NS ACKLOG;
                          produce and consume with spawn)
  dump TOPIC B PREFIX     repl_helper.py dump TOPIC 0 PREFIX, on broker B
  consumed LOG WANT [acks]  a consumer's LOG (values, one a line) against
                          the values in file WANT (with "acks": the
                          values of fault_helper.py produce's LOG):
                          "lines L distinct D missing M", M the wanted
                          values LOG does not have

This Python:
  spawn OUT QUESTION ARG...  the question in a child of this Python (a
                          fork, not a new interpreter: no start-up), its
                          output in file OUT; prints the child's pid
  reap PID                wait for that child: its exit status
  alive PID               that child has not ended
  quit                    end this Python now (its sockets closed), even
                          while others (krepd, the relays) still hold its
                          pipes
"""

import contextlib
import json
import os
import socket
import struct
import sys
import time

import ctl_helper as ch  # selftests/ is on sys.path (pyserve.py's)
import fault_helper
import repl_helper
from repl_helper import parse_attrs

SOCK = os.environ.get("KREP_PROBE_SOCK", "")
NS = []			# the brokers' namespaces, from file KREP_PROBE_NS
A, C = ch.A, ch.C
PEER = ch.uapi_enum("krep_peer_attr")
PSTATE = ch.uapi_enum("krep_peer_state")
REM = ch.uapi_enum("krep_remote_attr")
ROLES = {0: "leader", 1: "follower", 2: "offline"}
CLONE_NEWNET = 0x40000000
genl = {}		# namespace name: (its inode, a genl socket in it)


def jdump(v):
    return json.dumps(v, separators=(",", ":"))


# ---- krepd ---------------------------------------------------------------

def krepd(request):
    """krepd's JSON objects for REQUEST (each line up to "ok"); None
    without a whole answer."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    data = b""
    try:
        s.connect(SOCK)
        s.sendall(request.encode() + b"\n")
        while True:
            c = s.recv(65536)
            if not c:
                break
            data += c
    except OSError:
        return None
    finally:
        s.close()
    lines = data.decode(errors="replace").splitlines()
    if not lines or lines[-1] != "ok":
        return None
    try:
        return [json.loads(x) for x in lines[:-1]]
    except ValueError:
        return None


def kview(topic, p=0):
    """krepd's object of TOPIC-P, None if it has none."""
    for x in krepd("status") or []:
        if x.get("topic") == topic and x.get("partition") == p:
            return x
    return None


def fmt(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(fmt(x) for x in v)
    return str(v)


# ---- the brokers ---------------------------------------------------------

def nsname(b):
    """B's namespace: B itself, or the Bth name of KREP_PROBE_NS."""
    b = str(b)
    if not b.isdigit():
        return b
    if not NS:
        with open(os.environ["KREP_PROBE_NS"]) as f:
            NS.extend(f.read().split())
    return NS[int(b) - 1]


def number(b):
    """B's broker number (its place in KREP_PROBE_NS), None if not there."""
    name = nsname(b)
    nsname(1)
    return NS.index(name) + 1 if name in NS else None


@contextlib.contextmanager
def netns(b):
    """In B's namespace, for the sockets opened meanwhile."""
    here = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        fault_helper.setns("/run/netns/" + nsname(b))
        try:
            yield
        finally:
            if fault_helper._libc.setns(here, CLONE_NEWNET):
                raise OSError("cannot go back to our namespace")
    finally:
        os.close(here)


def broker(b):
    """A genl socket in B's namespace (a new one if the namespace was made
    anew)."""
    name = nsname(b)
    ino = os.stat("/run/netns/" + name).st_ino
    if name in genl and genl[name][0] == ino:
        return genl[name][1]
    drop(name)
    with netns(name):
        genl[name] = (ino, ch.Genl())
    return genl[name][1]


def drop(b):
    name = nsname(b)
    if name in genl:
        genl.pop(name)[1].s.close()
    return 0


def ids(nest):
    return [struct.unpack("=I", x)[0]
            for x in parse_attrs(nest).get(A["KREP_A_BROKER_ID"], [])]


def u64(attrs, a):
    v = attrs.get(a)
    return struct.unpack("=Q", v[0])[0] if v else None


def part_json(m):
    """One PARTITION_GET message as krepctl --json topic describe shows it
    (agent/krepctl/topic.c, part_json: the same keys in the same order)."""
    role = ch.get(m, "KREP_A_ROLE", "=B")
    o = {"topic": (m[A["KREP_A_TOPIC"]][0].rstrip(b"\0").decode()
                   if A["KREP_A_TOPIC"] in m else None),
         "partition": ch.get(m, "KREP_A_PARTITION"),
         "role": None if role is None else ROLES.get(role,
                                                     "unknown(%d)" % role)}
    for k, a in (("leader", "KREP_A_LEADER"),
                 ("leader_epoch", "KREP_A_LEADER_EPOCH"),
                 ("partition_epoch", "KREP_A_PARTITION_EPOCH")):
        o[k] = ch.get(m, a)
    for k, a in (("replicas", "KREP_A_REPLICAS"), ("isr", "KREP_A_ISR")):
        o[k] = ids(m[A[a]][0]) if A[a] in m else None
    for k, a in (("leo", "KREP_A_LEO"), ("hw", "KREP_A_HW"),
                 ("lso", "KREP_A_LSO"), ("log_start", "KREP_A_LOG_START"),
                 ("low_watermark", "KREP_A_LOW_WATERMARK"),
                 ("log_bytes", "KREP_A_LOG_BYTES")):
        o[k] = u64(m, A[a])
    if A["KREP_A_EPOCHS"] in m:
        o["epochs"] = []
        for e in parse_attrs(m[A["KREP_A_EPOCHS"]][0]).get(
                A["KREP_A_EPOCH_ENTRY"], []):
            ea = parse_attrs(e)
            o["epochs"].append({
                "epoch": struct.unpack(
                    "=I", ea[ch.EP["KREP_A_EPOCH_EPOCH"]][0])[0],
                "start_offset": struct.unpack(
                    "=Q", ea[ch.EP["KREP_A_EPOCH_START"]][0])[0]})
    else:
        o["epochs"] = None
    o["pending_isr"] = (ids(m[A["KREP_A_PENDING_ISR"]][0])
                        if A["KREP_A_PENDING_ISR"] in m else None)
    o["ineligible"] = (ids(m[A["KREP_A_INELIGIBLE"]][0])
                       if A["KREP_A_INELIGIBLE"] in m else None)
    if A["KREP_A_REMOTES"] not in m:
        o["remotes"] = None
        return o
    o["remotes"] = []
    for r in parse_attrs(m[A["KREP_A_REMOTES"]][0]).get(A["KREP_A_REMOTE"],
                                                         []):
        ra = parse_attrs(r)
        rid = ra.get(REM["KREP_A_REMOTE_ID"])
        x = {"id": struct.unpack("=I", rid[0])[0] if rid else None}
        for k, a in (("leo", "KREP_A_REMOTE_LEO"),
                     ("log_start", "KREP_A_REMOTE_LOG_START"),
                     ("fetch_age_ms", "KREP_A_REMOTE_FETCH_AGE_MS"),
                     ("caught_up_age_ms", "KREP_A_REMOTE_CAUGHT_UP_AGE_MS")):
            x[k] = u64(ra, REM[a])
        isr = ra.get(REM["KREP_A_REMOTE_IN_ISR"])
        x["in_isr"] = None if not isr else bool(isr[0][0])
        o["remotes"].append(x)
    return o


def describe(b, topic=None):
    """B's partitions (of TOPIC), as krepctl --json topic describe lists
    them; OSError when it does not answer."""
    g = broker(b)
    attrs = b"" if topic is None else repl_helper.nla(
        A["KREP_A_TOPIC"], topic.encode() + b"\0")
    return [part_json(m) for m in g.dump(C["KREP_CMD_PARTITION_GET"], attrs)]


def partitions(b, topic):
    """B's partitions of TOPIC: {index: describe's object}."""
    return {x["partition"]: x for x in describe(b, topic)}


def part(b, topic, p=0):
    return partitions(b, topic).get(p)


def topics(b):
    """The topics broker B lists (TOPIC_GET dump)."""
    return [m[A["KREP_A_TOPIC"]][0].rstrip(b"\0").decode()
            for m in broker(b).dump(C["KREP_CMD_TOPIC_GET"], b"")
            if A["KREP_A_TOPIC"] in m]


# ---- the questions: brokers ----------------------------------------------

def q_describe(b, topic=None):
    print(jdump(describe(b, topic)))
    return 0


def q_peers_up():
    nsname(1)
    for n in range(1, len(NS) + 1):
        r = ch.request(broker(n), "KREP_CMD_BROKER_GET", b"")
        states = []
        for nest in r.get(A["KREP_A_PEERS"], []):
            for peer in parse_attrs(nest).get(A["KREP_A_PEER"], []):
                st = parse_attrs(peer).get(PEER["KREP_A_PEER_STATE"])
                states.append(st[0][0] if st else None)
        if len(states) != len(NS) - 1 or \
                any(s != PSTATE["KREP_PEER_UP"] for s in states):
            return 1
    return 0


def q_sample(b, topic, out, running):
    n = after = 0
    with open(out, "a") as f:
        while n < 1000:
            if n:
                time.sleep(0.25)
            run = os.path.exists(running)
            t0 = time.time_ns() // 1000
            try:
                d = jdump(describe(b, topic))
            except OSError:
                d = "null"
            t1 = time.time_ns() // 1000
            f.write('{"t0":%d,"t1":%d,"broker":%d,"running":%s,"d":%s}\n' %
                    (t0, t1, number(b), "true" if run else "false", d))
            f.flush()
            n += 1
            if not run:
                after += 1
                if after >= 2:
                    break
    return 0


def q_ready(*specs):
    for spec in specs:
        b, want = spec.split("=", 1)
        d = describe(b)
        led = [x for x in d if x["role"] == "leader"]
        if sorted("%s-%d" % (x["topic"], x["partition"]) for x in led) != \
                sorted(w for w in want.split(",") if w):
            return 1
        for x in led:
            if x["isr"] is None or x["replicas"] is None or \
                    x["remotes"] is None or \
                    len(x["isr"]) != len(x["replicas"]) or \
                    not all(r["in_isr"] and r["leo"] is not None
                            for r in x["remotes"]):
                return 1
    return 0


def q_dumps(topic, parts, d, *bs):
    rc = 0
    for i, b in enumerate(bs, 1):
        with open("%s/sum.%d" % (d, i), "w") as out, \
                contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(out):
            try:
                with netns(b):
                    r = repl_helper.dump(topic,
                                         [int(p) for p in parts.split(",")],
                                         "%s/dump.%d" % (d, i))
            except SystemExit as e:
                r = 1 if e.code else 0
            except OSError as e:
                print("broker %s: %s" % (b, e))
                r = 1
        rc = rc or r
    return rc


TCFG = ch.uapi_enum("krep_tcfg_attr")


def q_topic_new(b, name, parts, rf, config=""):
    nla = repl_helper.nla
    cfg = b""
    for kv in filter(None, config.split(",")):
        k, v = kv.split("=", 1)
        pack = "=q" if k in ("retention_bytes", "flush_messages",
                              "flush_ms", "segment_ms") else \
            "=B" if k == "unclean_leader_election" else "=I"
        cfg += nla(TCFG["KREP_A_TCFG_" + k.upper()], struct.pack(pack, int(v)))
    attrs = (nla(A["KREP_A_TOPIC"], name.encode() + b"\0") +
             nla(A["KREP_A_PARTITIONS"], struct.pack("=I", int(parts))) +
             nla(A["KREP_A_REPLICATION_FACTOR"], struct.pack("=I", int(rf))))
    if cfg:
        attrs += nla(A["KREP_A_TOPIC_CONFIG"] | ch.NLA_F_NESTED, cfg)
    ch.request(broker(b), "KREP_CMD_TOPIC_NEW", attrs)
    return 0


def describes(file, topic, bs):
    """Each B's describe of TOPIC, also written to FILE (one a line)."""
    d = [describe(b, topic) for b in bs]
    with open(file, "w") as f:
        for x in d:
            f.write(jdump(x) + "\n")
    return d


def q_final(file, topic, n, m, *bs):
    d = describes(file, topic, bs)
    every = [x for y in d for x in y]
    if len(d) != 3 or len(every) != 9:	# three brokers, three partitions
        return 1
    for x in every:
        e = int(n) if x["partition"] == 0 else int(m)
        if not x["leo"] == x["hw"] == x["lso"] == e:
            return 1
    by = {}
    for x in every:
        by.setdefault(x["partition"], set()).add(x["log_bytes"])
    return 0 if all(len(v) == 1 for v in by.values()) else 1


def q_caught(file, topic, n, *bs):
    d = describes(file, topic, bs)
    if not all(d):
        return 1
    lead = d[0][0]
    if lead["remotes"] is None:
        return 1
    return 0 if (lead["leo"] == int(n) and lead["hw"] == lead["leo"] and
                 all(r["leo"] == lead["leo"] for r in lead["remotes"]) and
                 all(x[0]["hw"] == lead["leo"] for x in d[1:])) else 1


def q_kept(file, topic, most, leo, *bs):
    d = describes(file, topic, bs)
    if len(d) != 3 or not all(d):
        return 1
    lead = d[0][0]
    if lead["leo"] != int(leo) or not all(
            x[0]["log_bytes"] is not None and
            x[0]["log_bytes"] <= int(most) and
            x[0]["log_start"] == lead["log_start"] and
            x[0]["log_start"] is not None and x[0]["log_start"] > 0
            for x in d):
        return 1
    print(lead["log_bytes"], lead["log_start"])
    return 0


def q_repl(b, *args):
    with netns(b):
        return repl_helper.main(["repl_helper.py"] + list(args))


def q_same(first, *files):
    with open(first, "rb") as f:
        want = f.read()
    rc = 0
    for x in files:
        try:
            with open(x, "rb") as f:
                if f.read() == want:
                    continue
        except OSError:
            pass
        print(x)
        rc = 1
    return rc


def q_part(b, topic, *fields):
    x = part(b, topic)
    if x is None:
        return 1
    for f in fields:
        print(fmt(x.get(f)))
    return 0


def q_dump(topic, b, prefix):
    with netns(b):
        return repl_helper.dump(topic, [0], prefix)


# ---- the questions: krepd ------------------------------------------------

def q_view(topic, *fields):
    x = kview(topic)
    if x is None:
        return 1
    for f in fields:
        print(fmt(x.get(f)))
    return 0


def q_offline(topic):
    x = kview(topic)
    return 0 if x is not None and (x.get("leader") is None or
                                   x.get("offline") is True) else 1


def brokers():
    r = krepd("brokers")
    return r if r else None


def q_ctrl_epoch():
    b = brokers()
    if not b or b[0].get("controller_epoch") is None:
        return 1
    print(b[0]["controller_epoch"])
    return 0


def q_seen(n):
    b = brokers()
    return 0 if b and any(x.get("id") == n and x.get("reachable") is True and
                          x.get("claimed") is True and x.get("fenced") is False
                          for x in b[1:]) else 1


def claim(n):
    r = ch.request(broker(n), "KREP_CMD_BROKER_GET", b"")
    if A["KREP_A_CONTROLLER"] not in r:
        return None
    c = parse_attrs(r[A["KREP_A_CONTROLLER"]][0])
    return struct.unpack("=I", c[ch.CTRL["KREP_A_CTRL_EPOCH"]][0])[0]


def q_claimed():
    b = brokers()
    if not b or b[0].get("controller_epoch") is None:
        print("krepd: no answer")
        return 1
    e, ok = b[0]["controller_epoch"], True
    for n in (1, 2, 3):
        c = claim(n)
        print("broker %d: ctrl-epoch %s (krepd's %d)" % (n, c, e))
        ok = ok and c == e
    return 0 if ok else 1


def q_restarted(epoch, state, log, offset):
    b = brokers()
    if not b or b[0].get("controller_epoch") != epoch + 1 or \
            sum(1 for x in b[1:] if x.get("claimed") is True) != 3:
        return 1
    want = "state from %s: controller epoch %d, " % (state, epoch)
    with open(log, "rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    return 0 if any(want in line for line in text.splitlines()) else 1


def q_snapshot():
    s = krepd("status")
    if s is None:
        return 1
    out = []
    for x in s:
        keys = ["topic", "partition", "leader", "leader_epoch"]
        if x.get("topic") == "f":
            keys[4:] = ["partition_epoch", "isr"]
        out.append({k: x.get(k) for k in keys})
    out.sort(key=lambda x: (x["topic"], x["partition"]))
    print(len(out), jdump(out))
    return 0

def leader_is(topic, n):
    x = kview(topic)
    if x is None or x.get("leader") != n:
        return False
    y = part(n, topic)
    return y is not None and y["role"] == "leader"


def q_led_by_1(topic):
    if leader_is(topic, 1):
        return 0
    krepd("elect-preferred %s 0" % topic)
    return 1


def q_isr(topic):
    x = kview(topic)
    if x is None or not isinstance(x.get("isr"), list):
        return 1
    print(fmt(x["isr"]))
    return 0


def q_isr_full(topic):
    x = kview(topic)
    return 0 if x is not None and sorted(x.get("isr") or []) == [1, 2, 3] \
        else 1


def q_hw_same(topic):
    x = kview(topic)
    if x is None or x.get("leader") not in (1, 2, 3):
        return 1
    h = part(x["leader"], topic)
    if h is None or h["hw"] is None:
        return 1
    for n in (1, 2, 3):
        y = part(n, topic)
        if y is None or y["hw"] != h["hw"]:
            return 1
    print(h["hw"])
    return 0


def assignment(spec):
    """"0:1,2,3 1:2,3,1 ..." as {0: [1, 2, 3], ...}"""
    out = {}
    for x in spec.split():
        p, reps = x.split(":")
        out[int(p)] = [int(r) for r in reps.split(",")]
    return out


def q_same_ar(topic, spec):
    want = assignment(spec)
    for n in (1, 2, 3):
        got = {p: x["replicas"] for p, x in partitions(n, topic).items()}
        if got != want:
            return 1
    return 0


def q_led(topic, spec):
    want = assignment(spec)
    leaders = []
    for n in (1, 2, 3):
        for p, x in partitions(n, topic).items():
            if x["role"] == "leader":
                leaders.append((p, n, x["leader_epoch"],
                                len(x["isr"] or [])))
    return 0 if sorted(leaders) == sorted(
        (p, r[0], 0, 3) for p, r in want.items()) else 1


def q_back3(topic, leo):
    s = [x for x in krepd("status") or [] if x.get("topic") == topic]
    d = [partitions(n, topic) for n in (1, 2, 3)]
    if len(s) != 6:
        return 1
    for x in s:
        lead, p = x.get("leader"), x.get("partition")
        if lead not in (1, 2):
            return 1
        y, z = d[lead - 1].get(p), d[2].get(p)
        if y is None or y["role"] != "leader" or y["leo"] != leo or \
                len(y["isr"] or []) != 3:
            return 1
        if z is None or z["role"] != "follower" or z["leo"] != leo:
            return 1
    return 0


def q_gone(topic, state):
    for n in (1, 2, 3):
        t = topics(n)
        if topic in t or not {"f", "l", "o"} <= set(t):
            return 1
    s = krepd("status")
    if not s or any(x.get("topic") == topic for x in s):
        return 1
    try:
        with open(state) as f:
            lines = f.read().splitlines()
    except OSError:
        return 1
    if not any(x.startswith("controller-epoch ") for x in lines):
        return 1
    return 1 if any(x.startswith("topic %s " % topic) or
                    x.startswith("partition %s " % topic)
                    for x in lines) else 0


def q_spawn(out, *args):
    pid = os.fork()
    if pid:
        print(pid)
        return 0
    rc = 1
    try:
        for g in genl.values():		# not the namespaces' sockets
            g[1].s.close()
        genl.clear()
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        rc = main(["krep_probe.py"] + list(args))
    except BaseException:  # noqa: B036 - whatever it is, the child ends
        import traceback
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc if isinstance(rc, int) else 1)


ended = {}		# pid: exit status, of a child alive found ended


def q_reap(pid):
    if pid in ended:
        return ended.pop(pid)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) & 0xff


def q_alive(pid):
    if pid in ended:
        return 1
    p, status = os.waitpid(pid, os.WNOHANG)
    if p == 0:
        return 0
    ended[pid] = os.waitstatus_to_exitcode(status) & 0xff
    return 1


def q_consumed(log, want, acks=False):
    with open(log) as f:
        got = f.read().splitlines()
    with open(want) as f:
        w = f.read().splitlines()
    if acks:
        w = ["v-" + x.split()[0] for x in w]
    have = set(got)
    print("lines %d distinct %d missing %d" % (
        len(got), len(have), len(set(w) - have)))
    return 0


QUESTIONS = {
    # the brokers
    "describe": lambda a: q_describe(*a),
    "peers_up": lambda a: q_peers_up(),
    "drop": lambda a: drop(a[0]),
    "sample": lambda a: q_sample(*a),
    "repl": lambda a: q_repl(*a),
    "topic_new": lambda a: q_topic_new(*a),
    "final": lambda a: q_final(*a),
    "caught": lambda a: q_caught(*a),
    "kept": lambda a: q_kept(*a),
    "ready": lambda a: q_ready(*a),
    "dumps": lambda a: q_dumps(*a),
    "same": lambda a: q_same(*a),
    "part": lambda a: q_part(*a),
    "dump": lambda a: q_dump(*a),
    # krepd
    "view": lambda a: q_view(*a),
    "offline": lambda a: q_offline(a[0]),
    "ctrl_epoch": lambda a: q_ctrl_epoch(),
    "seen": lambda a: q_seen(int(a[0])),
    "claimed": lambda a: q_claimed(),
    "restarted": lambda a: q_restarted(int(a[0]), a[1], a[2], int(a[3])),
    "snapshot": lambda a: q_snapshot(),
    "leader_is": lambda a: 0 if leader_is(a[0], int(a[1])) else 1,
    "led_by_1": lambda a: q_led_by_1(a[0]),
    "isr": lambda a: q_isr(a[0]),
    "isr_full": lambda a: q_isr_full(a[0]),
    "hw_same": lambda a: q_hw_same(a[0]),
    "same_ar": lambda a: q_same_ar(a[0], a[1]),
    "led": lambda a: q_led(a[0], a[1]),
    "back3": lambda a: q_back3(a[0], int(a[1])),
    "gone": lambda a: q_gone(a[0], a[1]),
    "fh": lambda a: fault_helper.main(["fault_helper.py"] + a),
    "consumed": lambda a: q_consumed(a[0], a[1], a[2:] == ["acks"]),
    # this Python
    "spawn": lambda a: q_spawn(*a),
    "reap": lambda a: q_reap(int(a[0])),
    "alive": lambda a: q_alive(int(a[0])),
    "quit": lambda a: os._exit(0),
}


def main(argv):
    if len(argv) < 2 or argv[1] not in QUESTIONS:
        print("krep_probe: no question %r" % argv[1:], file=sys.stderr)
        return 2
    try:
        return QUESTIONS[argv[1]](argv[2:])
    except OSError as e:	# a refused request, a broker or krepd gone
        print("krep_probe %s: %s" % (" ".join(argv[1:]), e),
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
