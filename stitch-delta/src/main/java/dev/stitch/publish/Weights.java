package dev.stitch.publish;

import dev.stitch.encode.TensorData;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import dev.stitch.digest.WeightsDigest;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A complete set of named weights handed to the {@link WeightPublisher}: canonical Hugging Face
 * names, dtypes and shapes with their raw little-endian bytes. Built from memory segments, byte
 * buffers or primitive arrays ({@link #builder()}), from a safetensors checkpoint directory
 * ({@link CheckpointWeights#open}), or from DJL arrays ({@link DjlWeights}). The bytes are read, never
 * copied, by the publisher; closing releases whatever the source owns (mapped files, copies).
 */
public final class Weights implements AutoCloseable {

    private final List<TensorData> tensors;
    private final AutoCloseable owned;

    Weights(List<TensorData> tensors, AutoCloseable owned) {
        Set<String> names = new HashSet<>();
        for (TensorData t : tensors) {
            if (!names.add(t.name())) {
                throw new IllegalArgumentException("duplicate tensor name '" + t.name() + "'");
            }
        }
        this.tensors = List.copyOf(tensors);
        this.owned = owned;
    }

    /** Weights over tensors the caller keeps alive. */
    public static Weights of(Collection<TensorData> tensors) {
        return new Weights(new ArrayList<>(tensors), null);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The tensors, in the order they were added. */
    public List<TensorData> tensors() {
        return tensors;
    }

    /** Name → bytes. */
    public Map<String, MemorySegment> segments() {
        Map<String, MemorySegment> m = new LinkedHashMap<>();
        for (TensorData t : tensors) {
            m.put(t.name(), t.bytes());
        }
        return Collections.unmodifiableMap(m);
    }

    /** The tensor named {@code name}, or null. */
    public TensorData tensor(String name) {
        for (TensorData t : tensors) {
            if (t.name().equals(name)) {
                return t;
            }
        }
        return null;
    }

    /** Total bytes. */
    public long byteSize() {
        long n = 0;
        for (TensorData t : tensors) {
            n += t.bytes().byteSize();
        }
        return n;
    }

    /** The weights digest (docs/protocol/sync-and-engines.md §7.4) the reference engine reports for these weights. */
    public String digest() {
        return WeightsDigest.of(segments());
    }

    @Override
    public void close() {
        if (owned != null) {
            try {
                owned.close();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException("cannot release weights: " + e.getMessage(), e);
            }
        }
    }

    /**
     * Collects tensors. Segments and buffers are used in place (the caller keeps them alive and
     * unchanged until the publish using them finished); primitive arrays are viewed in place on
     * little-endian hosts and copied to little-endian memory owned by the result otherwise.
     */
    public static final class Builder {
        private final List<TensorData> tensors = new ArrayList<>();
        private Arena copies;

        private Builder() {
        }

        public Builder add(TensorData tensor) {
            tensors.add(Objects.requireNonNull(tensor, "tensor"));
            return this;
        }

        /** Raw little-endian element bytes. */
        public Builder add(String name, Dtype dtype, long[] shape, MemorySegment bytes) {
            return add(new TensorData(new TensorSpec(name, dtype, shape), bytes));
        }

        /** Raw little-endian element bytes from the buffer's position to its limit (its byte order setting is ignored). */
        public Builder add(String name, Dtype dtype, long[] shape, ByteBuffer bytes) {
            return add(name, dtype, shape, MemorySegment.ofBuffer(bytes));
        }

        /** Raw little-endian element bytes. */
        public Builder add(String name, Dtype dtype, long[] shape, byte[] bytes) {
            return add(name, dtype, shape, MemorySegment.ofArray(bytes));
        }

        /** 16-bit element bits (BF16, F16, I16, U16). */
        public Builder add(String name, Dtype dtype, long[] shape, short[] bits) {
            return primitive(name, dtype, shape, MemorySegment.ofArray(bits), 2);
        }

        /** 32-bit integer elements (I32, U32), or F32 bit patterns. */
        public Builder add(String name, Dtype dtype, long[] shape, int[] bits) {
            return primitive(name, dtype, shape, MemorySegment.ofArray(bits), 4);
        }

        /** 64-bit integer elements (I64, U64), or F64 bit patterns. */
        public Builder add(String name, Dtype dtype, long[] shape, long[] bits) {
            return primitive(name, dtype, shape, MemorySegment.ofArray(bits), 8);
        }

        /** F32 values, bit patterns kept exactly (NaN payloads included). */
        public Builder add(String name, long[] shape, float[] values) {
            return primitive(name, Dtype.F32, shape, MemorySegment.ofArray(values), 4);
        }

        /** F64 values, bit patterns kept exactly. */
        public Builder add(String name, long[] shape, double[] values) {
            return primitive(name, Dtype.F64, shape, MemorySegment.ofArray(values), 8);
        }

        private Builder primitive(String name, Dtype dtype, long[] shape, MemorySegment nativeOrder, int width) {
            if (dtype.width() != width) {
                throw new IllegalArgumentException("tensor '" + name + "' is " + dtype + " (" + dtype.width()
                        + "-byte elements) but the array holds " + width + "-byte elements");
            }
            if (ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN) {
                return add(name, dtype, shape, nativeOrder);
            }
            // On a big-endian host an array view has the wrong byte order: keep a little-endian copy.
            if (copies == null) {
                copies = Arena.ofShared();
            }
            MemorySegment le = copies.allocate(nativeOrder.byteSize(), width);
            long n = nativeOrder.byteSize() / width;
            for (long i = 0; i < n; i++) {
                for (int b = 0; b < width; b++) {
                    le.set(ValueLayout.JAVA_BYTE, i * width + b, nativeOrder.get(ValueLayout.JAVA_BYTE, i * width + (width - 1 - b)));
                }
            }
            return add(name, dtype, shape, le);
        }

        public Weights build() {
            Arena owned = copies;
            copies = null;
            try {
                return new Weights(tensors, owned);
            } catch (RuntimeException e) {
                if (owned != null) {
                    owned.close();
                }
                throw e;
            }
        }
    }
}
