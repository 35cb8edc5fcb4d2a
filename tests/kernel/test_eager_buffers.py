"""NOTE: [eager buffers kept between calls] (funcgrad/kernel/numpy_plan.py): the interpreter of
cached eager programs writes large ufunc results into dead buffers of earlier steps and earlier
calls. Values stay those of the unrecorded path, and nothing a caller holds -- a result, an aux
output, a view of an intermediate -- is ever written over by a later call."""

from __future__ import annotations

import threading

import numpy as np

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.kernel import caches, numpy_plan

SHAPE = (96, 128)  # 96 KiB of float64: above the pool's smallest buffer
MIX = np.linspace(-1.0, 1.0, SHAPE[1] * SHAPE[1]).reshape(SHAPE[1], SHAPE[1]) / SHAPE[1]


def _loss(w, x):
    h = fnp.tanh(x * w + 0.5)  # large intermediates, dead after the backward pass
    m = h * h * x - fnp.exp(-h) + (h @ MIX) * 0.5  # (a matmul's result: not a ufunc's)
    aux = fnp.reshape(m, (-1,))  # a view of an intermediate, returned to the caller
    return fnp.sum(m * w) + fnp.sum(fnp.sin(h) ** 2), aux


def test_repeated_eager_grads_through_pooled_buffers_match_the_unrecorded_path(uncached):
    rng = np.random.default_rng(1)
    inputs = [(rng.standard_normal(SHAPE), rng.standard_normal(SHAPE)) for _ in range(5)]
    vg = funcgrad.value_and_grad(_loss, has_aux=True)
    with uncached:
        want = [vg(w, x) for w, x in inputs]
    got = [vg(w, x) for w, x in inputs]  # recorded, then cached: the later calls reuse buffers
    pooled = [p for _, p in numpy_plan._pools.values()]
    assert pooled and max(p.nbytes for p in pooled) >= np.prod(SHAPE) * 8  # the pool was used
    for (gv, gaux), g, (wv, waux), w in zip(
        (r[0] for r in got), (r[1] for r in got), (r[0] for r in want), (r[1] for r in want), strict=True
    ):
        # Checked after all five calls: no earlier result or aux view was written over.
        np.testing.assert_allclose(gv, wv, rtol=1e-12)
        np.testing.assert_allclose(gaux, waux, rtol=1e-12)
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_the_pool_is_bounded_and_clear_caches_frees_it(monkeypatch):
    funcgrad.clear_caches()
    g = funcgrad.grad(lambda w, x: _loss(w, x)[0])
    w, x = np.full(SHAPE, 0.3), np.full(SHAPE, -0.2)
    first = g(w, x)
    for _ in range(8):
        np.testing.assert_array_equal(g(w, x), first)
    # It holds at most what one call takes: buffers made by steps that cannot take one (a
    # matmul's result) are not hoarded call after call.
    ((plan_ref, pool),) = numpy_plan._pools.values()
    takers = [s[4] for s in plan_ref().steps if s[0] in (numpy_plan._UNARY_POOL, numpy_plan._BINARY_POOL)]
    assert 0 < pool.nbytes <= sum(np.prod(shape) * dtype.itemsize for shape, dtype in takers)
    assert caches.cache_sizes()["kernel.eager_buffer_pools"] > 0
    funcgrad.clear_caches()
    assert not numpy_plan._pools
    monkeypatch.setattr(numpy_plan, "_POOL_MAX_BYTES", 3 * np.prod(SHAPE) * 8)
    for _ in range(3):
        np.testing.assert_array_equal(g(w, x), first)
    assert 0 < max(p.nbytes for _, p in numpy_plan._pools.values()) <= numpy_plan._POOL_MAX_BYTES


def test_threads_running_one_cached_program_never_share_a_buffer():
    g = funcgrad.grad(lambda w, x: _loss(w, x)[0])
    rng = np.random.default_rng(2)
    inputs = [(rng.standard_normal(SHAPE), rng.standard_normal(SHAPE)) for _ in range(3)]
    want = [g(w, x) for w, x in inputs]  # (the second sighting on: the cached program)
    got = [None] * len(inputs)

    def work(k):
        for _ in range(3):
            got[k] = g(*inputs[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
