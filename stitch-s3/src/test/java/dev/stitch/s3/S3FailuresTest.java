package dev.stitch.s3;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.store.PreconditionFailedException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.nio.file.NoSuchFileException;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.core.exception.AbortedException;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.services.s3.model.S3Exception;

/** How S3's answers become the store's exceptions, including those s3proxy never gives (409). */
class S3FailuresTest {
    private static final String WHERE = "s3://bucket/board/latest.json";

    private static S3Exception answer(int status, String code, String message) {
        return (S3Exception) S3Exception.builder().statusCode(status)
                .awsErrorDetails(AwsErrorDetails.builder().errorCode(code).errorMessage(message).build()).build();
    }

    @Test
    void conditionalRequestConflictIsAFailedPrecondition() {
        // S3 answers 409 ConditionalRequestConflict to a conditional write racing another on the same key
        IOException e = S3Failures.translate("PUT", "latest.json", WHERE, "already exists (If-None-Match: * refused)",
                answer(409, "ConditionalRequestConflict", "A conflicting conditional operation is in progress"), 1);
        PreconditionFailedException p = assertInstanceOf(PreconditionFailedException.class, e);
        assertEquals("latest.json", p.key());
        assertTrue(p.getMessage().contains(WHERE + " already exists"), p.getMessage());
    }

    @Test
    void otherConflictsAreNot() {
        IOException e = S3Failures.translate("PUT", "latest.json", WHERE, "already exists",
                answer(409, "OperationAborted", "A conflicting operation is in progress"), 1);
        assertFalse(e instanceof PreconditionFailedException);
        assertTrue(e.getMessage().contains("HTTP 409 OperationAborted"), e.getMessage());
    }

    @Test
    void aRefusalAfterRetriesSaysTheWriteMayBeItsOwn() {
        IOException e = S3Failures.translate("PUT", "latest.json", WHERE, "already exists",
                answer(412, "PreconditionFailed", "At least one of the preconditions you specified did not hold"), 2);
        assertInstanceOf(PreconditionFailedException.class, e);
        assertTrue(e.getMessage().contains("tried 2 times"), e.getMessage());
    }

    @Test
    void notFoundIsNoSuchFile() {
        IOException e = S3Failures.translate("GET", "latest.json", WHERE, null, answer(404, "NoSuchKey", "The specified key does not exist."), 1);
        assertEquals(WHERE, assertInstanceOf(NoSuchFileException.class, e).getFile());
    }

    @Test
    void serverErrorsNameTheOperationTheObjectTheTriesAndTheAnswer() {
        IOException e = S3Failures.translate("PUT", "latest.json", WHERE, null, answer(503, "SlowDown", "Please reduce your request rate."), 8);
        assertEquals("PUT " + WHERE + " failed after 8 tries: HTTP 503 SlowDown (Please reduce your request rate.)", e.getMessage());
    }

    @Test
    void connectionFailuresNameTheCause() {
        IOException e = S3Failures.translate("HEAD", "latest.json", WHERE, null,
                SdkClientException.builder().message("Unable to execute HTTP request").cause(new ConnectException("Connection refused")).build(), 3);
        assertEquals("HEAD " + WHERE + " failed after 3 tries: ConnectException: Connection refused", e.getMessage());
    }

    @Test
    void anInterruptIsAnInterruptedIOException() {
        IOException e = S3Failures.translate("GET", "latest.json", WHERE, null, AbortedException.builder().message("aborted").build(), 1);
        assertInstanceOf(InterruptedIOException.class, e);
    }
}
