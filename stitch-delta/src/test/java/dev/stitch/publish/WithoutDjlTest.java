package dev.stitch.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** DJL is optional: the publisher API must load and work when DJL is not on the class path. */
class WithoutDjlTest {

    @Test
    void publisherApiLoadsWithoutDjl() throws Exception {
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<URL> urls = new ArrayList<>();
        boolean sawDjl = false;
        for (String entry : cp.split(File.pathSeparator)) {
            if (entry.isEmpty()) {
                continue;
            }
            if (entry.contains(File.separator + "ai" + File.separator + "djl" + File.separator)) {
                sawDjl = true;
                continue;
            }
            urls.add(Path.of(entry).toUri().toURL());
        }
        assertTrue(sawDjl, "the test class path should hold DJL, so that leaving it out means something");
        try (URLClassLoader loader = new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader())) {
            assertThrows(ClassNotFoundException.class, () -> Class.forName("ai.djl.ndarray.NDList", false, loader));
            Class<?> weights = Class.forName("dev.stitch.publish.Weights", true, loader);
            Class<?> publisher = Class.forName("dev.stitch.publish.WeightPublisher", true, loader);
            Object builder = weights.getMethod("builder").invoke(null);
            Class<?> dtype = Class.forName("dev.stitch.tensor.Dtype", true, loader);
            Object u8 = dtype.getMethod("valueOf", String.class).invoke(null, "U8");
            Method add = builder.getClass().getMethod("add", String.class, dtype, long[].class, byte[].class);
            add.invoke(builder, "t", u8, new long[] {2}, new byte[] {1, 2});
            Object w = builder.getClass().getMethod("build").invoke(builder);
            assertEquals(2L, weights.getMethod("byteSize").invoke(w));
            Object pb = publisher.getMethod("builder").invoke(null);
            assertFalse(pb.getClass().getName().isEmpty());
            Class<?> djl = Class.forName("dev.stitch.publish.DjlWeights", false, loader);
            assertThrows(NoClassDefFoundError.class, djl::getMethods, "only DjlWeights needs DJL");
        }
    }
}
