package dev.stitch.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.nio.charset.StandardCharsets;

/**
 * Fuzzes {@link TextPointer#parse}, the plain-text {@code latest} of the foreign layouts
 * (docs/protocol/board.md §3): only {@link ProtocolException} escapes, and a parsed pointer's text reads
 * back as the same pointer.
 */
class TextPointerFuzzTest {

    @FuzzTest
    void textPointer(byte[] input) {
        TextPointer parsed;
        try {
            // The board decodes the pointer file as UTF-8 the same way (ForeignBoard.latest).
            parsed = TextPointer.parse(new String(input, StandardCharsets.UTF_8));
        } catch (ProtocolException expected) {
            return;
        }
        TextPointer reparsed = ProtocolFuzzing.reparse(() -> TextPointer.parse(parsed.text()));
        assertEquals(parsed, reparsed, "parse(text(parse(x))) differs from parse(x)");
    }
}
