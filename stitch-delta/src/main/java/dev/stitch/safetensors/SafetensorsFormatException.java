package dev.stitch.safetensors;

/** A safetensors container that breaks the format rules (docs/formats/common.md §0.2); nothing was read from it. */
public final class SafetensorsFormatException extends IllegalArgumentException {

    public SafetensorsFormatException(String message) {
        super(message);
    }

    public SafetensorsFormatException(String message, Throwable cause) {
        super(message, cause);
    }
}
