"""Sharded programs from JAX's own pjit_test and shard_map_test, cut to their core, against jax
0.10.2 on 8 devices: the value, the result's sharding and each shard's shape, or the error's type
and words.

One program runs in jax (a subprocess: ``_jax_oracle``) and here on funcgrad, its names bound to
funcgrad's modules (this process must not import jax)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from _jax_oracle import run_jax

import funcgrad.numpy as fnp

PROGRAM = """
d = jax.devices()
x8 = np.arange(64, dtype=np.float32).reshape(8, 8)


def desc(a):
    spec = getattr(a.sharding, "spec", None)
    return [np.asarray(a).tolist(), None if spec is None else str(spec),
            sorted({tuple(s.data.shape) for s in a.addressable_shards})]


def placed(a):
    shards = a.addressable_shards
    return sorted([s.device.id, str(s.index), np.asarray(s.data).ravel()[:2].tolist()] for s in shards)


def excepted(fn):
    try:
        fn()
    except Exception as e:
        return e


def error(fn):
    try:
        fn()
        return "no error"
    except Exception as e:
        return [type(e).__name__, str(e).split(".")[0]]


cases = {}
mesh2 = jax.sharding.Mesh(np.array(d[:2]), ("x",))
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    pjit = jax.experimental.pjit.pjit
    # pjit's None: replicated over the mesh of `with mesh:` (jit's None leaves the layout open)
    with mesh2:
        cases["pjit out None"] = desc(
            pjit(lambda a, b: a + b, in_shardings=(P("x"), P("x")), out_shardings=None)(x8, x8 + 1))
        cases["pjit in None"] = desc(pjit(lambda a: a * 2, in_shardings=None, out_shardings=P("x"))(x8))
        cases["pjit default"] = desc(pjit(lambda a: a * 2, in_shardings=P("x"))(x8))
        cases["pjit tree None"] = [desc(v) for v in pjit(
            lambda a: (a, a * 2), in_shardings=P("x"), out_shardings=(P("x"), None))(x8)]
    cases["pjit None, no mesh"] = desc(pjit(lambda a: a + 1, in_shardings=None, out_shardings=None)(x8))
# The same devices in another order (a mesh of swapped axes): moved through the host, where a
# program over one device order crashed on buffers in the other
reordered = jax.sharding.Mesh(np.asarray(d).reshape(2, 2, 2).swapaxes(0, 1), ("a", "b", "c"))
in_order = jax.sharding.Mesh(np.asarray(d).reshape(2, 2, 2), ("a", "b", "c"))
y1 = jax.device_put(x8, NamedSharding(in_order, P("c")))
cases["device_put reordered"] = placed(jax.device_put(y1, NamedSharding(reordered, P("a"))))
r_a, r_none = NamedSharding(reordered, P("a")), NamedSharding(reordered, P())
cases["jit reordered"] = error(lambda: jax.jit(lambda a: a * 2, out_shardings=r_a)(y1))
cases["jit reordered args"] = error(lambda: jax.jit(jnp.multiply)(y1, jax.device_put(x8, r_none)))
# shard_map's result is laid out as its out_specs, named as written (an axis of size 1 kept)
m12 = jax.sharding.Mesh(np.asarray(d[:2]).reshape(1, 2), ("x", "y"))
z = jax.device_put(x8, NamedSharding(m12, P("x", "y")))
for name, fn in [("identity", lambda a: a), ("mul", lambda a: a * 2)]:
    g = jax.shard_map(fn, mesh=m12, in_specs=P("x", "y"), out_specs=P("x", "y"))
    cases[f"shard_map {name} size-1 axis"] = [desc(g(z)), desc(jax.jit(g)(z))]
# check_vma through control flow: a cond's result varies as its branches' results (not as the
# operands no branch reads, nor as the predicate); a scan's carry as its fixed point
m22 = jax.sharding.Mesh(np.asarray(d[:4]).reshape(2, 2), ("x", "y"))
v = np.arange(4.0, dtype=np.float32)
bodies = {
    "cond": lambda a, b: jax.lax.cond(True, lambda a, b: a, lambda a, b: a + 1, a, b),
    "cond on y": lambda a, b: jax.lax.cond(jnp.any(b > 0), lambda a, b: a, lambda a, b: a + 1, a, b),
    "switch": lambda a, b: jax.lax.switch(1, [lambda a, b: a * 2, lambda a, b: a], a, b),
    "scan": lambda a, b: jax.lax.scan(lambda c, _: (c * 2, c), a, None, length=2)[0],
    "fori": lambda a, b: jax.lax.fori_loop(0, 3, lambda i, c: c + a, a),
}
for name, body in bodies.items():
    for spec in (P("x"), P()):
        g = jax.shard_map(body, mesh=m22, in_specs=(P("x"), P("y")), out_specs=spec)
        for how, call in (("eager", g), ("jit", jax.jit(g))):
            try:
                got = np.asarray(call(v, v)).tolist()
            except Exception as e:
                got = type(e).__name__
            cases[f"check_vma {name} {spec} {how}"] = got
# A nested shard_map without axis_names is manual over the axes the enclosing ones leave
m22a = jax.sharding.Mesh(np.asarray(d[:4]).reshape(2, 2), ("i", "j"))
w = jax.device_put(x8[:4], NamedSharding(m22a, P("i", "j")))
inner = lambda a: jax.shard_map(lambda b: b * b, in_specs=P(None, "j"), out_specs=P(None, "j"))(a)
outer = jax.jit(jax.shard_map(inner, in_specs=P("i", None), out_specs=P("i", None), axis_names={"i"},
                              check_vma=False))
with jax.set_mesh(m22a):
    cases["nested shard_map default axis_names"] = desc(outer(w))
# a vmap's axis named as a mesh axis is shadowed by the shard_map's
g = jax.shard_map(lambda a: 2.0 * a, mesh=m22, in_specs=P("y"), out_specs=P("y"))
cases["vmap axis named as the mesh's"] = np.asarray(jax.vmap(g, axis_name="x")(x8)).tolist()
# A ShapeDtypeStruct given a bare PartitionSpec: its sharding over the mesh in scope when read;
# zeros_like/full_like of one take its sharding
sds = jax.ShapeDtypeStruct((8, 8), np.float32, sharding=P("x"))
cases["sds P no mesh"] = error(lambda: sds.sharding)
cases["sds P rank"] = error(lambda: jax.ShapeDtypeStruct((8,), np.float32, sharding=P(None, "x")))
with jax.set_mesh(mesh2):
    cases["sds P sharding"] = str(sds.sharding.spec)
    cases["sds P lowered"] = desc(jax.jit(lambda a: a * 2).lower(sds).compile()(jax.device_put(x8, P("x"))))
named = jax.ShapeDtypeStruct((8, 8), np.float32, sharding=NamedSharding(mesh2, P(None, "x")))
cases["zeros_like sds"] = [desc(jnp.zeros_like(named)), desc(jnp.full_like(named, 2.0))]
cases["shard_map no mesh"] = error(lambda: jax.shard_map(lambda a: a, in_specs=P(), out_specs=P())(x8))
# Donation over several devices: an input is aliased only to an output laid out as it is (a
# replicated result of the same global type is no place for a split input's blocks)
s_x, s_r = NamedSharding(mesh2, P("x")), NamedSharding(mesh2, P())
a1, a2 = jax.device_put(np.ones((2, 5), np.float32), s_x), jax.device_put(np.ones((2, 7), np.float32), s_x)
wsc = jax.lax.with_sharding_constraint
outs = jax.jit(lambda p, q: (wsc(p, s_r), p, wsc(q, s_r), q * 2), donate_argnums=1)(a1, a2)
cases["donation layouts"] = [[desc(o) for o in outs], a1.is_deleted(), a2.is_deleted()]
# Sharding in types: concatenate along a sharded dimension keeps the operands' sharding
explicit = (jax.sharding.AxisType.Explicit,) * 2
ex = jax.sharding.Mesh(np.asarray(d[:4]).reshape(2, 2), ("x", "y"), axis_types=explicit)
with jax.set_mesh(ex):
    c1 = jax.device_put(x8[:4], NamedSharding(ex, P("x", "y")))
    c2 = jax.device_put(x8[:4, :2], NamedSharding(ex, P("x", "y")))
    typed = []
    both = lambda a, b: jnp.concatenate([a, b], 1)  # noqa: E731
    cat = jax.jit(lambda a, b: typed.append(str(jax.typeof(both(a, b)))) or both(a, b))
    cases["explicit concatenate"] = [desc(cat(c1, c2)), typed]
# A spec longer than its value's rank: JAX's first line for an input and for an output
too_long_in = jax.shard_map(lambda a: a, mesh=m22, in_specs=P("x", None, None), out_specs=P("x"))
too_long_out = jax.shard_map(lambda a: a.sum(), mesh=m22, in_specs=P("x"), out_specs=P("x"))
cases["shard_map rank errors"] = [
    [type(e).__name__, str(e).splitlines()[0]]
    for e in (excepted(lambda: too_long_in(x8)), excepted(lambda: too_long_out(v)))
]
# An unreduced result of a jitted einsum (out_sharding=P(..., unreduced=)) keeps its type
ex1 = jax.sharding.Mesh(np.asarray(d[:2]), ("x",), axis_types=(jax.sharding.AxisType.Explicit,))
with jax.set_mesh(ex1):
    xa = jax.device_put(np.arange(4.0, dtype=np.float32).reshape(2, 2), P(None, "x"))
    ya = jax.device_put(np.arange(4.0, dtype=np.float32).reshape(2, 2), P("x", None))
    unred = P(None, None, unreduced={"x"})
    u = jax.jit(lambda a, b: jnp.einsum("ab,bc->ac", a, b, out_sharding=unred))(xa, ya)
    cases["unreduced einsum"] = [str(u.sharding.spec), np.asarray(jax.reshard(u, P())).tolist()]
# device_put of a value an eager derivative traces: the cotangent goes back to the concrete
# value's sharding (JAX's source inference); under jit there is none, and it stays as put
rep = NamedSharding(mesh2, P())
f_dp = lambda a: (jax.device_put(a, rep) ** 2).sum()  # noqa: E731
va = jnp.asarray(v)  # (an Array's sharding is the source; a NumPy array has none)
vjp_dp = jax.vjp(lambda a: jax.device_put(a, rep) * 2, va)[1](va)[0]
cases["device_put cotangent"] = [[type(g.sharding).__name__, np.asarray(g).tolist()] for g in (
    jax.grad(f_dp)(v), jax.grad(f_dp)(va), vjp_dp)] + [desc(jax.jit(jax.grad(f_dp))(va)), desc(
    jax.jvp(lambda a: jax.device_put(a, rep), (v,), (v,))[1])]
# in_shardings placing only unused arguments: JAX prunes them first (keep_unused=False), and the
# program runs on one device, its result uncommitted; kept, on the mesh
s_x8 = NamedSharding(mesh2, P("x"))
cases["in_shardings unused"] = [[type(o.sharding).__name__, o.committed] for o in (
    jax.jit(lambda a: jnp.ones(3), in_shardings=s_x8)(x8),
    jax.jit(lambda a, b: b * 2, in_shardings=(s_x8, None))(x8, 1.0),
    jax.jit(lambda a: a * 2, in_shardings=s_x8)(x8),
    jax.jit(lambda a: jnp.ones(3), in_shardings=s_x8, keep_unused=True)(x8))]
# isfinite/isnan of integers is a constant of x's shape, traced as JAX's full_like: a sharding
# constraint on it lays the jitted result out over the mesh; eagerly, laid out as x
ints = np.arange(8, dtype=np.int32)
wsc_rep = lambda a: jax.lax.with_sharding_constraint(a, NamedSharding(mesh2, P()))  # noqa: E731
cases["isfinite of integers"] = [desc(jax.jit(lambda a: wsc_rep(f(a)))(ints)) for f in (
    jnp.isfinite, jnp.isnan)] + [desc(jnp.isinf(jax.device_put(ints, s_x8)))]
# the gradient of a shard_map with respect to a complex input its body never reads: zeros (an
# all-reduce of a broadcast complex zero aborted the process in XLA's simplifier)
m222 = jax.sharding.Mesh(np.asarray(d).reshape(2, 2, 2), ("x", "y", "z"))
g_c = jax.shard_map(lambda a, b: a * 2, mesh=m222, in_specs=(P(), P(None)), out_specs=P(("x", "y")),
                    check_vma=False)
ca, cb = np.array([-1 - 1j, 0.5j], np.complex64), np.ones(8, np.complex64)
cases["shard_map complex unused input"] = [str(np.asarray(v).tolist()) for v in jax.grad(
    lambda a, b: jnp.real(jnp.sum(g_c(a, b))), argnums=(0, 1))(ca, cb)]
"""

ORACLE = (
    "import json, warnings, numpy as np, jax, jax.numpy as jnp, jax.experimental.pjit\n"
    "from jax.sharding import NamedSharding, PartitionSpec as P\n" + PROGRAM + "print(json.dumps(cases))\n"
)


@pytest.fixture(scope="module")
def results():
    import funcgrad.experimental.pjit  # noqa: F401 - jax.experimental.pjit in the program
    from funcgrad.sharding import NamedSharding, PartitionSpec

    names = {"np": np, "jax": funcgrad, "jnp": fnp, "warnings": warnings, "NamedSharding": NamedSharding}
    names["P"] = PartitionSpec
    exec(PROGRAM, names)
    return json.loads(json.dumps(names["cases"])), run_jax(ORACLE)


@pytest.mark.parametrize("case", ["pjit out None", "pjit in None", "pjit default", "pjit tree None",
                                  "pjit None, no mesh", "device_put reordered", "jit reordered",
                                  "jit reordered args", "shard_map identity size-1 axis",
                                  "shard_map mul size-1 axis",
                                  "nested shard_map default axis_names",
                                  "vmap axis named as the mesh's", "sds P no mesh", "sds P rank",
                                  "sds P sharding", "sds P lowered", "zeros_like sds",
                                  "shard_map no mesh", "donation layouts",
                                  "explicit concatenate", "shard_map rank errors",
                                  "unreduced einsum", "device_put cotangent",
                                  "in_shardings unused", "isfinite of integers",
                                  "shard_map complex unused input"])  # fmt: skip
def test_as_jax(results, case):
    got, want = results
    assert got[case] == want[case]


def test_check_vma_through_control_flow_as_jax(results):
    got, want = results
    names = [k for k in want if k.startswith("check_vma")]
    assert len(names) == 20 and {k: got[k] for k in names} == {k: want[k] for k in names}


pytestmark = pytest.mark.slow  # (the jax oracle's process, shared with the other spmd files)
