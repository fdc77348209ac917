package dev.stitch.tensor;

import java.util.Arrays;
import java.util.Objects;

/** A tensor's identity: canonical Hugging Face name, dtype and shape (row-major). */
public record TensorSpec(String name, Dtype dtype, long[] shape) {

    public TensorSpec {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(dtype, "dtype");
        shape = shape.clone();
        for (long d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException("negative dimension in shape " + Arrays.toString(shape) + " of " + name);
            }
        }
    }

    /** Number of elements; a scalar (empty shape) has one. */
    public long numel() {
        long n = 1;
        for (long d : shape) {
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    public long byteLength() {
        return Math.multiplyExact(numel(), dtype.width());
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorSpec t && name.equals(t.name) && dtype == t.dtype && Arrays.equals(shape, t.shape);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, dtype, Arrays.hashCode(shape));
    }

    @Override
    public String toString() {
        return name + " " + dtype + Arrays.toString(shape);
    }
}
