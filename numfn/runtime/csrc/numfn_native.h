/*
 * numfn's native runtime: C routines that generated programs call, built into the extension module
 * numfn.runtime._numfn_native when the package is built (see setup.py). Every .c file in this directory is
 * compiled into that module; a routine generated code calls is declared here and listed in `numfn_routines`
 * (module.c), which Python reads as `_numfn_native.routines()`: {name: address}.
 *
 * Nothing here includes Python.h except module.c: routines are plain C, callable without the GIL.
 */
#ifndef NUMFN_NATIVE_H
#define NUMFN_NATIVE_H

#include <stdint.h>

/* ---- the thread pool (pool.c) ---------------------------------------------------------------------------------
 *
 * numfn_parallel_for(body, ctx, n) runs body(ctx, start, end) over [0, n), split into chunks that the calling
 * thread and the pool's workers take dynamically; it returns when every chunk is done. It may run the whole range
 * on the calling thread (threads off, another region running, n < 2). */
typedef void (*numfn_body)(void **ctx, int64_t start, int64_t end);
void numfn_parallel_for(numfn_body body, void **ctx, int64_t n);

/* Use `nthreads` threads (the caller's and nthreads - 1 workers) from the next region on; waits for a running
 * region to finish first. Returns the number of threads in use (fewer if threads could not be created). */
int numfn_pool_configure(int nthreads);

/* What a program's buffer table gets in its last slot: numfn_parallel_for while more than one thread is in use,
 * else NULL (kernels then run their loops directly). Read it anew for every call. */
extern void *volatile numfn_pool_slot;

/* ---- sorting (sort.c) -------------------------------------------------------------------------------------------
 *
 * numfn_sort_<t> sorts each of `rows` contiguous rows of `n` elements in place; numfn_argsort_<t> writes the
 * positions that sort each row of `keys`; numfn_select_<t> partitions each row in place around the `nkth` positions
 * `kth` (np.partition). NumPy's stable order, NaNs last. `scratch` holds `scratch_row` elements per row (see sort.c
 * for how much each needs). Every argument by reference, as numfn's extern calls pass them. NUMFN_SORT_TYPES(X)
 * lists the element types: X(suffix, C type). */
#define NUMFN_SORT_TYPES(X)                                                                                         \
    X(u8, uint8_t) X(i8, int8_t) X(u16, uint16_t) X(i16, int16_t) X(f16, uint16_t) X(u32, uint32_t) X(i32, int32_t)  \
    X(f32, float) X(u64, uint64_t) X(i64, int64_t) X(f64, double)
#define NUMFN_DECLARE_SORTS(t, T)                                                                                   \
    void numfn_sort_##t(T *data, T *scratch, const int64_t *rows, const int64_t *n, const int64_t *scratch_row);    \
    void numfn_argsort_##t(const T *keys, int64_t *index, uint64_t *scratch, const int64_t *rows, const int64_t *n, \
                           const int64_t *scratch_row);                                                             \
    void numfn_select_##t(T *data, const int64_t *kth, const int64_t *rows, const int64_t *n, const int64_t *nkth);
NUMFN_SORT_TYPES(NUMFN_DECLARE_SORTS)

/* ---- the routine table (module.c) ----------------------------------------------------------------------------- */
typedef struct {
    const char *name;
    void *address;
} numfn_routine;

extern const numfn_routine numfn_routines[];   /* ends with {NULL, NULL} */

#endif
