"""Command line: `python -m numfn demo` runs the demo; `python -m numfn cache info|clear` manages the disk cache;
`python -m numfn fuzz --count N` checks N random programs against NumPy (numfn/fuzz.py)."""
from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m numfn demo | cache info | cache clear | fuzz [--count N] [--help]")
        return 0 if argv else 2
    if argv[0] == "demo":
        from numfn.demo import main as demo
        return demo(argv[1:])
    if argv[0] == "cache":
        from numfn.runtime.cache import cli
        return cli(argv[1:])
    if argv[0] == "fuzz":
        from numfn.fuzz import main as fuzz
        return fuzz(argv[1:])
    print(f"unknown command {argv[0]!r}; try: python -m numfn demo", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
