"""Design-time script: the minimax polynomials of numfn/codegen/transcendental.py that this script owns (atan's),
by a Remez exchange in mpmath. Not run by the tests; the coefficients it prints are pasted into the module.

    python benchmarks/design_polys.py

Remez exchange (weighted, polynomial of degree n in z): start from Chebyshev extrema, solve for the polynomial
that equioscillates on the current n + 2 reference points, then move the reference to the extrema of the weighted
error (located on a dense grid and refined by golden-section search), until the levelled error and the maximum
error agree to 1e-6 relative. The weight is the factor that carries the polynomial's error into the function's
relative error.
"""
from __future__ import annotations

import mpmath as mp

mp.mp.dps = 60


def remez(f, w, a, b, n: int, iterations: int = 40, grid: int = 4000):
    """Coefficients (lowest first) of the degree-n polynomial p minimizing max |w(z) * (p(z) - f(z))| on [a, b],
    and that maximum."""
    a, b = mp.mpf(a), mp.mpf(b)
    ref = sorted(a + (b - a) * (1 - mp.cos(mp.pi * i / (n + 1))) / 2 for i in range(n + 2))
    pts = [a + (b - a) * (1 - mp.cos(mp.pi * i / (grid - 1))) / 2 for i in range(grid)]
    for _ in range(iterations):
        m = mp.matrix(n + 2, n + 2)
        rhs = mp.matrix(n + 2, 1)
        for i, z in enumerate(ref):
            for j in range(n + 1): m[i, j] = z ** j
            m[i, n + 1] = (-1) ** i / w(z)
            rhs[i] = f(z)
        sol = mp.lu_solve(m, rhs)
        coeffs, level = [sol[j] for j in range(n + 1)], abs(sol[n + 1])

        def err(z, coeffs=coeffs):
            return w(z) * (mp.polyval(coeffs[::-1], z) - f(z))
        values = [err(z) for z in pts]
        # one extremum per run of equal sign: the n + 2 alternating extrema of largest magnitude
        runs, start = [], 0
        for i in range(1, grid + 1):
            if i == grid or mp.sign(values[i]) != mp.sign(values[start]):
                k = max(range(start, i), key=lambda j: abs(values[j]))
                runs.append(k)
                start = i
        while len(runs) > n + 2:   # drop the smallest at the ends
            runs.pop(0 if abs(values[runs[0]]) < abs(values[runs[-1]]) else -1)
        new = []
        for k in runs:   # golden-section refinement around the grid extremum
            lo, hi = pts[max(k - 1, 0)], pts[min(k + 1, grid - 1)]
            g = lambda z: -abs(err(z))  # noqa: E731
            for _ in range(60):
                c1, c2 = lo + (hi - lo) * 0.382, lo + (hi - lo) * 0.618
                if g(c1) < g(c2): lo = c1
                else: hi = c2
            new.append((lo + hi) / 2)
        ref = sorted(new)
        peak = max(abs(err(z)) for z in ref)
        if len(ref) == n + 2 and peak - level < level * mp.mpf("1e-6"): break
    return coeffs, peak


def atan_poly():
    """(atan(t) - t) / t**3 as a polynomial in z = t*t, |t| <= 7/16 * (1 + 2**-20), weight t**3 / atan(t)."""
    def f(z):
        if z < mp.mpf("1e-30"): return mp.mpf(-1) / 3 + z / 5
        t = mp.sqrt(z)
        return (mp.atan(t) - t) / t ** 3

    def w(z):   # t**3 / atan(t): carries P's error into atan's relative error (floored: it is 0 at z = 0)
        if z < mp.mpf("1e-30"): return mp.mpf("1e-9")
        t = mp.sqrt(z)
        return max(t ** 3 / mp.atan(t), mp.mpf("1e-9"))
    bound = (mp.mpf(7) / 16 * (1 + mp.mpf(2) ** -20)) ** 2
    return remez(f, w, 0, bound, 10)


if __name__ == "__main__":
    coeffs, peak = atan_poly()
    print("ATAN64 =", tuple(float(c) for c in coeffs))
    print(f"max weighted error 2**{float(mp.log(peak, 2)):.1f}")
