package io.cosid;

/** The lease was found gone; ids fail until the runtime has acquired a new slot in the background. Code {@link ErrorCode#SLOT_LOST}. */
public class SlotLostException extends CosidException {
    private static final long serialVersionUID = 1L;

    /** A failure with the core's detail {@code message}. */
    public SlotLostException(String message) {
        super(ErrorCode.SLOT_LOST, message);
    }
}
