package io.cosid;

/**
 * The store failed: {@link ErrorCode#STORE} (it answered with an error), {@link ErrorCode#STORE_UNAVAILABLE}
 * ({@link StoreUnavailableException}), {@link ErrorCode#CORRUPT_RECORD}, {@link ErrorCode#STATE_FILE} or
 * {@link ErrorCode#STORE_REGRESSION}.
 */
public class StoreException extends CosidException {
    private static final long serialVersionUID = 1L;

    /** A store failure with its code and the core's detail. */
    public StoreException(ErrorCode code, String message) {
        super(code, message);
    }
}
