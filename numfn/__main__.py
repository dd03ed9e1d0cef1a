"""numfn's command line: `python -m numfn COMMAND` (or `numfn COMMAND` where pip installed the script).

    python -m numfn --version        numfn's version
    python -m numfn info             versions, CPU, backends, BLAS, native extensions, threads, the disk cache
    python -m numfn demo             compile a few functions, check them against NumPy, time both
    python -m numfn cache info|clear the disk cache
    python -m numfn fuzz --count N   check N random programs against NumPy (numfn/tools/fuzz/)
    python -m numfn export mod:fn --args "float32[8,3]" -o out/   write fn as a standalone C library

A command is one function taking its own arguments (a list of strings) and returning the exit status, registered
in COMMANDS with `@command(name, summary)`: adding one touches nothing else.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable

COMMANDS: dict[str, tuple[Callable[[list[str]], int], str]] = {}


def command(name: str, summary: str) -> Callable[[Callable[[list[str]], int]], Callable[[list[str]], int]]:
    """Register `fn(argv) -> exit status` as the subcommand `name`; `summary` is its line in the usage text."""
    def register(fn: Callable[[list[str]], int]) -> Callable[[list[str]], int]:
        COMMANDS[name] = (fn, summary)
        return fn
    return register


@command("info", "versions, CPU features, backends, BLAS, threads and the disk cache (--json for a dict)")
def _info(argv: list[str]) -> int:
    from numfn.tools.info import main
    return main(argv)


@command("demo", "compile a few real functions, check them against NumPy and time both")
def _demo(argv: list[str]) -> int:
    if argv:
        print("usage: python -m numfn demo  (takes no arguments; NUMFN_BACKEND=c runs it on the C backend)",
              file=sys.stdout if argv[0] in ("-h", "--help") else sys.stderr)
        return 0 if argv[0] in ("-h", "--help") else 2
    from numfn.tools.demo import main
    return main(argv)


@command("cache", "cache info | cache clear: show or empty the disk cache of compiled code")
def _cache(argv: list[str]) -> int:
    from numfn.runtime.diskcache import cli
    return cli(argv)


@command("fuzz", "check random programs on both backends against NumPy (--count N, --seed S, --classes, --help)")
def _fuzz(argv: list[str]) -> int:
    from numfn.tools.fuzz import main
    return main(argv)


@command("export", "write module:function as a standalone C library (--args \"float32[8,3], float32[3]\" -o DIR)")
def _export(argv: list[str]) -> int:
    from numfn.export.cli import main
    return main(argv)


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: python -m numfn [--version] COMMAND [ARGS]", "", "commands:"]
    lines += [f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()]
    lines += ["", "python -m numfn COMMAND --help describes a command's arguments, where it takes any."]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Run the command line `argv` (without the program name); returns the exit status."""
    if not argv:
        print(usage(), file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if argv[0] in ("-V", "--version"):
        from numfn import __version__
        print(f"numfn {__version__}")
        return 0
    entry = COMMANDS.get(argv[0])
    if entry is None:
        print(f"python -m numfn: unknown command {argv[0]!r}\n\n{usage()}", file=sys.stderr)
        return 2
    return entry[0](argv[1:])


def run() -> None:
    """The `numfn` console script (and `python -m numfn`)."""
    try:
        status = main(sys.argv[1:])
        sys.stdout.flush()
    except BrokenPipeError:   # `python -m numfn info | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 1
    sys.exit(status)


if __name__ == "__main__":
    run()
