package dev.stitch.refengine;

import io.netty.channel.EventLoop;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * One sequence being generated. Token {@code i} is a pure function of the prompt, the weights digest
 * captured when generation started, and {@code i}; tokens are emitted one per token latency on the
 * connection's event loop, which is the only thread that touches this object's fields. Stepping
 * stops while the engine is paused ({@link #resume()} continues it) and while the sink is not ready
 * for another token ({@link #proceed()} continues it).
 */
final class Generation {
    static final int VOCAB = 50_000;
    /** Tokens made in one event-loop task without token latency, so that other connections get their turn. */
    private static final int TOKENS_PER_TASK = 64;

    /** Receives the progress of generations. */
    interface Sink {
        /** Whether the next token may be made now; false holds the generation until {@link #proceed()}. */
        boolean readyForToken(Generation g);

        void onToken(Generation g);

        void onFinish(Generation g);
    }

    private final ReferenceEngine engine;
    private final Sink sink;
    private final EventLoop loop;
    private final String rid;
    private final String prompt;
    private final int promptTokens;
    private final int maxTokens;
    private final int index;
    private final long latencyNanos;
    private final long createdNanos = System.nanoTime();
    private final List<Integer> ids = new ArrayList<>();
    private final StringBuilder text = new StringBuilder();
    private int taken;
    private ReferenceEngine.Snapshot snapshot;
    private SplittableRandom random;
    /** The scheduled step, null while none is; at most one is, so stepping never runs twice over. */
    private ScheduledFuture<?> next;
    private boolean started;
    private boolean finished;
    private String finishType;
    private String finishMessage;

    Generation(ReferenceEngine engine, Sink sink, EventLoop loop, String rid, String prompt, int promptTokens,
               int maxTokens, int index) {
        this.engine = engine;
        this.sink = sink;
        this.loop = loop;
        this.rid = rid;
        this.prompt = prompt;
        this.promptTokens = promptTokens;
        this.maxTokens = maxTokens;
        this.index = index;
        this.latencyNanos = engine.config().tokenLatency().toNanos();
    }

    /** Starts now, or when generation continues if the engine is paused. */
    void start() {
        if (finished || started) {
            return;
        }
        if (!engine.register(this, () -> loop.execute(this::start))) {
            return;
        }
        started = true;
        snapshot = engine.snapshot();
        random = new SplittableRandom(seed(prompt, snapshot.digest()));
        if (maxTokens <= 0) {
            finish("length", null);
            return;
        }
        queueStep();
    }

    /**
     * Schedules the next step even without latency: Netty runs queued tasks for up to a second before
     * it polls sockets again, but takes scheduled ones once per turn, so aborts and other clients interleave.
     */
    private void queueStep() {
        next = loop.schedule(this::step, latencyNanos, TimeUnit.NANOSECONDS);
    }

    private void step() {
        next = null;
        int made = 0;
        while (!finished) {
            if (engine.suspendIfPaused(this) || !sink.readyForToken(this)) {
                return;
            }
            int id = random.nextInt(VOCAB);
            ids.add(id);
            engine.tokenGenerated();
            text.append(" w").append(Integer.toString(id, 36));
            if (ids.size() >= maxTokens) {
                finish("length", null);
                return;
            }
            sink.onToken(this);
            if (latencyNanos > 0 || ++made == TOKENS_PER_TASK) {
                queueStep();
                return;
            }
        }
    }

    /** Continues after a pause (called from any thread). */
    void resume() {
        loop.execute(this::proceed);
    }

    /** Continues a generation that stopped stepping, unless it is finished or already stepping; on the loop. */
    void proceed() {
        if (started && !finished && next == null) {
            step();
        }
    }

    /** Ends the generation with finish reason {@code abort} (called from any thread). */
    void abort(String message) {
        loop.execute(() -> finish("abort", message));
    }

    private void finish(String type, String message) {
        if (finished) {
            return;
        }
        finished = true;
        finishType = type;
        finishMessage = message;
        if (next != null) {
            next.cancel(false);
            next = null;
        }
        if (snapshot == null) {
            snapshot = engine.snapshot();
        }
        engine.unregister(this);
        sink.onFinish(this);
    }

    String rid() {
        return rid;
    }

    int index() {
        return index;
    }

    String text() {
        return text.toString();
    }

    /** The text generated since the previous call, for OpenAI stream deltas. */
    String takeNewText() {
        String piece = text.substring(taken);
        taken = text.length();
        return piece;
    }

    List<Integer> outputIds() {
        return ids;
    }

    int promptTokens() {
        return promptTokens;
    }

    boolean finished() {
        return finished;
    }

    String finishType() {
        return finishType;
    }

    String finishMessage() {
        return finishMessage;
    }

    ReferenceEngine.Snapshot snapshot() {
        return snapshot;
    }

    double elapsedSeconds() {
        return (System.nanoTime() - createdNanos) / 1e9;
    }

    /** FNV-1a over the prompt and the digest: the whole dependence of the output on its inputs. */
    static long seed(String prompt, String digest) {
        long h = 0xcbf29ce484222325L;
        for (byte b : prompt.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ (b & 0xff)) * 0x100000001b3L;
        }
        h = (h ^ 0xff) * 0x100000001b3L;
        for (byte b : digest.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ (b & 0xff)) * 0x100000001b3L;
        }
        return h;
    }
}
