package io.cosid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Several JVMs (child processes) on one store: every id unique, every JVM on its own slot, and every slot released
 * when its JVM exits (the shutdown hook): a runtime started after them takes the lowest slot again.
 */
class ProcessesTest {
    static final int JVMS = 4;
    static final int IDS = 20_000;

    @TempDir
    Path dir;

    private void manyJvms(String store, String namespace) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<Process> children = new ArrayList<>();
        List<Path> outs = new ArrayList<>();
        Path barrier = Files.createDirectory(dir.resolve("barrier"));
        for (int i = 0; i < JVMS; i++) {
            Path out = dir.resolve("ids-" + i + ".txt");
            outs.add(out);
            List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                    System.getProperty("java.class.path")));
            String lib = System.getProperty(NativeLoader.PATH_PROPERTY);
            if (lib != null) {
                cmd.add("-D" + NativeLoader.PATH_PROPERTY + "=" + lib);
            }
            cmd.addAll(List.of(IdWriter.class.getName(), Integer.toString(IDS), out.toString(), Integer.toString(JVMS),
                    barrier.toString()));
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(dir.resolve("log-" + i + ".txt").toFile());
            pb.environment().put("COSID_STORE", store);
            pb.environment().put("COSID_NAMESPACE", namespace);
            pb.environment().put("COSID_TTL", "5s");
            children.add(pb.start());
        }
        for (int i = 0; i < JVMS; i++) {
            Process p = children.get(i);
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), "child " + i + " still running");
            assertEquals(0, p.exitValue(), "child " + i + ": " + Files.readString(dir.resolve("log-" + i + ".txt")));
        }
        Set<Long> ids = new HashSet<>();
        Set<Integer> slots = new HashSet<>();
        int total = 0;
        for (Path out : outs) {
            List<String> lines = Files.readAllLines(out);
            slots.add(Integer.parseInt(lines.get(0).substring("slot ".length())));
            for (String line : lines.subList(1, lines.size())) {
                ids.add(Long.parseLong(line));
                total++;
            }
        }
        assertEquals(2 * IDS * JVMS, total);
        assertEquals(total, ids.size(), (total - ids.size()) + " repeated ids across " + JVMS + " JVMs");
        assertEquals(JVMS, slots.size(), "slots " + slots);
        // Every child released its slot at exit: a newcomer (another owner key) takes slot 0 at once.
        try (Runtime rt = Runtime.builder().store(store).namespace(namespace).ttl(Duration.ofSeconds(5))
                .ownerKey("after-the-children").build()) {
            assertEquals(0, rt.status().slot());
            long id = rt.nextId();
            assertTrue(!ids.contains(id));
        }
    }

    @Test
    void severalJvmsOnOneSqliteFile() throws Exception {
        manyJvms("sqlite://" + dir.resolve("leases.db"), "jvms");
    }

    @Test
    @EnabledIfEnvironmentVariable(named = "COSID_TEST_REDIS_URL", matches = ".+")
    void severalJvmsOnRedis() throws Exception {
        manyJvms(System.getenv("COSID_TEST_REDIS_URL"), "java-" + UUID.randomUUID());
    }
}
