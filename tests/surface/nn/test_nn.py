"""funcgrad.nn against NumPy/SciPy references (values, dtypes, finite-difference derivatives to
second order, vmap, jit), plus its numerical-stability and derivative conventions: no overflow for
large |x|, jax.nn's derivatives at the kinks, finite derivatives at -inf."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import scipy.special as sp
from _numpy_harness import (
    F32,
    F64,
    FLOATS,
    I32,
    Case,
    arr,
    check_jit_grad,
    shapes,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad
import funcgrad.nn as nn
import funcgrad.numpy as fnp

SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _gelu(x, approximate=True):
    if approximate:
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + sp.erf(x / np.sqrt(2)))


def _cast(f):
    """References computed in float64 and cast back (the dtype check compares with the input's)."""
    return lambda x, **kw: np.asarray(f(np.asarray(x, np.float64), **kw)).astype(
        np.result_type(x, np.float32) if np.asarray(x).dtype.kind == "f" else np.float64
    )


def unary(lo=-4.0, hi=4.0, **kwargs):
    return lambda rng, dt, shp: ([arr(rng, shp[0], dt, lo, hi)], dict(kwargs))


def with_axis(lo=-4.0, hi=4.0):
    def make(rng, dt, shp):
        x = arr(rng, shp[0], dt, lo, hi)
        return [x], {"axis": int(rng.integers(-x.ndim, x.ndim))}

    return make


def N(name, ref, make=None, dtypes=FLOATS, **kw):
    return Case(name, getattr(nn, name), _cast(ref), make or unary(), dtypes=dtypes, **kw)


def _glu(x, axis=-1):
    a, b = np.split(x, 2, axis)
    return a * sp.expit(b)


def _standardize(x, axis=-1):
    mean = np.mean(x, axis, keepdims=True)
    var = np.mean(x**2, axis, keepdims=True) - mean**2
    return (x - mean) / np.sqrt(var + 1e-5)


def _logsumexp_make(rng, dt, shp):
    x = arr(rng, shp[0], dt)
    axis = [None, *range(-x.ndim, x.ndim)][rng.integers(x.ndim + 1)]
    return [x, arr(rng, shp[0], dt, 0.5, 2.0)], {"axis": axis, "keepdims": bool(rng.integers(2))}


def _one_hot_make(rng, dt, shp):
    x = rng.integers(-1, 5, size=shp[0])
    return [x], {"num_classes": 4, "axis": int(rng.integers(-x.ndim - 1, x.ndim + 1))}


def _one_hot_ref(x, num_classes, axis):
    out = (x[..., None] == np.arange(num_classes)).astype(np.float64)
    return np.moveaxis(out, -1, axis)


# The generic checks of this table (values, derivatives, vmap, jit) are tests/surface/test_surface_cases.py's.
CASE_EXAMPLES = {"grads": 3}
CASES = [
    N("relu", lambda x: np.maximum(x, 0)),
    N("relu6", lambda x: np.clip(x, 0, 6), unary(-3, 9)),
    N("sigmoid", sp.expit),
    N("log_sigmoid", lambda x: -np.logaddexp(0, -x)),
    N("softplus", lambda x: np.logaddexp(x, 0)),
    N("soft_sign", lambda x: x / (np.abs(x) + 1)),
    N("silu", lambda x: x * sp.expit(x)),
    N("swish", lambda x: x * sp.expit(x)),
    N("elu", _elu),
    N("elu", lambda x, alpha: _elu(x, alpha), unary(alpha=0.5), id="elu-alpha"),
    N(
        "celu",
        lambda x, alpha: np.maximum(x, 0) + alpha * np.expm1(np.minimum(x, 0) / alpha),
        unary(alpha=1.5),
    ),
    N("selu", lambda x: SELU_SCALE * _elu(x, SELU_ALPHA)),
    N("gelu", _gelu),
    N("gelu", lambda x, approximate: _gelu(x, approximate), unary(approximate=False), id="gelu-exact"),
    N("glu", _glu, lambda rng, dt, shp: ([arr(rng, (*shp[0], 4), dt)], {"axis": -1}), id="glu"),
    N(
        "leaky_relu",
        lambda x, negative_slope: np.where(x >= 0, x, negative_slope * x),
        unary(negative_slope=0.2),
    ),
    N("hard_tanh", lambda x: np.clip(x, -1, 1)),
    N("hard_sigmoid", lambda x: np.clip(x + 3, 0, 6) / 6, unary(-5, 5)),
    N("hard_silu", lambda x: x * np.clip(x + 3, 0, 6) / 6, unary(-5, 5)),
    N("hard_swish", lambda x: x * np.clip(x + 3, 0, 6) / 6, unary(-5, 5)),
    N("mish", lambda x: x * np.tanh(np.logaddexp(x, 0))),
    N("squareplus", lambda x: (x + np.sqrt(x**2 + 4)) / 2),
    N("sparse_plus", lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4))),
    N("sparse_sigmoid", lambda x: np.where(x <= -1, 0, np.where(x >= 1, 1, (x + 1) / 2))),
    N(
        "softmax",
        lambda x, axis: sp.softmax(x, axis=axis),
        with_axis(),
        shapes=shapes(min_dims=1, min_side=1),
    ),
    N(
        "log_softmax",
        lambda x, axis: sp.log_softmax(x, axis=axis),
        with_axis(),
        shapes=shapes(min_dims=1, min_side=1),
    ),
    # float32: jax.nn's variance E[x^2] - E[x]^2 cancels digits when the spread is small next to
    # the mean (about log10(E[x^2] / var) of them); the reference is computed in float64.
    N(
        "standardize",
        _standardize,
        shapes=shapes(min_dims=1, min_side=2),
        grad_rtol=1e-3,
        rtol={np.dtype(np.float32): 1e-3},
    ),
    Case(
        "logsumexp",
        lambda a, b, **kw: nn.logsumexp(a, b=b, **kw),
        lambda a, b, **kw: sp.logsumexp(a, b=b, **kw),
        _logsumexp_make,
        dtypes=FLOATS,
        order=2,
        shapes=shapes(min_dims=1, min_side=1),  # scipy: 0-d inputs get a dimension; empty ones fail
    ),
    Case(
        "logsumexp",
        lambda a, b, **kw: nn.logsumexp(a, **kw),
        lambda a, b, **kw: sp.logsumexp(a, **kw),
        _logsumexp_make,
        dtypes=FLOATS,
        id="logsumexp-no-b",
        shapes=shapes(min_dims=1, min_side=1),
    ),
    Case("one_hot", nn.one_hot, _one_hot_ref, _one_hot_make, dtypes=(I32,), grad=False),
]


# ----------------------------------------------------------------------------------------------
# Stability and derivative conventions

BIG = np.array([-1e4, -800.0, -50.0, 0.0, 50.0, 800.0, 1e4])


@pytest.mark.parametrize(
    "name",
    [
        "sigmoid",
        "log_sigmoid",
        "softplus",
        "silu",
        "elu",
        "celu",
        "selu",
        "gelu",
        "mish",
        "soft_sign",
        "squareplus",
    ],
)
def test_large_inputs_are_finite(name):
    f = getattr(nn, name)
    out = np.asarray(f(BIG))
    assert np.all(np.isfinite(out)), (name, out)
    g = np.asarray(funcgrad.vmap(funcgrad.grad(f))(BIG))
    assert np.all(np.isfinite(g)), (name, g)


def test_known_values_at_extremes():
    np.testing.assert_array_equal(np.asarray(nn.softplus(np.array([-1e4, 1e4]))), [0.0, 1e4])
    np.testing.assert_array_equal(np.asarray(nn.log_sigmoid(np.array([-1e4, 1e4]))), [-1e4, 0.0])
    np.testing.assert_array_equal(np.asarray(nn.sigmoid(np.array([-1e4, 1e4]))), [0.0, 1.0])
    np.testing.assert_allclose(float(nn.logsumexp(np.array([1e4, 1e4]))), 1e4 + np.log(2))
    np.testing.assert_allclose(np.asarray(nn.log_softmax(np.array([1e4, 0.0]))), [0.0, -1e4])


def test_derivatives_at_kinks():
    d = lambda f, x: float(funcgrad.grad(f)(x))  # noqa: E731
    assert d(nn.relu, 0.0) == 0.0 and d(nn.relu, 1.0) == 1.0
    assert d(nn.relu6, 0.0) == 0.0 and d(nn.relu6, 6.0) == 0.0 and d(nn.relu6, 3.0) == 1.0
    assert d(nn.hard_tanh, 0.5) == 1.0 and d(nn.hard_tanh, 2.0) == 0.0
    assert d(nn.leaky_relu, -1.0) == 0.01
    assert d(nn.elu, 0.0) == 1.0 or d(nn.elu, 0.0) == 1.0  # either side's slope is 1 at 0
    # Second derivatives exist everywhere for the smooth ones.
    for f in (nn.softplus, nn.sigmoid, nn.gelu, nn.mish, nn.silu):
        assert np.isfinite(float(funcgrad.grad(funcgrad.grad(f))(0.3)))


def _normalisations(m):
    # (each row of the input a case: reductions over the last axis, summed for the gradients)
    b, where = m.numpy.array([1.0, 0.0, 2.0]), m.numpy.array([True, False, True])
    return [
        lambda x: m.nn.logsumexp(x, axis=-1),
        lambda x: m.numpy.sum(m.nn.log_softmax(x)[:, 1:], axis=-1),
        lambda x: m.nn.softmax(x)[:, 1],
        lambda x: m.nn.log_softmax(x)[:, 1],
        lambda x: m.nn.logsumexp(x, axis=-1, b=b),
        lambda x: m.nn.logsumexp(x, axis=-1, where=where),
    ]


def test_normalisation_derivatives_at_nonfinite_inputs_as_jax():
    # logsumexp and log_softmax are JAX's formulas differentiated by the chain rule (the fuzzer's
    # leftover: at a NaN input funcgrad's former custom rule gave finite derivatives, jax NaN); -inf
    # entries carry no weight, and all -inf or a NaN gives jax's NaN. softmax's rule is JAX's.
    import jax
    from jax._src import config as jax_config

    inf, nan = np.inf, np.nan
    x = np.array([[-inf, 0.0, 1.0], [-inf, -inf, 2.0], [-inf] * 3, [nan, 0.0, 1.0], [inf, 0.0, 1.0]])

    def run(t, x):
        fs = _normalisations(t)
        grads = [t.grad(lambda x, f=f: t.numpy.sum(f(x)))(x) for f in fs]
        return [*(f(x) for f in fs), *grads, t.jacfwd(t.grad(lambda x: t.numpy.sum(fs[0](x))))(x)]

    with jax_config.enable_x64(True):  # (jax's side one jitted program: its eager steps compile each)
        want = jax.jit(lambda x: run(jax, x))(x)
    for i, (got, w) in enumerate(zip(run(funcgrad, x), want)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(w), rtol=1e-12, err_msg=f"{i}")


def test_logsumexp_at_minus_inf():
    g = np.asarray(funcgrad.grad(nn.logsumexp)(np.array([-np.inf, 0.0, 1.0])))
    np.testing.assert_allclose(g, [0.0, *sp.softmax([0.0, 1.0])])  # -inf entries carry no weight
    # All entries -inf: the value is -inf; log_softmax gives NaN there, as JAX's formula.
    x = np.full(3, -np.inf)
    assert float(nn.logsumexp(x)) == -np.inf
    assert np.all(np.isnan(np.asarray(nn.log_softmax(x))))


def test_logsumexp_of_empty_is_minus_inf():
    assert float(nn.logsumexp(np.zeros(0))) == -np.inf
    assert nn.logsumexp(np.zeros((2, 0)), axis=1).tolist() == [-np.inf, -np.inf]


def test_softmax_and_log_softmax_where():
    x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    m = np.array([[True, True, False], [True, False, True]])
    out = np.asarray(nn.softmax(x, where=m))
    np.testing.assert_allclose(out[0], [*sp.softmax([1.0, 2.0]), 0.0])
    np.testing.assert_allclose(out.sum(-1), 1.0)
    lo = np.asarray(nn.log_softmax(x, where=m))
    assert np.isneginf(lo[0, 2]) and np.isneginf(lo[1, 1])
    np.testing.assert_allclose(float(nn.logsumexp(x[0], where=m[0])), sp.logsumexp([1.0, 2.0]))


def test_logsumexp_signature():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    b = np.array([[1.0, -1.0], [2.0, 0.0]])
    out, sign = nn.logsumexp(a, axis=1, b=b, return_sign=True)
    ref_out, ref_sign = sp.logsumexp(a, axis=1, b=b, return_sign=True)
    np.testing.assert_allclose(np.asarray(out), ref_out)
    np.testing.assert_array_equal(np.asarray(sign), ref_sign)
    assert np.isnan(float(nn.logsumexp(np.array([1.0, 2.0]), b=np.array([1.0, -1.0]))))
    assert nn.logsumexp(a, axis=(0, 1), keepdims=True).shape == (1, 1)
    assert nn.logsumexp(a.astype(np.float32)).dtype == F32


def test_dtypes_and_signatures():
    x32 = np.linspace(-2, 2, 5).astype(np.float32)
    for name in ("relu", "sigmoid", "softplus", "gelu", "silu", "log_softmax", "softmax", "standardize"):
        assert getattr(nn, name)(x32).dtype == F32, name
    assert nn.relu(np.array([-1, 2])).dtype == np.int64  # relu keeps integer dtypes
    assert nn.one_hot(np.array([1]), 3, dtype=np.float32).dtype == F32
    assert nn.one_hot(np.array([0, 1]), 2).dtype == F64
    # JAX's words: a DeprecationWarning for float indices (still one-hot), a traced num_classes
    with pytest.warns(DeprecationWarning, match="jax.nn.one_hot input should be integer-typed"):
        np.testing.assert_array_equal(nn.one_hot(np.array([1.0]), 3), [[0.0, 1.0, 0.0]])
    with pytest.raises(
        funcgrad.errors.ConcretizationTypeError, match="in jax.nn.one_hot argument `num_classes`"
    ):
        funcgrad.jit(nn.one_hot)(3, 5)
    with pytest.raises(ValueError, match="default in_axis. Must be at least 2D"):
        nn.initializers.variance_scaling(1.0, "fan_avg", "truncated_normal")(funcgrad.random.key(0), (5,))
    assert nn.glu(np.ones((2, 6)), axis=1).shape == (2, 3)
    out = nn.standardize(np.ones((2, 3)), axis=0, mean=0.0, variance=1.0, epsilon=0.0)
    np.testing.assert_allclose(np.asarray(out), 1.0)
    with pytest.raises(ValueError):
        nn.glu(np.ones(3))


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=repr)
@settings(max_examples=1)
@given(data=st.data())
def test_jit_of_grad_matches_eager_grad(case, data):
    check_jit_grad(case, data)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_exact_gelu_keeps_its_tail_as_jax(dtype):
    # 0.5 x (1 + erf(x / sqrt 2)) cancels for negative x: gelu(-3) in bfloat16 was 45% off and
    # gelu(-10) in float32 was 0 (the differential probe); erfc(-x / sqrt 2), as jax's, keeps them.
    import jax
    import jax.numpy as jnp

    x = np.array([-10.0, -3.0, 0.5, 3.0] if dtype == "float32" else [-3.0, -2.0, 0.5, 3.0], jnp.dtype(dtype))
    want = np.asarray(jax.nn.gelu(x, approximate=False), np.float64)
    for fn in (
        lambda x: nn.gelu(x, approximate=False),
        funcgrad.jit(lambda x: nn.gelu(x, approximate=False)),
    ):
        np.testing.assert_allclose(
            np.asarray(fn(x), np.float64), want, rtol=3e-2 if dtype == "bfloat16" else 1e-5
        )


def test_softmax_log_softmax_and_attention_as_jax():
    # JAX's nn_test through funcgrad.as_jax: log_softmax shifts by the maximum before subtracting
    # (x - logsumexp(x) cancelled the leading digits of the largest entry), softmax of a slice that
    # is masked out entirely is 0, and dot_product_attention of bfloat16 operands with masks,
    # causal/length masks and a bias differentiates, without implicit rank promotion
    import pytest

    jax = pytest.importorskip("jax")
    x = np.array([5.5, 1.3, -4.2, 0.9], np.float32)
    w = np.array([True, False, True, False])
    for f in ("softmax", "log_softmax"):
        for where in (None, w, np.zeros(4, bool)):
            got, want = getattr(funcgrad.nn, f)(x, where=where), getattr(jax.nn, f)(x, where=where)
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-7)
    rng = np.random.default_rng(0)
    q, k, v = (
        rng.standard_normal(s).astype(ml_dtypes.bfloat16)
        for s in ((2, 8, 4, 16), (2, 8, 2, 16), (2, 8, 2, 16))
    )
    bias = rng.standard_normal((2, 4, 8, 8)).astype(ml_dtypes.bfloat16)
    mask = rng.random((2, 1, 8, 8)) < 0.7
    # (int32 lengths: jax requires them, and the oracle may run in 64-bit mode)
    lengths = dict(query_seq_lengths=np.int32([5, 8]), key_value_seq_lengths=np.int32([8, 6]))

    def run(nn, q, k, v):
        return nn.dot_product_attention(q, k, v, bias, mask, is_causal=True, local_window_size=3, **lengths)

    with funcgrad.numpy_rank_promotion("raise"), jax.numpy_rank_promotion("raise"):
        got, g_vjp = funcgrad.vjp(lambda *a: run(funcgrad.nn, *a), q, k, v)
        g_grads = g_vjp(np.ones(got.shape, got.dtype))

        @jax.jit  # (jax's side as one program: eagerly jax compiles one per operation)
        def jax_vjp(q, k, v):
            want, w_vjp = jax.vjp(lambda *a: run(jax.nn, *a), q, k, v)
            return want, w_vjp(jax.numpy.ones(want.shape, want.dtype))

        want, w_grads = jax_vjp(q, k, v)
    for g, w_ in zip((got, *g_grads), (want, *w_grads)):
        assert g.dtype == w_.dtype == ml_dtypes.bfloat16
        np.testing.assert_allclose(
            np.asarray(g, np.float32), np.asarray(w_, np.float32), rtol=2e-2, atol=2e-2
        )


def test_softmax_of_a_boolean_array_with_a_mask_as_jax():
    # Found by the fuzzer (seed 17001): with where=, jax's jnp.where(where, x, -inf) makes a boolean
    # x a float before the shift, so softmax/log_softmax compute (funcgrad raised sub's TypeError,
    # jax's refusal without a mask, which stays)
    jax = pytest.importorskip("jax")
    x = np.array([[True, False, True], [True, True, False]])
    for f in ("softmax", "log_softmax"):
        got, want = getattr(funcgrad.nn, f)(x, where=x), getattr(jax.nn, f)(x, where=x)
        assert got.weak_type == want.weak_type
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
        for lib in (funcgrad, jax):
            with pytest.raises(TypeError, match="sub does not accept dtype bool"):
                getattr(lib.nn, f)(x)


def test_logistic_functions_refuse_integers_as_jax():
    # (session 22's fuzzer) jax.nn's sigmoid/silu/swish/glu bind lax.logistic, which refuses integer
    # and boolean operands (a Python int too); funcgrad promoted them to floats
    for f in ("sigmoid", "silu", "swish", "glu"):
        for x in (np.array([1, -2], np.int8), np.array([True, False]), 0):
            with pytest.raises(TypeError, match="logistic does not accept dtype"):
                getattr(funcgrad.nn, f)(np.concatenate([np.atleast_1d(x)] * 2) if f == "glu" else x)


@pytest.mark.parametrize("algorithm", ["fast", "stable"])
def test_standardize_algorithms_as_jax(algorithm):
    # JAX's nn_test (testStandardizeStableAlgorithm) through funcgrad.as_jax: algorithm=, and the
    # fast variance clipped at 0
    jax = pytest.importorskip("jax")
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32) * 3 + 1
    got, want = nn.standardize(x, algorithm=algorithm), jax.nn.standardize(x, algorithm=algorithm)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="Unknown algorithm"):
        nn.standardize(x, algorithm="exact")


def test_softmax_with_a_traced_mask_differentiates_as_jax():
    # Found by the fuzzer: softmax(x, where=x > 0) under grad leaked the mask's tracer (it was a
    # non-differentiable argument of the custom rule; now an operand, as logsumexp's).
    import jax
    from jax._src import config as jax_config

    x = np.array([0.5, -1.0, 2.0])

    def run(api, np_):
        f = lambda x: np_.sum(api.nn.softmax(x, axis=None, where=x > 0) * np_.arange(3.0))  # noqa: E731
        return [api.grad(f)(x), api.jit(api.grad(f))(x), api.hessian(f)(x)]

    with jax_config.enable_x64(True):
        want = jax.jit(lambda: run(jax, jax.numpy))()  # (jax's side one program, not eager dispatch)
    for got, w in zip(run(funcgrad, fnp), want):
        np.testing.assert_allclose(np.asarray(got), np.asarray(w), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "name, args",
    [("sparse_plus", ()), ("elu", ()), ("leaky_relu", ()), ("hard_tanh", ()), ("log_softmax", (-1, True))],
)
def test_empty_activation_tangent_is_a_zero_as_jax(name, args):
    # jax.nn's formulas call jnp.where, which returns its first branch for an empty result: the
    # tangent is a symbolic zero, so an operation after it without a derivative rule (pmax under a
    # named vmap) is not differentiated and jvp computes (the random-program fuzzer, seed 14302)
    import jax

    def f(T, x):
        y = getattr(T.nn, name)(x, *args)
        return T.vmap(lambda a: T.lax.pmax(a, "i") - a, axis_name="i")(y)

    def run(T, x):
        try:
            return [(v.shape, v.dtype) for v in T.jvp(lambda x: f(T, x), (x,), (x,))]
        except NotImplementedError as e:  # (log_softmax's tangent is x's: both raise)
            return str(e)

    x = np.ones((0, 2), np.float32)
    assert run(funcgrad, x) == run(jax, x)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_softmax_derivative_is_jaxs_formula_by_default(dtype):
    # JAX's jax_softmax_custom_jvp is False by default: softmax is differentiated through its
    # formula (the maximum's gradient stopped), whose rounding is not the custom rule's (an ulp in a
    # third of float16's elements: the fuzzer's float16 models, seed 14305)
    import jax

    rng = np.random.default_rng(0)
    x, t = rng.uniform(0.5, 2.0, (3, 5)).astype(dtype), rng.uniform(-1, 1, (3, 5)).astype(dtype)

    def vjp(T):
        return np.asarray(T.jit(lambda x, t: T.vjp(lambda x: T.nn.softmax(x, axis=0), x)[1](t)[0])(x, t))

    np.testing.assert_array_equal(vjp(funcgrad), vjp(jax))
    assert "custom_jvp" not in str(funcgrad.make_jaxpr(funcgrad.grad(lambda x: nn.softmax(x)[0]))(x[0]))
    funcgrad.config.update("jax_softmax_custom_jvp", True)  # (JAX's flag: the custom rule)
    try:
        assert "custom_jvp" in str(funcgrad.make_jaxpr(funcgrad.grad(lambda x: nn.softmax(x)[0]))(x[0]))
    finally:
        funcgrad.config.update("jax_softmax_custom_jvp", False)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_softmax_gradient_under_jit_is_jaxs_in_half_precision(dtype):
    # NOTE: [one broadcast per operand]: a half-precision divisor broadcast shared by softmax's
    # division and its gradient's kept XLA from rewriting the second into a product with the
    # reciprocal, as it rewrites jax's: up to 15 float16 ulps apart (the program fuzzer's leftover)
    import jax

    rng = np.random.default_rng(1)
    x = (rng.standard_normal((4, 6)) * 3).astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    w = rng.standard_normal((4, 6)).astype(x.dtype)

    def grads(T):
        f = T.jit(T.grad(lambda x: (T.nn.softmax(x * w, axis=-1) ** 2).sum() + (x / x.sum(0)).sum()))
        return np.asarray(f(x).astype(np.float32))

    np.testing.assert_array_equal(grads(funcgrad), grads(jax))


@pytest.mark.parametrize("name", ["leaky_relu", "elu", "selu", "soft_sign", "hard_tanh", "sparse_plus"])
def test_activations_of_complex_values_under_jit_as_jax(name):
    # (the program fuzzer's progy table, seed 17017) their comparisons were lax's, which refuse
    # complex values under jit ('ge does not accept dtype complex64'); jax's jnp comparisons order
    # complex numbers lexicographically, as funcgrad's eager NumPy path did
    import jax

    z = np.array([1 + 2j, -1 - 0.5j, 0j, -0.0 + 1j, 1.5 - 1j], np.complex64)
    got = funcgrad.jit(getattr(nn, name))(z)
    want = jax.jit(getattr(jax.nn, name))(z)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    assert got.dtype == want.dtype


@pytest.mark.parametrize("name", ["sparse_sigmoid", "standardize"])
def test_clipping_activations_refuse_complex_values_as_jax(name):
    # (the program fuzzer's leftovers) jax's formulas clip (jnp.clip): complex values are its
    # ValueError, in its words, eager and under jit; standardize's given variance is not clipped
    import jax

    z = np.array([1 + 2j, -1 - 0.5j, 0.5j], np.complex64)
    for call in (getattr(nn, name), funcgrad.jit(getattr(nn, name))):
        with pytest.raises(ValueError) as got:
            call(z)
        with pytest.raises(ValueError) as want:
            getattr(jax.nn, name)(z)
        assert str(got.value) == str(want.value)
    if name == "standardize":
        got, want = nn.standardize(z, variance=2.0), jax.nn.standardize(z, variance=2.0)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


# The activations JAX jits (NOTE: [eager library functions as one program]): an eager call is one
# compiled program, so its float32 values are jax's eager ones bit for bit (op by op, NumPy's exp,
# log1p and tanh differed in the last place: silu 116 of 512 values, softplus 127, standardize
# 231), and so are float16's; weak types and dtypes as jax's.
_JITTED = [
    (np.float32, "silu", {}), (np.float32, "softplus", {}), (np.float32, "log_softmax", {"axis": 0}),
    (np.float32, "standardize", {}), (np.float32, "mish", {}), (np.float16, "standardize", {}),
]  # fmt: skip


def test_eager_activations_jax_jits_have_jax_s_bits():
    import jax
    from _oracle import cheapen_jax_compiles

    cheapen_jax_compiles()  # (both sides compiled alike: NOTE: [oracle compile options])

    rng = np.random.default_rng(18)
    for dtype, name, kw in _JITTED:
        x = (rng.standard_normal((4, 32)) * 3).astype(dtype)
        got, want = getattr(nn, name)(x, **kw), getattr(jax.nn, name)(x, **kw)
        assert got.dtype == want.dtype and got.weak_type == want.weak_type, name
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=f"{name} {dtype}")
    # a Python scalar stays weak, as through jax's jit
    assert nn.silu(2.0).weak_type and jax.nn.silu(2.0).weak_type


def test_eager_programs_trace_inline_and_fall_back():
    # Under a trace the function traces inline (no call equation; the jaxpr is what it was), and a
    # static argument that is not a plain value (an Array alpha, a list axis) runs op by op.
    jaxpr = funcgrad.make_jaxpr(lambda x: nn.softplus(x) * 2)(np.ones(3, np.float32))
    assert all("jit" not in eqn.primitive.name for eqn in jaxpr.jaxpr.eqns)
    x = np.array([[-1.0, 2.0], [3.0, -4.0]], np.float32)
    np.testing.assert_allclose(nn.elu(x, alpha=fnp.asarray(0.5)), nn.elu(x, alpha=0.5), rtol=1e-6)
    np.testing.assert_allclose(nn.logmeanexp(x, axis=[0, 1]), nn.logmeanexp(x, axis=(0, 1)), rtol=1e-6)
    with pytest.raises(ValueError, match="glu: axis 1 must have an even size"):
        nn.glu(np.ones((2, 3)), axis=1)


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16])
def test_eager_vjp_of_jitted_functions_saves_jax_s_residuals(dtype):
    # Under eager vjp/jvp/linearize a function JAX jits binds one jit, as JAX's: its forward (the
    # residuals) is one compiled program, whose fused sum of exp(x) skips exp's half rounding
    # (op by op: log_softmax's saved sum differed, then 13 of 4096 bfloat16 cotangents).
    import jax
    from _oracle import cheapen_jax_compiles

    cheapen_jax_compiles()  # (both sides compiled alike: NOTE: [oracle compile options])
    rng = np.random.RandomState(0)
    x = (rng.randn(64, 64) * 3).astype(dtype)
    w = rng.randn(64, 64).astype(dtype)

    def normed(np_):
        return lambda o: o / np_.sqrt(np_.linalg.norm(o, axis=-1, keepdims=True) + 1e-6)

    for ours, theirs in [(nn.log_softmax, jax.nn.log_softmax), (normed(fnp), normed(jax.numpy))]:
        got = funcgrad.jit(funcgrad.vjp(ours, x)[1])(w)[0]
        want = jax.jit(jax.vjp(theirs, x)[1])(w)[0]
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_eager_grad_of_jitted_functions_is_jax_s():
    # Eager grad of a function JAX jits runs its forward and transpose as compiled programs, as
    # eager vjp does and as JAX's eager grad does (NOTE: [eager library functions as one program]):
    # recorded op by op, the cached NumPy program rounded sinc's cancelling derivative differently
    # (float32 1e-3: -0.0033556, jax -0.0033173) and silu/softplus/log_softmax's in 16/144/88 of
    # 300 values. Both the first call and the cached program's, and a library function among
    # other equations; a nested grad records it inline, with its derivative.
    import jax
    import jax.numpy as jnp

    xs = np.linspace(-3, 3, 41).astype(np.float32)
    cases = [
        (fnp.sinc, jnp.sinc),
        (nn.silu, jax.nn.silu),
        (nn.softplus, jax.nn.softplus),
        (lambda x: nn.log_softmax(fnp.stack([x, 2 * x, -x]))[1],
         lambda x: jax.nn.log_softmax(jnp.stack([x, 2 * x, -x]))[1]),
        (lambda x: (3 * x) * fnp.sinc(x * x) + x, lambda x: (3 * x) * jnp.sinc(x * x) + x),
    ]  # fmt: skip
    g = funcgrad.grad(fnp.sinc)(np.float32(1e-3))
    assert float(g) == float(jax.grad(jnp.sinc)(np.float32(1e-3))) and g.dtype == np.float32
    for ours, theirs in cases:
        want = np.array([jax.grad(theirs)(x) for x in xs])
        for _ in range(2):  # (the first sighting, then the cached program)
            got = np.array([funcgrad.grad(ours)(x) for x in xs])
            np.testing.assert_array_equal(got, want)
    x = np.float32(0.7)
    np.testing.assert_allclose(
        funcgrad.grad(funcgrad.grad(nn.silu))(x), jax.grad(jax.grad(jax.nn.silu))(x), rtol=1e-6
    )


@pytest.mark.parametrize("activation", ["celu", "elu"])
def test_an_activation_parameter_left_none_is_refused(activation):
    # NumPy turns None into NaN; jax raises a TypeError, and so does funcgrad (no silent NaN)
    f = getattr(nn, activation)
    with pytest.raises(TypeError, match="got None"):
        f(np.array([-1.0, 2.0]), None)
    with pytest.raises(TypeError, match="got None"):
        funcgrad.jit(f)(np.array([-1.0, 2.0]), None)
