package dev.stitch.publish;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.stitch.encode.TensorData;
import dev.stitch.safetensors.SafetensorsFormatException;
import dev.stitch.tensor.Dtype;
import dev.stitch.digest.WeightsDigest;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WeightsTest {

    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @TempDir
    Path tmp;

    @Test
    void primitiveArraysKeepExactBitsInLittleEndianOrder() {
        float nanWithPayload = Float.intBitsToFloat(0x7fc0_1234);
        try (Weights w = Weights.builder()
                .add("a", Dtype.BF16, new long[] {2}, new short[] {(short) 0x3F80, (short) 0x8000})
                .add("b", new long[] {2}, new float[] {-0.0f, nanWithPayload})
                .add("c", Dtype.I64, new long[] {1}, new long[] {0x0102030405060708L})
                .add("d", Dtype.U8, new long[] {3}, new byte[] {1, 2, 3})
                .add("e", Dtype.F16, new long[] {1}, ByteBuffer.wrap(new byte[] {0x00, 0x3C}))
                .build()) {
            assertEquals(5, w.tensors().size());
            assertEquals(0x3F80, w.tensor("a").bytes().get(U16, 0) & 0xFFFF);
            assertEquals(0x80000000, w.tensor("b").bytes().get(U32, 0));
            assertEquals(0x7fc0_1234, w.tensor("b").bytes().get(U32, 4));
            assertEquals(0x08, w.tensor("c").bytes().get(ValueLayout.JAVA_BYTE, 0));
            assertEquals(0x3C00, w.tensor("e").bytes().get(U16, 0));
            assertEquals(2 * 2 + 2 * 4 + 8 + 3 + 2, w.byteSize());
        }
    }

    @Test
    void sizesAndNamesAreChecked() {
        assertThrows(IllegalArgumentException.class,
                () -> Weights.builder().add("a", Dtype.BF16, new long[] {3}, new short[] {1, 2}));
        assertThrows(IllegalArgumentException.class,
                () -> Weights.builder().add("a", Dtype.F32, new long[] {1}, new short[] {1, 2}));
        assertThrows(IllegalArgumentException.class, () -> Weights.builder()
                .add("a", Dtype.U8, new long[] {1}, new byte[] {1})
                .add("a", Dtype.U8, new long[] {1}, new byte[] {2}).build());
    }

    @Test
    void checkpointDirectoriesAreReadByteForByte() throws IOException {
        List<TensorData> model = PublisherFixtures.model(3);
        Path dir = PublisherFixtures.writeCheckpoint(tmp.resolve("ckpt"), model);
        try (Weights w = CheckpointWeights.open(dir)) {
            assertEquals(model.size(), w.tensors().size());
            for (TensorData t : model) {
                assertArrayEquals(t.bytes().toArray(ValueLayout.JAVA_BYTE), w.tensor(t.name()).bytes().toArray(ValueLayout.JAVA_BYTE));
                assertEquals(t.spec(), w.tensor(t.name()).spec());
            }
            assertEquals(WeightsDigest.of(Weights.of(model).segments()), w.digest());
        }
    }

    @Test
    void damagedCheckpointsAreRefusedClearly() throws IOException {
        Path dir = PublisherFixtures.writeCheckpoint(tmp.resolve("ckpt"), PublisherFixtures.model(4));
        Path file = dir.resolve("model.safetensors");
        byte[] all = Files.readAllBytes(file);
        Files.write(file, java.util.Arrays.copyOf(all, all.length - 3));
        assertThrows(SafetensorsFormatException.class, () -> CheckpointWeights.open(dir));
        Files.writeString(dir.resolve("model.safetensors.index.json"), "{\"weight_map\": {\"x\": \"../evil.safetensors\"}}",
                StandardCharsets.UTF_8);
        assertThrows(SafetensorsFormatException.class, () -> CheckpointWeights.open(dir));
        assertThrows(IOException.class, () -> CheckpointWeights.open(tmp.resolve("missing")));
    }

    @Test
    void djlArraysBecomeNamedTensors() {
        NDArray bf16 = fakeArray("model.norm.weight", DataType.BFLOAT16, new Shape(2), new byte[] {(byte) 0x80, 0x3F, 0x00, 0x40});
        NDArray f32 = fakeArray("model.scale", DataType.FLOAT32, new Shape(), new byte[] {0, 0, (byte) 0xC0, 0x3F});
        try (Weights w = DjlWeights.from(new NDList(bf16, f32))) {
            TensorData t = w.tensor("model.norm.weight");
            assertEquals(Dtype.BF16, t.spec().dtype());
            assertArrayEquals(new long[] {2}, t.spec().shape());
            assertEquals(0x3F80, t.bytes().get(U16, 0));
            assertEquals(0x4000, t.bytes().get(U16, 2));
            assertEquals(Dtype.F32, w.tensor("model.scale").spec().dtype());
            assertEquals(1.5f, Float.intBitsToFloat(w.tensor("model.scale").bytes().get(U32, 0)));
        }
        NDArray unnamed = fakeArray(null, DataType.FLOAT32, new Shape(1), new byte[4]);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DjlWeights.from(new NDList(unnamed)));
        assertTrue(e.getMessage().contains("name"));
        NDArray text = fakeArray("t", DataType.STRING, new Shape(1), new byte[4]);
        assertThrows(IllegalArgumentException.class, () -> DjlWeights.from(new NDList(text)));
    }

    /** An NDArray without an engine: just the four methods the publisher reads. */
    private static NDArray fakeArray(String name, DataType type, Shape shape, byte[] bytes) {
        Map<String, Object> answers = new java.util.HashMap<>();
        answers.put("getName", name);
        answers.put("getDataType", type);
        answers.put("getShape", shape);
        return (NDArray) Proxy.newProxyInstance(NDArray.class.getClassLoader(), new Class<?>[] {NDArray.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "toByteBuffer" -> ByteBuffer.wrap(bytes.clone()).order(ByteOrder.nativeOrder());
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    case "toString" -> "fake NDArray " + name;
                    default -> {
                        if (answers.containsKey(method.getName())) {
                            yield answers.get(method.getName());
                        }
                        throw new UnsupportedOperationException(method.getName());
                    }
                });
    }
}
