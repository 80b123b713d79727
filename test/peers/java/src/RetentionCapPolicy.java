import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.server.policy.AlterConfigPolicy;
import org.apache.kafka.server.policy.CreateTopicPolicy;

/**
 * Makes a Kafka broker refuse what a store that caps retention refuses (OCI Streaming keeps
 * records at most 7 days): a topic whose retention.ms is -1 (forever) or above the cap, whether
 * asked at CreateTopics or by AlterConfigs/IncrementalAlterConfigs later. Refusals are
 * PolicyViolationException, which clients see as POLICY_VIOLATION with this message.
 *
 * The broker's own properties reach configure() (server.properties as given, custom keys
 * included), so the cap is the broker property kcompact.test.retention.cap.ms. A topic without
 * retention.ms gets the broker default, which the test bed sets to the cap; configure() refuses
 * to start a broker whose default would exceed it, so an absent value is always within the cap.
 *
 * What each hook sees, in KRaft (Kafka 4.4's controller):
 * - CreateTopicPolicy: the request's configs only, without broker defaults.
 * - AlterConfigPolicy: only the configs the request sets; an IncrementalAlterConfigs DELETE
 *   shows as a null value (the topic falls back to the broker default). The controller also
 *   runs it on the configs of a topic being created, before CreateTopicPolicy, so a creation
 *   asking too much is refused by this hook first (same message).
 * - Both run for validateOnly requests too.
 *
 * Broker-level changes (resource type BROKER) and Kafka's internal topics pass: the share
 * coordinator creates __share_group_state with retention.ms=-1 and prunes it itself.
 */
public final class RetentionCapPolicy implements CreateTopicPolicy, AlterConfigPolicy {
    public static final String CAP_PROPERTY = "kcompact.test.retention.cap.ms";
    private static final String RETENTION_MS = "retention.ms";

    private long capMs;

    @Override
    public void configure(Map<String, ?> brokerConfigs) {
        Long cap = longProperty(brokerConfigs, CAP_PROPERTY);
        if (cap == null || cap <= 0) {
            throw new ConfigException(getClass().getName() + " needs the broker property " + CAP_PROPERTY + " (a positive number of ms)");
        }
        capMs = cap;
        long brokerDefault = brokerRetentionMs(brokerConfigs);
        if (brokerDefault < 0 || brokerDefault > capMs) {
            throw new ConfigException(
                "the broker's default retention (" + brokerDefault + " ms) exceeds " + CAP_PROPERTY + "=" + capMs
                    + ": topics created without retention.ms would escape the cap; set log.retention.ms to at most the cap");
        }
    }

    @Override
    public void validate(CreateTopicPolicy.RequestMetadata request) throws PolicyViolationException {
        check(request.topic(), request.configs());
    }

    @Override
    public void validate(AlterConfigPolicy.RequestMetadata request) throws PolicyViolationException {
        ConfigResource resource = request.resource();
        if (resource.type() != ConfigResource.Type.TOPIC) return;
        check(resource.name(), request.configs());
    }

    @Override
    public void close() {}

    private void check(String topic, Map<String, String> configs) {
        if (Topic.isInternal(topic)) return;
        String asked = configs.get(RETENTION_MS);
        // Absent or deleted: the broker default, which configure() holds within the cap.
        if (asked == null) return;
        long ms;
        try {
            ms = Long.parseLong(asked.trim());
        } catch (NumberFormatException e) {
            // Kafka validates types before policies; anything else here would escape as an
            // unknown server error.
            throw new PolicyViolationException("topic " + topic + ": " + RETENTION_MS + "=" + asked + " is not a number of ms");
        }
        if (ms == -1 || ms > capMs) {
            String what = ms == -1 ? "-1 (keep forever)" : Long.toString(ms);
            throw new PolicyViolationException(
                "topic " + topic + ": " + RETENTION_MS + "=" + what + " is refused: this store caps retention at " + capMs + " ms");
        }
    }

    /** log.retention.ms, else .minutes, else .hours (168 when none is set), as Kafka resolves them. */
    private static long brokerRetentionMs(Map<String, ?> configs) {
        Long ms = longProperty(configs, "log.retention.ms");
        if (ms != null) return ms;
        Long minutes = longProperty(configs, "log.retention.minutes");
        if (minutes != null) return minutes * 60_000L;
        Long hours = longProperty(configs, "log.retention.hours");
        return (hours != null ? hours : 168L) * 3_600_000L;
    }

    /** Properties arrive as the file's strings, but a caller configuring by hand may pass numbers. */
    private static Long longProperty(Map<String, ?> configs, String name) {
        Object value = configs.get(name);
        if (value == null) return null;
        if (value instanceof Number n) return n.longValue();
        try {
            return Long.parseLong(value.toString().trim());
        } catch (NumberFormatException e) {
            throw new ConfigException(name, value, "not a whole number");
        }
    }
}
