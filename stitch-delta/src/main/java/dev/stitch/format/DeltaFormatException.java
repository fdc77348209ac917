package dev.stitch.format;

/**
 * A delta or checkpoint file that cannot be used: malformed, truncated, failing a checksum or digest,
 * or built on another base. Whoever gets it has not written a byte of the target.
 */
public class DeltaFormatException extends RuntimeException {

    public DeltaFormatException(String message) {
        super(message);
    }

    public DeltaFormatException(String message, Throwable cause) {
        super(message, cause);
    }
}
