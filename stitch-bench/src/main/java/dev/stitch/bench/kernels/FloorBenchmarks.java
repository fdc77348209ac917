package dev.stitch.bench.kernels;

import dev.stitch.cli.ByteSize;

import dev.stitch.kernels.Kernels;
import dev.stitch.memory.OffHeapBuffer;
import dev.stitch.memory.BufferAllocator;
import dev.stitch.memory.MemoryPurpose;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The memory-traffic floor's two bandwidths (docs/performance-targets.md §7.2), single-threaded, with the
 * project's own streaming kernels: {@code read} streams twice the model size (at least 2 GiB for
 * a 1 GiB model, well past the last-level cache), {@code fill} writes the model size.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 1)
@Measurement(iterations = 7)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector", "-Xmx2g"})
@State(Scope.Benchmark)
public class FloorBenchmarks {

    private static final java.lang.foreign.ValueLayout.OfLong LE64 =
        java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);

    @Param("1g")
    public String size;

    private BufferAllocator allocator;
    private OffHeapBuffer readBuffer;
    private OffHeapBuffer fillBuffer;
    private long expected;
    private byte fillValue;

    @Setup(Level.Trial)
    public void setUp() {
        long bytes = ByteSize.parse(size);
        allocator = BufferAllocator.pinned("bench-floor");
        readBuffer = allocator.allocate(2 * bytes, MemoryPurpose.SCRATCH);
        fillBuffer = allocator.allocate(bytes, MemoryPurpose.SCRATCH);
        // Distinct words so the read's XOR result is checkable; pre-faults every page.
        java.lang.foreign.MemorySegment r = readBuffer.segment();
        for (long off = 0; off + 8 <= r.byteSize(); off += 8) {
            r.set(LE64, off, off * 0x9E3779B97F4A7C15L);
        }
        expected = Kernels.get().streamRead(r);
        fillBuffer.segment().fill((byte) 0);
    }

    @TearDown(Level.Iteration)
    public void validate() {
        if (fillBuffer.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, fillBuffer.segment().byteSize() - 1) != fillValue) {
            throw new IllegalStateException("fill did not reach the end of the buffer");
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        fillBuffer.close();
        readBuffer.close();
        allocator.close();
    }

    @Benchmark
    public long read() {
        long cpu = CpuClock.start();
        long x = Kernels.get().streamRead(readBuffer.segment());
        CpuClock.stop(cpu);
        if (x != expected) {
            throw new IllegalStateException("streaming read returned " + x + ", expected " + expected);
        }
        return x;
    }

    @Benchmark
    public void fill() {
        fillValue++;
        long cpu = CpuClock.start();
        Kernels.get().streamFill(fillBuffer.segment(), fillValue);
        CpuClock.stop(cpu);
    }
}
