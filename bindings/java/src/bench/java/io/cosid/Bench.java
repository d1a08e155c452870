package io.cosid;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.UUID;
import java.util.function.LongSupplier;
import me.ahoo.cosid.snowflake.MillisecondSnowflakeId;

/**
 * The Java benchmark harness (bench.sh): ns per id of cosid's calls beside {@code UUID.randomUUID()} and CosId's
 * {@code MillisecondSnowflakeId} (a plain Java Snowflake with the same 41/10/12 layout), in one run. Figures, not
 * assertions: median of many bursts of 1000 calls, each burst below the default layout's cap (4096 ids per
 * millisecond per slot), with a pause between bursts so that no burst waits for the next millisecond.
 *
 *     bash bindings/java/bench.sh [BURSTS]
 */
public final class Bench {
    private Bench() {}

    static final int BURST = 1000;
    static long sink;

    interface Burst {
        void run(int calls) throws Throwable;
    }

    static double nsPerCall(int bursts, int idsPerCall, Burst burst) throws Throwable {
        for (int i = 0; i < 300; i++) { // warm-up: the JIT compiles the loop and the downcall
            burst.run(BURST / idsPerCall);
            Thread.sleep(0, 200_000);
        }
        double[] ns = new double[bursts];
        for (int i = 0; i < bursts; i++) {
            Thread.sleep(1);
            long t0 = System.nanoTime();
            burst.run(BURST / idsPerCall);
            ns[i] = (System.nanoTime() - t0) / (double) BURST;
        }
        Arrays.sort(ns);
        return ns[bursts / 2];
    }

    static Burst each(LongSupplier next) {
        return calls -> {
            long x = 0;
            for (int i = 0; i < calls; i++) {
                x ^= next.getAsLong();
            }
            sink ^= x;
        };
    }

    static void row(String what, double ns) {
        System.out.printf("%-52s %8.1f ns/id%n", what, ns);
    }

    public static void main(String[] args) throws Throwable {
        int bursts = args.length > 0 ? Integer.parseInt(args[0]) : 400;
        System.out.println("cosid Java benchmark: median of " + bursts + " bursts of " + BURST + " ids, JDK "
                + System.getProperty("java.version") + ", libcosid " + Cosid.version());
        Cosid.configure(Runtime.builder().store("memory:").namespace("bench"));
        try (Runtime rt = Runtime.builder().store("memory:").namespace("bench-runtime").build()) {
            MillisecondSnowflakeId peer = new MillisecondSnowflakeId(1);
            row("a trivial FFM downcall (cosid_version), for scale", nsPerCall(bursts, 1, calls -> {
                long x = 0;
                for (int i = 0; i < calls; i++) {
                    x ^= ((MemorySegment) Native.VERSION.invokeExact()).address();
                }
                sink ^= x;
            }));
            row("cosid Cosid.nextId()", nsPerCall(bursts, 1, each(Cosid::nextId)));
            row("cosid Runtime#nextId()", nsPerCall(bursts, 1, each(rt::nextId)));
            row("cosid Cosid.nextIds(1000), per id", nsPerCall(bursts, BURST, calls -> sink ^= Cosid.nextIds(BURST)[7]));
            row("CosId MillisecondSnowflakeId.generate() (Java)", nsPerCall(bursts, 1, each(peer::generate)));
            row("java.util.UUID.randomUUID()", nsPerCall(bursts, 1,
                    each(() -> UUID.randomUUID().getLeastSignificantBits())));
        } finally {
            Cosid.shutdown();
        }
        if (sink == 42) {
            System.out.println();
        }
    }
}
