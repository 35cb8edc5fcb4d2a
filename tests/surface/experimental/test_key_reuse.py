"""The key-reuse checker (``jax_debug_key_reuse``, ``jax.experimental.key_reuse``) against jax's:
the same programs raise ``KeyReuseError`` with the same message on both, or run on both, and the
consumption bits and signatures agree (funcgrad/_key_reuse.py, NOTE: [key reuse])."""

import re

import jax
import jax.experimental.key_reuse._core as jcore
import numpy as np
import pytest

import funcgrad
import funcgrad.experimental.key_reuse._core as fcore
import funcgrad.numpy as fnp
from funcgrad.errors import KeyReuseError


def _outcome(lib, run):
    """``run(lib)``'s message if it raises KeyReuseError, else "ok"."""
    try:
        run(lib)
    except (KeyReuseError, jax.errors.KeyReuseError) as e:
        return re.split(r":\s", str(e).splitlines()[0])[0]
    return "ok"


def _jnp(lib):
    return jax.numpy if lib is jax else fnp


# Programs checked with check_key_reuse (traced): (name, f(lib, key) -> value)
TRACED = {
    "reuse": lambda lib, k: lib.random.uniform(k) + lib.random.uniform(k),
    "split_then_draw": lambda lib, k: [lib.random.uniform(s) for s in lib.random.split(k)],
    "draw_after_split": lambda lib, k: (lib.random.split(k), lib.random.uniform(k)),
    "bits_twice": lambda lib, k: lib.random.bits(k) + lib.random.bits(k),
    "split_twice": lambda lib, k: (lib.random.split(k), lib.random.split(k)),
    "fold_in_then_draw": lambda lib, k: (lib.random.fold_in(k, 1), lib.random.uniform(k)),
    "broadcast_alias": lambda lib, k: lib.random.bits(k) + lib.vmap(lib.random.bits)(k[None]),
    "reshape_alias": lambda lib, k: lib.random.bits(k) + lib.random.bits(k.reshape((1,)).squeeze()),
    "slices": lambda lib, k: [lib.random.bits(s) for s in (lib.random.split(k)[0], lib.random.split(k)[1])],
    "jit_consumes": lambda lib, k: (lib.jit(lib.random.bits)(k), lib.random.bits(k)),
    "jit_passes": lambda lib, k: (lib.jit(lambda a, x: x)(k, 1.0), lib.random.bits(k)),
    "cond_then_draw": lambda lib, k: (
        lib.lax.cond(True, lib.random.uniform, lambda q: 1.0, k) + lib.random.uniform(k)
    ),
    "cond_fine": lambda lib, k: lib.lax.cond(True, lib.random.uniform, lib.random.normal, k),
    "scan_good": lambda lib, k: lib.lax.scan(
        lambda c, _: (lib.random.split(c)[0], lib.random.bits(lib.random.split(c)[1])), k, None, length=3
    ),
    "scan_reuses_carry": lambda lib, k: lib.lax.scan(lambda c, _: (c, lib.random.bits(c)), k, None, length=3),
    "scan_consumes_const": lambda lib, k: lib.lax.scan(
        lambda c, _: (c, lib.random.uniform(k)), 0.0, None, length=3
    ),
    "map_over_keys": lambda lib, k: lib.lax.map(lib.random.bits, lib.random.split(k, 4)),
    "while_good": lambda lib, k: lib.lax.while_loop(
        lambda c: c[1] < 3, lambda c: (lib.random.split(c[0])[0], c[1] + 1), (k, 0)
    ),
    "while_body_reuses": lambda lib, k: lib.lax.while_loop(
        lambda c: c[1] < 3, lambda c: (c[0], c[1] + lib.random.randint(c[0], (), 1, 3)), (k, 0)
    ),
    "while_cond_consumes": lambda lib, k: lib.lax.while_loop(
        lambda c: c[1] < lib.random.uniform(c[0]), lambda c: (c[0], c[1] + 1), (k, 0.0)
    ),
    "while_const": lambda lib, k: lib.lax.while_loop(
        lambda i: i < 3, lambda i: i + lib.random.randint(k, (), 1, 3), 0
    ),
    "remat": lambda lib, k: lib.checkpoint(lambda q: lib.random.bits(q) + lib.random.bits(q))(k),
}


@pytest.mark.parametrize("name", sorted(TRACED))
def test_check_key_reuse_as_jax(name):
    f = TRACED[name]
    expected = _outcome(jax, lambda lib: jcore.check_key_reuse(lambda k: f(lib, k), lib.random.key(0)))
    got = _outcome(funcgrad, lambda lib: fcore.check_key_reuse(lambda k: f(lib, k), lib.random.key(0)))
    assert got == expected


def _assertions(lib, core):
    """The consumption bits JAX's checker sees, through its assert_consumed/assert_unconsumed."""

    def f(keys, k):
        core.assert_unconsumed(keys)
        core.assert_unconsumed(keys[0])
        core.assert_consumed(keys, np.array([True, False]))
        k2 = k[None]
        core.consume(k)
        core.assert_consumed(k2)
        c = lib.random.clone(k)
        core.assert_unconsumed(c)
        k3 = lib.device_put(c)
        lib.random.bits(c)
        core.assert_consumed(k3)
        core.assert_unconsumed(lib.random.fold_in(k3, 1))

    keys = lib.random.split(lib.random.key(0))
    core.check_key_reuse(f, keys, lib.random.key(1))


def test_consumption_as_jax():
    _assertions(jax, jcore)
    _assertions(funcgrad, fcore)


def _eager(lib):
    """Eager checks with the flag on: each case's message (or "ok")."""
    out = {}
    k = lib.random.key(0)
    lib.random.normal(k)
    out["sampler"] = _outcome(lib, lambda lib: lib.random.normal(k))
    k = lib.random.key(0)
    with lib.disable_jit():
        lib.random.bits(k)
        out["bits_nojit"] = _outcome(lib, lambda lib: lib.random.bits(k))
    k = lib.random.key(1)
    bits = lib.jit(lib.random.bits)
    bits(k)
    out["jit_again"] = _outcome(lib, lambda lib: bits(k))
    closed = lib.random.key(2)
    g = lib.jit(lambda: lib.random.uniform(closed))
    g()
    out["closed_over"] = _outcome(lib, lambda lib: g())
    out["within_jit"] = _outcome(
        lib, lambda lib: lib.jit(lambda: TRACED["bits_twice"](lib, lib.random.key(0)))()
    )
    fine = lib.jit(lambda q: lib.random.bits(lib.random.split(q)[0]))
    out["fresh_keys"] = _outcome(lib, lambda lib: [fine(lib.random.key(i)) for i in range(2)])
    k = lib.random.key(3)
    k2 = lib.random.clone(k)
    lib.random.normal(k)  # (the sampler's program again: no compile)
    out["clone"] = (bool(np.all(k._consumed)), bool(np.any(k2._consumed)))
    empty = lib.random.split(lib.random.key(0), 0)
    out["vmap_empty"] = _outcome(
        lib, lambda lib: lib.vmap(lambda q: TRACED["split_then_draw"](lib, q))(empty)
    )
    return out


def test_eager_as_jax():
    with jax.debug_key_reuse(True):
        expected = _eager(jax)
    with funcgrad.debug_key_reuse(True):
        got = _eager(funcgrad)
    assert got == expected
    assert funcgrad.config.jax_debug_key_reuse is False  # (restored)


def test_function_type_signature_as_jax():
    key = funcgrad.random.key(0)
    assert fcore.function_type_signature(funcgrad.random.split, key) == fcore.KeyReuseSignature(
        fcore.Sink(0), fcore.Source(0)
    )
    assert fcore.function_type_signature(lambda k: k, key) == fcore.KeyReuseSignature(fcore.Forward(0, 0))
    assert fcore.function_type_signature(lambda k: funcgrad.random.bits(k), key) == fcore.KeyReuseSignature(
        fcore.Sink(0)
    )
    assert repr(fcore.KeyReuseSignature(fcore.Sink(1), fcore.Sink(0))) == repr(
        jcore.KeyReuseSignature(jcore.Sink(1), jcore.Sink(0))
    )


@pytest.mark.parametrize(
    "name",
    [
        "dynamic_update_slice",
        "slice",
        "slice_in_dim",
        "reshape",
        "concatenate",
        "split",
        "bits",
        "fold_in",
        "at_set",
        "at_get",
        "getitem",
    ],  # fmt: skip
)
def test_signatures_of_functions_as_jax(name):
    def fun(lib):
        lax, random = lib.lax, lib.random
        return {
            "dynamic_update_slice": (lambda a, b: lax.dynamic_update_slice(a, b, (1,)), 2),
            "slice": (lambda a: lax.slice(a, (1,), (3,)), 1),
            "slice_in_dim": (lambda a: lax.slice_in_dim(a, 0, 2), 1),
            "reshape": (lambda a: a.reshape(2, 2), 1),
            "concatenate": (lambda a, b: lax.concatenate([a, b], 0), 2),
            "split": (lambda a: random.split(a[0]), 1),
            "bits": (lambda a: random.bits(a[1]), 1),
            "fold_in": (lambda a: random.fold_in(a[2], 3), 1),
            "at_set": (lambda a, b: a.at[1].set(b[0]), 2),
            "at_get": (lambda a: a.at[2].get(), 1),
            "getitem": (lambda a: (a[1:3], a[None]), 1),
        }[name]

    def signature(lib, core):
        f, n = fun(lib)
        keys = lib.random.split(lib.random.key(0), 4)
        return repr(core.function_type_signature(f, *[keys[: 4 if i == 0 else 1] for i in range(n)]))

    assert signature(funcgrad, fcore) == signature(jax, jcore)
