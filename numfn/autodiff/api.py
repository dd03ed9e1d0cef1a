"""The derivative API: grad, value_and_grad, jvp, vjp, jacfwd, jacrev, hessian (JAX's names and conventions).

Each works in two situations:
- inside a trace (its arguments are Tensors: called from a jit-compiled function, vmap, or another derivative),
  it takes the function's traced graph for the arguments' signature (the JitFunction's own trace, shared with
  jit and vmap), transforms it (numfn/autodiff/jvp.py, transpose.py) over the caller's values, and returns traced
  values: the derivative becomes part of the caller's program and fuses with it;
- called with NumPy arrays, it jit-compiles that traced form and runs it (one program per signature: the forward
  pass and the backward pass together).
So `jit(grad(f))`, `grad(grad(f))`, `vmap(grad(f))` and `jacfwd(jacrev(f))` compose.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from functools import update_wrapper

import numpy as np

from numfn.autodiff.jvp import jvp_graph
from numfn.autodiff.reverse_loops import checkpointing, valid_checkpoint
from numfn.autodiff.rules import NotDifferentiable
from numfn.autodiff.transpose import tangent_placeholder, transpose_graph
from numfn.errors import unsupported
from numfn.function import JitFunction, NumericalFunction
from numfn.ir.uop import Ops, UOp
from numfn.pytree import TreeDef, flatten, unflatten
from numfn.signature import argument_leaf_names, is_leaf, leaf_spec
from numfn.trace.tensor import Tensor, add_check

ArgNums = int | Sequence[int]


def _leaf_or_tensor(x) -> bool:
    return isinstance(x, Tensor) or is_leaf(x)


def _traced(*trees) -> bool:
    """Whether any leaf is a Tensor (we are inside a trace)."""
    return any(isinstance(x, Tensor) for x in flatten(trees, is_leaf=_leaf_or_tensor)[0])


def jit_of(fn: Callable) -> JitFunction:
    """The JitFunction whose traces a transformation of `fn` reuses."""
    return fn if isinstance(fn, JitFunction) else JitFunction(fn)


def _argnums(argnums: ArgNums, nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not -nargs <= n < nargs:
            raise ValueError(f"argnums {argnums!r} out of range for a call with {nargs} positional arguments")
    return tuple(n % nargs for n in nums)


class Traced:
    """`fn` traced for a call's signature, its graph's inputs bound to the call's values: the slots of each
    positional argument's leaves, and each slot's value."""

    def __init__(self, inner: JitFunction, args: tuple, kwargs: dict):
        leaves, tree = flatten((tuple(args), kwargs), is_leaf=_leaf_or_tensor)
        names = argument_leaf_names(inner.fn, args, kwargs)
        specs = tuple(leaf_spec(leaf, name) for leaf, name in zip(leaves, names))
        nf: NumericalFunction = inner.specialization((tree, specs, ()), (), compile=False)
        if nf.cut_outputs:
            raise unsupported("the derivative of a function returning an array of run-time length (x[mask], "
                              "nonzero)", "return a fixed-length result (np.where with a mask)")
        if nf.mutated_inputs:
            raise unsupported("the derivative of a function that writes into its arguments",
                              "write into a copy (y = x.copy(); y[...] = ...) and return it")
        self.nf, self.names = nf, names
        self.values = {slot: Tensor.lift(leaf).uop for slot, leaf in enumerate(leaves)}
        self.arg_slots: list[list[int]] = []
        self.arg_trees: list[TreeDef] = []
        start = 0
        for a in args:
            ls, t = flatten(a, is_leaf=_leaf_or_tensor)
            self.arg_slots.append(list(range(start, start + len(ls))))
            self.arg_trees.append(t)
            start += len(ls)

    def run(self, tangents: dict[int, UOp | None], linearizing: bool = False) -> tuple[list[UOp], list[UOp | None]]:
        """The outputs and their tangents (None: zero), the function's checks becoming the caller's."""
        try:
            primals, touts = jvp_graph(self.nf.function_graph, self.values, tangents, linearizing)
        except NotDifferentiable as e:   # which of the user's functions it was
            code = getattr(self.nf.fn, "__code__", None)
            where = f", defined at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
            raise NotDifferentiable(f"{e} (in the derivative of {self.nf.name}{where})") from None
        nout = self.nf.out_tree.num_leaves
        for k, c in enumerate(self.nf.checks):
            add_check(Tensor(primals[nout + 2 * k]), Tensor(primals[nout + 2 * k + 1]), c.error)
        strip = lambda u: u.src[0] if u is not None and u.op is Ops.CONTIGUOUS else u   # noqa: E731
        return [strip(p) for p in primals[:nout]], [strip(t) for t in touts[:nout]]

    def float_slots(self, argnum: int, what: str, holomorphic: bool = False, real_only: bool = False) -> list[int]:
        """The slots of a differentiated argument, with JAX's TypeErrors: integer and bool ones are refused, and
        real ones with `holomorphic`, complex ones with `real_only` (forward-mode Jacobians)."""
        slots = self.arg_slots[argnum]
        for s in slots:
            dt, name = self.values[s].dtype, self.names[s]
            if holomorphic and not dt.is_complex:
                raise TypeError(f"{what} with holomorphic=True requires inputs with complex dtype, but got {dt.name} "
                                f"(argument {name}).")
            if real_only and dt.is_complex and not holomorphic:
                raise TypeError(f"{what} requires real-valued inputs (input dtype that is a sub-dtype of "
                                f"np.floating), but got {dt.name} (argument {name}). For holomorphic "
                                "differentiation, pass holomorphic=True. For differentiation of non-holomorphic "
                                "functions involving complex inputs, use jvp directly.")
            if not dt.is_inexact:
                raise TypeError(f"{what} requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
                                f"np.inexact), but got {dt.name} for argument {name}. Integer and boolean inputs "
                                "have no derivative: leave them out of argnums.")
        return slots


def check_output_dtype(dt, what: str, holomorphic: bool) -> None:
    """JAX's TypeErrors for the output of a reverse-mode derivative (grad, jacrev): real unless holomorphic, then
    complex."""
    if holomorphic and not dt.is_complex:
        raise TypeError(f"{what} with holomorphic=True requires outputs with complex dtype, but got {dt.name}.")
    if not holomorphic and dt.is_complex:
        raise TypeError(f"{what} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but "
                        f"got {dt.name}. For holomorphic differentiation, pass holomorphic=True. For "
                        "differentiation of non-holomorphic functions involving complex outputs, use vjp directly.")
    if not dt.is_inexact:
        raise TypeError(f"{what} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
                        f"but got {dt.name}")


def _shape(u: UOp) -> tuple[int, ...]:
    assert u.shape is not None
    return u.shape


def _zeros(shape, dtype) -> UOp:
    return UOp.const_like(dtype, 0, tuple(shape))


def _tensor(u: UOp) -> Tensor:
    return Tensor(u)


# ---------------------------------------------------------------------------------------------------------------
# the transformations on traced values

def vjp_traced(fn: Callable, args: tuple, kwargs: dict, argnums: tuple[int, ...], what: str = "vjp",
               checkpoint: int | None = None, holomorphic: bool = False):
    """(outputs, vjp_fn, pull): vjp_fn(cotangents) -> one cotangent tree per argnum (traced values); pull does the
    same from a list with one cotangent per output leaf, None for zero (nothing is computed for those).
    `checkpoint`: reverse mode through loops stores every checkpoint-th carry (reverse_loops.loop_policy)."""
    tr = Traced(jit_of(fn), args, kwargs)
    slots = [s for n in argnums for s in tr.float_slots(n, what, holomorphic)]
    holders = {s: tangent_placeholder(_shape(tr.values[s]), tr.values[s].dtype) for s in slots}
    with checkpointing(checkpoint):
        outs, touts = tr.run(dict(holders), linearizing=True)
    out_tree = tr.nf.out_tree

    def pull(cuops: list[UOp | None]) -> tuple:
        keep = [(t, c) for t, c, o in zip(touts, cuops, outs) if c is not None and o.dtype.is_inexact]
        found = transpose_graph([t for t, _ in keep], [c for _, c in keep], [holders[s] for s in slots])
        by_slot = {s: (_zeros(holders[s].shape, holders[s].dtype) if g is None else g) for s, g in zip(slots, found)}
        return tuple(unflatten(tr.arg_trees[n], [_tensor(by_slot[s]) for s in tr.arg_slots[n]]) for n in argnums)

    def vjp_fn(cotangents) -> tuple:
        cts, ct_tree = flatten(cotangents, is_leaf=_leaf_or_tensor)
        if ct_tree.unordered() != out_tree.unordered():
            raise ValueError(f"vjp: the cotangent's structure {ct_tree} differs from the output's {out_tree}")
        cuops: list[UOp | None] = []
        for c, o in zip(cts, outs):
            u = Tensor.lift(c).uop
            if u.shape != o.shape:
                raise ValueError(f"vjp: a cotangent of shape {u.shape} for an output of shape {o.shape}")
            cuops.append(u.cast(o.dtype) if o.dtype.is_inexact else None)
        return pull(cuops)

    return unflatten(out_tree, [_tensor(o) for o in outs]), vjp_fn, pull


def jvp_traced(fn: Callable, primals: tuple, tangents: tuple, kwargs: dict | None = None):
    """(outputs, output tangents) of fn at `primals` along `tangents` (one tree per primal; traced values)."""
    tr = Traced(jit_of(fn), primals, kwargs or {})
    if len(tangents) != len(primals):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    given: dict[int, UOp | None] = {}
    for n, t in enumerate(tangents):
        leaves, tree = flatten(t, is_leaf=_leaf_or_tensor)
        if tree.unordered() != tr.arg_trees[n].unordered():
            raise ValueError(f"jvp: tangent {n}'s structure {tree} differs from its primal's {tr.arg_trees[n]}")
        for s, leaf in zip(tr.arg_slots[n], leaves):
            p, u = tr.values[s], Tensor.lift(leaf).uop
            if u.shape != p.shape:
                raise ValueError(f"jvp: tangent of shape {u.shape} for argument {tr.names[s]} of shape {p.shape}")
            given[s] = u.cast(p.dtype) if p.dtype.is_inexact else None   # integer primals have no tangent
    outs, touts = tr.run(given)
    zero_or = [_zeros(o.shape, o.dtype) if t is None else t for o, t in zip(outs, touts)]
    tree = tr.nf.out_tree
    return unflatten(tree, [_tensor(o) for o in outs]), unflatten(tree, [_tensor(t) for t in zero_or])


def value_and_grad_traced(fn: Callable, args: tuple, kwargs: dict, argnums: ArgNums, has_aux: bool,
                          checkpoint: int | None = None, holomorphic: bool = False):
    nums = _argnums(argnums, len(args))
    out, _, pull = vjp_traced(fn, args, kwargs, nums, "grad", checkpoint, holomorphic)
    if has_aux and not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError("has_aux=True needs the function to return a pair (output, auxiliary data)")
    value, aux = out if has_aux else (out, None)
    if not isinstance(value, Tensor) or value.shape != ():
        shape = value.shape if isinstance(value, Tensor) else type(value).__name__
        raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: {shape}.")
    check_output_dtype(value.uop.dtype, "grad", holomorphic)
    one = UOp.const(value.uop.dtype, 1.0)
    nout = len(flatten(out, is_leaf=_leaf_or_tensor)[0])
    grads = pull([one] + [None] * (nout - 1))   # the value is the first leaf; the auxiliary data has no cotangent
    g = grads[0] if isinstance(argnums, int) else grads
    return ((value, aux), g) if has_aux else (value, g)


# ---------------------------------------------------------------------------------------------------------------
# the user-facing functions

class Transformed:
    """A transformation of `fn`: called on Tensors it traces (`traced`), called on arrays it runs its jit-compiled
    form (one program per signature)."""

    def __init__(self, fn: Callable, traced: Callable):
        self.fn, self.traced = fn, traced
        update_wrapper(self, fn, updated=())

        def program(*args, **kwargs):
            return self.traced(args, kwargs)
        self._jitted = JitFunction(update_wrapper(program, fn, updated=()))

    def __call__(self, *args, **kwargs):
        if _traced(args, kwargs): return self.traced(args, kwargs)
        return self._jitted(*args, **kwargs)

    def specialize(self, *args, **kwargs) -> NumericalFunction:
        """The NumericalFunction of the compiled derivative for these arguments."""
        return self._jitted.specialize(*args, **kwargs)


def grad(fn: Callable, argnums: ArgNums = 0, has_aux: bool = False, checkpoint: int | None = None,
         holomorphic: bool = False) -> Transformed:
    """The gradient of scalar-valued `fn` with respect to argument(s) `argnums` (trees of float arrays): a function
    of the same arguments returning the gradient (a tuple of them for a tuple of argnums; with `has_aux`, fn returns
    (value, aux) and the result is (gradient, aux)). `checkpoint=k`: reverse mode through a loop stores the state
    of every k-th iteration only and recomputes the others, one segment of k at a time (memory ~ n/k + k states
    for n iterations, one more evaluation of the body per iteration); None: store every iteration's state when it
    fits numfn.autodiff.reverse_loops.MAX_STACK_BYTES, else checkpoint every ceil(sqrt(n)) (docs/derivatives.md).
    Complex arguments, as in JAX: for real-valued fn the gradient is df/dx - i df/dy (2 conj(z) for |z|^2); with
    `holomorphic`, fn's output and the arguments are complex and the gradient is the complex derivative f'(z)."""
    valid_checkpoint(checkpoint)

    def traced(args, kwargs):
        (value, aux), g = value_and_grad_traced(fn, args, kwargs, argnums, True, checkpoint, holomorphic) \
            if has_aux else \
            ((None, None), value_and_grad_traced(fn, args, kwargs, argnums, False, checkpoint, holomorphic)[1])
        return (g, aux) if has_aux else g
    return Transformed(fn, traced)


def value_and_grad(fn: Callable, argnums: ArgNums = 0, has_aux: bool = False,
                   checkpoint: int | None = None, holomorphic: bool = False) -> Transformed:
    """(fn's value, its gradient) in one program (with `has_aux`: ((value, aux), gradient)); `checkpoint` and
    `holomorphic` as for grad."""
    valid_checkpoint(checkpoint)
    return Transformed(fn, lambda args, kwargs: value_and_grad_traced(fn, args, kwargs, argnums, has_aux,
                                                                      checkpoint, holomorphic))


@functools.lru_cache(maxsize=256)
def _jvp_program(fn: Callable) -> JitFunction:
    return JitFunction(update_wrapper(lambda primals, tangents: jvp_traced(fn, tuple(primals), tuple(tangents)),
                                      fn, updated=()))


@functools.lru_cache(maxsize=256)
def _vjp_program(fn: Callable) -> JitFunction:
    def program(primals, cotangents):
        return vjp_traced(fn, tuple(primals), {}, tuple(range(len(primals))))[1](cotangents)
    return JitFunction(update_wrapper(program, fn, updated=()))


def jvp(fn: Callable, primals: Sequence, tangents: Sequence):
    """(fn(*primals), the derivative of fn at primals along tangents): forward mode, JAX's jvp."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples or lists (one entry per argument)")
    if _traced(primals, tangents): return jvp_traced(fn, tuple(primals), tuple(tangents))
    return _jvp_program(fn)(tuple(primals), tuple(tangents))


def vjp(fn: Callable, *primals):
    """(fn(*primals), vjp_fn): vjp_fn(cotangent of the output) -> a tuple, the cotangent of each primal (reverse
    mode, JAX's vjp)."""
    if _traced(primals): return vjp_traced(fn, primals, {}, tuple(range(len(primals))))[:2]
    out = jit_of(fn)(*primals)
    return out, lambda cotangents: _vjp_program(fn)(tuple(primals), cotangents)


def _jacobian(fn: Callable, argnums: ArgNums, forward: bool, holomorphic: bool = False) -> Transformed:
    from numfn.transforms import vmap
    import numfn.numpy as fnp

    def traced(args, kwargs):
        nums = _argnums(argnums, len(args))
        tr = Traced(jit_of(fn), args, kwargs)
        if tr.nf.out_tree.kind != "leaf":   # a tree of outputs: the tree of each output's Jacobian(s), as JAX
            return unflatten(tr.nf.out_tree, [_jacobian(_output_leaf(fn, i), argnums, forward, holomorphic)
                                              .traced(args, kwargs) for i in range(tr.nf.out_tree.num_leaves)])
        out_shape, out_dtype = tr.nf.out_specs[0][0], tr.nf.out_specs[0][1]
        if not forward: check_output_dtype(out_dtype, "jacrev", holomorphic)
        elif holomorphic and not out_dtype.is_complex:
            raise TypeError(f"jacfwd with holomorphic=True requires outputs with complex dtype, but got "
                            f"{out_dtype.name}.")
        jacs = []
        for n in nums:
            if tr.arg_trees[n].kind != "leaf":   # a tree of arrays: the tree of the Jacobians by each leaf, as JAX
                tree = tr.arg_trees[n]
                leaves = flatten(args[n], is_leaf=_leaf_or_tensor)[0]
                by_leaf = _jacobian(_leaves_as_arguments(fn, n, tree, len(leaves)),
                                    tuple(range(n, n + len(leaves))), forward, holomorphic)
                jacs.append(unflatten(tree, list(by_leaf.traced((*args[:n], *leaves, *args[n + 1:]), kwargs))))
                continue
            slot, = tr.float_slots(n, "jacfwd" if forward else "jacrev", holomorphic, real_only=forward)
            x = tr.values[slot]
            assert x.shape is not None
            if forward:
                size, dt = int(np.prod(x.shape)), x.dtype
                basis = np.eye(size, dtype=dt.np).reshape((size,) + x.shape)

                def along(*a, n=n):   # the derivative along one basis tangent
                    primals, t = a[:-1], a[-1]
                    ts = tuple(t if i == n else _zero_tangent(p) for i, p in enumerate(primals))
                    return jvp_traced(fn, primals, ts, kwargs)[1]
                stacked = vmap(along, in_axes=(None,) * len(args) + (0,))(*args, basis)   # (size, *out)
                jac = fnp.moveaxis(stacked, 0, -1).reshape(out_shape + x.shape)
            else:
                size, dt = int(np.prod(out_shape)), tr.nf.out_specs[0][1]
                basis = np.eye(size, dtype=dt.np).reshape((size,) + out_shape)

                def row(*a, n=n):   # one output element's gradient
                    return vjp_traced(fn, a[:-1], kwargs, (n,), holomorphic=holomorphic)[1](a[-1])[0]
                stacked = vmap(row, in_axes=(None,) * len(args) + (0,))(*args, basis)   # (size, *x)
                jac = stacked.reshape(out_shape + x.shape)
            jacs.append(jac)
        return jacs[0] if isinstance(argnums, int) else tuple(jacs)
    return Transformed(fn, traced)


def _leaves_as_arguments(fn: Callable, n: int, tree: TreeDef, count: int) -> Callable:
    """fn with its argument n (a tree of `count` arrays) passed as those arrays, one argument each."""
    def spread(*args, **kwargs):
        return fn(*args[:n], unflatten(tree, args[n:n + count]), *args[n + count:], **kwargs)
    return update_wrapper(spread, fn, updated=())


def _output_leaf(fn: Callable, i: int) -> Callable:
    """fn's i-th output array (in flattening order), as a function of fn's arguments."""
    def leaf(*args, **kwargs):
        return flatten(jit_of(fn)(*args, **kwargs), is_leaf=is_leaf)[0][i]
    return update_wrapper(leaf, fn, updated=())


def _zero_tangent(p):
    """Zeros in the structure of primal p (an array, or a tree of them)."""
    leaves, tree = flatten(p, is_leaf=_leaf_or_tensor)
    lifted = [Tensor.lift(leaf) for leaf in leaves]
    return unflatten(tree, [Tensor(_zeros(t.shape, t.uop.dtype)) for t in lifted])


def jacfwd(fn: Callable, argnums: ArgNums = 0, holomorphic: bool = False) -> Transformed:
    """The Jacobian of fn (shape: output's + argument's) by forward mode: one jvp per input element, vmapped (real
    inputs; with `holomorphic`, complex inputs and outputs and the complex derivative)."""
    return _jacobian(fn, argnums, True, holomorphic)


def jacrev(fn: Callable, argnums: ArgNums = 0, holomorphic: bool = False) -> Transformed:
    """The Jacobian of fn (shape: output's + argument's) by reverse mode: one vjp per output element, vmapped (real
    outputs, of real or complex inputs as for grad; with `holomorphic`, complex ones and the complex derivative)."""
    return _jacobian(fn, argnums, False, holomorphic)


def hessian(fn: Callable, argnums: ArgNums = 0, holomorphic: bool = False) -> Transformed:
    """The Hessian of scalar-valued fn: jacfwd(jacrev(fn)) (shape: argument's + argument's)."""
    return jacfwd(jacrev(fn, argnums, holomorphic), argnums, holomorphic)
