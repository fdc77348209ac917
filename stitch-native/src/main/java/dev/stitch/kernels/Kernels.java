package dev.stitch.kernels;

import java.util.List;
import java.util.OptionalLong;

/**
 * Chooses the delta kernels once per process: native when the packaged library loads and
 * {@code -Dstitch.native=false} is not set, else the pure-Java fallback. Two more properties
 * serve diagnosis: {@code -Dstitch.native.path=FILE} loads that library file first, and
 * {@code -Dstitch.native.isa=scalar|avx2|avx512} (x86-64) or {@code scalar|neon|sve} (aarch64) caps
 * the instruction set the C kernels dispatch to. Supported platforms and how the library is chosen:
 * docs/platforms.md.
 */
public final class Kernels {

    /** System property that, set to {@code false}, keeps the process on the Java kernels. */
    public static final String NATIVE_PROPERTY = "stitch.native";

    private Kernels() {
    }

    /** The process-wide kernels. */
    public static DeltaKernels get() {
        return Selection.SELECTED;
    }

    /** The pure-Java kernels, always available. */
    public static DeltaKernels java() {
        return JavaKernels.INSTANCE;
    }

    /**
     * The native kernels, whatever {@code stitch.native} says.
     *
     * @throws UnsatisfiedLinkError listing every attempt when the library cannot be loaded
     */
    public static DeltaKernels nativeKernels() {
        NativeLibrary.Outcome outcome = NativeLibrary.outcome();
        if (outcome.kernels() == null) {
            throw new UnsatisfiedLinkError("stitch native kernels unavailable; tried: " + String.join("; ", outcome.attempts()));
        }
        return outcome.kernels();
    }

    /** True when the native library loaded (regardless of which kernels were selected). */
    public static boolean nativeAvailable() {
        return NativeLibrary.outcome().kernels() != null;
    }

    /** What the loader tried, one line per attempt, for {@code stitch doctor}. */
    public static List<String> loaderAttempts() {
        return NativeLibrary.outcome().attempts();
    }

    /**
     * The address of a zstd external sequence producer ({@code ZSTD_sequenceProducer_F}) that finds
     * no matches, so a context it is registered on codes blocks as Huffman literals only; empty
     * unless the native kernels are selected.
     */
    public static OptionalLong zstdLiteralsProducer() {
        return Selection.SELECTED instanceof NativeKernels n ? OptionalLong.of(n.zstdLiteralsProducer()) : OptionalLong.empty();
    }

    /** Why the selected kernels were selected, in one line. */
    public static String selectionReason() {
        return Selection.REASON;
    }

    private static final class Selection {
        static final DeltaKernels SELECTED;
        static final String REASON;

        static {
            if ("false".equalsIgnoreCase(System.getProperty(NATIVE_PROPERTY, "true").trim())) {
                SELECTED = JavaKernels.INSTANCE;
                REASON = "native kernels disabled by -D" + NATIVE_PROPERTY + "=false";
            } else {
                NativeLibrary.Outcome outcome = NativeLibrary.outcome();
                if (outcome.kernels() != null) {
                    SELECTED = outcome.kernels();
                    REASON = "native library loaded";
                } else {
                    SELECTED = JavaKernels.INSTANCE;
                    REASON = "native library unavailable (" + String.join("; ", outcome.attempts()) + "), using Java kernels";
                }
            }
        }
    }
}
