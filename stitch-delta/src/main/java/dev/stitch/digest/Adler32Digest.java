package dev.stitch.digest;

import dev.stitch.hash.Digest;
import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import java.util.zip.Adler32;

/** zlib Adler-32 as a {@link Digest}, for the {@code adler32} checksum_format (docs/formats/common.md §0.4). */
final class Adler32Digest implements Digest {

    /** {@link Adler32#update(java.nio.ByteBuffer)} takes at most an int's worth of bytes per call. */
    private static final long CHUNK = 1L << 30;

    private final Adler32 adler = new Adler32();

    @Override
    public Adler32Digest update(MemorySegment data) {
        long n = data.byteSize();
        for (long off = 0; off < n; off += CHUNK) {
            adler.update(data.asSlice(off, Math.min(CHUNK, n - off)).asByteBuffer());
        }
        return this;
    }

    @Override
    public String hex() {
        return HexFormat.of().toHexDigits((int) adler.getValue());
    }
}
