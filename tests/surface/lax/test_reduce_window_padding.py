"""The generic reduce_window (a user's reducer) leaves padding and base-dilation holes out of each
window, as XLA's ReduceWindow and jax do, eagerly as under jit: with a non-identity init_value the
eager result combined the padded elements as init values (JAX's lax_test testReduceWindowGeneralJVP:
1 + 1 + 1 = 3 where jax gives 1)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)  # (as funcgrad's default mode: the oracle modules' rule)

X = np.arange(1.0, 7.0).reshape(2, 3) / 10


@pytest.mark.parametrize("padding", ["VALID", ((1, 1), (0, 0)), ((0, 3), (1, 2))])
@pytest.mark.parametrize("base_dilation", [(1, 1), (2, 1)])
def test_generic_reduce_window_skips_padding_as_jax(padding, base_dilation):
    def f(lib, x):
        return lib.lax.reduce_window(x, 1.0, lambda a, b: a * 2.0 + b, (2, 1), (1, 1), padding, base_dilation)

    want = np.asarray(f(jax, X))
    np.testing.assert_allclose(np.asarray(f(funcgrad, X)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(funcgrad.jit(lambda x: f(funcgrad, x))(X)), want, rtol=1e-12)


def test_init_values_typed_as_jax():
    # Found by the fuzzer: JAX checks a monoid's identity in the init value's own dtype (a Python
    # -inf is max's identity for a bool operand, which then starts from False) and refuses a
    # general reduction whose init dtype differs from the operand's (funcgrad converted it).
    import jax

    x = np.array([True, False, False, False])
    for init, op in ((-np.inf, "max"), (True, "max"), (False, "max")):
        want = jax.lax.reduce_window(x, init, getattr(jax.lax, op), (2,), (1,), ((1, 1),))
        got = funcgrad.lax.reduce_window(x, init, getattr(funcgrad.lax, op), (2,), (1,), ((1, 1),))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    for y, init, op in ((x, 0.0, "max"), (x, False, "add"), (np.arange(4, dtype=np.int8), 1, "mul")):
        with pytest.raises(TypeError):
            jax.lax.reduce_window(y, init, getattr(jax.lax, op), (2,), (1,), "VALID")
        with pytest.raises(TypeError):
            funcgrad.lax.reduce_window(y, init, getattr(funcgrad.lax, op), (2,), (1,), "VALID")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_eager_window_sum_over_more_than_64_elements_as_jax(dtype):
    # A window of more than _FOLD_LIMIT elements is reduced in one NumPy call (the eager step
    # recursed into itself: RecursionError); a bfloat16 one adds in XLA's order (compiled), where
    # NumPy's loop stopped at 256
    dt = jax.numpy.dtype(dtype)
    x = np.random.default_rng(0).random((3, 1000)).astype(dt)
    window = ((1, 500), (1, 250), "VALID")
    want = jax.lax.reduce_window(jax.numpy.asarray(x), dt.type(0), jax.lax.add, *window)
    got = funcgrad.lax.reduce_window(funcgrad.numpy.asarray(x), dt.type(0), funcgrad.lax.add, *window)
    assert got.dtype == want.dtype
    # (float32: NumPy's order of additions, within float32's rounding of XLA's; bfloat16 bit for bit)
    rtol = 1e-5 if dtype == "float32" else 0
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=rtol)


def test_string_padding_as_jax():
    # Found by the lax-parameter fuzzer (session 16): JAX resolves 'SAME' from the window dilated and
    # the operand *not* base-dilated (shape (1, 3) here, where the dilated size gives (2, 3)), a
    # shorter window_dilation applies to the last dimensions, and ranks that do not broadcast are
    # NumPy's ValueError before the shape rule's TypeError
    x = np.arange(6.0).reshape(2, 3)
    cases = [
        ((2, 2), (2, 2), "SAME", (2, 2), (2, 2)),
        ((1, 3), (1, 1), "SAME_LOWER", (1, 3), None),
        ((2, 2, 1), (2, 2), "SAME", None, (2, 2)),
        ((2, 2), None, "SAME", None, None),
        ((2, 2), (1, 1), "FULL", None, None),
        ((2, 2), (1, 1), "SAME", None, (0, 1)),
    ]
    for args in cases:
        try:
            want = np.asarray(jax.lax.reduce_window(x, 0.0, jax.lax.add, *args))
        except Exception as e:
            with pytest.raises(type(e)):
                funcgrad.lax.reduce_window(x, 0.0, funcgrad.lax.add, *args)
            continue
        got = funcgrad.lax.reduce_window(x, 0.0, funcgrad.lax.add, *args)
        np.testing.assert_array_equal(np.asarray(got), want)
