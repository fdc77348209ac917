package dev.stitch.format;

import dev.stitch.encode.ValueMode;
import dev.stitch.format.disk.DiskDeltaWriter;
import dev.stitch.format.sparse.SparseDeltaWriter;
import dev.stitch.format.sparse.SparseEncoding;
import java.util.Objects;

/**
 * The settings the format writers take, one field per knob (docs/formats/sparse-delta.md §2, docs/formats/disk-delta.md §3, docs/formats/stitch-delta.md §4): each
 * {@link DeltaFormat} reads only its own.
 *
 * @param stitchValues   stitch_delta value mode
 * @param sparseEncoding sparse_delta position encoding
 * @param diskEncoding   disk_delta payload encoding
 * @param bucketBytes    sparse_delta bucket cap in encoded bytes
 * @param maxFileBytes   split size of stitch_delta and disk_delta files
 */
public record FormatOptions(ValueMode stitchValues, SparseEncoding sparseEncoding, ValueMode diskEncoding,
                            long bucketBytes, long maxFileBytes) {

    public FormatOptions {
        Objects.requireNonNull(stitchValues, "stitchValues");
        Objects.requireNonNull(sparseEncoding, "sparseEncoding");
        Objects.requireNonNull(diskEncoding, "diskEncoding");
        if (bucketBytes <= 0) {
            throw new IllegalArgumentException("bucket size must be positive");
        }
        if (maxFileBytes <= 0) {
            throw new IllegalArgumentException("file size limit must be positive");
        }
    }

    /** xor stitch_delta values, deltas_zstd sparse positions, overwrite disk payloads, 512 MiB buckets, 2 GiB files. */
    public static FormatOptions defaults() {
        return new FormatOptions(ValueMode.XOR, SparseEncoding.DELTAS_ZSTD, ValueMode.OVERWRITE,
                SparseDeltaWriter.DEFAULT_BUFFER_SIZE, DiskDeltaWriter.DEFAULT_MAX_FILE_BYTES);
    }

    public FormatOptions withStitchValues(ValueMode mode) {
        return new FormatOptions(mode, sparseEncoding, diskEncoding, bucketBytes, maxFileBytes);
    }

    public FormatOptions withSparseEncoding(SparseEncoding encoding) {
        return new FormatOptions(stitchValues, encoding, diskEncoding, bucketBytes, maxFileBytes);
    }

    public FormatOptions withDiskEncoding(ValueMode mode) {
        return new FormatOptions(stitchValues, sparseEncoding, mode, bucketBytes, maxFileBytes);
    }

    public FormatOptions withBucketBytes(long bytes) {
        return new FormatOptions(stitchValues, sparseEncoding, diskEncoding, bytes, maxFileBytes);
    }

    public FormatOptions withMaxFileBytes(long bytes) {
        return new FormatOptions(stitchValues, sparseEncoding, diskEncoding, bucketBytes, bytes);
    }
}
