package dev.stitch.encode;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs numbered tasks on a fixed set of workers, the caller being worker 0. Each worker knows its
 * number so it can reuse its own scratch memory; tasks are claimed in order from a shared counter,
 * so results never depend on which worker ran what. The encoder owns one; format writers borrow it so
 * a publisher's thread count bounds all of its work.
 */
public final class ChunkRunner implements AutoCloseable {

    /** One task, told which worker runs it. */
    @FunctionalInterface
    public interface Task {
        void run(int worker, int task) throws Exception;
    }

    private final int threads;
    private final ExecutorService pool;

    public ChunkRunner(int threads, String name) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        }
        this.threads = threads;
        AtomicInteger ids = new AtomicInteger();
        this.pool = threads == 1 ? null : Executors.newFixedThreadPool(threads - 1, r -> {
            Thread t = new Thread(r, name + "-" + ids.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    public int threads() {
        return threads;
    }

    /** Runs tasks {@code 0 .. count-1}; returns when all finished, rethrowing the first failure. */
    public void run(int count, Task task) {
        AtomicInteger next = new AtomicInteger();
        Throwable[] failure = new Throwable[1];
        Runnable worker0 = worker(0, count, next, task, failure);
        int helpers = Math.min(threads - 1, Math.max(0, count - 1));
        List<Future<?>> futures = new ArrayList<>(helpers);
        for (int w = 1; w <= helpers; w++) {
            futures.add(pool.submit(worker(w, count, next, task, failure)));
        }
        worker0.run();
        for (Future<?> f : futures) {
            try {
                f.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                next.set(count);
                throw new IllegalStateException("interrupted while waiting for workers", e);
            } catch (ExecutionException e) {
                record(failure, e.getCause());
            }
        }
        Throwable t;
        synchronized (failure) {
            t = failure[0];
        }
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error err) {
            throw err;
        }
        if (t != null) {
            throw new IllegalStateException(t.getMessage(), t);
        }
    }

    private static Runnable worker(int id, int count, AtomicInteger next, Task task, Throwable[] failure) {
        return () -> {
            int i;
            while ((i = next.getAndIncrement()) < count) {
                try {
                    task.run(id, i);
                } catch (Throwable t) {
                    record(failure, t);
                    next.set(count);
                    return;
                }
            }
        };
    }

    private static void record(Throwable[] failure, Throwable t) {
        synchronized (failure) {
            if (failure[0] == null) {
                failure[0] = t;
            }
        }
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.shutdownNow();
        }
    }
}
