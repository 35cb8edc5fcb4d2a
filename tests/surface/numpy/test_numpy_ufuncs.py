"""NumPy compatibility of funcgrad.numpy's elementwise functions: values and dtypes against NumPy,
derivatives against finite differences, vmap against a loop, jit against eager, zero derivatives of
integer/bool-valued functions, and special values (signed zeros, infinities, NaN)."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from _numpy_harness import (
    ALL,
    F32,
    F64,
    FLOATS,
    I32,
    NUMERIC,
    B,
    Case,
    arr,
    check_jit_grad,
    check_zero_grad,
    shapes,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.api import jit


def unary(lo=-3.0, hi=3.0):
    return lambda rng, dtype, shp: ([arr(rng, shp[0], dtype, lo, hi)], {})


def binary(lo1=-3.0, hi1=3.0, lo2=None, hi2=None, away_from_zero=False):
    lo2 = lo1 if lo2 is None else lo2
    hi2 = hi1 if hi2 is None else hi2

    def make(rng, dtype, shp):
        x = arr(rng, shp[0], dtype, lo1, hi1)
        y = arr(rng, shp[1], dtype, lo2, hi2)
        if away_from_zero:
            # |y| in [lo2, hi2] with a random sign (divisors of //, %, fmod).
            sign = np.where(rng.random(shp[1]) < 0.5, -1, 1).astype(dtype)
            y = (np.abs(y) * sign).astype(dtype)
        return [x, y], {}

    return make


def _inexact_dtype(dtype):
    return np.dtype(dtype) if np.dtype(dtype).kind == "f" else F64


def U(name, make=None, dtypes=FLOATS, grad=True, ref=None, **kw):
    return Case(
        name, getattr(fnp, name), ref or getattr(np, name), make or unary(), dtypes=dtypes, grad=grad, **kw
    )


def Bin(name, make=None, dtypes=FLOATS, grad=True, ref=None, **kw):
    return Case(
        name,
        getattr(fnp, name),
        ref or getattr(np, name),
        make or binary(),
        shapes=shapes(2),
        dtypes=dtypes,
        grad=grad,
        **kw,
    )


UNARY = [
    U("abs", dtypes=ALL),
    U("absolute", dtypes=ALL),
    U("negative", dtypes=NUMERIC),
    U("positive", dtypes=NUMERIC),
    U("sign", dtypes=NUMERIC),
    U("square", dtypes=NUMERIC),
    U("sqrt", unary(0.1, 4.0), dtypes=NUMERIC),
    U("cbrt", unary(0.2, 4.0), dtypes=NUMERIC),
    U("reciprocal", unary(0.5, 3.0)),
    U("exp", dtypes=NUMERIC),
    U("exp2", dtypes=NUMERIC),
    U("expm1", dtypes=NUMERIC),
    U("log", unary(0.1, 5.0), dtypes=NUMERIC),
    U("log2", unary(0.1, 5.0), dtypes=NUMERIC),
    U("log10", unary(0.1, 5.0), dtypes=NUMERIC),
    U("log1p", unary(-0.5, 3.0), dtypes=NUMERIC),
    U("sin", dtypes=NUMERIC),
    U("cos", dtypes=NUMERIC),
    U("tan", unary(-1.2, 1.2), dtypes=NUMERIC),
    U("arcsin", unary(-0.9, 0.9)),
    U("arccos", unary(-0.9, 0.9)),
    U("arctan", dtypes=NUMERIC),
    U("asin", unary(-0.9, 0.9)),
    U("acos", unary(-0.9, 0.9)),
    U("atan"),
    U("sinh", dtypes=NUMERIC),
    U("cosh", dtypes=NUMERIC),
    U("tanh", dtypes=NUMERIC),
    U("arcsinh"),
    U("arccosh", unary(1.1, 4.0)),
    U("arctanh", unary(-0.9, 0.9)),
    U("asinh"),
    U("acosh", unary(1.1, 4.0)),
    U("atanh", unary(-0.9, 0.9)),
    U("deg2rad", dtypes=NUMERIC),
    U("rad2deg", dtypes=NUMERIC),
    U("degrees"),
    U("radians"),
    U("sinc"),
    U("floor", dtypes=NUMERIC),
    U("ceil", dtypes=NUMERIC),
    U("trunc", dtypes=NUMERIC),
    U("fix", dtypes=NUMERIC),
    U("rint", dtypes=NUMERIC),
    U("round", dtypes=NUMERIC),
    U("around", dtypes=NUMERIC),
    # Piecewise constant: finite differences straddle its steps, so its derivative is checked as zero.
    Case("round_decimals", lambda x: fnp.round(x, 2), lambda x: np.round(x, 2), unary(), grad=False),
    U("nan_to_num"),
    U("conj", dtypes=NUMERIC),
    U("conjugate", dtypes=NUMERIC),
    U("real", dtypes=NUMERIC),
    U("imag", dtypes=NUMERIC),
]

BOOL_VALUED_UNARY = [
    U("isfinite", dtypes=NUMERIC, grad=False),
    U("isinf", dtypes=NUMERIC, grad=False),
    U("isnan", dtypes=NUMERIC, grad=False),
    U("isposinf", dtypes=NUMERIC, grad=False),
    U("isneginf", dtypes=NUMERIC, grad=False),
    U("signbit", dtypes=NUMERIC, grad=False),
    U("logical_not", dtypes=ALL, grad=False),
    U("bitwise_not", dtypes=(I32, B), grad=False),
    U("invert", dtypes=(I32, B), grad=False),
]

BINARY = [
    Bin("add", dtypes=ALL),
    Bin("subtract", dtypes=NUMERIC),
    Bin("multiply", dtypes=ALL),
    Bin("divide", binary(-3, 3, 0.5, 3, True), dtypes=NUMERIC),
    Bin("true_divide", binary(-3, 3, 0.5, 3, True), dtypes=NUMERIC),
    Bin("floor_divide", binary(-5, 5, 1, 4, True), dtypes=NUMERIC),
    Bin("mod", binary(-5, 5, 1, 4, True), dtypes=NUMERIC),
    Bin("remainder", binary(-5, 5, 1, 4, True), dtypes=NUMERIC),
    Bin("fmod", binary(-5, 5, 1, 4, True), dtypes=NUMERIC),
    Bin("power", binary(0.5, 3.0, -2.0, 2.0)),
    Case("power_int", fnp.power, np.power, binary(-4, 4, 0, 3), shapes=shapes(2), dtypes=(I32,), grad=False),
    Bin("pow", binary(0.5, 3.0, -2.0, 2.0)),
    Bin("float_power", binary(0.5, 3.0, -2.0, 2.0), dtypes=(F64, I32), ref=np.float_power),
    Bin("arctan2", binary(0.5, 3.0, -3.0, 3.0)),
    Bin("atan2", binary(0.5, 3.0, -3.0, 3.0)),
    Bin("hypot", dtypes=NUMERIC),
    Bin("logaddexp", dtypes=NUMERIC),
    Bin("logaddexp2", dtypes=NUMERIC),
    Bin("maximum", dtypes=ALL),
    Bin("minimum", dtypes=ALL),
    Bin("fmax", dtypes=ALL),
    Bin("fmin", dtypes=ALL),
    Bin("copysign", binary(-3, 3, 0.5, 3, True)),
    Bin("heaviside"),
    Bin("divmod", binary(-5, 5, 1, 4, True), dtypes=NUMERIC, order=1),
    Case(
        "clip",
        lambda x, lo, hi: fnp.clip(x, lo, hi),
        lambda x, lo, hi: np.clip(x, lo, hi),
        lambda rng, dt, shp: (
            [arr(rng, shp[0], dt), arr(rng, shp[1], dt, -3, -1), arr(rng, shp[2], dt, 1, 3)],
            {},
        ),
        shapes=shapes(3),
        dtypes=NUMERIC,
    ),
]

BOOL_VALUED_BINARY = [
    Bin(name, dtypes=ALL, grad=False)
    for name in (
        "equal",
        "not_equal",
        "less",
        "less_equal",
        "greater",
        "greater_equal",
        "logical_and",
        "logical_or",
        "logical_xor",
    )
] + [
    Bin("bitwise_and", dtypes=(I32, B), grad=False),
    Bin("bitwise_or", dtypes=(I32, B), grad=False),
    Bin("bitwise_xor", dtypes=(I32, B), grad=False),
    Bin("left_shift", binary(-8, 8, 0, 5), dtypes=(I32,), grad=False),
    Bin("right_shift", binary(-64, 64, 0, 5), dtypes=(I32,), grad=False),
    Case(
        "isclose",
        fnp.isclose,
        np.isclose,
        lambda rng, dt, shp: ([arr(rng, shp[0], dt), arr(rng, shp[1], dt)], {}),
        shapes=shapes(2),
        grad=False,
    ),
]

# The generic checks of this table (values, derivatives, vmap, jit) are tests/surface/test_surface_cases.py's.
CASES = UNARY + BOOL_VALUED_UNARY + BINARY + BOOL_VALUED_BINARY
CASE_EXAMPLES = {"grads": 3}
GRAD_CASES = [c for c in UNARY + BINARY if c.grad]
ZERO_GRAD_CASES = [c for c in BOOL_VALUED_UNARY + BOOL_VALUED_BINARY if F64 in c.dtypes] + [
    c for c in UNARY if c.name in ("floor", "ceil", "trunc", "fix", "rint", "round", "round_decimals", "sign")
]


@pytest.mark.parametrize("case", ZERO_GRAD_CASES, ids=repr)
@settings(max_examples=2)
@given(data=st.data())
def test_integer_valued_functions_have_zero_grads(case, data):
    check_zero_grad(case, data)


# ----------------------------------------------------------------------------------------------
# Special values: signed zeros, infinities, NaN, extremes


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, np.inf, -np.inf, np.nan, 1e300, -1e300, 1e-300])

SPECIAL_UNARY = [
    "abs",
    "negative",
    "sign",
    "square",
    "sqrt",
    "cbrt",
    "reciprocal",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
    "arcsinh",
    "arccosh",
    "arctanh",
    "deg2rad",
    "rad2deg",
    "sinc",
    "floor",
    "ceil",
    "trunc",
    "rint",
    "round",
    "isfinite",
    "isinf",
    "isnan",
    "isposinf",
    "isneginf",
    "signbit",
    "nan_to_num",
    "logical_not",
]
SPECIAL_BINARY = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "floor_divide",
    "remainder",
    "fmod",
    "power",
    "arctan2",
    "hypot",
    "logaddexp",
    "logaddexp2",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "copysign",
    "heaviside",
    "equal",
    "less",
    "greater_equal",
    "isclose",
]


def _assert_same(actual, expected, name):
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.dtype == e.dtype, f"{name}: dtype {a.dtype} != {e.dtype}"
    if e.dtype.kind == "f":
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=0, equal_nan=True, err_msg=name)
        # Signed zeros must agree too.
        zeros = e == 0
        np.testing.assert_array_equal(
            np.signbit(a[zeros]), np.signbit(e[zeros]), err_msg=f"{name} signed zeros"
        )
    else:
        np.testing.assert_array_equal(a, e, err_msg=name)


@pytest.mark.parametrize("name", SPECIAL_UNARY)
def test_special_values_unary(name):
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(SPECIAL)
    if name == "sign":  # jax (XLA) keeps a zero's sign, sign(-0.0) = -0.0; NumPy gives +0.0
        expected = np.where(SPECIAL == 0, SPECIAL, expected)
    with np.errstate(all="ignore"):
        _assert_same(getattr(fnp, name)(SPECIAL), expected, name)


@pytest.mark.parametrize("name", SPECIAL_BINARY)
def test_special_values_binary(name):
    x, y = np.meshgrid(SPECIAL, SPECIAL)
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(x, y)
    if name in ("maximum", "minimum"):  # XLA's zeros (jax's): -0 < +0 (NOTE: [XLA's signed zeros ...])
        both = (x == 0) & (y == 0)
        expected = np.where(both, x + y if name == "maximum" else -(-x + -y), expected)
    with np.errstate(all="ignore"):
        _assert_same(getattr(fnp, name)(x, y), expected, name)


# ----------------------------------------------------------------------------------------------
# Derivative conventions (JAX's documented subgradients) and no NaN gradients


def grad(f, *args):
    return funcgrad.grad(f, argnums=tuple(range(len(args))))(*args)


def test_subgradient_conventions():
    assert float(funcgrad.grad(fnp.abs)(0.0)) == 1.0  # JAX: select(x >= 0, t, -t)
    assert [float(g) for g in grad(fnp.maximum, 1.0, 1.0)] == [0.5, 0.5]
    assert [float(g) for g in grad(fnp.minimum, 2.0, 2.0)] == [0.5, 0.5]
    assert float(funcgrad.grad(lambda x: fnp.clip(x, 0.0, 1.0))(0.5)) == 1.0
    assert float(funcgrad.grad(lambda x: fnp.clip(x, 0.0, 1.0))(2.0)) == 0.0


@pytest.mark.parametrize(
    "f, args",
    [
        (fnp.hypot, (0.0, 0.0)),
        (fnp.logaddexp, (-np.inf, -np.inf)),
        (fnp.logaddexp, (-np.inf, 1.0)),
        (fnp.logaddexp2, (-np.inf, -np.inf)),
        (fnp.sinc, (0.0,)),
        (lambda x: fnp.power(x, 2.0), (0.0,)),
        (lambda x: fnp.power(x, 3), (0.0,)),
        (lambda x, y: fnp.power(x, y), (0.0, 2.0)),
    ],
)
def test_no_nan_gradients(f, args):
    for order in (1, 2):
        g = f
        for _ in range(order):
            g = funcgrad.grad(g) if len(args) == 1 else funcgrad.grad(g, argnums=(0, 1))
            if len(args) > 1:
                break
        out = g(*args)
        for leaf in out if isinstance(out, tuple) else (out,):
            assert np.all(np.isfinite(np.asarray(leaf))), (f, args, out)


def test_sinc_derivatives_at_zero():
    d1 = funcgrad.grad(fnp.sinc)
    d2 = funcgrad.grad(d1)
    assert float(d1(0.0)) == 0.0
    np.testing.assert_allclose(float(d2(0.0)), -(np.pi**2) / 3, rtol=1e-12)


def test_float32_stays_float32():
    x = np.ones(3, np.float32)
    for f in (fnp.sin, fnp.exp, fnp.sqrt, lambda v: v * 2.0, lambda v: fnp.power(v, 2), lambda v: v / 3):
        assert f(x).dtype == F32
    assert float(funcgrad.grad(lambda v: fnp.sum(v * 2.0))(x)[0]) == 2.0
    assert funcgrad.grad(lambda v: fnp.sum(fnp.sin(v)))(x).dtype == F32


@pytest.mark.parametrize(
    "case",
    [
        c
        for c in GRAD_CASES
        if c.name in ("logaddexp", "logaddexp2", "sinc", "hypot", "power", "remainder", "abs")
    ],
    ids=repr,
)
@settings(max_examples=1)
@given(data=st.data())
def test_jit_of_grad_matches_eager_grad(case, data):
    check_jit_grad(case, data)


def test_eager_special_values_do_not_warn():
    # NOTE: [IEEE special values]: eager mode is as silent as XLA.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(fnp.log(0.0)) == -np.inf
        assert np.isnan(float(fnp.sqrt(-1.0)))
        assert float(fnp.divide(1.0, 0.0)) == np.inf
        assert float(funcgrad.grad(fnp.sqrt)(0.0)) == np.inf


JIT_SPECIAL = [
    "floor_divide",
    "remainder",
    "logaddexp",
    "logaddexp2",
    "hypot",
    "copysign",
    "heaviside",
    "fmax",
    "fmin",
    "isclose",
]


@pytest.mark.parametrize("name", JIT_SPECIAL)
def test_special_values_under_jit(name):
    # The compositions give NumPy's special values through XLA too.
    x, y = np.meshgrid(SPECIAL, SPECIAL)
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(x, y)
        actual = np.asarray(jit(getattr(fnp, name))(x, y))
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=0, equal_nan=True, err_msg=name)


def test_log10_and_log2_within_one_ulp_of_numpy():
    # log10 was log(x) / log(10): 2 ulp off NumPy, and log10(1000.0) was 2.9999999999999996.
    # log2 is JAX's log(x) / log(2), which XLA computes as log(x) * (1 / log(2)): jax's
    # log2(8.0) is 2.9999999999999996, and funcgrad's is jax's (eagerly as under jit).
    jax = pytest.importorskip("jax")
    from jax._src import config as jax_config

    k = np.arange(15)
    assert fnp.log10(10.0**k).tolist() == k.tolist()
    with jax_config.enable_x64(True):
        want = np.asarray(jax.numpy.log2(2.0**k))
    assert want.tolist() != k.tolist()  # (the premise: XLA's reciprocal, not the quotient)
    np.testing.assert_array_equal(np.asarray(fnp.log2(2.0**k)), want)
    np.testing.assert_array_equal(np.asarray(funcgrad.jit(fnp.log2)(2.0**k)), want)
    x = np.exp(np.random.default_rng(0).uniform(-700, 700, 10_000))
    for ours, theirs in ((fnp.log10, np.log10), (fnp.log2, np.log2)):
        want = theirs(x)
        assert np.all(np.abs(np.asarray(ours(x)) - want) <= np.spacing(np.abs(want)))


# ----------------------------------------------------------------------------------------------
# ufunc objects (numpy/ufunc_objects.py): fnp.add.reduce, .accumulate, .at, .outer, .reduceat


def _close(got, want):
    if isinstance(want, tuple | list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
    else:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want, dtype=float), rtol=1e-12, atol=1e-12)


def _pair():
    f = lambda a, b: a * 0.5 + b  # noqa: E731
    return fnp.frompyfunc(f, 2, 1, identity=0.0), np.frompyfunc(f, 2, 1, identity=0.0)


@pytest.mark.parametrize("axis", [0, 1, None])
def test_ufunc_reduce_and_accumulate_match_numpy(axis):
    ours, theirs = _pair()
    x = np.arange(12.0).reshape(3, 4)
    _close(ours.reduce(x, axis=axis), theirs.reduce(x, axis=axis))
    _close(ours.reduce(x, axis=axis, keepdims=True), theirs.reduce(x, axis=axis, keepdims=True))
    _close(ours.reduce(x, axis=axis, initial=3.0), theirs.reduce(x, axis=axis, initial=3.0))
    if axis is not None:
        _close(ours.accumulate(x, axis=axis), theirs.accumulate(x, axis=axis))
        mask = x > 4
        _close(ours.reduce(x, axis=axis, where=mask), theirs.reduce(x, axis=axis, where=mask, initial=0.0))


def test_ufunc_at_reduceat_outer_and_transformations():
    ours, theirs = _pair()
    a = np.arange(5.0)
    want = a.copy()
    theirs.at(want, [0, 0, 3], [1.0, 2.0, 3.0])
    _close(ours.at(a, np.array([0, 0, 3]), np.array([1.0, 2.0, 3.0]), inplace=False), want)
    x = np.arange(12.0).reshape(3, 4)
    _close(ours.reduceat(x, np.array([0, 2, 1]), axis=1), theirs.reduceat(x, [0, 2, 1], axis=1))
    _close(ours.outer(np.arange(3.0), np.arange(2.0)), theirs.outer(np.arange(3.0), np.arange(2.0)))
    _close(funcgrad.jit(lambda x: ours.reduce(x, axis=1))(x), theirs.reduce(x, axis=1))
    # d/dx of the fold: x0 is halved (n - 1) times in its row, the last element not at all.
    g = funcgrad.grad(lambda x: fnp.sum(ours.reduce(x, axis=1)))(x)
    _close(g, np.tile(0.5 ** np.arange(3, -1, -1.0), (3, 1)))
    with pytest.raises(ValueError, match="inplace=False"):
        ours.at(a, np.array([0]), 1.0)
    with pytest.raises(ValueError, match="binary"):
        fnp.frompyfunc(np.negative, 1, 1).reduce(a)
    with pytest.raises(ValueError, match="initial"):
        fnp.frompyfunc(lambda a, b: a + b, 2, 1).reduce(np.zeros((0,)))
    two = fnp.frompyfunc(lambda v: (v, -v), 1, 2)(np.arange(3.0))
    assert [t.tolist() for t in two] == [[0.0, 1.0, 2.0], [-0.0, -1.0, -2.0]]
    assert repr(ours) == "<funcgrad.numpy.ufunc '<lambda>'>" and ours.nin == 2 and ours.nout == 1
    assert fnp.ufunc(lambda a: a + 1, 1, 1, name="inc")(np.ones(2)).tolist() == [2.0, 2.0]


_UFUNC_NAMES = (
    "add multiply subtract maximum minimum logaddexp logaddexp2 logical_and logical_or logical_xor "
    "bitwise_and bitwise_or bitwise_xor"
).split()


def _operands(name):
    rng = np.random.default_rng(3)
    if name.startswith("logical"):
        return rng.random((3, 4)) > 0.5
    if name.startswith("bitwise"):
        return rng.integers(0, 16, (3, 4)).astype(np.int32)
    return rng.standard_normal((3, 4))


@pytest.mark.parametrize("name", _UFUNC_NAMES)
def test_ufunc_methods_match_numpy(name):
    ours, theirs = getattr(fnp, name), getattr(np, name)
    assert isinstance(ours, fnp.ufunc) and ours.nin == 2 and ours.nout == 1
    a = _operands(name)
    close = functools.partial(np.testing.assert_allclose, rtol=1e-12, atol=1e-12)
    close(np.asarray(ours(a, a[::-1])), theirs(a, a[::-1]))
    for axis in (0, 1):
        close(np.asarray(ours.reduce(a, axis=axis)), theirs.reduce(a, axis=axis))
        close(np.asarray(ours.accumulate(a, axis=axis)), theirs.accumulate(a, axis=axis))
    close(np.asarray(ours.outer(a[0], a[1])), theirs.outer(a[0], a[1]))
    close(np.asarray(ours.reduceat(a[0], np.array([0, 2]))), theirs.reduceat(a[0], [0, 2]))
    if name not in ("logaddexp", "logaddexp2"):
        idx = np.array([0, 0, 2])
        want = a[0].copy()
        theirs.at(want, idx, a[1][:3])
        close(np.asarray(ours.at(a[0], idx, a[1][:3], inplace=False)), want)
        if ours.identity is not None:
            assert ours.identity == theirs.identity


def test_ufunc_objects_are_still_the_functions():
    import inspect  # noqa: PLC0415

    assert str(inspect.signature(fnp.add)) == "(x1, x2, /)" and fnp.add.__name__ == "add"
    assert float(funcgrad.jit(fnp.add)(1.0, 2.0)) == 3.0 and int(fnp.negative(3)) == -3
    g = funcgrad.grad(lambda x: fnp.add.reduce(fnp.multiply(x, x)))(fnp.arange(3.0))
    np.testing.assert_allclose(np.asarray(g), [0.0, 2.0, 4.0])
    g = funcgrad.grad(lambda x: fnp.sum(fnp.maximum.accumulate(x)))(fnp.array([1.0, 3.0, 2.0]))
    np.testing.assert_allclose(np.asarray(g), [1.0, 2.0, 0.0])
    batched = funcgrad.vmap(lambda r: fnp.add.reduce(r))(fnp.arange(6.0).reshape(2, 3))
    np.testing.assert_allclose(np.asarray(batched), [3.0, 12.0])
    with pytest.raises(ValueError, match="inplace=False"):
        fnp.add.at(np.zeros(2), [0], 1.0)


# ----------------------------------------------------------------------------------------------
# Found by the external suites (HIPS autograd's tests, the Array API suite, JAX's examples)


@pytest.mark.parametrize("x, y", [(2.0, 2.0), (-3.0, 3.0), (0.5, -0.5), (3.0, 4.0), (1e-200, 1e-200)])
def test_hypot_second_derivatives_at_equal_magnitudes(x, y):
    # d2r/dx2 = y^2/r^3, d2r/dxdy = -xy/r^3: JAX's max/min formula splits the tie |x| == |y| and gets 0.
    r = np.hypot(x, y)
    h = funcgrad.hessian(fnp.hypot, argnums=(0, 1))(x, y)
    u, v = x / r, y / r  # (scaled: r**3 underflows for tiny sides)
    expected = [[v * v / r, -u * v / r], [-u * v / r, u * u / r]]
    np.testing.assert_allclose(np.array([[float(v) for v in row] for row in h]), expected, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8"])
@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod", "divmod"])
def test_integer_division_by_zero_is_jaxs(name, dtype):
    # Integer division by 0 has no NumPy answer (a warning and 0); funcgrad computes JAX's: XLA's
    # quotient (-1, all bits set), floor_divide's sign step by sign(), and 0 for remainder and fmod
    # (JAX divides by 1 there). Found by the differential fuzzer; eager and jit alike.
    import jax.numpy as jnp

    x = np.array([-3, -1, 0, 1, 5, 7], dtype) if dtype != "uint8" else np.array([3, 1, 0, 255, 5, 7], dtype)
    y = np.array([0, -2, 0, 0, 0, -1], dtype) if dtype != "uint8" else np.array([0, 2, 0, 0, 0, 1], dtype)
    want = getattr(jnp, name)(x, y)
    for fn in (getattr(fnp, name), jit(getattr(fnp, name))):
        got = fn(x, y)
        for g, w in zip(got if name == "divmod" else [got], want if name == "divmod" else [want]):
            assert np.asarray(g).dtype == w.dtype
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("decimals", [1, 2, 5, -1])
def test_round_of_float16_scales_in_float32_as_jax(decimals):
    # float16 * 10**decimals rounded to float16 can cross a half (3.35 -> 3.4); jax scales in float32,
    # and a decimals beyond the type's range (10**5 > float16's max) leaves the values as they are.
    import jax.numpy as jnp

    x = np.array([-2.25, 3.35, 0.05, 2.5, 1234.0, -0.0], np.float16)
    want = jnp.round(x, decimals)
    for fn in (fnp.round, jit(fnp.round, static_argnums=1)):
        got = fn(x, decimals)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_round_refuses_a_float_number_of_decimals_as_jax():
    # (JAX's operator.index: funcgrad truncated round(x, 1.5) to 1 decimal)
    import jax.numpy as jnp

    x = np.array([1.25, 2.5], np.float32)
    for fn in (jnp.round, fnp.round):
        with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
            fn(x, 1.5)
    np.testing.assert_array_equal(fnp.round(x, np.int64(1)), jnp.round(x, np.int64(1)))


def test_integer_power_of_any_exponent_array_is_jaxs():
    # Negative or >= 64 integer exponents (arrays) have no exact integer answer; funcgrad computes
    # JAX's value (the exponent's low 6 bits) eagerly and under jit, where eager raised NumPy's
    # ValueError and jit used 32 bits (the fuzzer's negative int8/int32 exponents).
    import jax.numpy as jnp

    x = np.array([5, 3, -3, 2, 1, -1, 0, 3, -1, 0, 0, 7], np.int32)
    y = np.array([-1, -2, -1, -3, -5, -5, -1, 70, 65, 64, 0, 3], np.int32)
    want = np.asarray(jnp.power(x, y))
    for fn in (fnp.power, jit(fnp.power)):
        np.testing.assert_array_equal(np.asarray(fn(x, y)), want)
    # a Python int exponent still raises, JAX's TypeError in its words (a ValueError too, NumPy's type)
    with pytest.raises(
        TypeError, match=r"Integers cannot be raised to negative powers, got integer_pow\(x, -1\)"
    ):
        fnp.power(fnp.asarray([2, 3]), -1)
    with pytest.raises(ValueError):
        fnp.asarray([2, 3]) ** -2


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_nan_to_num_of_narrow_floats_uses_their_extremes_as_jax(dtype):
    # bfloat16 (NumPy kind "V") took float64's extremes, which round to inf in bfloat16
    import jax.numpy as jnp

    x = np.array([np.nan, np.inf, -np.inf, 1.0], jnp.dtype(dtype))
    want = jnp.nan_to_num(x)
    for fn in (fnp.nan_to_num, jit(fnp.nan_to_num)):
        got = fn(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got, np.float64), np.asarray(want, np.float64))


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_logaddexp_as_jax(name, dtype):
    # NumPy has no complex logaddexp; JAX's (optimistix calls it) takes the principal branch.
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(1)
    x, y = ((rng.normal(size=7) * 3 + 1j * rng.normal(size=7) * 4).astype(dtype) for _ in range(2))
    jax.config.update("jax_enable_x64", True)  # (as the suite's other oracle tests run jax)
    want = np.asarray(getattr(jax.numpy, name)(x, y))
    for f in (getattr(fnp, name), funcgrad.jit(getattr(fnp, name))):
        got = np.asarray(f(x, y))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps, atol=4 * np.finfo(dtype).eps)


def test_positive_of_booleans_as_jax():
    # NumPy refuses +bool; JAX returns the booleans (the fuzzer's one-step sweep found the TypeError)
    import jax.numpy as jnp

    for x in (np.array([True, False]), True):
        want = jnp.positive(x)
        for fn in (fnp.positive, jit(fnp.positive)):
            got = fn(x)
            assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_float_base_to_integer_array_power_is_strong_as_jax():
    # JAX's float base with an integer exponent array is lax.pow of the two unpromoted: weak only
    # where both are (2.0 ** int_array under jit was weak; the fuzzer's one-step sweep)
    import jax
    from jax._src import config as jax_config

    x = np.array([1, 2, -3], np.int32)
    cases = [lambda x: 2.0**x, lambda x: 0.5**x, lambda x: x**2.0]
    for case in cases:
        with jax_config.enable_x64(True):
            want = jax.jit(lambda x, case=case: case(jax.numpy.asarray(x)))(x)
        got = jit(lambda x, case=case: case(fnp.asarray(x)))(x)
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-15)


def test_jax_lax_numpy_test_cases_under_rank_promotion_raise_as_jax():
    # JAX's lax_numpy(_ufuncs)_test through funcgrad.as_jax: these ran into funcgrad's own
    # broadcasts (refused under jax_numpy_rank_promotion='raise'), needed concrete values JAX's
    # versions do not (a traced reduce initial=, traced reduceat indices), or refused initial= of
    # a logical reduce; ufunc objects compare by their definition and keep it read-only
    import jax
    from jax._src import config as jax_config

    a, i3 = np.arange(12.0).reshape(3, 4), np.array([0, 2, 1])
    cases = [
        lambda j: j.numpy.where(1.0, j.numpy.zeros(0, "uint8"), j.numpy.zeros((3, 0), "uint32")),
        lambda j: j.numpy.subtract.outer(np.ones((4, 3)), np.arange(3.0)),
        lambda j: j.jit(lambda x, i: j.numpy.add.reduce(x, axis=0, initial=i))(np.zeros((0, 3)), 2.5),
        lambda j: j.numpy.logical_or.reduce(np.zeros((2, 3), bool), axis=0, initial=True),
        lambda j: j.numpy.bitwise_xor.reduce(
            np.array([[1, 2], [3, 4]]), axis=None, where=np.array([True, False]), initial=0
        ),  # fmt: skip
        lambda j: j.jit(lambda x, i: j.numpy.add.reduceat(x, i, axis=1))(a, i3),
        lambda j: j.numpy.packbits(np.arange(24).reshape(2, 3, 4) % 3, axis=1),
        lambda j: j.numpy.unpackbits(np.arange(6, dtype=np.uint8).reshape(3, 2), axis=0),
        lambda j: j.numpy.trapezoid(a**1.5, dx=np.arange(1.0, 13.0).reshape(3, 4)[:, :3], axis=1),
        lambda j: j.numpy.trapezoid(
            np.arange(24.0).reshape(2, 3, 4), x=np.arange(24.0).reshape(2, 3, 4) ** 2, axis=-2
        ),
        lambda j: j.numpy.polyfit(
            np.arange(6.0), np.stack([np.arange(6.0) ** 2, np.arange(6.0)]).T, 1, cov=True
        ),
        lambda j: j.numpy.polyfit(np.arange(6.0), np.arange(6.0) ** 2, 1, full=True, cov=True),
    ]
    with funcgrad.numpy_rank_promotion("raise"):
        got = [jax.tree_util.tree_leaves(case(funcgrad)) for case in cases]
    with jax_config.enable_x64(True), jax_config.numpy_rank_promotion("raise"):
        want = [jax.tree_util.tree_leaves(case(jax)) for case in cases]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert len(g) == len(w), k
        for x, y in zip(g, w):
            assert np.asarray(x).dtype == np.asarray(y).dtype, k
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-9, atol=1e-12, err_msg=str(k))
    # an x of lower rank than y broadcasts (rank promotion allowed; it raised a shape error)
    y = np.arange(24.0).reshape(2, 3, 4)
    with jax_config.enable_x64(True):
        want = jax.numpy.trapezoid(y, x=a**2, axis=-2)
    np.testing.assert_allclose(np.asarray(fnp.trapezoid(y, x=a**2, axis=-2)), np.asarray(want), rtol=1e-12)
    f = fnp.frompyfunc(lambda x, y: x - y, 2, 1, identity=0)
    assert f == fnp.frompyfunc(f._func, 2, 1, identity=0) and hash(f) == hash(
        fnp.frompyfunc(f._func, 2, 1, identity=0)
    )
    with pytest.raises(AttributeError):
        fnp.add.nin = 3


def test_trapezoid_over_an_empty_axis_as_jax():
    # sample points x with no spacings: jax's general form gives zeros (funcgrad took y[..., 0] first
    # and raised IndexError; the four-way fuzzer, trapezoid(zeros((3, 0)), x=arange(0) ** 2)); the
    # constant-spacing form of an empty axis raises in both
    import jax
    from jax._src import config as jax_config

    y = np.zeros((3, 0), np.float32)
    for side, jit_ in ((fnp, funcgrad.jit), (jax.numpy, jax.jit)):
        with jax_config.enable_x64(True):
            got = [
                side.trapezoid(y, x=np.arange(0.0) ** 2),
                jit_(lambda y, s=side: s.trapezoid(y, x=np.arange(0.0)))(y),
            ]
        assert [(np.asarray(g).tolist(), np.asarray(g).dtype) for g in got] == [([0.0] * 3, np.float64)] * 2
        with pytest.raises(IndexError):
            side.trapezoid(y)


def test_bool_mask_times_nonfinite_as_jax():
    # (the differential fuzzer) jax's multiply is one XLA computation whose simplifier makes
    # mul(convert(mask), x) a select where the mask is not broadcast: 0 at False even at NaN/inf
    # (funcgrad's eager NumPy gave 0 * NaN = NaN); a broadcast mask keeps IEEE's NaN and -0.0
    jax = pytest.importorskip("jax")
    for mask, x in [
        ([True, False], [np.nan, np.inf]),
        ([True, False], np.float32(np.nan)),
        ([True, False], [[-3.0], [np.inf]]),
        ([[True], [False]], [np.nan, -1.0]),
    ]:
        want = jax.numpy.asarray(mask) * jax.numpy.asarray(x)
        for got in (
            fnp.asarray(mask) * fnp.asarray(x),
            jit(lambda m, v: m * v)(np.array(mask), np.asarray(x)),
        ):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
            assert np.array_equal(np.signbit(got), np.signbit(want))


def test_imag_of_a_traced_real_array_is_staged_not_a_constant():
    # optax's global_norm takes real(x)**2 + imag(x)**2 of every parameter: under jit funcgrad's
    # imag made a parameter-sized constant, one more program input per parameter (JAX's
    # host-offloading guide: 4 of 7168x7168 float32 in the optimizer step's memory_analysis).
    jax = pytest.importorskip("jax")

    def norm(lib, x):
        return lib.numpy.sqrt(lib.numpy.sum(lib.numpy.real(x) ** 2 + lib.numpy.imag(x) ** 2))

    x = np.ones((64, 64), np.float32)
    ours = funcgrad.make_jaxpr(lambda x: norm(funcgrad, x))(x)
    theirs = jax.make_jaxpr(lambda x: norm(jax, x))(x)
    assert len(ours.consts) == len(theirs.consts) == 0
    assert float(funcgrad.jit(lambda x: norm(funcgrad, x))(x)) == float(jax.jit(lambda x: norm(jax, x))(x))


@pytest.mark.parametrize("shape", [(0,), (2, 0), (3,)])
def test_an_empty_where_has_its_first_branchs_tangent_as_jax(shape):
    # JAX's jnp.where returns its first branch for an empty result (no select), so hypot's tangent
    # of an empty array is a zero and nextafter after it is not differentiated (the random-program
    # fuzzer, seed 15001: funcgrad raised 'Differentiation rule for nextafter'); a non-empty one raises
    jax = pytest.importorskip("jax")

    def run(T, np_):
        x = np.ones(shape, np.float32)
        f = lambda a: np_.nextafter(np_.hypot(a, a), a)  # noqa: E731
        try:
            return [v.shape for v in T.jvp(f, (x,), (x,))]
        except NotImplementedError as e:
            return str(e)

    assert run(funcgrad, fnp) == run(jax, jax.numpy)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_division_by_a_broadcast_divisor_rounds_as_jax(dtype):
    # XLA rewrites x / broadcast(y) as x * broadcast(1 / y): jax's x / 3.0 and x / row are a float
    # ulp from the quotient in about a third of the elements; funcgrad's eager step computes it so
    jax = pytest.importorskip("jax")
    from jax._src import config as jax_config

    rng = np.random.default_rng(0)
    x, row = rng.uniform(0.1, 1, (8, 16)).astype(dtype), rng.uniform(1, 3, (1, 16)).astype(dtype)
    with jax_config.enable_x64(dtype == np.float64):
        for f in (lambda n, a: a / 3.0, lambda n, a: n.divide(a, row), lambda n, a: a / n.asarray(a[::-1])):
            want = np.asarray(f(jax.numpy, jax.numpy.asarray(x)))
            np.testing.assert_array_equal(np.asarray(f(fnp, fnp.asarray(x))), want)


def test_logaddexp_reduce_is_jax_s_logsumexp():
    # (session 22's fuzzer) JAX's logaddexp.reduce shifts by the largest finite real part, sums
    # exp, takes log: all -inf (real or complex) is -inf, a +inf is inf, and float32 sums round as
    # its jit does (folded pairwise by logaddexp, a complex -inf was NaN and float32 rows differed)
    import jax
    import jax.numpy as jnp

    x = np.random.default_rng(0).standard_normal((8, 50)).astype(np.float32)
    want = np.asarray(jax.jit(lambda x: jnp.logaddexp.reduce(x, axis=-1))(x))
    got = np.asarray(funcgrad.jit(lambda x: fnp.logaddexp.reduce(x, axis=-1))(x))
    assert got.tobytes() == want.tobytes()
    assert fnp.logaddexp.reduce(np.array([complex(-np.inf, -1)], np.complex64)) == -np.inf
    assert fnp.logaddexp.reduce(np.array([-np.inf, -np.inf])) == -np.inf
    assert fnp.logaddexp2.reduce(np.array([np.inf, 1.0])) == np.inf
