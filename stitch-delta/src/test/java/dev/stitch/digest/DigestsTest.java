package dev.stitch.digest;
import dev.stitch.format.DeltaFormatException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.hash.Digest;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class DigestsTest {

    /** Input of the official BLAKE3 test vectors: bytes 0, 1, ..., 250, 0, 1, ... */
    private static MemorySegment pattern(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i % 251);
        }
        return MemorySegment.ofArray(b);
    }

    @Test
    void blake3MatchesTheOfficialVectorsWholeAndInPieces() {
        Object[][] vectors = {
            {0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"},
            {1, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"},
            {1023, "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11"},
            {1024, "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"},
            {1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"},
            {2048, "e776b6028c7cd22a4d0ba182a8bf62205d2ef576467e838ed6f2529b85fba24a"},
            {2049, "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030"},
            {3072, "b98cb0ff3623be03326b373de6b9095218513e64f1ee2edd2525c7ad1e5cffd2"},
            {3073, "7124b49501012f81cc7f11ca069ec9226cecb8a2c850cfe644e327d22d3e1cd3"},
            {4096, "015094013f57a5277b59d8475c0501042c0b642e531b0a1c8f58d2163229e969"},
            {4097, "9b4052b38f1c5fc8b1f9ff7ac7b27cd242487b3d890d15c96a1c25b8aa0fb995"},
            {5121, "628bd2cb2004694adaab7bbd778a25df25c47b9d4155a55f8fbd79f2fe154cff"},
            {7169, "a003fc7a51754a9b3c7fae0367ab3d782dccf28855a03d435f8cfe74605e7817"},
        };
        for (Object[] v : vectors) {
            int n = (int) v[0];
            String want = (String) v[1];
            assertEquals(want, Digests.of(Digests.BLAKE3, pattern(n)), "length " + n);
            Digest d = Digests.newDigest(Digests.BLAKE3);
            MemorySegment p = pattern(n);
            for (int off = 0; off < n; off += 100) {
                d.update(p.asSlice(off, Math.min(100, n - off)));
            }
            assertEquals(want, d.hex(), "length " + n + " in pieces");
        }
    }

    @Test
    void everyFormatIsOneStreamingDigestWhoseSplitDoesNotMatter() {
        byte[] data = new byte[70_001];
        new java.util.Random(9).nextBytes(data);
        MemorySegment whole = MemorySegment.ofArray(data);
        for (String format : new String[] {Digests.XXH3_128, Digests.BLAKE3, Digests.ADLER32}) {
            Digest d = Digests.newDigest(format);
            for (int off = 0; off < data.length; off += 4099) {
                d.update(whole.asSlice(off, Math.min(4099, data.length - off)));
            }
            assertEquals(Digests.of(format, whole), d.hex(), format);
        }
        assertTrue(Digests.newDigest(Digests.XXH3_128) instanceof dev.stitch.hash.Xxh3Stream,
                "xxh3-128 is the kernels' own stream, with its Hash128 methods");
    }

    @Test
    void xxh3AndAdler32TestVectors() {
        assertEquals("06b05ab6733a618578af5f94892f3950", Digests.of(Digests.XXH3_128, MemorySegment.ofArray("abc".getBytes(StandardCharsets.US_ASCII))));
        assertEquals("064b011b", Digests.of(Digests.ADLER32, MemorySegment.ofArray(new byte[] {0, 1, (byte) 0xFF, 3, 4, 5, 6, 8})));
        assertThrows(DeltaFormatException.class, () -> Digests.newDigest("md5"));
    }
}
