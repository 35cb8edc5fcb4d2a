"""Small pieces of JAX's API that libraries built on it read (found running flax's tests through
the alias), each compared with jax 0.10.2: a treedef deep-copies and pickles (flax deep-copies
graph definitions), ``Lowered.out_info`` (flax's summary tables)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


def test_treedefs_deepcopy_and_pickle():
    tree = {"a": 1, "b": [2, (3, None)]}
    t = funcgrad.tree.structure(tree)
    assert copy.deepcopy(t) == t and pickle.loads(pickle.dumps(t)) == t
    assert funcgrad.tree.unflatten(copy.deepcopy(t), [1, 2, 3]) == tree


def test_deepcopy_of_arrays_and_tracers_is_a_copy():
    # JAX's Array.__deepcopy__ is x.copy(), traced values too (lax_numpy_test testArrayCopy: under
    # jit the default deepcopy copied the tracer object, which escaped the jit)
    x = fnp.ones(10, dtype=np.int8)
    for y in (copy.deepcopy(x), funcgrad.jit(copy.deepcopy)(x), copy.deepcopy({"a": x})["a"]):
        np.testing.assert_array_equal(y, x)
        assert y.dtype == x.dtype and y.unsafe_buffer_pointer() != x.unsafe_buffer_pointer()
    assert float(funcgrad.grad(lambda v: copy.deepcopy(v) * 2.0)(3.0)) == 2.0


def test_lowered_out_info_matches_jax():
    jax = pytest.importorskip("jax")
    x = np.ones((2, 3), np.float32)
    ours = funcgrad.jit(lambda x: {"s": x.sum(0), "t": (x.T,)}).lower(x).out_info
    theirs = jax.jit(lambda x: {"s": x.sum(0), "t": (x.T,)}).lower(x).out_info
    o, t = funcgrad.tree.leaves(ours), jax.tree.leaves(theirs)
    assert [(a.shape, a.dtype) for a in o] == [(b.shape, b.dtype) for b in t]
    r = funcgrad.new_ref(fnp.zeros(2, np.float32))
    info = funcgrad.jit(lambda r: r.__setitem__(..., r[...] + 1) or r[...].sum()).lower(r).out_info
    assert info.shape == () and info.dtype == np.float32  # the function's output, not the Ref's


def test_with_sharding_constraint_takes_a_format():
    jax = pytest.importorskip("jax")
    from jax.experimental.layout import Format as JFormat
    from jax.experimental.layout import Layout as JLayout

    from funcgrad.experimental.layout import Format, Layout
    from funcgrad.sharding import Mesh, NamedSharding, PartitionSpec

    x = np.arange(4.0, dtype=np.float32).reshape(2, 2)
    fmt = Format(
        Layout((1, 0)), NamedSharding(Mesh(np.array(funcgrad.devices()[:1]), ("x",)), PartitionSpec("x"))
    )
    ours = funcgrad.jit(lambda a: funcgrad.lax.with_sharding_constraint(a * 2, fmt))(x)
    jmesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
    jfmt = JFormat(JLayout((1, 0)), jax.sharding.NamedSharding(jmesh, jax.sharding.PartitionSpec("x")))
    theirs = jax.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, jfmt))(x)
    np.testing.assert_array_equal(ours, theirs)


def _count_traces(lib):
    n = []
    f = lib.jit(lambda x: n.append(1) or x * 2)
    a = f(1.0)  # a Python float: weakly typed
    f(a)  # its weakly typed result: the same type, no retrace (flax nnx's graph_updates tests)
    f(2)
    f(True)
    return len(n)


def test_python_scalars_and_weak_arrays_share_a_trace_as_in_jax():
    jax = pytest.importorskip("jax")
    assert _count_traces(funcgrad) == _count_traces(jax) == 3


def test_typeof_a_shape_dtype_struct_matches_jax():
    jax = pytest.importorskip("jax")
    for weak in (False, True):
        ours = funcgrad.typeof(funcgrad.ShapeDtypeStruct((1, 2), np.float32, weak_type=weak))
        theirs = jax.typeof(jax.ShapeDtypeStruct((1, 2), np.float32, weak_type=weak))
        assert (ours.shape, ours.dtype, ours.weak_type) == (theirs.shape, theirs.dtype, theirs.weak_type)


def test_reading_a_pmap_output_built_from_broadcast_operands_matches_jax():
    # equinox's filter_pmap test_args: the output's shards are laid out per device by a MeshSharding.
    jax = pytest.importorskip("jax")
    args = (np.array([1], np.int32), np.array([2], np.int32), np.array([3], np.int32))
    ours = funcgrad.pmap(lambda a, b, c: a + b + c, in_axes=(None, None, 0))(*args)
    theirs = jax.pmap(lambda a, b, c: a + b + c, in_axes=(None, None, 0))(*args)
    assert bool((ours == 6).all()) and ours.shape == theirs.shape
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
