package dev.stitch.digest;

import dev.stitch.hash.Hash128;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The digest of a whole set of weights that proves which weights served a request
 * (docs/protocol/sync-and-engines.md §7.4): {@code "xxh3-128:<hex>"} over the concatenation, in ascending byte
 * order of the UTF-8 tensor names, of each tensor's 16-byte xxh3-128 digest (canonical big-endian)
 * of its raw bytes. The trainer, the reference engine and the demo compute the same function.
 */
public final class WeightsDigest {

    /** Prefix of the text form. */
    public static final String PREFIX = "xxh3-128:";

    /**
     * Ascending unsigned byte order of the UTF-8 encoded names; differs from {@link String#compareTo}
     * for characters above U+FFFF, which is why the digest never uses the natural string order.
     */
    public static final Comparator<String> NAME_ORDER = (a, b) ->
            Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));

    private WeightsDigest() {
    }

    /** Digest of name → raw tensor bytes, with the process-wide kernels. */
    public static String of(Map<String, ? extends MemorySegment> tensors) {
        return of(tensors, Kernels.get());
    }

    /** Digest of name → raw tensor bytes; tensors are hashed in parallel (the result does not depend on it). */
    public static String of(Map<String, ? extends MemorySegment> tensors, DeltaKernels kernels) {
        Objects.requireNonNull(kernels, "kernels");
        List<String> names = sortedNames(tensors.keySet());
        Hash128[] digests = new Hash128[names.size()];
        java.util.stream.IntStream.range(0, names.size()).parallel()
                .forEach(i -> digests[i] = kernels.xxh3(Objects.requireNonNull(tensors.get(names.get(i)), names.get(i))));
        return combine(digests, kernels);
    }

    /** Combines per-tensor digests (name → xxh3-128 of the tensor's bytes) into the weights digest. */
    public static String combine(Map<String, Hash128> perTensor) {
        return combine(perTensor, Kernels.get());
    }

    /** As {@link #combine(Map)}, with the given kernels. */
    public static String combine(Map<String, Hash128> perTensor, DeltaKernels kernels) {
        List<String> names = sortedNames(perTensor.keySet());
        Hash128[] digests = new Hash128[names.size()];
        for (int i = 0; i < digests.length; i++) {
            digests[i] = Objects.requireNonNull(perTensor.get(names.get(i)), names.get(i));
        }
        return combine(digests, kernels);
    }

    /** Parses {@code "xxh3-128:<32 hex>"}; anything else is an error. */
    public static Hash128 parse(String text) {
        if (text == null || !text.startsWith(PREFIX)) {
            throw new IllegalArgumentException("a weights digest starts with '" + PREFIX + "': " + text);
        }
        return Hash128.parseHex(text.substring(PREFIX.length()));
    }

    private static List<String> sortedNames(java.util.Collection<String> names) {
        List<String> sorted = new ArrayList<>(names);
        sorted.sort(NAME_ORDER);
        return sorted;
    }

    private static String combine(Hash128[] digests, DeltaKernels kernels) {
        // Off-heap so that native kernels, which may not accept heap segments, can hash it.
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment concat = arena.allocate(Math.max(1, 16L * digests.length)).asSlice(0, 16L * digests.length);
            for (int i = 0; i < digests.length; i++) {
                MemorySegment.copy(digests[i].bytes(), 0, concat, ValueLayout.JAVA_BYTE, 16L * i, 16);
            }
            return PREFIX + kernels.xxh3(concat).hex();
        }
    }
}
