/*
 * bench.c — the harness services that the workloads call (bench.h): the
 * backend and heap under test, the out-of-memory and content-check exits,
 * the harness's own memory and the thread start line. main.c sets the
 * backend up and runs one workload.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>

#include "bench.h"

enum bench_backend bench_backend = BACKEND_MALLOC;
sh_heap *bench_heap;

/* ---- harness services ---------------------------------------------------- */

void bench_out_of_memory(const char *workload, size_t size)
{
    int err = bench_backend == BACKEND_SH ? sh_last_error() : errno;
    fprintf(stderr, "%s: allocation of %zu bytes failed (%s error %d)\n", workload, size,
            bench_backend == BACKEND_SH ? "sh" : "errno", err);
    exit(3);
}

void bench_corrupt(const void *ptr, size_t size)
{
    fprintf(stderr, "content check failed: block %p of %zu bytes was changed while live "
                    "(or handed out twice)\n", ptr, size);
    abort();
}

void *harness_calloc(size_t count, size_t size)
{
    /* mmap, not malloc: the harness's own arrays must not depend on the
     * allocator under test, and start page-aligned (no false sharing). */
    size_t bytes = count * size;
    if (bytes == 0)
        bytes = 1;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("harness mmap");
        exit(3);
    }
    return p;
}

struct thread_start {
    void *(*fn)(void *);
    void *arg;
};

static pthread_barrier_t start_line;

static void *thread_trampoline(void *arg)
{
    struct thread_start *s = arg;
    pthread_barrier_wait(&start_line);
    return s->fn(s->arg);
}

double run_threads(int n, void *(*fn)(void *), void *args, size_t stride)
{
    pthread_t *tids = harness_calloc((size_t)n, sizeof *tids);
    struct thread_start *starts = harness_calloc((size_t)n, sizeof *starts);

    pthread_barrier_init(&start_line, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        starts[i].fn = fn;
        starts[i].arg = (char *)args + (size_t)i * stride;
        int rc = pthread_create(&tids[i], NULL, thread_trampoline, &starts[i]);
        if (rc != 0) {
            fprintf(stderr, "cannot start thread %d: %s\n", i, strerror(rc));
            exit(3);
        }
    }
    pthread_barrier_wait(&start_line);
    double start = now_seconds();
    for (int i = 0; i < n; i++)
        pthread_join(tids[i], NULL);
    double elapsed = now_seconds() - start;
    pthread_barrier_destroy(&start_line);
    return elapsed;
}
