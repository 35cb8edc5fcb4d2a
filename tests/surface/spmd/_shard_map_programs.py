"""The shard_map programs of test_shard_map_eager.py, written once for both libraries: each takes
``L``, the library (funcgrad, or jax in the oracle's subprocess). Importing it does nothing."""

from __future__ import annotations

PERM = [(i, (i + 1) % 4) for i in range(4)]


def printing(L):
    def f(a, b):
        print(a)
        return L.lax.psum(a + b, "y")

    return f


COLLECTIVES = [
    (lambda L: lambda a: L.lax.all_gather(a, "x", tiled=True), ("x",), ("x",)),
    (lambda L: lambda a: L.lax.ppermute(a, "x", PERM), ("x",), ("x",)),
    (lambda L: lambda a: a + L.lax.axis_index("x"), ("x",), ("x",)),
    (lambda L: lambda a: L.lax.psum_scatter(a, "x", tiled=True), (), ("x",)),
    (lambda L: lambda a: L.lax.pmax(a, ("x", "y")), ("x", "y"), ()),
    (lambda L: lambda a: L.lax.pmean(a.sum(0, keepdims=True), "x"), ("x",), ()),
]


def control(L):
    return lambda a: a * 2 if L.lax.psum(1, "x") == 4 else a


def gradient(L):
    def g(w, a):
        return L.grad(lambda w: L.lax.pmean(L.numpy.sum(a * w), ("x", "y")))(w)

    return g


def partial_manual(L):
    return lambda a: L.lax.psum(a, "x")
