package dev.stitch.hash;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class Xxh3Test {

    private static final Path ORACLE_LIB = Path.of("/usr/lib/x86_64-linux-gnu/libxxhash.so.0");

    @Test
    void referenceVectors() {
        assertEquals("99aa06d3014798d86001c324468d497f", Xxh3.hash128(new byte[0]).hex());
        assertEquals("06b05ab6733a618578af5f94892f3950", Xxh3.hash128("abc".getBytes(StandardCharsets.US_ASCII)).hex());
        assertEquals("06b05ab6733a618578af5f94892f3950",
            Xxh3.newHasher().update("a".getBytes(StandardCharsets.US_ASCII)).update("bc".getBytes(StandardCharsets.US_ASCII)).digest().hex());
    }

    /** The disk-v2 delta files carry upstream's xxh3-128 of each tensor's new bytes (lengths 210 to 163840). */
    @Test
    void matchesUpstreamDigestsInDiskV2Fixture() throws IOException {
        Path fixtures = fixtures();
        Map<String, byte[]> tensors = readTensors(fixtures.resolve("disk-v2/expected/weight_v000001/model.safetensors"));
        JsonNode meta = readHeader(fixtures.resolve("disk-v2/xor/weight_v000001/model-00000-of-00001.safetensors")).get("__metadata__");
        int checked = 0;
        for (Iterator<Map.Entry<String, JsonNode>> it = meta.properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            byte[] data = tensors.get(e.getKey());
            assertEquals(e.getValue().asText(), Xxh3.hash128(data).hex(), e.getKey());
            assertEquals(e.getValue().asText(), Xxh3.hash128(MemorySegment.ofArray(data)).hex(), e.getKey());
            Xxh3.Hasher h = Xxh3.newHasher();
            for (int off = 0; off < data.length; off += 77) {
                h.update(data, off, Math.min(77, data.length - off));
            }
            assertEquals(e.getValue().asText(), h.digest().hex(), e.getKey());
            checked++;
        }
        assertEquals(5, checked);
    }

    /** Every size class (0-16, 17-128, 129-240, long with several blocks) against libxxhash through FFM. */
    @Test
    void matchesLibxxhashOracle() throws Throwable {
        assumeTrue(Files.exists(ORACLE_LIB), "libxxhash not installed");
        SplittableRandom rnd = new SplittableRandom(42);
        try (Arena arena = Arena.ofConfined()) {
            MethodHandle oracle = oracle(arena);
            int max = 5000;
            byte[] all = new byte[max];
            rnd.nextBytes(all);
            MemorySegment nat = arena.allocate(3 << 20);
            for (int len = 0; len <= max; len += (len < 300 ? 1 : 1 + rnd.nextInt(40))) {
                MemorySegment.copy(MemorySegment.ofArray(all), 0, nat, 0, len);
                Hash128 expected = callOracle(oracle, arena, nat, len);
                assertEquals(expected, Xxh3.hash128(java.util.Arrays.copyOf(all, len)), "len " + len);
                assertEquals(expected, Xxh3.hash128(nat.asSlice(0, len)), "native len " + len);
            }
            byte[] big = new byte[3 << 20];
            rnd.nextBytes(big);
            MemorySegment.copy(MemorySegment.ofArray(big), 0, nat, 0, big.length);
            for (int len : new int[] {1 << 20, (3 << 20) - 1, (3 << 20) - 13}) {
                assertEquals(callOracle(oracle, arena, nat, len), Xxh3.hash128(nat.asSlice(0, len)), "len " + len);
            }
        }
    }

    @Test
    void streamingEqualsOneShotForAnySplit() {
        SplittableRandom rnd = new SplittableRandom(7);
        for (int trial = 0; trial < 400; trial++) {
            int len = trial < 300 ? trial * 7 : rnd.nextInt(20_000);
            byte[] data = new byte[len];
            rnd.nextBytes(data);
            Hash128 expected = Xxh3.hash128(data);
            Xxh3.Hasher h = Xxh3.newHasher();
            int off = 0;
            while (off < len) {
                int piece = Math.min(len - off, rnd.nextInt(4) == 0 ? rnd.nextInt(1500) : rnd.nextInt(70));
                if (rnd.nextBoolean()) {
                    h.update(data, off, piece);
                } else {
                    h.update(MemorySegment.ofArray(data).asSlice(off, piece));
                }
                off += piece;
                if (rnd.nextInt(10) == 0) {
                    h.digest();
                }
            }
            assertEquals(expected, h.digest(), "len " + len);
            assertEquals(len, h.length());
            if (trial % 50 == 0) {
                // a reset hasher is as good as new, whatever it had consumed
                assertEquals(expected, h.reset().update(data).digest(), "after reset, len " + len);
                // core alone has no faster provider, so its streams are the Java hasher
                assertEquals(expected, Xxh3.newStream().update(MemorySegment.ofArray(data)).digest());
                assertEquals(Xxh3.Hasher.class, Xxh3.newStream().getClass());
            }
        }
    }

    @Test
    void stripeAndBlockBoundaries() {
        SplittableRandom rnd = new SplittableRandom(3);
        for (int len : new int[] {240, 241, 255, 256, 257, 319, 320, 321, 1023, 1024, 1025, 1088, 2048, 2049, 4096}) {
            byte[] data = new byte[len];
            rnd.nextBytes(data);
            Hash128 expected = Xxh3.hash128(data);
            for (int split : new int[] {1, 63, 64, 65, 128, 256, 257}) {
                Xxh3.Hasher h = Xxh3.newHasher();
                for (int off = 0; off < len; off += split) {
                    h.update(data, off, Math.min(split, len - off));
                }
                assertEquals(expected, h.digest(), "len " + len + " split " + split);
            }
        }
    }

    private static MethodHandle oracle(Arena arena) {
        SymbolLookup lib = SymbolLookup.libraryLookup(ORACLE_LIB, arena);
        MemoryLayout result = MemoryLayout.structLayout(ValueLayout.JAVA_LONG.withName("low64"), ValueLayout.JAVA_LONG.withName("high64"));
        return Linker.nativeLinker().downcallHandle(lib.find("XXH3_128bits").orElseThrow(),
            FunctionDescriptor.of(result, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    }

    private static Hash128 callOracle(MethodHandle oracle, Arena arena, MemorySegment data, long len) throws Throwable {
        MemorySegment r = (MemorySegment) oracle.invokeExact((java.lang.foreign.SegmentAllocator) arena, data, len);
        return new Hash128(r.get(ValueLayout.JAVA_LONG, 8), r.get(ValueLayout.JAVA_LONG, 0));
    }

    static Path fixtures() {
        return Fixtures.root();
    }

    private static JsonNode readHeader(Path file) throws IOException {
        byte[] all = Files.readAllBytes(file);
        long n = ByteBuffer.wrap(all, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
        return new ObjectMapper().readTree(new String(all, 8, (int) n, StandardCharsets.UTF_8));
    }

    private static Map<String, byte[]> readTensors(Path file) throws IOException {
        byte[] all = Files.readAllBytes(file);
        long n = ByteBuffer.wrap(all, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
        JsonNode header = new ObjectMapper().readTree(new String(all, 8, (int) n, StandardCharsets.UTF_8));
        Map<String, byte[]> out = new java.util.HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = header.properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (e.getKey().equals("__metadata__")) {
                continue;
            }
            int begin = (int) (8 + n + e.getValue().get("data_offsets").get(0).asLong());
            int end = (int) (8 + n + e.getValue().get("data_offsets").get(1).asLong());
            out.put(e.getKey(), java.util.Arrays.copyOfRange(all, begin, end));
        }
        return out;
    }
}
