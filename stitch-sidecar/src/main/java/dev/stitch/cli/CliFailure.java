package dev.stitch.cli;

/** A command failed for a reason the user can act on; printed as one line, with this exit code. */
public class CliFailure extends RuntimeException {
    private final int exitCode;

    public CliFailure(String message) {
        this(message, 1);
    }

    public CliFailure(String message, int exitCode) {
        super(message);
        this.exitCode = exitCode;
    }

    public int exitCode() {
        return exitCode;
    }
}
