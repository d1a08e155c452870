package io.cosid;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;
import java.util.OptionalLong;

/**
 * One event of a runtime: a lease acquired, renewed, lost or released, a failed renewal, a clock skew, ... Fields
 * a kind does not use are 0 (and the strings {@code ""}). The same names and fields as in C, Python and Node.
 *
 * @param name the stable upper-case name ({@code "SLOT_LOST"}), the same in every binding
 * @param kind what happened ({@link Kind#UNKNOWN} for a kind this binding does not know: treat it as information)
 * @param level how much it matters, as the core rates it ({@code null} for an event from a runtime's own
 *     subscription, {@link Runtime.Builder#onEvent} and {@link Runtime#onEvent}, where the C ABI gives no level)
 * @param message a one-line description for a person, the same words in every binding ({@code ""} where
 *     {@code level} is {@code null})
 * @param slot the slot concerned
 * @param fence the lease's fence ({@code ACQUIRED})
 * @param floorMs window floor, excluded, in store milliseconds ({@code ACQUIRED})
 * @param ceilingMs window ceiling, included ({@code ACQUIRED}, {@code RENEWED})
 * @param expiresAtMs lease expiry ({@code ACQUIRED}, {@code RENEWED})
 * @param lastIssuedMs the last millisecond used, handed to the next holder ({@code RELEASED})
 * @param otherSlot the other instance's slot ({@code DUPLICATE_OWNER_KEY})
 * @param localMs this host's clock ({@code CLOCK_SKEW})
 * @param storeMs the store's clock ({@code CLOCK_SKEW})
 * @param retryInMs when the next try is ({@code RENEW_FAILED})
 * @param detail the error, the reason or the key
 * @param store the store kind ({@code STORE_UNSAFE})
 * @param setting the server setting ({@code STORE_UNSAFE})
 * @param value its value on the server ({@code STORE_UNSAFE})
 * @param expected the value the safety claim needs ({@code STORE_UNSAFE})
 */
public record CosidEvent(String name, Kind kind, System.Logger.Level level, String message, int slot, long fence,
        long floorMs, long ceilingMs, long expiresAtMs, OptionalLong lastIssuedMs, int otherSlot, long localMs,
        long storeMs, long retryInMs, String detail, String store, String setting, String value, String expected) {

    /** What happened; numbers as in {@code cosid_event_kind}. */
    public enum Kind {
        /** An event this version has no kind for; {@code detail} describes it. */
        UNKNOWN,
        /** A lease was granted. */
        ACQUIRED,
        /** The lease was renewed. */
        RENEWED,
        /** A renewal failed and will be retried; ids are still issued up to the ceiling. */
        RENEW_FAILED,
        /** The lease was found gone: id calls fail until a new slot is acquired. */
        SLOT_LOST,
        /** The lease was given back at shutdown. */
        RELEASED,
        /** Another live instance has the same owner key; this one took another slot. */
        DUPLICATE_OWNER_KEY,
        /** The store's clock and this host's differ by more than half the tolerance. */
        CLOCK_SKEW,
        /** The store's record of a slot went backwards (the store lost writes). */
        STORE_REGRESSION,
        /** The store's server runs with a setting that lets it lose a committed write. */
        STORE_UNSAFE;

        static Kind of(int n) {
            return n >= 0 && n < values().length ? values()[n] : UNKNOWN;
        }
    }

    static CosidEvent read(MemorySegment e, System.Logger.Level level, String message) {
        e = e.reinterpret(Native.EVENT_SIZE);
        return new CosidEvent(Native.string(e.get(ADDRESS, 88)), Kind.of(e.get(JAVA_INT, 0)), level, message,
                e.get(JAVA_INT, 4), e.get(JAVA_LONG, 8), e.get(JAVA_LONG, 16), e.get(JAVA_LONG, 24),
                e.get(JAVA_LONG, 32),
                e.get(JAVA_BOOLEAN, 48) ? OptionalLong.of(e.get(JAVA_LONG, 40)) : OptionalLong.empty(),
                e.get(JAVA_INT, 52), e.get(JAVA_LONG, 56), e.get(JAVA_LONG, 64), e.get(JAVA_LONG, 72),
                Native.string(e.get(ADDRESS, 80)), Native.string(e.get(ADDRESS, 96)),
                Native.string(e.get(ADDRESS, 104)), Native.string(e.get(ADDRESS, 112)),
                Native.string(e.get(ADDRESS, 120)));
    }
}
