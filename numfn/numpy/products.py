"""Products: matmul, dot, outer, inner, vdot, tensordot, einsum, kron, cross.

Contractions are expressed through `matmul` after transposes and reshapes, as NumPy's tensordot does with dot: so
every contraction is one multiply-and-sum the scheduler fuses, and whatever matmul does for large products
(a BLAS call) applies to tensordot, inner and einsum alike.
"""
from __future__ import annotations

import math
import warnings
from typing import Any
from collections.abc import Sequence

import numpy as np

from numfn.args import as_dtype, normalize_axis, refuse
from numfn.dtype import result_type
from numfn.errors import unsupported
from numfn.trace.tensor import Tensor, broadcast_shapes, gather, matmul
from numfn.ir.uop import UOp
from numfn.numpy.ufuncs import multiply
from numfn.numpy._typing import ArrayLike, Casting, DTypeLike

T = Tensor.lift

__all__ = ['dot', 'matmul', 'outer', 'inner', 'vdot', 'tensordot', 'einsum', 'einsum_path', 'kron', 'cross']


def _strong(x) -> Tensor:
    """x as NumPy's asarray sees it: a Python scalar is a strong int64/float64/bool array, not a weak scalar."""
    return Tensor(T(x).uop)


def dot(a: ArrayLike, b: ArrayLike) -> Tensor:
    """NumPy's dot: products for scalars, matmul for 1-D and 2-D, and for N-D a sum over the last axis of `a`
    and the second-to-last of `b`."""
    # np.dot converts its operands with asarray: a Python scalar is a strong int64/float64 array, not weak
    a, b = _strong(a), _strong(b)
    if a.ndim == 0 or b.ndim == 0: return multiply(a, b)
    if b.ndim <= 2: return matmul(a, b)
    out = result_type(a.uop.dtype, b.uop.dtype)
    # a[..., k] . b[..., k, m] -> a.shape[:-1] + b.shape[:-2] + b.shape[-1:]
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} (dim {a.ndim - 1}) != "
                         f"{b.shape[-2]} (dim {b.ndim - 2})")
    k = a.shape[-1]
    bm = b.swapaxes(-1, -2)  # (..., m, k)
    ae = a.reshape(a.shape[:-1] + (1,) * (b.ndim - 1) + (k,))
    # sum() widens small integers; casting back wraps exactly like accumulating in `out` would
    return multiply(ae, bm).sum(axis=-1).astype(out)


def outer(a: ArrayLike, b: ArrayLike, out: None = None) -> Tensor:
    """outer(a, b)[i, j] = a.ravel()[i] * b.ravel()[j]."""
    refuse("outer", out=out)
    a, b = _strong(a).reshape(-1), _strong(b).reshape(-1)
    return multiply(a.reshape(-1, 1), b.reshape(1, -1))


def _contract(a: Tensor, b: Tensor, axes_a: Sequence[int], axes_b: Sequence[int]) -> Tensor:
    """Sum of products over axes_a of a paired with axes_b of b (equal sizes, non-negative, distinct): the other
    axes of a, then those of b. One matmul of a as (rows, k) and b as (k, columns)."""
    free_a = [i for i in range(a.ndim) if i not in axes_a]
    free_b = [i for i in range(b.ndim) if i not in axes_b]
    k = math.prod(a.shape[i] for i in axes_a)
    at = a.transpose(free_a + list(axes_a)).reshape(math.prod(a.shape[i] for i in free_a), k)
    bt = b.transpose(list(axes_b) + free_b).reshape(k, math.prod(b.shape[i] for i in free_b))
    return matmul(at, bt).reshape(tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b))


def tensordot(a: ArrayLike, b: ArrayLike, axes=2) -> Tensor:
    """Sum of products over the last `axes` axes of a and the first of b, or over the axes listed in a pair of
    sequences (or ints): the remaining axes of a, then of b."""
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        axes_a, axes_b = list(range(-int(axes), 0)), list(range(0, int(axes)))
    else:
        axes_a, axes_b = axes
    axes_a = list(axes_a) if isinstance(axes_a, (list, tuple)) else [axes_a]
    axes_b = list(axes_b) if isinstance(axes_b, (list, tuple)) else [axes_b]
    a, b = _strong(a), _strong(b)
    if len(axes_a) != len(axes_b): raise ValueError("shape-mismatch for sum")
    for i, (p, q) in enumerate(zip(axes_a, axes_b)):
        # NumPy indexes the shapes with the axes as given: out-of-range axes are its IndexError
        if not (-a.ndim <= p < a.ndim and -b.ndim <= q < b.ndim): raise IndexError("tuple index out of range")
        if a.shape[p] != b.shape[q]: raise ValueError("shape-mismatch for sum")
        axes_a[i], axes_b[i] = p % a.ndim, q % b.ndim
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise ValueError("duplicate axes are not allowed in tensordot")
    return _contract(a, b, axes_a, axes_b)


def inner(a: ArrayLike, b: ArrayLike, /) -> Tensor:
    """Sum of products over the last axes of a and b (a product for scalars): a.shape[:-1] + b.shape[:-1]."""
    a, b = _strong(a), _strong(b)
    if a.ndim == 0 or b.ndim == 0: return multiply(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} (dim {a.ndim - 1}) != "
                         f"{b.shape[-1]} (dim {b.ndim - 1})")
    return _contract(a, b, [a.ndim - 1], [b.ndim - 1])


def vdot(a: ArrayLike, b: ArrayLike, /) -> Tensor:
    """The dot product of the flattened arrays (of equal size), the first one conjugated."""
    a, b = _strong(a).reshape(-1), _strong(b)
    if b.size != a.size: raise ValueError(f"cannot reshape array of size {b.size} into shape ({a.size},)")
    if a.uop.dtype.is_complex: a = a.conj()   # vdot conjugates its first argument
    return matmul(a, b.reshape(-1))


def kron(a: ArrayLike, b: ArrayLike) -> Tensor:
    """The Kronecker product: blocks a[i, j, ...] * b, for any numbers of dimensions (the shorter shape is padded
    with leading ones)."""
    b = _strong(b)
    a = _strong(a)
    if a.ndim < b.ndim: a = a.reshape((1,) * (b.ndim - a.ndim) + a.shape)
    if a.ndim == 0 or b.ndim == 0: return multiply(a, b)
    nd = max(a.ndim, b.ndim)
    sa, sb = (1,) * (nd - a.ndim) + a.shape, (1,) * (nd - b.ndim) + b.shape
    # a on even axes, b on odd ones: (a0, 1, a1, 1, ...) * (1, b0, 1, b1, ...) -> (a0*b0, a1*b1, ...)
    ae = a.reshape(tuple(s for n in sa for s in (n, 1)))
    be = b.reshape(tuple(s for n in sb for s in (1, n)))
    return multiply(ae, be).reshape(tuple(x * y for x, y in zip(sa, sb)))


def cross(a: ArrayLike, b: ArrayLike, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Tensor:
    """The cross product of 3-vectors (or 2-vectors, taken with a zero third component; two 2-vectors give the
    scalar z component) along axisa of a and axisb of b, broadcasting the other axes; the result's vectors lie
    along axisc."""
    if axis is not None: axisa = axisb = axisc = axis
    a, b = _strong(a), _strong(b)
    if a.ndim < 1 or b.ndim < 1: raise ValueError("At least one array has zero dimension")
    axisa = normalize_axis(axisa, a.ndim, "axisa")
    axisb = normalize_axis(axisb, b.ndim, "axisb")
    a = a.transpose([i for i in range(a.ndim) if i != axisa] + [axisa])
    b = b.transpose([i for i in range(b.ndim) if i != axisb] + [axisb])
    na, nb = a.shape[-1], b.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if 2 in (na, nb):
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional vectors instead. "
                      "(deprecated in NumPy 2.0)", DeprecationWarning, stacklevel=2)
    shape = broadcast_shapes(a.shape[:-1], b.shape[:-1])
    if 3 in (na, nb): axisc = normalize_axis(axisc, len(shape) + 1, "axisc")
    dt = result_type(a.uop.dtype, b.uop.dtype)
    a, b = a.astype(dt), b.astype(dt)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2: return z.broadcast_to(shape).astype(dt)
    if na == 2:
        b2 = b[..., 2]
        x, y = a1 * b2, -(a0 * b2)
    elif nb == 2:
        a2 = a[..., 2]
        x, y = -(a2 * b1), a2 * b0
    else:
        a2, b2 = a[..., 2], b[..., 2]
        x, y = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    from numfn.numpy.manipulation import stack
    return stack([v.broadcast_to(shape).astype(dt) for v in (x, y, z)], axis=axisc)


# ---- einsum ---------------------------------------------------------------------------------------------------
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _parse_subscripts(subscripts: str, ndims: list[int]):
    """The labels of each operand and of the output as lists of letters and '...' entries, the ellipsis expanded
    into the broadcast labels '0', '1', ... (right-aligned across operands, as NumPy broadcasts them)."""
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        inputs, output = spec.split("->", 1)
        if "->" in output or "-" in output or ">" in output:
            raise ValueError("einstein sum subscript string does not contain proper '->' output specified")
    else:
        inputs, output = spec, None
    if "-" in inputs or ">" in inputs:
        raise ValueError("einstein sum subscript string does not contain proper '->' output specified")
    terms = inputs.split(",")
    if len(terms) > len(ndims):
        raise ValueError("fewer operands provided to einstein sum function than specified in the subscripts string")
    if len(terms) < len(ndims):
        raise ValueError("more operands provided to einstein sum function than specified in the subscripts string")
    parsed = [_parse_term(t, i) for i, t in enumerate(terms)]
    return parsed, (None if output is None else _parse_term(output, -1))


def _parse_term(term: str, index: int) -> list[str]:
    out, i = [], 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != "..." or "..." in out:
                where = f"in operand {index}" if index >= 0 else "in the output"
                raise ValueError(f"einstein sum subscripts string contains a '.' that is not part of an ellipsis "
                                 f"('...') {where}")
            out.append("...")
            i += 3
            continue
        if c not in _LETTERS:
            raise ValueError(f"invalid subscript '{c}' in einstein sum subscripts string, subscripts must be letters")
        out.append(c)
        i += 1
    return out


def _sublist_term(sub, index: int) -> list[str]:
    """The interleaved form's labels: ints 0..51 stand for letters, Ellipsis for '...'."""
    out = []
    for s in sub:
        if s is Ellipsis: out.append("..."); continue  # noqa: E702
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError("each subscript must be either an integer or an ellipsis")
        if not 0 <= s < 52: raise ValueError("subscript is not within the valid range [0, 52)")
        out.append(_LETTERS[int(s)])
    return out


def _expand_ellipses(terms: list[list[str]], output: list[str] | None, ndims: list[int]):
    """Replace '...' by broadcast labels: operand i's ellipsis covers ndim - (its letters) axes, right-aligned
    across operands; the implicit output is the ellipsis then the letters used once, in character order."""
    width = 0
    spans = []
    for i, (t, nd) in enumerate(zip(terms, ndims)):
        letters = sum(1 for s in t if s != "...")
        if "..." in t:
            if letters > nd:
                raise ValueError(f"einstein sum subscripts string contains too many subscripts for operand {i}")
            spans.append(nd - letters)
        else:
            if letters > nd:
                raise ValueError(f"einstein sum subscripts string contains too many subscripts for operand {i}")
            if letters < nd:
                raise ValueError("operand has more dimensions than subscripts given in einstein sum, but no '...' "
                                 "ellipsis provided to broadcast the extra dimensions.")
            spans.append(0)
        width = max(width, spans[-1])
    broadcast = [str(d) for d in range(width)]   # labels of the broadcast axes, outermost first
    expanded = []
    for t, n in zip(terms, spans):
        e = []
        for s in t:
            e.extend(broadcast[width - n:] if s == "..." else [s])
        expanded.append(e)
    if output is None:
        counts: dict[str, int] = {}
        for t in terms:
            for s in t:
                if s != "...": counts[s] = counts.get(s, 0) + 1
        out = broadcast + sorted(s for s, c in counts.items() if c == 1)
    else:
        out = []
        for s in output:
            if s == "...": out.extend(broadcast); continue  # noqa: E702
            if s in out:
                raise ValueError(f"einstein sum subscripts string includes output subscript '{s}' multiple times")
            if not any(s in t for t in terms):
                raise ValueError(f"einstein sum subscripts string included output subscript '{s}' which never "
                                 "appeared in an input")
            out.append(s)
        if "..." not in output and width > 0:
            raise ValueError("output has more dimensions than subscripts given in einstein sum, but no '...' "
                             "ellipsis provided to broadcast the extra dimensions.")
    return expanded, out


def _diagonal(t: Tensor, labels: list[str], index: int) -> tuple[Tensor, list[str]]:
    """An operand with repeated labels (`ii`) reduced to its diagonal: one axis per distinct label, read by a
    gather at (i, i) (ranges, so no clamping), nothing copied."""
    distinct = list(dict.fromkeys(labels))
    if len(distinct) == len(labels): return t, labels
    sizes: dict[str, int] = {}
    for lab, n in zip(labels, t.shape):
        if lab in sizes and sizes[lab] != n:
            raise ValueError(f"dimensions in operand {index} for collapsing index '{lab}' don't match "
                             f"({sizes[lab]} != {n})")
        sizes.setdefault(lab, n)
    shape = tuple(sizes[lab] for lab in distinct)
    ranges = {lab: Tensor(UOp.iota(sizes[lab]).reshape(tuple(sizes[lab] if m == lab else 1 for m in distinct)))
              for lab in distinct}
    return gather(t, [ranges[lab] for lab in labels]).reshape(shape), distinct


def _size(labels, sizes: dict[str, int]) -> int:
    """Elements of an operand with these labels."""
    return math.prod(sizes[x] for x in labels)


def _greedy_order(labels: list[list[str]], sizes: dict[str, int], output: list[str]) -> list[tuple[int, int]]:
    """A contraction order for 3+ operands, greedily: at each step the pair whose product is smallest compared with
    the pair itself (its size minus theirs), preferring pairs that share a label, then the cheaper product.
    Returned as opt_einsum/NumPy paths are: positions in the current list, the result appended at the end."""
    current = [set(t) for t in labels]
    path = []
    while len(current) > 1:
        best: tuple[tuple[int, int], int, int, set[str]] | None = None
        shared_any = any(current[i] & current[j] for i in range(len(current)) for j in range(i + 1, len(current)))
        for i in range(len(current)):
            for j in range(i + 1, len(current)):
                if shared_any and not (current[i] & current[j]): continue
                others = set(output).union(*(current[k] for k in range(len(current)) if k not in (i, j)))
                kept = (current[i] | current[j]) & others
                score = (_size(kept, sizes) - _size(current[i], sizes) - _size(current[j], sizes),
                         _size(current[i] | current[j], sizes))
                if best is None or score < best[0]: best = (score, i, j, kept)
        assert best is not None   # with 2+ operands some pair qualifies (one sharing a label, if any does)
        _, i, j, kept = best
        path.append((i, j))
        current = [c for k, c in enumerate(current) if k not in (i, j)] + [kept]
    return path


def _sum_out(t: Tensor, labels: list[str], keep: set[str]) -> tuple[Tensor, list[str]]:
    """Sum the axes whose labels are not in `keep` (in the operand's dtype: integers wrap as NumPy's einsum)."""
    axes = tuple(i for i, lab in enumerate(labels) if lab not in keep)
    if not axes: return t, labels
    return t.sum(axis=axes, dtype=t.uop.dtype), [lab for lab in labels if lab in keep]


def _pair(a: Tensor, la: list[str], b: Tensor, lb: list[str], keep: set[str], sizes: dict[str, int]):
    """Contract two operands over their shared labels not in `keep`, as one batched matmul: (batch, rows, k) @
    (batch, k, columns), the batch being their shared kept labels."""
    shared = [x for x in la if x in lb]
    batch = [x for x in shared if x in keep]
    summed = [x for x in shared if x not in keep]
    rows = [x for x in la if x not in shared]
    cols = [x for x in lb if x not in shared]
    def arrange(t, labels, order):   # noqa: E306 - broadcast size-1 axes to the label's size, then transpose
        t = t.broadcast_to(tuple(sizes[x] for x in labels)) if any(t.shape[i] != sizes[x]
                                                                    for i, x in enumerate(labels)) else t
        return t.transpose([labels.index(x) for x in order])
    nb, nr, ns, nc = (_size(labs, sizes) for labs in (batch, rows, summed, cols))
    at = arrange(a, la, batch + rows + summed).reshape(nb, nr, ns)
    bt = arrange(b, lb, batch + summed + cols).reshape(nb, ns, nc)
    res = matmul(at, bt).reshape(tuple(sizes[x] for x in batch + rows + cols))
    return res, batch + rows + cols


def einsum(*operands: Any, out: None = None, optimize=False, dtype: DTypeLike | None = None, order: str = "K",
           casting: Casting = "safe") -> Tensor:
    """Einstein summation: any subscripts NumPy takes ('ij,jk->ik', '...' broadcasting, repeated labels for
    diagonals and traces, the implicit output, the interleaved operand/sublist form), with NumPy's result dtype.
    Operands are contracted pairwise through matmul, in the order `optimize` gives as an explicit path
    (['einsum_path', (0, 1), ...]) or else a greedy order (as opt_einsum's greedy chooses) for 3+ operands."""
    refuse("einsum", out=out)
    if not operands: raise ValueError("must specify the einstein sum subscripts string and at least one operand")
    if isinstance(operands[0], str):
        subscripts, arrays = operands[0], [_strong(x) for x in operands[1:]]
        terms, output = _parse_subscripts(subscripts, [x.ndim for x in arrays])
    else:   # einsum(op0, sublist0, op1, sublist1, ..., [sublistout])
        pairs = list(operands)
        output = _sublist_term(pairs.pop(), -1) if len(pairs) % 2 else None
        arrays = [_strong(x) for x in pairs[0::2]]
        terms = [_sublist_term(s, i) for i, s in enumerate(pairs[1::2])]
    terms, out_labels = _expand_ellipses(terms, output, [x.ndim for x in arrays])
    if len(arrays) == 1 and set(terms[0]) == set(out_labels):
        # NumPy returns a view of a single operand that nothing is summed over, ignoring dtype=
        x, labels = _diagonal(arrays[0], terms[0], 0)
        return x.transpose([labels.index(lab) for lab in out_labels])
    dt = result_type(*(x.uop.dtype for x in arrays))
    if dtype is not None:
        dt = as_dtype(dtype)
        for x in arrays:
            if not np.can_cast(x.dtype, dt.np, casting=casting):
                raise TypeError(f"Iterator operand dtype could not be cast from dtype('{x.dtype}') to "
                                f"dtype('{dt.name}') according to the rule '{casting}'")
    # sizes of the labels (size 1 broadcasts against any size, as in NumPy)
    sizes: dict[str, int] = {}
    for i, (x, t) in enumerate(zip(arrays, terms)):
        for lab, n in zip(t, x.shape):
            if lab in sizes and n != sizes[lab] and 1 not in (n, sizes[lab]):
                raise ValueError(f"operands could not be broadcast together with remapped shapes: label '{lab}' has "
                                 f"size {sizes[lab]} and size {n} in operand {i}")
            sizes[lab] = n if lab not in sizes or sizes[lab] == 1 else sizes[lab]
    ops = []
    for i, (x, t) in enumerate(zip(arrays, terms)):
        x, t = _diagonal(x.astype(dt), t, i)
        ops.append((x, t))
    path = _path(optimize, len(ops), [t for _, t in ops], sizes, out_labels)
    for i, j in path:
        (a, la), (b, lb) = ops[i], ops[j]
        rest = [ops[k] for k in range(len(ops)) if k not in (i, j)]
        keep = set(out_labels).union(*(set(t) for _, t in rest))
        a, la = _sum_out(a, la, keep | set(lb))
        b, lb = _sum_out(b, lb, keep | set(la))
        ops = rest + [_pair(a, la, b, lb, keep, sizes)]
    (res, labels), = ops
    res, labels = _sum_out(res, labels, set(out_labels))
    if any(res.shape[i] != sizes[x] for i, x in enumerate(labels)):
        res = res.broadcast_to(tuple(sizes[x] for x in labels))
    return res.transpose([labels.index(x) for x in out_labels]).astype(dt, copy=False)


def _path(optimize, count: int, labels, sizes, output) -> list[tuple[int, int]]:
    """The pairwise contraction order: an explicit einsum_path list, else greedy (NumPy's own order for
    optimize=False contracts everything at once; any order gives the same sums up to rounding)."""
    if isinstance(optimize, (list, tuple)) and optimize and optimize[0] == "einsum_path":
        path = []
        size = count
        for step in optimize[1:]:
            step = tuple(step)
            if len(step) == 1: continue   # a single-operand step: its sums happen in the next contraction
            if len(step) != 2 or not all(0 <= s < size for s in step) or step[0] == step[1]:
                raise unsupported(f"einsum path step {step}", "give pairs of operand positions")
            path.append(tuple(sorted(step)))
            size -= 1
        if size != 1: raise ValueError("einsum_path does not contract every operand")
        return path
    if isinstance(optimize, (list, tuple)) and optimize:
        raise TypeError("Did not understand the path: " + repr(optimize))
    if optimize not in (False, True, "greedy", "optimal", None):
        raise TypeError(f"Did not understand the path (optimize): {optimize!r}")
    if count == 2: return [(0, 1)]
    return _greedy_order(labels, sizes, output) if count > 2 else []


def einsum_path(*operands: Any, optimize="greedy", einsum_call: bool = False) -> tuple[list[Any], str]:
    """NumPy's einsum_path (the path and its printed report): it needs only the operands' shapes and dtypes, so
    NumPy computes it on stand-ins of those shapes (zero-strided, no memory)."""
    if einsum_call: raise unsupported("numpy.einsum_path with einsum_call=True")
    stand_ins = [np.broadcast_to(np.zeros((), x.dtype), x.shape) if isinstance(x, Tensor) else x for x in operands]
    return np.einsum_path(*stand_ins, optimize=optimize)
