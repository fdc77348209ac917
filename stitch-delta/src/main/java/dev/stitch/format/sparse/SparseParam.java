package dev.stitch.format.sparse;

import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;

/**
 * One entry of a sparse_delta file's {@code params} list (docs/formats/sparse-delta.md §2.3).
 *
 * @param name     canonical HF tensor name
 * @param dtype    the param dtype (BF16, F16 or F32)
 * @param shape    full HF shape
 * @param posStart first byte in {@code __positions__}
 * @param posEnd   one past the last byte in {@code __positions__}
 * @param posWidth bytes per packed position (2 or 4)
 * @param valStart first element in {@code __values__}
 * @param valEnd   one past the last element in {@code __values__}
 */
public record SparseParam(String name, Dtype dtype, long[] shape, long posStart, long posEnd, int posWidth,
                          long valStart, long valEnd) {

    public SparseParam {
        shape = shape.clone();
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    public TensorSpec spec() {
        return new TensorSpec(name, dtype, shape);
    }

    /** Number of changed elements. */
    public long count() {
        return valEnd - valStart;
    }
}
