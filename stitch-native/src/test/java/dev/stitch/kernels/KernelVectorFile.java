package dev.stitch.kernels;

import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The file of kernel vectors the C harness (src/test/c/kernel_vectors.c) reads: each case names a C
 * kernel, its integer arguments, its input buffers and the output buffers the Java kernels produced
 * (results as 8-byte little-endian integers, digests as low then high 64 bits), all compared byte
 * for byte. Layout, little-endian: {@code "STITCHKV"}, u32 version, u32 case count, then per case:
 * name and kernel (u32 length + ASCII), u32 + i64 scalars, u32 + inputs, u32 + outputs, each buffer
 * a u64 length and its bytes.
 */
final class KernelVectorFile {

    static final int VERSION = 1;

    /** One call of a C kernel and what the Java kernels say it must produce. */
    record Case(String name, String kernel, long[] scalars, List<byte[]> inputs, List<byte[]> outputs) {
    }

    private KernelVectorFile() {
    }

    /** An 8-byte little-endian integer, the form every kernel result takes in the file. */
    static byte[] le64(long v) {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
    }

    static void write(Path file, List<Case> cases) throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        try (OutputStream os = Files.newOutputStream(file);
             DataOutputStream out = new DataOutputStream(new BufferedOutputStream(os, 1 << 16))) {
            out.write("STITCHKV".getBytes(StandardCharsets.US_ASCII));
            u32(out, VERSION);
            u32(out, cases.size());
            for (Case c : cases) {
                string(out, c.name());
                string(out, c.kernel());
                u32(out, c.scalars().length);
                for (long s : c.scalars()) {
                    out.write(le64(s));
                }
                buffers(out, c.inputs());
                buffers(out, c.outputs());
            }
        }
    }

    private static void buffers(DataOutputStream out, List<byte[]> buffers) throws IOException {
        u32(out, buffers.size());
        for (byte[] b : buffers) {
            out.write(le64(b.length));
            out.write(b);
        }
    }

    private static void string(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.US_ASCII);
        u32(out, b.length);
        out.write(b);
    }

    private static void u32(DataOutputStream out, int v) throws IOException {
        out.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array());
    }
}
