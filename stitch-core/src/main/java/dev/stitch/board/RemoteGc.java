package dev.stitch.board;

import dev.stitch.board.store.ObjectInfo;
import dev.stitch.board.store.ObjectStore;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.ProtocolException;
import dev.stitch.protocol.WeightIdentity;
import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * Retention and crash leftovers on object storage (docs/protocol/board.md §2.5, §7.3), by listing:
 * the same rules as the file-system board's gc — keep the newest anchor at or below latest and
 * everything after it, and the last {@code keep} versions; delete older versions of the run once old
 * enough, and other runs' versions — plus what a crashed publisher left: objects of versions above
 * latest and claims older than the orphan grace, and incomplete multipart uploads. Stores have no
 * archive directory: other runs' versions are deleted, not moved.
 */
final class RemoteGc {
    private final RemoteBulletinBoard board;
    private final ObjectStore store;
    private final BoardOptions options;

    RemoteGc(RemoteBulletinBoard board, ObjectStore store, BoardOptions options) {
        this.board = board;
        this.store = store;
        this.options = options;
    }

    /** Keys that belong to no published version, and incomplete uploads (as {@code upload:<key>}). */
    List<String> leftovers() throws IOException {
        long latest = pointer().version();
        List<String> out = new ArrayList<>();
        for (ObjectInfo o : store.list(FilesystemBulletinBoard.VERSIONS_DIR + "/")) {
            OptionalLong v = versionOf(o.key());
            boolean claim = o.key().endsWith(RemotePublisher.CLAIM_SUFFIX);
            if (claim || v.isEmpty() || v.getAsLong() > latest) {
                out.add(o.key());
            }
        }
        for (ObjectStore.PendingUpload u : store.pendingUploads(FilesystemBulletinBoard.VERSIONS_DIR + "/")) {
            out.add("upload:" + u.key());
        }
        out.sort(null);
        return out;
    }

    GcReport run(int keepLast, long minAgeSeconds) throws IOException {
        if (keepLast < 0 || minAgeSeconds < 0) {
            throw new IllegalArgumentException("keep and min age are non-negative");
        }
        LatestPointer current = pointer();
        long latest = current.version();
        Instant now = options.clock().instant();
        long graceMillis = options.orphanGrace().toMillis();
        TreeMap<Long, List<ObjectInfo>> byVersion = new TreeMap<>();
        List<ObjectInfo> other = new ArrayList<>();
        for (ObjectInfo o : store.list(FilesystemBulletinBoard.VERSIONS_DIR + "/")) {
            OptionalLong v = versionOf(o.key());
            if (v.isPresent() && !o.key().endsWith(RemotePublisher.CLAIM_SUFFIX)) {
                byVersion.computeIfAbsent(v.getAsLong(), k -> new ArrayList<>()).add(o);
            } else {
                other.add(o);
            }
        }
        long anchor = newestAnchorOfRun(latest, current.runId());
        List<Long> deleted = new ArrayList<>();
        List<String> removed = new ArrayList<>();
        for (var e : byVersion.entrySet()) {
            long v = e.getKey();
            List<ObjectInfo> objects = e.getValue();
            if (v > latest || v == 0) {
                // Above latest: a crashed publisher's, unless a live one is uploading it right now.
                if (allOlderThan(objects, graceMillis, now)) {
                    deleteAll(objects, removed);
                }
                continue;
            }
            Manifest m = manifestQuietly(v);
            boolean otherRun = m != null && m.runId() != null && current.runId() != null
                    && !Objects.equals(m.runId(), current.runId());
            boolean isProtected = !otherRun && (v >= anchor || v > latest - keepLast || anchor == 0);
            if (!isProtected && allOlderThan(objects, minAgeSeconds * 1000, now)) {
                deleteAll(objects, removed);
                deleted.add(v);
            }
        }
        for (ObjectInfo o : other) {
            if (olderThan(o, graceMillis, now)) {
                store.delete(o.key());
                removed.add(o.key());
            }
        }
        for (ObjectStore.PendingUpload u : store.pendingUploads(FilesystemBulletinBoard.VERSIONS_DIR + "/")) {
            if (u.initiated() == null || u.initiated().plusMillis(graceMillis).isBefore(now)) {
                store.abort(u);
                removed.add("upload:" + u.key());
            }
        }
        return new GcReport(anchor, deleted, removed);
    }

    private LatestPointer pointer() throws IOException {
        var doc = board.readPointerDocument();
        return doc == null ? LatestPointer.EMPTY : LatestPointer.parse(doc.bytes(), LatestPointer.FILE_NAME);
    }

    /** The newest anchor of the run at or below latest; 0 (the base) when there is none. */
    private long newestAnchorOfRun(long latest, String run) throws IOException {
        for (long v = latest; v >= 1 && latest - v < AnchorSearch.PROBE_LIMIT; v--) {
            Manifest m = manifestQuietly(v);
            if (m == null) {
                continue;
            }
            if (!Objects.equals(m.runId(), run) && m.runId() != null && run != null) {
                continue;
            }
            if (m.isAnchor()) {
                return v;
            }
        }
        return 0;
    }

    private Manifest manifestQuietly(long v) throws IOException {
        try {
            return board.readManifest(v);
        } catch (NoSuchFileException | ProtocolException e) {
            return null;
        }
    }

    private void deleteAll(List<ObjectInfo> objects, List<String> removed) throws IOException {
        // The manifest goes first, so a reader that races the gc finds no version rather than a partial one.
        objects.sort((a, b) -> Boolean.compare(!a.key().endsWith("/" + Manifest.FILE_NAME), !b.key().endsWith("/" + Manifest.FILE_NAME)));
        for (ObjectInfo o : objects) {
            store.delete(o.key());
            removed.add(o.key());
        }
    }

    private static boolean allOlderThan(List<ObjectInfo> objects, long millis, Instant now) {
        for (ObjectInfo o : objects) {
            if (!olderThan(o, millis, now)) {
                return false;
            }
        }
        return true;
    }

    private static boolean olderThan(ObjectInfo o, long millis, Instant now) {
        return o.lastModified() == null || o.lastModified().plusMillis(millis).isBefore(now);
    }

    /** The version of {@code versions/weight_vN/...} or of a claim {@code versions/.weight_vN.claim}. */
    static OptionalLong versionOf(String key) {
        String rest = key.substring(FilesystemBulletinBoard.VERSIONS_DIR.length() + 1);
        if (rest.startsWith(".") && rest.endsWith(RemotePublisher.CLAIM_SUFFIX)) {
            return WeightIdentity.parse(rest.substring(1, rest.length() - RemotePublisher.CLAIM_SUFFIX.length()));
        }
        int slash = rest.indexOf('/');
        return slash < 0 ? OptionalLong.empty() : WeightIdentity.parse(rest.substring(0, slash));
    }
}
