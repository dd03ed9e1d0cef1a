"""Progress of slow compilations: when tracing and compiling one specialization passes THRESHOLD seconds, a line
on stderr says which stage it is in, how many kernels are done, and how long it has taken.

    numfn: compiling step(float64[512,512]): rendering kernels 31/64, 1.4 s

On a terminal the line is rewritten in place as the compilation goes on, and ends with the total time and each
stage's; elsewhere (a log file, CI) a line is written when the threshold passes, then one at each new stage (and
every REPEAT seconds within one), and the summary at the end. Compilations faster than the threshold print nothing.

Off with NUMFN_PROGRESS=0 (for every function) or `numfn.jit(f, progress=False)` (for one). A timer thread
writes the line, so a single long stage (LLVM optimizing a large module) is reported while it runs.

Work counts: each stage also counts its work, in units that do not depend on the machine's load (graph nodes the
walkers of numfn/ir/walk.py visit, candidates the scheduler tries, lines of native source compiled). `work(n)` adds
to the current stage of this thread; `counting_work()` collects them, per stage, for the compilations run inside
it (tests/test_compile_scaling.py checks that doubling a program at most about doubles each stage's count).
"""
from __future__ import annotations

import contextlib

import sys
from collections import Counter
import threading
import time
import weakref
from collections.abc import Iterator

THRESHOLD = 1.0    # seconds of compilation before the first report
REFRESH = 0.5      # seconds between rewrites of the line on a terminal
REPEAT = 10.0      # seconds between lines within one stage elsewhere

_current = threading.local()


def enabled_by_environment() -> bool:
    """NUMFN_PROGRESS: on unless 0, false, no or off."""
    from numfn import config
    return config.progress_enabled()


class Progress:
    """The state of one specialization's compilation, reported by a timer thread once it runs long."""

    def __init__(self, name: str):
        self.name = name
        self.start = time.perf_counter()
        self.stage: str | None = None
        self.stage_start = self.start
        self.done: int | None = None
        self.total: int | None = None
        self.note = ""   # what the stage is doing now (see note())
        self.times: list[tuple[str, float]] = []   # (stage, seconds) of the stages that ended
        self.work: Counter = Counter()              # the work of each stage so far (see work())
        self.reported = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._changed = threading.Event()   # a new stage began
        self._thread: threading.Thread | None = None

    def enter(self, stage: str | None, total: int | None = None) -> None:
        """The compilation is now in `stage` (None: finished), which goes through `total` kernels if it counts."""
        now = time.perf_counter()
        with self._lock:
            if self.stage is not None: self.times.append((self.stage, now - self.stage_start))
            self.stage, self.stage_start, self.done, self.total = stage, now, (0 if total is not None else None), total
            self.note = ""
        self._changed.set()

    def advance(self, done: int) -> None:
        """`done` of the stage's kernels are done."""
        with self._lock:
            self.done = done

    def set_note(self, text: str) -> None:
        """Shown after the stage in the line (a terminal's line shows it at its next refresh)."""
        with self._lock:
            self.note = text

    def line(self) -> str:
        with self._lock:
            count = f" {self.done}/{self.total}" if self.total is not None else ""
            key = (self.stage or "").split(" ", 1)[0]
            units = self.work.get(key, 0)
            # the stage's work so far: graph nodes walked, or for the native compiler the lines it was given
            done = f", {_count(units)} {'lines' if key == 'compiling' else 'nodes'}" if units else ""
            note = f" ({self.note})" if self.note else ""
            return f"numfn: compiling {self.name}: {self.stage or 'starting'}{count}{note}{done}, " \
                   f"{_seconds(time.perf_counter() - self.start)}"

    def summary(self) -> str:
        parts = ", ".join(f"{stage} {_seconds(seconds)}" for stage, seconds in self.times)
        return f"numfn: compiled {self.name} in {_seconds(time.perf_counter() - self.start)} ({parts})"

    # ---- the reporter ----------------------------------------------------------------------------------------------
    def start_reporting(self) -> None:
        self._thread = ReporterThread(target=self._report, name="numfn-progress", daemon=True)
        self._thread.start()

    def _report(self) -> None:
        if self._stop.wait(THRESHOLD): return
        stream = sys.stderr
        tty = _isatty(stream)
        while not self._stop.is_set():
            self._changed.clear()
            _write(stream, ("\r" + self.line() + "\x1b[K") if tty else self.line() + "\n")
            self.reported = True
            if tty: self._stop.wait(REFRESH)
            else: self._changed.wait(REPEAT)

    def finish(self) -> None:
        """Stop the reporter; when it reported, end with the total time and each stage's."""
        self._stop.set()
        self.enter(None)
        if self._thread is not None: self._thread.join()
        if self.reported:
            stream = sys.stderr
            _write(stream, ("\r" + self.summary() + "\x1b[K\n") if _isatty(stream) else self.summary() + "\n")


class ReporterThread(threading.Thread):
    """The thread that writes a compilation's progress line. It runs nothing of the user's: code that asks whether
    other threads run during a trace (the np.random guard) leaves it out."""


_runs_no_user_code: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


def mark_runs_no_user_code() -> None:
    """Called in a thread of numfn's own that runs only compiled code and numfn's (svmap's pool workers, as their
    pool's initializer): other_threads_running() leaves it out, alive and idle or busy, as it does reporters."""
    _runs_no_user_code.add(threading.current_thread())


def other_threads_running() -> bool:
    """Whether threads that could run the user's code (touch shared state: draw from a generator) are alive besides
    this one: progress reporters and numfn's own workers (mark_runs_no_user_code) are left out."""
    me = threading.current_thread()
    return any(t is not me and not isinstance(t, ReporterThread) and t not in _runs_no_user_code
               for t in threading.enumerate())


def _seconds(t: float) -> str:
    return f"{t * 1e3:.0f} ms" if t < 1 else f"{t:.1f} s"


def _count(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e4 else str(n)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _write(stream, text: str) -> None:
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):   # a closed or broken stderr: progress is not worth an error
        pass


@contextlib.contextmanager
def compiling(name: str, enabled: bool = True) -> Iterator[Progress | None]:
    """Report the progress of the compilation that runs inside, unless disabled (by `enabled` or NUMFN_PROGRESS).
    Its stages report through `stage()` and `kernels_done()`, which find the progress of their thread."""
    if not enabled or not enabled_by_environment() or getattr(_current, "progress", None) is not None:
        yield None   # off, or a compilation inside another's (its time is the outer one's)
        return
    progress = Progress(name)
    _current.progress = progress
    counted_outside = getattr(_work, "counts", None)   # (counting_work() around the compilation)
    if counted_outside is None: _work.counts = progress.work
    else: progress.work = counted_outside
    progress.start_reporting()
    try:
        yield progress
    finally:
        _current.progress = None
        if counted_outside is None: _work.counts = None
        progress.finish()


def stage(name: str, total: int | None = None) -> None:
    """The compilation of this thread (if it is reporting progress) entered stage `name`; its work counts go to
    the stage's first word ("compiling 12 kernels (llvm)" counts as "compiling")."""
    _work.stage = name.split(" ", 1)[0]
    progress = getattr(_current, "progress", None)
    if progress is not None: progress.enter(name, total)


def kernels_done(done: int) -> None:
    """The compilation of this thread finished `done` kernels of its current stage."""
    progress = getattr(_current, "progress", None)
    if progress is not None: progress.advance(done)


def note(text: str) -> None:
    """What the current stage of this thread's compilation is doing now, shown in its progress line ("" for
    nothing): BEAM's search of a kernel, its candidates and best time so far."""
    progress = getattr(_current, "progress", None)
    if progress is not None: progress.set_note(text)


# ---- work counts ---------------------------------------------------------------------------------------------------
_work = threading.local()


def work(n: int) -> None:
    """Count `n` units of work for the current stage of this thread's compilation, when counting_work() is on."""
    counts = getattr(_work, "counts", None)
    if counts is not None: counts[getattr(_work, "stage", "other")] += n


@contextlib.contextmanager
def counting_work() -> Iterator[Counter]:
    """The work each stage did ({stage: units}) in the compilations this thread runs inside the block."""
    outer = getattr(_work, "counts", None)
    counts: Counter = Counter()
    _work.counts, _work.stage = counts, "other"
    try:
        yield counts
    finally:
        _work.counts = outer
