package dev.stitch.protocol;

import java.util.OptionalLong;

/**
 * The plain-text {@code latest} pointer of the foreign layouts (docs/protocol/board.md §3):
 * {@code <run_id>/weight_vNNNNNN}, {@code weight_vNNNNNN}, or legacy bare digits.
 *
 * @param runId   everything before the last {@code /}, or null
 * @param version the version
 */
public record TextPointer(String runId, long version) {

    /** What a missing or empty pointer file means. */
    public static final TextPointer EMPTY = new TextPointer(null, 0);

    /** Parses pointer text (ASCII whitespace trimmed); unparseable text is an error, never version 0. */
    public static TextPointer parse(String text) throws ProtocolException {
        String t = trimAscii(text);
        if (t.isEmpty()) {
            return EMPTY;
        }
        int slash = t.lastIndexOf('/');
        String run = slash < 0 ? null : t.substring(0, slash);
        String tail = slash < 0 ? t : t.substring(slash + 1);
        OptionalLong v = WeightIdentity.parse(tail);
        if (v.isEmpty()) {
            v = WeightIdentity.parseDigits(tail, 0, tail.length());
        }
        if (v.isEmpty()) {
            throw new ProtocolException("unparseable snapshot pointer: '" + text + "'");
        }
        return new TextPointer(run == null || run.isEmpty() ? null : run, v.getAsLong());
    }

    /** {@code <run>/weight_v%06d}, or the bare identity when the run is null or empty; no trailing newline. */
    public static String format(String runId, long version) {
        String id = WeightIdentity.format(version);
        return runId == null || runId.isEmpty() ? id : runId + "/" + id;
    }

    /** This pointer's text. */
    public String text() {
        return format(runId, version);
    }

    private static String trimAscii(String s) {
        int from = 0;
        int to = s.length();
        while (from < to && s.charAt(from) <= ' ') {
            from++;
        }
        while (to > from && s.charAt(to - 1) <= ' ') {
            to--;
        }
        return s.substring(from, to);
    }
}
