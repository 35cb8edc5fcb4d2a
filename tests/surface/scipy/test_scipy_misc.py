"""funcgrad.scipy.optimize.minimize (BFGS, against JAX's and SciPy's), scipy.integrate.trapezoid and
scipy.ndimage.map_coordinates (against SciPy), with derivatives, jit and vmap."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate as si
import scipy.ndimage as nd
import scipy.optimize as so

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.scipy import integrate, ndimage, optimize
from funcgrad.testing import check_grads


def rosen(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_minimize_bfgs_finds_scipys_minimum():
    x0 = np.array([0.5, 0.8, 1.2, 0.7])
    res = optimize.minimize(rosen, x0, method="BFGS")
    ref = so.minimize(
        lambda x: float(rosen(x)), x0, jac=lambda x: np.asarray(funcgrad.grad(rosen)(x)), method="BFGS"
    )
    np.testing.assert_allclose(np.asarray(res.x), ref.x, atol=1e-5)
    assert bool(res.success) and int(res.status) == 0
    assert float(res.fun) < 1e-10 and np.max(np.abs(np.asarray(res.jac))) < 1e-5
    assert res.hess_inv.shape == (4, 4) and int(res.nit) > 0 and int(res.nfev) >= int(res.nit)
    assert isinstance(res, optimize.OptimizeResults)


@pytest.mark.slow
def test_minimize_follows_jax_step_by_step():
    # The iterates are JAX's (same line search and update): JAX 0.10.2 gives these counts and x.
    res = optimize.minimize(rosen, np.array([-1.2, 1.0, 0.5, 0.3]), method="bfgs")
    np.testing.assert_allclose(np.asarray(res.x), [-0.77565925, 0.6130934, 0.38206289, 0.14597204], atol=1e-7)
    assert (int(res.nit), int(res.nfev), int(res.njev)) == (33, 43, 43)


@pytest.mark.slow
def test_minimize_jit_vmap_args_and_options():
    def quad(x, a):
        return fnp.sum((x - a) ** 2 * fnp.arange(1.0, 4.0))

    a = np.array([1.0, -2.0, 0.5])
    res = funcgrad.jit(lambda a: optimize.minimize(quad, fnp.zeros(3), (a,), method="BFGS"))(a)
    np.testing.assert_allclose(np.asarray(res.x), a, atol=1e-6)
    batch = np.stack([a, -a])
    xs = funcgrad.vmap(lambda a: optimize.minimize(quad, fnp.zeros(3), (a,), method="BFGS").x)(batch)
    np.testing.assert_allclose(np.asarray(xs), batch, atol=1e-6)
    few = optimize.minimize(rosen, np.array([-1.2, 1.0, 0.5, 0.3]), method="BFGS", options={"maxiter": 3})
    assert int(few.nit) == 3 and int(few.status) == 1 and not bool(few.success)
    loose = optimize.minimize(rosen, np.array([0.5, 0.8, 1.2]), method="BFGS", tol=1e-2)
    assert int(loose.nit) < int(optimize.minimize(rosen, np.array([0.5, 0.8, 1.2]), method="BFGS").nit)


LBFGS = "l-bfgs-experimental-do-not-rely-on-this"


def test_minimize_lbfgs_real_and_complex():
    # JAX's experimental L-BFGS (its scipy_optimize_test): SciPy's L-BFGS-B minimum without bounds,
    # and a complex x (the line search's slopes are the real parts). (From zeros JAX's line search
    # fails in float64, status 5; funcgrad's too, at the same point.)
    x0 = np.array([-1.2, 1.0, 0.5, 0.3])
    res = funcgrad.jit(lambda x: optimize.minimize(rosen, x, method=LBFGS))(x0)
    want = so.minimize(lambda x: float(rosen(x)), x0, jac=lambda x: np.asarray(funcgrad.grad(rosen)(x)),
                       method="L-BFGS-B").x  # fmt: skip
    np.testing.assert_allclose(np.asarray(res.x), want, atol=2e-5)
    assert bool(res.success) and int(res.status) == 0 and res.hess_inv is None and int(res.nit) > 0
    z0 = np.array([1.0, 2.0 - 3.0j, 4.0, -5.0j])
    with funcgrad.numpy_dtype_promotion("strict"):  # (the real step times a complex direction)
        sphere = funcgrad.jit(
            lambda z: optimize.minimize(
                lambda z: fnp.real(fnp.vdot(z - z0, z - z0)), z, method=LBFGS, options={"gtol": 1e-6}
            )
        )(np.zeros(4, complex))
    np.testing.assert_allclose(np.asarray(sphere.x), z0, atol=1e-6)
    with pytest.raises(TypeError, match="unknown L-BFGS options"):
        optimize.minimize(rosen, x0, method=LBFGS, options={"line_search_maxiter": 3})


def test_minimize_refusals():
    with pytest.raises(ValueError, match="Method Nelder-Mead not recognized"):  # (JAX's words)
        optimize.minimize(rosen, np.zeros(2), method="Nelder-Mead")
    with pytest.raises(TypeError, match="args argument to jax.scipy.optimize.minimize must be a tuple"):
        optimize.minimize(rosen, np.zeros(2), args=[1], method="BFGS")
    with pytest.raises(TypeError, match="unknown BFGS options"):
        optimize.minimize(rosen, np.zeros(2), method="BFGS", options={"disp": True})
    with pytest.raises(ValueError, match="one-dimensional"):
        optimize.minimize(rosen, np.zeros((2, 2)), method="BFGS")


def test_trapezoid():
    y = np.random.default_rng(0).normal(size=(3, 5))
    x = np.sort(np.random.default_rng(1).uniform(0, 3, 5))
    np.testing.assert_allclose(np.asarray(integrate.trapezoid(y, x)), si.trapezoid(y, x))
    np.testing.assert_allclose(
        np.asarray(integrate.trapezoid(y, dx=0.3, axis=0)), si.trapezoid(y, dx=0.3, axis=0)
    )
    check_grads(lambda y, x: integrate.trapezoid(y, x), (y, x), order=2)
    np.testing.assert_allclose(np.asarray(funcgrad.jit(integrate.trapezoid)(y, x)), si.trapezoid(y, x))


SCIPY_MODE = {"constant": "grid-constant", "wrap": "grid-wrap"}


@pytest.mark.parametrize("mode", ["constant", "nearest", "wrap", "mirror", "reflect"])
@pytest.mark.parametrize("order", [0, 1])
def test_map_coordinates_against_scipy(mode, order):
    rng = np.random.default_rng(0)
    image = rng.normal(size=(4, 5))
    coords = [rng.uniform(-1.5, 4.5, 12), rng.uniform(-1.5, 5.5, 12)]
    want = nd.map_coordinates(image, coords, order=order, mode=SCIPY_MODE.get(mode, mode), cval=0.5)
    got = ndimage.map_coordinates(image, coords, order=order, mode=mode, cval=0.5)
    np.testing.assert_allclose(np.asarray(got), want, atol=1e-12)
    jitted = funcgrad.jit(lambda im, c0, c1: ndimage.map_coordinates(im, [c0, c1], order, mode, 0.5))
    np.testing.assert_allclose(np.asarray(jitted(image, *coords)), want, atol=1e-12)
    ints = np.arange(20).reshape(4, 5)
    want_int = nd.map_coordinates(ints, coords, order=order, mode=SCIPY_MODE.get(mode, mode))
    np.testing.assert_array_equal(np.asarray(ndimage.map_coordinates(ints, coords, order, mode)), want_int)


def test_map_coordinates_derivatives_and_vmap():
    rng = np.random.default_rng(0)
    image = rng.normal(size=(4, 5))
    c0, c1 = rng.uniform(0.1, 2.9, 6), rng.uniform(0.1, 3.9, 6)
    check_grads(lambda im, a, b: ndimage.map_coordinates(im, [a, b], order=1), (image, c0, c1), order=1)
    per_point = funcgrad.vmap(lambda a, b: ndimage.map_coordinates(image, [a, b], order=1))(c0, c1)
    np.testing.assert_allclose(np.asarray(per_point), nd.map_coordinates(image, [c0, c1], order=1))
    with pytest.raises(NotImplementedError, match="requires order<=1"):  # (JAX's types and words)
        ndimage.map_coordinates(image, [c0, c1], order=3)
    with pytest.raises(NotImplementedError, match="does not yet support mode"):
        ndimage.map_coordinates(image, [c0, c1], order=1, mode="grid-mirror")
    with pytest.raises(ValueError, match="length input.ndim"):
        ndimage.map_coordinates(image, [c0], order=1)
