package dev.stitch.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The kernel contract against the Java kernels without the Vector API (SWAR only). */
class JavaSwarKernelsTest extends DeltaKernelsContract {
    @Override
    protected DeltaKernels kernels() {
        return JavaKernels.SWAR;
    }

    @Test
    void reportsSwar() {
        assertEquals("swar", kernels().isa());
    }
}
