"""Numerical checks shared by the tests: central finite differences in float64, jvp/vjp
consistency, and jaxpr type checks.

Tests import these helpers; they compare funcgrad's derivatives with numbers computed without
funcgrad's differentiation (finite differences), so a wrong rule cannot pass by agreeing with
itself.
"""

from __future__ import annotations

import numpy as np

import funcgrad
from funcgrad.kernel import ir
from funcgrad.kernel import tree_util as tu


def numerical_jvp(f, args, tangents, eps=1e-6):
    """Central difference of ``f`` (flat list of float64 arrays -> array) along ``tangents``."""
    plus = f(*[np.asarray(a) + eps * np.asarray(t) for a, t in zip(args, tangents)])
    minus = f(*[np.asarray(a) - eps * np.asarray(t) for a, t in zip(args, tangents)])
    return tu.tree_map(lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * eps), plus, minus)


def assert_close(actual, expected, rtol=1e-6, atol=1e-6, err_msg=""):
    a_leaves = tu.tree_leaves(actual)
    e_leaves = tu.tree_leaves(expected)
    assert len(a_leaves) == len(e_leaves), (len(a_leaves), len(e_leaves))
    for a, e in zip(a_leaves, e_leaves):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=rtol, atol=atol, err_msg=err_msg)


def check_jvp(f, args, rng, rtol=1e-5, atol=1e-6, eps=1e-6):
    """funcgrad.jvp against central differences along a random direction."""
    tangents = [rng.standard_normal(np.shape(a)) for a in args]
    _, t_out = funcgrad.jvp(f, tuple(args), tuple(tangents))
    expected = numerical_jvp(f, args, tangents, eps)
    assert_close(t_out, expected, rtol=rtol, atol=atol, err_msg="jvp vs finite differences")


def check_vjp(f, args, rng, rtol=1e-5, atol=1e-6):
    """<vjp(ct), t> == <ct, jvp(t)> (the dot-product test), for random t and ct."""
    tangents = [rng.standard_normal(np.shape(a)) for a in args]
    out, t_out = funcgrad.jvp(f, tuple(args), tuple(tangents))
    ct = tu.tree_map(lambda o: rng.standard_normal(np.shape(o)), out)
    _, f_vjp = funcgrad.vjp(f, *args)
    cts_in = f_vjp(ct)
    lhs = sum(float(np.vdot(np.asarray(c), np.asarray(t))) for c, t in zip(tu.tree_leaves(cts_in), tangents))
    rhs = sum(
        float(np.vdot(np.asarray(c), np.asarray(t)))
        for c, t in zip(tu.tree_leaves(ct), tu.tree_leaves(t_out))
    )
    np.testing.assert_allclose(lhs, rhs, rtol=rtol, atol=atol, err_msg="vjp/jvp dot-product test")


def check_grads(f, args, order=2, rng=None, rtol=1e-4, atol=1e-5):
    """Forward and reverse derivatives against finite differences, up to ``order``."""
    rng = rng or np.random.default_rng(0)
    check_jvp(f, args, rng, rtol, atol)
    check_vjp(f, args, rng, rtol, atol)
    if order > 1:
        t = [rng.standard_normal(np.shape(a)) for a in args]

        def f_jvp(*xs):
            return funcgrad.jvp(f, tuple(xs), tuple(t))[1]

        check_grads(f_jvp, args, order - 1, rng, rtol * 10, atol * 10)


def typecheck(closed) -> None:
    """Every jaxpr produced by a transformation must pass the type checker."""
    ir.typecheck_jaxpr(closed.jaxpr if isinstance(closed, ir.ClosedJaxpr) else closed)
