package dev.stitch.kernels;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The CPU facts kernel reports print: model name, core count and the ISA features dispatch cares about. */
public final class CpuFeatures {

    /** The flags that decide which kernels run (the compress instructions need avx512vbmi2 for 16-bit lanes). */
    public static final List<String> RELEVANT = List.of("avx2", "bmi2", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512vbmi2");

    private CpuFeatures() {
    }

    /** e.g. {@code "Intel(R) Xeon(R) Processor"}, or the os.arch when /proc/cpuinfo is unreadable. */
    public static String model() {
        for (String line : cpuinfo()) {
            if (line.startsWith("model name")) {
                return line.substring(line.indexOf(':') + 1).trim();
            }
        }
        return System.getProperty("os.arch");
    }

    public static int cores() {
        return Runtime.getRuntime().availableProcessors();
    }

    /** Each relevant flag and whether this CPU has it (empty when /proc/cpuinfo is unreadable). */
    public static Map<String, Boolean> relevantFlags() {
        Set<String> flags = flags();
        Map<String, Boolean> out = new LinkedHashMap<>();
        if (!flags.isEmpty()) {
            for (String f : RELEVANT) {
                out.put(f, flags.contains(f));
            }
        }
        return out;
    }

    /** e.g. {@code "avx2 bmi2 avx512f avx512bw avx512vl avx512dq -avx512vbmi2"}; a minus marks a missing flag. */
    public static String describeFlags() {
        Map<String, Boolean> flags = relevantFlags();
        if (flags.isEmpty()) {
            return "unknown (no /proc/cpuinfo)";
        }
        StringBuilder sb = new StringBuilder();
        flags.forEach((f, has) -> sb.append(sb.isEmpty() ? "" : " ").append(has ? "" : "-").append(f));
        return sb.toString();
    }

    private static Set<String> flags() {
        for (String line : cpuinfo()) {
            if (line.startsWith("flags")) {
                return new java.util.HashSet<>(java.util.Arrays.asList(line.substring(line.indexOf(':') + 1).trim().split("\\s+")));
            }
        }
        return Set.of();
    }

    private static List<String> cpuinfo() {
        try {
            Path p = Path.of("/proc/cpuinfo");
            return Files.exists(p) ? Files.readAllLines(p) : List.of();
        } catch (IOException e) {
            return List.of();
        }
    }
}
