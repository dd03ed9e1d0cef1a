"""numfn's BLAS and LAPACK calls as C for exported code: portable C99 (the default) or calls of a system library.

numfn calls BLAS/LAPACK through their Fortran interface (numfn.ir.extern.ROUTINES: column-major matrices, every
argument by reference, a hidden length per character argument, integers of the library's width). An export replaces
each such symbol by a static function of the same arguments, `export_<p><routine>` (p: s or d), whose body is either

- portable C99 (`blas="portable"`): simple, unblocked, dependency-free algorithms, accurate to a small multiple of
  the dtype's epsilon times the problem's norm (condition number for solves), as LAPACK's are, but slower for large
  matrices: matrix products as three loops; LU with partial pivoting (getrf, gesv; det, slogdet and inv use them);
  Cholesky (potrf); Householder QR in LAPACK's convention (geqrf, orgqr: the same signs as LAPACK's R); the
  symmetric eigensolver (syevd) as cyclic Jacobi rotations (eigenvalues ascending, eigenvectors of unit norm; their
  signs may differ from LAPACK's, as they may between LAPACK builds); the SVD (gesdd) as one-sided Jacobi rotations
  (singular values descending; singular vectors up to sign, completed to orthonormal bases); or
- a call of the system's CBLAS/LAPACKE (`blas="system"`: `cblas_<p>gemm`, `LAPACKE_<p>getrf_work`, ...; the
  Makefile links -llapacke -lopenblas), converting the integers to the library's `lapack_int` and back.

Real matrices (float32, float64) only: complex linear algebra, least squares (gelsd) and the general eigensolver
(geev) are refused by the export (numfn.export.library.refuse_externs).

`SUPPORTED` lists the routines (ROUTINES keys); `routine_of(symbol)` is (routine, prefix) for a library symbol;
`linalg_source(symbols, int_bits, system)` is the C of the routines the symbols name, in order."""
from __future__ import annotations

import re

SUPPORTED = frozenset({"gemm", "gemv", "syrk", "gesv", "getrf", "potrf", "syevd", "geqrf", "orgqr", "gesdd"})

_SYMBOL = re.compile(r"([sd])(gemm|gemv|syrk|gesv|getrf|potrf|syevd|geqrf|orgqr|gesdd)")


def routine_of(symbol: str) -> tuple[str, str] | None:
    """(routine, 's' or 'd') of a BLAS/LAPACK symbol as numfn's library names it ('scipy_dgesv_64_' -> ('gesv',
    'd')), None for another routine."""
    m = _SYMBOL.search(symbol)
    return None if m is None else (m.group(2), m.group(1))


def export_name(symbol: str) -> str:
    """The exported function replacing a library symbol."""
    found = routine_of(symbol)
    assert found is not None, symbol
    return f"export_{found[1]}{found[0]}"


# The portable routines: C99 with REAL (float or double), LINT (the library's integer), SQRT, FABS, EPS and P (the
# prefix, s or d) substituted. Every argument is a pointer (Fortran's convention); matrices are column-major,
# element (i, j) at a[i + j * lda].
_PORTABLE = {
    "getrf_core": ["""\
/* LU factorization with partial pivoting of the m x n matrix a (column-major, leading dimension lda), as LAPACK's
   getrf: a = P L U, L unit lower (below the diagonal), U upper; ipiv[j] (1-based) is the row swapped with row j.
   Returns 0, or j + 1 where U[j][j] is exactly zero (U is complete; solving with it would divide by zero). */
static LINT export_Pgetrf_core(int64_t m, int64_t n, REAL *a, int64_t lda, LINT *ipiv) {
  LINT info = 0;
  int64_t kmax = m < n ? m : n;
  for (int64_t j = 0; j < kmax; j++) {
    int64_t p = j;
    for (int64_t i = j + 1; i < m; i++) if (FABS(a[i + j * lda]) > FABS(a[p + j * lda])) p = i;
    ipiv[j] = (LINT)(p + 1);
    if (a[p + j * lda] == 0) { if (info == 0) info = (LINT)(j + 1); continue; }
    if (p != j) for (int64_t c = 0; c < n; c++) {
      REAL t = a[j + c * lda]; a[j + c * lda] = a[p + c * lda]; a[p + c * lda] = t;
    }
    REAL pivot = a[j + j * lda];
    for (int64_t i = j + 1; i < m; i++) a[i + j * lda] /= pivot;
    for (int64_t c = j + 1; c < n; c++) {
      REAL f = a[j + c * lda];
      if (f != 0) for (int64_t i = j + 1; i < m; i++) a[i + c * lda] -= a[i + j * lda] * f;
    }
  }
  return info;
}"""],
    "getrf": ["getrf_core", """\
static void export_Pgetrf(void *m_, void *n_, void *a_, void *lda_, void *ipiv_, void *info_) {
  *(LINT *)info_ = export_Pgetrf_core(*(const LINT *)m_, *(const LINT *)n_, (REAL *)a_, *(const LINT *)lda_,
                                      (LINT *)ipiv_);
}"""],
    "gesv": ["getrf_core", """\
/* a x = b for n x n a and n x nrhs b (column-major), as LAPACK's gesv: a is overwritten by its LU factors, b by x */
static void export_Pgesv(void *n_, void *nrhs_, void *a_, void *lda_, void *ipiv_, void *b_, void *ldb_,
                         void *info_) {
  int64_t n = *(const LINT *)n_, nrhs = *(const LINT *)nrhs_, lda = *(const LINT *)lda_, ldb = *(const LINT *)ldb_;
  REAL *a = (REAL *)a_, *b = (REAL *)b_;
  LINT *ipiv = (LINT *)ipiv_;
  LINT info = export_Pgetrf_core(n, n, a, lda, ipiv);
  *(LINT *)info_ = info;
  if (info != 0) return;
  for (int64_t r = 0; r < nrhs; r++) {
    REAL *x = b + r * ldb;
    for (int64_t i = 0; i < n; i++) { int64_t p = ipiv[i] - 1; if (p != i) { REAL t = x[i]; x[i] = x[p]; x[p] = t; } }
    for (int64_t j = 0; j < n; j++) {
      REAL v = x[j];
      if (v != 0) for (int64_t i = j + 1; i < n; i++) x[i] -= a[i + j * lda] * v;
    }
    for (int64_t j = n - 1; j >= 0; j--) {
      x[j] /= a[j + j * lda];
      REAL v = x[j];
      if (v != 0) for (int64_t i = 0; i < j; i++) x[i] -= a[i + j * lda] * v;
    }
  }
}"""],
    "potrf": ["""\
/* Cholesky factorization of the symmetric positive definite n x n a, as LAPACK's potrf: uplo 'U' computes U with
   a = U^T U in the upper triangle, 'L' computes L with a = L L^T in the lower; the other triangle is not touched.
   info j + 1: the leading minor of order j + 1 is not positive definite. */
static void export_Ppotrf(void *uplo_, void *n_, void *a_, void *lda_, void *info_, size_t uplo_length) {
  int upper = *(const char *)uplo_ == 'U' || *(const char *)uplo_ == 'u';
  int64_t n = *(const LINT *)n_, lda = *(const LINT *)lda_;
  REAL *a = (REAL *)a_;
  (void)uplo_length;
  *(LINT *)info_ = 0;
  for (int64_t j = 0; j < n; j++) {
    /* with 'U', element (r, c) of U is a[r + c * lda] (r <= c); with 'L', element (c, r) of L is a[c + r * lda] */
    REAL s = a[j + j * lda];
    for (int64_t k = 0; k < j; k++) { REAL u = upper ? a[k + j * lda] : a[j + k * lda]; s -= u * u; }
    if (!(s > 0)) { a[j + j * lda] = s; *(LINT *)info_ = (LINT)(j + 1); return; }
    REAL d = SQRT(s);
    a[j + j * lda] = d;
    for (int64_t i = j + 1; i < n; i++) {
      REAL t = upper ? a[j + i * lda] : a[i + j * lda];
      for (int64_t k = 0; k < j; k++) t -= upper ? a[k + j * lda] * a[k + i * lda] : a[j + k * lda] * a[i + k * lda];
      if (upper) a[j + i * lda] = t / d; else a[i + j * lda] = t / d;
    }
  }
}"""],
    "syevd": ["""\
/* Eigenvalues (ascending, into w) and, with jobz 'V', unit eigenvectors (a's columns) of the symmetric n x n a,
   whose lower (uplo 'L') or upper triangle holds it, as LAPACK's syevd computes them, by cyclic Jacobi rotations
   until the off-diagonal part is below EPS times the matrix's norm (at most 100 sweeps). The eigenvectors
   accumulate in work (n * n elements: within LAPACK's minimum 1 + 6n + 2n^2 for jobz 'V'). */
static void export_Psyevd(void *jobz_, void *uplo_, void *n_, void *a_, void *lda_, void *w_, void *work_,
                          void *lwork_, void *iwork_, void *liwork_, void *info_, size_t jobz_length,
                          size_t uplo_length) {
  int vectors = *(const char *)jobz_ == 'V' || *(const char *)jobz_ == 'v';
  int lower = *(const char *)uplo_ == 'L' || *(const char *)uplo_ == 'l';
  int64_t n = *(const LINT *)n_, lda = *(const LINT *)lda_;
  REAL *a = (REAL *)a_, *w = (REAL *)w_, *v = (REAL *)work_;
  (void)iwork_; (void)liwork_; (void)jobz_length; (void)uplo_length;
  if (vectors && *(const LINT *)lwork_ < n * n) { *(LINT *)info_ = -8; return; }
  *(LINT *)info_ = 0;
  for (int64_t j = 0; j < n; j++)   /* the whole symmetric matrix from the given triangle */
    for (int64_t i = j + 1; i < n; i++) {
      if (lower) a[j + i * lda] = a[i + j * lda]; else a[i + j * lda] = a[j + i * lda];
    }
  if (vectors) for (int64_t j = 0; j < n; j++) for (int64_t i = 0; i < n; i++) v[i + j * n] = i == j;
  for (int sweep = 0; sweep < 100; sweep++) {
    REAL off = 0, total = 0;
    for (int64_t j = 0; j < n; j++) for (int64_t i = 0; i < n; i++) {
      REAL x = a[i + j * lda] * a[i + j * lda];
      total += x;
      if (i != j) off += x;
    }
    if (!(off > EPS * EPS * total)) break;   /* (NaN: stop) */
    for (int64_t p = 0; p < n; p++)
      for (int64_t q = p + 1; q < n; q++) {
        REAL apq = a[p + q * lda];
        if (apq == 0) continue;
        REAL theta = (a[q + q * lda] - a[p + p * lda]) / (2 * apq);
        REAL t = FABS(theta) > BIG ? (REAL)0.5 / theta
                 : (theta >= 0 ? 1 : -1) / (FABS(theta) + SQRT(theta * theta + 1));
        REAL c = 1 / SQRT(t * t + 1), s = t * c;
        REAL app = a[p + p * lda], aqq = a[q + q * lda];
        for (int64_t k = 0; k < n; k++) {   /* a J: columns p and q (contiguous) */
          REAL x = a[k + p * lda], y = a[k + q * lda];
          a[k + p * lda] = c * x - s * y;
          a[k + q * lda] = s * x + c * y;
        }
        for (int64_t k = 0; k < n; k++) {   /* J^T a J is symmetric: rows p and q are the new columns */
          a[p + k * lda] = a[k + p * lda];
          a[q + k * lda] = a[k + q * lda];
        }
        a[p + p * lda] = app - t * apq;   /* the 2 x 2 block, diagonalized */
        a[q + q * lda] = aqq + t * apq;
        a[p + q * lda] = a[q + p * lda] = 0;
        if (vectors) for (int64_t k = 0; k < n; k++) {
          REAL x = v[k + p * n], y = v[k + q * n];
          v[k + p * n] = c * x - s * y;
          v[k + q * n] = s * x + c * y;
        }
      }
  }
  for (int64_t j = 0; j < n; j++) w[j] = a[j + j * lda];
  for (int64_t j = 0; j < n; j++) {   /* ascending: selection sort, the vectors along */
    int64_t m = j;
    for (int64_t i = j + 1; i < n; i++) if (w[i] < w[m]) m = i;
    if (m == j) continue;
    REAL t = w[j]; w[j] = w[m]; w[m] = t;
    if (vectors) for (int64_t k = 0; k < n; k++) { t = v[k + j * n]; v[k + j * n] = v[k + m * n]; v[k + m * n] = t; }
  }
  if (vectors) for (int64_t j = 0; j < n; j++) for (int64_t i = 0; i < n; i++) a[i + j * lda] = v[i + j * n];
}"""],
    "orthogonal_unit": ["""\
/* w = the unit vector e_c orthogonalized twice (Gram-Schmidt) against the first j vectors of x (element i of vector
   l at x[i * xs + l * xv], each of length M); returns w's norm. */
static REAL export_Porthogonal_unit(int64_t c, int64_t j, int64_t M, const REAL *x, int64_t xs, int64_t xv, REAL *w) {
  for (int64_t i = 0; i < M; i++) w[i] = i == c;
  for (int pass = 0; pass < 2; pass++)
    for (int64_t l = 0; l < j; l++) {
      REAL d = 0;
      for (int64_t i = 0; i < M; i++) d += x[i * xs + l * xv] * w[i];
      for (int64_t i = 0; i < M; i++) w[i] -= d * x[i * xs + l * xv];
    }
  REAL norm = 0;
  for (int64_t i = 0; i < M; i++) norm += w[i] * w[i];
  return SQRT(norm);
}"""],
    "gesdd": ["orthogonal_unit", """\
/* The SVD a = U diag(s) V^T of the m x n a (column-major), as LAPACK's gesdd: s descending; with jobz 'A' U is
   m x m and VT n x n, with 'S' m x k and k x n (k = min(m, n)), with 'N' only s. By one-sided Jacobi rotations
   (Hestenes) on the columns of B = a (m >= n) or a^T (m < n), in place, until every pair of columns is orthogonal
   to EPS; V accumulates the rotations (in vt, or in u for a^T); U's columns are B's normalized, completed to an
   orthonormal basis (for 'A', or where a singular value is zero) from unit vectors by Gram-Schmidt in work. a is
   destroyed; info 1: no convergence in 100 sweeps. */
static void export_Pgesdd(void *jobz_, void *m_, void *n_, void *a_, void *lda_, void *s_, void *u_, void *ldu_,
                          void *vt_, void *ldvt_, void *work_, void *lwork_, void *iwork_, void *info_,
                          size_t jobz_length) {
  char jobz = *(const char *)jobz_;
  int vectors = jobz != 'N' && jobz != 'n', full = jobz == 'A' || jobz == 'a';
  int64_t m = *(const LINT *)m_, n = *(const LINT *)n_, lda = *(const LINT *)lda_;
  int64_t ldu = *(const LINT *)ldu_, ldvt = *(const LINT *)ldvt_;
  REAL *a = (REAL *)a_, *sv = (REAL *)s_, *u = (REAL *)u_, *vt = (REAL *)vt_, *w = (REAL *)work_;
  (void)lwork_; (void)iwork_; (void)jobz_length;
  int tall = m >= n;
  int64_t M = tall ? m : n, N = tall ? n : m, rs = tall ? 1 : lda, cs = tall ? lda : 1;   /* B[i][j]: a[i*rs + j*cs] */
  REAL *v = tall ? vt : u;
  int64_t ldv = tall ? ldvt : ldu;
  *(LINT *)info_ = 0;
  if (vectors) for (int64_t j = 0; j < N; j++) for (int64_t i = 0; i < N; i++) v[i + j * ldv] = i == j;
  int converged = 0;
  for (int sweep = 0; sweep < 100 && !converged; sweep++) {
    converged = 1;
    for (int64_t p = 0; p < N; p++)
      for (int64_t q = p + 1; q < N; q++) {
        REAL alpha = 0, beta = 0, gamma = 0;
        for (int64_t i = 0; i < M; i++) {
          REAL x = a[i * rs + p * cs], y = a[i * rs + q * cs];
          alpha += x * x; beta += y * y; gamma += x * y;
        }
        if (!(FABS(gamma) > EPS * SQRT(alpha * beta))) continue;   /* orthogonal (or NaN) */
        converged = 0;
        REAL zeta = (beta - alpha) / (2 * gamma);
        REAL t = FABS(zeta) > BIG ? (REAL)0.5 / zeta : (zeta >= 0 ? 1 : -1) / (FABS(zeta) + SQRT(1 + zeta * zeta));
        REAL c = 1 / SQRT(1 + t * t), s = c * t;
        for (int64_t i = 0; i < M; i++) {
          REAL x = a[i * rs + p * cs], y = a[i * rs + q * cs];
          a[i * rs + p * cs] = c * x - s * y;
          a[i * rs + q * cs] = s * x + c * y;
        }
        if (vectors) for (int64_t i = 0; i < N; i++) {
          REAL x = v[i + p * ldv], y = v[i + q * ldv];
          v[i + p * ldv] = c * x - s * y;
          v[i + q * ldv] = s * x + c * y;
        }
      }
  }
  if (!converged) *(LINT *)info_ = 1;
  for (int64_t j = 0; j < N; j++) {
    REAL t = 0;
    for (int64_t i = 0; i < M; i++) t += a[i * rs + j * cs] * a[i * rs + j * cs];
    sv[j] = SQRT(t);
  }
  for (int64_t j = 0; j < N; j++) {   /* descending: selection sort, B's and V's columns along */
    int64_t k = j;
    for (int64_t i = j + 1; i < N; i++) if (sv[i] > sv[k]) k = i;
    if (k == j) continue;
    REAL t = sv[j]; sv[j] = sv[k]; sv[k] = t;
    for (int64_t i = 0; i < M; i++) {
      t = a[i * rs + j * cs]; a[i * rs + j * cs] = a[i * rs + k * cs]; a[i * rs + k * cs] = t;
    }
    if (vectors) for (int64_t i = 0; i < N; i++) {
      t = v[i + j * ldv]; v[i + j * ldv] = v[i + k * ldv]; v[i + k * ldv] = t;
    }
  }
  if (!vectors) return;
  if (tall) for (int64_t j = 0; j < N; j++) for (int64_t i = j + 1; i < N; i++) {   /* V -> V^T, in place */
    REAL t = vt[i + j * ldvt]; vt[i + j * ldvt] = vt[j + i * ldvt]; vt[j + i * ldvt] = t;
  }
  /* B's left vectors: A's U (tall: u's columns) or A's V (else: vt's rows); element i of vector j at
     x[i * xs + j * xv] */
  REAL *x = tall ? u : vt;
  int64_t xs = tall ? 1 : ldvt, xv = tall ? ldu : 1, count = full ? M : N;
  REAL tiny = sv[0] * EPS * (REAL)M;
  for (int64_t j = 0; j < count; j++) {
    if (j < N && sv[j] > tiny && sv[j] > 0) {
      for (int64_t i = 0; i < M; i++) x[i * xs + j * xv] = a[i * rs + j * cs] / sv[j];
      continue;
    }
    /* completion: the unit vector e_c farthest from the vectors so far, orthogonalized twice against them */
    REAL best = -1;
    int64_t pick = 0;
    for (int64_t c = 0; c < M && best <= (REAL)0.5; c++) {
      REAL norm = export_Porthogonal_unit(c, j, M, x, xs, xv, w);
      if (norm > best) { best = norm; pick = c; }
    }
    REAL norm = export_Porthogonal_unit(pick, j, M, x, xs, xv, w);
    for (int64_t i = 0; i < M; i++) x[i * xs + j * xv] = w[i] / norm;
  }
}"""],
    "geqrf": ["""\
/* QR factorization of the m x n a by Householder reflections in LAPACK's convention (geqrf, unblocked as geqr2):
   R in the upper triangle, the reflectors' vectors below the diagonal (their first element 1 implied), tau their
   scales; beta = -sign(alpha) * norm, so R's diagonal has LAPACK's signs. */
static void export_Pgeqrf(void *m_, void *n_, void *a_, void *lda_, void *tau_, void *work_, void *lwork_,
                          void *info_) {
  int64_t m = *(const LINT *)m_, n = *(const LINT *)n_, lda = *(const LINT *)lda_;
  REAL *a = (REAL *)a_, *tau = (REAL *)tau_;
  (void)work_; (void)lwork_;
  *(LINT *)info_ = 0;
  int64_t kmax = m < n ? m : n;
  for (int64_t j = 0; j < kmax; j++) {
    REAL alpha = a[j + j * lda], scale = 0, ssq = 1;
    for (int64_t i = j + 1; i < m; i++) {   /* the norm of a[j+1:m, j] without overflow */
      REAL x = FABS(a[i + j * lda]);
      if (x == 0) continue;
      if (scale < x) { ssq = 1 + ssq * (scale / x) * (scale / x); scale = x; }
      else ssq += (x / scale) * (x / scale);
    }
    REAL xnorm = scale * SQRT(ssq);
    if (xnorm == 0) { tau[j] = 0; continue; }
    REAL big = FABS(alpha) > xnorm ? FABS(alpha) : xnorm, small = FABS(alpha) > xnorm ? xnorm : FABS(alpha);
    REAL beta = big * SQRT(1 + (small / big) * (small / big));
    if (alpha >= 0) beta = -beta;
    tau[j] = (beta - alpha) / beta;
    REAL f = 1 / (alpha - beta);
    for (int64_t i = j + 1; i < m; i++) a[i + j * lda] *= f;
    a[j + j * lda] = beta;
    for (int64_t c = j + 1; c < n; c++) {   /* apply H = I - tau v v^T to the columns on the right */
      REAL s = a[j + c * lda];
      for (int64_t i = j + 1; i < m; i++) s += a[i + j * lda] * a[i + c * lda];
      s *= tau[j];
      a[j + c * lda] -= s;
      for (int64_t i = j + 1; i < m; i++) a[i + c * lda] -= s * a[i + j * lda];
    }
  }
}"""],
    "orgqr": ["""\
/* The first n columns of Q = H(1) ... H(k) from geqrf's reflectors (in a's first k columns, scales tau), as
   LAPACK's orgqr (unblocked: org2r), into a (m x n). */
static void export_Porgqr(void *m_, void *n_, void *k_, void *a_, void *lda_, void *tau_, void *work_, void *lwork_,
                          void *info_) {
  int64_t m = *(const LINT *)m_, n = *(const LINT *)n_, k = *(const LINT *)k_, lda = *(const LINT *)lda_;
  REAL *a = (REAL *)a_;
  const REAL *tau = (const REAL *)tau_;
  (void)work_; (void)lwork_;
  *(LINT *)info_ = 0;
  for (int64_t j = k; j < n; j++) for (int64_t l = 0; l < m; l++) a[l + j * lda] = l == j;
  for (int64_t i = k - 1; i >= 0; i--) {
    a[i + i * lda] = 1;
    for (int64_t c = i + 1; c < n; c++) {   /* H(i) applied to a[i:m, i+1:n] */
      REAL s = 0;
      for (int64_t l = i; l < m; l++) s += a[l + i * lda] * a[l + c * lda];
      s *= tau[i];
      for (int64_t l = i; l < m; l++) a[l + c * lda] -= s * a[l + i * lda];
    }
    for (int64_t l = i + 1; l < m; l++) a[l + i * lda] *= -tau[i];
    a[i + i * lda] = 1 - tau[i];
    for (int64_t l = 0; l < i; l++) a[l + i * lda] = 0;
  }
}"""],
    "gemm": ["""\
/* c = alpha op(a) op(b) + beta c (column-major; op: transa, transb 'N' or 'T'; c is m x n), as BLAS's gemm (beta 0:
   c is not read) */
static void export_Pgemm(void *ta_, void *tb_, void *m_, void *n_, void *k_, void *alpha_, void *a_, void *lda_,
                         void *b_, void *ldb_, void *beta_, void *c_, void *ldc_, size_t ta_length, size_t tb_length) {
  int ta = *(const char *)ta_ != 'N' && *(const char *)ta_ != 'n';
  int tb = *(const char *)tb_ != 'N' && *(const char *)tb_ != 'n';
  int64_t m = *(const LINT *)m_, n = *(const LINT *)n_, k = *(const LINT *)k_;
  int64_t lda = *(const LINT *)lda_, ldb = *(const LINT *)ldb_, ldc = *(const LINT *)ldc_;
  REAL alpha = *(const REAL *)alpha_, beta = *(const REAL *)beta_;
  const REAL *a = (const REAL *)a_, *b = (const REAL *)b_;
  REAL *c = (REAL *)c_;
  (void)ta_length; (void)tb_length;
  for (int64_t j = 0; j < n; j++) {
    REAL *cj = c + j * ldc;
    for (int64_t i = 0; i < m; i++) cj[i] = beta == 0 ? 0 : beta * cj[i];
    for (int64_t l = 0; l < k; l++) {
      REAL f = alpha * (tb ? b[j + l * ldb] : b[l + j * ldb]);
      if (ta) for (int64_t i = 0; i < m; i++) cj[i] += a[l + i * lda] * f;
      else for (int64_t i = 0; i < m; i++) cj[i] += a[i + l * lda] * f;
    }
  }
}"""],
    "gemv": ["""\
/* y = alpha op(a) x + beta y (a m x n column-major, op: trans 'N' or 'T'), as BLAS's gemv (beta 0: y is not read) */
static void export_Pgemv(void *t_, void *m_, void *n_, void *alpha_, void *a_, void *lda_, void *x_, void *incx_,
                         void *beta_, void *y_, void *incy_, size_t t_length) {
  int t = *(const char *)t_ != 'N' && *(const char *)t_ != 'n';
  int64_t m = *(const LINT *)m_, n = *(const LINT *)n_, lda = *(const LINT *)lda_;
  int64_t incx = *(const LINT *)incx_, incy = *(const LINT *)incy_;
  REAL alpha = *(const REAL *)alpha_, beta = *(const REAL *)beta_;
  const REAL *a = (const REAL *)a_, *x = (const REAL *)x_;
  REAL *y = (REAL *)y_;
  (void)t_length;
  int64_t rows = t ? n : m, cols = t ? m : n;
  for (int64_t i = 0; i < rows; i++) {
    REAL s = 0;
    for (int64_t l = 0; l < cols; l++) s += (t ? a[l + i * lda] : a[i + l * lda]) * x[l * incx];
    y[i * incy] = alpha * s + (beta == 0 ? 0 : beta * y[i * incy]);
  }
}"""],
    "syrk": ["""\
/* the uplo triangle of c = alpha op(a) op(a)^T + beta c (c n x n column-major; trans 'N': a is n x k, 'T': k x n),
   as BLAS's syrk (beta 0: c is not read) */
static void export_Psyrk(void *uplo_, void *t_, void *n_, void *k_, void *alpha_, void *a_, void *lda_, void *beta_,
                         void *c_, void *ldc_, size_t uplo_length, size_t t_length) {
  int upper = *(const char *)uplo_ == 'U' || *(const char *)uplo_ == 'u';
  int t = *(const char *)t_ != 'N' && *(const char *)t_ != 'n';
  int64_t n = *(const LINT *)n_, k = *(const LINT *)k_, lda = *(const LINT *)lda_, ldc = *(const LINT *)ldc_;
  REAL alpha = *(const REAL *)alpha_, beta = *(const REAL *)beta_;
  const REAL *a = (const REAL *)a_;
  REAL *c = (REAL *)c_;
  (void)uplo_length; (void)t_length;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = upper ? 0 : j; i < (upper ? j + 1 : n); i++) {
      REAL s = 0;
      for (int64_t l = 0; l < k; l++) s += t ? a[l + i * lda] * a[l + j * lda] : a[i + l * lda] * a[j + l * lda];
      c[i + j * ldc] = alpha * s + (beta == 0 ? 0 : beta * c[i + j * ldc]);
    }
}"""],
}

# The same routines calling CBLAS/LAPACKE (blas="system"); LAPACKE's integers may be narrower than numfn's
# (lapack_int is int unless the library is built for 64-bit integers): pivots are widened in place afterwards.
_SYSTEM = {
    "getrf": """\
static void export_Pgetrf(void *m_, void *n_, void *a_, void *lda_, void *ipiv_, void *info_) {
  int64_t n = *(const LINT *)n_, m = *(const LINT *)m_;
  *(LINT *)info_ = (LINT)LAPACKE_Pgetrf_work(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)n, (REAL *)a_,
                                             (lapack_int)*(const LINT *)lda_, (lapack_int *)ipiv_);
  export_widen_pivots(ipiv_, m < n ? m : n);
}""",
    "gesv": """\
static void export_Pgesv(void *n_, void *nrhs_, void *a_, void *lda_, void *ipiv_, void *b_, void *ldb_,
                         void *info_) {
  *(LINT *)info_ = (LINT)LAPACKE_Pgesv_work(LAPACK_COL_MAJOR, (lapack_int)*(const LINT *)n_,
                                            (lapack_int)*(const LINT *)nrhs_, (REAL *)a_,
                                            (lapack_int)*(const LINT *)lda_, (lapack_int *)ipiv_, (REAL *)b_,
                                            (lapack_int)*(const LINT *)ldb_);
  export_widen_pivots(ipiv_, *(const LINT *)n_);
}""",
    "potrf": """\
static void export_Ppotrf(void *uplo_, void *n_, void *a_, void *lda_, void *info_, size_t uplo_length) {
  (void)uplo_length;
  *(LINT *)info_ = (LINT)LAPACKE_Ppotrf_work(LAPACK_COL_MAJOR, *(const char *)uplo_, (lapack_int)*(const LINT *)n_,
                                             (REAL *)a_, (lapack_int)*(const LINT *)lda_);
}""",
    "syevd": """\
static void export_Psyevd(void *jobz_, void *uplo_, void *n_, void *a_, void *lda_, void *w_, void *work_,
                          void *lwork_, void *iwork_, void *liwork_, void *info_, size_t jobz_length,
                          size_t uplo_length) {
  (void)jobz_length; (void)uplo_length;
  *(LINT *)info_ = (LINT)LAPACKE_Psyevd_work(LAPACK_COL_MAJOR, *(const char *)jobz_, *(const char *)uplo_,
                                             (lapack_int)*(const LINT *)n_, (REAL *)a_, (lapack_int)*(const LINT *)lda_,
                                             (REAL *)w_, (REAL *)work_, (lapack_int)*(const LINT *)lwork_,
                                             (lapack_int *)iwork_, (lapack_int)*(const LINT *)liwork_);
}""",
    "geqrf": """\
static void export_Pgeqrf(void *m_, void *n_, void *a_, void *lda_, void *tau_, void *work_, void *lwork_,
                          void *info_) {
  *(LINT *)info_ = (LINT)LAPACKE_Pgeqrf_work(LAPACK_COL_MAJOR, (lapack_int)*(const LINT *)m_,
                                             (lapack_int)*(const LINT *)n_, (REAL *)a_, (lapack_int)*(const LINT *)lda_,
                                             (REAL *)tau_, (REAL *)work_, (lapack_int)*(const LINT *)lwork_);
}""",
    "orgqr": """\
static void export_Porgqr(void *m_, void *n_, void *k_, void *a_, void *lda_, void *tau_, void *work_, void *lwork_,
                          void *info_) {
  *(LINT *)info_ = (LINT)LAPACKE_Porgqr_work(LAPACK_COL_MAJOR, (lapack_int)*(const LINT *)m_,
                                             (lapack_int)*(const LINT *)n_, (lapack_int)*(const LINT *)k_, (REAL *)a_,
                                             (lapack_int)*(const LINT *)lda_, (const REAL *)tau_, (REAL *)work_,
                                             (lapack_int)*(const LINT *)lwork_);
}""",
    "gesdd": """\
static void export_Pgesdd(void *jobz_, void *m_, void *n_, void *a_, void *lda_, void *s_, void *u_, void *ldu_,
                          void *vt_, void *ldvt_, void *work_, void *lwork_, void *iwork_, void *info_,
                          size_t jobz_length) {
  (void)jobz_length;
  *(LINT *)info_ = (LINT)LAPACKE_Pgesdd_work(LAPACK_COL_MAJOR, *(const char *)jobz_, (lapack_int)*(const LINT *)m_,
                                             (lapack_int)*(const LINT *)n_, (REAL *)a_, (lapack_int)*(const LINT *)lda_,
                                             (REAL *)s_, (REAL *)u_, (lapack_int)*(const LINT *)ldu_, (REAL *)vt_,
                                             (lapack_int)*(const LINT *)ldvt_, (REAL *)work_,
                                             (lapack_int)*(const LINT *)lwork_, (lapack_int *)iwork_);
}""",
    "gemm": """\
static void export_Pgemm(void *ta_, void *tb_, void *m_, void *n_, void *k_, void *alpha_, void *a_, void *lda_,
                         void *b_, void *ldb_, void *beta_, void *c_, void *ldc_, size_t ta_length, size_t tb_length) {
  (void)ta_length; (void)tb_length;
  cblas_Pgemm(CblasColMajor, export_trans(ta_), export_trans(tb_), (int)*(const LINT *)m_,
              (int)*(const LINT *)n_, (int)*(const LINT *)k_, *(const REAL *)alpha_, (const REAL *)a_,
              (int)*(const LINT *)lda_, (const REAL *)b_, (int)*(const LINT *)ldb_, *(const REAL *)beta_,
              (REAL *)c_, (int)*(const LINT *)ldc_);
}""",
    "gemv": """\
static void export_Pgemv(void *t_, void *m_, void *n_, void *alpha_, void *a_, void *lda_, void *x_, void *incx_,
                         void *beta_, void *y_, void *incy_, size_t t_length) {
  (void)t_length;
  cblas_Pgemv(CblasColMajor, export_trans(t_), (int)*(const LINT *)m_, (int)*(const LINT *)n_,
              *(const REAL *)alpha_, (const REAL *)a_, (int)*(const LINT *)lda_, (const REAL *)x_,
              (int)*(const LINT *)incx_, *(const REAL *)beta_, (REAL *)y_, (int)*(const LINT *)incy_);
}""",
    "syrk": """\
static void export_Psyrk(void *uplo_, void *t_, void *n_, void *k_, void *alpha_, void *a_, void *lda_, void *beta_,
                         void *c_, void *ldc_, size_t uplo_length, size_t t_length) {
  (void)uplo_length; (void)t_length;
  cblas_Psyrk(CblasColMajor, *(const char *)uplo_ == 'U' ? CblasUpper : CblasLower, export_trans(t_),
              (int)*(const LINT *)n_, (int)*(const LINT *)k_, *(const REAL *)alpha_, (const REAL *)a_,
              (int)*(const LINT *)lda_, *(const REAL *)beta_, (REAL *)c_, (int)*(const LINT *)ldc_);
}""",
}

_SYSTEM_HELPERS = """\
/* BLAS/LAPACK from the system (the Makefile links -llapacke -lopenblas): CBLAS and LAPACKE */
#include <string.h>
#include <cblas.h>
#include <lapacke.h>
typedef char export_lapack_int_fits[sizeof(lapack_int) <= sizeof(LINT) ? 1 : -1];"""

_TRANS_HELPER = """\
static CBLAS_TRANSPOSE export_trans(const void *t) {
  return *(const char *)t == 'N' || *(const char *)t == 'n' ? CblasNoTrans : CblasTrans;
}"""

_PIVOTS_HELPER = """\
/* LAPACKE wrote n pivots as lapack_int into memory sized for n LINTs: widened in place, from the last */
static void export_widen_pivots(void *ipiv, int64_t n) {
  if (sizeof(lapack_int) == sizeof(LINT)) return;
  for (int64_t i = n - 1; i >= 0; i--) {
    lapack_int p;
    memcpy(&p, (char *)ipiv + i * (int64_t)sizeof p, sizeof p);
    LINT q = (LINT)p;
    memcpy((char *)ipiv + i * (int64_t)sizeof q, &q, sizeof q);
  }
}"""

_TYPES = {"s": ("float", "sqrtf", "fabsf", "1.1920929e-07f", "1e9f"),
          "d": ("double", "sqrt", "fabs", "2.220446049250313e-16", "1e150")}


def _substitute(text: str, prefix: str, lint: str) -> str:
    real, sqrt, fabs, eps, big = _TYPES[prefix]
    for word, value in (("REAL", real), ("LINT", lint), ("SQRT", sqrt), ("FABS", fabs), ("EPS", eps), ("BIG", big)):
        text = re.sub(rf"\b{word}\b", value, text)
    return re.sub(r"\b(export_|LAPACKE_|cblas_)P", rf"\g<1>{prefix}", text)


def linalg_source(symbols, int_bits: int, system: bool = False) -> str:
    """The C of the routines that `symbols` (library symbols, see routine_of) name, each once, their helpers first;
    LINT is the library's integer (`int_bits` wide)."""
    lint = "int64_t" if int_bits == 64 else "int32_t"
    done: list[tuple[str, str]] = []
    parts: list[str] = []

    def add(routine: str, prefix: str) -> None:
        if (routine, prefix) in done: return
        done.append((routine, prefix))
        if system and routine in _SYSTEM:
            parts.append(_substitute(_SYSTEM[routine], prefix, lint))
            return
        *needs, text = _PORTABLE[routine]
        for need in needs: add(need, prefix)
        parts.append(_substitute(text, prefix, lint))

    for symbol in symbols:
        found = routine_of(symbol)
        if found is not None: add(*found)
    if not parts: return ""
    head = ["#include <math.h>"]
    if system:
        routines = {r for r, _ in done}
        head += [_SYSTEM_HELPERS] + ([_TRANS_HELPER] if routines & {"gemm", "gemv", "syrk"} else []) + \
            ([_PIVOTS_HELPER] if routines & {"getrf", "gesv"} else [])
        head = [h.replace("LINT", lint) for h in head]
    return "\n\n".join(head + parts)
