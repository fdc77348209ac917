package dev.stitch.digest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.hash.Hash128;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class WeightsDigestTest {

    private static final DeltaKernels K = Kernels.get();

    @Test
    void noTensorsHashTheEmptyConcatenation() {
        assertEquals("xxh3-128:99aa06d3014798d86001c324468d497f", WeightsDigest.of(Map.of(), K));
    }

    @Test
    void digestIsXxh3OfTheConcatenatedPerTensorDigestsInNameOrder() {
        Map<String, MemorySegment> tensors = new LinkedHashMap<>();
        tensors.put("model.norm.weight", bytes("abc"));
        tensors.put("lm_head.weight", bytes(""));
        // Spec test vectors (docs/formats/common.md §0.4) give the per-tensor digests.
        Hash128 abc = Hash128.parseHex("06b05ab6733a618578af5f94892f3950");
        Hash128 empty = Hash128.parseHex("99aa06d3014798d86001c324468d497f");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment concat = arena.allocate(32);
            MemorySegment.copy(empty.bytes(), 0, concat, ValueLayout.JAVA_BYTE, 0, 16);
            MemorySegment.copy(abc.bytes(), 0, concat, ValueLayout.JAVA_BYTE, 16, 16);
            String expected = "xxh3-128:" + K.xxh3(concat).hex();
            assertEquals(expected, WeightsDigest.of(tensors, K));
            assertEquals(expected, WeightsDigest.combine(Map.of("model.norm.weight", abc, "lm_head.weight", empty), K));
        }
        Map<String, MemorySegment> reversed = new LinkedHashMap<>();
        reversed.put("lm_head.weight", tensors.get("lm_head.weight"));
        reversed.put("model.norm.weight", tensors.get("model.norm.weight"));
        assertEquals(WeightsDigest.of(tensors, K), WeightsDigest.of(reversed, K));
    }

    @Test
    void namesAndBytesBothMatter() {
        String base = WeightsDigest.of(Map.of("a", bytes("x"), "b", bytes("y")), K);
        assertNotEquals(base, WeightsDigest.of(Map.of("a", bytes("y"), "b", bytes("x")), K));
        assertNotEquals(base, WeightsDigest.of(Map.of("a", bytes("x"), "b", bytes("z")), K));
        assertNotEquals(base, WeightsDigest.of(Map.of("a", bytes("x")), K));
    }

    @Test
    void nameOrderIsUtf8ByteOrder() {
        String bmpHigh = "\uFFFF";
        String astral = new String(Character.toChars(0x1F600));
        assertTrue(bmpHigh.compareTo(astral) > 0, "UTF-16 order puts the surrogate pair first");
        assertTrue(WeightsDigest.NAME_ORDER.compare(bmpHigh, astral) < 0, "UTF-8 order puts U+FFFF first");
        assertTrue(WeightsDigest.NAME_ORDER.compare("a.b", "a.c") < 0);
        assertEquals(0, WeightsDigest.NAME_ORDER.compare("same", "same"));
    }

    @Test
    void parseAcceptsOnlyTheTextForm() {
        String d = WeightsDigest.of(Map.of("a", bytes("abc")), K);
        assertEquals(d.substring(9), WeightsDigest.parse(d).hex());
        assertThrows(IllegalArgumentException.class, () -> WeightsDigest.parse("sha256:00"));
        assertThrows(IllegalArgumentException.class, () -> WeightsDigest.parse("xxh3-128:zz"));
    }

    private static MemorySegment bytes(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        MemorySegment seg = Arena.ofAuto().allocate(Math.max(1, b.length)).asSlice(0, b.length);
        MemorySegment.copy(b, 0, seg, ValueLayout.JAVA_BYTE, 0, b.length);
        return seg;
    }
}
