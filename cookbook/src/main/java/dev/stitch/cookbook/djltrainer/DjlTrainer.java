package dev.stitch.cookbook.djltrainer;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.stitch.cli.StitchCli;
import dev.stitch.publish.DjlWeights;
import dev.stitch.publish.PublishResult;
import dev.stitch.publish.WeightPublisher;
import dev.stitch.publish.Weights;
import dev.stitch.safetensors.Checkpoint;
import dev.stitch.safetensors.SafetensorsWriter;
import dev.stitch.tensor.TensorSpec;
import dev.stitch.digest.WeightsDigest;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
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
import java.util.Random;
import java.util.SplittableRandom;

/**
 * A Java trainer that keeps its weights as DJL {@link NDArray}s and publishes them through
 * {@link DjlWeights}: every step produces new arrays (as a functional optimizer update does), and the
 * publisher diffs their bytes against the last published version. A replica then applies the
 * versions with {@code stitch apply}, and its checkpoint must hash to the same weights digest as the
 * trainer's arrays.
 *
 * <p>The arrays come from {@link NDManager#newBaseManager()}: with a native DJL engine (PyTorch, ...)
 * on the class path that engine's arrays, otherwise the pass-through arrays of the engine that ships
 * inside {@code ai.djl:api}, which hold bytes but do no math. The update therefore works on the
 * arrays' bytes, so the example runs the same way with or without a native engine.
 *
 * <p>Run: {@code DjlTrainer [WORK_DIR [STEPS]]}.
 */
public final class DjlTrainer {

    /** What the run proved. */
    public record Outcome(String ndManager, List<PublishResult> published, String trainerDigest, String replicaDigest) {
        public boolean digestsMatch() {
            return trainerDigest.equals(replicaDigest);
        }
    }

    private static final int HIDDEN = 256;
    private static final int VOCAB = 2048;

    private DjlTrainer() {
    }

    public static void main(String[] args) throws Exception {
        Path work;
        int steps;
        try {
            work = args.length > 0 ? Path.of(args[0]) : Files.createTempDirectory("stitch-djl-trainer-");
            steps = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        } catch (NumberFormatException e) {
            System.err.println("usage: DjlTrainer [WORK_DIR [STEPS]]");
            System.exit(2);
            return;
        }
        Outcome o = run(work, steps);
        System.out.println("arrays from " + o.ndManager());
        for (PublishResult r : o.published()) {
            System.out.printf("version %d: %s, %d of %d elements changed, %d bytes%n",
                    r.version(), r.backend(), r.changedElements(), r.totalElements(), r.bytesWritten());
        }
        System.out.println("trainer arrays  " + o.trainerDigest());
        System.out.println("replica weights " + o.replicaDigest() + (o.digestsMatch() ? "  (equal)" : "  (DIFFERENT)"));
        if (!o.digestsMatch()) {
            System.exit(1);
        }
    }

    public static Outcome run(Path work, int steps) throws IOException {
        Path base = work.resolve("base");
        Path board = work.resolve("board");
        Path replica = work.resolve("replica");
        List<PublishResult> published = new ArrayList<>();
        String trainerDigest;
        String managerName;
        try (NDManager manager = NDManager.newBaseManager()) {
            managerName = manager.getClass().getName();
            NDList weights = initialWeights(manager);
            writeCheckpoint(weights, base);
            writeCheckpoint(weights, replica);

            try (WeightPublisher publisher = WeightPublisher.builder().board(board).seedFrom(base).build()) {
                SplittableRandom random = new SplittableRandom(17);
                for (long step = 1; step <= steps; step++) {
                    weights = optimizerStep(manager, weights, random);
                    try (Weights snapshot = DjlWeights.from(weights)) {
                        published.add(publisher.publish(step, snapshot));
                    }
                }
            }
            trainerDigest = digest(weights);
        }

        StringWriter err = new StringWriter();
        int code = StitchCli.commandLine().setErr(new PrintWriter(err, true)).execute(
                "apply", "--board", board.toString(), "--target", Integer.toString(steps), "--checkpoint", replica.toString());
        if (code != 0) {
            throw new IOException("stitch apply failed: " + err.toString().strip());
        }
        String replicaDigest;
        try (Checkpoint ckpt = Checkpoint.open(replica)) {
            Map<String, MemorySegment> tensors = new LinkedHashMap<>();
            for (String name : ckpt.names()) {
                tensors.put(name, ckpt.tensor(name));
            }
            replicaDigest = WeightsDigest.of(tensors);
        }
        return new Outcome(managerName, published, trainerDigest, replicaDigest);
    }

    /** A small LLaMA-shaped bf16 model, values from N(0, 0.02), each array named by its HF tensor name. */
    static NDList initialWeights(NDManager manager) {
        Random random = new Random(1);
        NDList list = new NDList();
        list.add(array(manager, "model.embed_tokens.weight", random, VOCAB, HIDDEN));
        for (int l = 0; l < 2; l++) {
            String p = "model.layers." + l + ".";
            for (String proj : List.of("q_proj", "k_proj", "v_proj", "o_proj")) {
                list.add(array(manager, p + "self_attn." + proj + ".weight", random, HIDDEN, HIDDEN));
            }
            list.add(array(manager, p + "mlp.gate_proj.weight", random, 4 * HIDDEN, HIDDEN));
            list.add(array(manager, p + "mlp.up_proj.weight", random, 4 * HIDDEN, HIDDEN));
            list.add(array(manager, p + "mlp.down_proj.weight", random, HIDDEN, 4 * HIDDEN));
        }
        list.add(array(manager, "lm_head.weight", random, VOCAB, HIDDEN));
        return list;
    }

    private static NDArray array(NDManager manager, String name, Random random, long... shape) {
        int n = Math.toIntExact(new Shape(shape).size());
        ByteBuffer bytes = ByteBuffer.allocateDirect(2 * n).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < n; i++) {
            float f = (float) (0.02 * random.nextGaussian());
            bytes.putShort((short) (Float.floatToRawIntBits(f) >>> 16));
        }
        bytes.flip();
        NDArray a = manager.create(bytes, new Shape(shape), DataType.BFLOAT16);
        a.setName(name);
        return a;
    }

    /**
     * One update: for each array a new array whose bytes differ from the old in about 2% of the
     * elements (one unit in the last place of the bf16 mantissa); the old arrays are released.
     */
    static NDList optimizerStep(NDManager manager, NDList weights, SplittableRandom random) {
        NDList next = new NDList();
        for (NDArray old : weights) {
            ByteBuffer src = old.toByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
            ByteBuffer bytes = ByteBuffer.allocateDirect(src.remaining()).order(ByteOrder.LITTLE_ENDIAN);
            bytes.put(src.duplicate()).flip();
            int n = bytes.remaining() / 2;
            for (int k = 0; k < n / 50; k++) {
                int i = random.nextInt(n);
                bytes.putShort(2 * i, (short) (bytes.getShort(2 * i) ^ 1));
            }
            NDArray a = manager.create(bytes, old.getShape(), old.getDataType());
            a.setName(old.getName());
            next.add(a);
            old.close();
        }
        return next;
    }

    private static String digest(NDList weights) {
        Map<String, MemorySegment> tensors = new LinkedHashMap<>();
        for (NDArray a : weights) {
            tensors.put(a.getName(), MemorySegment.ofBuffer(a.toByteBuffer()));
        }
        return WeightsDigest.of(tensors);
    }

    /** Writes the arrays as a one-file HF checkpoint: what the engines boot from. */
    static void writeCheckpoint(NDList weights, Path dir) throws IOException {
        Files.createDirectories(dir);
        try (Weights w = DjlWeights.from(weights)) {
            List<TensorSpec> specs = new ArrayList<>();
            w.tensors().forEach(t -> specs.add(t.spec()));
            SafetensorsWriter.Layout layout = SafetensorsWriter.layout(Map.of("format", "pt"), specs);
            try (FileChannel out = FileChannel.open(dir.resolve("model.safetensors"),
                    StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
                SafetensorsWriter.write(out, layout, name -> w.tensor(name).bytes());
            }
        }
    }
}
