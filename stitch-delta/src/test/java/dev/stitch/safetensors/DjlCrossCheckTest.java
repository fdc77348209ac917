package dev.stitch.safetensors;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.Proxy;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Cross-checks our safetensors reader and writer against DJL's independent decoder and encoder
 * ({@code NDList.decode}/{@code encode} with the SAFETENSORS encoding of ai.djl:api). No DJL engine is
 * installed, so a recording {@link NDManager} built with a dynamic proxy stands in for one: DJL parses
 * the file and hands each tensor's bytes, shape and dtype to it.
 */
class DjlCrossCheckTest {

    @TempDir
    Path tmp;

    /** What DJL handed to {@code NDManager.create}. */
    record Recorded(String name, byte[] bytes, long[] shape, DataType dtype) {
    }

    private static NDArray array(Recorded[] slot, NDManager manager) {
        return (NDArray) Proxy.newProxyInstance(NDArray.class.getClassLoader(), new Class<?>[] {NDArray.class}, (p, m, args) -> switch (m.getName()) {
            case "setName" -> {
                slot[0] = new Recorded((String) args[0], slot[0].bytes(), slot[0].shape(), slot[0].dtype());
                yield null;
            }
            case "getName" -> slot[0].name();
            case "getShape" -> new Shape(slot[0].shape());
            case "size" -> args == null ? new Shape(slot[0].shape()).size() : new Shape(slot[0].shape()).size((int) args[0]);
            case "getDataType" -> slot[0].dtype();
            case "toByteBuffer" -> ByteBuffer.wrap(slot[0].bytes()).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            case "toByteArray" -> slot[0].bytes().clone();
            case "getManager" -> manager;
            case "hashCode" -> System.identityHashCode(p);
            case "equals" -> p == args[0];
            case "toString" -> "recorded " + slot[0].name();
            case "close", "attach", "tempAttach", "detach" -> null;
            default -> throw new UnsupportedOperationException(m.getName());
        });
    }

    private static NDManager recordingManager() {
        NDManager[] self = new NDManager[1];
        self[0] = (NDManager) Proxy.newProxyInstance(NDManager.class.getClassLoader(), new Class<?>[] {NDManager.class}, (p, m, args) -> {
            if (m.getName().equals("create") && args != null && args.length == 3 && args[0] instanceof Buffer b) {
                ByteBuffer bb = ((ByteBuffer) b).duplicate();
                byte[] bytes = new byte[bb.remaining()];
                bb.get(bytes);
                Recorded[] slot = {new Recorded(null, bytes, ((Shape) args[1]).getShape(), (DataType) args[2])};
                return array(slot, self[0]);
            }
            return switch (m.getName()) {
                case "hashCode" -> System.identityHashCode(p);
                case "equals" -> p == args[0];
                case "toString" -> "recording manager";
                case "attachInternal", "tempAttachInternal", "detachInternal", "close" -> null;
                default -> throw new UnsupportedOperationException(m.getName());
            };
        });
        return self[0];
    }

    @Test
    void djlDecodesWhatWeWriteAndTheReferenceFiles() throws IOException {
        Map<String, MemorySegment> data = new LinkedHashMap<>();
        List<TensorSpec> specs = List.of(new TensorSpec("w.bf16", Dtype.BF16, new long[] {3, 5}), new TensorSpec("w.f32", Dtype.F32, new long[] {7}),
            new TensorSpec("w.i64", Dtype.I64, new long[] {2, 2}), new TensorSpec("w.u8", Dtype.U8, new long[] {9}),
            new TensorSpec("w.f16", Dtype.F16, new long[] {1, 1, 4}));
        for (TensorSpec s : specs) {
            byte[] b = new byte[(int) s.byteLength()];
            new java.util.Random(s.name().hashCode()).nextBytes(b);
            data.put(s.name(), MemorySegment.ofArray(b));
        }
        Path ours = tmp.resolve("ours.safetensors");
        SafetensorsWriter.Layout layout = SafetensorsWriter.layout(Map.of("format", "pt"), specs);
        try (FileChannel ch = FileChannel.open(ours, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            SafetensorsWriter.write(ch, layout, data::get);
        }
        for (Path p : List.of(ours, Fixtures.path("sparse-v1/base.safetensors"), Fixtures.path("disk-v2/xor/weight_v000001/model-00000-of-00001.safetensors"))) {
            NDList list = NDList.decode(recordingManager(), Files.readAllBytes(p));
            try (SafetensorsFile f = SafetensorsFile.open(p)) {
                assertEquals(f.header().tensors().size(), list.size(), p.toString());
                for (NDArray a : list) {
                    TensorEntry e = f.header().entry(a.getName());
                    assertArrayEquals(e.spec().shape(), a.getShape().getShape(), a.getName());
                    assertEquals(e.spec().dtype().safetensorsName(), a.getDataType().asSafetensors(), a.getName());
                    assertArrayEquals(f.tensor(e).toArray(ValueLayout.JAVA_BYTE), bytes(a), a.getName());
                }
            }
        }
    }

    @Test
    void weReadWhatDjlEncodes() throws IOException {
        Map<String, byte[]> want = new HashMap<>();
        NDManager m = recordingManager();
        NDList list = new NDList();
        Object[][] tensors = {{"a", DataType.FLOAT32, new long[] {2, 3}}, {"b", DataType.INT8, new long[] {5}}, {"c", DataType.FLOAT64, new long[] {1}}};
        for (Object[] t : tensors) {
            Shape shape = new Shape((long[]) t[2]);
            DataType dt = (DataType) t[1];
            byte[] b = new byte[(int) shape.size() * dt.getNumOfBytes()];
            new java.util.Random(((String) t[0]).hashCode()).nextBytes(b);
            NDArray a = m.create(ByteBuffer.wrap(b), shape, dt);
            a.setName((String) t[0]);
            list.add(a);
            want.put((String) t[0], b);
        }
        byte[] encoded = list.encode(NDList.Encoding.SAFETENSORS);
        try (SafetensorsFile f = SafetensorsFile.of(MemorySegment.ofArray(encoded), "djl")) {
            assertEquals(3, f.header().tensors().size());
            for (Map.Entry<String, byte[]> e : want.entrySet()) {
                assertArrayEquals(e.getValue(), f.tensor(e.getKey()).toArray(ValueLayout.JAVA_BYTE), e.getKey());
            }
            assertEquals(Dtype.F32, f.header().entry("a").spec().dtype());
            assertArrayEquals(new long[] {2, 3}, f.header().entry("a").spec().shape());
        }
    }

    private static byte[] bytes(NDArray a) {
        ByteBuffer b = a.toByteBuffer();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }
}
