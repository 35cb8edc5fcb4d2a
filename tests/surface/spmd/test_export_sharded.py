"""funcgrad.export of functions with shardings (JAX's device-polymorphic export, its
``export/export.md``) against jax.export run in a subprocess (the oracle): ``nr_devices``,
``in_shardings_jax`` on another mesh, a call placing its arguments with the exported shardings on
the devices of its arguments (reversed or another mesh shape), the values and the shards'
devices and indices, the call refused on one device with JAX's exception type, and ``jit`` and
``grad`` of the call (NOTE: [exporting with shardings]).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from _jax_oracle import run_jax

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import export
from funcgrad.sharding import AbstractMesh, Mesh, NamedSharding
from funcgrad.sharding import PartitionSpec as P

# The same program for both libraries (``lib``: jax or funcgrad through its names).
SCRIPT = """
import json, numpy as np
def run(jax, jnp, export, AbstractMesh, Mesh, NamedSharding, P):
    out = {}
    devs = jax.devices()
    mesh8 = Mesh(devs, ("a",))
    exp = export.export(jax.jit(lambda x: x * 2 + 1, in_shardings=NamedSharding(mesh8, P("a"))))(
        np.arange(8.0))
    out["nr8"] = exp.nr_devices
    run_mesh = Mesh(devs[::-1], ("a",))
    res = exp.call(jax.device_put(np.arange(8.0), exp.in_shardings_jax(run_mesh)[0]))
    out["rev"] = [(s.device.id, str(s.index), np.asarray(s.data).tolist()) for s in res.addressable_shards]
    exp4 = export.export(jax.jit(lambda x: jnp.sin(x).T))(
        jax.ShapeDtypeStruct((8, 2), np.float64, sharding=NamedSharding(AbstractMesh((4,), ("a",)), P("a"))))
    out["nr4"] = exp4.nr_devices
    out["ins"] = repr(exp4.in_shardings_jax(AbstractMesh((4,), ("a",))))
    x = np.arange(16.0).reshape(8, 2)
    other = Mesh(np.array(devs[2:6]).reshape(2, 2), ("b", "c"))
    r2 = exp4.call(jax.device_put(x, NamedSharding(other, P("b"))))
    out["other"] = [(s.device.id, str(s.index)) for s in r2.addressable_shards]
    out["val"] = np.asarray(r2).tolist()
    try:
        exp4.call(x)
        out["one"] = None
    except Exception as e:
        out["one"] = type(e).__name__
    xa = jax.device_put(x, NamedSharding(Mesh(devs[:4], ("a",)), P("a")))
    out["jit"] = np.asarray(jax.jit(lambda v: exp4.call(v) * 3)(xa)).tolist()
    out["grad"] = np.asarray(jax.grad(lambda v: exp4.call(v).sum())(xa)).tolist()
    # serialized with its shardings and read back: the same calls
    d4 = export.deserialize(exp4.serialize(vjp_order=1))
    out["d_nr"] = d4.nr_devices
    out["d_ins"] = repr(d4.in_shardings_jax(AbstractMesh((4,), ("a",))))
    rd = d4.call(jax.device_put(x, NamedSharding(other, P("b"))))
    out["d_other"] = [(s.device.id, str(s.index)) for s in rd.addressable_shards]
    out["d_val"] = np.asarray(rd).tolist()
    out["d_grad"] = np.asarray(jax.grad(lambda v: d4.call(v).sum())(xa)).tolist()
    return out
"""

ORACLE = (
    SCRIPT
    + """
import jax, jax.numpy as jnp
from jax import export
from jax.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec as P
print(json.dumps(run(jax, jnp, export, AbstractMesh, Mesh, NamedSharding, P)))
"""
)


@pytest.mark.slow  # (the jax oracle's subprocess: ~5 s)
def test_sharded_export_as_jax():
    want = run_jax(ORACLE)
    ns: dict = {}
    exec(SCRIPT, ns)  # noqa: S102 (the same program, on funcgrad)
    got = ns["run"](funcgrad, fnp, export, AbstractMesh, Mesh, NamedSharding, P)
    lists = ("rev", "other", "d_other")
    got = {k: [list(t) for t in v] if k in lists else v for k, v in got.items()}
    want = {k: [list(t) for t in v] if k in lists else v for k, v in want.items()}
    for key in ("nr8", "rev", "nr4", "ins", "other", "one", "d_nr", "d_ins", "d_other"):
        assert got[key] == want[key], key
    for key in ("val", "jit", "grad", "d_val", "d_grad"):
        np.testing.assert_allclose(got[key], want[key], rtol=1e-14)


def test_jax_sharded_artifact_runs_in_funcgrad():
    # JAX's export with shardings for 2 devices, deserialized here: called on a mesh of funcgrad's
    # devices (its one-device program partitioned with the exported shardings), and differentiated
    jax = pytest.importorskip("jax")
    jnp, js = jax.numpy, jax.sharding
    jm = js.Mesh(jax.devices()[:2], ("x",))
    jf = jax.jit(
        lambda b: jnp.sin(b) @ b.T,
        in_shardings=(js.NamedSharding(jm, js.PartitionSpec("x", None)),),
        out_shardings=js.NamedSharding(jm, js.PartitionSpec(None, "x")),
    )
    a = np.arange(64, dtype=np.float32).reshape(16, 4) / 64
    d = export.deserialize(jax.export.export(jf)(a).serialize(vjp_order=1))
    assert d.nr_devices == 2
    x = funcgrad.device_put(a, d.in_shardings_jax(Mesh(funcgrad.devices()[2:4], ("x",)))[0])
    r = d.call(x)
    assert r.sharding.spec == P(None, "x") and {s.device.id for s in r.addressable_shards} == {2, 3}
    np.testing.assert_allclose(r, jf(a), rtol=1e-6)
    g = funcgrad.grad(lambda v: fnp.sum(d.call(v)))(x)
    np.testing.assert_allclose(g, jax.grad(lambda v: jnp.sum(jf(v)))(a), rtol=1e-5)
    with pytest.raises(
        ValueError, match="was exported for 2 devices and is called in a context with 1 devices"
    ):
        d.call(a)


def test_jax_sharded_artifact_with_a_sharding_constraint_runs_in_funcgrad():
    # JAX's sdy.sharding_constraint inside the module is dropped with the other annotations (the
    # walk over the module erased it, then read its regions: RuntimeError 'the operation has been
    # invalidated')
    jax = pytest.importorskip("jax")
    js = jax.sharding
    jm = js.Mesh(jax.devices()[:2], ("x",), axis_types=(js.AxisType.Auto,))
    s = js.NamedSharding(jm, js.PartitionSpec("x"))
    jf = jax.jit(lambda b: jax.lax.with_sharding_constraint(b * 2, s) + 1, in_shardings=s, out_shardings=s)
    a = np.arange(8, dtype=np.float32)
    exported = jax.export.export(jf)(a)
    assert "sdy.sharding_constraint" in exported.mlir_module()
    d = export.deserialize(exported.serialize())
    x = funcgrad.device_put(a, d.in_shardings_jax(Mesh(funcgrad.devices()[:2], ("x",)))[0])
    np.testing.assert_allclose(d.call(x), jf(a))


def test_constraint_mesh_gives_the_device_count():
    # a sharding constraint over 2 devices inside a plain jit: exported for 2 devices (JAX's
    # nr_devices), called on 2 devices, refused on 8 with JAX's ValueError text
    mesh2 = Mesh(funcgrad.devices()[:2], ("i",))

    def f(x):
        return fnp.sum(funcgrad.lax.with_sharding_constraint(x, NamedSharding(mesh2, P("i"))) ** 2, axis=0)

    a = np.arange(80, dtype=np.float32).reshape(8, 10)
    exp = export.deserialize(export.export(funcgrad.jit(f))(a).serialize())
    assert exp.nr_devices == 2
    np.testing.assert_allclose(exp.call(funcgrad.device_put(a, NamedSharding(mesh2, P("i")))), f(a))
    mesh8 = Mesh(funcgrad.devices(), ("i",))
    with pytest.raises(ValueError, match="exported for 2 devices and is called in a context with 8 devices"):
        exp.call(funcgrad.device_put(a, NamedSharding(mesh8, P("i"))))


def test_vjp_of_sharded_export_as_jax():
    # the VJP of an export with shardings is exported for the same devices, its inputs and
    # cotangents sharded as the primal's, and the modules carry JAX's sdy.sharding annotations
    jax = pytest.importorskip("jax")
    x = np.arange(200, dtype=np.float32).reshape(10, 20)
    res = []
    for lib, m, ex, M, NS, PS in (
        (funcgrad, fnp, export, Mesh, NamedSharding, P),
        (
            jax,
            jax.numpy,
            jax.export,
            jax.sharding.Mesh,
            jax.sharding.NamedSharding,
            jax.sharding.PartitionSpec,
        ),
    ):
        mesh = M(lib.devices()[:2], ("d",))
        f = lib.jit(
            lambda v, m=m: m.sin(v.T),
            in_shardings=NS(mesh, PS(None, "d")),
            out_shardings=NS(mesh, PS("d", None)),
        )
        exp = ex.deserialize(ex.export(f)(x).serialize(vjp_order=1))
        vjp = exp.vjp()
        text = str(vjp.mlir_module())
        res.append(
            (
                vjp.nr_devices,
                [str(s.spec) for s in vjp.in_shardings_jax(mesh)],
                [str(s.spec) for s in vjp.out_shardings_jax(mesh)],
                re.findall(
                    r"#sdy.sharding<@mesh, [^>]*>", text.split("func.func public @main")[1].split("{\n")[0]
                ),
            )
        )
    assert res[0] == res[1]


@pytest.mark.parametrize("specs", [(("x", None), (None, "y")), (("x", None), ("x", None))])
def test_export_over_an_explicit_mesh_as_jax(specs):
    # Values typed over Explicit axes export with their types' specs (the result's too) and keep
    # them through serialization; a call lays its result out as jax's (funcgrad: a P(None, None)
    # result over an Auto mesh, and types dropped by deserialize)
    jax = pytest.importorskip("jax")
    a = np.arange(16.0, dtype=np.float32).reshape(8, 2)

    def run(lib, exp_mod, ns_cls, spec_cls, AxisType):
        mesh = lib.make_mesh(
            (2, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2, devices=lib.devices()[:4]
        )
        x = lib.device_put(a, ns_cls(mesh, spec_cls(*specs[0])))
        y = lib.device_put(a.T, ns_cls(mesh, spec_cls(*specs[1])))
        exp = exp_mod.deserialize(exp_mod.export(lib.jit(lambda u, v: u @ v))(x, y).serialize())
        out = exp.call(x, y)
        return (
            [str(av) for av in (*exp.in_avals, *exp.out_avals)],
            [tuple(s.spec) for s in (*exp.in_shardings_jax(mesh), *exp.out_shardings_jax(mesh))],
            tuple(out.sharding.spec),
            [t.name for t in out.sharding.mesh.axis_types],
            np.asarray(out),
        )

    from funcgrad.sharding import AxisType

    got = run(funcgrad, export, NamedSharding, P, AxisType)
    want = run(jax, jax.export, jax.sharding.NamedSharding, jax.sharding.PartitionSpec, jax.sharding.AxisType)
    assert got[:4] == want[:4]
    np.testing.assert_allclose(got[4], want[4])


def test_export_with_two_meshes_of_the_same_devices_as_jax():
    # export_test's test_with_multiple_meshes: inputs over a (1, 2) mesh, weights over a (2, 1) one
    # of the same devices (funcgrad refused: "the shardings use different meshes"); serialized,
    # deserialized and called with the inputs placed as exported
    jax = pytest.importorskip("jax")
    inp = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    w = np.arange(16.0, dtype=np.float32).reshape(8, 2)

    def run(lib, exp_mod, mesh_cls, ns_cls, spec_cls):
        devs = lib.devices()[:2]
        m_in = mesh_cls(np.array(devs).reshape(1, 2), ("x1", "x2"))
        m_w = mesh_cls(np.array(devs).reshape(2, 1), ("y2", "y1"))
        ins = ((ns_cls(m_in, spec_cls(None, "x2")),) * 2, (ns_cls(m_w, spec_cls("y2", None)),) * 2)
        outs = (ns_cls(m_in, spec_cls(None, "x1")),) * 2
        f = lib.jit(lambda xs, ws: tuple(a @ b for a, b in zip(xs, ws)), in_shardings=ins, out_shardings=outs)
        exp = exp_mod.deserialize(exp_mod.export(f)((inp, inp), (w, w)).serialize())
        out = exp.call(*lib.device_put(((inp, inp), (w, w)), ins))
        return exp.nr_devices, [np.asarray(o) for o in out]

    got = run(funcgrad, export, Mesh, NamedSharding, P)
    want = run(jax, jax.export, jax.sharding.Mesh, jax.sharding.NamedSharding, jax.sharding.PartitionSpec)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1])
