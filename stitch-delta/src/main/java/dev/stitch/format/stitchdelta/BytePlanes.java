package dev.stitch.format.stitchdelta;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Byte-plane transposition: {@code count} units of {@code width} bytes as all byte-0s, then all byte-1s, ... */
final class BytePlanes {

    private BytePlanes() {
    }

    static byte[] split(MemorySegment src, int width, long count) {
        byte[] out = new byte[Math.toIntExact(count * width)];
        if (width == 1) {
            MemorySegment.copy(src, ValueLayout.JAVA_BYTE, 0, out, 0, out.length);
            return out;
        }
        int n = (int) count;
        for (int i = 0; i < n; i++) {
            long base = (long) i * width;
            for (int b = 0; b < width; b++) {
                out[b * n + i] = src.get(ValueLayout.JAVA_BYTE, base + b);
            }
        }
        return out;
    }

    static byte[] merge(byte[] planes, int width, long count) {
        if (width == 1) {
            return planes;
        }
        byte[] out = new byte[planes.length];
        int n = (int) count;
        for (int b = 0; b < width; b++) {
            int src = b * n;
            for (int i = 0; i < n; i++) {
                out[i * width + b] = planes[src + i];
            }
        }
        return out;
    }
}
