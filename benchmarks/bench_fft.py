"""FFT: numfn.numpy.fft next to NumPy's pocketfft on the same inputs, in one run.

    python benchmarks/bench_fft.py            # the table of docs/performance.md
    python benchmarks/bench_fft.py --quick    # smaller repeat counts

Each row times NumPy and numfn alternately (rounds of a few calls each, so both see the same machine load) and
reports the median time per call and speedup = NumPy's time / numfn's time (above 1: numfn is faster). Every numfn
result is checked against NumPy's first. The cases are issue 16's: single complex128 transforms of 2**10, 2**16,
2**20 points and of the prime 10007, a batch of 10**4 real transforms of 256 points followed by the power
spectrum, and a 2-D transform of 1024 x 1024.
"""
from __future__ import annotations

import sys
import time

import numpy as np

import numfn
from numfn.runtime import threads
from timing import median_times


def power_spectrum(x):
    return np.abs(np.fft.rfft(x)) ** 2


def windowed_power(x, w):
    return np.abs(np.fft.rfft(x * w)) ** 2


def workloads(rng):
    def cplx(*shape):
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    out = []
    for n in (2 ** 10, 2 ** 16, 2 ** 20, 10007):
        out.append((f"fft complex128 n={n}", np.fft.fft, (cplx(n),)))
    x = rng.standard_normal((10_000, 256))
    out.append(("10^4 x rfft(256) + |.|**2", power_spectrum, (x,)))
    out.append(("10^4 x rfft(256 * hann) + |.|**2", windowed_power, (x, np.hanning(256))))
    out.append(("fft2 complex128 1024x1024", np.fft.fft2, (cplx(1024, 1024),)))
    out.append(("fft complex64 n=2^16", np.fft.fft, (cplx(2 ** 16).astype(np.complex64),)))
    out.append(("irfft float64 n=2^16", np.fft.irfft, (cplx(2 ** 15 + 1),)))
    return out


def main(quick: bool = False) -> None:
    rng = np.random.default_rng(0)
    print(f"numfn {numfn.__version__}, NumPy {np.__version__}, numfn threads {threads.thread_count()}")
    print(f"{'workload':36s} {'NumPy':>11s} {'numfn':>11s} {'speedup':>8s}")
    for name, fn, args in workloads(rng):
        jitted = numfn.jit(fn)
        got, want = jitted(*args), fn(*args)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * float(np.abs(want).max()), err_msg=name)
        t0 = time.perf_counter()
        fn(*args)
        once = time.perf_counter() - t0
        calls = max(1, min(200, int(0.02 / max(once, 1e-7))))
        rounds = 3 if quick else (9 if once < 0.5 else 5)
        t_np, t_nf = median_times([fn, jitted], args, rounds, calls)
        print(f"{name:36s} {t_np * 1e3:9.3f}ms {t_nf * 1e3:9.3f}ms {t_np / t_nf:7.2f}x", flush=True)


if __name__ == "__main__":
    main("--quick" in sys.argv)
