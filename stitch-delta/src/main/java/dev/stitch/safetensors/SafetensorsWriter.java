package dev.stitch.safetensors;

import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * Writes safetensors containers the way the reference writer lays them out (docs/formats/common.md §0.2):
 * {@code __metadata__} first, tensors ordered by dtype rank then name, header padded with spaces so
 * that {@code 8 + N} is a multiple of 8. Writing streams the header and then each tensor's bytes
 * straight from its segment, with no intermediate copy of the whole file.
 */
public final class SafetensorsWriter {

    /** Largest slice handed to a channel at once (ByteBuffer views are int-indexed). */
    private static final long WRITE_CHUNK = 1L << 30;

    private SafetensorsWriter() {
    }

    /**
     * The planned bytes of a container: header (with the 8-byte length prefix) and the entries in
     * data order.
     */
    public record Layout(byte[] header, SafetensorsHeader parsed) {

        /** Size of the whole file. */
        public long fileLength() {
            return header.length + parsed.dataLength();
        }

        public List<TensorEntry> tensors() {
            return parsed.tensors();
        }
    }

    /** Plans a container for {@code specs} with {@code metadata} (may be empty: then no member is written). */
    public static Layout layout(Map<String, String> metadata, Collection<TensorSpec> specs) {
        List<TensorSpec> sorted = new ArrayList<>(specs);
        sorted.sort(Comparator.comparingInt((TensorSpec s) -> s.dtype().writeRank())
            .thenComparing(TensorSpec::name, SafetensorsWriter::compareUtf8));
        Set<String> seen = new HashSet<>();
        StringBuilder json = new StringBuilder(64 + 96 * sorted.size());
        json.append('{');
        boolean first = true;
        if (!metadata.isEmpty()) {
            json.append("\"__metadata__\":{");
            boolean firstKv = true;
            for (Map.Entry<String, String> kv : metadata.entrySet()) {
                if (!firstKv) {
                    json.append(',');
                }
                firstKv = false;
                appendString(json, kv.getKey());
                json.append(':');
                appendString(json, kv.getValue());
            }
            json.append('}');
            first = false;
        }
        List<TensorEntry> entries = new ArrayList<>(sorted.size());
        long offset = 0;
        for (TensorSpec s : sorted) {
            if (s.name().equals("__metadata__") || !seen.add(s.name())) {
                throw new IllegalArgumentException("duplicate or reserved tensor name '" + s.name() + "'");
            }
            long end = offset + s.byteLength();
            if (!first) {
                json.append(',');
            }
            first = false;
            appendString(json, s.name());
            json.append(":{\"dtype\":\"").append(s.dtype().safetensorsName()).append("\",\"shape\":[");
            long[] shape = s.shape();
            for (int i = 0; i < shape.length; i++) {
                if (i > 0) {
                    json.append(',');
                }
                json.append(shape[i]);
            }
            json.append("],\"data_offsets\":[").append(offset).append(',').append(end).append("]}");
            entries.add(new TensorEntry(s, offset, end));
            offset = end;
        }
        json.append('}');
        byte[] body = json.toString().getBytes(StandardCharsets.UTF_8);
        int padded = (body.length + 7) & ~7;
        if (padded > SafetensorsHeader.MAX_HEADER_LENGTH) {
            throw new IllegalArgumentException("header of " + padded + " bytes exceeds " + SafetensorsHeader.MAX_HEADER_LENGTH);
        }
        byte[] header = new byte[8 + padded];
        ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN).putLong(0, padded);
        System.arraycopy(body, 0, header, 8, body.length);
        for (int i = 8 + body.length; i < header.length; i++) {
            header[i] = ' ';
        }
        return new Layout(header, new SafetensorsHeader(new LinkedHashMap<>(metadata), entries, padded, offset));
    }

    /**
     * Streams a container: the header, then each tensor's bytes from {@code source} in data order.
     *
     * @return bytes written
     */
    public static long write(WritableByteChannel out, Layout layout, Function<String, MemorySegment> source) throws IOException {
        writeFully(out, ByteBuffer.wrap(layout.header()));
        long total = layout.header().length;
        for (TensorEntry e : layout.tensors()) {
            MemorySegment seg = source.apply(e.name());
            if (seg == null || seg.byteSize() != e.byteLength()) {
                throw new IllegalArgumentException("tensor '" + e.name() + "' has " + (seg == null ? "no" : seg.byteSize())
                    + " bytes, expected " + e.byteLength());
            }
            writeSegment(out, seg);
            total += e.byteLength();
        }
        return total;
    }

    /** Writes all of {@code seg} to {@code out}, in slices small enough for a ByteBuffer view. */
    public static void writeSegment(WritableByteChannel out, MemorySegment seg) throws IOException {
        long size = seg.byteSize();
        if (!seg.isNative() && !(seg.heapBase().orElse(null) instanceof byte[])) {
            // Segments over float[]/short[]/... arrays have no ByteBuffer view: copy through a bounce buffer.
            byte[] bounce = new byte[(int) Math.min(size, 1 << 20)];
            for (long off = 0; off < size; off += bounce.length) {
                int n = (int) Math.min(bounce.length, size - off);
                MemorySegment.copy(seg, off, MemorySegment.ofArray(bounce), 0, n);
                writeFully(out, ByteBuffer.wrap(bounce, 0, n));
            }
            return;
        }
        for (long off = 0; off < size; off += WRITE_CHUNK) {
            writeFully(out, seg.asSlice(off, Math.min(WRITE_CHUNK, size - off)).asByteBuffer());
        }
    }

    private static void writeFully(WritableByteChannel out, ByteBuffer buf) throws IOException {
        while (buf.hasRemaining()) {
            out.write(buf);
        }
    }

    /** Tensor names in ascending unsigned byte order of their UTF-8 encoding, the order the reference writer sorts in. */
    public static final Comparator<String> NAME_ORDER = SafetensorsWriter::compareUtf8;

    /** Compares names by their UTF-8 bytes. */
    static int compareUtf8(String a, String b) {
        return java.util.Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
    }

    /** JSON string escaping as serde_json writes it: short escapes, {@code \}{@code u00xx} for other controls, UTF-8 kept. */
    static void appendString(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                case '\b' -> sb.append("\\b");
                case '\f' -> sb.append("\\f");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }
}
