package io.cosid;

/**
 * The stable codes of cosid's failures: the C library's {@code cosid_result} values (without {@code OK}), with the
 * same names as in Rust ({@code Error::code()}), C ({@code COSID_RESULT_SLOT_LOST}), Python ({@code err.code}) and
 * Node ({@code err.code}). Numbers are never reused or changed: 1xxx the caller passed something unusable, 2xxx a
 * setting, layout or id is invalid, 3xxx the lease or runtime cannot issue now, 4xxx the store failed, 9xxx a bug.
 */
public enum ErrorCode {
    /** A required pointer argument was NULL (a bug in this binding if it ever shows). */
    NULL_POINTER(1000),
    /** A string argument is not valid UTF-8. */
    INVALID_UTF8(1001),
    /** An argument is out of its documented range. */
    INVALID_ARGUMENT(1002),
    /** A buffer was too small (handled inside the binding). */
    BUFFER_TOO_SMALL(1003),
    /** {@link Runtime.Builder#set} was given a key the core does not know. */
    UNKNOWN_KEY(1004),
    /** A string argument is longer than 4096 bytes. */
    STRING_TOO_LONG(1005),
    /** {@link Cosid#configure} while the process-wide runtime is running. */
    ALREADY_INITIALIZED(1006),
    /** A call from an event listener into the runtime that runs it. */
    REENTRANT(1007),
    /** A setting is invalid, or the settings contradict each other. */
    CONFIG(2000),
    /** A layout is invalid. */
    LAYOUT(2001),
    /** An id does not fit the layout, or text is not the canonical form of an id. */
    INVALID_ID(2002),
    /** The lease was lost; ids fail until the runtime has acquired a new slot in the background. */
    SLOT_LOST(3000),
    /** The clock is past the lease window's ceiling and no renewal came in time. */
    WINDOW_CLOSED(3001),
    /** The host clock is still behind the lease window's floor after waiting. */
    BEFORE_WINDOW(3002),
    /** The wall clock stepped back further than the generator waits for. */
    CLOCK_MOVED_BACKWARDS(3003),
    /** Every slot of the namespace is held, and none freed within the acquire timeout. */
    EXHAUSTED(3004),
    /** The namespace is recorded in the store with other settings than this configuration's. */
    NAMESPACE_MISMATCH(3005),
    /** The runtime was shut down. */
    CLOSED(3006),
    /** A forked child that cannot take a slot of its own (C and Python; a JVM does not fork). */
    FORKED(3007),
    /** The store could not be reached, or did not answer in time. */
    STORE_UNAVAILABLE(4000),
    /** A record in the store breaks the protocol's invariants. */
    CORRUPT_RECORD(4001),
    /** The store reported another error. */
    STORE(4002),
    /** A static slot's state file is locked by another process, corrupt, or cannot be written. */
    STATE_FILE(4003),
    /** The store lost or rolled back writes. */
    STORE_REGRESSION(4004),
    /** A bug in cosid: a panic was caught at the C boundary. */
    PANIC(9000),
    /** A bug in cosid: an internal invariant failed. */
    INTERNAL(9001),
    /** A code this version of the binding does not know (a newer library). */
    UNKNOWN(-1);

    private final int number;

    ErrorCode(int number) {
        this.number = number;
    }

    /** The number of the code in the C ABI ({@code COSID_RESULT_...}); -1 for {@link #UNKNOWN}. */
    public int number() {
        return number;
    }

    /** The code of a C result number; {@link #UNKNOWN} for a number this binding does not know. */
    public static ErrorCode of(int number) {
        for (ErrorCode code : values()) {
            if (code.number == number) {
                return code;
            }
        }
        return UNKNOWN;
    }
}
