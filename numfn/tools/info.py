"""`python -m numfn info`: what numfn runs with here, for bug reports and for checking an installation.

Versions (numfn, Python, NumPy, llvmlite and its LLVM, cffi), the CPU and the vector instructions generated code
may use, which backends work (and the C compiler), whether a BLAS library was found, the native extensions, the
thread count and the disk cache. Every item is found without compiling anything; an item that cannot be found says
why instead of failing the command.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
from typing import Any

from numfn import config

# the CPU features that decide which vector instructions generated code uses (LLVM's names)
VECTOR_FEATURES = ("sse4.2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512bw", "avx512vl",
                   "avx512vnni", "avx512bf16", "avx512fp16", "neon", "sve", "sve2")


def _version(module: str) -> str:
    try:
        return importlib.import_module(module).__version__
    except Exception as e:   # noqa: BLE001 - a missing or broken package is a fact to report, not a crash
        return f"not available ({type(e).__name__}: {e})"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "Model", "Hardware")): return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _llvm() -> dict[str, Any]:
    try:
        from numfn.runtime.orcjit import binding as load
        llvm = load()
        features = llvm.get_host_cpu_features()
        return {"available": True, "llvm": ".".join(map(str, llvm.llvm_version_info)),
                "cpu": llvm.get_host_cpu_name(), "features": [f for f in VECTOR_FEATURES if features.get(f)]}
    except Exception as e:   # noqa: BLE001
        return {"available": False, "problem": f"{type(e).__name__}: {e}"}


def _c_compiler() -> dict[str, Any]:
    try:
        from numfn.runtime.clang import find_compiler
        cmd = list(find_compiler())
    except Exception as e:   # noqa: BLE001 - NumfnError when there is none
        return {"available": False, "problem": str(e)}
    try:
        out = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=20)
        version = (out.stdout or out.stderr).splitlines()[0].strip() if (out.stdout or out.stderr) else "?"
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"available": False, "command": " ".join(cmd), "problem": str(e)}
    return {"available": True, "command": " ".join(cmd), "version": version}


def _blas() -> dict[str, Any]:
    if importlib.util.find_spec("numfn.runtime.blas") is None:
        return {"found": False, "problem": "this numfn calls no BLAS (every product is generated code)"}
    try:
        from numfn.runtime import blas
        iface = blas.interface()
    except Exception as e:   # noqa: BLE001
        return {"found": False, "problem": f"{type(e).__name__}: {e}"}
    if iface is None: return {"found": False, "problem": "none found or NUMFN_BLAS=none (pip install scipy-openblas64)"}
    return {"found": True, "library": iface.identity, "path": iface.path, "int_bits": iface.int_bits}


def _extensions() -> dict[str, Any]:
    """The native extensions: the fast call dispatcher and the thread pool."""
    from numfn.runtime import extensions   # importing it never fails: it notes what could not be loaded
    return {"dispatch": extensions.dispatch is not None, "thread_pool": extensions.native is not None,
            "problems": list(extensions.problems())}


def collect() -> dict[str, Any]:
    """Everything `info` reports, as a JSON-serializable dict."""
    import numfn
    from numfn import debug
    from numfn.runtime.threads import thread_count
    try:
        backend = debug.default_backend()
    except ValueError as e:   # an unknown NUMFN_BACKEND
        backend = f"invalid ({e})"
    cache = numfn.cache.info()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return {
        "numfn": {"version": numfn.__version__, "path": os.path.dirname(os.path.abspath(numfn.__file__))},
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation(),
                   "executable": sys.executable},
        "packages": {name: _version(name) for name in ("numpy", "llvmlite", "cffi")},
        "platform": {"system": platform.system(), "release": platform.release(), "machine": platform.machine()},
        "cpu": {"model": _cpu_model(), "cpus_available": cpus},
        "backends": {"default": backend, "llvm": _llvm(), "c": _c_compiler()},
        "blas": _blas(),
        "extensions": _extensions(),
        "threads": {"count": thread_count(), "NUMFN_THREADS": config.raw("NUMFN_THREADS")},
        "cache": {**cache, "disabled_by_environment": bool(cache["enabled"] is False and not cache["problem"])},
    }


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB": break
        size /= 1024
    return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"


def format_info(info: dict[str, Any]) -> str:
    """The report as aligned `name: value` lines."""
    llvm, cc, blas, ext = info["backends"]["llvm"], info["backends"]["c"], info["blas"], info["extensions"]
    cache, threads = info["cache"], info["threads"]
    py = info["python"]
    rows = [
        ("numfn", f"{info['numfn']['version']} ({info['numfn']['path']})"),
        ("python", f"{py['version']} ({py['implementation']}, {py['executable']})"),
        *((name, version) for name, version in info["packages"].items()),
        ("platform", f"{info['platform']['system']} {info['platform']['release']} {info['platform']['machine']}"),
        ("cpu", f"{info['cpu']['model']} ({info['cpu']['cpus_available']} available to this process)"),
    ]
    if llvm["available"]:
        rows += [("cpu target", f"{llvm['cpu']} (as LLVM names it)"),
                 ("vector features", " ".join(llvm["features"]) or "none of " + " ".join(VECTOR_FEATURES))]
    rows += [("default backend", info["backends"]["default"] + "  (NUMFN_BACKEND)"),
             ("backend llvm", f"available, LLVM {llvm['llvm']}" if llvm["available"]
              else f"unavailable: {llvm['problem']}"),
             ("backend c", f"available: {cc['command']} ({cc['version']})" if cc["available"]
              else f"unavailable: {cc['problem']}")]
    rows.append(("blas", f"{blas['library']} ({blas['path']}, {blas['int_bits']}-bit integers)" if blas["found"]
                 else f"not found: {blas['problem']}"))
    rows.append(("extensions", ", ".join(f"{name.replace('_', ' ')} {'loaded' if ext[name] else 'missing'}"
                                         for name in ("dispatch", "thread_pool"))))
    rows += [("", problem) for problem in ext["problems"]]
    rows.append(("threads", f"{threads['count']}" + (f" (NUMFN_THREADS={threads['NUMFN_THREADS']})"
                                                     if threads["NUMFN_THREADS"] else " (NUMFN_THREADS unset)")))
    if cache["problem"]: status = f"disabled: {cache['problem']}"
    elif not cache["enabled"]: status = "disabled (NUMFN_DISABLE_CACHE)"
    else: status = "enabled"
    rows += [("cache", f"{cache['directory']} ({status})"),
             ("cache size", f"{cache['entries']} entries, {_size(cache['total_bytes'])} of "
                            f"{_size(cache['max_bytes'])} (NUMFN_CACHE_MAX_BYTES)")]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name + ':' if name else '':<{width + 1}} {value}" for name, value in rows)


def main(argv: list[str]) -> int:
    """`python -m numfn info [--json]`."""
    if any(a in ("-h", "--help") for a in argv):
        print("usage: python -m numfn info [--json]\n\n" + __doc__.split("\n\n")[1])
        return 0
    unknown = [a for a in argv if a != "--json"]
    if unknown:
        print(f"python -m numfn info: unknown argument {unknown[0]!r} (usage: python -m numfn info [--json])",
              file=sys.stderr)
        return 2
    info = collect()
    print(json.dumps(info, indent=2) if "--json" in argv else format_info(info))
    return 0
