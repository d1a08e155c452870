package io.cosid;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Native buffers per thread for the id calls' out-parameters: no allocation on the hot path. Each is freed by the
 * garbage collector with its thread ({@link Arena#ofAuto()}).
 */
final class Scratch {
    private Scratch() {}

    /** One {@code uint64_t}, for {@code next_id}. */
    static final ThreadLocal<MemorySegment> OUT = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(JAVA_LONG));

    /** Batches up to this many ids reuse the thread's buffer (32 KiB); larger ones allocate their own. */
    static final int BATCH = 4096;

    private static final ThreadLocal<MemorySegment> IDS =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(JAVA_LONG, BATCH));

    /** Issues {@code n} ids through {@code fill} (a {@code next_ids} call on a buffer) into a new array. */
    static long[] ids(int n, Fill fill) {
        if (n <= BATCH) {
            MemorySegment buf = IDS.get();
            fill.into(buf, n);
            long[] ids = new long[n];
            MemorySegment.copy(buf, JAVA_LONG, 0, ids, 0, n);
            return ids;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(JAVA_LONG, n);
            fill.into(buf, n);
            return buf.toArray(JAVA_LONG);
        }
    }

    /** A {@code next_ids} call: throws the call's exception, writes {@code n} ids into {@code buf} on success. */
    interface Fill {
        void into(MemorySegment buf, int n);
    }
}
