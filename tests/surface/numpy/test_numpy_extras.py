"""funcgrad.numpy's histograms in several dimensions, narrow scalar types, host I/O and printing,
``ufunc``/``frompyfunc`` objects and ``vectorize(signature=...)``, against NumPy (and JAX where
funcgrad follows JAX rather than NumPy)."""

from __future__ import annotations

import functools
import io

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.core import ConcretizationTypeError

RNG = np.random.default_rng(0)
SAMPLE = RNG.normal(size=(60, 3))
WEIGHTS = RNG.random(60)


def _close(got, want):
    if isinstance(want, tuple | list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
    else:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want, dtype=float), rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------------------------
# Histograms


@pytest.mark.parametrize(
    "kwargs",
    [
        {"bins": 4},
        {"bins": [2, 3, 4]},
        {"bins": 3, "range": [(-1, 1), (-2, 2), (0, 1)]},
        {"bins": 3, "weights": WEIGHTS},
        {"bins": 3, "density": True},
        {"bins": [np.array([-3.0, 0.0, 3.0]), 2, np.linspace(-1, 1, 5)]},
    ],
)
def test_histogramdd_matches_numpy(kwargs):
    _close(fnp.histogramdd(SAMPLE, **kwargs), np.histogramdd(SAMPLE, **kwargs))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"bins": 5},
        {"bins": [3, 4]},
        {"bins": [-2.0, -1.0, 0.0, 1.0, 2.0]},
        {"bins": 4, "density": True, "weights": WEIGHTS},
        {"bins": (np.array([-3.0, 0.0, 3.0]), 3)},
    ],
)
def test_histogram2d_matches_numpy(kwargs):
    x, y = SAMPLE[:, 0], SAMPLE[:, 1]
    _close(fnp.histogram2d(x, y, **kwargs), np.histogram2d(x, y, **kwargs))


@pytest.mark.parametrize(
    "kwargs",
    [{"bins": 7}, {"bins": "auto"}, {"bins": "fd"}, {"bins": 3, "range": (0, 1)}, {"bins": [0, 1, 5.0]}],
)
def test_histogram_bin_edges_matches_numpy(kwargs):
    x = SAMPLE[:, 0]
    _close(fnp.histogram_bin_edges(x, **kwargs), np.histogram_bin_edges(x, **kwargs))
    _close(fnp.histogram_bin_edges(np.array([3, 3]), 2), np.histogram_bin_edges(np.array([3, 3]), 2))


def test_histograms_trace_and_differentiate_in_the_weights():
    x, y = SAMPLE[:, 0], SAMPLE[:, 1]
    _close(funcgrad.jit(lambda x: fnp.histogram_bin_edges(x, 4))(x), np.histogram_bin_edges(x, 4))
    _close(funcgrad.jit(lambda x, y: fnp.histogram2d(x, y, 3)[0])(x, y), np.histogram2d(x, y, 3)[0])
    g = funcgrad.grad(lambda w: fnp.histogram2d(x, y, 3, weights=w)[0][1, 1])(WEIGHTS)
    h, xe, ye = np.histogram2d(x, y, 3)
    inside = (np.searchsorted(xe, x, "right") == 2) & (np.searchsorted(ye, y, "right") == 2)
    np.testing.assert_array_equal(np.asarray(g), inside.astype(float))
    with pytest.raises(ConcretizationTypeError):
        funcgrad.jit(lambda x: fnp.histogram_bin_edges(x, "auto"))(x)
    with pytest.raises(ValueError, match="not finite"):
        fnp.histogram_bin_edges(np.array([1.0, np.nan]), 3)


# ----------------------------------------------------------------------------------------------
# Scalar types


NARROW = ["int1", "int2", "int4", "uint1", "uint2", "uint4", "float4_e2m1fn", "float6_e2m3fn",
          "float6_e3m2fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
          "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"]  # fmt: skip


@pytest.mark.parametrize("name", NARROW)
def test_narrow_scalar_types_like_jax(name):
    jnp = pytest.importorskip("jax.numpy")
    ours, theirs = getattr(fnp, name), getattr(jnp, name)
    assert np.dtype(ours.dtype) == np.dtype(theirs.dtype)
    assert fnp.asarray(ours(1)).dtype == np.dtype(theirs.dtype)
    for abstract in (
        "floating",
        "integer",
        "signedinteger",
        "unsignedinteger",
        "inexact",
        "number",
        "generic",
    ):
        assert fnp.issubdtype(ours, getattr(fnp, abstract)) == jnp.issubdtype(
            theirs, getattr(jnp, abstract)
        ), (
            name,
            abstract,
        )
    limits = fnp.finfo if "float" in name else fnp.iinfo
    jlimits = jnp.finfo if "float" in name else jnp.iinfo
    assert float(limits(ours).max) == float(jlimits(theirs).max)


def test_default_aliases_and_numpy_types():
    assert fnp.bool is fnp.bool_ and fnp.bool(1).dtype == np.bool_
    assert fnp.uint(3).dtype == np.uint64
    assert fnp.object_ is np.object_ and fnp.character is np.character and fnp.flexible is np.flexible
    assert fnp.ComplexWarning is np.exceptions.ComplexWarning
    assert fnp.zeros(3, fnp.int4).dtype == fnp.int4.dtype
    # Compiled programs take the 8-bit floats XLA's CPU backend stores.
    x = fnp.asarray(np.array([1.0, 2.0], fnp.float8_e4m3fn.dtype))
    assert funcgrad.jit(lambda a: a)(x).dtype == fnp.float8_e4m3fn.dtype


# ----------------------------------------------------------------------------------------------
# Host I/O and printing


def test_save_load_and_buffers(tmp_path):
    x = fnp.arange(6.0).reshape(2, 3)
    buf = io.BytesIO()
    fnp.save(buf, x)
    buf.seek(0)
    loaded = fnp.load(buf)
    assert isinstance(loaded, funcgrad.Array) and loaded.tolist() == x.tolist()
    fnp.savez(tmp_path / "a.npz", x=x)
    assert fnp.asarray(fnp.load(tmp_path / "a.npz")["x"]).tolist() == x.tolist()
    np.arange(4, dtype=np.int16).tofile(tmp_path / "b.bin")
    assert fnp.fromfile(tmp_path / "b.bin", dtype=np.int16).tolist() == [0, 1, 2, 3]
    assert fnp.frombuffer(np.arange(3.0).tobytes()).tolist() == [0.0, 1.0, 2.0]
    assert fnp.fromstring("1 2 3", dtype=int, sep=" ").tolist() == [1, 2, 3]
    assert fnp.fromiter(iter([1.5, 2.5]), dtype=float).tolist() == [1.5, 2.5]
    assert fnp.from_dlpack(np.arange(3)).tolist() == [0, 1, 2]
    assert fnp.from_dlpack(x).tolist() == x.tolist()
    with pytest.raises(ValueError, match="copy=False"):
        fnp.from_dlpack(x, copy=False)
    with pytest.raises(ValueError, match="frombuffer"):
        fnp.fromstring("abc", sep="")
    assert fnp.iterable([1]) and not fnp.iterable(1)


def test_printing_follows_numpy_print_options():
    x = fnp.array([1 / 3, 2 / 3])
    with fnp.printoptions(precision=2):
        assert str(x) == "[0.33 0.67]" and fnp.array_str(x) == "[0.33 0.67]"
        assert fnp.get_printoptions()["precision"] == 2
    assert fnp.array_repr(fnp.arange(2)) == np.array_repr(np.arange(2)).replace("array", "Array")


# ----------------------------------------------------------------------------------------------
# ufunc objects


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
    _close(ours.reduceat(x, [0, 2, 1], axis=1), theirs.reduceat(x, [0, 2, 1], axis=1))
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


# ----------------------------------------------------------------------------------------------
# vectorize with a signature


@pytest.mark.parametrize(
    "signature, fn, shapes",
    [
        ("(n,n),(n)->(n)", lambda m, v: m @ v, [(4, 3, 3), (3,)]),
        ("(n),(n)->()", lambda u, v: (u * v).sum(), [(2, 1, 5), (3, 5)]),
        ("(k)->(),()", lambda x: (x.min(), x.max()), [(4, 6)]),
        ("()->(m)", lambda s: s * np.arange(3.0), [(2, 2)]),
    ],
)
def test_vectorize_signature_matches_numpy(signature, fn, shapes):
    args = [RNG.normal(size=s) for s in shapes]
    got = fnp.vectorize(fn, signature=signature)(*args)
    want = np.vectorize(fn, signature=signature)(*args)
    _close(got, want)
    _close(funcgrad.jit(fnp.vectorize(fn, signature=signature))(*args), want)


def test_vectorize_checks_core_dimensions_and_excludes():
    f = fnp.vectorize(lambda m, v: m @ v, signature="(n,n),(n)->(n)")
    with pytest.raises(ValueError, match="inconsistent size for core dimension 'n'"):
        f(np.ones((2, 3, 3)), np.ones(4))
    with pytest.raises(ValueError, match="core dimensions"):
        f(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="output 0"):
        fnp.vectorize(lambda x: x[:2], signature="(n)->(n)")(np.ones((2, 3)))
    with pytest.raises(ValueError, match="not a valid gufunc signature"):
        fnp.vectorize(lambda x: x, signature="(n)->(m")
    scaled = fnp.vectorize(lambda x, s, scale=1.0: x * len(s) * scale, excluded={1})
    assert scaled(np.arange(3.0), "ab", scale=np.array([[1.0], [2.0]])).tolist() == [[0, 2, 4], [0, 4, 8]]
    g = funcgrad.grad(lambda v: fnp.sum(f(np.eye(3)[None].repeat(2, 0), v)))(np.ones(3))
    assert g.tolist() == [2.0, 2.0, 2.0]


# ----------------------------------------------------------------------------------------------
# einsum's interleaved form and the Array API hooks


def test_einsum_interleaved_form_matches_numpy():
    a, b = RNG.random((2, 3, 4)), RNG.random((4, 5))
    for args in [
        (a, [0, 1, 2], b, [2, 3], [0, 1, 3]),
        (a, [Ellipsis, 2], b, [2, 3]),
        (a, [0, 1, 2]),
        (np.eye(3), [0, 0], []),
    ]:
        _close(fnp.einsum(*args), np.einsum(*args))
    with pytest.raises(ValueError, match="integers"):
        fnp.einsum(a, [0, 1, 99])


def test_array_api_namespace_hooks():
    x = fnp.arange(3.0)
    assert x.__array_namespace__() is fnp and fnp.__array_api_version__ == "2024.12"
    assert funcgrad.jit(lambda v: float(v.__array_namespace__() is fnp) + v)(1.0) == 2.0
    info = fnp.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] == np.float64
    assert list(info.dtypes(kind=("bool", "complex floating"))) == ["bool", "complex64", "complex128"]
    assert info.default_device() in info.devices()
    with pytest.raises(ValueError, match="2024.12"):
        x.__array_namespace__(api_version="2021.12")


# -- The ufunc objects of jax.numpy: fnp.add.reduce, .accumulate, .at, .outer, .reduceat ----------

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
    close(np.asarray(ours.reduceat(a[0], [0, 2])), theirs.reduceat(a[0], [0, 2]))
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
