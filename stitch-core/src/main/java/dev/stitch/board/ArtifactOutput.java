package dev.stitch.board;

import dev.stitch.hash.Hash128;
import dev.stitch.hash.Xxh3;
import dev.stitch.hash.Xxh3Stream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;

/**
 * The sink an {@link ArtifactWriter} writes to: both a stream and a channel, counting and hashing
 * (xxh3-128) every byte on its way to the file so the figures never need a second read.
 */
public final class ArtifactOutput extends OutputStream implements WritableByteChannel {
    private static final int BUFFER_BYTES = 1 << 20;

    private final FileChannel file;
    /** Native SIMD xxh3 when stitch-native is on the class path (a service), else the Java one. */
    private final Xxh3Stream hasher = Xxh3.newStream();
    private final ByteBuffer buffer = ByteBuffer.allocate(BUFFER_BYTES);
    private long written;
    private boolean closed;

    ArtifactOutput(FileChannel file) {
        this.file = file;
    }

    @Override
    public void write(int b) throws IOException {
        ensureOpen();
        if (!buffer.hasRemaining()) {
            drain();
        }
        buffer.put((byte) b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        ensureOpen();
        java.util.Objects.checkFromIndexSize(off, len, b.length);
        if (len >= BUFFER_BYTES) {
            drain();
            hasher.update(MemorySegment.ofArray(b).asSlice(off, len));
            writeFully(ByteBuffer.wrap(b, off, len));
            written += len;
            return;
        }
        if (len > buffer.remaining()) {
            drain();
        }
        buffer.put(b, off, len);
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
        ensureOpen();
        int len = src.remaining();
        if (len < BUFFER_BYTES && len <= buffer.remaining()) {
            buffer.put(src);
            return len;
        }
        drain();
        hasher.update(MemorySegment.ofBuffer(src));
        writeFully(src);
        written += len;
        return len;
    }

    /** Writes every byte of {@code segment} (e.g. a mapped tensor region). */
    public void write(MemorySegment segment) throws IOException {
        ensureOpen();
        drain();
        hasher.update(segment);
        long off = 0;
        long size = segment.byteSize();
        while (off < size) {
            long n = Math.min(size - off, 1L << 30);
            writeFully(segment.asSlice(off, n).asByteBuffer());
            off += n;
        }
        written += size;
    }

    /** Bytes written so far. */
    public long bytesWritten() {
        return written + buffer.position();
    }

    @Override
    public boolean isOpen() {
        return !closed;
    }

    /** Flushes the buffer to the file; the file itself is synced by the board. */
    @Override
    public void flush() throws IOException {
        ensureOpen();
        drain();
    }

    /** Writers must not close the output; the board finishes it. Closing is a no-op. */
    @Override
    public void close() {
    }

    /** Flushes and returns the final size and digest; the output is unusable afterwards. */
    Result finish() throws IOException {
        drain();
        closed = true;
        return new Result(written, hasher.digest());
    }

    record Result(long size, Hash128 xxh3) {
    }

    private void drain() throws IOException {
        if (buffer.position() == 0) {
            return;
        }
        buffer.flip();
        hasher.update(MemorySegment.ofArray(buffer.array()).asSlice(0, buffer.limit()));
        written += buffer.limit();
        writeFully(buffer);
        buffer.clear();
    }

    private void writeFully(ByteBuffer src) throws IOException {
        while (src.hasRemaining()) {
            file.write(src);
        }
    }

    private void ensureOpen() throws IOException {
        if (closed) {
            throw new ClosedChannelException();
        }
    }
}
