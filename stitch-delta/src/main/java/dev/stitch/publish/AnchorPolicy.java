package dev.stitch.publish;

import dev.stitch.apply.VersionStep;
import dev.stitch.board.BulletinBoard;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.ProtocolException;
import java.io.IOException;
import java.nio.file.NoSuchFileException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which versions also carry a full checkpoint (docs/protocol/board.md §2.6): every {@code interval}-th version,
 * and, with a bytes fraction {@code F > 0}, the first version whose transition would take the bytes published
 * since the newest anchor past {@code F} times that anchor's size. A late joiner reads the newest anchor and the
 * tail after it, so the byte rule keeps its download at most {@code (1 + F)} anchors; whichever rule fires first
 * wins. The tally of bytes since the anchor is read back from the board's manifests whenever the publisher does
 * not know it (its first publish, or after another publisher advanced the board), so a restarted trainer keeps
 * the bound.
 */
final class AnchorPolicy {

    private static final Logger LOG = LoggerFactory.getLogger(AnchorPolicy.class);

    private final int interval;
    private final double bytesFraction;
    /** The version the tally covers, or -1 when the publisher has not read it yet. */
    private long knownThrough = -1;
    /** Transition bytes of the versions after the newest anchor, up to {@link #knownThrough}. */
    private long tailBytes;
    /** Full-checkpoint bytes of the newest anchor; 0 while the base is the only one. */
    private long anchorBytes;

    /**
     * @param interval      every n-th version is an anchor; 0 = never by count
     * @param bytesFraction anchor once the tail would exceed this fraction of an anchor's size; 0 = never by bytes
     */
    AnchorPolicy(int interval, double bytesFraction) {
        this.interval = interval;
        this.bytesFraction = bytesFraction;
    }

    /**
     * Makes sure the tally covers every version below {@code version}, whose publish has begun (so the board's
     * latest in this run is {@code version - 1}). Version 1 builds on the base: nothing precedes it.
     *
     * @param modelBytes the size of the weights being published; the walk down the board stops once the tail
     *                   is past any anchor's share of it, since the answer is then "an anchor now" whatever lies below
     */
    void prepare(BulletinBoard board, long version, long modelBytes) throws IOException {
        if (version <= 1) {
            knownThrough = version - 1;
            tailBytes = 0;
            anchorBytes = 0;
            return;
        }
        if (bytesFraction == 0 || knownThrough == version - 1) {
            return;
        }
        long tail = 0;
        long anchor = 0;
        for (long v = version - 1; v >= 1 && tail <= bytesFraction * modelBytes; v--) {
            Manifest m;
            try {
                m = board.readManifest(v);
            } catch (NoSuchFileException | ProtocolException e) {
                // gc only removes versions below an anchor; a hole above one leaves nothing to replay through
                LOG.warn("anchor policy: version {} is unreadable ({}); counting the tail from version {}", v,
                        e.getMessage(), v + 1);
                break;
            }
            VersionStep step = VersionStep.of(m, board.versionDirectory(v));
            if (m.isAnchor()) {
                anchor = step.fullBytes();
                break;
            }
            tail += step.transitionBytes();
        }
        knownThrough = version - 1;
        tailBytes = tail;
        anchorBytes = anchor;
        LOG.info("anchor policy: {} transition bytes published since the newest anchor ({} bytes) before version {}",
                tail, anchor, version);
    }

    /**
     * Whether {@code version}, whose transition takes {@code transitionBytes}, also carries a full checkpoint.
     *
     * @param modelBytes stands in for an anchor's size while the board has none
     */
    boolean wantsAnchor(long version, long transitionBytes, long modelBytes) {
        if (interval > 0 && version % interval == 0) {
            return true;
        }
        if (bytesFraction == 0) {
            return false;
        }
        long anchorSize = anchorBytes > 0 ? anchorBytes : modelBytes;
        return tailBytes + transitionBytes > bytesFraction * anchorSize;
    }

    /** Records {@code version} as published: an anchor starts a new tail, anything else extends it. */
    void published(long version, boolean anchor, long transitionBytes, long fullBytes) {
        if (anchor) {
            tailBytes = 0;
            anchorBytes = fullBytes;
        } else {
            tailBytes += transitionBytes;
        }
        knownThrough = version;
    }

    /** Transition bytes published since the newest anchor, as far as the publisher knows. */
    long tailBytes() {
        return tailBytes;
    }
}
