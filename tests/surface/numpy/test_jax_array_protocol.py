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


class Bare:
    """A wrapper with ``__jax_array__`` only (JAX's array_extensibility_test's JaxArrayWrapper)."""

    def __init__(self, value):
        self.value = value

    def __jax_array__(self):
        return self.value


class DuckErroring:
    """A prototype with shape and dtype whose ``__jax_array__`` must not be called (JAX reads the
    duck type first in ``zeros_like`` and friends)."""

    shape, dtype = (2, 3), np.dtype("float32")

    def __jax_array__(self):
        raise ValueError("jax array was called.")


@pytest.mark.parametrize(
    "name, args",
    [
        ("sin", ("f",)),
        ("add", ("f", "f")),
        ("logaddexp", ("f", "f")),
        ("negative", ("f",)),
        ("where", ("b", "f", "f")),
        ("vstack", (["f", "f"],)),
        ("ndim", ("f",)),
        ("shape", ("f",)),
        ("size", ("f",)),
        ("isscalar", ("s",)),
        ("iscomplexobj", ("c",)),
        ("isrealobj", ("f",)),
    ],
)
def test_bare_jax_array_objects_as_jax(name, args):
    """Every jax.numpy function takes an object with only ``__jax_array__`` for an array (a
    pytree, as JAX's test registers it: jitted functions take it through the tree)."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    for lib in (jax, funcgrad):
        try:
            lib.tree_util.register_pytree_node(Bare, lambda b: ((b.value,), None), lambda _, c: Bare(*c))
        except ValueError:  # (registered by an earlier case)
            pass
    values = {
        "f": np.array([0.5, -1.5, 2.0], np.float32),
        "b": np.array([True, False, True]),
        "s": np.array(3.0, np.float32),
        "c": np.array([1 + 2j], np.complex64),
    }

    def wrapped(spec):
        return [Bare(values[s]) for s in spec] if isinstance(spec, list) else Bare(values[spec])

    got = getattr(fnp, name)(*map(wrapped, args))
    want = getattr(jnp, name)(*map(wrapped, args))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
def test_like_functions_read_a_duck_prototype_before_jax_array(name):
    jnp = pytest.importorskip("jax.numpy")
    args = (DuckErroring(), 2.0) if name == "full_like" else (DuckErroring(),)
    got, want = getattr(fnp, name)(*args), getattr(jnp, name)(*args)
    assert got.shape == want.shape == (2, 3) and got.dtype == want.dtype
    if name != "empty_like":
        np.testing.assert_array_equal(got, want)
