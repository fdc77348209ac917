package dev.stitch.router;

import io.netty.util.concurrent.EventExecutor;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Requests parked until the fleet's view next changes (docs/protocol/router.md §2.4): a request whose version a
 * replica is catching up to waits here instead of being answered 409 while the router's view is a state answer
 * behind. Each waiter runs once, on its own event loop, at the next change or at its deadline.
 */
final class FleetChangeWaiters {
    private final ConcurrentLinkedQueue<Waiter> waiters = new ConcurrentLinkedQueue<>();

    /** Runs {@code then} on {@code loop} after the next fleet change, or after {@code timeoutMs} at the latest. */
    void await(EventExecutor loop, long timeoutMs, Runnable then) {
        Waiter w = new Waiter(loop, then);
        waiters.add(w);
        loop.schedule(() -> {
            waiters.remove(w);
            w.fire();
        }, Math.max(1, timeoutMs), TimeUnit.MILLISECONDS);
    }

    /** The fleet's view changed: every parked request looks again. */
    void changed() {
        Waiter w;
        while ((w = waiters.poll()) != null) {
            Waiter fired = w;
            fired.loop.execute(fired::fire);
        }
    }

    private static final class Waiter {
        final EventExecutor loop;
        final Runnable then;
        final AtomicBoolean done = new AtomicBoolean();

        Waiter(EventExecutor loop, Runnable then) {
            this.loop = loop;
            this.then = then;
        }

        void fire() {
            if (done.compareAndSet(false, true)) {
                then.run();
            }
        }
    }
}
