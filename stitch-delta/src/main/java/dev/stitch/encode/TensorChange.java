package dev.stitch.encode;

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
 */
public record TensorChange(TensorSpec spec, long count, MemorySegment positions, int positionWidth,
                           MemorySegment values, boolean xorValues, MemorySegment oldTensor, MemorySegment newTensor) {
}
