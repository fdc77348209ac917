package dev.stitch.kernels;

/** The kernel contract against the Java kernels' Vector API per-bit scan, the diff of hosts whose vectors are narrower than 512 bits. */
class JavaVectorScanKernelsTest extends DeltaKernelsContract {
    @Override
    protected DeltaKernels kernels() {
        return JavaKernels.VECTOR_SCAN;
    }
}
