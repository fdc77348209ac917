package dev.stitch.format;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdCompressCtx;
import com.github.luben.zstd.ZstdDecompressCtx;
import com.github.luben.zstd.SequenceProducer;
import com.github.luben.zstd.ZstdException;
import dev.stitch.kernels.Kernels;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * zstd as every format uses it (docs/formats/common.md §0.3): one frame per stream, level 1, content size
 * present, no checksum; readers accept exactly one frame and check its declared size against a bound
 * before allocating.
 */
public final class ZstdFrames {

    /** Compression level of every stream. */
    public static final int LEVEL = 1;
    /** Largest stream handled in one piece (byte[] and ByteBuffer views are int-indexed). */
    public static final long MAX_ONE_SHOT = Integer.MAX_VALUE - 1024;

    private static final int MAGIC = 0xFD2FB528;
    /** RFC 8878 3.1.1.2: no block decodes to more than 128 KiB (Block_Maximum_Size). */
    private static final long MAX_BLOCK_CONTENT = 128 << 10;
    /** RFC 8878 3.1.1.2: a block that yields any byte takes at least its 3-byte header and 1 byte. */
    private static final long MIN_PRODUCTIVE_BLOCK = 4;
    /**
     * Idle decompression contexts, borrowed per frame: a version decodes dozens of small frames, each
     * would otherwise set one up. A pool rather than a thread-local, because a context's native memory
     * is freed only by close(), which a thread that dies would never call.
     */
    private static final ConcurrentLinkedQueue<ZstdDecompressCtx> IDLE_DECOMPRESSORS = new ConcurrentLinkedQueue<>();
    private static final AtomicInteger IDLE_COUNT = new AtomicInteger();
    private static final int MAX_IDLE = 2 * Runtime.getRuntime().availableProcessors();

    private ZstdFrames() {
    }

    /** Whether {@code data} starts with the zstd frame magic {@code 28 B5 2F FD}. */
    public static boolean isFrame(MemorySegment data) {
        return data.byteSize() >= 4 && data.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), 0) == MAGIC;
    }

    /** Compresses {@code src} into one level-1 frame with the content size in its header. */
    public static byte[] compress(MemorySegment src) {
        if (src.byteSize() > MAX_ONE_SHOT) {
            throw new IllegalArgumentException("stream of " + src.byteSize() + " bytes is too large for one-shot compression");
        }
        byte[] in = src.toArray(ValueLayout.JAVA_BYTE);
        return compress(in);
    }

    /** Compresses {@code src} into one level-1 frame with the content size in its header. */
    public static byte[] compress(byte[] src) {
        try (ZstdCompressCtx ctx = new ZstdCompressCtx()) {
            ctx.setLevel(LEVEL);
            ctx.setContentSize(true);
            ctx.setChecksum(false);
            return ctx.compress(src);
        }
    }

    /** Worst-case frame size of {@code rawLength} bytes of input. */
    public static long bound(long rawLength) {
        return Zstd.compressBound(rawLength);
    }

    /**
     * A reusable compressor from and into native memory, so a writer compressing many streams sets up
     * its contexts once and copies nothing. {@link #compress} produces exactly the frames of
     * {@link #compress(byte[])}; {@link #compressPlane} may instead code a plane as Huffman literals
     * only (still one level-1 frame with content size, readable by any zstd decoder). Not thread-safe.
     */
    public static final class Compressor implements AutoCloseable {
        /** Bytes sampled to choose how a plane is coded. */
        static final int PLANE_SAMPLES = 4096;

        private final ZstdCompressCtx ctx = levelOneContext();
        /** Level 1 with a sequence producer that finds no matches; null without the native kernels. */
        private final ZstdCompressCtx literals;

        public Compressor() {
            OptionalLong producer = Kernels.zstdLiteralsProducer();
            if (producer.isPresent()) {
                literals = levelOneContext();
                literals.registerSequenceProducer(new LiteralsOnly(producer.getAsLong()));
            } else {
                literals = null;
            }
        }

        private static ZstdCompressCtx levelOneContext() {
            ZstdCompressCtx c = new ZstdCompressCtx();
            c.setLevel(LEVEL);
            c.setContentSize(true);
            c.setChecksum(false);
            return c;
        }

        /**
         * Compresses {@code src} into one frame at the start of {@code dst} (both native, {@code dst}
         * at least {@link #bound} of the input) and returns the frame's length.
         */
        public long compress(MemorySegment src, MemorySegment dst) {
            return compress(ctx, src, dst);
        }

        /**
         * As {@link #compress}, for one byte plane of a stitch_delta record. A sample of the plane
         * decides: when no byte value dominates and the bytes are not near-random, the plane is
         * coded as literals only, because level 1's match search on such planes (low bytes of gaps
         * and of value XORs) only finds short matches that cost more time than they save; planes
         * dominated by one value (high bytes) keep the match search, whose runs beat the 1 bit per
         * byte Huffman floor.
         */
        public long compressPlane(MemorySegment src, MemorySegment dst) {
            return compress(literals != null && literalsSuit(src) ? literals : ctx, src, dst);
        }

        /**
         * Whether a sample of {@code plane} has no byte above 3/4 of it and an order-0 entropy below
         * 7.5 bits. The sample is 16 evenly spaced runs of 256 bytes: runs cost a few cache lines each,
         * where single bytes spread over the plane would each cost a miss.
         */
        static boolean literalsSuit(MemorySegment plane) {
            long size = plane.byteSize();
            if (size < 64) {
                return false;
            }
            int runs = 16;
            int run = (int) Math.min(PLANE_SAMPLES / runs, size / runs);
            long stride = size / runs;
            int n = runs * run;
            int[] histogram = new int[256];
            int top = 0;
            for (int r = 0; r < runs; r++) {
                long at = r * stride;
                for (int i = 0; i < run; i++) {
                    int c = ++histogram[plane.get(ValueLayout.JAVA_BYTE, at + i) & 0xFF];
                    top = Math.max(top, c);
                }
            }
            if (4L * top >= 3L * n) {
                return false;
            }
            double bits = 0;
            for (int c : histogram) {
                if (c > 0) {
                    double p = (double) c / n;
                    bits -= p * Math.log(p);
                }
            }
            return bits / Math.log(2) < 7.5;
        }

        private static long compress(ZstdCompressCtx c, MemorySegment src, MemorySegment dst) {
            if (!src.isNative() || !dst.isNative()) {
                throw new IllegalArgumentException("compression works on native memory only");
            }
            if (src.byteSize() > MAX_ONE_SHOT) {
                throw new IllegalArgumentException("stream of " + src.byteSize() + " bytes is too large for one-shot compression");
            }
            long room = Math.min(dst.byteSize(), MAX_ONE_SHOT);
            if (room < bound(src.byteSize())) {
                throw new IllegalArgumentException("output of " + dst.byteSize() + " bytes is below the bound " + bound(src.byteSize()));
            }
            return c.compressDirectByteBuffer(dst.asSlice(0, room).asByteBuffer(), 0, (int) room,
                    src.asByteBuffer(), 0, (int) src.byteSize());
        }

        @Override
        public void close() {
            ctx.close();
            if (literals != null) {
                literals.close();
            }
        }
    }

    /** The native literals-only producer; it keeps no state. */
    private record LiteralsOnly(long functionPointer) implements SequenceProducer {
        @Override
        public long getFunctionPointer() {
            return functionPointer;
        }

        @Override
        public long createState() {
            return 0;
        }

        @Override
        public void freeState(long state) {
        }
    }

    /**
     * The most content a zstd frame of {@code frameLength} bytes can decode to, whatever its header
     * declares: every block that yields bytes takes at least 4 of them and yields at most 128 KiB.
     * Checking a declared size against this before allocating keeps memory bounded by the input.
     */
    public static long maxContentSize(long frameLength) {
        long blocks = frameLength / MIN_PRODUCTIVE_BLOCK + (frameLength % MIN_PRODUCTIVE_BLOCK == 0 ? 0 : 1);
        return blocks > Long.MAX_VALUE / MAX_BLOCK_CONTENT ? Long.MAX_VALUE : blocks * MAX_BLOCK_CONTENT;
    }

    /**
     * The frame's declared content size, after checking the frame is well-formed: magic present,
     * size declared, at most {@code bound}, and the frame ends exactly at the end of {@code frame}.
     */
    public static long declaredSize(byte[] frame, long bound, String where) {
        try {
            return checkedSize(frame, bound, where);
        } catch (ZstdException e) {
            throw new DeltaFormatException(where + ": corrupt zstd frame: " + e.getMessage(), e);
        }
    }

    private static long checkedSize(byte[] frame, long bound, String where) {
        if (frame.length < 4 || !isFrame(MemorySegment.ofArray(frame))) {
            throw new DeltaFormatException(where + ": not a zstd frame (magic 28 B5 2F FD missing)");
        }
        long size = Zstd.getFrameContentSize(frame);
        if (size == -1) {
            throw new DeltaFormatException(where + ": zstd frame without content size");
        }
        if (size < 0) {
            throw new DeltaFormatException(where + ": malformed zstd frame header");
        }
        if (Long.compareUnsigned(size, bound) > 0) {
            throw new DeltaFormatException(where + ": zstd frame declares " + Long.toUnsignedString(size) + " bytes, more than the bound " + bound);
        }
        if (size > maxContentSize(frame.length)) {
            throw new DeltaFormatException(where + ": zstd frame of " + frame.length + " bytes declares " + size
                + " bytes, more than such a frame can hold");
        }
        long frameLength = Zstd.findFrameCompressedSize(frame);
        if (Zstd.isError(frameLength) || frameLength <= 0) {
            throw new DeltaFormatException(where + ": truncated or malformed zstd frame");
        }
        if (frameLength != frame.length) {
            throw new DeltaFormatException(where + ": " + (frame.length - frameLength) + " bytes after the zstd frame");
        }
        return size;
    }

    /** Decompresses exactly one frame whose content size must be at most {@code bound}. */
    public static byte[] decompress(MemorySegment frame, long bound, String where) {
        if (frame.byteSize() > MAX_ONE_SHOT) {
            throw new DeltaFormatException(where + ": compressed stream of " + frame.byteSize() + " bytes is too large");
        }
        return decompress(frame.toArray(ValueLayout.JAVA_BYTE), bound, where);
    }

    /** Decompresses exactly one frame whose content size must be at most {@code bound}. */
    public static byte[] decompress(byte[] frame, long bound, String where) {
        long size = declaredSize(frame, Math.min(bound, MAX_ONE_SHOT), where);
        byte[] out = new byte[(int) size];
        try (ZstdDecompressCtx ctx = new ZstdDecompressCtx()) {
            int n = ctx.decompressByteArray(out, 0, out.length, frame, 0, frame.length);
            if (n != size) {
                throw new DeltaFormatException(where + ": zstd frame decoded to " + n + " bytes, header declared " + size);
            }
        } catch (ZstdException e) {
            throw new DeltaFormatException(where + ": corrupt zstd frame: " + e.getMessage(), e);
        }
        return out;
    }

    /**
     * Decompresses the frame at {@code src[srcOff, srcOff + srcLen)}, whose content size must equal
     * {@code expected}, into {@code dst} at {@code dstOff} (no intermediate copies).
     */
    public static void decompressInto(byte[] src, int srcOff, int srcLen, byte[] dst, int dstOff, long expected, String where) {
        if (srcLen < 4 || !isFrame(MemorySegment.ofArray(src).asSlice(srcOff, srcLen))) {
            throw new DeltaFormatException(where + ": not a zstd frame (magic 28 B5 2F FD missing)");
        }
        try {
            long size = Zstd.getFrameContentSize(src, srcOff, srcLen);
            if (size != expected) {
                throw new DeltaFormatException(where + ": zstd frame declares " + size + " bytes, expected " + expected
                    + (size == -1 ? " (no content size)" : ""));
            }
            long frameLength = Zstd.findFrameCompressedSize(src, srcOff, srcLen);
            if (Zstd.isError(frameLength) || frameLength != srcLen) {
                throw new DeltaFormatException(where + ": the zstd frame does not end exactly at the end of its stream");
            }
            ZstdDecompressCtx ctx = IDLE_DECOMPRESSORS.poll();
            if (ctx == null) {
                ctx = new ZstdDecompressCtx();
            } else {
                IDLE_COUNT.decrementAndGet();
            }
            int n;
            try {
                n = ctx.decompressByteArray(dst, dstOff, (int) expected, src, srcOff, srcLen);
            } finally {
                if (IDLE_COUNT.incrementAndGet() <= MAX_IDLE) {
                    IDLE_DECOMPRESSORS.offer(ctx);
                } else {
                    IDLE_COUNT.decrementAndGet();
                    ctx.close();
                }
            }
            if (n != expected) {
                throw new DeltaFormatException(where + ": zstd frame decoded to " + n + " bytes, expected " + expected);
            }
        } catch (ZstdException e) {
            throw new DeltaFormatException(where + ": corrupt zstd frame: " + e.getMessage(), e);
        }
    }

    /** Decompresses exactly one frame whose content size must equal {@code expected}. */
    public static byte[] decompressExactly(MemorySegment frame, long expected, String where) {
        byte[] out = decompress(frame, expected, where);
        if (out.length != expected) {
            throw new DeltaFormatException(where + ": zstd frame holds " + out.length + " bytes, expected " + expected);
        }
        return out;
    }
}
