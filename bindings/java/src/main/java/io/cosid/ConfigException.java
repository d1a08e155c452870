package io.cosid;

/**
 * A setting is invalid or the settings contradict each other ({@link ErrorCode#CONFIG}; the message names the
 * setting, the value and what was expected), a setting's key is unknown ({@link ErrorCode#UNKNOWN_KEY}), or a
 * layout cannot be built ({@link LayoutException}, {@link ErrorCode#LAYOUT}).
 */
public class ConfigException extends CosidException {
    private static final long serialVersionUID = 1L;

    /** A configuration failure with its code and the core's detail. */
    public ConfigException(ErrorCode code, String message) {
        super(code, message);
    }
}
