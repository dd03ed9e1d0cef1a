"""Derivatives of traced functions: grad, value_and_grad, jvp, vjp, jacfwd, jacrev, hessian, check_grads.

Design. A derivative is a graph-to-graph transformation of the function's traced graph
(`NumericalFunction.function_graph`), as vmap's batching is (numfn/transforms.py, `batch_graph`):

- rules.py: each primitive's derivative rules, registered into its entry of the table of primitives
  (numfn/ir/primitives.py, slots `jvp` and `transpose`). A jvp rule maps (node, primal sources, tangent sources)
  to the node's tangent; None is a symbolic zero (integer and bool values, constants, paths no input reaches), so
  unused paths cost nothing. Rules are built from ordinary traceable ops, so a derivative graph is differentiable
  again (grad of grad). A transpose rule maps (linear node, its cotangent, which sources it is linear in) to its
  linear sources' cotangents: add/sub/neg, mul and div by a primal value, where (with zeros), cast, movement ops
  (reshape <-> reshape, permute <-> inverse permute, expand <-> sum, pad <-> shrink, flip <-> flip), sum <-> expand,
  cumsum <-> reversed cumsum, gather <-> scatter-add, scatter <-> gather (and zeroing the overwritten elements),
  and GEMM/GEMV <-> products with the other operand transposed.
- jvp.py: forward mode, `jvp_graph`: the graph rebuilt over the caller's values with every node's tangent
  beside it.
- transpose.py: reverse mode is forward mode on tangent placeholders (linearization), then `transpose_graph`
  walks the linear tangent graph backwards from the output's cotangent. The primal values the backward pass
  needs are nodes of the same graph, so `jit(grad(f))` is one program: the scheduler plans them as buffers.
- api.py: the JAX-style functions. Called on traced values (inside jit, vmap or another derivative) they return
  traced values; called on arrays they jit-compile that and run it.
- check.py: check_grads, derivatives against central finite differences in float64 (complex128).

- loops.py: loops and branches (LOOP regions): forward mode carries the tangents in the region; reverse mode
  transposes branches (a branch region of transposed branches) and hands loops to reverse_loops.py: a recording
  loop storing each iteration's carries and a backward loop over them.
- linalg_rules.py: the rules of LAPACK's routines (solve, inv, det, slogdet, cholesky, eigh, svd, pinv, qr, lstsq,
  eigvals).
- custom.py: custom_jvp and custom_vjp (user-defined rules, JAX's interface).

Not yet: checkpointing of loops without a trip count bound (recomputed from the start), complex matrices in the
LAPACK rules, eig's eigenvectors, running max/min, multiply.at/maximum.at.
"""
from numfn.autodiff import loops  # noqa: F401 - registers forward mode through loops and branches
from numfn.autodiff import linalg_rules  # noqa: F401 - registers the rules of LAPACK's routines
from numfn.autodiff.api import grad, hessian, jacfwd, jacrev, jvp, value_and_grad, vjp
from numfn.autodiff.check import check_grads
from numfn.autodiff.custom import custom_jvp, custom_vjp

__all__ = ["grad", "value_and_grad", "jvp", "vjp", "jacfwd", "jacrev", "hessian", "check_grads", "custom_jvp",
           "custom_vjp"]
