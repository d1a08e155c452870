package io.cosid;

/** A layout that cannot be built (a zero width, more than 63 bits, an epoch not on a tick, an unknown name). Code {@link ErrorCode#LAYOUT}. */
public class LayoutException extends ConfigException {
    private static final long serialVersionUID = 1L;

    /** A failure with the core's detail {@code message}. */
    public LayoutException(String message) {
        super(ErrorCode.LAYOUT, message);
    }
}
