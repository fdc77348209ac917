package dev.stitch.rehearsal;

import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import dev.stitch.safetensors.SafetensorsWriter;
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
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.SplittableRandom;

/**
 * A LLaMA-shaped bf16 model held in off-heap memory, sized to a byte budget: embeddings, per-layer
 * attention and MLP projections, norms and an untied LM head, with canonical Hugging Face names.
 * Values follow N(0, 0.02) (norms sit around 1.0), rounded to bf16, so deltas look like those of a
 * real fine-tuning step.
 */
public final class SyntheticModel implements AutoCloseable {
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Arena arena;
    private final Map<String, MemorySegment> tensors;
    private final Map<String, TensorSpec> specs;
    private final int hidden;
    private final int layers;

    private SyntheticModel(Arena arena, Map<String, TensorSpec> specs, Map<String, MemorySegment> tensors, int hidden, int layers) {
        this.arena = arena;
        this.specs = Collections.unmodifiableMap(specs);
        this.tensors = Collections.unmodifiableMap(tensors);
        this.hidden = hidden;
        this.layers = layers;
    }

    /**
     * Builds a model of at most {@code targetBytes} (fewer only by less than one layer; the smallest
     * sizes still get one layer) with values that depend only on {@code seed}.
     */
    public static SyntheticModel generate(long targetBytes, long seed) {
        if (targetBytes < 64 * 1024) {
            throw new IllegalArgumentException("model size must be at least 64k, got " + targetBytes + " bytes");
        }
        long elements = targetBytes / 2;
        // hidden ~ sqrt(elements / 128) keeps a handful of layers at every size (256 MiB -> 1024 wide, 7 layers).
        int hidden = Integer.highestOneBit((int) Math.max(64, Math.min(8192, Math.sqrt(elements / 128.0))));
        long vocab = 16L * hidden;
        long intermediate = ((hidden * 11L / 4) + 63) / 64 * 64;
        long perLayer = 4L * hidden * hidden + 3L * hidden * intermediate + 2L * hidden;
        long fixed = 2L * vocab * hidden + hidden;
        int layers = (int) Math.max(1, (elements - fixed) / perLayer);

        Map<String, TensorSpec> specs = new LinkedHashMap<>();
        add(specs, "model.embed_tokens.weight", vocab, hidden);
        for (int l = 0; l < layers; l++) {
            String p = "model.layers." + l + ".";
            add(specs, p + "input_layernorm.weight", hidden);
            add(specs, p + "self_attn.q_proj.weight", hidden, hidden);
            add(specs, p + "self_attn.k_proj.weight", hidden, hidden);
            add(specs, p + "self_attn.v_proj.weight", hidden, hidden);
            add(specs, p + "self_attn.o_proj.weight", hidden, hidden);
            add(specs, p + "post_attention_layernorm.weight", hidden);
            add(specs, p + "mlp.gate_proj.weight", intermediate, hidden);
            add(specs, p + "mlp.up_proj.weight", intermediate, hidden);
            add(specs, p + "mlp.down_proj.weight", hidden, intermediate);
        }
        add(specs, "model.norm.weight", hidden);
        add(specs, "lm_head.weight", vocab, hidden);

        short[] gaussian = gaussianTable(seed, 0.02f, 0f);
        short[] nearOne = gaussianTable(seed + 1, 0.02f, 1f);
        Arena arena = Arena.ofShared();
        Map<String, MemorySegment> tensors = new LinkedHashMap<>();
        try {
            SplittableRandom random = new SplittableRandom(seed);
            for (TensorSpec spec : specs.values()) {
                MemorySegment data = arena.allocate(spec.byteLength(), 64);
                short[] table = spec.name().endsWith("norm.weight") ? nearOne : gaussian;
                fill(data, table, random.split());
                tensors.put(spec.name(), data);
            }
        } catch (RuntimeException | OutOfMemoryError e) {
            arena.close();
            throw e;
        }
        return new SyntheticModel(arena, specs, tensors, hidden, layers);
    }

    private static void add(Map<String, TensorSpec> specs, String name, long... shape) {
        specs.put(name, new TensorSpec(name, Dtype.BF16, shape));
    }

    /** 65536 bf16 samples of N(mean, std): one table lookup per element keeps generation memory-bound. */
    private static short[] gaussianTable(long seed, float std, float mean) {
        Random r = new Random(seed);
        short[] t = new short[1 << 16];
        for (int i = 0; i < t.length; i++) {
            t[i] = Bf16.fromFloat((float) (mean + std * r.nextGaussian()));
        }
        return t;
    }

    private static void fill(MemorySegment data, short[] table, SplittableRandom random) {
        long n = data.byteSize() / 2;
        long i = 0;
        for (; i + 4 <= n; i += 4) {
            long r = random.nextLong();
            data.set(BF16, 2 * i, table[(int) (r & 0xFFFF)]);
            data.set(BF16, 2 * i + 2, table[(int) ((r >>> 16) & 0xFFFF)]);
            data.set(BF16, 2 * i + 4, table[(int) ((r >>> 32) & 0xFFFF)]);
            data.set(BF16, 2 * i + 6, table[(int) (r >>> 48)]);
        }
        for (; i < n; i++) {
            data.set(BF16, 2 * i, table[random.nextInt(1 << 16)]);
        }
    }

    /** Tensor specs in model order. */
    public List<TensorSpec> specs() {
        return new ArrayList<>(specs.values());
    }

    /** Name to live tensor bytes (little-endian bf16); the trainer mutates these in place. */
    public Map<String, MemorySegment> tensors() {
        return tensors;
    }

    /** The live tensors, in model order, as a publisher's input (views of this model's memory, not copies). */
    public dev.stitch.publish.Weights weights() {
        List<dev.stitch.encode.TensorData> out = new ArrayList<>(specs.size());
        for (TensorSpec spec : specs.values()) {
            out.add(new dev.stitch.encode.TensorData(spec, tensors.get(spec.name())));
        }
        return dev.stitch.publish.Weights.of(out);
    }

    public TensorSpec spec(String name) {
        return specs.get(name);
    }

    public long byteSize() {
        long n = 0;
        for (MemorySegment s : tensors.values()) {
            n += s.byteSize();
        }
        return n;
    }

    public long elementCount() {
        return byteSize() / 2;
    }

    public int hiddenSize() {
        return hidden;
    }

    public int layerCount() {
        return layers;
    }

    /**
     * Writes the model as a Hugging Face checkpoint directory: one {@code model.safetensors} (metadata
     * {@code {"format": "pt"}}, as torch's writer emits) plus a small {@code config.json}.
     *
     * @return bytes of the weight file
     */
    public long writeCheckpoint(Path dir) throws IOException {
        Files.createDirectories(dir);
        SafetensorsWriter.Layout layout = SafetensorsWriter.layout(Map.of("format", "pt"), specs.values());
        long written;
        try (FileChannel out = FileChannel.open(dir.resolve("model.safetensors"),
                StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
            written = SafetensorsWriter.write(out, layout, tensors::get);
            out.force(true);
        }
        String config = "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"torch_dtype\": \"bfloat16\", "
                + "\"hidden_size\": " + hidden + ", \"num_hidden_layers\": " + layers + ", \"vocab_size\": " + 16L * hidden
                + ", \"tie_word_embeddings\": false}\n";
        Files.writeString(dir.resolve("config.json"), config);
        return written;
    }

    @Override
    public void close() {
        arena.close();
    }

    /** Round-to-nearest-even float to bfloat16, the rounding torch uses. */
    static final class Bf16 {
        private Bf16() {
        }

        static short fromFloat(float f) {
            int bits = Float.floatToRawIntBits(f);
            if (Float.isNaN(f)) {
                return (short) 0x7FC0;
            }
            int rounding = 0x7FFF + ((bits >>> 16) & 1);
            return (short) ((bits + rounding) >>> 16);
        }

        static float toFloat(short b) {
            return Float.intBitsToFloat((b & 0xFFFF) << 16);
        }
    }
}
