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
