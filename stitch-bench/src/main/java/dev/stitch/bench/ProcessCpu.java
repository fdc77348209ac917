package dev.stitch.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The CPU time of a child process as Linux accounts it, read from {@code /proc}, so that a benchmark can charge
 * the system under test alone even while the load generator shares the machine.
 */
public final class ProcessCpu {
    private static final long TICKS_PER_SECOND = clockTicks();
    private final Path proc;

    private ProcessCpu(long pid) {
        this.proc = Path.of("/proc", Long.toString(pid));
    }

    public static ProcessCpu of(Process process) {
        return new ProcessCpu(process.pid());
    }

    /**
     * {@code [0]} utime + stime of the whole process from /proc/&lt;pid&gt;/stat, {@code [1]} the same summed over
     * its threads other than the JIT compiler threads (/proc/&lt;pid&gt;/task/*&#47;stat), in nanoseconds.
     */
    public long[] nanos() throws IOException {
        long total = ticks(Files.readString(proc.resolve("stat")));
        long withoutJit = 0;
        try (Stream<Path> tasks = Files.list(proc.resolve("task"))) {
            for (Path t : tasks.toList()) {
                try {
                    String comm = Files.readString(t.resolve("comm")).trim();
                    if (!comm.contains("CompilerThre")) {
                        withoutJit += ticks(Files.readString(t.resolve("stat")));
                    }
                } catch (IOException e) {
                    // The thread exited between listing and reading: it no longer matters.
                }
            }
        }
        return new long[] {total * 1_000_000_000L / TICKS_PER_SECOND, withoutJit * 1_000_000_000L / TICKS_PER_SECOND};
    }

    /** utime + stime (fields 14 and 15) of a stat line, in clock ticks. */
    private static long ticks(String stat) {
        // Fields after the parenthesised command name, which may itself contain spaces.
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    private static long clockTicks() {
        try {
            Process p = new ProcessBuilder("getconf", "CLK_TCK").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).trim();
            p.waitFor(5, TimeUnit.SECONDS);
            return Long.parseLong(out);
        } catch (IOException | NumberFormatException e) {
            return 100;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 100;
        }
    }
}
