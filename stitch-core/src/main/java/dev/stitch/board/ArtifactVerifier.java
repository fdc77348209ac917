package dev.stitch.board;

import dev.stitch.hash.Hash128;
import dev.stitch.hash.Xxh3;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.Manifest;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import java.util.function.Function;
import java.util.function.Predicate;

/** The reader-side artifact check of docs/protocol/board.md §1.3 and 1.6: no links, presence, size, digest. */
final class ArtifactVerifier {
    private static final long HASH_CHUNK = 1L << 30;

    private ArtifactVerifier() {
    }

    static VerificationReport verify(Path root, Path versionDir, Manifest manifest, Predicate<Artifact> which,
                                     boolean requireChecksums) throws IOException {
        int verified = 0;
        int unverified = 0;
        long bytes = 0;
        for (Artifact a : manifest.artifacts()) {
            // Unknown kinds are kept and ignored (1.3): no plan uses their files, so their presence or
            // digest must not decide whether the version can be applied.
            if (a.knownKind() == null || !which.test(a)) {
                continue;
            }
            Path file = resolveInside(versionDir, a.path());
            String rel = relative(root, file);
            String link = LinkFreePaths.firstLink(root, file);
            if (link != null) {
                throw new ArtifactVerificationException(rel, (link.equals(rel) ? "is a symbolic link"
                        : "is reached through the symbolic link " + link) + " (readers follow no links inside the board)");
            }
            if (a.sizeBytes() == null || a.checksum() == null) {
                if (requireChecksums) {
                    throw new ArtifactVerificationException(rel, "has no " + (a.sizeBytes() == null ? "size_bytes" : "checksum")
                            + " in the manifest and checksums are required");
                }
            }
            if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
                if (Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
                    throw new ArtifactVerificationException(rel, "is not a regular file");
                }
                throw new ArtifactVerificationException(rel, "is missing");
            }
            long size = checkFile(rel, file, a, Xxh3::hash128);
            if (a.sizeBytes() == null || a.checksum() == null) {
                unverified++;
            } else {
                verified++;
                bytes += size;
            }
        }
        return new VerificationReport(verified, bytes, unverified);
    }

    /** Resolves a manifest path inside {@code dir}; the path was checked on parse, this guards symlinked escapes too. */
    static Path resolveInside(Path dir, String relPath) throws ArtifactVerificationException {
        String bad = Artifact.pathProblem(relPath);
        if (bad != null) {
            throw new ArtifactVerificationException(relPath, bad);
        }
        Path file = dir.resolve(relPath).normalize();
        if (!file.startsWith(dir.normalize())) {
            throw new ArtifactVerificationException(relPath, "escapes its version directory");
        }
        return file;
    }

    /**
     * Checks one file against its artifact's size and digest, whichever the manifest gives.
     *
     * @param xxh3 the xxh3-128 implementation to hash with (callers with native kernels pass theirs)
     * @return the file's size
     */
    static long checkFile(String rel, Path file, Artifact a, Function<MemorySegment, Hash128> xxh3) throws IOException {
        long size = Files.size(file);
        if (a.sizeBytes() != null && size != a.sizeBytes()) {
            throw new ArtifactVerificationException(rel, "is " + size + " bytes, the manifest says " + a.sizeBytes());
        }
        if (a.checksum() != null) {
            checkDigest(rel, file, a.checksum(), xxh3);
        }
        return size;
    }

    private static void checkDigest(String rel, Path file, String checksum, Function<MemorySegment, Hash128> xxh3)
            throws IOException {
        ExpectedDigest expected = ExpectedDigest.parse(rel, checksum);
        String actual = expected.algorithm().equals("xxh3-128") ? xxh3(file, xxh3).hex() : sha256(file);
        if (!actual.equals(expected.hex())) {
            throw new ArtifactVerificationException(rel, expected.algorithm() + " digest mismatch: file has " + actual
                    + ", the manifest says " + expected.hex());
        }
    }

    /**
     * A manifest checksum taken apart and checked for form: {@code xxh3-128:<32 hex>} or {@code sha256:<64 hex>}
     * (docs/protocol/board.md §1.3), with the hex in lower case. Both the in-place check and the streaming
     * check of a fetch read checksums through it.
     */
    record ExpectedDigest(String algorithm, String hex) {
        static ExpectedDigest parse(String rel, String checksum) throws ArtifactVerificationException {
            int colon = checksum.indexOf(':');
            if (colon < 0) {
                throw new ArtifactVerificationException(rel, "malformed checksum '" + checksum + "' (expected xxh3-128:<hex> or sha256:<hex>)");
            }
            String algorithm = checksum.substring(0, colon);
            String hex = checksum.substring(colon + 1).toLowerCase(Locale.ROOT);
            int digits = switch (algorithm) {
                case "xxh3-128" -> 32;
                case "sha256" -> 64;
                default -> throw new ArtifactVerificationException(rel, "unknown checksum algorithm '" + algorithm + "'");
            };
            if (!isHex(hex, digits)) {
                throw new ArtifactVerificationException(rel, "malformed " + algorithm + " digest '" + checksum + "' (needs "
                        + digits + " hex digits)");
            }
            return new ExpectedDigest(algorithm, hex);
        }
    }

    /** xxh3-128 of a whole file, read through a mapping. */
    static Hash128 xxh3(Path file) throws IOException {
        return xxh3(file, Xxh3::hash128);
    }

    private static Hash128 xxh3(Path file, Function<MemorySegment, Hash128> hash) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ); Arena arena = Arena.ofConfined()) {
            long size = ch.size();
            if (size == 0) {
                return Xxh3.hash128(new byte[0]);
            }
            MemorySegment seg = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            return hash.apply(seg);
        }
    }

    static String sha256(Path file) throws IOException {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK lacks SHA-256", e);
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ); Arena arena = Arena.ofConfined()) {
            long size = ch.size();
            long off = 0;
            while (off < size) {
                long n = Math.min(HASH_CHUNK, size - off);
                md.update(ch.map(FileChannel.MapMode.READ_ONLY, off, n, arena).asByteBuffer());
                off += n;
            }
        }
        return HexFormat.of().formatHex(md.digest());
    }

    static String relative(Path root, Path file) {
        Path r = root.toAbsolutePath().normalize();
        Path f = file.toAbsolutePath().normalize();
        return f.startsWith(r) ? r.relativize(f).toString().replace('\\', '/') : f.toString();
    }

    private static boolean isHex(String s, int length) {
        if (s.length() != length) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
                return false;
            }
        }
        return true;
    }
}
