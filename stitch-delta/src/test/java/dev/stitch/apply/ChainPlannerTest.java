package dev.stitch.apply;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.protocol.Artifact;
import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class ChainPlannerTest {

    private static final String RUN = "run-a";

    private final ChainPlanner planner = new ChainPlanner(8);
    /** The board: version to step; absent = no manifest. */
    private final Map<Long, VersionStep> board = new TreeMap<>();
    private final List<Long> reads = new ArrayList<>();

    /** Publishes versions {@code from..to} as deltas of {@code bytes} each; {@code anchors} also ship a full checkpoint. */
    private void publish(long from, long to, long bytes, long... anchors) {
        for (long v = from; v <= to; v++) {
            boolean anchor = false;
            for (long a : anchors) {
                anchor |= a == v;
            }
            board.put(v, step(v, v - 1, RUN, "stitch_delta", bytes, anchor ? 1_000 : 0));
        }
    }

    private static VersionStep step(long v, long base, String run, String backend, long transitionBytes,
                                    long fullBytes) {
        Map<String, Artifact> arts = new LinkedHashMap<>();
        arts.put("delta-00000.stdelta", new Artifact("transition", "delta-00000.stdelta", transitionBytes, null, null));
        if (fullBytes > 0) {
            arts.put("full/model.safetensors", new Artifact("full", "full/model.safetensors", fullBytes, null, null));
        }
        return new VersionStep(v, base, run, backend, "delta", Path.of("/board/v" + v),
                List.of("delta-00000.stdelta"), List.of("w"), arts, "full".equals(backend));
    }

    private ChainPlan plan(ChainPlanner.Copy copy, long target) throws IOException {
        BoardTail tail = BoardTail.read(planner, copy, RUN, target, v -> {
            reads.add(v);
            VersionStep s = board.get(v);
            if (s == null) {
                throw new NoSuchFileException("/board/v" + v + "/manifest.json");
            }
            return s;
        });
        return planner.plan(copy, RUN, tail);
    }

    private static List<Long> versions(List<VersionStep> steps) {
        return steps.stream().map(VersionStep::version).toList();
    }

    @Test
    void upToDateReadsNothing() throws IOException {
        publish(1, 5, 10);
        ChainPlan p = plan(ChainPlanner.Copy.clean(RUN, 5), 5);
        assertEquals(new ChainPlan.UpToDate(5), p);
        assertEquals(List.of(), reads);
    }

    @Test
    void plainTailReplaysEveryVersionAboveTheCopy() throws IOException {
        publish(1, 12, 10);
        ChainPlan.Chain c = assertInstanceOf(ChainPlan.Chain.class, plan(ChainPlanner.Copy.clean(RUN, 2), 12));
        assertEquals(2, c.from());
        assertEquals(12, c.target());
        assertTrue(c.anchor().isEmpty());
        assertEquals(List.of(3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L, 11L, 12L), versions(c.deltas()));
        assertNull(c.reason());
        assertTrue(c.fallback().isEmpty(), "no anchor to fall back on");
        assertEquals(List.of(12L, 11L, 10L, 9L, 8L, 7L, 6L, 5L, 4L, 3L), reads, "nothing at or below the copy is read");
    }

    @Test
    void gapBeyondTheReplayLimitLoadsTheAnchorWithoutReadingBelowIt() throws IOException {
        publish(1, 23, 10, 20);
        ChainPlan.Chain c = assertInstanceOf(ChainPlan.Chain.class, plan(ChainPlanner.Copy.clean(RUN, 3), 23));
        assertEquals(20, c.anchor().orElseThrow().version());
        assertEquals(List.of(21L, 22L, 23L), versions(c.deltas()));
        assertEquals("more than 8 versions to replay", c.reason());
        assertEquals(3, c.from());
        assertEquals(List.of(23L, 22L, 21L, 20L), reads);
        List<VersionStep> steps = c.steps();
        assertTrue(steps.get(0).loadAnchor(), "the anchor is loaded as a full checkpoint");
        assertEquals(List.of(20L, 21L, 22L, 23L), versions(steps));
    }

    @Test
    void anchorNewerThanTheCopyIsOnlyAFallbackWhileReplayIsCheaper() throws IOException {
        publish(1, 23, 10, 10, 20);
        ChainPlan.Chain c = assertInstanceOf(ChainPlan.Chain.class, plan(ChainPlanner.Copy.clean(RUN, 19), 23));
        assertTrue(c.anchor().isEmpty());
        assertEquals(List.of(20L, 21L, 22L, 23L), versions(c.deltas()));
        ChainPlan.Chain fallback = c.fallback().orElseThrow();
        assertEquals(20, fallback.anchor().orElseThrow().version());
        assertEquals(List.of(21L, 22L, 23L), versions(fallback.deltas()));
        assertEquals(19, fallback.from());

        // the same distance with deltas larger than the anchor
        board.clear();
        publish(1, 23, 600, 20);
        c = assertInstanceOf(ChainPlan.Chain.class, plan(ChainPlanner.Copy.clean(RUN, 18), 23));
        assertEquals(20, c.anchor().orElseThrow().version());
        assertEquals("replay is larger than the anchor", c.reason());
    }

    @Test
    void missingDeltaBelowAnAnchorLoadsTheAnchor() throws IOException {
        publish(1, 23, 10, 20);
        board.remove(18L);
        ChainPlan.Chain c = assertInstanceOf(ChainPlan.Chain.class, plan(ChainPlanner.Copy.clean(RUN, 16), 23));
        assertEquals(20, c.anchor().orElseThrow().version());
        assertEquals(List.of(21L, 22L, 23L), versions(c.deltas()));
        assertEquals("version 18 has no manifest (missing or garbage-collected)", c.reason());
        assertTrue(c.fallback().isEmpty());
        assertEquals(List.of(23L, 22L, 21L, 20L, 19L, 18L), reads, "the walk stops at the missing manifest");
    }

    @Test
    void missingDeltaWithoutAnAnchorIsRefused() throws IOException {
        publish(1, 6, 10);
        board.remove(4L);
        ChainPlan.Refusal r = assertInstanceOf(ChainPlan.Refusal.class, plan(ChainPlanner.Copy.clean(RUN, 2), 6));
        assertEquals(ChainPlan.Refusal.Kind.MISSING_VERSION, r.kind());
        assertEquals("version 4 has no manifest (missing or garbage-collected) and no anchor above it in 3..6",
                r.message());
    }

    @Test
    void dirtyCopyWithoutAnyAnchorIsRefusedClearly() throws IOException {
        publish(1, 6, 10);
        ChainPlan.Refusal r = assertInstanceOf(ChainPlan.Refusal.class,
                plan(new ChainPlanner.Copy(RUN, 4, "an apply of version 5 was interrupted"), 6));
        assertEquals(ChainPlan.Refusal.Kind.NO_ANCHOR, r.kind());
        assertEquals("the copy cannot be replayed onto (an apply of version 5 was interrupted) and the board has no"
                + " anchor at or below 6", r.message());
        assertEquals(List.of(6L, 5L, 4L, 3L, 2L, 1L), reads, "every version is looked at for an anchor");
    }

    @Test
    void dirtyCopyLoadsTheNewestAnchorEvenWhenReplayWouldBeShort() throws IOException {
        publish(1, 6, 10, 2, 5);
        ChainPlan.Chain c = assertInstanceOf(ChainPlan.Chain.class,
                plan(new ChainPlanner.Copy(RUN, 4, "the host rebooted"), 6));
        assertEquals(5, c.anchor().orElseThrow().version());
        assertEquals(List.of(6L), versions(c.deltas()));
        assertEquals("the host rebooted", c.reason());
        assertEquals(List.of(6L, 5L), reads);
    }

    @Test
    void copyOfAnotherRunCannotBeReplayedOnto() throws IOException {
        publish(1, 6, 10, 3);
        ChainPlanner.Copy other = ChainPlanner.Copy.clean("run-old", 4);
        assertEquals("it holds run run-old, the board is at run run-a", planner.replayBlocker(other, RUN, 6));
        ChainPlan.Chain c = assertInstanceOf(ChainPlan.Chain.class, plan(other, 6));
        assertEquals(3, c.anchor().orElseThrow().version());
        assertEquals(List.of(4L, 5L, 6L), versions(c.deltas()));
        // the base is the same in every run: a copy at version 0 replays whatever its recorded run
        reads.clear();
        ChainPlan.Chain fromBase = assertInstanceOf(ChainPlan.Chain.class,
                plan(ChainPlanner.Copy.clean("run-old", 0), 2));
        assertEquals(List.of(1L, 2L), versions(fromBase.deltas()));
    }

    @Test
    void versionOfAnotherRunInTheTailIsRefusedUnlessAnAnchorSkipsIt() throws IOException {
        publish(1, 4, 10);
        board.put(3L, step(3, 2, "run-b", "stitch_delta", 10, 0));
        ChainPlan.Refusal r = assertInstanceOf(ChainPlan.Refusal.class, plan(ChainPlanner.Copy.clean(RUN, 1), 4));
        assertEquals(ChainPlan.Refusal.Kind.BROKEN_CHAIN, r.kind());
        assertEquals("version 3 belongs to run run-b, the board pointer to run run-a", r.message());

        board.put(4L, step(4, 3, RUN, "stitch_delta", 10, 1_000));
        ChainPlan.Chain c = assertInstanceOf(ChainPlan.Chain.class, plan(ChainPlanner.Copy.clean(RUN, 1), 4));
        assertEquals(4, c.anchor().orElseThrow().version());
        assertEquals("version 3 belongs to run run-b, the board pointer to run run-a", c.reason());
    }

    @Test
    void brokenChainIsRefused() throws IOException {
        publish(1, 3, 10);
        board.put(2L, step(2, 0, RUN, "stitch_delta", 10, 0));
        ChainPlan.Refusal r = assertInstanceOf(ChainPlan.Refusal.class, plan(ChainPlanner.Copy.clean(RUN, 0), 3));
        assertEquals("version 2 has base_version 0, expected 1 (the chain is not contiguous)", r.message());

        board.put(3L, step(7, 2, RUN, "stitch_delta", 10, 0));
        r = assertInstanceOf(ChainPlan.Refusal.class, plan(ChainPlanner.Copy.clean(RUN, 0), 3));
        assertEquals("manifest of version 3 says version 7", r.message());
    }

    @Test
    void stepsWithoutARunJoinThePointersRun() throws IOException {
        board.put(1L, step(1, 0, null, "stitch_delta", 10, 0));
        ChainPlan.Chain c = assertInstanceOf(ChainPlan.Chain.class, plan(ChainPlanner.Copy.clean(null, 0), 1));
        assertEquals(RUN, c.deltas().get(0).runId());
    }

    @Test
    void fullOnlyVersionInTheReplayPrefersTheAnchor() throws IOException {
        publish(1, 6, 10, 5);
        board.put(3L, step(3, 2, RUN, "full", 10, 500));
        ChainPlan.Chain c = assertInstanceOf(ChainPlan.Chain.class, plan(ChainPlanner.Copy.clean(RUN, 1), 6));
        assertEquals(5, c.anchor().orElseThrow().version());
        assertEquals("version 3 ships only a full checkpoint", c.reason());
    }
}
