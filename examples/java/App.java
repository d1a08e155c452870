/*
 * cosid from Java: ids from the process-wide runtime (configured by the COSID_* environment variables; with none
 * set, an SQLite file in the user's state directory), their text forms, the runtime's lease, and a runtime of its
 * own with a listener. A plain program: no framework, no build step (JDK 22 or newer runs a source file).
 *
 *   java --enable-native-access=ALL-UNNAMED -cp cosid-0.1.0.jar examples/java/App.java 3
 *   COSID_STORE=memory: java --enable-native-access=ALL-UNNAMED -cp cosid-0.1.0.jar App.java
 *
 * docs/java.md is the guide; .ci/java.sh runs this program.
 */
import io.cosid.Cosid;
import io.cosid.CosidException;
import io.cosid.IdParts;
import io.cosid.Runtime;
import io.cosid.Status;
import java.nio.file.Files;
import java.nio.file.Path;

public class App {
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        if (n < 1 || n > 1000) {
            System.err.println("usage: App [COUNT from 1 to 1000]");
            System.exit(2);
        }
        try {
            // The process-wide runtime: the first id opens the store and leases a slot.
            for (int i = 0; i < n; i++) {
                long id = Cosid.nextId();
                System.out.println(id + "  " + Cosid.toFriendly(id) + "  " + Cosid.toBase62(id));
            }
            long id = Cosid.nextId();
            IdParts parts = Cosid.parse(id);
            System.out.println("parsed: " + parts.timestamp() + ", slot " + parts.slot() + ", sequence " + parts.sequence());
            Status status = Cosid.status();
            System.out.printf("slot %d, fence %d, window (%d, %d] ms, lease expires at %s%n", status.slot(),
                    status.fence(), status.floorMs(), status.ceilingMs(), status.expiresAt());

            // A runtime of its own: another namespace, an explicit lifetime, its events.
            Path dir = Files.createTempDirectory("cosid-example-");
            try (Runtime rt = Runtime.builder()
                    .store("sqlite://" + dir.resolve("leases.db"))
                    .namespace("invoices")
                    .layout("seconds")
                    .onEvent(event -> System.out.println("event: " + event.name() + " slot " + event.slot()))
                    .build()) {
                long[] batch = rt.nextIds(3);
                System.out.println("invoices: " + batch.length + " ids, first " + rt.toFriendly(batch[0]));
            }
            // Optional: JVM exit does it too (a shutdown hook); shutting down explicitly reports errors.
            Cosid.shutdown();
        } catch (CosidException e) {
            System.err.println("cosid failed: " + e.code() + ": " + e.getMessage());
            System.exit(1);
        }
    }
}
