package dev.stitch.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The kernel contract against the C kernels. The build compiles them whenever gcc exists, so on
 * such a machine their absence is a failure, not a skip.
 */
class NativeKernelsTest extends DeltaKernelsContract {

    @org.junit.jupiter.api.BeforeAll
    static void requireNative() {
        NativeTestSupport.requireNative();
    }

    @Override
    protected DeltaKernels kernels() {
        return Kernels.nativeKernels();
    }

    @Test
    void nativeLibraryIsPackagedAndSelected() {
        assertTrue(Kernels.nativeAvailable(), () -> "native kernels did not load: " + Kernels.loaderAttempts());
        assertEquals("native", Kernels.nativeKernels().implementation());
        assertTrue(NativeKernels.isaLevels().contains(Kernels.nativeKernels().isa()), Kernels.nativeKernels().isa());
        if (!"false".equals(System.getProperty(Kernels.NATIVE_PROPERTY))) {
            assertEquals("native", Kernels.get().implementation());
        }
    }

    /** The streaming floor kernels agree with Java on the value read and the bytes filled. */
    @Test
    void streamingKernelsAgreeWithJava() {
        SplittableRandom rnd = new SplittableRandom(1);
        try (Arena arena = Arena.ofConfined()) {
            for (int n : new int[] {0, 1, 127, 128, 1000, 65_537}) {
                MemorySegment seg = arena.allocate(Math.max(1, n)).asSlice(0, n);
                byte[] b = new byte[n];
                rnd.nextBytes(b);
                MemorySegment.copy(MemorySegment.ofArray(b), 0, seg, 0, n);
                long x = 0;
                for (int i = 0; i + 8 <= n; i += 8) {
                    x ^= seg.get(KernelArgs.LE64, i);
                }
                for (int i = n & ~7; i < n; i++) {
                    x ^= b[i] & 0xFF;
                }
                assertEquals(Kernels.java().streamRead(seg), kernels().streamRead(seg));
                assertEquals(x, kernels().streamRead(seg), "n " + n);
                kernels().streamFill(seg, (byte) 0x5A);
                for (int i = 0; i < n; i++) {
                    assertEquals(0x5A, seg.get(KernelArgs.U8, i));
                }
            }
        }
    }
}
