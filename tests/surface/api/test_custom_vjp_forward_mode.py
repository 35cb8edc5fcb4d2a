"""Forward mode of a custom_vjp function raises JAX's TypeError everywhere JAX raises it -- jvp,
jacfwd (vmap of its tangent), jvp under jit -- while reverse mode (grad, vmap of grad, jacrev)
computes JAX's values; make_jaxpr of the jvp stages the tangent as JAX does (jax 0.10.2 is the
oracle).
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
import jax.numpy as jnp  # noqa: E402


def _f(lib, np_):
    @lib.custom_vjp
    def f(x):
        return np_.sin(x)

    f.defvjp(lambda x: (f(x), x), lambda r, g: (g * 100.0,))
    return f


CASES = {
    "jvp": lambda lib, np_, f: lib.jvp(f, (1.0,), (1.0,)),
    "jacfwd": lambda lib, np_, f: lib.jacfwd(f)(1.0),
    "jit_jvp": lambda lib, np_, f: lib.jit(lambda x: lib.jvp(f, (x,), (1.0,)))(1.0),
    "grad": lambda lib, np_, f: lib.grad(f)(1.0),
    "vmap_grad": lambda lib, np_, f: lib.vmap(lib.grad(f))(np_.ones(2)),
    "jacrev": lambda lib, np_, f: lib.jacrev(f)(np_.ones(2)),
    "jaxpr_of_jvp": lambda lib, np_, f: len(lib.make_jaxpr(lambda x: lib.jvp(f, (x,), (1.0,)))(1.0).eqns),
}


@pytest.mark.parametrize("name", list(CASES))
def test_custom_vjp_forward_mode_as_jax(name):
    def run(lib, np_):
        try:
            return CASES[name](lib, np_, _f(lib, np_)), None
        except Exception as e:  # the type is the result
            return None, (type(e).__name__, str(e).split(".")[0])

    want, want_exc = run(jax, jnp)
    got, got_exc = run(funcgrad, fnp)
    assert got_exc == want_exc
    if want_exc is None:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
