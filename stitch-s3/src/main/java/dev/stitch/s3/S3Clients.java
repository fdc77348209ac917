package dev.stitch.s3;

import dev.stitch.board.store.StoreOptions;
import java.io.IOException;
import java.util.List;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;

/**
 * Builds the S3 client of a board store the way AWS tools are configured (docs/protocol/board.md
 * §7.5): credentials from the default chain, region from the default chain, the endpoint from
 * {@link StoreOptions#s3Endpoint()} or else the SDK's own {@code AWS_ENDPOINT_URL_S3} /
 * {@code AWS_ENDPOINT_URL} handling; attempts, backoff and timeouts from the store options.
 */
final class S3Clients {
    /** The settings (environment variable, then system property) by which the SDK itself overrides the S3 endpoint. */
    private static final List<String[]> SDK_ENDPOINT_SETTINGS = List.of(
            new String[]{"AWS_ENDPOINT_URL_S3", "aws.endpointUrlS3"},
            new String[]{"AWS_ENDPOINT_URL", "aws.endpointUrl"});

    private S3Clients() {
    }

    static S3Client build(StoreOptions options, AwsCredentialsProvider credentials) throws IOException {
        S3ClientBuilder b = S3Client.builder()
                .credentialsProvider(credentials)
                .region(region(options))
                .forcePathStyle(options.s3PathStyle())
                // Apache HttpClient 5, not the JDK's HttpURLConnection (url-connection-client): HttpURLConnection
                // silently sends a GET or HEAD again when the connection fails before the answer's head, a retry
                // neither counted in the attempts nor reported; the SDK switches Apache's own retries off, so every
                // retry is the strategy's (more in the pom).
                .httpClientBuilder(Apache5HttpClient.builder()
                        .connectionTimeout(options.timeout())
                        .socketTimeout(options.timeout())
                        // every part and ranged read in flight holds a connection; the SDK's default is 50
                        .maxConnections(Math.max(50, 4 * options.concurrency())))
                // Integrity: the SDK's default flexible checksums stay on (requestChecksumCalculation
                // WHEN_SUPPORTED): every PutObject and UploadPart carries a CRC32 trailer the server verifies
                // before it stores the bytes (s3proxy answers a mismatch with 400 BadDigest, as S3 does).
                .overrideConfiguration(o -> o.retryStrategy(new ReportingRetryStrategy(options)));
        if (options.s3Endpoint() != null) {
            b.endpointOverride(options.s3Endpoint());
        }
        return b.build();
    }

    /**
     * The region of the default chain ({@code AWS_REGION}, {@code aws.region}, the profile, instance
     * metadata). S3-compatible stores ignore the region, but SigV4 signs one, so with an endpoint
     * override and no region configured the store signs for us-east-1.
     */
    static Region region(StoreOptions options) throws IOException {
        try {
            return DefaultAwsRegionProviderChain.builder().build().getRegion();
        } catch (SdkClientException e) {
            if (endpointOverridden(options)) {
                return Region.US_EAST_1;
            }
            throw new IOException("no AWS region is configured for s3:// boards: set AWS_REGION, the aws.region system property"
                    + " or region in ~/.aws/config (or give an S3-compatible endpoint)", e);
        }
    }

    private static boolean endpointOverridden(StoreOptions options) {
        if (options.s3Endpoint() != null) {
            return true;
        }
        for (String[] setting : SDK_ENDPOINT_SETTINGS) {
            String env = System.getenv(setting[0]);
            String property = System.getProperty(setting[1]);
            if ((env != null && !env.isBlank()) || (property != null && !property.isBlank())) {
                return true;
            }
        }
        return false;
    }
}
