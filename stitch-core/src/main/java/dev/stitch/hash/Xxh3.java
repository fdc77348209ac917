package dev.stitch.hash;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Objects;
import java.util.ServiceLoader;

/**
 * XXH3-128 with seed 0 and the default secret, in pure Java, bit-identical to the reference
 * xxHash 0.8 implementation. All reads are little-endian regardless of the platform.
 */
public final class Xxh3 {

    static final long PRIME32_1 = 0x9E3779B1L;
    static final long PRIME32_2 = 0x85EBCA77L;
    static final long PRIME32_3 = 0xC2B2AE3DL;
    static final long PRIME64_1 = 0x9E3779B185EBCA87L;
    static final long PRIME64_2 = 0xC2B2AE3D27D4EB4FL;
    static final long PRIME64_3 = 0x165667B19E3779F9L;
    static final long PRIME64_4 = 0x85EBCA77C2B2AE63L;
    static final long PRIME64_5 = 0x27D4EB2F165667C5L;
    static final long PRIME_MX1 = 0x165667919E3779F9L;
    static final long PRIME_MX2 = 0x9FB21C651E98DF25L;

    static final int STRIPE_LEN = 64;
    static final int SECRET_SIZE = 192;
    static final int STRIPES_PER_BLOCK = (SECRET_SIZE - STRIPE_LEN) / 8;
    static final int BLOCK_LEN = STRIPE_LEN * STRIPES_PER_BLOCK;
    static final int MIDSIZE_MAX = 240;

    private static final ValueLayout.OfLong LE64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt LE32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private static final byte[] SECRET = {
        (byte) 0xb8, (byte) 0xfe, (byte) 0x6c, (byte) 0x39, (byte) 0x23, (byte) 0xa4, (byte) 0x4b, (byte) 0xbe,
        (byte) 0x7c, (byte) 0x01, (byte) 0x81, (byte) 0x2c, (byte) 0xf7, (byte) 0x21, (byte) 0xad, (byte) 0x1c,
        (byte) 0xde, (byte) 0xd4, (byte) 0x6d, (byte) 0xe9, (byte) 0x83, (byte) 0x90, (byte) 0x97, (byte) 0xdb,
        (byte) 0x72, (byte) 0x40, (byte) 0xa4, (byte) 0xa4, (byte) 0xb7, (byte) 0xb3, (byte) 0x67, (byte) 0x1f,
        (byte) 0xcb, (byte) 0x79, (byte) 0xe6, (byte) 0x4e, (byte) 0xcc, (byte) 0xc0, (byte) 0xe5, (byte) 0x78,
        (byte) 0x82, (byte) 0x5a, (byte) 0xd0, (byte) 0x7d, (byte) 0xcc, (byte) 0xff, (byte) 0x72, (byte) 0x21,
        (byte) 0xb8, (byte) 0x08, (byte) 0x46, (byte) 0x74, (byte) 0xf7, (byte) 0x43, (byte) 0x24, (byte) 0x8e,
        (byte) 0xe0, (byte) 0x35, (byte) 0x90, (byte) 0xe6, (byte) 0x81, (byte) 0x3a, (byte) 0x26, (byte) 0x4c,
        (byte) 0x3c, (byte) 0x28, (byte) 0x52, (byte) 0xbb, (byte) 0x91, (byte) 0xc3, (byte) 0x00, (byte) 0xcb,
        (byte) 0x88, (byte) 0xd0, (byte) 0x65, (byte) 0x8b, (byte) 0x1b, (byte) 0x53, (byte) 0x2e, (byte) 0xa3,
        (byte) 0x71, (byte) 0x64, (byte) 0x48, (byte) 0x97, (byte) 0xa2, (byte) 0x0d, (byte) 0xf9, (byte) 0x4e,
        (byte) 0x38, (byte) 0x19, (byte) 0xef, (byte) 0x46, (byte) 0xa9, (byte) 0xde, (byte) 0xac, (byte) 0xd8,
        (byte) 0xa8, (byte) 0xfa, (byte) 0x76, (byte) 0x3f, (byte) 0xe3, (byte) 0x9c, (byte) 0x34, (byte) 0x3f,
        (byte) 0xf9, (byte) 0xdc, (byte) 0xbb, (byte) 0xc7, (byte) 0xc7, (byte) 0x0b, (byte) 0x4f, (byte) 0x1d,
        (byte) 0x8a, (byte) 0x51, (byte) 0xe0, (byte) 0x4b, (byte) 0xcd, (byte) 0xb4, (byte) 0x59, (byte) 0x31,
        (byte) 0xc8, (byte) 0x9f, (byte) 0x7e, (byte) 0xc9, (byte) 0xd9, (byte) 0x78, (byte) 0x73, (byte) 0x64,
        (byte) 0xea, (byte) 0xc5, (byte) 0xac, (byte) 0x83, (byte) 0x34, (byte) 0xd3, (byte) 0xeb, (byte) 0xc3,
        (byte) 0xc5, (byte) 0x81, (byte) 0xa0, (byte) 0xff, (byte) 0xfa, (byte) 0x13, (byte) 0x63, (byte) 0xeb,
        (byte) 0x17, (byte) 0x0d, (byte) 0xdd, (byte) 0x51, (byte) 0xb7, (byte) 0xf0, (byte) 0xda, (byte) 0x49,
        (byte) 0xd3, (byte) 0x16, (byte) 0x55, (byte) 0x26, (byte) 0x29, (byte) 0xd4, (byte) 0x68, (byte) 0x9e,
        (byte) 0x2b, (byte) 0x16, (byte) 0xbe, (byte) 0x58, (byte) 0x7d, (byte) 0x47, (byte) 0xa1, (byte) 0xfc,
        (byte) 0x8f, (byte) 0xf8, (byte) 0xb8, (byte) 0xd1, (byte) 0x7a, (byte) 0xd0, (byte) 0x31, (byte) 0xce,
        (byte) 0x45, (byte) 0xcb, (byte) 0x3a, (byte) 0x8f, (byte) 0x95, (byte) 0x16, (byte) 0x04, (byte) 0x28,
        (byte) 0xaf, (byte) 0xd7, (byte) 0xfb, (byte) 0xca, (byte) 0xbb, (byte) 0x4b, (byte) 0x40, (byte) 0x7e,
    };

    private static final MemorySegment SECRET_SEG = MemorySegment.ofArray(SECRET);

    /** The secret as 64-bit words at every multiple of 8, which is all the stripe loop and scrambler read. */
    private static final long[] SECRET_WORDS = new long[SECRET_SIZE / 8];
    /** Secret words for the final stripe, which starts at an odd offset. */
    private static final long[] LAST_STRIPE_WORDS = new long[8];

    static {
        for (int i = 0; i < SECRET_WORDS.length; i++) {
            SECRET_WORDS[i] = sec64(8 * i);
        }
        for (int i = 0; i < 8; i++) {
            LAST_STRIPE_WORDS[i] = sec64(SECRET_SIZE - STRIPE_LEN - 7 + 8 * i);
        }
    }

    private Xxh3() {
    }

    /** XXH3-128 of the whole array. */
    public static Hash128 hash128(byte[] data) {
        return hash128(MemorySegment.ofArray(data));
    }

    /** XXH3-128 of {@code length} bytes of {@code data} from {@code offset}. */
    public static Hash128 hash128(byte[] data, int offset, int length) {
        Objects.checkFromIndexSize(offset, length, data.length);
        return hash128(MemorySegment.ofArray(data).asSlice(offset, length));
    }

    /** XXH3-128 of the whole segment (heap or native). */
    public static Hash128 hash128(MemorySegment data) {
        long len = data.byteSize();
        if (len <= 16) {
            return len0to16(data, 0, (int) len);
        }
        if (len <= 128) {
            return len17to128(data, 0, (int) len);
        }
        if (len <= MIDSIZE_MAX) {
            return len129to240(data, 0, (int) len);
        }
        long[] acc = initialAcc();
        long nbBlocks = (len - 1) / BLOCK_LEN;
        for (long n = 0; n < nbBlocks; n++) {
            accumulate(acc, data, n * BLOCK_LEN, 0, STRIPES_PER_BLOCK);
            scramble(acc);
        }
        long blockStart = nbBlocks * BLOCK_LEN;
        int nbStripes = (int) (((len - 1) - blockStart) / STRIPE_LEN);
        accumulate(acc, data, blockStart, 0, nbStripes);
        accumulateLastStripe(acc, data, len - STRIPE_LEN);
        return finishLong(acc, len);
    }

    /** A streaming hasher in Java; feeding it any split of the input gives the one-shot digest. */
    public static Hasher newHasher() {
        return new Hasher();
    }

    /** Found once through {@link ServiceLoader}; null when no module provides a faster hasher. */
    private static final Xxh3Provider PROVIDER = ServiceLoader.load(Xxh3Provider.class, Xxh3.class.getClassLoader())
        .findFirst().orElse(null);

    /**
     * The fastest streaming hasher available: the one an {@link Xxh3Provider} offers (stitch-native
     * registers its SIMD kernels), else {@link #newHasher()}.
     */
    public static Xxh3Stream newStream() {
        return PROVIDER != null ? PROVIDER.newStream() : new Hasher();
    }

    /**
     * Incremental XXH3-128. Not thread-safe. Stripes are consumed only once more input is known to
     * follow them, because the one-shot algorithm treats the final stripe differently.
     */
    public static final class Hasher implements Xxh3Stream {
        private static final int BUFFER_SIZE = 4 * STRIPE_LEN;

        private final long[] acc = initialAcc();
        private final byte[] buffer = new byte[BUFFER_SIZE];
        private final MemorySegment bufferSeg = MemorySegment.ofArray(buffer);
        /** The last 64 consumed bytes, needed when the final stripe straddles consumed and buffered input. */
        private final byte[] lastStripe = new byte[STRIPE_LEN];
        private int buffered;
        private int stripesInBlock;
        private long total;

        private Hasher() {
        }

        public Hasher update(byte[] data, int offset, int length) {
            Objects.checkFromIndexSize(offset, length, data.length);
            return update(MemorySegment.ofArray(data).asSlice(offset, length));
        }

        public Hasher update(byte[] data) {
            return update(MemorySegment.ofArray(data));
        }

        @Override
        public Hasher update(MemorySegment data) {
            long remaining = data.byteSize();
            long pos = 0;
            total += remaining;
            while (remaining > 0) {
                if (buffered == BUFFER_SIZE) {
                    consumeStripes(bufferSeg, 0, BUFFER_SIZE / STRIPE_LEN);
                    System.arraycopy(buffer, BUFFER_SIZE - STRIPE_LEN, lastStripe, 0, STRIPE_LEN);
                    buffered = 0;
                }
                if (buffered == 0 && remaining > BUFFER_SIZE) {
                    // Bulk path: consume whole stripes straight from the input, always leaving 1..64 bytes behind.
                    long stripes = (remaining - 1) / STRIPE_LEN;
                    consumeStripes(data, pos, stripes);
                    long consumed = stripes * STRIPE_LEN;
                    MemorySegment.copy(data, pos + consumed - STRIPE_LEN, MemorySegment.ofArray(lastStripe), 0, STRIPE_LEN);
                    pos += consumed;
                    remaining -= consumed;
                }
                int take = (int) Math.min(BUFFER_SIZE - buffered, remaining);
                MemorySegment.copy(data, pos, bufferSeg, buffered, take);
                buffered += take;
                pos += take;
                remaining -= take;
            }
            return this;
        }

        private void consumeStripes(MemorySegment data, long offset, long stripes) {
            for (long s = 0; s < stripes; s++) {
                accumulate512(acc, data, offset + s * STRIPE_LEN, stripesInBlock);
                if (++stripesInBlock == STRIPES_PER_BLOCK) {
                    scramble(acc);
                    stripesInBlock = 0;
                }
            }
        }

        /** The digest of everything fed so far; the hasher stays usable. */
        @Override
        public Hash128 digest() {
            if (total <= MIDSIZE_MAX) {
                return hash128(bufferSeg.asSlice(0, buffered));
            }
            long[] a = acc.clone();
            int block = stripesInBlock;
            int pos = 0;
            while (buffered - pos > STRIPE_LEN) {
                accumulate512(a, bufferSeg, pos, block);
                if (++block == STRIPES_PER_BLOCK) {
                    scramble(a);
                    block = 0;
                }
                pos += STRIPE_LEN;
            }
            MemorySegment last;
            if (buffered >= STRIPE_LEN) {
                last = bufferSeg.asSlice(buffered - STRIPE_LEN, STRIPE_LEN);
            } else {
                byte[] tail = new byte[STRIPE_LEN];
                int fromPrevious = STRIPE_LEN - buffered;
                System.arraycopy(lastStripe, STRIPE_LEN - fromPrevious, tail, 0, fromPrevious);
                System.arraycopy(buffer, 0, tail, fromPrevious, buffered);
                last = MemorySegment.ofArray(tail);
            }
            accumulateLastStripe(a, last, 0);
            return finishLong(a, total);
        }

        /** Total bytes fed so far. */
        @Override
        public long length() {
            return total;
        }

        @Override
        public Hasher reset() {
            System.arraycopy(initialAcc(), 0, acc, 0, acc.length);
            buffered = 0;
            stripesInBlock = 0;
            total = 0;
            return this;
        }
    }

    // ---- long inputs ------------------------------------------------------------------------

    static long[] initialAcc() {
        return new long[] {PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1};
    }

    private static void accumulate(long[] acc, MemorySegment data, long offset, int firstStripe, int stripes) {
        for (int s = 0; s < stripes; s++) {
            accumulate512(acc, data, offset + (long) s * STRIPE_LEN, firstStripe + s);
        }
    }

    private static void accumulate512(long[] acc, MemorySegment data, long offset, int stripeInBlock) {
        for (int i = 0; i < 8; i++) {
            long v = data.get(LE64, offset + 8L * i);
            long k = v ^ SECRET_WORDS[stripeInBlock + i];
            acc[i ^ 1] += v;
            acc[i] += (k & 0xFFFFFFFFL) * (k >>> 32);
        }
    }

    private static void accumulateLastStripe(long[] acc, MemorySegment data, long offset) {
        for (int i = 0; i < 8; i++) {
            long v = data.get(LE64, offset + 8L * i);
            long k = v ^ LAST_STRIPE_WORDS[i];
            acc[i ^ 1] += v;
            acc[i] += (k & 0xFFFFFFFFL) * (k >>> 32);
        }
    }

    private static void scramble(long[] acc) {
        for (int i = 0; i < 8; i++) {
            long a = acc[i];
            a ^= a >>> 47;
            a ^= SECRET_WORDS[STRIPES_PER_BLOCK + i];
            acc[i] = a * PRIME32_1;
        }
    }

    private static Hash128 finishLong(long[] acc, long len) {
        long lo = mergeAccs(acc, 11, len * PRIME64_1);
        long hi = mergeAccs(acc, SECRET_SIZE - STRIPE_LEN - 11, ~(len * PRIME64_2));
        return new Hash128(hi, lo);
    }

    private static long mergeAccs(long[] acc, int secretOffset, long start) {
        long result = start;
        for (int i = 0; i < 4; i++) {
            result += mulFold64(acc[2 * i] ^ sec64(secretOffset + 16 * i), acc[2 * i + 1] ^ sec64(secretOffset + 16 * i + 8));
        }
        return avalanche3(result);
    }

    // ---- short inputs -----------------------------------------------------------------------

    private static Hash128 len0to16(MemorySegment in, long off, int len) {
        if (len > 8) {
            return len9to16(in, off, len);
        }
        if (len >= 4) {
            return len4to8(in, off, len);
        }
        if (len > 0) {
            return len1to3(in, off, len);
        }
        return new Hash128(avalanche64(sec64(80) ^ sec64(88)), avalanche64(sec64(64) ^ sec64(72)));
    }

    private static Hash128 len1to3(MemorySegment in, long off, int len) {
        int c1 = in.get(ValueLayout.JAVA_BYTE, off) & 0xFF;
        int c2 = in.get(ValueLayout.JAVA_BYTE, off + (len >> 1)) & 0xFF;
        int c3 = in.get(ValueLayout.JAVA_BYTE, off + len - 1) & 0xFF;
        int combinedLo = (c1 << 16) | (c2 << 24) | c3 | (len << 8);
        int combinedHi = Integer.rotateLeft(Integer.reverseBytes(combinedLo), 13);
        long bitflipLo = (sec32(0) ^ sec32(4)) & 0xFFFFFFFFL;
        long bitflipHi = (sec32(8) ^ sec32(12)) & 0xFFFFFFFFL;
        long keyedLo = (combinedLo & 0xFFFFFFFFL) ^ bitflipLo;
        long keyedHi = (combinedHi & 0xFFFFFFFFL) ^ bitflipHi;
        return new Hash128(avalanche64(keyedHi), avalanche64(keyedLo));
    }

    private static Hash128 len4to8(MemorySegment in, long off, int len) {
        long inputLo = in.get(LE32, off) & 0xFFFFFFFFL;
        long inputHi = in.get(LE32, off + len - 4) & 0xFFFFFFFFL;
        long input64 = inputLo + (inputHi << 32);
        long bitflip = sec64(16) ^ sec64(24);
        long keyed = input64 ^ bitflip;
        long m = PRIME64_1 + ((long) len << 2);
        long lo = keyed * m;
        long hi = Math.unsignedMultiplyHigh(keyed, m);
        hi += lo << 1;
        lo ^= hi >>> 3;
        lo ^= lo >>> 35;
        lo *= PRIME_MX2;
        lo ^= lo >>> 28;
        hi = avalanche3(hi);
        return new Hash128(hi, lo);
    }

    private static Hash128 len9to16(MemorySegment in, long off, int len) {
        long bitflipLo = sec64(32) ^ sec64(40);
        long bitflipHi = sec64(48) ^ sec64(56);
        long inputLo = in.get(LE64, off);
        long inputHi = in.get(LE64, off + len - 8);
        long x = inputLo ^ inputHi ^ bitflipLo;
        long mLo = x * PRIME64_1;
        long mHi = Math.unsignedMultiplyHigh(x, PRIME64_1);
        mLo += (long) (len - 1) << 54;
        inputHi ^= bitflipHi;
        mHi += inputHi + (inputHi & 0xFFFFFFFFL) * (PRIME32_2 - 1);
        mLo ^= Long.reverseBytes(mHi);
        long hLo = mLo * PRIME64_2;
        long hHi = Math.unsignedMultiplyHigh(mLo, PRIME64_2);
        hHi += mHi * PRIME64_2;
        return new Hash128(avalanche3(hHi), avalanche3(hLo));
    }

    private static Hash128 len17to128(MemorySegment in, long off, int len) {
        long[] acc = {len * PRIME64_1, 0};
        if (len > 32) {
            if (len > 64) {
                if (len > 96) {
                    mix32(acc, in, off + 48, off + len - 64, 96);
                }
                mix32(acc, in, off + 32, off + len - 48, 64);
            }
            mix32(acc, in, off + 16, off + len - 32, 32);
        }
        mix32(acc, in, off, off + len - 16, 0);
        return finishMid(acc, len);
    }

    private static Hash128 len129to240(MemorySegment in, long off, int len) {
        int rounds = len / 32;
        long[] acc = {len * PRIME64_1, 0};
        for (int i = 0; i < 4; i++) {
            mix32(acc, in, off + 32L * i, off + 32L * i + 16, 32 * i);
        }
        acc[0] = avalanche3(acc[0]);
        acc[1] = avalanche3(acc[1]);
        for (int i = 4; i < rounds; i++) {
            mix32(acc, in, off + 32L * i, off + 32L * i + 16, 3 + 32 * (i - 4));
        }
        mix32(acc, in, off + len - 16, off + len - 32, 136 - 17 - 16);
        return finishMid(acc, len);
    }

    private static Hash128 finishMid(long[] acc, long len) {
        long lo = acc[0] + acc[1];
        long hi = acc[0] * PRIME64_1 + acc[1] * PRIME64_4 + len * PRIME64_2;
        return new Hash128(-avalanche3(hi), avalanche3(lo));
    }

    private static void mix32(long[] acc, MemorySegment in, long a, long b, int secretOffset) {
        acc[0] += mix16(in, a, secretOffset);
        acc[0] ^= in.get(LE64, b) + in.get(LE64, b + 8);
        acc[1] += mix16(in, b, secretOffset + 16);
        acc[1] ^= in.get(LE64, a) + in.get(LE64, a + 8);
    }

    private static long mix16(MemorySegment in, long off, int secretOffset) {
        return mulFold64(in.get(LE64, off) ^ sec64(secretOffset), in.get(LE64, off + 8) ^ sec64(secretOffset + 8));
    }

    // ---- primitives -------------------------------------------------------------------------

    static long mulFold64(long a, long b) {
        return (a * b) ^ Math.unsignedMultiplyHigh(a, b);
    }

    static long avalanche64(long h) {
        h ^= h >>> 33;
        h *= PRIME64_2;
        h ^= h >>> 29;
        h *= PRIME64_3;
        return h ^ (h >>> 32);
    }

    static long avalanche3(long h) {
        h ^= h >>> 37;
        h *= PRIME_MX1;
        return h ^ (h >>> 32);
    }

    private static long sec64(int offset) {
        return SECRET_SEG.get(LE64, offset);
    }

    private static int sec32(int offset) {
        return SECRET_SEG.get(LE32, offset);
    }
}
