package dev.stitch.memory;

import dev.stitch.tensor.TensorSpec;
import java.lang.foreign.MemorySegment;
import java.util.Collection;
import java.util.Collections;
import java.util.NoSuchElementException;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * A set of tensors in one off-heap buffer, addressed by canonical Hugging Face name: name to
 * (spec, bytes). Each tensor starts on a 64-byte boundary so kernels see cache-line-aligned data.
 * Not thread-safe for structure (it has none to change); tensor bytes may be written concurrently
 * by disjoint writers.
 */
public final class TensorBlock implements AutoCloseable {

    /** Tensor alignment inside the buffer: one cache line. */
    public static final long ALIGNMENT = 64;

    /** One tensor: its identity and its little-endian bytes. */
    public record Entry(TensorSpec spec, MemorySegment data) {
    }

    private final OffHeapBuffer buffer;
    private final SortedMap<String, Entry> entries;

    private TensorBlock(OffHeapBuffer buffer, SortedMap<String, Entry> entries) {
        this.buffer = buffer;
        this.entries = Collections.unmodifiableSortedMap(entries);
    }

    /**
     * Allocates zero-filled room for {@code specs} from {@code allocator}, accounted as
     * {@code purpose}.
     *
     * @throws IllegalArgumentException on a duplicate name
     */
    public static TensorBlock allocate(BufferAllocator allocator, Collection<TensorSpec> specs, MemoryPurpose purpose) {
        TreeMap<String, TensorSpec> byName = new TreeMap<>();
        for (TensorSpec spec : specs) {
            if (byName.put(spec.name(), spec) != null) {
                throw new IllegalArgumentException("tensor '" + spec.name() + "' listed twice");
            }
        }
        // Size in the same (name) order the layout below uses: alignment padding depends on the order.
        long total = 0;
        for (TensorSpec spec : byName.values()) {
            total = Math.addExact(alignUp(total), spec.byteLength());
        }
        OffHeapBuffer buffer = allocator.allocate(total, purpose);
        TreeMap<String, Entry> entries = new TreeMap<>();
        long offset = 0;
        for (TensorSpec spec : byName.values()) {
            offset = alignUp(offset);
            entries.put(spec.name(), new Entry(spec, buffer.segment().asSlice(offset, spec.byteLength())));
            offset += spec.byteLength();
        }
        return new TensorBlock(buffer, entries);
    }

    private static long alignUp(long offset) {
        return (offset + ALIGNMENT - 1) & -ALIGNMENT;
    }

    /** Tensor names in ascending order. */
    public java.util.SortedSet<String> names() {
        return Collections.unmodifiableSortedSet(new java.util.TreeSet<>(entries.keySet()));
    }

    public boolean contains(String name) {
        return entries.containsKey(name);
    }

    /** @throws NoSuchElementException when the snapshot has no such tensor */
    public Entry get(String name) {
        Entry e = entries.get(name);
        if (e == null) {
            throw new NoSuchElementException("no tensor '" + name + "' in this snapshot");
        }
        return e;
    }

    public TensorSpec spec(String name) {
        return get(name).spec();
    }

    public MemorySegment data(String name) {
        return get(name).data();
    }

    /** All entries, by ascending name. */
    public Collection<Entry> entries() {
        return entries.values();
    }

    public int size() {
        return entries.size();
    }

    /** Sum of the tensors' byte lengths (without alignment padding). */
    public long tensorBytes() {
        long n = 0;
        for (Entry e : entries.values()) {
            n += e.data().byteSize();
        }
        return n;
    }

    /** True when the pages are locked in RAM. */
    public boolean pinned() {
        return buffer.pinned();
    }

    /** Returns the memory to the allocator; the tensor segments become unusable. */
    @Override
    public void close() {
        buffer.close();
    }
}
