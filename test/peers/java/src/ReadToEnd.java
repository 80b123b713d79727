import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads every partition of each topic from its start to the end offsets it had when the read
 * began, the way Kafka Connect's KafkaBasedLog.readToEnd does (assign, seekToBeginning, poll until
 * each position reaches its end offset), then prints one JSON line per topic:
 * {"topic", "partitions": {"<p>": {"endOffset", "records": [{"offset", "timestamp", "key", "value"}]}}}.
 * Keys and values are UTF-8 text (null for null). A read that does not reach the end offsets by
 * the deadline exits 1 with the positions it reached on stderr.
 *
 * ReadToEnd --bootstrap HOST:PORT --topic T [--topic T2 ...] [--isolation read_committed] [--timeout-ms 30000]
 */
public final class ReadToEnd {
    public static void main(String[] args) throws Exception {
        String bootstrap = null;
        List<String> topics = new ArrayList<>();
        String isolation = "read_uncommitted";
        long timeoutMs = 30_000;
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) usage("missing value for " + args[i]);
            switch (args[i]) {
                case "--bootstrap" -> bootstrap = args[i + 1];
                case "--topic" -> topics.add(args[i + 1]);
                case "--isolation" -> isolation = args[i + 1];
                case "--timeout-ms" -> timeoutMs = Long.parseLong(args[i + 1]);
                default -> usage("unknown flag " + args[i]);
            }
        }
        if (bootstrap == null || topics.isEmpty()) usage("--bootstrap and --topic are required");

        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "read-to-end");

        ObjectMapper json = new ObjectMapper();
        long deadline = System.currentTimeMillis() + timeoutMs;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            for (String topic : topics) {
                System.out.println(json.writeValueAsString(read(consumer, topic, deadline)));
            }
        }
    }

    private static ObjectNode read(KafkaConsumer<byte[], byte[]> consumer, String topic, long deadline) {
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        out.put("topic", topic);
        ObjectNode partitions = out.putObject("partitions");
        Duration left = Duration.ofMillis(Math.max(1, deadline - System.currentTimeMillis()));
        List<TopicPartition> assigned = new ArrayList<>();
        for (PartitionInfo p : consumer.partitionsFor(topic, left)) {
            assigned.add(new TopicPartition(topic, p.partition()));
        }
        consumer.assign(assigned);
        consumer.seekToBeginning(assigned);
        Map<TopicPartition, Long> ends = consumer.endOffsets(assigned, left);
        for (TopicPartition tp : assigned) {
            ObjectNode p = partitions.putObject(Integer.toString(tp.partition()));
            p.put("endOffset", ends.get(tp));
            p.putArray("records");
        }
        while (!reachedEnd(consumer, assigned, ends)) {
            if (System.currentTimeMillis() > deadline) {
                StringBuilder positions = new StringBuilder();
                for (TopicPartition tp : assigned) {
                    positions.append(' ').append(tp).append(" at ").append(consumer.position(tp)).append(" of ").append(ends.get(tp));
                }
                System.err.println("ReadToEnd: end offsets of " + topic + " not reached in time:" + positions);
                System.exit(1);
            }
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                ArrayNode records = (ArrayNode) partitions.get(Integer.toString(r.partition())).get("records");
                ObjectNode rec = records.addObject();
                rec.put("offset", r.offset());
                rec.put("timestamp", r.timestamp());
                rec.put("key", text(r.key()));
                rec.put("value", text(r.value()));
            }
        }
        return out;
    }

    private static boolean reachedEnd(KafkaConsumer<byte[], byte[]> consumer, List<TopicPartition> assigned, Map<TopicPartition, Long> ends) {
        for (TopicPartition tp : assigned) {
            if (consumer.position(tp) < ends.get(tp)) return false;
        }
        return true;
    }

    private static String text(byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }

    private static void usage(String problem) {
        System.err.println("ReadToEnd: " + problem + "\nusage: ReadToEnd --bootstrap HOST:PORT --topic T [--isolation read_committed] [--timeout-ms 30000]");
        System.exit(2);
    }
}
