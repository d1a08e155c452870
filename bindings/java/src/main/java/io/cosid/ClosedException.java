package io.cosid;

/** The runtime was shut down ({@link Runtime#close()}, {@link Cosid#shutdown()}, or the JVM is exiting). Code {@link ErrorCode#CLOSED}. */
public class ClosedException extends CosidException {
    private static final long serialVersionUID = 1L;

    /** A failure with the core's detail {@code message}. */
    public ClosedException(String message) {
        super(ErrorCode.CLOSED, message);
    }
}
