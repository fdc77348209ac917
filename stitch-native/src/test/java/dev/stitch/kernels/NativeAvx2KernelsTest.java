package dev.stitch.kernels;

/** The kernel contract against a private copy of the C kernels dispatching to their avx2 variants. */
class NativeAvx2KernelsTest extends CappedNativeKernelsContract {

    @Override
    protected String cap() {
        return "avx2";
    }
}
