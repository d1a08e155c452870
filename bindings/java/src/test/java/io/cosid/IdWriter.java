package io.cosid;

import java.io.BufferedWriter;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A child JVM of {@link ProcessesTest}: issues ids from the process-wide runtime, configured by the {@code COSID_*}
 * environment only (after every JVM of the test has leased its slot), and writes its slot and its ids to a file, one a line. Exits through the end of main, so the
 * shutdown hook releases the slot.
 */
public final class IdWriter {
    private IdWriter() {}

    public static void main(String[] args) throws Exception {
        int count = Integer.parseInt(args[0]);
        Path out = Path.of(args[1]);
        // A barrier: every child holds its lease before any issues, so that none could take a slot another one
        // released (ids on distinct slots at the same time).
        int jvms = Integer.parseInt(args[2]);
        Path barrier = Path.of(args[3]);
        Cosid.status(); // starts the runtime: leases a slot
        Files.createFile(barrier.resolve(ProcessHandle.current().pid() + ".ready"));
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (true) {
            try (var files = Files.list(barrier)) {
                if (files.count() >= jvms) {
                    break;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the other JVMs did not start within 60 s");
            }
            Thread.sleep(20);
        }
        long[] ids = new long[count];
        for (int i = 0; i < count; i++) {
            ids[i] = i % 2 == 0 ? Cosid.nextId() : Cosid.nextIds(1)[0];
        }
        long[] batch = Cosid.nextIds(count);
        try (BufferedWriter w = Files.newBufferedWriter(out)) {
            w.write("slot " + Cosid.status().slot() + "\n");
            for (long id : ids) {
                w.write(id + "\n");
            }
            for (long id : batch) {
                w.write(id + "\n");
            }
        }
    }
}
