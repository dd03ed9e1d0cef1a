"""Issue 28 leftovers: constructs that still stopped real code. Conditional expressions and and/or/not on traced
values outside if/while tests (numfn.trace.expressions), against NumPy on the same inputs, on both backends."""
import numpy as np
import pytest

import numfn
from helpers import check, check_raises_like

RNG = np.random.default_rng(2829)


# ---- 1. x if c else y, a and b, a or b, not a, chained comparisons on traced values ---------------------------

def sign_flip(x):
    s = x.sum()
    y = x if s > 0 else -x
    return y


def sign_flip_return(x):
    return x * 2 if x.sum() > 0 else x - 1


def nested(x):
    s = x.sum()
    return x if s > 1 else (2 * x if s < -1 else np.zeros_like(x))


def in_loop(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] if x[i] > 0 else 0.5 * x[i]
    return out


def in_loop_traced_trip(x, n):
    acc = 0.0
    for i in range(n):
        acc = acc + (x[i] if x[i] > acc else -x[i])
    return acc


def apply(g, v):
    return g(v)


def lambda_to_helper(x):
    return apply(lambda v: v if v.sum() > 0 else 2 * v, x)


def comprehension(x, y):
    return [v if v.sum() > 0 else -v for v in (x, y)]


def and_bools(x):
    s = x.sum()
    return (s > 0) and (x.max() < 2)


def and_values(x):
    s = x.sum()
    return s and x.max()


def or_default(x):
    t = x.sum()
    return t or 5.0


def or_chain(x):
    a, b = x[0], x[1]
    return a or b or 7.0


def not_value(x):
    return not (x.sum() > 0)


def chained(x):
    s = x.mean()
    return 0 < s < 1


def chained_three(x):
    s = x.mean()
    return -1 <= s < x.max() <= 2


def chained_in_if(x):
    s = x.mean()
    if 0 < s < 1:
        return x + 1
    return x - 1


def guarded_index(x):
    k = (x > 0).sum()            # the number of positives: x.shape[0] when all are, out of bounds for x[k]
    v = x[k] if k < x.shape[0] else -1.0
    return v


def guarded_index_and(x):
    k = (x > 0).sum()
    if k < x.shape[0] and x[k] < 0:
        return x[k]
    return 0.0


def guarded_index_or(x):
    k = (x > 0).sum()
    return bool(k >= x.shape[0] or x[k] < 0)


def scan_positive(x):
    i = 0
    while i < x.shape[0] and x[i] > 0:
        i += 1
    return i


def static_condition(x):
    # decided while tracing (a shape): plain Python, so the sides may differ in kind
    y = x if x.shape[0] > 2 else None
    z = x.shape[0] > 2 and x[:2]
    return y, z


POSITIVE = np.array([0.25, 0.5, 0.125])
MIXED = np.array([1.0, -2.0, 3.0, -0.5])
NEGATIVE = -POSITIVE
ZEROS = np.zeros(3)

CASES = [
    (sign_flip, (MIXED,)), (sign_flip, (NEGATIVE,)), (sign_flip, (ZEROS,)),
    (sign_flip_return, (MIXED,)), (sign_flip_return, (NEGATIVE,)),
    (nested, (MIXED,)), (nested, (np.array([-3.0, 0.5]),)), (nested, (np.array([0.5, 0.25]),)),
    (in_loop, (RNG.standard_normal(9),)),
    (lambda_to_helper, (MIXED,)), (lambda_to_helper, (NEGATIVE,)),
    (comprehension, (MIXED, NEGATIVE)),
    (and_bools, (MIXED,)), (and_bools, (POSITIVE,)), (and_bools, (NEGATIVE,)),
    (and_values, (MIXED,)), (and_values, (ZEROS,)),
    (or_default, (MIXED,)), (or_default, (ZEROS,)),
    (or_chain, (np.array([0.0, 0.0]),)), (or_chain, (np.array([0.0, 2.0]),)), (or_chain, (np.array([3.0, 0.0]),)),
    (not_value, (MIXED,)), (not_value, (NEGATIVE,)),
    (chained, (POSITIVE,)), (chained, (MIXED,)), (chained, (NEGATIVE,)),
    (chained_three, (POSITIVE,)), (chained_three, (np.array([0.5, 2.5]),)), (chained_three, (np.array([-3.0, 0.0]),)),
    (chained_in_if, (POSITIVE,)), (chained_in_if, (MIXED,)),
    (guarded_index, (MIXED,)), (guarded_index, (POSITIVE,)),
    (guarded_index_and, (MIXED,)), (guarded_index_and, (POSITIVE,)),
    (guarded_index_or, (MIXED,)), (guarded_index_or, (POSITIVE,)),
    (scan_positive, (np.array([1.0, 2.0, -1.0, 3.0]),)), (scan_positive, (POSITIVE,)),
    (static_condition, (MIXED,)), (static_condition, (np.array([1.0, 2.0]),)),
]


@pytest.mark.parametrize("fn,args", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_conditional_expressions(fn, args, backend):
    check(fn, *args, backend=backend)


@pytest.mark.parametrize("n", [0, 1, 7])
def test_conditional_in_loop_with_traced_trip_count(n, backend):
    x = RNG.standard_normal(8)
    check(in_loop_traced_trip, x, n, backend=backend)


def many_as_condition(x):
    return x if x > 0 else -x


def many_and(x):
    return (x > 0) and x


def empty_or(x):
    return x[:0] or 1.0


@pytest.mark.parametrize("fn", [many_as_condition, many_and, empty_or])
def test_condition_of_other_than_one_element_raises_like_numpy(fn, backend):
    check_raises_like(fn, MIXED, backend=backend, match="truth value")


def test_sides_of_different_shapes_name_the_problem(backend):
    def f(x):
        return x if x.sum() > 0 else x[:2]
    with pytest.raises(numfn.NumfnError, match="different shapes"):
        numfn.jit(f, backend=backend)(MIXED)


def test_only_the_chosen_side_runs():
    """A side with an effect (a write into an array) is a branch, not a select: the other side's write never
    happens."""
    def write(out, v):
        out[0] = v
        return v

    def f(x):
        out = np.zeros(2)
        s = x.sum()
        r = write(out, 1.0) if s > 0 else write(out[1:], 2.0)
        return out, r
    for x in (MIXED, NEGATIVE):
        check(f, x, backend="llvm")


# ---- 2. isinstance of traced values: NumPy's answers ------------------------------------------------------------

def kinds(v):
    return (isinstance(v, np.ndarray), isinstance(v, np.generic), isinstance(v, float), isinstance(v, int),
            isinstance(v, (np.generic, float)), isinstance(v, np.floating), isinstance(v, np.integer),
            isinstance(v, bool), isinstance(v, np.bool_), isinstance(v, (list, tuple)))


def kinds_of_values(x, i, z):
    s = x.sum()
    values = {"array": x, "element": x[0], "element at traced index": x[i], "sum": s, "max": x.max(),
              "np.sum": np.sum(x), "mean": x.mean(), "product": x * 2, "2-d": x.reshape(1, -1), "x[...]": x[...],
              "np.array of a scalar": np.array(s), "python int": i, "python int arithmetic": i + 1,
              "count": (x > 0).sum(), "comparison": s > 0, "python float": 2.0 * i, "scalar product": np.float64(3) * s,
              "slice": x[1:], "sqrt": np.sqrt(s), "zeros(())": np.zeros(()), "0-d argument": z, "0-d + 1": z + 1,
              "int array": x.astype(np.int32), "int element": x.astype(np.int32)[1], "complex": np.exp(1j * s)}
    return {k: kinds(v) for k, v in values.items()}


def test_isinstance_answers_as_numpy():
    check(kinds_of_values, np.array([1.0, -2.0, 3.0]), 1, np.array(2.5), backend="llvm")


def as_float_array(v):
    if isinstance(v, np.ndarray): return v.astype(np.float64)
    if isinstance(v, (np.generic, float)): return np.full(2, v)
    return np.asarray(v, dtype=np.float64)


def isinstance_decides(x):
    return as_float_array(x) * 2, as_float_array(x.sum()), np.asanyarray(x) + np.asarray(x[0])


def test_isinstance_decides_a_helper(backend):
    check(isinstance_decides, np.array([1, 2, 3], dtype=np.int16), backend=backend)
    check(isinstance_decides, np.array([0.5, -1.5]), backend=backend)


def test_type_stays_honest():
    """type(t) is numfn's class (not np.ndarray), while isinstance sees NumPy's; numfn's own code sees Tensor."""
    from numfn.trace.tensor import Tensor
    seen = []

    def f(x):
        seen.append((type(x), x.__class__, isinstance(x, Tensor), isinstance(x.sum(), np.float64)))
        return x + 1
    numfn.jit(f)(np.ones(3))
    assert seen == [(Tensor, np.ndarray, True, True)]


# ---- 3. vmap and svmap inside jit over closures reading traced values ---------------------------------------------

def vmap_closure(x, w):
    s = w.sum()                                    # an outer scalar computed from data
    return numfn.vmap(lambda r: r * w + s)(x)      # and an outer array


def svmap_closure(x, w):
    s = (w * w).sum()
    return numfn.svmap(lambda r: r @ w - s)(x)


def vmap_closure_helper(x, w):
    scale = w.max()
    pair = [w, w[::-1]]

    def shift(r):                                  # a nested function the mapped one calls, itself a closure
        return r + pair[1] * scale

    return numfn.vmap(lambda r, c: shift(r) * c, in_axes=(1, None))(x.T, w[0])


def vmap_closure_branch(x, w):
    t = w.mean()

    def example(r):
        if r.sum() > t:
            return r - t
        return r * 0.5
    return numfn.vmap(example)(x)


CLOSURE_CASES = [
    (vmap_closure, lambda x, w: np.stack([r * w + w.sum() for r in x])),
    (svmap_closure, lambda x, w: np.stack([r @ w - (w * w).sum() for r in x])),
    (vmap_closure_helper, lambda x, w: np.stack([(r + w[::-1] * w.max()) * w[0] for r in x])),
    (vmap_closure_branch, lambda x, w: np.stack([r - w.mean() if r.sum() > w.mean() else r * 0.5 for r in x])),
]


@pytest.mark.parametrize("fn,reference", CLOSURE_CASES, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("rows", [1, 5])
def test_map_inside_jit_reads_enclosing_values(fn, reference, rows, backend):
    x, w = RNG.standard_normal((rows, 3)), RNG.standard_normal(3)
    check(fn, x, w, backend=backend, expected=reference(x, w))


def test_map_inside_jit_takes_new_enclosing_values_each_call():
    """The captured values are inputs of the batched graph, not constants of one trace."""
    jf = numfn.jit(vmap_closure)
    x = RNG.standard_normal((4, 3))
    for _ in range(3):
        w = RNG.standard_normal(3)
        np.testing.assert_allclose(jf(x, w), np.stack([r * w + w.sum() for r in x]), rtol=1e-12)


# ---- 4. flip and roll of a window of run-time length in a native loop ---------------------------------------------
# (more than 64 iterations: the loop runs natively, its variable traced, so a[:k] has a run-time length)
N = 70


def levinson_durbin(r):
    order = r.shape[0] - 1
    a = np.zeros(order + 1)
    a[0] = 1.0
    e = r[0]
    for k in range(1, order + 1):
        acc = r[k] + np.dot(a[1:k], np.flip(r[1:k]))
        lam = -acc / e
        a[1:k + 1] = a[1:k + 1] + lam * np.flip(a[:k])
        e = e * (1 - lam * lam)
    return a, e


def levinson_durbin_slices(r):
    order = r.shape[0] - 1
    a = np.zeros(order + 1)
    a[0] = 1.0
    e = r[0]
    for k in range(1, order + 1):
        lam = -(r[k] + np.dot(a[1:k], r[k - 1:0:-1])) / e
        a[1:k] = a[1:k] + lam * a[k - 1:0:-1]
        a[k] = lam
        e = e * (1 - lam * lam)
    return a, e


def flip_dot_every_length(r, y):
    n = r.shape[0]
    out = np.zeros(n + 1)
    for k in range(n + 1):               # lengths 0, 1, ..., the bound
        out[k] = np.dot(np.flip(r[:k]), y[:k]) + np.flipud(r[:k]).sum() * 0.5
    return out


def flip_writes_through(a):
    out = a.copy()
    for k in range(1, a.shape[0] + 1):   # (the first iteration writes: the rest is a native loop)
        w = np.flip(out[:k])             # a view: its first element is out[k-1]
        w[0] = w[0] + k * w[-1]
    return out


def roll_every_length(r, y, s):
    n = r.shape[0]
    out = np.zeros(n + 1)
    for k in range(n + 1):
        out[k] = np.dot(np.roll(r[:k], s), y[:k]) + np.roll(r[:k], -k // 3 - 1)[:1].sum()
    return out


def flip_rows(m):
    out = np.zeros(m.shape[1])
    for k in range(m.shape[0] + 1):
        w = m[:k]
        out = out + np.flip(w, axis=0)[:1].sum(axis=0) + np.fliplr(w)[:, 0].sum() + np.flip(w).sum() \
            + np.roll(w, 1, axis=1)[:1].sum(axis=0)
    return out


def levinson_input(n):
    r = np.exp(-0.3 * np.arange(n)) * np.cos(0.2 * np.arange(n))
    r[0] += 1.0
    return r


MOVEMENT_CASES = [
    (levinson_durbin, (levinson_input(N),)), (levinson_durbin, (levinson_input(100),)),
    (levinson_durbin_slices, (levinson_input(N),)),
    (flip_dot_every_length, (RNG.standard_normal(N), RNG.standard_normal(N))),
    (flip_writes_through, (RNG.standard_normal(N),)),
    (roll_every_length, (RNG.standard_normal(N), RNG.standard_normal(N), 3)),
    (roll_every_length, (RNG.standard_normal(N), RNG.standard_normal(N), -5)),
    (flip_rows, (RNG.standard_normal((N, 3)),)),
]


@pytest.mark.parametrize("fn,args", MOVEMENT_CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_movement_of_a_window_of_run_time_length(fn, args, backend):
    check(fn, *args, backend=backend, scale=float(N))


def flip_selection(x):
    y = x[x > 0]
    return np.flip(y), np.roll(y, 2), np.flip(y)[:2].sum()


@pytest.mark.parametrize("x", [np.array([1.0, -2.0, 3.0, 4.0, -0.5]), -np.ones(4), np.array([2.0])],
                         ids=["some", "none", "one"])
def test_movement_of_a_selection(x, backend):
    check(flip_selection, x, backend=backend)


def roll_2d_window_no_axis(m):
    out = np.zeros(m.shape[1])
    for k in range(m.shape[0] + 1):
        out = out + np.roll(m[:k], 1)[:1].sum(axis=0)
    return out


def test_roll_without_axis_of_a_2d_window_names_itself():
    with pytest.raises(numfn.NumfnError, match="numpy.roll without an axis"):
        numfn.jit(roll_2d_window_no_axis)(RNG.standard_normal((N, 2)))


# ---- 5. bincount's minlength (and the coverage page that said it lacked it) ---------------------------------------

def bincount_minlength(x, w):
    return (np.bincount(x, minlength=3), np.bincount(x, minlength=20), np.bincount(x, w, minlength=12),
            np.bincount(x[:0], minlength=4), np.bincount(x.astype(np.uint8), minlength=300))


@pytest.mark.parametrize("x", [np.array([0, 1, 1, 5, 9]), np.array([2]), np.array([11, 0, 11])],
                         ids=["several", "one", "max-at-minlength"])
def test_bincount_minlength(x, backend):
    check(bincount_minlength, x, RNG.standard_normal(x.shape[0]), backend=backend)


def bincount_negative_minlength(x):
    return np.bincount(x, minlength=-1)


def test_bincount_negative_minlength_raises_like_numpy():
    check_raises_like(bincount_negative_minlength, np.array([1, 2]), backend="llvm", match="minlength")


@pytest.mark.nocompile
def test_coverage_page_knows_bincount_takes_minlength():
    """A call through a module (builtins.max(n, minlength)) is not a Tensor method passing the keyword on."""
    import numfn.numpy as fnp
    from numfn.tools import coverage
    entry = coverage.describe("bincount", np.bincount, fnp.bincount)
    assert "minlength" in entry.parameters and "minlength" not in entry.lacks


# ---- conversions that must not change what Python does ------------------------------------------------------------

class Base:
    def scale(self, x):
        return x * 2


class Derived(Base):
    def scale(self, x):
        s = x.sum()
        y = super().scale(x) if x.shape[0] > 1 else x      # super() in a conditional expression: not moved
        return y if s > 0 else -y

    def __call__(self, x):
        class Local:
            k = 3
            v = k if k > 2 else 0                           # a class body's names: left as Python's
        return self.scale(x) + Local.v


def call_derived(x):
    return Derived()(x)


@pytest.mark.parametrize("x", [MIXED, NEGATIVE, np.array([-2.0])], ids=["mixed", "negative", "one"])
def test_method_with_super_and_class_body(x, backend):
    check(call_derived, x, backend=backend)


def test_walrus_in_a_traced_conditional_is_left_to_python():
    with pytest.raises(numfn.TracerConversionError):   # (m := ...) on a traced condition: left to Python, which
        numfn.jit(walrus_and_locals)(MIXED)            # cannot decide it


def walrus_and_locals(x):
    s = x.sum()
    z = (m := x.max()) if s > 0 else x.min()                # := binds in the function: left as Python's
    return z, (len(locals()) > 0 and 1.0)


def effect_only_when_chosen(x):
    out = np.zeros(3)

    def mark(v):
        out[0] = v
        return v > 0
    s = x.sum()
    first = (s > 0) and mark(s)          # mark runs only when s > 0
    second = (s > 0) or mark(-s)         # ... and here only when it is not
    return out, first, second


def scan_chained(x):
    i = x.shape[0] - 1
    while 0 <= i < x.shape[0] and x[i] > 0:   # x[-1] is never read: the chain fails first
        i -= 1
    return i


@pytest.mark.parametrize("fn,x", [(effect_only_when_chosen, MIXED), (effect_only_when_chosen, NEGATIVE),
                                  (scan_chained, POSITIVE), (scan_chained, MIXED),
                                  (scan_chained, np.array([-1.0, 2.0, 3.0]))],
                         ids=["and-or-effects-mixed", "and-or-effects-negative", "chain-while-positive",
                              "chain-while-mixed", "chain-while-first"])
def test_short_circuit_effects(fn, x, backend):
    check(fn, x, backend=backend)


class Model:
    def __init__(self, w):
        self.w = w

    def apply(self, r):
        return r * self.w


class Slotted:
    __slots__ = ("w",)

    def __init__(self, w):
        self.w = w


def vmap_reads_attribute(x, w):
    model = Model(w)
    other = Model(x[0])                              # same shape as an example: must not be taken for one
    return numfn.vmap(model.apply)(x), numfn.vmap(lambda r: other.apply(r) + model.w)(x)


def vmap_reads_slotted_attribute(x, w):
    held = Slotted(w)
    return numfn.vmap(lambda r: r * held.w)(x)


@pytest.mark.parametrize("rows", [1, 4])
def test_map_inside_jit_reads_an_objects_attributes(rows, backend):
    x, w = RNG.standard_normal((rows, 3)), RNG.standard_normal(3)
    check(vmap_reads_attribute, x, w, backend=backend, expected=(x * w, x * x[0] + w))


def test_map_inside_jit_reading_a_slot_names_the_problem():
    with pytest.raises(numfn.NumfnError, match="an object's attribute"):
        numfn.jit(vmap_reads_slotted_attribute)(RNG.standard_normal((4, 3)), RNG.standard_normal(3))
