"""What a custom_vjp/custom_jvp rule receives for a float64 NumPy argument with x64 off, as jax
0.10.2's (checked with jax, written out here): eager ``grad`` and ``vjp`` hand the rules float32
values (JAX's canonical TypedNdArray; funcgrad gave the raw float64), ``jvp`` and ``linearize``
the caller's own float64 value; an input ``vjp`` returns unchanged is float32 too."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

# tests/conftest.py checks that no test leaves the 32-bit mode set; its module-scoped ``x32``
# fixture keeps it set across this module's tests on purpose.
RUNS_IN_X32 = True
pytestmark = pytest.mark.usefixtures("x32")


def _custom_vjp(seen):
    @funcgrad.custom_vjp
    def f(x):
        return fnp.sin(x)

    def fwd(x):
        seen.append(np.dtype(x.dtype))
        return fnp.sin(x), x

    def bwd(r, g):
        seen.append(np.dtype(r.dtype))
        return (g * fnp.cos(r),)

    f.defvjp(fwd, bwd)
    return f


def _custom_jvp(seen):
    @funcgrad.custom_jvp
    def h(x):
        return fnp.sin(x)

    @h.defjvp
    def _(p, t):
        seen.append(np.dtype(p[0].dtype))
        return fnp.sin(p[0]), t[0] * fnp.cos(p[0])

    return h


@pytest.mark.parametrize("x", [np.float64(2.0), np.full(2, 2.0)], ids=["scalar", "array"])
def test_rules_see_float32_under_grad_and_vjp(x):
    seen: list = []
    f = _custom_vjp(seen)
    g = funcgrad.grad(lambda v: f(v).sum())(x)
    np.testing.assert_allclose(np.asarray(g), np.cos(x), rtol=1e-6)
    assert g.dtype == np.float32 and seen == [np.float32, np.float32]
    seen.clear()
    funcgrad.vjp(f, x)[1](fnp.ones(np.shape(x), np.float32))
    assert seen == [np.float32, np.float32]
    seen.clear()
    funcgrad.grad(lambda v: _custom_jvp(seen)(v).sum())(x)
    assert seen == [np.float32]
    assert funcgrad.vjp(lambda v: v, x)[0].dtype == np.float32


def test_jvp_and_linearize_hand_on_the_callers_float64():
    seen: list = []
    h = _custom_jvp(seen)
    x = np.float64(2.0)
    funcgrad.jvp(h, (x,), (np.float32(1.0),))
    funcgrad.linearize(h, x)
    assert seen == [np.float64, np.float64]
    assert funcgrad.jvp(lambda v: v, (x,), (np.float32(1.0),))[0].dtype == np.float64
