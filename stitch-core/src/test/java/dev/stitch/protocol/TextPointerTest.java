package dev.stitch.protocol;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import org.junit.jupiter.api.Test;

class TextPointerTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** docs/conformance.md case 18. */
    @Test
    void grammar() throws ProtocolException {
        assertEquals(new TextPointer("run-a", 2), TextPointer.parse("run-a/weight_v000002"));
        assertEquals(new TextPointer("a/b", 3), TextPointer.parse("a/b/weight_v000003"));
        assertEquals(new TextPointer(null, 7), TextPointer.parse("weight_v000007"));
        assertEquals(new TextPointer(null, 5), TextPointer.parse("000005"));
        assertEquals(TextPointer.EMPTY, TextPointer.parse(""));
        assertEquals(TextPointer.EMPTY, TextPointer.parse(" \n"));
        ProtocolException e = assertThrows(ProtocolException.class, () -> TextPointer.parse("garbage"));
        assertEquals("unparseable snapshot pointer: 'garbage'", e.getMessage());
        assertEquals("run-a/weight_v000002", TextPointer.format("run-a", 2));
    }

    /**
     * Every case of pointers.txt. We follow HEAD (docs/protocol/board.md §3): unparseable non-empty text is an error; the one
     * place we differ from HEAD is the empty file, which both the spec and v1 read as (null, 0).
     */
    @Test
    void pointersFixture() throws IOException {
        int n = 0;
        for (String line : Files.readAllLines(Fixtures.path("pointers.txt"))) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            String[] cols = line.split("\t");
            assertEquals(4, cols.length, line);
            String op = JSON.readTree(cols[0]).asText();
            JsonNode input = JSON.readTree(cols[1]);
            JsonNode v1 = JSON.readTree(cols[2]);
            JsonNode head = JSON.readTree(cols[3]);
            if (op.equals("format")) {
                String run = input.get(0).isNull() ? null : input.get(0).asText();
                String text = TextPointer.format(run, input.get(1).asLong());
                assertEquals(v1.asText(), text, line);
                assertEquals(head.asText(), text, line);
            } else {
                String text = input.asText();
                if (head.isObject()) {
                    if (text.isBlank()) {
                        assertEquals(TextPointer.EMPTY, TextPointer.parse(text), line);
                    } else {
                        ProtocolException e = assertThrows(ProtocolException.class, () -> TextPointer.parse(text), line);
                        assertEquals(head.get("message").asText(), e.getMessage(), line);
                    }
                } else {
                    TextPointer p = TextPointer.parse(text);
                    String run = head.get(0).isNull() ? null : head.get(0).asText();
                    assertEquals(new TextPointer(run, head.get(1).asLong()), p, line);
                    assertEquals(v1, head, "v1 and HEAD agree where HEAD parses: " + line);
                }
            }
            n++;
        }
        assertTrue(n >= 20, "cases: " + n);
    }
}
