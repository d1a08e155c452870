package io.cosid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EventsTest {
    @TempDir
    Path dir;

    @Test
    void aRuntimesListenersSeeItsLife() throws Exception {
        List<CosidEvent> events = new CopyOnWriteArrayList<>();
        CountDownLatch renewed = new CountDownLatch(2);
        try (Runtime rt = Runtime.builder().store("sqlite://" + dir.resolve("leases.db")).preferredSlot(2)
                .onEvent(events::add).build()) {
            rt.nextId();
        }
        assertEquals(List.of("ACQUIRED", "RELEASED"), events.stream().map(CosidEvent::name).toList());
        assertEquals(2, events.get(0).slot());
        assertEquals(CosidEvent.Kind.RELEASED, events.get(1).kind());
        assertEquals(null, events.get(1).level());

        events.clear();
        try (Runtime rt = Runtime.builder().store("memory:").ttl(Duration.ofMillis(150)).build()) {
            rt.onEvent(e -> {
                throw new IllegalStateException("a listener that throws: logged, and the runtime goes on");
            });
            rt.onEvent(e -> {
                if (e.kind() == CosidEvent.Kind.RENEWED) {
                    renewed.countDown();
                }
            });
            assertTrue(renewed.await(10, TimeUnit.SECONDS), "two renewals past a throwing listener");
            rt.nextId();
        }
    }

    @Test
    void eventsReachSystemLogger() throws Exception {
        // System.Logger goes to java.util.logging when nothing else is installed (SLF4J bridges take it likewise).
        Logger jul = Logger.getLogger("io.cosid");
        List<LogRecord> records = new CopyOnWriteArrayList<>();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord r) {
                records.add(r);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        jul.addHandler(handler);
        Level before = jul.getLevel();
        jul.setLevel(Level.ALL);
        try {
            try (Runtime rt = Runtime.builder().store("manual:4").build()) {
                rt.nextId();
            }
            assertTrue(records.stream().anyMatch(r -> r.getLevel() == Level.INFO && r.getMessage().contains("4")),
                    records.stream().map(r -> r.getLevel() + " " + r.getMessage()).toList().toString());
        } finally {
            jul.removeHandler(handler);
            jul.setLevel(before);
        }
    }
}
