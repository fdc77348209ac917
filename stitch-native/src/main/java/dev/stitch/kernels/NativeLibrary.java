package dev.stitch.kernels;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.net.URL;
import java.net.URLConnection;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Finds and loads the C kernels once: an explicit {@code -Dstitch.native.path}, else the copy
 * bundled in the jar for this host, {@code native/<os>-<arch>/} with the arch taken from
 * {@code os.arch}, extracted to a temporary file because the dynamic loader needs a real path.
 * Every step is recorded, so {@code stitch doctor} can say which libraries the jar holds, which one
 * loaded and why (docs/platforms.md).
 */
final class NativeLibrary {

    /** System property naming a library file to load instead of the bundled one. */
    static final String PATH_PROPERTY = "stitch.native.path";
    static final String LIBRARY_FILE = "libstitchkernels.so";
    /** System property capping the dispatched ISA: one of {@link NativeKernels#isaLevels()}. */
    static final String ISA_PROPERTY = "stitch.native.isa";
    /** The platforms the build can bundle a library for (src/main/c/build.sh). */
    static final List<String> BUILT_PLATFORMS = List.of("linux-x86_64", "linux-aarch64");

    /** The result of the one load attempt: kernels, or null with every attempt explained. */
    record Outcome(NativeKernels kernels, List<String> attempts) {
    }

    /** A library bundled in the jar: its platform and size in bytes. */
    record Bundled(String platform, long bytes) {
    }

    private NativeLibrary() {
    }

    static Outcome outcome() {
        return Holder.OUTCOME;
    }

    /** The platform directory name of this host, e.g. {@code linux-x86_64} or {@code linux-aarch64}. */
    static String platform() {
        return platform(System.getProperty("os.name", ""), System.getProperty("os.arch", ""));
    }

    /** The platform directory name for a JVM's {@code os.name} and {@code os.arch}. */
    static String platform(String osName, String osArch) {
        String os = osName.toLowerCase(Locale.ROOT);
        String arch = osArch.toLowerCase(Locale.ROOT);
        String osPart = os.contains("linux") ? "linux" : os.replace(' ', '_');
        String archPart = switch (arch) {
            case "amd64", "x86_64", "x86-64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            default -> arch;
        };
        return osPart + "-" + archPart;
    }

    static String resource(String platform) {
        return "/native/" + platform + "/" + LIBRARY_FILE;
    }

    /** The libraries this jar (or class path) holds, in {@link #BUILT_PLATFORMS} order. */
    static List<Bundled> bundled() {
        List<Bundled> out = new ArrayList<>();
        for (String platform : BUILT_PLATFORMS) {
            URL url = NativeLibrary.class.getResource(resource(platform));
            if (url != null) {
                out.add(new Bundled(platform, size(url)));
            }
        }
        return List.copyOf(out);
    }

    private static long size(URL url) {
        try {
            URLConnection c = url.openConnection();
            c.setUseCaches(false);
            return c.getContentLengthLong();
        } catch (IOException e) {
            return -1;
        }
    }

    /** e.g. {@code "linux-x86_64 (51 KiB), linux-aarch64 (72 KiB)"}, or {@code "none"}. */
    static String describeBundled(List<Bundled> bundled) {
        if (bundled.isEmpty()) {
            return "none";
        }
        List<String> parts = new ArrayList<>();
        for (Bundled b : bundled) {
            parts.add(b.platform() + (b.bytes() >= 0 ? " (" + (b.bytes() + 1023) / 1024 + " KiB)" : ""));
        }
        return String.join(", ", parts);
    }

    private static final class Holder {
        static final Outcome OUTCOME = load();
    }

    private static Outcome load() {
        String cap = System.getProperty(ISA_PROPERTY);
        return load(cap == null || cap.isBlank() ? null : cap.trim().toLowerCase(Locale.ROOT));
    }

    /**
     * Loads a private copy of the library (its own dispatch state) capped at {@code maxIsa}, so tests
     * can run every ISA variant in one process.
     */
    static Outcome loadCopy(String maxIsa) {
        return load(maxIsa);
    }

    private static Outcome load(String maxIsa) {
        List<String> attempts = new ArrayList<>();
        String platform = platform();
        List<Bundled> bundled = bundled();
        attempts.add("bundled libraries: " + describeBundled(bundled) + "; this host is " + platform
            + " (os.name " + System.getProperty("os.name") + ", os.arch " + System.getProperty("os.arch") + ")");
        String explicit = System.getProperty(PATH_PROPERTY);
        if (explicit != null && !explicit.isBlank()) {
            NativeKernels k = tryLoad(Path.of(explicit), "-D" + PATH_PROPERTY + "=" + explicit, maxIsa, attempts);
            if (k != null) {
                return new Outcome(k, List.copyOf(attempts));
            }
        }
        String resource = resource(platform);
        if (bundled.stream().noneMatch(b -> b.platform().equals(platform))) {
            attempts.add(BUILT_PLATFORMS.contains(platform)
                ? "no library bundled for " + platform + ": classpath resource " + resource
                    + " is missing (the build had no compiler for it; see docs/platforms.md)"
                : "no native build exists for " + platform + " (only " + String.join(" and ", BUILT_PLATFORMS) + " are built)");
            return new Outcome(null, List.copyOf(attempts));
        }
        try (InputStream in = NativeLibrary.class.getResourceAsStream(resource)) {
            if (in == null) {
                attempts.add("classpath resource " + resource + " could not be opened");
                return new Outcome(null, List.copyOf(attempts));
            }
            Path tmp = Files.createTempFile("stitch-kernels-", ".so");
            tmp.toFile().deleteOnExit();
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            NativeKernels k = tryLoad(tmp, "classpath " + resource + " (matches os.arch) extracted to " + tmp, maxIsa, attempts);
            return new Outcome(k, List.copyOf(attempts));
        } catch (IOException | RuntimeException e) {
            attempts.add("extracting classpath " + resource + " failed: " + e);
            return new Outcome(null, List.copyOf(attempts));
        }
    }

    private static NativeKernels tryLoad(Path file, String what, String maxIsa, List<String> attempts) {
        try {
            SymbolLookup lookup = SymbolLookup.libraryLookup(file, Arena.global());
            NativeKernels k = new NativeKernels(lookup, maxIsa);
            attempts.add(what + ": loaded, isa " + k.isa() + " (" + isaReason(k.isa(), maxIsa) + ")");
            return k;
        } catch (IllegalArgumentException | IllegalCallerException | UnsatisfiedLinkError | java.util.NoSuchElementException e) {
            attempts.add(what + ": " + e.getMessage());
            return null;
        }
    }

    /** Why dispatch settled on {@code isa}: a cap, or the best level the CPU offers (docs/platforms.md). */
    static String isaReason(String isa, String maxIsa) {
        List<String> levels = NativeKernels.isaLevels();
        if (maxIsa != null) {
            return isa.equals(maxIsa) ? "capped at " + maxIsa : "capped at " + maxIsa + ", the CPU lacks " + maxIsa;
        }
        String best = levels.get(levels.size() - 1);
        if (isa.equals(best)) {
            return "the best of " + String.join(", ", levels) + "; the CPU has it";
        }
        if (isa.equals("neon") && CpuFeatures.hasFlag("sve")) {
            return "the CPU has SVE, but with vectors no wider than NEON's 128 bits it does not pay";
        }
        return "the best of " + String.join(", ", levels) + " the CPU offers";
    }
}
