"""Containers beyond tuples, lists, dicts and NamedTuples: classes registered with `numfn.register_pytree_node`,
frozen dataclasses (no registration) and dataclasses registered with `numfn.register_dataclass`, as arguments and
results of jit, vmap and grad, and as a loop's state; each result checked against NumPy on the same values."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import numfn
from numfn.pytree import flatten, unflatten

RNG = np.random.default_rng(32)


@dataclasses.dataclass(frozen=True)
class Params:
    w: np.ndarray
    b: np.ndarray


@dataclasses.dataclass(frozen=True)
class OtherParams:   # the same fields as Params: a different structure all the same
    w: np.ndarray
    b: np.ndarray


@dataclasses.dataclass(frozen=True)
class Model:
    params: Params
    extra: dict
    scale: float = 1.0
    cached: int = dataclasses.field(default=0, init=False)   # not a child: __init__ does not take it


@numfn.register_dataclass
@dataclasses.dataclass
class State:   # mutable: registered, as in JAX
    x: np.ndarray
    step: np.ndarray


@dataclasses.dataclass
class Config:
    x: np.ndarray
    order: int
    name: str


numfn.register_dataclass(Config, data_fields=["x"], meta_fields=["order", "name"])


class Polar:
    """A class of the user's, registered with a hashable aux_data (its unit)."""

    def __init__(self, r, theta, unit="rad"):
        self.r, self.theta, self.unit = r, theta, unit


numfn.register_pytree_node(Polar, lambda p: ((p.r, p.theta), p.unit), lambda unit, ch: Polar(*ch, unit=unit))


class Unregistered:
    def __init__(self, x):
        self.x = x


@dataclasses.dataclass
class Mutable:
    x: np.ndarray


def _affine(p: Params, x):
    return Params(p.w * x + p.b, np.tanh(p.b) - p.w)


def _assert_params(got, want):
    assert type(got) is type(want)
    for f in dataclasses.fields(want):
        a, b = getattr(got, f.name), getattr(want, f.name)
        assert a.dtype == b.dtype and a.shape == b.shape, f.name
        np.testing.assert_allclose(a, b, rtol=1e-12 if a.dtype == np.float64 else 1e-5)


# ---- jit: arguments and results --------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (0,), (1,), (5,), (3, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_frozen_dataclass_is_an_argument_and_a_result(backend, shape, dtype):
    p = Params(RNG.standard_normal(shape).astype(dtype), RNG.standard_normal(shape).astype(dtype))
    x = RNG.standard_normal(shape).astype(dtype)
    _assert_params(numfn.jit(_affine, backend=backend)(p, x), _affine(p, x))


def test_non_contiguous_and_broadcast_fields(backend):
    w = RNG.standard_normal((6, 8))[::2, ::-3]
    p = Params(w, RNG.standard_normal(w.shape[1]))   # b broadcasts along rows
    x = RNG.standard_normal(w.shape).T.copy().T
    _assert_params(numfn.jit(_affine, backend=backend)(p, x), _affine(p, x))


def test_nested_containers_in_and_out(backend):
    m = Model(Params(RNG.standard_normal(4), RNG.standard_normal(4)), {"u": RNG.standard_normal(4), "k": (2.0,)},
              scale=3.0)

    def f(m):
        out = Model(Params(m.params.w * m.scale, m.extra["u"] + m.params.b), {"k": m.extra["k"]}, scale=m.scale + 1)
        return out, [m.params.w.sum()]

    got, [s] = numfn.jit(f, backend=backend)(m)
    want, [ws] = f(m)
    _assert_params(got.params, want.params)
    assert isinstance(got.extra, dict) and set(got.extra) == {"k"}
    np.testing.assert_allclose(got.extra["k"][0], want.extra["k"][0])
    np.testing.assert_allclose(got.scale, want.scale)
    np.testing.assert_allclose(s, ws)


def test_register_dataclass_with_meta_fields_are_static(backend):
    calls = []

    def f(c: Config):
        calls.append(c.order)
        assert isinstance(c.order, int) and c.name == "poly"   # meta fields stay Python values while tracing
        return Config(sum(c.x ** k for k in range(c.order + 1)), c.order, c.name)

    g = numfn.jit(f, backend=backend)
    x = RNG.standard_normal(7)
    for order in (2, 3, 2):
        out = g(Config(x, order, "poly"))
        assert isinstance(out, Config) and (out.order, out.name) == (order, "poly")
        np.testing.assert_allclose(out.x, sum(x ** k for k in range(order + 1)), rtol=1e-12)
    assert len(g.specializations) == 2 and calls == [2, 3]


def test_a_mutable_registered_dataclass(backend):
    s = State(RNG.standard_normal(3), np.int64(4))
    out = numfn.jit(lambda s: State(s.x * 2, s.step + 1), backend=backend)(s)
    assert type(out) is State and out.step == 5 and out.step.dtype == np.int64
    np.testing.assert_allclose(out.x, s.x * 2)


@pytest.mark.parametrize("unit", ["rad", "deg"])
def test_register_pytree_node(backend, unit):
    def to_cartesian(p: Polar):
        t = np.deg2rad(p.theta) if p.unit == "deg" else p.theta
        return p.r * np.cos(t), p.r * np.sin(t)

    def rotate(p: Polar, by):
        return Polar(p.r, p.theta + by, p.unit)

    p = Polar(RNG.random(5), RNG.random(5) * 90, unit)
    got = numfn.jit(to_cartesian, backend=backend)(p)
    for a, b in zip(got, to_cartesian(p)): np.testing.assert_allclose(a, b, rtol=1e-12)
    r = numfn.jit(rotate, backend=backend)(p, 0.5)
    assert type(r) is Polar and r.unit == unit
    np.testing.assert_allclose(r.theta, p.theta + 0.5)
    np.testing.assert_array_equal(r.r, p.r)


def test_the_structure_is_part_of_the_specialization_key():
    f = numfn.jit(lambda p: p.w + p.b)
    w, b = np.ones(3), np.arange(3.0)
    np.testing.assert_array_equal(f(Params(w, b)), w + b)
    np.testing.assert_array_equal(f(Params(w, b)), w + b)
    assert len(f.specializations) == 1
    np.testing.assert_array_equal(f(OtherParams(w, b)), w + b)   # another class: another specialization
    np.testing.assert_array_equal(f(Params(w * 2, b)), w * 2 + b)   # same structure: no new one
    assert len(f.specializations) == 2
    g = numfn.jit(lambda p: p.r * 2)
    g(Polar(w, b, "rad")), g(Polar(w, b, "deg")), g(Polar(w, b, "rad"))
    assert len(g.specializations) == 2   # aux data (the unit) selects the specialization


# ---- vmap, grad, loops -----------------------------------------------------------------------------------------------
def test_vmap_over_a_dataclass_with_in_axes_of_the_same_class(backend):
    p = Params(RNG.standard_normal((4, 3)), RNG.standard_normal(3))
    x = RNG.standard_normal((4, 3))
    f = numfn.jit(numfn.vmap(_affine, in_axes=(Params(0, None), 0)), backend=backend)
    got = f(p, x)
    want = [_affine(Params(p.w[i], p.b), x[i]) for i in range(4)]
    _assert_params(got, Params(np.stack([w.w for w in want]), np.stack([w.b for w in want])))
    with pytest.raises(ValueError, match="does not match the structure"):
        numfn.vmap(_affine, in_axes=(OtherParams(0, None), 0))(p, x)


def test_grad_of_a_dataclass_argument_is_the_same_class(backend):
    p = Params(RNG.standard_normal(5), RNG.standard_normal(5))
    x = RNG.standard_normal(5)

    def loss(p, x):
        return np.sum((p.w * x + p.b) ** 2)

    g = numfn.jit(numfn.grad(loss), backend=backend)(p, x)
    r = p.w * x + p.b
    _assert_params(g, Params(2 * r * x, 2 * r))


def test_a_dataclass_as_loop_state(backend):
    def f(s: State, n):
        return numfn.fori_loop(0, n, lambda i, s: State(s.x * 0.5 + i, s.step + 1), s)

    s = State(RNG.standard_normal(4), np.int64(0))
    out = numfn.jit(f, backend=backend)(s, 6)
    x = s.x.copy()
    for i in range(6): x = x * 0.5 + i
    assert type(out) is State and out.step == 6
    np.testing.assert_allclose(out.x, x, rtol=1e-12)


# ---- errors and the structure itself (compile-free) ------------------------------------------------------------------
@pytest.mark.nocompile
def test_an_unregistered_class_is_a_type_error_naming_the_argument():
    f = numfn.jit(lambda a, obj: a)
    with pytest.raises(TypeError, match=r"argument 'obj' of type Unregistered .*register Unregistered with "
                                        r"numfn\.register_pytree_node"):
        f(np.ones(2), Unregistered(np.ones(2)))
    with pytest.raises(TypeError, match=r"argument 'obj' of type Mutable .*mutable dataclass: make it frozen .*"
                                        r"numfn\.register_dataclass"):
        f(np.ones(2), Mutable(np.ones(2)))


@pytest.mark.nocompile
def test_a_bad_leaf_inside_a_dataclass_is_named_by_its_field():
    f = numfn.jit(lambda m: m.params.w)
    with pytest.raises(TypeError, match=r"argument 'm'\.params\.b of type str"):
        f(Model(Params(np.ones(2), "oops"), {}))


@pytest.mark.nocompile
def test_flatten_and_unflatten_round_trip():
    m = Model(Params(1.0, np.ones(2)), {"b": 2, "a": [3, Polar(4, 5, "deg")]}, scale=6.0)
    leaves, tree = flatten(m)
    assert leaves[:2] == [1.0, leaves[1]] and leaves[2:] == [3, 4, 5, 2, 6.0]
    back = unflatten(tree, leaves)
    assert type(back) is Model and type(back.params) is Params and back.extra["a"][1].unit == "deg"
    assert back.scale == 6.0 and back.cached == 0
    assert repr(tree) == "Model(Params(*, *), {'b': *, 'a': [*, Polar(*, *)]}, *)"
    _, other = flatten(Model(Params(1.0, np.ones(2)), {"b": 2, "a": [3, Polar(4, 5, "rad")]}, scale=6.0))
    assert other != tree and hash(tree) == hash(flatten(m)[1])


@pytest.mark.nocompile
def test_registration_errors():
    class Unhashable:
        def __init__(self, x): self.x = x

    numfn.register_pytree_node(Unhashable, lambda u: ((u.x,), [1]), lambda aux, ch: Unhashable(*ch))
    with pytest.raises(TypeError, match="unhashable aux_data"):
        flatten(Unhashable(1.0))
    with pytest.raises(ValueError, match="already a container"):
        numfn.register_pytree_node(Polar, lambda p: ((), None), lambda a, c: None)
    with pytest.raises(ValueError, match="already a container"):
        numfn.register_pytree_node(dict, lambda p: ((), None), lambda a, c: None)
    with pytest.raises(TypeError, match="not a class"):
        numfn.register_pytree_node(Polar(1, 2), lambda p: ((), None), lambda a, c: None)
    with pytest.raises(TypeError, match="not a dataclass"):
        numfn.register_dataclass(Unregistered)

    @dataclasses.dataclass
    class D:
        x: float
        y: float

    with pytest.raises(ValueError, match="no field 'z'"):
        numfn.register_dataclass(D, data_fields=["x", "z"])
    with pytest.raises(ValueError, match="exactly one of data_fields and meta_fields .*y"):
        numfn.register_dataclass(D, data_fields=["x"])


@pytest.mark.parametrize("make, hint", [(Unregistered, r"register Unregistered with numfn\.register_pytree_node"),
                                        (Mutable, r"Mutable is a mutable dataclass: make it frozen")])
def test_returning_an_unregistered_class_is_a_type_error_saying_how_to_register_it(make, hint):
    with pytest.raises(TypeError, match=rf"returns a {make.__name__}, not an array, a number or a container .*{hint}"):
        numfn.jit(lambda x: make(x))(np.ones(2))
