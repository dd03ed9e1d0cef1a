#!/bin/sh
# Run the test suite (or any command) with numfn's dispatch extension and the C backend's generated code built
# under AddressSanitizer and UndefinedBehaviorSanitizer (clang). See docs/reliability.md.
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
mkdir -p "$LOG"
# -fsanitize-recover: a finding is reported and the run goes on, so one run lists them all
export NUMFN_CC="$CLANG -fsanitize=address,undefined -fsanitize-recover=address,undefined -shared-libasan -fno-omit-frame-pointer -g"
export NUMFN_BACKEND=${NUMFN_BACKEND:-c}
export NUMFN_CACHE_DIR=${NUMFN_CACHE_DIR:-$LOG/cache}   # instrumented code never mixes with a normal cache
export LD_PRELOAD="$ASAN_RT"                            # Python is not instrumented: the runtime comes first
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=0:log_path=$LOG/asan"   # CPython's own allocations are not leaks
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=0:log_path=$LOG/ubsan"
if [ $# -eq 0 ]; then set -- python -m pytest tests -q -p no:randomly; fi
status=0
"$@" || status=$?
found=$(ls "$LOG" | grep -E '^(asan|ubsan)\.' || true)
if [ -n "$found" ]; then echo "sanitizer reports in $LOG:"; echo "$found"; else echo "no sanitizer reports"; fi
exit $status
