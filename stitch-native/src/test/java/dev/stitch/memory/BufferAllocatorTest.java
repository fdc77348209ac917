package dev.stitch.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.NoSuchElementException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(AllocatorLeakCheck.class)
class BufferAllocatorTest {

    @Test
    void buffersArePageAlignedZeroedAndAccountedByPurpose(BufferAllocator allocator) {
        try (OffHeapBuffer a = allocator.allocate(10_000, MemoryPurpose.SNAPSHOT);
             OffHeapBuffer b = allocator.allocate(3, MemoryPurpose.SCRATCH)) {
            assertEquals(0, a.segment().address() % 4096);
            assertEquals(10_000, a.segment().byteSize());
            for (long i = 0; i < a.segment().byteSize(); i++) {
                assertEquals(0, a.segment().get(ValueLayout.JAVA_BYTE, i));
            }
            a.segment().set(ValueLayout.JAVA_LONG, 8, 42L);
            assertEquals(42L, a.segment().get(ValueLayout.JAVA_LONG, 8));
            assertEquals(10_000, allocator.allocated(MemoryPurpose.SNAPSHOT));
            assertEquals(3, allocator.allocated(MemoryPurpose.SCRATCH));
            assertEquals(0, allocator.allocated(MemoryPurpose.STAGING));
            assertEquals(10_003, allocator.allocated());
            assertEquals(MemoryPurpose.SNAPSHOT, a.purpose());
        }
        assertEquals(0, allocator.allocated());
        assertEquals(10_003, allocator.peak());
    }

    @Test
    void closedBufferCannotBeUsedAndClosingTwiceIsHarmless(BufferAllocator allocator) {
        OffHeapBuffer a = allocator.allocate(64, MemoryPurpose.STAGING);
        MemorySegment seg = a.segment();
        a.close();
        a.close();
        assertThrows(IllegalStateException.class, () -> seg.get(ValueLayout.JAVA_BYTE, 0));
        assertEquals(0, allocator.allocated(MemoryPurpose.STAGING));
        try (OffHeapBuffer empty = allocator.allocate(0, MemoryPurpose.SCRATCH)) {
            assertEquals(0, empty.segment().byteSize());
        }
        assertThrows(IllegalArgumentException.class, () -> allocator.allocate(-1, MemoryPurpose.SCRATCH));
    }

    @Test
    void closingWithOutstandingMemoryFailsAndNamesTheLeak() {
        BufferAllocator allocator = BufferAllocator.unpinned("leaky");
        OffHeapBuffer leaked = allocator.allocate(4096, MemoryPurpose.SNAPSHOT);
        IllegalStateException e = assertThrows(IllegalStateException.class, allocator::close);
        assertTrue(e.getMessage().contains("4096"), e.getMessage());
        assertTrue(e.getMessage().contains("SNAPSHOT"), e.getMessage());
        assertTrue(e.getMessage().contains("BufferAllocatorTest"), e.getMessage());
        leaked.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 1);
        leaked.close();
        allocator.close();
        assertThrows(IllegalStateException.class, () -> allocator.allocate(1, MemoryPurpose.SCRATCH));
    }

    @Test
    void leakCheckExtensionFailsALeakingTest() {
        AllocatorLeakCheck check = new AllocatorLeakCheck();
        check.beforeEach(null);
        OffHeapBuffer leaked = check.allocator().allocate(100, MemoryPurpose.STAGING);
        AssertionError e = assertThrows(AssertionError.class, () -> check.afterEach(null));
        assertTrue(e.getMessage().contains("leaked"), e.getMessage());
        leaked.close();
        check.beforeEach(null);
        check.allocator().allocate(1, MemoryPurpose.SCRATCH).close();
        check.afterEach(null);
        assertThrows(IllegalStateException.class, check::allocator);
    }

    @Test
    void pinningIsAttemptedAndReported(BufferAllocator allocator) {
        assertNotNull(MemoryLock.limitDescription());
        String probe = MemoryLock.probe();
        try (OffHeapBuffer small = allocator.allocate(4096, MemoryPurpose.SNAPSHOT)) {
            // A page is within any sane RLIMIT_MEMLOCK, so it is pinned exactly when the probe says mlock works.
            assertEquals(probe == null, small.pinned(), "probe: " + probe);
        }
        try (OffHeapBuffer unpinned = BufferAllocator.unpinned("u").allocate(4096, MemoryPurpose.SCRATCH)) {
            assertFalse(unpinned.pinned());
        }
    }

    @Test
    void tensorSnapshotAddressesTensorsByName(BufferAllocator allocator) {
        List<TensorSpec> specs = List.of(
            new TensorSpec("model.layers.0.mlp.down_proj.weight", Dtype.BF16, new long[] {3, 5}),
            new TensorSpec("model.embed_tokens.weight", Dtype.F32, new long[] {7}),
            new TensorSpec("model.norm.weight", Dtype.F16, new long[] {}));
        try (TensorBlock snap = TensorBlock.allocate(allocator, specs, MemoryPurpose.SNAPSHOT)) {
            assertEquals(List.of("model.embed_tokens.weight", "model.layers.0.mlp.down_proj.weight", "model.norm.weight"),
                List.copyOf(snap.names()));
            assertEquals(30, snap.data("model.layers.0.mlp.down_proj.weight").byteSize());
            assertEquals(28, snap.data("model.embed_tokens.weight").byteSize());
            assertEquals(2, snap.data("model.norm.weight").byteSize());
            assertEquals(60, snap.tensorBytes());
            for (TensorBlock.Entry e : snap.entries()) {
                assertEquals(0, e.data().address() % TensorBlock.ALIGNMENT, e.spec().name());
            }
            assertEquals(Dtype.BF16, snap.spec("model.layers.0.mlp.down_proj.weight").dtype());
            assertThrows(NoSuchElementException.class, () -> snap.get("missing"));
            assertTrue(allocator.allocated(MemoryPurpose.SNAPSHOT) >= 60);
        }
        assertEquals(0, allocator.allocated());
        assertThrows(IllegalArgumentException.class, () -> TensorBlock.allocate(allocator,
            List.of(new TensorSpec("a", Dtype.U8, new long[] {1}), new TensorSpec("a", Dtype.U8, new long[] {2})), MemoryPurpose.SNAPSHOT));
    }

    @Test
    void snapshotIsSizedForItsNameOrderedLayoutWhateverTheInputOrder(BufferAllocator allocator) {
        // In input order these need 65 bytes; laid out by name ("a" first, then "b" aligned) they need 128.
        List<TensorSpec> specs = List.of(
            new TensorSpec("b", Dtype.U8, new long[] {64}),
            new TensorSpec("a", Dtype.U8, new long[] {1}));
        try (TensorBlock snap = TensorBlock.allocate(allocator, specs, MemoryPurpose.SNAPSHOT)) {
            assertEquals(64, snap.data("b").byteSize());
            assertEquals(1, snap.data("a").byteSize());
            snap.data("b").fill((byte) 7);
            assertEquals(7, snap.data("b").get(java.lang.foreign.ValueLayout.JAVA_BYTE, 63));
        }
        assertEquals(0, allocator.allocated());
    }
}
