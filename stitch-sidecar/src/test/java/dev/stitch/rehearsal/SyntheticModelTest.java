package dev.stitch.rehearsal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.safetensors.Checkpoint;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import dev.stitch.digest.WeightsDigest;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SyntheticModelTest {
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @TempDir
    Path tmp;

    @Test
    void sizedToTheBudgetWithLlamaNames() {
        try (SyntheticModel m = SyntheticModel.generate(8L << 20, 1)) {
            assertTrue(m.byteSize() <= 8L << 20 && m.byteSize() > 6L << 20, "size " + m.byteSize());
            assertTrue(m.specs().stream().allMatch(s -> s.dtype() == Dtype.BF16));
            assertEquals("model.embed_tokens.weight", m.specs().getFirst().name());
            assertEquals("lm_head.weight", m.specs().getLast().name());
            assertTrue(m.spec("model.layers.0.mlp.down_proj.weight") != null);
            assertEquals(m.layerCount(), m.specs().stream().filter(s -> s.name().endsWith("q_proj.weight")).count());
        }
    }

    @Test
    void valuesAreDeterministicFiniteAndSmall() {
        try (SyntheticModel a = SyntheticModel.generate(1L << 20, 9);
             SyntheticModel b = SyntheticModel.generate(1L << 20, 9);
             SyntheticModel c = SyntheticModel.generate(1L << 20, 10)) {
            assertEquals(WeightsDigest.of(a.tensors()), WeightsDigest.of(b.tensors()));
            assertNotEquals(WeightsDigest.of(a.tensors()), WeightsDigest.of(c.tensors()));
            MemorySegment q = a.tensors().get("model.layers.0.self_attn.q_proj.weight");
            double sumSq = 0;
            long n = q.byteSize() / 2;
            for (long i = 0; i < n; i++) {
                float f = SyntheticModel.Bf16.toFloat(q.get(BF16, 2 * i));
                assertTrue(Float.isFinite(f));
                sumSq += f * f;
            }
            double std = Math.sqrt(sumSq / n);
            assertTrue(std > 0.015 && std < 0.025, "std " + std);
        }
    }

    @Test
    void checkpointRoundTripsByteForByte() throws Exception {
        try (SyntheticModel m = SyntheticModel.generate(1L << 20, 3)) {
            long bytes = m.writeCheckpoint(tmp);
            assertEquals(bytes, tmp.resolve("model.safetensors").toFile().length());
            try (Checkpoint ckpt = Checkpoint.open(tmp)) {
                for (TensorSpec spec : m.specs()) {
                    assertEquals(spec, ckpt.spec(spec.name()));
                    assertEquals(-1, ckpt.tensor(spec.name()).mismatch(m.tensors().get(spec.name())), spec.name());
                }
            }
        }
    }

    @Test
    void refusesTinySizes() {
        assertThrows(IllegalArgumentException.class, () -> SyntheticModel.generate(1000, 1));
    }
}
