package dev.stitch.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.TextNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.OptionalLong;

/**
 * The SGLang {@code extra_key} that scopes the prefix cache to one weight version
 * (docs/protocol/sidecar-http.md §4.3): {@code "wv" + version + ";" + (run + "/" if any) + user key}.
 */
public final class ExtraKey {
    private static final String PREFIX = "wv";

    private ExtraKey() {
    }

    /** Composes one key; a null or empty user key yields the prefix only. */
    public static String compose(long version, String runId, String userKey) {
        StringBuilder sb = new StringBuilder(24);
        sb.append(PREFIX).append(version).append(';');
        if (runId != null) {
            sb.append(runId).append('/');
        }
        if (userKey != null) {
            sb.append(userKey);
        }
        return sb.toString();
    }

    /**
     * The version a composed key carries: it starts with {@code wv}, contains {@code ;}, and the text
     * between {@code wv} and the first {@code ;} is one or more ASCII digits. Never parsed from the
     * right, because SGLang appends a LoRA id without a delimiter.
     */
    public static OptionalLong parseVersion(String key) {
        if (key == null || !key.startsWith(PREFIX)) {
            return OptionalLong.empty();
        }
        int semi = key.indexOf(';', PREFIX.length());
        if (semi < 0) {
            return OptionalLong.empty();
        }
        return WeightIdentity.parseDigits(key, PREFIX.length(), semi);
    }

    /**
     * Reads the request's own {@code extra_key} value (null when absent): a string, a list of strings
     * and nulls, or null. Any other type gives {@link Invalid} (400 {@code InvalidRequest}).
     */
    public static UserKeyResult user(JsonNode value) {
        if (value == null || value.isNull() || value.isMissingNode()) {
            return new UserKey(false, Collections.singletonList(null));
        }
        if (value.isTextual()) {
            return new UserKey(false, List.of(value.textValue()));
        }
        if (value.isArray()) {
            List<String> keys = new ArrayList<>(value.size());
            for (int i = 0; i < value.size(); i++) {
                JsonNode e = value.get(i);
                if (e.isNull()) {
                    keys.add(null);
                } else if (e.isTextual()) {
                    keys.add(e.textValue());
                } else {
                    return new Invalid("extra_key[" + i + "] must be a string or null, got " + e.getNodeType().name().toLowerCase(java.util.Locale.ROOT));
                }
            }
            return new UserKey(true, Collections.unmodifiableList(keys));
        }
        return new Invalid("extra_key must be a string, a list of strings or null, got "
                + value.getNodeType().name().toLowerCase(java.util.Locale.ROOT));
    }

    /** Result of {@link #user}. */
    public sealed interface UserKeyResult permits UserKey, Invalid {
    }

    /** A malformed {@code extra_key}; the message goes into the 400 body. */
    public record Invalid(String message) implements UserKeyResult {
    }

    /**
     * The user's key(s), ready to be composed once the start version is known.
     *
     * @param list whether the request carried a list (composed element-wise)
     * @param keys the user parts, null for none; a single element unless {@code list}
     */
    public record UserKey(boolean list, List<String> keys) implements UserKeyResult {

        /** The composed value to forward: a string, or an array for a list-valued key. */
        public JsonNode compose(long version, String runId) {
            if (!list) {
                return TextNode.valueOf(ExtraKey.compose(version, runId, keys.get(0)));
            }
            ArrayNode out = JsonNodeFactory.instance.arrayNode(keys.size());
            for (String k : keys) {
                out.add(ExtraKey.compose(version, runId, k));
            }
            return out;
        }
    }
}
