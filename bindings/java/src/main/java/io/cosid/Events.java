package io.cosid;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The targets of the two upcall stubs. The native side calls them on its own threads: nothing may escape them (an
 * exception unwinding into native code ends the JVM), so each catches every {@link Throwable}.
 */
final class Events {
    private Events() {}

    static final System.Logger LOGGER = System.getLogger("io.cosid");

    /** Listener lists by key; a key is a subscription's userdata. */
    private static final Map<Long, List<EventListener>> LISTS = new ConcurrentHashMap<>();
    private static final AtomicLong NEXT_KEY = new AtomicLong(1);
    /** The process-wide listeners (every runtime's events, through the log callback). */
    static final List<EventListener> GLOBAL = new CopyOnWriteArrayList<>();

    static long newList() {
        long key = NEXT_KEY.getAndIncrement();
        LISTS.put(key, new CopyOnWriteArrayList<>());
        return key;
    }

    static List<EventListener> list(long key) {
        return LISTS.get(key);
    }

    static void dropList(long key) {
        LISTS.remove(key);
    }

    /** {@code cosid_event_callback}: userdata is the key of a list. */
    static void onEvent(MemorySegment userdata, MemorySegment event) {
        try {
            List<EventListener> listeners = LISTS.get(userdata.address());
            if (listeners == null || listeners.isEmpty()) {
                return;
            }
            deliver(listeners, CosidEvent.read(event, null, ""));
        } catch (Throwable t) {
            swallow(t);
        }
    }

    /** {@code cosid_log_callback}: to System.Logger, then to the process-wide listeners. */
    static void onLog(MemorySegment userdata, MemorySegment params) {
        try {
            MemorySegment p = params.reinterpret(Native.LOG_PARAMS_SIZE);
            System.Logger.Level level = switch (p.get(JAVA_INT, 0)) {
                case 1 -> System.Logger.Level.DEBUG;
                case 2 -> System.Logger.Level.INFO;
                case 3 -> System.Logger.Level.WARNING;
                case 4 -> System.Logger.Level.ERROR;
                default -> System.Logger.Level.INFO;
            };
            boolean logged = LOGGER.isLoggable(level);
            if (!logged && GLOBAL.isEmpty()) {
                return;
            }
            String message = Native.string(p.get(ADDRESS, 8));
            if (logged) {
                LOGGER.log(level, message);
            }
            if (!GLOBAL.isEmpty()) {
                deliver(GLOBAL, CosidEvent.read(p.get(ADDRESS, 16), level, message));
            }
        } catch (Throwable t) {
            swallow(t);
        }
    }

    private static void deliver(List<EventListener> listeners, CosidEvent event) {
        for (EventListener listener : listeners) {
            try {
                listener.onEvent(event);
            } catch (Throwable t) {
                swallow(t);
            }
        }
    }

    private static void swallow(Throwable t) {
        try {
            LOGGER.log(System.Logger.Level.ERROR, "cosid: an event listener threw; the event is dropped", t);
        } catch (Throwable ignored) {
            // Nothing may unwind into the native thread, not even a failing logger.
        }
    }
}
