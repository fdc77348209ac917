package dev.stitch.kernels;

import static dev.stitch.kernels.KernelArgs.LE16;

import dev.stitch.hash.Hash128;
import dev.stitch.hash.Xxh3;
import java.lang.foreign.MemorySegment;

/**
 * Apply fused with the XXH3-128 of the result, in Java, block by block in the C kernels' order
 * (apply_xxh3.c): hash a tensor as patched without writing it, or scatter and hash each block
 * while it is in cache, saving old elements so a failed apply can be undone.
 */
final class JavaApplyHashing {

    /** Same block size as the C kernels, so both read the tensor in the same order. */
    private static final int PATCH_BLOCK = 16 << 10;

    private JavaApplyHashing() {
    }

    static Hash128 patchedXxh3(MemorySegment current, int width, MemorySegment positions, int positionWidth,
                               MemorySegment values, long count, boolean xor) {
        KernelArgs.patched(current, width, positions, positionWidth, values, count);
        long bytes = current.byteSize();
        long limit = bytes / width;
        MemorySegment block = MemorySegment.ofArray(new byte[PATCH_BLOCK]);
        Xxh3.Hasher h = Xxh3.newHasher();
        long k = 0;
        for (long off = 0; off < bytes; off += PATCH_BLOCK) {
            long n = Math.min(PATCH_BLOCK, bytes - off);
            MemorySegment.copy(current, off, block, 0, n);
            long first = off / width;
            long end = (off + n) / width;
            for (; k < count; k++) {
                long p = KernelArgs.position(positions, positionWidth, k);
                if (Long.compareUnsigned(p, end) >= 0) {
                    break;
                }
                if (p >= first) {
                    long at = (p - first) * width;
                    long v = ElementAccess.get(values, width, k * width);
                    ElementAccess.set(block, width, at, xor ? ElementAccess.get(block, width, at) ^ v : v);
                }
            }
            h.update(block.asSlice(0, n));
        }
        if (k < count) {
            throw KernelArgs.positionOutOfRange(KernelArgs.position(positions, positionWidth, k), limit);
        }
        return h.digest();
    }

    static Hash128 scatterXxh3(MemorySegment dst, int width, MemorySegment positions, int positionWidth,
                               MemorySegment values, long count, boolean xor, MemorySegment undo) {
        KernelArgs.undoable(dst, width, positions, positionWidth, values, count, undo);
        long bytes = dst.byteSize();
        Xxh3.Hasher h = Xxh3.newHasher();
        long k = 0;
        for (long off = 0; off < bytes; off += PATCH_BLOCK) {
            long n = Math.min(PATCH_BLOCK, bytes - off);
            long end = (off + n) / width;
            for (; k < count; k++) {
                long p = KernelArgs.position(positions, positionWidth, k);
                if (Long.compareUnsigned(p, end) >= 0) {
                    break;
                }
                long at = p * width;
                long old = ElementAccess.get(dst, width, at);
                long v = ElementAccess.get(values, width, k * width);
                ElementAccess.set(undo, width, k * width, old);
                ElementAccess.set(dst, width, at, xor ? old ^ v : v);
            }
            h.update(dst.asSlice(off, n));
        }
        if (k < count) {
            long bad = KernelArgs.position(positions, positionWidth, k);
            restore(dst, width, positions, positionWidth, undo, k);
            throw KernelArgs.positionOutOfRange(bad, bytes / width);
        }
        return h.digest();
    }

    /**
     * As {@link #scatterXxh3} with positions rebuilt from a stream validated first (so every position
     * is inside dst and they strictly ascend): a block is hashed once a position lands past it.
     */
    static Hash128 scatterEscapedXxh3(MemorySegment dst, int width, MemorySegment units, long unitCount,
                                      MemorySegment values, long count, boolean xor, MemorySegment undo, boolean vector) {
        KernelArgs.escapedUndoable(dst, width, units, unitCount, values, count, undo);
        long bytes = dst.byteSize();
        JavaGapCoding.validateEscaped(units, unitCount, count, bytes / width, vector);
        Xxh3.Hasher h = Xxh3.newHasher();
        long hashed = 0;
        long prev = -1;
        long gap = 0;
        long k = 0;
        for (long u = 0; u < unitCount; u++) {
            int unit = units.get(LE16, u << 1) & 0xFFFF;
            gap += unit;
            if (unit == 0xFFFF) {
                continue;
            }
            prev += gap + 1;
            gap = 0;
            long at = prev * width;
            while (at >= hashed + PATCH_BLOCK) {
                h.update(dst.asSlice(hashed, PATCH_BLOCK));
                hashed += PATCH_BLOCK;
            }
            long old = ElementAccess.get(dst, width, at);
            long v = ElementAccess.get(values, width, k * width);
            ElementAccess.set(undo, width, k * width, old);
            ElementAccess.set(dst, width, at, xor ? old ^ v : v);
            k++;
        }
        h.update(dst.asSlice(hashed, bytes - hashed));
        return h.digest();
    }

    static void restoreUndo(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment undo, long count) {
        KernelArgs.scatter(dst, width, positions, positionWidth, undo, count);
        long limit = dst.byteSize() / width;
        for (long k = 0; k < count; k++) {
            long p = KernelArgs.position(positions, positionWidth, k);
            if (Long.compareUnsigned(p, limit) >= 0) {
                throw KernelArgs.positionOutOfRange(p, limit);
            }
        }
        restore(dst, width, positions, positionWidth, undo, count);
    }

    /** Newest first, so repeated or unordered positions still end at their original bytes. */
    private static void restore(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment undo, long count) {
        for (long k = count - 1; k >= 0; k--) {
            ElementAccess.set(dst, width, KernelArgs.position(positions, positionWidth, k) * width, ElementAccess.get(undo, width, k * width));
        }
    }
}
