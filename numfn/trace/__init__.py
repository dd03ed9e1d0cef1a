"""The trace layer: what runs while numfn calls the user's function on placeholders. `tensor` is the traced array
(its operators and methods build UOp graphs); `record` what a trace records (checks, rebinds, regions); `subscript`
NumPy's indexing; `dynamic` arrays of run-time length; `aliasing` and `branch_views` memory shared between arrays;
`control` loops and branches as regions; `convert` the rewriting of Python control flow on traced values;
`pyscalar` Python scalars as Python computes them."""
