package io.cosid;

/** An id that does not fit its layout, or text that is not the canonical form of an id. Code {@link ErrorCode#INVALID_ID}. */
public class InvalidIdException extends CosidException {
    private static final long serialVersionUID = 1L;

    /** A failure with the core's detail {@code message}. */
    public InvalidIdException(String message) {
        super(ErrorCode.INVALID_ID, message);
    }
}
