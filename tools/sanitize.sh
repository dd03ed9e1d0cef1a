#!/bin/sh
# Run the test suite (or any command) with numfn's C extensions (the thread pool and native routines, the dispatch
# extension) and the C backend's generated code built under AddressSanitizer and UndefinedBehaviorSanitizer (clang).
# See docs/reliability.md. The extensions are built instrumented in a copy of the tree ($LOG/src, the tracked files
# as they are now), where the command runs: the installed package is left as it is.
#
#   tools/sanitize.sh                         # the whole suite, C backend by default
#   tools/sanitize.sh python -m pytest tests/test_programs.py -q
#
# Reports go to $SANITIZE_LOG (default /tmp/numfn-sanitize): asan.<pid> and ubsan.<pid> files, one per process
# that found something; none means a clean run. The LLVM backend's code is not instrumented (llvmlite cannot run
# the sanitizer passes): tests that choose it still run, uninstrumented, next to an instrumented extension.
set -eu
CLANG=${CLANG:-clang}
ASAN_RT=$($CLANG -print-file-name=libclang_rt.asan-x86_64.so)
[ -f "$ASAN_RT" ] || { echo "no ASan runtime ($ASAN_RT): install clang's compiler-rt (libclang-rt)" >&2; exit 2; }
LOG=${SANITIZE_LOG:-/tmp/numfn-sanitize}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$LOG" && mkdir -p "$LOG/src"
# -fsanitize-recover: a finding is reported and the run goes on, so one run lists them all
SAN="-fsanitize=address,undefined -fsanitize-recover=address,undefined -shared-libasan -fno-omit-frame-pointer -g"
(cd "$ROOT" && git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$LOG/src")
(cd "$LOG/src" && CC="$CLANG $SAN" LDSHARED="$CLANG -shared $SAN" python setup.py -q build_ext --inplace \
    >"$LOG/build.log" 2>&1) || { cat "$LOG/build.log" >&2; exit 2; }
export NUMFN_CC="$CLANG $SAN"
export NUMFN_BACKEND=${NUMFN_BACKEND:-c}
export NUMFN_CACHE_DIR=${NUMFN_CACHE_DIR:-$LOG/cache}   # instrumented code never mixes with a normal cache
export LD_PRELOAD="$ASAN_RT"                            # Python is not instrumented: the runtime comes first
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=0:log_path=$LOG/asan"   # CPython's own allocations are not leaks
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=0:log_path=$LOG/ubsan"
export PYTHONPATH="$LOG/src${PYTHONPATH:+:$PYTHONPATH}"   # the instrumented copy before any installed numfn
if [ $# -eq 0 ]; then set -- python -m pytest tests -q -p no:randomly; fi
cd "$LOG/src"
python -c "import numfn.runtime.extensions as e, sys; sys.exit('numfn from ' + e.__file__ + ': ' + '; '.join(e.problems())) if e.problems() or not e.__file__.startswith('$LOG/src') else None"
status=0
"$@" || status=$?
found=$(ls "$LOG" | grep -E '^(asan|ubsan)\.' || true)
if [ -n "$found" ]; then echo "sanitizer reports in $LOG:"; echo "$found"; else echo "no sanitizer reports"; fi
exit $status
