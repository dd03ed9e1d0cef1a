"""The command line, `python -m numfn`: --version, info (text and --json), demo's and cache's entry points, usage and
unknown commands. Run in-process through numfn.__main__.main (a fresh interpreter costs half a second), and once as
`python -m numfn` for the real entry point."""
import json
import os
import re
import subprocess
import sys

import pytest

import numfn
from numfn.__main__ import COMMANDS, command, main

pytestmark = pytest.mark.nocompile   # the compile-free tier (tests/conftest.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_version_in_a_fresh_interpreter():
    out = subprocess.run([sys.executable, "-m", "numfn", "--version"], capture_output=True, text=True, timeout=120,
                         cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"numfn {numfn.__version__}\n"


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(capsys, flag):
    assert run(capsys, flag) == (0, f"numfn {numfn.__version__}\n", "")


def test_usage_lists_every_command(capsys):
    status, out, _ = run(capsys, "--help")
    assert status == 0 and out.startswith("usage: python -m numfn")
    for name in ("info", "demo", "cache"): assert f"\n  {name} " in out
    status, _, err = run(capsys)   # no command: the usage, as an error
    assert status == 2 and err.startswith("usage:")


def test_unknown_command_is_a_usage_error(capsys):
    status, out, err = run(capsys, "compile")
    assert status == 2 and out == "" and "unknown command 'compile'" in err and "usage:" in err


def test_a_command_is_one_registered_function(capsys, monkeypatch):
    monkeypatch.setitem(COMMANDS, "echo", COMMANDS.get("echo"))   # removed again after the test
    command("echo", "print the arguments")(lambda argv: print(*argv) or 3)
    assert run(capsys, "echo", "a", "b") == (3, "a b\n", "")
    assert re.search(r"\n  echo +print the arguments\n", run(capsys, "--help")[1])


def test_info_reports_this_process(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("NUMFN_CACHE_DIR", str(tmp_path / "cache"))
    status, out, err = run(capsys, "info")
    assert status == 0, err
    lines = dict(line.split(":", 1) for line in out.splitlines() if ":" in line and not line.startswith(" "))
    assert lines["numfn"].split()[0] == numfn.__version__
    assert lines["python"].split()[0] == ".".join(map(str, sys.version_info[:3]))
    import numpy
    import llvmlite
    assert lines["numpy"].strip() == numpy.__version__ and lines["llvmlite"].strip() == llvmlite.__version__
    assert lines["backend llvm"].strip().startswith("available, LLVM ")
    assert lines["threads"].split()[0] == str(numfn.runtime.threads.thread_count())
    assert lines["cache"].split()[0] == str(tmp_path / "cache")
    for name in ("cpu", "vector features", "default backend", "backend c", "blas", "extensions", "cache size"):
        assert lines[name].strip(), name


def test_info_json(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("NUMFN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NUMFN_THREADS", "1")
    status, out, _ = run(capsys, "info", "--json")
    info = json.loads(out)
    assert status == 0
    assert info["numfn"]["version"] == numfn.__version__
    assert info["cache"]["directory"] == str(tmp_path / "cache") and info["cache"]["entries"] == 0
    assert info["threads"]["NUMFN_THREADS"] == "1"
    assert info["backends"]["default"] == "llvm" and info["backends"]["llvm"]["available"]
    assert isinstance(info["blas"]["found"], bool)
    assert set(info["extensions"]) >= {"dispatch", "thread_pool", "problems"}


def test_info_refuses_unknown_arguments(capsys):
    status, _, err = run(capsys, "info", "--yaml")
    assert status == 2 and "'--yaml'" in err
    status, out, _ = run(capsys, "info", "--help")
    assert status == 0 and out.startswith("usage: python -m numfn info")


def test_info_without_a_c_compiler(capsys, monkeypatch):
    monkeypatch.setenv("NUMFN_CC", "/nonexistent/cc")   # find_compiler takes it as given; running it fails
    from numfn.runtime import clang
    if hasattr(clang.find_compiler, "cache_clear"): clang.find_compiler.cache_clear()
    try:
        status, out, _ = run(capsys, "info")
    finally:
        if hasattr(clang.find_compiler, "cache_clear"): clang.find_compiler.cache_clear()
    assert status == 0
    assert [line for line in out.splitlines() if line.startswith("backend c:")][0].split(":", 1)[1].strip() \
        .startswith("unavailable")


def test_cache_subcommand(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("NUMFN_CACHE_DIR", str(tmp_path / "cache"))
    status, out, _ = run(capsys, "cache", "info")
    assert status == 0 and f"directory: {tmp_path / 'cache'}" in out and "entries:   0" in out
    assert run(capsys, "cache", "clear")[:2] == (0, f"removed 0 entries from {tmp_path / 'cache'}\n")
    assert run(capsys, "cache")[0] == 2   # argparse's usage error


def test_demo_takes_no_arguments(capsys):
    status, out, _ = run(capsys, "demo", "--help")
    assert status == 0 and out.startswith("usage: python -m numfn demo")
    assert run(capsys, "demo", "--fast")[0] == 2
