"""The types numfn.numpy's signatures name: what NumPy's own stubs accept, plus traced arrays."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, SupportsIndex

import numpy as np
import numpy.typing as npt

from numfn.dtype import DType
from numfn.trace.tensor import Tensor

# an array: traced (Tensor), a NumPy array, a Python or NumPy scalar, or (nested) sequences of them
ArrayLike = Tensor | npt.ArrayLike
# a dtype: a NumPy type (np.float32), a name ("float32"), np.dtype, Python's int/float/bool, or numfn's DType
DTypeLike = npt.DTypeLike | DType
# a scalar value (initial=, nan=)
Scalar = complex | np.generic
# a shape: one size or a sequence of them
ShapeLike = SupportsIndex | Sequence[SupportsIndex]
# the axes a reduction runs over: one, several, or None for all of them
Axes = SupportsIndex | Sequence[SupportsIndex] | None
Casting = Literal["no", "equiv", "safe", "same_kind", "unsafe"]
