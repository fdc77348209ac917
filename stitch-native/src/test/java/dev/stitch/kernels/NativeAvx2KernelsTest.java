package dev.stitch.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The kernel contract against a private copy of the C kernels dispatching to their avx2 variants. */
class NativeAvx2KernelsTest extends DeltaKernelsContract {

    private static DeltaKernels capped;

    @org.junit.jupiter.api.BeforeAll
    static void load() {
        NativeTestSupport.requireNative();
        NativeLibrary.Outcome outcome = NativeLibrary.loadCopy("avx2");
        if (outcome.kernels() == null) {
            throw new AssertionError("native kernels did not load: " + outcome.attempts());
        }
        capped = outcome.kernels();
    }

    @Override
    protected DeltaKernels kernels() {
        return capped;
    }

    @Test
    void dispatchesToTheCappedIsa() {
        // A CPU without AVX2 (and BMI2) falls back to scalar even when AVX2 is allowed.
        boolean avx2 = Boolean.TRUE.equals(CpuFeatures.relevantFlags().get("avx2")) && Boolean.TRUE.equals(CpuFeatures.relevantFlags().get("bmi2"));
        assertEquals("avx2".equals("avx2") && !avx2 ? "scalar" : "avx2", capped.isa());
    }
}
