package dev.stitch.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The lean rollout-host jar that stitch-sidecar shades ({@code stitch-sidecar/target/stitch.jar}):
 * runnable, with the rollout commands, and without the benchmark and chart libraries that only the
 * bench jar carries. It lives here because this module builds after stitch-sidecar is packaged.
 */
class SidecarJarTest {
    private static Path jarPath;
    private static List<String> entries;
    private static Manifest manifest;
    private static String services;

    @BeforeAll
    static void open() throws IOException {
        String configured = System.getProperty("stitch.sidecar.jar");
        assumeTrue(configured != null, "stitch.sidecar.jar is set by the stitch-bench pom; run through Maven");
        jarPath = Path.of(configured);
        // Only the package phase of stitch-sidecar makes the jar: a test-only reactor run has none to check.
        assumeTrue(Files.isRegularFile(jarPath), "no " + jarPath + " yet: it is built by 'mvn package' of stitch-sidecar");
        try (JarFile jar = new JarFile(jarPath.toFile())) {
            entries = jar.stream().map(JarEntry::getName).toList();
            manifest = jar.getManifest();
            JarEntry registry = jar.getJarEntry("META-INF/services/dev.stitch.cli.StitchSubcommand");
            assertNotNull(registry, jarPath + " has no StitchSubcommand registry");
            try (InputStream in = jar.getInputStream(registry)) {
                services = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
        }
    }

    @Test
    void carriesNoBenchmarkOrChartClasses() {
        for (String prefix : List.of("org/openjdk/jmh/", "org/knowm/", "dev/stitch/bench/", "dev/stitch/demo/")) {
            List<String> found = entries.stream().filter(e -> e.startsWith(prefix)).limit(3).toList();
            assertTrue(found.isEmpty(), jarPath + " should not contain " + prefix + " but has " + found);
        }
    }

    @Test
    void runsTheCliWithNativeAccess() {
        assertNotNull(manifest, jarPath + " has no manifest");
        assertEquals("dev.stitch.cli.StitchCli", manifest.getMainAttributes().getValue("Main-Class"));
        assertEquals("ALL-UNNAMED", manifest.getMainAttributes().getValue("Enable-Native-Access"));
        assertTrue(entries.contains("dev/stitch/cli/StitchCli.class"), "no StitchCli in " + jarPath);
        assertFalse(entries.contains("module-info.class"), "a shaded jar runs on the class path; module-info.class must be left out");
    }

    @Test
    void holdsTheRolloutCommandsTheRehearsalKitAndALoggingBinding() {
        for (String command : List.of("BoardCommand", "PublishCommand", "ApplyCommand", "InspectCommand",
                "SidecarCommand", "RefEngineCommand", "DoctorCommand")) {
            assertTrue(services.contains("dev.stitch.cli." + command), command + " is not registered in " + jarPath);
        }
        assertFalse(services.contains("dev.stitch.demo.") || services.contains("dev.stitch.bench."),
                "bench commands registered in the sidecar jar: " + services);
        assertTrue(entries.contains("dev/stitch/rehearsal/SyntheticModel.class"), "no rehearsal kit in " + jarPath);
        assertTrue(entries.stream().anyMatch(e -> e.startsWith("org/slf4j/simple/")), "no SLF4J binding in " + jarPath);
    }
}
