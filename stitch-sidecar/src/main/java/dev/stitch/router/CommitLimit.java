package dev.stitch.router;

/**
 * The {@code --max-committing} value: a count of replicas ({@code 2}) or a share of the fleet ({@code 25%}),
 * rounded up and never below one, so a rolling update always makes progress (docs/protocol/router.md §4).
 */
public record CommitLimit(int count, int percent) {

    public CommitLimit {
        if ((count > 0) == (percent > 0)) {
            throw new IllegalArgumentException("exactly one of count and percent must be positive");
        }
        if (percent > 100) {
            throw new IllegalArgumentException("percent must be at most 100, got " + percent);
        }
    }

    /** Parses {@code N} or {@code P%}. */
    public static CommitLimit parse(String text) {
        String t = text.strip();
        try {
            if (t.endsWith("%")) {
                return new CommitLimit(0, Integer.parseInt(t.substring(0, t.length() - 1).strip()));
            }
            return new CommitLimit(Integer.parseInt(t), 0);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--max-committing must be a positive count N or a share P% (1..100), got '"
                    + text + "'", e);
        }
    }

    /** How many replicas of a fleet of {@code fleetSize} may commit at once. */
    public int replicas(int fleetSize) {
        if (count > 0) {
            return count;
        }
        return Math.max(1, (int) ((fleetSize * (long) percent + 99) / 100));
    }

    @Override
    public String toString() {
        return count > 0 ? Integer.toString(count) : percent + "%";
    }
}
