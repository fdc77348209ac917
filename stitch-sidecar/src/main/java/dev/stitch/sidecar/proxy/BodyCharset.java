package dev.stitch.sidecar.proxy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.Charset;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * Turns a JSON body into the UTF-8 bytes every later step reads (docs/protocol/sidecar-http.md
 * §4.1). The charset comes from the {@code Content-Type} parameter when there is one, else from a
 * byte-order mark or the zero-byte pattern of the first four bytes (RFC 4627 §3); UTF-16 and UTF-32
 * bodies are transcoded and a byte-order mark is dropped. Without this the JSON parser detected the
 * encoding by itself while the editor and the constraint check read the bytes as UTF-8, so an
 * encoded body slipped past the version check.
 */
final class BodyCharset {

    private static final Charset UTF_32BE = Charset.forName("UTF-32BE");
    private static final Charset UTF_32LE = Charset.forName("UTF-32LE");

    private BodyCharset() {
    }

    /**
     * The body as UTF-8 without a byte-order mark; the same array when it already is.
     *
     * @throws IOException when the declared charset is not a Unicode encoding, the bytes are not valid
     *                     in the charset, or the result holds a NUL byte (which no JSON text contains)
     */
    static byte[] utf8(String contentType, byte[] body) throws IOException {
        String declared = declaredCharset(contentType);
        Charset charset;
        int skip;
        if (declared != null) {
            charset = unicode(declared);
            skip = bomLength(body, charset);
        } else {
            Detected d = detect(body);
            charset = d.charset;
            skip = d.bomLength;
        }
        byte[] out;
        if (charset.equals(StandardCharsets.UTF_8)) {
            out = skip == 0 ? body : java.util.Arrays.copyOfRange(body, skip, body.length);
        } else {
            out = transcode(body, skip, charset);
        }
        for (byte b : out) {
            if (b == 0) {
                throw new IOException("the body is not " + charset.name() + " JSON (it holds a NUL byte)");
            }
        }
        return out;
    }

    /** The {@code charset} parameter of a Content-Type value, lower-cased and unquoted; null when absent. */
    static String declaredCharset(String contentType) {
        if (contentType == null) {
            return null;
        }
        for (String param : contentType.split(";")) {
            int eq = param.indexOf('=');
            if (eq > 0 && param.substring(0, eq).trim().equalsIgnoreCase("charset")) {
                String v = param.substring(eq + 1).trim();
                if (v.length() >= 2 && v.startsWith("\"") && v.endsWith("\"")) {
                    v = v.substring(1, v.length() - 1);
                }
                return v.toLowerCase(Locale.ROOT);
            }
        }
        return null;
    }

    private static Charset unicode(String name) throws IOException {
        return switch (name) {
            case "utf-8", "utf8" -> StandardCharsets.UTF_8;
            case "utf-16" -> StandardCharsets.UTF_16;
            case "utf-16be" -> StandardCharsets.UTF_16BE;
            case "utf-16le" -> StandardCharsets.UTF_16LE;
            case "utf-32" -> Charset.forName("UTF-32");
            case "utf-32be" -> UTF_32BE;
            case "utf-32le" -> UTF_32LE;
            default -> throw new IOException("unsupported charset '" + name + "' for a JSON body (UTF-8, UTF-16 or UTF-32)");
        };
    }

    private record Detected(Charset charset, int bomLength) {
    }

    private static Detected detect(byte[] b) {
        int n = b.length;
        if (n >= 4 && b[0] == 0 && b[1] == 0 && (b[2] & 0xFF) == 0xFE && (b[3] & 0xFF) == 0xFF) {
            return new Detected(UTF_32BE, 4);
        }
        if (n >= 4 && (b[0] & 0xFF) == 0xFF && (b[1] & 0xFF) == 0xFE && b[2] == 0 && b[3] == 0) {
            return new Detected(UTF_32LE, 4);
        }
        if (n >= 3 && (b[0] & 0xFF) == 0xEF && (b[1] & 0xFF) == 0xBB && (b[2] & 0xFF) == 0xBF) {
            return new Detected(StandardCharsets.UTF_8, 3);
        }
        if (n >= 2 && (b[0] & 0xFF) == 0xFE && (b[1] & 0xFF) == 0xFF) {
            return new Detected(StandardCharsets.UTF_16BE, 2);
        }
        if (n >= 2 && (b[0] & 0xFF) == 0xFF && (b[1] & 0xFF) == 0xFE) {
            return new Detected(StandardCharsets.UTF_16LE, 2);
        }
        if (n >= 4) {
            boolean z0 = b[0] == 0, z1 = b[1] == 0, z2 = b[2] == 0, z3 = b[3] == 0;
            if (z0 && z1 && z2 && !z3) {
                return new Detected(UTF_32BE, 0);
            }
            if (!z0 && z1 && z2 && z3) {
                return new Detected(UTF_32LE, 0);
            }
        }
        if (n >= 2) {
            if (b[0] == 0 && b[1] != 0) {
                return new Detected(StandardCharsets.UTF_16BE, 0);
            }
            if (b[0] != 0 && b[1] == 0) {
                return new Detected(StandardCharsets.UTF_16LE, 0);
            }
        }
        return new Detected(StandardCharsets.UTF_8, 0);
    }

    /** Length of a byte-order mark of {@code charset} at the start of {@code b}; a generic UTF-16/32 decoder reads its own. */
    private static int bomLength(byte[] b, Charset charset) {
        String name = charset.name();
        if (name.equals("UTF-8")) {
            return b.length >= 3 && (b[0] & 0xFF) == 0xEF && (b[1] & 0xFF) == 0xBB && (b[2] & 0xFF) == 0xBF ? 3 : 0;
        }
        if (name.equals("UTF-16BE")) {
            return b.length >= 2 && (b[0] & 0xFF) == 0xFE && (b[1] & 0xFF) == 0xFF ? 2 : 0;
        }
        if (name.equals("UTF-16LE")) {
            return b.length >= 2 && (b[0] & 0xFF) == 0xFF && (b[1] & 0xFF) == 0xFE ? 2 : 0;
        }
        if (name.equals("UTF-32BE")) {
            return b.length >= 4 && b[0] == 0 && b[1] == 0 && (b[2] & 0xFF) == 0xFE && (b[3] & 0xFF) == 0xFF ? 4 : 0;
        }
        if (name.equals("UTF-32LE")) {
            return b.length >= 4 && (b[0] & 0xFF) == 0xFF && (b[1] & 0xFF) == 0xFE && b[2] == 0 && b[3] == 0 ? 4 : 0;
        }
        return 0;
    }

    private static byte[] transcode(byte[] body, int skip, Charset charset) throws IOException {
        try {
            CharBuffer chars = charset.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(body, skip, body.length - skip));
            // A generic UTF-16/32 decoder leaves a U+FEFF it did not consume as the first character.
            if (chars.length() > 0 && chars.charAt(0) == '\uFEFF') {
                chars.position(1);
            }
            ByteBuffer utf8 = StandardCharsets.UTF_8.newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .encode(chars);
            byte[] out = new byte[utf8.remaining()];
            utf8.get(out);
            return out;
        } catch (CharacterCodingException e) {
            throw new IOException("the body is not valid " + charset.name() + ": " + e.getMessage(), e);
        }
    }
}
