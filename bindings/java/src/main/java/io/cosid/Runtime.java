package io.cosid;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.OptionalLong;

/**
 * A runtime with a lease of its own: a slot of one namespace, renewed in the background, issuing unique ids. Built
 * with {@link #builder()}, which acquires the slot; {@link #close()} seals it and releases the slot with its exact
 * last timestamp. Every method may be called from any number of threads at once.
 *
 * <pre>{@code
 * try (Runtime rt = Runtime.builder().store("sqlite:///var/lib/app/leases.db").namespace("orders").build()) {
 *     long id = rt.nextId();
 *     long[] more = rt.nextIds(100);
 *     int slot = rt.status().slot();
 * }
 * }</pre>
 *
 * <p>After {@link #close()} id calls throw {@link ClosedException}; {@link #status()} still works. The native
 * handle is freed when the object is unreachable (a {@link Cleaner}); one still open at JVM exit is closed by a
 * shutdown hook, so its slot is free at once for the next process.
 */
public final class Runtime implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();
    /** The handles not freed yet, by listener key: the shutdown hook shuts them down. */
    private static final Map<Long, Handle> OPEN = new ConcurrentHashMap<>();

    /**
     * A native handle and whether it was freed, guarded by itself: the shutdown hook never shuts down a handle the
     * cleaner freed. Each handle has its own lock, so a listener that starts a runtime while another is shut down
     * waits for nothing.
     */
    private static final class Handle {
        final MemorySegment ptr;
        boolean freed;

        Handle(MemorySegment ptr) {
            this.ptr = ptr;
        }
    }

    private final MemorySegment handle;
    private final long key;
    private final Layout layout;

    private Runtime(MemorySegment handle, long key) {
        this.handle = handle;
        this.key = key;
        Handle h = new Handle(handle);
        OPEN.put(key, h);
        CLEANER.register(this, () -> free(h, key));
        Layout l;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(Native.LAYOUT_SIZE, 8);
            Native.check(Native.invokeInt(Native.RUNTIME_LAYOUT, handle, out));
            l = Layout.read(out);
        }
        this.layout = l;
    }

    private static void free(Handle h, long key) {
        OPEN.remove(key);
        synchronized (h) {
            h.freed = true;
            Native.invokeVoid(Native.RUNTIME_FREE, h.ptr);
        }
        Events.dropList(key);
    }

    static void shutdownAll() {
        for (Handle h : OPEN.values()) {
            synchronized (h) {
                if (!h.freed) {
                    Native.invokeInt(Native.RUNTIME_SHUTDOWN, h.ptr);
                }
            }
        }
    }

    /** Settings for a runtime: over the {@code COSID_*} environment variables unless {@link Builder#ignoreEnvironment()}. */
    public static Builder builder() {
        return new Builder();
    }

    /** The next id. Lock-free; waits only when the millisecond's sequence is used up or the window is not open. */
    public long nextId() {
        MemorySegment out = Scratch.OUT.get();
        try {
            int r = (int) Native.RUNTIME_NEXT_ID.invokeExact(handle, out);
            if (r != 0) {
                throw Native.error(r);
            }
            return out.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** {@code n} increasing ids in one call ({@code 0 <= n <= }{@link Cosid#MAX_BATCH}). */
    public long[] nextIds(int n) {
        Cosid.checkCount(n);
        try {
            return Scratch.ids(n, this::fill);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    private void fill(MemorySegment buf, int n) {
        int r;
        try {
            r = (int) Native.RUNTIME_NEXT_IDS.invokeExact(handle, buf, (long) n);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        if (r != 0) {
            throw Native.error(r);
        }
    }

    /** The lease and state now; works after {@link #close()} too (state {@link Status.State#CLOSED}). */
    public Status status() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(Native.STATUS_SIZE, 8);
            Native.check(Native.invokeInt(Native.RUNTIME_STATUS, handle, out));
            return Status.read(out);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The layout of this runtime's ids. */
    public Layout layout() {
        return layout;
    }

    /** The fields of an id of this runtime's layout. */
    public IdParts parse(long id) {
        return layout.parse(id);
    }

    /** The friendly form of an id of this runtime's layout. */
    public String toFriendly(long id) {
        return layout.toFriendly(id);
    }

    /** Reads the friendly form of an id of this runtime's layout. */
    public long fromFriendly(String text) {
        return layout.fromFriendly(text);
    }

    /** Adds a listener for this runtime's later events (see {@link EventListener} for the rules). */
    public void onEvent(EventListener listener) {
        Objects.requireNonNull(listener, "listener");
        List<EventListener> list = Events.list(key);
        if (list != null) {
            list.add(listener);
        }
        Reference.reachabilityFence(this);
    }

    /** Removes a listener added by {@link #onEvent} or {@link Builder#onEvent}. */
    public void offEvent(EventListener listener) {
        List<EventListener> list = Events.list(key);
        if (list != null) {
            list.remove(listener);
        }
    }

    /**
     * Seals the runtime (no id is returned after this starts) and releases the slot with the exact last timestamp.
     * Returns the last millisecond used, if any id was issued in the last window. Calling it again does nothing.
     */
    public OptionalLong shutdown() {
        try {
            Native.check(Native.invokeInt(Native.RUNTIME_SHUTDOWN, handle));
            return status().lastIssuedMs();
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** {@link #shutdown()}: releases the slot. */
    @Override
    public void close() {
        shutdown();
    }

    /** Whether the runtime was shut down. */
    public boolean isClosed() {
        return status().state() == Status.State.CLOSED;
    }

    @Override
    public String toString() {
        Status s = status();
        return "cosid.Runtime[slot=" + s.slot() + ", state=" + s.state() + ", fence=" + s.fence() + "]";
    }

    /**
     * The settings of a runtime (and of {@link Cosid#configure}): the core's one table, the same keys as the
     * {@code COSID_*} environment variables, C's {@code cosid_config_set}, Python and Node. Values are checked by the
     * core when the runtime starts ({@link ConfigException}, naming the setting, the value and what was expected).
     */
    public static final class Builder {
        private final List<String[]> settings = new ArrayList<>();
        private final List<EventListener> listeners = new ArrayList<>();
        private Layout layout;
        private boolean fromEnvironment = true;

        Builder() {}

        /**
         * Any setting by its key and text value, read by the same parser as its environment variable: {@code
         * store}, {@code namespace}, {@code layout}, {@code ttl}, {@code tolerance}, {@code bits}, {@code
         * owner_key}, {@code preferred_slot}, {@code slots}, {@code acquire_timeout}, {@code max_wait}, {@code
         * backwards_wait}, {@code on_fork}. An empty value restores the default; an unknown key fails when the
         * runtime starts ({@link ErrorCode#UNKNOWN_KEY}).
         */
        public Builder set(String key, String value) {
            settings.add(new String[] {Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value")});
            return this;
        }

        /** The store URL: {@code sqlite:///path}, {@code memory:}, {@code redis://host:6379/0}, {@code postgres://...},
         *  {@code static:3?state_file=PATH}, {@code manual:3}, ... (default: SQLite in the user's state directory). */
        public Builder store(String url) {
            return set("store", url);
        }

        /** The namespace: ids are unique within it ({@code "default"}). */
        public Builder namespace(String name) {
            return set("namespace", name);
        }

        /** A preset layout by name: {@code "millis"} (default), {@code "seconds"}, {@code "js-safe"}. */
        public Builder layout(String name) {
            layout = null;
            return set("layout", name);
        }

        /** A custom layout. */
        public Builder layout(Layout custom) {
            layout = Objects.requireNonNull(custom, "layout");
            return this;
        }

        /** The lease length (30 s). */
        public Builder ttl(Duration d) {
            return set("ttl", duration(d));
        }

        /** How far past expiry a holder may issue (1 s); recorded per namespace. */
        public Builder tolerance(Duration d) {
            return set("tolerance", duration(d));
        }

        /** The slot bits of the namespace: {@code 2^bits} slots (10, or the layout's slot bits if fewer). */
        public Builder bits(int bits) {
            return set("bits", Integer.toString(bits));
        }

        /** The owner key ({@code host:pid}). */
        public Builder ownerKey(String key) {
            return set("owner_key", key);
        }

        /** A slot to take if it is free (a StatefulSet ordinal). */
        public Builder preferredSlot(int slot) {
            return set("preferred_slot", Integer.toString(slot));
        }

        /** How many slots to lease, 1 (default) to 64: throughput past one slot's cap. */
        public Builder slots(int slots) {
            return set("slots", Integer.toString(slots));
        }

        /** How long the start retries an exhausted namespace or an unreachable store (the ttl). */
        public Builder acquireTimeout(Duration d) {
            return set("acquire_timeout", duration(d));
        }

        /** How long an id call waits for a renewal or for the clock to pass the window's floor (2 s). */
        public Builder maxWait(Duration d) {
            return set("max_wait", duration(d));
        }

        /** How far a stepped-back wall clock is waited out (500 ms). */
        public Builder backwardsWait(Duration d) {
            return set("backwards_wait", duration(d));
        }

        /** Start from the defaults rather than from the {@code COSID_*} environment variables. */
        public Builder ignoreEnvironment() {
            fromEnvironment = false;
            return this;
        }

        /** A listener for every event of the runtime from its very start (the first {@code ACQUIRED} too). */
        public Builder onEvent(EventListener listener) {
            listeners.add(Objects.requireNonNull(listener, "listener"));
            return this;
        }

        List<EventListener> listeners() {
            return listeners;
        }

        /** Starts the runtime: opens the store and acquires a slot (blocks for up to the acquire timeout). */
        public Runtime build() {
            long key = Events.newList();
            Events.list(key).addAll(listeners);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment config = newConfig(arena, key);
                try {
                    MemorySegment out = arena.allocate(ADDRESS);
                    Native.check(Native.invokeInt(Native.RUNTIME_NEW, config, out));
                    return new Runtime(out.get(ADDRESS, 0), key);
                } finally {
                    Native.invokeVoid(Native.CONFIG_FREE, config);
                }
            } catch (RuntimeException | Error e) {
                Events.dropList(key);
                throw e;
            }
        }

        /** A {@code cosid_config} with these settings and a subscription to the listener list {@code key}. */
        MemorySegment newConfig(Arena arena, long key) {
            MemorySegment out = arena.allocate(ADDRESS);
            Native.check(Native.invokeInt(fromEnvironment ? Native.CONFIG_FROM_ENV : Native.CONFIG_NEW, out));
            MemorySegment config = out.get(ADDRESS, 0);
            try {
                for (String[] kv : settings) {
                    Native.check(Native.invokeInt(Native.CONFIG_SET, config,
                            Native.cString(arena, kv[0], "the setting's key", ErrorCode.UNKNOWN_KEY),
                            Native.cString(arena, kv[1], "the value of " + kv[0], ErrorCode.CONFIG)));
                }
                if (layout != null) {
                    Native.check(Native.invokeInt(Native.CONFIG_SET_LAYOUT, config, layout.toC(arena)));
                }
                Native.check(Native.invokeInt(Native.CONFIG_SUBSCRIBE, config, Native.EVENT_STUB,
                        MemorySegment.ofAddress(key)));
                return config;
            } catch (RuntimeException | Error e) {
                Native.invokeVoid(Native.CONFIG_FREE, config);
                throw e;
            }
        }

        /** A duration as the core's text: whole milliseconds, else microseconds or nanoseconds (which the core
         *  refuses below a millisecond, with the setting's name). */
        static String duration(Duration d) {
            Objects.requireNonNull(d, "duration");
            try {
                long nanos = d.toNanos();
                if (nanos % 1_000_000 == 0) {
                    return nanos / 1_000_000 + "ms";
                }
                return nanos % 1000 == 0 ? nanos / 1000 + "us" : nanos + "ns";
            } catch (ArithmeticException tooLong) {
                return d.getSeconds() + "s";
            }
        }
    }
}
