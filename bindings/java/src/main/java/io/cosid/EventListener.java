package io.cosid;

/**
 * Receives a runtime's events. Called on the runtime's background thread (the first events of a runtime on the
 * thread that starts it), one event at a time and in order: return promptly, since renewals wait meanwhile. An
 * exception thrown here is logged to the {@code io.cosid} {@link System.Logger} and otherwise ignored; it never
 * reaches the native thread. A call from a listener into the runtime whose event it handles that would have to wait
 * for the listener's own thread (a shutdown, an id that cannot come from the fast path) throws a
 * {@link CosidException} with code {@link ErrorCode#REENTRANT}; its status and layout work.
 */
@FunctionalInterface
public interface EventListener {
    /** Handles one event. */
    void onEvent(CosidEvent event);
}
