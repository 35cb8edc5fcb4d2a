"""The structural BCOO operations and BCSR of funcgrad.experimental.sparse against
jax.experimental.sparse: values, layouts (n_batch, n_dense), and jit/grad through them.

Each test runs its jax side as one compiled program (``_oracle``): jax's eager sparse operations
compile a program per operation, which once made this file a minute of the suite's time."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.experimental import sparse as fs

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
from jax.experimental import sparse as js  # noqa: E402

RNG = np.random.default_rng(0)


def _mat(shape, density=0.4):
    m = RNG.normal(size=shape)
    return np.where(RNG.random(shape) < density, m, 0.0)


def _pair(dense, **kw):
    """funcgrad's BCOO of ``dense`` and jax's BCOO of the same arrays (fromdense itself is compared
    with jax's by test_sparse.py; building jax's from ours spares the oracle an eager compile)."""
    x = fs.BCOO.fromdense(dense, **kw)
    flags = dict(indices_sorted=x.indices_sorted, unique_indices=x.unique_indices)
    return x, js.BCOO((np.asarray(x.data), np.asarray(x.indices)), shape=x.shape, **flags)


def _oracle(fn, *args):
    """jax's results of ``fn(*args)`` as (layout, dense) pairs, computed as ONE compiled program:
    jax's eager sparse operations compile a program per operation and call, which made these
    tests the slowest of the suite. A layout is (n_batch, n_dense, shape), None for a dense result."""
    layouts = []

    def run(*a):
        dense = []
        for out in fn(*a):
            sparse = isinstance(out, (js.BCOO, js.BCSR))
            layouts.append((out.n_batch, out.n_dense, out.shape) if sparse else None)
            dense.append(out.todense() if sparse else out)
        return dense

    return list(zip(layouts, jax.jit(run)(*args)))


def _same(ours, theirs):
    layout, dense = theirs
    if layout is not None:
        assert (ours.n_batch, ours.n_dense, ours.shape) == layout
        ours = ours.todense()
    np.testing.assert_allclose(np.asarray(ours), np.asarray(dense), rtol=1e-12, atol=1e-12)


def _all_same(ours, theirs):
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        _same(o, t)


@pytest.mark.parametrize("n_batch", [0, 1])
def test_slicing_family_as_jax(n_batch):
    dense = _mat((3, 4, 5))
    x, jx = _pair(dense, n_batch=n_batch)
    y, jy = _pair(dense[:, :1], n_batch=n_batch)

    def ops(sp, m, m1):
        return [
            sp.bcoo_slice(m, start_indices=(0, 1, 1), limit_indices=(3, 4, 5), strides=(1, 2, 1)),
            sp.bcoo_dynamic_slice(m, (1, 0, 2), (2, 3, 2)),
            sp.bcoo_rev(m, (0, 2)),
            sp.bcoo_squeeze(m1, dimensions=(1,)),
        ]

    _all_same(ops(fs, x, y), _oracle(lambda m, m1: ops(js, m, m1), jx, jy))


def test_broadcast_concatenate_multiply_as_jax():
    x, jx = _pair(_mat((3, 4)))
    y, jy = _pair(_mat((3, 4)))

    def ops(sp, m, m1):
        return [
            sp.bcoo_broadcast_in_dim(m, shape=(2, 3, 4), broadcast_dimensions=(1, 2)),
            sp.bcoo_broadcast_in_dim(m, shape=(3, 1, 4), broadcast_dimensions=(0, 2)),
            *(sp.bcoo_concatenate([m, m1], dimension=dim) for dim in (0, 1)),
            sp.bcoo_multiply_sparse(m, m1),
        ]

    _all_same(ops(fs, x, y), _oracle(lambda m, m1: ops(js, m, m1), jx, jy))


def test_gather_dot_general_sampled_and_conv_as_jax():
    x, jx = _pair(_mat((5, 3)))
    idx = np.array([[4], [0], [2]])
    A, B = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2))
    pattern = np.asarray(fs.BCOO.fromdense(_mat((3, 2), 0.6)).indices)
    dnums = (([1], [0]), ([], []))
    s, jsig = _pair(_mat((1, 1, 8), 0.5))
    ker = RNG.normal(size=(1, 1, 3))

    def ops(sp, lax, m, sig):
        gdn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
        return [
            # values only for gather and conv: jax's results are batched (n_batch 1 and 2), funcgrad's not
            sp.bcoo_gather(m, idx, gdn, (1, 3)).todense(),
            sp.bcoo_dot_general_sampled(A, B, pattern, dimension_numbers=dnums),
            *(
                sp.bcoo_conv_general_dilated(sig, ker, window_strides=(1,), padding=p).todense()
                for p in ("VALID", "SAME")
            ),
        ]

    _all_same(ops(fs, funcgrad.lax, x, s), _oracle(lambda m, sig: ops(js, jax.lax, m, sig), jx, jsig))
    with pytest.raises(NotImplementedError, match="window_strides"):
        fs.bcoo_conv_general_dilated(s, ker, window_strides=(2,), padding="VALID")


def test_jit_and_grad_through_structural_ops():
    x = fs.BCOO.fromdense(_mat((4, 4)))

    def f(data):
        m = fs.BCOO((data, x.indices), shape=x.shape)
        s = fs.bcoo_slice(m, start_indices=(1, 0), limit_indices=(4, 4))
        c = fs.bcoo_concatenate([s, fs.bcoo_rev(s, (1,))], dimension=0)
        return (c.todense() ** 2).sum()

    g = funcgrad.grad(f)(x.data)
    gj = funcgrad.jit(funcgrad.grad(f))(x.data)
    dense_grad = funcgrad.grad(lambda d: (d[1:] ** 2).sum() + (d[1:, ::-1] ** 2).sum())(x.todense())
    np.testing.assert_allclose(g, fs.bcoo_extract(x, dense_grad).data)
    np.testing.assert_allclose(gj, g)


@pytest.mark.parametrize("n_batch", [0, 1])
def test_bcsr_as_jax(n_batch):
    dense = _mat((2, 3, 4)) if n_batch else _mat((3, 4))
    x = fs.BCSR.fromdense(dense, n_batch=n_batch)
    v = RNG.normal(size=(4, 2))
    dn = (([1], [0]), ([], []))

    def ops(sp, m, d):
        outs = [
            m.data,
            m.indices,
            m.indptr,
            sp.bcsr_todense(m),
            sp.bcsr_extract(m.indices, m.indptr, d * 2.0),
        ]
        if not n_batch:
            outs += [
                sp.bcsr_dot_general(m, v, dimension_numbers=dn),
                sp.bcsr_concatenate([m, m], dimension=0),
                sp.bcsr_broadcast_in_dim(m, shape=(2, 3, 4), broadcast_dimensions=(1, 2)),
            ]
        return outs

    # jax's fromdense (its layout: data, indices, indptr) inside the one compiled oracle program
    theirs = _oracle(lambda d: ops(js, js.BCSR.fromdense(d, nse=x.nse, n_batch=n_batch), d), dense)
    _all_same(ops(fs, x, dense), theirs)
    # BCOO <-> BCSR
    np.testing.assert_allclose(x.to_bcoo().todense(), dense)
    np.testing.assert_allclose(fs.BCSR.from_bcoo(fs.BCOO.fromdense(dense, n_batch=n_batch)).todense(), dense)
    if not n_batch:
        np.testing.assert_allclose(x @ v, dense @ v)
    dup = fs.BCSR((fnp.array([1.0, 2.0, 3.0]), fnp.array([1, 1, 0]), fnp.array([0, 2, 3])), shape=(2, 2))
    jdup = js.BCSR((np.array([1.0, 2.0, 3.0]), np.array([1, 1, 0]), np.array([0, 2, 3])), shape=(2, 2))
    summed, jsummed = fs.bcsr_sum_duplicates(dup), js.bcsr_sum_duplicates(jdup)
    _same(summed, ((jsummed.n_batch, jsummed.n_dense, jsummed.shape), jsummed.todense()))
    assert summed.nse == jsummed.nse


def test_bcsr_under_jit_and_warning_class():
    dense = _mat((3, 4))
    x = fs.BCSR.fromdense(dense)
    out = funcgrad.jit(lambda m, v: m @ v)(x, np.ones(4))
    np.testing.assert_allclose(out, dense @ np.ones(4))
    assert issubclass(fs.CuSparseEfficiencyWarning, fs.SparseEfficiencyWarning)
    assert issubclass(js.CuSparseEfficiencyWarning, js.SparseEfficiencyWarning)


def test_sparse_tracer_marks_the_sparse_arguments_as_jax():
    x = fs.BCOO.fromdense(np.array([[0.0, 1.0], [2.0, 0.0]]))
    jx = js.BCOO.fromdense(np.array([[0.0, 1.0], [2.0, 0.0]]))
    seen = {}

    def f(tracer_type, m, v, key):
        seen[key] = (isinstance(m, tracer_type), isinstance(v, tracer_type), tuple(m.shape))
        return m @ v

    for use_tracer in (False, True):
        out = fs.sparsify(lambda m, v: f(fs.SparseTracer, m, v, "ours"), use_tracer=use_tracer)(x, np.ones(2))
        jout = js.sparsify(lambda m, v: f(js.SparseTracer, m, v, "theirs"), use_tracer=use_tracer)(
            jx, np.ones(2)
        )
        assert seen["ours"] == seen["theirs"] == (use_tracer, use_tracer, (2, 2))
        np.testing.assert_allclose(out, jout)
    assert not isinstance(x, fs.SparseTracer)  # only inside sparsify's trace
