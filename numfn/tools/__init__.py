"""Tools built on numfn, not part of compiling a function: the demo, `python -m numfn info`, the coverage report
of the NumPy API, and the differential fuzzer."""
