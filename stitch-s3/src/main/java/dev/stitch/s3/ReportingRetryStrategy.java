package dev.stitch.s3;

import dev.stitch.board.store.StoreListener;
import dev.stitch.board.store.StoreOptions;
import java.time.Duration;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.retries.api.AcquireInitialTokenRequest;
import software.amazon.awssdk.retries.api.AcquireInitialTokenResponse;
import software.amazon.awssdk.retries.api.BackoffStrategy;
import software.amazon.awssdk.retries.api.RecordSuccessRequest;
import software.amazon.awssdk.retries.api.RecordSuccessResponse;
import software.amazon.awssdk.retries.api.RefreshRetryTokenRequest;
import software.amazon.awssdk.retries.api.RefreshRetryTokenResponse;
import software.amazon.awssdk.retries.api.RetryStrategy;

/**
 * The SDK's standard AWS retry strategy (5xx, throttling such as {@code SlowDown}, connection errors,
 * clock skew) with the board's attempts and jittered backoff (docs/protocol/board.md §7.5), reporting
 * every retry to {@link StoreOptions#listener()}.
 *
 * <p>A retry strategy sees a failure but not the request, so the store names the operation and key
 * of each call in {@link #CALL}; the sync client runs its retry loop on the calling thread, inside
 * that binding. The circuit breaker (a retry-token bucket shared by the client) is off: a board's
 * requests are few, and {@code attempts} should mean the same on the hundredth failure as on the first.
 */
final class ReportingRetryStrategy implements RetryStrategy {

    /** The operation and key of the SDK call on this thread, and how many tries it has made. */
    static final ScopedValue<Call> CALL = ScopedValue.newInstance();

    private final RetryStrategy delegate;
    private final StoreListener listener;

    ReportingRetryStrategy(StoreOptions options) {
        BackoffStrategy backoff = attempt -> Duration.ofMillis(options.backoffMillis(attempt));
        this.delegate = AwsRetryStrategy.standardRetryStrategy().toBuilder()
                .maxAttempts(options.attempts())
                .backoffStrategy(backoff)
                .throttlingBackoffStrategy(backoff)
                .circuitBreakerEnabled(false)
                .build();
        this.listener = options.listener();
    }

    @Override
    public AcquireInitialTokenResponse acquireInitialToken(AcquireInitialTokenRequest request) {
        return delegate.acquireInitialToken(request);
    }

    @Override
    public RefreshRetryTokenResponse refreshRetryToken(RefreshRetryTokenRequest request) {
        // throws TokenAcquisitionFailedException when the failure is not retryable or the attempts are spent
        RefreshRetryTokenResponse response = delegate.refreshRetryToken(request);
        Call call = CALL.isBound() ? CALL.get() : null;
        int attempt = call == null ? 0 : call.failedTry();
        listener.retry(call == null ? "S3 request" : call.operation(), call == null ? "" : call.key(),
                attempt, response.delay().toMillis(), request.failure());
        return response;
    }

    @Override
    public RecordSuccessResponse recordSuccess(RecordSuccessRequest request) {
        return delegate.recordSuccess(request);
    }

    @Override
    public int maxAttempts() {
        return delegate.maxAttempts();
    }

    @Override
    public boolean useClientDefaults() {
        return false;
    }

    /**
     * Not offered: the SDK asks for a builder only to derive a strategy for a per-request override,
     * which the store never sets; a derived strategy would silently stop reporting retries.
     */
    @Override
    public Builder<?, ?> toBuilder() {
        throw new UnsupportedOperationException("the S3 board store's retry strategy is derived from StoreOptions and has no builder");
    }

    /** One SDK call of the store: what it is, for which key, and how many of its tries have failed. */
    static final class Call {
        private final String operation;
        private final String key;
        private int failedTries;

        Call(String operation, String key) {
            this.operation = operation;
            this.key = key;
        }

        String operation() {
            return operation;
        }

        String key() {
            return key;
        }

        /** Counts one more failed try and returns its number (1 for the first). */
        int failedTry() {
            return ++failedTries;
        }

        /** Tries made so far, the one that failed last included. */
        int tries() {
            return failedTries + 1;
        }
    }
}
