package dev.stitch.board;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The compare-and-advance rule of the pointer (docs/protocol/board.md §2.2), and upstream's looser rule
 * for the text pointers of foreign layouts (section 3). Pure functions: a refused move throws and
 * changes nothing.
 */
public final class PointerMoves {
    private static final Pattern RUN_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

    private PointerMoves() {
    }

    /** What an accepted move does. */
    public enum Outcome {
        /** The pointer becomes {@code (run_p, 0)}: a new run starts (replicas reset to base). */
        RESET,
        /** An idempotent re-claim: nothing changes. */
        UNCHANGED,
        /** The pointer advances to {@code (run_p, v_p)}. */
        ADVANCE,
        /** A new run's version 1: claim {@code run_p} first, then advance to 1. */
        CLAIM_THEN_ADVANCE
    }

    /** Checks a run id we are about to write; null means a run-less board. */
    public static void checkWritableRunId(String runId) {
        if (runId == null) {
            return;
        }
        if (runId.isEmpty()) {
            throw new IllegalArgumentException("the run id is empty");
        }
        if (!RUN_ID.matcher(runId).matches()) {
            throw new IllegalArgumentException("run id '" + runId
                    + "' is not of the form [A-Za-z0-9][A-Za-z0-9._-]{0,127} (no '/', at most 128 characters)");
        }
    }

    /** {@code claim(run_p)} against the current pointer {@code (run_c, v_c)}. */
    public static Outcome claim(String runC, long vC, String runP) throws PointerRewindException {
        if (!Objects.equals(runC, runP)) {
            return Outcome.RESET;
        }
        if (vC == 0) {
            return Outcome.UNCHANGED;
        }
        throw new PointerRewindException("latest is at version " + vC + " " + describeRun(runC)
                + "; refusing to rewind to 0 by re-claiming the run");
    }

    /** {@code publish(run_p, v_p)} against the current pointer {@code (run_c, v_c)}. */
    public static Outcome publish(String runC, long vC, String runP, long vP) throws PointerMoveException {
        if (vP < 1) {
            throw new IllegalArgumentException("published versions start at 1, got " + vP);
        }
        if (!Objects.equals(runC, runP)) {
            if (vP == 1) {
                return Outcome.CLAIM_THEN_ADVANCE;
            }
            throw new PointerConflictException("latest is at version " + vC + " " + describeRun(runC) 
                    + "; a different run " + describeRun(runP) + " can only start at version 1, refusing version " + vP);
        }
        if (vP <= vC) {
            throw new PointerRewindException("latest is at version " + vC + " " + describeRun(runC)
                    + "; refusing to rewind to " + vP);
        }
        if (vP > vC + 1) {
            throw new PointerSkipException("latest is at version " + vC + " " + describeRun(runC)
                    + "; refusing to skip to " + vP + " (the next version is " + (vC + 1) + ")");
        }
        return Outcome.ADVANCE;
    }

    /**
     * Upstream's rule for foreign-layout text pointers: a different run is a reset at any version;
     * within a run the version must increase (gaps allowed).
     */
    public static Outcome foreign(String runC, long vC, String runP, long vP) throws PointerRewindException {
        if (!Objects.equals(runC, runP)) {
            return Outcome.RESET;
        }
        if (vP <= vC) {
            throw new PointerRewindException("latest is at version " + vC + " " + describeRun(runC)
                    + "; refusing to rewind to " + vP);
        }
        return Outcome.ADVANCE;
    }

    /** {@code (run 'x')} or {@code (no run)}. */
    static String describeRun(String run) {
        return run == null ? "(no run)" : "(run '" + run + "')";
    }
}
