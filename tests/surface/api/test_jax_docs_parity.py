"""Behaviours JAX's documentation prints, as jax 0.10.2 prints them (expected values checked against
jax; tests/integration/suites/jax_docs/ runs the documents themselves)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import tree_util as tu


def test_vjp_residuals_keep_primal_inputs_first_then_first_reads():
    # gradient-checkpointing.md's print_fwd_bwd flattens the vjp function: jax's leaves are the
    # primal inputs the backward pass reads, in argument order, then the computed residuals in
    # the order the linear program first reads them (NOTE: [vjp residuals]).
    def g(w, x):
        return fnp.sin(fnp.dot(w, x))

    def f(w1, w2, x):
        return g(w2, g(w1, x))

    w1, w2, x = fnp.ones((3, 2)), fnp.ones((4, 3)), fnp.ones(2)
    _, f_vjp = funcgrad.vjp(f, w1, w2, x)
    leaves = tu.tree_leaves(f_vjp)
    assert leaves[0] is w1 and leaves[1] is w2 and leaves[2] is x
    h1 = np.ones((3, 2)) @ np.ones(2)
    h2 = np.ones((4, 3)) @ np.sin(h1)
    expected = [np.cos(h1), np.sin(h1), np.cos(h2)]  # jax's order: cos, then sin (dot's operand)
    assert len(leaves) == 3 + len(expected)
    for got, want in zip(leaves[3:], expected):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-14)
    # 0-d values the backward pass reads are residuals too, not literals of its program
    _, chain_vjp = funcgrad.vjp(lambda t: fnp.sin(fnp.sin(t)), 3.0)
    np.testing.assert_allclose(
        [float(r) for r in tu.tree_leaves(chain_vjp)], [np.cos(3.0), np.cos(np.sin(3.0))], rtol=1e-14
    )


def test_gradient_at_a_complex_input_is_strong():
    # complex-differentiation.md / the autodiff cookbook: jax prints Array(6.-8.j, dtype=complex128)
    # (a strong complex cotangent: JAX's real/imag transposes write a strong zero).
    def f(z):
        x, y = fnp.real(z), fnp.imag(z)
        return x**2 + y**2

    for fun, want in [
        (f, 6 - 8j),
        (fnp.real, 1 + 0j),
        (fnp.imag, -1j),
        (lambda z: fnp.real(z * z), 6 + 8j),
    ]:
        g = funcgrad.grad(fun)(3.0 + 4j)
        assert complex(g) == want and g.dtype == np.complex128 and not g.weak_type
    assert funcgrad.grad(lambda t: t**2)(3.0).weak_type  # a real input's gradient stays weak, as jax's


def test_debug_nans_raises_jax_words():
    # debugging/flags.md: `except FloatingPointError` and JAX's first line of the message
    def f(x):
        w = 3 * fnp.square(x)
        return fnp.log(-w)

    with funcgrad.debug_nans(True):
        with pytest.raises(FloatingPointError, match=r"^invalid value \(nan\) encountered in log\n"):
            f(5.0)
