"""``funcgrad.jet`` checked the way JAX checks ``jax.experimental.jet`` (its ``tests/jet_test.py``
and the module's docstring), case by case, part one: the primitives' rules -- JAX's unary and
binary tables (float64, and float32 at JAX's tolerances), dot and conv, the primitives JAX's tests
do not reach (``cumlogsumexp``, ``sort``, ``lgamma``, ``digamma``, ``scatter``, ``top_k``,
scipy.special functions, ...), ties, singular points, complex primals and ``jit`` of ``jet``. Part
two, how jet composes and what its API does, is tests/kernel/test_jet_conformance_api.py.

Each case is checked two ways (tests/kernel/_jet_checks.py):

- against the Taylor expansion computed the slow way, by nested forward derivatives of
  ``f(x0 + sum_k t^k x_k / k!)`` in ``t`` at 0 (``_nested_jvp_expansion``, funcgrad's own
  ``jacfwd``, as JAX's tests use jax's), values and dtypes;
- against ``jax.experimental.jet`` itself (x64), where it can run the case. Where it cannot (no
  rule for a primitive, a rule that fails, custom_jvp functions) or is wrong (nan at a point
  where the expansion is finite), the case says ``jax=False`` / ``False`` with the reason beside
  it, and funcgrad is held to the nested-jvp expansion alone.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from _jet_checks import (
    FG,
    _assert_trees_close,
    _transform,
    binary_check,
    check_jet,
    unary_check,
)

import funcgrad
import funcgrad.nn
import funcgrad.numpy as fnp
from funcgrad import lax as flax
from funcgrad.experimental.jet import jet

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

# ----------------------------------------------------------------------------------------------
# Bilinear: dot and conv


def test_dot():
    rng = np.random.RandomState(0)
    x1, x2 = rng.randn(2, 3), rng.randn(3, 4)
    series = ([rng.randn(2, 3) for _ in range(3)], [rng.randn(3, 4) for _ in range(3)])
    check_jet(lambda m: m.np.dot, (x1, x2), series)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_conv(dtype):
    # stax.Conv(3, (2, 2), padding='VALID') on a (1, 5, 5, 1) NHWC input: HWIO kernel, bias (1,1,1,3).
    rng = np.random.RandomState(0)
    W, b = rng.randn(2, 2, 1, 3) * 0.5, rng.randn(1, 1, 1, 3) * 1e-6
    x = rng.randn(1, 5, 5, 1)
    series = tuple([rng.randn(*a.shape).astype(dtype) for _ in range(3)] for a in (W, b, x))
    W, b, x = W.astype(dtype), b.astype(dtype), x.astype(dtype)
    tol = 1e-7 if dtype == np.float64 else 1e-4

    def build(m):
        dn = ("NHWC", "HWIO", "NHWC")
        return lambda W, b, x: m.lax.conv_general_dilated(x, W, (1, 1), "VALID", dimension_numbers=dn) + b

    check_jet(build, (W, b, x), series, rtol=tol, atol=tol)


# ----------------------------------------------------------------------------------------------
# Unary functions (JAX's unary_check table)


_UNARY = {
    # name: (build, keyword arguments of unary_check)
    "exp": (lambda m: m.np.exp, {}),
    "neg": (lambda m: m.np.negative, {}),
    "floor": (lambda m: m.np.floor, {}),
    "ceil": (lambda m: m.np.ceil, {}),
    "trunc": (lambda m: m.np.trunc, {}),
    "round": (lambda m: m.lax.round, {}),
    "sign": (lambda m: m.lax.sign, {}),
    "real": (lambda m: m.lax.real, {"dtype": np.complex128}),
    "conj": (lambda m: m.lax.conj, {"dtype": np.complex128}),
    "imag": (lambda m: m.lax.imag, {"dtype": np.complex128}),
    "log": (lambda m: m.np.log, {"lims": (0.8, 4.0)}),
    "gather": (lambda m: lambda x: x[1:], {}),
    "reduce_max": (lambda m: lambda x: x.max(axis=1), {}),
    "reduce_min": (lambda m: lambda x: x.min(axis=1), {}),
    "all_max": (lambda m: m.np.max, {}),
    "all_min": (lambda m: m.np.min, {}),
    "stopgrad": (lambda m: m.lax.stop_gradient, {}),
    "abs": (lambda m: m.np.abs, {}),
    "fft": (lambda m: m.np.fft.fft, {}),
    "log1p": (lambda m: m.np.log1p, {"lims": (0, 4.0)}),
    "expm1": (lambda m: m.np.expm1, {}),
    "sin": (lambda m: m.np.sin, {}),
    "cos": (lambda m: m.np.cos, {}),
    "sinh": (lambda m: m.np.sinh, {}),
    "cosh": (lambda m: m.np.cosh, {}),
    "tanh": (lambda m: m.np.tanh, {"lims": (-500, 500), "order": 5}),
    "logistic": (lambda m: m.lax.logistic, {"lims": (-100, 100), "order": 5}),
    # JAX's expit_check calls its logistic rule directly on [-500, 500] to order 5.
    "expit": (lambda m: m.special.expit, {"lims": (-500, 500), "order": 5}),
    # The two above are mostly saturated at +-500 (terms ~ 0); the same where they are not.
    "tanh_moderate": (lambda m: m.np.tanh, {"lims": (-3, 3), "order": 6}),
    "expit_moderate": (lambda m: m.special.expit, {"lims": (-4, 4), "order": 6}),
    "sqrt": (lambda m: m.np.sqrt, {"lims": (0, 5.0)}),
    "rsqrt": (lambda m: m.lax.rsqrt, {"lims": (0, 5000.0)}),
    "asinh": (lambda m: m.lax.asinh, {"lims": (-100, 100)}),
    # acosh on [-100, 100]: NaN below 1 in every reference alike.
    "acosh": (lambda m: m.lax.acosh, {"lims": (-100, 100), "finite_only": True}),
    "atanh": (lambda m: m.lax.atanh, {"lims": (-1, 1)}),
    "erf": (lambda m: m.lax.erf, {}),
    "erfc": (lambda m: m.lax.erfc, {}),
    "erf_inv": (lambda m: m.lax.erf_inv, {"lims": (-1, 1)}),
    "cumsum": (lambda m: m.np.cumsum, {}),
    "cumprod": (lambda m: m.np.cumprod, {}),
    "cummax": (lambda m: partial(m.lax.cummax, axis=0), {}),
    "cummin": (lambda m: partial(m.lax.cummin, axis=0), {}),
    "dynamic_slice": (
        lambda m: partial(m.lax.dynamic_slice, start_indices=(1, 2), slice_sizes=(1, 1)),
        {},
    ),
    "dynamic_update_slice": (
        lambda m: partial(
            m.lax.dynamic_update_slice, start_indices=(1, 2), update=np.arange(6.0).reshape(2, 3)
        ),
        {},
    ),
    "copy": (lambda m: m.np.array, {}),
    "square": (lambda m: m.lax.square, {}),
    "integer_pow_3": (lambda m: lambda x: m.lax.integer_pow(x, 3), {}),
    "integer_pow_neg2": (lambda m: lambda x: m.lax.integer_pow(x, -2), {"lims": (0.5, 2.0)}),
    "reverse_cumsum": (lambda m: partial(m.lax.cumsum, axis=1, reverse=True), {}),
    "reverse_cummax": (lambda m: partial(m.lax.cummax, axis=1, reverse=True), {}),
    "reverse_cumprod": (lambda m: partial(m.lax.cumprod, axis=1, reverse=True), {}),
    "sum": (lambda m: lambda x: x.sum(axis=0), {}),
    "erfinv_scipy": (lambda m: m.special.erfinv, {"lims": (-0.9, 0.9), "order": 4}),
    "ndtr": (lambda m: m.special.ndtr, {"order": 4}),
    "transpose_reshape": (lambda m: lambda x: x.T.reshape(-1), {}),
    "process_call": (lambda m: lambda x: m.jit(lambda y: y * y)(x), {}),
    "post_process_call": (lambda m: lambda x: m.jit(lambda y: x * y)(2.0), {}),
    "unstack": (lambda m: lambda x: m.lax.unstack(x, axis=0), {}),
    "stack_self": (lambda m: lambda x: m.np.stack([x, 2 * x], axis=-1), {}),
}


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_unary(name):
    # Every case of this table runs under jax's jet too (in float64).
    build, kw = _UNARY[name]
    unary_check(build, **kw)


@pytest.mark.parametrize("p", range(6))
def test_int_pow(p):
    unary_check(lambda m: lambda x: x**p, lims=(-2, 2))


def test_int_pow_10_at_zero():
    unary_check(lambda m: lambda x: x**10, lims=(0, 0))


# ----------------------------------------------------------------------------------------------
# Binary functions (JAX's binary_check table)


_BINARY = {
    "div": (lambda m: lambda x, y: x / y, {"lims": (0.8, 4.0)}),
    "rem": (lambda m: m.lax.rem, {"lims": (0.8, 4.0)}),
    "complex": (lambda m: m.lax.complex, {}),
    "sub": (lambda m: lambda x, y: x - y, {}),
    "add": (lambda m: lambda x, y: x + y, {}),
    "mul": (lambda m: lambda x, y: x * y, {}),
    "max": (lambda m: m.lax.max, {}),
    "min": (lambda m: m.lax.min, {}),
    "pow": (lambda m: lambda x, y: x**y, {"lims": ((0.2, 500), (-500, 500)), "finite": False}),
    "atan2": (lambda m: m.lax.atan2, {"lims": (-40, 40)}),
    "stack0": (lambda m: lambda *xs: m.np.stack(xs, axis=0), {}),
    "stack1": (lambda m: lambda *xs: m.np.stack(xs, axis=1), {}),
    "stack_last": (lambda m: lambda *xs: m.np.stack(xs, axis=-1), {}),
    "concatenate": (lambda m: lambda *xs: m.np.concatenate(xs, axis=1), {}),
    "pow_moderate": (lambda m: lambda x, y: x**y, {"lims": ((0.5, 2.0), (-2.0, 2.0))}),
}


@pytest.mark.parametrize("name", sorted(_BINARY))
def test_binary(name):
    build, kw = _BINARY[name]
    binary_check(build, **kw)


@pytest.mark.parametrize("name", sorted(_BINARY))
def test_binary_float32(name):
    build, kw = _BINARY[name]
    binary_check(build, real=np.float32, rtol=2e-3, atol=2e-3, **kw)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unstack(axis):
    rng = np.random.RandomState(0)
    x = rng.randn(4, 2, 3)
    check_jet(
        lambda m: lambda x: m.lax.unstack(x, axis=axis), (x,), ([rng.randn(4, 2, 3) for _ in range(3)],)
    )


def test_clamp():
    rng = np.random.RandomState(0)
    lims, dims = (-1, 1), (2, 3)
    primals = tuple(_transform(lims, rng.rand(*dims)) for _ in range(3))
    series = tuple([rng.randn(*dims) for _ in range(3)] for _ in range(3))
    check_jet(lambda m: m.lax.clamp, primals, series)


def test_select_with_a_boolean_argument():
    # The boolean condition gets (ignored) float terms, as in JAX's test: it does not vary.
    rng = np.random.RandomState(0)
    b = rng.rand(2, 3) < 0.5
    x, y = rng.randn(2, 3), rng.randn(2, 3)
    series = tuple([rng.randn(2, 3) for _ in range(3)] for _ in range(3))
    check_jet(lambda m: m.np.where, (b, x, y), series)


# ----------------------------------------------------------------------------------------------
# Primitives the brief lists that JAX's tests do not reach


_EXTRA = {
    # jax has no jet rules for these (NotImplementedError there): nested-jvp expansion only.
    "cumlogsumexp": (lambda m: partial(m.lax.cumlogsumexp, axis=1), {"order": 4}),
    "reverse_cumlogsumexp": (lambda m: partial(m.lax.cumlogsumexp, axis=0, reverse=True), {"order": 4}),
    "sort": (lambda m: partial(m.np.sort, axis=1), {"order": 4}),
    "lgamma": (lambda m: m.lax.lgamma, {"lims": (0.5, 4.0), "order": 4}),
    "digamma": (lambda m: m.lax.digamma, {"lims": (0.5, 4.0), "order": 4}),
    "gammaln": (lambda m: m.special.gammaln, {"lims": (0.5, 4.0), "order": 4}),
    "tan": (lambda m: m.np.tan, {"lims": (-1.2, 1.2), "order": 5}),
    "asin": (lambda m: m.np.arcsin, {"lims": (-0.9, 0.9), "order": 4}),
    "atan": (lambda m: m.np.arctan, {"order": 4}),
    "logsumexp": (lambda m: partial(m.special.logsumexp, axis=1), {"order": 4}),
    "softplus": (lambda m: lambda x: m.np.logaddexp(x, 0.0), {"order": 4}),
    "cbrt": (lambda m: m.np.cbrt, {"lims": (0.5, 3.0), "order": 4}),
    "log_softmax": (lambda m: lambda x: x - m.special.logsumexp(x, axis=1, keepdims=True), {"order": 4}),
    # scipy.special: jax's jet has no rule for polygamma, bessel_i0e/i1e or the scan inside ndtri,
    # and fails (UnexpectedTracerError) on the custom_jvp functions log_ndtr, logit, xlog1py, entr
    # and erfcx.
    "ndtri": (lambda m: m.special.ndtri, {"lims": (0.05, 0.95), "order": 4}),
    "log_ndtr": (lambda m: m.special.log_ndtr, {"lims": (-3, 3), "order": 4}),
    "logit": (lambda m: m.special.logit, {"lims": (0.1, 0.9), "order": 4}),
    "polygamma_1": (lambda m: lambda x: m.special.polygamma(1, x), {"lims": (0.5, 3), "order": 4}),
    "xlog1py": (lambda m: lambda x: m.special.xlog1py(x, x * x), {"order": 4}),
    "entr": (lambda m: m.special.entr, {"lims": (0.1, 2), "order": 4}),
    "i0e": (lambda m: m.special.i0e, {"order": 4}),
    "i1e": (lambda m: m.special.i1e, {"order": 4}),
    "erfcx": (lambda m: m.special.erfcx, {"lims": (-1, 2), "order": 4}),
}


@pytest.mark.parametrize("name", sorted(_EXTRA))
def test_beyond_jax_rules(name):
    build, kw = _EXTRA[name]
    unary_check(build, jax=False, **kw)


# float32, JAX's default precision, at JAX's tolerances: the terms keep the primal's dtype (as the
# nested-jvp expansion's do). dynamic_update_slice's constant update is float64 (no float32 case).
_NO_JAX_F32 = {
    # jax's erf_inv jet rule multiplies by an np.float64 constant: with x64 on, float32 input
    # fails there ("lax.mul requires arguments to have the same dtypes").
    "erf_inv": "jax's rule mixes float64 into float32",
    "erfinv_scipy": "jax's rule mixes float64 into float32",
}
_F32_UNARY = sorted(n for n in {**_UNARY, **_EXTRA} if n != "dynamic_update_slice")


@pytest.mark.parametrize("name", _F32_UNARY)
def test_unary_float32(name):
    build, kw = {**_UNARY, **_EXTRA}[name]
    kw = dict(kw)
    if "dtype" in kw:
        kw["dtype"] = np.complex64
    kw.setdefault("jax", name in _UNARY and name not in _NO_JAX_F32)
    unary_check(build, real=np.float32, rtol=2e-3, atol=2e-3, **kw)


def test_compositions_at_orders_5_and_6():
    # Higher orders than JAX's tests use, on compositions of primitives JAX has rules for.
    unary_check(lambda m: lambda x: m.np.sin(x) * m.np.exp(-x * x) / (2.0 + m.np.cos(x)), order=6)
    unary_check(lambda m: lambda x: m.lax.erf_inv(m.np.tanh(x) * 0.9), order=6)
    unary_check(lambda m: lambda x: m.lax.cummax(x * x, axis=1), order=5)


def test_sort_with_ties_is_the_jvp_of_sort():
    # At a tie sort's JVP follows the permutation the sort chose; the expansion agrees.
    x = np.array([[1.0, 0.5, 1.0], [2.0, -1.0, 0.0]])
    rng = np.random.RandomState(3)
    check_jet(lambda m: partial(m.np.sort, axis=1), (x,), ([rng.randn(2, 3) for _ in range(3)],), jax=False)


# ----------------------------------------------------------------------------------------------
# More primitives and compositions, against both references where jax's jet can run them


def _more_cases():
    rng = np.random.RandomState(0)
    x = rng.randn(2, 3)
    terms = [rng.randn(2, 3) for _ in range(4)]
    ties = np.array([[1.0, 2.0, 2.0], [0.0, 0.0, -1.0]])
    w, img = rng.randn(2, 1, 3, 3), rng.randn(1, 1, 5, 5)
    w_s, img_s = [rng.randn(2, 1, 3, 3) for _ in range(4)], [rng.randn(1, 1, 5, 5) for _ in range(4)]
    a3, b34 = rng.randn(2, 2, 3), rng.randn(3, 4)
    a3_s, b34_s = [rng.randn(2, 2, 3) for _ in range(4)], [rng.randn(3, 4) for _ in range(4)]
    u, u_s = rng.randn(1, 2), [rng.randn(1, 2) for _ in range(4)]
    n = np.array([[1, 2, 3], [0, 2, 4]])
    zeros4 = [np.zeros((2, 3))] * 4
    # name: (build, primals, series, jax usable?) -- with the reason where jax's jet is no oracle.
    return {
        # Ties: jax's max/min rules average the tied operands' series, as the JVP rules do.
        "reduce_max_ties": (lambda m: lambda x: x.max(axis=1), (ties,), (terms,), True),
        "max_ties": (lambda m: lambda x: m.lax.max(x, x[:, ::-1]), (ties,), (terms,), True),
        "maximum_equal_args": (
            lambda m: m.np.maximum,
            (ties, ties),
            (terms, [t * 0.5 for t in terms]),
            True,
        ),
        "cummax_ties": (lambda m: lambda x: m.lax.cummax(x, axis=1), (ties,), (terms,), True),
        # abs at 0 takes the right derivative (factor +1), as jax's rule and the JVP rule do.
        "abs_at_zero": (lambda m: m.np.abs, (np.array([0.0, -1.0, 2.0]),), ([np.ones(3)] * 3,), True),
        "gather_advanced": (
            lambda m: lambda x: x[np.array([0, 1, 1]), np.array([2, 0, 2])],
            (x,),
            (terms,),
            True,
        ),
        "reverse": (lambda m: lambda x: x[:, ::-1], (x,), (terms,), True),
        "take": (lambda m: lambda x: m.np.take(x, np.array([2, 0]), axis=1), (x,), (terms,), True),
        "select_n_3_cases": (
            lambda m: lambda x: m.lax.select_n(np.array([[0, 1, 2], [2, 1, 0]]), x, 2 * x, m.np.sin(x)),
            (x,),
            (terms,),
            True,
        ),
        "pow_float_constant": (lambda m: lambda x: m.np.abs(x) ** 2.5, (x,), (terms,), True),
        "power_3": (lambda m: lambda x: m.np.power(x, 3), (x,), (terms,), True),
        "reciprocal": (lambda m: m.np.reciprocal, (x + 3,), (terms,), True),
        "conv_same_nchw": (
            lambda m: lambda w, x: m.lax.conv_general_dilated(x, w, (1, 1), "SAME"),
            (w, img),
            (w_s, img_s),
            True,
        ),
        "matmul_batched": (lambda m: lambda a, b: a @ b, (a3, b34), (a3_s, b34_s), True),
        "einsum": (
            lambda m: lambda a, b: m.np.einsum("ij,kj->ik", a, b),
            (x, x + 1),
            (terms, terms[::-1]),
            True,
        ),
        "gelu_tanh": (lambda m: m.nn.gelu, (x,), (terms,), True),
        "gelu_exact": (lambda m: lambda x: m.nn.gelu(x, approximate=False), (x,), (terms,), True),
        "sigmoid": (lambda m: m.nn.sigmoid, (x,), (terms,), True),
        "silu": (lambda m: m.nn.silu, (x,), (terms,), True),
        "softmax": (lambda m: lambda x: m.nn.softmax(x, axis=1), (x,), (terms,), True),
        "log_softmax": (lambda m: lambda x: m.nn.log_softmax(x, axis=1), (x,), (terms,), True),
        "elu": (lambda m: m.nn.elu, (x,), (terms,), True),
        "norm": (lambda m: lambda x: m.np.linalg.norm(x, axis=1), (x,), (terms,), True),
        "mean_var": (lambda m: lambda x: m.np.var(x, axis=0) + m.np.mean(x), (x,), (terms,), True),
        "where_of_a_comparison": (
            lambda m: lambda x: m.np.where(x > 0, m.np.sin(x), m.np.exp(x)),
            (x,),
            (terms,),
            True,
        ),
        "pad": (lambda m: lambda x: m.np.pad(x, ((1, 0), (0, 2))), (x,), (terms,), True),
        "concatenate_broadcast": (
            lambda m: lambda x: m.np.concatenate([x, m.np.broadcast_to(x[:1], (2, 3))]),
            (x,),
            (terms,),
            True,
        ),
        "reshape_transpose_squeeze": (
            lambda m: lambda x: m.np.squeeze(x[None], 0) * x.reshape(3, 2).T,
            (x,),
            (terms,),
            True,
        ),
        "convert_to_float32": (lambda m: lambda x: m.np.sin(x.astype(np.float32)), (x,), (terms,), True),
        "real_of_complex_exp": (lambda m: lambda x: m.np.real(m.np.exp(1j * x)), (x,), (terms,), True),
        "rsqrt_of_sum": (lambda m: lambda x: m.lax.rsqrt((x * x).sum() + 1), (x,), (terms,), True),
        "atan2_constant_y": (lambda m: lambda x: m.lax.atan2(x, 2.0), (x,), (terms,), True),
        "reduce_window_sum": (
            lambda m: lambda x: m.lax.reduce_window(x, 0.0, m.lax.add, (1, 2), (1, 1), "VALID"),
            (x,),
            (terms,),
            True,
        ),
        "dynamic_update_slice_varying_update": (
            lambda m: lambda x, u: m.lax.dynamic_update_slice(x, u * u, (1, 1)),
            (x, u),
            (terms, u_s),
            True,
        ),
        "split": (
            lambda m: lambda x: m.np.split(x, [1], axis=1)[1] * m.np.split(x, [1], axis=1)[0],
            (x,),
            (terms,),
            True,
        ),
        "device_put": (lambda m: lambda x: m.np.sin(m.device_put(x)), (x,), (terms,), True),
        "cumsum_axis0_reverse": (
            lambda m: lambda x: m.lax.cumsum(x, axis=0, reverse=True),
            (x,),
            (terms,),
            True,
        ),
        "min_of_all": (lambda m: lambda x: m.np.min(x * x), (x,), (terms,), True),
        "fft2_real": (lambda m: lambda x: m.np.real(m.np.fft.fft2(x * x)), (x,), (terms,), True),
        "ifft_imag": (lambda m: lambda x: m.np.imag(m.np.fft.ifft(m.np.exp(x))), (x,), (terms,), True),
        # jax's abs rule compares the complex primal with 0 (TypeError for complex128).
        "abs_of_rfft": (lambda m: lambda x: m.np.abs(m.np.fft.rfft(x, axis=1)), (x,), (terms,), False),
        # No jax rule for multi-operand sort, tile or argmax (KeyError there).
        "sort_two_operands": (
            lambda m: lambda x: m.lax.sort((x[0], x[1]), num_keys=1)[1],
            (x,),
            (terms,),
            False,
        ),
        "tile": (lambda m: lambda x: m.np.tile(x[:, None], (1, 2, 1)), (x,), (terms,), False),
        "index_by_argmax": (lambda m: lambda x: x[0, m.np.argmax(x[1])], (x,), (terms,), False),
        # jax's clamp rule (a composition of max and min) fails on scalar bounds:
        # "select cases must have the same shapes".
        "clamp_scalar_bounds": (lambda m: lambda x: m.lax.clamp(-0.5, x, 0.5), (x,), (terms,), False),
        # jax's pow rule multiplies by the integer exponent: "lax.mul requires ... int64, float64".
        "pow_integer_array_exponent": (lambda m: lambda x, n: x**n, (x, n), (terms, zeros4), False),
        # jax's dynamic_slice rule selects between a float term and the integer index's zero term.
        "dynamic_slice_integer_argument": (
            lambda m: lambda x, i: m.lax.dynamic_slice(x, (i, 0), (1, 3)),
            (x, 1),
            (terms, [0, 0, 0, 0]),
            False,
        ),
        # custom_jvp functions: jax's jet raises UnexpectedTracerError (test_custom_jvp_function).
        "relu": (lambda m: m.nn.relu, (x,), (terms,), False),
        "softplus_nn": (lambda m: m.nn.softplus, (x,), (terms,), False),
        "xlogy": (lambda m: lambda x: m.special.xlogy(x, x * x + 1), (x,), (terms,), False),
        # No jet rule in jax for these primitives (KeyError there).
        "prod": (lambda m: lambda x: m.np.prod(x, axis=1), (x,), (terms,), False),
        "scatter_set": (lambda m: lambda x: x.at[0, 1].set(x[1, 2] ** 2), (x,), (terms,), False),
        "scatter_mul": (lambda m: lambda x: x.at[0].mul(x[1]), (x,), (terms,), False),
        "top_k": (lambda m: lambda x: m.lax.top_k(x, 2)[0], (x,), (terms,), False),
        "argsort_take_along_axis": (
            lambda m: lambda x: m.np.take_along_axis(x, m.np.argsort(x, axis=1), axis=1),
            (x,),
            (terms,),
            False,
        ),
        "inverse": (lambda m: lambda a: m.np.linalg.inv(a @ a.T + 3 * m.np.eye(2)), (x,), (terms,), False),
    }


_MORE = _more_cases()


@pytest.mark.parametrize("name", sorted(_MORE))
def test_more(name):
    build, primals, series, use_jax = _MORE[name]
    check_jet(build, primals, series, jax=use_jax)


def test_singular_points_first_term_is_the_jvp():
    # At x0 = 0 the first term of sqrt, rsqrt and cbrt is the JVP's (inf, -inf), as nested jvp
    # gives; jax's jet gives nan there (its x ** 0.5 composition divides 0 by 0).
    x = np.array([0.0, 1.0, 4.0])
    v = [np.ones(3), np.zeros(3)]
    for f in (fnp.sqrt, flax.rsqrt, fnp.cbrt):
        _, s = jet(f, (x,), (v,))
        _, t = funcgrad.jvp(f, (x,), (np.ones(3),))
        np.testing.assert_allclose(np.asarray(s[0]), np.asarray(t), rtol=1e-14)
        assert np.isinf(np.asarray(s[0])[0])
    # x ** 2.0 and x ** -1 at 0 (pow with a constant exponent, integer_pow): the exact series,
    # where jax's jet gives nan.
    _, s = jet(lambda x: x**2.0, (x,), ([np.ones(3)] * 3,))
    np.testing.assert_allclose([np.asarray(t)[0] for t in s], [0.0, 2.0, 6.0])


@pytest.mark.parametrize("name", ["sin", "tanh_moderate", "erf_inv", "cummax", "reduce_max", "pow"])
def test_jit_of_jet_matches_eager(name):
    build, kw = _UNARY[name] if name in _UNARY else _BINARY[name]
    f = build(FG)
    rng = np.random.RandomState(0)
    n_args = 1 if name in _UNARY else 2
    lims = kw.get("lims", (-2, 2)) if name != "pow" else (0.5, 2.0)
    primals = tuple(_transform(lims, rng.rand(2, 3)) for _ in range(n_args))
    series = tuple([rng.randn(2, 3) for _ in range(4)] for _ in range(n_args))
    eager = jet(f, primals, series)
    jitted = funcgrad.jit(lambda p, s: jet(f, p, s))(primals, series)
    _assert_trees_close(jitted, eager, 1e-12, 1e-12)


_COMPLEX = {
    "exp": lambda m: m.np.exp,
    "sin": lambda m: m.np.sin,
    "cosh": lambda m: m.np.cosh,
    "log": lambda m: m.np.log,
    "log1p": lambda m: m.np.log1p,
    "expm1": lambda m: m.np.expm1,
    "tanh": lambda m: m.np.tanh,
    "logistic": lambda m: m.lax.logistic,
    "sqrt": lambda m: m.np.sqrt,
    "rsqrt": lambda m: m.lax.rsqrt,
    "cube": lambda m: lambda x: x**3,
    "square": lambda m: m.lax.square,
    "reciprocal": lambda m: lambda x: 1 / x,
    "complex_power": lambda m: lambda x: x ** (0.5 + 0.5j),
    "dot": lambda m: lambda x: m.np.dot(x, x.T),
    "cumprod": lambda m: m.np.cumprod,
}
# No jax rule for these on complex input: jax has no tan/atan/asinh rules, and its abs rule
# compares the complex primal with 0 ("lt does not accept dtype complex128").
_COMPLEX_NO_JAX = {
    "tan": lambda m: m.np.tan,
    "atan": lambda m: m.np.arctan,
    "asinh": lambda m: m.np.arcsinh,
    "abs": lambda m: m.np.abs,
}


@pytest.mark.parametrize("name", sorted(_COMPLEX) + sorted(_COMPLEX_NO_JAX))
def test_complex_inputs(name):
    build = _COMPLEX.get(name) or _COMPLEX_NO_JAX[name]
    unary_check(build, lims=(0.3, 1.5), dtype=np.complex128, order=4, jax=name in _COMPLEX)
