"""The trace layer: what runs while numfn calls the user's function on placeholders. `tensor` is the traced array
(its operators and methods build UOp graphs), to which `shape_methods`, `reduction_methods` and `numpy_protocol`
add ndarray's shape methods, its reductions and NumPy's dispatch; `record` what a trace records (checks, rebinds,
regions); `subscript` NumPy's indexing; `dynamic` arrays of run-time length (`window_movement` their flips and
rolls); `aliasing` and `branch_views` memory shared between arrays; `control` loops and branches as regions;
`convert` the rewriting of Python control flow on traced values, `statements` what the rewritten code calls, `unbound` a variable it leaves without a value;
`pyscalar` Python scalars as Python computes them. The order of these modules: tests/test_imports.py (LAYERS)."""
# ndarray's methods and NumPy's protocol that these modules register on Tensor: every user of the tracer has them
from numfn.trace import numpy_protocol, reduction_methods, shape_methods, window_movement  # noqa: F401
