/*
 * Cross-CPU round trip: two threads pinned to CPUs 0 and 1 hand one cache line
 * back and forth; prints the nanoseconds per round trip.
 *
 * Why: on a shared VM the host may move the two vCPUs between cores that share
 * a cache and cores that do not. Every benchmark whose threads exchange cache
 * lines (a free on one thread, a reuse on another, a lock) then runs at one of
 * two speeds. Run this before and after each run and compare only runs made at
 * the same round trip.
 *
 *   gcc -O2 -pthread -o /tmp/cpu-round-trip tools/cpu-round-trip.c && /tmp/cpu-round-trip
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TRIPS 200000L

static _Atomic long line __attribute__((aligned(64)));

/* Pins the calling thread to `cpu`; returns 0, or an error number (no such CPU). */
static int pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *answer(void *unused) {
    (void) unused;
    if (pin(1) != 0) {
        fprintf(stderr, "cpu-round-trip: cannot run on CPU 1\n");
        exit(2);
    }
    for (long i = 0; i < TRIPS; i++) {
        while (atomic_load_explicit(&line, memory_order_acquire) != 2 * i + 1) {
        }
        atomic_store_explicit(&line, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

int main(void) {
    pthread_t t;
    struct timespec a, b;
    if (pin(0) != 0) {
        fprintf(stderr, "cpu-round-trip: cannot run on CPU 0\n");
        return 2;
    }
    if (pthread_create(&t, NULL, answer, NULL) != 0) {
        perror("pthread_create");
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < TRIPS; i++) {
        atomic_store_explicit(&line, 2 * i + 1, memory_order_release);
        while (atomic_load_explicit(&line, memory_order_acquire) != 2 * i + 2) {
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    pthread_join(t, NULL);
    double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
    printf("%.0f ns per round trip\n", ns / TRIPS);
    return 0;
}
