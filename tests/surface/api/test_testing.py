"""funcgrad.testing: check_grads, the array strategies and check_rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.api import custom_jvp, custom_vjp, stop_gradient
from funcgrad.testing import DOMAINS, arrays, check_grads, check_rule, float_dtypes, numerical_jvp, shapes


def test_check_grads_accepts_correct_derivatives():
    check_grads(lambda x: fnp.sin(x) * x, (np.array([0.5, 1.0]),), order=2)
    check_grads(lambda x: (fnp.tanh(x) ** 2).sum(), (np.array([0.5, -1.0], np.float32),), order=2)
    check_grads(lambda d, y: (d["a"] * fnp.exp(y)).sum(), ({"a": np.ones(3)}, np.arange(3.0)), order=2)
    check_grads(lambda x, n: x * n, (np.ones(3), np.arange(3)), order=1)  # integer args are held fixed
    check_grads(fnp.log, (np.array([0.5, 2.0]),), order=3, modes=("rev",))
    assert funcgrad.check_grads is check_grads


def _wrong_jvp_sin():
    @custom_jvp
    def f(x):
        return fnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), t * fnp.cos(x) * 1.01  # 1% off: well above the float64 tolerance

    return f


@pytest.mark.parametrize("modes", [("fwd",), ("rev",)])
def test_check_grads_catches_a_wrong_rule_in_each_mode(modes):
    with pytest.raises(AssertionError, match="JVP" if modes == ("fwd",) else "VJP"):
        check_grads(_wrong_jvp_sin(), (np.array([0.3, 1.2]),), order=1, modes=modes)


def test_check_grads_catches_a_wrong_second_derivative():
    # The rule is right, but its own derivative is not: stop_gradient hides cos's dependence on x.
    @custom_jvp
    def f(x):
        return fnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), t * stop_gradient(fnp.cos(x))

    check_grads(f, (np.array([0.5, 1.5]),), order=1)
    with pytest.raises(AssertionError, match="JVP of JVP"):
        check_grads(f, (np.array([0.5, 1.5]),), order=2)


def test_numerical_jvp_runs_in_float64():
    out = numerical_jvp(lambda x: x * x, (np.float32(3.0),), (np.float32(1.0),))
    assert np.asarray(out).dtype == np.float64
    assert float(out) == pytest.approx(6.0, abs=1e-8)


@settings(max_examples=8)
@given(st.data())
def test_array_strategies_respect_dtype_shape_and_domain(data):
    dtype = data.draw(float_dtypes())
    shape = data.draw(shapes(max_dims=2))
    domain = data.draw(st.sampled_from(sorted(DOMAINS)))
    x = data.draw(arrays(dtype, shape, domain=domain))
    lo, hi = DOMAINS[domain]
    assert x.dtype == dtype and x.shape == shape
    assert np.isfinite(x).all() and (x >= np.asarray(lo, dtype)).all() and (x <= np.asarray(hi, dtype)).all()
    y = data.draw(arrays(st.just(np.dtype(np.float64)), st.just((2,)), domain=(5.0, 6.0)))
    assert ((y >= 5) & (y <= 6)).all()


def _softplus_vjp(wrong: bool):
    @custom_vjp
    def softplus(x):
        return fnp.log1p(fnp.exp(x))

    def fwd(x):
        return softplus(x), x

    def bwd(x, g):
        sigmoid = 1 / (1 + fnp.exp(-x))
        return ((g * sigmoid * (1.1 if wrong else 1.0)),)

    softplus.defvjp(fwd, bwd)
    return softplus


def test_check_rule_accepts_a_correct_custom_vjp_and_custom_jvp():
    check_rule(_softplus_vjp(wrong=False), np.array([-1.0, 0.0, 2.0]))

    @custom_jvp
    def logsumexp2(x, y):
        m = fnp.maximum(x, y)
        return m + fnp.log(fnp.exp(x - m) + fnp.exp(y - m))

    @logsumexp2.defjvp
    def _(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        out = logsumexp2(x, y)
        return out, tx * fnp.exp(x - out) + ty * fnp.exp(y - out)

    strategy = st.tuples(arrays(np.float64, (3,)), arrays(np.float64, (3,)))
    check_rule(logsumexp2, strategy, max_examples=3)


def test_check_rule_catches_a_wrong_custom_vjp():
    wrong = _softplus_vjp(wrong=True)
    with pytest.raises(AssertionError, match=r"check_rule\(custom_vjp softplus\).*finite differences"):
        check_rule(wrong, np.array([-1.0, 0.0, 2.0]))
    # Also when the examples come from a strategy (a small one: hypothesis shrinks a failure).
    examples = st.sampled_from([(np.array([0.5]),), (np.array([-1.0, 2.0]),)])
    with pytest.raises(AssertionError, match="custom_vjp softplus"):
        check_rule(wrong, strategy=examples, max_examples=2)


def test_check_rule_needs_arguments():
    with pytest.raises(TypeError, match="example arguments"):
        check_rule(fnp.sin)
