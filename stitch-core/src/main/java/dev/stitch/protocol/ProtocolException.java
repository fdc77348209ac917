package dev.stitch.protocol;

import java.io.IOException;

/** A protocol document (pointer, manifest, index) could not be read: malformed, unsupported or inconsistent. */
public class ProtocolException extends IOException {
    public ProtocolException(String message) {
        super(message);
    }

    public ProtocolException(String message, Throwable cause) {
        super(message, cause);
    }
}
