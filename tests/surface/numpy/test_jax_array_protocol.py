"""Objects with ``__jax_array__`` as arguments of funcgrad.numpy functions, also when the value
they hold is traced: the value is taken through the protocol, never through NumPy (flax nnx's
checkify tests, on Variables -- pytree nodes with ``__jax_array__`` --: ``jnp.sin(param)`` inside
jit raised TracerArrayConversionError)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


class Box:
    def __init__(self, value):
        self.value = value

    def __jax_array__(self):
        return self.value

    dtype = property(lambda self: self.value.dtype)
    shape = property(lambda self: self.value.shape)


def _register(lib):
    # As flax's Variables: a pytree node with ``__jax_array__`` (JAX refuses an unregistered one).
    lib.tree_util.register_pytree_node(Box, lambda b: ((b.value,), None), lambda _, c: Box(*c))


def test_jax_array_objects_in_numpy_functions_match_jax():
    jax = pytest.importorskip("jax")
    _register(jax)
    _register(funcgrad)
    x = np.array([0.5, 1.5], np.float32)
    ours = funcgrad.jit(lambda v: fnp.sin(Box(v)) * v)(x)
    theirs = jax.jit(lambda v: jax.numpy.sin(Box(v)) * v)(x)
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    np.testing.assert_allclose(fnp.sin(Box(fnp.asarray(x))), np.sin(x), rtol=1e-6)
    # An operator's other operand, on either side (flax: ``array + variable``).
    box = Box(fnp.asarray(x))
    np.testing.assert_allclose(fnp.asarray(x) + box, 2 * x)
    np.testing.assert_allclose(fnp.asarray(x) * box, x * x)
    theirs = jax.numpy.asarray(x) + Box(jax.numpy.asarray(x))
    np.testing.assert_allclose(theirs, 2 * x)
