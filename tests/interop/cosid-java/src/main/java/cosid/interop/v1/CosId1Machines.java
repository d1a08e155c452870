package cosid.interop.v1;

import cosid.interop.Machines;
import me.ahoo.cosid.snowflake.ClockBackwardsSynchronizer;
import me.ahoo.cosid.snowflake.machine.InstanceId;
import me.ahoo.cosid.snowflake.machine.MachineIdDistributor;
import me.ahoo.cosid.snowflake.machine.MachineStateStorage;
import me.ahoo.cosid.spring.redis.SpringRedisMachineIdDistributor;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * CosId 1.8.x: distribute writes {@code itc_idx = "machineId|0"} and nothing updates it while the instance runs (1.x
 * has no guarder); only a normal stop's revert records a timestamp. No local state file ({@code NONE}), so every
 * start asks Redis, as a fresh container would.
 */
public final class CosId1Machines implements Machines {
    private final LettuceConnectionFactory factory;
    private final MachineIdDistributor distributor;
    private String namespace;
    private InstanceId instance;

    public CosId1Machines(int redisPort, long guardMs) {
        factory = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", redisPort));
        factory.afterPropertiesSet();
        distributor = new SpringRedisMachineIdDistributor(
            new StringRedisTemplate(factory), MachineStateStorage.NONE, ClockBackwardsSynchronizer.DEFAULT);
    }

    @Override
    public String cosidVersion() {
        return "1.8.6";
    }

    @Override
    public int distribute(String namespace, String instanceId) {
        this.namespace = namespace;
        this.instance = InstanceId.of(instanceId, false);
        return distributor.distribute(namespace, 10, instance);
    }

    @Override
    public void revert() {
        distributor.revert(namespace, instance);
        factory.destroy();
    }
}
