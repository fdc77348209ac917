package dev.stitch.digest;

import dev.stitch.format.DeltaFormatException;
import dev.stitch.hash.Digest;
import dev.stitch.kernels.Kernels;
import java.lang.foreign.MemorySegment;
import java.util.Locale;

/** Per-tensor digests of delta files (docs/formats/common.md §0.4), in their lowercase hex text form. */
public final class Digests {

    /** The default and our writers' digest. */
    public static final String XXH3_128 = "xxh3-128";
    /** BLAKE3 (32-byte output), accepted from slime v2 writers. */
    public static final String BLAKE3 = "blake3";
    /** zlib Adler-32, accepted from slime v2 writers. */
    public static final String ADLER32 = "adler32";

    private Digests() {
    }

    /** Whether this reader can check {@code format}. */
    public static boolean supported(String format) {
        return XXH3_128.equals(format) || ADLER32.equals(format) || BLAKE3.equals(format);
    }

    /** A fresh digest of {@code format}; an unsupported format is a {@link DeltaFormatException}. */
    public static Digest newDigest(String format) {
        if (XXH3_128.equals(format)) {
            return Kernels.get().newXxh3Stream();
        }
        if (BLAKE3.equals(format)) {
            return new Blake3();
        }
        if (ADLER32.equals(format)) {
            return new Adler32Digest();
        }
        throw new DeltaFormatException("checksum_format '" + format + "' is not supported (xxh3-128, blake3, adler32)");
    }

    /** The digest of {@code data} in {@code format}. */
    public static String of(String format, MemorySegment data) {
        if (XXH3_128.equals(format)) {
            // one-shot hashing goes through the native kernel, several times faster than the Java hasher
            return Kernels.get().xxh3(data).hex();
        }
        return newDigest(format).update(data).hex();
    }

    /** Normalises a digest text for comparison (hex is case-insensitive). */
    public static String normalize(String hex) {
        return hex.strip().toLowerCase(Locale.ROOT);
    }
}
