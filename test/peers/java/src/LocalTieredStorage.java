import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

/**
 * Kafka's tiered storage (KIP-405) for the test bed: a RemoteStorageManager that keeps each
 * copied segment and its indexes in a directory of its own under a local root, as an object
 * store would keep them under a key prefix. Kafka ships no RemoteStorageManager for any real
 * object store, so a broker of the test bed set up like a tiered-storage deployment needs one;
 * a local directory keeps the broker's remote reads real (segments and indexes come back as
 * streams, by byte range) while the test can look at what was moved.
 *
 * Broker properties with the prefix rsm.config. reach configure() without it: rsm.config.dir is
 * the root. One directory per segment, named by topic id, partition and the segment's own id:
 * topicId-partition/segmentId/{log,offset,time,txn,producer,epoch}.
 */
public final class LocalTieredStorage implements RemoteStorageManager {
    private Path root;

    @Override
    public void configure(Map<String, ?> configs) {
        Object dir = configs.get("dir");
        if (dir == null) throw new IllegalArgumentException("LocalTieredStorage needs rsm.config.dir, the directory that stands for the object store");
        root = Path.of(dir.toString());
        try {
            Files.createDirectories(root);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private Path segmentDir(RemoteLogSegmentMetadata m) {
        var id = m.remoteLogSegmentId();
        var tp = id.topicIdPartition();
        return root.resolve(tp.topicId() + "-" + tp.partition()).resolve(id.id().toString());
    }

    @Override
    public Optional<RemoteLogSegmentMetadata.CustomMetadata> copyLogSegmentData(RemoteLogSegmentMetadata m, LogSegmentData data) throws RemoteStorageException {
        Path dir = segmentDir(m);
        // Written beside the final name and renamed: a reader never sees half a segment.
        Path partial = dir.resolveSibling(dir.getFileName() + ".partial");
        try {
            deleteTree(partial);
            Files.createDirectories(partial);
            Files.copy(data.logSegment(), partial.resolve("log"));
            Files.copy(data.offsetIndex(), partial.resolve("offset"));
            Files.copy(data.timeIndex(), partial.resolve("time"));
            if (data.transactionIndex().isPresent()) Files.copy(data.transactionIndex().get(), partial.resolve("txn"));
            Files.copy(data.producerSnapshotIndex(), partial.resolve("producer"));
            ByteBuffer epochs = data.leaderEpochIndex().duplicate();
            try (FileChannel out = FileChannel.open(partial.resolve("epoch"), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                while (epochs.hasRemaining()) out.write(epochs);
            }
            deleteTree(dir);
            Files.move(partial, dir, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new RemoteStorageException("copying " + m.remoteLogSegmentId() + " to " + dir, e);
        }
        return Optional.empty();
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata m, int startPosition) throws RemoteStorageException {
        return range(segmentDir(m).resolve("log"), startPosition, Long.MAX_VALUE);
    }

    /** endPosition is inclusive, as the interface says. */
    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata m, int startPosition, int endPosition) throws RemoteStorageException {
        return range(segmentDir(m).resolve("log"), startPosition, (long) endPosition + 1);
    }

    @Override
    public InputStream fetchIndex(RemoteLogSegmentMetadata m, IndexType type) throws RemoteStorageException {
        String name = switch (type) {
            case OFFSET -> "offset";
            case TIMESTAMP -> "time";
            case PRODUCER_SNAPSHOT -> "producer";
            case TRANSACTION -> "txn";
            case LEADER_EPOCH -> "epoch";
        };
        return range(segmentDir(m).resolve(name), 0, Long.MAX_VALUE);
    }

    @Override
    public void deleteLogSegmentData(RemoteLogSegmentMetadata m) throws RemoteStorageException {
        try {
            deleteTree(segmentDir(m));
        } catch (IOException e) {
            throw new RemoteStorageException("deleting " + m.remoteLogSegmentId(), e);
        }
    }

    @Override
    public void close() {}

    private static InputStream range(Path file, long from, long to) throws RemoteStorageException {
        try {
            FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
            long end = Math.min(to, ch.size());
            ch.position(Math.min(from, end));
            InputStream whole = Channels.newInputStream(ch);
            long[] left = {end - ch.position()};
            return new InputStream() {
                @Override
                public int read() throws IOException {
                    if (left[0] <= 0) return -1;
                    int b = whole.read();
                    if (b >= 0) left[0]--;
                    return b;
                }

                @Override
                public int read(byte[] buf, int off, int len) throws IOException {
                    if (left[0] <= 0) return -1;
                    int n = whole.read(buf, off, (int) Math.min(len, left[0]));
                    if (n > 0) left[0] -= n;
                    return n;
                }

                @Override
                public void close() throws IOException {
                    whole.close();
                }
            };
        } catch (NoSuchFileException e) {
            throw new RemoteResourceNotFoundException("no " + file.getFileName() + " in " + file.getParent(), e);
        } catch (IOException e) {
            throw new RemoteStorageException("reading " + file, e);
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) return;
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
        }
    }
}
