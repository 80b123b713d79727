import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * A Kafka Streams app for the test bed: counts the records of an input topic by key
 * (groupByKey().count() into a persistent store, so the store has a changelog topic
 * "<application-id>-<store>-changelog") and writes each new count, as decimal text, to an output
 * topic. The store cache is off and commits are frequent, so every input record becomes one
 * changelog record.
 *
 * It prints JSON lines on stdout for the test to follow:
 *   {"event":"state","state":"RUNNING","previous":"REBALANCING"}
 *   {"event":"restore-start","store","topic","partition","startOffset","endOffset"}
 *   {"event":"restored","store","topic","partition","records"}   (StateRestoreListener's total)
 *   {"event":"store","counts":{"<key>":<count>,...}}             (an interactive query, on each RUNNING)
 *   {"event":"closed"}                                            (after SIGTERM, once Streams has closed)
 *
 * StreamsKeyCount --bootstrap HOST:PORT --application-id A --input I --output O --state-dir D
 *                 [--store counts] [--commit-interval-ms 100] [--config NAME=VALUE]...
 * where --config sets any Streams config (topic.segment.ms=1000 sets segment.ms on the changelog).
 */
public final class StreamsKeyCount {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        String bootstrap = null, applicationId = null, input = null, output = null, stateDir = null;
        String store = "counts";
        String commitIntervalMs = "100";
        Properties extra = new Properties();
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) usage("missing value for " + args[i]);
            String v = args[i + 1];
            switch (args[i]) {
                case "--bootstrap" -> bootstrap = v;
                case "--application-id" -> applicationId = v;
                case "--input" -> input = v;
                case "--output" -> output = v;
                case "--state-dir" -> stateDir = v;
                case "--store" -> store = v;
                case "--commit-interval-ms" -> commitIntervalMs = v;
                case "--config" -> {
                    int eq = v.indexOf('=');
                    if (eq <= 0) usage("--config takes NAME=VALUE, not " + v);
                    extra.put(v.substring(0, eq), v.substring(eq + 1));
                }
                default -> usage("unknown flag " + args[i]);
            }
        }
        if (bootstrap == null || applicationId == null || input == null || output == null || stateDir == null) {
            usage("--bootstrap, --application-id, --input, --output and --state-dir are required");
        }

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, commitIntervalMs);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        props.putAll(extra);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(store).withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .mapValues(count -> Long.toString(count))
            .to(output, Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        BlockingQueue<KafkaStreams.State> states = new LinkedBlockingQueue<>();
        streams.setStateListener((now, before) -> {
            print(event("state").put("state", now.name()).put("previous", before.name()));
            states.add(now);
        });
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String storeName, long startOffset, long endOffset) {
                print(event("restore-start").put("store", storeName).put("topic", tp.topic()).put("partition", tp.partition())
                    .put("startOffset", startOffset).put("endOffset", endOffset));
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String storeName, long batchEndOffset, long numRestored) {
            }

            @Override
            public void onRestoreEnd(TopicPartition tp, String storeName, long totalRestored) {
                print(event("restored").put("store", storeName).put("topic", tp.topic()).put("partition", tp.partition())
                    .put("records", totalRestored));
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // Leave the group, so that a restarted app need not wait out its former self's session.
            streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                .withTimeout(Duration.ofSeconds(20)));
            print(event("closed"));
        }));
        streams.start();

        for (;;) {
            KafkaStreams.State state = states.take();
            if (state == KafkaStreams.State.RUNNING) dumpStore(streams, store);
        }
    }

    /** Prints the store's contents once it can be queried (a rebalance may move it away again: then skip). */
    private static void dumpStore(KafkaStreams streams, String store) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 10_000;
        while (streams.state() == KafkaStreams.State.RUNNING) {
            try {
                ReadOnlyKeyValueStore<String, Long> view =
                    streams.store(StoreQueryParameters.fromNameAndType(store, QueryableStoreTypes.keyValueStore()));
                ObjectNode line = event("store");
                ObjectNode counts = line.putObject("counts");
                try (KeyValueIterator<String, Long> all = view.all()) {
                    while (all.hasNext()) {
                        KeyValue<String, Long> kv = all.next();
                        counts.put(kv.key, kv.value);
                    }
                }
                print(line);
                return;
            } catch (InvalidStateStoreException e) {
                if (System.currentTimeMillis() > deadline) {
                    System.err.println("StreamsKeyCount: store " + store + " not queryable: " + e);
                    return;
                }
                Thread.sleep(100);
            }
        }
    }

    private static ObjectNode event(String name) {
        return JSON.createObjectNode().put("event", name);
    }

    private static void print(ObjectNode line) {
        System.out.println(line.toString());
        System.out.flush();
    }

    private static void usage(String problem) {
        System.err.println("StreamsKeyCount: " + problem + "\nusage: StreamsKeyCount --bootstrap HOST:PORT --application-id A --input I --output O"
            + " --state-dir D [--store counts] [--commit-interval-ms 100] [--config NAME=VALUE]...");
        System.exit(2);
    }
}
