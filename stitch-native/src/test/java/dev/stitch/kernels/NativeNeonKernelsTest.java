package dev.stitch.kernels;

/** The kernel contract against a private copy of the C kernels dispatching to their NEON variants (aarch64 hosts). */
class NativeNeonKernelsTest extends CappedNativeKernelsContract {

    @Override
    protected String cap() {
        return "neon";
    }
}
