package dev.stitch.board;

/**
 * What {@link BulletinBoard#verifyArtifacts} checked.
 *
 * @param artifactsVerified artifacts whose size and digest were both checked
 * @param bytesVerified     their summed size
 * @param unverified        artifacts accepted without a size or checksum (upstream boards)
 */
public record VerificationReport(int artifactsVerified, long bytesVerified, int unverified) {

    /** Nothing checked. */
    public static final VerificationReport EMPTY = new VerificationReport(0, 0, 0);

    /** The sum of two reports. */
    public VerificationReport plus(VerificationReport o) {
        return new VerificationReport(artifactsVerified + o.artifactsVerified, bytesVerified + o.bytesVerified,
                unverified + o.unverified);
    }
}
