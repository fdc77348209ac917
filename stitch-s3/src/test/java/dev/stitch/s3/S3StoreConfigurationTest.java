package dev.stitch.s3;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.store.ObjectStore;
import dev.stitch.board.store.ObjectStores;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.s3.testing.S3ProxyProcess;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A store configured the AWS way, in a child JVM whose environment is all it has: credentials from
 * {@code AWS_ACCESS_KEY_ID}/{@code AWS_SECRET_ACCESS_KEY}, the endpoint from the SDK's own
 * {@code AWS_ENDPOINT_URL_S3} or {@code AWS_ENDPOINT_URL}, no region anywhere (the store signs for
 * us-east-1 because the endpoint is overridden); and no region without an endpoint is a clear error.
 */
class S3StoreConfigurationTest {
    private static final String BUCKET = "configured";

    private static S3ProxyProcess s3proxy;

    @BeforeAll
    static void start() throws IOException {
        s3proxy = S3ProxyProcess.start();
        s3proxy.createBucket(BUCKET);
    }

    @AfterAll
    static void stop() {
        if (s3proxy != null) {
            s3proxy.close();
        }
    }

    /** The child: opens the board named by its argument with default options (path style) and writes and reads an object. */
    public static final class RoundTrip {
        public static void main(String[] args) throws IOException {
            StoreOptions options = StoreOptions.defaults().withS3Endpoint(null, true).withAttempts(2);
            try (ObjectStore store = ObjectStores.open(URI.create(args[0]), options)) {
                store.create("latest.json", "{\"from\":\"env\"}".getBytes(StandardCharsets.UTF_8), Map.of());
                System.out.println("read " + new String(store.read("latest.json", null, 100).bytes(), StandardCharsets.UTF_8));
            }
        }
    }

    /** Runs {@link RoundTrip} with only the given AWS settings in its environment; returns its output, failing on a non-zero exit. */
    private static String runChild(String board, Map<String, String> aws, boolean expectSuccess) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", System.getProperty("java.class.path"), RoundTrip.class.getName(), board));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        // nothing of the machine's own AWS configuration may leak in
        pb.environment().keySet().removeIf(k -> k.startsWith("AWS_"));
        pb.environment().put("AWS_CONFIG_FILE", "/nonexistent/aws/config");
        pb.environment().put("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws/credentials");
        pb.environment().put("AWS_EC2_METADATA_DISABLED", "true");
        pb.environment().putAll(aws);
        Process p = pb.start();
        String out;
        try (InputStream in = p.getInputStream()) {
            out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("child did not exit: " + out);
        }
        assertEquals(expectSuccess, p.exitValue() == 0, out);
        return out;
    }

    private static Map<String, String> credentials(String endpointVariable) {
        Map<String, String> env = new java.util.HashMap<>(Map.of("AWS_ACCESS_KEY_ID", S3ProxyProcess.IDENTITY,
                "AWS_SECRET_ACCESS_KEY", S3ProxyProcess.CREDENTIAL));
        if (endpointVariable != null) {
            env.put(endpointVariable, s3proxy.endpoint().toString());
        }
        return env;
    }

    @Test
    void theSdkTakesTheEndpointFromAwsEndpointUrlS3() throws Exception {
        String out = runChild("s3://" + BUCKET + "/from-s3-variable", credentials("AWS_ENDPOINT_URL_S3"), true);
        assertTrue(out.contains("read {\"from\":\"env\"}"), out);
    }

    @Test
    void theSdkTakesTheEndpointFromAwsEndpointUrl() throws Exception {
        String out = runChild("s3://" + BUCKET + "/from-generic-variable", credentials("AWS_ENDPOINT_URL"), true);
        assertTrue(out.contains("read {\"from\":\"env\"}"), out);
    }

    @Test
    void withoutAnEndpointOrARegionOpeningFailsSayingWhatToSet() throws Exception {
        String out = runChild("s3://" + BUCKET + "/nowhere", credentials(null), false);
        assertTrue(out.contains("no AWS region is configured for s3:// boards: set AWS_REGION"), out);
    }
}
