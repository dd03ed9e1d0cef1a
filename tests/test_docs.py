"""The documentation cannot drift from the code: every ```python block of docs/*.md and README.md runs (a page's
blocks in order, in one namespace, as a reader would type them), the NumPy coverage page is what
`python -m numfn.tools.coverage` generates now, the environment variables page names every variable numfn reads, and the
site builds with `mkdocs build --strict` (where the docs extra is installed: pip install '.[docs]').

A block that must not run (it needs a file, a network, minutes) is preceded by the line
`<!-- docs-test: skip -->`."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from numfn.tools.docs_examples import python_blocks
from numfn.tools import docs_examples

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")


def pages() -> list[str]:
    return docs_examples.pages(ROOT)


@pytest.mark.nocompile
def test_block_extraction():
    text = "a\n```python\nx = 1\n```\n<!-- docs-test: skip -->\n```python\nraise SystemExit\n```\n```bash\nls\n```\n" \
           "- item\n\n    ```python\n    y = 2\n    ```\n"
    assert python_blocks(text) == [(2, "x = 1", False), (6, "raise SystemExit", True), (14, "y = 2", False)]


# runs one page's blocks in a fresh interpreter: examples change process-wide state (logging's configuration, the
# thread count, svmap's worker threads) that other tests must not inherit
_RUNNER = """
import json, linecache, sys, traceback
blocks = json.load(sys.stdin)
namespace = {"__name__": "__main__"}
for line, code in blocks:
    name = f"{sys.argv[1]}:{line}"
    # the block's source where inspect and numfn look for it (as IPython does for a cell): numfn converts the loops
    # and branches of the functions it defines, as it would in the reader's file
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    try:
        exec(compile(code, name, "exec"), namespace)
    except BaseException:
        print(f"the example at {sys.argv[1]}:{line} failed:", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
"""


@pytest.mark.parametrize("page", pages())
def test_examples_run(page, tmp_path):
    import json
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        blocks = python_blocks(f.read())
    runnable = [(line, code) for line, code, skipped in blocks if not skipped]
    if not runnable: pytest.skip(f"{page} has no runnable python example")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in ("NUMFN_DEBUG", "DEBUG", "NUMFN_PROGRESS"): env.pop(name, None)
    out = subprocess.run([sys.executable, "-c", _RUNNER, page], input=json.dumps(runnable), capture_output=True,
                         text=True, cwd=tmp_path, env=env, timeout=600)   # examples that write files write there
    assert out.returncode == 0, out.stderr[-6000:]


# ---- generated pages ---------------------------------------------------------------------------------------------
@pytest.mark.nocompile
def test_numpy_coverage_page_is_up_to_date():
    from numfn.tools import coverage
    path = os.path.join(ROOT, coverage.PAGE)
    with open(path, encoding="utf-8") as f:
        committed = f.read()
    version = re.search(r"What of NumPy (\d+\.\d+) ", committed)
    installed = ".".join(np.__version__.split(".")[:2])
    if version and version.group(1) != installed:
        pytest.skip(f"the page was generated with NumPy {version.group(1)}, this is {installed}: NumPy's names differ")
    assert committed == coverage.render(), f"{coverage.PAGE} is stale: run `{coverage.COMMAND}` and commit it"


@pytest.mark.nocompile
def test_numpy_coverage_page_lists_every_name():
    from numfn.tools import coverage
    page = coverage.render()
    rows = set(re.findall(r"^\| `([\w.]+)` \| (✓|—) \|", page, re.M))
    names = {n for n, _ in rows}
    for module, prefix in ((np, ""), (np.linalg, "linalg."), (np.fft, "fft."), (np.random, "random.")):
        for name in coverage._public_names(module):
            assert prefix + name in names, prefix + name
    assert ("sum", "✓") in rows and ("ndarray.reshape", "✓") in rows and ("busday_count", "—") in rows
    assert ("ndarray.tolist", "—") in rows and ("ndarray.item", "✓") in rows   # tolist exists only to raise


@pytest.mark.nocompile
def test_coverage_command_checks_and_writes(tmp_path):
    from numfn.tools import coverage
    out = tmp_path / "page.md"
    assert coverage.main(["--output", str(out), "--check"]) == 1   # missing
    assert coverage.main(["--output", str(out)]) == 0
    assert coverage.main(["--output", str(out), "--check"]) == 0
    assert out.read_text(encoding="utf-8") == coverage.render()


@pytest.mark.nocompile
def test_refused_keywords_are_not_listed_as_supported():
    from numfn.tools import coverage
    import numfn.numpy as fnp
    from numfn.numpy import linalg
    entry = coverage.describe("polyfit", np.polyfit, linalg.polyfit)   # refuse("numpy.polyfit", cov=...)
    assert "cov" not in entry.parameters and "cov" in entry.lacks and "deg" in entry.parameters
    # a refused out= is taken all the same (numfn.trace.numpy_protocol writes the result into it)
    entry = coverage.describe("cumprod", np.cumprod, fnp.cumprod)
    assert "out" in entry.parameters and "out" not in entry.lacks


def _variables_read_by_the_code() -> set[str]:
    names = set()
    for folder, _, files in os.walk(os.path.join(ROOT, "numfn")):
        for name in files:
            if not name.endswith(".py"): continue
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                text = f.read()
            names |= set(re.findall(r"""environ(?:\.get)?\(\s*["']([A-Z_][A-Z0-9_]*)["']""", text))
            names |= set(re.findall(r"""environ\[\s*["']([A-Z_][A-Z0-9_]*)["']""", text))
            names |= set(re.findall(r"""getenv\(\s*["']([A-Z_][A-Z0-9_]*)["']""", text))
            # readers that take the names as arguments: config's _get("NUMFN_DEBUG", "DEBUG"), flag(...) and
            # _byte_count(...), debug's _first_set(...)
            for call in re.findall(r"""(?:_get|flag|_first_set|_byte_count)\(([^)]*)\)""", text):
                names |= set(re.findall(r"""["']([A-Z_][A-Z0-9_]+)["']""", call))
    return names


@pytest.mark.nocompile
def test_environment_page_names_every_variable_numfn_reads():
    with open(os.path.join(DOCS, "environment.md"), encoding="utf-8") as f:
        page = f.read()
    documented = set(re.findall(r"^\| `([A-Z_][A-Z0-9_]*)`", page, re.M))
    read = _variables_read_by_the_code()
    assert {"NUMFN_BACKEND", "NUMFN_CACHE_DIR", "NUMFN_DEBUG", "DEBUG", "NUMFN_PROGRESS"} <= read
    assert read - documented == set(), f"read by numfn but not on docs/environment.md: {sorted(read - documented)}"
    assert documented - read == set(), f"on docs/environment.md but read nowhere: {sorted(documented - read)}"


# ---- the site ----------------------------------------------------------------------------------------------------
def test_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install '.[docs]')")
    pytest.importorskip("material", reason="the docs extra is not installed (pip install '.[docs]')")
    pytest.importorskip("mkdocstrings", reason="the docs extra is not installed (pip install '.[docs]')")
    site = tmp_path / "site"
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))   # mkdocs-material's banner, every build
    assert out.returncode == 0, out.stderr[-4000:]
    for page in ("index.html", "numpy-coverage/index.html", "api/index.html", "environment/index.html"):
        assert (site / page).is_file(), page
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "numfn.jit" in api and "static_argnums" in api   # docstrings made it into the reference


@pytest.mark.nocompile
def test_stale_suggestions_are_listed(monkeypatch):
    from numfn import errors
    from numfn.tools import coverage
    monkeypatch.setitem(errors.SUGGESTIONS, "numpy.sum", "stale")
    monkeypatch.setitem(errors.SUGGESTIONS, "ndarray.reshape", "stale")
    assert coverage.stale_suggestions(coverage.sections()) == ["ndarray.reshape", "numpy.sum"]
