package dev.stitch.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What the jar bundles, how the loader names platforms, and what it tells stitch doctor. */
class NativeLibraryTest {

    /** ELF e_machine of each built platform: EM_X86_64 and EM_AARCH64. */
    private static final Map<String, Integer> ELF_MACHINE = Map.of("linux-x86_64", 62, "linux-aarch64", 183);

    @Test
    void platformNamesFollowOsArch() {
        assertEquals("linux-x86_64", NativeLibrary.platform("Linux", "amd64"));
        assertEquals("linux-x86_64", NativeLibrary.platform("Linux", "x86_64"));
        assertEquals("linux-aarch64", NativeLibrary.platform("Linux", "aarch64"));
        assertEquals("linux-aarch64", NativeLibrary.platform("Linux", "arm64"));
        assertEquals("linux-riscv64", NativeLibrary.platform("Linux", "riscv64"));
        assertEquals("mac_os_x-aarch64", NativeLibrary.platform("Mac OS X", "aarch64"));
    }

    /** The build bundles a library for every platform it has a compiler for, each an ELF file for its own machine. */
    @Test
    void everyPlatformWithACompilerIsBundledForItsMachine() throws IOException {
        List<String> bundled = NativeLibrary.bundled().stream().map(NativeLibrary.Bundled::platform).toList();
        for (String platform : NativeLibrary.BUILT_PLATFORMS) {
            String arch = platform.substring(platform.indexOf('-') + 1);
            if (NativeTestSupport.compilerFor(arch)) {
                assertTrue(bundled.contains(platform), platform + " has a compiler here but is not bundled: " + bundled);
            }
        }
        for (String platform : bundled) {
            try (InputStream in = NativeLibrary.class.getResourceAsStream(NativeLibrary.resource(platform))) {
                byte[] header = in.readNBytes(20);
                assertEquals(0x7F, header[0]);
                assertEquals("ELF", new String(header, 1, 3, java.nio.charset.StandardCharsets.US_ASCII));
                assertEquals(ELF_MACHINE.get(platform).intValue(), ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN).getShort(18),
                    platform + " holds a library for another machine");
            }
        }
    }

    /** stitch doctor prints the loader's lines: the bundled libraries and this host's platform come first. */
    @Test
    void loaderReportsBundledLibrariesAndTheHostPlatform() {
        String first = Kernels.loaderAttempts().get(0);
        assertTrue(first.startsWith("bundled libraries: "), first);
        assertTrue(first.contains("this host is " + NativeLibrary.platform()), first);
        for (NativeLibrary.Bundled b : NativeLibrary.bundled()) {
            assertTrue(first.contains(b.platform() + " ("), first);
        }
        if (Kernels.nativeAvailable()) {
            assertTrue(Kernels.loaderAttempts().stream().anyMatch(a -> a.contains("matches os.arch") && a.contains(": loaded, isa ")),
                Kernels.loaderAttempts().toString());
        }
    }

    @Test
    void isaReasonNamesTheCapOrTheBestLevel() {
        List<String> levels = NativeKernels.isaLevels();
        assertEquals("capped at scalar", NativeLibrary.isaReason("scalar", "scalar"));
        String best = levels.get(levels.size() - 1);
        assertTrue(NativeLibrary.isaReason(best, null).startsWith("the best of " + String.join(", ", levels)));
    }
}
