"""The control-flow trace cache (NOTE: [control-flow trace cache]): a scan body, cond branch or loop
function traced again for the same types runs its Python once, as in jax 0.10.2 (counted on both),
and values stay right where nothing may be reused (a closure over a jit tracer, a Ref)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

F32 = np.float32


def _counts(lib, jnp):
    n = {"scan": 0, "cond": 0, "while": 0, "fori": 0}

    def body(c, x):
        n["scan"] += 1
        return c + x, c

    def branch(x):
        n["cond"] += 1
        return x + 1

    def step(c):
        n["while"] += 1
        return c + 1

    def fori_body(i, c):
        n["fori"] += 1
        return c + i

    xs = jnp.arange(3, dtype=F32)
    for _ in range(2):
        lib.lax.scan(body, F32(0), xs)
        lib.lax.cond(True, branch, branch, F32(1))
        lib.lax.while_loop(lambda c: c < 3, step, F32(0))
        lib.lax.fori_loop(0, 3, fori_body, F32(0))
    lib.jit(lambda x: lib.lax.scan(body, x, xs))(F32(1))  # inside a new jit trace: still cached
    return n


def test_trace_counts_match_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    assert _counts(funcgrad, fnp) == _counts(jax, jnp)


def test_nothing_stale_is_reused():
    @funcgrad.jit
    def g(x):  # the body closes over a jit tracer: traced anew each time
        return funcgrad.lax.scan(lambda c, _: (c + x, None), F32(0), None, length=2)[0]

    assert float(g(F32(1))) == 2.0 and float(g(F32(2))) == 4.0
    r = funcgrad.new_ref(F32(1))

    def read(c, _):  # reads a Ref: its value at each call
        return c + r[...], None

    assert float(funcgrad.lax.scan(read, F32(0), None, length=2)[0]) == 2.0
    r[...] = F32(5)
    assert float(funcgrad.lax.scan(read, F32(0), None, length=2)[0]) == 10.0
