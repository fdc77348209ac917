package dev.stitch.cli;

/** One line naming the delta kernels in use, for {@code --version} and {@code stitch doctor}. */
final class KernelReport {
    private KernelReport() {
    }

    static String describe() {
        try {
            var k = dev.stitch.kernels.Kernels.get();
            return k.implementation() + " (" + k.isa() + ")";
        } catch (RuntimeException | LinkageError e) {
            return "unavailable: " + e.getMessage();
        }
    }
}
