package dev.stitch.safetensors;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;

/**
 * A safetensors container over a {@link MemorySegment}: a memory-mapped file (any size, including
 * over 2 GiB) or bytes already in memory (e.g. a decompressed frame). The header is validated on
 * open; {@link #tensor(String)} returns zero-copy slices.
 */
public final class SafetensorsFile implements AutoCloseable {

    private final String where;
    private final MemorySegment whole;
    private final SafetensorsHeader header;
    private final Arena ownedArena;

    private SafetensorsFile(String where, MemorySegment whole, SafetensorsHeader header, Arena ownedArena) {
        this.where = where;
        this.whole = whole;
        this.header = header;
        this.ownedArena = ownedArena;
    }

    /** Opens and maps a file read-only; closing the result unmaps it. */
    public static SafetensorsFile open(Path path) throws IOException {
        return open(path, false);
    }

    /**
     * Opens and maps a file; with {@code writable} the mapping is shared read-write so tensor slices
     * can be patched in place (the host applier).
     */
    public static SafetensorsFile open(Path path, boolean writable) throws IOException {
        String where = path.toString();
        try (FileChannel ch = writable
            ? FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)
            : FileChannel.open(path, StandardOpenOption.READ)) {
            long size = ch.size();
            SafetensorsHeader header = readHeader(ch, size, where);
            Arena arena = Arena.ofShared();
            try {
                MemorySegment seg = ch.map(writable ? FileChannel.MapMode.READ_WRITE : FileChannel.MapMode.READ_ONLY, 0, size, arena);
                return new SafetensorsFile(where, seg, header, arena);
            } catch (IOException | RuntimeException e) {
                arena.close();
                throw e;
            }
        }
    }

    /** Reads and validates only the header of a file (no mapping). */
    public static SafetensorsHeader readHeader(Path path) throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            return readHeader(ch, ch.size(), path.toString());
        }
    }

    /** Wraps bytes already in memory; the caller keeps ownership of the segment. */
    public static SafetensorsFile of(MemorySegment bytes, String where) {
        long size = bytes.byteSize();
        if (size < 8) {
            throw new SafetensorsFormatException(where + ": " + size + " bytes is too short for a safetensors header");
        }
        long n = bytes.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0);
        checkLength(n, size, where);
        byte[] json = bytes.asSlice(8, n).toArray(ValueLayout.JAVA_BYTE);
        SafetensorsHeader header = SafetensorsHeader.parse(json, size - 8 - n, where);
        return new SafetensorsFile(where, bytes, header, null);
    }

    private static SafetensorsHeader readHeader(FileChannel ch, long size, String where) throws IOException {
        if (size < 8) {
            throw new SafetensorsFormatException(where + ": " + size + " bytes is too short for a safetensors header");
        }
        ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        readFully(ch, len, 0);
        long n = len.getLong(0);
        checkLength(n, size, where);
        ByteBuffer json = ByteBuffer.allocate((int) n);
        readFully(ch, json, 8);
        return SafetensorsHeader.parse(json.array(), size - 8 - n, where);
    }

    private static void checkLength(long n, long size, String where) {
        if (n < 0 || n > SafetensorsHeader.MAX_HEADER_LENGTH) {
            throw new SafetensorsFormatException(where + ": header length " + Long.toUnsignedString(n) + " exceeds "
                + SafetensorsHeader.MAX_HEADER_LENGTH);
        }
        if (n > size - 8) {
            throw new SafetensorsFormatException(where + ": header length " + n + " runs past the end of the " + size + "-byte file");
        }
    }

    private static void readFully(FileChannel ch, ByteBuffer buf, long pos) throws IOException {
        long p = pos;
        while (buf.hasRemaining()) {
            int r = ch.read(buf, p);
            if (r < 0) {
                throw new SafetensorsFormatException("unexpected end of file while reading the header");
            }
            p += r;
        }
    }

    public SafetensorsHeader header() {
        return header;
    }

    public Map<String, String> metadata() {
        return header.metadata();
    }

    /** The name used in error messages (the path for files). */
    public String where() {
        return where;
    }

    /** The whole container. */
    public MemorySegment segment() {
        return whole;
    }

    /** The bytes of tensor {@code name}; throws if absent. */
    public MemorySegment tensor(String name) {
        TensorEntry e = header.entry(name);
        if (e == null) {
            throw new IllegalArgumentException(where + ": no tensor '" + name + "'");
        }
        return tensor(e);
    }

    /** The bytes of an entry of this file's header. */
    public MemorySegment tensor(TensorEntry e) {
        return whole.asSlice(header.dataStart() + e.begin(), e.byteLength());
    }

    /** Forces a writable mapping's changes to the storage device. */
    public void force() {
        whole.force();
    }

    @Override
    public void close() {
        if (ownedArena != null) {
            ownedArena.close();
        }
    }
}
