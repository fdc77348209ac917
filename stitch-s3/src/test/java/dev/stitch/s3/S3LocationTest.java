package dev.stitch.s3;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import org.junit.jupiter.api.Test;

class S3LocationTest {

    @Test
    void bucketAndPrefixComeFromTheUri() {
        S3Location l = S3Location.parse(URI.create("s3://my-bucket/teams/rl/board/"));
        assertEquals("my-bucket", l.bucket());
        assertEquals("teams/rl/board", l.prefix());
        assertEquals("teams/rl/board/latest.json", l.objectKey("latest.json"));
        assertEquals("teams/rl/board/versions/", l.objectPrefix("versions/"));
        assertEquals("versions/weight_v000001/manifest.json", l.boardKey("teams/rl/board/versions/weight_v000001/manifest.json"));
        assertEquals("s3://my-bucket/teams/rl/board/latest.json", l.describe("latest.json"));
    }

    @Test
    void aBoardAtTheBucketRootHasNoPrefix() {
        for (String uri : new String[]{"s3://my-bucket", "s3://my-bucket/", "s3://my-bucket//"}) {
            S3Location l = S3Location.parse(URI.create(uri));
            assertEquals("", l.prefix(), uri);
            assertEquals("latest.json", l.objectKey("latest.json"));
            assertEquals("", l.objectPrefix(""));
            assertEquals("latest.json", l.boardKey("latest.json"));
        }
    }

    @Test
    void bucketNamesThatAreNotHostNamesAreKept() {
        assertEquals("old_bucket.with.dots", S3Location.parse(URI.create("s3://old_bucket.with.dots/b")).bucket());
    }

    @Test
    void malformedLocationsAndKeysAreRefusedByName() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> S3Location.parse(URI.create("s3:///prefix")));
        assertTrue(e.getMessage().contains("without a bucket"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> S3Location.parse(URI.create("https://bucket/prefix")));
        assertThrows(IllegalArgumentException.class, () -> S3Location.parse(URI.create("s3://bucket/prefix?versionId=1")));
        S3Location l = S3Location.parse(URI.create("s3://bucket/prefix"));
        assertThrows(IllegalArgumentException.class, () -> l.objectKey("/latest.json"));
        assertThrows(IllegalArgumentException.class, () -> l.objectKey(""));
    }
}
