"""Typed PRNG key arrays are leaves of the public tree utilities, as JAX's key arrays (NOTE: [public
pytree registry]): leaves, structures, maps and paths compared with jax 0.10.2; keys inside
containers still cross jit and vmap (the transformations see their data); result_type of keys."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


def _observe(lib, jnp):
    k = lib.random.key(0)
    tree = {"key": k, "x": jnp.ones(2), "ks": lib.random.split(k, 3)}
    leaves = lib.tree_util.tree_leaves(tree)
    return (
        [getattr(x, "shape", None) for x in leaves],
        str(lib.tree_util.tree_structure(tree)),
        lib.tree_util.tree_map(lambda x: x.shape, tree),
        [lib.tree_util.keystr(p) for p, _ in lib.tree_util.tree_leaves_with_path(tree)],
        lib.tree_util.tree_map(lambda x: x, tree)["key"] is k,
        str(jnp.result_type(k)),
    )


def test_key_arrays_are_leaves_as_in_jax():
    jax = pytest.importorskip("jax")
    assert _observe(funcgrad, fnp) == _observe(jax, jax.numpy)


def test_keys_in_containers_still_cross_transformations():
    tree = {"key": funcgrad.random.key(1), "x": fnp.ones(2)}
    out = funcgrad.jit(lambda t: funcgrad.random.normal(t["key"], (2,)) + t["x"])(tree)
    np.testing.assert_allclose(out, funcgrad.random.normal(tree["key"], (2,)) + 1.0)
    keys = funcgrad.random.split(tree["key"], 3)
    assert funcgrad.vmap(lambda k: funcgrad.random.normal(k))(keys).shape == (3,)
    treedef = funcgrad.tree.structure(tree)
    assert copy.deepcopy(treedef) == treedef and treedef.num_leaves == 2


def test_jvp_and_linearize_take_a_key_s_float0_tangent_of_its_shape_as_jax():
    # (a key array is one leaf, its tangent float0 of the keys' shape, as JAX takes it; funcgrad's
    # transformations see the keys' data, and refused the tangent's structure)
    jax = pytest.importorskip("jax")

    def run(lib):
        f = lambda k, x: lib.random.normal(k, dtype=np.float32) * x  # noqa: E731
        g = lambda ks, x: lib.vmap(lambda k: lib.random.normal(k, dtype=np.float32))(ks) * x  # noqa: E731
        k, ks = lib.random.key(0), lib.random.split(lib.random.key(1), 3)
        t0, t3 = np.zeros((), lib.dtypes.float0), np.zeros((3,), lib.dtypes.float0)
        out = [lib.jvp(f, (k, 2.0), (t0, 1.0)), lib.jvp(g, (ks, 2.0), (t3, 1.0))]
        out.append(lib.linearize(f, k, 2.0)[1](t0, 3.0))
        out.append(lib.vmap(lambda k: lib.jvp(f, (k, 2.0), (t0, 1.0)))(ks))
        with pytest.raises(ValueError, match="different primal and tangent shapes"):
            lib.jvp(f, (k, 2.0), (t3, 1.0))
        return out

    for got, want in zip(run(funcgrad), run(jax), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_shape_dtype_structs_of_a_key_dtype_stand_for_abstract_keys_as_jax():
    # (eval_shape and jit's lower/trace of a ShapeDtypeStruct of key<fry>: funcgrad traced it as raw
    # key data of shape () and refused it, 'expected key_data.ndim >= 1')
    jax = pytest.importorskip("jax")

    def run(lib):
        kd = lib.random.key(0).dtype
        sds = lib.ShapeDtypeStruct((3,), kd)
        split = lambda k: lib.random.split(k[0], 2)  # noqa: E731
        draw = lambda k: lib.random.normal(k, (2,), np.float32)  # noqa: E731
        lowered = lib.jit(split).lower(sds)
        got = lowered.compile()(lib.random.split(lib.random.key(4), 3))
        one = lib.ShapeDtypeStruct((), kd)
        shapes = (lib.eval_shape(split, sds), lib.eval_shape(draw, one), lowered.out_info)
        return [(s.shape, str(s.dtype)) for s in shapes], lib.random.key_data(got)

    (ours, got), (theirs, want) = run(funcgrad), run(jax)
    assert ours == theirs
    np.testing.assert_array_equal(got, want)
