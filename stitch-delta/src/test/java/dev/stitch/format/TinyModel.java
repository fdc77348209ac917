package dev.stitch.format;

import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.TreeMap;

/**
 * The six tensors of the golden fixtures' synthetic model "tiny-6t" (stitch-core/src/test/fixtures
 * README), as the local checkpoint the delta fuzz targets decode against: it bounds what a decoder
 * may allocate to what a real receiver holds, whatever sizes a hostile file declares.
 */
public final class TinyModel {

    /** Name → spec of every tensor. */
    public static final Map<String, TensorSpec> SPECS = specs();

    private TinyModel() {
    }

    private static Map<String, TensorSpec> specs() {
        Map<String, TensorSpec> m = new TreeMap<>();
        put(m, "model.embed_tokens.weight", Dtype.BF16, 64, 48);
        put(m, "model.layers.0.input_layernorm.weight", Dtype.F16, 1000);
        put(m, "model.layers.0.self_attn.o_proj.weight", Dtype.BF16, 3, 5, 7);
        put(m, "model.layers.0.post_attention_layernorm.weight", Dtype.F32, 1000);
        put(m, "model.layers.0.mlp.down_proj.weight", Dtype.BF16, 320, 256);
        put(m, "model.norm.weight", Dtype.F16, 48);
        return java.util.Collections.unmodifiableMap(m);
    }

    private static void put(Map<String, TensorSpec> m, String name, Dtype dtype, long... shape) {
        m.put(name, new TensorSpec(name, dtype, shape));
    }

    /** The spec of {@code name}, or null when the model has no such tensor. */
    public static TensorSpec spec(String name) {
        return SPECS.get(name);
    }

    /** A fresh all-zero tensor of {@code spec}'s size (at most 160 KiB in this model). */
    public static MemorySegment zeroed(TensorSpec spec) {
        return MemorySegment.ofArray(new byte[Math.toIntExact(spec.byteLength())]);
    }
}
