package dev.stitch.bench.simulate;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Runs one version through encode (trainer), transfer (throttled link) and apply (rollout host) as a
 * real pipeline: each stage is one thread fed in chunk order, so all three overlap, and the engine
 * reload starts when the last chunk is applied. Time-to-serve runs from the trainer's step end (the
 * moment the first chunk may be encoded) to reload done.
 */
final class SimulationPipeline {

    /**
     * Measured busy time of each stage and the end-to-end time of one version.
     *
     * @param transferDoneS seconds from the step end until the last file had crossed the link
     * @param received      the files that crossed, relative to the rollout-side board copy, in chunk order
     */
    record Result(double encodeS, double transferS, double applyS, double reloadS, double timeToServeS,
                  long bytes, int files, double transferDoneS, List<String> received) {

        double slowestStageS() {
            return Math.max(encodeS, Math.max(transferS, applyS));
        }

        double sequentialS() {
            return encodeS + transferS + applyS + reloadS;
        }
    }

    private record Chunk(int index, List<String> files) {
    }

    /** The engine reload after the last chunk is applied, ending with the first response served at v+1. */
    @FunctionalInterface
    interface Reload {
        void run() throws Exception;
    }

    private final ThrottledLink link;

    SimulationPipeline(ThrottledLink link) {
        this.link = link;
    }

    /**
     * Publishes, ships and applies one version; {@code trainerDir} and {@code rolloutDir} are the
     * two board copies (created, and expected empty).
     */
    Result run(ChunkCodec codec, Path trainerDir, Path rolloutDir, Reload reload) throws Exception {
        Files.createDirectories(trainerDir);
        Files.createDirectories(rolloutDir);
        AtomicLong encodeNanos = new AtomicLong();
        AtomicLong transferNanos = new AtomicLong();
        AtomicLong applyNanos = new AtomicLong();
        LongAdder bytes = new LongAdder();
        LongAdder files = new LongAdder();
        AtomicLong transferDone = new AtomicLong();
        List<String> received = Collections.synchronizedList(new ArrayList<>());

        ExecutorService encoder = stage("simulate-encode");
        ExecutorService wire = stage("simulate-transfer");
        ExecutorService applier = stage("simulate-apply");
        try {
            // Long-lived stage threads exist before the step ends, as a publisher's and a sidecar's would.
            CompletableFuture.allOf(CompletableFuture.runAsync(() -> { }, encoder), CompletableFuture.runAsync(() -> { }, wire),
                    CompletableFuture.runAsync(() -> { }, applier)).join();
            long stepEnd = System.nanoTime();
            transferDone.set(stepEnd);
            List<CompletableFuture<Chunk>> done = new ArrayList<>();
            for (int i = 0; i < codec.chunks(); i++) {
                int index = i;
                CompletableFuture<Chunk> chunk = CompletableFuture
                        .supplyAsync(() -> timed(encodeNanos, () -> new Chunk(index, codec.encode(index, trainerDir))), encoder)
                        .thenApplyAsync(c -> timed(transferNanos, () -> {
                            for (String f : c.files()) {
                                bytes.add(link.copy(trainerDir.resolve(f), rolloutDir.resolve(f)));
                                files.increment();
                                received.add(f);
                            }
                            transferDone.set(System.nanoTime());
                            return c;
                        }), wire)
                        .thenApplyAsync(c -> timed(applyNanos, () -> {
                            codec.apply(c.index(), rolloutDir, c.files());
                            return c;
                        }), applier);
                done.add(chunk);
            }
            try {
                CompletableFuture.allOf(done.toArray(CompletableFuture[]::new)).join();
            } catch (CompletionException e) {
                throw unwrap(e);
            }
            long reloadStart = System.nanoTime();
            reload.run();
            long served = System.nanoTime();
            double reloadS = (served - reloadStart) / 1e9;
            double timeToServe = (served - stepEnd) / 1e9;
            return new Result(encodeNanos.get() / 1e9, transferNanos.get() / 1e9, applyNanos.get() / 1e9, reloadS,
                    timeToServe, bytes.sum(), files.intValue(), (transferDone.get() - stepEnd) / 1e9, List.copyOf(received));
        } finally {
            encoder.shutdownNow();
            wire.shutdownNow();
            applier.shutdownNow();
        }
    }

    @FunctionalInterface
    private interface StageWork<T> {
        T call() throws Exception;
    }

    private static <T> T timed(AtomicLong busy, StageWork<T> work) {
        long t0 = System.nanoTime();
        try {
            return work.call();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new CompletionException(e);
        } finally {
            busy.addAndGet(System.nanoTime() - t0);
        }
    }

    private static ExecutorService stage(String name) {
        return Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
    }

    private static Exception unwrap(CompletionException e) {
        Throwable t = e;
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof Exception ex) {
            return ex;
        }
        if (t instanceof Error err) {
            throw err;
        }
        return new IllegalStateException(t);
    }
}
