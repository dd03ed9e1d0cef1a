/*
 * numfn's sorting routines: np.sort and np.argsort on a batch of rows (numfn.numpy.sorting calls them through the
 * extern-call mechanism, numfn/extern.py).
 *
 *   numfn_sort_<t>(T *data, const int64_t *rows, const int64_t *n, int64_t *status)
 *       sorts each of the `rows` contiguous rows of `n` elements of `data` in place;
 *   numfn_argsort_<t>(const T *keys, int64_t *index, const int64_t *rows, const int64_t *n, int64_t *status)
 *       writes, per row, the positions that sort the row of `keys`.
 *
 * Every argument is passed by reference (the convention of numfn's extern calls). `status` becomes 0, or 1 when
 * scratch memory could not be allocated (the caller raises MemoryError). <t> is one of u8 (also bool), i8, u16, i16,
 * f16, u32, i32, f32, u64, i64, f64.
 *
 * The order is NumPy's: ascending, stable (equal elements keep their order), NaNs last; -0.0 and +0.0 are equal
 * (they keep their order too), and so are all NaNs, whatever their sign and payload. Every element is sorted by a
 * key: an unsigned integer whose order is that order (the sign bit flipped for signed integers; for floats the
 * usual order-preserving bit pattern, with every zero mapped to +0.0's key and every NaN to one key above +inf's).
 *
 * Algorithms, by row length:
 *   n <= 64      sorting networks (Batcher's odd-even merge sort, keeping only the comparators that matter for n
 *                elements), applied to 8 rows at a time with one row per vector lane, so each comparator is a
 *                vector min and max; stable because argsort compares (key, position) pairs, and for value sorts
 *                only equal keys of different bits (zeros, NaNs) could tell, which are put back in input order;
 *   longer       LSD radix sort on the keys' bytes (stable), skipping the bytes all keys share. Values carry
 *                their own bits, so -0.0 and NaN payloads come out exactly where a stable sort puts them.
 * Argsort sorts (key << 32 | position) for keys of 32 bits or less and (key, position) pairs otherwise.
 * (Measured on AVX-512 hardware: merge sort, tried for medium lengths, lost to the radix sort from 100 elements
 * and to the 64-wide network below that.)
 *
 * Batches of rows run on numfn's thread pool (pool.c) when they are large enough; one row runs on one thread.
 * Scratch memory (the radix sorts') is allocated per chunk of rows and freed before returning.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "numfn_native.h"

#if defined(__GNUC__) || defined(__clang__)
#define UNUSED __attribute__((unused))
#else
#define UNUSED
#endif

#define NETWORK_MAX 64        /* rows this long or shorter: sorting networks; longer ones: radix sort */
#define LANES 8               /* rows a network sorts at once */
#define PARALLEL_MIN 32768    /* elements: smaller batches run on the calling thread */

/* ---- keys -------------------------------------------------------------------------------------------------- */

static inline uint8_t key_u8(uint8_t x) { return x; }
static inline uint8_t key_i8(int8_t x) { return (uint8_t)((uint8_t)x ^ 0x80u); }
static inline uint16_t key_u16(uint16_t x) { return x; }
static inline uint16_t key_i16(int16_t x) { return (uint16_t)((uint16_t)x ^ 0x8000u); }
static inline uint32_t key_u32(uint32_t x) { return x; }
static inline uint32_t key_i32(int32_t x) { return (uint32_t)x ^ 0x80000000u; }
static inline uint64_t key_u64(uint64_t x) { return x; }
static inline uint64_t key_i64(int64_t x) { return (uint64_t)x ^ 0x8000000000000000ull; }

/* floats: NaN's key is the key of NumPy's default NaN (np.nan), the largest key a float can have */
#define F16_NAN_KEY 0xfe00u
#define F32_NAN_KEY 0xffc00000u
#define F64_NAN_KEY 0xfff8000000000000ull

/* branch-free (the sign of random data is unpredictable): a negative value's bits are all flipped, a positive
 * one's sign bit; then zeros and NaNs take their class's key */
static inline uint16_t key_f16(uint16_t b)
{
    uint16_t mag = b & 0x7fffu;
    uint16_t k = (uint16_t)(b ^ ((uint16_t)(0 - (b >> 15)) | 0x8000u));
    k = mag == 0 ? 0x8000u : k;
    return mag > 0x7c00u ? F16_NAN_KEY : k;
}

static inline uint32_t key_f32(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    uint32_t mag = b & 0x7fffffffu;
    uint32_t k = b ^ ((uint32_t)((int32_t)b >> 31) | 0x80000000u);
    k = mag == 0 ? 0x80000000u : k;
    return mag > 0x7f800000u ? F32_NAN_KEY : k;
}

static inline uint64_t key_f64(double x)
{
    uint64_t b;
    memcpy(&b, &x, 8);
    uint64_t mag = b & 0x7fffffffffffffffull;
    uint64_t k = b ^ ((uint64_t)((int64_t)b >> 63) | 0x8000000000000000ull);
    k = mag == 0 ? 0x8000000000000000ull : k;
    return mag > 0x7ff0000000000000ull ? F64_NAN_KEY : k;
}

/* the value of a key (for floats: +0.0 for the zeros' key, np.nan for NaN's) */
static inline uint8_t unkey_u8(uint8_t k) { return k; }
static inline int8_t unkey_i8(uint8_t k) { return (int8_t)(uint8_t)(k ^ 0x80u); }
static inline uint16_t unkey_u16(uint16_t k) { return k; }
static inline int16_t unkey_i16(uint16_t k) { return (int16_t)(uint16_t)(k ^ 0x8000u); }
static inline uint16_t unkey_f16(uint16_t k) { return (uint16_t)(k ^ ((uint16_t)((k >> 15) - 1) | 0x8000u)); }
static inline uint32_t unkey_u32(uint32_t k) { return k; }
static inline int32_t unkey_i32(uint32_t k) { return (int32_t)(k ^ 0x80000000u); }
static inline float unkey_f32(uint32_t k)
{
    uint32_t b = k ^ (((k >> 31) - 1) | 0x80000000u);
    float x;
    memcpy(&x, &b, 4);
    return x;
}
static inline uint64_t unkey_u64(uint64_t k) { return k; }
static inline int64_t unkey_i64(uint64_t k) { return (int64_t)(k ^ 0x8000000000000000ull); }
static inline double unkey_f64(uint64_t k)
{
    uint64_t b = k ^ (((k >> 63) - 1) | 0x8000000000000000ull);
    double x;
    memcpy(&x, &b, 8);
    return x;
}

/* whether a value's bits differ from those of its key's value (only -0.0 and NaNs other than np.nan's bits) */
static inline int odd_f16(uint16_t b) { return b == 0x8000u || ((b & 0x7fffu) > 0x7c00u && b != 0x7e00u); }
static inline int odd_f32(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    return b == 0x80000000u || ((b & 0x7fffffffu) > 0x7f800000u && b != 0x7fc00000u);
}
static inline int odd_f64(double x)
{
    uint64_t b;
    memcpy(&b, &x, 8);
    return b == 0x8000000000000000ull || ((b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull &&
                                          b != 0x7ff8000000000000ull);
}
static inline int odd_none(int64_t x) { (void)x; return 0; }

/* ---- sorting networks ------------------------------------------------------------------------------------------
 * Batcher's odd-even merge sort for 32 elements, pruned per length n: a comparator (i, j), i < j, whose j >= n is
 * dropped. That is exact: with n elements followed by copies of the largest key, every comparator puts the smaller
 * value at the lower position, so the copies never move and comparators that touch them do nothing. */

typedef struct { uint8_t i, j; } comparator;

#define NETWORK_SLOTS 544     /* comparators of Batcher's network for 64 elements: 543 */
static comparator network[NETWORK_MAX + 1][NETWORK_SLOTS];
static int network_count[NETWORK_MAX + 1];
static pthread_once_t network_once = PTHREAD_ONCE_INIT;

/* Batcher's network for `size` (a power of two) elements, pruned to the comparators below n */
static int batcher(comparator *out, int size, int n)
{
    int count = 0;
    for (int p = 1; p < size; p <<= 1)                  /* Knuth's formulation of the odd-even merge sort */
        for (int k = p; k >= 1; k >>= 1)
            for (int j = k % p; j + k < size; j += 2 * k)
                for (int i = 0; i < k && i + j + k < size; i++)
                    if ((i + j) / (2 * p) == (i + j + k) / (2 * p) && i + j + k < n) {
                        out[count].i = (uint8_t)(i + j);
                        out[count].j = (uint8_t)(i + j + k);
                        count++;
                    }
    return count;
}

static void build_networks(void)
{
    for (int n = 0; n <= NETWORK_MAX; n++) {
        int size = 1;
        while (size < n) size <<= 1;
        network_count[n] = batcher(network[n], size, n);
    }
}

/* ---- targets: the network kernels are compiled for AVX-512 and AVX2 too, chosen when the CPU has them --------- */

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_VARIANTS 1
#define TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,bmi2,popcnt")))
#define TARGET_AVX2 __attribute__((target("avx2,fma,bmi2,popcnt")))
static int cpu_level(void)   /* 2: AVX-512, 1: AVX2, 0: baseline */
{
    static int level = -1;
    if (level < 0) {
        __builtin_cpu_init();
        int l = 0;
        if (__builtin_cpu_supports("avx2")) l = 1;
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")) l = 2;
        level = l;
    }
    return level;
}
#else
#define HAVE_VARIANTS 0
#define TARGET_AVX512
#define TARGET_AVX2
static int cpu_level(void) { return 0; }
#endif

/* ---- one long row: LSD radix sort ---------------------------------------------------------------------------------
 * VALUE_SORTS(t, T, K, KEY) defines rsort_t(a, tmp, n), the radix sort of n values of type T (keys of type K) with
 * n elements of scratch; argsort's (key, position) items use it too (item64), or rsort_item32_key. */

#define RADIX_HIST(K, count, KEYEXPR)                                                                               \
    for (int64_t i_ = 0; i_ < n; i_++) {                                                                            \
        K k_ = (KEYEXPR);                                                                                           \
        for (int d_ = 0; d_ < (int)sizeof(K); d_++) count[d_][(k_ >> (8 * d_)) & 255]++;                           \
    }

#define VALUE_SORTS(t, T, K, KEY)                                                                                   \
UNUSED static void rsort_##t(T *a, T *tmp, int64_t n)                                                                      \
{                                                                                                                   \
    int64_t count[sizeof(K)][256];                                                                                  \
    memset(count, 0, sizeof(count));                                                                                \
    RADIX_HIST(K, count, KEY(a[i_]))                                                                                \
    K first = KEY(a[0]);                                                                                            \
    T *src = a, *dst = tmp;                                                                                         \
    for (int d = 0; d < (int)sizeof(K); d++) {                                                                      \
        int shift = 8 * d;                                                                                          \
        if (count[d][(first >> shift) & 255] == n) continue;   /* every key has this byte: nothing moves */         \
        int64_t offset[256], total = 0;                                                                             \
        for (int b = 0; b < 256; b++) { offset[b] = total; total += count[d][b]; }                                  \
        for (int64_t i = 0; i < n; i++) {                                                                           \
            T v = src[i];                                                                                           \
            dst[offset[(KEY(v) >> shift) & 255]++] = v;                                                             \
        }                                                                                                           \
        T *s = src; src = dst; dst = s;                                                                             \
    }                                                                                                               \
    if (src != a) memcpy(a, src, (size_t)n * sizeof(T));                                                            \
}

/* argsort items: small keys as one uint64 (key << 32 | position); wide keys as a pair */
typedef uint64_t item32;
typedef struct { uint64_t key; int64_t pos; } item64;
static inline uint64_t key_item64(item64 x) { return x.key; }

VALUE_SORTS(item64, item64, uint64_t, key_item64)

/* radix sort of items over only the bytes that hold keys (the positions below them are already in order) */
static void rsort_item32_key(item32 *a, item32 *tmp, int64_t n, int key_bytes)
{
    int64_t count[4][256];
    memset(count, 0, sizeof(count));
    for (int64_t i = 0; i < n; i++) {
        uint64_t k = a[i] >> 32;
        for (int d = 0; d < key_bytes; d++) count[d][(k >> (8 * d)) & 255]++;
    }
    uint64_t first = a[0] >> 32;
    item32 *src = a, *dst = tmp;
    for (int d = 0; d < key_bytes; d++) {
        int shift = 32 + 8 * d;
        if (count[d][(first >> (8 * d)) & 255] == n) continue;
        int64_t offset[256], total = 0;
        for (int b = 0; b < 256; b++) { offset[b] = total; total += count[d][b]; }
        for (int64_t i = 0; i < n; i++) {
            item32 v = src[i];
            dst[offset[(v >> shift) & 255]++] = v;
        }
        item32 *s = src; src = dst; dst = s;
    }
    if (src != a) memcpy(a, src, (size_t)n * sizeof(item32));
}

/* ---- networks over 8 rows at a time ------------------------------------------------------------------------------
 * NETWORK_SORT(t, T, K, KEY, UNKEY, ODD, target, suffix): sorts rows r0 .. r0 + lanes - 1 (lanes <= LANES) of
 * length n <= NETWORK_MAX, keys in lane arrays v[position][lane]. Rows holding elements whose bits differ from
 * their key's value (-0.0, NaNs with other bits than np.nan's) get them back in input order. */

#define NETWORK_VALUES(t, T, K, KEY, UNKEY, ODD, TARGET, suffix)                                                    \
TARGET static void net_##t##suffix(T *a, int64_t n, int64_t lanes)                                                 \
{                                                                                                                   \
    K v[NETWORK_MAX][LANES];                                                                                        \
    T raw[NETWORK_MAX][LANES];                                                                                      \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < LANES; l++) raw[p][l] = a[(l < lanes ? l : 0) * n + p];                                 \
    int odd = 0;                                                                                                    \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < LANES; l++) {                                                                           \
            v[p][l] = KEY(raw[p][l]);                                                                               \
            odd |= ODD(raw[p][l]);                                                                                  \
        }                                                                                                           \
    const comparator *c = network[n];                                                                               \
    for (int q = 0; q < network_count[n]; q++) {                                                                    \
        K x[LANES], y[LANES], lo[LANES], hi[LANES];                                                                 \
        memcpy(x, v[c[q].i], sizeof(x));                                                                            \
        memcpy(y, v[c[q].j], sizeof(y));                                                                            \
        for (int l = 0; l < LANES; l++) {                                                                           \
            lo[l] = x[l] < y[l] ? x[l] : y[l];                                                                      \
            hi[l] = x[l] < y[l] ? y[l] : x[l];                                                                      \
        }                                                                                                           \
        memcpy(v[c[q].i], lo, sizeof(lo));                                                                          \
        memcpy(v[c[q].j], hi, sizeof(hi));                                                                          \
    }                                                                                                               \
    if (odd) {   /* equal keys of different bits: each run of equal keys gets its elements in input order */        \
        for (int l = 0; l < lanes; l++) {                                                                           \
            T row[NETWORK_MAX];                                                                                     \
            memcpy(row, a + l * n, (size_t)n * sizeof(T));                                                          \
            for (int64_t p = 0; p < n; p++) {                                                                       \
                int64_t start = p;                                                                                  \
                while (start > 0 && v[start - 1][l] == v[p][l]) start--;                                            \
                if (start != p) continue;   /* the first of its run: place the run's elements */                    \
                int64_t o = p;                                                                                      \
                for (int64_t i = 0; i < n; i++) if (KEY(row[i]) == v[p][l]) a[l * n + o++] = row[i];                \
            }                                                                                                       \
        }                                                                                                           \
        return;                                                                                                     \
    }                                                                                                               \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < lanes; l++) {                                                                           \
            T x = (T)UNKEY(v[p][l]);                                                                                \
            a[l * n + p] = x;                                                                                       \
        }                                                                                                           \
}

/* argsort networks: (key, position) compared as one uint64 (keys of 32 bits or less) or as pairs */
#define NETWORK_ARGS32(t, T, KEY, TARGET, suffix)                                                                   \
TARGET static void anet_##t##suffix(const T *a, int64_t *out, int64_t n, int64_t lanes)                            \
{                                                                                                                   \
    uint64_t v[NETWORK_MAX][LANES];                                                                                 \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < LANES; l++) v[p][l] = ((uint64_t)KEY(a[(l < lanes ? l : 0) * n + p]) << 32) | (uint64_t)p; \
    const comparator *c = network[n];                                                                               \
    for (int q = 0; q < network_count[n]; q++) {                                                                    \
        uint64_t x[LANES], y[LANES], lo[LANES], hi[LANES];                                                          \
        memcpy(x, v[c[q].i], sizeof(x));                                                                            \
        memcpy(y, v[c[q].j], sizeof(y));                                                                            \
        for (int l = 0; l < LANES; l++) {                                                                           \
            lo[l] = x[l] < y[l] ? x[l] : y[l];                                                                      \
            hi[l] = x[l] < y[l] ? y[l] : x[l];                                                                      \
        }                                                                                                           \
        memcpy(v[c[q].i], lo, sizeof(lo));                                                                          \
        memcpy(v[c[q].j], hi, sizeof(hi));                                                                          \
    }                                                                                                               \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < lanes; l++) out[l * n + p] = (int64_t)(v[p][l] & 0xffffffffu);                          \
}

#define NETWORK_ARGS64(t, T, KEY, TARGET, suffix)                                                                   \
TARGET static void anet_##t##suffix(const T *a, int64_t *out, int64_t n, int64_t lanes)                            \
{                                                                                                                   \
    uint64_t v[NETWORK_MAX][LANES], w[NETWORK_MAX][LANES];                                                          \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < LANES; l++) {                                                                           \
            v[p][l] = KEY(a[(l < lanes ? l : 0) * n + p]);                                                          \
            w[p][l] = (uint64_t)p;                                                                                  \
        }                                                                                                           \
    const comparator *c = network[n];                                                                               \
    for (int q = 0; q < network_count[n]; q++) {                                                                    \
        uint64_t x[LANES], y[LANES], xi[LANES], yi[LANES], lo[LANES], hi[LANES], loi[LANES], hii[LANES];           \
        memcpy(x, v[c[q].i], sizeof(x));                                                                            \
        memcpy(y, v[c[q].j], sizeof(y));                                                                            \
        memcpy(xi, w[c[q].i], sizeof(xi));                                                                          \
        memcpy(yi, w[c[q].j], sizeof(yi));                                                                          \
        for (int l = 0; l < LANES; l++) {                                                                           \
            int swap = (y[l] < x[l]) | ((y[l] == x[l]) & (yi[l] < xi[l]));                                          \
            lo[l] = swap ? y[l] : x[l];                                                                             \
            hi[l] = swap ? x[l] : y[l];                                                                             \
            loi[l] = swap ? yi[l] : xi[l];                                                                          \
            hii[l] = swap ? xi[l] : yi[l];                                                                          \
        }                                                                                                           \
        memcpy(v[c[q].i], lo, sizeof(lo));                                                                          \
        memcpy(v[c[q].j], hi, sizeof(hi));                                                                          \
        memcpy(w[c[q].i], loi, sizeof(loi));                                                                        \
        memcpy(w[c[q].j], hii, sizeof(hii));                                                                        \
    }                                                                                                               \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < lanes; l++) out[l * n + p] = (int64_t)w[p][l];                                          \
}

/* ---- the routines -------------------------------------------------------------------------------------------- */

typedef struct {
    void *data;          /* sort: the rows, sorted in place; argsort: the keys */
    int64_t *index;      /* argsort's result */
    int64_t rows, n;
    int64_t status;      /* set to 1 when scratch memory was not available */
} job;

/* Run body over the groups of LANES rows (what a network sorts at once): on the thread pool for a large batch. */
static void run_rows(numfn_body body, job *j)
{
    void *ctx[1] = {j};
    int64_t groups = (j->rows + LANES - 1) / LANES;
    if (j->rows > LANES && j->rows * j->n >= PARALLEL_MIN) numfn_parallel_for(body, ctx, groups);
    else body(ctx, 0, groups);
}

static void fail(job *j) { __atomic_store_n(&j->status, 1, __ATOMIC_RELAXED); }

#define NETWORK_DISPATCH(name, call_args)                                                                           \
    do {                                                                                                            \
        int level_ = cpu_level();                                                                                   \
        if (HAVE_VARIANTS && level_ == 2) name##_avx512 call_args;                                                  \
        else if (HAVE_VARIANTS && level_ == 1) name##_avx2 call_args;                                               \
        else name##_base call_args;                                                                                 \
    } while (0)

#define SORT_ROUTINE(t, T, K, KEY, UNKEY, ODD)                                                                      \
VALUE_SORTS(t, T, K, KEY)                                                                                           \
NETWORK_VALUES(t, T, K, KEY, UNKEY, ODD, , _base)                                                                   \
NETWORK_VALUES(t, T, K, KEY, UNKEY, ODD, TARGET_AVX2, _avx2)                                                        \
NETWORK_VALUES(t, T, K, KEY, UNKEY, ODD, TARGET_AVX512, _avx512)                                                    \
static void sort_body_##t(void **ctx, int64_t g0, int64_t g1)                                                       \
{                                                                                                                   \
    job *j = (job *)ctx[0];                                                                                         \
    int64_t n = j->n, r0 = g0 * LANES, r1 = g1 * LANES < j->rows ? g1 * LANES : j->rows;                            \
    T *a = (T *)j->data;                                                                                            \
    if (n <= NETWORK_MAX) {                                                                                         \
        for (int64_t r = r0; r < r1; r += LANES)                                                                    \
            NETWORK_DISPATCH(net_##t, (a + r * n, n, r1 - r < LANES ? r1 - r : LANES));                             \
        return;                                                                                                     \
    }                                                                                                               \
    T *tmp = (T *)malloc((size_t)n * sizeof(T));                                                                    \
    if (tmp == NULL) { fail(j); return; }                                                                           \
    for (int64_t r = r0; r < r1; r++) {                                                                             \
        rsort_##t(a + r * n, tmp, n);                                                                               \
    }                                                                                                               \
    free(tmp);                                                                                                      \
}                                                                                                                   \
void numfn_sort_##t(T *data, const int64_t *rows, const int64_t *n, int64_t *status)                               \
{                                                                                                                   \
    *status = 0;                                                                                                    \
    if (*rows <= 0 || *n <= 1) return;                                                                              \
    pthread_once(&network_once, build_networks);                                                                    \
    job j = {data, NULL, *rows, *n, 0};                                                                             \
    run_rows(sort_body_##t, &j);                                                                                    \
    *status = j.status;                                                                                             \
}

/* argsort of keys of 32 bits or less: items key << 32 | position (rows longer than 2**32 take the pairs) */
#define ARGSORT_ROUTINE32(t, T, KEY)                                                                                \
NETWORK_ARGS32(t, T, KEY, , _base)                                                                                  \
NETWORK_ARGS32(t, T, KEY, TARGET_AVX2, _avx2)                                                                       \
NETWORK_ARGS32(t, T, KEY, TARGET_AVX512, _avx512)                                                                   \
static void argsort_body_##t(void **ctx, int64_t g0, int64_t g1)                                                    \
{                                                                                                                   \
    job *j = (job *)ctx[0];                                                                                         \
    int64_t n = j->n, r0 = g0 * LANES, r1 = g1 * LANES < j->rows ? g1 * LANES : j->rows;                            \
    const T *a = (const T *)j->data;                                                                                \
    int64_t *out = j->index;                                                                                        \
    if (n <= NETWORK_MAX) {                                                                                         \
        for (int64_t r = r0; r < r1; r += LANES)                                                                    \
            NETWORK_DISPATCH(anet_##t, (a + r * n, out + r * n, n, r1 - r < LANES ? r1 - r : LANES));               \
        return;                                                                                                     \
    }                                                                                                               \
    if (n > 0xffffffffLL) {                                                                                         \
        item64 *items = (item64 *)malloc(2 * (size_t)n * sizeof(item64));                                           \
        if (items == NULL) { fail(j); return; }                                                                     \
        for (int64_t r = r0; r < r1; r++) {                                                                         \
            const T *x = a + r * n;                                                                                 \
            for (int64_t i = 0; i < n; i++) { items[i].key = KEY(x[i]); items[i].pos = i; }                         \
            rsort_item64(items, items + n, n);                                                                      \
            for (int64_t i = 0; i < n; i++) out[r * n + i] = items[i].pos;                                          \
        }                                                                                                           \
        free(items);                                                                                                \
        return;                                                                                                     \
    }                                                                                                               \
    item32 *items = (item32 *)malloc(2 * (size_t)n * sizeof(item32));                                               \
    if (items == NULL) { fail(j); return; }                                                                         \
    for (int64_t r = r0; r < r1; r++) {                                                                             \
        const T *x = a + r * n;                                                                                     \
        for (int64_t i = 0; i < n; i++) items[i] = ((uint64_t)KEY(x[i]) << 32) | (uint64_t)i;                       \
        rsort_item32_key(items, items + n, n, (int)sizeof(KEY(x[0])));                                              \
        for (int64_t i = 0; i < n; i++) out[r * n + i] = (int64_t)(items[i] & 0xffffffffu);                         \
    }                                                                                                               \
    free(items);                                                                                                    \
}

/* argsort of 64-bit keys: (key, position) pairs */
#define ARGSORT_ROUTINE64(t, T, KEY)                                                                                \
NETWORK_ARGS64(t, T, KEY, , _base)                                                                                  \
NETWORK_ARGS64(t, T, KEY, TARGET_AVX2, _avx2)                                                                       \
NETWORK_ARGS64(t, T, KEY, TARGET_AVX512, _avx512)                                                                   \
static void argsort_body_##t(void **ctx, int64_t g0, int64_t g1)                                                    \
{                                                                                                                   \
    job *j = (job *)ctx[0];                                                                                         \
    int64_t n = j->n, r0 = g0 * LANES, r1 = g1 * LANES < j->rows ? g1 * LANES : j->rows;                            \
    const T *a = (const T *)j->data;                                                                                \
    int64_t *out = j->index;                                                                                        \
    if (n <= NETWORK_MAX) {                                                                                         \
        for (int64_t r = r0; r < r1; r += LANES)                                                                    \
            NETWORK_DISPATCH(anet_##t, (a + r * n, out + r * n, n, r1 - r < LANES ? r1 - r : LANES));               \
        return;                                                                                                     \
    }                                                                                                               \
    item64 *items = (item64 *)malloc(2 * (size_t)n * sizeof(item64));                                               \
    if (items == NULL) { fail(j); return; }                                                                         \
    for (int64_t r = r0; r < r1; r++) {                                                                             \
        const T *x = a + r * n;                                                                                     \
        for (int64_t i = 0; i < n; i++) { items[i].key = KEY(x[i]); items[i].pos = i; }                             \
        rsort_item64(items, items + n, n);                                                                          \
        for (int64_t i = 0; i < n; i++) out[r * n + i] = items[i].pos;                                              \
    }                                                                                                               \
    free(items);                                                                                                    \
}

#define ARGSORT_ENTRY(t, T)                                                                                         \
void numfn_argsort_##t(const T *keys, int64_t *index, const int64_t *rows, const int64_t *n, int64_t *status)      \
{                                                                                                                   \
    *status = 0;                                                                                                    \
    if (*rows <= 0 || *n <= 0) return;                                                                              \
    if (*n == 1) {                                                                                                  \
        memset(index, 0, (size_t)*rows * sizeof(int64_t));                                                         \
        return;                                                                                                     \
    }                                                                                                               \
    pthread_once(&network_once, build_networks);                                                                    \
    job j = {(void *)keys, index, *rows, *n, 0};                                                                    \
    run_rows(argsort_body_##t, &j);                                                                                 \
    *status = j.status;                                                                                             \
}

SORT_ROUTINE(u8, uint8_t, uint8_t, key_u8, unkey_u8, odd_none)
SORT_ROUTINE(i8, int8_t, uint8_t, key_i8, unkey_i8, odd_none)
SORT_ROUTINE(u16, uint16_t, uint16_t, key_u16, unkey_u16, odd_none)
SORT_ROUTINE(i16, int16_t, uint16_t, key_i16, unkey_i16, odd_none)
SORT_ROUTINE(f16, uint16_t, uint16_t, key_f16, unkey_f16, odd_f16)
SORT_ROUTINE(u32, uint32_t, uint32_t, key_u32, unkey_u32, odd_none)
SORT_ROUTINE(i32, int32_t, uint32_t, key_i32, unkey_i32, odd_none)
SORT_ROUTINE(f32, float, uint32_t, key_f32, unkey_f32, odd_f32)
SORT_ROUTINE(u64, uint64_t, uint64_t, key_u64, unkey_u64, odd_none)
SORT_ROUTINE(i64, int64_t, uint64_t, key_i64, unkey_i64, odd_none)
SORT_ROUTINE(f64, double, uint64_t, key_f64, unkey_f64, odd_f64)

ARGSORT_ROUTINE32(u8, uint8_t, key_u8)
ARGSORT_ROUTINE32(i8, int8_t, key_i8)
ARGSORT_ROUTINE32(u16, uint16_t, key_u16)
ARGSORT_ROUTINE32(i16, int16_t, key_i16)
ARGSORT_ROUTINE32(f16, uint16_t, key_f16)
ARGSORT_ROUTINE32(u32, uint32_t, key_u32)
ARGSORT_ROUTINE32(i32, int32_t, key_i32)
ARGSORT_ROUTINE32(f32, float, key_f32)
ARGSORT_ROUTINE64(u64, uint64_t, key_u64)
ARGSORT_ROUTINE64(i64, int64_t, key_i64)
ARGSORT_ROUTINE64(f64, double, key_f64)

ARGSORT_ENTRY(u8, uint8_t)
ARGSORT_ENTRY(i8, int8_t)
ARGSORT_ENTRY(u16, uint16_t)
ARGSORT_ENTRY(i16, int16_t)
ARGSORT_ENTRY(f16, uint16_t)
ARGSORT_ENTRY(u32, uint32_t)
ARGSORT_ENTRY(i32, int32_t)
ARGSORT_ENTRY(f32, float)
ARGSORT_ENTRY(u64, uint64_t)
ARGSORT_ENTRY(i64, int64_t)
ARGSORT_ENTRY(f64, double)
