"""Products: matmul and dot."""
from __future__ import annotations

from numfn.dtype import result_type
from numfn.tensor import Tensor, matmul
from numfn.numpy.ufuncs import multiply

T = Tensor.lift

__all__ = ['dot', 'matmul']

def dot(a, b) -> Tensor:
    """NumPy's dot: products for scalars, matmul for 1-D and 2-D, and for N-D a sum over the last axis of `a`
    and the second-to-last of `b`."""
    # np.dot converts its operands with asarray: a Python scalar is a strong int64/float64 array, not weak
    a, b = (Tensor(T(v).uop) for v in (a, b))
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


