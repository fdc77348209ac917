package dev.stitch.kernels;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The build compiles the C kernels for this host whenever gcc exists and the host is a built
 * platform: there their absence fails a test, elsewhere it skips it.
 */
final class NativeTestSupport {
    private NativeTestSupport() {
    }

    static void requireNative() {
        if (Kernels.nativeAvailable()) {
            return;
        }
        if (Files.exists(Path.of("/usr/bin/gcc")) && NativeLibrary.BUILT_PLATFORMS.contains(NativeLibrary.platform())) {
            throw new AssertionError("gcc exists but the native kernels did not load: " + Kernels.loaderAttempts());
        }
        assumeTrue(false, "native kernels not built here: " + Kernels.loaderAttempts());
    }

    /** Whether an executable named {@code tool} is on the PATH. */
    static boolean onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    /** This host's architecture as the build names it: {@code x86_64} or {@code aarch64}. */
    static String hostArch() {
        String platform = NativeLibrary.platform();
        return platform.substring(platform.indexOf('-') + 1);
    }

    /** Whether src/main/c/build.sh finds a compiler for {@code arch}: gcc on a host of that arch, else its Debian cross compiler. */
    static boolean compilerFor(String arch) {
        return (hostArch().equals(arch) && onPath("gcc")) || onPath(arch + "-linux-gnu-gcc");
    }

    /** Skips a test of ISA variants this host's architecture does not have (avx2 on aarch64, neon on x86-64). */
    static void requireIsaLevel(String isa) {
        assumeTrue(NativeKernels.isaLevels().contains(isa),
            "no " + isa + " variants on " + NativeLibrary.platform() + " (levels " + NativeKernels.isaLevels() + ")");
    }
}
