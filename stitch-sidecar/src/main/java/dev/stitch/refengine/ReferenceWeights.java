package dev.stitch.refengine;

import dev.stitch.safetensors.Checkpoint;
import dev.stitch.tensor.TensorSpec;
import dev.stitch.digest.WeightsDigest;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The reference engine's weights: a private off-heap copy of every tensor of a checkpoint (never a
 * mapping of the files, since host mode rewrites the local checkpoint in place while the engine
 * keeps serving), plus their {@link WeightsDigest}.
 */
final class ReferenceWeights implements AutoCloseable {
    private final Arena arena;
    private final Map<String, TensorSpec> specs;
    private final Map<String, MemorySegment> tensors;
    private volatile String digest;

    private ReferenceWeights(Arena arena, Map<String, TensorSpec> specs, Map<String, MemorySegment> tensors) {
        this.arena = arena;
        this.specs = specs;
        this.tensors = tensors;
        this.digest = WeightsDigest.of(tensors);
    }

    /** Copies every tensor of the checkpoint in {@code dir} (single file or sharded) into private memory. */
    static ReferenceWeights load(Path dir) throws IOException {
        Arena arena = Arena.ofShared();
        try (Checkpoint ckpt = Checkpoint.open(dir)) {
            Map<String, TensorSpec> specs = new LinkedHashMap<>();
            Map<String, MemorySegment> tensors = new LinkedHashMap<>();
            for (String name : ckpt.names()) {
                MemorySegment src = ckpt.tensor(name);
                MemorySegment copy = arena.allocate(Math.max(1, src.byteSize()), 64).asSlice(0, src.byteSize());
                MemorySegment.copy(src, 0, copy, 0, src.byteSize());
                specs.put(name, ckpt.spec(name));
                tensors.put(name, copy);
            }
            return new ReferenceWeights(arena, Collections.unmodifiableMap(specs), Collections.unmodifiableMap(tensors));
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    String digest() {
        return digest;
    }

    Map<String, TensorSpec> specs() {
        return specs;
    }

    /** The live tensor bytes; writers must hold the engine's weight lock and call {@link #rehash()} after. */
    Map<String, MemorySegment> tensors() {
        return tensors;
    }

    /** Recomputes the digest after an in-place patch. */
    void rehash() {
        digest = WeightsDigest.of(tensors);
    }

    long totalBytes() {
        long n = 0;
        for (MemorySegment s : tensors.values()) {
            n += s.byteSize();
        }
        return n;
    }

    @Override
    public void close() {
        arena.close();
    }
}
