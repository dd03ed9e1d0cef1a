"""Extern calls, the tracer's side: the constructors numfn's NumPy functions use, and the table of routine addresses.

An extern call calls a native routine numfn does not generate (BLAS and LAPACK, numfn's own sorts): one EXTERN node
whose argument, an ExternCall, says everything about the call (numfn/ir/extern.py, with the table of routines the
renderers print calls of). The scheduler gives every extern call its own step (numfn/schedule/externs.py): fusion
stops at its boundary, its inputs are realized buffers passed with their strides where the routine takes them, its
results are buffers planned like any other.

This module is what sits above the scheduler: `extern` (a new call's RESULT nodes, with the library's identity),
`workspace` (LAPACK's workspace sizes, asked at trace time), `blas_product` (a matrix product as a GEMM or SYRK
call, used by the tracer's matmul), and, at run time, `extern_table`. Generated code reaches the routines through a
table of function pointers: the entry point's buffer table holds, after the pointer constants, the address of the
program's "externs table", whose slots hold the routines' addresses in the order the program's manifest lists their
symbols. numfn fills it when it loads a program, so compiled code never depends on the dynamic linker, and cached
code loads in any process. Routines come from two libraries (a Routine's `library`): "blas" (BLAS/LAPACK, Fortran
names resolved by dlsym on the library that numfn.runtime.blas finds) and "native" (numfn's own routines, such as
the sorts of numfn.numpy.sorting: C functions named numfn_*, compiled into numfn's native extension, whose
addresses the extension lists in its routine table). Every argument is passed by reference in both.
"""
from __future__ import annotations

from functools import cache

import numpy as np

from numfn.dtype import DType, dtypes
from numfn.ir.extern import CALLBACK_PREFIX, NATIVE_PREFIX, ROUTINES, ExternCall
from numfn.ir.uop import MOVEMENT, Ops, UOp


def _shape(u: UOp) -> tuple[int, ...]:
    """A tensor-level node's shape (only loop-level nodes have none)."""
    assert u.shape is not None, u
    return u.shape


def extern(routine: str, dtype: DType, batch: tuple[int, ...], params: tuple, inputs: list[UOp],
           results: list[tuple[tuple[int, ...], DType, int, bool]]) -> list[UOp]:
    """The RESULT nodes of a new extern call. `inputs` have shape batch + their core shape; `results` are (core shape,
    dtype, in-out input or -1, shared) per result. The library is the routine's (numfn.runtime.blas's, or numfn's
    native extension)."""
    batch = tuple(batch)
    for u in inputs: assert _shape(u)[:len(batch)] == batch, (routine, u.shape, batch)
    if ROUTINES[routine].library == "native":
        identity, int_bits = native_identity(), 64
    else:
        from numfn.runtime import blas
        iface = blas.interface()
        assert iface is not None, "extern calls into BLAS/LAPACK are only made where it was found"
        identity, int_bits = iface.identity, iface.int_bits
    shapes = tuple(((shape if shared else batch + tuple(shape)), dt) for shape, dt, _, shared in results)
    call = ExternCall(routine, dtype, batch, tuple(params), shapes, tuple(r[2] for r in results),
                      tuple(r[3] for r in results), identity, int_bits)
    node = UOp(Ops.EXTERN, dtypes.void, tuple(inputs), call)
    return [UOp(Ops.RESULT, dt, (node,), i) for i, (_, dt) in enumerate(shapes)]


def workspace(routine: str, dtype: DType, args: list) -> tuple[int, int]:
    """LAPACK's workspace sizes (lwork, liwork) for a call: the routine asked with lwork = -1 (at trace time, so
    the workspace is a buffer the scheduler plans). `args` are the routine's arguments with the arrays as None (they
    are given dummies) and the sizes to query as -1."""
    lwork, liwork, _ = workspace_sizes(routine, dtype, args)
    return lwork, liwork


_PREFIXES = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}


def workspace_sizes(routine: str, dtype: DType, args: list) -> tuple[int, int, int]:
    """`workspace`'s sizes and the real workspace's (lrwork, "rwork" in `args`) of a complex routine."""
    from numfn.runtime import blas
    work = np.zeros(2, dtype.np)
    iwork = np.zeros(2, blas.int_dtype())
    rwork = np.zeros(2, np.float64)
    dummies = [np.zeros(2, dtype.np), iwork]
    filled = []
    for a in args:
        if a == "work": filled.append(work)
        elif a == "iwork": filled.append(iwork)
        elif a == "rwork": filled.append(rwork)
        elif a is None: filled.append(dummies[0])
        elif a == "int": filled.append(np.zeros(2, blas.int_dtype()))
        else: filled.append(a)
    blas.call_fortran(_PREFIXES[dtype.name] + routine, filled,
                      chars=sum(isinstance(a, str) and len(a) == 1 for a in args))
    return max(1, int(work[0].real)), max(1, int(iwork[0])), max(1, int(rwork[0]))


# ---------------------------------------------------------------------------------------------------------------
# the externs table

@cache
def _table_array(symbols: tuple[str, ...]) -> np.ndarray:
    # numfn's own routines are named numfn_* (no BLAS/LAPACK symbol is): from the native extension's table
    addresses = dict.fromkeys(symbols, 0)
    native = [s for s in symbols if s.startswith(NATIVE_PREFIX)]
    if native:
        table = native_routines() or {}   # (none without the extension: every routine is missing)
        missing = [s for s in native if s not in table]
        if missing: raise RuntimeError(f"this program calls numfn's native routines {missing}, which this build of "
                                       "its native extension does not have")
        for s in native: addresses[s] = table[s]
    for s in symbols:
        if s.startswith(CALLBACK_PREFIX):
            if s not in CALLBACK_ADDRESSES: raise RuntimeError(f"this program calls the Python callback {s}, which "
                                                               "was not made in this process (trace the function)")
            addresses[s] = CALLBACK_ADDRESSES[s]
    others = [s for s in symbols if not s.startswith((NATIVE_PREFIX, CALLBACK_PREFIX))]
    if others:
        from numfn.runtime import blas
        addresses.update(zip(others, blas.addresses(others)))
    array = np.array([addresses[s] for s in symbols], dtype=np.uint64)
    array.flags.writeable = False
    return array


# the addresses of Python callbacks (numfn/trace/callback.py), by symbol: filled while tracing, before any program
# calling one is loaded, and never changed (a symbol names one callback for the life of the process)
CALLBACK_ADDRESSES: dict[str, int] = {}


def extern_table(symbols) -> np.ndarray:
    """The externs table of a program whose manifest lists `symbols`: their addresses, as an array the entry point
    gets by pointer (after the pointer constants)."""
    return _table_array(tuple(symbols))


__all__ = ["extern", "workspace", "workspace_sizes", "blas_product", "extern_table", "native_routines",
           "native_identity", "CALLBACK_ADDRESSES"]


# ---------------------------------------------------------------------------------------------------------------
# numfn's native routines

def _native_module():
    from numfn.runtime import extensions
    return extensions.native


def native_routines() -> dict[str, int] | None:
    """The routines of numfn's native extension, {symbol: address}, or None where the extension is unavailable
    (numfn installed without a C compiler, or NUMFN_NO_NATIVE_EXT=1)."""
    module = _native_module()
    return None if module is None else _routine_table(module)


@cache
def _routine_table(module) -> dict[str, int]:
    return dict(module.routines())


@cache
def native_identity() -> str:
    """The build of numfn's native extension (a hash of its shared object): programs calling its routines depend on
    it, through the graph's ExternCall, so the cache key does too."""
    import hashlib
    module = _native_module()
    if module is None: return "unavailable"
    with open(module.__file__, "rb") as f:
        return "numfn-native " + hashlib.sha256(f.read()).hexdigest()[:16]


# ---------------------------------------------------------------------------------------------------------------
# matrix products

# Products with at least this many multiply-adds (m*n*k per matrix) call BLAS's GEMM; smaller ones stay generated
# code that fuses with what surrounds them (measured: benchmarks/bench_linalg.py, docs/performance.md). Generated
# code is as fast as BLAS below it where its register tile fills whole vectors; where the result's rows are not a
# multiple of a vector (an odd size, a few columns) the tile is narrow, and GEMM takes over from SMALL_GEMM_MACS.
GEMM_MIN_MACS = 64 * 64 * 64
SMALL_GEMM_MACS = 1 << 15
# A matrix times a vector (one side of the product of length 1) calls GEMV from this many multiply-adds (about
# 362 x 362). Measured against generated code on one and two threads (interleaved calls of A @ x, x @ A and a loop
# of A @ x): below about 256 x 256 the generated kernel is faster (it fuses, and a call costs a kernel boundary);
# from about 500 x 500 GEMV is as fast for A @ x and 10-30% faster for x @ A (whose generated kernel reduces across
# the matrix's rows); between, the two are within noise.
GEMV_MIN_MACS = 1 << 17


def blas_product(a: UOp, b: UOp, batch: tuple[int, ...]) -> UOp | None:
    """a @ b as a GEMM call (a: (..., n, k), b: (..., k, m), the same float or complex dtype, batch axes
    broadcasting to `batch`), or None where generated code does it: small or integer products, or no BLAS. A
    complex multiply-add is four real ones (the thresholds count real ones)."""
    from numfn.codegen.opt import VECTOR_BYTES
    from numfn.runtime import blas
    dt = a.dtype
    n, k = _shape(a)[-2:]
    m = _shape(b)[-1]
    if dt not in (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128) or 0 in batch: return None
    narrow = m > 1 and m % (VECTOR_BYTES // dt.itemsize) != 0
    vector = (n == 1) != (m == 1)
    least = GEMV_MIN_MACS if vector else SMALL_GEMM_MACS if narrow else GEMM_MIN_MACS
    if n * m * k * (4 if dt.is_complex else 1) < least: return None
    iface = blas.interface()
    if iface is None or max(n, m, k) > iface.int_max: return None
    if 1 in batch:
        # batch axes of length 1 (einsum's, a stack of one) are no loop of calls: the call is made without them,
        # so its result is the matrix itself and a caller that reshapes them away reads the call's buffer
        inner = tuple(d for d in batch if d != 1)
        product = blas_product(_broadcast_to(a, batch + (n, k)).reshape(inner + (n, k)),
                               _broadcast_to(b, batch + (k, m)).reshape(inner + (k, m)), inner)
        return None if product is None else product.reshape(batch + (n, m))
    a = _broadcast_to(a, batch + (n, k))
    b = _broadcast_to(b, batch + (k, m))
    # x @ x.T: a symmetric product, half the work (SYRK), then the other half mirrored
    if not dt.is_complex and _is_transpose_of(b, a):
        upper = extern("syrk", dt, batch, (n, k), [a], [((n, n), dt, -1, False)])[0]
        rows = UOp.iota(n).reshape((n, 1)).expand((n, n))
        cols = UOp.iota(n).reshape((1, n)).expand((n, n))
        keep = rows.alu(Ops.CMPLE, cols)
        shape = batch + (n, n)
        keep = keep.reshape((1,) * len(batch) + (n, n)).expand(shape)
        return keep.alu(Ops.WHERE, upper, upper.permute(tuple(range(len(batch))) + (len(batch) + 1, len(batch))))
    # a matrix times a vector: GEMV (OpenBLAS's GEMM of one row is 8x slower than NumPy's x @ A, which calls GEMV)
    routine = "gemv" if (n == 1) != (m == 1) else "gemm"
    return extern(routine, dt, batch, (n, m, k), [a, b], [((n, m), dt, -1, False)])[0]


def _is_transpose_of(b: UOp, a: UOp) -> bool:
    """Whether b is a's matrices transposed (the same memory read with the last two strides swapped)."""
    def is_base(x): return x.op not in MOVEMENT or x.op is Ops.PAD

    def base(u):
        while not is_base(u): u = u.src[0]
        return u
    if base(a) is not base(b): return False   # (most products: no need to load the scheduler's strided_view)
    from numfn.schedule.externs import strided_view

    def view(u):
        return strided_view(u, is_base)
    va, vb = view(a), view(b)
    if va is None or vb is None or va[0] is not vb[0] or va[1] != vb[1]: return False
    sa, sb = va[2], vb[2]
    return _shape(a)[-2] == _shape(b)[-1] and sa[:-2] == sb[:-2] and (sa[-2], sa[-1]) == (sb[-1], sb[-2])


def _broadcast_to(u: UOp, shape: tuple[int, ...]) -> UOp:
    if u.shape == shape: return u
    u = u.reshape((1,) * (len(shape) - len(_shape(u))) + _shape(u))
    return u.expand(shape)
