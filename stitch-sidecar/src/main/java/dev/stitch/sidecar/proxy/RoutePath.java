package dev.stitch.sidecar.proxy;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * The path of a request target as the engine's router sees it (docs/protocol/sidecar-http.md §4.1):
 * percent-decoded once as UTF-8, dot segments resolved, repeated slashes folded. Anything that could
 * be read two ways is refused: an encoded slash or percent sign (double decoding), a NUL or other
 * control character, a backslash, invalid UTF-8, a truncated escape, or {@code ..} above the root.
 */
final class RoutePath {

    private RoutePath() {
    }

    /**
     * The decoded, normalised path, starting with {@code /} (a trailing slash is kept).
     *
     * @throws IllegalArgumentException naming what is ambiguous or invalid
     */
    static String normalise(String rawPath) {
        String decoded = decode(rawPath);
        if (!decoded.startsWith("/")) {
            decoded = "/" + decoded;
        }
        Deque<String> segments = new ArrayDeque<>();
        String[] parts = decoded.split("/", -1);
        for (int i = 1; i < parts.length; i++) {
            String part = parts[i];
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                if (segments.isEmpty()) {
                    throw new IllegalArgumentException("'..' climbs above the root");
                }
                segments.removeLast();
                continue;
            }
            segments.addLast(part);
        }
        String last = parts[parts.length - 1];
        boolean trailing = decoded.length() > 1 && (last.isEmpty() || last.equals(".") || last.equals(".."));
        StringBuilder out = new StringBuilder();
        for (String seg : segments) {
            out.append('/').append(seg);
        }
        if (out.isEmpty()) {
            return "/";
        }
        return trailing ? out.append('/').toString() : out.toString();
    }

    /** Percent-encodes a normalised path again for the wire: everything but unreserved, sub-delims, ':', '@' and '/'. */
    static String encode(String path) {
        StringBuilder out = new StringBuilder(path.length());
        for (byte b : path.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xFF;
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || "-._~!$&'()*+,;=:@/".indexOf(c) >= 0) {
                out.append((char) c);
            } else {
                out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 0xF, 16)));
            }
        }
        return out.toString();
    }

    private static String decode(String raw) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(raw.length());
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c == '%') {
                if (i + 2 >= raw.length()) {
                    throw new IllegalArgumentException("truncated percent escape");
                }
                int hi = Character.digit(raw.charAt(i + 1), 16);
                int lo = Character.digit(raw.charAt(i + 2), 16);
                if (hi < 0 || lo < 0) {
                    throw new IllegalArgumentException("invalid percent escape '" + raw.substring(i, i + 3) + "'");
                }
                int v = hi << 4 | lo;
                if (v == '/' || v == '%' || v == '\\') {
                    throw new IllegalArgumentException("an encoded '" + (char) v + "' in the path is ambiguous");
                }
                bytes.write(v);
                i += 2;
            } else if (c > 0x7E) {
                throw new IllegalArgumentException("a raw non-ASCII character in the path");
            } else {
                bytes.write(c);
            }
        }
        String s;
        try {
            s = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes.toByteArray())).toString();
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException("the decoded path is not UTF-8");
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c == 0x7F || c == '\\') {
                throw new IllegalArgumentException("a control character or backslash in the path");
            }
        }
        return s;
    }
}
