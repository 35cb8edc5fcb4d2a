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
