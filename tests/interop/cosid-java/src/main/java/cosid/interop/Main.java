package cosid.interop;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.ZoneId;
import java.util.HashMap;
import java.util.Map;
import me.ahoo.cosid.IdConverter;
import me.ahoo.cosid.converter.Radix62IdConverter;
import me.ahoo.cosid.snowflake.DefaultSnowflakeFriendlyId;
import me.ahoo.cosid.snowflake.MillisecondSnowflakeId;
import me.ahoo.cosid.snowflake.SnowflakeFriendlyId;
import me.ahoo.cosid.snowflake.SnowflakeIdState;

/**
 * The real CosId, driven by .ci/interop.sh. Two modes:
 *
 * <pre>
 * issue --redis-port P --namespace NS --instance NAME --out FILE [--run-ms N] [--guard-ms G] [--batch B]
 *     Takes a machine id from Redis with CosId's SpringRedisMachineIdDistributor, then issues ids with CosId's
 *     MillisecondSnowflakeId on that machine id, B ids a millisecond or so, each flushed to FILE (decimal, one a
 *     line) before the next batch. FILE.ready appears (holding the machine id) once the first batch is on disk.
 *     After N ms it stops normally (CosId's revert) and writes FILE.done; SIGKILL before that is a crash.
 * parse
 *     Reads "FORM TEXT" lines on standard input (FORM: decimal, friendly or base62) and parses each with CosId's
 *     own parsers (DefaultSnowflakeFriendlyId, Radix62IdConverter.PAD_START), printing a tab-separated line:
 *     FORM TEXT decimal unix_ms machine sequence friendly base62 base62-unpadded (Radix62IdConverter.INSTANCE), or
 *     FORM TEXT ERROR message.
 * </pre>
 *
 * Friendly ids are in the JVM's default time zone, as in CosId: the driver runs the JVM with -Duser.timezone=UTC.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            usage("no mode");
        }
        Map<String, String> opts = options(args);
        switch (args[0]) {
            case "issue" -> issue(opts);
            case "parse" -> parse();
            default -> usage("unknown mode " + args[0]);
        }
    }

    private static void issue(Map<String, String> opts) throws IOException, InterruptedException {
        int port = Integer.parseInt(required(opts, "redis-port"));
        String namespace = required(opts, "namespace");
        String instance = required(opts, "instance");
        Path out = Path.of(required(opts, "out"));
        long runMs = Long.parseLong(opts.getOrDefault("run-ms", "3600000"));
        long guardMs = Long.parseLong(opts.getOrDefault("guard-ms", "250"));
        int batch = Integer.parseInt(opts.getOrDefault("batch", "20"));

        Machines machines = Machines.open(port, guardMs);
        int machine = machines.distribute(namespace, instance);
        System.err.printf("cosid-java: CosId %s instance %s got machine %d in namespace %s (zone %s)%n",
            machines.cosidVersion(), instance, machine, namespace, ZoneId.systemDefault());
        MillisecondSnowflakeId snowflake = new MillisecondSnowflakeId(machine);

        long start = System.nanoTime();
        long issued = 0;
        try (BufferedWriter w = Files.newBufferedWriter(out, StandardCharsets.US_ASCII)) {
            while (System.nanoTime() - start < runMs * 1_000_000L) {
                for (int i = 0; i < batch; i++) {
                    w.write(Long.toString(snowflake.generate()));
                    w.write('\n');
                }
                // Flushed before the next batch: a SIGKILL loses at most the batch being written.
                w.flush();
                if (issued == 0) {
                    publish(out, ".ready", Integer.toString(machine));
                }
                issued += batch;
                Thread.sleep(1);
            }
        }
        machines.revert();
        publish(out, ".done", Long.toString(issued));
        System.err.printf("cosid-java: instance %s issued %d ids on machine %d and stopped normally%n",
            instance, issued, machine);
    }

    /** Writes FILE+suffix whole (rename), so a reader never sees it half written. */
    private static void publish(Path out, String suffix, String text) throws IOException {
        Path tmp = Path.of(out + suffix + ".tmp");
        Files.writeString(tmp, text + "\n");
        Files.move(tmp, Path.of(out + suffix), StandardCopyOption.ATOMIC_MOVE);
    }

    private static void parse() throws IOException {
        SnowflakeFriendlyId friendly = new DefaultSnowflakeFriendlyId(new MillisecondSnowflakeId(0));
        IdConverter base62 = Radix62IdConverter.PAD_START;
        IdConverter unpadded = Radix62IdConverter.INSTANCE;
        ZoneId zone = ZoneId.systemDefault();
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.isBlank()) {
                continue;
            }
            String[] parts = line.trim().split("\\s+", 2);
            String form = parts[0];
            String text = parts.length > 1 ? parts[1] : "";
            try {
                long id = switch (form) {
                    case "decimal" -> Long.parseLong(text);
                    case "friendly" -> friendly.ofFriendlyId(text).getId();
                    case "base62" -> base62.asLong(text);
                    default -> throw new IllegalArgumentException("unknown form " + form);
                };
                SnowflakeIdState state = friendly.friendlyId(id);
                long unixMs = state.getTimestamp().atZone(zone).toInstant().toEpochMilli();
                out.printf("%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s%n", form, text, id, unixMs, state.getMachineId(),
                    state.getSequence(), state.getFriendlyId(), base62.asString(id), unpadded.asString(id));
            } catch (RuntimeException e) {
                out.printf("%s\t%s\tERROR\t%s%n", form, text, e.toString().replace('\t', ' ').replace('\n', ' '));
            }
        }
        out.flush();
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                usage("expected --name value pairs, got " + args[i]);
            }
            opts.put(args[i].substring(2), args[i + 1]);
        }
        return opts;
    }

    private static String required(Map<String, String> opts, String name) {
        String v = opts.get(name);
        if (v == null) {
            usage("missing --" + name);
        }
        return v;
    }

    private static void usage(String why) {
        System.err.println("cosid-java: " + why
            + "\nusage: issue --redis-port P --namespace NS --instance NAME --out FILE [--run-ms N] [--guard-ms G]"
            + " [--batch B]\n       parse   (FORM TEXT lines on standard input)");
        System.exit(2);
    }
}
