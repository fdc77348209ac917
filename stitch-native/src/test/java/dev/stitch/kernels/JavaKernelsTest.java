package dev.stitch.kernels;

/** The kernel contract against the pure-Java implementation. */
class JavaKernelsTest extends DeltaKernelsContract {
    @Override
    protected DeltaKernels kernels() {
        return Kernels.java();
    }
}
