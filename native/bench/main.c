/*
 * main.c — command line, backend set-up and result line of spanheap-bench.
 *
 *   spanheap-bench WORKLOAD [options]     runs WORKLOAD once, prints one line
 *   spanheap-bench --list                 workloads and their defaults
 *
 * Run each measurement in its own process: the peak RSS printed
 * (getrusage ru_maxrss) is the process's, so it belongs to exactly one run.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/resource.h>

#include "bench.h"

/* ---- workloads ----------------------------------------------------------- */

struct workload {
    const char *name;
    int (*run)(const struct bench_params *, struct bench_result *);
    enum bench_metric metric;
    struct bench_params defaults;
    const char *summary;
};

/* Defaults are the "full" scale; run.sh --quick passes smaller counts. */
static const struct workload workloads[] = {
    { "threadtest", threadtest_run, METRIC_MOPS,
      { .threads = 1, .size_min = 64, .size_max = 64, .objects = 100000, .rounds = 500, .seed = 1 },
      "per round each thread allocates objects/threads blocks, then frees them in order" },
    { "larson", larson_run, METRIC_MOPS,
      { .threads = 1, .size_min = 16, .size_max = 128, .slots = 1000, .rounds = 100, .seconds = 2.0, .seed = 1 },
      "random free+alloc in a slice of slots; after rounds*slots a new thread takes over the slice" },
    { "prod-con", prodcon_run, METRIC_MOPS,
      { .threads = 2, .size_min = 16, .size_max = 512, .objects = 10000000, .seed = 1 },
      "threads/2 pairs: the producer allocates, the consumer frees (all frees remote)" },
    { "cache-thrash", cache_thrash_run, METRIC_SECONDS,
      { .threads = 1, .size_min = 8, .size_max = 8, .iterations = 1000, .repetitions = 100000, .seed = 1 },
      "active false sharing: alloc a small block, write it repetitions/threads times, free" },
    { "cache-scratch", cache_scratch_run, METRIC_SECONDS,
      { .threads = 1, .size_min = 8, .size_max = 8, .iterations = 1000, .repetitions = 100000, .seed = 1 },
      "passive false sharing: free a block from the main thread first, then as cache-thrash" },
};

static const struct workload *find_workload(const char *name)
{
    for (size_t i = 0; i < sizeof workloads / sizeof workloads[0]; i++)
        if (strcmp(workloads[i].name, name) == 0)
            return &workloads[i];
    return NULL;
}

static void list_workloads(FILE *out)
{
    for (size_t i = 0; i < sizeof workloads / sizeof workloads[0]; i++) {
        const struct workload *w = &workloads[i];
        const struct bench_params *d = &w->defaults;
        fprintf(out, "  %-14s %s\n", w->name, w->summary);
        fprintf(out, "  %-14s defaults: --threads %d --size %zu", "", d->threads, d->size_min);
        if (d->size_max > d->size_min)
            fprintf(out, "-%zu", d->size_max);
        if (d->objects)
            fprintf(out, " --objects %ld", d->objects);
        if (d->rounds)
            fprintf(out, " --rounds %ld", d->rounds);
        if (d->slots)
            fprintf(out, " --slots %ld", d->slots);
        if (d->seconds > 0)
            fprintf(out, " --seconds %g", d->seconds);
        if (d->iterations)
            fprintf(out, " --iterations %ld --repetitions %ld", d->iterations, d->repetitions);
        fprintf(out, "; result in %s\n", w->metric == METRIC_MOPS ? "Mops/s" : "seconds");
    }
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: spanheap-bench WORKLOAD [options]\n"
            "       spanheap-bench --list | --header\n"
            "options:\n"
            "  --backend sh|malloc   allocator: sh_alloc/sh_free on one heap, or the\n"
            "                        process's malloc/free (LD_PRELOAD picks which)\n"
            "  --threads N           worker threads\n"
            "  --size S | MIN-MAX    object size in bytes, or a uniform range\n"
            "  --objects N           threadtest: blocks per round over all threads;\n"
            "                        prod-con: blocks over all pairs\n"
            "  --rounds N            threadtest: rounds; larson: rounds per slot\n"
            "  --slots N             larson: blocks per thread slice\n"
            "  --seconds S           larson: run time\n"
            "  --iterations N        cache-*: allocations per thread\n"
            "  --repetitions N       cache-*: write passes per block, split over threads\n"
            "  --seed N              random seed\n"
            "output: one CSV line (see --header): value is Mops/s (allocations + frees\n"
            "per microsecond) or, for cache-*, seconds; peak_rss_kb is ru_maxrss;\n"
            "cpu_seconds is the process's user + system time.\n"
            "workloads:\n");
    list_workloads(out);
}

/* ---- command line -------------------------------------------------------- */

static long parse_long(const char *opt, const char *s, long min)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min) {
        fprintf(stderr, "%s must be an integer >= %ld: %s\n", opt, min, s);
        exit(2);
    }
    return v;
}

static double parse_seconds(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !(v > 0 && v < 1e6)) {
        fprintf(stderr, "--seconds must be a positive number: %s\n", s);
        exit(2);
    }
    return v;
}

static void parse_size(const char *s, struct bench_params *p)
{
    const char *dash = strchr(s, '-');
    if (dash == NULL) {
        p->size_min = p->size_max = (size_t)parse_long("--size", s, 0);
        return;
    }
    char lo[32];
    size_t n = (size_t)(dash - s);
    if (n == 0 || n >= sizeof lo) {
        fprintf(stderr, "--size must be S or MIN-MAX: %s\n", s);
        exit(2);
    }
    memcpy(lo, s, n);
    lo[n] = '\0';
    p->size_min = (size_t)parse_long("--size", lo, 0);
    p->size_max = (size_t)parse_long("--size", dash + 1, 0);
    if (p->size_max < p->size_min) {
        fprintf(stderr, "--size MIN-MAX needs MIN <= MAX: %s\n", s);
        exit(2);
    }
}

static const char csv_header[] =
    "workload,backend,threads,size,metric,value,seconds,ops,peak_rss_kb,cpu_seconds,extra";

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "backend", required_argument, NULL, 'b' },
        { "threads", required_argument, NULL, 't' },
        { "size", required_argument, NULL, 's' },
        { "objects", required_argument, NULL, 'n' },
        { "rounds", required_argument, NULL, 'r' },
        { "slots", required_argument, NULL, 'c' },
        { "seconds", required_argument, NULL, 'd' },
        { "iterations", required_argument, NULL, 'i' },
        { "repetitions", required_argument, NULL, 'w' },
        { "seed", required_argument, NULL, 'S' },
        { "list", no_argument, NULL, 'l' },
        { "header", no_argument, NULL, 'H' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };

    /* The workload comes first; everything after it is an option. */
    const struct workload *w = NULL;
    if (argc > 1 && argv[1][0] != '-') {
        w = find_workload(argv[1]);
        if (w == NULL) {
            fprintf(stderr, "unknown workload: %s\n", argv[1]);
            usage(stderr);
            return 2;
        }
        optind = 2;
    }
    struct bench_params p = w ? w->defaults : (struct bench_params){ 0 };
    const char *backend = "malloc";
    long threads = 0;

    int opt;
    while ((opt = getopt_long(argc, argv, "+b:t:s:n:r:c:d:i:w:S:lHh", options, NULL)) != -1) {
        switch (opt) {
        case 'b': backend = optarg; break;
        case 't': threads = parse_long("--threads", optarg, 1); break;
        case 's': parse_size(optarg, &p); break;
        case 'n': p.objects = parse_long("--objects", optarg, 1); break;
        case 'r': p.rounds = parse_long("--rounds", optarg, 1); break;
        case 'c': p.slots = parse_long("--slots", optarg, 1); break;
        case 'd': p.seconds = parse_seconds(optarg); break;
        case 'i': p.iterations = parse_long("--iterations", optarg, 1); break;
        case 'w': p.repetitions = parse_long("--repetitions", optarg, 1); break;
        case 'S': p.seed = (uint64_t)parse_long("--seed", optarg, 0); break;
        case 'l': list_workloads(stdout); return 0;
        case 'H': puts(csv_header); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "unexpected argument: %s\n", argv[optind]);
        return 2;
    }
    if (w == NULL) {
        usage(stderr);
        return 2;
    }
    if (threads > 4096) {
        fprintf(stderr, "--threads must be at most 4096: %ld\n", threads);
        return 2;
    }
    if (threads > 0)
        p.threads = (int)threads;
    if (strcmp(backend, "sh") == 0) {
        bench_backend = BACKEND_SH;
        bench_heap = sh_heap_create(NULL);
        if (bench_heap == NULL) {
            fprintf(stderr, "sh_heap_create failed: error %d\n", sh_last_error());
            return 3;
        }
    } else if (strcmp(backend, "malloc") == 0) {
        bench_backend = BACKEND_MALLOC;
    } else {
        fprintf(stderr, "--backend must be sh or malloc: %s\n", backend);
        return 2;
    }

    struct bench_result r = { 0 };
    if (w->run(&p, &r) != 0)
        return 1;

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);

    /* extra: key=value pairs separated by ';' (no commas: it is one field). */
    char extra[256] = "";
    size_t len = 0;
    if (r.generations > 0)
        len += (size_t)snprintf(extra + len, sizeof extra - len, "threads_started=%ld;", r.generations);
    if (bench_backend == BACKEND_SH) {
        /* Every workload has freed all its blocks by now: live bytes left
         * over are a leak (or a counting error) in the heap. */
        sh_heap_stats st;
        sh_stats(bench_heap, &st);
        len += (size_t)snprintf(extra + len, sizeof extra - len,
                                "sh_live_after=%" PRIu64 ";sh_committed_kb=%" PRIu64 ";",
                                st.live_bytes, st.committed_bytes / 1024);
        if (st.live_bytes != 0)
            fprintf(stderr, "%s: sh_stats reports %" PRIu64 " live bytes after every block was freed\n",
                    w->name, st.live_bytes);
    }
    if (len > 0)
        extra[len - 1] = '\0';

    char size[48];
    if (p.size_max > p.size_min)
        snprintf(size, sizeof size, "%zu-%zu", p.size_min, p.size_max);
    else
        snprintf(size, sizeof size, "%zu", p.size_min);

    double value = w->metric == METRIC_MOPS ? (double)r.ops / r.seconds / 1e6 : r.seconds;
    /* CPU time of the whole process (user + system): compared with
     * seconds * min(threads, cores) it shows how much of the machine the run
     * got on a shared host. */
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6
                 + (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    printf("%s,%s,%d,%s,%s,%.*f,%.6f,%" PRIu64 ",%ld,%.4f,%s\n", w->name, backend, p.threads, size,
           w->metric == METRIC_MOPS ? "mops" : "seconds", w->metric == METRIC_MOPS ? 3 : 6, value,
           r.seconds, r.ops, ru.ru_maxrss, cpu, extra);
    /* The heap is not destroyed: detached larson threads may still be in
     * their exit path, and sh_heap_destroy must not race with them. */
    return 0;
}
