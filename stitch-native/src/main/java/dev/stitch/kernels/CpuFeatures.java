package dev.stitch.kernels;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The CPU facts kernel reports print: model name, core count and the ISA features dispatch cares
 * about, read from /proc/cpuinfo ({@code flags} on x86-64, {@code Features} on aarch64).
 */
public final class CpuFeatures {

    /** The x86-64 flags that decide which kernels run (16-bit compress needs avx512vbmi2). */
    public static final List<String> RELEVANT_X86 = List.of("avx2", "bmi2", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512vbmi2");
    /** The aarch64 features that decide which kernels run (docs/platforms.md). */
    public static final List<String> RELEVANT_AARCH64 = List.of("asimd", "sve", "sve2");

    private CpuFeatures() {
    }

    /** The flags that matter on this host's architecture. */
    public static List<String> relevant() {
        return NativeLibrary.platform().endsWith("-aarch64") ? RELEVANT_AARCH64 : RELEVANT_X86;
    }

    /** e.g. {@code "Intel(R) Xeon(R) Processor"} or {@code "ARM Neoverse V2"}, else the os.arch when /proc/cpuinfo says nothing. */
    public static String model() {
        List<String> lines = cpuinfo();
        String model = field(lines, "model name");
        if (model != null) {
            return model;
        }
        String part = field(lines, "CPU part");
        if (part != null) {
            return armPart(field(lines, "CPU implementer"), part);
        }
        return System.getProperty("os.arch");
    }

    /** Arm's own cores by part number (Arm ARM, MIDR_EL1); other parts are shown as numbers. */
    private static String armPart(String implementer, String part) {
        if ("0x41".equals(implementer)) {
            String name = switch (part) {
                case "0xd0c" -> "Neoverse N1";
                case "0xd40" -> "Neoverse V1";
                case "0xd49" -> "Neoverse N2";
                case "0xd4f" -> "Neoverse V2";
                case "0xd84" -> "Neoverse V3";
                default -> null;
            };
            if (name != null) {
                return "ARM " + name;
            }
        }
        return "CPU implementer " + implementer + " part " + part;
    }

    public static int cores() {
        return Runtime.getRuntime().availableProcessors();
    }

    /** Each relevant flag and whether this CPU has it (empty when /proc/cpuinfo is unreadable). */
    public static Map<String, Boolean> relevantFlags() {
        Set<String> flags = flags();
        Map<String, Boolean> out = new LinkedHashMap<>();
        if (!flags.isEmpty()) {
            for (String f : relevant()) {
                out.put(f, flags.contains(f));
            }
        }
        return out;
    }

    /** Whether /proc/cpuinfo lists {@code flag} for this CPU. */
    public static boolean hasFlag(String flag) {
        return flags().contains(flag);
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
        List<String> lines = cpuinfo();
        String line = field(lines, "flags");
        if (line == null) {
            line = field(lines, "Features");
        }
        if (line == null) {
            return Set.of();
        }
        // The kernel spells some flags with an underscore (avx512_vbmi2); both spellings are accepted.
        Set<String> out = new HashSet<>(Arrays.asList(line.split("\\s+")));
        for (String f : List.copyOf(out)) {
            out.add(f.replace("_", ""));
        }
        return out;
    }

    /** The value of the first {@code name : value} line, or null. */
    private static String field(List<String> lines, String name) {
        for (String line : lines) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).trim().equals(name)) {
                return line.substring(colon + 1).trim();
            }
        }
        return null;
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
