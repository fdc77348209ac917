package dev.stitch.safetensors;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafetensorsTest {

    @TempDir
    Path tmp;

    @Test
    void readsReferenceFileAndRewritesItByteForByte() throws IOException {
        Path base = Fixtures.path("sparse-v1/base.safetensors");
        try (SafetensorsFile f = SafetensorsFile.open(base)) {
            assertEquals(Map.of("format", "pt"), f.metadata());
            assertEquals(6, f.header().tensors().size());
            TensorSpec embed = f.header().entry("model.embed_tokens.weight").spec();
            assertEquals(Dtype.BF16, embed.dtype());
            assertArrayEquals(new long[] {64, 48}, embed.shape());
            assertEquals(new TensorSpec("model.layers.0.self_attn.o_proj.weight", Dtype.BF16, new long[] {3, 5, 7}),
                f.header().entry("model.layers.0.self_attn.o_proj.weight").spec());
            List<TensorSpec> specs = new ArrayList<>();
            f.header().tensors().forEach(e -> specs.add(e.spec()));
            SafetensorsWriter.Layout layout = SafetensorsWriter.layout(f.metadata(), specs);
            Path out = tmp.resolve("copy.safetensors");
            try (FileChannel ch = FileChannel.open(out, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                long n = SafetensorsWriter.write(ch, layout, f::tensor);
                assertEquals(Files.size(base), n);
            }
            assertArrayEquals(Files.readAllBytes(base), Files.readAllBytes(out), "reference writer layout reproduced");
        }
    }

    @Test
    void writerOrdersByDtypeRankThenNameAndPadsHeader() throws IOException {
        List<TensorSpec> specs = List.of(
            new TensorSpec("b", Dtype.U8, new long[] {3}),
            new TensorSpec("a", Dtype.U8, new long[] {1}),
            new TensorSpec("z", Dtype.F64, new long[] {}),
            new TensorSpec("m", Dtype.BF16, new long[] {2, 2}),
            new TensorSpec("e", Dtype.F32, new long[] {0}));
        Map<String, String> meta = new LinkedHashMap<>();
        meta.put("z-key", "1");
        meta.put("a-key", "quote\" and \\ and \n");
        SafetensorsWriter.Layout layout = SafetensorsWriter.layout(meta, specs);
        assertEquals(0, layout.header().length % 8);
        List<String> order = layout.tensors().stream().map(TensorEntry::name).toList();
        assertEquals(List.of("z", "e", "m", "a", "b"), order);
        String json = new String(layout.header(), 8, layout.header().length - 8, StandardCharsets.UTF_8);
        assertTrue(json.startsWith("{\"__metadata__\":{\"z-key\":\"1\",\"a-key\":"), json);
        Map<String, MemorySegment> data = new LinkedHashMap<>();
        for (TensorSpec s : specs) {
            byte[] b = new byte[(int) s.byteLength()];
            for (int i = 0; i < b.length; i++) {
                b[i] = (byte) (s.name().charAt(0) + i);
            }
            data.put(s.name(), MemorySegment.ofArray(b));
        }
        Path out = tmp.resolve("o.safetensors");
        try (FileChannel ch = FileChannel.open(out, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            SafetensorsWriter.write(ch, layout, data::get);
        }
        try (SafetensorsFile f = SafetensorsFile.open(out)) {
            assertEquals(meta, f.metadata());
            assertEquals(List.copyOf(meta.keySet()), List.copyOf(f.metadata().keySet()));
            for (TensorSpec s : specs) {
                assertEquals(s, f.header().entry(s.name()).spec());
                assertEquals(-1L, f.tensor(s.name()).mismatch(data.get(s.name())));
            }
        }
    }

    @Test
    void rejectsMalformedHeaders() throws IOException {
        String ok = "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}";
        assertEquals(1, parse(ok, 2).tensors().size());
        assertRejected(ok, 3, "trailing");
        assertRejected(ok, 1, "truncated");
        assertRejected("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
            + "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[3,5]}}", 5, "gap");
        assertRejected("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
            + "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}", 3, "overlap");
        assertRejected("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
            + "\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}", 4, "Duplicate");
        assertRejected("{\"a\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, "unknown safetensors dtype");
        assertRejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, "needs 8");
        assertRejected("{\"a\":{\"dtype\":\"U8\",\"shape\":[-2],\"data_offsets\":[0,2]}}", 2, "negative");
        assertRejected("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,0]}}", 2, "end before");
        assertRejected("{\"a\":{\"dtype\":\"U8\",\"shape\":[2]}}", 2, "exactly");
        assertRejected("{\"__metadata__\":{\"k\":1}}", 0, "not a string");
        assertRejected("[1,2]", 0, "not a JSON object");
        assertRejected("{\"a\":", 0, "not valid JSON");
    }

    @Test
    void rejectsBadLengthPrefixAndShortFiles() throws IOException {
        Path p = tmp.resolve("bad.safetensors");
        ByteBuffer b = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(100_000_001L).putLong(0);
        Files.write(p, b.array());
        SafetensorsFormatException e = assertThrows(SafetensorsFormatException.class, () -> SafetensorsFile.open(p));
        assertTrue(e.getMessage().contains("exceeds"), e.getMessage());
        b = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(64).putLong(0);
        Files.write(p, b.array());
        e = assertThrows(SafetensorsFormatException.class, () -> SafetensorsFile.open(p));
        assertTrue(e.getMessage().contains("past the end"), e.getMessage());
        Files.write(p, new byte[5]);
        assertThrows(SafetensorsFormatException.class, () -> SafetensorsFile.open(p));
        // a truncated copy of a real file: the data section no longer matches the offsets
        byte[] real = Files.readAllBytes(Fixtures.path("sparse-v1/base.safetensors"));
        Files.write(p, java.util.Arrays.copyOf(real, real.length - 1));
        e = assertThrows(SafetensorsFormatException.class, () -> SafetensorsFile.open(p));
        assertTrue(e.getMessage().contains("truncated"), e.getMessage());
    }

    @Test
    void mapsFilesLargerThanTwoGiB() throws IOException {
        long big = (3L << 30) + 5;
        TensorSpec spec = new TensorSpec("huge", Dtype.U8, new long[] {big});
        SafetensorsWriter.Layout layout = SafetensorsWriter.layout(Map.of(), List.of(spec));
        Path p = tmp.resolve("huge.safetensors");
        try (RandomAccessFile raf = new RandomAccessFile(p.toFile(), "rw")) {
            raf.write(layout.header());
            raf.setLength(layout.fileLength()); // sparse on disk
            raf.seek(layout.fileLength() - 1);
            raf.write(0x5A);
        }
        try (SafetensorsFile f = SafetensorsFile.open(p)) {
            MemorySegment t = f.tensor("huge");
            assertEquals(big, t.byteSize());
            assertEquals((byte) 0x5A, t.get(ValueLayout.JAVA_BYTE, big - 1));
            assertEquals((byte) 0, t.get(ValueLayout.JAVA_BYTE, (2L << 30) + 17));
        }
    }

    @Test
    void checkpointOverShardsAndIndex() throws IOException {
        Path dir = tmp.resolve("ckpt");
        Files.createDirectories(dir);
        try (Arena arena = Arena.ofConfined()) {
            writeShard(dir.resolve("model-00001-of-00002.safetensors"), List.of(new TensorSpec("x", Dtype.F32, new long[] {4})), arena);
            writeShard(dir.resolve("model-00002-of-00002.safetensors"), List.of(new TensorSpec("y", Dtype.BF16, new long[] {2, 3})), arena);
        }
        Files.writeString(dir.resolve(Checkpoint.INDEX), "{\"metadata\": {\"total_size\": 28}, \"weight_map\": "
            + "{\"x\": \"model-00001-of-00002.safetensors\", \"y\": \"model-00002-of-00002.safetensors\"}}");
        try (Checkpoint c = Checkpoint.open(dir)) {
            assertEquals(List.of("x", "y"), c.names());
            assertEquals(16, c.tensor("x").byteSize());
            assertEquals("model-00002-of-00002.safetensors", c.fileOf("y"));
            assertEquals(28, c.totalBytes());
        }
        Files.writeString(dir.resolve(Checkpoint.INDEX), "{\"weight_map\": {\"x\": \"model-00002-of-00002.safetensors\", "
            + "\"y\": \"model-00002-of-00002.safetensors\"}}");
        assertThrows(SafetensorsFormatException.class, () -> Checkpoint.open(dir));
        Files.writeString(dir.resolve(Checkpoint.INDEX), "{\"weight_map\": {\"x\": \"../model-00001-of-00002.safetensors\"}}");
        assertThrows(SafetensorsFormatException.class, () -> Checkpoint.open(dir));
        Files.delete(dir.resolve(Checkpoint.INDEX));
        try (Checkpoint c = Checkpoint.open(dir)) {
            assertEquals(List.of("x", "y"), c.names());
        }
        try (Checkpoint c = Checkpoint.open(Fixtures.path("disk-v2/base"))) {
            assertEquals(6, c.names().size());
        }
    }

    private static void writeShard(Path p, List<TensorSpec> specs, Arena arena) throws IOException {
        SafetensorsWriter.Layout l = SafetensorsWriter.layout(Map.of("format", "pt"), specs);
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            SafetensorsWriter.write(ch, l, n -> arena.allocate(l.parsed().entry(n).byteLength()));
        }
    }

    private static SafetensorsHeader parse(String json, long dataLength) {
        return SafetensorsHeader.parse(json.getBytes(StandardCharsets.UTF_8), dataLength, "test");
    }

    private static void assertRejected(String json, long dataLength, String expect) {
        SafetensorsFormatException e = assertThrows(SafetensorsFormatException.class, () -> parse(json, dataLength));
        assertTrue(e.getMessage().contains(expect), e.getMessage());
    }
}
