package io.cosid;

/** Past the lease window's ceiling, and no renewal came within the {@code max_wait} setting. Code {@link ErrorCode#WINDOW_CLOSED}. */
public class WindowClosedException extends CosidException {
    private static final long serialVersionUID = 1L;

    /** A failure with the core's detail {@code message}. */
    public WindowClosedException(String message) {
        super(ErrorCode.WINDOW_CLOSED, message);
    }
}
