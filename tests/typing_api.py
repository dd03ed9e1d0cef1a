"""How a type checker sees numfn's public API. Checked by mypy with numfn/ ([tool.mypy] files in pyproject.toml,
so tests/test_typecheck.py runs it), never run: an assert_type fails the check when a hint changes, and each
`type: ignore[code]` marks a call the checker must reject (warn_unused_ignores turns an accepted one into an
error)."""
from typing import Any

import numpy as np
from typing_extensions import assert_type

import numfn
from numfn import Tensor


@numfn.jit
def scale(x: np.ndarray, k: float) -> np.ndarray:
    return x * k


@numfn.jit(static_argnames=("n",), backend="c")
def power(x: np.ndarray, n: int) -> np.ndarray:
    return x ** n


def jit_calls() -> None:
    # a compiled function takes the Python function's arguments and returns what it returns
    assert_type(scale(np.ones(3), 2.0), np.ndarray)
    assert_type(power(np.ones(3), n=2), np.ndarray)
    scale(np.ones(3), "two")  # type: ignore[arg-type]
    scale(np.ones(3))  # type: ignore[call-arg]
    power(np.ones(3), m=2)  # type: ignore[call-arg]
    assert_type(scale.specialize(np.ones(3), 2.0).name, str)


def mapped_calls() -> None:
    batched = numfn.vmap(scale, in_axes=(0, None))
    assert_type(batched(np.ones((4, 3)), 2.0), np.ndarray)
    batched(np.ones((4, 3)), "two")  # type: ignore[arg-type]
    looped = numfn.svmap(in_axes=0)(scale)
    assert_type(looped(np.ones((4, 3)), np.ones(4)), np.ndarray)  # type: ignore[arg-type]
    numfn.vmap(scale, in_axes="x")  # type: ignore[call-overload]


def traced(t: Tensor) -> None:
    # inside a compiled function arrays are Tensors: NumPy's operators and methods give Tensors
    assert_type(t + 1, Tensor)
    assert_type(2.5 * t, Tensor)
    assert_type(t == t, Tensor)
    assert_type(-t, Tensor)
    assert_type(divmod(t, 2), tuple[Tensor, Tensor])
    assert_type(t[0], Tensor)
    t[1:] = 0.0
    t += 1
    assert_type(t.shape, tuple[int, ...])
    assert_type(t.ndim, int)
    assert_type(t.T, Tensor)
    assert_type(t.sum(axis=0), Tensor)
    assert_type(t.mean(axis=(0, 1), keepdims=True), Tensor)
    assert_type(t.reshape(2, -1), Tensor)
    assert_type(t.reshape((2, -1)), Tensor)
    assert_type(t.astype(np.float32), Tensor)
    assert_type(t.argmax(axis=-1), Tensor)
    assert_type(t.nonzero(), tuple[Tensor, ...])
    t.sum(out=np.empty(3))  # type: ignore[arg-type]
    t.reshape(2.5)  # type: ignore[arg-type]


def control_flow(t: Tensor) -> None:
    def body(i: Any, total: Tensor) -> Tensor:
        return total + i

    assert_type(numfn.fori_loop(0, 10, body, t), Tensor)
    assert_type(numfn.while_loop(lambda s: s < 3, lambda s: s + 1, t), Tensor)
    carry, ys = numfn.scan(lambda c, x: (c + x, c), t, t)
    assert_type(carry, Tensor)
    assert_type(numfn.cond(t > 0, lambda: 1.0, lambda: 2.0), float)
    assert_type(numfn.switch(1, [lambda: t, lambda: -t]), Tensor)
    numfn.fori_loop(0, 10, body, 0)  # type: ignore[arg-type]


def settings() -> None:
    assert_type(numfn.set_num_threads(2), int)
