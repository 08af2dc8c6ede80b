#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""ctl_helper.py - a scripted controller for selftests/epochs.sh.

Run it inside a broker's network namespace (ip netns exec NS ...). It
speaks the controller's side of uapi/linux/krep.h directly, so a test can
choose every leader, epoch and ISR itself:

  claim EPOCH OWNER LEASE_MS
      BROKER_SET KREP_A_CONTROLLER; prints "ok" or "error ERRNO MESSAGE"
  lai CEPOCH TOPIC P LEADER LEPOCH PEPOCH ISR [INELIGIBLE]
      LEADER_AND_ISR; LEADER "none" is KREP_NO_LEADER, ISR and
      INELIGIBLE (the fenced replicas, KREP_A_INELIGIBLE, absent when not
      given) are comma lists ("-" for empty); prints "ok" or "error ERRNO
      MESSAGE"
  topic-new CEPOCH TOPIC PARTITIONS RF ASSIGNMENT
      TOPIC_NEW with KREP_A_ASSIGNMENT: replica lists by partition,
      "1,2,3/2,3,1" ("/" between partitions); CEPOCH "-" sends no
      KREP_A_CONTROLLER_EPOCH; prints "ok" or "error ERRNO MESSAGE"
  state TOPIC P
      one line from PARTITION_GET: "role R leader L le E pe P isr I
      leo X hw H epochs E:S,... pending I lso S" (pending "-" when none)
  txn-begin TOPIC P PID EPOCH TIMEOUT_MS
      TXN BEGIN with KREP_A_TIMEOUT_MS; prints "ok" or "error ERRNO
      MESSAGE"
  txn TOPIC P PID EPOCH begin|commit|abort
      TXN with the attributes krepctl txn sends (no KREP_A_TIMEOUT_MS);
      prints "ok" or "error ERRNO MESSAGE"
  epoch-end TOPIC P EPOCH [follower]
      OFFSETS_FOR_LEADER_EPOCH: "epoch E end O", or "undefined"
  broker
      "incarnation N ctrl-epoch E owner O lease L"

Exit status 0, 1 on an error (with a message on stderr), 2 on usage.
"""

import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from repl_helper import Genl, nla, parse_attrs, uapi_enum  # noqa: E402

A = uapi_enum("krep_attr")
C = uapi_enum("krep_cmd")
CTRL = uapi_enum("krep_ctrl_attr")
EP = uapi_enum("krep_epoch_attr")
ROLES = {0: "leader", 1: "follower", 2: "offline"}
NO_LEADER = 0xFFFFFFFF
TXN_OP = uapi_enum("krep_txn_op")
TXN_BEGIN = TXN_OP["KREP_TXN_BEGIN"]


def u32(v):
    return struct.pack("=I", v)


def ids(nest):
    return [struct.unpack("=I", x)[0]
            for x in parse_attrs(nest).get(A["KREP_A_BROKER_ID"], [])]


def idlist(s):
    return [] if s == "-" else [int(x) for x in s.split(",")]


NLA_F_NESTED = 0x8000


def id_nest(atype, lst):
    return nla(atype | NLA_F_NESTED,
               b"".join(nla(A["KREP_A_BROKER_ID"], u32(i)) for i in lst))


def part(topic, p):
    return (nla(A["KREP_A_TOPIC"], topic.encode() + b"\0") +
            nla(A["KREP_A_PARTITION"], u32(p)))


def request(g, cmd, attrs):
    """Send @cmd; its reply's attributes, {} for a bare ack."""
    return g.request(g.family, C[cmd], 1, attrs, ack=True)


def do(g, cmd, attrs):
    try:
        return request(g, cmd, attrs)
    except OSError as e:
        print("error %s %s" % (e.errno, e.strerror))
        return None


def claim(g, epoch, owner, lease):
    body = (nla(CTRL["KREP_A_CTRL_EPOCH"], u32(epoch)) +
            nla(CTRL["KREP_A_CTRL_OWNER"], struct.pack("=Q", owner)) +
            nla(CTRL["KREP_A_CTRL_LEASE_MS"], u32(lease)))
    if do(g, "KREP_CMD_BROKER_SET",
          nla(A["KREP_A_CONTROLLER"] | NLA_F_NESTED, body)) \
            is not None:
        print("ok")
    return 0


def lai(g, cepoch, topic, p, leader, lepoch, pepoch, isr, inel=None):
    attrs = (nla(A["KREP_A_CONTROLLER_EPOCH"], u32(cepoch)) + part(topic, p) +
             nla(A["KREP_A_LEADER"],
                 u32(NO_LEADER if leader == "none" else int(leader))) +
             nla(A["KREP_A_LEADER_EPOCH"], u32(lepoch)) +
             nla(A["KREP_A_PARTITION_EPOCH"], u32(pepoch)) +
             id_nest(A["KREP_A_ISR"], idlist(isr)))
    if inel is not None:
        attrs += id_nest(A["KREP_A_INELIGIBLE"], idlist(inel))
    if do(g, "KREP_CMD_LEADER_AND_ISR", attrs) is not None:
        print("ok")
    return 0


def txn_begin(g, topic, p, pid, epoch, timeout_ms):
    attrs = (part(topic, p) +
             nla(A["KREP_A_PRODUCER_ID"], struct.pack("=Q", pid)) +
             nla(A["KREP_A_PRODUCER_EPOCH"], struct.pack("=H", epoch)) +
             nla(A["KREP_A_TXN_OP"], struct.pack("=B", TXN_BEGIN)) +
             nla(A["KREP_A_TIMEOUT_MS"], u32(timeout_ms)))
    if do(g, "KREP_CMD_TXN", attrs) is not None:
        print("ok")
    return 0


def txn(g, topic, p, pid, epoch, op):
    attrs = (part(topic, p) +
             nla(A["KREP_A_PRODUCER_ID"], struct.pack("=Q", pid)) +
             nla(A["KREP_A_PRODUCER_EPOCH"], struct.pack("=H", epoch)) +
             nla(A["KREP_A_TXN_OP"],
                 struct.pack("=B", TXN_OP["KREP_TXN_" + op.upper()])))
    if do(g, "KREP_CMD_TXN", attrs) is not None:
        print("ok")
    return 0


def topic_new(g, cepoch, topic, np, rf, assignment):
    attrs = (nla(A["KREP_A_TOPIC"], topic.encode() + b"\0") +
             nla(A["KREP_A_PARTITIONS"], u32(np)) +
             nla(A["KREP_A_REPLICATION_FACTOR"], u32(rf)) +
             nla(A["KREP_A_ASSIGNMENT"] | NLA_F_NESTED,
                 b"".join(id_nest(A["KREP_A_REPLICAS"], idlist(p))
                          for p in assignment.split("/"))))
    if cepoch != "-":
        attrs += nla(A["KREP_A_CONTROLLER_EPOCH"], u32(int(cepoch)))
    if do(g, "KREP_CMD_TOPIC_NEW", attrs) is not None:
        print("ok")
    return 0


def dump_partitions(g, topic):
    """Every PARTITION_GET message of @topic, as attribute dicts."""
    return g.dump(C["KREP_CMD_PARTITION_GET"],
                  nla(A["KREP_A_TOPIC"], topic.encode() + b"\0"))


def get(attrs, name, fmt="=I", dflt=None):
    v = attrs.get(A[name])
    return struct.unpack(fmt, v[0])[0] if v else dflt


def state(g, topic, p):
    for m in dump_partitions(g, topic):
        if get(m, "KREP_A_PARTITION") != p:
            continue
        epochs = []
        for e in parse_attrs(m[A["KREP_A_EPOCHS"]][0]).get(
                A["KREP_A_EPOCH_ENTRY"], []):
            ea = parse_attrs(e)
            epochs.append("%d:%d" % (
                struct.unpack("=I", ea[EP["KREP_A_EPOCH_EPOCH"]][0])[0],
                struct.unpack("=Q", ea[EP["KREP_A_EPOCH_START"]][0])[0]))
        pend = m.get(A["KREP_A_PENDING_ISR"])
        leader = get(m, "KREP_A_LEADER")
        print("role %s leader %s le %d pe %d isr %s leo %d hw %d epochs %s "
              "pending %s lso %d" % (
                  ROLES.get(get(m, "KREP_A_ROLE", "=B"), "?"),
                  "none" if leader is None else leader,
                  get(m, "KREP_A_LEADER_EPOCH"),
                  get(m, "KREP_A_PARTITION_EPOCH"),
                  ",".join(map(str, ids(m[A["KREP_A_ISR"]][0]))) or "-",
                  get(m, "KREP_A_LEO", "=Q"), get(m, "KREP_A_HW", "=Q"),
                  ",".join(epochs) or "-",
                  ",".join(map(str, ids(pend[0]))) if pend else "-",
                  get(m, "KREP_A_LSO", "=Q")))
        return 0
    print("no such partition", file=sys.stderr)
    return 1


def epoch_end(g, topic, p, epoch, follower):
    attrs = part(topic, p) + nla(A["KREP_A_LEADER_EPOCH"], u32(epoch))
    if follower:
        attrs += nla(A["KREP_A_FOLLOWER_READ"], b"")
    r = do(g, "KREP_CMD_OFFSETS_FOR_LEADER_EPOCH", attrs)
    if r is None:
        return 0
    if A["KREP_A_LEADER_EPOCH"] not in r:
        print("undefined")
    else:
        print("epoch %d end %d" % (get(r, "KREP_A_LEADER_EPOCH"),
                                   get(r, "KREP_A_OFFSET", "=Q")))
    return 0


def broker(g):
    r = do(g, "KREP_CMD_BROKER_GET", b"")
    if r is None:
        return 1
    line = "incarnation %d" % get(r, "KREP_A_INCARNATION", "=Q")
    if A["KREP_A_CONTROLLER"] in r:
        c = parse_attrs(r[A["KREP_A_CONTROLLER"]][0])
        line += " ctrl-epoch %d owner %d lease %d" % (
            struct.unpack("=I", c[CTRL["KREP_A_CTRL_EPOCH"]][0])[0],
            struct.unpack("=Q", c[CTRL["KREP_A_CTRL_OWNER"]][0])[0],
            struct.unpack("=I", c[CTRL["KREP_A_CTRL_LEASE_MS"]][0])[0])
    print(line)
    return 0


def main(argv):
    g = Genl()
    if len(argv) == 5 and argv[1] == "claim":
        return claim(g, int(argv[2]), int(argv[3]), int(argv[4]))
    if len(argv) in (9, 10) and argv[1] == "lai":
        return lai(g, int(argv[2]), argv[3], int(argv[4]), argv[5],
                   int(argv[6]), int(argv[7]), argv[8],
                   argv[9] if len(argv) == 10 else None)
    if len(argv) == 7 and argv[1] == "topic-new":
        return topic_new(g, argv[2], argv[3], int(argv[4]), int(argv[5]),
                         argv[6])
    if len(argv) == 4 and argv[1] == "state":
        return state(g, argv[2], int(argv[3]))
    if len(argv) in (5, 6) and argv[1] == "epoch-end":
        return epoch_end(g, argv[2], int(argv[3]), int(argv[4]),
                         len(argv) == 6)
    if len(argv) == 7 and argv[1] == "txn-begin":
        return txn_begin(g, argv[2], int(argv[3]), int(argv[4]),
                         int(argv[5]), int(argv[6]))
    if len(argv) == 7 and argv[1] == "txn" and \
            argv[6] in ("begin", "commit", "abort"):
        return txn(g, argv[2], int(argv[3]), int(argv[4]), int(argv[5]),
                   argv[6])
    if len(argv) == 2 and argv[1] == "broker":
        return broker(g)
    print(__doc__.split("\n\n", 1)[1].split("Exit status")[0],
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
