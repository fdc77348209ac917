package dev.stitch.apply;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.Collections;
import java.util.NavigableMap;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * What the board says about the versions below a target: the steps read walking down from it, by the
 * version asked for, and the version whose manifest was missing where the walk stopped, if it did.
 *
 * @param target   the version the walk started from
 * @param versions the steps read, keyed by the version requested (a manifest may claim another)
 * @param missing  the version without a manifest that ended the walk, or empty
 */
public record BoardTail(long target, NavigableMap<Long, VersionStep> versions, OptionalLong missing) {

    public BoardTail {
        versions = Collections.unmodifiableNavigableMap(new TreeMap<>(versions));
    }

    /** Reads one version's step from the board. */
    @FunctionalInterface
    public interface StepReader {
        /**
         * The step of {@code version}.
         *
         * @throws NoSuchFileException when the version has no manifest (never published, or garbage-collected)
         */
        VersionStep read(long version) throws IOException;
    }

    /**
     * Walks down from {@code target} towards {@code copy}'s version (or version 1 when the copy cannot be
     * replayed onto), stopping at a missing manifest or where {@code planner} needs nothing below.
     */
    public static BoardTail read(ChainPlanner planner, ChainPlanner.Copy copy, String runId, long target,
                                 StepReader reader) throws IOException {
        long floor = planner.replayBlocker(copy, runId, target) == null ? copy.version() : 0;
        NavigableMap<Long, VersionStep> read = new TreeMap<>();
        for (long v = target; v > floor; v--) {
            VersionStep s;
            try {
                s = reader.read(v);
            } catch (NoSuchFileException e) {
                return new BoardTail(target, read, OptionalLong.of(v));
            }
            read.put(v, s);
            if (!planner.needsVersionsBelow(s, copy, runId, target)) {
                break;
            }
        }
        return new BoardTail(target, read, OptionalLong.empty());
    }
}
