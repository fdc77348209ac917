package dev.stitch.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.stitch.kernels.KernelVectorFile.Case;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The C kernels of each architecture this machine can build and run, checked byte for byte against
 * the Java kernels through the vector harness (src/test/c/run-vectors.sh): x86_64 natively on an
 * x86-64 host, aarch64 under qemu-aarch64 (or natively on an aarch64 host). An architecture whose
 * cross compiler or qemu is missing is skipped with the reason; .ci/run installs both.
 */
class KernelVectorsTest {

    private static final Path SCRIPT = Path.of("src/test/c/run-vectors.sh");
    private static final Path VECTORS = Path.of("target/kernel-vectors/vectors.bin");

    private static List<Case> cases;

    record Run(int exit, String output) {
    }

    @BeforeAll
    static void export() throws IOException {
        cases = KernelVectors.build();
        KernelVectorFile.write(VECTORS, cases);
    }

    /** Skips unless run-vectors.sh can build and run {@code arch} here. */
    private static void requireRunnable(String arch) {
        assumeTrue(NativeTestSupport.compilerFor(arch), "no C compiler for " + arch + " (Debian package gcc-" + arch + "-linux-gnu)");
        if (!NativeTestSupport.hostArch().equals(arch)) {
            assumeTrue(NativeTestSupport.onPath("qemu-" + arch), "no qemu-" + arch + " to run " + arch + " code (Debian package qemu-user)");
            assumeTrue(Files.isDirectory(Path.of("/usr/" + arch + "-linux-gnu")), "no " + arch + " C library under /usr/" + arch + "-linux-gnu");
        }
    }

    private static Run run(String arch, Path vectors) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("sh", SCRIPT.toString(), arch, vectors.toAbsolutePath().toString())
            .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "run-vectors.sh " + arch + " did not finish");
        return new Run(p.exitValue(), out);
    }

    @Test
    void x86_64KernelsMatchTheJavaKernels() throws Exception {
        requireRunnable("x86_64");
        Run r = run("x86_64", VECTORS);
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().contains(cases.size() + " cases on scalar: ok"), r.output());
        if (CpuFeatures.hasFlag("avx2") && CpuFeatures.hasFlag("bmi2")) {
            assertTrue(r.output().contains(cases.size() + " cases on avx2: ok"), r.output());
        }
    }

    @Test
    void aarch64KernelsMatchTheJavaKernels() throws Exception {
        requireRunnable("aarch64");
        Run r = run("aarch64", VECTORS);
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().contains(cases.size() + " cases on neon: ok"), r.output());
        if (!NativeTestSupport.hostArch().equals("aarch64")) {
            // qemu's SVE CPU models make dispatch take the SVE kernels too
            assertTrue(r.output().contains(cases.size() + " cases on sve: ok"), r.output());
        }
    }

    /** The harness compares every byte: one changed byte of one expected output fails the run and names the case. */
    @Test
    void oneChangedExpectedByteFailsTheHarness() throws Exception {
        int target = -1;
        for (int i = 0; i < cases.size() && target < 0; i++) {
            Case c = cases.get(i);
            if (c.kernel().equals("diff_gather") && c.outputs().get(2).length > 4 && c.scalars()[0] == 2) {
                target = i;
            }
        }
        Case original = cases.get(target);
        List<byte[]> outputs = new ArrayList<>(original.outputs());
        byte[] values = outputs.get(2).clone();
        values[values.length / 2] ^= 0x01;
        outputs.set(2, values);
        List<Case> changed = new ArrayList<>(cases);
        changed.set(target, new Case(original.name(), original.kernel(), original.scalars(), original.inputs(), outputs));
        Path file = VECTORS.resolveSibling("vectors-one-byte-changed.bin");
        KernelVectorFile.write(file, changed);
        int checked = 0;
        for (String arch : List.of("x86_64", "aarch64")) {
            if (!NativeTestSupport.compilerFor(arch) || (!NativeTestSupport.hostArch().equals(arch) && !NativeTestSupport.onPath("qemu-" + arch))) {
                continue;
            }
            Run r = run(arch, file);
            assertEquals(1, r.exit(), r.output());
            assertTrue(r.output().contains("MISMATCH") && r.output().contains("'" + original.name() + "'"), r.output());
            assertTrue(r.output().contains("output 2 differs first at byte " + values.length / 2), r.output());
            checked++;
        }
        assumeTrue(checked > 0, "no architecture can run the harness here");
    }
}
