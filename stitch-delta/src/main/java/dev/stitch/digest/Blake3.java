package dev.stitch.digest;

import dev.stitch.hash.Digest;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.HexFormat;

/**
 * BLAKE3 (unkeyed, 32-byte output), incremental, for the {@code blake3} checksum_format of slime v2
 * disk_delta files (docs/formats/common.md §0.4). Written from the BLAKE3 specification: 1 KiB chunks of
 * 64-byte blocks, chaining values merged pairwise in a binary tree, 7-round compression.
 */
final class Blake3 implements Digest {

    private static final int[] IV = {0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19};
    private static final int[] PERMUTATION = {2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8};
    private static final int CHUNK_START = 1;
    private static final int CHUNK_END = 2;
    private static final int PARENT = 4;
    private static final int ROOT = 8;
    private static final int BLOCK = 64;
    private static final int CHUNK = 1024;
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Chaining values of completed subtrees, at most one per level. */
    private final int[][] stack = new int[64][];
    private int stackSize;
    private int[] cv = IV.clone();
    private long chunkCounter;
    private final byte[] block = new byte[BLOCK];
    private int blockLen;
    private int blocksCompressed;

    @Override
    public Blake3 update(MemorySegment data) {
        long n = data.byteSize();
        long at = 0;
        while (at < n) {
            if (blocksCompressed * BLOCK + blockLen == CHUNK) {
                int[] chunkCv = chunkOutput().chainingValue();
                chunkCounter++;
                addChunk(chunkCv, chunkCounter);
                cv = IV.clone();
                blocksCompressed = 0;
                blockLen = 0;
            }
            if (blockLen == BLOCK) {
                // a full block is compressed only once more input shows it is not the chunk's last
                int[] words = words(block);
                cv = first8(compress(cv, words, chunkCounter, BLOCK, blocksCompressed == 0 ? CHUNK_START : 0));
                blocksCompressed++;
                blockLen = 0;
            }
            int take = (int) Math.min(BLOCK - blockLen, n - at);
            MemorySegment.copy(data, ValueLayout.JAVA_BYTE, at, block, blockLen, take);
            blockLen += take;
            at += take;
        }
        return this;
    }

    private void addChunk(int[] chunkCv, long totalChunks) {
        int[] merged = chunkCv;
        long t = totalChunks;
        while ((t & 1) == 0) {
            merged = first8(compress(IV, concat(stack[--stackSize], merged), 0, BLOCK, PARENT));
            t >>= 1;
        }
        stack[stackSize++] = merged;
    }

    /** The pending compression of the current chunk's last block. */
    private Output chunkOutput() {
        byte[] padded = new byte[BLOCK];
        System.arraycopy(block, 0, padded, 0, blockLen);
        return new Output(cv, words(padded), chunkCounter, blockLen, (blocksCompressed == 0 ? CHUNK_START : 0) | CHUNK_END);
    }

    @Override
    public String hex() {
        Output out = chunkOutput();
        for (int i = stackSize - 1; i >= 0; i--) {
            out = new Output(IV, concat(stack[i], out.chainingValue()), 0, BLOCK, PARENT);
        }
        int[] root = compress(out.cv, out.words, 0, out.blockLen, out.flags | ROOT);
        byte[] digest = new byte[32];
        MemorySegment d = MemorySegment.ofArray(digest);
        for (int i = 0; i < 8; i++) {
            d.set(U32, 4L * i, root[i]);
        }
        return HexFormat.of().formatHex(digest);
    }

    private record Output(int[] cv, int[] words, long counter, int blockLen, int flags) {
        int[] chainingValue() {
            return first8(compress(cv, words, counter, blockLen, flags));
        }
    }

    private static int[] words(byte[] block) {
        int[] w = new int[16];
        MemorySegment s = MemorySegment.ofArray(block);
        for (int i = 0; i < 16; i++) {
            w[i] = s.get(U32, 4L * i);
        }
        return w;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] m = new int[16];
        System.arraycopy(a, 0, m, 0, 8);
        System.arraycopy(b, 0, m, 8, 8);
        return m;
    }

    private static int[] first8(int[] state) {
        int[] out = new int[8];
        System.arraycopy(state, 0, out, 0, 8);
        return out;
    }

    private static int[] compress(int[] cv, int[] blockWords, long counter, int blockLen, int flags) {
        int[] s = {cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7], IV[0], IV[1], IV[2], IV[3],
            (int) counter, (int) (counter >>> 32), blockLen, flags};
        int[] m = blockWords.clone();
        for (int round = 0; round < 7; round++) {
            g(s, 0, 4, 8, 12, m[0], m[1]);
            g(s, 1, 5, 9, 13, m[2], m[3]);
            g(s, 2, 6, 10, 14, m[4], m[5]);
            g(s, 3, 7, 11, 15, m[6], m[7]);
            g(s, 0, 5, 10, 15, m[8], m[9]);
            g(s, 1, 6, 11, 12, m[10], m[11]);
            g(s, 2, 7, 8, 13, m[12], m[13]);
            g(s, 3, 4, 9, 14, m[14], m[15]);
            int[] p = new int[16];
            for (int i = 0; i < 16; i++) {
                p[i] = m[PERMUTATION[i]];
            }
            m = p;
        }
        for (int i = 0; i < 8; i++) {
            s[i] ^= s[i + 8];
            s[i + 8] ^= cv[i];
        }
        return s;
    }

    private static void g(int[] s, int a, int b, int c, int d, int mx, int my) {
        s[a] = s[a] + s[b] + mx;
        s[d] = Integer.rotateRight(s[d] ^ s[a], 16);
        s[c] = s[c] + s[d];
        s[b] = Integer.rotateRight(s[b] ^ s[c], 12);
        s[a] = s[a] + s[b] + my;
        s[d] = Integer.rotateRight(s[d] ^ s[a], 8);
        s[c] = s[c] + s[d];
        s[b] = Integer.rotateRight(s[b] ^ s[c], 7);
    }
}
