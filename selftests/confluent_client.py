#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""confluent_client.py - confluent-kafka (librdkafka) against krep, for
selftests/kafka.sh.

  confluent_client.py BOOTSTRAP TOPIC PARTITION N

Produces N keyed records with acks=all to TOPIC-PARTITION through
BOOTSTRAP, each confirmed by its delivery callback, then reads them back
with a consumer that has the partition assigned at the first record's
offset. confluent-kafka wants a group.id even then; it commits nothing
and joins no group, and krep answers its coordinator lookups with
COORDINATOR_NOT_AVAILABLE. Prints "produced N delivered D consumed C
from OFFSET" and exits 0 when every record came back, byte for byte and
in order, 1 otherwise.
"""

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def main(argv):
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    bootstrap, topic, part, n = argv[1], argv[2], int(argv[3]), int(argv[4])
    want = [(b"ck%d" % i, b"confluent-%d" % i) for i in range(n)]
    offsets = []

    def delivered(err, msg):
        if err is None:
            offsets.append(msg.offset())
        else:
            print("not delivered: %s" % err, file=sys.stderr)

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "linger.ms": 5})
    for key, value in want:
        producer.produce(topic, key=key, value=value, partition=part,
                         on_delivery=delivered)
        producer.poll(0)
    producer.flush(30)
    first = min(offsets) if offsets else -1

    consumer = Consumer({"bootstrap.servers": bootstrap,
                         "group.id": "krep-selftest-assign",
                         "enable.auto.commit": False,
                         "enable.auto.offset.store": False})
    consumer.assign([TopicPartition(topic, part, max(first, 0))])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        m = consumer.poll(1.0)
        if m is None or m.error():
            continue
        got.append((m.key(), m.value()))
    consumer.close()
    print("produced %d delivered %d consumed %d from %d" %
          (n, len(offsets), len(got), first))
    ok = (len(offsets) == n and offsets == list(range(first, first + n)) and
          got == want)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
