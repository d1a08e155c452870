package io.cosid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RuntimeTest {
    @TempDir
    Path dir;

    private Runtime.Builder sqlite() {
        return Runtime.builder().store("sqlite://" + dir.resolve("leases.db")).namespace("runtime-test");
    }

    @Test
    void issuesIncreasingUniqueIds() {
        try (Runtime rt = Runtime.builder().store("memory:").build()) {
            long a = rt.nextId();
            long b = rt.nextId();
            assertTrue(a > 0 && b > a, a + " then " + b);
            long[] batch = rt.nextIds(10_000);
            assertEquals(10_000, batch.length);
            assertTrue(batch[0] > b);
            for (int i = 1; i < batch.length; i++) {
                assertTrue(batch[i] > batch[i - 1], "not increasing at " + i);
            }
            assertEquals(0, rt.nextIds(0).length);
        }
    }

    @Test
    void parsesItsIds() {
        try (Runtime rt = Runtime.builder().store("manual:7").build()) {
            Instant before = Instant.now().minusMillis(1);
            long id = rt.nextId();
            IdParts p = rt.parse(id);
            assertEquals(7, p.slot());
            assertEquals(0, p.sequence());
            assertFalse(p.timestamp().isBefore(before.minusSeconds(2)), p.toString());
            assertFalse(p.timestamp().isAfter(Instant.now().plusSeconds(2)), p.toString());
            assertEquals(p.timestamp().toEpochMilli(), p.timestampMs());
            assertEquals(id, rt.layout().compose(p.tick(), p.slot(), p.sequence()));
            String friendly = rt.toFriendly(id);
            assertTrue(friendly.matches("\\d{17}-7-0"), friendly);
            assertEquals(id, rt.fromFriendly(friendly));
            String b62 = Cosid.toBase62(id);
            assertEquals(11, b62.length());
            assertEquals(id, Cosid.fromBase62(b62));
        }
    }

    @Test
    void statusTellsTheLease() {
        try (Runtime rt = sqlite().ttl(Duration.ofSeconds(5)).build()) {
            Status s = rt.status();
            assertEquals(0, s.slot());
            assertEquals(Status.State.ACTIVE, s.state());
            assertTrue(s.fence() >= 1);
            assertTrue(s.floorMs() < s.ceilingMs());
            assertTrue(s.expiresAtMs() <= s.ceilingMs());
            assertTrue(s.lastIssuedMs().isEmpty());
            rt.nextId();
            assertTrue(rt.status().lastIssuedMs().isPresent());
            assertFalse(rt.isClosed());
        }
    }

    @Test
    void closeSealsAndReleasesTheSlot() {
        Runtime a = sqlite().ownerKey("a").build();
        Runtime b = sqlite().ownerKey("b").build();
        assertEquals(0, a.status().slot());
        assertEquals(1, b.status().slot());
        long last = a.nextId();
        var lastMs = a.shutdown();
        assertTrue(lastMs.isPresent());
        assertEquals(a.parse(last).timestampMs(), lastMs.getAsLong());
        assertTrue(a.isClosed());
        assertEquals(Status.State.CLOSED, a.status().state());
        assertThrows(ClosedException.class, a::nextId);
        assertThrows(ClosedException.class, () -> a.nextIds(3));
        a.close(); // again: nothing
        // Released, so a third owner takes slot 0 at once (held, it would be taken for the ttl, 30 s).
        try (Runtime c = sqlite().ownerKey("c").build()) {
            assertEquals(0, c.status().slot());
            assertTrue(c.nextId() > last, "the new holder's ids come after the released window's last id");
        }
        b.close();
    }

    @Test
    void layoutsAndSettings() {
        try (Runtime rt = Runtime.builder().store("memory:").layout("js-safe").build()) {
            assertEquals(Layout.jsSafe(), rt.layout());
            assertTrue(rt.nextId() < (1L << 53));
        }
        Layout custom = new Layout(1_700_000_000_000L, Layout.Tick.SECOND, 32, 8, 23);
        try (Runtime rt = Runtime.builder().store("memory:").layout(custom).build()) {
            assertEquals(custom, rt.layout());
            assertEquals(Layout.Tick.SECOND, rt.parse(rt.nextId()).timestampMs() % 1000 == 0
                    ? Layout.Tick.SECOND : Layout.Tick.MILLISECOND);
        }
        assertEquals(4_096_000, Layout.millis().capPerSecond());
        assertEquals(new Layout(1577203200000L, Layout.Tick.MILLISECOND, 41, 10, 12), Layout.millis());
        assertThrows(LayoutException.class, () -> new Layout(0, Layout.Tick.MILLISECOND, 41, 10, 13));
        assertThrows(LayoutException.class, () -> new Layout(0, Layout.Tick.MILLISECOND, 41, 0, 12));
        assertThrows(LayoutException.class, () -> new Layout(0, Layout.Tick.MILLISECOND, 41 + 256, 10, 12));
        assertThrows(LayoutException.class, () -> Layout.named("nanos"));
    }

    @Test
    void severalSlotsLeaseAtOnce() {
        try (Runtime rt = sqlite().slots(3).build(); Runtime other = sqlite().ownerKey("other").build()) {
            assertEquals(0, rt.status().slot());
            assertEquals(3, other.status().slot());
            Set<Long> ids = new HashSet<>();
            for (long id : rt.nextIds(20_000)) {
                assertTrue(ids.add(id));
            }
            assertNotEquals(0, ids.size());
        }
    }
}
