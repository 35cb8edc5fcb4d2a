"""checkify's index checks do their own arithmetic with explicit shapes and dtypes: under rank
promotion 'raise' and strict dtype promotion (JAX's test defaults) a vector of gather/scatter
indices and mixed-dtype dynamic_slice starts are checked, with JAX's messages (jax 0.10.2's,
written out) and payloads of int32, as JAX's."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.experimental import checkify as C

MSG = "out-of-bounds indexing for array of shape {}: index {} is out of bounds for axis 0 with size 3. "
CASES = [
    ("gather", lambda x, i: x[i], np.array([0, 5, 1], np.int32), "(3,)", 5, [0.0, 2.0, 1.0]),
    ("scatter", lambda x, i: x.at[i].add(1.0), np.array([[0], [4]], np.int32), "(3,)", 4, [1.0, 1.0, 2.0]),
    ("dynamic_slice", lambda x, i: lax.dynamic_slice(fnp.ones((3, 4)), (i, np.int64(1)), (1, 2)),
     np.int32(3), "(3, 4)", 3, [[1.0, 1.0]]),
]  # fmt: skip


@pytest.mark.parametrize("name, f, i, shape, bad, want", CASES, ids=[c[0] for c in CASES])
def test_index_checks_under_strict_promotion(name, f, i, shape, bad, want):
    g = C.checkify(f, errors=C.index_checks)
    # JAX's checkify_test runs in its 32-bit default, where the int64 start becomes int32; in
    # 64-bit mode JAX's dynamic_slice refuses mixed start types (TypeError), as funcgrad's does.
    with funcgrad.numpy_rank_promotion("raise"), funcgrad.numpy_dtype_promotion("strict"):
        with funcgrad.enable_x64(False):
            err, y = (funcgrad.jit(g) if name == "gather" else g)(fnp.arange(3.0), i)
    assert err.get() == MSG.format(shape, bad)
    assert np.asarray(y).tolist() == want
    assert [np.dtype(p.dtype) for p in err._payloads[err._code.item()]] == [np.int32] * 3


def test_mixed_start_types_are_refused_in_64_bit_mode_as_jax():
    with pytest.raises(TypeError, match="must be integers of the same type, got: int32, int64"):
        lax.dynamic_slice(fnp.ones((3, 4)), (np.int32(1), np.int64(1)), (1, 2))


def test_static_out_of_bounds_int_index_is_checked_as_jax():
    # JAX's checkify_test test_multiple_payloads: x[5] of a (2,) array is a clamped dynamic_slice
    # (JAX's static-slice route refuses it), which the index checks see; eagerly the value is x[1].
    x = fnp.arange(2.0)
    err, y = C.checkify(lambda v: v[5] + v[-9], errors=C.index_checks)(x)
    assert (
        err.get()
        == "out-of-bounds indexing for array of shape (2,): index 5 is out of bounds for axis 0 with size 2. "
    )
    assert float(y) == 1.0 and float(x[5]) == 1.0 and float(x[-9]) == 0.0
    assert "dynamic_slice" in str(funcgrad.make_jaxpr(lambda v: v[5])(x))
