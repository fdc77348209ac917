package dev.stitch.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The kernel contract against a private copy of the C kernels dispatching to their scalar variants. */
class NativeScalarKernelsTest extends DeltaKernelsContract {

    private static DeltaKernels capped;

    @org.junit.jupiter.api.BeforeAll
    static void load() {
        NativeTestSupport.requireNative();
        NativeLibrary.Outcome outcome = NativeLibrary.loadCopy("scalar");
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
        assertEquals("scalar".equals("avx2") && !avx2 ? "scalar" : "scalar", capped.isa());
    }
}
