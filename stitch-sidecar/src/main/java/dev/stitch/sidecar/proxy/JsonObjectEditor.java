package dev.stitch.sidecar.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Comparator;
import java.util.List;

/**
 * Edits the members of one JSON object without re-serializing it: the source bytes are tokenized
 * once to find each top-level member's byte span, and edits (remove, replace a value, append) are
 * spliced around untouched bytes, so number lexemes, string escapes, whitespace and member order
 * survive exactly.
 */
final class JsonObjectEditor {
    /** Deepest JSON nesting a body may have. */
    static final int MAX_NESTING_DEPTH = 1000;

    /**
     * The request body limit already bounds what is read, so a string may be as long as a body (Jackson's
     * default 20 M characters refused legitimate long prompts); nesting stays bounded so a deep document
     * is a typed 400 rather than a deep recursion (docs/security.md, limits).
     */
    static final JsonFactory FACTORY = JsonFactory.builder()
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            .streamReadConstraints(com.fasterxml.jackson.core.StreamReadConstraints.builder()
                    .maxStringLength(Integer.MAX_VALUE)
                    .maxNestingDepth(MAX_NESTING_DEPTH)
                    .build())
            .build();

    /** One top-level member: name, the span of {@code "name": value}, and the span of the value. */
    record Member(String name, int start, int valueStart, int valueEnd) {
    }

    private record Splice(int from, int to, byte[] insert) {
    }

    private final byte[] src;
    private final int close;
    private final List<Member> members;
    private final List<Splice> splices = new ArrayList<>();
    private final List<byte[]> appended = new ArrayList<>();
    private final BitSet removed = new BitSet();

    private JsonObjectEditor(byte[] src, int close, List<Member> members) {
        this.src = src;
        this.close = close;
        this.members = members;
    }

    /** Kind of a whole JSON document. */
    enum Kind { OBJECT, ARRAY, SCALAR }

    /**
     * Validates a complete JSON document and reports its top-level kind.
     *
     * @throws IOException when the bytes are not exactly one JSON value
     */
    static Kind validate(byte[] json) throws IOException {
        try (JsonParser p = FACTORY.createParser(json)) {
            JsonToken first = p.nextToken();
            if (first == null) {
                throw new IOException("empty JSON document");
            }
            p.skipChildren();
            if (p.nextToken() != null) {
                throw new IOException("trailing data after the JSON value");
            }
            return first == JsonToken.START_OBJECT ? Kind.OBJECT
                    : first == JsonToken.START_ARRAY ? Kind.ARRAY : Kind.SCALAR;
        }
    }

    /**
     * Tokenizes a document that must be one JSON object.
     *
     * @throws IOException when the bytes are not one well-formed JSON object
     */
    static JsonObjectEditor parse(byte[] json) throws IOException {
        try (JsonParser p = FACTORY.createParser(json)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new IOException("not a JSON object");
            }
            int open = (int) p.currentTokenLocation().getByteOffset();
            List<Member> members = new ArrayList<>();
            JsonToken t;
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                int start = (int) p.currentTokenLocation().getByteOffset();
                p.nextToken();
                int valueStart = (int) p.currentTokenLocation().getByteOffset();
                p.skipChildren();
                p.finishToken();
                int valueEnd = (int) p.currentLocation().getByteOffset();
                members.add(new Member(name, start, valueStart, valueEnd));
            }
            if (t != JsonToken.END_OBJECT) {
                throw new IOException("malformed JSON object");
            }
            int close = (int) p.currentTokenLocation().getByteOffset();
            if (p.nextToken() != null) {
                throw new IOException("trailing data after the JSON object");
            }
            if (open < 0 || close < 0 || json[open] != '{' || json[close] != '}') {
                throw new IOException("cannot locate the object's braces");
            }
            return new JsonObjectEditor(json, close, members);
        }
    }

    List<Member> members() {
        return members;
    }

    /** The last member with this name (JSON decoders keep the last duplicate), or null. */
    Member member(String name) {
        Member found = null;
        for (Member m : members) {
            if (m.name().equals(name)) {
                found = m;
            }
        }
        return found;
    }

    /** The raw bytes of a member's value. */
    byte[] rawValue(Member m) {
        return Arrays.copyOfRange(src, m.valueStart(), m.valueEnd());
    }

    /** The first byte of a member's value, which identifies its JSON type. */
    byte firstByte(Member m) {
        return src[m.valueStart()];
    }

    /** Removes every member with this name, together with one adjoining comma. */
    void remove(String name) {
        for (int i = 0; i < members.size(); i++) {
            if (members.get(i).name().equals(name)) {
                removed.set(i);
            }
        }
    }

    /** Replaces the value of the last member with this name, or appends the member when absent. */
    void put(String name, byte[] rawValue) {
        Member m = member(name);
        if (m != null) {
            splices.add(new Splice(m.valueStart(), m.valueEnd(), rawValue));
        } else {
            append(name, rawValue);
        }
    }

    /** Appends a member before the closing brace. */
    void append(String name, byte[] rawValue) {
        byte[] key = quote(name);
        byte[] member = new byte[key.length + 1 + rawValue.length];
        System.arraycopy(key, 0, member, 0, key.length);
        member[key.length] = ':';
        System.arraycopy(rawValue, 0, member, key.length + 1, rawValue.length);
        appended.add(member);
    }

    /** Whether any edit was requested. */
    boolean edited() {
        return !splices.isEmpty() || !appended.isEmpty() || !removed.isEmpty();
    }

    /** The edited document. */
    byte[] toBytes() {
        if (!edited()) {
            return src;
        }
        List<Splice> ordered = new ArrayList<>();
        int n = members.size();
        for (int i = removed.nextSetBit(0); i >= 0; ) {
            int j = removed.nextClearBit(i) - 1;
            if (j + 1 < n) {
                ordered.add(new Splice(members.get(i).start(), members.get(j + 1).start(), new byte[0]));
            } else if (i > 0) {
                ordered.add(new Splice(members.get(i - 1).valueEnd(), members.get(j).valueEnd(), new byte[0]));
            } else {
                ordered.add(new Splice(members.get(i).start(), members.get(j).valueEnd(), new byte[0]));
            }
            i = removed.nextSetBit(j + 1);
        }
        for (Splice s : splices) {
            boolean inRemoved = false;
            for (int i = removed.nextSetBit(0); i >= 0; i = removed.nextSetBit(i + 1)) {
                Member m = members.get(i);
                if (s.from() >= m.start() && s.to() <= m.valueEnd()) {
                    inRemoved = true;
                }
            }
            if (!inRemoved) {
                ordered.add(s);
            }
        }
        ordered.sort(Comparator.comparingInt(Splice::from).thenComparingInt(Splice::to));
        ByteArrayOutputStream out = new ByteArrayOutputStream(src.length + 128);
        int pos = 0;
        for (Splice s : ordered) {
            out.write(src, pos, s.from() - pos);
            out.writeBytes(s.insert());
            pos = s.to();
        }
        out.write(src, pos, close - pos);
        boolean hasMembers = removed.cardinality() < n;
        for (byte[] m : appended) {
            if (hasMembers) {
                out.write(',');
            }
            out.writeBytes(m);
            hasMembers = true;
        }
        out.write(src, close, src.length - close);
        return out.toByteArray();
    }

    /** A JSON string literal (quotes and escapes) for a name or value. */
    static byte[] quote(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString().getBytes(StandardCharsets.UTF_8);
    }

    static byte[] number(long v) {
        return Long.toString(v).getBytes(StandardCharsets.US_ASCII);
    }
}
