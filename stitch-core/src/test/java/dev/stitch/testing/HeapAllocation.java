package dev.stitch.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * Heap bytes the current thread allocates while a parser runs, so a fuzz target can assert that
 * memory follows the input's length and never a size the input merely declares: a header that
 * claims 2^40 elements must be refused before anything of that size is allocated.
 */
public final class HeapAllocation {

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    /** Off while {@link #warmUp} runs: first-use costs are not the parser's. */
    private static volatile boolean checking = true;

    private final long start;

    private HeapAllocation(long start) {
        this.start = start;
    }

    /** Starts measuring on the calling thread. */
    public static HeapAllocation start() {
        if (!THREADS.isThreadAllocatedMemoryEnabled()) {
            THREADS.setThreadAllocatedMemoryEnabled(true);
        }
        return new HeapAllocation(THREADS.getCurrentThreadAllocatedBytes());
    }

    /** Bytes allocated by this thread since {@link #start()}. */
    public long allocated() {
        return THREADS.getCurrentThreadAllocatedBytes() - start;
    }

    /**
     * Runs {@code target} once on every seed of a fuzz test's corpus ({@code <Class>Inputs/<method>/}
     * beside the class), unmeasured and ignoring failures, so class loading, native-library extraction
     * and first-use caches are paid before anything is measured. Failures are not lost: Jazzer replays
     * the same seeds right after, measured.
     */
    public static void warmUp(Class<?> fuzzTest, String method, Consumer<byte[]> target) {
        URL dir = fuzzTest.getResource(fuzzTest.getSimpleName() + "Inputs/" + method);
        if (dir == null || !"file".equals(dir.getProtocol())) {
            return;
        }
        checking = false;
        try (Stream<Path> files = Files.list(Path.of(dir.toURI()))) {
            for (Path seed : files.sorted().toList()) {
                try {
                    target.accept(Files.readAllBytes(seed));
                } catch (Exception | AssertionError ignored) {
                    // replayed and reported by Jazzer
                }
            }
            target.accept(new byte[0]);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        } catch (RuntimeException | AssertionError ignored) {
            // the empty input's outcome, replayed by Jazzer as well
        } finally {
            checking = true;
        }
    }

    /**
     * Fails when this thread allocated more than {@code perInputByte * inputLength + slack} bytes since
     * {@link #start()}; the slack covers fixed costs such as a JSON parser's buffers.
     */
    public void assertAtMost(long perInputByte, long inputLength, long slack, String what) {
        if (!checking) {
            return;
        }
        long used = allocated();
        long limit = perInputByte * inputLength + slack;
        if (used > limit) {
            throw new AssertionError(what + " allocated " + used + " bytes for a " + inputLength
                    + "-byte input, more than the bound " + limit);
        }
    }
}
