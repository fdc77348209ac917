package dev.stitch.digest;
import dev.stitch.format.DeltaFormatException;

import dev.stitch.kernels.Kernels;
import dev.stitch.hash.Xxh3Stream;
import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import java.util.Locale;
import java.util.zip.Adler32;

/** Per-tensor digests of delta files (delta-formats.md 0.4), in their lowercase hex text form. */
public final class Digests {

    /** The default and our writers' digest. */
    public static final String XXH3_128 = "xxh3-128";
    /** BLAKE3 (32-byte output), accepted from slime v2 writers. */
    public static final String BLAKE3 = "blake3";
    /** zlib Adler-32, accepted from slime v2 writers. */
    public static final String ADLER32 = "adler32";

    private static final long CHUNK = 1L << 30;

    private Digests() {
    }

    /** An incremental digest. */
    public interface Digest {
        Digest update(MemorySegment data);

        /** Lowercase hex of the digest so far. */
        String hex();
    }

    /** Whether this reader can check {@code format}. */
    public static boolean supported(String format) {
        return XXH3_128.equals(format) || ADLER32.equals(format) || BLAKE3.equals(format);
    }

    /** A fresh digest of {@code format}; an unsupported format is a {@link DeltaFormatException}. */
    public static Digest newDigest(String format) {
        if (XXH3_128.equals(format)) {
            Xxh3Stream h = Kernels.get().newXxh3Stream();
            return new Digest() {
                @Override
                public Digest update(MemorySegment data) {
                    h.update(data);
                    return this;
                }

                @Override
                public String hex() {
                    return h.digest().hex();
                }
            };
        }
        if (BLAKE3.equals(format)) {
            Blake3 b = new Blake3();
            return new Digest() {
                @Override
                public Digest update(MemorySegment data) {
                    b.update(data);
                    return this;
                }

                @Override
                public String hex() {
                    return b.hex();
                }
            };
        }
        if (ADLER32.equals(format)) {
            Adler32 a = new Adler32();
            return new Digest() {
                @Override
                public Digest update(MemorySegment data) {
                    long n = data.byteSize();
                    for (long off = 0; off < n; off += CHUNK) {
                        a.update(data.asSlice(off, Math.min(CHUNK, n - off)).asByteBuffer());
                    }
                    return this;
                }

                @Override
                public String hex() {
                    return HexFormat.of().toHexDigits((int) a.getValue());
                }
            };
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
