package io.cosid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The process-wide runtime: its whole life in one test, since it is one per JVM. */
class GlobalTest {
    @TempDir
    Path dir;

    @Test
    void configureIssueShutdownConfigureAgain() {
        List<CosidEvent> seen = new CopyOnWriteArrayList<>();
        EventListener listener = seen::add;
        Cosid.addListener(listener);
        List<CosidEvent> own = new CopyOnWriteArrayList<>();
        String store = "sqlite://" + dir.resolve("leases.db");
        try {
            Cosid.configure(Runtime.builder().store(store).namespace("global").layout("seconds").onEvent(own::add));
            CosidException again = assertThrows(CosidException.class,
                    () -> Cosid.configure(Runtime.builder().store("memory:")));
            assertEquals(ErrorCode.ALREADY_INITIALIZED, again.code());
            assertEquals(Layout.seconds(), Cosid.layout());

            Set<Long> ids = new HashSet<>();
            for (int i = 0; i < 1000; i++) {
                assertTrue(ids.add(Cosid.nextId()));
            }
            for (long id : Cosid.nextIds(5000)) {
                assertTrue(ids.add(id));
            }
            long id = Cosid.nextId();
            IdParts p = Cosid.parse(id);
            assertEquals(0, p.timestampMs() % 1000, "a seconds layout's tick starts on a second");
            assertEquals(id, Cosid.fromFriendly(Cosid.toFriendly(id)));
            Status s = Cosid.status();
            assertEquals(Status.State.ACTIVE, s.state());
            assertEquals(p.slot(), s.slot());

            var last = Cosid.shutdown();
            assertTrue(last.isPresent());
            assertThrows(ClosedException.class, Cosid::nextId);
            assertThrows(ClosedException.class, () -> Cosid.nextIds(2));
            Cosid.shutdown(); // harmless

            Cosid.configure(Runtime.builder().store(store).namespace("global").layout("seconds"));
            assertTrue(Cosid.nextId() > id);
        } finally {
            Cosid.shutdown();
            Cosid.removeListener(listener);
        }
        // The process-wide listener saw the log of both starts and releases, with the core's level and message;
        // the configured listener saw its runtime's events.
        List<String> names = seen.stream().filter(e -> !e.name().equals("RENEWED")).map(CosidEvent::name).toList();
        assertTrue(names.stream().filter("ACQUIRED"::equals).count() >= 2, names.toString());
        assertTrue(names.stream().filter("RELEASED"::equals).count() >= 2, names.toString());
        CosidEvent acquired = seen.stream().filter(e -> e.kind() == CosidEvent.Kind.ACQUIRED).findFirst().orElseThrow();
        assertEquals(System.Logger.Level.INFO, acquired.level());
        assertTrue(!acquired.message().isEmpty());
        assertTrue(acquired.ceilingMs() > acquired.floorMs());
        assertEquals("ACQUIRED", own.getFirst().name(), own.toString());
        assertTrue(own.stream().anyMatch(e -> e.kind() == CosidEvent.Kind.RELEASED && e.lastIssuedMs().isPresent()),
                own.toString());
    }
}
