import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A consumer-group member for fault tests: it subscribes to --topic in --group, polls and
 * commits (async) until the control file says "stop", and reports on stdout:
 *
 *   rec PARTITION OFFSET KEY VALUE-INDEX|-    a record (the index I of value-I-..., - for a tombstone)
 *   assigned P,P,...                          the partitions the group gave it
 *   error RETRIABLE CLASS: MSG                poll or commit threw (it polls on unless fatal)
 *   commit-error RETRIABLE CLASS: MSG         an async commit failed
 *   closed                                    "stop" seen, the consumer closed
 */
public final class FaultConsumer {
  public static void main(String[] args) throws Exception {
    Map<String, String> flags = PeerControl.flags(args);
    PeerControl control = new PeerControl(PeerControl.required(flags, "control"));
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, PeerControl.required(flags, "brokers"));
    props.put(ConsumerConfig.GROUP_ID_CONFIG, PeerControl.required(flags, "group"));
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.RECONNECT_BACKOFF_MS_CONFIG, "50");
    props.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "1000");
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
      consumer.subscribe(List.of(PeerControl.required(flags, "topic")), new ConsumerRebalanceListener() {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {}

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
          control.emit("assigned " + String.join(",", partitions.stream().map(tp -> String.valueOf(tp.partition())).sorted().toList()));
        }
      });
      while (!control.wish().equals("stop")) {
        try {
          for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
            control.emit("rec " + r.partition() + " " + r.offset() + " " + new String(r.key(), StandardCharsets.UTF_8) + " " + index(r.value()));
          }
          consumer.commitAsync((offsets, err) -> {
            if (err != null) control.emit("commit-error " + PeerControl.describe(err));
          });
        } catch (KafkaException e) {
          control.emit("error " + PeerControl.describe(e));
          if (!(e instanceof org.apache.kafka.common.errors.RetriableException)) Thread.sleep(200);
        }
      }
    }
    control.emit("closed");
  }

  /** I of a value "value-I-...", or "-" for a tombstone. */
  static String index(byte[] value) {
    if (value == null) return "-";
    String s = new String(value, StandardCharsets.UTF_8);
    int end = s.indexOf('-', 6);
    return end > 6 ? s.substring(6, end) : "?";
  }
}
