package dev.stitch.encode;

import dev.stitch.tensor.TensorSpec;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * One whole tensor as the encoder reads it: its identity and its raw bytes, row-major, each element
 * little-endian exactly as the served Hugging Face checkpoint stores it.
 *
 * @param spec  canonical name, dtype, shape
 * @param bytes exactly {@code spec.byteLength()} bytes (native or heap memory)
 */
public record TensorData(TensorSpec spec, MemorySegment bytes) {

    public TensorData {
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(bytes, "bytes");
        if (bytes.byteSize() != spec.byteLength()) {
            throw new IllegalArgumentException("tensor " + spec + " needs " + spec.byteLength()
                    + " bytes, got " + bytes.byteSize());
        }
    }

    public String name() {
        return spec.name();
    }
}
