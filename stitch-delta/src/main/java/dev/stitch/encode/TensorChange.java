package dev.stitch.encode;

import dev.stitch.hash.Hash128;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.tensor.TensorSpec;
import java.lang.foreign.MemorySegment;

/**
 * One changed tensor of a version, as the encoder hands it to a format writer: the sorted changed
 * element indices and their values, plus the whole old and new tensors for formats that need dense
 * bytes (disk_delta) or a digest of the new tensor. Segments are only valid during the write call.
 *
 * @param spec          name, dtype, shape (unchanged between old and new)
 * @param count         number of changed elements (at least 1)
 * @param positions     {@code count} sorted element indices, unsigned little-endian of {@code positionWidth} bytes
 * @param positionWidth 4 when the tensor has at most 2^32 elements, else 8
 * @param values        {@code count} elements of {@code spec.dtype().width()} bytes: the new bits, or
 *                      {@code new XOR old} when {@code xorValues}
 * @param xorValues     whether {@code values} holds XORs rather than new bits
 * @param oldTensor     the whole tensor as last published (the snapshot)
 * @param newTensor     the whole tensor as it is now
 * @param newDigest     xxh3-128 of {@code newTensor} when the encoder computed it during the diff, else null
 */
public record TensorChange(TensorSpec spec, long count, MemorySegment positions, int positionWidth,
                           MemorySegment values, boolean xorValues, MemorySegment oldTensor, MemorySegment newTensor,
                           Hash128 newDigest) {

    /** A change whose new tensor's digest is not known yet (writers hash it when they need it). */
    public TensorChange(TensorSpec spec, long count, MemorySegment positions, int positionWidth,
                        MemorySegment values, boolean xorValues, MemorySegment oldTensor, MemorySegment newTensor) {
        this(spec, count, positions, positionWidth, values, xorValues, oldTensor, newTensor, null);
    }

    /** xxh3-128 of the new tensor: the one carried from the diff, or computed now with {@code kernels}. */
    public Hash128 newDigest(DeltaKernels kernels) {
        return newDigest != null ? newDigest : kernels.xxh3(newTensor);
    }
}
