package org.spanheap.jcache;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;

/**
 * Prints, after the tests, how many of the JSR-107 TCK's tests ran, passed,
 * failed, and were excluded by the TCK's own rules (a test the TCK excludes
 * runs as an empty statement and reports success, so it is counted apart
 * here, from the line the TCK logs for it).
 */
public final class TckCounts implements TestExecutionListener {

    /** The logger names of the TCK's excluders: they log "EXCLUDING TEST 'class' 'method'." */
    private static final String EXCLUDER_LOGGERS = "org.jsr107.tck";

    private final AtomicInteger run = new AtomicInteger();
    private final AtomicInteger failed = new AtomicInteger();
    private final Set<String> excluded = ConcurrentHashMap.newKeySet();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord record) {
            String message = record.getMessage();
            if (message != null && message.contains("EXCLUDING TEST")) {
                excluded.add(message);
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };
    /** Held so that the logger (and our handler on it) is not collected. */
    private Logger tckLogger;

    @Override
    public void testPlanExecutionStarted(TestPlan testPlan) {
        tckLogger = Logger.getLogger(EXCLUDER_LOGGERS);
        tckLogger.setLevel(Level.INFO);
        tckLogger.addHandler(handler);
    }

    @Override
    public void executionFinished(TestIdentifier test, TestExecutionResult result) {
        if (!test.isTest() || !isTck(test)) {
            return;
        }
        run.incrementAndGet();
        if (result.getStatus() != TestExecutionResult.Status.SUCCESSFUL) {
            failed.incrementAndGet();
        }
    }

    private static boolean isTck(TestIdentifier test) {
        String id = test.getUniqueId();
        // vintage ids name the runner class: [engine:junit-vintage]/[runner:org.jsr107.tck.CacheTest]/...
        return id.contains(":org.jsr107.tck.") || id.contains(":javax.cache.");
    }

    @Override
    public void testPlanExecutionFinished(TestPlan testPlan) {
        tckLogger.removeHandler(handler);
        if (run.get() == 0) {
            return;
        }
        int excludedCount = excluded.size();
        System.out.printf("JSR-107 TCK: %d tests run; %d passed and %d excluded by the TCK's rules; %d did not pass%n",
                run.get(), run.get() - failed.get() - excludedCount, excludedCount, failed.get());
        excluded.stream().sorted().forEach(line -> System.out.println("  " + line.trim()));
    }
}
