"""vmap's outputs left unmapped (``out_axes=None``) that are not arrays come back as the function
returned them, as in JAX (jax 0.10.2 is the oracle): a Python scalar stays a Python scalar, a
NumPy array a NumPy array; mapped outputs and unmapped arrays are Arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
import jax.numpy as jnp  # noqa: E402

CASES = [
    ("py_scalar", lambda m: (lambda x: 1.0, dict(out_axes=None)), lambda m: (m.ones(3),)),
    (
        "numpy_array",
        lambda m: (lambda x, y: y, dict(in_axes=(0, None), out_axes=None)),
        lambda m: (m.ones(3), np.ones(2)),
    ),
    ("pair", lambda m: (lambda x: (x, 3), dict(out_axes=(0, None))), lambda m: (m.ones(3),)),
    ("mapped_scalar", lambda m: (lambda x: (x, 3), {}), lambda m: (m.ones(3),)),
    (
        "unmapped_array",
        lambda m: (lambda x: x.sum(), dict(in_axes=None, out_axes=None, axis_size=2)),
        lambda m: (m.ones(3),),
    ),
]


def _kinds(tree, lib):
    leaves = lib.tree_util.tree_leaves(tree)
    return [type(x).__name__ if type(x) in (int, float, np.ndarray) else "Array" for x in leaves], leaves


@pytest.mark.parametrize("name,make,args", CASES, ids=[c[0] for c in CASES])
def test_unmapped_outputs_as_jax(name, make, args):
    f, kw = make(jnp)
    want_kinds, want = _kinds(jax.vmap(f, **kw)(*args(jnp)), jax)
    f, kw = make(fnp)
    got_kinds, got = _kinds(funcgrad.vmap(f, **kw)(*args(fnp)), funcgrad)
    assert got_kinds == want_kinds
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
