package dev.stitch.s3;

import dev.stitch.board.store.PreconditionFailedException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.NoSuchFileException;
import software.amazon.awssdk.core.exception.AbortedException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * Turns the SDK's unchecked exceptions into the store's checked ones (docs/protocol/board.md §7):
 * 404 is {@link NoSuchFileException}, 412 and S3's {@code 409 ConditionalRequestConflict} (a
 * conditional write racing another on the same key) are {@link PreconditionFailedException}, the rest
 * an {@link IOException} naming the operation, the object, the tries and the server's answer.
 */
final class S3Failures {
    private S3Failures() {
    }

    /**
     * @param refusal what a failed precondition means for this operation ("already exists"), or null
     *                when the request had none
     * @param tries   tries the SDK made, the failed last one included
     */
    static IOException translate(String operation, String key, String where, String refusal, SdkException e, int tries) {
        String after = tries > 1 ? " after " + tries + " tries" : "";
        if (e instanceof AbortedException || Thread.currentThread().isInterrupted()) {
            InterruptedIOException x = new InterruptedIOException(operation + " " + where + " was interrupted" + after);
            x.initCause(e);
            return x;
        }
        if (e instanceof S3Exception s3) {
            int status = s3.statusCode();
            String code = errorCode(s3);
            if (status == 412 || (status == 409 && "ConditionalRequestConflict".equals(code))) {
                String what = refusal != null ? refusal : "was refused: a precondition failed";
                // A conditional write retried after a try that reached the server but whose answer was lost is
                // refused by its own success. The store cannot tell the two apart; the caller can (metadata).
                String retried = tries > 1 ? " (" + operation + " was tried " + tries + " times: an earlier try may have"
                        + " written the object itself, which its metadata tells)" : "";
                PreconditionFailedException x = new PreconditionFailedException(key,
                        where + " " + what + " (HTTP " + status + " " + code + ")" + retried);
                x.initCause(e);
                return x;
            }
            if (status == 404) {
                NoSuchFileException x = new NoSuchFileException(where, null, operation + " answered HTTP 404 " + code);
                x.initCause(e);
                return x;
            }
            String message = s3.awsErrorDetails() != null && s3.awsErrorDetails().errorMessage() != null
                    ? s3.awsErrorDetails().errorMessage() : "";
            return new IOException(operation + " " + where + " failed" + after + ": HTTP " + status + " " + code
                    + (message.isEmpty() ? "" : " (" + message + ")"), e);
        }
        Throwable cause = e.getCause() != null ? e.getCause() : e;
        return new IOException(operation + " " + where + " failed" + after + ": " + describe(cause), e);
    }

    /** S3's error code ({@code NoSuchKey}, {@code SlowDown}), or the status text when the body had none (HEAD, 304). */
    static String errorCode(S3Exception e) {
        if (e.awsErrorDetails() != null && e.awsErrorDetails().errorCode() != null) {
            return e.awsErrorDetails().errorCode();
        }
        return "(no error code)";
    }

    private static String describe(Throwable t) {
        String m = t.getMessage();
        return m == null || m.isBlank() ? t.getClass().getSimpleName() : t.getClass().getSimpleName() + ": " + m;
    }
}
