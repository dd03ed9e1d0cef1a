"""Derivatives with complex values, with JAX's conventions (numfn/autodiff/rules.py, api.py): the gradient of a
real-valued function of complex inputs is df/dx - i df/dy (jax.grad's: 2 conj(z) for |z|^2); `holomorphic=True`
(grad, jacfwd, jacrev, hessian) gives the complex derivative f'(z); jvp and vjp of complex functions. Expected values
are JAX's (jax 0.10.2, x64, computed in the peers environment /work/peers by the script quoted at each table), and
finite differences where the convention makes them direct. Errors: JAX's TypeErrors, and a clear one where numfn
has no complex rule."""
from __future__ import annotations

import numpy as np
import pytest

import numfn

Z = np.array([0.3 + 0.4j, -1.2 + 0.5j, 0.7 - 0.9j])
X = np.array([0.5, -1.5, 2.0])
M = np.array([[1.0 + 0.5j, -0.3 + 0.2j], [0.4 - 0.7j, 0.9 + 0.1j], [-0.6 + 0.8j, 0.2 - 0.4j]])   # 3 x 2
W = np.array([[0.5 - 0.2j, 1.1 + 0.3j], [-0.7 + 0.6j, 0.25 + 0.9j]])                          # 2 x 2

# The JAX script (jax.config.update("jax_enable_x64", True); the arrays above; jnp for np):
#     for name, f in REAL_VALUED: print(name, repr(np.asarray(jax.grad(f)(jnp.asarray(Z)))))
#     jax.grad(lambda m, w: jnp.real(jnp.sum(m @ w)) + jnp.sum(jnp.abs(m @ w) ** 2), argnums=(0, 1))(M, W)
#     jax.grad(lambda x, z: jnp.sum(jnp.abs(x * z + x ** 2)), argnums=(0, 1))(X, Z)
#     jax.grad(HOLOMORPHIC, holomorphic=True)(Z)
#     jnp.diag(jax.jacfwd(ELEMENTWISE, holomorphic=True)(Z))
#     jax.jacrev(lambda w: M @ w @ Z[:2], holomorphic=True)(W)
#     jax.jvp(lambda z: jnp.exp(z) * jnp.conj(z), (Z,), (Z[::-1],))[1]
#     jax.vjp(lambda z: jnp.exp(z) * jnp.conj(z), Z)[1](Z[::-1])[0]
#     jnp.diag(jax.hessian(lambda z: jnp.sum(z ** 3), holomorphic=True)(Z))
REAL_VALUED = [
    ("abs2", lambda z: np.sum(np.abs(z) ** 2),
     [0.6 - 0.8j, -2.4 - 1.0j, 1.4 + 1.8j]),
    ("exp_conj", lambda z: np.sum(np.real(np.exp(z) * np.conj(z))),
     [1.826556895269145 - 0.8652827634656863j, 0.01933554101194554 - 0.4498418280532782j,
      3.547690902799812 + 1.5998198864651665j]),
    ("log_angle", lambda z: np.sum(np.imag(np.log(z)) + 0.5 * np.angle(z)),
     [-2.4000000000000004 - 1.7999999999999998j, -0.44378698224852076 + 1.0650887573964498j,
      1.0384615384615383 - 0.8076923076923077j]),
    ("abs_sin_div", lambda z: np.sum(np.abs(np.sin(z) / (z + 2.0))),
     [1.4751842708978061e-01 - 0.35999340093811105j, -1.3526833477408233e+00 + 0.05259403011371178j,
      9.1051165763605946e-04 + 0.37918845762672543j]),
    ("cos_real_imag", lambda z: np.sum(np.cos(np.real(z)) * np.imag(z) ** 2),
     [-0.04728323306581433 - 0.7642691913004849j, 0.23300977149180657 - 0.3623577544766736j,
      -0.5218163266625298 + 1.3767159371120794j]),
]
MATMUL_GRAD_M = np.array([[4.305000000000001 - 0.8750000000000003j, -0.2584999999999995 + 2.886j],
                          [2.7920000000000007 + 0.3759999999999998j, 1.2055000000000002 + 2.1205j],
                          [0.5820000000000003 - 2.814j, 1.869 + 1.468j]])
MATMUL_GRAD_W = np.array([[2.8699999999999997 + 3.72j, 5.0249999999999995 - 1.0599999999999998j],
                          [-1.5999999999999999 - 0.5200000000000001j, 1.2650000000000001 + 0.45999999999999985j]])
MIXED_GRAD_X = np.array([1.3416407864998738, -4.220829051025886, 4.743416490252568])
MIXED_GRAD_Z = np.array([0.4472135954999579 - 0.22360679774997896j, -1.47492300747669 - 0.27313389027346113j,
                         1.8973665961010273 + 0.6324555320336758j])


def HOLOMORPHIC(z):
    return np.sum(np.exp(z) * np.sin(z) / z + np.log(z) ** 2)


def ELEMENTWISE(z):
    return z ** 2 * np.exp(z) - 1.0 / z


HOLOMORPHIC_GRAD = np.array([2.522344633339851 + 4.706543793231266j, 1.5520795433153072 - 3.8670924336546197j,
                             3.135160791038495 - 1.3820939029930561j])
ELEMENTWISE_DERIVATIVE = np.array([-1.007735953978022 - 2.268365930153318j, 0.125701543841649 + 0.19256455965436256j,
                                   -3.664364511698982 - 4.788471084909861j])
MATRIX_JACOBIAN = np.array([
    [[0.09999999999999998 + 0.55j, -1.45 - 0.09999999999999998j], [-0.17 - 0.06j, 0.26 - 0.39j]],
    [[0.39999999999999997 - 0.04999999999999996j, -0.13 + 1.04j], [0.23 + 0.39j, -1.1300000000000001 + 0.33j]],
    [[-0.5 + 0.0j, 0.31999999999999995 - 1.26j], [0.22000000000000003 - 0.03999999999999998j,
                                                  -0.03999999999999998 + 0.58j]]])
JVP_TANGENT = np.array([0.4998353395692838 + 0.7242686818326645j, 0.20171826481230445 - 0.06140529739569789j,
                        0.4243793162538769 - 0.04884868927517061j])
VJP_COTANGENT = np.array([1.4460229421238457 - 0.01165500904310579j, 0.0573180675418285 + 0.28515517605344437j,
                          1.6863206643313382 + 0.897607321782925j])
HESSIAN_DIAGONAL = np.array([1.7999999999999998 + 2.4000000000000004j, -7.199999999999999 + 3.0j,
                             4.199999999999999 - 5.4j])


def _wirtinger_by_differences(f, z, eps=1e-6):
    """df/dx - i df/dy of real-valued f, by central differences (JAX's gradient convention)."""
    out = np.zeros(z.shape, complex)
    for k in range(z.size):
        e = np.zeros(z.shape)
        e.flat[k] = eps
        dx = (f(z + e) - f(z - e)) / (2 * eps)
        dy = (f(z + 1j * e) - f(z - 1j * e)) / (2 * eps)
        out.flat[k] = dx - 1j * dy
    return out


@pytest.mark.parametrize("name,f,want", REAL_VALUED, ids=[r[0] for r in REAL_VALUED])
def test_real_valued_function_of_complex_inputs(name, f, want):
    g = numfn.grad(f)(Z)
    assert g.dtype == np.complex128
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(g, _wirtinger_by_differences(f, Z), rtol=1e-6, atol=1e-8)


def test_complex_matmul_and_mixed_real_complex_arguments():
    gm, gw = numfn.grad(lambda m, w: np.real(np.sum(m @ w)) + np.sum(np.abs(m @ w) ** 2), argnums=(0, 1))(M, W)
    np.testing.assert_allclose(gm, MATMUL_GRAD_M, rtol=1e-12)
    np.testing.assert_allclose(gw, MATMUL_GRAD_W, rtol=1e-12)
    gx, gz = numfn.grad(lambda x, z: np.sum(np.abs(x * z + x ** 2)), argnums=(0, 1))(X, Z)
    assert gx.dtype == np.float64 and gz.dtype == np.complex128
    np.testing.assert_allclose(gx, MIXED_GRAD_X, rtol=1e-12)
    np.testing.assert_allclose(gz, MIXED_GRAD_Z, rtol=1e-12)


def test_complex64_follows_complex128():
    f = REAL_VALUED[1][1]
    g = numfn.grad(f)(Z.astype(np.complex64))
    assert g.dtype == np.complex64
    np.testing.assert_allclose(g, REAL_VALUED[1][2], rtol=2e-5)


def test_holomorphic_grad_jacobians_and_hessian():
    np.testing.assert_allclose(numfn.grad(HOLOMORPHIC, holomorphic=True)(Z), HOLOMORPHIC_GRAD, rtol=1e-12)
    v, g = numfn.value_and_grad(HOLOMORPHIC, holomorphic=True)(Z)
    np.testing.assert_allclose(v, HOLOMORPHIC(Z), rtol=1e-14)
    np.testing.assert_allclose(g, HOLOMORPHIC_GRAD, rtol=1e-12)
    for jac in (numfn.jacfwd, numfn.jacrev):
        J = jac(ELEMENTWISE, holomorphic=True)(Z)
        np.testing.assert_allclose(np.diag(J), ELEMENTWISE_DERIVATIVE, rtol=1e-12)
        np.testing.assert_array_equal(J - np.diag(np.diag(J)), 0)
        np.testing.assert_allclose(jac(lambda w: M @ w @ Z[:2], holomorphic=True)(W), MATRIX_JACOBIAN, rtol=1e-12,
                                   atol=1e-15)
    # the complex derivative by differences along the real axis (f is holomorphic: any direction gives it)
    eps = 1e-6
    np.testing.assert_allclose(ELEMENTWISE_DERIVATIVE, (ELEMENTWISE(Z + eps) - ELEMENTWISE(Z - eps)) / (2 * eps),
                               rtol=1e-8)
    H = numfn.hessian(lambda z: np.sum(z ** 3), holomorphic=True)(Z)
    np.testing.assert_allclose(H, np.diag(HESSIAN_DIAGONAL), rtol=1e-12, atol=1e-15)


def test_jvp_and_vjp_of_a_non_holomorphic_function():
    f = lambda z: np.exp(z) * np.conj(z)   # noqa: E731
    out, t = numfn.jvp(f, (Z,), (Z[::-1],))
    np.testing.assert_allclose(out, f(Z), rtol=1e-14)
    np.testing.assert_allclose(t, JVP_TANGENT, rtol=1e-12)
    out, vjp_fn = numfn.vjp(f, Z)
    np.testing.assert_allclose(vjp_fn(Z[::-1])[0], VJP_COTANGENT, rtol=1e-12)


def test_complex_values_inside_a_function_of_reals():
    # real in, real out, complex in between: an ordinary real gradient (checked by finite differences)
    def f(x):
        z = x * np.exp(1j * x[::-1])
        return np.sum(np.abs(z * z + 1.0)) + np.real(np.sum(z)) * np.imag(np.prod(z))
    numfn.check_grads(f, (X,), order=1)


def test_check_grads_with_complex_arguments_and_outputs():
    numfn.check_grads(REAL_VALUED[3][1], (Z,), modes=("fwd", "rev"))
    numfn.check_grads(lambda z, x: np.exp(z) * np.conj(z) + x, (Z, X), modes=("fwd", "rev"))
    with pytest.raises(AssertionError, match="check_grads"):   # a wrong rule is caught: conj's derivative as 1
        wrong = numfn.custom_jvp(lambda z: np.conj(z))
        wrong.defjvp(lambda p, t: (np.conj(p[0]), t[0]))
        numfn.check_grads(wrong, (Z,), modes=("fwd",))


def test_jax_errors():
    with pytest.raises(TypeError, match="grad requires real-valued outputs.*complex128.*holomorphic=True"):
        numfn.grad(lambda z: np.sum(z * z))(Z)
    with pytest.raises(TypeError, match="grad with holomorphic=True requires inputs with complex dtype"):
        numfn.grad(lambda x: np.sum(x * x), holomorphic=True)(X)
    with pytest.raises(TypeError, match="grad with holomorphic=True requires outputs with complex dtype"):
        numfn.grad(lambda z: np.sum(np.abs(z)), holomorphic=True)(Z)
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs.*complex128.*holomorphic=True"):
        numfn.jacfwd(lambda z: np.abs(z))(Z)
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs.*complex128"):
        numfn.jacrev(lambda x: x * 1j)(X)
    with pytest.raises(TypeError, match="jacfwd with holomorphic=True requires outputs with complex dtype"):
        numfn.jacfwd(lambda z: np.abs(z), holomorphic=True)(Z)


def test_complex_linear_algebra_is_a_clear_error():
    a = np.eye(3) * (2 + 1j) + 0.1
    with pytest.raises(NotImplementedError, match="gesv on complex matrices"):
        numfn.grad(lambda a: np.sum(np.abs(np.linalg.solve(a, Z))))(a)
