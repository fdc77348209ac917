package dev.stitch.demo;

import dev.stitch.cli.ByteSize;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What one demo run proved: the published versions with their sizes and timings, the rollout
 * traffic by served version, and the two correctness verdicts (no mislabeled response, equal final
 * digests). Printed as a table and written as the {@code --json} object of docs/protocol/cli-and-config.md §10.3.
 */
record DemoSummary(String mode, String backend, String commitMode, String pattern, double density,
                   long modelBytes, long fullBytes, List<VersionRecord> versions,
                   RolloutClients.Tally traffic, String trainerDigest, String engineDigest, double elapsedSeconds) {

    /** One published version as the trainer and the sidecar saw it; times in milliseconds, -1 when unknown. */
    record VersionRecord(long version, long changedElements, double density, long bytesWritten, String backend,
                         double encodeMs, double publishMs, double catchUpMs, double applyMs, double reloadMs) {
    }

    boolean digestMatch() {
        return trainerDigest != null && trainerDigest.equals(engineDigest);
    }

    /** The verdict the exit code reports: every response proved to be served by the stamped weights, and the fleet caught up. */
    boolean passed() {
        return traffic.mislabeled() == 0 && traffic.constraintViolations() == 0 && digestMatch();
    }

    Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("versions", versions.size());
        m.put("requests", traffic.served());
        m.put("mislabeled", traffic.mislabeled());
        m.put("digest_match", digestMatch());
        List<Long> bytes = new ArrayList<>();
        for (VersionRecord v : versions) {
            bytes.add(v.bytesWritten());
        }
        m.put("bytes_per_version", bytes);
        m.put("full_bytes", fullBytes);
        m.put("mode", mode);
        m.put("backend", backend);
        m.put("commit_mode", commitMode);
        m.put("pattern", pattern);
        m.put("density", density);
        m.put("model_bytes", modelBytes);
        Map<String, Long> byVersion = new LinkedHashMap<>();
        traffic.servedByVersion().forEach((v, c) -> byVersion.put(Long.toString(v), c));
        m.put("requests_by_version", byVersion);
        m.put("requests_pinned", traffic.servedPinned());
        m.put("requests_bounded", traffic.servedBounded());
        m.put("conflicts_409", traffic.conflicts());
        m.put("not_ready_409", traffic.notReady());
        m.put("too_old_409", traffic.tooOld());
        m.put("errors", traffic.errors());
        m.put("constraint_violations", traffic.constraintViolations());
        m.put("crossed_commit", traffic.crossedCommit());
        m.put("trainer_digest", trainerDigest);
        m.put("engine_digest", engineDigest);
        List<Map<String, Object>> per = new ArrayList<>();
        for (VersionRecord v : versions) {
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("version", v.version());
            r.put("backend", v.backend());
            r.put("changed_elements", v.changedElements());
            r.put("density", v.density());
            r.put("bytes", v.bytesWritten());
            r.put("encode_ms", v.encodeMs());
            r.put("publish_ms", v.publishMs());
            r.put("catch_up_ms", v.catchUpMs());
            r.put("apply_ms", v.applyMs());
            r.put("reload_ms", v.reloadMs());
            per.add(r);
        }
        m.put("per_version", per);
        m.put("elapsed_s", elapsedSeconds);
        if (traffic.firstProblem() != null) {
            m.put("first_problem", traffic.firstProblem());
        }
        return m;
    }

    void writeJson(Path file) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(file.toFile(), toJson());
    }

    void print(PrintStream out) {
        out.println();
        out.println("summary");
        out.printf(Locale.ROOT, "  versions published      %d (%s, %s mode, %s commits)%n", versions.size(), backend, mode, commitMode);
        long total = 0;
        for (VersionRecord v : versions) {
            total += v.bytesWritten();
        }
        long mean = versions.isEmpty() ? 0 : total / versions.size();
        out.printf(Locale.ROOT, "  bytes per version       %s mean vs %s full checkpoint (%.1f%%, %.0fx smaller)%n",
                ByteSize.human(mean), ByteSize.human(fullBytes), fullBytes == 0 ? 0.0 : 100.0 * mean / fullBytes,
                mean == 0 ? 0.0 : (double) fullBytes / mean);
        out.printf(Locale.ROOT, "  encode / publish        %s / %s ms per version (mean)%n",
                ms(mean(versions, VersionRecord::encodeMs)), ms(mean(versions, VersionRecord::publishMs)));
        if (mode.equals("engine")) {
            out.printf(Locale.ROOT, "  engine apply            %s ms per sidecar commit (mean; the engine applies the delta files itself)%n",
                    ms(mean(versions, VersionRecord::reloadMs)));
        } else {
            out.printf(Locale.ROOT, "  apply / reload          %s / %s ms per sidecar commit (mean; host apply, then one engine reload)%n",
                    ms(mean(versions, VersionRecord::applyMs)), ms(mean(versions, VersionRecord::reloadMs)));
        }
        out.printf(Locale.ROOT, "  sidecar catch-up        %s ms after publish (mean)%n", ms(mean(versions, VersionRecord::catchUpMs)));
        StringBuilder byVersion = new StringBuilder();
        traffic.servedByVersion().forEach((v, c) -> byVersion.append(byVersion.isEmpty() ? "" : "  ").append('v').append(v).append('=').append(c));
        out.printf(Locale.ROOT, "  requests served         %d (%d pinned exact_version, %d bounded min_required_version)%n",
                traffic.served(), traffic.servedPinned(), traffic.servedBounded());
        out.printf(Locale.ROOT, "    by version            %s%n", byVersion);
        out.printf(Locale.ROOT, "  409 responses           %d (%d not ready, %d too old), retried by the clients%n",
                traffic.conflicts(), traffic.notReady(), traffic.tooOld());
        out.printf(Locale.ROOT, "  other errors            %d%n", traffic.errors());
        out.printf(Locale.ROOT, "  mislabeled responses    %d%s%n", traffic.mislabeled(), traffic.mislabeled() == 0 ? "" : "   <-- FAILED");
        if (traffic.crossedCommit() > 0) {
            out.printf(Locale.ROOT, "  crossed a commit        %d (in_place: not pinned, stamped start < end, served by newer weights)%n",
                    traffic.crossedCommit());
        }
        if (traffic.constraintViolations() > 0) {
            out.printf(Locale.ROOT, "  constraint violations   %d   <-- FAILED%n", traffic.constraintViolations());
        }
        out.printf(Locale.ROOT, "  final weights digest    trainer %s%n", trainerDigest);
        out.printf(Locale.ROOT, "                          engine  %s  %s%n", engineDigest, digestMatch() ? "(equal)" : "<-- DIFFERENT");
        if (traffic.firstProblem() != null) {
            out.printf(Locale.ROOT, "  first problem           %s%n", traffic.firstProblem());
        }
        out.printf(Locale.ROOT, "  elapsed                 %.1f s%n", elapsedSeconds);
        out.println(passed() ? "OK: every response was served by the weights its version stamp names."
                : "FAILED: see the lines marked above.");
    }

    private static double mean(List<VersionRecord> versions, java.util.function.ToDoubleFunction<VersionRecord> f) {
        double sum = 0;
        int n = 0;
        for (VersionRecord v : versions) {
            double x = f.applyAsDouble(v);
            if (x >= 0) {
                sum += x;
                n++;
            }
        }
        return n == 0 ? -1 : sum / n;
    }

    static String ms(double v) {
        return v < 0 ? "-" : String.format(Locale.ROOT, "%.0f", v);
    }
}
