import org.apache.kafka.common.utils.internals.AppInfoParser;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.file.FileStreamSourceConnector;
import org.apache.kafka.connect.file.FileStreamSourceTask;

/**
 * Apache Kafka's FileStreamSourceConnector and its task, unchanged but for version(). Apache
 * published no connect-file 4.4.0, and the 4.3.1 jar's version() calls
 * org.apache.kafka.common.utils.AppInfoParser, which 4.4's kafka-clients moved to
 * org.apache.kafka.common.utils.internals: on a 4.4 worker the connector cannot even be
 * validated. Everything else (reading the file, its offsets by byte position, batch.size) is the
 * real connector's code.
 *
 * connector.class=FileStreamSourceShim, with FileStreamSourceConnector's configs (file, topic, batch.size).
 */
public final class FileStreamSourceShim extends FileStreamSourceConnector {
    @Override
    public String version() {
        return AppInfoParser.getVersion();
    }

    @Override
    public Class<? extends Task> taskClass() {
        return ShimTask.class;
    }

    public static final class ShimTask extends FileStreamSourceTask {
        @Override
        public String version() {
            return AppInfoParser.getVersion();
        }
    }
}
