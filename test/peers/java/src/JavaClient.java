import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.internals.AppInfoParser;

/**
 * Drives Java's kafka-clients for the client matrix (test/integration/client-matrix.test.ts).
 * One JVM serves a whole run: it reads one JSON request per stdin line and answers each, in
 * order, with one JSON line on stdout ({"error": "..."} when the request failed); it exits at the
 * end of its input. With a file argument it reads the requests from that file instead (a peer
 * started in the background has no stdin). Keys and values are UTF-8 text, null for null. Every request has "op" and,
 * but for "version", "bootstrap" and "topic":
 *
 *   version                                      -> {"kafkaClients"}
 *   produce {records: [{key, value}], keylessValue, idempotence?}
 *       -> {"partitions", "offsets", "keyless": the refusal of the keyless record, or null};
 *          idempotence false sets enable.idempotence=false (absent: the client's default)
 *   group   {group, count, timeoutMs}            -> {"records"}, read in the group, then committed
 *   txn     {transactionalId, transactions: [{commit, records}], expected, idleMs, timeoutMs}
 *       -> what "read" answers, at read_committed
 *   configs {partitions, create: {k: v}, alter: {k: v}} -> {"api", "created": {k: v}, "altered": {k: v}}
 *   read    {isolation?, expected, idleMs, timeoutMs} -> {"records", "position", "endOffset"}
 *   share   {group, isolation?, release?, members?, leave?, expected, idleMs, timeoutMs}
 *       -> {"records": each delivery, with its "deliveryCount" and "member", "startOffset", "lag"}:
 *          read in a share group (KIP-932) from the earliest offset
 *   shareOffsets {group}                         -> {"startOffset", "lag"} of partition 0
 *   tail    {partition?, mode?: assign|group, group?, share?, isolation?, untilKey, timeoutMs}
 *       -> JSON events, one line each as they happen (test/peers/README.md, "Tail readers"); its
 *          answer is the last of them, {"event": "done"} or {"event": "timeout"}
 *
 * The JVM exits 1 at the end of its input when a tail timed out or failed, 0 otherwise.
 */
public final class JavaClient {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);
  /** Flushed at every line: a tail's events must be out as they happen. */
  private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);
  private static boolean tailFailed;

  public static void main(String[] args) throws Exception {
    BufferedReader in = args.length > 0
        ? Files.newBufferedReader(Path.of(args[0]), StandardCharsets.UTF_8)
        : new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isBlank()) continue;
      ObjectNode answer;
      boolean tail = false;
      try {
        JsonNode req = JSON.readTree(line);
        tail = req.path("op").asText().equals("tail");
        answer = handle(req);
      } catch (Exception e) {
        answer = JSON.createObjectNode();
        answer.put("error", describe(e));
      }
      if (tail && !answer.path("event").asText().equals("done")) tailFailed = true;
      OUT.println(JSON.writeValueAsString(answer));
    }
    if (tailFailed) System.exit(1);
  }

  private static ObjectNode handle(JsonNode req) throws Exception {
    String op = req.path("op").asText();
    return switch (op) {
      case "version" -> JSON.createObjectNode().put("kafkaClients", AppInfoParser.getVersion());
      case "produce" -> produce(req);
      case "group" -> group(req);
      case "txn" -> txn(req);
      case "configs" -> configs(req);
      case "read" -> read(req, req.path("isolation").asText("read_uncommitted"));
      case "share" -> share(req);
      case "shareOffsets" -> shareOffsets(req);
      case "tail" -> req.path("share").asText("").isEmpty() ? tail(req) : tailShare(req);
      default -> throw new IllegalArgumentException("unknown op " + op + " (version, produce, group, txn, configs, read, share, shareOffsets, tail)");
    };
  }

  private static Properties common(JsonNode req) {
    Properties p = new Properties();
    p.put("bootstrap.servers", req.path("bootstrap").asText());
    p.put("client.id", "kcompact-matrix-java");
    return p;
  }

  private static Properties producerProps(JsonNode req) {
    Properties p = common(req);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    return p;
  }

  private static Properties consumerProps(JsonNode req, String isolation) {
    Properties p = common(req);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    return p;
  }

  private static ObjectNode produce(JsonNode req) throws Exception {
    String topic = req.path("topic").asText();
    ObjectNode answer = JSON.createObjectNode();
    ArrayNode partitions = answer.putArray("partitions");
    ArrayNode offsets = answer.putArray("offsets");
    Properties p = producerProps(req);
    // For a store without producer ids; acks=all stays, and retries stay the client's default.
    if (req.has("idempotence")) p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, String.valueOf(req.get("idempotence").asBoolean()));
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      List<Future<RecordMetadata>> sent = new ArrayList<>();
      for (JsonNode r : req.path("records")) {
        sent.add(producer.send(new ProducerRecord<>(topic, bytes(r.get("key")), bytes(r.get("value")))));
      }
      for (Future<RecordMetadata> f : sent) {
        RecordMetadata m = f.get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        partitions.add(m.partition());
        offsets.add(m.offset());
      }
    }
    // Its own producer: a refused record fails its whole batch, which must not hold the keyed ones.
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      producer.send(new ProducerRecord<>(topic, null, bytes(req.get("keylessValue")))).get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      answer.putNull("keyless");
    } catch (ExecutionException e) {
      answer.put("keyless", describe(e.getCause()));
    }
    return answer;
  }

  private static ObjectNode group(JsonNode req) {
    String topic = req.path("topic").asText();
    Properties p = consumerProps(req, "read_uncommitted");
    p.put(ConsumerConfig.GROUP_ID_CONFIG, req.path("group").asText());
    ObjectNode answer = JSON.createObjectNode();
    ArrayNode records = answer.putArray("records");
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
      consumer.subscribe(List.of(topic));
      long deadline = System.currentTimeMillis() + req.path("timeoutMs").asLong(30_000);
      int count = req.path("count").asInt();
      while (records.size() < count && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) records.add(view(r));
      }
      consumer.commitSync(CALL_TIMEOUT);
    }
    return answer;
  }

  private static ObjectNode txn(JsonNode req) throws Exception {
    String topic = req.path("topic").asText();
    Properties p = producerProps(req);
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, req.path("transactionalId").asText());
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      producer.initTransactions();
      for (JsonNode t : req.path("transactions")) {
        producer.beginTransaction();
        for (JsonNode r : t.path("records")) producer.send(new ProducerRecord<>(topic, bytes(r.get("key")), bytes(r.get("value"))));
        // Delivered before the abort too, so the log really holds the aborted records.
        producer.flush();
        if (t.path("commit").asBoolean()) producer.commitTransaction();
        else producer.abortTransaction();
      }
    }
    return read(req, "read_committed");
  }

  private static ObjectNode configs(JsonNode req) throws Exception {
    String topic = req.path("topic").asText();
    ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    Map<String, String> create = strings(req.path("create"));
    Map<String, String> alter = strings(req.path("alter"));
    Set<String> shown = new TreeSet<>(create.keySet());
    shown.addAll(alter.keySet());
    ObjectNode answer = JSON.createObjectNode();
    answer.put("api", "IncrementalAlterConfigs");
    try (Admin admin = Admin.create(common(req))) {
      NewTopic created = new NewTopic(topic, Optional.of(req.path("partitions").asInt(1)), Optional.empty()).configs(create);
      admin.createTopics(List.of(created)).all().get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      answer.set("created", describeConfigs(admin, resource, shown));
      Collection<AlterConfigOp> ops = new ArrayList<>();
      for (Map.Entry<String, String> e : alter.entrySet()) ops.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue()), AlterConfigOp.OpType.SET));
      admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      answer.set("altered", describeConfigs(admin, resource, shown));
    }
    return answer;
  }

  private static ObjectNode describeConfigs(Admin admin, ConfigResource resource, Set<String> names) throws Exception {
    Config config = admin.describeConfigs(List.of(resource)).all().get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).get(resource);
    ObjectNode out = JSON.createObjectNode();
    for (String name : names) {
      ConfigEntry e = config.get(name);
      if (e == null) out.putNull(name);
      else out.put(name, e.value());
    }
    return out;
  }

  /**
   * Reads partition 0 from offset 0 without a group until `expected` records are in and the
   * position has reached the end offset, then polls on for idleMs (more records are an error for
   * the caller to see).
   */
  private static ObjectNode read(JsonNode req, String isolation) {
    TopicPartition tp = new TopicPartition(req.path("topic").asText(), 0);
    ObjectNode answer = JSON.createObjectNode();
    ArrayNode records = answer.putArray("records");
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(req, isolation))) {
      consumer.assign(List.of(tp));
      consumer.seek(tp, 0);
      long end = consumer.endOffsets(List.of(tp), CALL_TIMEOUT).get(tp);
      long deadline = System.currentTimeMillis() + req.path("timeoutMs").asLong(30_000);
      int expected = req.path("expected").asInt();
      while ((records.size() < expected || consumer.position(tp) < end) && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) records.add(view(r));
      }
      long idleUntil = System.currentTimeMillis() + req.path("idleMs").asLong(0);
      while (System.currentTimeMillis() < idleUntil) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) records.add(view(r));
      }
      answer.put("position", consumer.position(tp));
      answer.put("endOffset", end);
    }
    return answer;
  }

  /**
   * Reads the topic in a share group: sets the group's share.auto.offset.reset to earliest and its
   * share.isolation.level, then `members` consumers of the group (1 by default, each on its own
   * thread) poll until together they accepted `expected` records and none came for idleMs,
   * acknowledging each record explicitly: ACCEPT, or RELEASE at its first delivery when "release"
   * is true (the group delivers it again). Then they close, and the group's start offset and lag
   * of partition 0 are listed. Each delivery names its member. With "leave", a member of its own
   * (numbered `members`) reads first, alone: it leaves the group (closes) as soon as a poll gave
   * it records, acknowledging none of them, so the others must get them again.
   */
  private static ObjectNode share(JsonNode req) throws Exception {
    String topic = req.path("topic").asText();
    String group = req.path("group").asText();
    boolean release = req.path("release").asBoolean(false);
    int members = req.path("members").asInt(1);
    ObjectNode answer = JSON.createObjectNode();
    ArrayNode records = answer.putArray("records");
    try (Admin admin = Admin.create(common(req))) {
      ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
      Collection<AlterConfigOp> ops = List.of(
          new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET),
          new AlterConfigOp(new ConfigEntry("share.isolation.level", req.path("isolation").asText("read_uncommitted")), AlterConfigOp.OpType.SET));
      admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      long deadline = System.currentTimeMillis() + req.path("timeoutMs").asLong(30_000);
      long idleMs = req.path("idleMs").asLong(0);
      int expected = req.path("expected").asInt();
      AtomicInteger accepted = new AtomicInteger();
      AtomicLong lastRecord = new AtomicLong(System.currentTimeMillis());
      List<Thread> threads = new ArrayList<>();
      List<Throwable> failures = new ArrayList<>();
      if (req.path("leave").asBoolean(false)) {
        Properties p = shareProps(req, group, members);
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(p)) {
          consumer.subscribe(List.of(topic));
          int got = 0;
          while (got == 0 && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
              records.add(view(r).put("deliveryCount", r.deliveryCount().orElse((short) 0)).put("member", members));
              got++;
            }
          }
          if (got == 0) throw new TimeoutException("the leaving member got no records before the deadline");
        }
      }
      for (int m = 0; m < members; m++) {
        int member = m;
        Thread thread = new Thread(() -> {
          Properties p = shareProps(req, group, member);
          try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            while (System.currentTimeMillis() < deadline && (accepted.get() < expected || System.currentTimeMillis() - lastRecord.get() < idleMs)) {
              for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                short count = r.deliveryCount().orElse((short) 0);
                boolean again = release && count == 1;
                consumer.acknowledge(r, again ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT);
                synchronized (records) {
                  records.add(view(r).put("deliveryCount", count).put("member", member));
                }
                if (!again) accepted.incrementAndGet();
                lastRecord.set(System.currentTimeMillis());
              }
              consumer.commitSync(CALL_TIMEOUT);
            }
          } catch (Throwable e) {
            synchronized (failures) {
              failures.add(e);
            }
          }
        });
        thread.start();
        threads.add(thread);
      }
      for (Thread thread : threads) thread.join();
      if (!failures.isEmpty()) throw new ExecutionException(failures.get(0));
      answer.setAll(shareOffsets(admin, group, topic));
    }
    return answer;
  }

  /** A share consumer of the group that acknowledges each record itself. */
  private static Properties shareProps(JsonNode req, String group, int member) {
    Properties p = common(req);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    p.put(ConsumerConfig.CLIENT_ID_CONFIG, "kcompact-matrix-java-share-" + member);
    p.put("share.acknowledgement.mode", "explicit");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    return p;
  }

  private static ObjectNode shareOffsets(JsonNode req) throws Exception {
    try (Admin admin = Admin.create(common(req))) {
      return shareOffsets(admin, req.path("group").asText(), req.path("topic").asText());
    }
  }

  /** The share group's start offset and lag of partition 0 (-1 where there are none). */
  private static ObjectNode shareOffsets(Admin admin, String group, String topic) throws Exception {
    SharePartitionOffsetInfo info = admin.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
        .partitionsToOffsetInfo(group).get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
        .get(new TopicPartition(topic, 0));
    ObjectNode answer = JSON.createObjectNode();
    answer.put("startOffset", info == null ? -1 : info.startOffset());
    answer.put("lag", info == null ? -1 : info.lag().orElse(-1L));
    return answer;
  }

  /** The events of one tail run, printed as they happen; done() and timeout() give the answer. */
  private static final class Tail {
    private final String untilKey;
    private final long started = System.nanoTime();
    private long high;
    private boolean caughtUp;
    private int records;

    Tail(String untilKey) {
      this.untilKey = untilKey;
    }

    private static ObjectNode event(String name) {
      return JSON.createObjectNode().put("event", name);
    }

    private static void emit(ObjectNode event) {
      try {
        OUT.println(JSON.writeValueAsString(event));
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }

    private long ms() {
      return (System.nanoTime() - started) / 1_000_000;
    }

    void begin(long highWatermark) {
      high = highWatermark;
      emit(event("start").put("highWatermark", high));
      if (high == 0) {
        caughtUp = true;
        emit(event("caughtUp").put("offset", -1).put("records", 0).put("ms", ms()));
      }
    }

    void error(String message) {
      emit(event("error").put("message", message));
    }

    /** Prints the record (and caughtUp once it reaches the start's high watermark - 1); true when it has the until key. */
    boolean record(ConsumerRecord<byte[], byte[]> r) {
      records++;
      emit(event("record").put("offset", r.offset()).put("key", text(r.key())).put("value", text(r.value())));
      if (!caughtUp && r.offset() >= high - 1) {
        caughtUp = true;
        emit(event("caughtUp").put("offset", r.offset()).put("records", records).put("ms", ms()));
      }
      return untilKey.equals(text(r.key()));
    }

    ObjectNode done(long offset) {
      return event("done").put("offset", offset);
    }

    ObjectNode timeout() {
      return event("timeout");
    }
  }

  /** What is left of a tail's deadline, for the calls it makes before it polls. */
  private static Duration untilDeadline(long deadline) {
    return Duration.ofMillis(Math.max(1, deadline - System.currentTimeMillis()));
  }

  /**
   * The reader of a soak test (issue 33): reads one partition from its start (assigned, or
   * subscribed in a group that commits after each poll that brought records), prints caughtUp once
   * the record at the start's end offset - 1 arrived, then waits at the end until a record with
   * the until key or the deadline. Exceptions from poll and commit are error events.
   */
  private static ObjectNode tail(JsonNode req) throws Exception {
    TopicPartition tp = new TopicPartition(req.path("topic").asText(), req.path("partition").asInt(0));
    boolean group = req.path("mode").asText("assign").equals("group");
    long deadline = System.currentTimeMillis() + req.path("timeoutMs").asLong(60_000);
    Tail t = new Tail(req.path("untilKey").asText());
    Properties p = consumerProps(req, req.path("isolation").asText("read_uncommitted"));
    if (group) p.put(ConsumerConfig.GROUP_ID_CONFIG, req.path("group").asText("java-tail-" + UUID.randomUUID()));
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
      // ListOffsets LATEST at the consumer's isolation.level: the high watermark, or the last stable offset.
      t.begin(consumer.endOffsets(List.of(tp), untilDeadline(deadline)).get(tp));
      if (group) {
        consumer.subscribe(List.of(tp.topic()));
      } else {
        consumer.assign(List.of(tp));
        consumer.seekToBeginning(List.of(tp));
      }
      while (System.currentTimeMillis() < deadline) {
        ConsumerRecords<byte[], byte[]> polled;
        try {
          polled = consumer.poll(Duration.ofMillis(Math.max(1, Math.min(500, deadline - System.currentTimeMillis()))));
        } catch (Exception e) {
          t.error(describe(e));
          Thread.sleep(100);
          continue;
        }
        ConsumerRecord<byte[], byte[]> done = null;
        for (ConsumerRecord<byte[], byte[]> r : polled.records(tp)) {
          if (t.record(r)) {
            done = r;
            break;
          }
        }
        if (group && !polled.records(tp).isEmpty()) {
          try {
            consumer.commitSync(CALL_TIMEOUT);
          } catch (Exception e) {
            t.error("commit: " + describe(e));
          }
        }
        if (done != null) return t.done(done.offset());
      }
      return t.timeout();
    }
  }

  /**
   * tail in a share group: the group's share.auto.offset.reset is set to earliest and its
   * share.isolation.level to the isolation; the end offset comes from the admin client (a share
   * consumer has no positions); every record is accepted, committed after each poll.
   */
  private static ObjectNode tailShare(JsonNode req) throws Exception {
    TopicPartition tp = new TopicPartition(req.path("topic").asText(), req.path("partition").asInt(0));
    String group = req.path("share").asText();
    String isolation = req.path("isolation").asText("read_uncommitted");
    long deadline = System.currentTimeMillis() + req.path("timeoutMs").asLong(60_000);
    Tail t = new Tail(req.path("untilKey").asText());
    try (Admin admin = Admin.create(common(req))) {
      ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
      Collection<AlterConfigOp> ops = List.of(
          new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET),
          new AlterConfigOp(new ConfigEntry("share.isolation.level", isolation), AlterConfigOp.OpType.SET));
      admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      IsolationLevel level = isolation.equals("read_committed") ? IsolationLevel.READ_COMMITTED : IsolationLevel.READ_UNCOMMITTED;
      t.begin(admin.listOffsets(Map.of(tp, OffsetSpec.latest()), new ListOffsetsOptions(level)).partitionResult(tp)
          .get(untilDeadline(deadline).toMillis(), TimeUnit.MILLISECONDS).offset());
    }
    try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(shareProps(req, group, 0))) {
      consumer.subscribe(List.of(tp.topic()));
      while (System.currentTimeMillis() < deadline) {
        ConsumerRecords<byte[], byte[]> polled;
        try {
          polled = consumer.poll(Duration.ofMillis(Math.max(1, Math.min(500, deadline - System.currentTimeMillis()))));
        } catch (Exception e) {
          t.error(describe(e));
          Thread.sleep(100);
          continue;
        }
        ConsumerRecord<byte[], byte[]> done = null;
        for (ConsumerRecord<byte[], byte[]> r : polled) {
          consumer.acknowledge(r, AcknowledgeType.ACCEPT);
          if (done == null && r.topic().equals(tp.topic()) && r.partition() == tp.partition() && t.record(r)) done = r;
        }
        try {
          for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : consumer.commitSync(CALL_TIMEOUT).entrySet()) {
            if (e.getValue().isPresent()) t.error("acknowledging " + e.getKey() + ": " + describe(e.getValue().get()));
          }
        } catch (Exception e) {
          t.error("acknowledging: " + describe(e));
        }
        if (done != null) return t.done(done.offset());
      }
      return t.timeout();
    }
  }

  private static ObjectNode view(ConsumerRecord<byte[], byte[]> r) {
    ObjectNode rec = JSON.createObjectNode();
    rec.put("partition", r.partition());
    rec.put("offset", r.offset());
    rec.put("key", text(r.key()));
    rec.put("value", text(r.value()));
    return rec;
  }

  private static Map<String, String> strings(JsonNode object) {
    Map<String, String> out = new HashMap<>();
    for (Map.Entry<String, JsonNode> e : object.properties()) out.put(e.getKey(), e.getValue().asText());
    return out;
  }

  private static byte[] bytes(JsonNode text) {
    return text == null || text.isNull() ? null : text.asText().getBytes(StandardCharsets.UTF_8);
  }

  private static String text(byte[] bytes) {
    return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
  }

  private static String describe(Throwable e) {
    Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
    return cause.getClass().getSimpleName() + ": " + String.valueOf(cause.getMessage()).replace('\n', ' ');
  }
}
