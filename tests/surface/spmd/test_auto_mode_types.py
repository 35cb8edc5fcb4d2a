"""The sharding an untyped value's type shows (the Auto mode, one device, no mesh), against jax
0.10.2 in the same process: ``x.aval.sharding`` is replicated over the abstract mesh in scope
(else over the mesh of a jit's arguments, else the empty mesh), as JAX's avals always hold one
(pjit_test's ShardingInTypesTest: test_only_auto, test_full_auto_outside_jit,
test_auto_mode_no_context_mesh, test_jnp_ones_mesh_ctx_aval, test_out_aval_auto_mode,
test_where_with_prng_sharded_inp). The values are checked too."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import sharding as fs

jax = pytest.importorskip("jax")
jnp = jax.numpy
js = jax.sharding

X = np.arange(16.0, dtype=np.float32).reshape(8, 2)


def _seen(s):
    """What a type's sharding says: its spec, and its mesh's axes, sizes and axis types."""
    m = s.mesh
    return (tuple(s.spec), tuple(m.axis_names), tuple(m.axis_sizes), tuple(t.name for t in m.axis_types))


def _both(run):
    ours = run(funcgrad, fnp, fs, fs.make_mesh((4, 2), ("x", "y"), (fs.AxisType.Auto,) * 2))
    theirs = run(jax, jnp, js, jax.make_mesh((4, 2), ("x", "y"), axis_types=(js.AxisType.Auto,) * 2))
    return ours, theirs


def test_values_staged_under_an_auto_mesh_are_replicated_over_it():
    def run(lib, np_, sh, mesh):
        seen = []
        with lib.set_mesh(mesh):
            arr = lib.device_put(X, sh.NamedSharding(mesh, sh.PartitionSpec("x", None)))

            @lib.jit
            def f(x):
                y = x * 2
                z = np_.sin(y)
                a = z @ z.T
                b = np_.ones((3,))
                seen.extend(_seen(v.aval.sharding) for v in (x, y, z, a, b))
                return a

            out = f(arr)
            seen.append(_seen(out.aval.sharding))
        return seen, np.asarray(out)

    (ours, out1), (theirs, out2) = _both(run)
    assert ours == theirs
    assert ours[1] == ((None, None), ("x", "y"), (4, 2), ("Auto", "Auto"))
    np.testing.assert_allclose(out1, out2, rtol=1e-6)


def test_a_jit_outside_any_mesh_types_over_its_arguments_mesh():
    def run(lib, np_, sh, mesh):
        seen = []
        arr = lib.device_put(X, sh.NamedSharding(mesh, sh.PartitionSpec("x", None)))

        @lib.jit
        def f(x):
            a = x * 2
            seen.extend(_seen(v.aval.sharding) for v in (x, a))
            return a

        out = f(arr)
        return seen, np.asarray(out), _seen(out.sharding)

    ours, theirs = _both(run)
    assert ours[0] == theirs[0] == [((None, None), ("x", "y"), (4, 2), ("Auto", "Auto"))] * 2
    assert ours[2] == theirs[2]
    np.testing.assert_array_equal(ours[1], theirs[1])


def test_typed_keys_under_in_shardings_are_replicated_over_their_mesh():
    def run(lib, np_, sh, mesh):
        seen = []
        s = sh.NamedSharding(mesh, sh.PartitionSpec("x"))
        cond = lib.device_put(np_.zeros([8, 1], dtype=bool), s)
        k = lib.device_put(np_.broadcast_to(lib.random.key(0), [8, 4]), s)

        def f(c, x, y):
            seen.append(_seen(x.aval.sharding))
            seen.append(np_.asarray(y).aval.sharding == y.aval.sharding)
            return np_.where(c, x, y)

        out = lib.jit(f, in_shardings=(s, s, s))(cond, k, k)
        return seen, np.asarray(lib.random.key_data(out))

    ours, theirs = _both(run)
    assert ours[0] == theirs[0]
    assert ours[0][0][3] == ("Auto", "Auto") and ours[0][1] is True
    np.testing.assert_array_equal(ours[1], theirs[1])


def test_untyped_values_under_an_explicit_mesh_and_outside_any():
    def run(lib, np_, sh, mesh):
        seen = []
        with lib.set_mesh(mesh):

            @lib.jit
            def f():
                out = np_.ones((2,))
                seen.append(_seen(out.aval.sharding))
                return out

            out = f()
        seen.append(_seen(out.sharding))
        seen.append(_seen(np_.ones((2, 3)).aval.sharding))  # no mesh: the empty one
        return seen, np.asarray(out)

    ours = run(funcgrad, fnp, fs, fs.make_mesh((2,), ("x",)))
    theirs = run(jax, jnp, js, jax.make_mesh((2,), ("x",), axis_types=(js.AxisType.Explicit,)))
    assert ours[0] == theirs[0]
    assert ours[0][2] == ((None, None), (), (), ())
    np.testing.assert_array_equal(ours[1], theirs[1])
