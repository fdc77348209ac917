package dev.stitch.safetensors;

import dev.stitch.tensor.TensorSpec;

/**
 * One tensor of a safetensors header: its identity and its byte range relative to the start of the
 * data section.
 *
 * @param spec  name, dtype, shape
 * @param begin first byte, relative to the data section
 * @param end   one past the last byte, relative to the data section
 */
public record TensorEntry(TensorSpec spec, long begin, long end) {

    public String name() {
        return spec.name();
    }

    public long byteLength() {
        return end - begin;
    }
}
