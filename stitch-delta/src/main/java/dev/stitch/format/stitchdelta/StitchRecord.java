package dev.stitch.format.stitchdelta;

import dev.stitch.hash.Hash128;
import dev.stitch.tensor.TensorSpec;

/**
 * The header of one tensor record of a stitch_delta file (docs/formats/stitch-delta.md).
 *
 * @param spec          name, dtype, shape
 * @param xor           values are {@code new XOR base} (else the new bits)
 * @param dense         the record holds the whole new tensor
 * @param count         changed elements (numel for dense records)
 * @param units         u16 units of the gap stream (0 for dense records)
 * @param digest        xxh3-128 of the tensor's new bytes
 * @param streams       the stored streams: gaps then values (sparse), or values (dense)
 * @param offset        absolute offset of the record in its file
 * @param length        bytes of the record
 */
public record StitchRecord(TensorSpec spec, boolean xor, boolean dense, long count, long units, Hash128 digest,
                           java.util.List<Stream> streams, long offset, long length) {

    /**
     * One stored stream.
     *
     * @param compressed one zstd frame (else raw planes)
     * @param stored     bytes in the file
     * @param raw        bytes after decompression
     * @param offset     absolute offset of the stored bytes in the file
     */
    public record Stream(boolean compressed, long stored, long raw, long offset) {
    }

    public String name() {
        return spec.name();
    }

    /** Stored bytes of all streams. */
    public long storedBytes() {
        return streams.stream().mapToLong(Stream::stored).sum();
    }

    /** Bytes of all streams before compression. */
    public long rawBytes() {
        return streams.stream().mapToLong(Stream::raw).sum();
    }
}
