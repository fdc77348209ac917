package dev.stitch.s3;

import dev.stitch.board.store.StoreListener;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import software.amazon.awssdk.core.sync.RequestBody;

/**
 * Request bodies of uploads. Each try of a request gets a fresh stream from the start (the SDK asks
 * its content provider again), and every byte the SDK takes is reported to the listener as sent.
 */
final class UploadBodies {
    private UploadBodies() {
    }

    static RequestBody of(byte[] bytes, String contentType, StoreListener listener) {
        return RequestBody.fromContentProvider(() -> new ByteArrayInputStream(bytes) {
            @Override
            public synchronized int read(byte[] b, int off, int len) {
                int n = super.read(b, off, len);
                if (n > 0) {
                    listener.sent(n);
                }
                return n;
            }

            @Override
            public synchronized int read() {
                int c = super.read();
                if (c >= 0) {
                    listener.sent(1);
                }
                return c;
            }
        }, bytes.length, contentType);
    }

    /**
     * Bytes {@code [offset, offset + length)} of {@code file}, read with positional reads so that the
     * parts of one multipart upload share the channel and no part is held in memory.
     */
    static RequestBody of(FileChannel file, long offset, long length, String contentType, StoreListener listener) {
        return RequestBody.fromContentProvider(() -> new FileSlice(file, offset, length, listener), length, contentType);
    }

    /** A slice of a file as a stream; closing it leaves the channel open for the other slices. */
    private static final class FileSlice extends InputStream {
        private final FileChannel file;
        private final long end;
        private final StoreListener listener;
        private long position;

        FileSlice(FileChannel file, long offset, long length, StoreListener listener) {
            this.file = file;
            this.position = offset;
            this.end = offset + length;
            this.listener = listener;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            if (position >= end) {
                return -1;
            }
            int n = file.read(ByteBuffer.wrap(b, off, (int) Math.min(len, end - position)), position);
            if (n < 0) {
                throw new IOException("the file being uploaded ended at byte " + position + ", before the " + end
                        + " it had when the upload began (files must not change while they are published)");
            }
            position += n;
            listener.sent(n);
            return n;
        }

        @Override
        public int available() {
            return (int) Math.min(end - position, Integer.MAX_VALUE);
        }
    }
}
