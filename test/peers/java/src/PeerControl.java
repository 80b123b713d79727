import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * What the fault-test clients (FaultProducer, FaultConsumer) share: "--name value" flags, a
 * control file the test writes its wishes into ("run", "pause", "stop"; missing means "run"),
 * since a background peer has no stdin, and one event per stdout line, flushed at once, so the
 * test can read what happened up to any moment while the client runs on.
 */
final class PeerControl {
  private final Path file;
  private final PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);

  PeerControl(String file) {
    this.file = Path.of(file);
  }

  static Map<String, String> flags(String[] args) {
    Map<String, String> flags = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) throw new IllegalArgumentException("expected --name value, got " + args[i]);
      flags.put(args[i].substring(2), args[i + 1]);
    }
    return flags;
  }

  static String required(Map<String, String> flags, String name) {
    String v = flags.get(name);
    if (v == null) throw new IllegalArgumentException("--" + name + " is required");
    return v;
  }

  String wish() {
    try {
      return Files.readString(file, StandardCharsets.UTF_8).trim();
    } catch (NoSuchFileException e) {
      return "run";
    } catch (IOException e) {
      throw new RuntimeException("cannot read control file " + file, e);
    }
  }

  synchronized void emit(String line) {
    out.println(line);
    out.flush();
  }

  /** One line for an exception: whether Kafka calls it retriable, its class and message. */
  static String describe(Throwable e) {
    boolean retriable = e instanceof org.apache.kafka.common.errors.RetriableException;
    return retriable + " " + e.getClass().getName() + ": " + String.valueOf(e.getMessage()).replace('\n', ' ');
  }
}
