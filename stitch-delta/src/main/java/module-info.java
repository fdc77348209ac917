/**
 * Safetensors checkpoints, the delta formats, the encoder and applier, and the trainer-side
 * {@code WeightPublisher}; the publisher with its options, digests and safetensors are the API, the
 * applier and the format readers and writers serve the sidecar.
 */
@SuppressWarnings({"module", "requires-automatic"}) // qualified exports name a module built later; DJL has only an automatic name
module dev.stitch.delta {
    requires transitive dev.stitch.core;
    requires transitive dev.stitch.natives;
    requires com.github.luben.zstd_jni;
    requires org.slf4j;
    // The publisher's wake notification to rollout hosts is one HTTP POST each.
    requires java.net.http;
    // DJL is optional: only DjlWeights touches it, for trainers that already have it.
    requires static ai.djl.api;

    exports dev.stitch.digest;
    exports dev.stitch.encode;
    exports dev.stitch.format;
    exports dev.stitch.format.sparse;
    exports dev.stitch.publish;
    exports dev.stitch.safetensors;
    exports dev.stitch.apply to dev.stitch.sidecar;
    exports dev.stitch.format.disk to dev.stitch.sidecar;
    exports dev.stitch.format.full to dev.stitch.sidecar;
    exports dev.stitch.format.stitchdelta to dev.stitch.sidecar;
}
