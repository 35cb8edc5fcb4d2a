"""Regression tests for the divergences from jax that the random-program comparison of issue 33 found.

Each case is one program written against a jax-like namespace (``api`` with grad/jit/vmap/jacrev/...,
``np_`` the numpy module, ``nn``), so the same code runs on funcgrad and on jax. Two tiers:

- fast (unmarked): funcgrad's answer against a closed form or NumPy, eager and under jit/vmap;
- slow (``@pytest.mark.slow``): funcgrad against jax 0.10.2 with x64 enabled, the oracle, values and
  dtypes compared exactly in shape and dtype, NaN positions included.

The root causes (see the commits tagged "issue 33"): relu/relu6 multiplied the tangent by a 0/1
mask (inf * 0 = NaN) where jax selects; pow's d/dx rule masked all of y == 0, cutting its dependence
on y; take(mode='clip') let getitem count a negative index from the end before clipping; interp took
fp's dtype alone; quantile reshaped with -1 next to an empty axis; scatter's shape check (and the
gather batch rule) did not allow an empty batching axis; fmax/fmin split a tie like maximum;
x.at[].op(y) converted y to x's dtype before combining instead of after; and (a sibling) remainder's
signed-zero fix-up was a select that zeroed the derivative at exact multiples; sparse_sigmoid's
selects gave 0 at its kinks where jax.nn's clip gives 1/4; max/min gave the whole derivative to the
other operand where one is NaN (1 - the other's weight) and the max/min reductions divided by
max(count, 1), hiding the NaN of a NaN maximum; the inf-norms lacked jax's initial=0; trapezoid,
like interp, took y's dtype alone; lax.pow refused an integer exponent array.
"""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import nn as fnn

FG = types.SimpleNamespace(api=funcgrad, np_=fnp, nn=fnn)


def _close(got, want, rtol=1e-12, atol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


# ----------------------------------------------------------------------------------------------
# The cases, as programs over a jax-like namespace ``m`` (funcgrad's or jax's)

X_RELU = np.array([-1.0, 0.0, 2.0])
X_RELU6 = np.array([-1.0, 0.0, 2.0, 6.0, 7.0])
V_TAKE = np.array([0.8, 1.5, 1.9])
I_TAKE = np.array([-1, 2, 5, -4])
X_AT = np.array([4, -3, -2], np.int32)


def _sqrt_relu_grad(m):
    return m.api.grad(lambda x: m.np_.sum(m.np_.sqrt(m.nn.relu(x))))(X_RELU)


def _sqrt_relu6_grad_jit(m):
    return m.api.jit(m.api.grad(lambda x: m.np_.sum(m.np_.sqrt(m.nn.relu6(x)))))(X_RELU6)


def _sqrt_relu_grad_vmap(m):
    return m.api.vmap(m.api.grad(lambda x: m.np_.sqrt(m.nn.relu(x))))(X_RELU)


def _power_mixed(m):
    return m.api.grad(lambda y: m.api.grad(lambda x: m.np_.power(x, y))(0.5))(0.0)


def _power_mixed_vmap(m):
    inner = lambda y: m.api.grad(lambda x: m.np_.power(x, y))(0.5)  # noqa: E731
    return m.api.vmap(m.api.grad(inner))(np.array([0.0, 1.0, 2.5]))


def _power_hessian_jit(m):
    return m.api.jit(m.api.hessian(lambda x: (m.np_.abs(x) + 0.5) ** (0.6 * x)))(0.0)


def _take_clip(m):
    return m.np_.take(V_TAKE, I_TAKE, mode="clip")


def _take_clip_jit_vmap(m):
    return m.api.jit(m.api.vmap(lambda i: m.np_.take(V_TAKE, i, mode="clip")))(I_TAKE)


def _take_clip_grad(m):
    return m.api.grad(lambda v: m.np_.sum(m.np_.take(v, I_TAKE, mode="clip")))(V_TAKE)


def _take_clip_axis(m):
    return m.np_.take(np.arange(6.0).reshape(2, 3), np.array([-1, 3]), axis=1, mode="clip")


def _interp_dtype(m):
    return m.np_.interp(np.float32(0.25), np.array([0.0, 1.0]), np.array([1.0, 2.0], np.float32))


def _interp_dtype_jit(m):
    x = np.array([0.25, 2.0], np.float32)
    return m.api.jit(m.np_.interp)(x, np.array([0.0, 1.0]), np.array([1.0, 2.0], np.float32))


def _trapezoid_dtype(m):
    return m.np_.trapezoid(np.array([1.0, 2.0, 4.0], np.float32), np.array([0.0, 1.0, 3.0]))


def _trapezoid_dx_dtype_jit(m):
    return m.api.jit(lambda y: m.np_.trapezoid(y, dx=np.float64(0.5)))(np.array([1.0, 2.0, 4.0], np.float32))


def _median_empty(m):
    return m.np_.median(m.np_.ones((2, 0)), axis=0)


def _median_empty_jit(m):
    return m.api.jit(lambda a: m.np_.median(a, axis=0))(m.np_.ones((2, 0)))


def _pad_edge_jacrev(m):
    return m.api.jacrev(lambda x: m.np_.pad(x, (0, 2), mode="edge")[1:1])(m.np_.ones(3))


def _pad_edge_jacrev_jit(m):
    return m.api.jit(m.api.jacrev(lambda x: m.np_.pad(x, (0, 2), mode="edge")[1:1]))(m.np_.ones(3))


def _pad_vjp_vmap_empty(m):
    _, vjp = m.api.vjp(lambda x: m.np_.pad(x, (0, 2), mode="edge"), m.np_.ones(3))
    return m.api.vmap(vjp)(m.np_.zeros((0, 5)))[0]


def _gather_scatter_vmap_empty(m):
    def f(row, idx):
        return row.at[idx].add(row[idx] * 2.0)

    return m.api.jit(m.api.vmap(f))(m.np_.zeros((0, 4)), m.np_.zeros((0, 2), np.int32))


def _fmax_grad(m):
    return m.api.grad(lambda x: m.np_.sum(m.np_.fmax(x * x, x)))(np.array([1.0, 0.0, 2.0]))


def _fmin_grad_jit(m):
    return m.api.jit(m.api.grad(lambda x: m.np_.sum(m.np_.fmin(x * x, x))))(np.array([1.0, 0.0, 2.0]))


def _fmax_ties_both(m):
    x = np.array([1.0, 0.0, np.nan, 3.0])
    y = np.array([1.0, 0.0, 2.0, np.nan])
    return m.api.grad(lambda a, b: m.np_.sum(m.np_.fmax(a, b)), argnums=(0, 1))(x, y)


def _at_op(op, y, x=X_AT):
    def case(m):
        return getattr(m.np_.asarray(x).at[:], op)(y)

    return case


def _at_add_jit(m):
    return m.api.jit(lambda x: x.at[1:].add(2.5))(m.np_.asarray(X_AT))


def _at_power_repeated(m):
    return m.np_.asarray(np.array([2.0, 3.0])).at[np.array([0, 0])].power(np.array([2.0, 3.0]))


def _at_divide_repeated(m):
    return m.np_.asarray(np.array([2.0, 3.0])).at[np.array([0, 0])].divide(np.array([2.0, 4.0]))


X_REM = np.array([-1.0, 0.0, 0.5, 3.0, -3.0, 2.5])
Y_REM = np.array([-1.0, -0.5, -0.25, 1.5, 1.5, -1.0])


def _remainder_grads(m):
    # Exact multiples (remainder 0, signed like the divisor) keep the derivative of x - y floor(x/y).
    return m.api.grad(lambda x, y: m.np_.sum(m.np_.remainder(x, y)), argnums=(0, 1))(X_REM, Y_REM)


def _sparse_sigmoid_grad_kinks(m):
    return m.api.vmap(m.api.grad(m.nn.sparse_sigmoid))(np.array([-2.0, -1.0, 0.0, 1.0, 2.0]))


X_NAN = np.array([np.nan, 1.0, 3.0, 3.0, np.inf, -0.0, 2.0])
Y_NAN = np.array([3.0, np.nan, 3.0, 1.0, np.inf, 0.0, np.nan])


def _maximum_nan_grads(m):
    # Where either operand is NaN neither gets the derivative (jax's balanced_eq); ties share it.
    return m.api.grad(lambda x, y: m.np_.sum(m.np_.maximum(x, y)), argnums=(0, 1))(X_NAN, Y_NAN)


def _minimum_nan_grads_jit(m):
    f = m.api.grad(lambda x, y: m.np_.sum(m.np_.minimum(x, y)), argnums=(0, 1))
    return m.api.jit(f)(X_NAN, Y_NAN)


def _max_reduction_nan_grad(m):
    # A NaN maximum equals no element: the derivative is 0/0 = NaN everywhere, as in jax.
    return m.api.grad(lambda x: m.np_.max(x))(np.array([np.nan, 1.0, 3.0, 3.0]))


def _max_reduction_ties_grad(m):
    return m.api.vmap(m.api.grad(lambda x: m.np_.max(x)))(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]))


def _norm_inf_at_zero(m):
    # jax's amax(abs(x), initial=0): the initial 0 ties with the four zeros.
    return m.api.grad(lambda x: m.np_.linalg.norm(x, ord=np.inf))(np.zeros(4))


def _matrix_norm_1_at_zero(m):
    return m.api.grad(lambda x: m.np_.linalg.norm(x, ord=1))(np.zeros((2, 3)))


X_POW = np.array([0.0, 0.5, 2.0, -1.5])
N_POW = np.array([0, 1, 3, -2], np.int32)


def _lax_pow_int_exponent(m):
    return m.api.jit(m.api.vmap(m.api.value_and_grad(lambda x, n: m.api.lax.pow(x, n))))(X_POW, N_POW)


def _expn_fractional_order(m):
    # 0 < n < 1 with 0 < x <= 1 is covered by none of expn's branches: NaN (as jax), not a leftover.
    special = m.api.scipy.special
    return special.expn(np.array([0.5, 0.5, 1.0]), np.array([0.25, 2.0, 1.0]))


# (name, program, the closed-form or NumPy answer)
_INF = np.inf
CASES = [
    ("relu_sqrt_grad", _sqrt_relu_grad, np.array([0.0, 0.0, 0.5 / np.sqrt(2.0)])),
    ("relu6_sqrt_grad_jit", _sqrt_relu6_grad_jit, np.array([0.0, 0.0, 0.5 / np.sqrt(2.0), 0.0, 0.0])),
    ("relu_sqrt_grad_vmap", _sqrt_relu_grad_vmap, np.array([0.0, 0.0, 0.5 / np.sqrt(2.0)])),
    # d/dy (y x^(y-1)) = x^(y-1) (1 + y log x): 1/x at y == 0.
    ("power_mixed", _power_mixed, np.float64(2.0)),
    (
        "power_mixed_vmap",
        _power_mixed_vmap,
        np.array([0.5 ** (y - 1) * (1 + y * np.log(0.5)) for y in (0.0, 1.0, 2.5)]),
    ),
    # f = exp(g), g = 0.6 x log(x + 0.5) (abs'(0) = 1): f''(0) = g''(0) + g'(0)^2 = 2.4 + (0.6 log 0.5)^2.
    ("power_hessian_jit", _power_hessian_jit, np.float64(2.4 + (0.6 * np.log(0.5)) ** 2)),
    ("take_clip", _take_clip, np.take(V_TAKE, I_TAKE, mode="clip")),
    ("take_clip_jit_vmap", _take_clip_jit_vmap, np.take(V_TAKE, I_TAKE, mode="clip")),
    ("take_clip_grad", _take_clip_grad, np.array([2.0, 0.0, 2.0])),
    ("take_clip_axis", _take_clip_axis, np.take(np.arange(6.0).reshape(2, 3), [-1, 3], axis=1, mode="clip")),
    (
        "interp_dtype",
        _interp_dtype,
        np.interp(np.float32(0.25), np.array([0.0, 1.0]), np.array([1.0, 2.0], np.float32)),
    ),
    ("interp_dtype_jit", _interp_dtype_jit, np.array([1.25, 2.0])),
    # Like interp, trapezoid's dtype is the promotion of y with the spacing (NumPy's and jax's).
    ("trapezoid_dtype", _trapezoid_dtype, np.trapezoid(np.float32([1, 2, 4]), np.array([0.0, 1.0, 3.0]))),
    ("trapezoid_dx_dtype_jit", _trapezoid_dx_dtype_jit, np.float64(2.25)),
    ("median_empty", _median_empty, np.median(np.ones((2, 0)), axis=0)),
    ("median_empty_jit", _median_empty_jit, np.zeros((0,))),
    ("pad_edge_jacrev", _pad_edge_jacrev, np.zeros((0, 3))),
    ("pad_edge_jacrev_jit", _pad_edge_jacrev_jit, np.zeros((0, 3))),
    ("pad_vjp_vmap_empty", _pad_vjp_vmap_empty, np.zeros((0, 3))),
    ("gather_scatter_vmap_empty", _gather_scatter_vmap_empty, np.zeros((0, 4))),
    # At a tie fmax/fmin's select gives the whole derivative to the second argument (here x).
    ("fmax_grad", _fmax_grad, np.array([1.0, 1.0, 4.0])),
    ("fmin_grad_jit", _fmin_grad_jit, np.array([1.0, 1.0, 1.0])),
    ("fmax_ties_both", _fmax_ties_both, (np.array([0.0, 0.0, 0.0, 1.0]), np.array([1.0, 1.0, 1.0, 0.0]))),
    # int32 x op 2.5 is computed in float64 and truncated toward zero afterwards.
    ("at_add", _at_op("add", 2.5), np.array([6, 0, 0], np.int32)),
    ("at_add_neg", _at_op("add", -2.5), np.array([1, -5, -4], np.int32)),
    ("at_subtract", _at_op("subtract", 2.5), np.array([1, -5, -4], np.int32)),
    ("at_multiply", _at_op("multiply", 2.5), np.array([10, -7, -5], np.int32)),
    ("at_set", _at_op("set", -2.5), np.array([-2, -2, -2], np.int32)),
    ("at_min", _at_op("min", -2.5), np.array([-2, -3, -2], np.int32)),
    ("at_max", _at_op("max", 2.5), np.array([4, 2, 2], np.int32)),
    # int64, not int32: int32 / int32 is float32 in jax, float64 in NumPy 2 (a documented divergence,
    # numpy2-dtype-promotion in docs/differences_from_jax.md).
    ("at_divide_int", _at_op("divide", 2.5, X_AT.astype(np.int64)), np.array([4, -3, -2]) / 2.0),
    ("at_power_int", _at_op("power", 2.5), np.array([16, 9, 4], np.int32)),
    ("at_add_jit", _at_add_jit, np.array([4, 0, 0], np.int32)),
    # A Python int out of the dtype's range combines as a default int and wraps (no OverflowError).
    ("at_add_uint8_wraps", _at_op("add", -3, np.array([1, 2], np.uint8)), np.array([254, 255], np.uint8)),
    ("at_set_int8_wraps", _at_op("set", 300, np.array([1, 2], np.int8)), np.array([44, 44], np.int8)),
    ("at_power_repeated", _at_power_repeated, np.array([2.0**6, 3.0])),
    ("at_divide_repeated", _at_divide_repeated, np.array([2.0 / 8.0, 3.0])),
    ("remainder_grads", _remainder_grads, (np.ones(6), -np.floor(X_REM / Y_REM))),
    # 0.5 * clip(x + 1, 0, 2): the kinks get half of the slope 1/2 (max/min split ties), as jax.nn.
    ("sparse_sigmoid_grad_kinks", _sparse_sigmoid_grad_kinks, np.array([0.0, 0.25, 0.5, 0.25, 0.0])),
    (
        "maximum_nan_grads",
        _maximum_nan_grads,
        (np.array([0, 0, 0.5, 1, 0.5, 0.5, 0]), np.array([0, 0, 0.5, 0, 0.5, 0.5, 0])),
    ),
    (
        "minimum_nan_grads_jit",
        _minimum_nan_grads_jit,
        (np.array([0, 0, 0.5, 0, 0.5, 0.5, 0]), np.array([0, 0, 0.5, 1, 0.5, 0.5, 0])),
    ),
    ("max_reduction_nan_grad", _max_reduction_nan_grad, np.full(4, np.nan)),
    ("max_reduction_ties_grad", _max_reduction_ties_grad, np.array([[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])),
    # lax.pow takes an integer exponent array, as jax (d/dx is n x^(n-1), 0 at n == 0).
    (
        "lax_pow_int_exponent",
        _lax_pow_int_exponent,
        (X_POW ** N_POW.astype(float), np.array([0.0, 1.0, 12.0, -2 * (-1.5) ** -3])),
    ),
    # E_n(x) = x^(n-1) Gamma(1-n, x): E_0.5(2) = sqrt(pi) erfc(sqrt(2)) / sqrt(2); E_1(1) = exp1(1).
    (
        "expn_fractional_order",
        _expn_fractional_order,
        np.array([np.nan, 0.05702612399289224, 0.2193839343955205]),
    ),
    ("norm_inf_at_zero", _norm_inf_at_zero, np.full(4, 0.125)),
    ("matrix_norm_1_at_zero", _matrix_norm_1_at_zero, np.full((2, 3), 1 / 6)),
]
IDS = [c[0] for c in CASES]


def _check(got, want):
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
    else:
        _close(got, want)


@pytest.mark.parametrize("name,program,want", CASES, ids=IDS)
def test_against_closed_form(name, program, want):
    _check(program(FG), want)


def test_power_first_derivative_at_zero_to_the_zero_stays_zero():
    # funcgrad's documented choice (jax gives nan: 0 * 0^-1): x^0 is constant, so d/dx is 0 there,
    # and the fix for the mixed derivative must not bring the nan back, at any order.
    g = funcgrad.grad(lambda x: fnp.power(x, 0.0))
    assert float(g(0.0)) == 0.0
    assert float(funcgrad.grad(g)(0.0)) == 0.0
    assert float(funcgrad.grad(lambda y: funcgrad.grad(lambda x: fnp.power(x, y))(0.0))(0.0)) == 0.0


def test_relu_derivative_is_a_select_in_the_program():
    # The mechanism, not just the numbers: no multiply by a converted mask in relu's derivative.
    text = str(funcgrad.make_jaxpr(funcgrad.grad(fnn.relu))(1.0))
    assert "select_n" in text
    assert "mul" not in text


def test_at_updates_keep_the_operand_dtype_and_weak_type():
    x = fnp.asarray(np.array([1.0, 2.0], np.float32))
    out = x.at[0].add(np.float64(0.1))
    assert out.dtype == np.float32
    # Combined in float64, rounded once: float32(1 + 0.1), not float32(1) + float32(0.1) rounded again.
    assert np.asarray(out)[0] == np.float32(1.0 + 0.1)


# ----------------------------------------------------------------------------------------------
# The same programs against jax (the oracle)


@pytest.fixture(scope="module")
def jax_ns():
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp  # noqa: PLC0415 - the oracle, imported only by the slow tier

    return types.SimpleNamespace(api=jax, np_=jnp, nn=jax.nn)


@pytest.mark.slow
@pytest.mark.parametrize("name,program,want", CASES, ids=IDS)
def test_against_jax(name, program, want, jax_ns):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # jax's FutureWarning for a lossy scatter cast (int32 += 2.5)
        expected = program(jax_ns)
    got = program(FG)
    if isinstance(expected, tuple):
        _check(got, tuple(np.asarray(e) for e in expected))
    else:
        _check(got, np.asarray(expected))
