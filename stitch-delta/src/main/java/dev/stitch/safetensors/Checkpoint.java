package dev.stitch.safetensors;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A Hugging Face checkpoint directory seen as one map of tensors: name → spec and bytes, over one
 * {@code model.safetensors} or the shards of {@code model.safetensors.index.json}. Every shard is
 * memory-mapped (read-only, or read-write for the host applier) and validated on open.
 */
public final class Checkpoint implements AutoCloseable {

    /** File name of the shard index. */
    public static final String INDEX = "model.safetensors.index.json";
    /** File name of a single-file checkpoint. */
    public static final String SINGLE = "model.safetensors";

    private final Path dir;
    private final Map<String, SafetensorsFile> files;
    private final Map<String, Located> tensors;

    private record Located(SafetensorsFile file, String fileName, TensorEntry entry) {
    }

    private Checkpoint(Path dir, Map<String, SafetensorsFile> files, Map<String, Located> tensors) {
        this.dir = dir;
        this.files = files;
        this.tensors = tensors;
    }

    /** Opens a checkpoint read-only. */
    public static Checkpoint open(Path dir) throws IOException {
        return open(dir, false);
    }

    /**
     * Opens a checkpoint: through its index when present (every {@code weight_map} entry must name a
     * tensor of the mapped shard, and every shard tensor must be in the map), otherwise every
     * {@code *.safetensors} file in the directory. Names must be unique across shards.
     */
    public static Checkpoint open(Path dir, boolean writable) throws IOException {
        List<String> fileNames = weightFiles(dir);
        Map<String, String> weightMap = readWeightMap(dir);
        Map<String, SafetensorsFile> files = new LinkedHashMap<>();
        Map<String, Located> tensors = new TreeMap<>(SafetensorsWriter::compareUtf8);
        try {
            for (String f : fileNames) {
                SafetensorsFile sf = SafetensorsFile.open(dir.resolve(f), writable);
                files.put(f, sf);
                for (TensorEntry e : sf.header().tensors()) {
                    Located prev = tensors.put(e.name(), new Located(sf, f, e));
                    if (prev != null) {
                        throw new SafetensorsFormatException(dir + ": tensor '" + e.name() + "' is in both " + prev.fileName() + " and " + f);
                    }
                }
            }
            if (weightMap != null) {
                for (Map.Entry<String, String> m : weightMap.entrySet()) {
                    Located l = tensors.get(m.getKey());
                    if (l == null || !l.fileName().equals(m.getValue())) {
                        throw new SafetensorsFormatException(dir + ": index maps '" + m.getKey() + "' to " + m.getValue()
                            + " but " + (l == null ? "no shard holds it" : "it is in " + l.fileName()));
                    }
                }
                if (weightMap.size() != tensors.size()) {
                    throw new SafetensorsFormatException(dir + ": shards hold " + tensors.size() + " tensors but the index maps " + weightMap.size());
                }
            }
        } catch (IOException | RuntimeException e) {
            files.values().forEach(SafetensorsFile::close);
            throw e;
        }
        return new Checkpoint(dir, files, tensors);
    }

    /**
     * The weight files of a checkpoint directory, relative names sorted: the distinct shards of the
     * index when there is one, else every {@code *.safetensors} file.
     */
    public static List<String> weightFiles(Path dir) throws IOException {
        Map<String, String> weightMap = readWeightMap(dir);
        if (weightMap != null) {
            List<String> names = new ArrayList<>(new java.util.TreeSet<>(weightMap.values()));
            for (String n : names) {
                if (n.isEmpty() || n.contains("/") || n.contains("\\") || n.equals("..") || n.equals(".")) {
                    throw new SafetensorsFormatException(dir.resolve(INDEX) + ": shard name '" + n + "' is not a plain file name");
                }
            }
            return names;
        }
        if (!Files.isDirectory(dir)) {
            throw new IOException(dir + " is not a directory");
        }
        try (Stream<Path> s = Files.list(dir)) {
            List<String> names = s.filter(Files::isRegularFile)
                .map(p -> p.getFileName().toString())
                .filter(n -> n.endsWith(".safetensors") && !n.startsWith("."))
                .sorted()
                .toList();
            if (names.isEmpty()) {
                throw new IOException(dir + " holds no *.safetensors file");
            }
            return names;
        }
    }

    /** The index's {@code weight_map}, or null when the directory has no index. */
    public static Map<String, String> readWeightMap(Path dir) throws IOException {
        Path index = dir.resolve(INDEX);
        if (!Files.exists(index)) {
            return null;
        }
        JsonNode root;
        try {
            root = SafetensorsHeader.JSON.readTree(Files.readAllBytes(index));
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new SafetensorsFormatException(index + ": not valid JSON: " + e.getOriginalMessage(), e);
        }
        if (root == null || !root.isObject() || !root.path("weight_map").isObject()) {
            throw new SafetensorsFormatException(index + ": no weight_map object");
        }
        Map<String, String> map = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = root.get("weight_map").properties().iterator();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            if (!e.getValue().isTextual()) {
                throw new SafetensorsFormatException(index + ": weight_map value of '" + e.getKey() + "' is not a string");
            }
            map.put(e.getKey(), e.getValue().textValue());
        }
        return map;
    }

    public Path directory() {
        return dir;
    }

    /** Tensor names in byte order. */
    public List<String> names() {
        return List.copyOf(tensors.keySet());
    }

    public boolean contains(String name) {
        return tensors.containsKey(name);
    }

    /** Spec of {@code name}, or null when absent. */
    public TensorSpec spec(String name) {
        Located l = tensors.get(name);
        return l == null ? null : l.entry().spec();
    }

    /** All specs in name order. */
    public List<TensorSpec> specs() {
        List<TensorSpec> out = new ArrayList<>(tensors.size());
        tensors.values().forEach(l -> out.add(l.entry().spec()));
        return out;
    }

    /** The bytes of {@code name} (a slice of the mapped shard); throws when absent. */
    public MemorySegment tensor(String name) {
        Located l = tensors.get(name);
        if (l == null) {
            throw new IllegalArgumentException(dir + ": no tensor '" + name + "'");
        }
        return l.file().tensor(l.entry());
    }

    /** The shard file name holding {@code name}, or null. */
    public String fileOf(String name) {
        Located l = tensors.get(name);
        return l == null ? null : l.fileName();
    }

    /** Absolute byte offset of {@code name} inside its shard file. */
    public long fileOffsetOf(String name) {
        Located l = tensors.get(name);
        if (l == null) {
            throw new IllegalArgumentException(dir + ": no tensor '" + name + "'");
        }
        return l.file().header().dataStart() + l.entry().begin();
    }

    /** The opened shards by relative file name. */
    public Map<String, SafetensorsFile> files() {
        return Collections.unmodifiableMap(files);
    }

    /** Sum of tensor bytes. */
    public long totalBytes() {
        long n = 0;
        for (Located l : tensors.values()) {
            n += l.entry().byteLength();
        }
        return n;
    }

    /** Forces every writable shard mapping to disk. */
    public void force() {
        files.values().forEach(SafetensorsFile::force);
    }

    @Override
    public void close() {
        files.values().forEach(SafetensorsFile::close);
    }
}
