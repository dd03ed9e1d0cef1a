"""Assigning ndarray attributes of traced arrays: `y.shape = (n,)` (and `a.shape = b.shape = n`) reshapes the
array in place, as NumPy's does; `x.dtype = ...` (reinterpreting memory) is refused naming the rewrite.
Registered on Tensor (tensor_method) when numfn.trace.statements is imported.

`y.shape = s` changes the array object itself, so every name bound to it sees the new shape; views made of it
before keep theirs (they look at its memory through the old shape). A view is reshaped in place only where NumPy
can do it without copying (else NumPy's AttributeError); a function's argument (or an array from outside it, as
np.asarray(G) is G) is refused: the caller's array would change shape, which a compiled function cannot do."""
from __future__ import annotations

from typing import Any

from numfn.errors import unsupported
from numfn.ir.uop import Ops
from numfn.trace.tensor import Tensor, tensor_method

_INCOMPATIBLE = "Incompatible shape for in-place modification. Use `.reshape()` to make a copy with the desired shape."


def set_shape(self: Tensor, shape: Any) -> None:
    """`self.shape = shape`: NumPy's in-place reshape (see the module docstring)."""
    if self.weak:   # a Python scalar
        kind = {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}[self.uop.dtype.kind]
        raise AttributeError(f"'{kind}' object has no attribute 'shape'")
    if self.is_scalar(): raise AttributeError("attribute 'shape' of 'numpy.generic' objects is not writable")
    if self.runtime_length:
        raise unsupported("setting the shape of an array whose length is only known at run time (x[mask], nonzero)",
                          "keep the mask and use numpy.where instead")
    new = self._reshaped(tuple(shape) if isinstance(shape, (tuple, list)) else (shape,))
    if self.base is not None:   # a view: the same memory through another shape, where strides can say it
        view = self._view(new)
        if view.base is None: raise AttributeError(_INCOMPATIBLE)
        self.uop, self.chain = view.uop, view.chain
        return
    if self.memory in ("input", "constant"):
        what = "a function argument" if self.memory == "input" else "an array from outside the function"
        raise unsupported(f"setting the shape of {what} (x.shape = ...): that array would change shape for the "
                          "caller too", "bind a reshaped view instead: x = x.reshape(...)")
    if self._links:
        raise unsupported("setting the shape of an array a branch on a traced value may have made share memory with "
                          "another", "bind a reshaped view instead: x = x.reshape(...)")
    old = self.shape
    for ref in self._views or ():   # views made before look at the memory through the old shape
        view = ref()
        if view is not None: view.chain = ((Ops.RESHAPE, old),) + view.chain
    self.rebind(new)


def set_dtype(self: Tensor, dtype: Any) -> None:
    """`self.dtype = dtype`: refused (NumPy reinterprets the array's bytes as another type)."""
    raise unsupported("setting ndarray.dtype (reading an array's memory as another type)",
                      "convert the values with x = x.astype(dtype), or reinterpret the bytes outside the function")


tensor_method("shape")(property(vars(Tensor)["shape"].fget, set_shape, doc="The array's shape (settable: NumPy's "
                                                                            "in-place reshape)"))
tensor_method("dtype")(property(vars(Tensor)["dtype"].fget, set_dtype, doc="The array's NumPy dtype"))
