package cosid.interop.v2;

import cosid.interop.Machines;
import java.time.Duration;
import me.ahoo.cosid.machine.ClockBackwardsSynchronizer;
import me.ahoo.cosid.machine.DefaultMachineIdGuarder;
import me.ahoo.cosid.machine.InMemoryMachineStateStorage;
import me.ahoo.cosid.machine.InstanceId;
import me.ahoo.cosid.machine.MachineIdDistributor;
import me.ahoo.cosid.machine.MachineIdGuarder;
import me.ahoo.cosid.machine.MachineState;
import me.ahoo.cosid.spring.redis.SpringRedisMachineIdDistributor;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

/** CosId 2.x: distribute, a guarder that writes the current time every guardMs, revert on a normal stop. */
public final class CosId2Machines implements Machines {
    /** CosId's default safe-guard duration (cosid.snowflake.machine.safe-guard-duration). */
    private static final Duration SAFE_GUARD = Duration.ofMinutes(5);

    private final LettuceConnectionFactory factory;
    private final MachineIdDistributor distributor;
    private final MachineIdGuarder guarder;
    private String namespace;
    private InstanceId instance;

    public CosId2Machines(int redisPort, long guardMs) {
        factory = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", redisPort));
        factory.afterPropertiesSet();
        factory.start();
        distributor = new SpringRedisMachineIdDistributor(
            new StringRedisTemplate(factory), new InMemoryMachineStateStorage(), ClockBackwardsSynchronizer.DEFAULT);
        guarder = new DefaultMachineIdGuarder(distributor, DefaultMachineIdGuarder.executorService(),
            Duration.ofMillis(guardMs), Duration.ofMillis(guardMs), SAFE_GUARD);
    }

    @Override
    public String cosidVersion() {
        return "2.13.0";
    }

    @Override
    public int distribute(String namespace, String instanceId) {
        this.namespace = namespace;
        this.instance = InstanceId.of(instanceId, false);
        MachineState state = distributor.distribute(namespace, 10, instance, SAFE_GUARD);
        guarder.register(namespace, instance);
        guarder.start();
        return state.getMachineId();
    }

    @Override
    public void revert() {
        guarder.stop();
        guarder.unregister(namespace, instance);
        distributor.revert(namespace, instance);
        factory.destroy();
    }
}
