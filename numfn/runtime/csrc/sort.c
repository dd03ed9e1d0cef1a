/*
 * numfn's sorting routines: np.sort and np.argsort on a batch of rows (numfn.numpy.sorting calls them through the
 * extern-call mechanism, numfn/extern.py).
 *
 *   numfn_sort_<t>(T *data, T *scratch, const int64_t *rows, const int64_t *n, const int64_t *scratch_row)
 *       sorts each of the `rows` contiguous rows of `n` elements of `data` in place;
 *   numfn_argsort_<t>(const T *keys, int64_t *index, uint64_t *scratch, const int64_t *rows, const int64_t *n,
 *                     const int64_t *scratch_row)
 *       writes, per row, the positions that sort the row of `keys`.
 *
 * Every argument is passed by reference (the convention of numfn's extern calls). <t> is one of u8 (also bool),
 * i8, u16, i16, f16, u32, i32, f32, u64, i64, f64. `scratch` holds `scratch_row` elements per row (sort: of T;
 * argsort: uint64 words), planned by the caller like any intermediate buffer: rows longer than NETWORK_MAX need n
 * (sort), 2n (argsort of keys up to 32 bits) or 4n (64-bit keys); shorter rows need none. With less, a row is
 * sorted in place by insertion (never outside the buffers, whatever the caller passes).
 *
 * The order is NumPy's: ascending, stable (equal elements keep their order), NaNs last; -0.0 and +0.0 are equal
 * (they keep their order too), and so are all NaNs, whatever their sign and payload. Every element is sorted by a
 * key: an unsigned integer whose order is that order (the sign bit flipped for signed integers; for floats the
 * usual order-preserving bit pattern, with every zero mapped to +0.0's key and every NaN to np.nan's key, the
 * largest).
 *
 * Algorithms, by row length n:
 *   n <= 64      sorting networks (Batcher's odd-even merge sort, keeping only the comparators that matter for n
 *                elements), applied to as many rows at a time as a 32-byte vector has lanes, one row per lane, so
 *                each comparator is a vector min and max (compiled for AVX-512 and AVX2 too, chosen at run time);
 *                short rows of 32- and 64-bit keys in registers by written-out networks (see there). Stable: argsort
 *                compares (key, position) pairs, and a value sort puts the elements whose bits differ from their
 *                key's value (-0.0, NaNs other than np.nan's) back in input order among their equals;
 *   n <= 192     merge sort (argsort: n <= 1024): blocks of 64 sorted by the networks (the blocks of several
 *                rows, or of one row, in the lanes), then branch-free merges;
 *   longer       LSD radix sort on the keys' bytes, skipping the bytes all keys share.
 * Merge and radix sorts move the values themselves (their keys computed again where compared), so -0.0 and NaN
 * payloads come out exactly where a stable sort puts them. Argsort sorts items: key << 32 | position for keys of
 * 32 bits or less, (key, position) pairs otherwise.
 *
 * Batches of rows run on numfn's thread pool (pool.c) when they are large enough; one row runs on one thread.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "numfn_native.h"

#if defined(__GNUC__) || defined(__clang__)
#define UNUSED __attribute__((unused))
#define ALIGNED __attribute__((aligned(64)))   /* lane rows on cache lines: split accesses defeat store forwarding */
#else
#define UNUSED
#define ALIGNED
#endif

#define NETWORK_MAX 64        /* rows this long or shorter: sorting networks */
#define MERGE_BLOCK 64        /* merge sorts start from blocks this long, sorted by the networks (measured) */
#define MERGE_MAX_VALUES 192  /* ... then merge sort up to this length for values, */
#define MERGE_MAX_ITEMS 1024  /* and for argsort's items; longer rows: radix sort (measured) */
#define PARALLEL_MIN 32768    /* elements: smaller batches run on the calling thread */

/* ---- keys --------------------------------------------------------------------------------------------------- */

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
static inline int odd_none(uint64_t x) { (void)x; return 0; }

/* argsort's items: small keys as one uint64 (key << 32 | position); wide keys as a pair */
typedef uint64_t item32;
typedef struct { uint64_t key; int64_t pos; } item64;
static inline uint64_t key_item32(item32 x) { return x; }
static inline uint64_t key_item64(item64 x) { return x.key; }

/* ---- sorting networks ------------------------------------------------------------------------------------------
 * Batcher's odd-even merge sort for the next power of two >= n, pruned to n: a comparator (i, j), i < j, whose
 * j >= n is dropped. That is exact: with n elements followed by copies of the largest key, every comparator puts
 * the smaller value at the lower position, so the copies never move and comparators that touch them do nothing. */

typedef struct { uint8_t i, j; } comparator;

#define NETWORK_SLOTS 544     /* comparators of the network for 64 elements: 543 */
static comparator network[NETWORK_MAX + 1][NETWORK_SLOTS];
static int network_count[NETWORK_MAX + 1];
static pthread_once_t network_once = PTHREAD_ONCE_INIT;

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
    static int level = -1;   /* every thread computes the same value: a race on it is harmless */
    int l = __atomic_load_n(&level, __ATOMIC_RELAXED);
    if (l < 0) {
        __builtin_cpu_init();
        l = 0;
        if (__builtin_cpu_supports("avx2")) l = 1;
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")) l = 2;
        __atomic_store_n(&level, l, __ATOMIC_RELAXED);
    }
    return l;
}
#else
#define HAVE_VARIANTS 0
#define TARGET_AVX512
#define TARGET_AVX2
static int cpu_level(void) { return 0; }
#endif

#define NETWORK_DISPATCH(name, call_args)                                                                           \
    do {                                                                                                            \
        int level_ = cpu_level();                                                                                   \
        if (HAVE_VARIANTS && level_ == 2) name##_avx512 call_args;                                                  \
        else if (HAVE_VARIANTS && level_ == 1) name##_avx2 call_args;                                               \
        else name##_base call_args;                                                                                 \
    } while (0)

/* A network sorts as many rows at once as one vector holds keys (32 bytes: measured faster than 64 on AVX-512
 * hardware that splits 512-bit operations, and the width AVX2 has): LANES(K) lanes. */
#define LANES(K) ((int)(32 / sizeof(K)))

/* One comparator on the lanes: lo, hi = min, max. Through local copies: the two rows could alias as far as the
 * compiler knows (i == j), which would keep it from vectorizing. */
#define COMPARE_EXCHANGE(K, v, c)                                                                                   \
    do {                                                                                                            \
        K x_[LANES(K)], y_[LANES(K)], lo_[LANES(K)], hi_[LANES(K)];                                                 \
        memcpy(x_, v[(c).i], sizeof(x_));                                                                           \
        memcpy(y_, v[(c).j], sizeof(y_));                                                                           \
        for (int l = 0; l < LANES(K); l++) {                                                                        \
            lo_[l] = x_[l] < y_[l] ? x_[l] : y_[l];                                                                 \
            hi_[l] = x_[l] < y_[l] ? y_[l] : x_[l];                                                                 \
        }                                                                                                           \
        memcpy(v[(c).i], lo_, sizeof(lo_));                                                                         \
        memcpy(v[(c).j], hi_, sizeof(hi_));                                                                         \
    } while (0)

/* the same on (key, position) pairs, compared lexicographically */
#define PAIR_LANES LANES(uint64_t)
#define COMPARE_EXCHANGE_PAIRS(v, w, c)                                                                             \
    do {                                                                                                            \
        uint64_t x_[PAIR_LANES], y_[PAIR_LANES], xi_[PAIR_LANES], yi_[PAIR_LANES];                                  \
        uint64_t lo_[PAIR_LANES], hi_[PAIR_LANES], loi_[PAIR_LANES], hii_[PAIR_LANES];                              \
        memcpy(x_, v[(c).i], sizeof(x_));                                                                           \
        memcpy(y_, v[(c).j], sizeof(y_));                                                                           \
        memcpy(xi_, w[(c).i], sizeof(xi_));                                                                         \
        memcpy(yi_, w[(c).j], sizeof(yi_));                                                                         \
        for (int l = 0; l < PAIR_LANES; l++) {                                                                      \
            int swap = (y_[l] < x_[l]) | ((y_[l] == x_[l]) & (yi_[l] < xi_[l]));                                    \
            lo_[l] = swap ? y_[l] : x_[l];                                                                          \
            hi_[l] = swap ? x_[l] : y_[l];                                                                          \
            loi_[l] = swap ? yi_[l] : xi_[l];                                                                       \
            hii_[l] = swap ? xi_[l] : yi_[l];                                                                       \
        }                                                                                                           \
        memcpy(v[(c).i], lo_, sizeof(lo_));                                                                         \
        memcpy(v[(c).j], hi_, sizeof(hi_));                                                                         \
        memcpy(w[(c).i], loi_, sizeof(loi_));                                                                       \
        memcpy(w[(c).j], hii_, sizeof(hii_));                                                                       \
    } while (0)

/* ---- register networks --------------------------------------------------------------------------------------
 * Short rows of 32- and 64-bit keys (5 to 16 elements; to 32 with AVX-512's 32 vector registers) sort in vector
 * registers by networks written out below (Batcher's for 8, 16 and 32, as batcher() computes them): no comparator
 * table and no memory traffic between comparators, about 3x faster than the table-driven loop (10^5 rows of 16
 * float64). A shorter row is padded with the largest key, which every comparator leaves at the end; (key, position)
 * pairs take twice the registers: up to 16. Only the AVX2 and AVX-512 variants have them, and not for 8- and
 * 16-bit keys: each written-out network costs seconds of compile time (GCC's and clang's vector extensions; other
 * compilers use the tables). REGISTERS_<variant>: the longest row a variant sorts in registers. */
#if defined(__GNUC__) || defined(__clang__)
#define REGISTER_NETWORKS 1
typedef uint8_t vec_uint8_t __attribute__((vector_size(32)));
typedef uint16_t vec_uint16_t __attribute__((vector_size(32)));
typedef uint32_t vec_uint32_t __attribute__((vector_size(32)));
typedef uint64_t vec_uint64_t __attribute__((vector_size(32)));
#else
#define REGISTER_NETWORKS 0
#endif
#define REGISTER_MIN 5
#define REGISTERS_base 0
#define REGISTERS_avx2 16
#define REGISTERS_avx512 32
#define REGISTER_PAIRS_MAX 16

#define BATCHER8(X, V)                                                                                              \
    X(V, 0, 1) X(V, 2, 3) X(V, 4, 5) X(V, 6, 7) X(V, 0, 2) X(V, 1, 3) X(V, 4, 6) X(V, 5, 7) X(V, 1, 2) X(V, 5, 6)   \
    X(V, 0, 4) X(V, 1, 5) X(V, 2, 6) X(V, 3, 7) X(V, 2, 4) X(V, 3, 5) X(V, 1, 2) X(V, 3, 4) X(V, 5, 6)
#define BATCHER16(X, V)                                                                                             \
    X(V, 0, 1) X(V, 2, 3) X(V, 4, 5) X(V, 6, 7) X(V, 8, 9) X(V, 10, 11) X(V, 12, 13) X(V, 14, 15) X(V, 0, 2)        \
    X(V, 1, 3) X(V, 4, 6) X(V, 5, 7) X(V, 8, 10) X(V, 9, 11) X(V, 12, 14) X(V, 13, 15) X(V, 1, 2) X(V, 5, 6)        \
    X(V, 9, 10) X(V, 13, 14) X(V, 0, 4) X(V, 1, 5) X(V, 2, 6) X(V, 3, 7) X(V, 8, 12) X(V, 9, 13) X(V, 10, 14)       \
    X(V, 11, 15) X(V, 2, 4) X(V, 3, 5) X(V, 10, 12) X(V, 11, 13) X(V, 1, 2) X(V, 3, 4) X(V, 5, 6) X(V, 9, 10)       \
    X(V, 11, 12) X(V, 13, 14) X(V, 0, 8) X(V, 1, 9) X(V, 2, 10) X(V, 3, 11) X(V, 4, 12) X(V, 5, 13) X(V, 6, 14)     \
    X(V, 7, 15) X(V, 4, 8) X(V, 5, 9) X(V, 6, 10) X(V, 7, 11) X(V, 2, 4) X(V, 3, 5) X(V, 6, 8) X(V, 7, 9)           \
    X(V, 10, 12) X(V, 11, 13) X(V, 1, 2) X(V, 3, 4) X(V, 5, 6) X(V, 7, 8) X(V, 9, 10) X(V, 11, 12) X(V, 13, 14)

#define BATCHER32(X, V)                                                                                             \
    X(V, 0, 1) X(V, 2, 3) X(V, 4, 5) X(V, 6, 7) X(V, 8, 9) X(V, 10, 11) X(V, 12, 13) X(V, 14, 15) X(V, 16, 17)      \
    X(V, 18, 19) X(V, 20, 21) X(V, 22, 23) X(V, 24, 25) X(V, 26, 27) X(V, 28, 29) X(V, 30, 31) X(V, 0, 2)           \
    X(V, 1, 3) X(V, 4, 6) X(V, 5, 7) X(V, 8, 10) X(V, 9, 11) X(V, 12, 14) X(V, 13, 15) X(V, 16, 18) X(V, 17, 19)    \
    X(V, 20, 22) X(V, 21, 23) X(V, 24, 26) X(V, 25, 27) X(V, 28, 30) X(V, 29, 31) X(V, 1, 2) X(V, 5, 6)             \
    X(V, 9, 10) X(V, 13, 14) X(V, 17, 18) X(V, 21, 22) X(V, 25, 26) X(V, 29, 30) X(V, 0, 4) X(V, 1, 5) X(V, 2, 6)   \
    X(V, 3, 7) X(V, 8, 12) X(V, 9, 13) X(V, 10, 14) X(V, 11, 15) X(V, 16, 20) X(V, 17, 21) X(V, 18, 22)             \
    X(V, 19, 23) X(V, 24, 28) X(V, 25, 29) X(V, 26, 30) X(V, 27, 31) X(V, 2, 4) X(V, 3, 5) X(V, 10, 12)             \
    X(V, 11, 13) X(V, 18, 20) X(V, 19, 21) X(V, 26, 28) X(V, 27, 29) X(V, 1, 2) X(V, 3, 4) X(V, 5, 6) X(V, 9, 10)   \
    X(V, 11, 12) X(V, 13, 14) X(V, 17, 18) X(V, 19, 20) X(V, 21, 22) X(V, 25, 26) X(V, 27, 28) X(V, 29, 30)         \
    X(V, 0, 8) X(V, 1, 9) X(V, 2, 10) X(V, 3, 11) X(V, 4, 12) X(V, 5, 13) X(V, 6, 14) X(V, 7, 15) X(V, 16, 24)      \
    X(V, 17, 25) X(V, 18, 26) X(V, 19, 27) X(V, 20, 28) X(V, 21, 29) X(V, 22, 30) X(V, 23, 31) X(V, 4, 8)           \
    X(V, 5, 9) X(V, 6, 10) X(V, 7, 11) X(V, 20, 24) X(V, 21, 25) X(V, 22, 26) X(V, 23, 27) X(V, 2, 4) X(V, 3, 5)    \
    X(V, 6, 8) X(V, 7, 9) X(V, 10, 12) X(V, 11, 13) X(V, 18, 20) X(V, 19, 21) X(V, 22, 24) X(V, 23, 25)             \
    X(V, 26, 28) X(V, 27, 29) X(V, 1, 2) X(V, 3, 4) X(V, 5, 6) X(V, 7, 8) X(V, 9, 10) X(V, 11, 12) X(V, 13, 14)     \
    X(V, 17, 18) X(V, 19, 20) X(V, 21, 22) X(V, 23, 24) X(V, 25, 26) X(V, 27, 28) X(V, 29, 30) X(V, 0, 16)          \
    X(V, 1, 17) X(V, 2, 18) X(V, 3, 19) X(V, 4, 20) X(V, 5, 21) X(V, 6, 22) X(V, 7, 23) X(V, 8, 24) X(V, 9, 25)     \
    X(V, 10, 26) X(V, 11, 27) X(V, 12, 28) X(V, 13, 29) X(V, 14, 30) X(V, 15, 31) X(V, 8, 16) X(V, 9, 17)           \
    X(V, 10, 18) X(V, 11, 19) X(V, 12, 20) X(V, 13, 21) X(V, 14, 22) X(V, 15, 23) X(V, 4, 8) X(V, 5, 9)             \
    X(V, 6, 10) X(V, 7, 11) X(V, 12, 16) X(V, 13, 17) X(V, 14, 18) X(V, 15, 19) X(V, 20, 24) X(V, 21, 25)           \
    X(V, 22, 26) X(V, 23, 27) X(V, 2, 4) X(V, 3, 5) X(V, 6, 8) X(V, 7, 9) X(V, 10, 12) X(V, 11, 13) X(V, 14, 16)    \
    X(V, 15, 17) X(V, 18, 20) X(V, 19, 21) X(V, 22, 24) X(V, 23, 25) X(V, 26, 28) X(V, 27, 29) X(V, 1, 2)           \
    X(V, 3, 4) X(V, 5, 6) X(V, 7, 8) X(V, 9, 10) X(V, 11, 12) X(V, 13, 14) X(V, 15, 16) X(V, 17, 18) X(V, 19, 20)   \
    X(V, 21, 22) X(V, 23, 24) X(V, 25, 26) X(V, 27, 28) X(V, 29, 30)

/* one comparator on registers r: lo, hi = min, max (branch-free masks: unsigned vector min/max is not in AVX2) */
#define REGISTER_CE(V, a, b)                                                                                        \
    {                                                                                                               \
        V m_ = (V)(r[b] < r[a]);                                                                                    \
        V lo_ = (r[b] & m_) | (r[a] & ~m_);                                                                         \
        r[b] = (r[a] & m_) | (r[b] & ~m_);                                                                          \
        r[a] = lo_;                                                                                                 \
    }
/* on (key, position) pairs in registers k and q, compared lexicographically */
#define REGISTER_CE_PAIRS(V, a, b)                                                                                  \
    {                                                                                                               \
        V m_ = (V)((k[b] < k[a]) | ((k[b] == k[a]) & (q[b] < q[a])));                                               \
        V lo_ = (k[b] & m_) | (k[a] & ~m_), lq_ = (q[b] & m_) | (q[a] & ~m_);                                       \
        k[b] = (k[a] & m_) | (k[b] & ~m_);                                                                          \
        q[b] = (q[a] & m_) | (q[b] & ~m_);                                                                          \
        k[a] = lo_;                                                                                                 \
        q[a] = lq_;                                                                                                 \
    }

/* Sort the lane arrays v[position][lane] of keys K (n positions, padded to the network's size with the largest
 * key) in registers when n suits a written-out network, else by the comparator table. */
#if REGISTER_NETWORKS
/* the lane arrays' first SIZE rows through network NET in registers (constant sizes: the copies become register
 * loads and stores) */
#define REGISTER_SORT(V, v, SIZE, NET)                                                                              \
    {                                                                                                               \
        V r[SIZE];                                                                                                  \
        memcpy(r, v, SIZE * sizeof(r[0]));                                                                          \
        NET(REGISTER_CE, V)                                                                                         \
        memcpy(v, r, SIZE * sizeof(r[0]));                                                                          \
    }
#define REGISTER_SORT_PAIRS(v, w, SIZE, NET)                                                                        \
    {                                                                                                               \
        vec_uint64_t k[SIZE], q[SIZE];                                                                              \
        memcpy(k, v, SIZE * sizeof(k[0]));                                                                          \
        memcpy(q, w, SIZE * sizeof(q[0]));                                                                          \
        NET(REGISTER_CE_PAIRS, vec_uint64_t)                                                                        \
        memcpy(v, k, SIZE * sizeof(k[0]));                                                                          \
        memcpy(w, q, SIZE * sizeof(q[0]));                                                                          \
    }
#define SORT_LANES(K, v, n, suffix)                                                                                 \
    do {                                                                                                            \
        if (sizeof(K) >= 4 && (n) >= REGISTER_MIN && (n) <= REGISTERS##suffix) {                                    \
            int size_ = (n) <= 8 ? 8 : (n) <= 16 ? 16 : 32;                                                         \
            for (int64_t p = (n); p < size_; p++) memset(v[p], 0xff, sizeof(v[p]));                                 \
            if (size_ == 8) REGISTER_SORT(vec_##K, v, 8, BATCHER8)                                                  \
            else if (size_ == 16) REGISTER_SORT(vec_##K, v, 16, BATCHER16)                                          \
            else REGISTER_SORT(vec_##K, v, 32, BATCHER32)                                                           \
        } else {                                                                                                    \
            const comparator *c = network[n];                                                                       \
            for (int q = 0; q < network_count[n]; q++) COMPARE_EXCHANGE(K, v, c[q]);                                \
        }                                                                                                           \
    } while (0)
/* the same on (key, position) pairs: keys v, positions w. The padding's position is the largest too: a real key
 * can be the largest (UINT64_MAX), and its position must keep it before the padding. */
#define SORT_LANE_PAIRS(v, w, n, suffix)                                                                            \
    do {                                                                                                            \
        if (REGISTERS##suffix && (n) >= REGISTER_MIN && (n) <= REGISTER_PAIRS_MAX) {                                \
            int size_ = (n) <= 8 ? 8 : 16;                                                                          \
            for (int64_t p = (n); p < size_; p++)                                                                   \
                for (int l = 0; l < PAIR_LANES; l++) v[p][l] = w[p][l] = ~(uint64_t)0;                              \
            if (size_ == 8) REGISTER_SORT_PAIRS(v, w, 8, BATCHER8)                                                  \
            else REGISTER_SORT_PAIRS(v, w, 16, BATCHER16)                                                           \
        } else {                                                                                                    \
            const comparator *c = network[n];                                                                       \
            for (int q_ = 0; q_ < network_count[n]; q_++) COMPARE_EXCHANGE_PAIRS(v, w, c[q_]);                      \
        }                                                                                                           \
    } while (0)
#else
#define SORT_LANES(K, v, n, suffix)                                                                                 \
    do {                                                                                                            \
        const comparator *c = network[n];                                                                           \
        for (int q = 0; q < network_count[n]; q++) COMPARE_EXCHANGE(K, v, c[q]);                                    \
    } while (0)
#define SORT_LANE_PAIRS(v, w, n, suffix)                                                                            \
    do {                                                                                                            \
        const comparator *c = network[n];                                                                           \
        for (int q_ = 0; q_ < network_count[n]; q_++) COMPARE_EXCHANGE_PAIRS(v, w, c[q_]);                          \
    } while (0)
#endif

/* NETWORK_VALUES: net_t(a, n, stride, lanes) sorts `lanes` <= LANES(K) rows of n <= NETWORK_MAX values, row l at
 * a + l * stride, keys in lane arrays v[position][lane]. A row holding values whose bits differ from their key's
 * value gets each run of equal keys back in input order. */
#define NETWORK_VALUES(t, T, K, KEY, UNKEY, ODD, TARGET, suffix)                                                    \
TARGET static void net_##t##suffix(T *a, int64_t n, int64_t stride, int64_t lanes)                                  \
{                                                                                                                   \
    K v[NETWORK_MAX][LANES(K)] ALIGNED;                                                                             \
    T raw[NETWORK_MAX][LANES(K)];                                                                                   \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < LANES(K); l++) raw[p][l] = a[(l < lanes ? l : 0) * stride + p];                         \
    int odd = 0;                                                                                                    \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < LANES(K); l++) {                                                                        \
            v[p][l] = KEY(raw[p][l]);                                                                               \
            odd |= ODD(raw[p][l]);                                                                                  \
        }                                                                                                           \
    SORT_LANES(K, v, n, suffix);                                                                                    \
    for (int l = 0; l < lanes; l++) {                                                                               \
        T *row = a + l * stride;                                                                                    \
        if (!odd) {                                                                                                 \
            for (int64_t p = 0; p < n; p++) row[p] = (T)UNKEY(v[p][l]);                                             \
            continue;                                                                                               \
        }                                                                                                           \
        for (int64_t p = 0; p < n; p++) {   /* the first of each run of equal keys places the run */                \
            if (p > 0 && v[p - 1][l] == v[p][l]) continue;                                                          \
            int64_t o = p;                                                                                          \
            for (int64_t i = 0; i < n; i++) if (KEY(raw[i][l]) == v[p][l]) row[o++] = raw[i][l];                    \
        }                                                                                                           \
    }                                                                                                               \
}

/* NETWORK_ARGS32: anet_t(a, out, n, lanes), argsort of rows of keys of 32 bits or less, (key, position) compared
 * as one uint64 */
#define NETWORK_ARGS32(t, T, KEY, TARGET, suffix)                                                                   \
TARGET static void anet_##t##suffix(const T *a, int64_t *out, int64_t n, int64_t lanes)                             \
{                                                                                                                   \
    uint64_t v[NETWORK_MAX][LANES(uint64_t)] ALIGNED;                                                               \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < LANES(uint64_t); l++)                                                                   \
            v[p][l] = ((uint64_t)KEY(a[(l < lanes ? l : 0) * n + p]) << 32) | (uint64_t)p;                          \
    SORT_LANES(uint64_t, v, n, suffix);                                                                             \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < lanes; l++) out[l * n + p] = (int64_t)(v[p][l] & 0xffffffffu);                          \
}

/* NETWORK_ARGS64: the same for 64-bit keys, as pairs */
#define NETWORK_ARGS64(t, T, KEY, TARGET, suffix)                                                                   \
TARGET static void anet_##t##suffix(const T *a, int64_t *out, int64_t n, int64_t lanes)                             \
{                                                                                                                   \
    uint64_t v[NETWORK_MAX][PAIR_LANES] ALIGNED, w[NETWORK_MAX][PAIR_LANES] ALIGNED;                                \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < PAIR_LANES; l++) {                                                                      \
            v[p][l] = KEY(a[(l < lanes ? l : 0) * n + p]);                                                          \
            w[p][l] = (uint64_t)p;                                                                                  \
        }                                                                                                           \
    SORT_LANE_PAIRS(v, w, n, suffix);                                                                               \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < lanes; l++) out[l * n + p] = (int64_t)w[p][l];                                          \
}

/* NETWORK_ITEMS64: net_item64(a, n, stride, lanes) sorts rows of (key, position) pairs in place */
#define NETWORK_ITEMS64(TARGET, suffix)                                                                             \
TARGET static void net_item64##suffix(item64 *a, int64_t n, int64_t stride, int64_t lanes)                          \
{                                                                                                                   \
    uint64_t v[NETWORK_MAX][PAIR_LANES] ALIGNED, w[NETWORK_MAX][PAIR_LANES] ALIGNED;                                \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < PAIR_LANES; l++) {                                                                      \
            item64 x = a[(l < lanes ? l : 0) * stride + p];                                                         \
            v[p][l] = x.key;                                                                                        \
            w[p][l] = (uint64_t)x.pos;                                                                              \
        }                                                                                                           \
    SORT_LANE_PAIRS(v, w, n, suffix);                                                                               \
    for (int64_t p = 0; p < n; p++)                                                                                 \
        for (int l = 0; l < lanes; l++) {                                                                           \
            a[l * stride + p].key = v[p][l];                                                                        \
            a[l * stride + p].pos = (int64_t)w[p][l];                                                               \
        }                                                                                                           \
}

/* ---- longer rows: merge and radix sorts -------------------------------------------------------------------------
 * ROW_SORTS(t, T, K, KEY) defines, for values of type T with keys of type K (net_t must exist):
 *   isort_t(a, n)             stable insertion sort, without scratch (only where the caller gave too little)
 *   blocks_t(a, n, stride, lanes)   sorts the blocks of MERGE_BLOCK of `lanes` rows with the networks
 *   merges_t(a, tmp, n)       merges a row's sorted blocks (tmp: n elements)
 *   rsort_t(a, tmp, n)        LSD radix sort (tmp: n elements)
 *   sort_rows_t(a, tmp, n, stride, tmp_stride, lanes)   sorts `lanes` rows by the best of these for n */

#define ROW_SORTS(t, T, K, KEY)                                                                                     \
UNUSED static void isort_##t(T *a, int64_t n)                                                                       \
{                                                                                                                   \
    for (int64_t i = 1; i < n; i++) {                                                                               \
        T v = a[i];                                                                                                 \
        K k = KEY(v);                                                                                               \
        int64_t j = i;                                                                                              \
        while (j > 0 && KEY(a[j - 1]) > k) { a[j] = a[j - 1]; j--; }                                                \
        a[j] = v;                                                                                                   \
    }                                                                                                               \
}                                                                                                                   \
static void blocks_##t(T *a, int64_t n, int64_t stride, int64_t lanes)                                              \
{                                                                                                                   \
    if (lanes * 2 < LANES(K)) {   /* few rows: the blocks of one row fill the lanes */                              \
        int64_t full = n / MERGE_BLOCK;                                                                             \
        for (int64_t r = 0; r < lanes; r++) {                                                                       \
            T *row = a + r * stride;                                                                                \
            for (int64_t b = 0; b < full; b += LANES(K))                                                            \
                NETWORK_DISPATCH(net_##t, (row + b * MERGE_BLOCK, MERGE_BLOCK, MERGE_BLOCK,                         \
                                           full - b < LANES(K) ? full - b : LANES(K)));                             \
            if (n % MERGE_BLOCK)                                                                                    \
                NETWORK_DISPATCH(net_##t, (row + full * MERGE_BLOCK, n % MERGE_BLOCK, MERGE_BLOCK, 1));             \
        }                                                                                                           \
        return;                                                                                                     \
    }                                                                                                               \
    for (int64_t b = 0; b < n; b += MERGE_BLOCK)   /* block b of every row at once */                               \
        NETWORK_DISPATCH(net_##t, (a + b, n - b < MERGE_BLOCK ? n - b : MERGE_BLOCK, stride, lanes));               \
}                                                                                                                   \
static inline void merge_##t(const T *src, T *dst, int64_t lo, int64_t mid, int64_t hi)                             \
{                                                                                                                   \
    int64_t i = lo, j = mid, o = lo;                                                                                \
    if (mid >= hi || KEY(src[mid - 1]) <= KEY(src[mid])) {   /* already in order */                                 \
        memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof(T));                                                  \
        return;                                                                                                     \
    }                                                                                                               \
    while (i < mid && j < hi) {   /* branch-free: which side comes next is unpredictable */                         \
        T x = src[i], y = src[j];                                                                                   \
        int right = KEY(y) < KEY(x);                                                                                \
        dst[o++] = right ? y : x;                                                                                   \
        j += right;                                                                                                 \
        i += !right;                                                                                                \
    }                                                                                                               \
    if (i < mid) memcpy(dst + o, src + i, (size_t)(mid - i) * sizeof(T));                                           \
    if (j < hi) memcpy(dst + o, src + j, (size_t)(hi - j) * sizeof(T));                                             \
}                                                                                                                   \
static void merges_##t(T *a, T *tmp, int64_t n)                                                                     \
{                                                                                                                   \
    T *src = a, *dst = tmp;                                                                                         \
    for (int64_t w = MERGE_BLOCK; w < n; w *= 2) {                                                                  \
        for (int64_t lo = 0; lo < n; lo += 2 * w) {                                                                 \
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;                            \
            merge_##t(src, dst, lo, mid, hi);                                                                       \
        }                                                                                                           \
        T *s = src; src = dst; dst = s;                                                                             \
    }                                                                                                               \
    if (src != a) memcpy(a, src, (size_t)n * sizeof(T));                                                            \
}                                                                                                                   \
static void rsort_##t(T *a, T *tmp, int64_t n)                                                                      \
{                                                                                                                   \
    int64_t count[sizeof(K)][256];                                                                                  \
    memset(count, 0, sizeof(count));                                                                                \
    for (int64_t i = 0; i < n; i++) {                                                                               \
        K k = KEY(a[i]);                                                                                            \
        for (int d = 0; d < (int)sizeof(K); d++) count[d][(k >> (8 * d)) & 255]++;                                  \
    }                                                                                                               \
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
}                                                                                                                   \
UNUSED static void sort_rows_##t(T *a, T *tmp, int64_t n, int64_t stride, int64_t tmp_stride, int64_t lanes)        \
{                                                                                                                   \
    if (n <= NETWORK_MAX) {                                                                                         \
        NETWORK_DISPATCH(net_##t, (a, n, stride, lanes));                                                           \
    } else if (tmp_stride < n) {                                                                                    \
        for (int64_t r = 0; r < lanes; r++) isort_##t(a + r * stride, n);                                           \
    } else if (n <= MERGE_MAX_VALUES) {                                                                             \
        blocks_##t(a, n, stride, lanes);                                                                            \
        for (int64_t r = 0; r < lanes; r++) merges_##t(a + r * stride, tmp + r * tmp_stride, n);                    \
    } else {                                                                                                        \
        for (int64_t r = 0; r < lanes; r++) rsort_##t(a + r * stride, tmp + r * tmp_stride, n);                     \
    }                                                                                                               \
}

/* argsort items (key << 32 | position): their networks and row sorts; the radix sort only over the key's bytes
 * (the positions below them are in order already) */
NETWORK_VALUES(item32, item32, uint64_t, key_item32, key_item32, odd_none, , _base)
NETWORK_VALUES(item32, item32, uint64_t, key_item32, key_item32, odd_none, TARGET_AVX2, _avx2)
NETWORK_VALUES(item32, item32, uint64_t, key_item32, key_item32, odd_none, TARGET_AVX512, _avx512)
ROW_SORTS(item32, item32, uint64_t, key_item32)

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

/* (key, position) pairs */
NETWORK_ITEMS64(, _base)
NETWORK_ITEMS64(TARGET_AVX2, _avx2)
NETWORK_ITEMS64(TARGET_AVX512, _avx512)
ROW_SORTS(item64, item64, uint64_t, key_item64)

/* ---- the routines -------------------------------------------------------------------------------------------- */

#define GROUP 32              /* rows per unit of work: a multiple of every LANES(K) */

typedef struct {
    void *data;          /* sort and select: the rows, changed in place; argsort: the keys */
    int64_t *index;      /* argsort's result */
    void *scratch;
    int64_t rows, n, scratch_row;
    const int64_t *kth;  /* select's positions, ascending */
    int64_t nkth;
} job;

/* Run body over the groups of GROUP rows: on the thread pool for a large batch. */
static void run_rows(numfn_body body, job *j)
{
    void *ctx[1] = {j};
    int64_t groups = (j->rows + GROUP - 1) / GROUP;
    pthread_once(&network_once, build_networks);
    if (groups > 1 && j->rows * j->n >= PARALLEL_MIN) numfn_parallel_for(body, ctx, groups);
    else body(ctx, 0, groups);
}

#define SORT_ROUTINE(t, T, K, KEY, UNKEY, ODD)                                                                      \
NETWORK_VALUES(t, T, K, KEY, UNKEY, ODD, , _base)                                                                   \
NETWORK_VALUES(t, T, K, KEY, UNKEY, ODD, TARGET_AVX2, _avx2)                                                        \
NETWORK_VALUES(t, T, K, KEY, UNKEY, ODD, TARGET_AVX512, _avx512)                                                    \
ROW_SORTS(t, T, K, KEY)                                                                                             \
static void sort_body_##t(void **ctx, int64_t g0, int64_t g1)                                                       \
{                                                                                                                   \
    job *j = (job *)ctx[0];                                                                                         \
    int64_t n = j->n, room = j->scratch_row, r1 = g1 * GROUP < j->rows ? g1 * GROUP : j->rows;                      \
    T *a = (T *)j->data, *tmp = (T *)j->scratch;                                                                    \
    for (int64_t r = g0 * GROUP; r < r1; r += LANES(K))                                                             \
        sort_rows_##t(a + r * n, tmp + r * room, n, n, room, r1 - r < LANES(K) ? r1 - r : LANES(K));                \
}                                                                                                                   \
void numfn_sort_##t(T *data, T *scratch, const int64_t *rows, const int64_t *n, const int64_t *scratch_row)         \
{                                                                                                                   \
    if (*rows <= 0 || *n <= 1) return;                                                                              \
    job j = {data, NULL, scratch, *rows, *n, *scratch_row, NULL, 0};                                                \
    run_rows(sort_body_##t, &j);                                                                                    \
}

/* argsort without scratch: a stable insertion sort of the positions */
#define ARGSORT_FALLBACK(t, T, KEY)                                                                                 \
static void iargsort_##t(const T *a, int64_t *out, int64_t n)                                                       \
{                                                                                                                   \
    for (int64_t i = 0; i < n; i++) {                                                                               \
        int64_t j = i;                                                                                              \
        while (j > 0 && KEY(a[out[j - 1]]) > KEY(a[i])) { out[j] = out[j - 1]; j--; }                               \
        out[j] = i;                                                                                                 \
    }                                                                                                               \
}

/* Argsort bodies: rows up to NETWORK_MAX by the argsort networks; longer ones build items in their scratch (items,
 * then as many for the merge or radix sort), sort them, and write the positions out. Items are key << 32 | position
 * for keys of 32 bits or less (rows longer than 2**32 take pairs), (key, position) pairs for 64-bit keys. */
#define ARGSORT_ROUTINE(t, T, KEY, WIDE)                                                                            \
ARGSORT_FALLBACK(t, T, KEY)                                                                                         \
static void argsort_body_##t(void **ctx, int64_t g0, int64_t g1)                                                    \
{                                                                                                                   \
    job *j = (job *)ctx[0];                                                                                         \
    int64_t n = j->n, room = j->scratch_row, r1 = g1 * GROUP < j->rows ? g1 * GROUP : j->rows;                      \
    const T *a = (const T *)j->data;                                                                                \
    int64_t *out = j->index;                                                                                        \
    uint64_t *scratch = (uint64_t *)j->scratch;                                                                     \
    int pairs = (WIDE) || n > 0xffffffffLL;                                                                         \
    int lanes = pairs ? PAIR_LANES : LANES(uint64_t);                                                               \
    for (int64_t r = g0 * GROUP; r < r1; r += lanes) {                                                              \
        int64_t count = r1 - r < lanes ? r1 - r : lanes;                                                            \
        if (n <= NETWORK_MAX) {                                                                                     \
            NETWORK_DISPATCH(anet_##t, (a + r * n, out + r * n, n, count));                                         \
        } else if (room < (pairs ? 4 : 2) * n) {                                                                    \
            for (int64_t i = r; i < r + count; i++) iargsort_##t(a + i * n, out + i * n, n);                        \
        } else if (pairs) {                                                                                         \
            for (int64_t i = r; i < r + count; i++) {                                                               \
                item64 *items = (item64 *)(scratch + i * room);                                                     \
                for (int64_t p = 0; p < n; p++) { items[p].key = KEY(a[i * n + p]); items[p].pos = p; }             \
            }                                                                                                       \
            if (n <= MERGE_MAX_ITEMS) blocks_item64((item64 *)(scratch + r * room), n, room / 2, count);            \
            for (int64_t i = r; i < r + count; i++) {                                                               \
                item64 *items = (item64 *)(scratch + i * room);                                                     \
                if (n <= MERGE_MAX_ITEMS) merges_item64(items, items + n, n);                                       \
                else rsort_item64(items, items + n, n);                                                             \
                for (int64_t p = 0; p < n; p++) out[i * n + p] = items[p].pos;                                      \
            }                                                                                                       \
        } else {                                                                                                    \
            for (int64_t i = r; i < r + count; i++) {                                                               \
                item32 *items = scratch + i * room;                                                                 \
                for (int64_t p = 0; p < n; p++) items[p] = ((uint64_t)KEY(a[i * n + p]) << 32) | (uint64_t)p;       \
            }                                                                                                       \
            if (n <= MERGE_MAX_ITEMS) blocks_item32(scratch + r * room, n, room, count);                            \
            for (int64_t i = r; i < r + count; i++) {                                                               \
                item32 *items = scratch + i * room;                                                                 \
                if (n <= MERGE_MAX_ITEMS) merges_item32(items, items + n, n);                                       \
                else rsort_item32_key(items, items + n, n, (int)sizeof(KEY(a[0])));                                 \
                for (int64_t p = 0; p < n; p++) out[i * n + p] = (int64_t)(items[p] & 0xffffffffu);                 \
            }                                                                                                       \
        }                                                                                                           \
    }                                                                                                               \
}                                                                                                                   \
void numfn_argsort_##t(const T *keys, int64_t *index, uint64_t *scratch, const int64_t *rows, const int64_t *n,     \
                       const int64_t *scratch_row)                                                                  \
{                                                                                                                   \
    if (*rows <= 0 || *n <= 0) return;                                                                              \
    if (*n == 1) {                                                                                                  \
        memset(index, 0, (size_t)*rows * sizeof(int64_t));                                                          \
        return;                                                                                                     \
    }                                                                                                               \
    job j = {(void *)keys, index, scratch, *rows, *n, *scratch_row, NULL, 0};                                       \
    run_rows(argsort_body_##t, &j);                                                                                 \
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

/* ---- select: NumPy's partition ----------------------------------------------------------------------------------
 *   numfn_select_<t>(T *data, const int64_t *kth, const int64_t *rows, const int64_t *n, const int64_t *nkth)
 * puts, in each row of n elements, the element a sort would put at each of the nkth positions kth (ascending,
 * distinct, in [0, n)) there, the smaller ones (in sort order: NaNs last) before it and the larger ones after it:
 * np.partition, and what median and quantiles read. Rows up to NETWORK_MAX long are sorted by the networks; longer
 * ones by introselect from the last kth down (each one's left part holds the earlier ones): quickselect around the
 * median of three (Hoare's partition, which splits runs of equal elements evenly), insertion sort below
 * SELECT_SMALL elements, heapsort when the ranges stop shrinking (after 2 log2(n) rounds). No scratch.
 * Elements compare by LESS: the values themselves where the C order is the sort order (integers; float32 and
 * float64 once a first pass has moved the NaNs to the end of the row, where every kth among them is in place), the
 * keys otherwise (float16). */
#define SELECT_SMALL 16
#define SELECT_BOUNDS 128

/* Boundaries of a row being partitioned: positions B such that nothing before B is larger than anything from B
 * to the end of the range partitioned (as introselect finds them, NumPy keeps them too), ascending. The next
 * position to place needs only the range between the boundaries around it. When the list is full, new ones are
 * dropped (the ranges are then longer, never wrong). */
typedef struct {
    int64_t at[SELECT_BOUNDS];
    int count;
} bounds;

static void bounds_add(bounds *b, int64_t x)
{
    int i = b->count;
    if (i == SELECT_BOUNDS) return;
    while (i > 0 && b->at[i - 1] > x) i--;
    if (i > 0 && b->at[i - 1] == x) return;
    memmove(b->at + i + 1, b->at + i, (size_t)(b->count - i) * sizeof(int64_t));
    b->at[i] = x;
    b->count++;
}

/* the boundaries around position k: lo <= k < hi (the list starts as {0, end}, and k < end) */
static void bounds_around(const bounds *b, int64_t k, int64_t *lo, int64_t *hi)
{
    int i = 1;
    while (b->at[i] <= k) i++;
    *lo = b->at[i - 1];
    *hi = b->at[i];
}

#define SELECT_ROUTINE(t, T, LESS, FLOAT)                                                                           \
static void sift_##t(T *a, int64_t root, int64_t n)                                                                 \
{                                                                                                                   \
    T v = a[root];                                                                                                  \
    for (int64_t child; (child = 2 * root + 1) < n; root = child) {                                                 \
        if (child + 1 < n && LESS(a[child], a[child + 1])) child++;                                                 \
        if (!LESS(v, a[child])) break;                                                                              \
        a[root] = a[child];                                                                                         \
    }                                                                                                               \
    a[root] = v;                                                                                                    \
}                                                                                                                   \
static void heapsort_##t(T *a, int64_t n)                                                                           \
{                                                                                                                   \
    for (int64_t i = n / 2 - 1; i >= 0; i--) sift_##t(a, i, n);                                                     \
    for (int64_t end = n - 1; end > 0; end--) {                                                                     \
        T top = a[0];                                                                                               \
        a[0] = a[end];                                                                                              \
        a[end] = top;                                                                                               \
        sift_##t(a, 0, end);                                                                                        \
    }                                                                                                               \
}                                                                                                                   \
static void insertion_##t(T *a, int64_t n)                                                                          \
{                                                                                                                   \
    for (int64_t i = 1; i < n; i++) {                                                                               \
        T v = a[i];                                                                                                 \
        int64_t j = i;                                                                                              \
        while (j > 0 && LESS(v, a[j - 1])) { a[j] = a[j - 1]; j--; }                                               \
        a[j] = v;                                                                                                   \
    }                                                                                                               \
}                                                                                                                   \
static void select_row_##t(T *a, int64_t n, const int64_t *kth, int64_t nkth)                                      \
{                                                                                                                   \
    int64_t end = n;   /* [0, end) still to partition: the NaNs past it are in place */                             \
    if (FLOAT) {   /* NaNs to the end (all equal in sort order): the rest compares as C compares */                 \
        int64_t i = 0, j = n - 1;                                                                                   \
        for (;;) {                                                                                                  \
            while (i <= j && a[i] == a[i]) i++;                                                                     \
            while (j > i && a[j] != a[j]) j--;                                                                      \
            if (i >= j) break;                                                                                      \
            T x = a[i]; a[i] = a[j]; a[j] = x;                                                                      \
        }                                                                                                           \
        end = i;                                                                                                    \
    }                                                                                                               \
    bounds b = {{0, end}, 2};                                                                                       \
    for (int64_t q = nkth - 1; q >= 0; q--) {                                                                       \
        int64_t k = kth[q];                                                                                         \
        if (k < 0 || k >= end) continue;                                                                            \
        int64_t lo, hi;                                                                                             \
        bounds_around(&b, k, &lo, &hi);                                                                             \
        hi--;                                                                                                       \
        int rounds = 2;                                                                                             \
        for (int64_t m = hi - lo + 1; m > 1; m >>= 1) rounds += 2;                                                  \
        while (hi - lo + 1 > SELECT_SMALL) {                                                                        \
            if (rounds-- == 0) { heapsort_##t(a + lo, hi - lo + 1); lo = hi; break; }                               \
            int64_t mid = lo + (hi - lo) / 2;   /* order a[lo] <= a[mid] <= a[hi]: sentinels for the scans */       \
            T x;                                                                                                    \
            if (LESS(a[mid], a[lo])) { x = a[mid]; a[mid] = a[lo]; a[lo] = x; }                                     \
            if (LESS(a[hi], a[mid])) {                                                                              \
                x = a[hi]; a[hi] = a[mid]; a[mid] = x;                                                              \
                if (LESS(a[mid], a[lo])) { x = a[mid]; a[mid] = a[lo]; a[lo] = x; }                                 \
            }                                                                                                       \
            T pivot = a[mid];                                                                                       \
            int64_t i = lo, j = hi;                                                                                 \
            for (;;) {                                                                                              \
                do i++; while (LESS(a[i], pivot));                                                                  \
                do j--; while (LESS(pivot, a[j]));                                                                  \
                if (i >= j) break;                                                                                  \
                x = a[i]; a[i] = a[j]; a[j] = x;                                                                    \
            }                                                                                                       \
            /* [lo, j] <= pivot <= [j + 1, hi]: a boundary the positions still to come may use */                   \
            bounds_add(&b, j + 1);                                                                                  \
            if (k <= j) hi = j;                                                                                     \
            else lo = j + 1;                                                                                        \
        }                                                                                                           \
        if (lo < hi) insertion_##t(a + lo, hi - lo + 1);                                                            \
        bounds_add(&b, k);   /* a[k] is in place: nothing before it is larger */                                    \
    }                                                                                                               \
}                                                                                                                   \
static void select_body_##t(void **ctx, int64_t g0, int64_t g1)                                                     \
{                                                                                                                   \
    job *j = (job *)ctx[0];                                                                                         \
    int64_t n = j->n, r1 = g1 * GROUP < j->rows ? g1 * GROUP : j->rows;                                             \
    T *a = (T *)j->data;                                                                                            \
    for (int64_t r = g0 * GROUP; r < r1; r += LANES(T)) {                                                           \
        int64_t lanes = r1 - r < LANES(T) ? r1 - r : LANES(T);                                                      \
        if (n <= NETWORK_MAX) NETWORK_DISPATCH(net_##t, (a + r * n, n, n, lanes));                                  \
        else for (int64_t i = r; i < r + lanes; i++) select_row_##t(a + i * n, n, j->kth, j->nkth);                 \
    }                                                                                                               \
}                                                                                                                   \
void numfn_select_##t(T *data, const int64_t *kth, const int64_t *rows, const int64_t *n, const int64_t *nkth)      \
{                                                                                                                   \
    if (*rows <= 0 || *n <= 1 || *nkth <= 0) return;                                                                \
    job j = {data, NULL, NULL, *rows, *n, 0, kth, *nkth};                                                           \
    run_rows(select_body_##t, &j);                                                                                  \
}

#define LESS_C(x, y) ((x) < (y))
#define LESS_F16(x, y) (key_f16(x) < key_f16(y))
SELECT_ROUTINE(u8, uint8_t, LESS_C, 0)
SELECT_ROUTINE(i8, int8_t, LESS_C, 0)
SELECT_ROUTINE(u16, uint16_t, LESS_C, 0)
SELECT_ROUTINE(i16, int16_t, LESS_C, 0)
SELECT_ROUTINE(f16, uint16_t, LESS_F16, 0)
SELECT_ROUTINE(u32, uint32_t, LESS_C, 0)
SELECT_ROUTINE(i32, int32_t, LESS_C, 0)
SELECT_ROUTINE(f32, float, LESS_C, 1)
SELECT_ROUTINE(u64, uint64_t, LESS_C, 0)
SELECT_ROUTINE(i64, int64_t, LESS_C, 0)
SELECT_ROUTINE(f64, double, LESS_C, 1)

/* argsort networks: keys of 32 bits or less as one uint64 with their position, 64-bit keys as pairs */
#define ARGSORT_NETWORKS32(t, T, KEY)                                                                               \
NETWORK_ARGS32(t, T, KEY, , _base)                                                                                  \
NETWORK_ARGS32(t, T, KEY, TARGET_AVX2, _avx2)                                                                       \
NETWORK_ARGS32(t, T, KEY, TARGET_AVX512, _avx512)
#define ARGSORT_NETWORKS64(t, T, KEY)                                                                               \
NETWORK_ARGS64(t, T, KEY, , _base)                                                                                  \
NETWORK_ARGS64(t, T, KEY, TARGET_AVX2, _avx2)                                                                       \
NETWORK_ARGS64(t, T, KEY, TARGET_AVX512, _avx512)

ARGSORT_NETWORKS32(u8, uint8_t, key_u8)
ARGSORT_NETWORKS32(i8, int8_t, key_i8)
ARGSORT_NETWORKS32(u16, uint16_t, key_u16)
ARGSORT_NETWORKS32(i16, int16_t, key_i16)
ARGSORT_NETWORKS32(f16, uint16_t, key_f16)
ARGSORT_NETWORKS32(u32, uint32_t, key_u32)
ARGSORT_NETWORKS32(i32, int32_t, key_i32)
ARGSORT_NETWORKS32(f32, float, key_f32)
ARGSORT_NETWORKS64(u64, uint64_t, key_u64)
ARGSORT_NETWORKS64(i64, int64_t, key_i64)
ARGSORT_NETWORKS64(f64, double, key_f64)

ARGSORT_ROUTINE(u8, uint8_t, key_u8, 0)
ARGSORT_ROUTINE(i8, int8_t, key_i8, 0)
ARGSORT_ROUTINE(u16, uint16_t, key_u16, 0)
ARGSORT_ROUTINE(i16, int16_t, key_i16, 0)
ARGSORT_ROUTINE(f16, uint16_t, key_f16, 0)
ARGSORT_ROUTINE(u32, uint32_t, key_u32, 0)
ARGSORT_ROUTINE(i32, int32_t, key_i32, 0)
ARGSORT_ROUTINE(f32, float, key_f32, 0)
ARGSORT_ROUTINE(u64, uint64_t, key_u64, 1)
ARGSORT_ROUTINE(i64, int64_t, key_i64, 1)
ARGSORT_ROUTINE(f64, double, key_f64, 1)
