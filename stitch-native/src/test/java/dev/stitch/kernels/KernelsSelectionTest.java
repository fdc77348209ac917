package dev.stitch.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The process-wide choice honours -Dstitch.native=false and reports what the loader tried. */
class KernelsSelectionTest {

    /** Prints the selection of a fresh JVM. */
    public static void main(String[] args) {
        System.out.println(Kernels.get().implementation() + " " + Kernels.get().isa() + " | " + Kernels.selectionReason()
            + " | " + String.join("; ", Kernels.loaderAttempts()));
    }

    private static String runFreshJvm(String... properties) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.addAll(List.of(properties));
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(KernelsSelectionTest.class.getName());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    @Test
    void nativeFalseSelectsJava() throws Exception {
        String out = runFreshJvm("-Dstitch.native=false");
        assertTrue(out.startsWith("java "), out);
        assertTrue(out.contains("stitch.native=false"), out);
    }

    @Test
    void isaCapIsHonoured() throws Exception {
        String out = runFreshJvm("-Dstitch.native.isa=scalar");
        assertTrue(out.startsWith("native scalar"), out);
    }

    @Test
    void missingLibraryExplainsEveryAttempt() throws Exception {
        String out = runFreshJvm("-Dstitch.native.path=/nonexistent/libstitchkernels.so");
        // The explicit path fails, the packaged copy then loads; both attempts are reported.
        assertTrue(out.startsWith("native "), out);
        assertTrue(out.contains("-Dstitch.native.path=/nonexistent/libstitchkernels.so: "), out);
        assertTrue(out.contains("extracted to"), out);
    }

    @Test
    void loaderReportsWhatItTried() {
        assertTrue(Kernels.loaderAttempts().stream().anyMatch(a -> a.contains("libstitchkernels.so")), Kernels.loaderAttempts().toString());
        assertTrue(Kernels.selectionReason().length() > 0);
    }
}
