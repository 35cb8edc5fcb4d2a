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


def test_unregistered_jax_array_object_in_a_transformation_and_nested_lists_as_jax():
    # JAX's api_test test_dunder_jax_array(_warnings): a transformation does not convert an object
    # that is not a pytree (JAX's ValueError); jnp.array converts one nested in lists
    jax = pytest.importorskip("jax")

    class Plain:
        def __init__(self, value):
            self.value = value

        def __jax_array__(self):
            return self.value

    for lib, np_ in ((funcgrad, fnp), (jax, jax.numpy)):
        a = Plain(np_.arange(4))
        for transform in (lib.jit, lib.grad):
            with pytest.raises(ValueError, match=r"Triggering __jax_array__\(\) during abstractification"):
                transform(lambda v: v)(a)
        x = Plain(np_.array(1))
        got = np_.array(((x, x), [x, x]))
        assert got.dtype == np_.array(1).dtype
        np.testing.assert_array_equal(np.asarray(got), np.ones((2, 2)))


def test_an_array_given_as_a_dtype_warns_as_jax():
    # (NumPy 2.4's __numpy_dtype__ protocol: JAX deprecates np.dtype(arr); array_test
    # test_deprecated_dtype_conversion)

    with pytest.warns(DeprecationWarning, match="Implicit conversion of an array to a dtype is deprecated"):
        assert np.dtype(fnp.arange(3, dtype=np.int32)) == np.int32
