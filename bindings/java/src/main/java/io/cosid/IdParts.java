package io.cosid;

import java.time.Instant;

/**
 * The fields of an id ({@link Cosid#parse}, {@link Runtime#parse}, {@link Layout#parse}).
 *
 * @param timestamp the start of the id's tick, exact to the millisecond (UTC)
 * @param slot the slot that issued the id
 * @param sequence the sequence number within the tick
 * @param tick ticks since the layout's epoch
 */
public record IdParts(Instant timestamp, long slot, long sequence, long tick) {
    /** {@link #timestamp()} in Unix milliseconds. */
    public long timestampMs() {
        return timestamp.toEpochMilli();
    }
}
