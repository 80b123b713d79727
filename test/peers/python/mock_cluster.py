"""Runs librdkafka's mock cluster (through confluent-kafka) for tests: a Kafka-protocol store that
tests everywhere use, in this process's own threads. Prints one JSON line on stdout,
{"bootstrap": "127.0.0.1:P1,127.0.0.1:P2,..."}, once its brokers listen, and keeps them up until
SIGTERM or SIGINT, or until stdin closes when stdin is a pipe (so a parent that dies takes it along).

  mock_cluster.py [--brokers N]

The mock cluster lives as long as the client handle that made it (test.mock.num.brokers), so
the handle is kept; its own Metadata answer names the brokers' addresses.
"""

import argparse
import json
import os
import signal
import stat
import sys
import threading

from confluent_kafka import Producer

# syslog levels: warnings and worse only, so stderr tails show what went wrong.
QUIET = 4


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--brokers", type=int, default=3)
    args = p.parse_args()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    handle = Producer({"test.mock.num.brokers": args.brokers, "bootstrap.servers": "", "log_level": QUIET})
    brokers = handle.list_topics(timeout=30).brokers
    bootstrap = ",".join("%s:%d" % (b.host, b.port) for _, b in sorted(brokers.items()))
    print(json.dumps({"bootstrap": bootstrap}), flush=True)
    if stat.S_ISFIFO(os.fstat(0).st_mode):
        threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    # A timed wait, so that the signal handlers run.
    while not stop.wait(1):
        pass


if __name__ == "__main__":
    main()
