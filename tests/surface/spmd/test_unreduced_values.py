"""Unreduced and reduced values (JAX 0.10's ``P(..., unreduced=..., reduced=...)``) on 8 CPU
devices against jax 0.10.2 in the same process: each device's block after a ``reshard`` to an
unreduced sharding, the value after resharding back, and the types of the operations on them
(JAX's pjit_test ``ShardingInTypesTest`` cases)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad  # noqa: F401
from funcgrad import sharding as fs

jax = pytest.importorskip("jax")
js = jax.sharding


def _on_both(build, shape=(2, 2, 2), names=("x", "y", "z")):
    """``build(lib, sharding_module)`` under an Explicit mesh of each library."""
    out = []
    for lib, sh in ((funcgrad, fs), (jax, js)):
        mesh = lib.make_mesh(shape, names, axis_types=(sh.AxisType.Explicit,) * len(names))
        with sh.set_mesh(mesh):
            out.append(build(lib, sh))
    return out


@pytest.mark.parametrize(
    "shape, orig, unreduced",
    [
        ((4,), (None,), ((None,), {"x"})),  # replicated: the group's first device holds it
        ((4, 4), ("x", None), (("x", None), {"y"})),
        ((4, 4), ("x", "y"), ((None, None), {"x", "y", "z"})),  # each device keeps its own piece
        ((), (), ((), {"x"})),
    ],
)
def test_reshard_to_unreduced_and_back_as_jax(shape, orig, unreduced):
    # (jaxlib's put of a replicated layout copied the first block to every device: the sum over
    # the unreduced axes was the value times the group's size)
    def build(lib, sh):
        P = sh.PartitionSpec
        a = lib.device_put(np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape), P(*orig))
        u = sh.reshard(a, P(*unreduced[0], unreduced=unreduced[1]))
        blocks = [(s.device.id, np.asarray(s.data).tolist()) for s in u.addressable_shards]
        back = sh.reshard(u, P(*orig))
        spec = (u.sharding.spec.partitions, set(u.sharding.spec.unreduced))  # (a set's order: hashing)
        return spec, sorted(blocks), np.asarray(back).tolist(), str(back.sharding.spec)

    ours, theirs = _on_both(build)
    assert ours == theirs


def _blocks(x):
    return sorted((s.device.id, np.asarray(s.data).tolist()) for s in x.addressable_shards)


def _ur(x):
    spec = x.sharding.spec
    return spec.partitions, set(spec.unreduced), set(spec.reduced)


@pytest.mark.parametrize(
    "case",
    [
        "jit_to_unreduced",
        "sum_of_unreduced",
        "grad_of_unreduced",
        "grad_of_reduced",
        "grad_through_jit",
        "sum_left_unreduced",
    ],
)
def test_reduced_and_unreduced_under_jit_and_grad_as_jax(case):
    # (JAX's to_ct_aval: the cotangent of a value reduced over an axis is unreduced over it, the
    # gradient's seed 1 on one device of each group; and the reverse. A reshard to an unreduced
    # sharding inside jit is XLA's replicated-to-unreduced cast.)
    def build(lib, sh):
        P, reshard = sh.PartitionSpec, sh.reshard
        x = np.arange(4.0, dtype=np.float32)
        if case == "jit_to_unreduced":
            a = lib.device_put(x, P())
            out = lib.jit(lambda v: reshard(v * 2, P(None, unreduced={"x"})))(a)
        elif case == "sum_of_unreduced":
            out = lib.jit(lambda v: lib.lax.reduce_sum(v, axes=[0]))(
                reshard(lib.numpy.asarray(x), P(unreduced={"x"}))
            )
        elif case == "grad_of_unreduced":
            f = lambda v: lib.lax.reduce_sum(v, axes=[0])  # noqa: E731
            out = lib.jit(lib.grad(f))(reshard(lib.numpy.asarray(x), P(unreduced={"x"})))
        elif case == "grad_of_reduced":
            out = lib.jit(lib.grad(lambda v: lib.numpy.sin(v).sum()))(lib.device_put(x, P(reduced={"x"})))
        elif case == "sum_left_unreduced":  # (out_sharding=: each device's partial sum)
            a = lib.device_put(np.arange(16.0, dtype=np.float32).reshape(8, 2), P("x", None))
            out = lib.jit(lambda v: lib.lax.reduce_sum(v, axes=(0,), out_sharding=P(None, unreduced={"x"})))(
                a
            )
        else:
            r = lib.device_put(x, P(reduced={"x"}))
            out = lib.jit(lib.grad(lib.jit(lambda v, w: (v + w * v).sum()), argnums=(0, 1)))(r, r)[0]
        return _ur(out), _blocks(out)

    ours, theirs = _on_both(build, (2,), ("x",))
    assert ours[0] == theirs[0]
    for (d1, b1), (d2, b2) in zip(ours[1], theirs[1], strict=True):
        assert d1 == d2
        np.testing.assert_allclose(np.asarray(b1), np.asarray(b2), rtol=1e-6)


def test_reduce_sum_left_unreduced_over_an_unsummed_axis_is_jaxs_error():
    def build(lib, sh):
        a = lib.device_put(np.arange(16).reshape(8, 2), sh.PartitionSpec("y", None))
        f = lib.jit(
            lambda v: lib.lax.reduce_sum(v, axes=(0,), out_sharding=sh.PartitionSpec(None, unreduced={"x"}))
        )
        try:
            f(a)
        except Exception as e:  # noqa: BLE001 - which error is compared
            return type(e).__name__, str(e).split(".")[0]

    ours, theirs = _on_both(build, (2, 2), ("x", "y"))
    assert theirs is not None, "jax computed it: the test's premise is gone"
    assert ours == theirs


@pytest.mark.parametrize("case", ["vjp_zero", "eager_reshard_reduced", "scan_grad", "dot_grad"])
def test_cotangent_types_as_jax(case):
    # (JAX's to_ct_aval everywhere a cotangent is made: an unused input's zero cotangent, a
    # call's result, a scan's carry, a contraction's transpose; reshard(x, P(reduced=)) eagerly)
    def build(lib, sh):
        P, reshard, jnp = sh.PartitionSpec, sh.reshard, lib.numpy
        r = reshard(jnp.arange(8.0, dtype=jnp.float32), P(reduced={"x"}))
        if case == "eager_reshard_reduced":
            return str(lib.typeof(r)), None
        if case == "vjp_zero":
            _, f_vjp = lib.vjp(lib.jit(lambda a, b: b), r, r)
            outs = f_vjp(reshard(jnp.arange(8.0, dtype=jnp.float32), P(unreduced={"x"})))
        elif case == "scan_grad":
            f = lambda v: lib.lax.fori_loop(0, 3, lambda i, c: c * v, v).sum()  # noqa: E731
            outs = [lib.jit(lib.grad(f))(r)]
        else:  # (pjit_test's test_reduced_sin_fwd_mul_bwd)
            a = lib.device_put(np.arange(8.0, dtype=np.float32).reshape(4, 2), P(reduced={"x"}))
            y = lib.device_put(np.arange(16.0, dtype=np.float32).reshape(2, 8), P(None, "x"))
            outs = lib.jit(lib.grad(lambda u, v: (jnp.sin(u) @ jnp.sin(v)).sum(), argnums=(0, 1)))(a, y)
        types = [str(lib.typeof(o)) for o in outs]
        return types, [np.asarray(reshard(o, P())).tolist() for o in outs]

    ours, theirs = _on_both(build, (2,), ("x",))
    assert ours[0] == theirs[0]
    if ours[1] is not None:
        for a, b in zip(ours[1], theirs[1], strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5)


@pytest.mark.parametrize("other", [("x",), ()])
def test_reduced_operand_with_a_sharded_or_replicated_one_is_jaxs_error(other):
    def build(lib, sh):
        P = sh.PartitionSpec
        a = lib.device_put(np.arange(8.0, dtype=np.float32), P(reduced={"x"}))
        b = lib.device_put(np.arange(8.0, dtype=np.float32), P(*other))
        try:
            lib.jit(lambda u, v: u * v)(a, b)
        except Exception as e:  # noqa: BLE001 - which error is compared
            scalar = lib.jit(lambda u: u * 2)(a)  # (a scalar is taken as reduced: fine)
            return type(e).__name__, str(e).split(" on the same axes")[0], str(lib.typeof(scalar))

    ours, theirs = _on_both(build, (2,), ("x",))
    assert theirs is not None, "jax computed it: the test's premise is gone"
    assert ours == theirs


@pytest.mark.parametrize("case", ["jit_out_shardings", "array_out_sharding", "reshape_errors"])
def test_out_sharding_unreduced_as_jax(case):
    # (an unreduced out_sharding of what is no contraction is XLA's replicated-to-unreduced cast;
    # reshape's must be its operand's: JAX's errors)
    def build(lib, sh):
        P, jnp = sh.PartitionSpec, lib.numpy
        if case == "jit_out_shardings":
            out = lib.jit(lambda v: v * 1, out_shardings=P(unreduced={"x"}))(jnp.arange(4))
        elif case == "array_out_sharding":
            out = jnp.array(jnp.array([[1, 2], [3, 4]]), out_sharding=P(unreduced={"x"}))
        else:
            msgs = []
            for kind in ("unreduced", "reduced"):
                try:
                    jnp.reshape(np.arange(8), (4, 2), out_sharding=P(**{kind: {"x"}}))
                except ValueError as e:
                    msgs.append(str(e).split(" axes.")[0])
            return msgs, None
        return _ur(out), _blocks(out)

    ours, theirs = _on_both(build, (2,), ("x",))
    if case == "reshape_errors":
        assert len(theirs[0]) == 2, "jax reshaped without an error: the test's premise is gone"
    assert ours == theirs


@pytest.mark.parametrize("op", ["segment_sum", "segment_max", "segment_prod"])
def test_segment_out_sharding_as_jax(op):
    # (JAX's out_sharding= of the segment reductions; unreduced only for a sum: NotImplementedError)
    def build(lib, sh):
        P, jnp = sh.PartitionSpec, lib.numpy
        a = lib.device_put(jnp.arange(8, dtype=jnp.int32), P("x"))
        b = lib.device_put(jnp.array([0, 0, 1, 1, 1, 2, 2, 3]), P("x"))
        f = lib.jit(
            lambda x, y, s: getattr(lib.ops, op)(x, y, num_segments=4, out_sharding=s), static_argnums=2
        )
        out = f(a, b, P())
        try:
            u = f(a, b, P(unreduced={"x"}))
            unreduced = np.asarray(sh.reshard(u, P())).tolist(), str(u.sharding.spec)
        except NotImplementedError as e:
            unreduced = str(e)
        return str(out.sharding.spec), np.asarray(out).tolist(), unreduced

    ours, theirs = _on_both(build, (4,), ("x",))
    assert ours == theirs


def test_unreduced_sharding_is_not_fully_replicated_as_jax():
    def build(lib, sh):
        P = sh.PartitionSpec
        return [
            sh.reshard(lib.numpy.arange(8), P(unreduced=u)).sharding.is_fully_replicated
            for u in ({"x", "y"}, {"x"}, set())
        ]

    ours, theirs = _on_both(build, (2, 2), ("x", "y"))
    assert ours == theirs


def test_rng_bit_generator_out_sharding_as_jax():
    def build(lib, sh):
        key = np.array((1, 2, 3, 4), np.uint32)
        k, bits = lib.lax.rng_bit_generator(key, shape=(4, 8), out_sharding=sh.PartitionSpec("x"))
        return np.asarray(k).tolist(), str(bits.sharding.spec), np.asarray(bits).tolist()

    ours, theirs = _on_both(build, (2,), ("x",))
    assert ours == theirs


@pytest.mark.parametrize("loop", ["scan", "remat", "fori"])
def test_weight_gradient_through_a_loop_transpose_stays_unreduced_as_jax(loop):
    # (JAX's test_scan_over_layers_minibatch_unreduced: the weight cotangent of a contraction over
    # the batch's mesh axis is unreduced there, recorded in the product's equation; scan's and
    # checkpoint's transposes bind their bodies again. It was typed replicated under scan, and
    # once typed, scan's output buffer had to be too: XLA all-reduced each step into it and the
    # gradient came out summed twice.)
    w0 = np.arange(48, dtype=np.float32).reshape(3, 4, 4) / 50
    x0 = np.arange(16, dtype=np.float32).reshape(4, 4) / 10 - 0.7

    def model(lib):
        def f(sw, xm):
            if loop == "scan":
                fx, _ = lib.lax.scan(lambda c, w: (lib.numpy.tanh(c @ w), None), xm, sw)
            elif loop == "fori":  # (a dynamic slice of the weights: its cotangent's zeros are unreduced)
                fx = lib.lax.fori_loop(0, 3, lambda i, c: lib.numpy.tanh(c @ sw[i]), xm)
            else:
                step = lib.checkpoint(lambda c, w: lib.numpy.tanh(c @ w))
                fx = step(step(xm, sw[0]), sw[1])
            return lib.numpy.sum(fx)

        return f

    def build(lib, sh):
        P = sh.PartitionSpec
        w = lib.device_put(w0, P(reduced={"x"}))
        x = lib.device_put(x0, P("x", None))
        g = lib.jit(lib.grad(model(lib)))(w, x)
        full = np.asarray(sh.reshard(g, P()))
        return str(lib.typeof(g)), _ur(g), [np.asarray(s.data) for s in g.addressable_shards], full

    (t, ur, blocks, full), (jt, jur, jblocks, jfull) = _on_both(build, shape=(2,), names=("x",))
    assert (t, ur) == (jt, jur) == ("float32[3,4,4]{U:x}", ((None, None, None), {"x"}, set()))
    np.testing.assert_allclose(np.stack(blocks), np.stack(jblocks), rtol=1e-5, atol=1e-6)
    one_device = np.asarray(funcgrad.grad(model(funcgrad))(w0, x0))
    np.testing.assert_allclose(full, one_device, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(full, jfull, rtol=1e-5, atol=1e-6)


def test_eager_shard_map_unreduced_output_as_jax():
    """An eager shard_map's output with out_specs P(unreduced=...) keeps each device's block (its
    partial sums): funcgrad took device 0's block and zeros elsewhere, so resharding it to P()
    gave [0, 1, 2, 3] where jax sums the partials (shard_map_test test_eager_unreduced_out)."""

    def build(lib, sh):
        P = sh.PartitionSpec
        arr = lib.device_put(np.arange(8.0, dtype=np.float32), P("x"))
        f = lib.shard_map(lambda x: lib.lax.pcast(x, "x", to="unreduced"), out_specs=P(unreduced={"x"}))
        out = f(arr)
        blocks = [np.asarray(s.data).tolist() for s in out.addressable_shards]
        return [str(out.sharding.spec), blocks, np.asarray(lib.reshard(out, P())).tolist()]

    got, want = _on_both(build, shape=(2,), names=("x",))
    assert got == want


def test_eager_shard_map_refuses_sin_of_unreduced_as_jax():
    """An eager checked body types its values unreduced as a staged one does: sin of an
    unreduced value is JAX's NotImplementedError (funcgrad computed it)."""

    def build(lib, sh):
        P = sh.PartitionSpec
        arr = lib.device_put(np.arange(8.0, dtype=np.float32), P("x"))
        f = lib.shard_map(
            lambda x: lib.numpy.sin(lib.lax.pcast(x, "x", to="unreduced")), out_specs=P(unreduced={"x"})
        )
        try:
            f(arr)
            return "no error"
        except NotImplementedError as e:
            return str(e).split(" (")[0].split(". ")[0]

    got, want = _on_both(build, shape=(2,), names=("x",))
    assert got == want == "unreduced rule for sin is not implemented"
