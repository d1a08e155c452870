package io.cosid;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * cosid: lease-safe Snowflake ids, from libcosid's Rust core through the Foreign Function &amp; Memory API.
 *
 * <pre>{@code
 * long id = Cosid.nextId();                      // 917733937587945472
 * IdParts p = Cosid.parse(id);                   // IdParts[timestamp=2026-11-30T03:07:01.393Z, slot=0, ...]
 * String f = Cosid.toFriendly(id);               // "20261130030701393-0-0"
 * String b = Cosid.toBase62(id);                 // "15nEKcQYOJs"
 * }</pre>
 *
 * <p>The static id calls use the <b>process-wide runtime</b>: one per process, started on first use from the
 * {@code COSID_*} environment variables ({@code COSID_STORE}, {@code COSID_NAMESPACE}, {@code COSID_LAYOUT},
 * {@code COSID_TTL}, ...; with none set, an SQLite file in the user's state directory), or from
 * {@link #configure}. {@link #shutdown()} seals it and releases its slot; so does JVM exit. For a runtime of your
 * own (another namespace, an explicit lifetime), use {@link Runtime#builder()}.
 *
 * <p>Ids are {@code long}s, never negative (the layouts use 63 bits at most). Every failure is a
 * {@link CosidException} with a stable {@link ErrorCode}; a {@code null} argument is a
 * {@link NullPointerException}, a count out of range an {@link IllegalArgumentException}.
 */
public final class Cosid {
    private Cosid() {}

    /** The largest {@link #nextIds} batch: 10,000,000 ids (80 MB), as in Python. */
    public static final int MAX_BATCH = 10_000_000;

    /** The layout given to {@link #configure}, for the text forms; null while the environment decides. */
    private static volatile Layout configured;

    /** The next id of the process-wide runtime (the first call starts it, and may block while it acquires). */
    public static long nextId() {
        MemorySegment out = Scratch.OUT.get();
        try {
            int r = (int) Native.NEXT_ID.invokeExact(out);
            if (r != 0) {
                throw Native.error(r);
            }
            return out.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    /** {@code n} increasing ids of the process-wide runtime in one call ({@code 0 <= n <= }{@link #MAX_BATCH}). */
    public static long[] nextIds(int n) {
        checkCount(n);
        return Scratch.ids(n, Cosid::fill);
    }

    private static void fill(MemorySegment buf, int n) {
        int r;
        try {
            r = (int) Native.NEXT_IDS.invokeExact(buf, (long) n);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        if (r != 0) {
            throw Native.error(r);
        }
    }

    static void checkCount(int n) {
        if (n < 0 || n > MAX_BATCH) {
            throw new IllegalArgumentException("n = " + n + ": expected 0 to " + MAX_BATCH);
        }
    }

    /**
     * Starts the process-wide runtime now from {@code settings} (over the environment, unless the builder says
     * {@link Runtime.Builder#ignoreEnvironment()}), instead of from the environment at the first id. Call it before
     * the first id, or after {@link #shutdown()}; while the runtime runs it throws {@link CosidException} with code
     * {@link ErrorCode#ALREADY_INITIALIZED}. Blocks while the slot is acquired.
     */
    public static void configure(Runtime.Builder settings) {
        Objects.requireNonNull(settings, "settings");
        long key = Events.newList();
        // Before the start, so that they see its first ACQUIRED. The runtime calls the subscription until it is
        // shut down; the list (and its key) live on with the process.
        Events.list(key).addAll(settings.listeners());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment config = settings.newConfig(arena, key);
            try {
                Native.check(Native.invokeInt(Native.INIT, config));
            } catch (RuntimeException | Error e) {
                Events.dropList(key);
                throw e;
            } finally {
                Native.invokeVoid(Native.CONFIG_FREE, config);
            }
            MemorySegment out = arena.allocate(Native.LAYOUT_SIZE, 8);
            Native.check(Native.invokeInt(Native.GLOBAL_LAYOUT, out));
            configured = Layout.read(out);
        }
    }

    /** The process-wide runtime's lease and state (starts the runtime if it is not running). */
    public static Status status() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(Native.STATUS_SIZE, 8);
            Native.check(Native.invokeInt(Native.GLOBAL_STATUS, out));
            return Status.read(out);
        }
    }

    /**
     * Seals the process-wide runtime and releases its slot with the exact last timestamp. Later id calls throw
     * {@link ClosedException} until {@link #configure} (the rule of every language: never a silent restart).
     * Returns the last millisecond used when {@link #configure} started it, else empty. Harmless to call again.
     */
    public static OptionalLong shutdown() {
        Native.check(Native.invokeInt(Native.SHUTDOWN));
        if (configured == null) {
            return OptionalLong.empty();
        }
        return status().lastIssuedMs();
    }

    /**
     * The layout of the process-wide runtime's ids, without starting it: the one given to {@link #configure}, else
     * {@code COSID_LAYOUT}'s, else {@link Layout#millis()}. The text forms below use it.
     */
    public static Layout layout() {
        Layout l = configured;
        if (l != null) {
            return l;
        }
        String env = System.getenv("COSID_LAYOUT");
        return env == null || env.isEmpty() ? Layout.millis() : Layout.named(env);
    }

    /** The fields of an id of the process-wide runtime's layout ({@link #layout()}). */
    public static IdParts parse(long id) {
        return layout().parse(id);
    }

    /** The fields of an id of {@code layout}. */
    public static IdParts parse(long id, Layout layout) {
        return Objects.requireNonNull(layout, "layout").parse(id);
    }

    /** The friendly form {@code yyyyMMddHHmmssSSS-slot-sequence} (UTC) of an id of {@link #layout()}. */
    public static String toFriendly(long id) {
        return layout().toFriendly(id);
    }

    /** Reads the friendly form of an id of {@link #layout()} strictly ({@link InvalidIdException}). */
    public static long fromFriendly(String text) {
        return layout().fromFriendly(text);
    }

    /** The base-62 form of an id: exactly 11 characters of {@code 0-9A-Za-z}, sorting like the ids. */
    public static String toBase62(long id) {
        if (id < 0) {
            throw new InvalidIdException("INVALID_ID: id = " + id + ": expected 0 to 2^63 - 1");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(16);
            MemorySegment len = arena.allocate(JAVA_LONG);
            Native.check(Native.invokeInt(Native.TO_BASE62, id, buf, 16L, len));
            return buf.getString(0);
        }
    }

    /**
     * Reads the base-62 form strictly: exactly 11 characters of {@code 0-9A-Za-z} for a number below 2^63 (every id;
     * the C library reads up to 2^64 - 1, which no layout makes), else {@link InvalidIdException}.
     */
    public static long fromBase62(String text) {
        Objects.requireNonNull(text, "text");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            Native.check(Native.invokeInt(Native.FROM_BASE62,
                    Native.cString(arena, text, "the base-62 id", ErrorCode.INVALID_ID), out));
            long id = out.get(JAVA_LONG, 0);
            if (id < 0) {
                throw new InvalidIdException("INVALID_ID: " + text + " is above 2^63 - 1; no layout makes such an id");
            }
            return id;
        }
    }

    /**
     * Adds a listener for every event of every runtime of this process (the process-wide one and each
     * {@link Runtime}), with the core's level and one-line message; the same events go to the {@code io.cosid}
     * {@link System.Logger}. See {@link EventListener} for the rules.
     */
    public static void addListener(EventListener listener) {
        Native.ensureLoaded();
        Events.GLOBAL.add(Objects.requireNonNull(listener, "listener"));
    }

    /** Removes a listener added by {@link #addListener}. */
    public static void removeListener(EventListener listener) {
        Events.GLOBAL.remove(listener);
    }

    /**
     * The stores the loaded libcosid carries, by the names of their URL schemes' families: memory, sqlite, http,
     * redis and postgres in the released jar. A store URL of any other store fails with a {@link ConfigException} whose
     * message says how to reach it (through {@code cosid serve}, or a build with its feature).
     */
    public static java.util.List<String> stores() {
        return java.util.List.of(Native.staticString(Native.STORES).split(","));
    }

    /** The version of the loaded libcosid, {@code "MAJOR.MINOR.PATCH"}. */
    public static String version() {
        return Native.staticString(Native.VERSION);
    }
}
