package dev.stitch.sidecar.proxy;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * Reads along a versioned SSE stream until the first event in which the engine labels its weights
 * ({@code meta_info.weight_version} of {@code /generate} events) and tells whether that label agrees
 * with the stream's start stamp (sidecar-http.md 4.6). It only observes copies of the relayed bytes,
 * whatever their chunk boundaries; events larger than {@link #MAX_EVENT_BYTES} are not inspected.
 */
final class StreamLabelCheck {

    /** What the stream has shown so far. */
    enum Verdict {
        /** No complete event with data yet. */
        NO_EVENT_YET,
        /** Complete events, none of them labelled. */
        UNLABELLED,
        /** The first labelled event agrees with the stamp; nothing more to check. */
        AGREES,
        /** The first labelled event contradicts the stamp ({@link #contradiction}). */
        CONTRADICTS
    }

    static final int MAX_EVENT_BYTES = 1 << 20;
    private static final byte[] DATA = "data:".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] LABEL_KEY = "\"weight_version\"".getBytes(StandardCharsets.US_ASCII);

    private final ResponseStamper stamper;
    private final ByteArrayOutputStream line = new ByteArrayOutputStream();
    private final ByteArrayOutputStream data = new ByteArrayOutputStream();
    private boolean hasData;
    private boolean oversized;
    private boolean afterCr;
    private Verdict verdict = Verdict.NO_EVENT_YET;
    private String contradiction;

    StreamLabelCheck(ResponseStamper stamper) {
        this.stamper = stamper;
    }

    /** Why the stream's label contradicts its stamp; null unless the verdict is {@link Verdict#CONTRADICTS}. */
    String contradiction() {
        return contradiction;
    }

    /** Reads the next relayed bytes and returns the verdict so far. */
    Verdict feed(byte[] chunk) {
        for (int i = 0; i < chunk.length && !decided(); i++) {
            byte b = chunk[i];
            if (b == '\n' && afterCr) {
                afterCr = false; // the LF of a CRLF line end
                continue;
            }
            afterCr = b == '\r';
            if (b == '\r' || b == '\n') {
                endLine();
            } else if (line.size() < MAX_EVENT_BYTES) {
                line.write(b);
            } else {
                oversized = true;
            }
        }
        return verdict;
    }

    private boolean decided() {
        return verdict == Verdict.AGREES || verdict == Verdict.CONTRADICTS;
    }

    private void endLine() {
        if (line.size() == 0) {
            endEvent();
            return;
        }
        byte[] l = line.toByteArray();
        line.reset();
        if (!startsWith(l, DATA)) {
            return; // comments, event names, ids and retry hints carry no label
        }
        int from = l.length > DATA.length && l[DATA.length] == ' ' ? DATA.length + 1 : DATA.length;
        if (hasData) {
            data.write('\n');
        }
        hasData = true;
        if (data.size() + l.length - from <= MAX_EVENT_BYTES) {
            data.write(l, from, l.length - from);
        } else {
            oversized = true;
        }
    }

    private void endEvent() {
        if (!hasData) {
            oversized = false;
            return; // a blank line after comments only dispatches nothing
        }
        byte[] d = data.toByteArray();
        boolean inspect = !oversized && indexOf(d, LABEL_KEY) >= 0;
        data.reset();
        hasData = false;
        oversized = false;
        String label = inspect ? label(d) : null;
        if (label == null) {
            verdict = Verdict.UNLABELLED;
            return;
        }
        try {
            stamper.requireAgreement(label, null);
            verdict = Verdict.AGREES;
        } catch (ResponseStamper.LabelMismatch e) {
            contradiction = e.getMessage();
            verdict = Verdict.CONTRADICTS;
        }
    }

    private static String label(byte[] eventData) {
        JsonNode event;
        try {
            event = ResponseStamper.JSON.readTree(eventData);
        } catch (IOException e) {
            return null; // not JSON: the data plane relays it as it is
        }
        if (event == null) {
            return null;
        }
        String label = ResponseStamper.labelIn(event.path("meta_info"));
        return label != null ? label : ResponseStamper.labelIn(event.path("metadata"));
    }

    private static boolean startsWith(byte[] a, byte[] prefix) {
        if (a.length < prefix.length) {
            return false;
        }
        for (int i = 0; i < prefix.length; i++) {
            if (a[i] != prefix[i]) {
                return false;
            }
        }
        return true;
    }

    private static int indexOf(byte[] a, byte[] key) {
        outer:
        for (int i = 0; i + key.length <= a.length; i++) {
            for (int j = 0; j < key.length; j++) {
                if (a[i + j] != key[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
