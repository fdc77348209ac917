package dev.stitch.relay;

/**
 * One request on a client connection, from its arrival to the last byte of its answer. An {@link ExchangeQueue}
 * starts exchanges one at a time and tells the current one about its client; every call comes on the
 * connection's event loop.
 */
public interface Exchange {

    /** Begins work on the request; the exchange calls {@link ExchangeQueue#exchangeDone} once answered. */
    void start();

    /**
     * The client went away before the answer was complete.
     *
     * @return false when the exchange had already finished
     */
    boolean clientGone();

    /** The client's channel became writable or not: a relay pauses reading its upstream meanwhile. */
    void clientWritability(boolean writable);
}
