"""Extern calls: native routines numfn does not generate (BLAS and LAPACK today), called from compiled programs.

At the tensor level an extern call is one EXTERN node whose value is the tuple of the routine's results, and one
RESULT node per result that a graph uses (`RESULT(extern, i)` is result i). The EXTERN's argument, an `ExternCall`,
says everything the call needs: the routine, the dtype, the batch shape (the routine runs once per batch element:
stacked inputs, vmap), its integer parameters, and its results: shapes, dtypes, which input a result starts from
(LAPACK overwrites its inputs: such an "in-out" result is first filled with that input's value, by a kernel that
computes the input right into the result's buffer), and which results are scratch shared by the whole batch
(LAPACK's workspaces, planned like any other intermediate buffer).

The scheduler (numfn/schedule.py) gives every extern call its own ExecItem: fusion stops at its boundary. Its
inputs are realized buffers, passed with their strides where the routine takes them (a transposed operand of a
matrix product is passed as it is, with the transpose flag); its results are buffers planned like any other (an
output written by the routine is the caller's output array itself).

Generated code reaches the routines through a table of function pointers: the entry point's buffer table holds,
after the pointer constants, the address of the program's "externs table", whose slots hold the routines'
addresses in the order the program's manifest lists their symbols. numfn fills it when it loads a program, so
compiled code never depends on the dynamic linker, and cached code loads in any process. Routines come from two
libraries (a Routine's `library`): "blas" (BLAS/LAPACK, Fortran names resolved by dlsym on the library that
numfn.runtime.blas finds) and "native" (numfn's own routines, such as the sorts of numfn.numpy.sorting: C functions
named numfn_*, compiled into numfn's native extension, whose addresses the extension lists in its routine table).
Every argument is passed by reference in both.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from collections.abc import Callable

import numpy as np

from numfn.codegen.opt import VECTOR_BYTES
from numfn.dtype import DType, dtypes
from numfn.ir.uop import MOVEMENT, Ops, UOp


@dataclass(frozen=True)
class ExternCall:
    """What an EXTERN node computes: `routine` (a key of ROUTINES) in `dtype`, once per element of `batch`, with
    `params` (the routine's integers, characters and constants). `results`: (shape, dtype) per result, shapes
    including the batch axes except for `shared` results (scratch all batch elements reuse); `inout[i]`: the input
    whose value result i starts from, or -1. `library`: the identity of the library called (its version decides
    LAPACK's workspace sizes; the build of numfn's native extension for its own routines: part of the cache key
    through the graph); `int_bits`: its integer width."""
    routine: str
    dtype: DType
    batch: tuple[int, ...]
    params: tuple
    results: tuple[tuple[tuple[int, ...], DType], ...]
    inout: tuple[int, ...]
    shared: tuple[bool, ...]
    library: str
    int_bits: int

    @property
    def batch_size(self) -> int:
        return math.prod(self.batch)

    def batched(self, size: int) -> ExternCall:
        """This call with a leading batch axis of `size` (vmap's batching rule). A routine over rows (`Routine.rows`)
        takes the batch as more rows: one call, every result one axis longer."""
        results = tuple((shape if shared else (size,) + shape, dt)
                        for (shape, dt), shared in zip(self.results, self.shared))
        batch = self.batch if ROUTINES[self.routine].rows else (size,) + self.batch
        return ExternCall(self.routine, self.dtype, batch, self.params, results, self.inout, self.shared,
                          self.library, self.int_bits)

    @property
    def int_dtype(self) -> DType:
        return dtypes.int64 if self.int_bits == 64 else dtypes.int32

    def __repr__(self) -> str:
        batch = f" batch={self.batch}" if self.batch else ""
        return f"{self.routine}[{self.dtype.name}]{batch} params={self.params}"


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


# ---------------------------------------------------------------------------------------------------------------
# strided views: what a routine is handed for an input

def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def strided_view(u: UOp, is_base: Callable[[UOp], bool]) -> tuple[UOp, int, tuple[int, ...]] | None:
    """`u` as (base, offset, strides) in elements of the base's row-major buffer, when u is a chain of views down
    to a node `is_base` accepts (a buffer or a realized value) that needs no copy; else None. Also None where
    the chain stops at another node: the caller realizes that node first."""
    chain: list[UOp] = []
    while not is_base(u):
        if u.op not in MOVEMENT or u.op is Ops.PAD: return None
        chain.append(u)
        u = u.src[0]
    base, offset, strides = u, 0, contiguous_strides(_shape(u))
    for v in reversed(chain):
        src_shape = _shape(v.src[0])
        if v.op is Ops.PERMUTE: strides = tuple(strides[i] for i in v.arg)
        elif v.op is Ops.EXPAND: strides = tuple(0 if o == 1 and n != 1 else s for o, n, s in zip(src_shape, v.arg,
                                                                                                  strides))
        elif v.op is Ops.SHRINK:
            offset += sum(b * s for (b, _), s in zip(v.arg, strides))
        elif v.op is Ops.FLIP:
            flipped = list(strides)
            for a in v.arg:
                offset += (src_shape[a] - 1) * flipped[a]
                flipped[a] = -flipped[a]
            strides = tuple(flipped)
        elif v.op is Ops.RESHAPE:
            reshaped = _reshape_strides(src_shape, strides, v.arg)
            if reshaped is None: return None
            strides = reshaped
    return base, offset, strides


def _reshape_strides(old: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides of a reshape that needs no copy (each run of axes it merges is evenly strided), else None."""
    if math.prod(new) == 0: return contiguous_strides(new)
    from numfn.codegen.lower import _reshape_groups
    out = [0] * len(new)
    for gnew, gold in _reshape_groups(new, old):
        axes = [a for a in gold if old[a] != 1]
        for a, b in zip(axes, axes[1:]):
            if strides[a] != strides[b] * old[b]: return None
        step = strides[axes[-1]] if axes else 0
        for a in reversed(gnew):
            out[a] = step
            step *= new[a]
    return tuple(out)


def matrix_layout(rows: int, cols: int, row_stride: int, col_stride: int, int_max: int) -> tuple[str, int] | None:
    """How BLAS reads a matrix stored with these strides as the transpose of a column-major matrix: ('N', ld) when
    its rows are contiguous (row-major: the column-major matrix is its transpose), ('T', ld) when its columns are
    (column-major: BLAS transposes it back); None when neither (or a leading dimension BLAS refuses)."""
    if cols == 1: col_stride = 1
    if rows == 1: row_stride = max(cols, 1)
    if col_stride == 1 and max(cols, 1) <= row_stride <= int_max: return "N", row_stride
    if row_stride == 1 and max(rows, 1) <= col_stride <= int_max: return "T", col_stride
    return None


def _layout(rows: int, cols: int, row_stride: int, col_stride: int, int_max: int) -> tuple[str, int]:
    """matrix_layout of an operand the routine accepted (so it has one)."""
    layout = matrix_layout(rows, cols, row_stride, col_stride, int_max)
    assert layout is not None
    return layout


# ---------------------------------------------------------------------------------------------------------------
# routines: their symbols and arguments

@dataclass(frozen=True)
class Operand:
    """A buffer as a routine sees it: program parameter `param`, offset and strides (elements) over its shape."""
    param: int
    offset: int
    strides: tuple[int, ...]


@dataclass(frozen=True)
class Ptr:
    """A pointer argument: parameter `param` at `offset` + the batch index's components times `batch_strides`."""
    param: int
    offset: int
    batch_strides: tuple[int, ...]


@dataclass(frozen=True)
class Int:
    """An integer argument of the library's width, passed by reference (Fortran)."""
    value: int


@dataclass(frozen=True)
class Char:
    """A one-character argument, by reference; its hidden length (1) follows the other arguments."""
    value: str


@dataclass(frozen=True)
class Real:
    """A floating-point argument of the call's dtype, by reference."""
    value: float


@dataclass(frozen=True)
class Call:
    """One call of `symbol` (an index into the program's externs table) with `args`."""
    symbol: int
    args: tuple


@dataclass(frozen=True)
class Routine:
    """An extern routine: the library functions it calls (`names(call)`: Fortran names for BLAS/LAPACK, symbols of
    numfn's native extension for `library` "native"), whether input j may be passed with given core strides
    (`accepts`), the argument lists (`calls`) and its operation count (`flops`). `rows`: the routine works on any
    number of independent rows (the leading core axes of its operands and results), so vmap's batch is more rows
    of one call rather than a loop of calls."""
    names: Callable[[ExternCall], tuple[str, ...]]
    calls: Callable
    flops: Callable[[ExternCall], int]
    accepts: Callable = lambda call, j, shape, strides: strides == contiguous_strides(shape)
    library: str = "blas"
    rows: bool = False


def _prefix(call: ExternCall) -> str:
    return {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}[call.dtype.name]


def _element_strides(call: ExternCall, shape, strides) -> tuple[int, ...] | None:
    """An operand's strides in elements of the call's dtype. A complex operand reaches the routine as its memory
    (codegen/complex.py: a real array with a trailing axis of the two parts), whose strides count real lanes: its
    complex strides are half of them, where the parts are adjacent and every element starts at an even lane."""
    if not call.dtype.is_complex: return tuple(strides)
    if shape[-1] != 2 or strides[-1] != 1 or any(s % 2 for s in strides[:-1]): return None
    return tuple(s // 2 for s in strides[:-1])


def _ptr(op: Operand, nbatch: int, shared: bool = False) -> Ptr:
    return Ptr(op.param, op.offset, (0,) * nbatch if shared else op.strides[:nbatch])


def _gemm_accepts(call: ExternCall, j: int, shape, strides) -> bool:
    m, n, k = call.params
    rows, cols = (m, k) if j == 0 else (k, n)
    strides = _element_strides(call, shape, strides)
    return strides is not None and matrix_layout(rows, cols, strides[0], strides[1],
                                                 2 ** (call.int_bits - 1) - 1) is not None


def _gemm_calls(call: ExternCall, ins: list[Operand], outs: list[Operand]) -> list[Call]:
    # row-major C = A B is column-major C^T = B^T A^T: B is the first operand, A the second
    m, n, k = call.params
    nb, imax = len(call.batch), 2 ** (call.int_bits - 1) - 1
    a, b = ins
    sa = _element_strides(call, (m, k, 2), a.strides[nb:]) if call.dtype.is_complex else a.strides[nb:]
    sb = _element_strides(call, (k, n, 2), b.strides[nb:]) if call.dtype.is_complex else b.strides[nb:]
    assert sa is not None and sb is not None   # (_gemm_accepts took them)
    ta, lda = _layout(m, k, sa[0], sa[1], imax)
    tb, ldb = _layout(k, n, sb[0], sb[1], imax)
    return [Call(0, (Char(tb), Char(ta), Int(n), Int(m), Int(k), Real(1.0), _ptr(b, nb), Int(ldb), _ptr(a, nb),
                     Int(lda), Real(0.0), _ptr(outs[0], nb), Int(max(1, n))))]


def _syrk_accepts(call: ExternCall, j: int, shape, strides) -> bool:
    rows, cols = shape
    return matrix_layout(rows, cols, strides[0], strides[1], 2 ** (call.int_bits - 1) - 1) is not None


def _syrk_calls(call: ExternCall, ins: list[Operand], outs: list[Operand]) -> list[Call]:
    # row-major C = X X^T; BLAS sees X^T (row-major X) or X (column-major X) and writes the lower triangle of
    # column-major C, which is the upper triangle of the row-major result
    n, k = call.params
    nb, imax = len(call.batch), 2 ** (call.int_bits - 1) - 1
    (x,) = ins
    layout, ld = _layout(n, k, x.strides[nb], x.strides[nb + 1], imax)
    return [Call(0, (Char("L"), Char("T" if layout == "N" else "N"), Int(n), Int(k), Real(1.0), _ptr(x, nb), Int(ld),
                     Real(0.0), _ptr(outs[0], nb), Int(max(1, n))))]


def _lapack(name: str, args: Callable) -> Routine:
    """A LAPACK routine on column-major matrices: its buffers hold the transposes, row-major (see numfn.numpy.linalg).
    `args(call, P)` lists the arguments, P(i) being the pointer to result i (or input -1-i)."""
    def calls(call: ExternCall, ins: list[Operand], outs: list[Operand]) -> list[Call]:
        nb = len(call.batch)

        def P(i: int) -> Ptr:
            return _ptr(ins[-1 - i], nb) if i < 0 else _ptr(outs[i], nb, call.shared[i])
        return [Call(0, tuple(args(call, P)))]
    return Routine(lambda call: (_prefix(call) + name,), calls, lambda call: call.batch_size * _cube(call))


def _cube(call: ExternCall) -> int:
    dims = [p for p in call.params if isinstance(p, int) and not isinstance(p, bool)]
    return max(1, max(dims[:2], default=1)) ** 3


def _one(n: int) -> int:
    return max(1, n)


# numfn's sorts (numfn/runtime/csrc/sort.c), params (n, scratch per row): rows of n elements, any number of leading
# axes of rows. sort: results data (..., n) <- input 0, scratch; argsort: input keys, results index, scratch.
# select (below): np.partition of such rows around given positions.
_SORT_SUFFIX = {dtypes.bool: "u8", dtypes.uint8: "u8", dtypes.int8: "i8", dtypes.uint16: "u16", dtypes.int16: "i16",
                dtypes.float16: "f16", dtypes.uint32: "u32", dtypes.int32: "i32", dtypes.float32: "f32",
                dtypes.uint64: "u64", dtypes.int64: "i64", dtypes.float64: "f64"}


def _sort_routine(kind: str) -> Routine:
    def names(call: ExternCall) -> tuple[str, ...]:
        return (f"{NATIVE_PREFIX}{kind}_{_SORT_SUFFIX[call.dtype]}",)

    def calls(call: ExternCall, ins: list[Operand], outs: list[Operand]) -> list[Call]:
        n, room = call.params
        rows = math.prod(call.results[0][0][:-1])
        nb = len(call.batch)
        data = [_ptr(outs[0], nb)] if kind == "sort" else [_ptr(ins[0], nb), _ptr(outs[0], nb)]
        return [Call(0, (*data, _ptr(outs[1], nb), Int(rows), Int(n), Int(room)))]

    def flops(call: ExternCall) -> int:
        n = call.params[0]
        return call.batch_size * math.prod(call.results[0][0]) * max(1, n.bit_length())
    return Routine(names, calls, flops, library="native", rows=True)


def _select_calls(call: ExternCall, ins: list[Operand], outs: list[Operand]) -> list[Call]:
    n, nkth = call.params
    rows = math.prod(call.results[0][0][:-1])
    nb = len(call.batch)
    return [Call(0, (_ptr(outs[0], nb), _ptr(ins[1], nb), Int(rows), Int(n), Int(nkth)))]


ROUTINES: dict[str, Routine] = {
    "sort": _sort_routine("sort"),
    "argsort": _sort_routine("argsort"),
    # np.partition, params (n, nkth): results data (..., n) <- input 0; input 1: the kth positions (nkth,), ascending
    "select": Routine(lambda call: (f"{NATIVE_PREFIX}select_{_SORT_SUFFIX[call.dtype]}",), _select_calls,
                      lambda call: 2 * call.batch_size * math.prod(call.results[0][0]), library="native", rows=True),
    "gemm": Routine(lambda call: (_prefix(call) + "gemm",), _gemm_calls,
                    lambda call: (8 if call.dtype.is_complex else 2) * call.batch_size * math.prod(call.params),
                    _gemm_accepts),
    # X X^T (params n, k): one triangle of the symmetric result (the upper, row-major), half GEMM's work
    "syrk": Routine(lambda call: (_prefix(call) + "syrk",), _syrk_calls,
                    lambda call: call.batch_size * call.params[0] ** 2 * call.params[1], _syrk_accepts),
    # A X = B: results lu (n, n) <- input 0, x (nrhs, n) <- input 1, ipiv (n,), info
    "gesv": _lapack("gesv", lambda c, P: (Int(c.params[0]), Int(c.params[1]), P(0), Int(_one(c.params[0])), P(2),
                                          P(1), Int(_one(c.params[0])), P(3))),
    # LU: results lu (n, n) <- input 0, ipiv (n,), info
    "getrf": _lapack("getrf", lambda c, P: (Int(c.params[0]), Int(c.params[0]), P(0), Int(_one(c.params[0])), P(1),
                                            P(2))),
    # Cholesky, params (n, uplo): results c (n, n) <- input 0, info
    "potrf": _lapack("potrf", lambda c, P: (Char(c.params[1]), Int(c.params[0]), P(0), Int(_one(c.params[0])), P(1))),
    # symmetric eigensolver, params (n, jobz, lwork, liwork): results v (n, n) <- input 0, w (n,), work, iwork, info
    "syevd": _lapack("syevd", lambda c, P: (Char(c.params[1]), Char("L"), Int(c.params[0]), P(0),
                                            Int(_one(c.params[0])), P(1), P(2), Int(c.params[2]), P(3),
                                            Int(c.params[3]), P(4))),
    # SVD, params (m, n, jobz, ldu, ldvt, lwork): results a (n, m) <- input 0, s (k,), u, vt, work, iwork, info
    "gesdd": _lapack("gesdd", lambda c, P: (Char(c.params[2]), Int(c.params[0]), Int(c.params[1]), P(0),
                                            Int(_one(c.params[0])), P(1), P(2), Int(c.params[3]), P(3),
                                            Int(c.params[4]), P(4), Int(c.params[5]), P(5), P(6))),
    # QR, params (m, n, lwork): results qr (n, m) <- input 0, tau (k,), work, info
    "geqrf": _lapack("geqrf", lambda c, P: (Int(c.params[0]), Int(c.params[1]), P(0), Int(_one(c.params[0])), P(1),
                                            P(2), Int(c.params[2]), P(3))),
    # Q from QR's reflectors, params (m, q, k, lwork): inputs reflectors (q, m), tau (k,); results q (q, m) <- input
    # 0, work, info
    "orgqr": _lapack("orgqr", lambda c, P: (Int(c.params[0]), Int(c.params[1]), Int(c.params[2]), P(0),
                                            Int(_one(c.params[0])), P(-2), P(1), Int(c.params[3]), P(2))),
    # least squares, params (m, n, nrhs, rcond, lwork, liwork): inputs a (n, m), b (nrhs, max(m, n)); results
    # a (n, m) <- input 0, x (nrhs, max(m, n)) <- input 1, s (k,), rank, work, iwork, info
    "gelsd": _lapack("gelsd", lambda c, P: (Int(c.params[0]), Int(c.params[1]), Int(c.params[2]), P(0),
                                            Int(_one(c.params[0])), P(1), Int(_one(max(c.params[0], c.params[1]))),
                                            P(2), Real(c.params[3]), P(3), P(4), Int(c.params[4]), P(5), P(6))),
}


def workspace(routine: str, dtype: DType, args: list) -> tuple[int, int]:
    """LAPACK's workspace sizes (lwork, liwork) for a call: the routine asked with lwork = -1 (at trace time, so
    the workspace is a buffer the scheduler plans). `args` are the routine's arguments with the arrays as None (they
    are given dummies) and the sizes to query as -1."""
    from numfn.runtime import blas
    work = np.zeros(2, dtype.np)
    iwork = np.zeros(2, blas.int_dtype())
    dummies = [np.zeros(2, dtype.np), iwork]
    filled = []
    for a in args:
        if a == "work": filled.append(work)
        elif a == "iwork": filled.append(iwork)
        elif a is None: filled.append(dummies[0])
        elif a == "int": filled.append(np.zeros(2, blas.int_dtype()))
        else: filled.append(a)
    blas.call_fortran(("s" if dtype is dtypes.float32 else "d") + routine, filled,
                      chars=sum(isinstance(a, str) and len(a) == 1 for a in args))
    return max(1, int(work[0])), max(1, int(iwork[0]))


# ---------------------------------------------------------------------------------------------------------------
# the scheduled item and its program

@dataclass(frozen=True)
class ExternKernel:
    """An extern call in a schedule: the EXTERN node, its results' buffers, and per input the buffer it is read
    from with offset and strides (None for in-out inputs: the routine works in the result's buffer)."""
    name: str
    node: UOp
    results: tuple[UOp, ...]
    operands: tuple[tuple[UOp, int, tuple[int, ...]] | None, ...]
    shape: tuple[int, ...] = ()

    @property
    def call(self) -> ExternCall:
        return self.node.arg

    @property
    def outputs(self) -> tuple[UOp, ...]:
        return tuple(dict.fromkeys(self.results))

    @property
    def inputs(self) -> tuple[UOp, ...]:
        from numfn.schedule import _CATEGORY_ORDER
        outs = set(self.outputs)
        found = {op[0] for op in self.operands if op is not None and op[0] not in outs}
        return tuple(sorted(found, key=lambda u: (_CATEGORY_ORDER[u.arg.category], u.arg.number)))

    @property
    def buffers(self) -> tuple[UOp, ...]:
        return self.outputs + self.inputs

    def symbols(self) -> tuple[str, ...]:
        """The library symbols this call uses."""
        routine = ROUTINES[self.call.routine]
        if routine.library == "native": return routine.names(self.call)
        from numfn.runtime import blas
        iface = blas.interface()
        assert iface is not None, "a program calling BLAS/LAPACK is only built where it was found"
        return tuple(iface.fortran(n) for n in routine.names(self.call))

    @property
    def flops(self) -> int:
        return ROUTINES[self.call.routine].flops(self.call)


@dataclass(frozen=True)
class ExternProgram:
    """An extern call ready to render: a function over the externs table and `params` (buffers, written first)
    that runs `calls` once per batch element (the flat batch index decomposes over `batch`)."""
    name: str
    params: tuple[UOp, ...]
    batch: tuple[int, ...]
    calls: tuple[Call, ...]
    dtype: DType
    int_bits: int
    written: int          # the first `written` params are written, the rest only read
    # True when the batch loop may be split across numfn's thread pool (see build_extern_program)
    parallel: bool | None = None
    externs: bool = True

    def __str__(self) -> str:
        return f"{self.name}({', '.join(repr(p.arg) for p in self.params)}) batch={self.batch}\n" + \
            "\n".join(f"  call externs[{c.symbol}]{c.args}" for c in self.calls)


def build_extern_program(kernel: ExternKernel, table: tuple[str, ...]) -> ExternProgram:
    """The renderable program of a scheduled extern call; `table` is the program's externs table (symbols)."""
    call = kernel.call
    params = kernel.buffers
    index = {p: i for i, p in enumerate(params)}
    outs = [Operand(index[b], 0, contiguous_strides(_shape(b))) for b in kernel.results]
    ins = []
    for j, op in enumerate(kernel.operands):
        if op is None: ins.append(outs[call.inout.index(j)])
        else: ins.append(Operand(index[op[0]], op[1], op[2]))
    routine = ROUTINES[call.routine]
    slots = [table.index(s) for s in kernel.symbols()]
    calls = tuple(Call(slots[c.symbol], c.args) for c in routine.calls(call, ins, outs))
    # a batch of small calls runs on numfn's threads, each call on one (BLAS does not thread calls this small):
    # no shared scratch (every element has its own buffers), and the whole batch worth waking the pool
    per_call = kernel.flops // max(call.batch_size, 1)
    parallel = call.batch_size >= 2 and not any(call.shared) and per_call <= PARALLEL_MAX_CALL_FLOPS and \
        kernel.flops >= PARALLEL_MIN_FLOPS
    return ExternProgram(kernel.name, params, call.batch, calls, call.dtype, call.int_bits, len(kernel.outputs),
                         True if parallel else None)


# batched extern calls run on numfn's thread pool when each call is at most this much work (BLAS keeps calls this
# small on one thread) and the whole batch at least this much
PARALLEL_MAX_CALL_FLOPS = 1 << 20
PARALLEL_MIN_FLOPS = 1 << 18


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
    others = [s for s in symbols if not s.startswith(NATIVE_PREFIX)]
    if others:
        from numfn.runtime import blas
        addresses.update(zip(others, blas.addresses(others)))
    array = np.array([addresses[s] for s in symbols], dtype=np.uint64)
    array.flags.writeable = False
    return array


def extern_table(symbols) -> np.ndarray:
    """The externs table of a program whose manifest lists `symbols`: their addresses, as an array the entry point
    gets by pointer (after the pointer constants)."""
    return _table_array(tuple(symbols))


__all__ = ["ExternCall", "extern", "ExternKernel", "ExternProgram", "build_extern_program", "extern_table",
           "strided_view", "matrix_layout", "ROUTINES", "workspace", "native_routines", "native_identity"]


# ---------------------------------------------------------------------------------------------------------------
# numfn's native routines

NATIVE_PREFIX = "numfn_"


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


def blas_product(a: UOp, b: UOp, batch: tuple[int, ...]) -> UOp | None:
    """a @ b as a GEMM call (a: (..., n, k), b: (..., k, m), the same float or complex dtype, batch axes
    broadcasting to `batch`), or None where generated code does it: small or integer products, or no BLAS. A
    complex multiply-add is four real ones (the thresholds count real ones)."""
    from numfn.runtime import blas
    dt = a.dtype
    n, k = _shape(a)[-2:]
    m = _shape(b)[-1]
    if dt not in (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128) or 0 in batch: return None
    narrow = m > 1 and m % (VECTOR_BYTES // dt.itemsize) != 0
    if n * m * k * (4 if dt.is_complex else 1) < (SMALL_GEMM_MACS if narrow else GEMM_MIN_MACS): return None
    iface = blas.interface()
    if iface is None or max(n, m, k) > iface.int_max: return None
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
    return extern("gemm", dt, batch, (n, m, k), [a, b], [((n, m), dt, -1, False)])[0]


def _is_transpose_of(b: UOp, a: UOp) -> bool:
    """Whether b is a's matrices transposed (the same memory read with the last two strides swapped)."""
    def view(u):
        return strided_view(u, lambda x: x.op not in MOVEMENT or x.op is Ops.PAD)
    va, vb = view(a), view(b)
    if va is None or vb is None or va[0] is not vb[0] or va[1] != vb[1]: return False
    sa, sb = va[2], vb[2]
    return _shape(a)[-2] == _shape(b)[-1] and sa[:-2] == sb[:-2] and (sa[-2], sa[-1]) == (sb[-1], sb[-2])


def _broadcast_to(u: UOp, shape: tuple[int, ...]) -> UOp:
    if u.shape == shape: return u
    u = u.reshape((1,) * (len(shape) - len(_shape(u))) + _shape(u))
    return u.expand(shape)
