package dev.stitch.kernels;

import dev.stitch.hash.Xxh3Provider;
import dev.stitch.hash.Xxh3Stream;

/** Offers the selected kernels' streaming xxh3 to {@link dev.stitch.hash.Xxh3#newStream()} (registered as a service). */
public final class KernelXxh3Provider implements Xxh3Provider {

    public KernelXxh3Provider() {
    }

    @Override
    public Xxh3Stream newStream() {
        return Kernels.get().newXxh3Stream();
    }
}
