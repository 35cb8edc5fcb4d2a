"""A custom_vjp function differentiated with respect to a value it closes over raises JAX's
``CustomVJPException`` (``jax.interpreters.ad``; ``jax._src.interpreters.ad`` under the alias,
where diffrax's tests catch it)."""

import numpy as np
import pytest

import funcgrad
from funcgrad.interpreters import ad

jax = pytest.importorskip("jax")


def _closing(lib):
    def outer(c):
        @lib.custom_vjp
        def f(x):
            return x * c

        f.defvjp(lambda x: (x * c, x), lambda _, g: (g,))
        return f(2.0)

    return lambda c: lib.jit(outer)(c)  # (staged: the closed-over value is one of the call's consts)


def test_custom_vjp_closing_over_a_differentiated_value_raises_jaxs_exception():
    from jax._src.interpreters import ad as jax_ad

    with pytest.raises(jax_ad.CustomVJPException):
        jax.grad(_closing(jax))(3.0)
    with pytest.raises(ad.CustomVJPException, match="closes over a value that is being differentiated"):
        funcgrad.grad(_closing(funcgrad))(np.float64(3.0))
    assert issubclass(ad.CustomVJPException, TypeError)  # (what funcgrad raised before)
