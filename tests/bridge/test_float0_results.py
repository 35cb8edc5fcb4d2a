"""float0 outputs of compiled programs come back as NumPy float0 arrays, as JAX's (NOTE: [float0
results] in xla_bridge/execute.py): jit of a jvp of a comparison, of grad(allow_int=True), an
eager scan's float0 tangent, on the native route's first and later calls and with a committed
argument. jax 0.10.2 returns a NumPy float0 array (its TypedNdArray, an np.ndarray) in each case
below (checked with jax; not imported here: it would take the native route away)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.dtypes import float0


def _is_float0(v, shape):
    return isinstance(v, np.ndarray) and v.dtype == float0 and v.shape == shape


def _jvp_of_comparison():
    return funcgrad.jit(lambda x: funcgrad.jvp(lambda x: x > 0, (x,), (x,))[1])


@pytest.mark.parametrize("arg", ["numpy", "device", "committed"])
def test_jit_float0_output_is_numpy_float0(arg):
    x = np.ones(2, np.float32)
    if arg == "device":
        x = funcgrad.jit(lambda a: a + 0)(x)
    elif arg == "committed":
        x = funcgrad.device_put(x, funcgrad.devices()[0])
    f = _jvp_of_comparison()
    for _ in range(3):  # the first call (a miss) and the cached ones
        assert _is_float0(f(x), (2,))


def test_jit_grad_allow_int_and_mixed_outputs():
    g = funcgrad.jit(funcgrad.grad(lambda x, n: x * 2.0, argnums=(0, 1), allow_int=True))
    for _ in range(2):
        dx, dn = g(3.0, 2)
        assert isinstance(dx, funcgrad.Array) and float(dx) == 2.0
        assert _is_float0(dn, ())
    h = funcgrad.jit(lambda x, t: (x, t))  # a float0 argument passes through as float0
    y, t = h(1.0, np.zeros(3, float0))
    assert float(y) == 1.0 and _is_float0(t, (3,))


def test_scan_float0_tangent_out_of_custom_jvp():
    # JAX's custom_api_test test_float0_initial_style (custom_jvp): the int carry's tangent
    @funcgrad.custom_jvp
    def f(x, y):
        return x, y

    @f.defjvp
    def _(primals, tangents):
        x, y = primals
        return (x, y), (2.0, funcgrad.custom_derivatives.zero_from_primal(y))

    def foo(x, y):
        return lax.scan(lambda c, _: (f(*c), None), (x, y), None, length=1)[0]

    (px, py), (tx, ty) = funcgrad.jvp(foo, (2.0, 3), (np.ones(()), fnp.zeros((), float0)))
    assert (float(px), int(py), float(tx)) == (2.0, 3, 2.0)
    assert _is_float0(ty, ())
