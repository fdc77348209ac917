package dev.stitch.bench.simulate;

import dev.stitch.rehearsal.SyntheticModel;
import dev.stitch.encode.TensorData;
import dev.stitch.safetensors.Checkpoint;
import dev.stitch.safetensors.SafetensorsWriter;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import dev.stitch.digest.WeightsDigest;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
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
import java.util.SplittableRandom;

/**
 * One training step of a synthetic bf16 model for the simulation: the served weights (version 0),
 * the trainer's weights after the step (version 1, changed per docs/performance-targets.md §7.1: uniform
 * positions, bit patterns moved by small steps), and the model cut into chunks of whole tensors of
 * about equal bytes, each chunk one shard of the rollout host's checkpoint.
 */
final class SimulatedVersion implements AutoCloseable {
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final SyntheticModel base;
    private final Arena arena;
    private final List<TensorData> oldTensors;
    private final List<TensorData> newTensors;
    private final List<List<Integer>> chunks;
    private final long changedElements;

    private SimulatedVersion(SyntheticModel base, Arena arena, List<TensorData> oldTensors, List<TensorData> newTensors,
                             List<List<Integer>> chunks, long changedElements) {
        this.base = base;
        this.arena = arena;
        this.oldTensors = oldTensors;
        this.newTensors = newTensors;
        this.chunks = chunks;
        this.changedElements = changedElements;
    }

    /** Builds a model of about {@code bytes}, steps it at {@code density}, and cuts it into at most {@code chunkCount} chunks. */
    static SimulatedVersion generate(long bytes, double density, int chunkCount, long seed) {
        if (!(density > 0 && density <= 1)) {
            throw new IllegalArgumentException("density must be in (0, 1], got " + density);
        }
        SyntheticModel model = SyntheticModel.generate(bytes, seed);
        Arena arena = Arena.ofShared();
        try {
            List<TensorData> olds = new ArrayList<>();
            List<TensorData> news = new ArrayList<>();
            SplittableRandom random = new SplittableRandom(seed ^ 0x5DEECE66DL);
            long changed = 0;
            for (TensorSpec spec : model.specs()) {
                if (spec.dtype() != Dtype.BF16) {
                    throw new IllegalStateException("the simulation model is bf16 only, got " + spec);
                }
                MemorySegment old = model.tensors().get(spec.name());
                MemorySegment neu = arena.allocate(old.byteSize(), 64);
                MemorySegment.copy(old, 0, neu, 0, old.byteSize());
                changed += step(neu, density, random.split());
                olds.add(new TensorData(spec, old));
                news.add(new TensorData(spec, neu));
            }
            return new SimulatedVersion(model, arena, Collections.unmodifiableList(olds), Collections.unmodifiableList(news),
                    cut(olds, chunkCount), changed);
        } catch (RuntimeException | OutOfMemoryError e) {
            arena.close();
            model.close();
            throw e;
        }
    }

    /**
     * Changes each element with probability {@code p} (positions drawn as geometric gaps): the 16-bit
     * pattern moves by k = 1 (90 %), 2 (8 %) or 3-4 (2 %) with a random sign, and the opposite sign is
     * used when the move would flip the sign bit, wrap, or reach NaN/Inf.
     */
    static long step(MemorySegment tensor, double p, SplittableRandom random) {
        long n = tensor.byteSize() / 2;
        double logMiss = Math.log1p(-Math.min(p, 1 - 1e-12));
        long changed = 0;
        long i = p >= 1 ? 0 : gap(random, logMiss);
        while (i < n) {
            int bits = tensor.get(BF16, 2 * i) & 0xFFFF;
            double u = random.nextDouble();
            int k = u < 0.90 ? 1 : u < 0.98 ? 2 : 3 + random.nextInt(2);
            int sign = random.nextBoolean() ? 1 : -1;
            int moved = bits + sign * k;
            if (!keepsClass(bits, moved)) {
                moved = bits - sign * k;
            }
            if (keepsClass(bits, moved)) {
                tensor.set(BF16, 2 * i, (short) moved);
                changed++;
            }
            i += 1 + (p >= 1 ? 0 : gap(random, logMiss));
        }
        return changed;
    }

    private static long gap(SplittableRandom random, double logMiss) {
        return (long) Math.floor(Math.log(1 - random.nextDouble()) / logMiss);
    }

    private static boolean keepsClass(int bits, int moved) {
        return moved >= 0 && moved <= 0xFFFF && (moved & 0x8000) == (bits & 0x8000) && (moved & 0x7F80) != 0x7F80;
    }

    /** Groups tensors, in model order, into chunks that each close once they reach their share of the bytes. */
    private static List<List<Integer>> cut(List<TensorData> tensors, int chunkCount) {
        long total = 0;
        for (TensorData t : tensors) {
            total += t.bytes().byteSize();
        }
        List<List<Integer>> out = new ArrayList<>();
        List<Integer> current = new ArrayList<>();
        long seen = 0;
        for (int i = 0; i < tensors.size(); i++) {
            current.add(i);
            seen += tensors.get(i).bytes().byteSize();
            if (seen * chunkCount >= total * (out.size() + 1) && out.size() + 1 < chunkCount) {
                out.add(List.copyOf(current));
                current.clear();
            }
        }
        if (!current.isEmpty()) {
            out.add(List.copyOf(current));
        }
        return Collections.unmodifiableList(out);
    }

    int chunkCount() {
        return chunks.size();
    }

    List<TensorData> oldChunk(int chunk) {
        return pick(oldTensors, chunk);
    }

    List<TensorData> newChunk(int chunk) {
        return pick(newTensors, chunk);
    }

    private List<TensorData> pick(List<TensorData> from, int chunk) {
        List<TensorData> out = new ArrayList<>();
        for (int i : chunks.get(chunk)) {
            out.add(from.get(i));
        }
        return out;
    }

    long modelBytes() {
        return base.byteSize();
    }

    long changedElements() {
        return changedElements;
    }

    long elementCount() {
        return base.elementCount();
    }

    /** Digest of the trainer's new weights, what the engine must report once it serves v+1. */
    String newDigest() {
        Map<String, MemorySegment> m = new LinkedHashMap<>();
        for (TensorData t : newTensors) {
            m.put(t.name(), t.bytes());
        }
        return WeightsDigest.of(m);
    }

    /** HF shard name of chunk {@code chunk} (1-based numbering, as HF checkpoints use). */
    String shardName(int chunk) {
        return String.format("model-%05d-of-%05d.safetensors", chunk + 1, chunks.size());
    }

    /** Writes the served weights as a sharded HF checkpoint in {@code dir}, one shard per chunk, with its index. */
    void writeBaseCheckpoint(Path dir) throws IOException {
        Files.createDirectories(dir);
        ObjectMapper json = new ObjectMapper();
        ObjectNode index = json.createObjectNode();
        index.putObject("metadata").put("total_size", modelBytes());
        ObjectNode weightMap = index.putObject("weight_map");
        for (int c = 0; c < chunks.size(); c++) {
            List<TensorData> tensors = oldChunk(c);
            writeShard(dir.resolve(shardName(c)), tensors);
            for (TensorData t : tensors) {
                weightMap.put(t.name(), shardName(c));
            }
        }
        Files.writeString(dir.resolve(Checkpoint.INDEX), json.writeValueAsString(index));
    }

    static void writeShard(Path file, List<TensorData> tensors) throws IOException {
        Map<String, MemorySegment> byName = new LinkedHashMap<>();
        List<TensorSpec> specs = new ArrayList<>();
        for (TensorData t : tensors) {
            byName.put(t.name(), t.bytes());
            specs.add(t.spec());
        }
        SafetensorsWriter.Layout layout = SafetensorsWriter.layout(Map.of("format", "pt"), specs);
        try (FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            SafetensorsWriter.write(out, layout, byName::get);
        }
    }

    @Override
    public void close() {
        arena.close();
        base.close();
    }
}
