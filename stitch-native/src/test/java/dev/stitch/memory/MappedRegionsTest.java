package dev.stitch.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MappedRegionsTest {

    @TempDir
    Path tmp;

    @Test
    void populatingAMappedFileChangesNoByte() throws Exception {
        byte[] content = new byte[3 * 4096 + 123];
        new SplittableRandom(1).nextBytes(content);
        Path f = Files.write(tmp.resolve("w.bin"), content);
        try (Arena arena = Arena.ofConfined(); FileChannel ch = FileChannel.open(f, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment mapped = ch.map(FileChannel.MapMode.READ_WRITE, 0, content.length, arena);
            // an unaligned slice: the call rounds the start down to its page
            boolean done = MappedRegions.populateWritable(mapped.asSlice(100, content.length - 200));
            if (linuxAtLeast(5, 14)) {
                assertTrue(done, "Linux >= 5.14 supports MADV_POPULATE_WRITE");
            }
            assertArrayEquals(content, mapped.toArray(ValueLayout.JAVA_BYTE));
        }
        assertArrayEquals(content, Files.readAllBytes(f));
    }

    private static boolean linuxAtLeast(int major, int minor) {
        if (!System.getProperty("os.name").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
            return false;
        }
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^(\\d+)\\.(\\d+)").matcher(System.getProperty("os.version"));
        return m.find() && (Integer.parseInt(m.group(1)) > major
            || Integer.parseInt(m.group(1)) == major && Integer.parseInt(m.group(2)) >= minor);
    }

    @Test
    void heapReadOnlyAndEmptyRegionsAreLeftAlone() {
        assertFalse(MappedRegions.populateWritable(MemorySegment.ofArray(new byte[8192])));
        assertFalse(MappedRegions.populateWritable(MemorySegment.ofArray(new byte[8192]).asReadOnly()));
        try (Arena arena = Arena.ofConfined()) {
            assertFalse(MappedRegions.populateWritable(arena.allocate(0)));
        }
    }
}
