/*
 * The thread pool of parallel kernels (see numfn_native.h for the interface).
 *
 * A parallel region splits [0, n) into chunks, a few per thread. The calling thread and the workers take chunks
 * from one shared counter, so a thread that starts late (its CPU busy with another process, another library's
 * threads, a descheduling) finds less or nothing left instead of holding the region back by a fixed share. The
 * caller waits only for chunks that were taken, never for a worker that has not shown up.
 *
 * The counter and the region's generation share one 64-bit word (generation << 32 | next chunk), so a worker that
 * read the previous region's parameters cannot take a chunk of the next one: its compare-and-swap fails.
 *
 * Waiting: a worker between regions polls briefly with a pause instruction (a wake-up through a condition
 * variable costs tens of microseconds, as long as a small kernel), then yields the CPU a few times (on a busy
 * machine another runnable thread gets it), then sleeps on a condition variable, as OpenMP runtimes do. A caller
 * waiting for chunks others hold polls for about two of its own chunks' time, then sleeps: a chunk that takes
 * longer belongs to a worker the OS has descheduled, and an idle CPU is what lets the OS run that worker sooner.
 *
 * Contention: threads pay only where they help. For each kernel (by its body function) the pool keeps how long an
 * iteration takes on the calling thread alone and with the pool; the first region of a kernel runs alone to
 * measure. A parallel region that was no faster than 0.95x of running alone, or whose caller waited for a
 * straggler (a quarter of the region or more: a worker the OS descheduled), sends the kernel's next regions to the
 * calling thread for a while (10 ms, doubling while it recurs, up to 1 s) before threads are tried again. So a
 * machine busy with other processes or other thread pools costs little more than one thread would, and kernels
 * that threads cannot speed up (memory-bound ones on a saturated bus) stop paying for them.
 *
 * One region runs at a time; a call that finds the pool busy (another thread's region, a region inside a region)
 * runs its whole range itself, so the pool never oversubscribes the cores. `numfn_pool_configure` takes the same
 * lock as a region, so changing the thread count waits for the running region and never disturbs one.
 */
#define _POSIX_C_SOURCE 200809L   /* pthread_sigmask, sched_yield under -std=c99 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

#include "numfn_native.h"

#define CHUNKS_PER_THREAD 16   /* chunks per thread and region: a late thread costs at most one chunk's delay */
#define SPIN_PAUSES 2000       /* polls with a pause instruction before yielding (about 10-40 us) */
#define SPIN_YIELDS 16         /* polls that yield the CPU before sleeping */
#define MAX_WORKERS 1023
#define BACKOFF_MIN_NS 10000000LL    /* a kernel runs alone after threads did not pay: for 10 ms ... */
#define BACKOFF_MAX_NS 1000000000LL  /* ... doubling up to 1 s while they keep not paying */
#define KERNEL_STATS 64              /* kernels whose timings are kept (by body address; a clash shares a slot) */

static struct {
    pthread_mutex_t region;    /* held by the caller of the running region, and by numfn_pool_configure */
    pthread_mutex_t m;         /* guards the fields below that are not atomic */
    pthread_cond_t wake;       /* workers sleep on it between regions */
    pthread_cond_t done;       /* a caller sleeps on it while chunks others took run */
    int started;               /* workers created (ids 1..started); they live for the process */
    int active;                /* workers taking part in regions (ids 1..active); atomic reads outside m */
    int sleeping;              /* workers waiting on `wake` */
    int caller_sleeping;       /* whether the caller waits on `done` */
    int respawn;               /* after fork(): workers to create again before the next region */
    uint64_t state;            /* atomic: generation << 32 | next chunk */
    uint32_t finished;         /* atomic: chunks of the current region done */
    numfn_body body;           /* the current region (written under m before its generation is published) */
    void **ctx;
    int64_t n;
    uint32_t chunks;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
          0, 0, 0, 0, 0, 0, 0, NULL, NULL, 0, 0};

/* What the pool knows of one kernel; read and written with pool.region held. */
typedef struct {
    numfn_body body;
    double alone;              /* ns per iteration on the calling thread (a moving average; 0: not measured) */
    int64_t alone_until;       /* run the kernel on the calling thread until this time (ns) */
    int64_t backoff;           /* the current period of that (0: threads pay) */
} kernel_stats;

static kernel_stats kernels[KERNEL_STATS];

static kernel_stats *stats_of(numfn_body body)
{
    uint64_t h = (uint64_t)(uintptr_t)body * 0x9E3779B97F4A7C15ULL;
    kernel_stats *k = &kernels[(h >> 32) % KERNEL_STATS];
    if (k->body != body) {
        k->body = body;
        k->alone = 0;
        k->alone_until = k->backoff = 0;
    }
    return k;
}

static inline double average(double old, double x) { return old == 0 ? x : 0.75 * old + 0.25 * x; }

void *volatile numfn_pool_slot = NULL;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* One wait step: pause for the first polls, then yield, then report that it is time to sleep (returns 0). */
static inline int poll_step(int polls)
{
    if (polls < SPIN_PAUSES) cpu_relax();
    else if (polls < SPIN_PAUSES + SPIN_YIELDS) sched_yield();
    else return 0;
    return 1;
}

static inline uint32_t generation_of(uint64_t state) { return (uint32_t)(state >> 32); }

static inline int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Take chunks of region `gen` until none is left; returns how many this thread ran. */
static uint32_t run_chunks(uint32_t gen, numfn_body body, void **ctx, int64_t n, uint32_t chunks, int is_caller)
{
    uint32_t ran = 0;
    int64_t q = n / chunks, r = n % chunks;
    uint64_t s = __atomic_load_n(&pool.state, __ATOMIC_ACQUIRE);
    for (;;) {
        if (generation_of(s) != gen || (uint32_t)s >= chunks) return ran;
        if (!__atomic_compare_exchange_n(&pool.state, &s, s + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
        int64_t c = (int64_t)(uint32_t)s;
        int64_t lo = q * c + (c < r ? c : r);
        body(ctx, lo, lo + q + (c < r ? 1 : 0));
        ran++;
        if (__atomic_add_fetch(&pool.finished, 1, __ATOMIC_ACQ_REL) == chunks) {
            if (!is_caller) {   /* the region's last chunk: wake its caller if it sleeps */
                pthread_mutex_lock(&pool.m);
                if (pool.caller_sleeping) pthread_cond_signal(&pool.done);
                pthread_mutex_unlock(&pool.m);
            }
            return ran;
        }
        s = __atomic_load_n(&pool.state, __ATOMIC_ACQUIRE);
    }
}

static void *worker_main(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint32_t seen = generation_of(__atomic_load_n(&pool.state, __ATOMIC_ACQUIRE));
    for (;;) {
        if (__atomic_load_n(&pool.active, __ATOMIC_RELAXED) >= id) {
            for (int polls = 0; generation_of(__atomic_load_n(&pool.state, __ATOMIC_ACQUIRE)) == seen; polls++) {
                if (!poll_step(polls)) break;
            }
        }
        pthread_mutex_lock(&pool.m);
        for (;;) {
            if (pool.active < id) {   /* not taking part: sleep until the thread count changes */
                pool.sleeping++;
                pthread_cond_wait(&pool.wake, &pool.m);
                pool.sleeping--;
                seen = generation_of(__atomic_load_n(&pool.state, __ATOMIC_ACQUIRE));
                continue;
            }
            if (generation_of(__atomic_load_n(&pool.state, __ATOMIC_ACQUIRE)) != seen) break;
            pool.sleeping++;
            pthread_cond_wait(&pool.wake, &pool.m);
            pool.sleeping--;
        }
        seen = generation_of(__atomic_load_n(&pool.state, __ATOMIC_ACQUIRE));
        numfn_body body = pool.body;
        void **ctx = pool.ctx;
        int64_t n = pool.n;
        uint32_t chunks = pool.chunks;
        pthread_mutex_unlock(&pool.m);
        (void)run_chunks(seen, body, ctx, n, chunks, 0);
    }
    return NULL;
}

/* Create workers up to `want` and let `want` of them take part. Called with pool.region held. */
static int configure_locked(int want)
{
    if (want < 0) want = 0;
    if (want > MAX_WORKERS) want = MAX_WORKERS;
    pthread_mutex_lock(&pool.m);
    if (pool.started < want) {
        /* workers take no signals: the process's signal handlers run on its own threads */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        while (pool.started < want) {
            pthread_t t;
            pthread_attr_t attr;
            pthread_attr_init(&attr);
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            int err = pthread_create(&t, &attr, worker_main, (void *)(intptr_t)(pool.started + 1));
            pthread_attr_destroy(&attr);
            if (err != 0) break;
            pool.started++;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    int active = want < pool.started ? want : pool.started;
    __atomic_store_n(&pool.active, active, __ATOMIC_RELAXED);
    pool.respawn = 0;
    if (pool.sleeping > 0) pthread_cond_broadcast(&pool.wake);
    numfn_pool_slot = active > 0 ? (void *)numfn_parallel_for : NULL;
    pthread_mutex_unlock(&pool.m);
    return active + 1;
}

int numfn_pool_configure(int nthreads)
{
    pthread_mutex_lock(&pool.region);
    int threads = configure_locked(nthreads - 1);
    pthread_mutex_unlock(&pool.region);
    return threads;
}

void numfn_parallel_for(numfn_body body, void **ctx, int64_t n)
{
    if (n < 2 || pthread_mutex_trylock(&pool.region) != 0) {
        body(ctx, 0, n);
        return;
    }
    if (pool.respawn) configure_locked(pool.respawn);
    int active = pool.active;   /* stable: configuring takes the region lock */
    if (active == 0) {
        pthread_mutex_unlock(&pool.region);
        body(ctx, 0, n);
        return;
    }
    kernel_stats *k = stats_of(body);
    int64_t start = now_ns();
    if (k->alone == 0 || start < k->alone_until) {   /* measure, or threads did not pay lately: run alone */
        body(ctx, 0, n);
        k->alone = average(k->alone, (double)(now_ns() - start) / (double)n);
        pthread_mutex_unlock(&pool.region);
        return;
    }
    int64_t c = (int64_t)(active + 1) * CHUNKS_PER_THREAD;
    uint32_t chunks = (uint32_t)(c < n ? c : n);

    pthread_mutex_lock(&pool.m);
    pool.body = body;
    pool.ctx = ctx;
    pool.n = n;
    pool.chunks = chunks;
    __atomic_store_n(&pool.finished, 0, __ATOMIC_RELAXED);
    uint32_t gen = generation_of(__atomic_load_n(&pool.state, __ATOMIC_RELAXED)) + 1;
    __atomic_store_n(&pool.state, (uint64_t)gen << 32, __ATOMIC_RELEASE);
    if (pool.sleeping > 0) pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.m);

    uint32_t mine = run_chunks(gen, body, ctx, n, chunks, 1);
    int64_t own_end = now_ns();
    /* the chunks workers took may still run: wait for them (only for them), polling for about two of our own
       chunks' time before sleeping */
    if (__atomic_load_n(&pool.finished, __ATOMIC_ACQUIRE) < chunks) {
        int64_t patience = mine ? 2 * (own_end - start) / mine : 0;
        for (int polls = 0; __atomic_load_n(&pool.finished, __ATOMIC_ACQUIRE) < chunks; polls++) {
            if (polls < SPIN_PAUSES && ((polls & 63) || now_ns() - own_end < patience)) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&pool.m);
            pool.caller_sleeping = 1;
            while (__atomic_load_n(&pool.finished, __ATOMIC_ACQUIRE) < chunks) pthread_cond_wait(&pool.done, &pool.m);
            pool.caller_sleeping = 0;
            pthread_mutex_unlock(&pool.m);
            break;
        }
    }
    int64_t end = now_ns();
    double per = (double)(end - start) / (double)n;
    int straggler = 4 * (end - own_end) > end - start;
    if (straggler || per > 0.95 * k->alone) {   /* threads did not pay: the kernel runs alone for a while */
        k->backoff = k->backoff ? k->backoff * 2 : BACKOFF_MIN_NS;
        if (k->backoff > BACKOFF_MAX_NS) k->backoff = BACKOFF_MAX_NS;
        k->alone_until = end + k->backoff;
    }
    else if (per < 0.9 * k->alone) {
        k->backoff = 0;   /* they paid: the next time they do not, the backoff starts over */
    }
    pthread_mutex_unlock(&pool.region);
}

/* In a child made by fork() the workers do not exist (only the forking thread does): start over, and create the
 * same number again before the child's first region. */
static void pool_after_fork_child(void)
{
    pthread_mutex_init(&pool.region, NULL);
    pthread_mutex_init(&pool.m, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.respawn = pool.active;
    pool.started = pool.active = pool.sleeping = pool.caller_sleeping = 0;
}

void numfn_pool_init(void)
{
    static int done = 0;
    if (!done) {
        pthread_atfork(NULL, NULL, pool_after_fork_child);
        done = 1;
    }
}
