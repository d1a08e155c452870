package io.cosid;

/** The store could not be reached, or did not answer in time. Code {@link ErrorCode#STORE_UNAVAILABLE}. */
public class StoreUnavailableException extends StoreException {
    private static final long serialVersionUID = 1L;

    /** A failure with the core's detail {@code message}. */
    public StoreUnavailableException(String message) {
        super(ErrorCode.STORE_UNAVAILABLE, message);
    }
}
