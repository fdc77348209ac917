package dev.stitch.board;

import dev.stitch.board.store.ObjectInfo;
import dev.stitch.board.store.ObjectStore;
import dev.stitch.board.store.PreconditionFailedException;
import dev.stitch.hash.Hash128;
import dev.stitch.hash.Xxh3;
import dev.stitch.hash.Xxh3Stream;
import dev.stitch.protocol.Artifact;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.function.LongConsumer;

/**
 * Brings one artifact from a store into a local file, verified while it streams
 * (docs/protocol/board.md §7.5): ranges of {@code partBytes} are read in parallel and written at
 * their offsets, and the digest is fed in file order as the contiguous prefix grows, so the check
 * ends with the last byte instead of needing a second pass. The bytes land in {@code <file>.part};
 * only a file whose size and digest match its manifest entry is renamed to its final name, so a
 * reader never finds an unverified file under a name the manifest lists. A failed fetch keeps the
 * verified prefix ({@code <file>.part} and {@code <file>.part.prefix}) and the next attempt hashes
 * it again from disk and resumes after it.
 */
final class ArtifactFetcher {
    static final String PART_SUFFIX = ".part";
    static final String PREFIX_SUFFIX = ".part.prefix";
    /** The verified prefix is recorded at most this often, so resumes lose little and writes stay rare. */
    private static final long PREFIX_RECORD_BYTES = 64L << 20;

    private final ObjectStore store;
    private final int partBytes;
    private final int concurrency;
    private final FetchStats stats;

    ArtifactFetcher(ObjectStore store, int partBytes, int concurrency, FetchStats stats) {
        this.store = store;
        this.partBytes = partBytes;
        this.concurrency = concurrency;
        this.stats = stats;
    }

    /**
     * Fetches {@code key} into {@code target}, checking it against {@code artifact}'s size and checksum.
     *
     * @param rel      the name used in messages (board-relative)
     * @param progress hears every byte count that reached the file
     * @throws ArtifactVerificationException when the bytes do not match the manifest (nothing is kept)
     */
    void fetch(String key, String rel, Artifact artifact, Path target, LongConsumer progress) throws IOException {
        ObjectInfo info = store.stat(key).orElseThrow(() -> new NoSuchFileException(rel + " is not on the board ("
                + store.location() + ")"));
        long size = info.size();
        if (artifact.sizeBytes() != null && size != artifact.sizeBytes()) {
            stats.verificationFailed();
            throw new ArtifactVerificationException(rel, "is " + size + " bytes on the store, the manifest says "
                    + artifact.sizeBytes());
        }
        StreamingCheck check = StreamingCheck.of(rel, artifact.checksum());
        Path part = target.resolveSibling(target.getFileName() + PART_SUFFIX);
        Path prefixFile = target.resolveSibling(target.getFileName() + PREFIX_SUFFIX);
        Files.createDirectories(target.getParent());
        long start = resumePoint(part, prefixFile, info, size);
        try (FileChannel ch = FileChannel.open(part, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.READ)) {
            if (start > 0) {
                stats.resumed();
                rehashPrefix(ch, start, check);
                progress.accept(start);
            } else {
                ch.truncate(0);
            }
            new RangedCopy(key, info.etag(), ch, check, prefixFile, progress).run(start, size);
            ch.force(true);
        }
        String mismatch = check.mismatch(size);
        if (mismatch != null) {
            stats.verificationFailed();
            Files.deleteIfExists(part);
            Files.deleteIfExists(prefixFile);
            throw new ArtifactVerificationException(rel, mismatch + " (fetched from " + store.location() + "; nothing kept)");
        }
        Files.move(part, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        Files.deleteIfExists(prefixFile);
    }

    /** Where a previous attempt's verified prefix ends, if it fetched the same object; else 0. */
    private static long resumePoint(Path part, Path prefixFile, ObjectInfo info, long size) throws IOException {
        if (!Files.isRegularFile(part) || !Files.isRegularFile(prefixFile)) {
            return 0;
        }
        String[] fields = Files.readString(prefixFile, StandardCharsets.UTF_8).trim().split(" ", 2);
        try {
            long length = Long.parseLong(fields[0]);
            String etag = fields.length > 1 ? fields[1] : "";
            boolean sameObject = info.etag() == null || etag.equals(info.etag());
            return sameObject && length > 0 && length <= size && length <= Files.size(part) ? length : 0;
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private void rehashPrefix(FileChannel ch, long length, StreamingCheck check) throws IOException {
        ByteBuffer buf = ByteBuffer.allocateDirect(Math.min(partBytes, 8 << 20));
        long pos = 0;
        while (pos < length) {
            buf.clear().limit((int) Math.min(buf.capacity(), length - pos));
            int n = ch.read(buf, pos);
            if (n < 0) {
                throw new IOException("the partial file ended at " + pos + " of its verified " + length + " bytes");
            }
            buf.flip();
            check.update(buf);
            pos += n;
        }
    }

    /** One file's parallel ranged copy with its in-order digest. */
    private final class RangedCopy {
        private final String key;
        private final String etag;
        private final FileChannel ch;
        private final StreamingCheck check;
        private final Path prefixFile;
        private final LongConsumer progress;
        private final Semaphore window = new Semaphore(concurrency);
        /** Completed parts waiting for the digest to reach them, by offset. */
        private final TreeMap<Long, ByteBuffer> waiting = new TreeMap<>();
        private long hashedTo;
        private long recordedTo;
        /** Set by a failing part before it frees its slot, so the launcher stops instead of waiting for slots held by parts the digest can no longer reach. */
        private volatile boolean failed;

        RangedCopy(String key, String etag, FileChannel ch, StreamingCheck check, Path prefixFile, LongConsumer progress) {
            this.key = key;
            this.etag = etag;
            this.ch = ch;
            this.check = check;
            this.prefixFile = prefixFile;
            this.progress = progress;
        }

        void run(long from, long size) throws IOException {
            hashedTo = from;
            recordedTo = from;
            if (from >= size) {
                return;
            }
            List<Future<?>> parts = new ArrayList<>();
            try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
                for (long off = from; off < size; off += partBytes) {
                    long offset = off;
                    int length = (int) Math.min(partBytes, size - off);
                    try {
                        window.acquire();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new InterruptedIOException("interrupted fetching " + key);
                    }
                    if (failed) {
                        window.release();
                        break;
                    }
                    parts.add(pool.submit(() -> {
                        copyPart(offset, length);
                        return null;
                    }));
                }
                IOException first = null;
                for (Future<?> f : parts) {
                    try {
                        f.get();
                    } catch (java.util.concurrent.ExecutionException e) {
                        if (first == null) {
                            first = e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new InterruptedIOException("interrupted fetching " + key);
                    }
                }
                if (first != null) {
                    recordPrefix(true);
                    throw first;
                }
            }
        }

        private void copyPart(long offset, int length) throws IOException {
            boolean handedOver = false;
            try {
                ByteBuffer buf = ByteBuffer.allocateDirect(length);
                try {
                    store.readRange(key, offset, length, etag, chunk -> buf.put(chunk));
                } catch (PreconditionFailedException e) {
                    throw new IOException(key + " changed on the store while it was being fetched; published files never change,"
                            + " so the board was rewritten underneath this reader", e);
                }
                buf.flip();
                long pos = offset;
                while (buf.hasRemaining()) {
                    pos += ch.write(buf, pos);
                }
                buf.flip();
                progress.accept(length);
                handedOver = true;
                advance(offset, buf);
            } finally {
                if (!handedOver) {
                    failed = true;
                    window.release();
                }
            }
        }

        /** Feeds the digest every part that is now contiguous with the hashed prefix; each frees its window slot. */
        private synchronized void advance(long offset, ByteBuffer buf) throws IOException {
            waiting.put(offset, buf);
            while (!waiting.isEmpty() && waiting.firstKey() == hashedTo) {
                ByteBuffer next = waiting.pollFirstEntry().getValue();
                hashedTo += next.remaining();
                check.update(next);
                window.release();
            }
            recordPrefix(false);
        }

        private synchronized void recordPrefix(boolean always) throws IOException {
            if (hashedTo > recordedTo && (always || hashedTo - recordedTo >= PREFIX_RECORD_BYTES)) {
                // The bytes must be durable before the record that vouches for them.
                ch.force(false);
                AtomicFiles.DURABLE.write(prefixFile, (hashedTo + " " + (etag == null ? "" : etag)).getBytes(StandardCharsets.UTF_8));
                recordedTo = hashedTo;
            }
        }
    }

    /** The manifest's checksum, computed over the bytes in order. */
    private abstract static class StreamingCheck {
        final String rel;
        final String expectedHex;

        StreamingCheck(String rel, String expectedHex) {
            this.rel = rel;
            this.expectedHex = expectedHex;
        }

        static StreamingCheck of(String rel, String checksum) throws ArtifactVerificationException {
            if (checksum == null) {
                return new StreamingCheck(rel, null) {
                    @Override
                    void update(ByteBuffer b) {
                    }

                    @Override
                    String actualHex() {
                        return null;
                    }
                };
            }
            ArtifactVerifier.ExpectedDigest expected = ArtifactVerifier.ExpectedDigest.parse(rel, checksum);
            String hex = expected.hex();
            return switch (expected.algorithm()) {
                case "xxh3-128" -> new StreamingCheck(rel, hex) {
                    private final Xxh3Stream stream = Xxh3.newStream();

                    @Override
                    void update(ByteBuffer b) {
                        stream.update(MemorySegment.ofBuffer(b));
                    }

                    @Override
                    String actualHex() {
                        Hash128 h = stream.digest();
                        return h.hex();
                    }
                };
                default -> new StreamingCheck(rel, hex) { // sha256, the only other form parse accepts
                    private final MessageDigest md = sha256();

                    @Override
                    void update(ByteBuffer b) {
                        md.update(b.duplicate());
                    }

                    @Override
                    String actualHex() {
                        return HexFormat.of().formatHex(md.digest());
                    }
                };
            };
        }

        abstract void update(ByteBuffer b);

        abstract String actualHex();

        /** Null when the bytes match, else what differs. */
        String mismatch(long size) {
            if (expectedHex == null) {
                return null;
            }
            String actual = actualHex();
            return actual.equals(expectedHex) ? null
                    : "digest mismatch: the " + size + " fetched bytes hash to " + actual + ", the manifest says " + expectedHex;
        }

        private static MessageDigest sha256() {
            try {
                return MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("the JDK lacks SHA-256", e);
            }
        }
    }
}
