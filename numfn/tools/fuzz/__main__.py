"""`python -m numfn.tools.fuzz ARGS`, the same as `python -m numfn fuzz ARGS`."""
import sys

from numfn.tools.fuzz.driver import main

sys.exit(main(sys.argv[1:]))
