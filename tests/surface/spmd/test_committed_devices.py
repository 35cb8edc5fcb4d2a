"""Committed arrays (NOTE: [committed arrays] in xla_bridge/committed.py) against jax 0.10.2 on 8
devices: which results are committed and where they live, through eager operations, jitted calls
(the native dispatcher's hits and misses), transformations, ``device_put``, shardings and the
``*_like`` constructors; and JAX's error when committed arguments on different devices meet.

One program runs in jax (a subprocess: ``_jax_oracle``) and here on funcgrad, its names bound to
funcgrad's modules (this process must not import jax)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from _jax_oracle import run_jax

import funcgrad
import funcgrad.numpy as fnp

PROGRAM = """
d = jax.devices()
z = jax.device_put(np.arange(4.0, dtype=np.float32), d[1])
w = jax.device_put(np.ones(4, np.float32), d[2])
x = jnp.ones(4, dtype=np.float32)
mesh = jax.make_mesh((8,), ("x",))
n = jax.device_put(np.ones(8, np.float32), NamedSharding(mesh, P("x")))
f = jax.jit(lambda a, b: a * b)
cases = [
    ("jnp.ones", lambda: x), ("device_put", lambda: jax.device_put(np.ones(2))),
    ("device_put d1", lambda: z), ("device_put(z)", lambda: jax.device_put(z)),
    ("device_put(x)", lambda: jax.device_put(x)), ("device_put(x, d0)", lambda: jax.device_put(x, d[0])),
    ("z + x", lambda: z + x), ("x + x", lambda: x + x), ("sin z", lambda: jnp.sin(z)),
    ("z[1:3]", lambda: z[1:3]), ("z.sum", lambda: z.sum()), ("z @ z", lambda: z @ z),
    ("f(x, x)", lambda: f(x, x)), ("f(z, x)", lambda: f(z, x)), ("f(x, x) again", lambda: f(x, x)),
    ("f(x, np)", lambda: f(x, np.ones(4, np.float32))), ("f(f(z, x), x)", lambda: f(f(z, x), x)),
    ("jit tree", lambda: jax.jit(lambda t: {"a": t[0] * 2, "b": t[1]})((z, x))),
    ("grad", lambda: jax.grad(lambda a: jnp.sum(a**2))(z)), ("vmap", lambda: jax.vmap(jnp.sin)(z)),
    ("vjp", lambda: jax.vjp(jnp.sin, z)[1](x)),
    ("scan", lambda: jax.lax.scan(lambda c, a: (c + a, a), 0.0, z)),
    ("loop over captured z", lambda: jax.lax.fori_loop(0, 2, lambda i, c: c * z, x)),
    ("random", lambda: jax.random.normal(jax.device_put(jax.random.key(0), d[3]), (2,))),
    ("zeros_like", lambda: jnp.zeros_like(z)), ("full_like", lambda: jnp.full_like(z, 2.0)),
    ("copy", lambda: jnp.copy(z)), ("to_device", lambda: x.to_device(d[5])),
    # the device= argument: an Array already there is kept (uncommitted if it was); host data, a
    # dtype conversion or another device place it, committed
    ("asarray(x, d0)", lambda: jnp.asarray(x, device=d[0])),
    ("array(x, d0)", lambda: jnp.array(x, device=d[0])),
    ("asarray(x, d0) is x", lambda: [jnp.asarray(x, device=SingleDeviceSharding(d[0])) is x, x]),
    ("asarray(z, d1) is z", lambda: [jnp.asarray(z, device=d[1]) is z, z]),
    ("asarray(x, d4)", lambda: jnp.asarray(x, device=d[4])),
    ("array([x, x], d0)", lambda: jnp.array([x, x], device=d[0])),
    ("asarray(x, int32, d0)", lambda: jnp.asarray(x, np.int32, device=d[0])),
    ("asarray(np, d0)", lambda: jnp.asarray(np.ones(2), device=d[0])),
    ("asarray(2.0, d0)", lambda: jnp.asarray(2.0, device=d[0])),
    ("SingleDeviceSharding", lambda: jax.device_put(x, SingleDeviceSharding(d[6]))),
    ("jit out_shardings d6", lambda: jax.jit(lambda a: a * 2, out_shardings=SingleDeviceSharding(d[6]))(x)),
    ("shard data", lambda: n.addressable_shards[2].data), ("n * 2", lambda: n * 2),
    ("n + ones", lambda: n + jnp.ones(8, dtype=np.float32)),
    # device_put under grad: the value on d1, the cotangent back on the source's device
    ("grad device_put d0->d1",
     lambda: jax.value_and_grad(lambda a: jax.device_put(a, d[1]))(jax.device_put(2.0, d[0]))),
    ("grad device_put z->d4", lambda: jax.value_and_grad(lambda a: jnp.sum(jax.device_put(a * a, d[4])))(z)),
    ("vjp device_put x->d2", lambda: jax.vjp(lambda a: jax.device_put(jnp.sin(a), d[2]), x)[1](x)),
    # arguments the program never reads choose no devices (keep_unused=False): each twice, the
    # second a native dispatcher's hit
    *[(f"unused {k} {i}", c) for i in range(2) for k, c in [
        ("n", lambda: jax.jit(lambda a: jnp.ones(3))(n)),
        ("n in_shardings", lambda: jax.jit(lambda a: jnp.ones(3), in_shardings=n.sharding)(n)),
        ("n, used x", lambda: jax.jit(lambda a, b: b + 1)(n, x)),
        ("n, used z", lambda: jax.jit(lambda a, b: b + 1)(n, z)),
        ("z, used n", lambda: jax.jit(lambda a, b: a + 1)(n, z)),
        ("n and z", lambda: jax.jit(lambda a, b: jnp.ones(2))(n, z)),
        ("n keep_unused", lambda: jax.jit(lambda a: jnp.ones(3), keep_unused=True)(n)),
        ("n, used x, compiled", lambda: jax.jit(lambda a, b: b + 1).lower(n, x).compile()(n, x)),
    ]],
]
out = {}
for name, fn in cases:
    leaves = jax.tree_util.tree_leaves(fn())
    out[name] = [
        a if isinstance(a, bool) else [bool(a.committed), sorted(e.id for e in a.devices())] for a in leaves
    ]
errors = []
for fn in (lambda: z + w, lambda: f(z, w), lambda: f(n, jax.device_put(np.ones(8, np.float32), d[1]))):
    try:
        fn()
        errors.append("no error")
    except ValueError as e:
        errors.append(str(e))
out["errors"] = errors
# A sharding that does not fit its value: a spec longer than the rank, a dimension the axes do not
# divide (jax's pjit_check_aval_sharding words, IndivisibleError), from each entry point
auto = jax.sharding.Mesh(np.array(d), ("x",))  # (Auto axes: make_mesh's Explicit ones trip a jax assert)
rank3 = NamedSharding(auto, P(None, None, "x"))
shape_errors = []
for fn in (
    lambda: jax.device_put(np.ones(3, np.float32), rank3),
    lambda: jax.device_put(np.float32(1), NamedSharding(auto, P("x"))),
    lambda: jax.device_put(np.ones(6, np.float32), NamedSharding(auto, P("x"))),
    lambda: jax.jit(lambda a, b: a, in_shardings=(None, rank3))(x, {"k": [x]}),
    lambda: jax.jit(lambda a: (a, a), out_shardings=(None, rank3))(x),
    lambda: jax.jit(lambda a: a, in_shardings=NamedSharding(auto, P("x")))(np.ones(6, np.float32)),
    lambda: jax.lax.with_sharding_constraint(np.ones(3, np.float32), rank3),
    lambda: jax.jit(lambda a: jax.lax.with_sharding_constraint(a, rank3))(x),
    lambda: jax.ShapeDtypeStruct((3,), np.float32, sharding=rank3),
    lambda: rank3.check_compatible_aval((8,)),
    lambda: str(P(("x",), (), None)) + str(P(("x",)) == P("x")),
):
    try:
        shape_errors.append(["no error", str(fn())])
    except ValueError as e:
        shape_errors.append([type(e).__name__, str(e)])
out["shape_errors"] = shape_errors
"""

ORACLE = (
    "import json, numpy as np, jax, jax.numpy as jnp\n"
    "from jax.sharding import NamedSharding, PartitionSpec as P, SingleDeviceSharding\n"
    + PROGRAM
    + "print(json.dumps(out))\n"
)


pytestmark = pytest.mark.slow  # (jax's import in the oracle's process: about 6 s)


@pytest.fixture(scope="module")
def results():
    from funcgrad.sharding import NamedSharding, PartitionSpec, SingleDeviceSharding

    names = {
        "np": np,
        "jax": funcgrad,
        "jnp": fnp,
        "NamedSharding": NamedSharding,
        "P": PartitionSpec,
        "SingleDeviceSharding": SingleDeviceSharding,
    }
    exec(PROGRAM, names)
    return names["out"], run_jax(ORACLE)


def test_committed_and_devices_as_jax(results):
    got, want = results
    mine = ("errors", "shape_errors")
    assert {k: v for k, v in got.items() if k not in mine} == {k: v for k, v in want.items() if k not in mine}


def test_sharding_shape_errors_as_jax(results):
    # JAX's types and words (user code matches them: pytest.raises(ValueError, match=...)), and
    # PartitionSpec's canonical form ('x',) -> 'x', () -> None, in its repr and equality
    got, want = results
    assert got["shape_errors"] == want["shape_errors"]


def test_incompatible_devices_error_as_jax(results):
    got, want = results
    assert len(got["errors"]) == 3
    # jitted calls: the same text (the parameters' names, shapes with their sharding, device ids)
    assert got["errors"][1:] == want["errors"][1:]
    # An eager operation names the primitive's operands (args[0]; jax's jnp.add is a jitted
    # function of x, y), so that case is compared without the names.
    unnamed = [re.sub(r"argument \S+ of", "argument _ of", e) for e in (got["errors"][0], want["errors"][0])]
    assert unnamed[0] == unnamed[1]
