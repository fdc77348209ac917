package dev.stitch.publish;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import dev.stitch.encode.TensorData;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * Weights from DJL arrays. This is the only class of the publisher that references DJL, which is an
 * optional dependency: the rest of the API loads and works without DJL on the class path.
 */
@SuppressWarnings("exports") // DJL types in the signatures: whoever calls this already has DJL, so no module re-exports it
public final class DjlWeights {

    private DjlWeights() {
    }

    /**
     * Each array becomes one tensor named by {@link NDArray#getName()} (a canonical HF name), with
     * its DJL data type mapped to the safetensors dtype and its bytes as the engine hands them out
     * (little-endian hosts only).
     */
    public static Weights from(NDList arrays) {
        List<TensorData> tensors = new ArrayList<>(arrays.size());
        for (NDArray a : arrays) {
            tensors.add(tensor(a.getName(), a));
        }
        return Weights.of(tensors);
    }

    /** One named array; {@code name} overrides the array's own name. */
    public static TensorData tensor(String name, NDArray array) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("a DJL array needs a tensor name (NDArray.setName) to be published");
        }
        Dtype dtype;
        try {
            dtype = Dtype.fromSafetensors(array.getDataType().asSafetensors());
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("tensor '" + name + "': DJL data type " + array.getDataType()
                    + " has no safetensors dtype", e);
        }
        long[] shape = array.getShape().getShape();
        if (dtype.width() > 1 && ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("tensor '" + name + "': DJL arrays hold native-order bytes and this host is "
                    + ByteOrder.nativeOrder() + "; publish little-endian bytes through Weights.builder() instead");
        }
        // toByteBuffer hands out a fresh copy of the engine's memory, so it can be kept as is.
        ByteBuffer buf = array.toByteBuffer();
        return new TensorData(new TensorSpec(name, dtype, shape), MemorySegment.ofBuffer(buf));
    }
}
