package org.spanheap.examples;

/**
 * The README demo. A placeholder until the examples issue replaces it with the off-heap cache
 * demo; it prints which JVM runs it, so the build's JDK selection can be seen.
 */
public final class Demo {

    private Demo() {
    }

    /**
     * Prints one line naming the runtime.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        System.out.println("spanheap demo placeholder on Java " + Runtime.version()
                + " (" + System.getProperty("java.vendor") + ")");
    }
}
