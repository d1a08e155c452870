package io.cosid;

/** A child JVM of {@link LoaderTest}: loads libcosid as a user's program does, and prints its version and an id. */
public final class LoaderProbe {
    private LoaderProbe() {}

    public static void main(String[] args) {
        try {
            System.out.println("version " + Cosid.version());
            System.out.println("id " + Cosid.nextId());
        } catch (Throwable t) {
            System.out.println("failed: " + t);
            System.exit(3);
        }
    }
}
