package io.cosid;

/** Every slot of the namespace is held, and none came free within the {@code acquire_timeout} setting. Code {@link ErrorCode#EXHAUSTED}. */
public class ExhaustedException extends CosidException {
    private static final long serialVersionUID = 1L;

    /** A failure with the core's detail {@code message}. */
    public ExhaustedException(String message) {
        super(ErrorCode.EXHAUSTED, message);
    }
}
