package org.spanheap.stress;

/**
 * The command line shared by the randomized stress programs: {@code --seconds --platform
 * --virtual --budget-mib --seed --rss-every-seconds}. Bad arguments exit with 2, {@code --help}
 * with 0, so each program's {@code main} stays a parse and a run.
 *
 * @param seconds how long the workers run
 * @param platform platform worker threads kept alive at once
 * @param virtual virtual worker threads kept alive at once
 * @param budgetBytes the byte budget of the program (live bytes, or the cache's data set)
 * @param seed seed of every random choice
 * @param rssEverySeconds period of the {@code rss,} CSV lines; 0 prints none
 */
record StressOptions(int seconds, int platform, int virtual, long budgetBytes, long seed, int rssEverySeconds) {

    static StressOptions parse(String program, String[] args) {
        int seconds = 60;
        int platform = 8;
        int virtual = 32;
        long budgetMib = 256;
        long seed = System.nanoTime();
        int rssEvery = 0;
        for (int i = 0; i < args.length; i++) {
            String v = i + 1 < args.length ? args[i + 1] : null;
            switch (args[i]) {
                case "--seconds" -> seconds = Integer.parseInt(require(args[i], v));
                case "--platform" -> platform = Integer.parseInt(require(args[i], v));
                case "--virtual" -> virtual = Integer.parseInt(require(args[i], v));
                case "--budget-mib" -> budgetMib = Long.parseLong(require(args[i], v));
                case "--seed" -> seed = Long.parseLong(require(args[i], v));
                case "--rss-every-seconds" -> rssEvery = Integer.parseInt(require(args[i], v));
                case "-h", "--help" -> {
                    System.out.println("usage: " + program + " [--seconds 60] [--platform 8] [--virtual 32]"
                            + " [--budget-mib 256] [--seed n] [--rss-every-seconds 0]");
                    System.exit(0);
                }
                default -> {
                    System.err.println("unknown argument: " + args[i]);
                    System.exit(2);
                }
            }
            i++;
        }
        if (seconds < 1 || platform < 0 || virtual < 0 || platform + virtual < 2 || budgetMib < 16 || rssEvery < 0) {
            System.err.println("need --seconds >= 1, --platform + --virtual >= 2, --budget-mib >= 16,"
                    + " --rss-every-seconds >= 0");
            System.exit(2);
        }
        return new StressOptions(seconds, platform, virtual, budgetMib << 20, seed, rssEvery);
    }

    private static String require(String name, String value) {
        if (value == null) {
            System.err.println(name + " needs a value");
            System.exit(2);
        }
        return value;
    }
}
