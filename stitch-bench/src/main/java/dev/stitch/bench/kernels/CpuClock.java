package dev.stitch.bench.kernels;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;

/**
 * CPU time of the benchmark thread per invocation, recorded beside JMH's wall-clock time: on a
 * shared, oversubscribed machine wall time mostly measures the scheduler, CPU time the kernel.
 * Only meaningful for single-threaded runs in this JVM (JMH forks do not report back).
 */
final class CpuClock {

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final List<Double> SAMPLES = new ArrayList<>();

    private CpuClock() {
    }

    static long start() {
        return THREADS.getCurrentThreadCpuTime();
    }

    static void stop(long startNanos) {
        double seconds = (THREADS.getCurrentThreadCpuTime() - startNanos) / 1e9;
        synchronized (SAMPLES) {
            SAMPLES.add(seconds);
        }
    }

    /** Returns and forgets every sample since the last call. */
    static List<Double> drain() {
        synchronized (SAMPLES) {
            List<Double> out = new ArrayList<>(SAMPLES);
            SAMPLES.clear();
            return out;
        }
    }
}
