"""Drives kafka-python (a pure-Python client, no librdkafka) for tests, with ck.py's subcommands,
flags, generated records and JSON summary (test/peers/README.md); exits 1 when the summary holds
errors. --client-config is ck.py's librdkafka pass-through and is refused here.

  kp.py produce --brokers B --topic T [--count N --start I --keys K --value-size S
                --tombstone-every M --compression C --create-partitions P --topic-config k=v
                --no-idempotence]
  kp.py consume --brokers B --topic T --count N [--group G --isolation L --records]
  kp.py txn     --brokers B --topic T [--transactions N --per-txn M --transactional-id X ...]
  kp.py configs --brokers B --topic T [--partitions P] --topic-config k=v ... --alter k=v ...
  kp.py tail    --brokers B --topic T --until-key K [--partition P --mode assign|group --group G
                --isolation L --timeout-ms D]  (ck.py tail's JSON events; no --share)
"""

import json
import logging
import sys
import time
import uuid

import kafka
import kafka.errors
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient

from ck import ABORTED_MARK, TailEvents, consume_summary, gen_record, idle_passed, parser

CLIENT_ID = "kcompact-kp"
# kafka-python rejoins its group once right after its first join (its metadata snapshot changes
# as the join completes): a commit in between is refused with one of these. It is the group's own
# churn, not trouble with what was read, so tail commits again after the next poll.
REBALANCING = (kafka.errors.RebalanceInProgressError, kafka.errors.CommitFailedError, kafka.errors.IllegalGenerationError)


def client_meta(**extra):
    return dict(name="kafka-python", version=kafka.__version__, **extra)


def remaining_ms(deadline):
    return max(1, int((deadline - time.monotonic()) * 1000))


def admin_client(args):
    return KafkaAdminClient(bootstrap_servers=args.brokers, client_id=CLIENT_ID, request_timeout_ms=15000)


def config_pairs(kvs):
    return dict(kv.split("=", 1) for kv in kvs)


def create_topic(args, partitions, configs):
    admin = admin_client(args)
    try:
        admin.create_topics({args.topic: {"num_partitions": partitions, "configs": configs}}, timeout_ms=10000, raise_errors=False)
    finally:
        admin.close()


def producer(args, **extra):
    return KafkaProducer(
        bootstrap_servers=args.brokers,
        client_id=CLIENT_ID,
        acks="all",
        compression_type=None if args.compression == "none" else args.compression,
        linger_ms=5,
        **extra,
    )


def delivered(futures, deadline, errors):
    """The produce summary's partitions from the records' futures; failures go to errors."""
    parts = {}
    for f in futures:
        try:
            md = f.get(timeout=max(0.1, deadline - time.monotonic()))
        except kafka.errors.KafkaError as e:
            errors.append("%s: %s" % (type(e).__name__, e))
            continue
        p = parts.setdefault(str(md.partition), {"count": 0, "firstOffset": md.offset, "lastOffset": md.offset})
        p["count"] += 1
        p["firstOffset"] = min(p["firstOffset"], md.offset)
        p["lastOffset"] = max(p["lastOffset"], md.offset)
    return parts


def cmd_produce(args):
    deadline = time.monotonic() + args.timeout_ms / 1000
    if args.create_partitions > 0:
        create_topic(args, args.create_partitions, config_pairs(args.topic_config))
    p = producer(args, **({"enable_idempotence": False} if args.no_idempotence else {}))
    futures = []
    for i in range(args.start, args.start + args.count):
        key, value = gen_record(i, args.keys, args.value_size, args.tombstone_every)
        futures.append(p.send(args.topic, key=key, value=value))
    p.flush(timeout=max(0.1, deadline - time.monotonic()))
    errors = []
    parts = delivered(futures, deadline, errors)
    p.close()
    return {
        "count": sum(x["count"] for x in parts.values()),
        "partitions": parts,
        "errors": sorted(errors),
        "client": client_meta(compression=args.compression),
    }


def consume_records(args, count, isolation, errors):
    """Subscribes in a consumer group (a fresh one unless --group) from the earliest offset until
    `count` records or the deadline; with --group, commits what it read."""
    consumer = KafkaConsumer(
        bootstrap_servers=args.brokers,
        client_id=CLIENT_ID,
        group_id=args.group or "kp-" + uuid.uuid4().hex[:12],
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        isolation_level=isolation,
        check_crcs=True,
    )
    recs = []
    deadline = time.monotonic() + args.timeout_ms / 1000
    last_at = None
    try:
        consumer.subscribe([args.topic])
        while len(recs) < count and time.monotonic() < deadline and not idle_passed(args, last_at):
            for tp, msgs in consumer.poll(timeout_ms=200).items():
                recs.extend((tp.partition, m.offset, m.key, m.value) for m in msgs)
                last_at = time.monotonic()
        if len(recs) < count:
            errors.append("saw %d of %d records before the deadline" % (len(recs), count))
        if len(recs) > count:
            errors.append("saw %d records, expected %d" % (len(recs), count))
        if not errors and args.group:
            consumer.commit(timeout_ms=remaining_ms(deadline + 10))
    finally:
        consumer.close(autocommit=False)
    return recs


def cmd_consume(args):
    errors = []
    recs = consume_records(args, args.count, args.isolation, errors)
    return consume_summary(args, recs, errors, client_meta(isolation=args.isolation))


def cmd_txn(args):
    """As ck.py txn: even-numbered transactions commit, odd ones abort (values start with
    'aborted-', delivered before the abort), then a read_committed consume of the committed."""
    deadline = time.monotonic() + args.timeout_ms / 1000
    if args.create_partitions > 0:
        create_topic(args, args.create_partitions, config_pairs(args.topic_config))
    p = producer(args, transactional_id=args.transactional_id or "kp-txn-" + uuid.uuid4().hex[:12])
    p.init_transactions()
    errors, futures = [], []
    committed = aborted = 0
    for t in range(args.transactions):
        p.begin_transaction()
        for j in range(args.per_txn):
            i = args.start + t * args.per_txn + j
            key, value = gen_record(i, args.keys, args.value_size, 0)
            if t % 2 == 1:
                value = ABORTED_MARK + value
            futures.append(p.send(args.topic, key=key, value=value))
        if t % 2 == 0:
            p.commit_transaction()
            committed += args.per_txn
        else:
            p.flush(timeout=max(0.1, deadline - time.monotonic()))
            p.abort_transaction()
            aborted += args.per_txn
    delivered(futures, deadline, errors)
    p.close()
    recs = consume_records(args, committed, "read_committed", errors) if committed else []
    leaked = sum(1 for r in recs if r[3] is not None and r[3].startswith(ABORTED_MARK))
    if leaked:
        errors.append("read_committed consumer saw %d aborted records" % leaked)
    out = consume_summary(args, recs, errors, client_meta(isolation="read_committed"))
    out["transactions"] = {"committed": committed, "aborted": aborted}
    return out


def described_configs(admin, topic, names):
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    described = admin.describe_configs([resource], config_filter="all")["topic"][topic]
    return {n: described[n]["value"] if n in described else None for n in names}


def cmd_configs(args):
    """Creates the topic with --topic-config, then sets --alter with IncrementalAlterConfigs;
    reports what DescribeConfigs says of those configs after each step."""
    create = config_pairs(args.topic_config)
    alter = config_pairs(args.alter)
    shown = sorted(set(create) | set(alter))
    admin = admin_client(args)
    try:
        admin.create_topics({args.topic: {"num_partitions": args.partitions, "configs": create}}, timeout_ms=10000)
        created = described_configs(admin, args.topic, shown)
        resource = ConfigResource(ConfigResourceType.TOPIC, args.topic, {k: (AlterConfigOp.SET, v) for k, v in alter.items()})
        result = admin.alter_configs([resource], incremental=True)["topic"][args.topic]
        errors = [] if result == "OK" else ["IncrementalAlterConfigs: %s" % result]
        altered = described_configs(admin, args.topic, shown)
    finally:
        admin.close()
    return {"api": "IncrementalAlterConfigs", "created": created, "altered": altered, "errors": errors, "client": client_meta()}


class LoggedErrors(logging.Handler):
    """kafka-python reports most fetch and connection trouble only by logging it: errors become events."""

    def __init__(self, events):
        super().__init__(logging.ERROR)
        self.events = events

    def emit(self, record):
        self.events.error("%s: %s" % (record.name, record.getMessage()))


def cmd_tail(args):
    """ck.py tail through kafka-python: reads one partition from its start, prints caughtUp once
    the record at the start's high watermark - 1 arrived, then waits at the end until a record with
    --until-key (exit 0) or the deadline (exit 1). --mode group subscribes and commits after each
    poll that brought records (again after the next poll when the group was rebalancing, see
    REBALANCING); exceptions from poll and logged errors are error events."""
    events = TailEvents(args.until_key)
    if args.share:
        events.error("kafka-python has no share consumer (KIP-932)")
        return 2
    logged = LoggedErrors(events)
    logging.getLogger().addHandler(logged)
    deadline = time.monotonic() + args.timeout_ms / 1000
    tp = TopicPartition(args.topic, args.partition)
    group = None if args.mode == "assign" else args.group or "kp-tail-" + uuid.uuid4().hex[:12]
    try:
        consumer = KafkaConsumer(
            bootstrap_servers=args.brokers,
            client_id=CLIENT_ID,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            isolation_level=args.isolation,
            check_crcs=True,
            # The session timeout every other client of the bed has (Kafka's since KIP-735):
            # kafka-python's 10 s lets a busy machine evict a reader that waits at the end.
            session_timeout_ms=45000,
        )
    except kafka.errors.KafkaError as e:
        events.error("%s: %s" % (type(e).__name__, e))
        return 1
    try:
        # ListOffsets LATEST at the consumer's isolation_level: the high watermark, or the last stable offset.
        events.begin(consumer.end_offsets([tp], timeout_ms=remaining_ms(deadline))[tp])
        if group is None:
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
        else:
            consumer.subscribe([args.topic])
        uncommitted = False
        while time.monotonic() < deadline:
            try:
                polled = consumer.poll(timeout_ms=min(500, remaining_ms(deadline)))
            except Exception as e:  # whatever poll raises is the client reporting an error
                events.error("%s: %s" % (type(e).__name__, e))
                time.sleep(0.1)
                continue
            done, got = None, False
            for m in polled.get(tp, []):
                got = True
                if events.record(m.offset, m.key, m.value):
                    done = m
                    break
            if group is not None and (got or uncommitted):
                try:
                    consumer.commit(timeout_ms=remaining_ms(deadline))
                    uncommitted = False
                except REBALANCING as e:
                    logging.warning("commit refused while the group rebalances; committing after the next poll: %s: %s", type(e).__name__, e)
                    uncommitted = True
                except Exception as e:
                    events.error("commit: %s: %s" % (type(e).__name__, e))
            if done is not None:
                return events.done(done.offset)
        return events.timeout()
    except kafka.errors.KafkaError as e:
        events.error("%s: %s" % (type(e).__name__, e))
        return 1
    finally:
        # What closing logs comes after the read and goes to stderr only: a LeaveGroup answered
        # UnknownMemberId (the coordinator had already dropped the member) is no read error.
        logging.getLogger().removeHandler(logged)
        consumer.close(autocommit=False)


def main():
    args = parser(prog="kp.py").parse_args()
    if args.client_config:
        print("kp.py: --client-config takes librdkafka properties (ck.py); kafka-python has its own", file=sys.stderr)
        sys.exit(2)
    # kafka-python logs through the logging module: warnings and worse only, on stderr.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if args.cmd == "tail":
        sys.exit(cmd_tail(args))
    try:
        out = {"produce": cmd_produce, "consume": cmd_consume, "txn": cmd_txn, "configs": cmd_configs}[args.cmd](args)
    except kafka.errors.KafkaError as e:
        out = {"errors": ["%s: %s" % (type(e).__name__, e)], "client": client_meta()}
    print(json.dumps(out, sort_keys=True))
    if out["errors"]:
        print("kp.py: " + "; ".join(out["errors"]), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
