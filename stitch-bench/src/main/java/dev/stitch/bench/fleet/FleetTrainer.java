package dev.stitch.bench.fleet;

import dev.stitch.board.BoardAddress;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.RemoteBoardOptions;
import dev.stitch.board.RemoteBulletinBoard;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.format.DeltaFormat;
import dev.stitch.publish.PublishResult;
import dev.stitch.publish.WeightPublisher;
import dev.stitch.rehearsal.SyntheticModel;
import dev.stitch.rehearsal.TrainerStep;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The trainer of {@code stitch bench fleet}, run as a child process in datacenter A (inside its
 * network namespace) so that its uploads to the board do not cross the link being measured. It
 * writes the base checkpoint and answers {@code ready}; then reads {@code notify <url,url,...>} (the
 * sidecars to wake after each publish, or {@code -} for none) and publishes one version per
 * {@code publish} line, answering {@code published <v> <epoch micros> <bytes>} once the pointer moved.
 *
 * <p>Arguments: endpoint, board URI, model bytes, density, anchor interval, base checkpoint directory,
 * delta format ({@code sparse_delta} for engine-mode hosts, {@code stitch_delta} for host mode).
 */
public final class FleetTrainer {
    private FleetTrainer() {
    }

    public static void main(String[] args) throws Exception {
        URI endpoint = URI.create(args[0]);
        BoardAddress address = BoardAddress.parse(args[1]);
        long modelBytes = Long.parseLong(args[2]);
        double density = Double.parseDouble(args[3]);
        int anchorInterval = Integer.parseInt(args[4]);
        Path base = Path.of(args[5]);
        DeltaFormat format = DeltaFormat.parse(args[6]);
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        StoreOptions store = StoreOptions.defaults().withS3Endpoint(endpoint, true);
        try (SyntheticModel model = SyntheticModel.generate(modelBytes, 17);
             RemoteBulletinBoard board = RemoteBulletinBoard.create(address, "fleet", BoardOptions.defaults(),
                     RemoteBoardOptions.defaults(address).withCacheDir(base.resolveSibling("trainer-cache")).withStore(store))) {
            model.writeCheckpoint(base);
            TrainerStep step = new TrainerStep(density, TrainerStep.Pattern.parse("uniform"), 23);
            out.println("ready");
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String notify = in.readLine();
            List<URI> wake = new ArrayList<>();
            if (notify != null && notify.startsWith("notify ") && !notify.equals("notify -")) {
                for (String u : notify.substring("notify ".length()).split(",")) {
                    wake.add(URI.create(u));
                }
            }
            try (WeightPublisher publisher = WeightPublisher.builder().board(board).runId("fleet")
                    .backends(format, DeltaFormat.FULL).anchorInterval(anchorInterval).threads(1)
                    .recordWeightsDigest(true).notify(wake, null).seedFrom(base).build()) {
                String line;
                long v = 0;
                while ((line = in.readLine()) != null) {
                    if (!line.equals("publish")) {
                        break;
                    }
                    v++;
                    step.apply(model.tensors(), v);
                    PublishResult r = publisher.publish(v, model.weights());
                    Instant at = Instant.now();
                    out.println("published " + v + " " + (at.getEpochSecond() * 1_000_000 + at.getNano() / 1000) + " "
                            + r.bytesWritten());
                }
            }
        }
    }
}
