package io.cosid;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class ThreadsTest {
    static final int THREADS = 8;
    static final int PER_THREAD = 50_000;

    private static Set<Long> collect(ExecutorService pool, Callable<long[]> task) throws Exception {
        List<Future<long[]>> futures = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            futures.add(pool.submit(task));
        }
        Set<Long> all = new HashSet<>();
        int total = 0;
        for (Future<long[]> f : futures) {
            for (long id : f.get()) {
                all.add(id);
                total++;
            }
        }
        assertEquals(total, all.size(), (total - all.size()) + " repeated ids");
        return all;
    }

    @Test
    void platformThreadsShareOneRuntime() throws Exception {
        try (Runtime rt = Runtime.builder().store("memory:").build();
                ExecutorService pool = Executors.newFixedThreadPool(THREADS)) {
            Set<Long> all = collect(pool, () -> {
                long[] ids = new long[PER_THREAD];
                for (int i = 0; i < PER_THREAD; i++) {
                    ids[i] = i % 10 == 0 ? rt.nextIds(1)[0] : rt.nextId();
                }
                return ids;
            });
            assertEquals(THREADS * PER_THREAD, all.size());
        }
    }

    @Test
    void virtualThreadsShareOneRuntime() throws Exception {
        try (Runtime rt = Runtime.builder().store("memory:").build();
                ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            Set<Long> all = collect(pool, () -> {
                long[] ids = new long[PER_THREAD];
                for (int i = 0; i < PER_THREAD; i += 100) {
                    System.arraycopy(rt.nextIds(100), 0, ids, i, 100);
                    Thread.yield();
                }
                return ids;
            });
            assertEquals(THREADS * PER_THREAD, all.size());
        }
    }
}
