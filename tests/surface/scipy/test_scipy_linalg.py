"""funcgrad.scipy.linalg against scipy.linalg (values; batched inputs where JAX batches) and
jax.scipy.linalg (derivatives with conventions), derivatives against finite differences in
float64, jit against eager, vmap against a loop, and errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import funcgrad
from funcgrad.scipy import linalg as fsl
from funcgrad.testing import check_grads

RNG = np.random.default_rng(7)


def close(a, b, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def _spd(n):
    x = RNG.normal(size=(n, n))
    return x @ x.T + n * np.eye(n)


def test_has_the_40_jax_names():
    names = (
        "block_diag cho_factor cho_solve cholesky circulant companion convolution_matrix det dft eigh "
        "eigh_tridiagonal expm expm_frechet fiedler fiedler_companion funm hadamard hankel helmert "
        "hessenberg hilbert inv invhilbert invpascal leslie lu lu_factor lu_solve pascal polar qr "
        "qr_multiply rsf2csf schur solve solve_sylvester solve_triangular sqrtm svd toeplitz"
    ).split()
    assert len(names) == 40 and sorted(names) == sorted(fsl.__all__)


def test_factorisations_and_solves_match_scipy():
    a, spd, b = RNG.normal(size=(4, 4)), _spd(4), RNG.normal(size=(4, 2))
    for lower in (False, True):
        close(fsl.cholesky(spd, lower=lower), sl.cholesky(spd, lower=lower))
        c = fsl.cho_factor(spd, lower=lower)
        close(fsl.cho_solve(c, b), sl.cho_solve(sl.cho_factor(spd, lower=lower), b))
    lu_, piv = fsl.lu_factor(a)
    lu0, piv0 = sl.lu_factor(a)
    close(lu_, lu0)
    assert np.asarray(piv).tolist() == piv0.tolist()
    for trans in (0, 1):
        close(fsl.lu_solve((lu_, piv), b, trans=trans), sl.lu_solve((lu0, piv0), b, trans=trans))
    for shape in ((4, 4), (5, 3), (3, 5)):
        m = RNG.normal(size=shape)
        for got, want in zip(fsl.lu(m), sl.lu(m)):
            close(got, want)
        for got, want in zip(fsl.lu(m, permute_l=True), sl.lu(m, permute_l=True)):
            close(got, want)
        for mode in ("full", "economic", "r"):
            for got, want in zip(fsl.qr(m, mode=mode), sl.qr(m, mode=mode)):
                close(got, want)
        (h, tau), r = fsl.qr(m, mode="raw")
        (h0, tau0), r0 = sl.qr(m, mode="raw")
        close(h, h0)
        close(tau, tau0)
        close(r, r0)
        q, r, p = fsl.qr(m, pivoting=True)
        q0, r0, p0 = sl.qr(m, pivoting=True)
        close(np.abs(np.asarray(r)), np.abs(r0))
        assert np.asarray(p).tolist() == p0.tolist()
        for driver in ("gesdd", "gesvd"):
            close(fsl.svd(m, compute_uv=False, lapack_driver=driver), sl.svd(m, compute_uv=False))
    for assume_a in ("gen", "sym", "pos"):
        close(fsl.solve(spd, b, assume_a=assume_a), sl.solve(spd, b, assume_a=assume_a), rtol=1e-9)
    tri = np.tril(a) + 3 * np.eye(4)
    for trans in (0, 1, "C"):
        close(
            fsl.solve_triangular(tri, b, trans=trans, lower=True),
            sl.solve_triangular(tri, b, trans=trans, lower=True),
        )
    close(
        fsl.solve_triangular(tri, b[:, 0], lower=True, unit_diagonal=True),
        sl.solve_triangular(tri, b[:, 0], lower=True, unit_diagonal=True),
    )
    close(fsl.det(a), sl.det(a))
    close(fsl.inv(a), sl.inv(a), rtol=1e-9)


def test_eigenproblems_match_scipy():
    a, b = _spd(4), _spd(4)
    for lower in (True, False):
        w, v = fsl.eigh(np.triu(a) if not lower else np.tril(a), lower=lower)
        close(w, sl.eigh(a, eigvals_only=True))
    for type_ in (1, 2, 3):
        w, v = fsl.eigh(a, b, type=type_)
        w0 = sl.eigh(a, b, type=type_, eigvals_only=True)
        close(w, w0, rtol=1e-9)
        v = np.asarray(v)
        if type_ == 1:
            close(a @ v, b @ v * np.asarray(w), rtol=1e-8, atol=1e-8)
    close(
        fsl.eigh(a, subset_by_index=(1, 3), eigvals_only=True),
        sl.eigh(a, subset_by_index=(1, 2), eigvals_only=True),
    )
    close(
        fsl.eigh(a, eigvals=(0, 1), eigvals_only=True), sl.eigh(a, subset_by_index=(0, 1), eigvals_only=True)
    )
    d, e = RNG.normal(size=5), RNG.normal(size=4)
    close(fsl.eigh_tridiagonal(d, e, eigvals_only=True), sl.eigh_tridiagonal(d, e, eigvals_only=True))
    close(fsl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 2)),
          sl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 2)))  # fmt: skip
    # complex e: e above the diagonal, conj(e) below (JAX's; the eigenvectors were its conjugate's)
    ec = e + 1j * RNG.normal(size=4)
    w, v = fsl.eigh_tridiagonal(d.astype(complex), ec)
    hermitian = np.diag(d) + np.diag(ec, 1) + np.diag(ec.conj(), -1)
    close(hermitian @ np.asarray(v), np.asarray(v) * np.asarray(w)[None, :])
    m = RNG.normal(size=(4, 4))
    t, z = fsl.schur(m)
    close(np.asarray(z) @ np.asarray(t) @ np.asarray(z).T, m)
    t, z = fsl.schur(m, output="complex")
    close(np.asarray(z) @ np.asarray(t) @ np.asarray(z).conj().T, m)
    h, q = fsl.hessenberg(m, calc_q=True)
    h0, q0 = sl.hessenberg(m, calc_q=True)
    close(h, h0)
    close(q, q0)


def test_matrix_functions_match_scipy():
    m = RNG.normal(size=(4, 4)) * 0.5
    close(fsl.expm(m), sl.expm(m), rtol=1e-12)
    close(fsl.expm(m * 20), sl.expm(m * 20), rtol=1e-9)  # squarings
    close(fsl.expm(np.triu(m), upper_triangular=True), sl.expm(np.triu(m)), rtol=1e-12)
    close(fsl.expm(m.astype(np.float32)), sl.expm(m), rtol=1e-5, atol=1e-6)
    batch = RNG.normal(size=(3, 3, 3))
    close(fsl.expm(batch), np.stack([sl.expm(x) for x in batch]), rtol=1e-12)
    e = RNG.normal(size=(4, 4))
    val, frechet = fsl.expm_frechet(m, e)
    val0, frechet0 = sl.expm_frechet(m, e)
    close(val, val0)
    close(frechet, frechet0, rtol=1e-9)
    spd = _spd(4)
    close(fsl.sqrtm(spd), sl.sqrtm(spd), rtol=1e-9)
    for method in ("qdwh", "svd"):
        u, p = fsl.polar(RNG.normal(size=(5, 3)) if method else None, method=method)
        u, p = np.asarray(u), np.asarray(p)
        close(u.T @ u, np.eye(3), atol=1e-9)
    x = RNG.normal(size=(3, 5))
    u, p = fsl.polar(x, side="left")
    u0, p0 = sl.polar(x, side="left")
    close(u, u0, rtol=1e-8, atol=1e-9)
    close(p, p0, rtol=1e-8, atol=1e-9)
    t, z = sl.schur(m)
    for got, want in zip(fsl.rsf2csf(t, z), sl.rsf2csf(t, z)):
        close(np.abs(np.asarray(got)), np.abs(want), rtol=1e-9, atol=1e-9)
    close(fsl.funm(spd, np.exp), sl.funm(spd, np.exp), rtol=1e-8)
    # rsf2csf and funm's Schur-Parlett recurrence are fori_loops now (JAX's linalg_test testFunm
    # at 20x20 took minutes: Python loops compiled an eig call per step): a real non-normal 12x12
    # with complex eigenvalue pairs, value and error estimate as SciPy's, eager and jit
    x = RNG.uniform(-3, 3, (12, 12))
    want, want_err = sl.funm(x, lambda v: v**-2.718, disp=False)
    got, err = fsl.funm(x, lambda v: v**-2.718, disp=False)
    close(got, want, rtol=1e-10, atol=1e-12)
    close(err, want_err, rtol=1e-6)
    close(funcgrad.jit(lambda a: fsl.funm(a, lambda v: v**-2.718))(x), want, rtol=1e-10, atol=1e-12)
    a, b, c = (
        RNG.normal(size=(3, 3)) + 4 * np.eye(3),
        RNG.normal(size=(2, 2)) + 4 * np.eye(2),
        RNG.normal(size=(3, 2)),
    )
    for method in ("schur", "eigen"):
        close(fsl.solve_sylvester(a, b, c, method=method), sl.solve_sylvester(a, b, c), rtol=1e-8)


def test_rsf2csf_and_sylvester_complex_and_broadcast_batches_match_scipy():
    # A complex T is rotated by SciPy's [[conj(c), s], [-s, c]] (it had -conj(s): other numbers);
    # batch axes broadcast (one Z for a stack of T), as jnp.vectorize in JAX's. Found by JAX's
    # linalg_test testRsf2csf / testRsf2csfBroadcast / test_solve_sylvester_broadcast.
    cplx = lambda *s: RNG.normal(size=s) + 1j * RNG.normal(size=s)  # noqa: E731
    t, z = cplx(5, 5), cplx(5, 5)
    for got, want in zip(fsl.rsf2csf(t, z), sl.rsf2csf(t, z)):
        close(got, want, rtol=1e-9, atol=1e-9)
    ts, z = RNG.normal(size=(3, 4, 4)), RNG.normal(size=(4, 4))
    for got, want in zip(fsl.rsf2csf(ts, z), zip(*[sl.rsf2csf(t, z) for t in ts])):
        close(got, np.stack(want), rtol=1e-9, atol=1e-9)
    a, b, c = (
        RNG.normal(size=(2, 3, 3)) + 4 * np.eye(3),
        RNG.normal(size=(2, 2)) + 4 * np.eye(2),
        RNG.normal(size=(3, 2)),
    )
    close(fsl.solve_sylvester(a, b, c), np.stack([sl.solve_sylvester(x, b, c) for x in a]), rtol=1e-8)
    # compiled as JAX's: eager is the jitted program's numbers, bit for bit (JAX's CompileAndCheck)
    a32, b32, c32 = (x.astype(np.float32) for x in (a[0], b, c))
    np.testing.assert_array_equal(
        fsl.solve_sylvester(a32, b32, c32), funcgrad.jit(fsl.solve_sylvester)(a32, b32, c32)
    )


def test_structured_matrices_match_scipy():
    c, r = np.array([1.0, 2.0, 3.0]), np.array([1.0, 5.0, 6.0, 7.0])
    close(fsl.toeplitz(c, r), sl.toeplitz(c, r))
    close(fsl.toeplitz(c), sl.toeplitz(c))
    close(fsl.hankel(c, r), sl.hankel(c, r))
    close(fsl.hankel(c), sl.hankel(c))
    close(fsl.circulant(c), sl.circulant(c))
    close(fsl.companion(np.array([2.0, -3.0, 1.0, 5.0])), sl.companion([2.0, -3.0, 1.0, 5.0]))
    close(fsl.leslie(np.array([0.1, 2.0, 1.5]), np.array([0.2, 0.8])), sl.leslie([0.1, 2.0, 1.5], [0.2, 0.8]))
    with pytest.raises(TypeError, match="leslie requires ndarray"):  # (lists refused, as JAX's)
        fsl.leslie([0.1, 2.0, 1.5], [0.2, 0.8])
    close(fsl.fiedler(r), sl.fiedler(r))
    for coeffs in ([1.0, -6.0, 11.0, -6.0], [2.0, 1.0, 3.0, 5.0, 7.0, 1.0]):
        close(fsl.fiedler_companion(coeffs), sl.fiedler_companion(coeffs))
    for mode in ("full", "valid", "same"):
        close(fsl.convolution_matrix(c, 5, mode), sl.convolution_matrix(c, 5, mode))
    close(fsl.hilbert(4), sl.hilbert(4))
    close(fsl.invhilbert(5), sl.invhilbert(5))
    for kind in ("symmetric", "lower", "upper"):
        close(fsl.pascal(5, kind), sl.pascal(5, kind))
        close(fsl.invpascal(5, kind), sl.invpascal(5, kind))
    close(fsl.helmert(4), sl.helmert(4))
    close(fsl.helmert(4, full=True), sl.helmert(4, full=True))
    close(fsl.hadamard(8), sl.hadamard(8))
    for scale in (None, "sqrtn", "n"):
        close(fsl.dft(5, scale), sl.dft(5, scale))
    blocks = [np.array([[1, 2]]), np.array([[3.0]]), np.ones((2, 2))]
    close(fsl.block_diag(*blocks), sl.block_diag(*blocks))
    batched = fsl.toeplitz(np.ones((3, 4)), np.ones((3, 2)))
    assert batched.shape == (3, 4, 2)


@pytest.mark.slow
def test_derivatives():
    spd, b, a = _spd(3), RNG.normal(size=(3, 2)), RNG.normal(size=(3, 3)) + 3 * np.eye(3)
    # (symmetrised first: JAX's rules take the whole tangent of a, while the primal reads one
    # triangle, so finite differences of the raw functions disagree with JAX's gradients too)
    check_grads(lambda m, v: fsl.solve((m + m.T) / 2, v, assume_a="pos"), (spd, b), order=2)
    check_grads(lambda m, v: fsl.cho_solve(fsl.cho_factor((m + m.T) / 2), v), (spd, b), order=2)
    check_grads(lambda m, v: fsl.lu_solve(fsl.lu_factor(m), v), (a, b), order=2)
    check_grads(lambda m, v: fsl.solve_triangular(m, v, lower=True), (np.tril(a), b), order=2)
    check_grads(lambda m: fsl.expm(m * 0.5), (a,), order=2)
    check_grads(lambda m: fsl.polar(m, method="svd")[1], (RNG.normal(size=(4, 3)),), order=1)
    check_grads(lambda m: fsl.eigh(m, spd, eigvals_only=True), (spd + np.eye(3),), order=1)
    check_grads(lambda m: fsl.lu(m)[1:], (a,), order=1)


def test_cholesky_and_positive_solve_gradients_are_jax_s():
    # JAX's cholesky rule takes the whole tangent (funcgrad reflected its lower triangle), and
    # solve(assume_a='pos') multiplies by the whole a in its implicit derivative (funcgrad by the
    # factorised triangle's Hermitian matrix): the gradients differed from jax's for symmetric
    # input too (scipy's cholesky, cho_factor, solve; lax's cholesky(symmetrize_input=False));
    # lu's permutation is real for complex input, and qdwh polar's shape refusal JAX's
    jax = pytest.importorskip("jax")
    import jax.scipy.linalg as jsl

    a = _spd(3).astype(np.float32)
    b = RNG.normal(size=(3, 2)).astype(np.float32)
    w = RNG.normal(size=(3, 3)).astype(np.float32)

    def loss(lib, m, v):  # (one program a library: jax's side compiled once)
        sl_ = lib.scipy.linalg
        terms = [
            sl_.cholesky(m, lower=False) * w,
            sl_.cho_solve(sl_.cho_factor(m, lower=True), v),
            sl_.solve(m, v, assume_a="pos", lower=True) * 3,
            lib.lax.linalg.cholesky(m, symmetrize_input=False) * w.T,
        ]
        return sum(t.sum() * (k + 1) for k, t in enumerate(terms))

    got = funcgrad.grad(lambda m, v: loss(funcgrad, m, v), argnums=(0, 1))(a, b)
    want = jax.jit(jax.grad(lambda m, v: loss(jax, m, v), argnums=(0, 1)))(a, b)
    for g, x in zip(got, want):
        close(g, x, rtol=2e-5, atol=2e-5)
    p = fsl.lu(np.eye(3, dtype=np.complex64))[0]
    assert p.dtype == jsl.lu(np.eye(3, dtype=np.complex64))[0].dtype == np.float32
    with pytest.raises(NotImplementedError, match="method='qdwh' only supports mxn matrices"):
        fsl.polar(np.ones((4, 3), np.float32), side="left")


def test_sqrtm_is_jax_s_loops():
    # JAX's column-by-column fori_loops (funcgrad unrolled them in Python: jit of a 50 x 50 sqrtm
    # compiled for minutes, linalg_test's testSqrtmPSDMatrix ran past the runner's limit): a
    # program of constant size, with jax's bits (the same sums in the same order), eager and jit
    pytest.importorskip("jax")
    import jax.scipy.linalg as jsl

    a = RNG.normal(size=(6, 6)).astype(np.float32)  # (jax's sqrtm takes one matrix)
    m = a @ a.T
    got = fsl.sqrtm(m)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(jsl.sqrtm(m)))
    np.testing.assert_array_equal(np.asarray(funcgrad.jit(fsl.sqrtm)(m)), np.asarray(got))
    small, large = (len(str(funcgrad.make_jaxpr(fsl.sqrtm)(np.eye(n, dtype=np.float32)))) for n in (4, 50))
    assert large < 1.2 * small


@pytest.mark.slow
def test_expm_gradient_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.scipy.linalg as jsl

    m = RNG.normal(size=(3, 3))
    # (jax's gradient jitted: one program, not eager per-primitive dispatch)
    want = jax.jit(jax.grad(lambda x: jsl.expm(x).sum()))(m)
    close(funcgrad.grad(lambda x: fsl.expm(x).sum())(m), want, rtol=1e-9)


def test_jit_and_vmap():
    mats = np.stack([_spd(3) for _ in range(4)])
    b = RNG.normal(size=(4, 3, 2))
    f = lambda m, v: fsl.solve(m, v, assume_a="pos")  # noqa: E731
    loop = np.stack([np.asarray(f(m, v)) for m, v in zip(mats, b)])
    close(funcgrad.vmap(f)(mats, b), loop)
    close(funcgrad.jit(f)(mats[0], b[0]), loop[0])
    close(funcgrad.jit(fsl.expm)(mats[0] * 0.1), sl.expm(mats[0] * 0.1), rtol=1e-12)
    close(funcgrad.jit(lambda m: fsl.lu(m)[2])(mats[0]), sl.lu(mats[0])[2])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: fsl.solve(np.eye(2), np.ones(2), assume_a="nope"), "assume_a must be one of"),
        (lambda: fsl.qr(np.eye(2), mode="bad"), "qr: mode must be"),
        (lambda: fsl.schur(np.eye(2), output="x"), "output must be 'real' or 'complex'"),
        (lambda: fsl.solve_triangular(np.eye(2), np.ones(2), trans=3), "trans must be"),
        (lambda: fsl.expm(np.ones((2, 3))), r"expm: A must be square"),
        (lambda: fsl.hadamard(3), "power of 2"),
        (lambda: fsl.eigh_tridiagonal(np.ones(3), np.ones(2), select="v"), "data-dependent size"),
        (lambda: fsl.cho_solve((np.eye(3), True), np.ones(2)), r"cho_solve: b of shape \(2,\)"),
    ],
)
def test_errors(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_solve_triangular_of_16_bit_floats_as_jax():
    # The fuzzer's scipy.linalg ops: float16 raised "LAPACK does not support"; jax solves in the
    # 16-bit dtype (as lax.linalg.triangular_solve does here), gradients included.
    jax = pytest.importorskip("jax")
    import ml_dtypes

    for dtype, kws in [
        (np.float16, ({}, {"trans": 1, "lower": True})),
        (ml_dtypes.bfloat16, ({"trans": "T"},)),
    ]:
        m, b = np.array([[2.0, 0.3], [0.0, 1.5]], dtype), np.array([1.0, -0.5], dtype)
        for kw in kws:
            outs = []
            for lib in (funcgrad, jax):
                solve = lib.scipy.linalg.solve_triangular
                x = solve(m, b, **kw)
                g = lib.grad(lambda m, s=solve, b=b, kw=kw: s(m, b, **kw).astype(np.float32).sum())(m)
                outs.append((np.asarray(x), np.asarray(g)))
            assert outs[0][0].dtype == outs[1][0].dtype == dtype
            for got, want in zip(outs[0], outs[1]):
                np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2)


@pytest.mark.parametrize("name", ["schur", "hessenberg"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_schur_hessenberg_of_16_bit_floats_raise_as_jax(name, dtype):
    # (the fuzzer's progz, seed 21002: a bfloat16 matrix into schur raised the integers' TypeError,
    # "subtypes of floating", where jax raises NotImplementedError: Unsupported dtype bfloat16)
    jax = pytest.importorskip("jax")
    import ml_dtypes

    m = np.array([[2.0, 0.5], [0.2, 1.0]], ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16)
    for lib in (jax, funcgrad):
        with pytest.raises(NotImplementedError, match=f"Unsupported dtype {dtype}"):
            getattr(lib.scipy.linalg, name)(m)


def test_special_matrix_errors_in_jax_s_words():
    # (JAX's linalg_test testCompanionInvalidLength, testLeslieInvalidLength,
    # testFiedlerCompanionEmptyInput, testConvolutionMatrixInvalidArgs, testInvpascalInvalidKind)
    cases = [
        (lambda: fsl.companion(np.ones(1)), "length of `a` along the last axis"),
        (lambda: fsl.leslie(np.ones(1), np.ones(0)), "length of f along the last axis"),
        (lambda: fsl.fiedler_companion(np.ones((3, 0))), "nonzero"),
        (lambda: fsl.convolution_matrix(np.ones(3), 3, mode="bad"), "mode must be one of"),
        (lambda: fsl.convolution_matrix(np.zeros(0), 3), r"len\(a\) must be at least 1"),
        (lambda: fsl.invpascal(3, kind="bad"), "Expected kind to be one of"),
    ]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()
