package dev.stitch.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The kernel contract against a private copy of the C kernels dispatching to their avx2 variants. */
class NativeAvx2KernelsTest extends DeltaKernelsContract {

    private static final DeltaKernels CAPPED = load();

    private static DeltaKernels load() {
        NativeLibrary.Outcome outcome = NativeLibrary.loadCopy("avx2");
        if (outcome.kernels() == null) {
            throw new AssertionError("native kernels did not load: " + outcome.attempts());
        }
        return outcome.kernels();
    }

    @Override
    protected DeltaKernels kernels() {
        return CAPPED;
    }

    @Test
    void dispatchesToTheCappedIsa() {
        assertEquals("avx2", CAPPED.isa());
    }
}
