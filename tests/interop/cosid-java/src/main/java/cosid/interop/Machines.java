package cosid.interop;

/**
 * One CosId instance's machine id, taken from Redis through CosId's own SpringRedisMachineIdDistributor.
 * Each CosId line has its own adapter (the classes moved between 1.x and 2.x); the pom compiles only one.
 */
public interface Machines {
    /** The CosId version this adapter was built against. */
    String cosidVersion();

    /** Takes a machine id for {@code instanceId} in {@code namespace} (10 machine bits), and guards it if the line can. */
    int distribute(String namespace, String instanceId);

    /** A normal stop: stops guarding and reverts the machine id, as CosId does on shutdown. */
    void revert();

    /** Loads whichever adapter was compiled. */
    static Machines open(int redisPort, long guardMs) {
        for (String name : new String[] {"cosid.interop.v2.CosId2Machines", "cosid.interop.v1.CosId1Machines"}) {
            try {
                Class<?> c = Class.forName(name);
                return (Machines) c.getConstructor(int.class, long.class).newInstance(redisPort, guardMs);
            } catch (ClassNotFoundException e) {
                // not this line's build
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot start " + name, e);
            }
        }
        throw new IllegalStateException("no CosId adapter was compiled");
    }
}
