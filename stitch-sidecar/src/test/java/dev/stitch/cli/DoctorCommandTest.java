package dev.stitch.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.kernels.Kernels;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class DoctorCommandTest {

    @Test
    void reportsPlatformKernelsLoaderAndMemlock() {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        DoctorCommand.report(new PrintStream(buf, true, StandardCharsets.UTF_8));
        String out = buf.toString(StandardCharsets.UTF_8);
        assertTrue(out.contains("os: "), out);
        assertTrue(out.contains("cpu flags: "), out);
        assertTrue(out.contains("avx512vbmi2") || out.contains("unknown"), out);
        assertTrue(out.contains("kernels: " + Kernels.get().implementation() + " (" + Kernels.get().isa() + ")"), out);
        assertTrue(out.contains("native loader: "), out);
        assertTrue(out.contains("RLIMIT_MEMLOCK: "), out);
        assertTrue(out.contains("mlock: "), out);
    }

    @Test
    void isRegisteredUnderStitch() {
        assertEquals(0, StitchCli.commandLine().execute("doctor"));
        assertTrue(StitchCli.commandLine().getSubcommands().containsKey("doctor"));
    }
}
