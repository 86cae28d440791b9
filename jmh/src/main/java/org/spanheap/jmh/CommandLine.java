package org.spanheap.jmh;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import joptsimple.NonOptionArgumentSpec;
import joptsimple.OptionException;
import joptsimple.OptionParser;
import joptsimple.OptionSet;
import joptsimple.OptionSpec;

/**
 * The command line of this module's plain {@code main} programs (JMH's own runner has its own):
 * GNU-style options, {@code --name value}, parsed with jopt-simple. {@code --help} prints the
 * usage and exits with 0; an unknown option, a missing or malformed value, or a value out of
 * range prints one line naming it and exits with {@link #EXIT_USAGE}.
 *
 * {@snippet :
 * CommandLine cli = new CommandLine(MyMain.class, "What the program does.");
 * OptionSpec<Integer> threads = cli.parser().accepts("threads", "worker threads")
 *         .withRequiredArg().ofType(Integer.class).defaultsTo(2);
 * OptionSet o = cli.parse(args);
 * cli.check(o.valueOf(threads) > 0, "--threads must be positive: " + o.valueOf(threads));
 * }
 */
final class CommandLine {

    /** Exit code of a bad command line. */
    static final int EXIT_USAGE = 2;

    private final String program;
    private final String summary;
    private final OptionParser parser = new OptionParser(false); // no abbreviations: --s is not --seconds
    private final OptionSpec<Void> help;
    private NonOptionArgumentSpec<String> arguments;

    /**
     * A command line for the main class {@code main}.
     *
     * @param main the class whose {@code main} parses it (its name starts the usage)
     * @param summary a sentence on what the program does, printed above the options
     */
    CommandLine(Class<?> main, String summary) {
        this.program = main.getSimpleName();
        this.summary = summary;
        this.help = parser.accepts("help", "print this text and exit").forHelp();
    }

    /** {@return the parser, to declare the options on} */
    OptionParser parser() {
        return parser;
    }

    /**
     * Lets the program take arguments that are not options (without this, any is an error).
     *
     * @param description what they are, for the usage
     * @return their spec, to read them with {@link OptionSet#valuesOf(OptionSpec)}
     */
    NonOptionArgumentSpec<String> arguments(String description) {
        arguments = parser.nonOptions(description);
        return arguments;
    }

    /**
     * Parses {@code args} and converts every value given, so that a malformed value is
     * reported here; on {@code --help} prints the usage and exits.
     *
     * @param args the program's arguments
     * @return the options
     */
    OptionSet parse(String[] args) {
        OptionSet options;
        try {
            options = parser.parse(args);
            if (options.has(help)) {
                printUsage(System.out);
                System.exit(0);
            }
            for (OptionSpec<?> spec : options.specs()) {
                options.valuesOf(spec);
            }
        } catch (OptionException e) {
            throw fail(e.getMessage());
        }
        if (arguments == null && !options.nonOptionArguments().isEmpty()) {
            throw fail("unexpected argument: " + options.nonOptionArguments().getFirst());
        }
        return options;
    }

    /**
     * Exits with a usage error unless {@code ok}.
     *
     * @param ok the condition the command line must meet
     * @param message what is wrong, naming the option and the value
     */
    void check(boolean ok, String message) {
        if (!ok) {
            throw fail(message);
        }
    }

    /**
     * Prints {@code message} as a usage error and exits with {@link #EXIT_USAGE}.
     *
     * @param message what is wrong, naming the option and the value
     * @return nothing: declared so that callers can write {@code throw cli.fail(...)}
     */
    IllegalArgumentException fail(String message) {
        System.err.println(program + ": " + message + " (--help lists the options)");
        System.exit(EXIT_USAGE);
        return new IllegalArgumentException(message);
    }

    private void printUsage(PrintStream out) {
        out.println("usage: " + program + (arguments == null ? " [options]" : " [options] [arguments]"));
        out.println(summary);
        out.println();
        try {
            parser.printHelpOn(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
