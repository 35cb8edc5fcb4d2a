"""The structural BCOO operations and BCSR of funcgrad.experimental.sparse against
jax.experimental.sparse: values, layouts (n_batch, n_dense), and jit/grad through them."""

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
    return fs.BCOO.fromdense(dense, **kw), js.BCOO.fromdense(dense, **kw)


def _same(ours, theirs):
    if isinstance(theirs, (js.BCOO, js.BCSR)):
        assert (ours.n_batch, ours.n_dense, ours.shape) == (theirs.n_batch, theirs.n_dense, theirs.shape)
        ours, theirs = ours.todense(), theirs.todense()
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-12, atol=1e-12)


@pytest.mark.slow  # jax, the oracle, compiles each case: slow tier
@pytest.mark.parametrize("n_batch", [0, 1])
def test_slicing_family_as_jax(n_batch):
    dense = _mat((3, 4, 5))
    x, jx = _pair(dense, n_batch=n_batch)
    _same(fs.bcoo_slice(x, start_indices=(0, 1, 1), limit_indices=(3, 4, 5), strides=(1, 2, 1)),
          js.bcoo_slice(jx, start_indices=(0, 1, 1), limit_indices=(3, 4, 5), strides=(1, 2, 1)))  # fmt: skip
    _same(fs.bcoo_dynamic_slice(x, (1, 0, 2), (2, 3, 2)), js.bcoo_dynamic_slice(jx, (1, 0, 2), (2, 3, 2)))
    _same(fs.bcoo_rev(x, (0, 2)), js.bcoo_rev(jx, (0, 2)))
    y, jy = _pair(dense[:, :1], n_batch=n_batch)
    _same(fs.bcoo_squeeze(y, dimensions=(1,)), js.bcoo_squeeze(jy, dimensions=(1,)))


@pytest.mark.slow  # jax, the oracle, compiles each case: slow tier
def test_broadcast_concatenate_multiply_as_jax():
    x, jx = _pair(_mat((3, 4)))
    _same(
        fs.bcoo_broadcast_in_dim(x, shape=(2, 3, 4), broadcast_dimensions=(1, 2)),
        js.bcoo_broadcast_in_dim(jx, shape=(2, 3, 4), broadcast_dimensions=(1, 2)),
    )
    _same(
        fs.bcoo_broadcast_in_dim(x, shape=(3, 1, 4), broadcast_dimensions=(0, 2)),
        js.bcoo_broadcast_in_dim(jx, shape=(3, 1, 4), broadcast_dimensions=(0, 2)),
    )
    y, jy = _pair(_mat((3, 4)))
    for dim in (0, 1):
        _same(fs.bcoo_concatenate([x, y], dimension=dim), js.bcoo_concatenate([jx, jy], dimension=dim))
    _same(fs.bcoo_multiply_sparse(x, y), js.bcoo_multiply_sparse(jx, jy))


@pytest.mark.slow  # jax, the oracle, compiles each case: slow tier
def test_gather_dot_general_sampled_and_conv_as_jax():
    dense = _mat((5, 3))
    x, jx = _pair(dense)
    idx = np.array([[4], [0], [2]])
    dn = funcgrad.lax.GatherDimensionNumbers(
        offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)
    )
    jdn = jax.lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    ours = fs.bcoo_gather(x, idx, dn, (1, 3))
    theirs = js.bcoo_gather(jx, idx, jdn, (1, 3))
    np.testing.assert_allclose(ours.todense(), theirs.todense())
    A, B = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2))
    pattern = js.BCOO.fromdense(_mat((3, 2), 0.6)).indices
    dnums = (([1], [0]), ([], []))
    np.testing.assert_allclose(
        fs.bcoo_dot_general_sampled(A, B, np.asarray(pattern), dimension_numbers=dnums),
        js.bcoo_dot_general_sampled(A, B, pattern, dimension_numbers=dnums),
    )
    sig, ker = _mat((1, 1, 8), 0.5), RNG.normal(size=(1, 1, 3))
    s, jsig = _pair(sig)
    for pad in ("VALID", "SAME"):
        np.testing.assert_allclose(
            fs.bcoo_conv_general_dilated(s, ker, window_strides=(1,), padding=pad).todense(),
            js.bcoo_conv_general_dilated(jsig, ker, window_strides=(1,), padding=pad).todense(),
            rtol=1e-12,
        )
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


@pytest.mark.slow  # jax, the oracle, compiles each case: slow tier
@pytest.mark.parametrize("n_batch", [0, 1])
def test_bcsr_as_jax(n_batch):
    dense = _mat((2, 3, 4)) if n_batch else _mat((3, 4))
    x, jx = fs.BCSR.fromdense(dense, n_batch=n_batch), js.BCSR.fromdense(dense, n_batch=n_batch)
    np.testing.assert_array_equal(x.indices, jx.indices)
    np.testing.assert_array_equal(x.indptr, jx.indptr)
    np.testing.assert_allclose(x.data, jx.data)
    _same(fs.bcsr_todense(x), js.bcsr_todense(jx))
    np.testing.assert_allclose(
        fs.bcsr_extract(x.indices, x.indptr, dense * 2.0), js.bcsr_extract(jx.indices, jx.indptr, dense * 2.0)
    )
    # BCOO <-> BCSR
    np.testing.assert_allclose(x.to_bcoo().todense(), dense)
    np.testing.assert_allclose(fs.BCSR.from_bcoo(fs.BCOO.fromdense(dense, n_batch=n_batch)).todense(), dense)
    if not n_batch:
        v = RNG.normal(size=(4, 2))
        dn = (([1], [0]), ([], []))
        np.testing.assert_allclose(
            fs.bcsr_dot_general(x, v, dimension_numbers=dn), js.bcsr_dot_general(jx, v, dimension_numbers=dn)
        )
        np.testing.assert_allclose(x @ v, dense @ v)
        _same(fs.bcsr_concatenate([x, x], dimension=0), js.bcsr_concatenate([jx, jx], dimension=0))
        _same(
            fs.bcsr_broadcast_in_dim(x, shape=(2, 3, 4), broadcast_dimensions=(1, 2)),
            js.bcsr_broadcast_in_dim(jx, shape=(2, 3, 4), broadcast_dimensions=(1, 2)),
        )
    dup = fs.BCSR((fnp.array([1.0, 2.0, 3.0]), fnp.array([1, 1, 0]), fnp.array([0, 2, 3])), shape=(2, 2))
    jdup = js.BCSR((np.array([1.0, 2.0, 3.0]), np.array([1, 1, 0]), np.array([0, 2, 3])), shape=(2, 2))
    _same(fs.bcsr_sum_duplicates(dup), js.bcsr_sum_duplicates(jdup))
    assert fs.bcsr_sum_duplicates(dup).nse == js.bcsr_sum_duplicates(jdup).nse


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
