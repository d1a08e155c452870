package io.cosid;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Instant;
import java.util.Objects;

/**
 * How an id's 63 usable bits are split: {@code 0 | timestamp | slot | sequence} from the most significant bit down,
 * the timestamp counted in ticks since {@link #epochMs()}. Checked by the core when built
 * ({@link LayoutException}). The presets: {@link #millis()} (the default: 41, 10, 12), {@link #seconds()} (31, 10,
 * 22 with second ticks), {@link #jsSafe()} (41, 5, 7: 53 bits, exact as a JavaScript number).
 *
 * @param epochMs Unix milliseconds at the start of tick 0 (the default epoch is 1577203200000,
 *     2019-12-24T16:00:00Z)
 * @param tick the length of a tick
 * @param timestampBits width of the timestamp field in bits
 * @param slotBits width of the slot field in bits
 * @param sequenceBits width of the sequence field in bits
 */
public record Layout(long epochMs, Tick tick, int timestampBits, int slotBits, int sequenceBits) {
    /** The length of a tick. */
    public enum Tick {
        /** One millisecond. */
        MILLISECOND(1),
        /** One second. */
        SECOND(1000);

        private final int ms;

        Tick(int ms) {
            this.ms = ms;
        }

        /** The tick's length in milliseconds. */
        public int millis() {
            return ms;
        }
    }

    /** Checks the layout with the core. */
    public Layout {
        Objects.requireNonNull(tick, "tick");
        checkWidth("timestampBits", timestampBits);
        checkWidth("slotBits", slotBits);
        checkWidth("sequenceBits", sequenceBits);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment c = arena.allocate(Native.LAYOUT_SIZE, 8);
            write(c, epochMs, tick, timestampBits, slotBits, sequenceBits);
            Native.check(Native.invokeInt(Native.LAYOUT_CHECK, c));
        }
    }

    private static void checkWidth(String name, int bits) {
        // The C struct holds a byte: a wider value would wrap into another width instead of being refused.
        if (bits < 0 || bits > 255) {
            throw new LayoutException("LAYOUT: " + name + " = " + bits + ": expected 1 to 63 bits");
        }
    }

    private static final Layout MILLIS = named("millis");
    private static final Layout SECONDS = named("seconds");
    private static final Layout JS_SAFE = named("js-safe");

    /** The default layout: 41 bits of millisecond ticks, 10 of slot, 12 of sequence. */
    public static Layout millis() {
        return MILLIS;
    }

    /** 31 bits of second ticks, 10 of slot, 22 of sequence. */
    public static Layout seconds() {
        return SECONDS;
    }

    /** 41 bits of millisecond ticks, 5 of slot, 7 of sequence: 53 bits in all, exact as a JavaScript number. */
    public static Layout jsSafe() {
        return JS_SAFE;
    }

    /** The preset called {@code name}: {@code "millis"}, {@code "seconds"} or {@code "js-safe"}. */
    public static Layout named(String name) {
        Objects.requireNonNull(name, "name");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(Native.LAYOUT_SIZE, 8);
            Native.check(Native.invokeInt(Native.LAYOUT_NAMED,
                    Native.cString(arena, name, "the layout name", ErrorCode.LAYOUT), out));
            return read(out);
        }
    }

    /** The most ids one slot of this layout can issue in one second (4096000 for {@link #millis()}). */
    public long capPerSecond() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            Native.check(Native.invokeInt(Native.LAYOUT_CAP, toC(arena), out));
            return out.get(JAVA_LONG, 0);
        }
    }

    /** Builds an id from its fields ({@link InvalidIdException} when one is out of range). */
    public long compose(long tick, long slot, long sequence) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            Native.check(Native.invokeInt(Native.COMPOSE, toC(arena), tick, slot, sequence, out));
            return out.get(JAVA_LONG, 0);
        }
    }

    /** Splits an id of this layout into its fields ({@link InvalidIdException} for an id it did not make). */
    public IdParts parse(long id) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(Native.PARTS_SIZE, 8);
            Native.check(Native.invokeInt(Native.DECOMPOSE, toC(arena), id, out));
            return new IdParts(Instant.ofEpochMilli(out.get(JAVA_LONG, 8)), out.get(JAVA_LONG, 16),
                    out.get(JAVA_LONG, 24), out.get(JAVA_LONG, 0));
        }
    }

    /** The friendly form {@code yyyyMMddHHmmssSSS-slot-sequence} (UTC) of an id of this layout. */
    public String toFriendly(long id) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(64);
            MemorySegment len = arena.allocate(JAVA_LONG);
            Native.check(Native.invokeInt(Native.TO_FRIENDLY, toC(arena), id, buf, 64L, len));
            return buf.getString(0);
        }
    }

    /** Reads the friendly form strictly: only what {@link #toFriendly} writes ({@link InvalidIdException}). */
    public long fromFriendly(String text) {
        Objects.requireNonNull(text, "text");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            Native.check(Native.invokeInt(Native.FROM_FRIENDLY, toC(arena),
                    Native.cString(arena, text, "the friendly id", ErrorCode.INVALID_ID), out));
            return out.get(JAVA_LONG, 0);
        }
    }

    MemorySegment toC(Arena arena) {
        MemorySegment c = arena.allocate(Native.LAYOUT_SIZE, 8);
        write(c, epochMs, tick, timestampBits, slotBits, sequenceBits);
        return c;
    }

    private static void write(MemorySegment c, long epochMs, Tick tick, int ts, int slot, int seq) {
        c.set(JAVA_LONG, 0, epochMs);
        c.set(JAVA_INT, 8, tick.millis());
        c.set(JAVA_BYTE, 12, (byte) ts);
        c.set(JAVA_BYTE, 13, (byte) slot);
        c.set(JAVA_BYTE, 14, (byte) seq);
    }

    static Layout read(MemorySegment c) {
        int tickMs = c.get(JAVA_INT, 8);
        Tick tick = tickMs == 1000 ? Tick.SECOND : Tick.MILLISECOND;
        return new Layout(c.get(JAVA_LONG, 0), tick, Byte.toUnsignedInt(c.get(JAVA_BYTE, 12)),
                Byte.toUnsignedInt(c.get(JAVA_BYTE, 13)), Byte.toUnsignedInt(c.get(JAVA_BYTE, 14)));
    }
}
