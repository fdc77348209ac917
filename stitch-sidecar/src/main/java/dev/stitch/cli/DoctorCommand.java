package dev.stitch.cli;

import dev.stitch.kernels.CpuFeatures;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
import dev.stitch.memory.MemoryLock;
import java.io.PrintStream;
import java.util.List;
import picocli.CommandLine.Command;

/**
 * {@code stitch doctor}: what this machine and JVM give stitch: platform, CPU features, which delta
 * kernels were selected and why, what the native loader tried, and whether snapshot memory can be
 * pinned.
 */
@Command(name = "doctor",
        description = {
            "Reports the platform, CPU features (avx2, avx512f, avx512vbmi2), the delta kernels in use",
            "and their ISA, every attempt of the native library loader, RLIMIT_MEMLOCK and whether",
            "mlock works. Exits 0; read the lines marked 'warning'."
        },
        mixinStandardHelpOptions = true)
public final class DoctorCommand implements StitchSubcommand, Runnable {

    public DoctorCommand() {
    }

    @Override
    public void run() {
        report(System.out);
    }

    static void report(PrintStream out) {
        out.println("os: " + System.getProperty("os.name") + " " + System.getProperty("os.version") + " (" + System.getProperty("os.arch") + ")");
        out.println("java: " + Runtime.version() + " (" + System.getProperty("java.vm.name") + ")");
        out.println("cpu: " + CpuFeatures.model() + ", " + CpuFeatures.cores() + " cores");
        out.println("cpu flags: " + CpuFeatures.describeFlags());
        DeltaKernels selected = Kernels.get();
        out.println("kernels: " + selected.implementation() + " (" + selected.isa() + ") - " + Kernels.selectionReason());
        out.println("java fallback kernels: " + Kernels.java().isa());
        List<String> attempts = Kernels.loaderAttempts();
        for (String attempt : attempts) {
            out.println("native loader: " + attempt);
        }
        if (!Kernels.nativeAvailable()) {
            out.println("warning: native kernels unavailable; the Java kernels are slower (see the loader lines above)");
        }
        out.println("RLIMIT_MEMLOCK: " + MemoryLock.limitDescription());
        String probe = MemoryLock.probe();
        if (probe == null) {
            out.println("mlock: works (snapshots are pinned up to the limit above; larger ones run unpinned)");
        } else {
            out.println("mlock: fails (" + probe + ")");
            out.println("warning: snapshot memory will not be pinned; raise RLIMIT_MEMLOCK (ulimit -l) to pin it");
        }
    }
}
