package dev.stitch.memory;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5 extension giving each test a fresh pinned {@link BufferAllocator} and failing the test
 * when it ends with memory outstanding (Arrow's allocator discipline). Use it either way:
 *
 * <pre>{@code
 * @ExtendWith(AllocatorLeakCheck.class)
 * class MyTest {
 *     @Test void works(BufferAllocator allocator) { ... }
 * }
 *
 * class MyOtherTest {
 *     @RegisterExtension final AllocatorLeakCheck memory = new AllocatorLeakCheck();
 *     @Test void works() { try (OffHeapBuffer b = memory.allocator().allocate(64, MemoryPurpose.SCRATCH)) { ... } }
 * }
 * }</pre>
 */
public final class AllocatorLeakCheck implements BeforeEachCallback, AfterEachCallback, ParameterResolver {

    private volatile BufferAllocator current;

    /** The allocator of the running test. */
    public BufferAllocator allocator() {
        BufferAllocator a = current;
        if (a == null) {
            throw new IllegalStateException("no test is running under AllocatorLeakCheck");
        }
        return a;
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        String name = context == null ? "test" : context.getDisplayName();
        current = BufferAllocator.pinned(name);
    }

    /** Closes the test's allocator; outstanding memory makes the close, and so the test, fail. */
    @Override
    public void afterEach(ExtensionContext context) {
        BufferAllocator a = current;
        current = null;
        if (a != null) {
            long outstanding = a.allocated();
            if (outstanding != 0) {
                try {
                    a.close();
                } catch (IllegalStateException e) {
                    throw new AssertionError("test leaked off-heap memory: " + e.getMessage(), e);
                }
            }
            a.close();
        }
    }

    @Override
    public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return parameterContext.getParameter().getType() == BufferAllocator.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return allocator();
    }
}
