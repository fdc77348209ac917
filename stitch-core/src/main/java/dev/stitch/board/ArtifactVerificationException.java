package dev.stitch.board;

import java.io.IOException;

/** An artifact failed verification (missing, wrong size, wrong or malformed digest); its bytes must not be used. */
public final class ArtifactVerificationException extends IOException {
    private final String file;
    private final String problem;

    /**
     * @param file    the bad file, relative to the board root
     * @param problem what is wrong with it
     */
    public ArtifactVerificationException(String file, String problem) {
        super(file + ": " + problem);
        this.file = file;
        this.problem = problem;
    }

    /** The bad file, relative to the board root. */
    public String file() {
        return file;
    }

    /** What is wrong with it. */
    public String problem() {
        return problem;
    }
}
