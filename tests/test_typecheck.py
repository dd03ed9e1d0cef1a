"""numfn/ is clean under mypy with the project's settings ([tool.mypy] in pyproject.toml), and ships py.typed."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_package_is_marked_typed():
    assert (ROOT / "numfn" / "py.typed").is_file()


def test_mypy_is_clean(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in the test extras: pip install '.[test]'")
    env = dict(os.environ, MYPY_CACHE_DIR=str(tmp_path / "mypy-cache"))
    run = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, "mypy found type errors in numfn/:\n" + run.stdout + run.stderr
