package dev.stitch.apply;

import dev.stitch.protocol.ProtocolException;
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
 * @param missing  the version without a usable manifest that ended the walk, or empty
 * @param refusal  why that version's manifest was refused (corrupt, or a link: docs/protocol/board.md §1.6),
 *                 or null when it is simply absent
 */
public record BoardTail(long target, NavigableMap<Long, VersionStep> versions, OptionalLong missing, String refusal) {

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
         * @throws ProtocolException   when the manifest is refused (corrupt, or reached through a link)
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
                return new BoardTail(target, read, OptionalLong.of(v), null);
            } catch (ProtocolException e) {
                // A refused version ends the walk like a missing one, so an anchor above it can still be used.
                return new BoardTail(target, read, OptionalLong.of(v), e.getMessage());
            }
            read.put(v, s);
            if (!planner.needsVersionsBelow(s, copy, runId, target)) {
                break;
            }
        }
        return new BoardTail(target, read, OptionalLong.empty(), null);
    }
}
