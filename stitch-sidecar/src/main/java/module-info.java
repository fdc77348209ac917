/**
 * The rollout side: the sync control plane, the Netty proxy that admits requests by weight version,
 * SGLang adapters, the reference engine, the zero-GPU rehearsal kit and the {@code stitch} CLI.
 */
module dev.stitch.sidecar {
    requires transitive dev.stitch.delta;
    requires transitive info.picocli;
    // The proxy's event-loop choice hands out Netty channel types.
    requires transitive io.netty.transport;
    requires io.netty.buffer;
    requires io.netty.codec;
    requires io.netty.codec.http;
    requires io.netty.common;
    requires io.netty.handler;
    requires io.netty.transport.classes.epoll;
    requires java.management;
    requires java.net.http;
    // the wake fan-out endpoint's small HTTP server
    requires jdk.httpserver;
    requires org.slf4j;
    // s3:// boards: nothing here names its classes, but the store provider must be in the module graph.
    requires dev.stitch.s3;

    exports dev.stitch.cli;
    exports dev.stitch.engine;
    exports dev.stitch.fanout;
    exports dev.stitch.refengine;
    exports dev.stitch.router;
    exports dev.stitch.rehearsal;
    exports dev.stitch.sidecar;
    exports dev.stitch.sidecar.proxy;
    exports dev.stitch.sync;

    // picocli sets the commands' option fields by reflection.
    opens dev.stitch.cli to info.picocli;

    uses dev.stitch.cli.StitchSubcommand;
    provides dev.stitch.cli.StitchSubcommand with
            dev.stitch.cli.BoardCommand,
            dev.stitch.cli.PublishCommand,
            dev.stitch.cli.ApplyCommand,
            dev.stitch.cli.InspectCommand,
            dev.stitch.cli.SidecarCommand,
            dev.stitch.cli.RefEngineCommand,
            dev.stitch.cli.DoctorCommand,
            dev.stitch.cli.FanOutCommand,
            dev.stitch.cli.RouterCommand;
}
