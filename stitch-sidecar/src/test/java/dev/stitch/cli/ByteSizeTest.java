package dev.stitch.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ByteSizeTest {

    @Test
    void parsesSuffixesAsBinaryUnits() {
        assertEquals(65536, ByteSize.parse("65536"));
        assertEquals(512L << 10, ByteSize.parse("512k"));
        assertEquals(256L << 20, ByteSize.parse("256M"));
        assertEquals(1L << 30, ByteSize.parse(" 1g "));
        assertEquals(64L << 20, ByteSize.parse("64mb"));
    }

    @Test
    void refusesWhatIsNotAPositiveSize() {
        for (String bad : new String[] {"", "0", "-1", "abc", "1.5g", "g", "99999999999g"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ByteSize.parse(bad), bad);
            assertTrue(e.getMessage().contains("'" + bad + "'"), e.getMessage());
        }
        CliFailure f = assertThrows(CliFailure.class, () -> ByteSize.parse("--size", "lots"));
        assertTrue(f.getMessage().startsWith("--size: "), f.getMessage());
    }

    @Test
    void exactFormReadsBack() {
        for (long v : new long[] {1, 1000, 1L << 10, 3L << 20, 1L << 30, 5L << 30, (1L << 20) + 1}) {
            assertEquals(v, ByteSize.parse(ByteSize.exact(v)));
        }
        assertEquals("1g", ByteSize.exact(1L << 30));
        assertEquals("235.5 MiB", ByteSize.human((long) (235.5 * (1 << 20))));
    }
}
