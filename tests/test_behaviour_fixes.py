"""The behaviour fixes of issue 15, checked as a user meets them: errors that name the
transformation the user called and the fix, and JAX's derivative of abs at 0."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.core import ConcretizationTypeError


def loss(x):
    return np.sin(x)  # NumPy, not funcgrad.numpy


@pytest.mark.parametrize(
    "name, call",
    [
        ("grad(loss)", lambda: funcgrad.grad(loss)(1.0)),
        ("value_and_grad(loss)", lambda: funcgrad.value_and_grad(loss)(1.0)),
        ("vmap(loss)", lambda: funcgrad.vmap(loss)(np.ones(2))),
        ("jacrev(loss)", lambda: funcgrad.jacrev(loss)(1.0)),
        ("jacfwd(loss)", lambda: funcgrad.jacfwd(loss)(1.0)),
        ("hessian(loss)", lambda: funcgrad.hessian(loss)(1.0)),
        ("jvp(loss)", lambda: funcgrad.jvp(loss, (1.0,), (1.0,))),
        ("vjp(loss)", lambda: funcgrad.vjp(loss, 1.0)),
        ("jit(loss)", lambda: funcgrad.jit(loss)(1.0)),
        ("jit(loss)", lambda: funcgrad.grad(funcgrad.jit(loss))(1.0)),  # the innermost one
    ],
)
def test_numpy_on_a_tracer_names_the_transformation_and_the_fix(name, call):
    with pytest.raises(ConcretizationTypeError) as info:
        call()
    msg = str(info.value)
    assert f"inside {name}" in msg
    assert "use funcgrad.numpy" in msg and "numpy.asarray()" in msg


@pytest.mark.parametrize(
    "f",
    [
        lambda x, n: fnp.zeros(n),
        lambda x, n: fnp.ones((n, 2)),
        lambda x, n: fnp.reshape(x, (n,)),
        lambda x, n: fnp.broadcast_to(x, (n, 3)),
    ],
)
def test_a_traced_size_suggests_static_argnums(f):
    with pytest.raises(ConcretizationTypeError, match="static_argnums") as info:
        funcgrad.jit(f)(np.ones(3), 3)
    assert "depends on the argument n" in str(info.value)
    assert funcgrad.jit(f, static_argnums=1)(np.ones(3), 3).shape[0] == 3


def test_grad_abs_at_zero_is_one_as_in_jax():
    assert float(funcgrad.grad(fnp.abs)(0.0)) == 1.0
    assert float(funcgrad.grad(funcgrad.lax.abs)(0.0)) == 1.0
    assert float(funcgrad.jit(funcgrad.grad(fnp.abs))(0.0)) == 1.0
    x = np.array([-2.0, -0.0, 0.0, 3.0])
    np.testing.assert_array_equal(funcgrad.vmap(funcgrad.grad(fnp.abs))(x), [-1.0, 1.0, 1.0, 1.0])
    assert float(funcgrad.grad(lambda x: fnp.abs(x) ** 2)(-1.5)) == -3.0
    # complex: d|z| = Re(conj(z) dz) / |z|, 0 at 0, as in JAX
    g = funcgrad.grad(fnp.abs)(3.0 + 4.0j)
    np.testing.assert_allclose(complex(g), (3.0 - 4.0j) / 5.0)
    assert complex(funcgrad.grad(fnp.abs)(0j)) == 0
