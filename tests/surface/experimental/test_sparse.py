"""``funcgrad.experimental.sparse`` against ``jax.experimental.sparse`` (the oracle), NumPy and
``scipy.sparse``:

- BCOO ``fromdense``/``todense`` for every split of a 3-d shape into batch, sparse and dense
  dimensions (data and indices equal jax's, padding included), ``transpose``, ``sum``,
  ``multiply_dense``, ``sum_duplicates``, ``sort_indices``, ``extract``;
- ``bcoo_dot_general`` for every layout and a table of dimension numbers (contracting and batch
  dimensions on batch, sparse and dense axes), dense x sparse, sparse x sparse, ``@``;
- ``reshape``, sparse + sparse, ``sparsify`` against dense functions and jax's ``sparsify``;
- gradients with respect to ``data``: finite differences in float64, the dense computation's
  gradient restricted to the pattern, ``sparse.grad``/``jacfwd``/``jacrev`` against jax's;
- ``jit`` against eager, ``vmap`` against a loop (over a dense operand, over a BCOO's batch
  dimension, returning a BCOO);
- COO/CSR/CSC against scipy.sparse and jax; ``todense``/``empty``/``eye``/``random_bcoo``;
- the errors of bad input.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
import scipy.sparse as sps

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import random
from funcgrad.experimental import sparse
from funcgrad.experimental.sparse import BCOO
from funcgrad.testing import check_grads

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
js = pytest.importorskip("jax.experimental.sparse")
_js_util = pytest.importorskip("jax.experimental.sparse.util")


def _jfromdense(mat, *, nse=None, n_batch=0, n_dense=0, cls=None):
    """jax's ``BCOO.fromdense`` (or ``cls.fromdense``: COO, CSR, CSC) as two compiled programs
    (its stored-element count, as jax counts it, then the conversion with that count): eagerly jax
    compiles one program per operation of its implementation, about 45 per call, which made this
    file's jax side most of its time. The values are the same integer selections; the sparse
    matrix is a pytree, so it comes back whole."""
    if nse is None:
        nse = int(jax.jit(_js_util._count_stored_elements, static_argnums=(1, 2))(mat, n_batch, n_dense))
    if cls is not None:
        return jax.jit(lambda m: cls.fromdense(m, nse=nse))(mat)
    return jax.jit(lambda m: js.BCOO.fromdense(m, nse=nse, n_batch=n_batch, n_dense=n_dense))(mat)


@functools.cache
def _jfromdense_m3(n_batch=0, n_dense=0, nse=None):
    """jax's BCOO of ``M3`` in one layout, converted once for the whole module (it is read-only)."""
    return _jfromdense(M3, nse=nse, n_batch=n_batch, n_dense=n_dense)


def _jtodense(x):
    """jax's ``todense`` as one compiled program (eagerly: a program per operation)."""
    return jax.jit(js.todense)(x)


def _dense(shape, seed=0, density=0.4):
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape) * (rng.random(shape) < density)


M3 = _dense((3, 4, 5))
LAYOUTS = [(nb, nd) for nb in range(4) for nd in range(4 - nb)]


# ----------------------------------------------------------------------------------------------
# conversions and layout


@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
def test_fromdense_matches_jax_layout(n_batch, n_dense):
    x = BCOO.fromdense(M3, n_batch=n_batch, n_dense=n_dense)
    jx = _jfromdense_m3(n_batch, n_dense)
    assert (x.nse, x.n_batch, x.n_dense, x.n_sparse) == (jx.nse, jx.n_batch, jx.n_dense, jx.n_sparse)
    assert x.indices.dtype == jx.indices.dtype == np.int32
    np.testing.assert_array_equal(x.indices, jx.indices)
    np.testing.assert_array_equal(x.data, jx.data)
    np.testing.assert_array_equal(x.todense(), M3)
    assert repr(x) == repr(jx)
    # extra slots are padding: out-of-bounds indices, zero data, same dense form
    padded = BCOO.fromdense(M3, nse=x.nse + 2, n_batch=n_batch, n_dense=n_dense)
    jpadded = _jfromdense_m3(n_batch, n_dense, nse=x.nse + 2)
    np.testing.assert_array_equal(padded.indices, jpadded.indices)
    np.testing.assert_array_equal(padded.data, jpadded.data)
    np.testing.assert_array_equal(padded.todense(), M3)


def test_properties_and_construction():
    x = BCOO((np.array([5.0, 6.0]), np.array([[0, 1], [2, 0]])), shape=(3, 2))
    assert (x.shape, x.ndim, x.nse, x.n_batch, x.n_sparse, x.n_dense, x.dtype) == (
        (3, 2),
        2,
        2,
        0,
        2,
        0,
        np.float64,
    )
    np.testing.assert_array_equal(x.todense(), [[0, 5], [0, 0], [6, 0]])
    np.testing.assert_array_equal(sparse.bcoo_todense(x), sparse.todense(x))
    assert x.astype(np.float32).dtype == np.float32
    # duplicates add up in the dense form
    d = BCOO((np.array([1.0, 2.0]), np.array([[1], [1]])), shape=(3,))
    np.testing.assert_array_equal(d.todense(), [0, 3, 0])


@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
def test_transpose_and_sum(n_batch, n_dense):
    x = BCOO.fromdense(M3, n_batch=n_batch, n_dense=n_dense)
    n_sparse = 3 - n_batch - n_dense
    if n_batch + n_dense == 0 or n_sparse + n_dense == 0 or n_batch + n_sparse == 0:
        np.testing.assert_array_equal(x.T.todense(), M3.T)
    else:  # reversing all axes mixes kinds of dimensions: refused, as in jax
        with pytest.raises(ValueError, match="mixes batch, sparse and dense"):
            x.transpose()
    groups = [
        list(range(n_batch)),
        list(range(n_batch, n_batch + n_sparse)),
        list(range(n_batch + n_sparse, 3)),
    ]
    for perm in itertools.product(*(itertools.permutations(g) for g in groups)):
        perm = [p for g in perm for p in g]
        np.testing.assert_array_equal(
            sparse.bcoo_transpose(x, permutation=perm).todense(), M3.transpose(perm)
        )
    for r in range(4):
        for axes in itertools.combinations(range(3), r):
            out = sparse.bcoo_reduce_sum(x, axes=axes)
            np.testing.assert_allclose(out.todense(), M3.sum(axes), atol=1e-12, err_msg=str(axes))
    np.testing.assert_allclose(x.sum(-1).todense(), M3.sum(-1), atol=1e-12)
    np.testing.assert_allclose(np.asarray(x.sum()), M3.sum(), atol=1e-12)  # (dense, as JAX's)


def test_reduce_sum_drops_padding():
    x = BCOO.fromdense(M3, nse=30)  # padding slots must not land inside once a column is dropped
    np.testing.assert_allclose(x.sum((0, 2)).todense(), M3.sum((0, 2)), atol=1e-12)


def test_transpose_refuses_mixing_dimension_kinds():
    x = BCOO.fromdense(M3, n_batch=1)
    with pytest.raises(ValueError, match="mixes batch, sparse and dense"):
        x.transpose((1, 0, 2))
    with pytest.raises(ValueError, match="not a permutation"):
        x.transpose((0, 0, 1))


@pytest.mark.parametrize("n_batch,n_dense", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_multiply_dense(n_batch, n_dense):
    x = BCOO.fromdense(M3, n_batch=n_batch, n_dense=n_dense)
    rng = np.random.default_rng(3)
    for shape in [(3, 4, 5), (4, 5), (5,), (3, 1, 5), ()]:
        v = rng.normal(size=shape)
        out = x * v
        assert isinstance(out, BCOO) and out.nse == x.nse
        np.testing.assert_allclose(out.todense(), M3 * v)
        np.testing.assert_allclose((v * x).todense(), M3 * v)
    np.testing.assert_allclose((-x).todense(), -M3)
    np.testing.assert_allclose((x / 2).todense(), M3 / 2)
    with pytest.raises(ValueError, match="does not broadcast"):
        x * np.ones((2, 5))


def _with_duplicates(seed=0, n_batch=0):
    rng = np.random.default_rng(seed)
    batch = (2,) * n_batch
    indices = rng.integers(0, 4, size=batch + (8, 2)).astype(np.int32)
    indices[..., -1, :] = 4  # one padding slot
    data = rng.normal(size=batch + (8,))
    return data, indices, batch + (4, 4)


@pytest.mark.parametrize("n_batch", [0, 1])
def test_sum_duplicates_sort_and_extract_match_jax(n_batch):
    data, indices, shape = _with_duplicates(n_batch=n_batch)
    x, jx = BCOO((data, indices), shape=shape), js.BCOO((data, indices), shape=shape)
    s, t = x.sum_duplicates(), jx.sum_duplicates()
    np.testing.assert_array_equal(s.indices, t.indices)
    valid = np.all(np.asarray(s.indices) < 4, axis=-1)  # jax leaves padding values in padding slots
    np.testing.assert_allclose(np.asarray(s.data)[valid], np.asarray(t.data)[valid])
    np.testing.assert_array_equal(np.asarray(s.data)[~valid], 0)
    np.testing.assert_allclose(s.todense(), x.todense())
    s2 = x.sum_duplicates(nse=10)
    np.testing.assert_allclose(s2.todense(), x.todense())
    assert s2.nse == 10
    o, p = x.sort_indices(), jax.jit(lambda m: m.sort_indices())(jx)
    np.testing.assert_array_equal(o.indices, p.indices)
    np.testing.assert_allclose(o.todense(), x.todense())
    dense = np.random.default_rng(9).normal(size=shape)
    for unique in (False, True):
        e = sparse.bcoo_extract(x, dense, assume_unique=unique)
        f = jax.jit(functools.partial(js.bcoo_extract, assume_unique=unique))(jx, dense)
        np.testing.assert_allclose(e.todense(), _jtodense(f))
    # under jit the slot count defaults to the input's
    jitted = funcgrad.jit(lambda x: x.sum_duplicates())(x)
    assert jitted.nse == x.nse
    np.testing.assert_allclose(jitted.todense(), x.todense())


# ----------------------------------------------------------------------------------------------
# dot_general

DOT_CASES = [
    # (dimension_numbers, rhs shape) with lhs shape (3, 4, 5)
    ((([2], [0]), ([], [])), (5, 2)),
    ((([1], [1]), ([0], [0])), (3, 4, 2)),
    ((([0, 2], [1, 0]), ([], [])), (5, 3, 2)),
    ((([], []), ([], [])), (2,)),
    ((([0], [0]), ([2], [1])), (3, 5)),
    ((([1, 2], [0, 1]), ([0], [2])), (4, 5, 3)),
    ((([2], [1]), ([1], [0])), (4, 5, 2)),
]


@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
def test_dot_general_sparse_dense(n_batch, n_dense):
    x = BCOO.fromdense(M3, n_batch=n_batch, n_dense=n_dense)
    jx = _jfromdense_m3(n_batch, n_dense)
    rng = np.random.default_rng(1)
    for dn, rshape in DOT_CASES:
        r = rng.normal(size=rshape)
        want = jax.lax.dot_general(M3, r, dn)
        np.testing.assert_allclose(sparse.bcoo_dot_general(x, r, dimension_numbers=dn), want, atol=1e-12)
        try:  # jax refuses some layouts (contracting dense dimensions, dot-batch on non-batch axes)
            theirs = jax.jit(functools.partial(js.bcoo_dot_general, dimension_numbers=dn))(jx, r)
        except NotImplementedError:
            theirs = want
        np.testing.assert_allclose(theirs, want, atol=1e-12)
        # the same product with the dense operand on the left
        (lc, rc), (lb, rb) = dn
        swapped = sparse.bcoo_dot_general(r, x, dimension_numbers=((rc, lc), (rb, lb)))
        np.testing.assert_allclose(swapped, jax.lax.dot_general(r, M3, ((rc, lc), (rb, lb))), atol=1e-12)


def test_matmul_forms():
    a = _dense((4, 5), seed=2)
    x = BCOO.fromdense(a)
    v, w = np.arange(5.0), np.arange(10.0).reshape(5, 2)
    np.testing.assert_allclose(x @ v, a @ v)
    np.testing.assert_allclose(x @ w, a @ w)
    np.testing.assert_allclose(np.arange(4.0) @ x, np.arange(4.0) @ a)  # NumPy lhs defers to BCOO
    np.testing.assert_allclose(fnp.ones((3, 4)) @ x, np.ones((3, 4)) @ a)  # funcgrad.Array lhs
    stack = BCOO.fromdense(M3, n_batch=1)
    np.testing.assert_allclose(stack @ w, M3 @ w)
    np.testing.assert_allclose(stack @ np.ones((3, 5, 2)), M3 @ np.ones((3, 5, 2)))
    np.testing.assert_allclose(np.ones((2, 4)) @ stack, np.ones((2, 4)) @ M3)
    # sparse @ sparse is a BCOO with the product's dense form (jax keeps duplicates as well)
    b = _dense((5, 3), seed=4)
    prod = x @ BCOO.fromdense(b)
    assert isinstance(prod, BCOO)
    np.testing.assert_allclose(prod.todense(), a @ b, atol=1e-12)
    np.testing.assert_allclose(prod.sum_duplicates().todense(), a @ b, atol=1e-12)
    with pytest.raises(ValueError, match="do not align"):
        x @ np.ones(4)


def test_dot_general_errors():
    x = BCOO.fromdense(M3)
    with pytest.raises(TypeError, match="paired with rhs dimension"):
        sparse.bcoo_dot_general(x, np.ones((4, 2)), dimension_numbers=(([2], [0]), ([], [])))
    with pytest.raises(TypeError, match="dimension_numbers must be"):
        sparse.bcoo_dot_general(x, np.ones(5), dimension_numbers=[2, 0])
    with pytest.raises(TypeError, match="neither operand"):
        sparse.bcoo_dot_general(np.ones(2), np.ones(2), dimension_numbers=(([0], [0]), ([], [])))


# ----------------------------------------------------------------------------------------------
# gradients


def test_gradients_of_data_against_finite_differences():
    a = _dense((4, 5), seed=5)
    x = BCOO.fromdense(a)
    w = np.random.default_rng(6).normal(size=(5, 3))
    v = np.random.default_rng(7).normal(size=(4, 5))

    def f(data, w):
        s = BCOO((data, x.indices), shape=x.shape)
        return fnp.sum(fnp.sin(s @ w)) + fnp.sum((s * v).sum(0).todense() ** 2) + fnp.sum(v @ s.T)

    check_grads(f, (x.data, w), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("n_batch,n_dense", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_sparse_grad_is_the_dense_gradient_on_the_pattern(n_batch, n_dense):
    x = BCOO.fromdense(M3, n_batch=n_batch, n_dense=n_dense)
    r = np.random.default_rng(8).normal(size=(5, 2))

    def loss(m):  # the same function of a sparse or a dense operand
        return fnp.sum(fnp.tanh(m @ r)) + fnp.sum(
            (m * r[:, 0]).sum(1).todense() if isinstance(m, BCOO) else 0
        )

    g = sparse.grad(loss)(x)
    assert isinstance(g, BCOO) and g.shape == x.shape and g.nse == x.nse
    np.testing.assert_array_equal(g.indices, x.indices)
    dense_grad = funcgrad.grad(lambda m: fnp.sum(fnp.tanh(m @ r)) + fnp.sum(m * r[:, 0]))(M3)
    mask = (
        M3 != 0
        if not n_dense
        else np.broadcast_to((M3 != 0).any(axis=tuple(range(3 - n_dense, 3)), keepdims=True), M3.shape)
    )
    np.testing.assert_allclose(g.todense(), np.where(mask, dense_grad, 0), atol=1e-12)
    if not n_dense:  # jax cannot contract a dense dimension
        jx = _jfromdense_m3(n_batch, n_dense)
        jg = jax.jit(js.grad(lambda m: jnp.sum(jnp.tanh(m @ r)) + (m * r[:, 0]).sum(1).todense().sum()))(jx)
        np.testing.assert_allclose(g.data, jg.data, atol=1e-12)


def test_value_and_grad_jacobians_and_has_aux():
    a = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    x, jx = BCOO.fromdense(a), _jfromdense(a)
    y = np.array([1.0, -2.0, 0.5])
    val, (gx, gy) = sparse.value_and_grad(lambda x, y: (x @ y).sum() ** 2, argnums=(0, 1))(x, y)
    jval, (jgx, jgy) = jax.jit(js.value_and_grad(lambda x, y: (x @ y).sum() ** 2, argnums=(0, 1)))(jx, y)
    np.testing.assert_allclose(val, jval)
    np.testing.assert_allclose(gx.data, jgx.data)
    np.testing.assert_allclose(gy, jgy)
    for ours, theirs in [
        (sparse.jacfwd, js.jacfwd),
        (sparse.jacrev, js.jacrev),
        (sparse.jacobian, js.jacobian),
    ]:
        J, JJ = ours(lambda x: fnp.sin(x @ y))(x), jax.jit(theirs(lambda x: jnp.sin(x @ y)))(jx)
        assert (J.shape, J.n_batch, J.nse) == (JJ.shape, JJ.n_batch, JJ.nse)
        np.testing.assert_allclose(J.todense(), _jtodense(JJ), atol=1e-12)
    g, aux = sparse.grad(lambda x: ((x @ y).sum(), x.data * 2), has_aux=True)(x)
    assert isinstance(g, BCOO)
    np.testing.assert_allclose(aux, 2 * x.data)
    # a BCOO inside a pytree argument, and a dense leaf beside it
    tree = {"m": x, "b": np.ones(2)}
    gt = sparse.grad(lambda t: fnp.sum((t["m"] @ y + t["b"]) ** 2))(tree)
    assert isinstance(gt["m"], BCOO)
    np.testing.assert_allclose(gt["b"], 2 * (a @ y + 1))


def test_jacobian_of_a_csr_argument_is_refused_with_the_reason():
    m = sparse.CSR.fromdense(np.array([[1.0, 0.0], [2.0, 3.0]]))
    g = sparse.grad(lambda m: (m @ np.ones(2)).sum())(m)
    assert isinstance(g, sparse.CSR)
    np.testing.assert_allclose(g.data, np.ones(3))
    with pytest.raises(TypeError, match="convert it to BCOO"):
        sparse.jacfwd(lambda m: m @ np.ones(2))(m)


# ----------------------------------------------------------------------------------------------
# jit and vmap


def test_jit_matches_eager():
    x = BCOO.fromdense(M3, n_batch=1)
    w = np.random.default_rng(2).normal(size=(5, 2))
    fns = [
        lambda x: x @ w,
        lambda x: x.transpose((0, 2, 1)).todense(),
        lambda x: x.sum((0, 2)).todense(),
        lambda x: (x * w[:, 0]).todense(),
        lambda x: x.sum_duplicates(nse=x.nse).todense(),
        lambda x: x.sort_indices().todense(),
        lambda x: BCOO.fromdense(x.todense(), nse=x.nse, n_batch=1).data,
    ]
    for f in fns:
        np.testing.assert_allclose(funcgrad.jit(f)(x), f(x), atol=1e-12)
    out = funcgrad.jit(lambda x: -x)(x)
    assert isinstance(out, BCOO) and out.shape == x.shape
    with pytest.raises(TypeError, match="pass nse= explicitly"):
        funcgrad.jit(lambda m: BCOO.fromdense(m).data)(M3)


def test_vmap_matches_a_loop():
    x = BCOO.fromdense(M3[0])
    vs = np.random.default_rng(4).normal(size=(6, 5))
    np.testing.assert_allclose(funcgrad.vmap(lambda v: x @ v)(vs), np.stack([M3[0] @ v for v in vs]))
    # over a BCOO's batch dimension: each element is a (4, 5) BCOO
    stack = BCOO.fromdense(M3, n_batch=1)
    out = funcgrad.vmap(lambda s, v: s @ v)(stack, vs[:3])
    np.testing.assert_allclose(out, np.stack([M3[i] @ vs[i] for i in range(3)]))
    # returning a BCOO: it gains a batch dimension
    made = funcgrad.vmap(lambda m: BCOO.fromdense(m, nse=8))(M3)
    assert isinstance(made, BCOO) and made.n_batch == 1 and made.shape == M3.shape
    np.testing.assert_allclose(made.todense(), M3)
    # a BCSR too (sparse_test's test_vmappable: its shape kept the batch dimension inside vmap)
    rows = funcgrad.vmap(lambda s: fnp.zeros(s.shape).sum(0))(sparse.BCSR.fromdense(M3, n_batch=1))
    assert rows.shape == (3, 5)
    # per-example gradients of the data
    gs = funcgrad.vmap(sparse.grad(lambda s, v: fnp.sum((s @ v) ** 2)))(stack, vs[:3])
    for i in range(3):
        gi = sparse.grad(lambda s, v: fnp.sum((s @ v) ** 2))(BCOO.fromdense(M3[i], nse=stack.nse), vs[i])
        np.testing.assert_allclose(gs.data[i], gi.data, atol=1e-12)


# ----------------------------------------------------------------------------------------------
# COO, CSR, CSC


def test_coo_csr_csc_against_scipy_and_jax():
    a = _dense((5, 4), seed=11)
    v, w = np.arange(4.0), np.arange(8.0).reshape(4, 2)
    csr = sparse.CSR.fromdense(a)
    ref = sps.csr_matrix(a)
    np.testing.assert_array_equal(csr.indptr, ref.indptr)
    np.testing.assert_array_equal(csr.indices, ref.indices)
    np.testing.assert_allclose(csr.data, ref.data)
    coo = sparse.COO.fromdense(a)
    cref = sps.coo_matrix(a)
    np.testing.assert_array_equal(coo.row, cref.row)
    np.testing.assert_array_equal(coo.col, cref.col)
    csc = sparse.CSC.fromdense(a)
    np.testing.assert_array_equal(csc.indptr, sps.csc_matrix(a).indptr)
    for m, jcls in [(coo, js.COO), (csr, js.CSR), (csc, js.CSC)]:
        np.testing.assert_allclose(m.todense(), a)
        np.testing.assert_allclose(m @ v, a @ v)
        np.testing.assert_allclose(m @ w, a @ w)
        np.testing.assert_allclose(np.arange(5.0) @ m, np.arange(5.0) @ a)
        np.testing.assert_allclose(m.T.todense(), a.T)
        np.testing.assert_allclose(m.T @ np.arange(5.0), a.T @ np.arange(5.0))
        assert repr(m.T) == repr(_jfromdense(a, cls=jcls).T)
        padded, jpadded = type(m).fromdense(a, nse=m.nse + 3), _jfromdense(a, nse=m.nse + 3, cls=jcls)
        for leaf, jleaf in zip(funcgrad.tree_util.tree_leaves(padded), jax.tree.leaves(jpadded)):
            np.testing.assert_array_equal(leaf, jleaf)
        np.testing.assert_allclose(padded @ w, a @ w)
        np.testing.assert_allclose(padded.T @ np.ones(5), a.T @ np.ones(5))
        np.testing.assert_allclose(funcgrad.jit(lambda m, w: m @ w)(m, w), a @ w)
        np.testing.assert_allclose((-m).todense(), -a)
        np.testing.assert_allclose((2 * m).todense(), 2 * a)
    np.testing.assert_allclose(sparse.coo_matvec(coo, np.ones(5), transpose=True), a.T @ np.ones(5))
    np.testing.assert_allclose(sparse.csr_matmat(csr, np.ones((5, 2)), transpose=True), a.T @ np.ones((5, 2)))


def test_csc_is_no_csr_and_bcsr_from_scipy_sparse_as_jax():
    # sparse_test's test_attrs_CSC (a CSC was an instance of CSR) and
    # test_bcoo_bcsr_from_scipy_sparse (BCSR had no from_scipy_sparse)
    a = _dense((5, 8), seed=3)
    for cls, jcls in [(sparse.CSC, js.CSC), (sparse.CSR, js.CSR)]:
        m, jm = cls.fromdense(a), jcls.fromdense(jnp.asarray(a))
        kinds = [isinstance(m, k) for k in (sparse.CSR, sparse.CSC, sparse.COO)]
        assert kinds == [isinstance(jm, k) for k in (js.CSR, js.CSC, js.COO)]
        assert len(m.indptr) == len(jm.indptr) and len(m) == len(jm) == 5
    for make in (sps.coo_matrix, sps.csr_matrix, sps.csc_matrix):
        for cls, jcls in [(sparse.BCSR, js.BCSR), (sparse.BCOO, js.BCOO)]:
            m, jm = cls.from_scipy_sparse(make(a)), jcls.from_scipy_sparse(make(a))
            for leaf, jleaf in zip(funcgrad.tree_util.tree_leaves(m), jax.tree.leaves(jm), strict=True):
                np.testing.assert_array_equal(leaf, jleaf)
                assert leaf.dtype == jleaf.dtype
            np.testing.assert_array_equal(m.todense(), a)
    with pytest.raises(NotImplementedError, match="nonzero n_dense/n_batch"):
        sparse.BCSR.from_scipy_sparse(sps.csr_matrix(a), n_batch=1)


def test_csr_gradient_against_finite_differences():
    a = _dense((5, 4), seed=12)
    m = sparse.CSR.fromdense(a)
    w = np.random.default_rng(13).normal(size=(4, 3))

    def f(data, w):
        return fnp.sum(fnp.cos(sparse.CSR((data, m.indices, m.indptr), shape=m.shape) @ w))

    check_grads(f, (m.data, w), order=2)


def test_matrix_errors():
    with pytest.raises(ValueError, match="shape must be 2-d"):
        sparse.COO((np.ones(1), np.zeros(1, int), np.zeros(1, int)), shape=(2, 2, 2))
    with pytest.raises(ValueError, match="indptr must have 3 entries"):
        sparse.CSR((np.ones(1), np.zeros(1, int), np.zeros(2, int)), shape=(2, 2))
    with pytest.raises(ValueError, match=r"must have shape \(4,\)"):
        sparse.CSR.fromdense(np.ones((3, 4))) @ np.ones(3)
    with pytest.raises(TypeError, match="expected a CSR"):
        sparse.csr_todense(sparse.COO.fromdense(np.eye(2)))


# ----------------------------------------------------------------------------------------------
# helpers


def _jitted(constructor, *args, **kw):
    """jax's constructor as one compiled program (its eager form compiles a program per operation,
    which made the test below the file's slowest); sparse matrices are pytrees, so they come back."""
    return jax.jit(lambda: constructor(*args, **kw))()


def test_todense_empty_eye_and_random_bcoo_match_jax():
    dense = np.ones(3)
    assert sparse.todense(dense) is dense
    for fmt in ("bcoo", "coo", "csr", "csc"):
        for kw in [{}, {"k": 1}, {"M": 5, "k": -2}, {"k": 7}]:
            ours, theirs = sparse.eye(4, sparse_format=fmt, **kw), _jitted(js.eye, 4, sparse_format=fmt, **kw)
            assert type(ours).__name__ == type(theirs).__name__ and repr(ours) == repr(theirs)
            np.testing.assert_array_equal(sparse.todense(ours), _jtodense(theirs))
        e, je = sparse.empty((2, 3), sparse_format=fmt), _jitted(js.empty, (2, 3), sparse_format=fmt)
        assert repr(e) == repr(je)
        np.testing.assert_array_equal(e.todense(), np.zeros((2, 3)))
    e = sparse.empty((2, 3, 4), n_batch=1, n_dense=1)
    assert (e.n_batch, e.n_dense, e.nse) == (1, 1, 0)
    with pytest.raises(ValueError, match="sparse_format='dok' not recognized"):
        sparse.eye(3, sparse_format="dok")
    key, jkey = random.PRNGKey(3), jax.random.PRNGKey(3)
    for kw in [
        {},
        {"nse": 7, "n_batch": 1},
        {"n_dense": 1, "sorted_indices": True},
        {"unique_indices": False},
    ]:
        ours, theirs = (
            sparse.random_bcoo(key, (3, 4, 5), **kw),
            jax.jit(lambda k, kw=kw: js.random_bcoo(k, (3, 4, 5), **kw))(jkey),
        )
        assert repr(ours) == repr(theirs)
        np.testing.assert_array_equal(ours.indices, theirs.indices)
        np.testing.assert_allclose(ours.data, theirs.data)
    r = sparse.random_bcoo(key, (10, 10), nse=30)
    assert len(np.unique(np.asarray(r.indices), axis=0)) == 30
    with pytest.raises(ValueError, match="between 0 and 100"):
        sparse.random_bcoo(key, (10, 10), nse=100)


def test_bcoo_construction_errors():
    with pytest.raises(ValueError, match="data has 2 slots but indices have nse=3"):
        BCOO((np.ones(2), np.zeros((3, 1), np.int32)), shape=(4,))
    with pytest.raises(TypeError, match="indices must be integers"):
        BCOO((np.ones(2), np.zeros((2, 1))), shape=(4,))
    with pytest.raises(ValueError, match="dense dimensions"):
        BCOO((np.ones((2, 3)), np.zeros((2, 1), np.int32)), shape=(4, 2))
    with pytest.raises(TypeError, match="pair"):
        BCOO(np.ones(3), shape=(2,))
    with pytest.raises(ValueError, match="invalid n_batch=2, n_dense=2"):
        BCOO.fromdense(np.ones((2, 2, 2)), n_batch=2, n_dense=2)
    with pytest.raises(TypeError, match="expected a BCOO"):
        sparse.bcoo_todense(np.ones(2))
    with pytest.raises(ValueError, match="out of range"):
        BCOO.fromdense(np.ones(3)).sum(1)


def test_namespace():
    import funcgrad.experimental as experimental

    assert experimental.sparse is sparse
    assert dir(sparse) == sorted(sparse.__all__)
    missing = [n for n in sparse.__all__ if not hasattr(js, n)]
    assert not missing, f"not in jax.experimental.sparse: {missing}"


# ----------------------------------------------------------------------------------------------
# sparsify

SPARSIFY_CASES = [
    # (function, whether the result stays sparse); each runs on fnp and on jnp alike
    (lambda np_, x, v: np_.sin(x * 3.0) @ v, False),
    (lambda np_, x, v: (x.T * 2.0).sum(0), True),
    (lambda np_, x, v: -(x + x) - x * v, True),
    (lambda np_, x, v: np_.tanh(x) ** 2 / 4.0, True),
    (lambda np_, x, v: x @ x.T, True),
    (lambda np_, x, v: v @ x.T + x.sum(), False),
    (lambda np_, x, v: (x - 2 * x).reshape(6, 2) @ v[:2], False),
    (lambda np_, x, v: np_.ravel(x * v), True),
]


@pytest.mark.parametrize("case", range(len(SPARSIFY_CASES)))
def test_sparsify_against_dense_and_jax(case):
    f, stays_sparse = SPARSIFY_CASES[case]
    a = _dense((4, 3), seed=20)
    x, jx, v = BCOO.fromdense(a), _jfromdense(a), np.random.default_rng(21).normal(size=3)
    out = sparse.sparsify(lambda x, v: f(fnp, x, v))(x, v)
    assert isinstance(out, BCOO) == stays_sparse
    want = f(np, a, v)
    np.testing.assert_allclose(sparse.todense(out), want, atol=1e-12)
    theirs = jax.jit(js.sparsify(lambda x, v: f(jnp, x, v)))(jx, v)
    np.testing.assert_allclose(_jtodense(theirs), want, atol=1e-12)
    jitted = funcgrad.jit(sparse.sparsify(lambda x, v: f(fnp, x, v)))(x, v)
    np.testing.assert_allclose(sparse.todense(jitted), want, atol=1e-12)


@pytest.mark.parametrize("op", ["sin", "sqrt", "tanh", "square", "negative", "conj", "real", "imag", "copy"])
def test_sparsify_of_duplicated_indices_as_jax(op):
    """An elementwise function that does not commute with addition sums duplicated indices first
    (sin(1) + sin(4) stored at one index is not sin(5)); a linear one (the primitives of sparse
    kind ``zero_preserving_linear``) keeps them, as jax's."""
    data, idx = np.array([1.0, 2.0, 4.0]), np.array([[2], [0], [2]])
    if op in ("real", "imag"):
        data = data * (1 - 2j)
    ours, theirs = (
        getattr(m, op) if op != "copy" else lambda x, m=m: m.array(x, copy=True) for m in (fnp, jnp)
    )
    got = sparse.sparsify(ours)(BCOO((data, idx), shape=(3,)))
    want = js.sparsify(theirs)(js.BCOO((data, idx), shape=(3,)))
    np.testing.assert_allclose(got.todense(), want.todense(), rtol=1e-15)
    np.testing.assert_array_equal(got.indices, want.indices)


def jax_or_fg(np_):
    return funcgrad if np_ is fnp else jax


def test_sparse_results_of_division_concatenation_and_power_as_jax():
    """Sparse results where jax's are sparse: x / dense y (x times 1 / y), a concatenation of
    sparse operands (vstack, concatenate), x ** 2; division by a sparse array refused as jax's."""
    import operator

    a, b = _dense((2, 3), seed=30), _dense((1, 3), seed=31)
    d = np.random.default_rng(32).uniform(1.0, 2.0, size=(2, 3))
    cases = [
        lambda np_, x, y: operator.truediv(x, d),
        lambda np_, x, y: np_.vstack([x, y]),
        lambda np_, x, y: np_.concatenate([x, x], axis=1),
        lambda np_, x, y: x**2,
        lambda np_, x, y: x[:, 1:3],  # slice
        lambda np_, x, y: np_.flip(x, 0),  # rev
        lambda np_, x, y: np_.broadcast_to(y, (2, 1, 3)),  # broadcast_in_dim
        lambda np_, x, y: np_.squeeze(y, 0),
        lambda np_, x, y: jax_or_fg(np_).lax.dynamic_slice(x, (1, 1), (1, 2)),
    ]
    ours, theirs = (BCOO.fromdense(a), BCOO.fromdense(b)), (_jfromdense(a), _jfromdense(b))  # (once)
    for f in cases:
        got = sparse.sparsify(functools.partial(f, fnp))(*ours)
        want = js.sparsify(functools.partial(f, jnp))(*theirs)
        assert isinstance(got, BCOO) and isinstance(want, js.BCOO)
        np.testing.assert_allclose(got.todense(), _jtodense(want), rtol=1e-14)
    np.testing.assert_allclose((BCOO.fromdense(a) / d).todense(), a / d, rtol=1e-14)
    with pytest.raises(NotImplementedError, match="Division by a sparse array"):
        BCOO.fromdense(a) / BCOO.fromdense(a)


def test_sparsify_of_bcsr_as_jax():
    """sparsify takes BCSR arguments and gives BCSR results where jax's does."""
    a = _dense((3, 4), seed=33)
    got = sparse.sparsify(fnp.sin)(sparse.BCSR.fromdense(a))
    want = js.sparsify(jnp.sin)(js.BCSR.fromdense(a))
    assert type(got).__name__ == type(want).__name__ == "BCSR"
    np.testing.assert_allclose(got.todense(), want.todense(), rtol=1e-14)
    np.testing.assert_array_equal(got.indptr, want.indptr)
    # a linear function keeps the argument's own indices and row pointers, as jax's
    x = sparse.BCSR.fromdense(a)
    for f, jf in ((fnp.negative, jnp.negative), (fnp.copy, jnp.copy), (funcgrad.lax.bessel_i1e, None)):
        out = sparse.sparsify(f)(x)
        assert type(out).__name__ == "BCSR"
        np.testing.assert_allclose(out.todense(), f(a), rtol=1e-14)
        if jf is not None:
            np.testing.assert_array_equal(out.indices, js.sparsify(jf)(js.BCSR.fromdense(a)).indices)


def test_sparsify_gradient_nested_jit_and_fallback():
    a = _dense((4, 3), seed=22)
    x, jx, v = BCOO.fromdense(a), _jfromdense(a), np.arange(3.0)

    def loss(np_, x):
        return ((np_.sin(x * 2.0) @ v) ** 2).sum()

    g = sparse.grad(sparse.sparsify(lambda x: loss(fnp, x)))(x)
    jg = jax.jit(js.grad(js.sparsify(lambda x: loss(jnp, x))))(jx)
    np.testing.assert_allclose(g.data, jg.data, atol=1e-12)
    # a jitted inner function is sparsified too
    out = sparse.sparsify(lambda x: funcgrad.jit(lambda y: (-y).sum(1))(x))(x)
    assert isinstance(out, BCOO)
    np.testing.assert_allclose(out.todense(), -a.sum(1), atol=1e-12)
    # no sparse rule (exp does not keep zeros), sparse - dense, a broadcast dense addend: JAX's
    # NotImplementedError, never a silent dense result; sparse + dense of one shape is dense
    for np_, sp, arg in ((fnp, sparse, x), (jnp, js, jx)):
        for f in (np_.exp, lambda m: m - np.ones(3), lambda m: m + np.ones(3), lambda m: m**-1):
            with pytest.raises(NotImplementedError):
                sp.sparsify(f)(arg)
    np.testing.assert_allclose(sparse.sparsify(lambda m: m + fnp.ones_like(m))(x), a + 1)
    np.testing.assert_allclose(js.sparsify(lambda m: m + jnp.ones_like(m))(jx), a + 1)
    with pytest.raises(TypeError, match="CSR arguments are not supported"):
        sparse.sparsify(lambda m: m)(sparse.CSR.fromdense(a))


@pytest.mark.parametrize("n_batch", [0, 1, 2])
def test_reshape_add_and_sub(n_batch):
    x = BCOO.fromdense(M3, n_batch=n_batch, nse=12 if n_batch == 2 else None)  # padding included
    jx = _jfromdense_m3()
    for shape in [(60,), (5, 12), (-1, 3), (2, 3, 2, 5), (3, 4, 5)]:
        out = x.reshape(shape)
        np.testing.assert_array_equal(out.todense(), M3.reshape(shape))
        np.testing.assert_array_equal(
            jax.jit(lambda m, shape=shape: m.reshape(shape).todense())(jx), M3.reshape(shape)
        )
    np.testing.assert_array_equal(funcgrad.jit(lambda x: x.reshape(6, 10).todense())(x), M3.reshape(6, 10))
    with pytest.raises(ValueError, match="cannot reshape"):
        x.reshape(7, 9)
    with pytest.raises(ValueError, match="dense dimensions"):
        BCOO.fromdense(M3, n_dense=1).reshape(60)
    s = x + x
    assert isinstance(s, BCOO) and s.nse == 2 * x.nse
    np.testing.assert_allclose(s.todense(), 2 * M3)
    np.testing.assert_allclose((x - 3 * x).todense(), -2 * M3)
    np.testing.assert_allclose(x + np.ones(5), M3 + 1)  # sparse + dense is dense, as in jax
    np.testing.assert_allclose(1.0 - x, 1 - M3)
    with pytest.raises(ValueError, match="share shape and layout"):
        x + BCOO.fromdense(M3, n_dense=1)


def test_update_layout_every_pair_of_layouts():
    for (nb, nd), (to_b, to_d) in itertools.product(LAYOUTS, LAYOUTS):
        x = BCOO.fromdense(M3, n_batch=nb, n_dense=nd)
        y = sparse.bcoo_update_layout(x, n_batch=to_b, n_dense=to_d, on_inefficient=None)
        assert (y.n_batch, y.n_dense, y.shape) == (to_b, to_d, M3.shape)
        np.testing.assert_allclose(y.todense(), M3, err_msg=f"{(nb, nd)} -> {(to_b, to_d)}")
        if (to_b, to_d) == (0, 0):  # the cheap direction: as many slots as jax's
            jy = jax.jit(lambda m: js.bcoo_update_layout(m, n_batch=0, n_dense=0))(_jfromdense_m3(nb, nd))
            assert y.nse == jy.nse
    x = BCOO.fromdense(M3)
    with pytest.raises(sparse.SparseEfficiencyError, match="increasing n_batch from 0 to 1"):
        x.update_layout(n_batch=1)
    with pytest.warns(sparse.SparseEfficiencyWarning, match="increasing n_dense from 0 to 1"):
        x.update_layout(n_dense=1, on_inefficient="warn")
    with pytest.raises(ValueError, match="invalid n_batch=2, n_dense=2"):
        x.update_layout(n_batch=2, n_dense=2)
    jitted = funcgrad.jit(lambda x: x.update_layout(n_batch=1, n_dense=1, on_inefficient=None).todense())(x)
    np.testing.assert_allclose(jitted, M3)
    g = sparse.grad(lambda x: fnp.sum(x.update_layout(n_batch=1, on_inefficient=None).todense() ** 2))(x)
    np.testing.assert_allclose(g.data, 2 * x.data)


@pytest.mark.parametrize("lhs_batch,rhs_batch", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_sparse_times_sparse_with_batch_dimensions(lhs_batch, rhs_batch):
    a, b = _dense((3, 4, 5), seed=30, density=0.5), _dense((3, 5, 2), seed=31, density=0.5)
    x, y = BCOO.fromdense(a, n_batch=lhs_batch), BCOO.fromdense(b, n_batch=rhs_batch)
    out = sparse.bcoo_dot_general(x, y, dimension_numbers=(([2], [1]), ([0], [0])))
    assert isinstance(out, BCOO)
    np.testing.assert_allclose(out.todense(), np.einsum("bij,bjk->bik", a, b), atol=1e-12)
    out = sparse.bcoo_dot_general(x, y, dimension_numbers=(([2, 0], [1, 0]), ([], [])))
    np.testing.assert_allclose(out.todense(), np.einsum("bij,bjk->ik", a, b), atol=1e-12)


def test_scalar_operands_may_be_traced():
    x = BCOO.fromdense(np.array([[1.0, 0.0], [0.0, 2.0]]))
    c = sparse.CSR.fromdense(np.array([[1.0, 0.0], [0.0, 2.0]]))
    np.testing.assert_allclose(funcgrad.jit(lambda x, s: (x / s).todense())(x, 2.0), [[0.5, 0], [0, 1]])
    np.testing.assert_allclose(funcgrad.jit(lambda c, s: (c * s).todense())(c, 2.0), [[2, 0], [0, 4]])
    assert float(funcgrad.grad(lambda s: (x * s).data.sum())(2.0)) == 3.0
    np.testing.assert_allclose(
        funcgrad.vmap(lambda c, v: c @ v, in_axes=(None, 0))(c, np.ones((3, 2))), [[1, 2]] * 3
    )


def test_lobpcg_standard_against_eigh_and_scipy_bcoo():
    # jax.experimental.sparse.linalg.lobpcg_standard (JAX's lobpcg_test): the top-k eigenpairs of
    # a matrix against LAPACK's eigh; BCOO.from_scipy_sparse (its sparse operators).
    from funcgrad.experimental.sparse import bcoo, linalg

    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(40, 40)))
    eigs = np.linspace(1.0, 10.0, 40)
    a = (q * eigs) @ q.T
    x = rng.normal(size=(40, 3))
    theta, u, steps = linalg.lobpcg_standard(fnp.asarray(a), fnp.asarray(x), 100)
    np.testing.assert_allclose(np.asarray(theta), eigs[::-1][:3], rtol=1e-8)
    np.testing.assert_allclose(np.abs(np.asarray(u).T @ q[:, ::-1][:, :3]), np.eye(3), atol=1e-6)
    assert int(steps) < 100
    s = sps.random(6, 5, density=0.4, random_state=1, format="csr")
    np.testing.assert_array_equal(np.asarray(bcoo.BCOO.from_scipy_sparse(s).todense()), s.toarray())
    with pytest.raises(ValueError, match=r"search dim \* 5 < matrix dim"):
        linalg.lobpcg_standard(fnp.asarray(a), fnp.asarray(rng.normal(size=(40, 8))))
    with pytest.raises(ValueError, match="A, X must have same dtypes"):
        linalg.lobpcg_standard(lambda v: v.astype(np.float32), fnp.asarray(x))


def test_sparse_internals_do_not_depend_on_the_users_rank_promotion():
    # (JAX's sparse tests run under jax_numpy_rank_promotion='raise': only the user's code may be
    # refused, never the library's broadcasting)
    dense = np.array([[[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]], [[4.0, 0.0, 0.0], [0.0, 0.0, 5.0]]])
    vec = np.arange(3.0)
    with funcgrad.numpy_rank_promotion("raise"):
        x = sparse.BCOO.fromdense(dense, n_batch=1)
        np.testing.assert_array_equal(np.asarray(x.sum_duplicates().todense()), dense)
        np.testing.assert_array_equal(np.asarray(x @ vec), dense @ vec)
        y = sparse.BCSR.fromdense(dense, n_batch=1)
        np.testing.assert_array_equal(np.asarray(y.todense()), dense)
        np.testing.assert_array_equal(np.asarray(y.to_bcoo().todense()), dense)
        np.testing.assert_array_equal(np.asarray(sparse.BCSR.from_bcoo(x).todense()), dense)
        a = sparse.BCOO.fromdense(dense[0])
        np.testing.assert_array_equal(np.asarray((a @ a.T).todense()), dense[0] @ dense[0].T)


def test_a_sum_over_every_dimension_is_dense_as_jax():
    import jax
    from jax.experimental import sparse as jsparse

    dense = np.array([[0.0, 1.0], [2.0, 0.0]])
    x, jx = sparse.BCOO.fromdense(dense), jsparse.BCOO.fromdense(dense)
    for f, jf in (
        (lambda a: a.sum(), lambda a: a.sum()),
        (lambda a: a.sum(axis=(0, 1)), lambda a: a.sum(axis=(0, 1))),
        (lambda a: a.sum(axis=0), lambda a: a.sum(axis=0)),
        (sparse.sparsify(lambda a: fnp.sum(a)), jsparse.sparsify(lambda a: jax.numpy.sum(a))),
    ):
        got, want = f(x), jf(jx)
        assert isinstance(got, sparse.BCOO) == isinstance(want, jsparse.BCOO)
        np.testing.assert_array_equal(np.asarray(sparse.todense(got)), np.asarray(jsparse.todense(want)))


@pytest.mark.parametrize("fmt", ["bcoo", "bcsr", "coo", "csr", "csc"])
def test_sparse_arrays_have_len_block_until_ready_and_no_hash_as_jax(fmt):
    x = sparse.empty((5, 8), sparse_format=fmt)
    assert (
        x.nse == 0
        and np.asarray(sparse.todense(x)).shape == (5, 8)
        and not np.asarray(sparse.todense(x)).any()
    )
    assert len(x) == 5 and x.block_until_ready() is x
    with pytest.raises(TypeError):
        hash(x)


def test_sparsify_control_flow_and_errors_as_jax():
    """cond, while_loop, scan, custom_jvp, gather, convolve and todense keep sparse results where
    jax's sparsify does; operations without a sparse rule raise its NotImplementedError."""
    a = _dense((5,), seed=41)
    x, jx = BCOO.fromdense(a), _jfromdense(a)

    def cases(np_, lax):
        return {
            "cond": lambda m: lax.cond(False, lambda v: v, lambda v: 2 * v, m),
            "while": lambda m: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, 2 * c[1]), (0, m))[1],
            "scan": lambda m: lax.scan(lambda c, _: (c * 3.0, None), m, None, length=2)[0],
            "gather": lambda m: m[np_.array([3, 1])],
            "convolve": lambda m: np_.convolve(m, np_.array([1.0, 2.0, 0.5])),
        }

    ours = cases(fnp, funcgrad.lax)

    @jax.jit  # (every case and its todense in one compiled program: eagerly, dozens)
    def theirs(m):
        outs = {name: js.sparsify(f)(m) for name, f in cases(jnp, jax.lax).items()}
        return outs, {name: js.todense(out) for name, out in outs.items()}

    wants, dense_wants = theirs(jx)
    for name in ours:
        got = sparse.sparsify(ours[name])(x)
        assert isinstance(got, BCOO) == isinstance(wants[name], js.BCOO), name
        np.testing.assert_allclose(got.todense(), dense_wants[name], rtol=1e-12, err_msg=name)
    square = funcgrad.custom_jvp(lambda v: v**2)
    square.defjvp(lambda p, t: (p[0] ** 2, 2 * t[0] * p[0]))
    out = sparse.sparsify(square)(x)
    assert isinstance(out, BCOO)
    np.testing.assert_allclose(out.todense(), a**2)
    np.testing.assert_allclose(sparse.sparsify(lambda m: sparse.todense(m) + 1.0)(x), a + 1)
    # errors: JAX's types and words
    for f, jf in (
        (fnp.cos, jnp.cos),
        (lambda m: funcgrad.lax.complex(m, m), lambda m: jax.lax.complex(m, m)),
        (lambda m: m / m, lambda m: m / m),
    ):
        with pytest.raises(NotImplementedError) as mine:
            sparse.sparsify(f)(x)
        with pytest.raises(NotImplementedError) as jaxs:
            jax.jit(js.sparsify(jf))(jx)
        assert str(mine.value) == str(jaxs.value)
    with pytest.raises(TypeError, match="sparsified true_fun output must have same type structure"):
        sparse.sparsify(lambda m, d: funcgrad.lax.cond(False, lambda v: v[0], lambda v: v[1], (m, d)))(x, a)
