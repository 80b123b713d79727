"""Drives librdkafka (through confluent-kafka) for tests and prints one JSON summary on stdout in
the format described in test/peers/README.md; exits 1 when the summary holds errors.

  ck.py produce --brokers B --topic T [--count N --start I --keys K --value-size S
                --tombstone-every M --compression C --create-partitions P --topic-config k=v
                --no-idempotence]
  ck.py consume --brokers B --topic T --count N [--group G --isolation L --records]
  ck.py share   --brokers B --topic T --group G --count N [--isolation L --release --idle-ms MS]
  ck.py txn     --brokers B --topic T [--transactions N --per-txn M ...]
  ck.py configs --brokers B --topic T [--partitions P] --topic-config k=v ... --alter k=v ...
  ck.py tail    --brokers B --topic T --until-key K [--partition P --mode assign|group --group G
                --share G --isolation L --timeout-ms D]  (JSON events, one per line; no summary)

Every command takes --client-config k=v (repeatable): more librdkafka properties, such as
security.protocol, sasl.mechanisms or ssl.ca.location.
"""

import argparse
import hashlib
import json
import logging
import struct
import sys
import threading
import time
import uuid

import confluent_kafka
from confluent_kafka import AcknowledgeType, Consumer, IsolationLevel, KafkaError, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, OffsetSpec, ResourceType

ABORTED_MARK = b"aborted-"
# syslog levels: warnings and worse only, so stderr tails show what went wrong.
QUIET = 4


def gen_record(i, keys, value_size, tombstone_every):
    """The bed's shared record generator: same index, same bytes, whichever client produces."""
    key = ("key-%06d" % (i % keys)).encode() if keys > 0 else None
    if tombstone_every > 0 and (i + 1) % tombstone_every == 0:
        return key, None
    v = bytearray(("value-%d-" % i).encode())
    for j in range(len(v), value_size):
        v.append(ord("a") + (i + j) % 26)
    return key, bytes(v[:value_size])


def put_bytes(h, b):
    if b is None:
        h.update(struct.pack(">i", -1))
    else:
        h.update(struct.pack(">i", len(b)))
        h.update(b)


def summarize(recs):
    """Per partition: count, offsets and SHA-256 over (offset, key, value) in offset order."""
    by_part, errors = {}, []
    for r in recs:
        by_part.setdefault(r[0], []).append(r)
    out = {}
    for p, rs in by_part.items():
        rs.sort(key=lambda r: r[1])
        h = hashlib.sha256()
        for idx, (_, off, k, v) in enumerate(rs):
            if idx > 0 and rs[idx - 1][1] == off:
                errors.append("partition %d: offset %d delivered twice" % (p, off))
            h.update(struct.pack(">q", off))
            put_bytes(h, k)
            put_bytes(h, v)
        out[str(p)] = {
            "count": len(rs),
            "firstOffset": rs[0][1],
            "lastOffset": rs[-1][1],
            "offsets": [r[1] for r in rs],
            "digest": h.hexdigest(),
        }
    return out, errors


def text(b):
    if b is None:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return "hex:" + b.hex()


def list_records(recs):
    return [
        {"partition": p, "offset": o, "key": text(k), "value": text(v)}
        for p, o, k, v in sorted(recs, key=lambda r: (r[0], r[1]))
    ]


def client_meta(**extra):
    return dict(name="librdkafka", version=confluent_kafka.libversion()[0], **extra)


def client_config(args):
    return dict(kv.split("=", 1) for kv in args.client_config)


def producer_config(args, **extra):
    conf = {
        **client_config(args),
        "bootstrap.servers": args.brokers,
        "acks": "all",
        "enable.idempotence": True,
        "compression.type": args.compression,
        # Java's and franz-go's default for keyed records, so partitions match across clients.
        "partitioner": "murmur2_random",
        "linger.ms": 5,
        "log_level": QUIET,
    }
    conf.update(extra)
    return conf


def create_topic(args):
    configs = dict(kv.split("=", 1) for kv in args.topic_config)
    admin = AdminClient({**client_config(args), "bootstrap.servers": args.brokers, "log_level": QUIET})
    futures = admin.create_topics(
        [NewTopic(args.topic, num_partitions=args.create_partitions, config=configs)],
        request_timeout=10,
    )
    for f in futures.values():
        try:
            f.result(timeout=15)
        except confluent_kafka.KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise


class Delivered:
    """Collects delivery reports into the per-partition produce summary."""

    def __init__(self):
        self.parts, self.errors = {}, []

    def __call__(self, err, msg):
        if err is not None:
            self.errors.append(str(err))
            return
        p = self.parts.setdefault(
            str(msg.partition()),
            {"count": 0, "firstOffset": msg.offset(), "lastOffset": msg.offset()},
        )
        p["count"] += 1
        p["firstOffset"] = min(p["firstOffset"], msg.offset())
        p["lastOffset"] = max(p["lastOffset"], msg.offset())

    def total(self):
        return sum(p["count"] for p in self.parts.values())


def idle_passed(args, last_at):
    """--idle-ms: the read also ends that long after its last record (the bound starts with the
    first record, since joining and the first fetch may be slow)."""
    return bool(getattr(args, "idle_ms", 0)) and last_at is not None and time.monotonic() - last_at >= args.idle_ms / 1000


def flush(producer, deadline, errors):
    remaining = producer.flush(max(0.0, deadline - time.monotonic()))
    if remaining:
        errors.append("%d records still undelivered at the deadline" % remaining)


def cmd_produce(args):
    deadline = time.monotonic() + args.timeout_ms / 1000
    if args.create_partitions > 0:
        create_topic(args)
    delivered = Delivered()
    producer = Producer(producer_config(args, **({"enable.idempotence": False} if args.no_idempotence else {})))
    for i in range(args.start, args.start + args.count):
        key, value = gen_record(i, args.keys, args.value_size, args.tombstone_every)
        while True:
            try:
                producer.produce(args.topic, key=key, value=value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    errors = delivered.errors
    flush(producer, deadline, errors)
    return {
        "count": delivered.total(),
        "partitions": delivered.parts,
        "errors": sorted(errors),
        "client": client_meta(compression=args.compression),
    }


def consume_records(args, count, isolation, errors):
    consumer = Consumer(
        {
            **client_config(args),
            "bootstrap.servers": args.brokers,
            "group.id": args.group or "ck-" + uuid.uuid4().hex[:12],
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            # librdkafka skips CRC checks unless asked; the bed wants the strict path.
            "check.crcs": True,
            "log_level": QUIET,
        }
    )
    recs = []
    deadline = time.monotonic() + args.timeout_ms / 1000
    last_at = None
    try:
        consumer.subscribe([args.topic])
        while len(recs) < count and time.monotonic() < deadline and not errors and not idle_passed(args, last_at):
            for msg in consumer.consume(num_messages=1000, timeout=0.2):
                if msg.error():
                    if msg.error().code() != KafkaError._PARTITION_EOF:
                        errors.append(str(msg.error()))
                    continue
                recs.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
                last_at = time.monotonic()
        if len(recs) < count and not errors:
            errors.append("saw %d of %d records before the deadline" % (len(recs), count))
        if len(recs) > count:
            errors.append("saw %d records, expected %d" % (len(recs), count))
        if not errors and args.group:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return recs


def consume_summary(args, recs, errors, client):
    """The consume summary (README): `client` is the calling script's client_meta(...)."""
    parts, dup_errors = summarize(recs)
    out = {
        "count": len(recs),
        "partitions": parts,
        "errors": sorted(errors + dup_errors),
        "client": client,
    }
    if args.records:
        out["records"] = list_records(recs)
    return out


def cmd_consume(args):
    errors = []
    recs = consume_records(args, args.count, args.isolation, errors)
    return consume_summary(args, recs, errors, client_meta(isolation=args.isolation))


def cmd_share(args):
    """Reads the topic in a share group (KIP-932): sets the group's share.auto.offset.reset to
    earliest and its share.isolation.level, then polls until --count records were accepted and
    none came for --idle-ms, acknowledging each explicitly: ACCEPT, or RELEASE at its first
    delivery with --release (the group delivers it again). Reports each delivery with its count."""
    admin = AdminClient({**client_config(args), "bootstrap.servers": args.brokers, "log_level": QUIET})
    entries = [
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("share.isolation.level", args.isolation, incremental_operation=AlterConfigOpType.SET),
    ]
    resource = ConfigResource(ResourceType.GROUP, args.group, incremental_configs=entries)
    for f in admin.incremental_alter_configs([resource], request_timeout=10).values():
        f.result(timeout=15)
    consumer = ShareConsumer(
        {
            **client_config(args),
            "bootstrap.servers": args.brokers,
            "group.id": args.group,
            "share.acknowledgement.mode": "explicit",
            "check.crcs": True,
            "log_level": QUIET,
        }
    )
    errors, deliveries, accepted = [], [], 0
    deadline = time.monotonic() + args.timeout_ms / 1000
    last_at = time.monotonic()
    try:
        consumer.subscribe([args.topic])
        while time.monotonic() < deadline and not errors and (accepted < args.count or time.monotonic() - last_at < args.idle_ms / 1000):
            for msg in consumer.poll(0.2):
                if msg.error():
                    errors.append(str(msg.error()))
                    continue
                count = msg.delivery_count()
                deliveries.append(
                    {"partition": msg.partition(), "offset": msg.offset(), "key": text(msg.key()), "value": text(msg.value()), "deliveryCount": count}
                )
                again = args.release and count == 1
                consumer.acknowledge(msg, AcknowledgeType.RELEASE if again else AcknowledgeType.ACCEPT)
                if not again:
                    accepted += 1
                last_at = time.monotonic()
            consumer.commit_sync()
    finally:
        consumer.close()
    if accepted < args.count and not errors:
        errors.append("accepted %d of %d records before the deadline" % (accepted, args.count))
    deliveries.sort(key=lambda d: d["offset"])
    return {"records": deliveries, "errors": errors, "client": client_meta()}

class TailEvents:
    """The JSON events of a tail run (test/peers/README.md, "Tail readers"), one line each,
    flushed as printed. Also used by kp.py. Callbacks may come from a client's own threads."""

    def __init__(self, until_key):
        self.until_key = until_key.encode()
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.high = None
        self.caught_up = False
        self.records = 0

    def emit(self, event, **fields):
        with self.lock:
            print(json.dumps({"event": event, **fields}), flush=True)

    def error(self, message):
        self.emit("error", message=message)

    def ms(self):
        return int((time.monotonic() - self.started) * 1000)

    def begin(self, high):
        self.high = high
        self.emit("start", highWatermark=high)
        if high == 0:
            self.caught_up = True
            self.emit("caughtUp", offset=-1, records=0, ms=self.ms())

    def record(self, offset, key, value):
        """Prints the record (and caughtUp once it reaches the start's high watermark - 1);
        True when it has the until key."""
        self.records += 1
        self.emit("record", offset=offset, key=text(key), value=text(value))
        if not self.caught_up and offset >= self.high - 1:
            self.caught_up = True
            self.emit("caughtUp", offset=offset, records=self.records, ms=self.ms())
        return key == self.until_key

    def done(self, offset):
        self.emit("done", offset=offset)
        return 0

    def timeout(self):
        self.emit("timeout")
        return 1


FETCH_GREW = "Increasing max fetch bytes"


class LibrdkafkaLog(logging.Handler):
    """librdkafka's log lines (debug=fetch): its fetch-size growth as fetchGrew, errors as error."""

    def __init__(self, events):
        super().__init__(logging.DEBUG)
        self.events = events

    def emit(self, record):
        message = record.getMessage()
        if FETCH_GREW in message:
            self.events.emit("fetchGrew", message=message)
        elif record.levelno >= logging.ERROR:
            self.events.error(message)


def tail_logger(events):
    logger = logging.getLogger("ck-tail")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(LibrdkafkaLog(events))
    return logger


def tail_config(args, events):
    """What every tail consumer shares: debug=fetch (which also raises log_level to debug) with the
    log lines handed to the logger from poll(), and errors reported by error_cb."""
    return {
        **client_config(args),
        "bootstrap.servers": args.brokers,
        "check.crcs": True,
        "debug": "fetch",
        "error_cb": lambda err: events.error(str(err)),
    }


def cmd_tail(args):
    """Reads one partition from its start, prints caughtUp once the record at the start's high
    watermark - 1 arrived, then waits at the end until a record with --until-key (exit 0) or the
    deadline (exit 1). --mode assign reads without a group; group subscribes and commits what
    each poll brought; --share reads in a share group, accepting every record."""
    events = TailEvents(args.until_key)
    deadline = time.monotonic() + args.timeout_ms / 1000
    tp = TopicPartition(args.topic, args.partition)
    try:
        if args.share:
            return tail_share(args, events, deadline)
        group = args.group or "ck-tail-" + uuid.uuid4().hex[:12]
        conf = {
            **tail_config(args, events),
            # librdkafka wants a group id even to assign; an assigned reader never joins or commits it.
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": args.isolation,
        }
        consumer = Consumer(conf, logger=tail_logger(events))
    except confluent_kafka.KafkaException as e:
        events.error(str(e))
        return 1
    try:
        # ListOffsets LATEST at the consumer's isolation.level: the high watermark, or the last stable offset.
        _, high = consumer.get_watermark_offsets(tp, timeout=max(1.0, deadline - time.monotonic()))
        events.begin(high)
        if args.mode == "assign":
            consumer.assign([TopicPartition(args.topic, args.partition, confluent_kafka.OFFSET_BEGINNING)])
        else:
            consumer.subscribe([args.topic])
        while time.monotonic() < deadline:
            done, got = None, False
            for msg in consumer.consume(num_messages=500, timeout=min(0.5, max(0.01, deadline - time.monotonic()))):
                if msg.error():
                    if msg.error().code() != KafkaError._PARTITION_EOF:
                        events.error(str(msg.error()))
                    continue
                if msg.topic() != args.topic or msg.partition() != args.partition:
                    continue
                got = True
                if events.record(msg.offset(), msg.key(), msg.value()):
                    done = msg
                    break
            if args.mode == "group" and got:
                try:
                    consumer.commit(asynchronous=False)
                except confluent_kafka.KafkaException as e:
                    events.error("commit: %s" % e)
            if done is not None:
                return events.done(done.offset())
        return events.timeout()
    except confluent_kafka.KafkaException as e:
        events.error(str(e))
        return 1
    finally:
        consumer.close()


def tail_share(args, events, deadline):
    """The share-group tail: the same events; the high watermark comes from the admin client's
    ListOffsets (a share consumer has no positions nor watermarks)."""
    admin = AdminClient({**client_config(args), "bootstrap.servers": args.brokers, "log_level": QUIET})
    entries = [
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("share.isolation.level", args.isolation, incremental_operation=AlterConfigOpType.SET),
    ]
    resource = ConfigResource(ResourceType.GROUP, args.share, incremental_configs=entries)
    for f in admin.incremental_alter_configs([resource], request_timeout=10).values():
        f.result(timeout=15)
    tp = TopicPartition(args.topic, args.partition)
    level = IsolationLevel.READ_COMMITTED if args.isolation == "read_committed" else IsolationLevel.READ_UNCOMMITTED
    listed = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level, request_timeout=10)
    events.begin(listed[tp].result(timeout=15).offset)
    conf = {**tail_config(args, events), "group.id": args.share, "share.acknowledgement.mode": "explicit", "logger": tail_logger(events)}
    consumer = ShareConsumer(conf)
    try:
        consumer.subscribe([args.topic])
        while time.monotonic() < deadline:
            done = None
            for msg in consumer.poll(min(0.5, max(0.01, deadline - time.monotonic()))):
                if msg.error():
                    events.error(str(msg.error()))
                    continue
                consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
                if done is None and msg.topic() == args.topic and msg.partition() == args.partition and events.record(msg.offset(), msg.key(), msg.value()):
                    done = msg
            try:
                consumer.commit_sync()
            except confluent_kafka.KafkaException as e:
                events.error("acknowledging: %s" % e)
            if done is not None:
                return events.done(done.offset())
        return events.timeout()
    finally:
        consumer.close()


def cmd_txn(args):
    """Even-numbered transactions commit, odd ones abort (their values start with 'aborted-');
    a read_committed consumer must then see exactly the committed records."""
    deadline = time.monotonic() + args.timeout_ms / 1000
    if args.create_partitions > 0:
        create_topic(args)
    delivered = Delivered()
    producer = Producer(
        producer_config(args, **{"transactional.id": args.transactional_id or "ck-txn-" + uuid.uuid4().hex[:12]})
    )
    producer.init_transactions(10)
    committed = aborted = 0
    for t in range(args.transactions):
        producer.begin_transaction()
        for j in range(args.per_txn):
            i = args.start + t * args.per_txn + j
            key, value = gen_record(i, args.keys, args.value_size, 0)
            if t % 2 == 1:
                value = ABORTED_MARK + value
            producer.produce(args.topic, key=key, value=value, on_delivery=delivered)
            producer.poll(0)
        if t % 2 == 0:
            producer.commit_transaction(max(1.0, deadline - time.monotonic()))
            committed += args.per_txn
        else:
            # Deliver before aborting: otherwise the abort purges the records client-side and
            # the log never holds aborted data for read_committed to filter.
            flush(producer, deadline, delivered.errors)
            producer.abort_transaction(max(1.0, deadline - time.monotonic()))
            aborted += args.per_txn
    errors = delivered.errors
    flush(producer, deadline, errors)
    recs = consume_records(args, committed, "read_committed", errors) if committed else []
    leaked = sum(1 for r in recs if r[3] is not None and r[3].startswith(ABORTED_MARK))
    if leaked:
        errors.append("read_committed consumer saw %d aborted records" % leaked)
    out = consume_summary(args, recs, errors, client_meta(isolation="read_committed"))
    out["transactions"] = {"committed": committed, "aborted": aborted}
    return out


def described_configs(admin, topic, names):
    """What DescribeConfigs says of the topic's configs `names` (None for one it lacks)."""
    resource = ConfigResource(ResourceType.TOPIC, topic)
    described = admin.describe_configs([resource], request_timeout=10)[resource].result(timeout=15)
    return {n: described[n].value if n in described else None for n in names}


def cmd_configs(args):
    """Creates the topic with --topic-config, then sets --alter with IncrementalAlterConfigs;
    reports what DescribeConfigs says of those configs after each step."""
    create = dict(kv.split("=", 1) for kv in args.topic_config)
    alter = dict(kv.split("=", 1) for kv in args.alter)
    shown = sorted(set(create) | set(alter))
    admin = AdminClient({**client_config(args), "bootstrap.servers": args.brokers, "log_level": QUIET})
    for f in admin.create_topics([NewTopic(args.topic, num_partitions=args.partitions, config=create)], request_timeout=10).values():
        f.result(timeout=15)
    created = described_configs(admin, args.topic, shown)
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in alter.items()]
    resource = ConfigResource(ResourceType.TOPIC, args.topic, incremental_configs=entries)
    for f in admin.incremental_alter_configs([resource], request_timeout=10).values():
        f.result(timeout=15)
    altered = described_configs(admin, args.topic, shown)
    return {"api": "IncrementalAlterConfigs", "created": created, "altered": altered, "errors": [], "client": client_meta()}


def parser(prog="ck.py"):
    ap = argparse.ArgumentParser(prog=prog)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p):
        p.add_argument("--brokers", required=True)
        p.add_argument("--topic", required=True)
        p.add_argument("--timeout-ms", type=int, default=30000)
        p.add_argument("--group", default="")
        p.add_argument("--records", action="store_true", help="also list every consumed record")
        p.add_argument("--client-config", action="append", default=[], help="librdkafka property k=v (repeatable)")

    def producing(p):
        p.add_argument("--start", type=int, default=0)
        p.add_argument("--keys", type=int, default=10)
        p.add_argument("--value-size", type=int, default=32)
        p.add_argument("--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
        p.add_argument("--create-partitions", type=int, default=0)
        p.add_argument("--topic-config", action="append", default=[], help="k=v (repeatable)")

    def tailing(p):
        p.add_argument("--until-key", required=True, help="stop at the first record with this key")
        p.add_argument("--partition", type=int, default=0)
        p.add_argument("--mode", default="assign", choices=["assign", "group"], help="assign: no group; group: subscribe (--group, a fresh one by default) and commit")
        p.add_argument("--share", default="", help="read in this share group instead, accepting every record")
        p.add_argument("--isolation", default="read_uncommitted", choices=["read_uncommitted", "read_committed"])

    p = sub.add_parser("produce")
    common(p)
    producing(p)
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--tombstone-every", type=int, default=0)
    p.add_argument("--no-idempotence", action="store_true", help="turn idempotence off (a store without producer ids refuses it)")

    p = sub.add_parser("consume")
    common(p)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--isolation", default="read_uncommitted", choices=["read_uncommitted", "read_committed"])
    p.add_argument("--idle-ms", type=int, default=0, help="once a record has been read, also stop after this long without another")

    p = sub.add_parser("share")
    common(p)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--isolation", default="read_uncommitted", choices=["read_uncommitted", "read_committed"])
    p.add_argument("--release", action="store_true", help="release each record at its first delivery")
    p.add_argument("--idle-ms", type=int, default=0, help="once --count records were accepted, go on until none came for this long")

    p = sub.add_parser("tail")
    common(p)
    tailing(p)
    p.set_defaults(timeout_ms=60000)

    p = sub.add_parser("txn")
    common(p)
    producing(p)
    p.add_argument("--transactions", type=int, default=4)
    p.add_argument("--per-txn", type=int, default=10)
    p.add_argument("--transactional-id", default="")

    p = sub.add_parser("configs")
    common(p)
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--topic-config", action="append", default=[], help="k=v to create the topic with (repeatable)")
    p.add_argument("--alter", action="append", default=[], help="k=v to set afterwards (repeatable)")
    return ap


def main():
    args = parser().parse_args()
    if args.cmd == "tail":
        sys.exit(cmd_tail(args))
    try:
        out = {"produce": cmd_produce, "consume": cmd_consume, "share": cmd_share, "txn": cmd_txn, "configs": cmd_configs}[args.cmd](args)
    except confluent_kafka.KafkaException as e:
        out = {"errors": [str(e)], "client": client_meta()}
    print(json.dumps(out, sort_keys=True))
    if out["errors"]:
        print("ck.py: " + "; ".join(out["errors"]), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
