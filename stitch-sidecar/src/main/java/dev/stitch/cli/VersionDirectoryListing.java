package dev.stitch.cli;

import dev.stitch.board.BulletinBoard;
import dev.stitch.protocol.WeightIdentity;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import java.util.stream.Stream;

/**
 * The versions whose directories exist on a board, from one listing of the directory that holds them.
 * Readers derive paths from numbers and never list (docs/protocol/board.md §1), but an operator tool may:
 * it makes {@code board show} and {@code board verify} cost what is on disk, not what the pointer claims.
 */
final class VersionDirectoryListing {
    /** A run of consecutive versions without a directory, {@code from..to} inclusive. */
    record Gap(long from, long to) {
        /** {@code "versions 3..9"}, or {@code "version 3"} for a gap of one. */
        String describe() {
            return from == to ? "version " + from : "versions " + from + ".." + to;
        }
    }

    private final long[] present;

    private VersionDirectoryListing(long[] present) {
        this.present = present;
    }

    /** Lists the versions directory of {@code board} (for the slime layout, after the pointer was read). */
    static VersionDirectoryListing of(BulletinBoard board) throws IOException {
        if (board instanceof dev.stitch.board.RemoteBulletinBoard remote) {
            return ofRemote(remote);
        }
        Path dir = board.versionDirectory(1).getParent();
        List<Long> versions = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            s.forEach(p -> {
                String name = p.getFileName().toString();
                OptionalLong v = WeightIdentity.parse(name);
                // Only the name a reader would derive counts; weight_v7 next to weight_v000007 is not version 7.
                if (v.isPresent() && WeightIdentity.format(v.getAsLong()).equals(name)) {
                    versions.add(v.getAsLong());
                }
            });
        } catch (NoSuchFileException e) {
            return new VersionDirectoryListing(new long[0]);
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        long[] sorted = versions.stream().mapToLong(Long::longValue).toArray();
        Arrays.sort(sorted);
        return new VersionDirectoryListing(sorted);
    }

    /**
     * A remote board's versions: S3 lists its keys; an HTTP board cannot be listed, so every version up
     * to the pointer counts as present and a missing one shows up when its manifest is read.
     */
    private static VersionDirectoryListing ofRemote(dev.stitch.board.RemoteBulletinBoard board) throws IOException {
        if (!board.store().writable()) {
            long latest = board.readLatest().version();
            long[] all = new long[(int) Math.min(latest, 100_000)];
            for (int i = 0; i < all.length; i++) {
                all[i] = latest - all.length + 1 + i;
            }
            return new VersionDirectoryListing(all);
        }
        java.util.TreeSet<Long> versions = new java.util.TreeSet<>();
        String prefix = dev.stitch.board.FilesystemBulletinBoard.VERSIONS_DIR + "/";
        for (var o : board.store().list(prefix)) {
            String rest = o.key().substring(prefix.length());
            int slash = rest.indexOf('/');
            if (slash > 0 && rest.endsWith("/" + dev.stitch.protocol.Manifest.FILE_NAME)) {
                String name = rest.substring(0, slash);
                OptionalLong v = WeightIdentity.parse(name);
                if (v.isPresent() && WeightIdentity.format(v.getAsLong()).equals(name)) {
                    versions.add(v.getAsLong());
                }
            }
        }
        return new VersionDirectoryListing(versions.stream().mapToLong(Long::longValue).toArray());
    }

    /** Versions in {@code from..to} that have a directory, ascending. */
    long[] presentIn(long from, long to) {
        return Arrays.stream(present).filter(v -> v >= from && v <= to).toArray();
    }

    /** The gaps of {@code from..to}, ascending. */
    List<Gap> gapsIn(long from, long to) {
        List<Gap> gaps = new ArrayList<>();
        long next = from;
        for (long v : presentIn(from, to)) {
            if (v > next) {
                gaps.add(new Gap(next, v - 1));
            }
            next = v + 1;
            if (next == 0) {
                return gaps; // v was Long.MAX_VALUE
            }
        }
        if (next <= to) {
            gaps.add(new Gap(next, to));
        }
        return gaps;
    }

    /** The gap of {@code ..to} that starts at {@code version}, or null when {@code version} has a directory. */
    Gap gapAt(long version, long to) {
        List<Gap> gaps = gapsIn(version, to);
        return gaps.isEmpty() || gaps.get(0).from() != version ? null : gaps.get(0);
    }
}
