package dev.stitch.sidecar.proxy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Response stamps of docs/protocol/sidecar-http.md §4.5–4.6 on plain bytes and header setters. */
class ResponseStamperTest {
    private static final String TYPE = "application/json";

    private static String stamp(String route, long start, long end, String body) throws IOException {
        byte[] out = new ResponseStamper(route, start, null).stampBody(TYPE, body.getBytes(StandardCharsets.UTF_8), end);
        return new String(out, StandardCharsets.UTF_8);
    }

    @Test
    void generateGetsMetaInfoStampsAndTheEnginesLabelIsOverwritten() throws IOException {
        assertEquals("{\"text\":\"ok\",\"meta_info\":{\"weight_version\":\"2\",\"finish_reason\":{\"type\":\"length\"},"
                        + "\"weight_version_start\":2,\"weight_version_end\":2}}",
                stamp("generate", 2, 2, "{\"text\":\"ok\",\"meta_info\":{\"weight_version\":\"2\","
                        + "\"finish_reason\":{\"type\":\"length\"}}}"));
        // an in_place commit landed while the request ran: the engine's label is the newer one
        assertEquals("{\"meta_info\":{\"weight_version\":\"2\",\"weight_version_start\":2,\"weight_version_end\":3}}",
                stamp("generate", 2, 3, "{\"meta_info\":{\"weight_version\":\"3\"}}"));
        assertEquals("{\"text\":\"ok\",\"meta_info\":{\"weight_version\":\"3\",\"weight_version_start\":3,"
                + "\"weight_version_end\":5}}", stamp("generate", 3, 5, "{\"text\":\"ok\"}"));
        assertEquals("{\"meta_info\":{\"weight_version\":\"0\",\"weight_version_start\":0,\"weight_version_end\":1}}",
                stamp("generate", 0, 1, "{}"));
    }

    @Test
    void existingStampsAreReplacedInPlace() throws IOException {
        assertEquals("{\"meta_info\":{\"weight_version_end\":6,\"x\":1E2,\"weight_version\":\"4\",\"weight_version_start\":4}}",
                stamp("generate", 4, 6, "{\"meta_info\":{\"weight_version_end\":1,\"x\":1E2}}"));
        assertEquals("{\"weight_version_end\":9,\"text\":\"t\",\"weight_version_start\":8}",
                stamp("v1/completions", 8, 9, "{\"weight_version_end\":0,\"text\":\"t\"}"));
    }

    @Test
    void otherVersionedRoutesGetTopLevelStamps() throws IOException {
        assertEquals("{\"id\":\"c\",\"usage\":{\"n\":1.50},\"weight_version_start\":7,\"weight_version_end\":8}",
                stamp("v1/chat/completions", 7, 8, "{\"id\":\"c\",\"usage\":{\"n\":1.50}}"));
        assertEquals("{\"meta_info\":7,\"weight_version_start\":1,\"weight_version_end\":1}",
                stamp("v1/completions", 1, 1, "{\"meta_info\":7}"), "meta_info only matters on generate");
    }

    @Test
    void bodiesThatCannotCarryStampsComeBackUnchanged() throws IOException {
        ResponseStamper s = new ResponseStamper("generate", 1, "run");
        for (String body : new String[] {"[{\"text\":\"a\"},{\"text\":\"b\"}]", " 42 ", "\"s\"", "null",
                "{\"meta_info\":[1]}", "{\"meta_info\":null}", "{\"meta_info\":\"m\"}"}) {
            byte[] raw = body.getBytes(StandardCharsets.UTF_8);
            assertSame(raw, s.stampBody(TYPE, raw, 2), body);
        }
        byte[] empty = new byte[0];
        assertSame(empty, s.stampBody(TYPE, empty, 2));
        byte[] notJson = "{broken".getBytes(StandardCharsets.UTF_8);
        for (String type : new String[] {null, "text/plain", "text/event-stream", "application/x-ndjson"}) {
            assertSame(notJson, s.stampBody(type, notJson, 2), String.valueOf(type));
        }
    }

    @Test
    void jsonMediaTypeIsCaseInsensitiveAndParametersAreIgnored() throws IOException {
        byte[] raw = "{\"a\":1}".getBytes(StandardCharsets.UTF_8);
        byte[] out = new ResponseStamper("v1/completions", 1, null).stampBody("Application/JSON; charset=utf-8", raw, 2);
        assertEquals("{\"a\":1,\"weight_version_start\":1,\"weight_version_end\":2}", new String(out, StandardCharsets.UTF_8));
    }

    @Test
    void malformedJsonFromTheEngineIsAnError() {
        ResponseStamper s = new ResponseStamper("generate", 1, null);
        for (String body : new String[] {"{\"a\":", "[1,", "{\"a\":1}{", "nope", "{\"meta_info\":{\"a\"}}"}) {
            assertThrows(IOException.class, () -> s.stampBody(TYPE, body.getBytes(StandardCharsets.UTF_8), 1), body);
        }
    }

    @Test
    void largeGeneratedBodyKeepsEveryUntouchedByte() throws IOException {
        StringBuilder text = new StringBuilder();
        for (int i = 0; text.length() < 3_000_000; i++) {
            text.append(i % 7 == 0 ? "\\u00e9" : i % 5 == 0 ? "\\n" : "tok").append(i);
        }
        StringBuilder logprobs = new StringBuilder("[");
        for (int i = 0; i < 50_000; i++) {
            logprobs.append(i == 0 ? "" : ", ").append("[-").append(i).append(".0E-3,").append(i).append(",null]");
        }
        logprobs.append(']');
        String meta = "{\"id\":\"x\",\"output_token_logprobs\":" + logprobs + ",\"weight_version\":\"13\"}";
        String body = "{\"text\":\"" + text + "\",\"meta_info\":" + meta + "}";
        String expected = "{\"text\":\"" + text + "\",\"meta_info\":{\"id\":\"x\",\"output_token_logprobs\":" + logprobs
                + ",\"weight_version\":\"12\",\"weight_version_start\":12,\"weight_version_end\":13}}";
        assertEquals(expected, stamp("generate", 12, 13, body));
    }

    @Test
    void anEngineLabelThatNamesNoVersionServedDuringTheRequestIsAFalseStamp() {
        for (String[] c : new String[][] {
            {"generate", "{\"text\":\"ok\",\"meta_info\":{\"weight_version\":\"default\"}}"}, // restarted from the base
            {"generate", "{\"meta_info\":{\"weight_version\":\"4\",\"id\":\"r\"}}"},            // older weights
            {"generate", "{\"meta_info\":{\"weight_version\":\"7\"}}"},                           // newer than end
            {"generate", "{\"meta_info\":{\"weight_version\":8}}"},                                 // a number is a label too
            {"v1/chat/completions", "{\"id\":\"c\",\"metadata\":{\"weight_version\":\"default\"}}"},
            {"v1/completions", "{\"meta_info\":{\"weight_version\":\"1\"}}"},
            {"generate", "[{\"meta_info\":{\"weight_version\":\"5\"}},{\"meta_info\":{\"weight_version\":\"default\"}}]"},
        }) {
            ResponseStamper.LabelMismatch e = assertThrows(ResponseStamper.LabelMismatch.class,
                    () -> stamp(c[0], 5, 6, c[1]), c[1]);
            assertTrue(e.getMessage().contains("admitted it at version 5..6"), e.getMessage());
        }
    }

    @Test
    void labelsThatAgreeOrAreAbsentAreStamped() throws IOException {
        assertEquals("{\"metadata\":{\"weight_version\":\"6\"},\"weight_version_start\":5,\"weight_version_end\":6}",
                stamp("v1/chat/completions", 5, 6, "{\"metadata\":{\"weight_version\":\"6\"}}"));
        String batch = "[{\"meta_info\":{\"weight_version\":\"5\"}},{\"meta_info\":{}},{\"meta_info\":\"m\"}]";
        assertEquals(batch, stamp("generate", 5, 5, batch));
        // the base goes by a fresh engine's boot label
        assertEquals("{\"meta_info\":{\"weight_version\":\"0\",\"weight_version_start\":0,\"weight_version_end\":0}}",
                stamp("generate", 0, 0, "{\"meta_info\":{\"weight_version\":\"default\"}}"));
        ResponseStamper s = new ResponseStamper("generate", 3, null);
        assertTrue(s.labelAgrees("3", null));
        assertTrue(s.labelAgrees("9", null), "a stream's end is not known yet");
        assertFalse(s.labelAgrees("2", null));
        assertFalse(s.labelAgrees("default", null));
        assertFalse(s.labelAgrees("3.0", 3L));
    }

    @Test
    void aStreamIsCheckedAtItsFirstLabelledEventWhateverTheChunkBoundaries() {
        String stream = ": keep-alive\r\n\r\nevent: token\r\ndata: {\"text\":\"a\"}\r\n\r\n"
                + "data: {\"text\":\"ab\",\r\ndata: \"meta_info\":{\"weight_version\":\"LABEL\"}}\n\n"
                + "data: [DONE]\n\n";
        byte[] agreeing = stream.replace("LABEL", "4").getBytes(StandardCharsets.UTF_8);
        byte[] contradicting = stream.replace("LABEL", "default").getBytes(StandardCharsets.UTF_8);
        int labelledEventEnd = stream.replace("LABEL", "4").indexOf("}}\n\n") + 4;
        for (int cut = 1; cut < agreeing.length; cut++) {
            StreamLabelCheck ok = new StreamLabelCheck(new ResponseStamper("generate", 4, null));
            StreamLabelCheck.Verdict first = ok.feed(java.util.Arrays.copyOfRange(agreeing, 0, cut));
            assertEquals(StreamLabelCheck.Verdict.AGREES, ok.feed(java.util.Arrays.copyOfRange(agreeing, cut,
                    agreeing.length)), "cut " + cut);
            StreamLabelCheck bad = new StreamLabelCheck(new ResponseStamper("generate", 4, null));
            bad.feed(java.util.Arrays.copyOfRange(contradicting, 0, cut));
            assertEquals(StreamLabelCheck.Verdict.CONTRADICTS, bad.feed(java.util.Arrays.copyOfRange(contradicting,
                    cut, contradicting.length)), "cut " + cut);
            assertTrue(bad.contradiction().contains("weight_version default"), bad.contradiction());
            if (cut < stream.indexOf("data: {\"text\":\"a\"}")) {
                assertEquals(StreamLabelCheck.Verdict.NO_EVENT_YET, first, "comments alone are no event");
            } else if (cut < labelledEventEnd - 1) {
                assertTrue(first != StreamLabelCheck.Verdict.AGREES, "cut " + cut);
            }
        }
        StreamLabelCheck openAi = new StreamLabelCheck(new ResponseStamper("v1/chat/completions", 4, null));
        assertEquals(StreamLabelCheck.Verdict.UNLABELLED, openAi.feed(("data: {\"choices\":[{\"delta\":"
                + "{\"content\":\"weight_version\"}}]}\n\ndata: [DONE]\n\n").getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void aStreamErrorEventIsOneDataLineAndABlankLine() {
        assertEquals("data: {\"error\":1}\n\n", new String(ResponseStamper.streamErrorEvent(
                "{\"error\":1}".getBytes(StandardCharsets.UTF_8)), StandardCharsets.UTF_8));
    }

    @Test
    void headersCarryStartAlwaysEndWhenKnownAndRunWhenThereIsOne() {
        List<String> set = new ArrayList<>();
        new ResponseStamper("generate", 3, "run-a").stampHeaders((n, v) -> set.add(n + "=" + v), 5L);
        assertEquals(List.of("x-stitch-weight-version-start=3", "x-stitch-weight-version-end=5", "x-stitch-run-id=run-a"), set);
        set.clear();
        new ResponseStamper("generate", 3, null).stampHeaders((n, v) -> set.add(n + "=" + v), null);
        assertEquals(List.of("x-stitch-weight-version-start=3"), set);
    }

    @Test
    void whichResponsesAreHeldBackForTheEndHeader() {
        assertTrue(ResponseStamper.buffersWholeBody("application/json", false), "JSON is stamped");
        assertTrue(ResponseStamper.buffersWholeBody("APPLICATION/JSON;charset=utf-8", true));
        assertTrue(ResponseStamper.buffersWholeBody("text/plain", true), "a sized body can carry the end header");
        assertTrue(ResponseStamper.buffersWholeBody(null, true));
        assertFalse(ResponseStamper.buffersWholeBody("text/plain", false), "an unsized body streams");
        assertFalse(ResponseStamper.buffersWholeBody(null, false));
        assertFalse(ResponseStamper.buffersWholeBody("text/event-stream", true), "SSE always streams");
        assertFalse(ResponseStamper.buffersWholeBody("Text/Event-Stream; charset=utf-8", false));
        assertTrue(ResponseStamper.isEventStream("text/event-stream;charset=UTF-8"));
        assertFalse(ResponseStamper.isEventStream("text/event-streams"));
        assertFalse(ResponseStamper.isEventStream(null));
    }

    @Test
    void streamEndCommentIsOneSseCommentAndABlankLine() {
        assertArrayEquals(": x-stitch-weight-version-end=3\n\n".getBytes(StandardCharsets.US_ASCII),
                ResponseStamper.streamEndComment(3));
        assertEquals(": x-stitch-weight-version-end=9223372036854775807\n\n",
                new String(ResponseStamper.streamEndComment(Long.MAX_VALUE), StandardCharsets.US_ASCII));
    }
}
