package org.spanheap.stress;

import java.io.IOException;
import java.io.UncheckedIOException;
import joptsimple.OptionException;
import joptsimple.OptionParser;
import joptsimple.OptionSet;
import joptsimple.OptionSpec;

/**
 * The command line shared by the randomized stress programs, GNU style ({@code --name value},
 * parsed with jopt-simple): {@code --seconds --platform --virtual --budget-mib --seed
 * --rss-every-seconds}. {@code --help} prints the usage and exits with 0; an unknown option, a
 * malformed value or one out of range prints one line naming it and exits with 2, so each
 * program's {@code main} stays a parse and a run.
 *
 * @param seconds how long the workers run
 * @param platform platform worker threads kept alive at once
 * @param virtual virtual worker threads kept alive at once
 * @param budgetBytes the byte budget of the program (live bytes, or the cache's data set)
 * @param seed seed of every random choice
 * @param rssEverySeconds period of the {@code rss,} CSV lines; 0 prints none
 */
record StressOptions(int seconds, int platform, int virtual, long budgetBytes, long seed, int rssEverySeconds) {

    /** Exit code of a bad command line. */
    static final int EXIT_USAGE = 2;

    static StressOptions parse(String program, String summary, String[] args) {
        OptionParser parser = new OptionParser();
        OptionSpec<Integer> secondsOpt = parser.accepts("seconds", "how long the workers run").withRequiredArg()
                .describedAs("S").ofType(Integer.class).defaultsTo(60);
        OptionSpec<Integer> platformOpt = parser.accepts("platform", "platform worker threads alive at once")
                .withRequiredArg().describedAs("N").ofType(Integer.class).defaultsTo(8);
        OptionSpec<Integer> virtualOpt = parser.accepts("virtual", "virtual worker threads alive at once")
                .withRequiredArg().describedAs("N").ofType(Integer.class).defaultsTo(32);
        OptionSpec<Long> budgetOpt = parser.accepts("budget-mib", "the program's byte budget (at least 16)")
                .withRequiredArg().describedAs("MIB").ofType(Long.class).defaultsTo(256L);
        OptionSpec<Long> seedOpt = parser.accepts("seed", "seed of every random choice (default: the clock)")
                .withRequiredArg().describedAs("N").ofType(Long.class);
        OptionSpec<Integer> rssOpt = parser.accepts("rss-every-seconds", "period of the rss CSV lines (0: none)")
                .withRequiredArg().describedAs("S").ofType(Integer.class).defaultsTo(0);
        OptionSpec<Void> helpOpt = parser.accepts("help", "print this text and exit").forHelp();
        int seconds;
        int platform;
        int virtual;
        long budgetMib;
        long seed;
        int rssEvery;
        try {
            OptionSet o = parser.parse(args);
            for (String arg : args) { // jopt-simple 4.6 takes --sec for --seconds: refuse, as 5.0 can
                String name = arg.startsWith("--") ? arg.substring(2).split("=", 2)[0] : null;
                if (name != null && !name.isEmpty() && !parser.recognizedOptions().containsKey(name)) {
                    throw usage(program, "unknown option --" + name);
                }
            }
            if (o.has(helpOpt)) {
                System.out.println("usage: " + program + " [options]");
                System.out.println(summary);
                System.out.println();
                parser.printHelpOn(System.out);
                System.exit(0);
            }
            if (!o.nonOptionArguments().isEmpty()) {
                throw usage(program, "unexpected argument: " + o.nonOptionArguments().getFirst());
            }
            seconds = o.valueOf(secondsOpt); // values convert here, so inside the try
            platform = o.valueOf(platformOpt);
            virtual = o.valueOf(virtualOpt);
            budgetMib = o.valueOf(budgetOpt);
            seed = o.has(seedOpt) ? o.valueOf(seedOpt) : System.nanoTime();
            rssEvery = o.valueOf(rssOpt);
        } catch (OptionException e) {
            throw usage(program, e.getMessage());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (seconds < 1) {
            throw usage(program, "--seconds must be at least 1: " + seconds);
        }
        if (platform < 0 || virtual < 0 || platform + virtual < 2) {
            throw usage(program, "--platform and --virtual must not be negative and add up to at least 2: "
                    + platform + " + " + virtual);
        }
        if (budgetMib < 16 || budgetMib >= 1L << 30) {
            throw usage(program, "--budget-mib must be 16 to 2^30 - 1: " + budgetMib);
        }
        if (rssEvery < 0) {
            throw usage(program, "--rss-every-seconds must not be negative: " + rssEvery);
        }
        return new StressOptions(seconds, platform, virtual, budgetMib << 20, seed, rssEvery);
    }

    /** Prints {@code message} as a usage error and exits with {@link #EXIT_USAGE}; never returns normally. */
    private static IllegalArgumentException usage(String program, String message) {
        System.err.println(program + ": " + message + " (--help lists the options)");
        System.exit(EXIT_USAGE);
        return new IllegalArgumentException(message);
    }
}
