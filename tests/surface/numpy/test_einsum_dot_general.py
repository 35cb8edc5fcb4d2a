"""``einsum(..., _dot_general=f)``, JAX's keyword that flax's attention and einsum layers pass: each
pairwise contraction calls ``f`` (eagerly and under jit) with JAX's arguments, and the result is
jax's; ``matmul``'s batch axes lowered as JAX's (squeezed unit axes, no broadcast operands)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


def test_einsum_calls_the_given_dot_general_and_matches_jax():
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(0)
    q, k = (
        rng.standard_normal((2, 5, 3, 4)).astype(np.float32),
        rng.standard_normal((2, 6, 3, 4)).astype(np.float32),
    )
    calls = []

    def ours_dg(a, b, dn, precision=None, preferred_element_type=None):
        calls.append(dn)
        return funcgrad.lax.dot_general(a, b, dn, precision, preferred_element_type=preferred_element_type)

    spec = "...qhd,...khd->...hqk"
    eager = fnp.einsum(spec, q, k, _dot_general=ours_dg)
    jitted = funcgrad.jit(lambda a, b: fnp.einsum(spec, a, b, _dot_general=ours_dg))(q, k)
    theirs = jax.numpy.einsum(spec, q, k, _dot_general=jax.lax.dot_general)
    assert len(calls) == 2 and eager.dtype == theirs.dtype == jitted.dtype
    np.testing.assert_allclose(eager, theirs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jitted, theirs, rtol=1e-5, atol=1e-5)


def test_einsum_refuses_a_path_contracting_three_operands_at_once_as_jax():
    # (JAX's lax_numpy_einsum_test) optimize=[(0, 1, 2)]: JAX's NotImplementedError and words (a
    # ValueError from the label bookkeeping before)
    ops = (np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 5)))
    with pytest.raises(NotImplementedError, match="simultaneous contraction of 3 or more operands"):
        fnp.einsum("ij,ik,il->jkl", *ops, optimize=[(0, 1, 2)])


@pytest.mark.parametrize("shape", [(2, 1), (1, 2), (0, 1), (2, 2)])
def test_einsum_repeated_label_of_unequal_sizes_as_jax(shape):
    # (found by the differential fuzzer) 'ii->i' of a (2, 1) operand: size-1 broadcasting lets the
    # label through, and jax masks the (n_i, n_j) planes and sums the first axis -- its value and its
    # vjp (funcgrad raised in both before)
    jax = pytest.importorskip("jax")
    x = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    theirs, their_vjp = jax.vjp(lambda a: jax.numpy.einsum("ii->i", a), x)
    ours, our_vjp = funcgrad.vjp(lambda a: fnp.einsum("ii->i", a), x)
    np.testing.assert_array_equal(ours, theirs)
    ct = np.arange(2.0, 2.0 + theirs.size)
    np.testing.assert_array_equal(our_vjp(ct)[0], their_vjp(ct)[0])
    jitted = funcgrad.jit(lambda a: fnp.einsum("ii->i", a))(x)
    np.testing.assert_array_equal(jitted, theirs)


_PREFERRED_CASES = [  # (spec, operands, preferred_element_type): found by the fuzzer, session 12
    ("i,ij->j", (np.array([0.5, 1.5, 2.5], np.float32), np.ones((3, 2), bool)), "int32"),
    ("ii->", (np.eye(3, dtype=np.float32),), "int32"),
    ("ij->", (np.ones((3, 2), bool),), "int32"),
    ("ij->", (np.ones((3, 2), bool),), None),
    ("i,i->", (np.array([1, 2], np.int8), np.array([1.5, 2.5], np.float32)), "float32"),
    ("ij,jk->ik", (np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)), "float32"),
]


@pytest.mark.parametrize("case", range(len(_PREFERRED_CASES)))
def test_einsum_preferred_element_type_as_jax(case):
    """Operands keep their dtypes into the contraction, a summed bool is widened first and the
    result is converted once (``[0.5, 1.5, 2.5]`` in bfloat16 against bools into int32 is 3, not
    the truncated 4.5)."""
    jax = pytest.importorskip("jax")
    spec, operands, pet = _PREFERRED_CASES[case]
    if case == 0:
        operands = (operands[0].astype(fnp.bfloat16), operands[1])
    got = fnp.einsum(spec, *operands, preferred_element_type=pet)
    want = jax.numpy.einsum(spec, *operands, preferred_element_type=pet)
    assert got.dtype == want.dtype and got.weak_type == want.weak_type
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


_MATMUL_SHAPES = [  # (a, b): unit batch axes in both, in one, broadcast ranks, vectors
    ((1, 4, 5, 3), (1, 4, 3, 2)),
    ((3, 1, 5, 6), (2, 6, 7)),
    ((2, 5, 6), (1, 6, 7)),
    ((1, 5, 6), (4, 1, 6, 7)),
    ((2, 3, 5, 6), (3, 6, 7)),
    ((6,), (2, 1, 6, 7)),
    ((2, 1, 5, 6), (6,)),
]


@pytest.mark.parametrize("shapes", _MATMUL_SHAPES, ids=str)
def test_matmul_batch_axes_as_jax(shapes):
    # jax.numpy.matmul squeezes size-1 batch axes and broadcasts no operand: the same equations
    # (make_jaxpr) and values
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    ours, theirs = fnp.matmul(a, b), jax.numpy.matmul(a, b)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    eqns = [e.primitive.name for e in funcgrad.make_jaxpr(fnp.matmul)(a, b).jaxpr.eqns]
    assert eqns == [e.primitive.name for e in jax.make_jaxpr(jax.numpy.matmul)(a, b).jaxpr.eqns]


def test_matmul_per_example_gradients_as_jax():
    # vmap(grad) of a loss through x[None] @ w (a unit batch axis in both operands), jitted
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(2)
    x, w = (
        rng.standard_normal((3, 4, 5, 6)).astype(np.float32),
        rng.standard_normal((1, 4, 6, 2)).astype(np.float32),
    )

    def per_example(lib, m):
        loss = lambda w, xi: m.sum(m.tanh(m.matmul(xi[None], w)))  # noqa: E731
        return lib.vmap(lib.grad(loss), in_axes=(None, 0))(w, x)

    ours = funcgrad.jit(lambda: per_example(funcgrad, fnp))()
    np.testing.assert_allclose(ours, per_example(jax, jax.numpy), rtol=1e-5, atol=1e-5)


def test_matmul_incompatible_batch_axes_as_jax():
    with pytest.raises(ValueError, match=r"^Incompatible types for matmul arguments: float32\[2,3,4\] and "):
        fnp.matmul(np.ones((2, 3, 4), np.float32), np.ones((3, 4, 5), np.float32))


def test_eager_large_products_have_xla_s_bits():
    # NOTE: [eager products are XLA's]: an eager product of 2**20 multiply-adds or more runs compiled
    # alone, so its bits are jax's eager ones and funcgrad's jitted ones (NumPy's BLAS summed
    # otherwise: 3,222 of 16,384 float32 values of a 128x256x128 product differed); batched, and in
    # float16 (whose products XLA accumulates in float32, rounded once)
    import jax.numpy as jnp
    from _oracle import cheapen_jax_compiles

    cheapen_jax_compiles()  # (both sides compiled alike: NOTE: [oracle compile options])
    rng = np.random.default_rng(18)
    for dtype, lhs, rhs in (
        (np.float32, (64, 256), (256, 64)),
        (np.float32, (4, 32, 128), (4, 128, 64)),
        (np.float16, (64, 256), (256, 64)),
    ):
        a, b = rng.standard_normal(lhs).astype(dtype), rng.standard_normal(rhs).astype(dtype)
        got, want = fnp.matmul(a, b), jnp.matmul(a, b)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(funcgrad.jit(fnp.matmul)(a, b)))


def test_eager_small_products_are_numpy_s():
    # The documented difference (differences_from_jax.md, "Eager float32 last places"): below
    # 2**20 multiply-adds an eager product is NumPy's (its BLAS's sums), not XLA's: jit's bits
    # may differ in the last place (jax's eager and jitted bits agree). Whether they do depends on
    # the CPU (on some, XLA's and the BLAS's summation orders coincide for this shape), so the
    # jitted product is held to float32's rounding, not to a difference.
    rng = np.random.default_rng(18)
    a, b = rng.standard_normal((4, 32)).astype(np.float32), rng.standard_normal((32, 32)).astype(np.float32)
    got = np.asarray(fnp.matmul(a, b))
    np.testing.assert_array_equal(got, a @ b)
    jitted = np.asarray(funcgrad.jit(fnp.matmul)(a, b))
    np.testing.assert_allclose(jitted, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)
