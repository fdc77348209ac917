package dev.stitch.board;

import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.ProtocolException;
import dev.stitch.protocol.ProtocolJson;
import dev.stitch.protocol.SlimeIndex;
import dev.stitch.protocol.TextPointer;
import dev.stitch.protocol.WeightIdentity;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * Read-only access to upstream's foreign layouts (docs/protocol/board.md §3): the slime layout
 * ({@code <root>/latest}, {@code <root>/<run>/weight_vN/}) and the HEAD run directory
 * ({@code <run-root>/latest}, {@code <run-root>/updates/weight_vN/}); manifests are lifted from each
 * version's {@code model.safetensors.index.json}.
 */
final class ForeignBoard implements BulletinBoard {
    static final String POINTER_FILE = "latest";

    private final Path root;
    private final BoardLayout layout;
    private final BoardOptions options;
    /** The run of the last pointer read: version directories of the slime layout live under it. */
    private volatile String run;

    ForeignBoard(Path root, BoardLayout layout, BoardOptions options) {
        this.root = root.toAbsolutePath().normalize();
        this.layout = layout;
        this.options = options;
    }

    @Override
    public Path root() {
        return root;
    }

    @Override
    public BoardLayout layout() {
        return layout;
    }

    @Override
    public void refresh() throws IOException {
        options.refreshHook().refresh(root);
    }

    @Override
    public LatestPointer readLatest() throws IOException {
        refresh();
        byte[] bytes;
        try {
            bytes = AtomicFiles.readSmallFile(root.resolve(POINTER_FILE), 1 << 16);
        } catch (NoSuchFileException e) {
            run = null;
            return LatestPointer.EMPTY;
        }
        TextPointer p = TextPointer.parse(new String(bytes, StandardCharsets.UTF_8));
        if (p.runId() != null) {
            for (String seg : p.runId().split("/", -1)) {
                if (seg.equals("..") || seg.equals(".") || seg.contains("\\")) {
                    throw new ProtocolException("latest: run id '" + p.runId() + "' is not a safe directory name");
                }
            }
        }
        run = p.runId();
        return new LatestPointer(p.runId(), p.version(), 0.0, null);
    }

    @Override
    public Path versionDirectory(long version) {
        String id = WeightIdentity.format(version);
        if (layout == BoardLayout.HEAD) {
            return root.resolve("updates").resolve(id);
        }
        String r = run;
        return r == null ? root.resolve(id) : root.resolve(r).resolve(id);
    }

    @Override
    public Manifest readManifest(long version) throws IOException {
        Path dir = versionDirectory(version);
        byte[] bytes = AtomicFiles.readSmallFile(dir.resolve(SlimeIndex.FILE_NAME), FilesystemBulletinBoard.MAX_DOCUMENT_BYTES);
        List<String> safetensors = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            s.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".safetensors")).forEach(safetensors::add);
        }
        String what = WeightIdentity.format(version) + "/" + SlimeIndex.FILE_NAME;
        return SlimeIndex.toManifest(ProtocolJson.parse(bytes, what), run, version, safetensors);
    }

    @Override
    public OptionalLong newestAnchorAtOrBelow(long version) throws IOException {
        boolean found = false;
        for (long v = version; v >= 1; v--) {
            try {
                Manifest m = readManifest(v);
                found = true;
                if (m.isAnchor()) {
                    return OptionalLong.of(v);
                }
            } catch (NoSuchFileException e) {
                if (found || version - v >= AnchorSearch.PROBE_LIMIT - 1) {
                    return OptionalLong.empty();
                }
            } catch (ProtocolException e) {
                found = true; // an unreadable index is not an anchor; keep looking below it
            }
        }
        return OptionalLong.empty();
    }

    @Override
    public VerificationReport verifyArtifacts(Manifest manifest, Predicate<Artifact> which, boolean requireChecksums)
            throws IOException {
        return ArtifactVerifier.verify(root, versionDirectory(manifest.version()), manifest, which, requireChecksums);
    }

    @Override
    public String toString() {
        return "ForeignBoard[" + layout.label() + " " + root + "]";
    }
}
