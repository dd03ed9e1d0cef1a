/*
 * _numfn_dispatch: the fast call path of numfn's jit functions.
 *
 * `Dispatcher` is a base type (numfn's JitFunction subclasses it). Calling an instance walks a short list of
 * registered entries, most recently used first. An entry is a compiled program (`int entry(void **buffers)`) with
 * the specs of the positional arguments it accepts; when every argument matches, the call allocates the outputs,
 * fills the buffer table (outputs, inputs, pointer constants), calls the entry and returns the outputs. Anything
 * else (no entry matches, keyword arguments other than `out=`, objects of other types) goes to the Python method
 * `self._dispatch_miss(*args, **kwargs)`, whose result is returned.
 *
 * Argument specs, as given to `_register`:
 *   ("array", type_num, shape)  exactly a numpy.ndarray (subclasses miss: the Python path decides what they mean)
 *                               with this dtype (type numbers of equivalent builtin types, such as long and long long
 *                               on LP64, count as equal), native byte order, this ndim and these dims. A matching
 *                               array that is not C-contiguous or not aligned is copied before the call; read-only
 *                               arrays are read in place.
 *   ("array", type_num, shape, written)  with `written` true, an array the program writes into: it must also be
 *                               C-contiguous, aligned and writeable, and share no memory with the other array
 *                               arguments; others miss (the Python path copies them in and back, raises NumPy's
 *                               error for a read-only one, or specializes for arguments that share memory)
 *   ("float",)                  exactly a Python float (not a subclass such as numpy.float64), passed as a double
 *   ("int",)                    exactly a Python int (not bool) whose value fits int64, passed as an int64
 *   ("int", lo, hi)             the same, with lo <= value <= hi (a function that converts the int to a narrower
 *                               integer type must raise OverflowError outside its range: such values miss)
 *   ("bool",)                   a Python bool, passed as one byte (0 or 1)
 *
 * Output specs are (type_num, shape). The result is the single output, a tuple of the outputs, or, when the entry
 * has a `builder`, builder(tuple of outputs). `hidden=n`: the last n outputs are the builder's alone (the lengths
 * it cuts outputs of a data-dependent length to); a call with `out=` then misses.
 *
 * Checks (`checks=n`, `on_check`): the program computes n conditions besides its outputs (an index out of bounds,
 * a Python int beyond 64 bits), each a failed flag (one byte) and a payload (int64), in buffer-table slots right
 * after the outputs a caller sees (before the hidden ones, as the program's table has them). They live in C scalars of the call, not in arrays; when a flag is set after the call,
 * on_check(tuple of the 2n values: flag, payload, flag, ...) raises the check's error and the call returns that
 * exception instead of the outputs.
 *
 * `out=`: preallocated outputs (one array, or a tuple of as many arrays as there are outputs) with exactly the
 * registered dtype and shape, C-contiguous, aligned, writeable, and sharing no memory with the inputs, the pointer
 * constants or each other. The call writes into them and returns them. `out=None` means no `out`.
 *
 * Entries are reference counted, so `_clear()` or `_register()` from another thread while an entry runs with the
 * GIL released (`release_gil=True`) cannot free it under the running call. Everything else happens with the GIL
 * held.
 *
 * The buffer table ends with one more slot: the thread pool's `numfn_parallel_for` (numfn.runtime._numfn_native,
 * built separately so kernels keep their threads without this module), or NULL when threads are off.
 *
 * Kept memory: an output of KEEP_MIN_BYTES or more is allocated through a NumPy memory handler ("numfn") whose
 * free keeps the block, up to `keep_limit` bytes in all (`_keep_memory`, from NUMFN_KEEP_MEMORY), and hands it to
 * the next output of about its size. Large blocks come from mmap, and the kernel fills every page of a new mapping
 * with zeros at the first write: about a millisecond per 2 MiB, often more than the program's own work when a
 * function returning a large array is called over and over. A kept block's pages are already mapped. Blocks are
 * matched by their usable size (malloc_usable_size), never by what the array said it held.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include <numpy/arrayobject.h>

#if defined(__GLIBC__)
#include <malloc.h>
#include <pthread.h>
#define usable_size(p) malloc_usable_size(p)
#else
#define usable_size(p) ((size_t)0)   /* unknown: no block is kept */
#endif

#define MAX_ENTRIES 16   /* registered entries per dispatcher; the least recently used is dropped */
#define STACK_SLOTS 64   /* buffer tables up to this size live on the C stack */

enum { KIND_ARRAY = 0, KIND_FLOAT = 1, KIND_INT = 2, KIND_BOOL = 3 };

typedef int (*entry_fn)(void **);

/* The buffer table's last slot: what `numfn.runtime._numfn_native` says (its pool's parallel_for, or NULL when
   threads are off), read at every call; NULL when that module is unavailable (see `_use_pool`). */
static void *volatile *pool_slot = NULL;

typedef struct {
    int kind;
    int type_num;            /* canonical (see canonical_type) */
    int ndim;
    const npy_intp *dims;    /* into Entry.dims */
    long long lo, hi;        /* the range of an int argument */
    int written;             /* an array the program writes into (see entry_matches) */
} ArgSpec;

typedef struct {
    PyArray_Descr *descr;    /* owned */
    int type_num;            /* canonical */
    int ndim;
    npy_intp *dims;          /* into Entry.dims */
    size_t nbytes;           /* the output's size (large ones come from kept memory) */
} OutSpec;

typedef struct {
    Py_ssize_t refs;         /* 1 while registered, +1 per call in flight; changed with the GIL held */
    entry_fn fn;
    Py_ssize_t nargs, nouts, nconsts;
    ArgSpec *args;
    OutSpec *outs;
    void **const_ptrs;
    PyObject *constants;     /* tuple of C-contiguous aligned arrays (owned) */
    PyObject *keepalive;     /* owned */
    PyObject *builder;       /* owned, or NULL */
    Py_ssize_t nchecks;      /* checks: two scalar slots each after the outputs */
    Py_ssize_t nhidden;      /* the last outputs are the builder's alone (lengths it cuts outputs to): no out= */
    int any_written;         /* an argument is written into */
    PyObject *on_check;      /* owned, or NULL (no checks): raises the error of a failed check */
    int release_gil;
    npy_intp *dims;          /* storage for every spec's dims */
} Entry;

typedef union {
    double d;
    int64_t i;
    uint8_t b;
} ScalarSlot;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int nentries;
    Entry *entries[MAX_ENTRIES];   /* most recently used first */
} DispatcherObject;

static PyObject *str_out;            /* "out" */
static PyObject *str_dispatch_miss;  /* "_dispatch_miss" */

/* ---- dtype numbers ------------------------------------------------------------------------------------------ */

#define NCANON (NPY_HALF + 1)   /* the numeric type numbers: 0..NPY_CLONGDOUBLE and NPY_HALF */
static int canon_table[NCANON];

/* The first builtin type number equivalent to `t` (same kind and size: NPY_LONGLONG -> NPY_LONG on LP64). */
static inline int
canonical_type(int t)
{
    return (t >= 0 && t < NCANON) ? canon_table[t] : t;
}

static void
init_canonical_types(void)
{
    for (int t = 0; t < NCANON; t++) {
        canon_table[t] = t;
        for (int u = 0; u < t; u++) {
            if (canon_table[u] == u && PyArray_EquivTypenums(u, t)) {
                canon_table[t] = u;
                break;
            }
        }
    }
}

/* ---- kept memory (see the top of this file) ------------------------------------------------------------------ */

#define KEEP_MIN_BYTES ((size_t)128 * 1024)   /* glibc's smallest mmap threshold: smaller blocks come from the heap */
#define KEEP_SLOTS 32

static struct { void *ptr; size_t size; } kept[KEEP_SLOTS];   /* the most recently freed last */
static int nkept = 0;
static size_t kept_bytes = 0, keep_limit = 0;
static PyObject *keep_handler = NULL;   /* the "mem_handler" capsule; NULL: outputs use NumPy's current handler */
#if defined(__GLIBC__)
static pthread_mutex_t keep_lock = PTHREAD_MUTEX_INITIALIZER;
#define KEEP_LOCK() pthread_mutex_lock(&keep_lock)
#define KEEP_UNLOCK() pthread_mutex_unlock(&keep_lock)

/* A child made by fork() has only the forking thread: the lock may have been held by another one at the fork. */
static void keep_after_fork_child(void) { pthread_mutex_init(&keep_lock, NULL); }
#else
#define KEEP_LOCK() ((void)0)
#define KEEP_UNLOCK() ((void)0)
#endif

/* Free kept blocks, oldest first, until `room` more bytes fit under the limit and a slot is free. */
static void
keep_evict_locked(size_t room)
{
    int drop = 0;
    size_t bytes = kept_bytes;
    while (drop < nkept && (bytes + room > keep_limit || nkept - drop >= KEEP_SLOTS)) {
        free(kept[drop].ptr);
        bytes -= kept[drop].size;
        drop++;
    }
    if (drop == 0) return;
    memmove(kept, kept + drop, sizeof(kept[0]) * (size_t)(nkept - drop));
    nkept -= drop;
    kept_bytes = bytes;
}

static void *
keep_malloc(void *ctx, size_t size)
{
    (void)ctx;
    if (size >= KEEP_MIN_BYTES) {
        KEEP_LOCK();
        for (int i = nkept - 1; i >= 0; i--) {   /* a block that holds `size` and wastes at most an eighth of it */
            if (kept[i].size >= size && kept[i].size - size <= size / 8) {
                void *p = kept[i].ptr;
                kept_bytes -= kept[i].size;
                memmove(kept + i, kept + i + 1, sizeof(kept[0]) * (size_t)(nkept - i - 1));
                nkept--;
                KEEP_UNLOCK();
                return p;
            }
        }
        KEEP_UNLOCK();
    }
    return malloc(size ? size : 1);
}

static void *
keep_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    return calloc(nelem ? nelem : 1, elsize ? elsize : 1);
}

static void *
keep_realloc(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    return realloc(ptr, size ? size : 1);
}

static void
keep_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx; (void)size;   /* the block's own usable size decides, whatever the array said it held */
    if (ptr == NULL) return;
    size_t have = usable_size(ptr);
    if (have >= KEEP_MIN_BYTES && have <= keep_limit) {
        KEEP_LOCK();
        keep_evict_locked(have);
        if (kept_bytes + have <= keep_limit && nkept < KEEP_SLOTS) {
            kept[nkept].ptr = ptr;
            kept[nkept].size = have;
            nkept++;
            kept_bytes += have;
            ptr = NULL;
        }
        KEEP_UNLOCK();
    }
    free(ptr);
}

static PyDataMem_Handler keep_handler_struct = {
    "numfn", 1, {NULL, keep_malloc, keep_calloc, keep_realloc, keep_free}
};

static size_t
nbytes_of(PyArray_Descr *descr, int ndim, const npy_intp *dims)
{
    size_t nbytes = (size_t)PyDataType_ELSIZE(descr);
    for (int d = 0; d < ndim; d++) nbytes *= (size_t)dims[d];
    return nbytes;
}

/* A new C-contiguous array (`descr` stolen) of `nbytes`: from kept memory when it is large and memory is kept. */
static PyObject *
new_array(PyArray_Descr *descr, int ndim, npy_intp *dims, size_t nbytes)
{
    PyObject *old = NULL;
    if (nbytes >= KEEP_MIN_BYTES && keep_handler != NULL && keep_limit > 0) {
        old = PyDataMem_SetHandler(keep_handler);
        if (old == NULL) PyErr_Clear();   /* then NumPy's handler allocates it */
    }
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, ndim, dims, NULL, NULL, 0, NULL);
    if (old != NULL) {
        PyObject *mine = PyDataMem_SetHandler(old);
        Py_XDECREF(mine);
        Py_DECREF(old);
    }
    return arr;
}

/* ---- entries ------------------------------------------------------------------------------------------------ */

static void
entry_free(Entry *e)
{
    if (e->outs != NULL) {
        for (Py_ssize_t k = 0; k < e->nouts; k++) Py_XDECREF(e->outs[k].descr);
    }
    PyMem_Free(e->args);
    PyMem_Free(e->outs);
    PyMem_Free(e->const_ptrs);
    PyMem_Free(e->dims);
    PyObject *constants = e->constants, *keepalive = e->keepalive, *builder = e->builder, *on_check = e->on_check;
    PyMem_Free(e);
    /* last: these may run arbitrary code (__del__), which must not see a half-freed entry */
    Py_XDECREF(constants);
    Py_XDECREF(keepalive);
    Py_XDECREF(builder);
    Py_XDECREF(on_check);
}

static inline void
entry_decref(Entry *e)
{
    if (--e->refs == 0) entry_free(e);
}

/* Whether two entries take the same arguments (a new registration then replaces the old one). */
static int
same_arg_specs(const Entry *a, const Entry *b)
{
    if (a->nargs != b->nargs) return 0;
    for (Py_ssize_t j = 0; j < a->nargs; j++) {
        const ArgSpec *x = &a->args[j], *y = &b->args[j];
        if (x->kind != y->kind) return 0;
        if (x->kind == KIND_INT && (x->lo != y->lo || x->hi != y->hi)) return 0;
        if (x->kind != KIND_ARRAY) continue;
        if (x->type_num != y->type_num || x->ndim != y->ndim) return 0;
        for (int d = 0; d < x->ndim; d++) {
            if (x->dims[d] != y->dims[d]) return 0;
        }
    }
    return 1;
}

/* ---- matching ----------------------------------------------------------------------------------------------- */

static int arrays_overlap(PyArrayObject *a, PyArrayObject *b);

/* Whether an array argument the program writes into may share memory with another array argument (a miss: the
   Python path specializes the function for arguments that share memory, numfn.trace.aliasing). */
static int
written_overlaps(const Entry *e, PyObject *const *args)
{
    for (Py_ssize_t j = 0; j < e->nargs; j++) {
        if (!e->args[j].written) continue;
        for (Py_ssize_t i = 0; i < e->nargs; i++) {
            if (i != j && e->args[i].kind == KIND_ARRAY &&
                arrays_overlap((PyArrayObject *)args[j], (PyArrayObject *)args[i])) return 1;
        }
    }
    return 0;
}

/* Whether `args` match `e`; fills the scalar slots of scalar arguments. Never raises, never runs Python code. An
   array the program writes into must be C-contiguous, aligned and writeable (the program writes into its memory;
   the Python path copies others in and back, and raises NumPy's error for a read-only one) and share no memory with
   the other arguments. */
static inline int
entry_matches(const Entry *e, PyObject *const *args, ScalarSlot *slots)
{
    for (Py_ssize_t j = 0; j < e->nargs; j++) {
        const ArgSpec *s = &e->args[j];
        PyObject *o = args[j];
        switch (s->kind) {
        case KIND_ARRAY: {
            if (Py_TYPE(o) != &PyArray_Type) return 0;
            PyArrayObject *a = (PyArrayObject *)o;
            PyArray_Descr *descr = PyArray_DESCR(a);
            if (descr->type_num != s->type_num && canonical_type(descr->type_num) != s->type_num) return 0;
            if (!PyArray_ISNBO(descr->byteorder)) return 0;
            if (PyArray_NDIM(a) != s->ndim) return 0;
            const npy_intp *dims = PyArray_DIMS(a);
            for (int d = 0; d < s->ndim; d++) {
                if (dims[d] != s->dims[d]) return 0;
            }
            if (s->written && !PyArray_ISCARRAY(a)) return 0;
            break;
        }
        case KIND_FLOAT:
            if (!PyFloat_CheckExact(o)) return 0;
            slots[j].d = PyFloat_AS_DOUBLE(o);
            break;
        case KIND_INT: {
            if (!PyLong_CheckExact(o)) return 0;
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
            if (overflow != 0) return 0;
            if (v == -1 && PyErr_Occurred()) {  /* cannot happen for an exact int; stay exact anyway */
                PyErr_Clear();
                return 0;
            }
            if (v < s->lo || v > s->hi) return 0;
            slots[j].i = (int64_t)v;
            break;
        }
        case KIND_BOOL:
            if (!PyBool_Check(o)) return 0;
            slots[j].b = (uint8_t)(o == Py_True);
            break;
        default:
            return 0;
        }
    }
    return !e->any_written || !written_overlaps(e, args);
}

/* ---- out= --------------------------------------------------------------------------------------------------- */

/* [lo, hi): the bytes an array's elements occupy (empty for a zero-size array). */
static void
byte_bounds(PyArrayObject *a, char **lo, char **hi)
{
    char *p = PyArray_BYTES(a);
    int nd = PyArray_NDIM(a);
    const npy_intp *dims = PyArray_DIMS(a), *strides = PyArray_STRIDES(a);
    npy_intp low = 0, high = 0;
    for (int d = 0; d < nd; d++) {
        if (dims[d] == 0) {
            *lo = *hi = p;
            return;
        }
        npy_intp extent = (dims[d] - 1) * strides[d];
        if (extent < 0) low += extent;
        else high += extent;
    }
    *lo = p + low;
    *hi = p + high + PyArray_ITEMSIZE(a);
}

static int
arrays_overlap(PyArrayObject *a, PyArrayObject *b)
{
    char *alo, *ahi, *blo, *bhi;
    byte_bounds(a, &alo, &ahi);
    byte_bounds(b, &blo, &bhi);
    return alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}

static PyObject *
shape_tuple(int ndim, const npy_intp *dims)
{
    PyObject *t = PyTuple_New(ndim);
    if (t == NULL) return NULL;
    for (int d = 0; d < ndim; d++) {
        PyObject *v = PyLong_FromSsize_t(dims[d]);
        if (v == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, d, v);
    }
    return t;
}

/* Raise `exc` with "out[k] <problem>; expected a C-contiguous, writeable array of dtype D and shape S". */
static void
out_error(PyObject *exc, const OutSpec *spec, Py_ssize_t k, const char *problem, PyObject *detail)
{
    PyObject *shape = shape_tuple(spec->ndim, spec->dims);
    if (shape == NULL) return;
    if (detail != NULL) {
        PyErr_Format(exc, "out[%zd] %s %S; expected a C-contiguous, writeable array of dtype %S and shape %R",
                     k, problem, detail, (PyObject *)spec->descr, shape);
    }
    else {
        PyErr_Format(exc, "out[%zd] %s; expected a C-contiguous, writeable array of dtype %S and shape %R",
                     k, problem, (PyObject *)spec->descr, shape);
    }
    Py_DECREF(shape);
}

/* Check the caller's `out` against the entry's outputs; on success store borrowed references in outs[]. */
static int
check_out(const Entry *e, PyObject *out, PyObject **outs, PyObject *const *args)
{
    Py_ssize_t n = e->nouts;
    if (PyTuple_Check(out)) {
        if (PyTuple_GET_SIZE(out) != n) {
            PyErr_Format(PyExc_ValueError, "out= must be %zd array%s (a tuple of %zd), got a tuple of %zd",
                         n, n == 1 ? "" : "s", n, PyTuple_GET_SIZE(out));
            return -1;
        }
        for (Py_ssize_t k = 0; k < n; k++) outs[k] = PyTuple_GET_ITEM(out, k);
    }
    else if (n == 1) {
        outs[0] = out;
    }
    else {
        PyErr_Format(PyExc_TypeError, "out= must be a tuple of %zd arrays (one per output), got %s",
                     n, Py_TYPE(out)->tp_name);
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        const OutSpec *spec = &e->outs[k];
        PyObject *o = outs[k];
        if (!PyArray_Check(o)) {
            PyObject *name = PyUnicode_FromString(Py_TYPE(o)->tp_name);
            if (name == NULL) return -1;
            out_error(PyExc_TypeError, spec, k, "is of type", name);
            Py_DECREF(name);
            return -1;
        }
        PyArrayObject *a = (PyArrayObject *)o;
        PyArray_Descr *descr = PyArray_DESCR(a);
        if (canonical_type(descr->type_num) != spec->type_num || !PyArray_ISNBO(descr->byteorder)) {
            out_error(PyExc_TypeError, spec, k, "has dtype", (PyObject *)descr);
            return -1;
        }
        int shape_ok = PyArray_NDIM(a) == spec->ndim;
        for (int d = 0; shape_ok && d < spec->ndim; d++) shape_ok = PyArray_DIMS(a)[d] == spec->dims[d];
        if (!shape_ok) {
            PyObject *shape = shape_tuple(PyArray_NDIM(a), PyArray_DIMS(a));
            if (shape == NULL) return -1;
            out_error(PyExc_ValueError, spec, k, "has shape", shape);
            Py_DECREF(shape);
            return -1;
        }
        if (!PyArray_IS_C_CONTIGUOUS(a)) {
            out_error(PyExc_ValueError, spec, k, "is not C-contiguous", NULL);
            return -1;
        }
        if (!PyArray_ISALIGNED(a)) {
            out_error(PyExc_ValueError, spec, k, "is not aligned", NULL);
            return -1;
        }
        if (!PyArray_ISWRITEABLE(a)) {
            out_error(PyExc_ValueError, spec, k, "is read-only", NULL);
            return -1;
        }
        for (Py_ssize_t j = 0; j < e->nargs; j++) {
            if (e->args[j].kind == KIND_ARRAY && arrays_overlap(a, (PyArrayObject *)args[j])) {
                PyErr_Format(PyExc_ValueError,
                             "out[%zd] shares memory with input argument %zd; outputs must not overlap the inputs",
                             k, j);
                return -1;
            }
        }
        for (Py_ssize_t c = 0; c < e->nconsts; c++) {
            if (arrays_overlap(a, (PyArrayObject *)PyTuple_GET_ITEM(e->constants, c))) {
                PyErr_Format(PyExc_ValueError,
                             "out[%zd] shares memory with an array the function captured (pointer constant %zd)",
                             k, c);
                return -1;
            }
        }
        for (Py_ssize_t m = 0; m < k; m++) {
            if (arrays_overlap(a, (PyArrayObject *)outs[m])) {
                PyErr_Format(PyExc_ValueError, "out[%zd] shares memory with out[%zd]", k, m);
                return -1;
            }
        }
    }
    return 0;
}

/* ---- calling ------------------------------------------------------------------------------------------------ */

static PyObject *
call_miss(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *miss = PyObject_GetAttr(self, str_dispatch_miss);
    if (miss == NULL) return NULL;
    PyObject *result = PyObject_Vectorcall(miss, args, (size_t)nargs, kwnames);
    Py_DECREF(miss);
    return result;
}

/* Run entry `e` (a reference held by the caller) on matching `args`. */
static PyObject *
run_entry(Entry *e, PyObject *const *args, const ScalarSlot *slots, PyObject *out)
{
    Py_ssize_t nouts = e->nouts, nargs = e->nargs, nconsts = e->nconsts, nchecks = 2 * e->nchecks;
    /* the table: outputs, check slots, hidden outputs (lengths), inputs, constants */
    Py_ssize_t nvisible = nouts - e->nhidden, first_in = nouts + nchecks;
    Py_ssize_t ntable = first_in + nargs + nconsts + 1;   /* + the thread pool */
    void *table_stack[STACK_SLOTS];
    PyObject *objs_stack[STACK_SLOTS];
    ScalarSlot checks_stack[STACK_SLOTS];
    ScalarSlot *checks = checks_stack;
    void **table = table_stack;
    PyObject **outs = objs_stack, **copies;   /* outs: nouts slots, then copies: nargs slots */
    PyObject *result = NULL;
    int outs_owned = out == NULL;
    Py_ssize_t k, j, nmade = 0;

    if (ntable > STACK_SLOTS) {
        table = PyMem_Malloc(sizeof(void *) * (size_t)ntable);
        outs = PyMem_Malloc(sizeof(PyObject *) * (size_t)(nouts + nargs + 1));
        if (nchecks > STACK_SLOTS) checks = PyMem_Malloc(sizeof(ScalarSlot) * (size_t)nchecks);
        if (table == NULL || outs == NULL || checks == NULL) {
            PyErr_NoMemory();
            goto done_alloc;
        }
    }
    copies = outs + nouts;
    for (j = 0; j < nargs; j++) copies[j] = NULL;

    /* outputs */
    if (out != NULL) {
        if (check_out(e, out, outs, args) < 0) goto done_alloc;
    }
    else {
        for (k = 0; k < nouts; k++) {
            const OutSpec *spec = &e->outs[k];
            Py_INCREF(spec->descr);   /* stolen */
            outs[k] = new_array(spec->descr, spec->ndim, spec->dims, spec->nbytes);
            if (outs[k] == NULL) goto cleanup;
            nmade = k + 1;
        }
    }
    for (k = 0; k < nouts; k++) table[k < nvisible ? k : k + nchecks] = PyArray_DATA((PyArrayObject *)outs[k]);
    for (k = 0; k < nchecks; k++) {
        checks[k].i = 0;
        table[nvisible + k] = (void *)&checks[k];
    }

    /* inputs */
    for (j = 0; j < nargs; j++) {
        const ArgSpec *s = &e->args[j];
        if (s->kind == KIND_ARRAY) {
            PyArrayObject *a = (PyArrayObject *)args[j];
            if (!PyArray_ISCARRAY_RO(a)) {
                copies[j] = PyArray_NewCopy(a, NPY_CORDER);
                if (copies[j] == NULL) goto cleanup;
                a = (PyArrayObject *)copies[j];
            }
            table[first_in + j] = PyArray_DATA(a);
        }
        else {
            table[first_in + j] = (void *)&slots[j];
        }
    }
    for (j = 0; j < nconsts; j++) table[first_in + nargs + j] = e->const_ptrs[j];
    table[ntable - 1] = pool_slot != NULL ? *pool_slot : NULL;

    /* the call */
    int status;
    if (e->release_gil) {
        Py_BEGIN_ALLOW_THREADS
        status = e->fn(table);
        Py_END_ALLOW_THREADS
    }
    else {
        status = e->fn(table);
    }
    if (status != 0) {
        PyErr_SetString(PyExc_MemoryError, "a numfn program could not allocate its scratch memory");
        goto cleanup;
    }
    for (k = 0; k < nchecks; k += 2) {
        if (checks[k].b) break;
    }
    if (k < nchecks) {   /* a check failed: its error, raised by on_check */
        PyObject *values = PyTuple_New(nchecks);
        if (values == NULL) goto cleanup;
        for (k = 0; k < nchecks; k++) {
            PyObject *v = k % 2 == 0 ? PyBool_FromLong(checks[k].b) : PyLong_FromLongLong((long long)checks[k].i);
            if (v == NULL) {
                Py_DECREF(values);
                goto cleanup;
            }
            PyTuple_SET_ITEM(values, k, v);
        }
        PyObject *r = PyObject_CallOneArg(e->on_check, values);
        Py_DECREF(values);
        if (r != NULL) {
            Py_DECREF(r);
            PyErr_SetString(PyExc_RuntimeError, "a check of a numfn program failed, and on_check raised nothing");
        }
        goto cleanup;
    }

    /* the result */
    if (e->builder == NULL && nouts == 1) {
        result = outs[0];
        Py_INCREF(result);
    }
    else if (e->builder == NULL && out != NULL && PyTuple_CheckExact(out)) {
        result = out;
        Py_INCREF(result);
    }
    else {
        PyObject *tuple = PyTuple_New(nouts);
        if (tuple == NULL) goto cleanup;
        for (k = 0; k < nouts; k++) {
            Py_INCREF(outs[k]);
            PyTuple_SET_ITEM(tuple, k, outs[k]);
        }
        if (e->builder == NULL) {
            result = tuple;
        }
        else {
            result = PyObject_CallOneArg(e->builder, tuple);
            Py_DECREF(tuple);
        }
    }

cleanup:
    if (outs_owned) {
        for (k = 0; k < nmade; k++) Py_DECREF(outs[k]);
    }
    for (j = 0; j < nargs; j++) Py_XDECREF(copies[j]);
done_alloc:
    if (table != table_stack) PyMem_Free(table);
    if (outs != objs_stack) PyMem_Free(outs);
    if (checks != checks_stack) PyMem_Free(checks);
    return result;
}

static PyObject *
dispatcher_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    DispatcherObject *self = (DispatcherObject *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *out = NULL;
    ScalarSlot slots_stack[STACK_SLOTS];
    ScalarSlot *slots = slots_stack;

    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) {
        if (PyTuple_GET_SIZE(kwnames) != 1) goto miss;
        PyObject *name = PyTuple_GET_ITEM(kwnames, 0);
        if (name != str_out && !(PyUnicode_Check(name) && PyUnicode_Compare(name, str_out) == 0)) goto miss;
        out = args[nargs];
        if (out == Py_None) out = NULL;
    }
    if (nargs > STACK_SLOTS) {
        slots = PyMem_Malloc(sizeof(ScalarSlot) * (size_t)nargs);
        if (slots == NULL) return PyErr_NoMemory();
    }
    for (int i = 0; i < self->nentries; i++) {
        Entry *e = self->entries[i];
        if (e->nargs != nargs || (out != NULL && e->nhidden) || !entry_matches(e, args, slots)) continue;
        if (i > 0) {   /* most recently used first */
            memmove(&self->entries[1], &self->entries[0], sizeof(Entry *) * (size_t)i);
            self->entries[0] = e;
        }
        e->refs++;
        PyObject *result = run_entry(e, args, slots, out);
        entry_decref(e);
        if (slots != slots_stack) PyMem_Free(slots);
        return result;
    }
    if (slots != slots_stack) PyMem_Free(slots);
miss:
    return call_miss(self_, args, nargs, kwnames);
}

/* ---- registration ------------------------------------------------------------------------------------------- */

static int
parse_shape(PyObject *shape, int *ndim, Py_ssize_t *count, const char *what, Py_ssize_t index)
{
    if (!PyTuple_Check(shape)) {
        PyErr_Format(PyExc_TypeError, "%s %zd: the shape must be a tuple, got %s", what, index,
                     Py_TYPE(shape)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(shape);
    if (n > NPY_MAXDIMS) {
        PyErr_Format(PyExc_ValueError, "%s %zd: %zd dimensions (at most %d)", what, index, n, NPY_MAXDIMS);
        return -1;
    }
    *ndim = (int)n;
    *count += n;
    return 0;
}

static int
fill_dims(PyObject *shape, npy_intp *dims, const char *what, Py_ssize_t index)
{
    for (Py_ssize_t d = 0; d < PyTuple_GET_SIZE(shape); d++) {
        Py_ssize_t v = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
        if (v == -1 && PyErr_Occurred()) return -1;
        if (v < 0) {
            PyErr_Format(PyExc_ValueError, "%s %zd: negative dimension %zd", what, index, v);
            return -1;
        }
        dims[d] = (npy_intp)v;
    }
    return 0;
}

static int
parse_type_num(PyObject *o, int *type_num, PyArray_Descr **descr, const char *what, Py_ssize_t index)
{
    long t = PyLong_AsLong(o);
    if (t == -1 && PyErr_Occurred()) return -1;
    if (t < 0 || t >= NCANON || (t > NPY_CLONGDOUBLE && t != NPY_HALF) || t == NPY_OBJECT) {
        PyErr_Format(PyExc_ValueError, "%s %zd: type number %ld is not a builtin numeric dtype", what, index, t);
        return -1;
    }
    *type_num = canonical_type((int)t);
    if (descr != NULL) {
        *descr = PyArray_DescrFromType(*type_num);
        if (*descr == NULL) return -1;
    }
    return 0;
}

/* Build an entry from _register's arguments (a new entry with refs == 1, or NULL with an exception). */
static Entry *
entry_new(PyObject *address, PyObject *arg_specs, PyObject *out_specs, PyObject *constants, PyObject *keepalive,
          PyObject *builder, int release_gil, Py_ssize_t nchecks, PyObject *on_check, Py_ssize_t nhidden)
{
    if (!PyTuple_Check(arg_specs) || !PyTuple_Check(out_specs) || !PyTuple_Check(constants)) {
        PyErr_SetString(PyExc_TypeError, "_register: arg_specs, out_specs and constants must be tuples");
        return NULL;
    }
    void *fn = PyLong_AsVoidPtr(address);
    if (fn == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "_register: the entry address is 0");
        return NULL;
    }
    if (builder == Py_None) builder = NULL;
    if (builder != NULL && !PyCallable_Check(builder)) {
        PyErr_SetString(PyExc_TypeError, "_register: builder must be callable or None");
        return NULL;
    }
    if (on_check == Py_None) on_check = NULL;
    if (nhidden < 0 || nhidden > PyTuple_GET_SIZE(out_specs) || (nhidden > 0 && builder == NULL)) {
        PyErr_SetString(PyExc_ValueError, "_register: hidden must count outputs a builder takes");
        return NULL;
    }
    if (nchecks < 0 || (nchecks > 0 && (on_check == NULL || !PyCallable_Check(on_check)))) {
        PyErr_SetString(PyExc_TypeError, "_register: checks must be >= 0, and on_check callable when there are any");
        return NULL;
    }
    Entry *e = PyMem_Calloc(1, sizeof(Entry));
    if (e == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    e->refs = 1;
    /* converting a data pointer to a function pointer: what dlsym users do; valid on every platform we target */
    memcpy(&e->fn, &fn, sizeof(fn));
    e->nargs = PyTuple_GET_SIZE(arg_specs);
    e->nouts = PyTuple_GET_SIZE(out_specs);
    e->release_gil = release_gil;
    e->keepalive = keepalive;
    Py_INCREF(keepalive);
    e->builder = builder;
    Py_XINCREF(builder);
    e->nchecks = nchecks;
    e->nhidden = nhidden;
    e->on_check = nchecks > 0 ? on_check : NULL;
    Py_XINCREF(e->on_check);
    e->args = PyMem_Calloc((size_t)e->nargs + 1, sizeof(ArgSpec));
    e->outs = PyMem_Calloc((size_t)e->nouts + 1, sizeof(OutSpec));
    if (e->args == NULL || e->outs == NULL) {
        PyErr_NoMemory();
        goto fail;
    }

    /* specs, first pass: kinds, type numbers, ndims; count the dims */
    Py_ssize_t ndims = 0;
    for (Py_ssize_t j = 0; j < e->nargs; j++) {
        PyObject *spec = PyTuple_GET_ITEM(arg_specs, j);
        if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(spec, 0))) {
            PyErr_Format(PyExc_TypeError, "_register: arg spec %zd must be a tuple (kind, ...)", j);
            goto fail;
        }
        const char *kind = PyUnicode_AsUTF8(PyTuple_GET_ITEM(spec, 0));
        if (kind == NULL) goto fail;
        Py_ssize_t size = PyTuple_GET_SIZE(spec);
        ArgSpec *s = &e->args[j];
        if (strcmp(kind, "array") == 0 && (size == 3 || size == 4)) {
            s->kind = KIND_ARRAY;
            if (parse_type_num(PyTuple_GET_ITEM(spec, 1), &s->type_num, NULL, "arg spec", j) < 0) goto fail;
            if (parse_shape(PyTuple_GET_ITEM(spec, 2), &s->ndim, &ndims, "arg spec", j) < 0) goto fail;
            if (size == 4) {
                s->written = PyObject_IsTrue(PyTuple_GET_ITEM(spec, 3));
                if (s->written < 0) goto fail;
                e->any_written |= s->written;
            }
        }
        else if (strcmp(kind, "float") == 0 && size == 1) s->kind = KIND_FLOAT;
        else if (strcmp(kind, "int") == 0 && (size == 1 || size == 3)) {
            s->kind = KIND_INT;
            s->lo = LLONG_MIN;
            s->hi = LLONG_MAX;
            if (size == 3) {
                s->lo = PyLong_AsLongLong(PyTuple_GET_ITEM(spec, 1));
                if (s->lo == -1 && PyErr_Occurred()) goto fail;
                s->hi = PyLong_AsLongLong(PyTuple_GET_ITEM(spec, 2));
                if (s->hi == -1 && PyErr_Occurred()) goto fail;
            }
        }
        else if (strcmp(kind, "bool") == 0 && size == 1) s->kind = KIND_BOOL;
        else {
            PyErr_Format(PyExc_ValueError, "_register: arg spec %zd must be (\"array\", type_num, shape[, written]), "
                         "(\"float\",), (\"int\",), (\"int\", lo, hi) or (\"bool\",), got %R", j, spec);
            goto fail;
        }
    }
    for (Py_ssize_t k = 0; k < e->nouts; k++) {
        PyObject *spec = PyTuple_GET_ITEM(out_specs, k);
        if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 2) {
            PyErr_Format(PyExc_TypeError, "_register: out spec %zd must be a tuple (type_num, shape)", k);
            goto fail;
        }
        OutSpec *s = &e->outs[k];
        if (parse_type_num(PyTuple_GET_ITEM(spec, 0), &s->type_num, &s->descr, "out spec", k) < 0) goto fail;
        if (parse_shape(PyTuple_GET_ITEM(spec, 1), &s->ndim, &ndims, "out spec", k) < 0) goto fail;
    }

    /* second pass: the dims */
    e->dims = PyMem_Calloc((size_t)ndims + 1, sizeof(npy_intp));
    if (e->dims == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    npy_intp *next = e->dims;
    for (Py_ssize_t j = 0; j < e->nargs; j++) {
        ArgSpec *s = &e->args[j];
        if (s->kind != KIND_ARRAY) continue;
        if (fill_dims(PyTuple_GET_ITEM(PyTuple_GET_ITEM(arg_specs, j), 2), next, "arg spec", j) < 0) goto fail;
        s->dims = next;
        next += s->ndim;
    }
    for (Py_ssize_t k = 0; k < e->nouts; k++) {
        OutSpec *s = &e->outs[k];
        if (fill_dims(PyTuple_GET_ITEM(PyTuple_GET_ITEM(out_specs, k), 1), next, "out spec", k) < 0) goto fail;
        s->dims = next;
        next += s->ndim;
        s->nbytes = nbytes_of(s->descr, s->ndim, s->dims);
    }

    /* pointer constants: kept as C-contiguous aligned arrays (copied if need be) */
    e->nconsts = PyTuple_GET_SIZE(constants);
    e->constants = PyTuple_New(e->nconsts);
    e->const_ptrs = PyMem_Calloc((size_t)e->nconsts + 1, sizeof(void *));
    if (e->constants == NULL || e->const_ptrs == NULL) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t c = 0; c < e->nconsts; c++) {
        PyObject *o = PyTuple_GET_ITEM(constants, c);
        if (!PyArray_Check(o)) {
            PyErr_Format(PyExc_TypeError, "_register: constant %zd must be a numpy.ndarray, got %s", c,
                         Py_TYPE(o)->tp_name);
            goto fail;
        }
        PyArrayObject *a = (PyArrayObject *)o;
        if (PyArray_ISCARRAY_RO(a) && PyArray_ISNOTSWAPPED(a)) {
            Py_INCREF(o);
        }
        else {
            PyArray_Descr *native = PyArray_DescrNewByteorder(PyArray_DESCR(a), NPY_NATIVE);
            if (native == NULL) goto fail;
            o = PyArray_FromArray(a, native, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_ENSURECOPY);   /* steals native */
            if (o == NULL) goto fail;
        }
        PyTuple_SET_ITEM(e->constants, c, o);
        e->const_ptrs[c] = PyArray_DATA((PyArrayObject *)o);
    }
    return e;

fail:
    entry_free(e);
    return NULL;
}

static PyObject *
dispatcher_register(PyObject *self_, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"address", "arg_specs", "out_specs", "constants", "keepalive", "builder", "release_gil",
                            "checks", "on_check", "hidden", NULL};
    DispatcherObject *self = (DispatcherObject *)self_;
    PyObject *address, *arg_specs, *out_specs, *constants, *keepalive = Py_None, *builder = Py_None;
    PyObject *on_check = Py_None;
    int release_gil = 0;
    Py_ssize_t nchecks = 0, nhidden = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOO|OOp$nOn:_register", names, &address, &arg_specs, &out_specs,
                                     &constants, &keepalive, &builder, &release_gil, &nchecks, &on_check,
                                     &nhidden)) {
        return NULL;
    }
    Entry *e = entry_new(address, arg_specs, out_specs, constants, keepalive, builder, release_gil, nchecks,
                         on_check, nhidden);
    if (e == NULL) return NULL;

    /* an entry for the same arguments is replaced; otherwise the least recently used one goes when full */
    Entry *dropped = NULL;
    int i;
    for (i = 0; i < self->nentries; i++) {
        if (same_arg_specs(self->entries[i], e)) break;
    }
    if (i < self->nentries) {
        dropped = self->entries[i];
    }
    else if (self->nentries == MAX_ENTRIES) {
        i = MAX_ENTRIES - 1;
        dropped = self->entries[i];
    }
    else {
        i = self->nentries++;
    }
    memmove(&self->entries[1], &self->entries[0], sizeof(Entry *) * (size_t)i);
    self->entries[0] = e;
    if (dropped != NULL) entry_decref(dropped);   /* after the list is consistent: this may run Python code */
    Py_RETURN_NONE;
}

static void
dispatcher_drop_all(DispatcherObject *self)
{
    Entry *old[MAX_ENTRIES];
    int n = self->nentries;
    memcpy(old, self->entries, sizeof(Entry *) * (size_t)n);
    self->nentries = 0;
    for (int i = 0; i < n; i++) entry_decref(old[i]);
}

static PyObject *
dispatcher_clear_entries(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    dispatcher_drop_all((DispatcherObject *)self);
    Py_RETURN_NONE;
}

static PyObject *
dispatcher_entries(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLong(((DispatcherObject *)self)->nentries);
}

static PyObject *
dispatcher_dispatch_miss(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)args;
    (void)kwargs;
    PyErr_Format(PyExc_NotImplementedError, "%s defines no _dispatch_miss: no registered entry matches these "
                 "arguments", Py_TYPE(self)->tp_name);
    return NULL;
}

/* tp_call: the tuple-and-dict form of a call, turned into the vectorcall form. */
static PyObject *
dispatcher_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    PyObject *const *items = ((PyTupleObject *)args)->ob_item;
    if (kwargs == NULL || PyDict_GET_SIZE(kwargs) == 0) return dispatcher_vectorcall(self, items, (size_t)nargs, NULL);
    Py_ssize_t nkw = PyDict_GET_SIZE(kwargs), pos = 0, i = 0;
    PyObject **stack = PyMem_Malloc(sizeof(PyObject *) * (size_t)(nargs + nkw));
    PyObject *kwnames = PyTuple_New(nkw);
    PyObject *key, *value, *result = NULL;
    if (stack == NULL || kwnames == NULL) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    memcpy(stack, items, sizeof(PyObject *) * (size_t)nargs);
    while (PyDict_Next(kwargs, &pos, &key, &value)) {   /* borrowed: kwargs keeps them alive */
        Py_INCREF(key);
        PyTuple_SET_ITEM(kwnames, i, key);
        stack[nargs + i] = value;
        i++;
    }
    result = dispatcher_vectorcall(self, stack, (size_t)nargs, kwnames);
done:
    PyMem_Free(stack);
    Py_XDECREF(kwnames);
    return result;
}

/* Before Python 3.12 a mutable heap subclass inherits neither Py_TPFLAGS_HAVE_VECTORCALL nor tp_vectorcall_offset,
   so calling it would go through tp_call and an argument tuple. A subclass that keeps our __call__ gets both back
   here (what 3.12 does by itself); the vectorcall pointer sits at the same offset in every subclass's instances. */
static PyObject *
dispatcher_init_subclass(PyObject *cls, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)) {
        PyErr_SetString(PyExc_TypeError, "Dispatcher.__init_subclass__() takes no keyword arguments");
        return NULL;
    }
    if (PyType_Check(cls)) {
        PyTypeObject *type = (PyTypeObject *)cls;
        if (type->tp_call == dispatcher_call) {
            type->tp_vectorcall_offset = offsetof(DispatcherObject, vectorcall);
            type->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
        }
    }
    Py_RETURN_NONE;
}

/* ---- the type ----------------------------------------------------------------------------------------------- */

static PyObject *
dispatcher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    (void)args;
    (void)kwargs;
    DispatcherObject *self = (DispatcherObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = dispatcher_vectorcall;
    self->nentries = 0;
    return (PyObject *)self;
}

static int
dispatcher_traverse(PyObject *self_, visitproc visit, void *arg)
{
    DispatcherObject *self = (DispatcherObject *)self_;
    for (int i = 0; i < self->nentries; i++) {
        Entry *e = self->entries[i];
        Py_VISIT(e->constants);
        Py_VISIT(e->keepalive);
        Py_VISIT(e->builder);
        Py_VISIT(e->on_check);
    }
    return 0;
}

static int
dispatcher_tp_clear(PyObject *self)
{
    dispatcher_drop_all((DispatcherObject *)self);
    return 0;
}

static void
dispatcher_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    dispatcher_drop_all((DispatcherObject *)self);
    Py_TYPE(self)->tp_free(self);
}

static PyMethodDef dispatcher_methods[] = {
    {"_register", (PyCFunction)(void (*)(void))dispatcher_register, METH_VARARGS | METH_KEYWORDS,
     "_register(address, arg_specs, out_specs, constants, keepalive=None, builder=None, release_gil=False, *,\n"
     "          checks=0, on_check=None)\n--\n\n"
     "Register a compiled entry `int entry(void **)` at `address` for calls whose positional arguments match\n"
     "arg_specs ((\"array\", type_num, shape), (\"float\",), (\"int\",), (\"int\", lo, hi) or (\"bool\",) each).\n"
     "out_specs: a (type_num, shape) per output. constants: arrays passed by pointer after the inputs.\n"
     "keepalive: kept alive while the entry is registered. builder: called with the tuple of outputs to make the\n"
     "result (None: the single output, or the tuple). release_gil: run the entry without the GIL. checks: the\n"
     "program's checks (a flag and a payload each, after the outputs); on_check(their values) raises when a flag\n"
     "is set. Replaces an entry taking the same arguments; beyond 16 entries the least recently used is dropped."},
    {"_clear", dispatcher_clear_entries, METH_NOARGS, "_clear()\n--\n\nDrop every registered entry."},
    {"_entries", dispatcher_entries, METH_NOARGS, "_entries()\n--\n\nThe number of registered entries."},
    {"_dispatch_miss", (PyCFunction)(void (*)(void))dispatcher_dispatch_miss, METH_VARARGS | METH_KEYWORDS,
     "Called with the call's arguments when no entry matches; subclasses override it."},
    {"__init_subclass__", (PyCFunction)(void (*)(void))dispatcher_init_subclass,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS, "Keeps the fast call (vectorcall) on subclasses."},
    {NULL, NULL, 0, NULL}
};

static PyTypeObject DispatcherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numfn.runtime._numfn_dispatch.Dispatcher",
    .tp_doc = PyDoc_STR("Dispatcher()\n--\n\nA callable that runs registered native entries when the positional "
                        "arguments match one, and calls self._dispatch_miss(*args, **kwargs) otherwise."),
    .tp_basicsize = sizeof(DispatcherObject),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = dispatcher_new,
    .tp_dealloc = dispatcher_dealloc,
    .tp_traverse = dispatcher_traverse,
    .tp_clear = dispatcher_tp_clear,
    .tp_call = dispatcher_call,
    .tp_vectorcall_offset = offsetof(DispatcherObject, vectorcall),
    .tp_methods = dispatcher_methods,
};

static PyObject *
module_use_pool(PyObject *module, PyObject *capsule)
{
    (void)module;
    if (capsule == Py_None) {
        pool_slot = NULL;
        Py_RETURN_NONE;
    }
    void *p = PyCapsule_GetPointer(capsule, "numfn.runtime._numfn_native.pool_slot");
    if (p == NULL) return NULL;
    pool_slot = (void *volatile *)p;
    Py_RETURN_NONE;
}

static PyObject *
module_keep_memory(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_ssize_t limit = PyNumber_AsSsize_t(arg, PyExc_OverflowError);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    if (limit < 0) {
        PyErr_SetString(PyExc_ValueError, "_keep_memory: the limit must be a byte count >= 0");
        return NULL;
    }
    if (keep_handler == NULL) {
        keep_handler = PyCapsule_New(&keep_handler_struct, "mem_handler", NULL);
        if (keep_handler == NULL) return NULL;
#if defined(__GLIBC__)
        pthread_atfork(NULL, NULL, keep_after_fork_child);
#endif
    }
    KEEP_LOCK();
    keep_limit = (size_t)limit;
    keep_evict_locked(0);
    KEEP_UNLOCK();
    return Py_BuildValue("(nn)", (Py_ssize_t)nkept, (Py_ssize_t)kept_bytes);
}

static PyObject *
module_empty(PyObject *self, PyObject *args)
{
    (void)self;
    PyArray_Dims shape = {NULL, 0};
    PyArray_Descr *descr = NULL;
    if (!PyArg_ParseTuple(args, "O&O&:_empty", PyArray_IntpConverter, &shape, PyArray_DescrConverter, &descr)) {
        Py_XDECREF(descr);
        PyDimMem_FREE(shape.ptr);
        return NULL;
    }
    PyObject *arr = new_array(descr, shape.len, shape.ptr, nbytes_of(descr, shape.len, shape.ptr));
    PyDimMem_FREE(shape.ptr);
    return arr;
}

static PyMethodDef module_methods[] = {
    {"_empty", module_empty, METH_VARARGS,
     "_empty(shape, dtype)\n--\n\nnumpy.empty(shape, dtype), from kept memory when large (the outputs of calls that "
     "take the Python path)."},
    {"_keep_memory", module_keep_memory, METH_O,
     "_keep_memory(limit)\n--\n\nKeep up to `limit` bytes of freed large outputs for the next ones (0: keep none, "
     "and free what is kept). Returns (blocks kept, bytes kept)."},
    {"_use_pool", module_use_pool, METH_O,
     "_use_pool(capsule)\n--\n\nRead the thread pool's slot from `numfn.runtime._numfn_native.pool_slot` (None: no "
     "pool, programs run serially)."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef dispatch_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "numfn.runtime._numfn_dispatch",
    .m_doc = "numfn's fast call path: the Dispatcher base type.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__numfn_dispatch(void)
{
    import_array();
    init_canonical_types();
    if (str_out == NULL) {
        str_out = PyUnicode_InternFromString("out");
        if (str_out == NULL) return NULL;
    }
    if (str_dispatch_miss == NULL) {
        str_dispatch_miss = PyUnicode_InternFromString("_dispatch_miss");
        if (str_dispatch_miss == NULL) return NULL;
    }
    if (PyType_Ready(&DispatcherType) < 0) return NULL;
    PyObject *m = PyModule_Create(&dispatch_module);
    if (m == NULL) return NULL;
#ifdef Py_GIL_DISABLED
    PyUnstable_Module_SetGIL(m, Py_MOD_GIL_USED);
#endif
    Py_INCREF(&DispatcherType);
    if (PyModule_AddObject(m, "Dispatcher", (PyObject *)&DispatcherType) < 0) {
        Py_DECREF(&DispatcherType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "MAX_ENTRIES", MAX_ENTRIES) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
