"""A jitted call leaves no reference cycles for the garbage collector (JAX's core_test
``test_reference_cycles_jit``): tracing, lowering and running a new function create no
self-referencing closures."""

from __future__ import annotations

import gc

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax


def _garbage_after(make) -> list:
    """The cyclic garbage the call of a new jitted function creates. Objects that existed before
    the call are left out: an earlier test's user sharding and its bridge reference each other,
    and the call may drop the last reference to them (a cache entry replaced)."""
    make()(fnp.zeros(3)).block_until_ready()  # warm up: lazy imports make garbage once
    gc.collect()
    before = {id(o) for o in gc.get_objects()}
    fn = make()
    debug = gc.get_debug()
    try:
        fn(fnp.zeros(3)).block_until_ready()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        return [o for o in gc.garbage if id(o) not in before]
    finally:
        gc.set_debug(debug)
        gc.garbage.clear()


def test_jit_leaves_no_reference_cycles():
    assert _garbage_after(lambda: funcgrad.jit(lambda x: x.sum())) == []
    assert _garbage_after(lambda: funcgrad.jit(funcgrad.grad(lambda x: fnp.sin(x).sum()))) == []
    scan = lambda x: lax.scan(lambda c, y: (c + y, c), 0.0, x)[0]  # noqa: E731
    assert _garbage_after(lambda: funcgrad.jit(scan)) == []
