package dev.stitch.s3;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import dev.stitch.board.store.ObjectInfo;
import dev.stitch.board.store.ObjectStore;
import dev.stitch.board.store.ObjectStores;
import dev.stitch.board.store.PreconditionFailedException;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.s3.testing.S3ProxyProcess;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two writers create the same key at once (docs/protocol/board.md §7): exactly one wins, the other
 * is refused with {@link PreconditionFailedException}, and the object is the winner's, whole.
 */
class S3ObjectStoreRaceTest {
    private static final String BUCKET = "race";

    private static S3ProxyProcess s3proxy;
    private static ObjectStore store;

    @TempDir
    Path tmp;

    @BeforeAll
    static void start() throws IOException {
        s3proxy = S3ProxyProcess.start();
        s3proxy.createBucket(BUCKET);
        store = ObjectStores.open(URI.create("s3://" + BUCKET + "/board"),
                s3proxy.options(StoreOptions.defaults().withPartBytes(StoreOptions.MIN_PART_BYTES).withConcurrency(2)));
    }

    @AfterAll
    static void stop() throws IOException {
        if (store != null) {
            store.close();
        }
        if (s3proxy != null) {
            s3proxy.close();
        }
    }

    /** What each writer does, given its name; returns what it wrote. */
    @FunctionalInterface
    private interface Writer {
        byte[] create(String writer) throws IOException;
    }

    /** Runs both writers from one barrier; returns the name of the one that won. */
    private static String race(String key, Writer write) throws Exception {
        CyclicBarrier start = new CyclicBarrier(2);
        List<Future<byte[]>> results = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(2)) {
            for (String writer : List.of("a", "b")) {
                results.add(pool.submit(() -> {
                    start.await();
                    return write.create(writer);
                }));
            }
        }
        List<String> winners = new ArrayList<>();
        List<Throwable> refusals = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            try {
                results.get(i).get();
                winners.add(i == 0 ? "a" : "b");
            } catch (ExecutionException e) {
                refusals.add(e.getCause());
            }
        }
        assertEquals(1, winners.size(), "exactly one create of " + key + " wins; refusals: " + refusals);
        PreconditionFailedException refusal = assertInstanceOf(PreconditionFailedException.class, refusals.getFirst());
        assertEquals(key, refusal.key());
        String winner = winners.getFirst();
        assertEquals(winner, store.stat(key).orElseThrow().metadata().get("stitch-writer"));
        return winner;
    }

    @RepeatedTest(20)
    void twoCreatesOfOneDocumentOneWins(org.junit.jupiter.api.RepetitionInfo repetition) throws Exception {
        String key = "versions/weight_v" + String.format("%06d", repetition.getCurrentRepetition()) + "/manifest.json";
        String winner = race(key, writer -> {
            byte[] bytes = ("{\"writer\":\"" + writer + "\"}").getBytes(StandardCharsets.UTF_8);
            store.create(key, bytes, Map.of("stitch-writer", writer));
            return bytes;
        });
        assertArrayEquals(("{\"writer\":\"" + winner + "\"}").getBytes(StandardCharsets.UTF_8), store.read(key, null, 1 << 10).bytes());
    }

    @Test
    void twoMultipartCreatesOfOneFileOneWinsAndNoUploadIsLeft() throws Exception {
        int size = StoreOptions.MIN_PART_BYTES + 4096;
        Map<String, byte[]> contents = Map.of("a", bytes(size, 1), "b", bytes(size, 2));
        for (String writer : contents.keySet()) {
            Files.write(tmp.resolve(writer + ".bin"), contents.get(writer));
        }
        for (int round = 1; round <= 3; round++) {
            String key = "versions/weight_v00010" + round + "/delta.bin";
            String winner = race(key, writer -> {
                store.create(key, tmp.resolve(writer + ".bin"), Map.of("stitch-writer", writer));
                return contents.get(writer);
            });
            ObjectInfo info = store.stat(key).orElseThrow();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            store.readRange(key, 0, size, info.etag(), chunk -> {
                byte[] b = new byte[chunk.remaining()];
                chunk.get(b);
                out.write(b, 0, b.length);
            });
            assertArrayEquals(contents.get(winner), out.toByteArray());
        }
        assertEquals(List.of(), store.pendingUploads(""), "the refused upload is aborted");
    }

    private static byte[] bytes(int n, long seed) {
        byte[] b = new byte[n];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }
}
