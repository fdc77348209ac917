package dev.stitch.board;

import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.ProtocolException;
import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.OptionalLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The newest anchor at or below a version, the same walk for every board kind (docs/formats/anchors-and-fallback.md). */
final class AnchorSearch {
    /**
     * How many versions below the pointer the search probes before giving up when it finds no
     * manifest at all: a healthy board has latest's manifest, so only a broken or hostile pointer gets here.
     */
    static final int PROBE_LIMIT = 1024;

    private static final Logger LOG = LoggerFactory.getLogger(AnchorSearch.class);

    private AnchorSearch() {
    }

    /** Walks down from {@code start} (already capped at the pointer). */
    static OptionalLong newestAtOrBelow(BulletinBoard board, long start) throws IOException {
        // Versions above latest are never published; GC only deletes whole prefixes below an anchor, so
        // below the first manifest found, the next missing one ends the search.
        boolean found = false;
        for (long v = start; v >= 1; v--) {
            Manifest m;
            try {
                m = board.readManifest(v);
                found = true;
            } catch (NoSuchFileException e) {
                if (found || start - v >= PROBE_LIMIT - 1) {
                    return OptionalLong.empty();
                }
                continue;
            } catch (ProtocolException e) {
                found = true;
                LOG.debug("skipping unreadable manifest of version {} in the anchor search: {}", v, e.getMessage());
                continue;
            }
            if (m.isAnchor()) {
                return OptionalLong.of(v);
            }
        }
        return OptionalLong.empty();
    }
}
