package dev.stitch.format.stitchdelta;

import static dev.stitch.format.stitchdelta.StitchDeltaFormat.CODEC_RAW;
import static dev.stitch.format.stitchdelta.StitchDeltaFormat.CODEC_ZSTD;
import static dev.stitch.format.stitchdelta.StitchDeltaFormat.FORMAT_ID;
import static dev.stitch.format.stitchdelta.StitchDeltaFormat.MAGIC;

import dev.stitch.encode.ChunkRunner;
import dev.stitch.encode.TensorChange;
import dev.stitch.encode.ValueMode;
import dev.stitch.encode.VersionMemory;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.FormatFiles;
import dev.stitch.format.PreconditionFailedException;
import dev.stitch.format.VersionWriter;
import dev.stitch.format.WriteResult;
import dev.stitch.format.WrittenFile;
import dev.stitch.format.ZstdFrames;
import dev.stitch.hash.Hash128;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.safetensors.SafetensorsWriter;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Writes a version in this project's compact format {@code stitch-delta-1} (docs/formats/stitch-delta.md §4,
 * layout in docs/formats/stitch-delta.md): per changed tensor a record with the escaped u16 gap
 * stream and the value stream, each byte-plane split and zstd level 1 (raw when that is not
 * smaller), or a dense record holding the whole new tensor when that is smaller; every record carries
 * the xxh3-128 of the tensor's new bytes. Records are sorted by name and indexed; output is
 * deterministic.
 */
public final class StitchDeltaWriter implements VersionWriter {

    /** The format this writer writes, as refusals name it. */
    private static final String BACKEND = DeltaFormat.STITCH_DELTA.id();
    /** The manifest's {@code delta_encoding}. */
    public static final String FORMAT = FORMAT_ID;
    /** Output memory a retaining writer keeps per worker between writes. */
    private static final long RETAINED_OUTPUT_BYTES = 128L << 20;
    /** Default split point between files. */
    public static final long DEFAULT_MAX_FILE_BYTES = 2L << 30;


    private final ValueMode mode;
    private final long maxFileBytes;
    private final ChunkRunner runner;
    private final boolean retainScratch;
    private final RecordEncoder[] encoders;
    private boolean closed;

    /** A writer that encodes every record on the calling thread and frees its scratch after each write. */
    public StitchDeltaWriter(ValueMode mode, long maxFileBytes) {
        this(mode, maxFileBytes, null, false);
    }

    /**
     * A writer that encodes records on {@code runner}'s workers (one at a time per worker, each with
     * its own scratch), or on the calling thread when {@code runner} is null or has one thread. With
     * {@code retainScratch} it keeps its scratch memory and zstd contexts from one write to the next
     * (a publisher's writer: fresh memory costs page faults on every version) until {@link #close}.
     */
    public StitchDeltaWriter(ValueMode mode, long maxFileBytes, ChunkRunner runner, boolean retainScratch) {
        if (maxFileBytes <= 0) {
            throw new IllegalArgumentException("maxFileBytes must be positive");
        }
        this.mode = mode;
        this.maxFileBytes = maxFileBytes;
        this.runner = runner;
        this.retainScratch = retainScratch;
        this.encoders = new RecordEncoder[runner == null ? 1 : runner.threads()];
    }

    /** The default writer: xor values, 2 GiB files. */
    public static StitchDeltaWriter defaults() {
        return new StitchDeltaWriter(ValueMode.XOR, DEFAULT_MAX_FILE_BYTES);
    }

    /** File name of the {@code i}-th file of a version. */
    public static String fileName(int i) {
        return String.format("delta-%05d.stdelta", i);
    }

    /** Checks every change fits one record (streams are compressed in one piece). */
    public void check(List<TensorChange> changes) {
        for (TensorChange c : changes) {
            if (c.spec().byteLength() > ZstdFrames.MAX_ONE_SHOT) {
                throw new PreconditionFailedException(BACKEND, "tensor " + c.spec().name() + " is larger than one record can hold");
            }
        }
    }

    /** An encoded record: its bytes live in the memory of the encoder that made it. */
    record Encoded(String name, MemorySegment bytes, long raw) {
    }

    /** Writes the version's files into {@code dir} (none when {@code changes} is empty). */
    @Override
    public synchronized WriteResult write(long version, List<TensorChange> changes, Path dir) throws IOException {
        if (closed) {
            throw new IllegalStateException("writer is closed");
        }
        long t0 = System.nanoTime();
        check(changes);
        List<TensorChange> sorted = new ArrayList<>(changes);
        sorted.sort(Comparator.comparing((TensorChange c) -> c.spec().name(), SafetensorsWriter.NAME_ORDER));
        for (int i = 1; i < sorted.size(); i++) {
            if (sorted.get(i).spec().name().equals(sorted.get(i - 1).spec().name())) {
                throw new IllegalArgumentException("tensor " + sorted.get(i).spec().name() + " changes twice");
            }
        }
        int workers = runner == null ? 1 : Math.max(1, Math.min(runner.threads(), sorted.size()));
        for (RecordEncoder e : encoders) {
            if (e != null) {
                e.rewind();
            }
        }
        try {
            List<Encoded> records = encodeAll(sorted, workers, encoders);
            return writeFiles(version, records, dir, t0);
        } finally {
            if (!retainScratch) {
                freeEncoders();
            }
        }
    }

    /** Frees retained scratch memory and zstd contexts. */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            freeEncoders();
        }
    }

    private void freeEncoders() {
        for (int i = 0; i < encoders.length; i++) {
            if (encoders[i] != null) {
                encoders[i].close();
                encoders[i] = null;
            }
        }
    }

    private WriteResult writeFiles(long version, List<Encoded> records, Path dir, long t0) throws IOException {
        List<List<Encoded>> groups = new ArrayList<>();
        List<Encoded> cur = new ArrayList<>();
        long curBytes = 0;
        for (Encoded e : records) {
            if (!cur.isEmpty() && curBytes + e.bytes().byteSize() > maxFileBytes) {
                groups.add(cur);
                cur = new ArrayList<>();
                curBytes = 0;
            }
            cur.add(e);
            curBytes += e.bytes().byteSize();
        }
        if (!cur.isEmpty()) {
            groups.add(cur);
        }
        List<WrittenFile> files = new ArrayList<>();
        long raw = 0;
        long written = 0;
        for (int i = 0; i < groups.size(); i++) {
            List<Encoded> g = groups.get(i);
            byte[] header = fileHeader(version, version - 1, g);
            WrittenFile wf = FormatFiles.write(dir, fileName(i), ArtifactKind.TRANSITION, out -> {
                out.write(header);
                for (Encoded e : g) {
                    out.write(e.bytes());
                }
            });
            for (Encoded e : g) {
                raw += e.raw();
            }
            files.add(wf);
            written += wf.size();
        }
        return new WriteResult(files, FORMAT, raw, written, System.nanoTime() - t0);
    }

    /** Records of {@code sorted}, in order, encoded on the runner's workers or on this thread. */
    private List<Encoded> encodeAll(List<TensorChange> sorted, int workers, RecordEncoder[] encoders) {
        if (workers <= 1) {
            if (encoders[0] == null) {
                encoders[0] = new RecordEncoder();
            }
            RecordEncoder e = encoders[0];
            List<Encoded> out = new ArrayList<>(sorted.size());
            for (TensorChange c : sorted) {
                out.add(e.encode(c));
            }
            return out;
        }
        Encoded[] out = new Encoded[sorted.size()];
        runner.run(sorted.size(), (worker, index) -> {
            RecordEncoder e = encoders[worker];
            if (e == null) {
                e = new RecordEncoder();
                encoders[worker] = e;
            }
            out[index] = e.encode(sorted.get(index));
        });
        return List.of(out);
    }

    /** The file header and record index for {@code records}, laid out back to back after it. */
    static byte[] fileHeader(long version, long base, List<Encoded> records) {
        int size = StitchDeltaFormat.FILE_HEADER + 16 * records.size();
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        b.put(MAGIC);
        byte[] id = FORMAT_ID.getBytes(StandardCharsets.US_ASCII);
        b.putShort((short) id.length).put(id);
        b.putShort((short) 0);
        b.putLong(version).putLong(base);
        b.putInt(records.size());
        long offset = size;
        for (Encoded e : records) {
            b.putLong(offset).putLong(e.bytes().byteSize());
            offset += e.bytes().byteSize();
        }
        return b.array();
    }

    /**
     * Encodes records with scratch memory and zstd contexts kept across records. Planes come from
     * the diff or are split in native scratch; a sparse record's streams are compressed straight
     * into the encoder's output blocks behind room for its header, where the file write reads them.
     * Only a record that may turn dense compresses both forms in scratch and copies the smaller
     * once. Not thread-safe; one per worker, closed once the files are written.
     */
    final class RecordEncoder implements AutoCloseable {
        private final DeltaKernels kernels = Kernels.get();
        private final ZstdFrames.Compressor compressor = new ZstdFrames.Compressor();
        private final Scratch gaps = new Scratch();
        private final Scratch sparsePlanes = new Scratch();
        private final Scratch sparseFrames = new Scratch();
        private final Scratch densePlanes = new Scratch();
        private final Scratch denseFrames = new Scratch();
        /** Finished records, kept until their files are written. */
        private final VersionMemory output = new VersionMemory(RETAINED_OUTPUT_BYTES);

        Encoded encode(TensorChange c) {
            TensorSpec spec = c.spec();
            int w = spec.dtype().width();
            long numel = spec.numel();
            long count = c.count();
            if (count > Integer.MAX_VALUE - 8 || count < 0 || count > numel) {
                throw new IllegalArgumentException("tensor " + spec.name() + ": bad change count " + count);
            }
            byte[] name = spec.name().getBytes(StandardCharsets.UTF_8);
            if (name.length > StitchDeltaFormat.MAX_NAME_BYTES) {
                throw new IllegalArgumentException("tensor name longer than 65535 bytes");
            }
            boolean xor = mode == ValueMode.XOR;
            long valueBytes = count * w;
            long units;
            MemorySegment planes;
            if (c.escaped() != null && xor == c.xorValues()) {
                // the diff already made the planes, while the changes were in cache
                units = c.escaped().units();
                planes = c.escaped().planes();
            } else {
                try (Arena decoded = Arena.ofConfined()) {
                    TensorChange p = c.withPositions(kernels, decoded);
                    MemorySegment values = p.values().asSlice(0, valueBytes);
                    if (xor != p.xorValues()) {
                        values = convertedValues(p, values, w);
                    }
                    // a gap g costs g / 65535 escape units plus one, and gaps sum to at most numel
                    long maxUnits = count + numel / 65535 + 1;
                    MemorySegment gapUnits = gaps.get(maxUnits * 2);
                    units = kernels.encodeEscapedGaps(p.positions(), p.positionWidth(), count, gapUnits);
                    planes = sparsePlanes.get(units * 2 + valueBytes);
                    kernels.splitPlanes(gapUnits, 2, units, planes);
                    kernels.splitPlanes(values, w, count, planes.asSlice(units * 2, valueBytes));
                }
            }
            long gapBytes = units * 2;
            Hash128 digest = c.newDigest(kernels);
            long sparseBound = 2 * ZstdFrames.bound(units) + w * ZstdFrames.bound(count);
            boolean denseCandidate = count * 4 >= numel;
            int headerLen = headerLength(name, spec, 2 + w);
            // without a dense alternative to compare, the streams go straight into the record, after its header
            MemorySegment rec = denseCandidate ? null : output.reserve(headerLen + sparseBound);
            MemorySegment frames = denseCandidate ? sparseFrames.get(sparseBound) : rec.asSlice(headerLen);
            List<Stream> sparse = new ArrayList<>(2 + w);
            long at = 0;
            for (int b = 0; b < 2; b++) {
                Stream st = store(planes.asSlice(b * units, units), frames.asSlice(at));
                at += st.stored.byteSize();
                sparse.add(st);
            }
            for (int b = 0; b < w; b++) {
                Stream st = store(planes.asSlice(gapBytes + b * count, count), frames.asSlice(at));
                at += st.stored.byteSize();
                sparse.add(st);
            }
            if (!denseCandidate) {
                writeHeader(rec, headerLen, name, spec, xor, false, count, units, digest, sparse);
                output.keep(headerLen + at);
                return new Encoded(spec.name(), rec.asSlice(0, headerLen + at), gapBytes + valueBytes);
            }
            // a quarter or more of the elements changed: the whole tensor may be smaller
            MemorySegment dp = densePlanes.get(numel * w);
            kernels.splitPlanes(c.newTensor(), w, numel, dp);
            MemorySegment df = denseFrames.get(w * ZstdFrames.bound(numel));
            List<Stream> dense = new ArrayList<>(w);
            long dat = 0;
            for (int b = 0; b < w; b++) {
                Stream st = store(dp.asSlice(b * numel, numel), df.asSlice(dat));
                dat += st.stored.byteSize();
                dense.add(st);
            }
            if (storedBytes(dense) < storedBytes(sparse)) {
                return finish(df, name, spec, false, true, numel, 0, digest, dense, numel * w);
            }
            return finish(frames, name, spec, xor, false, count, units, digest, sparse, gapBytes + valueBytes);
        }

        /** {@code plane} stored at the start of {@code room}: as a zstd frame when that is smaller, else raw. */
        private Stream store(MemorySegment plane, MemorySegment room) {
            if (plane.byteSize() == 0) {
                return new Stream(CODEC_RAW, room.asSlice(0, 0), 0);
            }
            long n = compressor.compressPlane(plane, room);
            if (n < plane.byteSize()) {
                return new Stream(CODEC_ZSTD, room.asSlice(0, n), plane.byteSize());
            }
            MemorySegment.copy(plane, 0, room, 0, plane.byteSize());
            return new Stream(CODEC_RAW, room.asSlice(0, plane.byteSize()), plane.byteSize());
        }

        /** Forgets the records of the last write (its files are written), freeing memory beyond the retained size. */
        void rewind() {
            output.reset();
        }

        /**
         * Lays the record out in the output blocks: its header, then the streams stored back to back
         * at the start of {@code frames}; only the bytes the record keeps are copied, once.
         */
        private Encoded finish(MemorySegment frames, byte[] name, TensorSpec spec, boolean xor, boolean dense, long count,
                               long units, Hash128 digest, List<Stream> streams, long raw) {
            int headerLen = headerLength(name, spec, streams.size());
            long body = storedBytes(streams);
            MemorySegment rec = output.allocate(headerLen + body, 8);
            writeHeader(rec, headerLen, name, spec, xor, dense, count, units, digest, streams);
            MemorySegment.copy(frames, 0, rec, headerLen, body);
            return new Encoded(spec.name(), rec, raw);
        }

        /** The record header, at the start of {@code rec}. */
        private static void writeHeader(MemorySegment rec, int headerLen, byte[] name, TensorSpec spec, boolean xor,
                                        boolean dense, long count, long units, Hash128 digest, List<Stream> streams) {
            ByteBuffer b = ByteBuffer.allocate(headerLen).order(ByteOrder.LITTLE_ENDIAN);
            b.putShort((short) name.length).put(name);
            b.put((byte) StitchDeltaFormat.code(spec.dtype()));
            b.put((byte) spec.dtype().width());
            b.put((byte) spec.shape().length);
            for (long d : spec.shape()) {
                b.putLong(d);
            }
            b.putLong(spec.byteLength());
            b.put((byte) (xor ? StitchDeltaFormat.MODE_XOR : StitchDeltaFormat.MODE_OVERWRITE));
            b.put((byte) (dense ? StitchDeltaFormat.LAYOUT_DENSE : StitchDeltaFormat.LAYOUT_SPARSE));
            b.putLong(count).putLong(units);
            b.put(digest.bytes());
            b.put((byte) streams.size());
            for (Stream st : streams) {
                b.put((byte) st.codec).putLong(st.stored.byteSize()).putLong(st.raw);
            }
            MemorySegment.copy(b.array(), 0, rec, ValueLayout.JAVA_BYTE, 0, headerLen);
        }

        @Override
        public void close() {
            compressor.close();
            gaps.close();
            sparsePlanes.close();
            sparseFrames.close();
            densePlanes.close();
            denseFrames.close();
            output.close();
        }
    }

    /** Byte length of a record header with {@code streams} stream descriptors. */
    private static int headerLength(byte[] name, TensorSpec spec, int streams) {
        return 2 + name.length + 1 + 1 + 1 + 8 * spec.shape().length + 8 + 1 + 1 + 8 + 8 + 16 + 1 + 17 * streams;
    }

    /** xor and new bits convert into each other by XOR with the base element. */
    private static MemorySegment convertedValues(TensorChange c, MemorySegment values, int w) {
        byte[] conv = values.toArray(ValueLayout.JAVA_BYTE);
        for (int k = 0; k < c.count(); k++) {
            long p = c.position(k);
            for (int b = 0; b < w; b++) {
                conv[k * w + b] ^= c.oldTensor().get(ValueLayout.JAVA_BYTE, p * w + b);
            }
        }
        return MemorySegment.ofArray(conv);
    }

    /** One stored stream of a record: its codec, its stored bytes and its raw length. */
    private record Stream(int codec, MemorySegment stored, long raw) {
    }

    /** Native memory reused across records, grown (never shrunk) to the largest asked for. */
    private static final class Scratch implements AutoCloseable {
        private Arena arena;
        private MemorySegment segment = MemorySegment.NULL;

        MemorySegment get(long bytes) {
            if (segment.byteSize() < bytes) {
                long size = Math.max(bytes, Math.min(2 * segment.byteSize(), bytes + (64L << 20)));
                close();
                arena = Arena.ofShared();
                segment = arena.allocate(size, 64);
            }
            return segment;
        }

        @Override
        public void close() {
            if (arena != null) {
                arena.close();
                arena = null;
                segment = MemorySegment.NULL;
            }
        }
    }

    private static long storedBytes(List<Stream> streams) {
        long n = 0;
        for (Stream s : streams) {
            n += s.stored.byteSize();
        }
        return n;
    }
}
