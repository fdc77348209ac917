package dev.stitch.board;

import dev.stitch.hash.Hash128;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Crash-safe file replacement (docs/protocol/board.md §2.1): write a uniquely named temporary in the
 * target's directory ({@code .<name>.<16 hex>.tmp}, never ending in {@code .safetensors}), fsync it,
 * rename it onto the target, fsync the directory. A reader sees the old file or the complete new
 * one, never a torn one; on failure the temporary is removed.
 */
public final class AtomicFiles {

    /** Durable writes with no observer. */
    public static final AtomicFiles DURABLE = new AtomicFiles(Observer.NONE);

    private static final SecureRandom RANDOM = new SecureRandom();

    private final Observer observer;

    public AtomicFiles(Observer observer) {
        this.observer = Objects.requireNonNull(observer, "observer");
    }

    /** Sees every durability step; tests use it to check that files and directories are synced. */
    public interface Observer {
        Observer NONE = new Observer() {
        };

        /** A temporary file was created. */
        default void tempCreated(Path temp) {
        }

        /** A file's content was forced to storage. */
        default void fileSynced(Path file) {
        }

        /** {@code from} was renamed onto {@code to}. */
        default void renamed(Path from, Path to) {
        }

        /** A directory's entries were forced to storage. */
        default void directorySynced(Path dir) {
        }
    }

    /**
     * A file written by {@link #write(Path, ArtifactWriter)}.
     *
     * @param path      its final path
     * @param sizeBytes its length
     * @param xxh3      xxh3-128 of its bytes
     */
    public record WrittenFile(Path path, long sizeBytes, Hash128 xxh3) {
    }

    /** 16 random lowercase hex digits, for unique temporary, staging and orphan names. */
    public static String randomHex16() {
        return HexFormat.of().toHexDigits(RANDOM.nextLong());
    }

    /** A fresh temporary name next to {@code target}: {@code .<name>.<16 hex>.tmp}. */
    public static Path temporarySibling(Path target) {
        Path name = target.getFileName();
        if (name == null) {
            throw new IllegalArgumentException("no file name in " + target);
        }
        return target.resolveSibling("." + name + "." + randomHex16() + ".tmp");
    }

    /** Atomically replaces {@code target} with {@code bytes}. */
    public void write(Path target, byte[] bytes) throws IOException {
        write(target, out -> out.write(bytes));
    }

    /**
     * Atomically replaces {@code target} with what {@code body} writes, and returns the size and
     * xxh3-128 computed while writing.
     */
    public WrittenFile write(Path target, ArtifactWriter body) throws IOException {
        Path dir = parentOf(target);
        Path temp = temporarySibling(target);
        boolean done = false;
        try {
            ArtifactOutput.Result result;
            try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                observer.tempCreated(temp);
                ArtifactOutput out = new ArtifactOutput(ch);
                body.write(out);
                result = out.finish();
                ch.force(true);
                observer.fileSynced(temp);
            }
            move(temp, target);
            done = true;
            fsyncDirectory(dir);
            return new WrittenFile(target, result.size(), result.xxh3());
        } finally {
            if (!done) {
                Files.deleteIfExists(temp);
            }
        }
    }

    /** Renames {@code from} onto {@code to} atomically (replacing a file, or onto an absent directory name). */
    public void move(Path from, Path to) throws IOException {
        Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
        observer.renamed(from, to);
    }

    /** Forces {@code file}'s content to storage. */
    public void fsyncFile(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ch.force(true);
        }
        observer.fileSynced(file);
    }

    /**
     * Forces {@code dir}'s entries (creations, renames, deletions) to storage; file systems that
     * cannot open a directory for reading are skipped, as they give no stronger guarantee anyway.
     */
    public void fsyncDirectory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (NoSuchFileException e) {
            throw e;
        } catch (IOException e) {
            if (!Files.isDirectory(dir)) {
                throw e;
            }
            return;
        }
        observer.directorySynced(dir);
    }

    /** Creates {@code dir} and any missing parents, syncing each parent whose entries changed. */
    public void createDirectories(Path dir) throws IOException {
        Path abs = dir.toAbsolutePath();
        if (Files.isDirectory(abs)) {
            return;
        }
        Path parent = abs.getParent();
        if (parent != null) {
            createDirectories(parent);
        }
        try {
            Files.createDirectory(abs);
        } catch (java.nio.file.FileAlreadyExistsException e) {
            if (!Files.isDirectory(abs)) {
                throw e;
            }
            return;
        }
        if (parent != null) {
            fsyncDirectory(parent);
        }
    }

    /**
     * Reads a whole small file as bytes, refusing files above {@code maxBytes}; {@code extra} adds open
     * options such as {@link java.nio.file.LinkOption#NOFOLLOW_LINKS}.
     */
    static byte[] readSmallFile(Path file, long maxBytes, OpenOption... extra) throws IOException {
        Set<OpenOption> openOptions = new HashSet<>(List.of(extra));
        openOptions.add(StandardOpenOption.READ);
        try (FileChannel ch = FileChannel.open(file, openOptions)) {
            long size = ch.size();
            if (size > maxBytes) {
                throw new IOException(file + " is " + size + " bytes, more than the " + maxBytes + " allowed");
            }
            ByteBuffer buf = ByteBuffer.allocate((int) size);
            while (buf.hasRemaining()) {
                if (ch.read(buf) < 0) {
                    break;
                }
            }
            if (buf.hasRemaining()) {
                byte[] partial = new byte[buf.position()];
                buf.flip();
                buf.get(partial);
                return partial;
            }
            return buf.array();
        }
    }

    private static Path parentOf(Path target) {
        Path dir = target.toAbsolutePath().getParent();
        if (dir == null) {
            throw new IllegalArgumentException("no parent directory for " + target);
        }
        return dir;
    }
}
