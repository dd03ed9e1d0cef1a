"""check_grads: derivatives checked against central finite differences, as jax.test_util.check_grads.

  check_grads(f, args, order=1, modes=("fwd", "rev"), eps=None, atol=None, rtol=None)

Forward mode: numfn.jvp along a random direction against (f(x + eps t) - f(x - eps t)) / (2 eps), f evaluated in
float64 whatever the arguments' dtype. Reverse mode: the dot-product test, <ct, J t> (the finite difference)
against <vjp(ct), t>, <a, b> = Re(sum(a b)) (JAX's pairing: complex arguments and outputs are checked as maps of
their real and imaginary parts, along complex directions). order=2 checks the derivatives of the jvp and vjp functions too (so the rules' own
derivatives: grad of grad). Raises AssertionError naming the mode, order and the mismatch.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from numfn.autodiff.api import jit_of, jvp, vjp
from numfn.pytree import flatten, unflatten
from numfn.signature import is_leaf


def _floats(tree):
    leaves, t = flatten(tree, is_leaf=is_leaf)
    return [np.asarray(x) for x in leaves], t


def _default_tolerance(dtype) -> float:
    return 2e-2 if np.dtype(dtype) in (np.float16, np.float32) else 1e-5


def check_grads(f: Callable, args: Sequence, order: int = 1, modes: Sequence[str] = ("fwd", "rev"),
                eps: float | None = None, atol: float | None = None, rtol: float | None = None,
                seed: int = 0) -> None:
    """Check f's derivatives at `args` against central finite differences (f evaluated in float64, complex128 for
    complex arguments): forward mode
    along a random direction, reverse mode by the dot-product test, and with order=2 the derivatives of the jvp and
    vjp functions too. Tolerances default by the arguments' precision (1e-5 for float64, 2e-2 for float32); `eps`
    is the finite-difference step (1e-6). Raises AssertionError naming the mode and order that differ."""
    args = tuple(args)
    leaves, tree = _floats(args)
    floats = [np.issubdtype(x.dtype, np.inexact) for x in leaves]
    low = min((np.finfo(x.dtype).eps for x, fl in zip(leaves, floats) if fl), default=np.finfo(np.float64).eps)
    tol = _default_tolerance(np.float32 if low > 1e-10 else np.float64)
    rtol = tol if rtol is None else rtol
    atol = tol if atol is None else atol
    eps = 1e-6 if eps is None else eps
    rng = np.random.default_rng(seed)
    direction = [_random_like(rng, x) if fl else np.zeros(x.shape, x.dtype) for x, fl in zip(leaves, floats)]
    tangents = unflatten(tree, direction)
    f64 = jit_of(f)

    def at(step: float):
        moved = [x.astype(_wide(x)) + step * d.astype(_wide(x)) if fl else x
                 for x, d, fl in zip(leaves, direction, floats)]
        return _floats(f64(*unflatten(tree, moved)))[0]

    plus, minus = at(eps), at(-eps)
    numeric = [(p - m) / (2 * eps) for p, m in zip(plus, minus)]
    if "fwd" in modes:
        _, t_out = jvp(f, args, tuple(tangents))
        for k, (got, want) in enumerate(zip(_floats(t_out)[0], numeric)):
            _close(got, want, atol, rtol, f"jvp (order {order}) of output {k}")
    if "rev" in modes:
        out, vjp_fn = vjp(f, *args)
        outs, out_tree = _floats(out)
        cts = [_random_like(rng, o) if np.issubdtype(o.dtype, np.inexact) else np.zeros(o.shape, o.dtype)
               for o in outs]
        back, _ = _floats(vjp_fn(unflatten(out_tree, cts)))
        lhs = sum(_pair(c, n) for c, n in zip(cts, numeric))
        rhs = sum(_pair(b, d) for b, d, fl in zip(back, direction, floats) if fl)
        _close(np.float64(rhs), np.float64(lhs), atol, rtol, f"vjp (order {order}) dot-product test")
    if order > 1:
        if "fwd" in modes:
            check_grads(lambda *a: jvp(f, a, tuple(tangents))[1], args, order - 1, ("fwd",), eps, atol, rtol, seed + 1)
        if "rev" in modes:
            out = vjp(f, *args)[0]
            outs, out_tree = _floats(out)
            ct = unflatten(out_tree, [np.ones(o.shape, o.dtype) for o in outs])
            check_grads(lambda *a: vjp(f, *a)[1](ct), args, order - 1, ("rev",), eps, atol, rtol, seed + 2)


def _wide(x: np.ndarray) -> type:
    """The type f is evaluated in for finite differences: float64, complex128 for complex arguments."""
    return np.complex128 if np.iscomplexobj(x) else np.float64


def _random_like(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """A random direction of x's shape and dtype (complex: random real and imaginary parts)."""
    d = rng.standard_normal(x.shape)
    if np.iscomplexobj(x): d = d + 1j * rng.standard_normal(x.shape)
    return d.astype(x.dtype)


def _pair(a: np.ndarray, b: np.ndarray) -> float:
    """Re(sum(a b)) in double precision: the pairing of cotangents with tangents."""
    return float(np.real(np.sum(np.asarray(a).astype(_wide(a)) * np.asarray(b).astype(_wide(b)))))


def _close(got, want, atol: float, rtol: float, what: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    got, want = got.astype(_wide(got)), want.astype(_wide(want))
    if got.shape != want.shape:
        raise AssertionError(f"check_grads: {what}: shape {got.shape}, finite differences give {want.shape}")
    bad = ~(np.abs(got - want) <= atol + rtol * np.abs(want))
    if np.any(bad):
        raise AssertionError(f"check_grads: {what} differs from finite differences: got {got}, expected {want} "
                             f"(atol={atol}, rtol={rtol})")
