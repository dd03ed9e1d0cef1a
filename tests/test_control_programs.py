"""Generated loop programs: hypothesis builds small functions from Python loops, branches, break/continue and
writes into arrays; each is written to a module (the converter reads source), compiled by numfn and compared with
the same function run by Python and NumPy."""
import importlib.util
import itertools
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numfn

_counter = itertools.count()

# statements of a loop body over the state (x: float64[6], acc: float64 scalar, out: float64[6]); `i` is the
# loop index and `n` the trip count (a traced int64 or a Python int)
BODY = [
    "x = x * 0.5 + 1.0",
    "x = np.roll(x, 1) - 0.25 * x",
    "acc = acc + x.sum()",
    "acc = acc * 0.9 + x.max()",
    "out[i % 6] = out[i % 6] + x[i % 6]",
    "out[i % 6:] += 0.5",
    "x[: i % 6] = x[: i % 6] * 2.0 - 1.0",
    "if x.sum() > 3.0:\n    x = x - 1.0\nelse:\n    x = x + 0.5",
    "if acc > 5.0:\n    acc = acc - 4.0",
    "if x[0] > 2.5:\n    break",
    "if x.max() > 4.0:\n    continue",
    "x = np.where(x > 1.0, x - 0.5, x * 1.5)",
]

LOOP = {
    "for": "for i in range({n}):",
    "for2": "for i in range(1, {n}, 2):",
    "back": "for i in range({n} - 1, -1, -1):",
    "while": "i = 0\nwhile i < {n} and acc < 100.0:",
}


def _program(loop: str, body: list[str], nested: str | None, trip: str) -> str:
    head = LOOP[loop].format(n=trip)
    lines = [textwrap.indent(s, "    ") for s in body]
    if loop == "while": lines.append("    i = i + 1")
    if nested is not None:   # an inner loop over a short static range
        lines.append("    for j in range(3):\n        x = x + 0.1 * j")
        lines.append(textwrap.indent(nested, "        "))
    text = "def f(x, out, n):\n    acc = 0.0\n"
    text += textwrap.indent(head, "    ") + "\n" + textwrap.indent("\n".join(lines), "    ") + "\n"
    text += "    return x, acc, out\n"
    return text


def _load(source: str, tmp_path):
    path = tmp_path / f"generated_{next(_counter)}.py"
    path.write_text("import numpy as np\n\n\n" + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


body_statements = st.lists(st.sampled_from([s for s in BODY if "break" not in s and "continue" not in s]),
                           min_size=1, max_size=4)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(loop=st.sampled_from(sorted(LOOP)), body=body_statements,
       flow=st.sampled_from([None, "if x[0] > 2.5:\n    break", "if x.max() > 4.0:\n    continue"]),
       nested=st.sampled_from([None, "x = x * 0.99"]), traced_trip=st.booleans(),
       trip=st.sampled_from([0, 1, 3, 9]))
def test_generated_loop_programs_match_python(tmp_path, loop, body, flow, nested, traced_trip, trip):
    statements = body + ([flow] if flow is not None and loop != "while" else [])
    f = _load(_program(loop, statements, nested, "n"), tmp_path)
    x = np.linspace(-1.0, 2.0, 6)
    out = np.zeros(6)
    n = np.int64(trip) if traced_trip else trip
    want = f(x.copy(), out.copy(), trip)
    jf = numfn.jit(f, static_argnums=() if traced_trip else (2,))
    got_out = out.copy()
    # (`x[...] = ...; x = x * 0.5` in one body: the first iteration writes into the caller's array, the others into
    # new arrays: numfn runs the first iteration on its own)
    got = jf(x.copy(), got_out, n)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_out, want[2], rtol=1e-12, atol=1e-12)   # the argument written in place


@pytest.mark.parametrize("loop", sorted(LOOP))
def test_every_loop_kind_runs_native_with_a_traced_trip_count(tmp_path, loop):
    f = _load(_program(loop, ["x = x * 0.5 + 1.0", "acc = acc + x.sum()", "out[i % 6] = out[i % 6] + x[i % 6]"],
                       None, "n"), tmp_path)
    jf = numfn.jit(f)
    for trip in (0, 1, 7):
        x, out = np.linspace(-1.0, 2.0, 6), np.zeros(6)
        want = f(x.copy(), out.copy(), trip)
        got_out = out.copy()
        got = jf(x.copy(), got_out, np.int64(trip))
        for g, w in zip(got, want): np.testing.assert_allclose(g, w, rtol=1e-12)
        np.testing.assert_allclose(got_out, want[2], rtol=1e-12)
    assert len(jf.specializations) == 1   # one program for every trip count: a native loop
