#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""kafka_python_client.py - kafka-python against krep, for selftests/kafka.sh.

  kafka_python_client.py BOOTSTRAP TOPIC PARTITION N

Produces N keyed records with acks=all to TOPIC-PARTITION through
BOOTSTRAP (any broker: the client finds the leader through Metadata),
then reads the partition from the start with a consumer that has no
group (assign, seek) until it has seen them, and checks the end offset
(ListOffsets) moved by N. Prints "produced N consumed N end E->E2" and
exits 0 when every record came back in order, 1 otherwise.
"""

import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def main(argv):
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    bootstrap, topic, part, n = argv[1], argv[2], int(argv[3]), int(argv[4])
    tp = TopicPartition(topic, part)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False,
                             consumer_timeout_ms=20000)
    consumer.assign([tp])
    start = consumer.end_offsets([tp])[tp]

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all",
                             retries=5)
    want = [("kp-%d" % i).encode() for i in range(n)]
    futures = [producer.send(topic, key=b"k%d" % i, value=v, partition=part)
               for i, v in enumerate(want)]
    producer.flush(30)
    offsets = [f.get(timeout=30).offset for f in futures]
    producer.close()
    if offsets != list(range(start, start + n)):
        print("offsets %r, want %d.." % (offsets[:5], start), file=sys.stderr)
        return 1

    consumer.seek(tp, start)
    got = []
    for msg in consumer:
        got.append(msg.value)
        if len(got) == n:
            break
    end = consumer.end_offsets([tp])[tp]
    consumer.close()
    print("produced %d consumed %d end %d->%d" % (n, len(got), start, end))
    if got != want or end != start + n:
        print("records differ or end offset wrong", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
