"""The fuzzer's driver and command line: `python -m numfn fuzz` (see numfn.tools.fuzz)."""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from numfn.config import set_default
from numfn.tools.fuzz import run, shrinking
from numfn.tools.fuzz.classes import CLASSES, generate
from numfn.tools.fuzz.run import CONFIGS


@dataclass
class Report:
    programs: int = 0      # programs checked against NumPy
    functions: int = 0
    unsupported: int = 0   # programs numfn refuses as documented (not checked, not counted in `programs`)
    failures: list = field(default_factory=list)   # (seed, failure, shrunk program)
    seconds: float = 0.0


def fuzz(count: int, seed: int = 0, parts: int = 4, steps: int = 10, configs=CONFIGS, shrink_failures: bool = True,
         log: Callable[[str], None] | None = None, log_dir: str | None = None,
         time_limit: float | None = None, writes: bool = True, classes=CLASSES, max_failures: int | None = None,
         shrink_budget: int = 300) -> Report:
    """Check `count` random programs (in functions of `parts` programs each, each of one of `classes`) against
    NumPy; stop early after `max_failures` failures or `time_limit` seconds."""
    report = Report()
    t0 = time.perf_counter()
    k = 0
    while report.programs < count:
        if time_limit is not None and time.perf_counter() - t0 > time_limit: break
        if max_failures is not None and len(report.failures) >= max_failures: break
        s = seed + k
        k += 1
        prog = generate(s, min(parts, count - report.programs), steps, writes, classes)
        if log_dir is not None:   # the program being run, left behind if it takes the process down
            with open(os.path.join(log_dir, "current.py"), "w") as f: f.write(prog.describe())
        found = run.check(prog, configs)
        if found is not None and found.kind == "unsupported":
            report.unsupported += prog.parts
            continue
        report.programs += prog.parts
        report.functions += 1
        if found is not None:
            small = shrinking.shrink(prog, found, budget=shrink_budget, log=log) if shrink_failures else prog
            final = run.check(small, (found.config,)) or found
            report.failures.append((s, final, small))
            if log: log(f"seed {s}: FAILED {final}\n{small.describe()}")
            if log_dir is not None:
                with open(os.path.join(log_dir, f"failure-{s}.py"), "w") as f:
                    f.write("".join(f"# {line}\n" for line in str(final).splitlines()) + small.describe())
        if log and report.functions % 50 == 0:
            log(f"{report.programs} programs, {len(report.failures)} failures, "
                f"{time.perf_counter() - t0:.0f} s")
    report.seconds = time.perf_counter() - t0
    return report


def parse_classes(text: str) -> tuple[str, ...]:
    classes = tuple(c.strip() for c in text.split(",") if c.strip())
    unknown = [c for c in classes if c not in CLASSES]
    if unknown or not classes:
        raise ValueError(f"unknown program class {', '.join(unknown) or repr(text)}; the classes are "
                         f"{', '.join(CLASSES)}")
    return classes


def parse_configs(text: str) -> tuple[tuple[str, bool], ...]:
    known = {"llvm": ("llvm", False), "c": ("c", False), "noopt": ("llvm", True)}
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names or any(n not in known for n in names):
        raise ValueError(f"unknown configuration in {text!r}; the configurations are llvm, c, noopt")
    return tuple(known[n] for n in names)


def main(argv: list[str]) -> int:
    """`python -m numfn fuzz [--count N] [--seed S] [--parts P] [--steps K] [--classes A,B] [--backends B,C]
    [--log DIR] [--no-shrink] [--no-writes]`."""
    import argparse
    ap = argparse.ArgumentParser(prog="python -m numfn fuzz", description="Differential fuzzing against NumPy.")
    ap.add_argument("--count", type=int, default=1000, help="programs to check (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="the first seed (programs use seed, seed+1, ...)")
    ap.add_argument("--parts", type=int, default=4, help="independent programs per compiled function")
    ap.add_argument("--steps", type=int, default=10, help="statements per program, at most")
    ap.add_argument("--classes", default=",".join(CLASSES),
                    help=f"program classes, comma-separated (default all: {','.join(CLASSES)})")
    ap.add_argument("--backends", default="llvm,c,noopt",
                    help="configurations to run: llvm, c, noopt (LLVM with NOOPT=1); default all three")
    ap.add_argument("--log", default=None, help="a directory for failures and the program being run")
    ap.add_argument("--no-shrink", action="store_true", help="report failures as found")
    ap.add_argument("--no-writes", action="store_true", help="no assignments (x[i] = v, x[i] += v)")
    ap.add_argument("--max-failures", type=int, default=None, help="stop after this many failures")
    args = ap.parse_args(argv)
    try:
        classes, configs = parse_classes(args.classes), parse_configs(args.backends)
    except ValueError as e:
        ap.error(str(e))
    if args.log: os.makedirs(args.log, exist_ok=True)
    set_default("NUMFN_DISABLE_CACHE", "1")   # a run would fill the cache with programs never seen again

    def log(msg: str) -> None: print(msg, flush=True)
    report = fuzz(args.count, args.seed, args.parts, args.steps, configs=configs, shrink_failures=not args.no_shrink,
                  log=log, log_dir=args.log, writes=not args.no_writes, classes=classes,
                  max_failures=args.max_failures)
    print(f"{report.programs} programs in {report.functions} compiled functions, {len(report.failures)} failures, "
          f"{report.seconds:.0f} s ({report.unsupported} more refused as documented)")
    return 1 if report.failures else 0
