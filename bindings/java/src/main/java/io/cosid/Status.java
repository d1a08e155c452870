package io.cosid;

import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;
import java.time.Instant;
import java.util.OptionalLong;

/**
 * A runtime's lease and state at one moment. Times are Unix milliseconds by the store's clock.
 *
 * @param slot the leased slot (the lowest, when the runtime leases several)
 * @param state what the runtime is doing
 * @param fence the lease's fence: grows with every grant and release of the slot
 * @param floorMs window floor (excluded): ids of this lease have timestamps above it
 * @param ceilingMs window ceiling (included): no id of this lease has a later timestamp
 * @param expiresAtMs when the lease expires unless renewed
 * @param storeNowMs the store's clock at its last reply
 * @param lastIssuedMs the last millisecond used by an id of this window, if any was issued
 */
public record Status(int slot, State state, long fence, long floorMs, long ceilingMs, long expiresAtMs,
        long storeNowMs, OptionalLong lastIssuedMs) {

    /** What a runtime is doing. */
    public enum State {
        /** A state this version of the binding has no name for. */
        UNKNOWN,
        /** Issuing, with a current lease. */
        ACTIVE,
        /** Issuing, but the last renewal failed; retrying. */
        RENEWING,
        /** The lease was lost; acquiring a new slot. Id calls fail with {@link SlotLostException}. */
        REACQUIRING,
        /** Shut down. */
        CLOSED;

        static State of(int n) {
            return n >= 0 && n < values().length ? values()[n] : UNKNOWN;
        }
    }

    /** {@link #expiresAtMs()} as an instant. */
    public Instant expiresAt() {
        return Instant.ofEpochMilli(expiresAtMs);
    }

    static Status read(MemorySegment c) {
        return new Status(c.get(JAVA_INT, 0), State.of(c.get(JAVA_INT, 4)), c.get(JAVA_LONG, 8),
                c.get(JAVA_LONG, 16), c.get(JAVA_LONG, 24), c.get(JAVA_LONG, 32), c.get(JAVA_LONG, 40),
                c.get(JAVA_BOOLEAN, 56) ? OptionalLong.of(c.get(JAVA_LONG, 48)) : OptionalLong.empty());
    }
}
