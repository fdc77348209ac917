package dev.stitch.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The kernel contract against a private copy of the C kernels whose dispatch is capped at one ISA level. */
abstract class CappedNativeKernelsContract extends DeltaKernelsContract {

    /** One private library copy per cap, shared by the test instances of its subclass. */
    private static final Map<String, DeltaKernels> LOADED = new ConcurrentHashMap<>();

    /** The highest ISA level the copy may dispatch to. */
    protected abstract String cap();

    @BeforeEach
    void load() {
        NativeTestSupport.requireNative();
        NativeTestSupport.requireIsaLevel(cap());
        LOADED.computeIfAbsent(cap(), isa -> {
            NativeLibrary.Outcome outcome = NativeLibrary.loadCopy(isa);
            if (outcome.kernels() == null) {
                throw new AssertionError("native kernels did not load: " + outcome.attempts());
            }
            return outcome.kernels();
        });
    }

    @Override
    protected DeltaKernels kernels() {
        return LOADED.get(cap());
    }

    @Test
    void dispatchesToTheCappedIsa() {
        // A CPU without AVX2 (and BMI2) falls back to scalar even when AVX2 is allowed; NEON is on every aarch64 CPU.
        boolean avx2 = CpuFeatures.hasFlag("avx2") && CpuFeatures.hasFlag("bmi2");
        assertEquals(cap().equals("avx2") && !avx2 ? "scalar" : cap(), kernels().isa());
    }
}
