package io.cosid;

import java.util.Objects;

/**
 * A failure of cosid: {@link #code()} is the core's stable code, the same name as in C, Python and Node. Unchecked,
 * as every cosid error; the subclasses are the codes a caller commonly handles apart:
 * {@link SlotLostException}, {@link WindowClosedException}, {@link ClosedException}, {@link ExhaustedException},
 * {@link StoreException} (and {@link StoreUnavailableException}), {@link ConfigException} (and
 * {@link LayoutException}), {@link InvalidIdException}. Every other code is a plain {@code CosidException}.
 */
public class CosidException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;

    /** A failure with {@code code} and the detail {@code message} (the core's words). */
    public CosidException(ErrorCode code, String message) {
        super(message);
        this.code = Objects.requireNonNull(code, "code");
    }

    /** The stable code of this failure. */
    public ErrorCode code() {
        return code;
    }

    /** The exception class for a code: one switch, so a code added to {@link ErrorCode} is mapped here. */
    static CosidException of(ErrorCode code, String message) {
        return switch (code) {
            case SLOT_LOST -> new SlotLostException(message);
            case WINDOW_CLOSED -> new WindowClosedException(message);
            case CLOSED -> new ClosedException(message);
            case EXHAUSTED -> new ExhaustedException(message);
            case STORE_UNAVAILABLE -> new StoreUnavailableException(message);
            case STORE, CORRUPT_RECORD, STATE_FILE, STORE_REGRESSION -> new StoreException(code, message);
            case CONFIG, UNKNOWN_KEY -> new ConfigException(code, message);
            case LAYOUT -> new LayoutException(message);
            case INVALID_ID -> new InvalidIdException(message);
            case NULL_POINTER, INVALID_UTF8, INVALID_ARGUMENT, BUFFER_TOO_SMALL, STRING_TOO_LONG, ALREADY_INITIALIZED,
                 REENTRANT, BEFORE_WINDOW, CLOCK_MOVED_BACKWARDS, NAMESPACE_MISMATCH, FORKED, PANIC, INTERNAL,
                 UNKNOWN -> new CosidException(code, message);
        };
    }
}
