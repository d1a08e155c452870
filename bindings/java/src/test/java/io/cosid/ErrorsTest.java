package io.cosid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ErrorsTest {
    @TempDir
    Path dir;

    @Test
    void everyCodeHasTheLibrarysName() {
        for (ErrorCode code : ErrorCode.values()) {
            if (code != ErrorCode.UNKNOWN) {
                assertEquals(code.name(), Native.staticString(Native.RESULT_NAME, code.number()), code.name());
            }
        }
        assertEquals("UNKNOWN", Native.staticString(Native.RESULT_NAME, 1234));
        assertEquals(ErrorCode.UNKNOWN, ErrorCode.of(1234));
        // Every number the library names is in the enum (the ranges of include/cosid.h).
        for (int n = 1; n < 10_000; n++) {
            String name = Native.staticString(Native.RESULT_NAME, n);
            if (!name.equals("UNKNOWN")) {
                assertEquals(name, ErrorCode.of(n).name(), "code " + n);
            }
        }
    }

    private static <T extends CosidException> T fails(Class<T> type, ErrorCode code, Runtime.Builder b) {
        T e = assertThrows(type, b::build);
        assertEquals(code, e.code());
        assertTrue(e.getMessage().startsWith(code.name() + ": "), e.getMessage());
        return e;
    }

    @Test
    void aStoreTheLibraryDoesNotCarryIsRefusedSayingHowToReachIt() {
        java.util.List<String> stores = Cosid.stores();
        assertEquals(java.util.List.of("memory", "sqlite", "http"), stores.subList(0, 3));
        // A URL of each store that needs no server: one the library does not carry is refused before connecting.
        java.util.Map<String, String> offline = java.util.Map.of(
                "mysql", "mysql://u:p@127.0.0.1:1/db", "etcd", "etcd://127.0.0.1:1",
                "zookeeper", "zookeeper://127.0.0.1:1", "mongodb", "mongodb://127.0.0.1:1/ids");
        offline.forEach((store, url) -> {
            if (stores.contains(store)) {
                return;
            }
            ConfigException e = fails(ConfigException.class, ErrorCode.CONFIG,
                    Runtime.builder().store(url).acquireTimeout(Duration.ofSeconds(30)));
            assertTrue(e.getMessage().contains("the " + store + " store is not in this build")
                    && e.getMessage().contains("cosid serve"), e.getMessage());
        });
    }

    @Test
    void badSettingsAreTyped() {
        ConfigException e = fails(ConfigException.class, ErrorCode.CONFIG,
                Runtime.builder().store("memory:").set("ttl", "soon"));
        assertTrue(e.getMessage().contains("ttl") && e.getMessage().contains("soon"), e.getMessage());
        fails(ConfigException.class, ErrorCode.CONFIG, Runtime.builder().store("ftp://example.invalid/x"));
        fails(ConfigException.class, ErrorCode.CONFIG, Runtime.builder().store("memory:").ttl(Duration.ofNanos(1500)));
        fails(ConfigException.class, ErrorCode.CONFIG, Runtime.builder().store("memory:").ttl(Duration.ofSeconds(-5)));
        fails(ConfigException.class, ErrorCode.CONFIG, Runtime.builder().store("memory:").bits(-1));
        fails(ConfigException.class, ErrorCode.UNKNOWN_KEY, Runtime.builder().set("colour", "blue"));
        fails(LayoutException.class, ErrorCode.LAYOUT, Runtime.builder().store("memory:").layout("nanos"));
        fails(ConfigException.class, ErrorCode.CONFIG, Runtime.builder().store("memory:\0sqlite:///x"));
        // Longer than the C ABI takes (4096 bytes): refused before it is read, with its own code.
        fails(CosidException.class, ErrorCode.STRING_TOO_LONG,
                Runtime.builder().namespace("x".repeat(5000)).store("memory:"));
    }

    @Test
    void storeFailuresAreTyped() {
        fails(StoreUnavailableException.class, ErrorCode.STORE_UNAVAILABLE,
                Runtime.builder().store("http://127.0.0.1:1").acquireTimeout(Duration.ofMillis(300)));
        String store = "sqlite://" + dir.resolve("leases.db");
        try (Runtime a = Runtime.builder().store(store).bits(1).build();
                Runtime b = Runtime.builder().store(store).bits(1).ownerKey("b").build()) {
            assertEquals(1, b.status().slot() - a.status().slot());
            fails(ExhaustedException.class, ErrorCode.EXHAUSTED, Runtime.builder().store(store).bits(1)
                    .ownerKey("c").acquireTimeout(Duration.ofMillis(200)));
            CosidException e = fails(CosidException.class, ErrorCode.NAMESPACE_MISMATCH,
                    Runtime.builder().store(store).bits(2).ownerKey("d"));
            assertEquals(CosidException.class, e.getClass());
        }
    }

    @Test
    void badInputNeverCrashes() {
        assertThrows(NullPointerException.class, () -> Cosid.fromBase62(null));
        assertThrows(NullPointerException.class, () -> Cosid.fromFriendly(null));
        assertThrows(NullPointerException.class, () -> Runtime.builder().store(null));
        assertThrows(NullPointerException.class, () -> Runtime.builder().ttl(null));
        assertThrows(NullPointerException.class, () -> Cosid.configure(null));
        assertThrows(NullPointerException.class, () -> Layout.named(null));
        assertThrows(IllegalArgumentException.class, () -> Cosid.nextIds(-1));
        assertThrows(IllegalArgumentException.class, () -> Cosid.nextIds(Cosid.MAX_BATCH + 1));
        for (String text : new String[] {"", "bad", "15nEKcQYOJ", "15nEKcQYOJs1", "-5nEKcQYOJs", "zzzzzzzzzzz",
                "15nEKcQYOJs\0", "15nEKcQY\u00e9Js"}) {
            assertInstanceOf(InvalidIdException.class, assertThrows(CosidException.class, () -> Cosid.fromBase62(text)),
                    text);
        }
        CosidException tooLong = assertThrows(CosidException.class, () -> Cosid.fromBase62("x".repeat(100_000)));
        assertEquals(ErrorCode.STRING_TOO_LONG, tooLong.code());
        for (String text : new String[] {"", "20261130030701393-0", "20261130030701393-0-01", "20261330030701393-0-0",
                "20261130030701393-0-0\0", "+20261130030701393-0-0", "20261130030701393-1024-0"}) {
            assertThrows(InvalidIdException.class, () -> Cosid.fromFriendly(text), text);
        }
        assertThrows(InvalidIdException.class, () -> Cosid.toBase62(-1));
        assertThrows(InvalidIdException.class, () -> Cosid.toFriendly(-1));
        assertThrows(InvalidIdException.class, () -> Cosid.parse(Long.MIN_VALUE));
        assertThrows(InvalidIdException.class, () -> Layout.jsSafe().parse(1L << 60));
        assertThrows(InvalidIdException.class, () -> Layout.millis().compose(0, 1024, 0));
        assertEquals(Long.MAX_VALUE, Cosid.fromBase62(Cosid.toBase62(Long.MAX_VALUE)));
        // The largest base-62 text, 2^64 - 1: no layout makes such an id, and no long holds it.
        assertThrows(InvalidIdException.class, () -> Cosid.fromBase62("LygHa16AHYF"));
        assertEquals("00000000000", Cosid.toBase62(0));
    }

    @Test
    void aListenerThatShutsDownItsRuntimeGetsReentrant() throws Exception {
        var result = new java.util.concurrent.CompletableFuture<Object>();
        Runtime[] holder = new Runtime[1];
        try (Runtime rt = Runtime.builder().store("memory:").ttl(Duration.ofMillis(300)).build()) {
            holder[0] = rt;
            rt.onEvent(ev -> {
                if (!ev.name().equals("RENEWED")) {
                    return;
                }
                try {
                    // An id on the fast path works; a shutdown would join the very thread the listener runs on.
                    holder[0].nextId();
                    holder[0].shutdown();
                    result.complete("no error");
                } catch (Throwable t) {
                    result.complete(t);
                }
            });
            // The first renewal (at ttl/3), on the runtime's thread.
            Object got = result.get(10, java.util.concurrent.TimeUnit.SECONDS);
            CosidException e = assertInstanceOf(CosidException.class, got);
            assertEquals(ErrorCode.REENTRANT, e.code());
            assertTrue(e.getMessage().contains("RENEWED"), e.getMessage());
            assertEquals(Status.State.ACTIVE, rt.status().state());
            rt.nextId();
        }
    }
}
