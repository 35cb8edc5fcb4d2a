"""The route table of a jitted call (NOTE: [jitted call route] in xla_bridge/dispatch.py): the C hot
path and its Python twin ``Dispatcher._native_route`` driven by the same cases (same results, same
cache entries), the one argument split, the redirect row, and what a call's return means (NOTE:
[synchronous CPU dispatch]).

The native route exists only while jax's config is not loaded. Another test of the same worker may
import jax at any time, so the in-process twin tests look at that when they run (and skip), and
a slow test always runs them again in a fresh interpreter without jax (test_c_speedups's
``test_in_a_fresh_process[c]``, whose pytest process runs the ``twin`` tests of this file too)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from funcgrad.xla_bridge import dispatch
from funcgrad.xla_bridge.runtime import cpu_async_dispatch

import funcgrad
import funcgrad.numpy as fnp


def jax_loaded() -> bool:
    """Whether jax's config is loaded in this process now (it takes the native route away)."""
    return "jax._src.config" in sys.modules


C_BUILT = dispatch._HotCall is not dispatch._PythonHotCall


def _cases():
    x = np.arange(3.0)
    dev = funcgrad.jit(lambda a: a + 0)(x)  # a device-backed Array
    host = fnp.asarray(x)  # a host-backed Array
    return [
        ("numpy leaves", lambda a, b: a * b + 1, {}, (x, np.ones(3)), {}),
        ("scalars", lambda a, b: a * b, {}, (x, 2.0), {}),
        ("device and host Arrays", lambda a, b: a - b, {}, (dev, host), {}),
        ("several outputs", lambda a: (a, a + 1), {}, (x,), {}),
        ("static position", lambda a, n: a * n, {"static_argnums": 1}, (dev, 3), {}),
        ("static by keyword", lambda a, n: a * n, {"static_argnums": 1}, (x,), {"n": 3}),
        (
            "keywords",
            lambda a, *, scale=1.0, mode="add": a + scale if mode == "add" else a * scale,
            {"static_argnames": "mode"},
            (x,),
            {"mode": "mul", "scale": dev},
        ),
        ("containers", lambda d: d["x"] * 2 + d["y"][0], {}, ({"x": host, "y": [dev]},), {}),
        ("container outputs", lambda a: {"p": a, "q": [a * 2]}, {}, (x,), {}),
    ]


def _leaves(out):
    return [np.asarray(v) for v in funcgrad.tree_util.tree_leaves(out)]


def _run_twins(first: str) -> None:
    for name, fun, options, args, kwargs in _cases():
        f = funcgrad.jit(fun, **options)
        want = _leaves(fun(*args, **kwargs))
        routes = {
            "c": lambda f=f, a=args, k=kwargs: f(*a, **k),
            "python": lambda f=f, a=args, k=kwargs: f._native_route(a, k),
        }
        second = "python" if first == "c" else "c"
        outs = [routes[first](), routes[second](), routes[first](), routes[second]()]
        for out in outs:
            for got, w in zip(_leaves(out), want, strict=True):
                np.testing.assert_array_equal(got, w, err_msg=name)
        # One trace and one native cache miss: the four calls share one entry, whichever twin
        # made it -- the twins build the same key.
        assert f.cache_info().misses == 1, name
        assert f._native_misses == 1, name
        assert f._native_calls == 4, name


@pytest.mark.parametrize("first", ["c", "python"])
def test_the_c_route_and_its_python_twin_share_results_and_cache_entries(first):
    if jax_loaded():
        pytest.skip("jax owns jaxlib's dispatch state here: test_c_speedups's fresh process runs this")
    if not C_BUILT:
        pytest.skip("the C hot path is not built: both routes are the Python twin")
    _run_twins(first)


def test_the_twins_word_errors_the_same_way():
    if jax_loaded():
        pytest.skip("jax owns jaxlib's dispatch state here: test_c_speedups's fresh process runs this")
    f = funcgrad.jit(lambda a, n: a * len(n), static_argnums=1)
    f(np.ones(2), (1, 2))
    for call in (lambda: f(np.ones(2), [1, 2]), lambda: f._native_route((np.ones(2), [1, 2]), {})):
        with pytest.raises(dispatch.NonHashableStaticArgumentError, match="hashable"):
            call()
    for call in (lambda: f(np.ones(2)), lambda: f._native_route((np.ones(2),), {})):
        with pytest.raises((TypeError, ValueError)):
            call()  # the static argument is missing


def test_the_twins_key_static_arguments_by_type():
    # NOTE: [strict static keys]: 1, 1.0 and True hash and compare equal; each is its own entry,
    # which either twin makes and the other hits.
    if jax_loaded():
        pytest.skip("jax owns jaxlib's dispatch state here: test_c_speedups's fresh process runs this")
    fun = lambda a, s, *, t=1: a * s + t  # noqa: E731
    f = funcgrad.jit(fun, static_argnums=1, static_argnames="t")
    x = np.arange(3)
    twins = [lambda *a, **k: f(*a, **k), lambda *a, **k: f._native_route(a, k)]
    cases = [((x, 1), {}), ((x, 1.0), {}), ((x, True), {}), ((x, 1), {"t": 1.0}), ((x, 1), {"t": True})]
    for args, kwargs in cases:
        want = np.asarray(fun(*args, **kwargs))
        for twin in twins:
            got = np.asarray(twin(*args, **kwargs))
            assert got.dtype == want.dtype and got.tolist() == want.tolist(), (args, kwargs)
    assert f._native_misses == len(cases)
    assert f._native_calls == 2 * len(cases)


def test_one_split_serves_the_trace_cache_and_the_native_key():
    f = funcgrad.jit(lambda a, n, *, mode="add", scale=1.0: a, static_argnums=1, static_argnames="mode")
    assert f._split((1.0, 3), {"scale": 2.0, "mode": "mul"}) == (
        ((1, 3),),
        (("mode", "mul"),),
        (1.0,),
        {"scale": 2.0},
    )
    # Both static_argnums and static_argnames given: each is used as given, as JAX's jit (its
    # docstring: the signature is not consulted), so a static position passed by keyword is dynamic.
    assert f._split((1.0,), {"n": 3}) == ((), (), (1.0,), {"n": 3})
    g = funcgrad.jit(lambda a, n: a, static_argnums=1)  # one of them given: the signature names n
    assert g._split((1.0,), {"n": 3}) == ((), (("n", 3),), (1.0,), {})
    with pytest.raises(dispatch.NonHashableStaticArgumentError):
        f._split((1.0, [3]), {})
    assert f._split((1.0, [3]), {}, check=False)[0] == ((1, [3]),)
    with pytest.raises(ValueError, match="static_argnums"):
        funcgrad.jit(lambda *a: a[0], static_argnums=2)._split((1.0,), {})


def test_a_redirect_replaces_every_call_and_restores_dispatch():
    f = funcgrad.jit(lambda a: a + 1)
    f(1.0)
    seen = []
    dispatch.set_call_redirect(lambda d, args, kwargs: seen.append((d, args, kwargs)) or "redirected")
    try:
        assert f(1.0, k=2) == "redirected"
    finally:
        dispatch.set_call_redirect(None)
    assert seen == [(f, (1.0,), {"k": 2})]
    assert f(1.0) == 2.0


# -- what a call's return means (NOTE: [synchronous CPU dispatch]) -------------------------------


def _long(x):
    for _ in range(20):
        x = fnp.tanh(x @ x) * 0.5
    return x.sum()


@pytest.mark.skipif(cpu_async_dispatch(), reason="this process dispatches asynchronously (several devices)")
@pytest.mark.parametrize("route", ["call", "python twin", "staged"])
def test_a_call_returns_after_its_computation_ends_with_one_cpu_device(route):
    # A large NumPy argument is copied by PJRT in the background, and a program waiting for its
    # input then runs in a worker thread: without the native route's wait the call returned at
    # once (0.15 ms for 15 ms of work) and read the argument after the caller had changed it.
    if route == "python twin" and jax_loaded():
        pytest.skip("the native route is not usable while jax's config is loaded")
    f = funcgrad.jit(_long)
    x = np.full((400, 400), 1e-3)
    calls = {
        "call": lambda: f(x),
        "python twin": lambda: f._native_route((x,), {}),
        "staged": lambda: f._call((x,), {}),
    }
    want = float(f(x))
    for _ in range(3):
        out = calls[route]()
        assert out._buffer.is_ready()  # done when the call returned
        x[0, 0] = 7.0  # the caller changes its array: the result already taken is the same
        assert float(out) == want
        x[0, 0] = 1e-3


@pytest.mark.skipif(cpu_async_dispatch(), reason="this process dispatches asynchronously (several devices)")
def test_small_numpy_arguments_are_copied_in_the_call_so_no_wait_is_needed():
    # The other side of dispatch._WAIT_BYTES: below it the native route does not wait, because
    # PJRT copies such arrays in the call and the program runs in the calling thread. Should a
    # jaxlib copy smaller arrays in the background, this fails (lower _WAIT_BYTES then).
    f = funcgrad.jit(_long)
    x = np.full((30, 30), 1e-3)  # 7 200 bytes
    small = np.full((16, 16), 1e-3)  # 2 048 bytes: below _WAIT_BYTES
    assert small.nbytes < dispatch._WAIT_BYTES <= x.nbytes
    f(small)
    for _ in range(5):
        assert f(small)._buffer.is_ready()
        if not jax_loaded():  # the native route exists only without jax's config (module docstring)
            assert f._native_route((small,), {})._buffer.is_ready()


def _voluntary_switches() -> int:
    with open("/proc/thread-self/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches line")


@pytest.mark.skipif(cpu_async_dispatch(), reason="this process dispatches asynchronously (several devices)")
@pytest.mark.skipif(not os.path.exists("/proc/thread-self/status"), reason="Linux's per-thread counters")
def test_a_call_on_device_arguments_runs_in_the_calling_thread():
    # Not only done when it returns: run by the calling thread, which never blocks. Handed to
    # PJRT's worker thread (asynchronous dispatch: FUNCGRAD_CPU_ASYNC_DISPATCH=1 counts 140-190
    # voluntary switches here, about one a call), each call of a few microseconds paid a futex
    # wake and a sleep in block_until_ready; on one core (GradBench pins its tools) the caller and
    # the worker then run in turn (issue 31: 43 us of wall for 17 us of CPU at n=5000).
    f = funcgrad.jit(funcgrad.grad(lambda v: fnp.log(fnp.sum(fnp.exp(v)))))  # above PJRT's inline limit
    x = funcgrad.device_put(np.linspace(0.0, 1.0, 5000))
    f(x).block_until_ready()
    before = _voluntary_switches()
    for _ in range(200):
        f(x).block_until_ready()
    assert _voluntary_switches() - before < 20
