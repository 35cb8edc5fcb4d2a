"""JAX's dtype rules in 64-bit mode (NOTE: [JAX's dtype rules in 64-bit mode] in
funcgrad/kernel/dtypes.py): what ``funcgrad.as_jax`` with ``JAX_ENABLE_X64=1`` computes. Dtypes, weak
types and values equal jax 0.10.2's with ``jax_enable_x64`` on, where funcgrad's own 64-bit mode
follows NumPy 2 (the cases below differ there, docs/differences_from_jax.md).
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import _config_flags

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax._src import config as _jax_config  # noqa: E402


@pytest.fixture(scope="module")
def jax_rules():
    assert funcgrad.config.jax_enable_x64
    _config_flags.use_jax_dtype_rules(True)
    try:
        yield
    finally:
        _config_flags.use_jax_dtype_rules(False)


I8, I32 = np.arange(1, 4, dtype=np.int8), np.arange(1, 4, dtype=np.int32)
U16, F32 = np.arange(1, 4, dtype=np.uint16), np.ones(3, np.float32)

CASES = {
    "int32_with_float32": lambda jnp: jnp.asarray(I32) + jnp.asarray(F32),
    "int32_with_float16": lambda jnp: I32 * jnp.ones(3, jnp.float16),
    "uint16_with_complex": lambda jnp: jnp.asarray(U16) * 1j,
    "sin_int8": lambda jnp: jnp.sin(I8),
    "rint_int32": lambda jnp: jnp.rint(I32),  # (the default float, not int32's float32)
    "rint_bool": lambda jnp: jnp.rint(np.array([True, False])),
    "trapezoid_int32": lambda jnp: jnp.trapezoid(I32),  # (y made inexact alone: float32)
    "polyint_bool": lambda jnp: jnp.polyint(np.array([True, False, True])),  # (with k's weak 0)
    "polyint_float64_k": lambda jnp: jnp.polyint(F32, 2, np.array([1.0, 2.0])),
    "sort_complex_int32": lambda jnp: jnp.sort_complex(I32[::-1]),  # (to_complex_dtype: complex64)
    "mean_int32": lambda jnp: jnp.mean(I32),
    "divide_int32": lambda jnp: jnp.true_divide(I32, I32),
    "int64_inexact": lambda jnp: jnp.sqrt(np.arange(3)),
    "cumsum_int8_wraps": lambda jnp: jnp.cumsum(np.int8([100, 100])),
    "add_accumulate_int8": lambda jnp: jnp.add.accumulate(np.int8([100, 100])),
    "convolve_ints": lambda jnp: jnp.convolve(I32, I32),
    "square_bool": lambda jnp: jnp.square(np.array([True, False])),
    "float_power_float32": lambda jnp: jnp.float_power(F32, 3),
    "searchsorted": lambda jnp: jnp.searchsorted(np.array([1.0, 2.0]), 1.5),
    "tri": lambda jnp: jnp.tri(2),
    "histogram_traced": lambda jnp: jax_or_funcgrad(jnp).jit(lambda a: jnp.histogram(a, 3)[0])(
        np.arange(6.0)
    ),
    "unwrap_int32": lambda jnp: jnp.unwrap(np.int32([0, 4, 8])),
    "digitize": lambda jnp: jnp.digitize(np.array([0.5, 1.5]), np.array([2.0, 1.0, 0.0])),
    "geomspace_empty_axis": lambda jnp: jnp.geomspace(np.ones((2, 2)), np.full((2, 2), 4.0), 0, axis=1),
    "python_int_wraps": lambda jnp: jnp.asarray(np.uint8([3])) + 300,
    "list_beside_numpy_scalar": lambda jnp: jnp.array([0, np.int16(1)]),
    "list_of_int64s": lambda jnp: jnp.array([0, 2**40, -(2**63)]),
    "norm_int32": lambda jnp: jnp.linalg.norm(I32),
    "promote_types": lambda jnp: str(jnp.promote_types(np.int32, np.float32)),
    "uint64_with_int8_weak_float": lambda jnp: jnp.asarray(np.uint64([1])) + jnp.asarray(np.int8([1])),
    "result_type": lambda jnp: str(jnp.result_type(np.uint32, np.float16, np.int8)),
}


def jax_or_funcgrad(numpy_module):
    return jax if numpy_module is jnp else funcgrad


def _describe(x):
    if isinstance(x, str):
        return x
    return np.dtype(x.dtype).name, bool(x.aval.weak_type), np.asarray(x).tolist()


def test_numpy_rules_stay_funcgrad_default():
    # (without the alias funcgrad's 64-bit mode keeps NumPy 2's promotion; first in the module,
    # before the fixture turns JAX's rules on)
    assert fnp.sin(I32).dtype == np.float64
    assert (fnp.asarray(I32) + fnp.asarray(F32)).dtype == np.float64


@pytest.mark.parametrize("name", sorted(CASES))
def test_jax_rules_in_x64_match_jax(jax_rules, name):
    ours = _describe(CASES[name](fnp))
    with _jax_config.enable_x64(True):
        theirs = _describe(CASES[name](jnp))
    if isinstance(ours, str):
        assert ours == theirs
        return
    assert ours[:2] == theirs[:2], f"(dtype, weak) {ours[:2]} != jax's {theirs[:2]}"
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6)


def test_list_int_past_int64_overflows_as_jax(jax_rules):
    with pytest.raises(OverflowError, match="Python int too large"):
        fnp.array([0, -(2**63) - 1])
    with _jax_config.enable_x64(True), pytest.raises(OverflowError, match="Python int too large"):
        jnp.array([0, -(2**63) - 1])


def test_python_int_past_int64_overflows_in_jax_words(jax_rules):
    with pytest.raises(OverflowError, match="Python int 9223372036854775808 too large to convert to int64"):
        fnp.array(2**63)
    with _jax_config.enable_x64(True), pytest.raises(OverflowError, match="too large to convert to int64"):
        jnp.array(2**63)
