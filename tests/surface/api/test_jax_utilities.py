"""Small JAX names, each against JAX (the oracle) or closed forms: ``lax.empty``, ``lax.dtype``,
``lax.optimization_barrier``, ``lax.reduce_precision`` (bit for bit, eager and compiled),
``nn.tanh``, ``nn.log1mexp``, ``nn.logmeanexp``, the process/host functions, ``funcgrad.Device``,
``dtypes.itemsize_bits`` and ``dtypes.scalar_type_of``."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from _oracle import XLA_DEFAULT_OPTIONS, xla_default_compiles

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import dtypes, lax, nn
from funcgrad.testing import check_grads

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(0)
FORMATS = [(5, 10), (8, 7), (4, 3), (5, 2), (8, 23), (11, 52), (1, 0), (3, 0), (2, 1)]


def _values(dtype):
    scale = 10.0 ** RNG.integers(-45, 40, 300)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 65504.0, 70000.0, 1e-8, 1.5, 2.5, -3.5]
    with np.errstate(over="ignore"):
        return np.concatenate([RNG.standard_normal(300) * scale, special]).astype(dtype)


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    nan = np.isnan(b.astype(np.float64))
    assert np.array_equal(np.isnan(a.astype(np.float64)), nan)
    width = f"u{a.dtype.itemsize}"
    assert np.array_equal(a[~nan].view(width), b[~nan].view(width))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64], ids=str)
def test_reduce_precision_matches_xla_bit_for_bit(dtype):
    x = _values(dtype)
    # XLA's bits are those of its default options, funcgrad's program's too (the tests' cheap ones
    # round some values differently: NOTE: [oracle compile options]).
    xla = jax.jit(jax.lax.reduce_precision, static_argnums=(1, 2), compiler_options=XLA_DEFAULT_OPTIONS)
    with xla_default_compiles():
        for e, m in FORMATS:
            want = xla(x, e, m)
            _same_bits(lax.reduce_precision(x, e, m), want)  # eager: NumPy bit arithmetic
            compiled = funcgrad.jit(lambda v, e=e, m=m: lax.reduce_precision(v, e, m))
            _same_bits(compiled(x), want)  # compiled: stablehlo.reduce_precision


def test_reduce_precision_transformations_and_errors():
    x = RNG.standard_normal(5)
    f = lambda v: fnp.sum(fnp.sin(lax.reduce_precision(v * v, 8, 7)))  # noqa: E731
    np.testing.assert_allclose(
        np.asarray(funcgrad.grad(f)(x)),
        np.asarray(
            jax.grad(lambda v: jax.numpy.sum(jax.numpy.sin(jax.lax.reduce_precision(v * v, 8, 7))))(x)
        ),
    )
    batched = funcgrad.vmap(lambda v: lax.reduce_precision(v, 5, 10))(x.reshape(5, 1))
    np.testing.assert_array_equal(np.asarray(batched).ravel(), x.astype(np.float16).astype(np.float64))
    with pytest.raises(TypeError, match="floating-point"):
        lax.reduce_precision(np.arange(3), 5, 10)
    with pytest.raises(ValueError, match="exponent_bits"):
        lax.reduce_precision(x, 0, 10)
    with pytest.raises(TypeError, match="Python int"):
        lax.reduce_precision(x, 5.0, 10)


def test_optimization_barrier_is_the_identity_on_pytrees_and_transparent_to_derivatives():
    tree = {"a": RNG.standard_normal(3), "b": (np.float32(2.0), np.arange(2))}
    out = lax.optimization_barrier(tree)
    assert funcgrad.tree_util.tree_structure(out) == funcgrad.tree_util.tree_structure(tree)
    for got, want in zip(funcgrad.tree_util.tree_leaves(out), funcgrad.tree_util.tree_leaves(tree)):
        np.testing.assert_array_equal(np.asarray(got), want)
        assert np.asarray(got).dtype == np.asarray(want).dtype
    f = lambda x: fnp.sum(lax.optimization_barrier(fnp.tanh(x)) ** 3)  # noqa: E731
    x = RNG.standard_normal(4)
    check_grads(f, (x,), order=2)
    np.testing.assert_allclose(np.asarray(funcgrad.jit(funcgrad.grad(f))(x)), np.asarray(funcgrad.grad(f)(x)))
    text = funcgrad.jit(f).lower(x).as_text()
    assert "optimization_barrier" in text
    np.testing.assert_allclose(np.asarray(funcgrad.vmap(lambda v: lax.optimization_barrier(v * 2))(x)), 2 * x)


def test_empty_and_dtype():
    e = lax.empty((2, 3), np.int32)
    assert e.shape == (2, 3) and e.dtype == np.int32
    assert lax.empty(4, np.float32).shape == (4,)
    with pytest.raises(TypeError, match="device_put"):
        lax.empty(2, np.float32, out_sharding=funcgrad.sharding.PartitionSpec())
    for value in (
        1.0,
        1,
        True,
        1j,
        np.float32(1),
        np.arange(3, dtype=np.int16),
        fnp.ones(2, np.float32),
        int,
        float,
    ):
        assert lax.dtype(value) == jax.lax.dtype(value), value
    assert lax.dtype(np.dtype("float16")) == np.float16


def test_nn_tanh_log1mexp_logmeanexp_against_jax():
    x = np.array([1e-12, 1e-3, 0.1, 0.69, 0.7, 2.0, 30.0, 700.0])
    np.testing.assert_allclose(np.asarray(nn.log1mexp(x)), np.asarray(jax.nn.log1mexp(x)), rtol=1e-14)
    # The closed form where it is accurate.
    np.testing.assert_allclose(
        np.asarray(nn.log1mexp(np.array([1.0, 2.0]))), np.log(1 - np.exp(-np.array([1.0, 2.0])))
    )
    z = np.array([0.5 + 1j, 2 - 0.3j])  # (session 22's fuzzer: complex input compares as jnp's <)
    np.testing.assert_allclose(np.asarray(nn.log1mexp(z)), np.log(1 - np.exp(-z)), rtol=1e-14)
    np.testing.assert_allclose(
        np.asarray(funcgrad.vmap(funcgrad.grad(nn.log1mexp))(x)), 1 / np.expm1(x), rtol=1e-12
    )
    check_grads(nn.log1mexp, (np.array([0.3, 0.9, 3.0]),), order=2)
    y, w = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4)) > 0
    for kw in (dict(), dict(axis=1), dict(axis=0, keepdims=True), dict(axis=1, where=w)):
        np.testing.assert_allclose(
            np.asarray(nn.logmeanexp(y, **kw)), np.asarray(jax.nn.logmeanexp(y, **kw)), rtol=1e-13
        )
    np.testing.assert_allclose(float(nn.logmeanexp(np.array([1000.0, 1000.0]))), 1000.0)
    check_grads(lambda v: nn.logmeanexp(v, axis=1), (y,), order=2)
    np.testing.assert_allclose(np.asarray(nn.tanh(y)), np.tanh(y))


def test_process_functions_device_class_and_dtype_utilities():
    assert funcgrad.process_indices() == [0] == funcgrad.host_ids()
    assert funcgrad.host_id() == funcgrad.process_index() == 0
    assert funcgrad.host_count() == funcgrad.process_count() == 1
    assert all(isinstance(d, funcgrad.Device) for d in funcgrad.devices())
    for t in (np.float32, np.bool_, np.int8, ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.bfloat16,
              ml_dtypes.float8_e4m3fn, ml_dtypes.float4_e2m1fn, np.complex64, ml_dtypes.int2):  # fmt: skip
        assert dtypes.itemsize_bits(t) == jax.dtypes.itemsize_bits(t), t
    for v in (
        np.float32(1),
        np.array([1, 2]),
        True,
        1.0,
        3,
        1j,
        np.array(1, ml_dtypes.bfloat16),
        fnp.ones(2),
    ):
        assert dtypes.scalar_type_of(v) is jax.dtypes.scalar_type_of(np.asarray(v)), v


def test_creation_functions_honour_device():
    device = funcgrad.devices()[0]
    for make in (
        lambda **kw: fnp.zeros((2, 3), **kw),
        lambda **kw: fnp.ones(3, np.float32, **kw),
        lambda **kw: fnp.empty(2, **kw),
        lambda **kw: fnp.full(2, 7.0, **kw),
        lambda **kw: fnp.zeros_like(np.ones(2), **kw),
        lambda **kw: fnp.full_like(np.ones(2), 3, **kw),
        lambda **kw: fnp.arange(4, **kw),
        lambda **kw: fnp.linspace(0.0, 1.0, 5, **kw),
        lambda **kw: fnp.eye(2, **kw),
        lambda **kw: fnp.asarray([1.0, 2.0], **kw),
        lambda **kw: fnp.array(np.ones((2, 2), np.int32), **kw),
        lambda **kw: fnp.astype(np.arange(3), np.float32, **kw),
        lambda **kw: fnp.ones(3).astype(np.int8, **kw),
        lambda **kw: fnp.fft.fftfreq(4, **kw),
        lambda **kw: fnp.fft.rfftfreq(4, **kw),
    ):
        host, placed = make(), make(device=device)
        np.testing.assert_array_equal(np.asarray(placed), np.asarray(host))
        assert placed.dtype == host.dtype and placed.device == device
        assert placed._buffer is not None  # on the device, not a host value
    with pytest.raises(ValueError, match="device"):
        fnp.zeros(2, device="not a device")
    x = fnp.ones(3)
    assert fnp.astype(x, x.dtype, copy=True) is not x and fnp.astype(x, x.dtype) is x
    # Inside jit, one device is the only place a traced value can be.
    out = funcgrad.jit(lambda x: fnp.asarray(x, device=device) * 2)(np.ones(2))
    np.testing.assert_array_equal(np.asarray(out), 2 * np.ones(2))


# ----------------------------------------------------------------------------------------------
# Further small names (added with the external suites)


def test_log1mexp_matches_jax_and_is_accurate_at_both_ends():
    x = np.array([1e-300, 1e-20, 1e-5, 0.3, np.log(2.0) - 1e-12, np.log(2.0), 0.7, 5.0, 50.0, 700.0])
    np.testing.assert_allclose(nn.log1mexp(x), jax.nn.log1mexp(x), rtol=1e-14)
    np.testing.assert_allclose(nn.log1mexp(50.0), -np.exp(-50.0), rtol=1e-14)  # log(1 - e) ~ -e
    assert np.isnan(nn.log1mexp(-1.0)) and nn.log1mexp(0.0) == -np.inf
    g = funcgrad.vmap(funcgrad.grad(nn.log1mexp))(x[1:])
    np.testing.assert_allclose(g, 1.0 / np.expm1(x[1:]), rtol=1e-12)  # d/dx log(1 - e^-x)


@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), ((0, 1), True), (-1, True)])
def test_logmeanexp_matches_jax(axis, keepdims):
    a = np.random.default_rng(0).normal(size=(3, 4)) * 300
    np.testing.assert_allclose(
        nn.logmeanexp(a, axis=axis, keepdims=keepdims),
        jax.nn.logmeanexp(a, axis=axis, keepdims=keepdims),
        rtol=1e-13,
    )
    w = a > 0
    np.testing.assert_allclose(
        nn.logmeanexp(a, axis=axis, where=w, keepdims=keepdims),
        jax.nn.logmeanexp(a, axis=axis, where=w, keepdims=keepdims),
        rtol=1e-13,
    )
    g = funcgrad.grad(lambda a: fnp.sum(nn.logmeanexp(a, axis=1)))(a / 300)
    np.testing.assert_allclose(g, jax.grad(lambda a: jax.numpy.sum(jax.nn.logmeanexp(a, axis=1)))(a / 300))


def test_nn_tanh_is_numpy_tanh():
    np.testing.assert_allclose(nn.tanh(np.array([-1.0, 0.5])), np.tanh([-1.0, 0.5]))


@pytest.mark.parametrize(
    "dtype",
    ["bool", "int4", "uint4", "int8", "float8_e4m3fn", "bfloat16", "float4_e2m1fn", "float32", "complex128"],
)
def test_itemsize_bits(dtype):
    assert dtypes.itemsize_bits(dtype) == jax.dtypes.itemsize_bits(dtype)


@pytest.mark.parametrize("x", [True, 1, 1.0, 1j, np.uint8(3), np.ones(2, np.float32), np.ones(2, "bfloat16")])
def test_scalar_type_of(x):
    assert dtypes.scalar_type_of(x) is jax.dtypes.scalar_type_of(x)


def test_process_and_host_names():
    assert funcgrad.process_indices() == funcgrad.host_ids() == list(range(funcgrad.process_count()))
    assert (
        funcgrad.host_count() == funcgrad.process_count() and funcgrad.host_id() == funcgrad.process_index()
    )
    assert all(isinstance(d, funcgrad.Device) for d in funcgrad.devices())


def test_shard_and_copy_to_host_async():
    x = fnp.arange(6.0).reshape(2, 3)
    (shard,) = x.addressable_shards
    assert isinstance(shard, funcgrad.Shard) and shard.data.shape == (2, 3)
    tree = {"x": x, "n": 3}
    assert funcgrad.copy_to_host_async(tree) is tree
    # (api_test test_copy_to_host_async_*: as JAX's, any leaf's own method is called, and an
    # AttributeError it raises is not taken for a missing method)
    import unittest.mock

    jax = pytest.importorskip("jax")
    for lib in (jax, funcgrad):
        leaf = unittest.mock.Mock()
        lib.copy_to_host_async([leaf, 1.0])
        leaf.copy_to_host_async.assert_called_once_with()
        leaf.copy_to_host_async.side_effect = AttributeError("foo")
        with pytest.raises(AttributeError, match="foo"):
            lib.copy_to_host_async(leaf)


def test_jitted_eval_shape_carries_the_asked_out_shardings():
    # api_test test_eval_shape_out_shardings: jit(f, out_shardings=s).eval_shape gives each output
    # the sharding asked for (None without out_shardings), as jax's
    jax = pytest.importorskip("jax")
    for lib in (jax, funcgrad):
        s = lib.sharding.SingleDeviceSharding(lib.devices()[0])
        outs = lib.jit(lambda x: (x * 2, x[:2]), out_shardings=s).eval_shape(np.arange(8))
        assert [o.sharding for o in outs] == [s, s] and outs[1].shape == (2,)
        assert lib.jit(lambda x: x * 2).eval_shape(np.arange(8)).sharding is None


def test_jit_inline_puts_the_equations_into_the_enclosing_jaxpr():
    # api_test test_jit_inline: jit(inline=True) called inside a trace leaves no jit equation (the
    # default keeps one), with the same values under jit, grad and vmap, as jax's
    jax = pytest.importorskip("jax")
    for lib in (jax, funcgrad):
        f, g = lib.jit(lambda x: x * 2, inline=True), lib.jit(lambda x: x * 2)

        def prims(h, lib=lib):
            return [str(e.primitive) for e in lib.make_jaxpr(lambda x: h(x) + 1)(3).eqns]

        assert prims(f) == ["mul", "add"] and prims(g) == ["jit", "add"]
        assert int(lib.jit(lambda x, f=f: f(x) + 1)(3)) == 7
        assert float(lib.grad(lambda x, f=f: f(x) * x)(3.0)) == 12.0
        assert lib.vmap(f)(np.arange(3)).tolist() == [0, 2, 4]


def test_jit_repr_when_the_function_repr_fails_as_jax():
    # api_test test_jit_repr_errors
    class Callable:
        def __call__(self):
            pass

        def __repr__(self):
            raise ValueError("invalid repr")

    jax = pytest.importorskip("jax")
    assert repr(jax.jit(Callable())) == repr(funcgrad.jit(Callable())) == "<PjitFunction>"
