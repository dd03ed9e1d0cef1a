"""What the documentation says numfn can and cannot do, checked against the code.

Two kinds of claim: every ```python block of the docs marked `<!-- docs-test: raises NAME -->` runs alone and must
raise NAME (numfn.tools.docs_examples.raising_blocks); and `CLAIMS`, statements in the prose, each with the text
that must still be on its page (so the claim and its check change together) and code that must raise the error
the page names, or run (None). A claim that stops being true fails here, and the page is corrected."""
import os
import subprocess
import sys

import pytest

from numfn.tools import docs_examples

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RUNNER = r'''
import linecache, sys
code = sys.stdin.read()
linecache.cache["<docs>"] = (len(code), None, code.splitlines(True), "<docs>")
try:
    exec(compile(code, "<docs>", "exec"), {"__name__": "__main__"})
except BaseException as e:
    import traceback; traceback.print_exc()
    print("RAISED", type(e).__name__, *[c.__name__ for c in type(e).__mro__])
else:
    print("RAISED nothing")
'''

# (page, text on the page, code, what it raises: an exception class name or None for "runs")
CLAIMS = [
    ("docs/getting-started.md", "`if x.sum() > 0:` becomes a branch of the compiled program",
     "@numfn.jit\ndef f(x):\n    if x.sum() > 0:\n        return x * 2\n    return x\n"
     "assert (f(-np.ones(3)) == -1).all() and (f(np.ones(3)) == 2).all()", None),
    ("docs/getting-started.md", "`while`\non a residual or a `break` a native loop",
     "@numfn.jit\ndef f(x):\n    r = x.copy()\n    while np.abs(r).max() > 1e-3:\n        r = r * 0.5\n"
     "        if r.sum() < 0: break\n    return r\nassert np.abs(f(np.ones(3))).max() <= 1e-3", None),
    ("docs/getting-started.md", "the branches must then give each\nvariable one shape and dtype, or numfn raises "
     "`numfn.NumfnError`",
     "@numfn.jit\ndef f(x):\n    if x.sum() > 0:\n        y = x * 2\n    else:\n        y = x[:2]\n    return y\n"
     "f(np.ones(3))", "NumfnError"),
    ("docs/user-guide.md", "complex64 and complex128 are dtypes like the others",
     "f = numfn.jit(lambda z: np.exp(z) * 1j)\nz = np.array([1 + 2j, -0.5j], np.complex64)\n"
     "np.testing.assert_allclose(f(z), np.exp(z) * 1j, rtol=1e-6)\nassert f(z).dtype == np.complex64", None),
    ("docs/user-guide.md", "float16 is a storage type",
     "f = numfn.jit(lambda h: h * 2 + 1)\nh = np.arange(4, dtype=np.float16)\n"
     "assert f(h).dtype == np.float16 and (f(h) == h * 2 + 1).all()", None),
    ("docs/user-guide.md", "long double and complex long double arrays are refused with a `TypeError`",
     "numfn.jit(lambda x: x + 1)(np.ones(2, np.longdouble))", "TypeError"),
    ("docs/user-guide.md", "(`\"backward\"`, `\"ortho\"`, `\"forward\"`)",
     "x = np.arange(8.0)\nnp.testing.assert_allclose(numfn.jit(lambda x: np.fft.fft(x, norm='ortho'))(x),"
     " np.fft.fft(x, norm='ortho'), atol=1e-12)", None),
    ("docs/scipy-stack.md", "an object column (strings, mixed\ntypes) is refused with a TypeError",
     "import pandas as pd\nnumfn.jit(lambda v: v * 2)(pd.Series(['a', 'b']).to_numpy())", "TypeError"),
]


def _run(code: str, tmp_path) -> list[str]:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), NUMFN_PROGRESS="0")
    out = subprocess.run([sys.executable, "-c", RUNNER], input=code, capture_output=True, text=True, cwd=tmp_path,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1].split()[1:]


def _raising():
    found = []
    for page in docs_examples.pages(ROOT):
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            found += [pytest.param(code, name, id=f"{page}:{line}")
                      for line, code, name in docs_examples.raising_blocks(f.read())]
    return found


@pytest.mark.nocompile
def test_raises_markers_are_found():
    assert docs_examples.raising_blocks("<!-- docs-test: raises ValueError -->\n```python\nint('x')\n```\n") == \
        [(2, "int('x')", "ValueError")]
    assert docs_examples.python_blocks("<!-- docs-test: raises ValueError -->\n```python\nint('x')\n```\n") == \
        [(2, "int('x')", True)]   # skipped by the examples' run
    assert len(_raising()) >= 2


@pytest.mark.parametrize("code, name", _raising())
def test_documented_error_is_raised(code, name, tmp_path):
    raised = _run(code, tmp_path)
    assert raised != ["nothing"], f"the docs say this raises {name}, but it runs"
    assert name in raised[1:], f"the docs say this raises {name}, but it raises {raised[0]}"


@pytest.mark.parametrize("page, text, code, name", CLAIMS, ids=[f"{c[0]}:{c[1][:30]}" for c in CLAIMS])
def test_claim_of_the_docs(page, text, code, name, tmp_path):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        assert text in f.read(), f"{page} no longer says {text!r}: update CLAIMS with the page"
    if "pandas" in code: pytest.importorskip("pandas")
    raised = _run("import numpy as np\nimport numfn\n" + code, tmp_path)
    if name is None: assert raised == ["nothing"], f"{page} says this works, but it raises {raised[0]}"
    else: assert name in raised[1:], f"{page} says this raises {name}, but it raises {raised[0]}"


# ---- docstrings of the public API --------------------------------------------------------------------------------
# owned elsewhere (their docstrings follow their own pages): export, autodiff; not callables: __version__
DOCSTRING_EXEMPT = {"__version__", "export", "ExportError", "grad", "value_and_grad", "jvp", "vjp", "jacfwd", "jacrev",
                    "hessian", "check_grads"}


def _public():
    import numfn
    return [n for n in numfn.__all__ if n not in DOCSTRING_EXEMPT]


def _example(doc: str) -> str:
    import textwrap
    lines = doc.split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.strip() in ("Example:", "Examples:"))
    body = []
    for ln in lines[start + 1:]:
        if ln.strip() and not ln.startswith(" "): break
        body.append(ln)
    return textwrap.dedent("\n".join(body)).strip()


@pytest.mark.nocompile
@pytest.mark.parametrize("name", _public())
def test_docstring_is_google_style(name):
    import inspect
    import numfn
    obj = getattr(numfn, name)
    doc = inspect.getdoc(obj) or ""
    assert "\nExample:\n" in doc or "\nExamples:\n" in doc, f"numfn.{name}: no Example section"
    assert _example(doc), f"numfn.{name}: an empty Example"
    if inspect.isfunction(obj):
        params = [p for p in inspect.signature(obj).parameters.values()]
        if params: assert "\nArgs:\n" in doc, f"numfn.{name}: no Args section"
        assert "\nReturns:\n" in doc, f"numfn.{name}: no Returns section"
        args = doc.split("\nArgs:\n", 1)[1].split("\n\n", 1)[0] if params else ""
        for p in params:
            shown = ("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "") + p.name
            assert f"    {shown}:" in args, f"numfn.{name}: Args does not describe {shown}"


def test_docstring_examples_run(tmp_path):
    import inspect
    import numfn
    code = "\n\n".join(f"# numfn.{n}\n" + _example(inspect.getdoc(getattr(numfn, n)) or "") for n in _public())
    assert _run("import numpy as np\nimport numfn\n" + code, tmp_path) == ["nothing"]
