import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * An idempotent acks=all producer for fault tests: it sends the test bed's generated records
 * (test/peers/README.md: key-NNNNNN cycled over --keys, value-I-..., a tombstone every
 * --tombstone-every) at about --rate records a second for as long as the control file says
 * "run", and reports each outcome on stdout as it comes:
 *
 *   ack I PARTITION OFFSET        record I is acknowledged at that offset
 *   fail I RETRIABLE CLASS: MSG   record I failed for good (after the producer's own retries)
 *   paused NEXT                   "pause" seen and every record sent so far has an outcome
 *   stopped NEXT                  "stop" seen, every outcome reported; the process exits
 *
 * Retries are Kafka's defaults (unbounded within delivery.timeout.ms, 2 minutes), with quick
 * reconnects: the point is to ride out a proxy or upstream that goes away and comes back.
 */
public final class FaultProducer {
  public static void main(String[] args) throws Exception {
    Map<String, String> flags = PeerControl.flags(args);
    PeerControl control = new PeerControl(PeerControl.required(flags, "control"));
    String topic = PeerControl.required(flags, "topic");
    int keys = Integer.parseInt(flags.getOrDefault("keys", "100"));
    int tombstoneEvery = Integer.parseInt(flags.getOrDefault("tombstone-every", "0"));
    int valueSize = Integer.parseInt(flags.getOrDefault("value-size", "32"));
    int rate = Integer.parseInt(flags.getOrDefault("rate", "400"));
    long next = Long.parseLong(flags.getOrDefault("start", "0"));

    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, PeerControl.required(flags, "brokers"));
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    props.put(ProducerConfig.RECONNECT_BACKOFF_MS_CONFIG, "50");
    props.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "1000");
    props.put(ProducerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "1000");
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());

    final int tickMs = 20;
    final int perTick = Math.max(1, rate * tickMs / 1000);
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
      boolean pausedReported = false;
      for (;;) {
        String wish = control.wish();
        if (wish.equals("stop")) break;
        if (wish.equals("pause")) {
          if (!pausedReported) {
            producer.flush();
            control.emit("paused " + next);
            pausedReported = true;
          }
          Thread.sleep(tickMs);
          continue;
        }
        pausedReported = false;
        for (int j = 0; j < perTick; j++, next++) {
          final long i = next;
          String key = String.format("key-%06d", i % keys);
          byte[] value = tombstoneEvery > 0 && (i + 1) % tombstoneEvery == 0 ? null : value(i, valueSize);
          producer.send(new ProducerRecord<>(topic, key.getBytes(StandardCharsets.UTF_8), value), (meta, err) -> {
            if (err == null) control.emit("ack " + i + " " + meta.partition() + " " + meta.offset());
            else control.emit("fail " + i + " " + PeerControl.describe(err));
          });
        }
        Thread.sleep(tickMs);
      }
      producer.flush();
      control.emit("stopped " + next);
    }
  }

  /** The test bed's value of record i: "value-I-" then 'a' + (i + j) % 26 per byte position j. */
  static byte[] value(long i, int size) {
    byte[] prefix = ("value-" + i + "-").getBytes(StandardCharsets.UTF_8);
    byte[] v = new byte[Math.max(prefix.length, size)];
    System.arraycopy(prefix, 0, v, 0, prefix.length);
    for (int j = prefix.length; j < size; j++) v[j] = (byte) ('a' + (i + j) % 26);
    return java.util.Arrays.copyOf(v, size);
  }
}
