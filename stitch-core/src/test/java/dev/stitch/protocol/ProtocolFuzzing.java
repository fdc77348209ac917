package dev.stitch.protocol;

/** What every protocol fuzz target shares: the re-read of a document this code itself wrote. */
final class ProtocolFuzzing {

    /** A read that may throw the parser's typed exception. */
    @FunctionalInterface
    interface Read<T> {
        T read() throws ProtocolException;
    }

    private ProtocolFuzzing() {
    }

    /** Re-reads canonical output; a {@link ProtocolException} here is a finding, so it becomes an AssertionError. */
    static <T> T reparse(Read<T> read) {
        try {
            return read.read();
        } catch (ProtocolException e) {
            throw new AssertionError("the canonical form of a parsed document does not parse: " + e.getMessage(), e);
        }
    }
}
