/**
 * Delta kernels (C through FFM with a Java Vector API fallback), off-heap snapshot memory, and the
 * tensor model.
 */
module dev.stitch.natives {
    requires transitive dev.stitch.core;
    requires jdk.incubator.vector;
    requires org.slf4j;

    exports dev.stitch.kernels;
    exports dev.stitch.memory;
    exports dev.stitch.tensor;

    provides dev.stitch.hash.Xxh3Provider with dev.stitch.kernels.KernelXxh3Provider;
}
