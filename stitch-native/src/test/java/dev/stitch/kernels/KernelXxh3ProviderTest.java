package dev.stitch.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.stitch.hash.Xxh3;
import dev.stitch.hash.Xxh3Stream;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class KernelXxh3ProviderTest {

    /** With stitch-native on the class path, core's streaming hasher is the selected kernels' one. */
    @Test
    void coreStreamsComeFromTheSelectedKernels() {
        Xxh3Stream s = Xxh3.newStream();
        if (Kernels.get().implementation().equals("native")) {
            assertFalse(s instanceof Xxh3.Hasher, "the native stream is served, not the Java fallback");
        }
        byte[] data = new byte[100_003];
        new SplittableRandom(5).nextBytes(data);
        s.update(MemorySegment.ofArray(data).asSlice(0, 777)).update(MemorySegment.ofArray(data).asSlice(777));
        assertEquals(Xxh3.hash128(data), s.digest());
        assertEquals(Xxh3.hash128(data), Xxh3.newHasher().update(data).digest());
        assertEquals(Xxh3.hash128(new byte[0]), s.reset().digest());
    }
}
