"""shard_map's manual axes against jax 0.10.2 on 8 devices (cut from JAX's shard_map_test): a
partially manual body's types (its mesh with the manual axes ``Manual``), the mesh in scope against
``mesh=``, sharding constraints naming manual axes, collectives' results; the value, the result's
sharding and each shard's shape, or the error's type and first words.

One program runs in jax (a subprocess: ``_jax_oracle``) and here on funcgrad, its names bound to
funcgrad's modules (this process must not import jax)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from _jax_oracle import run_jax

import funcgrad.numpy as fnp

PROGRAM = """
d = jax.devices()
AxisType = jax.sharding.AxisType


def desc(a):
    spec = getattr(a.sharding, "spec", None)
    return [np.asarray(a).tolist(), None if spec is None else str(spec),
            sorted({tuple(s.data.shape) for s in a.addressable_shards})]


def error(fn):
    try:
        fn()
        return "no error"
    except Exception as e:
        return [type(e).__name__, str(e).split(" ")[:4]]


cases = {}
v = np.arange(32.0, dtype=np.float32).reshape(4, 8)
# A partially manual body over an Explicit mesh: its blocks are typed over the mesh with the
# manual axes of type Manual, the automatic ones kept in the spec (typeof(x).sharding)
ex = jax.sharding.Mesh(np.asarray(d[:4]).reshape(2, 2), ("i", "j"), axis_types=(AxisType.Explicit,) * 2)
with jax.set_mesh(ex):
    seen = []

    def g(x):
        s = x.aval.sharding
        seen.append([[str(t) for t in s.mesh.axis_types], str(s.spec), str((x * x).aval.sharding.spec)])
        return x * x

    f = jax.jit(lambda x: jax.shard_map(g, out_specs=P("i", None), axis_names=frozenset({"i"}))(x))
    vx = jax.device_put(v, NamedSharding(ex, P("i", "j")))
    cases["partial explicit body types"] = [desc(f(vx)), seen[-1]]
    cases["partial explicit grad"] = desc(jax.jit(jax.grad(lambda x: jnp.sum(f(x))))(vx))
# A sharding constraint naming a manual axis inside the body: JAX's ValueError; naming only the
# automatic axes of a partially manual body: computed
auto = jax.sharding.Mesh(np.asarray(d[:4]).reshape(2, 2), ("i", "j"))


def wsc_body(spec):
    def g(x):
        return jax.lax.with_sharding_constraint(x, NamedSharding(auto, spec)) * x
    return g


def partial(spec, names):
    return jax.jit(jax.shard_map(wsc_body(spec), mesh=auto, in_specs=P("i", None), out_specs=P("i", None),
                                 check_vma=False, axis_names=frozenset(names)))


va = jax.device_put(v, NamedSharding(auto, P("i", "j")))
cases["constraint on a manual axis"] = error(lambda: partial(P("i", "j"), {"i"})(va))
cases["constraint in a fully manual body"] = error(lambda: partial(P("i", "j"), {"i", "j"})(va))
cases["constraint on an automatic axis"] = desc(partial(P(None, "j"), {"i"})(va))
# mesh= other than the mesh in scope (inside a body: the mesh with its manual axes Manual)
inner = jax.shard_map(lambda x: x * x, mesh=auto, in_specs=P(None, "j"), out_specs=P(None, "j"))
outer = jax.jit(jax.shard_map(inner, mesh=auto, in_specs=P("i", None), out_specs=P("i", None),
                              check_vma=False, axis_names=frozenset({"i"})))
cases["nested mesh= in a body"] = error(lambda: outer(va))
other = jax.sharding.Mesh(np.asarray(d[4:8]).reshape(2, 2), ("i", "j"))
with jax.set_mesh(ex):
    cases["mesh= other than set_mesh"] = error(
        lambda: jax.shard_map(lambda x: x, mesh=other, in_specs=P("i"), out_specs=P("i"))(v))
# An argument typed unreduced enters the body as each device's partial sum (JAX's
# test_eager_unreduced_in: funcgrad all-reduced it first, so psum_scatter summed it twice); its
# cotangent is reduced, not summed over the devices (2 where jax gives 1)
ex1 = jax.sharding.Mesh(np.asarray(d[:2]), ("x",), axis_types=(AxisType.Explicit,))


def shards(a):
    return [str(a.sharding.spec), [np.asarray(s.data).tolist() for s in a.addressable_shards]]


with jax.set_mesh(ex1):
    u8 = jax.reshard(jnp.arange(8.0, dtype=np.float32), P(unreduced={"x"}))
    scatter = jax.shard_map(lambda x: jax.lax.psum_scatter(x, "x", tiled=True), out_specs=P("x"))
    cases["unreduced argument"] = [shards(g(u8)) for g in (scatter, jax.jit(scatter))] + [
        shards(jax.grad(lambda x: g(x).sum())(u8)) for g in (scatter, jax.jit(scatter))]
    cases["unreduced argument, spec without it"] = error(
        lambda: jax.shard_map(lambda x: x, in_specs=P(), out_specs=P())(u8))
    # a reduced argument: its values, and its cotangent's (JAX types it unreduced)
    r8 = jax.device_put(np.arange(8.0, dtype=np.float32), P(reduced={"x"}))
    vary = jax.shard_map(lambda x: jax.lax.pcast(x, "x", to="varying") * 2, out_specs=P("x"))
    w16 = jnp.arange(16.0, dtype=np.float32)
    cases["reduced argument"] = [np.asarray(g(r8)).tolist() for g in (vary, jax.jit(vary))] + [
        np.asarray(jax.reshard(jax.grad(lambda x: (g(x) * w16).sum())(r8), P())).tolist()
        for g in (vary, jax.jit(vary))]
# out_specs naming unreduced axes: the output, varying along them, is each device's partial sum
# (JAX's test_matmul_unreduced: a contraction over a split dimension left unsummed), typed
# unreduced; reshard sums it; its gradient; a value not varying along them is JAX's ValueError
m22 = jax.sharding.Mesh(np.asarray(d[:4]).reshape(2, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
with jax.set_mesh(m22):
    a1 = jax.device_put(np.arange(8.0, dtype=np.float32).reshape(2, 4), P("x", "y"))
    a2 = jax.device_put(np.arange(8.0, dtype=np.float32).reshape(4, 2), P("y", None))
    ein = lambda a, b: jnp.einsum("ab,bc->ac", a, b)  # noqa: E731
    uy = P("x", None, unreduced={"y"})
    mm = jax.jit(jax.shard_map(ein, in_specs=(P("x", "y"), P("y", None)), out_specs=uy))
    um = mm(a1, a2)
    cases["unreduced output"] = [shards(um), desc(jax.reshard(um, P("x", None)))]
    gm = jax.jit(jax.grad(lambda a, b: jax.reshard(mm(a, b), P("x", None)).sum(), argnums=(0, 1)))(a1, a2)
    cases["unreduced output gradient"] = [desc(g) for g in gm]
    b1 = jax.device_put(np.arange(8.0, dtype=np.float32).reshape(2, 4), P("x", None))
    b2 = jax.device_put(np.arange(8.0, dtype=np.float32).reshape(4, 2), P(None, None))
    bad = jax.jit(jax.shard_map(ein, out_specs=uy))
    cases["unreduced output not varying"] = error(lambda: bad(b1, b2))
# reduced values in a fully manual body: all_gather(to='reduced') types its result reduced (a
# complete copy whose cotangent is a partial sum), out_specs=P(reduced=...) takes it, and the
# gradient goes back through psum_scatter (JAX's test_all_gather_reduced_fwd_unreduced_psum_scatter_bwd);
# a reduced argument's cotangent is unreduced, each device's partial sum
with jax.set_mesh(ex1):
    kinds = []

    def gather_body(a):
        out = jax.lax.all_gather(a, "x", tiled=True, to="reduced")
        kinds.append([sorted(jax.typeof(out).mat.reduced), sorted(jax.typeof(out).mat.varying),
                      sorted(a.mat.varying), sorted(out.mat.reduced)])  # (x.mat: JAX's tracer attribute)
        return out

    ag = jax.shard_map(gather_body, in_specs=P("x", None), out_specs=P(None, None, reduced={"x"}))
    x1 = jax.device_put(np.arange(8.0, dtype=np.float32).reshape(4, 2), P("x", None))
    y1 = jax.device_put(np.arange(12.0, dtype=np.float32).reshape(2, 6), P("x", None))
    loss = jax.jit(lambda x, y: jnp.einsum("td,df->tf", x, ag(y)).sum())
    cases["all_gather reduced"] = [desc(loss(x1, y1)), shards(jax.jit(ag)(y1))] + [
        desc(g) for g in jax.jit(jax.grad(loss, argnums=(0, 1)))(x1, y1)] + [kinds[0]]
    cases["reduced argument cotangent"] = [shards(jax.grad(lambda x: (g(x) * w16).sum())(r8)) for g in (
        vary, jax.jit(vary))]
# pcast(to='reduced') of an invariant value (JAX's preduced) and pcast(to='unreduced') of a
# varying one (vary_unreduced_cast): changes of type, the values kept; gradients through them
with jax.set_mesh(ex1):
    seen_r = []

    def pr_body(a):
        out = jax.lax.pcast(a, "x", to="reduced")
        seen_r.append(sorted(out.aval.mat.reduced))
        return out

    pr = jax.shard_map(pr_body, in_specs=P(), out_specs=P(reduced={"x"}))
    p1 = jax.device_put(np.arange(8.0, dtype=np.float32).reshape(2, 4), P(None, None))
    p2 = jax.device_put(np.arange(24.0, dtype=np.float32).reshape(4, 6), P(None, "x"))
    loss_r = jax.jit(lambda a, b: jnp.einsum("ab,bc->ac", pr(a), b).sum())
    cases["pcast to reduced"] = [desc(loss_r(p1, p2)), desc(jax.jit(jax.grad(loss_r))(p1, p2)), seen_r[0]]
    pu = jax.jit(jax.shard_map(lambda a: jax.lax.pcast(a * 2, "x", to="unreduced"), in_specs=P("x"),
                               out_specs=P(unreduced={"x"})))
    v4 = jax.device_put(np.arange(4.0, dtype=np.float32), P("x"))
    cases["pcast to unreduced"] = [shards(pu(v4)), desc(jax.reshard(pu(v4), P()))]
# grad of a jit around a shard_map of an unreduced argument (JAX's
# test_unreduced_psum_fwd_preduced_bwd): the cotangent was summed over the devices (2x jax's)
with jax.set_mesh(ex1):
    q1 = jax.device_put(np.arange(8.0, dtype=np.float32).reshape(2, 4), P(None, "x"))
    q2 = jax.device_put(np.arange(24.0, dtype=np.float32).reshape(4, 6), P("x", None))
    ar = jax.shard_map(lambda z: jax.lax.psum(z, "x"), in_specs=P(unreduced={"x"}), out_specs=P())
    f_ar = jax.jit(lambda a, b: ar(jnp.einsum("ab,bc->ac", a, b, out_sharding=P(unreduced={"x"}))).sum())
    cases["grad of jit of unreduced argument"] = [desc(g) for g in jax.jit(jax.grad(f_ar, argnums=(0, 1)))(
        q1, q2)] + [desc(g) for g in jax.grad(f_ar, argnums=(0, 1))(q1, q2)]
# check_vma=False: an unreduced argument's cotangent is summed over its unreduced axes (JAX's
# test_check_vma_false_unreduced_fwd_psum_on_bwd: 2x the checked body's; funcgrad gave 1x), a
# reduced one's is not (test_check_vma_false_reduced_fwd_no_psum_on_bwd)
with jax.set_mesh(ex1):
    w8 = jnp.arange(8.0, dtype=np.float32)
    for cv in (False, True):
        sc = jax.jit(jax.shard_map(lambda x: jax.lax.psum_scatter(x, "x", tiled=True),
                                   in_specs=P(unreduced={"x"}), out_specs=P("x"), check_vma=cv))
        vr = jax.jit(jax.shard_map(lambda x: jax.lax.pcast(x, "x", to="varying") * 2,
                                   in_specs=P(reduced={"x"}), out_specs=P("x"), check_vma=cv))
        cases[f"unchecked unreduced cotangent {cv}"] = [
            shards(gr(lambda x: (g(x) * w).sum())(a)) for gr in (jax.grad, lambda h: jax.jit(jax.grad(h)))
            for g, a, w in ((sc, u8, w8), (vr, r8, w16))]
# pcast of an unreduced value: over axes of several states at once, or to reduced, JAX's ValueErrors
# (test_pcast_to_unreduced); funcgrad computed
with jax.set_mesh(m22):
    i1 = jax.device_put(np.arange(8).reshape(4, 2), P("x", "y"))
    i2 = jax.device_put(np.arange(8).reshape(2, 4), P("y", None))

    def recast(axes):
        def body(a, b):
            return jax.lax.pcast(jax.lax.pcast(jnp.dot(a, b), "y", to="unreduced"), axes, to="reduced")
        return jax.jit(jax.shard_map(body, out_specs=P("x", unreduced={"y"})))

    cases["pcast of unreduced"] = [error(lambda: recast(axes)(i1, i2)) for axes in (("x", "y"), "y")]
# linearize in a body: f_jvp of a tangent varying where the primal (a constant) is not is JAX's
# ValueError (test_shmap_linearize_and_linearize_transpose_error); pcast of the constant to varying
# (staged: funcgrad left a staged body's constant untyped) makes it compute
m2x = jax.sharding.Mesh(np.asarray(d[:2]), ("x",))


def lin_t(cast, p, t):
    p = jax.lax.pcast(p, "x", to="varying") if cast else p
    _, fwd = jax.linearize(lambda x: jnp.mean(x**2), p)
    return jax.linear_transpose(fwd, p)(fwd(t))


t2 = jnp.ones((2,))
for cast in (False, True):
    lt = jax.shard_map(lambda t, c=cast: lin_t(c, jnp.array([1.0]), t), mesh=m2x, in_specs=P("x"),
                       out_specs=P("x"))
    cases[f"linearize tangent vma {cast}"] = [
        desc(g(t2)[0]) if cast else error(lambda: g(t2)) for g in (lt, jax.jit(lt))]
# pcast(to='varying') (pvary) of an invariant value in a staged body: typed varying there (JAX's
# test_pvary, under grad), and the gradient through it
m4 = jax.sharding.Mesh(np.asarray(d[:4]), ("x",))
seen_v = []


def pv_body(a):
    out = jax.lax.pcast(a, "x", to="varying")
    seen_v.append(sorted(out.aval.mat.varying) if hasattr(out.aval, "mat") else None)
    return out * jax.lax.axis_index("x")


pv = jax.shard_map(pv_body, mesh=m4, in_specs=P(), out_specs=P("x"))
cases["pvary staged"] = [desc(jax.jit(pv)(np.arange(8.0, dtype=np.float32))), desc(jax.grad(
    lambda a: pv(a).sum())(np.arange(8.0, dtype=np.float32))), seen_v[1:]]
# jax_auto_pcast off: an elementwise operation of values varying along different manual axes is
# JAX's ValueError (JAX's test_no_auto_pcast_config), eager and under jit
with jax.set_mesh(jax.sharding.Mesh(np.asarray(d[:2]), ("i",), axis_types=(AxisType.Explicit,))):
    sm = jax.smap(lambda a, b: a * b, in_axes=(0, None), out_axes=0, axis_name="i")
    za, zb = jax.device_put(jnp.zeros((2, 2)), P("i", None)), jax.device_put(jnp.zeros((2, 2)), P())
    jax.config.update("jax_auto_pcast", False)
    try:
        cases["auto_pcast off"] = [error(lambda: g(za, zb)) for g in (sm, jax.jit(sm))]
    finally:
        jax.config.update("jax_auto_pcast", True)
    cases["auto_pcast on"] = desc(jax.jit(sm)(za, zb))
# jax_remove_size_one_mesh_axis_from_type: a spec's size-1 axes are in no type, nor in a body's
# varying axes (JAX's shard_map_test test_remove_one_sized_mesh_axis_from_vma); pcast over them
# only is no cast, even outside shard_map (test_pvary_no_op_one_sized_mesh_axis)
jax.config.update("jax_remove_size_one_mesh_axis_from_type", True)
try:
    m21 = jax.sharding.Mesh(np.asarray(d[:2]).reshape(2, 1), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(m21):
        a21 = jax.device_put(np.arange(16.0, dtype=np.float32).reshape(8, 2), P("x", "y"))
        vmas = []

        def body21(x):
            vmas.append(sorted(jax.typeof(x).mat.varying))
            return jax.lax.psum(x, "x")

        f21 = jax.shard_map(body21, in_specs=P("x", "y"), out_specs=P())
        cases["size-one axes left out"] = [desc(jax.jit(f21)(a21)), desc(f21(a21)), vmas]
    m1 = jax.sharding.Mesh(np.asarray(d[:1]), ("x",), axis_types=(AxisType.Explicit,))
    with jax.set_mesh(m1):
        cases["pcast over size-one axes"] = desc(jax.jit(lambda x: jax.lax.pcast(x, "x", to="varying"))(
            np.arange(4.0, dtype=np.float32)))[0::2]
finally:
    jax.config.update("jax_remove_size_one_mesh_axis_from_type", False)


# A bare PartitionSpec in a partially manual body under jit, no mesh set: over the body's mesh
# (shard_map_test test_partial_auto)
def g_pa(x):
    return jax.lax.with_sharding_constraint(x, P(None, "j")) * x


f_pa = jax.jit(jax.shard_map(g_pa, mesh=auto, in_specs=P("i", None), out_specs=P("i", None),
                             axis_names=frozenset({"i"})))
cases["bare spec in a partial body"] = [desc(f_pa(va)), '<@mesh, [{}, {"j"}]>' in f_pa.lower(va).as_text()]
# A Ref as an argument: the body writes its block (shard_map_test test_mutable_array_arg_basic)
ex2 = jax.sharding.Mesh(np.asarray(d[:2]), ("x",), axis_types=(AxisType.Explicit,))
with jax.set_mesh(ex2):
    x_ref = jax.new_ref(jnp.zeros(4, "float32", out_sharding=P("x")))

    @jax.jit
    @jax.shard_map(out_specs=None)
    def add_index(r):
        r[...] += jax.lax.axis_index("x").astype("float32")

    add_index(x_ref)
    cases["Ref argument"] = desc(x_ref[...])
"""

ORACLE = (
    "import json, numpy as np, jax, jax.numpy as jnp\n"
    "from jax.sharding import NamedSharding, PartitionSpec as P\n" + PROGRAM + "print(json.dumps(cases))\n"
)


@pytest.fixture(scope="module")
def results():
    import funcgrad
    from funcgrad.sharding import NamedSharding, PartitionSpec

    names = {"np": np, "jax": funcgrad, "jnp": fnp, "NamedSharding": NamedSharding, "P": PartitionSpec}
    exec(PROGRAM, names)
    return json.loads(json.dumps(names["cases"])), run_jax(ORACLE)


@pytest.mark.parametrize(
    "case",
    [
        "partial explicit body types",
        "partial explicit grad",
        "constraint on a manual axis",
        "constraint in a fully manual body",
        "constraint on an automatic axis",
        "nested mesh= in a body",
        "mesh= other than set_mesh",
        "size-one axes left out",
        "unreduced argument",
        "unreduced argument, spec without it",
        "reduced argument",
        "unreduced output",
        "unreduced output gradient",
        "unreduced output not varying",
        "all_gather reduced",
        "reduced argument cotangent",
        "pcast to reduced",
        "pcast to unreduced",
        "grad of jit of unreduced argument",
        "unchecked unreduced cotangent False",
        "unchecked unreduced cotangent True",
        "pcast of unreduced",
        "linearize tangent vma False",
        "linearize tangent vma True",
        "pvary staged",
        "auto_pcast off",
        "auto_pcast on",
        "pcast over size-one axes",
        "bare spec in a partial body",
        "Ref argument",
    ],
)
def test_as_jax(results, case):
    got, want = results
    assert got[case] == want[case]


pytestmark = pytest.mark.slow  # (the jax oracle's process, shared with the other spmd files)


def test_reduced_vary_cast_alias():
    """``jax._src.core.reduced_vary_cast`` (JAX's shard_map tests call it) under the alias: the
    gradient of a check_vma=False body casting a reduced argument to varying, against jax's (its
    cotangent typed unreduced, no psum: test_check_vma_false_reduced_fwd_no_psum_on_bwd)."""
    program = """
mesh = jax.sharding.Mesh(np.asarray(jax.devices()[:2]), ("x",), axis_types=(jax.sharding.AxisType.Explicit,))
with jax.set_mesh(mesh):
    arr = jax.device_put(np.arange(8, dtype=np.float32), P(reduced={"x"}))
    f = jax.jit(jax.shard_map(lambda x: core.reduced_vary_cast(x, "x") * 3, in_specs=P(reduced={"x"}),
                              out_specs=P("x"), check_vma=False))
    w = jnp.arange(16.0, dtype=np.float32)
    g = jax.jit(jax.grad(lambda x: (f(x) * w).sum()))(arr)
    out = [np.asarray(f(arr)).tolist(), str(g.sharding.spec)]
    out.append([np.asarray(s.data).tolist() for s in g.addressable_shards])
"""
    head = "import json, numpy as np, jax, jax.numpy as jnp\nfrom jax._src import core\n"
    head += "from jax.sharding import PartitionSpec as P\n"
    script = head + program + "print(json.dumps(out))\n"
    # (under the alias, in a process of its own: the alias installs ``jax`` for good)
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-m", "funcgrad.as_jax", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == run_jax(script)
