package dev.stitch.kernels;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Finds and loads the C kernels once: an explicit {@code -Dstitch.native.path}, else the copy
 * packaged in the jar under {@code native/<os>-<arch>/}, extracted to a temporary file because
 * the dynamic loader needs a real path.
 */
final class NativeLibrary {

    /** System property naming a library file to load instead of the packaged one. */
    static final String PATH_PROPERTY = "stitch.native.path";
    static final String LIBRARY_FILE = "libstitchkernels.so";
    /** System property capping the dispatched ISA: {@code scalar}, {@code avx2} or {@code avx512}. */
    static final String ISA_PROPERTY = "stitch.native.isa";

    /** The result of the one load attempt: kernels, or null with every attempt explained. */
    record Outcome(NativeKernels kernels, List<String> attempts) {
    }

    private NativeLibrary() {
    }

    static Outcome outcome() {
        return Holder.OUTCOME;
    }

    /** The platform directory name the build packages for, e.g. {@code linux-x86_64}. */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String osName = os.contains("linux") ? "linux" : os.replace(' ', '_');
        String archName = arch.equals("amd64") || arch.equals("x86_64") ? "x86_64" : arch;
        return osName + "-" + archName;
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
        String explicit = System.getProperty(PATH_PROPERTY);
        if (explicit != null && !explicit.isBlank()) {
            NativeKernels k = tryLoad(Path.of(explicit), "-D" + PATH_PROPERTY + "=" + explicit, maxIsa, attempts);
            if (k != null) {
                return new Outcome(k, List.copyOf(attempts));
            }
        }
        String platform = platform();
        String resource = "/native/" + platform + "/" + LIBRARY_FILE;
        if (!platform.equals("linux-x86_64")) {
            attempts.add("no native build for " + platform + " (only linux-x86_64 is built)");
            return new Outcome(null, List.copyOf(attempts));
        }
        try (InputStream in = NativeLibrary.class.getResourceAsStream(resource)) {
            if (in == null) {
                attempts.add("native library not packaged: classpath resource " + resource + " is missing (built without gcc?)");
                return new Outcome(null, List.copyOf(attempts));
            }
            Path tmp = Files.createTempFile("stitch-kernels-", ".so");
            tmp.toFile().deleteOnExit();
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            NativeKernels k = tryLoad(tmp, "classpath " + resource + " extracted to " + tmp, maxIsa, attempts);
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
            attempts.add(what + ": loaded, isa " + k.isa() + (maxIsa == null ? "" : " (capped at " + maxIsa + ")"));
            return k;
        } catch (IllegalArgumentException | IllegalCallerException | UnsatisfiedLinkError | java.util.NoSuchElementException e) {
            attempts.add(what + ": " + e.getMessage());
            return null;
        }
    }
}
