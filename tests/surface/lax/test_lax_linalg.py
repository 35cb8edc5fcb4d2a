"""funcgrad.lax.linalg against jax.lax.linalg (the oracle): every function's values and output
structure, derivatives where JAX has them, and the errors of the CPU-only options."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import funcgrad
from funcgrad.lax import linalg as fl
from funcgrad.testing import check_grads

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

RNG = np.random.default_rng(5)


@pytest.fixture
def jl():
    """jax.lax.linalg, imported when a test runs (never at collection: importing jax switches
    funcgrad's dispatch to its Python fast path for the rest of the process)."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax.lax.linalg


def close(a, b, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def _spd(n, batch=()):
    x = RNG.normal(size=(*batch, n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def test_names_are_jax_names(jl):
    public = {n for n in dir(jl) if not n.startswith("_") and not n.endswith("_p")}
    assert public <= set(fl.__all__), public - set(fl.__all__)


def test_factorisations_match_jax(jl):
    a, s = RNG.normal(size=(2, 4, 4)), _spd(4, (2,))
    close(fl.cholesky(s), jl.cholesky(s))
    close(fl.cholesky(np.tril(s), symmetrize_input=False), jl.cholesky(np.tril(s), symmetrize_input=False))
    for got, want in zip(fl.eigh(s), jl.eigh(s)):
        close(np.abs(np.asarray(got)), np.abs(np.asarray(want)))
    for got, want in zip(fl.lu(a), jl.lu(a)):
        close(got, want)
    for kw in (dict(), dict(full_matrices=False), dict(pivoting=True)):
        got, want = fl.qr(a[:, :, :3], **kw), jl.qr(a[:, :, :3], **kw)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            close(g, w)
    for kw in (dict(), dict(full_matrices=False), dict(compute_uv=False), dict(algorithm=fl.SvdAlgorithm.QR)):
        jkw = {**kw, "algorithm": jl.SvdAlgorithm.QR} if "algorithm" in kw else kw
        got, want = fl.svd(a, **kw), jl.svd(a, **jkw)
        if kw.get("compute_uv", True):
            close(got[1], want[1])
            close(np.asarray(got[0]) * np.asarray(got[1])[..., None, :] @ np.asarray(got[2]), a)
        else:
            close(got, want)
    w, vl, vr = fl.eig(a)
    jw, jvl, jvr = jl.eig(a)
    close(w, jw)
    close(vr, jvr)
    close(vl, jvl)
    t, z = fl.schur(a[0])
    jt, jz = jl.schur(a[0])
    close(t, jt)
    close(z, jz)
    for got, want in zip(fl.hessenberg(a), jl.hessenberg(a)):
        close(got, want)
    for got, want in zip(fl.tridiagonal(s), jl.tridiagonal(s)):
        close(got, want)
    packed = np.asarray(jl.geqrf(a[0])[0]) if hasattr(jl, "geqrf") else np.linalg.qr(a[0], mode="raw")[0].T
    taus = RNG.uniform(0.5, 1.5, 3)
    close(fl.householder_product(packed[:, :3], taus), jl.householder_product(packed[:, :3], taus))


_EAGER_AS_JIT = {
    "eigh": lambda L, x: L.eigh(x),
    "svd": lambda L, x: L.svd(x, full_matrices=False),
    "qr": lambda L, x: L.qr(x),
    "cholesky": lambda L, x: L.cholesky(x),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(_EAGER_AS_JIT))
def test_eager_factorisations_are_jit_and_jax_bits(jl, name, dtype):
    # NOTE: [eager LAPACK as compiled]: eager, jit and JAX (whose eager ops are compiled) give
    # the same bits -- eigenvector and singular-vector signs included; cholesky's eager factor
    # (host potrf, kept for the eager GP's speed) is the same to rounding.
    f = _EAGER_AS_JIT[name]
    for shape in ((5, 5), (2, 3, 9, 9)):
        x = (_spd(shape[-1], shape[:-2]) if name in ("eigh", "cholesky") else RNG.normal(size=shape)).astype(
            dtype
        )
        eager, jitted = f(fl, x), funcgrad.jit(lambda v: f(fl, v))(x)
        want = f(jl, x)
        for e, j, w in (
            zip(eager, jitted, want) if isinstance(want, (tuple, list)) else [(eager, jitted, want)]
        ):
            assert np.asarray(e).dtype == np.asarray(w).dtype
            np.testing.assert_array_equal(np.asarray(j), np.asarray(w))
            if name == "cholesky":  # a host potrf eagerly (unique factor): within rounding only
                eps = np.finfo(dtype).eps
                np.testing.assert_allclose(np.asarray(e), np.asarray(w), rtol=8 * eps, atol=8 * eps)
            else:
                np.testing.assert_array_equal(np.asarray(e), np.asarray(w))


def test_solves_match_jax(jl):
    a = np.tril(RNG.normal(size=(4, 4))) + 4 * np.eye(4)
    b = RNG.normal(size=(4, 3))
    for kw in (dict(left_side=True, lower=True), dict(left_side=False, lower=True, transpose_a=True)):
        rhs = b if kw["left_side"] else b.T
        close(fl.triangular_solve(a, rhs, **kw), jl.triangular_solve(a, rhs, **kw))
    close(
        fl.triangular_solve(a, b[:, 0], left_side=True, lower=True),
        jl.triangular_solve(a, b[:, 0], left_side=True, lower=True),
    )
    # float16/bfloat16: XLA's own triangular_solve, as JAX's: its numbers bit for bit, eager and jitted
    kw = dict(left_side=False, lower=True, transpose_a=True)
    for dt in (np.float16, ml_dtypes.bfloat16):
        an, bn = a.astype(dt), b.T.astype(dt)
        theirs = np.asarray(jl.triangular_solve(an, bn, **kw))
        for ours in (
            fl.triangular_solve(an, bn, **kw),
            funcgrad.jit(lambda x, y: fl.triangular_solve(x, y, **kw))(an, bn),
        ):
            assert ours.dtype == theirs.dtype == dt
            np.testing.assert_array_equal(np.asarray(ours).astype(np.float32), theirs.astype(np.float32))
    dl, d, du = RNG.normal(size=4), RNG.normal(size=4) + 5, RNG.normal(size=4)
    dl[0], du[-1] = 0, 0
    close(fl.tridiagonal_solve(dl, d, du, b), jl.tridiagonal_solve(dl, d, du, b))
    close(
        fl.tridiagonal_solve(dl, d, du, b, perturb_singular=True),
        jl.tridiagonal_solve(dl, d, du, b, perturb_singular=True),
    )
    # A zero (fully singular) matrix: jaxlib's perturbation floors at the safe minimum, finite
    # values eagerly as under jit (the eager NumPy rewrite gave NaN; JAX's linalg_test)
    z = np.zeros(3, np.float32)
    theirs = np.asarray(jl.tridiagonal_solve(z, z, z, np.ones((3, 1), np.float32), perturb_singular=True))
    assert np.isfinite(theirs).all()
    np.testing.assert_array_equal(
        fl.tridiagonal_solve(z, z, z, np.ones((3, 1), np.float32), perturb_singular=True), theirs
    )
    piv = np.array([2, 3, 2, 3], np.int32)
    close(fl.lu_pivots_to_permutation(piv, 5), jl.lu_pivots_to_permutation(piv, 5))
    close(
        fl.lu_pivots_to_permutation(np.stack([piv, piv[::-1]]), 4),
        jl.lu_pivots_to_permutation(np.stack([piv, piv[::-1]]), 4),
    )


def test_composite_functions_match_jax(jl):
    r = np.linalg.cholesky(_spd(4)).T
    w = RNG.normal(size=4)
    close(fl.cholesky_update(r, w), jl.cholesky_update(r, w))
    a, taus, c = RNG.normal(size=(5, 3)), RNG.normal(size=3), RNG.normal(size=(5, 2))
    for left, transpose in ((True, False), (True, True)):
        close(
            fl.ormqr(a, taus, c, left=left, transpose=transpose),
            jl.ormqr(a, taus, c, left=left, transpose=transpose),
        )
    close(fl.ormqr(a, taus, c.T, left=False), jl.ormqr(a, taus, c.T, left=False))
    m, cm = RNG.normal(size=(3, 2)), _spd(3)
    close(fl.symmetric_product(m, cm, alpha=2.0, beta=0.5), jl.symmetric_product(m, cm, alpha=2.0, beta=0.5))
    x = RNG.normal(size=(6, 4))
    for got, want in zip(fl.qdwh(x), jl.qdwh(x)):
        close(got, want, rtol=1e-9, atol=1e-9)


def test_derivatives_and_transformations(jl):
    s = _spd(3)
    check_grads(fl.cholesky, (s,), order=2)
    check_grads(lambda m: fl.eigh(m)[1], (s,), order=2)
    check_grads(lambda m: fl.svd(m, full_matrices=False)[1], (RNG.normal(size=(4, 3)),), order=2)
    check_grads(lambda m: fl.qr(m, full_matrices=False)[1], (RNG.normal(size=(4, 3)),), order=2)
    got = funcgrad.vmap(lambda m: fl.eigh(m)[1])(_spd(3, (4,)))
    assert got.shape == (4, 3)
    close(funcgrad.jit(lambda m: fl.lu(m)[2])(s), jl.lu(s)[2])


def test_spectral_jvps_round_their_gaps_as_jax(jl):
    # The four-way fuzzer (ops_quad): the eigenvalue-gap matrices of the svd/eigh/eig derivatives
    # are rounded as JAX's rules form them. svd's 1 / (s_j^2 - s_i^2) was s*s first, so at
    # s = 1e300 the diagonal was inf - inf and du/dv were -1e300 (jax 0, the derivative); eigh's
    # and eig's (I + w_j) - w_i absorb the identity at 1e300, as jax's (inf/NaN there).
    import jax

    a = np.array([[1e300, 0.0], [0.0, 1.0]])
    t = np.array([[0.5, 0.25], [-0.75, 1.0]])
    calls = [
        lambda m, x: m.svd(x, full_matrices=False),
        lambda m, x: m.eigh(x),
        lambda m, x: m.eig(x, enable_eigvec_derivs=True),
    ]
    m = RNG.normal(size=(4, 3))

    def theirs():
        return [jax.jvp(lambda x, c=call: c(jl, x), (a,), (t,))[1] for call in calls] + [
            jax.jvp(lambda x: jl.svd(x, full_matrices=False), (m,), (m * 0.5,))[1]
        ]

    # (jax's tangents as one jitted program: bit for bit its eager ones, infs and NaNs included,
    # checked; eagerly they cost 4.9 s CPU of per-primitive dispatch)
    wants = jax.jit(theirs)()
    for call, want in zip(calls, wants):
        got = funcgrad.jvp(lambda x, c=call: c(fl, x), (a,), (t,))[1]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    # ordinary matrices: jax's values (the same products, the same gaps)
    got = funcgrad.jvp(lambda x: fl.svd(x, full_matrices=False), (m,), (m * 0.5,))[1]
    for g, w in zip(got, wants[-1]):
        close(g, w)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: fl.eigh(np.eye(2), implementation=fl.EighImplementation.JACOBI), "not available on CPU"),
        (lambda: fl.svd(np.eye(2), algorithm=fl.SvdAlgorithm.JACOBI), "algorithm must be one of"),
        (lambda: fl.schur(np.eye(2), sort_eig_vals=True), "not supported on CPU"),
        (lambda: fl.lu_pivots_to_permutation(np.array([0.0]), 1), "pivots must be int32"),
        (lambda: fl.qdwh(np.ones((2, 3))), "at least as many rows as columns"),
        # (JAX's svd shape rule, jnp.linalg.svd's default full_matrices=True even without vectors)
        (lambda: fl.svd(np.ones((3, 2)), subset_by_index=(0, 1)), "^full_matrices and subset_by_index"),
        (
            lambda: funcgrad.numpy.linalg.svd(np.ones((3, 2)), compute_uv=False, subset_by_index=(0, 1)),
            "^full_matrices and subset_by_index cannot both be set",
        ),
    ],
)
def test_errors(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_qdwh_keeps_complex64_under_strict_promotion(jl):
    # The Halley coefficients were NumPy float64 scalars (strong): complex64 x float64 was refused
    # under strict promotion (JAX's qdwh_test default) and widened otherwise. Now Python floats.
    x = (RNG.normal(size=(5, 3)) + 1j * RNG.normal(size=(5, 3))).astype(np.complex64)
    with funcgrad.numpy_dtype_promotion("strict"):
        u, h, _, _ = fl.qdwh(x)
    assert u.dtype == h.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(u) @ np.asarray(h), x, atol=2e-5)
    ju, jh, _, _ = jl.qdwh(x)
    np.testing.assert_allclose(u, ju, atol=2e-5)


def test_qdwh_of_a_tiny_matrix_is_exact_not_nan(jl):
    # The norms' product underflowed to 0 and 1/sqrt(0) gave NaN; JAX scales by each norm's rsqrt
    # (JAX's qdwh_test testQdwhWithTinyElement)
    tiny = np.finfo(np.float32).tiny
    x = np.zeros((4, 2), np.float32)
    x[0, 0] = tiny
    u, h, _, _ = fl.qdwh(x)
    ju, jh, _, _ = jl.qdwh(x)
    np.testing.assert_array_equal(u, ju)
    np.testing.assert_array_equal(h, jh)
    assert np.asarray(u)[0, 0] == 1 and np.asarray(h)[0, 0] == tiny


def test_qdwh_dynamic_shape_ignores_the_padding_as_jax(jl):
    # (JAX's qdwh_test testQdwhWithDynamicShape/testQdwhJitCompatibility) dynamic_shape=(m, n):
    # x is its leading m x n block padded (with NaN there), eagerly, under jit and with traced
    # m, n; funcgrad refused the argument. QR steps (c > 100) and Cholesky steps both run.
    a = RNG.uniform(size=(6, 4)) + 1j * RNG.uniform(size=(6, 4))
    padded = np.pad(a, [(0, 2), (0, 3)], constant_values=np.nan)
    want = jl.qdwh(padded, dynamic_shape=(6, 4))
    for got in (
        fl.qdwh(padded, dynamic_shape=(6, 4)),
        funcgrad.jit(lambda x, m, n: fl.qdwh(x, dynamic_shape=(m, n)))(padded, 6, 4),
    ):
        np.testing.assert_allclose(got[0], want[0], atol=1e-12)
        np.testing.assert_allclose(got[1], want[1], atol=1e-12)
        assert int(got[2]) == int(want[2]) and bool(got[3])
    u, h = np.asarray(got[0]), np.asarray(got[1])
    np.testing.assert_allclose(u[:6, :4] @ h[:4, :4], a, atol=1e-12)


@pytest.mark.parametrize(
    "name, call",
    [
        ("eigh", lambda lin, a: lin.eigh(a, symmetrize_input=False)),
        ("cholesky", lambda lin, a: lin.cholesky(a, symmetrize_input=False)),
        ("eig", lambda lin, a: lin.eig(a)),
        ("schur", lambda lin, a: lin.schur(a)),
        ("hessenberg", lambda lin, a: lin.hessenberg(a)),
        ("tridiagonal", lambda lin, a: lin.tridiagonal(a)),
        ("triangular_solve", lambda lin, a: lin.triangular_solve(a, a)),
        ("lu_pivots_to_permutation", lambda lin, a: lin.lu_pivots_to_permutation(np.zeros(4, np.int32), 2)),
    ],
)
def test_shape_errors_of_linalg_in_jax_words(jl, name, call):
    a = np.ones((4, 5))
    with pytest.raises(ValueError) as want:
        call(jl, a)
    with pytest.raises(ValueError) as got:
        call(fl, a)
    assert str(got.value) == str(want.value)
