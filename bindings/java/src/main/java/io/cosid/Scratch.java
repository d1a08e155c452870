package io.cosid;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A native {@code uint64_t} per thread for the id calls' out-parameter: no allocation on the hot path. */
final class Scratch {
    private Scratch() {}

    static final ThreadLocal<MemorySegment> OUT = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(JAVA_LONG));
}
