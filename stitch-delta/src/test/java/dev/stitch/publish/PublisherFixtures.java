package dev.stitch.publish;

import dev.stitch.apply.ApplyProgress;
import dev.stitch.apply.HostApplier;
import dev.stitch.apply.VersionStep;
import dev.stitch.board.BulletinBoard;
import dev.stitch.encode.TensorData;
import dev.stitch.safetensors.SafetensorsWriter;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;

/** Small synthetic models, checkpoint directories and a host-side apply of a board's chain, for publisher tests. */
final class PublisherFixtures {

    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private PublisherFixtures() {
    }

    /** A small LLaMA-named model: bf16 matrices, f32 norms, an f16 tensor, a scalar. */
    static List<TensorData> model(long seed) {
        Random r = new Random(seed);
        Object[][] specs = {
            {"model.embed_tokens.weight", Dtype.BF16, new long[] {64, 48}},
            {"model.layers.0.self_attn.q_proj.weight", Dtype.BF16, new long[] {48, 48}},
            {"model.layers.0.mlp.down_proj.weight", Dtype.BF16, new long[] {320, 256}},
            {"model.layers.0.input_layernorm.weight", Dtype.F32, new long[] {48}},
            {"model.layers.0.post_attention_layernorm.weight", Dtype.F16, new long[] {48}},
            {"model.norm.weight", Dtype.F32, new long[] {48}},
            {"lm_head.scale", Dtype.F32, new long[] {}},
        };
        List<TensorData> out = new ArrayList<>();
        for (Object[] s : specs) {
            TensorSpec spec = new TensorSpec((String) s[0], (Dtype) s[1], (long[]) s[2]);
            byte[] b = new byte[(int) spec.byteLength()];
            r.nextBytes(b);
            // keep values finite: clear the top exponent bit of each element's high byte
            int w = spec.dtype().width();
            for (int i = w - 1; i < b.length; i += w) {
                b[i] &= (byte) 0xBF;
            }
            out.add(new TensorData(spec, segment(b)));
        }
        return out;
    }

    /** A copy of {@code base} where each element moves by one unit in the last place with probability {@code p}. */
    static List<TensorData> step(List<TensorData> base, double p, long seed) {
        Random r = new Random(seed);
        List<TensorData> out = new ArrayList<>();
        for (TensorData t : base) {
            byte[] b = t.bytes().toArray(ValueLayout.JAVA_BYTE);
            int w = t.spec().dtype().width();
            for (int i = 0; i < b.length; i += w) {
                if (r.nextDouble() < p) {
                    b[i] ^= (byte) (1 + r.nextInt(3));
                }
            }
            out.add(new TensorData(t.spec(), segment(b)));
        }
        return out;
    }

    /** {@code base} with element {@code index} of {@code name} set to the 16-bit pattern {@code bits}. */
    static List<TensorData> withBits16(List<TensorData> base, String name, long index, short bits) {
        List<TensorData> out = new ArrayList<>();
        for (TensorData t : base) {
            if (t.name().equals(name)) {
                byte[] b = t.bytes().toArray(ValueLayout.JAVA_BYTE);
                MemorySegment s = segment(b);
                s.set(U16, 2 * index, bits);
                out.add(new TensorData(t.spec(), s));
            } else {
                out.add(t);
            }
        }
        return out;
    }

    static MemorySegment segment(byte[] b) {
        MemorySegment s = Arena.ofAuto().allocate(Math.max(1, b.length), 64).asSlice(0, b.length);
        MemorySegment.copy(b, 0, s, ValueLayout.JAVA_BYTE, 0, b.length);
        return s;
    }

    /** Writes {@code tensors} as {@code dir/model.safetensors}. */
    static Path writeCheckpoint(Path dir, List<TensorData> tensors) throws IOException {
        Files.createDirectories(dir);
        Map<String, MemorySegment> data = new LinkedHashMap<>();
        List<TensorSpec> specs = new ArrayList<>();
        for (TensorData t : tensors) {
            data.put(t.name(), t.bytes());
            specs.add(t.spec());
        }
        SafetensorsWriter.Layout layout = SafetensorsWriter.layout(Map.of("format", "pt"), specs);
        try (FileChannel ch = FileChannel.open(dir.resolve("model.safetensors"), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            SafetensorsWriter.write(ch, layout, data::get);
        }
        return dir;
    }

    /** A plain copy of a checkpoint directory's regular files. */
    static Path copyDir(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (Stream<Path> s = Files.list(from)) {
            for (Path p : s.filter(Files::isRegularFile).toList()) {
                Files.copy(p, to.resolve(p.getFileName().toString()));
            }
        }
        return to;
    }

    /** The host-side chain of versions {@code from..to} of a board, as the sidecar would plan a delta replay. */
    static List<VersionStep> chain(BulletinBoard board, long from, long to) throws IOException {
        List<VersionStep> steps = new ArrayList<>();
        for (long v = from; v <= to; v++) {
            steps.add(VersionStep.of(board.readManifest(v), board.versionDirectory(v)));
        }
        return steps;
    }

    /** Applies versions {@code 1..to} of the board onto {@code local} with the host applier. */
    static void applyChain(BulletinBoard board, Path local, long to) throws Exception {
        try (HostApplier applier = HostApplier.open(local)) {
            applier.apply(chain(board, applier.version() + 1, to), ApplyProgress.NONE);
        }
    }

    /** Name → bytes of a checkpoint directory's tensors, copied to the heap. */
    static Map<String, byte[]> readCheckpoint(Path dir) throws IOException {
        Map<String, byte[]> out = new LinkedHashMap<>();
        try (Weights w = CheckpointWeights.open(dir)) {
            for (TensorData t : w.tensors()) {
                out.put(t.name(), t.bytes().toArray(ValueLayout.JAVA_BYTE));
            }
        }
        return out;
    }

    static Map<String, byte[]> bytes(List<TensorData> tensors) {
        Map<String, byte[]> out = new LinkedHashMap<>();
        for (TensorData t : tensors) {
            out.put(t.name(), t.bytes().toArray(ValueLayout.JAVA_BYTE));
        }
        return out;
    }
}
