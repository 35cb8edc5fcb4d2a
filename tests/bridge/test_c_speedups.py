"""The two C modules (NOTE: [array in C]): funcgrad.Array's C base (its fields, constructors and
read-only buffer protocol) and the jitted call's C hot path; and the pure-Python fallback used
where they are not built, which must behave the same."""

from __future__ import annotations

import copy
import ctypes
import gc
import os
import pickle
import shutil
import subprocess
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest
from funcgrad.xla_bridge import dispatch

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.kernel import array as karray

ROOT = Path(__file__).resolve().parents[2]


def test_the_c_modules_are_built_where_a_compiler_is():
    # `pip install -e .` builds them; only FUNCGRAD_PURE_PYTHON or a missing compiler leaves them out.
    if os.environ.get("FUNCGRAD_PURE_PYTHON") or not shutil.which("cc"):
        pytest.skip("pure-Python mode requested, or no C compiler on this machine")
    assert karray.C_ACCELERATED
    assert dispatch._HotCall is not dispatch._PythonHotCall


def _jitted_result():
    f = funcgrad.jit(lambda a, b: a * b + 1)
    return f(np.arange(3, dtype=np.float32), np.ones(3, np.float32))


def test_asarray_of_a_jit_output_is_a_read_only_view_of_its_value():
    r = _jitted_result()
    v = np.asarray(r)
    np.testing.assert_array_equal(v, [1.0, 2.0, 3.0])
    assert v.dtype == np.float32 and not v.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        v[0] = 7.0
    np.testing.assert_array_equal(np.asarray(r), [1.0, 2.0, 3.0])
    if not karray.C_ACCELERATED:
        return  # the Python Array has no buffer protocol (NumPy reads it through __array__)
    m = memoryview(r)
    assert m.readonly and np.dtype(m.format) == np.float32 and m.shape == (3,)


def test_a_host_array_holding_a_writeable_value_still_exports_read_only():
    # _from_owned leaves the value's flags alone (it may be a view of a primitive's input).
    base = np.arange(4.0)
    a = karray.Array._from_owned(base)
    v = np.asarray(a)
    assert not v.flags.writeable
    with pytest.raises(ValueError):
        v[1] = 9.0
    with pytest.raises(TypeError, match="not writable" if karray.C_ACCELERATED else "bytes-like"):
        ctypes.c_char.from_buffer(a)  # asks for a writable buffer: refused
    np.testing.assert_array_equal(base, [0.0, 1.0, 2.0, 3.0])


@pytest.mark.parametrize(
    "dtype", ["bfloat16", "int4", "float8_e4m3fn", "float16", "bool", "complex64", "uint64"]
)
def test_every_dtype_reads_back_through_buffer_or_fallback(dtype):
    dt = getattr(fnp, dtype) if dtype in ("bfloat16", "int4", "float8_e4m3fn") else np.dtype(dtype)
    want = np.array([1, 0, 1]).astype(dt)
    got = np.asarray(funcgrad.jit(lambda a: a)(fnp.asarray(want)))
    assert got.dtype == np.dtype(dt)
    assert (got == want).all()


def test_a_donated_output_read_back_names_the_problem():
    f = funcgrad.jit(lambda a: a + 1, donate_argnums=0)
    x = funcgrad.jit(lambda a: a * 2)(np.ones(3, np.float32))
    f(x)
    with pytest.raises(RuntimeError, match="donat"):
        np.asarray(x)


def test_constructors_fields_weakrefs_pickle():
    a = karray.Array._from_buffer(None, weak_type=True)
    assert a._value is None and a._buffer is None and a.weak_type is True and a._aval is None
    b = karray.Array._from_owned(np.ones(2), True)
    assert b.weak_type is True
    with pytest.raises(TypeError):
        karray.Array._from_owned()
    with pytest.raises(TypeError):
        karray.Array._from_owned(np.ones(2), bogus=True)
    r = _jitted_result()
    ref = weakref.ref(r)
    assert ref() is r
    s = pickle.loads(pickle.dumps(r))
    assert type(s) is karray.Array
    np.testing.assert_array_equal(s, r)
    del r, s
    gc.collect()
    assert ref() is None
    with pytest.raises(AttributeError):
        r = _jitted_result()
        r.not_a_field = 1  # no __dict__: the fields are fixed


def test_hot_path_routes_match_the_python_definition():
    f = funcgrad.jit(lambda a, b=1.0: a * b)
    x = np.arange(3.0)
    f(x)  # miss: makes the plain native dispatcher
    hits = f.cache_info().hits
    np.testing.assert_array_equal(f(x), x)
    assert f.cache_info().hits == hits + 1  # the native route (the staged route under jax)
    np.testing.assert_array_equal(f(x, b=2.0), 2 * x)  # keywords: the general dispatch
    np.testing.assert_array_equal(f(fnp.asarray(x)), x)  # a host-backed Array
    np.testing.assert_array_equal(f(f(x)), x)  # a device-backed Array: its buffer
    t = (f(x),)
    np.testing.assert_array_equal(f(*t), x)  # the caller's own tuple is left as it was
    assert type(t[0]) is karray.Array
    (h,) = funcgrad.jit(lambda t: [t[0] + t[1]])([1.0, 2.0])  # a list: the general path
    assert h == 3.0
    assert funcgrad.grad(lambda a: f(a).sum())(2.0) == 1.0  # under a transformation
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'c'"):
        f(x, c=1)
    g = funcgrad.jit(lambda a: (a, a + 1))
    g(x)
    first, second = g(x)  # several outputs come back through _native_outputs
    np.testing.assert_array_equal(second, x + 1)


def test_disable_jit_redirects_every_call_without_swapping_the_class():
    f = funcgrad.jit(lambda a: a + 1)
    f(1.0)
    hits = f.cache_info().hits
    call = type(f).__call__
    with funcgrad.disable_jit():
        assert f(1.0) == 2.0
        assert type(f).__call__ is call  # a per-call redirect, not a swapped class attribute
    assert f.cache_info().hits == hits  # the Python function ran
    f(1.0)
    assert f.cache_info().hits == hits + 1


@pytest.mark.slow
@pytest.mark.parametrize("pure", ["", "1"], ids=["c", "pure_python"])
def test_in_a_fresh_process(pure):
    # A fresh interpreter without jax: the native route, so the C hot path (or, with
    # FUNCGRAD_PURE_PYTHON=1, its Python twin) is what these tests and test_jit's dispatch tests
    # exercise. (In this worker, jax may be loaded, which routes calls through the staged route.)
    # The C process also runs test_dispatch_routes's tests of the C route against its Python twin
    # (they skip where jax is loaded): one fresh pytest process fewer, about 3 CPU-s.
    env = {**os.environ, "FUNCGRAD_PURE_PYTHON": pure}
    select = "c_speedups or native or dispatch or buffer or asarray or donat"
    files = ["tests/bridge/test_c_speedups.py", "tests/surface/api/test_jit.py"]
    if not pure:  # (first: a later test may import jax, which takes the native route away)
        files.insert(0, "tests/bridge/test_dispatch_routes.py")
        select = f"test_dispatch_routes and twin or not test_dispatch_routes and ({select})"
    select = f"not fresh_process and ({select})"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-o",
        "addopts=",
        "-q",
        "-p",
        "no:cacheprovider",
        "-rs",
        *files,
        "-k",
        select,
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and " failed" not in proc.stdout, proc.stdout[-3000:]
    skipped = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert not [line for line in skipped if "dispatch_routes" in line], skipped  # (the twins ran)


def test_the_hot_path_keeps_no_references():
    f = funcgrad.jit(lambda a, b: a * b + 1)
    x = f(np.ones(3, np.float32), 1.0)
    y = np.ones(3, np.float32)
    f(x, y)
    before = sys.getrefcount(x), sys.getrefcount(x._buffer), sys.getrefcount(y)
    for _ in range(500):
        out = f(x, y)
    del out
    assert (sys.getrefcount(x), sys.getrefcount(x._buffer), sys.getrefcount(y)) == before


def test_hot_path_counts_the_route_it_took():
    f = funcgrad.jit(lambda a, b: a - b)
    x, y = np.ones(2), f(np.ones(2), 0.5)
    f(x, y)
    native, hits = f._native_calls, f.cache_info().hits
    np.testing.assert_array_equal(f(x, y), [0.5, 0.5])
    assert f.cache_info().hits == hits + 1
    # The native route, through the C HotCall (or its Python twin); while jax's config is loaded
    # (it owns jaxlib's dispatch state) the staged route, which the native counter does not see.
    assert f._native_calls == native + ("jax._src.config" not in sys.modules)


def test_hot_path_static_arguments_containers_and_keywords():
    # The C hot path also takes the routes of Dispatcher._dispatch: static arguments, containers
    # (flattened, with the Arrays inside swapped for their buffers) and keyword arguments.
    x = np.arange(3.0)
    dev = funcgrad.jit(lambda a: a + 0)(x)  # a device-backed Array
    host = fnp.asarray(x)  # a host-backed Array (its buffer is made and cached on first use)

    f = funcgrad.jit(lambda a, n: a * n, static_argnums=1)
    for _ in range(3):
        np.testing.assert_array_equal(f(x, 3), 3 * x)
        np.testing.assert_array_equal(f(dev, 2), 2 * x)
    calls = f._native_calls
    np.testing.assert_array_equal(f(dev, 2), 2 * x)
    # The native route (without jax; with jax loaded, static arguments take the general path).
    assert f._native_calls == calls + ("jax._src.config" not in sys.modules)

    g = funcgrad.jit(lambda d: d["x"] * 2 + d["y"][0])
    for _ in range(3):
        np.testing.assert_array_equal(g({"x": x, "y": [dev]}), 3 * x)
        np.testing.assert_array_equal(g({"x": host, "y": [host]}), 3 * x)
    args = {"x": dev, "y": [host]}
    g(args)
    assert type(args["x"]) is karray.Array and type(args["y"][0]) is karray.Array  # left alone

    h = funcgrad.jit(lambda a, *, scale=1.0, mode="add": a + scale if mode == "add" else a * scale,
                     static_argnames="mode")  # fmt: skip
    for _ in range(3):
        np.testing.assert_array_equal(h(x, scale=2.0), x + 2.0)
        np.testing.assert_array_equal(h(dev, scale=2.0, mode="mul"), 2.0 * x)
        np.testing.assert_array_equal(h(x, mode="mul", scale=dev), x * x)


def test_hot_path_errors_are_the_python_paths():
    f = funcgrad.jit(lambda a, n: a * len(n), static_argnums=1)
    f(np.ones(2), (1, 2))
    with pytest.raises((TypeError, ValueError), match="(?i)hashable"):
        f(np.ones(2), [1, 2])  # an unhashable static argument: the clear error
    with pytest.raises(TypeError):
        f(np.ones(2))  # the static argument is missing
    calls = []

    def bad(a, n):
        calls.append(n)
        raise TypeError("a bug in the user's function")

    g = funcgrad.jit(bad, static_argnums=1)
    with pytest.raises(TypeError, match="user's function"):
        g(np.ones(2), 3)
    assert calls == [3]  # traced once: the error is not retried on another path
    k = funcgrad.jit(lambda d: d["a"])
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        k({"a": np.ones(2)}, b=1)


def test_the_tree_route_keeps_no_references():
    g = funcgrad.jit(lambda d, n: d["x"] * n, static_argnums=1)
    x = funcgrad.jit(lambda a: a + 0)(np.ones(3))
    d = {"x": x}
    g(d, 2)
    g(d, 2)
    before = sys.getrefcount(x), sys.getrefcount(x._buffer), sys.getrefcount(d)
    for _ in range(500):
        out = g(d, 2)
    del out
    assert (sys.getrefcount(x), sys.getrefcount(x._buffer), sys.getrefcount(d)) == before


def test_a_jitted_function_can_be_copied():
    f = funcgrad.jit(lambda a: a * 2)
    f(1.0)
    g = copy.copy(f)
    assert g(3.0) == 6.0 and f(3.0) == 6.0
    np.testing.assert_array_equal(
        copy.copy(funcgrad.jit(lambda a, n: a * n, static_argnums=1))(x := np.ones(2), 3), 3 * x
    )
