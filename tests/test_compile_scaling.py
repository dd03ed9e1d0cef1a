"""Compile time grows with the program, not faster: doubling a generated program at most about doubles the work of
each stage (tracing, simplifying, scheduling, rendering, the native compiler's input), and the work of a loop does
not depend on its trip count or on how deeply loops nest.

Work is counted, not timed (numfn.progress.counting_work: nodes the graph walkers visit, candidates the scheduler
tries, lines of native source), so these tests hold on a loaded machine. Every program's result is also checked
against NumPy's."""
import importlib.util
import sys

import numpy as np
import pytest

import numfn
from numfn import progress
import numfn.schedule.kernels as kernels

STAGES = ("tracing", "simplifying", "scheduling", "rendering", "compiling")
# a stage may grow a little faster than its program around a fixed part (the first kernels of each kind are new;
# later ones equal an earlier one), but not twice as fast
MAX_GROWTH = 2.3


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("NUMFN_DISABLE_CACHE", "1")   # every compilation runs every stage


def _module(tmp_path, name: str, source: str):
    """A module written from `source` (numfn converts loops from a function's source file)."""
    path = tmp_path / f"{name}.py"
    path.write_text("import numpy as np\n\n" + source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _work(fn, *args, **jit_options) -> dict:
    """Each stage's work compiling `fn` for `args`, after checking its result against NumPy's."""
    f = numfn.jit(fn, **jit_options)

    def fresh():
        return [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with progress.counting_work() as counts:
        out = f(*fresh())
    np.testing.assert_allclose(out, fn(*fresh()), rtol=1e-12, atol=1e-12)
    assert all(counts[s] > 0 for s in STAGES), counts
    return dict(counts)


def _straight_line(n: int) -> str:
    kinds = ["    a = np.sin(a) * y", "    a = a - np.exp(a).sum(axis=1, keepdims=True) * 0.01",
             "    a = np.sqrt(np.abs(a)) + y", "    a = (a @ w) * 0.1", "    a = np.maximum(a, a.mean(axis=0))"]
    body = [kinds[i % len(kinds)] for i in range(n)]
    return "\n".join(["def f(x, y, w):", "    a = x"] + body + ["    return a", ""])


def test_doubling_a_straight_line_program_at_most_doubles_each_stage(tmp_path, monkeypatch):
    # a small join window, so that the scheduler's bound on candidates is reached by programs this short
    monkeypatch.setattr(kernels, "JOIN_WINDOW", 3)
    rng = np.random.default_rng(0)
    args = rng.random((6, 4)), rng.random((6, 4)), rng.random((4, 4)) / 4
    small = _work(_module(tmp_path, "scaling_line_20", _straight_line(20)).f, *args)
    large = _work(_module(tmp_path, "scaling_line_40", _straight_line(40)).f, *args)
    growth = {s: large[s] / small[s] for s in STAGES}
    assert all(g <= MAX_GROWTH for g in growth.values()), growth


LOOP_BODY = """
def f(x, steps):
    out = x.copy()
    for t in range(steps):
{body}
    return out
"""


def _loop_body(n: int) -> str:
    kinds = ["        out[1:-1] = out[1:-1] + 0.1 * (out[:-2] - 2 * out[1:-1] + out[2:])",
             "        out = np.tanh(out) * 0.9 + 0.1 * x", "        out[0] = out.mean()"]
    return "\n".join(kinds[i % len(kinds)] for i in range(n))


def test_doubling_a_loop_body_at_most_doubles_each_stage(tmp_path):
    x = np.random.default_rng(1).random(16)
    small = _work(_module(tmp_path, "scaling_body_6", LOOP_BODY.format(body=_loop_body(6))).f, x, 30,
                  static_argnums=(1,))
    large = _work(_module(tmp_path, "scaling_body_12", LOOP_BODY.format(body=_loop_body(12))).f, x, 30,
                  static_argnums=(1,))
    growth = {s: large[s] / small[s] for s in STAGES}
    assert all(g <= MAX_GROWTH for g in growth.values()), growth


def test_a_loops_work_does_not_depend_on_its_trip_count(tmp_path):
    module = _module(tmp_path, "scaling_trips", LOOP_BODY.format(body=_loop_body(3)))
    x = np.random.default_rng(2).random(16)
    short = _work(module.f, x, 100, static_argnums=(1,))
    long = _work(module.f, x, 10_000, static_argnums=(1,))
    growth = {s: long[s] / short[s] for s in STAGES}
    assert all(g <= 1.1 for g in growth.values()), growth


NESTED = {
    1: """
def f(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        v = x[i] * 2.0
        out[i] = v + 1.0
    return out
""",
    2: """
def f(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            v = x[i, j] * 2.0
            out[i, j] = v + 1.0
    return out
""",
    3: """
def f(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            for k in range(x.shape[2]):
                v = x[i, j, k] * 2.0
                out[i, j, k] = v + 1.0
    return out
""",
}


def test_nesting_loops_adds_kernels_but_does_not_multiply_them(tmp_path):
    """Each level of a nest of native loops (static ranges longer than the unroll limit, writing in place) should
    add a loop, not a copy of the levels inside it."""
    x = np.random.default_rng(3).random((20, 20, 20))
    inputs = {1: x.reshape(400, 20), 2: x.reshape(20, 400)[:, :20].copy(), 3: x}
    kernel_counts, work = {}, {}
    for depth, source in NESTED.items():
        fn = _module(tmp_path, f"scaling_nest_{depth}", source).f
        work[depth] = _work(fn, inputs[depth])
        kernel_counts[depth] = len(numfn.jit(fn).specialize(inputs[depth]).kernel_items)
    assert kernel_counts[3] - kernel_counts[2] <= kernel_counts[2] - kernel_counts[1] + 1, kernel_counts
    # (the nests differ in more than their depth, the work of each level too: a copy per level doubled it)
    total = {d: sum(w.values()) for d, w in work.items()}
    assert total[3] <= 1.6 * total[2] and total[2] <= 1.6 * total[1], total


RK4 = """
def f(y0, t):
    def rhs(y):
        return np.array([y[1], -np.sin(y[0]) - 0.1 * y[1]])
    ys = np.zeros((len(t), 2))
    ys[0] = y0
    for i in range(len(t) - 1):
        h = t[i + 1] - t[i]
        y = ys[i]
        k1 = rhs(y)
        k2 = rhs(y + h / 2 * k1)
        k3 = rhs(y + h / 2 * k2)
        k4 = rhs(y + h * k3)
        ys[i + 1] = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return ys
"""


def test_a_loop_body_is_scheduled_once_however_many_rounds_schedule_around_it(tmp_path, monkeypatch):
    """The scheduler's rounds around a loop each number the buffers around it anew, and make the loop's step for
    that numbering; its inside is scheduled only for the step that runs (items.LoopKernel.parts). Scheduling it
    in every round made an RK4 loop of 199 steps take 4 s to schedule, 0.5 s now."""
    import numfn.schedule.regions as regions
    calls = []
    real = regions._sub_schedule

    def counted(sink, *args, **kwargs):
        calls.append(sink)
        return real(sink, *args, **kwargs)
    monkeypatch.setattr(regions, "_sub_schedule", counted)
    module = _module(tmp_path, "scaling_rk4", RK4)
    rounds = []
    real_build = kernels.build_kernels

    def build(*args, **kwargs):
        rounds.append(1)
        return real_build(*args, **kwargs)
    import numfn.schedule.scheduler as scheduler
    monkeypatch.setattr(scheduler, "build_kernels", build)
    t = np.linspace(0.0, 10.0, 200)
    _work(module.f, np.array([1.0, 0.0]), t)
    assert len(rounds) > 4   # (the outer rounds, and the inner schedules' own)
    assert len(calls) == 2, len(calls)   # the loop's condition and its body, once each


def _padded(a):
    return np.pad(a, ((0, 0), (1, 1), (1, 1), (0, 0))) * 2.0


def test_unrolled_border_selects_stay_small():
    """Short loops whose position selects a value are unrolled (codegen/lower.py's choose_unrolls), but not two
    of them into a product of copies: the padded input of a 3x3 convolution unrolled 14 x 14 copies of its border
    selects, 1,100 lines of LLVM IR for 1,568 elements."""
    from helpers import check
    a = np.random.default_rng(0).standard_normal((2, 12, 12, 4))
    check(_padded, a, backend="llvm")
    source = numfn.jit(_padded).specialize(a).source
    assert source.count("\n") < 400


CONV_NEST = """
TRACES = []

def f(x, w):
    n, h, wd = x.shape
    out = np.zeros((n, h - 1, wd - 1))
    for i in range(h - 1):
        for j in range(wd - 1):
            patch = x[:, i:i + 2, j:j + 2]
            TRACES.append(1)
            out[:, i, j] = np.sum(patch * w, axis=(1, 2))
    return out
"""


def test_a_nested_loop_body_is_traced_a_few_times_per_level(tmp_path):
    """A native loop's body is traced once per thing the tracer learns about it (outer arrays it writes, the checks it
    makes, its variables' types), and the bodies of the loops inside it at every trace of it: the innermost body of
    a nest of d levels is traced that count to the power d. Learning what one trace shows at once keeps the count
    at three per level (a convolution's double loop over pixels: 16 traces of its body, now 9)."""
    from helpers import check
    module = _module(tmp_path, "scaling_conv_nest", CONV_NEST)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((3, 9, 8)), rng.standard_normal((2, 2))
    check(module.f, x, w, backend="llvm")
    del module.TRACES[:]
    numfn.jit(module.f).specialize(x, w)
    assert len(module.TRACES) <= 9
