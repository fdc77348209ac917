package dev.stitch.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

class WeightIdentityTest {
    /** docs/conformance.md case 7. */
    @Test
    void formatAndParse() {
        assertEquals("weight_v000007", WeightIdentity.format(7));
        assertEquals("weight_v000000", WeightIdentity.format(0));
        assertEquals("weight_v999999", WeightIdentity.format(999999));
        assertEquals("weight_v1234567", WeightIdentity.format(1234567));
        assertEquals(OptionalLong.of(7), WeightIdentity.parse("weight_v000007"));
        assertEquals(OptionalLong.of(7), WeightIdentity.parse("weight_v7"));
        assertEquals(OptionalLong.of(1234567), WeightIdentity.parse("weight_v1234567"));
        for (String not : List.of("base", "weight_vxyz", "weight_v", "weight_v-1", "weight_v 1", "Weight_v1", "weight_v1.",
                "weight_v99999999999999999999", ".weight_v000001.abc.staging")) {
            assertTrue(WeightIdentity.parse(not).isEmpty(), not);
        }
        assertTrue(WeightIdentity.parse(null).isEmpty());
        assertThrows(IllegalArgumentException.class, () -> WeightIdentity.format(-1));
    }
}
