package io.cosid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The Java driver of the cross-language conformance table, tests/conformance/cases.txt (its header describes the
 * format). The same cases run in Rust, the CLI, C, Python and Node: a case added to the table runs here too. Each
 * case runs on a fresh {@link Runtime} (its settings given as the table's text, by key) and a fresh temporary
 * directory. A JVM cannot fork(): a case stops before a {@code fork_next_id} step and reports it as skipped.
 */
class ConformanceTest {
    static final Path TABLE = Path.of(System.getProperty("cosid.cases", "../../tests/conformance/cases.txt"));
    static final Set<String> ACTIONS = Set.of("start", "next_id", "slot", "shutdown", "fork_next_id");

    record Case(String name, List<String[]> set, List<String[]> steps, List<String> hidden) {}

    static List<Case> readCases() throws IOException {
        List<Case> cases = new ArrayList<>();
        List<String> lines = Files.readAllLines(TABLE);
        for (int n = 0; n < lines.size(); n++) {
            String line = lines.get(n);
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            int space = line.indexOf(' ');
            String word = space < 0 ? line : line.substring(0, space);
            String rest = space < 0 ? "" : line.substring(space + 1);
            if (word.equals("case")) {
                cases.add(new Case(rest, new ArrayList<>(), new ArrayList<>(), new ArrayList<>()));
            } else if (word.equals("hidden")) {
                cases.getLast().hidden().add(rest);
            } else if (word.equals("set")) {
                int i = rest.indexOf(' ');
                cases.getLast().set().add(new String[] {rest.substring(0, i), rest.substring(i + 1)});
            } else if (ACTIONS.contains(word)) {
                cases.getLast().steps().add(new String[] {word, rest});
            } else {
                throw new IllegalStateException(TABLE + ":" + (n + 1) + ": unknown directive " + word);
            }
        }
        return cases;
    }

    @Test
    void theTableIsThere() throws IOException {
        assertTrue(Files.exists(TABLE), TABLE + " is missing");
        int n = readCases().size();
        assertTrue(n >= 20, n + " cases");
    }

    @TestFactory
    Stream<DynamicTest> conformance() throws IOException {
        return readCases().stream().map(c -> DynamicTest.dynamicTest(c.name(), () -> run(c)));
    }

    private static void run(Case c) throws IOException {
        Path dir = Files.createTempDirectory("cosid-conformance-");
        List<String> failures = new ArrayList<>();
        List<String> shown = new ArrayList<>();
        Runtime rt = null;
        try {
            Runtime.Builder builder = Runtime.builder();
            for (String[] kv : c.set()) {
                builder.set(kv[0], kv[1].replace("{dir}", dir.toString()));
            }
            for (String[] step : c.steps()) {
                String action = step[0];
                String expect = step[1];
                if (action.equals("fork_next_id")) {
                    System.out.println("conformance: " + c.name() + ": skipped: fork_next_id (a JVM cannot fork)");
                    break;
                }
                String got;
                if (rt == null && !action.equals("start")) {
                    failures.add(action + ": expected " + expect + ", got NO_RUNTIME");
                    continue;
                }
                try {
                    switch (action) {
                        case "start" -> {
                            rt = builder.build();
                            got = "OK";
                        }
                        case "next_id" -> {
                            rt.nextId();
                            got = "OK";
                        }
                        case "shutdown" -> {
                            rt.shutdown();
                            got = "OK";
                        }
                        default -> got = Integer.toString(rt.status().slot());
                    }
                } catch (CosidException e) {
                    StringWriter trace = new StringWriter();
                    e.printStackTrace(new PrintWriter(trace));
                    shown.add(e.toString());
                    shown.add(String.valueOf(e.getMessage()));
                    shown.add(trace.toString());
                    got = e.code().name();
                }
                if (!got.equals(expect)) {
                    failures.add(action + ": expected " + expect + ", got " + got + " (" + shown + ")");
                }
            }
        } finally {
            if (rt != null) {
                rt.close();
            }
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        for (String text : c.hidden()) {
            for (String s : shown) {
                if (s.contains(text)) {
                    failures.add("shows \"" + text + "\": " + s);
                }
            }
        }
        assertEquals(List.of(), failures, c.name());
    }
}
