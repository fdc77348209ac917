package dev.stitch.kernels;

/** The kernel contract against a private copy of the C kernels dispatching to their scalar variants. */
class NativeScalarKernelsTest extends CappedNativeKernelsContract {

    @Override
    protected String cap() {
        return "scalar";
    }
}
