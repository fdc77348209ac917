package dev.stitch.sidecar;

import dev.stitch.publish.Weights;
import dev.stitch.safetensors.SafetensorsWriter;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/** A few small float32 tensors whose values move a little with every training step. */
final class TinyModel {

    static final String[] NAMES = {"model.embed_tokens.weight", "model.layers.0.mlp.up_proj.weight",
        "model.layers.0.self_attn.q_proj.weight", "lm_head.weight"};
    static final long[][] SHAPES = {{64, 16}, {32, 16}, {16, 16}, {64, 16}};

    private TinyModel() {
    }

    /** The weights after {@code step} training steps; step 0 is the base. Each step changes ~3% of values. */
    static Map<String, float[]> values(int step) {
        Map<String, float[]> out = new LinkedHashMap<>();
        for (int t = 0; t < NAMES.length; t++) {
            int n = (int) (SHAPES[t][0] * SHAPES[t][1]);
            float[] v = new float[n];
            SplittableRandom base = new SplittableRandom(1000 + t);
            for (int i = 0; i < n; i++) {
                v[i] = (float) base.nextGaussian();
            }
            for (int s = 1; s <= step; s++) {
                SplittableRandom r = new SplittableRandom(31L * s + t);
                for (int k = 0; k < Math.max(1, n * 3 / 100); k++) {
                    int i = r.nextInt(n);
                    v[i] += (float) (0.01 * r.nextGaussian());
                }
            }
            out.put(NAMES[t], v);
        }
        return out;
    }

    static Weights weights(int step) {
        Weights.Builder b = Weights.builder();
        values(step).forEach((name, v) -> b.add(name, Dtype.F32, shapeOf(name), littleEndian(v)));
        return b.build();
    }

    private static byte[] littleEndian(float[] values) {
        ByteBuffer bb = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : values) {
            bb.putFloat(f);
        }
        return bb.array();
    }

    /** The reference engine's {@code weights_digest} of the weights after {@code step}. */
    static String digest(int step) {
        try (Weights w = weights(step)) {
            return w.digest();
        }
    }

    /** Writes the weights after {@code step} as {@code dir/model.safetensors}. */
    static Path writeCheckpoint(Path dir, int step) throws IOException {
        Files.createDirectories(dir);
        Map<String, float[]> v = values(step);
        List<TensorSpec> specs = new ArrayList<>();
        Map<String, MemorySegment> bytes = new LinkedHashMap<>();
        v.forEach((name, vals) -> {
            specs.add(new TensorSpec(name, Dtype.F32, shapeOf(name)));
            bytes.put(name, MemorySegment.ofArray(littleEndian(vals)));
        });
        SafetensorsWriter.Layout layout = SafetensorsWriter.layout(Map.of("format", "pt"), specs);
        try (FileChannel ch = FileChannel.open(dir.resolve("model.safetensors"), StandardOpenOption.CREATE,
                StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
            SafetensorsWriter.write(ch, layout, bytes::get);
        }
        return dir;
    }

    private static long[] shapeOf(String name) {
        for (int t = 0; t < NAMES.length; t++) {
            if (NAMES[t].equals(name)) {
                return SHAPES[t].clone();
            }
        }
        throw new IllegalArgumentException(name);
    }
}
