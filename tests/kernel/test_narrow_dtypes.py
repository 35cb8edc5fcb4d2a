"""The narrow types of ml_dtypes (int4, uint4, int2, uint2, the float8 variants, float4_e2m1fn) as
JAX has them: device round trips bit for bit, a table of operations eager and under jit against
NumPy computed in a wide type and cast back (the closed form: XLA computes narrow types in a wider
one and rounds), NEP 50 weak scalars, bit operations on the true bit width, and the operations
XLA's CPU backend mishandles on sub-byte types (concatenate of 2-bit integers aborts the process,
sub-byte dots with a wider result, sorts and arg-reductions fail), which the lowering widens."""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax

# every operation on every narrow dtype is compiled by XLA: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

NARROW_INTS = ["int4", "uint4", "int2", "uint2"]
NARROW_FLOATS = [
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e4m3b11fnuz",
    "float8_e3m4",
    "float8_e4m3",
    "float4_e2m1fn",
    "bfloat16",
]
ALL = NARROW_INTS + NARROW_FLOATS


def _dt(name):
    return np.dtype(getattr(ml_dtypes, name))


def _values(name, rng, n=12):
    """Values every narrow type holds exactly (small integers, for the floats halves too)."""
    dt = _dt(name)
    if name in NARROW_INTS:
        info = ml_dtypes.iinfo(dt)
        return rng.integers(int(info.min), int(info.max) + 1, n).astype(dt)
    return (rng.integers(-6, 7, n) / 2).astype(np.float32).astype(dt)


def _wide(name):
    return np.int64 if name in NARROW_INTS else np.float32


@pytest.mark.parametrize("name", ALL + ["float8_e8m0fnu"])
def test_device_round_trip_is_bit_exact(name):
    dt = _dt(name)
    bits = np.arange(256, dtype=np.uint8)
    if name in NARROW_INTS:
        x = np.arange(int(ml_dtypes.iinfo(dt).min), int(ml_dtypes.iinfo(dt).max) + 1).astype(dt)
    elif dt.itemsize == 1 and name != "float4_e2m1fn":
        x = bits.view(dt)  # every bit pattern, NaNs included
    else:
        x = np.linspace(-6, 6, 25).astype(dt)
    y = funcgrad.jit(lambda a: a)(x)  # through an executable: a device buffer read back
    assert y.dtype == dt
    out = np.asarray(y)
    assert out.dtype == dt
    if dt.itemsize == 1:
        out, x = out.view(np.uint8), x.view(np.uint8)  # bit patterns (NaN == NaN)
    np.testing.assert_array_equal(out, x)


# name -> (funcgrad op, NumPy reference on the wide values); the reference result is cast back.
BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "subtract": (lambda a, b: a - b, np.subtract),
    "multiply": (lambda a, b: a * b, np.multiply),
    "maximum": (fnp.maximum, np.maximum),
    "minimum": (fnp.minimum, np.minimum),
    "where": (lambda a, b: fnp.where(a > b, a, b), lambda a, b: np.where(a > b, a, b)),
    "concatenate": (lambda a, b: fnp.concatenate([a, b]), lambda a, b: np.concatenate([a, b])),
}
UNARY = {
    "negative": (lambda a: -a, np.negative),
    "sort": (fnp.sort, np.sort),
    "reverse": (lambda a: a[::-1], lambda a: a[::-1]),
    "gather": (lambda a: a[np.array([3, 0, 0, 5])], lambda a: a[np.array([3, 0, 0, 5])]),
    "pad": (lambda a: fnp.pad(a, 2), lambda a: np.pad(a, 2)),
    "scatter": (lambda a: a.at[1].set(a[4]), lambda a: np.concatenate([a[:1], a[4:5], a[2:]])),
    "max": (fnp.max, np.max),
    "cummax": (lambda a: lax.cummax(a), np.maximum.accumulate),
}
TO_WIDE = {  # results in another (wide) dtype: compared as they are
    "argmax": (fnp.argmax, np.argmax),
    "argsort": (lambda a: fnp.argsort(a, stable=True), lambda a: np.argsort(a, kind="stable")),
    "less": (lambda a: a < a[::-1], lambda a: a < a[::-1]),
    "dot_f32": (
        lambda a: lax.dot(a, a, preferred_element_type=np.float32),
        lambda a: np.float32(np.dot(a.astype(np.float64), a.astype(np.float64))),
    ),
}


def _wrap(name, ref):
    """The NumPy reference in the wide type, cast back to the narrow one (integers wrap around,
    floats round to nearest)."""
    dt = _dt(name)

    def run(*xs):
        out = ref(*[x.astype(_wide(name)) for x in xs])
        return np.asarray(out).astype(dt) if np.asarray(out).dtype.kind in "iuf" else np.asarray(out)

    return run


# Each family's inputs for a type (the same for every op of the family).
_INPUTS = {
    "binary": lambda name: (lambda rng: (_values(name, rng), _values(name, rng)))(np.random.default_rng(0)),
    "unary": lambda name: (_values(name, np.random.default_rng(1)),),
    "wide": lambda name: (_values(name, np.random.default_rng(2)),),
}
_TABLES = {"binary": BINARY, "unary": UNARY, "wide": TO_WIDE}


@functools.cache
def _jitted(family, name):
    """``{op: funcgrad.jit's result}`` for every op of a family on its inputs for type ``name``, from
    one program per family and type (a jit per op and type compiled 13 x 19 programs); ``None``
    where that program fails (each op then compiles alone, so the failure names its op)."""
    ops = _TABLES[family]
    try:
        outs = funcgrad.jit(lambda *xs: [f(*xs) for f, _ in ops.values()])(*_INPUTS[family](name))
    except Exception:  # noqa: BLE001 - the op's own program says which and why
        return None
    return dict(zip(ops, outs))


def _jit_result(family, name, op, *xs):
    results = _jitted(family, name)
    f = _TABLES[family][op][0]
    return results[op] if results is not None else funcgrad.jit(lambda *a: f(*a))(*xs)


def _check(name, f, ref, *xs, jitted=None):
    """Eager and jitted (``jitted``: a result of ``_jitted``'s, else a fresh jit per type)."""
    dt = _dt(name)
    expected = ref(*xs)
    arrays = [fnp.asarray(x) for x in xs]  # (NumPy arrays would meet NumPy's own operators)
    if jitted is None:
        jitted = funcgrad.jit(lambda *a: f(*a))(*xs)
    for got in (f(*arrays), jitted):
        got = np.asarray(got)
        assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
        np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64), err_msg=f"{name}")
    return dt


@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("name", ALL)
def test_binary_ops_eager_and_jit_match_numpy(name, op):
    f, ref = BINARY[op]
    a, b = _INPUTS["binary"](name)
    _check(name, f, _wrap(name, ref), a, b, jitted=_jit_result("binary", name, op, a, b))


@pytest.mark.parametrize("op", list(UNARY))
@pytest.mark.parametrize("name", ALL)
def test_unary_ops_eager_and_jit_match_numpy(name, op):
    f, ref = UNARY[op]
    (x,) = _INPUTS["unary"](name)
    _check(name, f, _wrap(name, ref), x, jitted=_jit_result("unary", name, op, x))


@pytest.mark.parametrize("op", list(TO_WIDE))
@pytest.mark.parametrize("name", ALL)
def test_ops_with_wide_results_match_numpy(name, op):
    f, ref = TO_WIDE[op]
    (x,) = _INPUTS["wide"](name)
    expected = np.asarray(ref(x.astype(_wide(name))))
    for got in (f(fnp.asarray(x)), _jit_result("wide", name, op, x)):
        np.testing.assert_array_equal(np.asarray(got), expected.astype(np.asarray(got).dtype))


@pytest.mark.parametrize("name", NARROW_INTS)
def test_integer_division_and_remainder_follow_numpy(name):
    rng = np.random.default_rng(3)
    a = _values(name, rng)
    b = np.where(a.astype(np.int64) == 0, 1, a.astype(np.int64)).astype(_dt(name))
    b = np.where(b.astype(np.int64) == -1, 1, b.astype(np.int64)).astype(_dt(name))  # no MIN // -1
    _check(name, lambda x, y: x // y, _wrap(name, np.floor_divide), a, b)
    _check(name, lambda x, y: x % y, _wrap(name, np.remainder), a, b)


@pytest.mark.parametrize("name", ["float4_e2m1fn", "float8_e4m3fn", "bfloat16"])
def test_float_remainder_has_the_divisor_sign(name):
    x = np.array([1.0, -2, 3, -1, 0, 1]).astype(_dt(name))
    y = np.array([2.0, 3, -2, 2, -1, 1.5]).astype(_dt(name))
    expected = np.remainder(x.astype(np.float32), y.astype(np.float32)).astype(_dt(name))
    got = np.asarray(funcgrad.jit(lambda a, b: a % b)(x, y))
    np.testing.assert_array_equal(got.astype(np.float32), expected.astype(np.float32))
    assert list(np.signbit(got.astype(np.float32))) == list(np.signbit(expected.astype(np.float32)))


@pytest.mark.parametrize("name", ALL)
def test_weak_python_scalars_keep_the_narrow_dtype(name):
    # NEP 50, as JAX: a Python scalar of the array's category (or lower) takes its dtype.
    dt = _dt(name)
    x = fnp.asarray(np.ones(3, dt))
    assert (x + 1).dtype == dt
    assert (2 * x).dtype == dt
    if name in NARROW_FLOATS:
        assert (x * 0.5).dtype == dt
        assert (x * 1j).dtype == np.complex64
    else:
        assert (x * 0.5).dtype == np.float64  # a float scalar meets an integer array
    assert fnp.result_type(x, 1) == dt


@pytest.mark.parametrize("name", NARROW_INTS)
def test_bit_counts_use_the_true_width(name):
    dt = _dt(name)
    info = ml_dtypes.iinfo(dt)
    x = np.arange(int(info.min), int(info.max) + 1).astype(dt)
    bits = info.bits
    patterns = x.astype(np.int64) & ((1 << bits) - 1)
    pop = np.array([bin(int(p)).count("1") for p in patterns]).astype(dt)
    lead = np.array([bits - int(p).bit_length() for p in patterns]).astype(dt)
    for f, ref in ((lax.population_count, pop), (lax.clz, lead)):
        jitted = funcgrad.jit(lambda a, f=f: f(a))
        for got in (f(x), jitted(x)):
            np.testing.assert_array_equal(np.asarray(got).astype(np.int64), ref.astype(np.int64))


def test_bitcast_float4_to_uint4_is_its_bit_pattern():
    x = np.array([0.5, -1.0, 6.0, -0.0, 3.0], ml_dtypes.float4_e2m1fn)
    got = funcgrad.jit(lambda a: lax.bitcast_convert_type(a, fnp.uint4))(x)
    assert got.dtype == _dt("uint4")
    np.testing.assert_array_equal(np.asarray(got).astype(np.int64), x.view(np.uint8).astype(np.int64) & 0xF)
    with pytest.raises(TypeError, match="last dimension"):
        lax.bitcast_convert_type(x, np.uint8)  # 4 bits into 8: the NumPy itemsize is not the width


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float4_e2m1fn", "bfloat16"])
def test_grad_through_narrow_floats(name):
    dt = _dt(name)
    x = np.array([1.0, -2.0, 0.5]).astype(dt)
    g = funcgrad.grad(lambda a: fnp.sum(a * a).astype(np.float32))(x)
    assert g.dtype == dt
    np.testing.assert_array_equal(
        np.asarray(g).astype(np.float32), (2 * x.astype(np.float32)).astype(dt).astype(np.float32)
    )


def test_narrow_integer_kinds_are_integers_everywhere():
    x = fnp.asarray(np.array([1, 2], ml_dtypes.int4))
    assert fnp.issubdtype(x.dtype, fnp.signedinteger)
    assert np.asarray(x & x).tolist() == [1, 2]
    with pytest.raises(TypeError, match="integer"):
        fnp.bitwise_and(np.ones(2, ml_dtypes.float8_e4m3fn), np.ones(2, ml_dtypes.float8_e4m3fn))


# ----------------------------------------------------------------------------------------------
# bfloat16 and float16 (mixed precision): results keep the half type, sums accumulate in float32,
# promotion follows JAX's lattice where NumPy has none, random samples are JAX's.

BF16 = _dt("bfloat16")


@pytest.mark.parametrize(
    "name, f",
    [
        ("matmul", lambda a, b: a @ b),
        ("einsum", lambda a, b: fnp.einsum("ij,jk->ik", a, b)),
        ("dot_general", lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())))),
        ("conv", lambda a, b: lax.conv(a[None, None], b.T[None, None, :, :2], (1, 1), "SAME")[0, 0]),
        ("erf", lambda a, b: funcgrad.scipy.special.erf(a)),
    ],
)
def test_bfloat16_operations_return_bfloat16(name, f):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 8)).astype(BF16)
    b = rng.standard_normal((8, 3)).astype(BF16)
    eager, jitted = f(fnp.asarray(a), fnp.asarray(b)), funcgrad.jit(f)(a, b)
    assert eager.dtype == BF16 and jitted.dtype == BF16, (eager.dtype, jitted.dtype)
    reference = np.asarray(f(fnp.asarray(a).astype(np.float32), fnp.asarray(b).astype(np.float32)))
    for got in (eager, jitted):  # within bfloat16's rounding of the float32 result
        np.testing.assert_allclose(np.asarray(got).astype(np.float32), reference, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("half", [np.float16, ml_dtypes.bfloat16])
def test_half_precision_reductions_accumulate_in_float32(half):
    # 0.1 added 2000 times: a half-precision running sum stalls far below 200 (its spacing
    # there exceeds 0.1); summed in float32 and rounded once, it is the exact sum, rounded.
    x = np.full(2000, 0.1, half)
    exact = np.float64(x.astype(np.float64).sum())
    for f, ref in ((fnp.sum, exact), (fnp.mean, exact / 2000)):
        for got in (f(fnp.asarray(x)), funcgrad.jit(f)(x)):
            assert got.dtype == np.dtype(half)
            assert float(got) == float(np.array(ref).astype(half)), (f.__name__, float(got))
    assert float(fnp.var(fnp.asarray(x))) == 0.0


def test_promotion_follows_jax_where_numpy_has_no_rule():
    f8, i4 = _dt("float8_e4m3fn"), _dt("int4")
    assert fnp.promote_types(BF16, np.int32) == BF16
    assert fnp.promote_types(np.uint8, BF16) == BF16
    assert fnp.promote_types(BF16, np.float16) == np.float32
    assert fnp.promote_types(f8, np.int64) == f8
    assert fnp.promote_types(i4, np.bool_) == i4
    assert (fnp.ones(2, BF16) + fnp.ones(2, np.int32)).dtype == BF16
    assert (fnp.ones(2, BF16) + fnp.ones(2, np.float16)).dtype == np.float32
    with pytest.raises(TypeError, match="no implicit dtype promotion"):
        fnp.ones(2, f8) + fnp.ones(2, BF16)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float8_e4m3fn"])
def test_random_samples_of_narrow_floats_are_jaxs(dtype):
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    dt = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    for ours, theirs in (
        (funcgrad.random.uniform, jax.random.uniform),
        (funcgrad.random.normal, jax.random.normal),
    ):
        got = np.asarray(ours(funcgrad.random.PRNGKey(3), (64,), dtype=dt))
        want = np.asarray(theirs(jax.random.PRNGKey(3), (64,), dtype=dt))
        assert got.dtype == dt
        np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_eager_grad_through_a_bfloat16_matmul():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((4, 8)).astype(BF16), rng.standard_normal((8, 3)).astype(BF16)

    def loss(a):
        return fnp.sum(fnp.tanh(a @ w)).astype(np.float32)

    # The second eager call runs the cached program (NOTE: [narrow dtypes on the host]).
    g, again, gj = funcgrad.grad(loss)(x), funcgrad.grad(loss)(x), funcgrad.jit(funcgrad.grad(loss))(x)
    assert g.dtype == BF16 and again.dtype == BF16 and gj.dtype == BF16
    np.testing.assert_array_equal(np.asarray(again).astype(np.float32), np.asarray(g).astype(np.float32))
    t = np.tanh(x.astype(np.float32) @ w.astype(np.float32))
    expected = (1 - t**2) @ w.astype(np.float32).T
    for got in (g, gj):
        np.testing.assert_allclose(np.asarray(got).astype(np.float32), expected, rtol=5e-2, atol=5e-2)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_percentile_of_a_python_number_keeps_the_array_dtype(dtype):
    x = np.arange(5.0).astype(dtype)
    got = fnp.percentile(fnp.asarray(x), 30)
    assert got.dtype == np.dtype(dtype)  # NumPy: a Python q is weak
    assert float(got) == float(np.array(np.percentile(x.astype(np.float64), 30)).astype(dtype))


def test_frexp_and_ldexp_of_bfloat16_stay_bfloat16_and_exact():
    x = np.array([3.0, 0.375, -12.0, 0.0, 2.0**-120], BF16)
    m, e = fnp.frexp(fnp.asarray(x))
    assert m.dtype == BF16 and e.dtype == np.int32
    ref_m, ref_e = np.frexp(x.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(m).astype(np.float32), ref_m)
    np.testing.assert_array_equal(np.asarray(e), ref_e)
    back = fnp.ldexp(m, e)
    assert back.dtype == BF16
    np.testing.assert_array_equal(np.asarray(back).astype(np.float32), x.astype(np.float32))


@pytest.mark.parametrize(
    "target", ["int4", "uint4", "int2", "int8", "uint8", "int32", "uint32", "int64", "uint64"]
)
@pytest.mark.parametrize("source", [np.float32, np.float64, ml_dtypes.bfloat16])
def test_float_to_integer_conversion_is_xlas_eagerly_too(source, target):
    # Truncation toward zero, saturation at the limits, NaN -> 0: what XLA computes under jit
    # (NumPy's cast of these is undefined; it wrapped 300.0 to 44 as an int8).
    dt = np.dtype(getattr(ml_dtypes, target, None) or target)
    info = ml_dtypes.iinfo(dt)
    x = np.array([7.6, -8.7, 9.0, -20.0, 300.0, np.nan, np.inf, -np.inf, -0.5, 1e30]).astype(source)
    wide = x.astype(np.float64)
    expected = np.where(np.isnan(wide), 0, np.clip(np.trunc(wide), float(info.min), float(info.max)))
    eager = fnp.asarray(x).astype(dt)
    jitted = funcgrad.jit(lambda a: a.astype(dt))(x)
    for got in (eager, jitted):
        assert got.dtype == dt
        np.testing.assert_array_equal(np.asarray(got).astype(np.float64), expected)


def test_repeated_eager_grads_through_narrow_integers_compute_as_xla():
    # uint4 negation wraps around (NumPy through ml_dtypes gives int8), in every eager call (the
    # uint4 values carry no derivative: they are computed at once, through EvalTrace).
    def f(a):
        return fnp.sum((-a.astype(ml_dtypes.uint4)).astype(np.float32) * a)

    x = np.array([1.0, 2.0, 3.0])
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(funcgrad.grad(f)(x)), [15.0, 14.0, 13.0])
