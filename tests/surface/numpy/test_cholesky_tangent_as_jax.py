"""The Cholesky factor is the lower triangle of ``cholesky_p``'s result, as JAX's
``lax.linalg.cholesky`` selects it (``_tril``): every caller (``jnp.linalg.cholesky``,
``lax.linalg.cholesky``, ``jax.scipy.linalg.cholesky``/``cho_factor``) has a tangent whose upper
triangle is 0, also where the rule's product ``L @ phi(...)`` is NaN -- an operand with infinities
(the four-way fuzzer's session-20 case: funcgrad's tangent was NaN at [0, 1], jax's 0)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

_X = np.array([[3.0, np.inf], [-0.0, 65504.0]])
_T = np.reshape(0.5 + 0.25 * np.cos(np.arange(4)), (2, 2))


def _factors(T, np_):
    gram = lambda x: x @ np_.conj(np_.swapaxes(x, -1, -2)) + np_.eye(2)  # noqa: E731
    return {
        "numpy": lambda x: np_.linalg.cholesky(gram(x)),
        "numpy_upper": lambda x: np_.linalg.cholesky(gram(x), upper=True),
        "lax": lambda x: T.lax.linalg.cholesky(gram(x)),
        "scipy": lambda x: T.scipy.linalg.cholesky(gram(x), lower=True),
    }


@pytest.mark.parametrize("name", sorted(_factors(jax, jnp)))
@pytest.mark.parametrize("jit", [False, True])
def test_cholesky_tangent_at_infinity_as_jax(name, jit):
    def run(T, np_):
        f = _factors(T, np_)[name]
        g = lambda x, t: T.jvp(f, (x,), (t,))  # noqa: E731
        return [np.asarray(v) for v in (T.jit(g) if jit else g)(_X, _T)]

    for got, want in zip(run(funcgrad, fnp), run(jax, jnp), strict=True):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_cholesky_gradient_of_a_finite_matrix_unchanged():
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    f = lambda T, np_: T.grad(lambda m: np_.sum(np_.sin(np_.linalg.cholesky(m))))(a)  # noqa: E731
    np.testing.assert_allclose(np.asarray(f(funcgrad, fnp)), np.asarray(f(jax, jnp)), rtol=1e-12)
