"""The ``jax.Array`` methods funcgrad's ``Array`` completes: the NumPy-function methods
(``argpartition``, ``byteswap``, ``choose``, ``compress``, ``view``, ``tobytes``, ``clone``) against
NumPy and jax (eager, under ``jit`` and under ``vmap``), and the buffer-level ones (``delete``,
``is_deleted``, ``is_ready``, ``platform``, ``on_device_size_in_bytes``, ``unsafe_buffer_pointer``,
``traceback``, ``aval``) on host-backed and device-backed Arrays, with the errors a deleted Array
raises."""

from __future__ import annotations

import functools
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.core import ConcretizationTypeError

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

RNG = np.random.default_rng(0)

DTYPES = [
    "bool",
    "int8",
    "uint8",
    "int16",
    "int32",
    "uint32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


def _sample(dtype, shape=(2, 8), rng=None):
    rng = RNG if rng is None else rng
    dt = np.dtype(jnp.dtype(dtype))
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(dt)
    if dt.kind in "fcV":
        x = rng.normal(size=shape) * 100
        return (x + 1j * rng.normal(size=shape) if dt.kind == "c" else x).astype(dt)
    lo = -100 if dt.kind == "i" else 0
    return rng.integers(lo, 100, shape).astype(dt)


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    assert got.tobytes() == want.tobytes()


def _device(x):
    """``x`` as a device-backed Array (a jitted call's output)."""
    return funcgrad.jit(lambda v: v)(fnp.asarray(x))


# ----------------------------------------------------------------------------------------------
# view


@functools.cache
def _views_of(src):
    """A sample of ``src`` and ``{dst: (jax's view of it, or the error type jax raised; funcgrad's
    jitted view)}``: every view of the sample in one jax.jit and one funcgrad.jit program (a program
    per view and side were 2 x 169 compiles)."""
    x = _sample(src, rng=np.random.default_rng(DTYPES.index(src)))
    views, ok = {}, []
    for dst in DTYPES:
        try:
            jax.eval_shape(lambda v, d=dst: v.view(d), x)
            ok.append(dst)
        except (ValueError, TypeError) as e:
            views[dst] = (type(e), None)
    want = jax.jit(lambda v: [v.view(d) for d in ok])(x)
    got = funcgrad.jit(lambda v: [v.view(d) for d in ok])(x)
    views.update(zip(ok, zip(want, got)))
    return x, views


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES)
def test_view_matches_numpy_bits_and_jax_shapes(src, dst):
    x, views = _views_of(src)
    want_dt = jnp.dtype(dst)
    want_jax, jitted = views[dst]
    if isinstance(want_jax, type):  # the error jax raised
        with pytest.raises(want_jax):
            fnp.asarray(x).view(dst)
        return
    got = fnp.asarray(x).view(dst)
    assert got.shape == want_jax.shape and got.dtype == want_dt
    _same_bits(jitted, got)
    if src != "bool" and dst != "bool":
        # NumPy's view is the bit pattern exactly (jax's view to complex goes through arithmetic,
        # which may change NaN payloads and subnormals, so the bits are checked against NumPy).
        _same_bits(got, x.view(want_dt))
    if np.dtype(want_dt).kind not in "cV" and src != "bool" and dst != "bool":
        _same_bits(got, want_jax)
    if dst == "bool":
        np.testing.assert_array_equal(got, np.asarray(want_jax))


@pytest.mark.parametrize("src", ["int4", "uint4"])
def test_view_of_4_bit_integers_is_jax_s(src):
    # int4's item is 4 bits (stored in a byte): the last axis shrinks by 2 per byte, as jax's
    # (lax_numpy_test testView; the byte size made it a same-width view)
    x = np.arange(-8, 8).astype(src) if src == "int4" else np.arange(16).astype(src)
    x = np.stack([x, x[::-1]])
    for dst in ("int8", "uint8", "int16", "float32"):
        want = jnp.asarray(x).view(dst)
        got = fnp.asarray(x).view(dst)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got).view(np.uint8), np.asarray(want).view(np.uint8))
    # and back: narrowing views to 4- and 2-bit types split each byte, the low bits first (NumPy
    # stores one such element per byte, so its view kept the count and the bitcast failed)
    y = np.array([[-100, 7, 55], [1, -1, 0]], np.int16)
    for dst in ("int4", "uint4", "int2", "uint2"):
        want = jnp.asarray(y).view(dst)
        for got in (fnp.asarray(y).view(dst), funcgrad.jit(lambda v, d=dst: v.view(d))(y)):
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(np.asarray(got).astype(int), np.asarray(want).astype(int))


def test_view_shapes_and_errors():
    assert fnp.zeros((1, 2, 3), "int16").view("int8").shape == (1, 2, 6)
    assert fnp.zeros((1, 2, 4), "int8").view("int16").shape == (1, 2, 2)
    assert fnp.asarray(np.float32(1.0)).view("int32").item() == 0x3F800000  # 0-d, same size
    x = fnp.arange(3.0)
    assert x.view() is x and x.view("float64") is x
    with pytest.raises(ValueError, match="last axis"):
        fnp.zeros(3, "int8").view("int16")
    with pytest.raises(ValueError, match="0-d"):
        fnp.asarray(np.int32(1)).view("int8")
    with pytest.raises(NotImplementedError):
        x.view("int64", type=np.ndarray)
    np.testing.assert_array_equal(fnp.array([1, 0, 1], "int8").view(bool), [True, False, True])


def test_view_under_vmap():
    x = _sample("float32", (3, 4))
    got = funcgrad.vmap(lambda r: r.view("int16"))(x)
    _same_bits(got, x.view(np.int16))
    got = funcgrad.vmap(lambda r: r.view("float64"))(x)
    _same_bits(got, x.view(np.float64))


# ----------------------------------------------------------------------------------------------
# byteswap


@pytest.mark.parametrize("dtype", DTYPES)
def test_byteswap(dtype):
    x = _sample(dtype, (3, 4))
    got = fnp.asarray(x).byteswap()
    _same_bits(got, x.byteswap())
    if np.dtype(jnp.dtype(dtype)).kind != "c":  # jax's complex path goes through arithmetic
        _same_bits(got, jnp.asarray(x).byteswap())
    _same_bits(funcgrad.jit(lambda v: v.byteswap())(x), x.byteswap())
    _same_bits(funcgrad.vmap(lambda v: v.byteswap())(x), x.byteswap())
    # a 0-d array (JAX's lax_numpy_test: NumPy refused the eager bitcast's narrowing view)
    _same_bits(fnp.asarray(x[0, 0]).byteswap(), x[0, 0].byteswap())
    _same_bits(got.byteswap(), x)
    with pytest.raises(ValueError, match="immutable"):
        got.byteswap(inplace=True)


# ----------------------------------------------------------------------------------------------
# argpartition, choose, compress


def test_argpartition():
    x = RNG.normal(size=(4, 7))
    for axis, kth in [(-1, 3), (0, 1), (1, -2)]:
        for a in (fnp.asarray(x), _device(x)):
            idx = a.argpartition(kth, axis=axis)
            part = np.take_along_axis(x, np.asarray(idx), axis)
            want = np.partition(x, kth, axis)
            np.testing.assert_array_equal(np.take(part, kth, axis), np.take(want, kth, axis))
            jidx = jnp.asarray(x).argpartition(kth, axis=axis)
            np.testing.assert_array_equal(
                np.take(np.take_along_axis(x, np.asarray(jidx), axis), kth, axis), np.take(want, kth, axis)
            )
    got = funcgrad.jit(lambda v: v.argpartition(2))(x)
    np.testing.assert_array_equal(np.take_along_axis(x, np.asarray(got), -1)[:, 2], np.partition(x, 2)[:, 2])
    got = funcgrad.vmap(lambda v: v.argpartition(2))(x)
    np.testing.assert_array_equal(np.take_along_axis(x, np.asarray(got), -1)[:, 2], np.partition(x, 2)[:, 2])


@pytest.mark.parametrize("mode", ["raise", "clip", "wrap"])
def test_choose(mode):
    idx = np.array([[0, 1, 2], [2, 0, 1]])
    choices = [RNG.normal(size=(2, 3)) for _ in range(3)]
    want = np.choose(idx, choices, mode=mode)
    np.testing.assert_array_equal(fnp.asarray(idx).choose(choices, mode=mode), want)
    np.testing.assert_array_equal(jnp.asarray(idx).choose(choices, mode=mode), want)
    np.testing.assert_array_equal(funcgrad.jit(lambda i, c: i.choose(c, mode=mode))(idx, choices), want)
    got = funcgrad.vmap(lambda i, c: i.choose(c, mode=mode))(idx, choices)
    np.testing.assert_array_equal(got, want)
    if mode != "raise":
        far = np.array([-4, 0, 5])
        want = np.choose(far, [c[0] for c in choices], mode=mode)
        np.testing.assert_array_equal(fnp.asarray(far).choose([c[0] for c in choices], mode=mode), want)


def test_compress():
    x = np.arange(12).reshape(3, 4)
    cond = np.array([True, False, True, True])
    for axis in (None, 0, 1):
        c = cond[: (x.size if axis is None else x.shape[axis])]
        want = np.compress(c, x, axis=axis)
        np.testing.assert_array_equal(fnp.asarray(x).compress(c, axis=axis), want)
        np.testing.assert_array_equal(_device(x).compress(c, axis=axis), want)
        np.testing.assert_array_equal(jnp.asarray(x).compress(c, axis=axis), want)
    # A longer condition with false tail entries is accepted; a true one out of bounds is not.
    np.testing.assert_array_equal(fnp.asarray(x).compress(np.array([1, 0, 1, 0, 0]), axis=0), x[[0, 2]])
    with pytest.raises(ValueError, match="out of bounds"):
        fnp.asarray(x).compress(np.array([1, 0, 1, 0, 1]), axis=0)
    with pytest.raises(ValueError, match="1-D"):
        fnp.asarray(x).compress(np.ones((2, 2), bool))


def test_compress_with_size_under_jit_and_vmap():
    x = np.arange(1, 13).reshape(3, 4)
    for size, fill in [(2, 0), (3, -1), (0, 0)]:
        want = jnp.asarray(x).compress(np.array([0, 1, 1]), axis=0, size=size, fill_value=fill)
        got = fnp.asarray(x).compress(np.array([0, 1, 1]), axis=0, size=size, fill_value=fill)
        np.testing.assert_array_equal(got, want)
    f = funcgrad.jit(lambda c, v: v.compress(c, axis=1, size=3, fill_value=-7))
    c = np.array([True, False, False, True])
    want = jnp.asarray(x).compress(c, axis=1, size=3, fill_value=-7)
    np.testing.assert_array_equal(f(c, x), want)
    mask = x % 3 == 0
    got = funcgrad.vmap(lambda m, v: v.compress(m, size=4))(mask, x)
    want = jax.vmap(lambda m, v: v.compress(m, size=4))(mask, x)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ConcretizationTypeError, match="size="):
        funcgrad.jit(lambda c, v: v.compress(c))(c, x)
    with pytest.raises(ValueError, match="size"):
        fnp.asarray(x).compress(c, axis=1, size=5)


def test_extract_with_size():
    x = np.arange(1, 13).reshape(3, 4)
    got = funcgrad.vmap(lambda v: fnp.extract(v % 3 == 0, v, size=4, fill_value=0))(x)
    want = jax.vmap(lambda v: jnp.extract(v % 3 == 0, v, size=4, fill_value=0))(x)
    np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------------------------
# tobytes, clone, aval


@pytest.mark.parametrize("order", ["C", "F"])
def test_tobytes(order):
    x = _sample("float32", (3, 4))
    for a in (fnp.asarray(x), _device(x)):
        assert a.tobytes(order) == x.tobytes(order) == jnp.asarray(x).tobytes(order)
    with pytest.raises(ConcretizationTypeError, match="tobytes"):
        funcgrad.jit(lambda v: fnp.frombuffer(v.tobytes(), np.float32))(x)
    with pytest.raises(ConcretizationTypeError, match="tobytes"):
        funcgrad.grad(lambda v: len(v.tobytes()) * v)(1.0)


def test_clone():
    x = _device(np.arange(3.0))
    y = x.clone()
    assert y is not x and y._buffer is not x._buffer
    np.testing.assert_array_equal(y, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(funcgrad.jit(lambda v: v.clone() * 2)(x), [0.0, 2.0, 4.0])


def test_aval_is_the_kernels_abstract_value():
    from funcgrad.kernel import core

    for a in (fnp.arange(3.0), _device(np.arange(3.0)), fnp.asarray(np.float32(2.0))):
        assert a.aval is core.get_aval(a)
        j = jnp.asarray(np.asarray(a))
        assert (a.aval.shape, a.aval.dtype) == (j.aval.shape, j.aval.dtype)
    assert funcgrad.jit(lambda v: v + 1.0)(1.0).aval.weak_type
    # Tracers keep their own aval (the registration does not touch it).
    seen = []
    funcgrad.jit(lambda v: seen.append(v.aval) or v)(np.ones(2))
    assert seen[0].str_short() == "f64[2]"


# ----------------------------------------------------------------------------------------------
# Buffer-level methods


def _host():
    return fnp.asarray(np.arange(4.0))


def _host_with_device_copy():
    x = _host()
    funcgrad.jit(lambda v: v * 2)(x)  # caches the device copy on x
    assert x._buffer is not None
    return x


def _read_back():
    x = _device(np.arange(4.0))
    x.tolist()
    return x


MAKERS = {
    "host": _host,
    "device": lambda: _device(np.arange(4.0)),
    "read back": _read_back,
    "host with device copy": _host_with_device_copy,
}


@pytest.mark.parametrize("kind", MAKERS)
def test_buffer_queries_match_jax(kind):
    x = MAKERS[kind]()
    j = jnp.arange(4.0)
    assert not x.is_deleted() and x.is_ready()
    assert x.platform() == j.platform() == funcgrad.devices()[0].platform
    assert x.on_device_size_in_bytes() == j.on_device_size_in_bytes() == 32
    p = x.unsafe_buffer_pointer()
    assert isinstance(p, int) and p > 0 and x.unsafe_buffer_pointer() == p  # kept: the same buffer
    assert x.traceback is not None  # the device copy's creation traceback
    np.testing.assert_array_equal(x, np.arange(4.0))  # still alive
    assert fnp.ones(2).traceback is None  # a host-backed Array has no buffer yet


_USES = {
    "repr": repr,
    "numpy": np.asarray,
    "add": lambda v: v + 1.0,
    "method": lambda v: v.sum(),
    "tolist": lambda v: v.tolist(),
    "tobytes": lambda v: v.tobytes(),
    "jit": lambda v: funcgrad.jit(lambda w: w * 3.0)(v),
    "vmap": lambda v: funcgrad.vmap(lambda w: w * 2.0)(v),
    "grad": lambda v: funcgrad.grad(lambda w: (w * w).sum())(v),
    "pickle": pickle.dumps,
    "unsafe_buffer_pointer": lambda v: v.unsafe_buffer_pointer(),
    "on_device_size_in_bytes": lambda v: v.on_device_size_in_bytes(),
    "is_ready": lambda v: v.is_ready(),
}


@pytest.mark.parametrize("use", _USES)
@pytest.mark.parametrize("kind", MAKERS)
def test_a_deleted_array_raises_when_used(kind, use):
    x = MAKERS[kind]()
    x.delete()
    x.delete()  # deleting twice is allowed, as in jax
    assert x.is_deleted()
    assert x.shape == (4,) and x.dtype == np.float64 and x.aval.str_short() == "f64[4]"
    with pytest.raises(RuntimeError, match="deleted or donated"):
        _USES[use](x)


def test_a_jitted_function_called_again_with_a_deleted_argument():
    f = funcgrad.jit(lambda v: v * 3.0)
    f(_device(np.arange(4.0)))  # compiled and cached: the second call takes a fast path
    x = _device(np.arange(4.0))
    x.delete()
    for _ in range(2):
        with pytest.raises(RuntimeError, match="deleted or donated"):
            f(x)


def test_delete_frees_the_buffer_and_the_host_copy():
    x = _read_back()
    buf = x._buffer
    x.delete()
    assert buf.is_deleted() and x._value is None
    # jax's own delete, for comparison: the same observable state.
    j = jnp.arange(4.0)
    j.delete()
    assert j.is_deleted() and j.shape == x.shape


def test_donated_arrays_report_deleted():
    f = funcgrad.jit(lambda v: v * 2.0, donate_argnums=0)
    d = _device(np.arange(4.0))
    f(d)
    assert d.is_deleted()
    h = _host()
    f(h)
    assert h.is_deleted()  # as in JAX: the call consumed its device copy
    with pytest.raises(RuntimeError, match="Array has been deleted with shape="):
        np.asarray(h)


def test_sharded_arrays():
    from funcgrad.sharding import NamedSharding, P, make_mesh

    devices = funcgrad.devices()
    n = len(devices)
    mesh = make_mesh((n,), ("x",))
    x = funcgrad.device_put(np.arange(8.0 * n), NamedSharding(mesh, P("x")))
    r = funcgrad.device_put(np.arange(8.0), NamedSharding(mesh, P()))
    assert x.on_device_size_in_bytes() == 64 * n  # over all devices
    assert r.on_device_size_in_bytes() == 64 * n  # a replicated value counts once per device
    if n > 1:
        with pytest.raises(ValueError, match="one device"):
            x.unsafe_buffer_pointer()
    x.delete()
    assert x.is_deleted()
    with pytest.raises(RuntimeError, match="deleted or donated"):
        np.asarray(x)


def test_buffer_methods_on_tracers_say_why_not():
    for name in ("delete", "is_deleted", "is_ready", "platform", "on_device_size_in_bytes"):

        def f(v, name=name):
            getattr(v, name)()
            return v

        with pytest.raises(ConcretizationTypeError, match=name):
            funcgrad.jit(f)(np.ones(2))
    with pytest.raises(ConcretizationTypeError, match="unsafe_buffer_pointer"):
        funcgrad.vmap(lambda v: v.unsafe_buffer_pointer())(np.ones((2, 2)))


def test_buffer_methods_do_not_import_jax():
    # jaxlib's unsafe_buffer_pointer goes through a lazy ``import jax`` (NOTE: [no jax import]).
    code = textwrap.dedent(
        """
        import sys
        import funcgrad, funcgrad.numpy as fnp
        for x in (fnp.ones(3), funcgrad.jit(lambda v: v + 1)(fnp.ones(3))):
            x.platform(), x.is_ready(), x.on_device_size_in_bytes(), x.unsafe_buffer_pointer()
            x.traceback, x.aval, x.view("int64"), x.byteswap(), x.tobytes()
            x.delete()
            assert x.is_deleted()
        print("jax" in sys.modules)
        """
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": root},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "False"


# ----------------------------------------------------------------------------------------------
# DLPack export (found by the external suites)


def test_dlpack_export_of_a_read_only_array():
    # A DLPack < 1.0 consumer cannot be told the buffer is read-only: funcgrad hands it a copy
    # (NumPy refused: "Cannot export readonly array").
    for x in (
        fnp.arange(4.0),
        fnp.asarray(np.arange(4.0)) * 1.0,
        funcgrad.jit(lambda v: v * 1.0)(np.arange(4.0)),
    ):
        np.testing.assert_array_equal(np.from_dlpack(x), [0.0, 1.0, 2.0, 3.0])
        assert x.__dlpack__(stream=None, max_version=(1, 0)) is not None
        assert x.__dlpack__() is not None
    ro = np.arange(3.0)
    ro.flags.writeable = False
    y = funcgrad.Array(ro)
    np.testing.assert_array_equal(np.from_dlpack(y), [0.0, 1.0, 2.0])


# ----------------------------------------------------------------------------------------------
# isinstance(x, funcgrad.Array) under transformations


@pytest.mark.parametrize(
    "transform",
    [funcgrad.jit, funcgrad.grad, funcgrad.vmap, lambda f: lambda x: funcgrad.jvp(f, (x,), (x,))[1]],
)
def test_isinstance_array_is_true_for_traced_values(transform):
    # As jax.Array: user code may check isinstance(x, funcgrad.Array) inside transformations.
    seen = []

    def f(x):
        seen.append((isinstance(x, funcgrad.Array), isinstance(x, fnp.ndarray)))
        return fnp.sum(x * 2.0)

    transform(f)(fnp.ones(3) if transform is funcgrad.vmap else fnp.float64(1.5))
    assert seen and all(a and b for a, b in seen)
    assert isinstance(fnp.ones(2), funcgrad.Array) and fnp.ndarray is funcgrad.Array
    assert not isinstance(np.ones(2), funcgrad.Array) and not isinstance(1.0, funcgrad.Array)
    assert funcgrad.Array.__name__ == "Array" and funcgrad.Array(np.arange(2.0)).tolist() == [0.0, 1.0]


def test_array_class_declares_the_members_as_jax_array():
    # jax.Array holds every operator, method and property of arrays as an abstract member (JAX's
    # _set_array_abstract_methods); penzai wraps getattr(jax.Array, name) for 43 methods at import.
    import inspect

    internal = {"__slots__", "_multi_slice", "_split", "flat"}  # (JAX's own helpers)
    names = [n for n in dir(jax.Array) if n not in dir(object) and n not in internal and n != "__weakref__"]
    assert len(names) > 90
    for name in names:
        theirs = inspect.getattr_static(jax.Array, name)
        ours = inspect.getattr_static(funcgrad.Array, name, None)
        assert ours is not None, name
        assert isinstance(ours, property) == isinstance(theirs, property), name
        if not isinstance(theirs, property) and getattr(theirs, "__isabstractmethod__", False):
            assert ours.__isabstractmethod__, name
            with pytest.raises(NotImplementedError, match=f"^Cannot call abstract method {name}$"):
                getattr(funcgrad.Array, name)(None)
            with pytest.raises(NotImplementedError, match=f"^Cannot call abstract method {name}$"):
                getattr(jax.Array, name)(None)
    assert funcgrad.Array.sum.__doc__ == fnp.ndarray.sum.__doc__ and funcgrad.Array.sum.__doc__
    # the classes of values keep their own members
    x = fnp.arange(6.0).reshape(2, 3)
    assert float(x.sum()) == 15.0 and x.T.shape == (3, 2) and isinstance(x, funcgrad.Array)
    assert funcgrad.jit(lambda v: v.any() + v.mean())(x) == 3.5  # (a tracer keeps them too)


def test_contains_and_nbytes_as_jax():
    # (JAX's lax_numpy_test) `value in x` of a 1-D Array with JAX's checks; nbytes under jit
    assert 1 in fnp.arange(4) and 100 not in fnp.arange(4)
    with pytest.raises(ValueError, match="search array must be one-dimensional"):
        _ = 1 in fnp.asarray(1)
    with pytest.raises(ValueError, match="query value must be a scalar"):
        _ = fnp.arange(2) in fnp.arange(2)
    with pytest.raises(TypeError, match="unsupported operand type"):
        _ = "abc" in fnp.arange(2)
    assert funcgrad.jit(lambda x: x.nbytes)(np.ones((2, 3), np.int16)) == jnp.ones((2, 3), np.int16).nbytes


def test_flat_raises_jax_s_error():
    # NumPy's flat iterator writes in place; JAX refuses it with NotImplementedError (code that
    # probes ``getattr(x, "flat", x)``, as pytest.approx does, sees the same error on both)
    for mod in (fnp, jnp):
        with pytest.raises(NotImplementedError, match=r"do not implement the arr.flat property"):
            _ = mod.arange(3.0).flat


def test_sum_method_initial_asarray_copy_false_and_var_words_as_jax():
    # JAX's x.sum method takes initial= and does not pass it on (the function adds it); asarray
    # with copy=False converts a dtype (JAX refuses only host buffers bound for an accelerator);
    # var/std with both ddof and correction: JAX's ValueError words
    def outcomes(np_, jit):
        x = np_.arange(3.0)
        out = [
            float(x.sum(initial=1.0)),
            float(x.sum(where=x > 0, initial=1.0)),
            float(np_.sum(x, initial=1.0)),
            float(jit(lambda a: a.sum(axis=0, initial=5.0))(x)),
            str(np_.asarray(x, np.int32, copy=False).dtype),
            str(jit(lambda a: np_.asarray(a, np.int32, copy=False))(x).dtype),
        ]
        for fn in (x.std, x.var):
            with pytest.raises(ValueError) as e:
                fn(ddof=1, correction=1)
            out.append(str(e.value))
        return out

    assert outcomes(fnp, funcgrad.jit) == outcomes(jnp, jax.jit)


def test_reshape_and_ravel_orders_jax_refuses():
    # JAX implements order 'C' and 'F' only: 'A' is its NotImplementedError (funcgrad read it as
    # 'C'), ravel's 'K' another, anything else a ValueError; the same words through each door
    def outcomes(np_):
        x = np_.ones((2, 2))
        out = []
        calls = [lambda o: np_.reshape(x, 4, order=o), lambda o: np_.ravel(x, order=o)]
        calls += [lambda o: x.reshape(4, order=o), lambda o: x.flatten(order=o)]
        for call in calls:
            for order in ("C", "F", "A", "K", "X"):
                try:
                    out.append(call(order).shape)
                except (NotImplementedError, ValueError) as e:
                    out.append((type(e).__name__, str(e)))
        return out

    assert outcomes(fnp) == outcomes(jnp)
