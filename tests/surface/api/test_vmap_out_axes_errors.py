"""vmap's error for an out_axes=None output that is batched: JAX's exact message, naming the
output by its key path (flax's nnx tests match it)."""

import numpy as np
import pytest

import funcgrad


@pytest.mark.parametrize(
    "f, out_axes",
    [
        (lambda x: x * 2, None),
        (lambda x: (x, {"a": x * 2, "b": 1.0}), (0, {"a": None, "b": None})),
    ],
)
def test_batched_output_at_out_axes_none_is_jax_error(f, out_axes):
    import jax

    with pytest.raises(ValueError) as want:
        jax.vmap(f, out_axes=out_axes)(np.ones(3))
    with pytest.raises(ValueError) as got:
        funcgrad.vmap(f, out_axes=out_axes)(np.ones(3))
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"in_axes": False}, "vmap in_axes must be an int, None, or a tuple of entries"),
        ({"in_axes": {"a": 0}}, r"but got \{'a': 0\}\."),
        ({"in_axes": (np.array([1.0, 2.0]),)}, r"vmap in_axes must be an int, None, or \(nested\) container"),
        (
            {"out_axes": (np.array([1.0, 2.0]),)},
            r"vmap out_axes must be an int, None, or \(nested\) container",
        ),
    ],
)
def test_bad_axes_raise_jax_type_errors_when_vmap_is_applied(kwargs, pattern):
    # JAX's api_test test_vmap_in_axes_bool_error / _non_tuple_error / _leaf_types / out_axes_leaf_types
    with pytest.raises(TypeError, match=pattern):
        funcgrad.vmap(lambda x: x, **kwargs)
