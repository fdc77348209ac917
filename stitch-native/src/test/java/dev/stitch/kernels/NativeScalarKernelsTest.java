package dev.stitch.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The kernel contract against a private copy of the C kernels dispatching to their scalar variants. */
class NativeScalarKernelsTest extends DeltaKernelsContract {

    private static final DeltaKernels CAPPED = load();

    private static DeltaKernels load() {
        NativeLibrary.Outcome outcome = NativeLibrary.loadCopy("scalar");
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
        assertEquals("scalar", CAPPED.isa());
    }
}
