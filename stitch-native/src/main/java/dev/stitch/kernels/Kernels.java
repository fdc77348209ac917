package dev.stitch.kernels;

/** Chooses the delta kernels once per process: native when it loads, else the Java fallback. */
public final class Kernels {
    private Kernels() {
    }

    /** The process-wide kernels. */
    public static DeltaKernels get() {
        throw new IllegalStateException("kernels are being built");
    }
}
