package dev.stitch.sidecar.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** The body of {@code /rpc_sync_from_bulletin_board} is exactly one JSON object, or empty. */
class ControlBodyTest {

    private static OptionalLong parse(String body) {
        return ControlEndpoints.parseTargetVersion(body.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void trailingTokensAndNonObjectsAreRefused() {
        for (String body : new String[] {"{\"a\":1}garbage", "{\"target_version\":3} {}", "{\"target_version\":3}]",
                "[1]", "3", "{", "\"x\""}) {
            assertThrows(IllegalArgumentException.class, () -> parse(body), body);
        }
    }

    @Test
    void wellFormedBodiesStillParse() {
        assertEquals(OptionalLong.of(3), parse("{\"target_version\":3}"));
        assertEquals(OptionalLong.of(4), parse(" {\"target_version\":\"4\"} \n"));
        assertEquals(OptionalLong.empty(), parse("{\"a\":1}"));
        assertEquals(OptionalLong.empty(), parse("   "));
    }
}
