package dev.stitch.apply;

/**
 * A version the host applier refused; the local weight files are byte-for-byte as before the attempt.
 */
public final class RefusedVersionException extends Exception {

    /** Why a version was refused. */
    public enum Reason {
        /** A file size or digest, an inner checksum or a tensor digest did not match. */
        CHECKSUM,
        /** A file or its metadata is malformed, truncated or does not fit the local checkpoint. */
        MALFORMED,
        /** The local state is not the version's base. */
        WRONG_BASE,
        /** The local checkpoint must be rebuilt first (interrupted apply, reboot, other run). */
        DIRTY,
        /** The backend or a codec is not supported. */
        UNSUPPORTED
    }

    private final long version;
    private final Reason reason;

    public RefusedVersionException(long version, Reason reason, String message, Throwable cause) {
        super("version " + version + " refused (" + reason.name().toLowerCase(java.util.Locale.ROOT) + "): " + message, cause);
        this.version = version;
        this.reason = reason;
    }

    public RefusedVersionException(long version, Reason reason, String message) {
        this(version, reason, message, null);
    }

    public long version() {
        return version;
    }

    public Reason reason() {
        return reason;
    }
}
