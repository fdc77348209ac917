package dev.stitch.board;

import java.util.List;

/**
 * What {@link FilesystemBulletinBoard#gc} removed.
 *
 * @param anchor          the newest anchor at or below latest that protected everything after it (0 = base)
 * @param deletedVersions versions deleted, ascending
 * @param removedPaths    other entries removed (orphans, staging directories, stale temporaries, archives),
 *                        relative to the root
 */
public record GcReport(long anchor, List<Long> deletedVersions, List<String> removedPaths) {
    public GcReport {
        deletedVersions = List.copyOf(deletedVersions);
        removedPaths = List.copyOf(removedPaths);
    }
}
