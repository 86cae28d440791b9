package org.spanheap.jmh;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import joptsimple.OptionSet;
import joptsimple.OptionSpec;
import joptsimple.util.PathConverter;

/**
 * The memory benchmark: resident set and committed bytes against live bytes during and after a
 * churn workload, one allocator per JVM (so each resident set is its own), written as CSV.
 *
 * <p>Not a JMH benchmark: it measures space, not time. The workload, per allocator:
 * <ol>
 *   <li>{@code fill}: allocate blocks of 16 B to 4 KiB (log-uniform) until {@code --live-mib}
 *       MiB are live, writing every byte of each block;</li>
 *   <li>{@code churn}: as many random replacements as there are blocks (free a random block,
 *       allocate a new random size);</li>
 *   <li>{@code free75}: free a random 75% of the blocks (a fragmenting free);</li>
 *   <li>{@code settle}: the target's after-free hook (compaction for the compacting heap), then
 *       one second for background returns to the OS; the last sample is the <em>final</em>
 *       figure;</li>
 *   <li>{@code end}: free the rest and close the allocator.</li>
 * </ol>
 * Samples (about a hundred per phase) record elapsed time, live bytes (what the workload holds),
 * committed bytes (the allocator's own account, -1 if it has none) and VmRSS. The first sample,
 * {@code baseline}, is the JVM before the workload, its Java heap fixed at 1 GiB and pre-touched
 * (unless the caller gives {@code -Xms}/{@code -Xmx}): subtract it to compare allocators.
 *
 * <p>Usage: {@code java --enable-native-access=ALL-UNNAMED -cp benchmarks.jar
 * org.spanheap.jmh.MemoryChurn [--out DIR] [--live-mib N] [--peers A,B,...] [--seed S]} ({@code --help}
 * lists them). Writes
 * {@code DIR/memory.csv} (all samples) and {@code DIR/memory-summary.csv} (peak and final per
 * allocator). Allocators that cannot be had here are reported and skipped.
 */
public final class MemoryChurn {

    static final String DEFAULT_PEERS = "SPANHEAP,SPANHEAP_COMPACTING,SPANHEAP_COMPACTING_OFF,"
            + "MALLOC_FFM,MIMALLOC_FFM,NETTY_POOLED,NETTY_ADAPTIVE,DIRECT_BYTEBUFFER";
    static final int EXIT_UNAVAILABLE = 3;
    /**
     * The Java heap of each churn JVM: fixed and pre-touched, so its share of the resident set
     * is in the baseline sample and does not grow with the workload's Java objects (which differ
     * per allocator: a {@code ByteBuf} is bigger than a {@code MemorySegment}). The direct-memory
     * limit is raised so that {@code ByteBuffer.allocateDirect} and Netty are bounded by the
     * workload, not by the heap size.
     */
    static final List<String> FIXED_HEAP_FLAGS = List.of("-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch",
            "-XX:MaxDirectMemorySize=4g");
    static final String HEADER = "allocator,phase,op,elapsed_ms,live_bytes,committed_bytes,rss_bytes";

    private MemoryChurn() {
    }

    public static void main(String[] args) throws Exception {
        CommandLine cli = new CommandLine(MemoryChurn.class, "Resident and committed memory against live bytes"
                + " during a churn, one allocator per JVM; writes DIR/memory.csv and DIR/memory-summary.csv.");
        OptionSpec<Path> outOpt = cli.parser().accepts("out", "directory for the CSV files").withRequiredArg()
                .describedAs("DIR").withValuesConvertedBy(new PathConverter()).defaultsTo(Path.of("."));
        OptionSpec<Long> liveOpt = cli.parser().accepts("live-mib", "live bytes after the fill").withRequiredArg()
                .describedAs("MIB").ofType(Long.class).defaultsTo(256L);
        OptionSpec<String> peersOpt = cli.parser().accepts("peers", "allocators, comma-separated: those of"
                + " Allocator, SPANHEAP_COMPACTING, SPANHEAP_COMPACTING_OFF").withRequiredArg().describedAs("A,B,...")
                .withValuesSeparatedBy(',')
                .defaultsTo(DEFAULT_PEERS.split(","));
        OptionSpec<Long> seedOpt = cli.parser().accepts("seed", "seed of the workload's random choices")
                .withRequiredArg().ofType(Long.class).defaultsTo(42L);
        OptionSpec<String> childOpt = cli.parser().accepts("child", "internal: run one allocator in this JVM"
                + " (the parent starts one JVM per allocator with it)").withRequiredArg().describedAs("A");
        OptionSet o = cli.parse(args);
        Path out = o.valueOf(outOpt);
        long liveMiB = o.valueOf(liveOpt);
        long seed = o.valueOf(seedOpt);
        cli.check(liveMiB > 0 && liveMiB < 1L << 20, "--live-mib must be 1 to 1048575: " + liveMiB);
        List<String> names = new ArrayList<>();
        try {
            for (String peer : o.valuesOf(peersOpt)) {
                if (!peer.isBlank()) {
                    names.add(checkName(peer.strip()));
                }
            }
            if (o.has(childOpt)) {
                checkName(o.valueOf(childOpt));
            }
        } catch (IllegalArgumentException e) {
            throw cli.fail(e.getMessage());
        }
        if (o.has(childOpt)) {
            System.exit(runChild(o.valueOf(childOpt), out, liveMiB, seed));
        }
        Files.createDirectories(out);
        List<String> rows = new ArrayList<>();
        List<String> summary = new ArrayList<>();
        for (String peer : names) {
            Path csv = out.resolve("memory-" + peer + ".csv");
            int code = spawn(peer, csv, liveMiB, seed);
            if (code == EXIT_UNAVAILABLE) {
                System.out.println("memory churn: skipped " + peer + " (unavailable here)");
                continue;
            }
            if (code != 0) {
                throw new IllegalStateException("memory churn of " + peer + " failed, exit " + code);
            }
            List<String> lines = Files.readAllLines(csv);
            rows.addAll(lines.subList(1, lines.size()));
            summary.add(summarize(peer, lines.subList(1, lines.size())));
            Files.delete(csv);
        }
        List<String> all = new ArrayList<>();
        all.add(HEADER);
        all.addAll(rows);
        Files.write(out.resolve("memory.csv"), all);
        List<String> sum = new ArrayList<>();
        sum.add("allocator,live_mib,baseline_rss,peak_live,peak_committed,peak_rss,"
                + "final_live,final_committed,final_rss");
        for (String line : summary) {
            String[] f = line.split(",", 2);
            sum.add(f[0] + "," + liveMiB + "," + f[1]);
        }
        Files.write(out.resolve("memory-summary.csv"), sum);
        System.out.println("memory churn: wrote " + out.resolve("memory.csv") + " and "
                + out.resolve("memory-summary.csv"));
    }

    /** Returns {@code name} if {@link ChurnTarget#open} knows it. */
    static String checkName(String name) {
        if (name.equals("SPANHEAP_COMPACTING") || name.equals("SPANHEAP_COMPACTING_OFF")) {
            return name;
        }
        try {
            return Allocator.valueOf(name).name();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown allocator: " + name + " (one of "
                    + Arrays.toString(Allocator.values())
                    + ", SPANHEAP_COMPACTING, SPANHEAP_COMPACTING_OFF)");
        }
    }

    /** Runs one allocator in a fresh JVM with this JVM's flags and class path. */
    static int spawn(String peer, Path csv, long liveMiB, long seed)
            throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        if (cmd.stream().noneMatch(a -> a.startsWith("--enable-native-access"))) {
            cmd.add("--enable-native-access=ALL-UNNAMED");
        }
        if (cmd.stream().noneMatch(a -> a.startsWith("-Xmx") || a.startsWith("-Xms"))) {
            cmd.addAll(FIXED_HEAP_FLAGS);
        }
        cmd.add(Allocator.NETTY_UNSAFE_FLAG);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"),
                MemoryChurn.class.getName(), "--child", peer, "--out", csv.toString(),
                "--live-mib", Long.toString(liveMiB), "--seed", Long.toString(seed)));
        System.out.println("memory churn: " + peer + ", " + liveMiB + " MiB live");
        return new ProcessBuilder(cmd).inheritIO().start().waitFor();
    }

    /** Returns "peer,baseline_rss,peak_live,peak_committed,peak_rss,final_live,final_committed,final_rss". */
    static String summarize(String peer, List<String> rows) {
        long baseline = -1;
        long peakLive = 0;
        long peakCommitted = -1;
        long peakRss = 0;
        String[] last = null;
        for (String row : rows) {
            String[] f = row.split(",");
            long live = Long.parseLong(f[4]);
            long committed = Long.parseLong(f[5]);
            long rss = Long.parseLong(f[6]);
            if (f[1].equals("baseline")) {
                baseline = rss;
            }
            peakLive = Math.max(peakLive, live);
            peakCommitted = Math.max(peakCommitted, committed);
            peakRss = Math.max(peakRss, rss);
            if (f[1].equals("settle")) {
                last = f;
            }
        }
        if (last == null) {
            throw new IllegalStateException("no settle sample for " + peer);
        }
        return String.join(",", peer, Long.toString(baseline), Long.toString(peakLive),
                Long.toString(peakCommitted), Long.toString(peakRss), last[4], last[5], last[6]);
    }

    static int runChild(String peer, Path csv, long liveMiB, long seed) throws Exception {
        ChurnTarget target;
        try {
            target = ChurnTarget.open(peer);
        } catch (UnsupportedOperationException | LinkageError e) {
            System.err.println("memory churn: " + peer + ": " + e.getMessage());
            return EXIT_UNAVAILABLE;
        }
        // On a Netty FastThreadLocalThread, like the JMH workloads (see NettyThreadExecutor).
        Throwable[] failure = new Throwable[1];
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(csv))) {
            w.println(HEADER);
            Thread t = NettyThreadExecutor.newThread(() -> {
                try {
                    new Workload(peer, target, liveMiB << 20, seed, w).run();
                } catch (Throwable e) {
                    failure[0] = e;
                }
            });
            t.start();
            t.join();
        } finally {
            target.close();
        }
        if (failure[0] != null) {
            throw new IllegalStateException("memory churn of " + peer + " failed", failure[0]);
        }
        return 0;
    }

    /** One allocator's run; see the class comment for the phases. */
    static final class Workload {
        final String peer;
        final ChurnTarget target;
        final long liveTarget;
        final SplittableRandom random;
        final PrintWriter out;
        final long start = System.nanoTime();
        Object[] blocks = new Object[1 << 16];
        long[] sizes = new long[1 << 16];
        int count;
        long live;
        long ops;
        long sampleEvery;

        Workload(String peer, ChurnTarget target, long liveTarget, long seed, PrintWriter out) {
            this.peer = peer;
            this.target = target;
            this.liveTarget = liveTarget;
            this.random = new SplittableRandom(seed);
            this.out = out;
            // About a hundred samples per phase: mean block size is about 740 B.
            this.sampleEvery = Math.max(1000, liveTarget / 740 / 100);
        }

        void run() throws InterruptedException {
            System.gc();
            sample("baseline");
            while (live < liveTarget) {
                add(nextSize());
                tick("fill");
            }
            sample("fill");
            int n = count;
            for (int i = 0; i < n; i++) {
                int j = random.nextInt(count);
                remove(j);
                add(nextSize());
                tick("churn");
            }
            sample("churn");
            int toFree = count * 3 / 4;
            for (int i = 0; i < toFree; i++) {
                remove(random.nextInt(count));
                tick("free75");
            }
            sample("free75");
            target.afterFree();
            sample("settle");
            Thread.sleep(1000);
            sample("settle");
            while (count > 0) {
                remove(count - 1);
            }
            sample("end");
        }

        long nextSize() {
            return SizeMix.logUniform(random, 16, 4096);
        }

        void add(long size) {
            if (count == blocks.length) {
                blocks = Arrays.copyOf(blocks, count * 2);
                sizes = Arrays.copyOf(sizes, count * 2);
            }
            Object b = target.allocate(size);
            target.fill(b, size, (byte) count);
            blocks[count] = b;
            sizes[count] = size;
            count++;
            live += size;
        }

        /** Frees block j; the last block takes its place. */
        void remove(int j) {
            target.free(blocks[j]);
            live -= sizes[j];
            count--;
            blocks[j] = blocks[count];
            sizes[j] = sizes[count];
            blocks[count] = null;
        }

        void tick(String phase) {
            if (++ops % sampleEvery == 0) {
                sample(phase);
            }
        }

        void sample(String phase) {
            out.println(String.join(",", peer, phase, Long.toString(ops),
                    String.format(Locale.ROOT, "%.1f", (System.nanoTime() - start) / 1e6),
                    Long.toString(live), Long.toString(target.committedBytes()),
                    Long.toString(residentBytes())));
        }
    }

    /** VmRSS of this process, from {@code /proc/self/status}. */
    static long residentBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    String kb = line.substring(6).strip().split("\\s+")[0];
                    return Long.parseLong(kb) * 1024;
                }
            }
            return -1;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
