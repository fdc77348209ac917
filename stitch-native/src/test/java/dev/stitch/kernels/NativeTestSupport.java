package dev.stitch.kernels;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;

/** The build compiles the C kernels whenever gcc exists: there their absence fails a test, elsewhere it skips it. */
final class NativeTestSupport {
    private NativeTestSupport() {
    }

    static void requireNative() {
        if (Kernels.nativeAvailable()) {
            return;
        }
        if (Files.exists(Path.of("/usr/bin/gcc")) && NativeLibrary.platform().equals("linux-x86_64")) {
            throw new AssertionError("gcc exists but the native kernels did not load: " + Kernels.loaderAttempts());
        }
        assumeTrue(false, "native kernels not built here: " + Kernels.loaderAttempts());
    }
}
