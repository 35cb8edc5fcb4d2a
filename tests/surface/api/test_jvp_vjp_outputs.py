"""What ``jvp``, ``vjp`` and ``linearize`` return for outputs the function did not compute, as
jax 0.10.2 returns them (NOTE: [outputs jvp and vjp return as they are], NOTE: [primals as the
caller gave them]): an input passed through is the caller's own object, a constant the function
returned (a Python scalar, a NumPy value) is that constant, ``has_aux`` constants stay as they are,
and a custom or user JVP rule gets the caller's Python floats as primals and tangents."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


def _kind(x):
    # A Python number (jax's TypedFloat is a float), a NumPy value, or either library's array.
    for t in (bool, int, float, np.ndarray, np.generic):
        if isinstance(x, t):
            return t.__name__
    return "array"


def _cases(lib, np_lib):
    def custom(x):
        return x

    custom = lib.custom_jvp(custom)
    custom.defjvp(lambda p, t: (5.0 if type(p[0]) is float else -1.0, 3.0))
    return {
        "identity": lambda: lib.jvp(lambda x: x, (1.0,), (2.0,)),
        "constants": lambda: lib.jvp(lambda x: (x * 2, 2.0, np.float32(1), np.ones(2)), (1.0,), (1.0,)),
        "computed tangent": lambda: lib.jvp(lambda x: x + 1, (1.0,), (1.0,)),
        "numpy passthrough": lambda: lib.jvp(lambda x: x, (np.ones(2),), (np.ones(2),)),
        "custom rule": lambda: lib.jvp(custom, (2.0,), (1.0,)),
        "vjp": lambda: lib.vjp(lambda x: (x * 2, 2.0, x), 1.0)[0],
        "vjp aux": lambda: lib.vjp(lambda x: (x, (2.0, 3, np.ones(2))), 1.0, has_aux=True)[2],
        "grad aux": lambda: lib.grad(lambda x: (x, (2.0, np.float32(1))), has_aux=True)(1.0)[1],
        "linearize": lambda: lib.linearize(lambda x: (x, 2.0), 1.0)[0],
        "array input": lambda: lib.jvp(lambda x: x, (np_lib.asarray(1.0),), (np_lib.asarray(1.0),)),
    }


@pytest.mark.parametrize("case", sorted(_cases(funcgrad, fnp)))
def test_outputs_returned_as_jax_returns_them(case):
    import jax
    import jax.numpy as jnp

    want = _cases(jax, jnp)[case]()
    got = _cases(funcgrad, fnp)[case]()
    w_leaves, w_tree = jax.tree_util.tree_flatten(want)
    g_leaves, g_tree = funcgrad.tree_util.tree_flatten(got)
    assert str(g_tree) == str(w_tree)
    assert [_kind(g) for g in g_leaves] == [_kind(w) for w in w_leaves]
    for g, w in zip(g_leaves, w_leaves):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w))
