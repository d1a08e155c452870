package io.cosid;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * The C ABI of include/cosid.h as method handles, and the few conversions every call shares. Nothing here decides
 * anything: every rule is the core's, reached through these calls.
 */
final class Native {
    private Native() {}

    static final Linker LINKER = Linker.nativeLinker();
    static final SymbolLookup LIB = NativeLoader.load();

    // Struct sizes and offsets, x86-64 System V (and every LP64 ABI): include/cosid.h.
    static final long LAYOUT_SIZE = 16; // u64 epoch_ms; u32 tick_ms; u8 ts, slot, seq; pad
    static final long STATUS_SIZE = 64; // u32 slot, state; u64 fence, floor, ceiling, expires, store_now, last; bool
    static final long PARTS_SIZE = 32; // u64 tick, timestamp_ms, slot, sequence
    static final long EVENT_SIZE = 128;
    static final long LOG_PARAMS_SIZE = 24; // u32 level; pad; char *message; cosid_event *event
    static final long ERROR_BUF = 1024;

    private static MethodHandle fn(String name, FunctionDescriptor descriptor) {
        MemorySegment symbol = LIB.find(name).orElseThrow(
                () -> new UnsatisfiedLinkError("cosid: libcosid has no symbol " + name + " (an older library?)"));
        return LINKER.downcallHandle(symbol, descriptor);
    }

    private static final FunctionDescriptor R_P = FunctionDescriptor.of(JAVA_INT, ADDRESS);
    private static final FunctionDescriptor R_PP = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS);
    private static final FunctionDescriptor R_PPP = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS);

    static final MethodHandle VERSION = fn("cosid_version", FunctionDescriptor.of(ADDRESS));
    static final MethodHandle STORES = fn("cosid_stores", FunctionDescriptor.of(ADDRESS));
    static final MethodHandle RESULT_NAME = fn("cosid_result_name", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    static final MethodHandle RESULT_MESSAGE = fn("cosid_result_message", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    static final MethodHandle LAST_ERROR = fn("cosid_last_error", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
    static final MethodHandle SET_LOG_CALLBACK = fn("cosid_set_log_callback",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));

    static final MethodHandle CONFIG_NEW = fn("cosid_config_new", R_P);
    static final MethodHandle CONFIG_FROM_ENV = fn("cosid_config_from_env", R_P);
    static final MethodHandle CONFIG_SET = fn("cosid_config_set", R_PPP);
    static final MethodHandle CONFIG_SET_LAYOUT = fn("cosid_config_set_layout", R_PP);
    static final MethodHandle CONFIG_SUBSCRIBE = fn("cosid_config_subscribe", R_PPP);
    static final MethodHandle CONFIG_FREE = fn("cosid_config_free", FunctionDescriptor.ofVoid(ADDRESS));

    static final MethodHandle NEXT_ID = fn("cosid_next_id", R_P);
    static final MethodHandle NEXT_IDS = fn("cosid_next_ids", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
    static final MethodHandle INIT = fn("cosid_init", R_P);
    static final MethodHandle SHUTDOWN = fn("cosid_shutdown", FunctionDescriptor.of(JAVA_INT));
    static final MethodHandle GLOBAL_STATUS = fn("cosid_global_status", R_P);
    static final MethodHandle GLOBAL_LAYOUT = fn("cosid_global_layout", R_P);

    static final MethodHandle LAYOUT_NAMED = fn("cosid_layout_named", R_PP);
    static final MethodHandle LAYOUT_CHECK = fn("cosid_layout_check", R_P);
    static final MethodHandle LAYOUT_CAP = fn("cosid_layout_cap_per_second", R_PP);
    static final MethodHandle COMPOSE = fn("cosid_compose",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS));
    static final MethodHandle DECOMPOSE = fn("cosid_decompose", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
    static final MethodHandle TO_FRIENDLY = fn("cosid_id_to_friendly",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS));
    static final MethodHandle FROM_FRIENDLY = fn("cosid_id_from_friendly", R_PPP);
    static final MethodHandle TO_BASE62 = fn("cosid_id_to_base62",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS));
    static final MethodHandle FROM_BASE62 = fn("cosid_id_from_base62", R_PP);

    static final MethodHandle RUNTIME_NEW = fn("cosid_runtime_new", R_PP);
    static final MethodHandle RUNTIME_NEXT_ID = fn("cosid_runtime_next_id", R_PP);
    static final MethodHandle RUNTIME_NEXT_IDS = fn("cosid_runtime_next_ids",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG));
    static final MethodHandle RUNTIME_STATUS = fn("cosid_runtime_status", R_PP);
    static final MethodHandle RUNTIME_LAYOUT = fn("cosid_runtime_layout", R_PP);
    static final MethodHandle RUNTIME_SHUTDOWN = fn("cosid_runtime_shutdown", R_P);
    static final MethodHandle RUNTIME_FREE = fn("cosid_runtime_free", FunctionDescriptor.ofVoid(ADDRESS));

    /** The one event callback (userdata: the key of a listener list in {@link Events}), alive as long as the JVM. */
    static final MemorySegment EVENT_STUB = upcall("onEvent");
    /** The one process-wide log callback, to {@link System.Logger} and {@link Cosid#addListener}. */
    static final MemorySegment LOG_STUB = upcall("onLog");

    private static MemorySegment upcall(String method) {
        try {
            MethodHandle target = MethodHandles.lookup().findStatic(Events.class, method,
                    MethodType.methodType(void.class, MemorySegment.class, MemorySegment.class));
            return LINKER.upcallStub(target, FunctionDescriptor.ofVoid(ADDRESS, ADDRESS), Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }

    static {
        checkVersion(staticString(VERSION), Native.class.getPackage().getImplementationVersion());
        // Every event of every runtime reaches System.Logger and the process-wide listeners; the level is the
        // core's (DEBUG = 1: all of them, filtered by the logger).
        check(invokeInt(SET_LOG_CALLBACK, LOG_STUB, MemorySegment.NULL, 1));
        java.lang.Runtime.getRuntime().addShutdownHook(new Thread(Native::atExit, "cosid-shutdown"));
    }

    /**
     * Refuses a library of another ABI than the jar's: before 1.0 every minor version may change the C structs this
     * binding reads (include/cosid.h), after it every major one. {@code jar} is null when the classes do not come
     * from the jar (a build folder): then nothing is checked.
     */
    static void checkVersion(String lib, String jar) {
        if (jar == null || jar.equals(lib)) {
            return;
        }
        String[] l = lib.split("\\.");
        String[] j = jar.split("[.-]");
        boolean same = l.length >= 2 && j.length >= 2 && l[0].equals(j[0]) && (!l[0].equals("0") || l[1].equals(j[1]));
        if (!same) {
            throw new UnsatisfiedLinkError("cosid: the loaded libcosid is version " + lib + ", but this jar is " + jar
                    + " and reads the C ABI of its own version; load a libcosid " + jar
                    + " (-D" + NativeLoader.PATH_PROPERTY + ") or the jar of the library's version");
        }
    }

    /** Loads the library (the class's initialization), or throws its {@link UnsatisfiedLinkError}. */
    static void ensureLoaded() {}

    /**
     * At JVM exit: every open runtime and the process-wide one are shut down (their slots released with their
     * exact last timestamps), then the log callback is removed, so that nothing calls into Java after the JVM
     * stopped running it (libcosid's own atexit handler finds the process-wide runtime shut down already).
     */
    private static void atExit() {
        try {
            Runtime.shutdownAll();
            invokeInt(SHUTDOWN);
        } finally {
            invokeInt(SET_LOG_CALLBACK, MemorySegment.NULL, MemorySegment.NULL, 1);
        }
    }

    /** Calls a cold-path handle returning a {@code cosid_result}. */
    static int invokeInt(MethodHandle handle, Object... args) {
        try {
            return (int) handle.invokeWithArguments(args);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    static void invokeVoid(MethodHandle handle, Object... args) {
        try {
            handle.invokeWithArguments(args);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException e) {
            throw e;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }

    /** Throws the exception of {@code result} unless it is {@code COSID_RESULT_OK}. */
    static void check(int result) {
        if (result != 0) {
            throw error(result);
        }
    }

    /**
     * The exception of a failed call, with the detail of {@code cosid_last_error}, which must be read on the thread
     * of the failed call, right after it. The detail starts with the code's name; one that does not (read on
     * another carrier thread by a virtual thread that moved between the two calls) is replaced by the code's
     * sentence.
     */
    static CosidException error(int result) {
        ErrorCode code = ErrorCode.of(result);
        String name = code == ErrorCode.UNKNOWN ? staticString(RESULT_NAME, result) : code.name();
        String detail = lastError();
        if (!detail.startsWith(name + ":")) {
            detail = name + ": " + staticString(RESULT_MESSAGE, result);
        }
        return CosidException.of(code, detail);
    }

    static String lastError() {
        try (Arena arena = Arena.ofConfined()) {
            long size = ERROR_BUF;
            for (int tries = 0; tries < 3; tries++) {
                MemorySegment buf = arena.allocate(size);
                MemorySegment len = arena.allocate(JAVA_LONG);
                int r = invokeInt(LAST_ERROR, buf, size, len);
                if (r == 0) {
                    return buf.getString(0);
                }
                if (r != ErrorCode.BUFFER_TOO_SMALL.number()) {
                    return "";
                }
                size = len.get(JAVA_LONG, 0) + 1;
            }
            return "";
        }
    }

    /** A static string the library returns (a result's name or message, the version). */
    static String staticString(MethodHandle handle, Object... args) {
        try {
            MemorySegment p = (MemorySegment) handle.invokeWithArguments(args);
            return string(p);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** A NUL-terminated C string; "" for NULL. */
    static String string(MemorySegment p) {
        if (p.equals(MemorySegment.NULL)) {
            return "";
        }
        return p.reinterpret(Long.MAX_VALUE).getString(0);
    }

    /**
     * {@code value} as a NUL-terminated UTF-8 string. A NUL inside would cut the text short in C, so it is refused
     * with {@code onNul} rather than passed on as a shorter, different text.
     */
    static MemorySegment cString(Arena arena, String value, String what, ErrorCode onNul) {
        int nul = value.indexOf('\0');
        if (nul >= 0) {
            throw CosidException.of(onNul, onNul.name() + ": " + what + " contains a NUL character at index " + nul
                    + "; expected text without NUL");
        }
        return arena.allocateFrom(value);
    }
}
