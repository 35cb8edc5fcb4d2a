"""funcgrad.scipy.sparse.linalg (cg, gmres, bicgstab), funcgrad.scipy.interpolate
(RegularGridInterpolator) and funcgrad.scipy.cluster.vq against SciPy and JAX (the oracle):
values, iterates after a fixed number of steps, implicit derivatives against finite differences,
jit against eager, vmap against a loop, pytrees, and the errors for bad input."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.cluster.vq as scv
import scipy.interpolate as si
import scipy.sparse.linalg as ssl

import funcgrad
import funcgrad.numpy as fnp
import funcgrad.scipy
from funcgrad.scipy.cluster import vq as fvq
from funcgrad.scipy.interpolate import RegularGridInterpolator
from funcgrad.scipy.sparse import linalg as fsl
from funcgrad.testing import check_grads

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import jax.scipy.cluster.vq as jvq  # noqa: E402
import jax.scipy.interpolate as jinterp  # noqa: E402
import jax.scipy.sparse.linalg as jsl  # noqa: E402

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

RNG = np.random.default_rng(0)
N = 6
_G = RNG.normal(size=(N, N))
SPD = _G @ _G.T + N * np.eye(N)  # symmetric positive definite
GEN = _G + 2 * N * np.eye(N)  # general, well conditioned
B = RNG.normal(size=N)

SOLVERS = {
    "cg": (fsl.cg, jsl.cg, ssl.cg, SPD, {}),
    "bicgstab": (fsl.bicgstab, jsl.bicgstab, ssl.bicgstab, GEN, {}),
    "gmres_batched": (fsl.gmres, jsl.gmres, ssl.gmres, GEN, {"solve_method": "batched"}),
    "gmres_incremental": (fsl.gmres, jsl.gmres, ssl.gmres, GEN, {"solve_method": "incremental"}),
}


class _MatmulOnly:
    """An operator known only by ``@`` (like a SciPy LinearOperator)."""

    def __init__(self, a):
        self.a, self.shape = a, a.shape

    def __matmul__(self, x):
        return fnp.asarray(self.a) @ x


# ----------------------------------------------------------------------------------------------
# Krylov solvers


@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize("form", ["matrix", "function", "matmul"])
def test_solvers_converge_to_the_solution(name, form):
    ours, _, scipys, a, kw = SOLVERS[name]
    op = {"matrix": a, "function": lambda v: fnp.asarray(a) @ v, "matmul": _MatmulOnly(a)}[form]
    x, info = ours(op, B, tol=1e-12, **kw)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, B), rtol=1e-9, atol=1e-10)
    ref, ref_info = scipys(a, B, rtol=1e-12, atol=0.0)
    assert ref_info == 0
    np.testing.assert_allclose(np.asarray(x), ref, rtol=1e-9, atol=1e-10)
    if name.startswith("gmres"):
        assert int(info) == 0
    else:
        assert info is None


def _jax_op(a):
    return lambda v: jnp.asarray(a) @ v


def _jax(fn, *args, **kw):
    """jax's ``fn(*args, **kw)`` as one compiled program (the keywords, operators and
    preconditioners closed over): eagerly jax compiles a program per operation around its loops,
    which was most of these tests' time; the values are XLA's either way. Callable arguments (the
    operators) are closed over too."""
    where = [i for i, a in enumerate(args) if not callable(a)]

    def run(*arrays):
        full = list(args)
        for i, x in zip(where, arrays, strict=True):
            full[i] = x
        return fn(*full, **kw)

    return jax.jit(run)(*(args[i] for i in where))


@pytest.mark.parametrize("name", ["cg", "bicgstab"])
@pytest.mark.parametrize("maxiter", [1, 2, 3])
def test_cg_and_bicgstab_iterates_match_jax_and_scipy(name, maxiter):
    # Stopped after maxiter steps the iterate is the algorithm's, not the solution: the same
    # recurrences give the same x as JAX and as SciPy.
    ours, theirs, scipys, a, _ = SOLVERS[name]
    x0 = RNG.normal(size=N)
    x, _ = ours(a, B, x0, maxiter=maxiter, tol=1e-14)
    xj, _ = _jax(theirs, _jax_op(a), jnp.asarray(B), jnp.asarray(x0), maxiter=maxiter, tol=1e-14)
    np.testing.assert_allclose(np.asarray(x), np.asarray(xj), rtol=1e-10, atol=1e-12)
    xs, _ = scipys(a, B, x0, maxiter=maxiter, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(x), xs, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("method", ["batched", "incremental"])
@pytest.mark.parametrize("restart,maxiter", [(2, 1), (3, 2), (20, 1)])
def test_gmres_iterates_match_jax(method, restart, maxiter):
    x, _ = fsl.gmres(GEN, B, restart=restart, maxiter=maxiter, tol=1e-14, solve_method=method)
    xj, _ = _jax(jsl.gmres, _jax_op(GEN), B, restart=restart, maxiter=maxiter, tol=1e-14, solve_method=method)
    np.testing.assert_allclose(np.asarray(x), np.asarray(xj), rtol=1e-9, atol=1e-11)


def test_cg_with_a_preconditioner_matches_scipy_step_by_step():
    jacobi = np.diag(1 / np.diag(SPD))
    for maxiter in (1, 2, 4):
        for m in (jacobi, lambda r: fnp.asarray(jacobi) @ r):
            x, _ = fsl.cg(SPD, B, maxiter=maxiter, tol=1e-14, M=m)
            xs, _ = ssl.cg(SPD, B, maxiter=maxiter, rtol=1e-14, M=jacobi)
            np.testing.assert_allclose(np.asarray(x), xs, rtol=1e-8, atol=1e-10)
    for name in ("bicgstab", "gmres_batched", "gmres_incremental"):
        ours, theirs, _, a, kw = SOLVERS[name]
        m = np.diag(1 / np.diag(a))
        x, _ = ours(a, B, tol=1e-12, M=m, **kw)
        np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, B), rtol=1e-9, atol=1e-10)
        xj, _ = _jax(theirs, _jax_op(a), B, tol=1e-12, M=_jax_op(m), maxiter=1, **kw)
        x1, _ = ours(a, B, tol=1e-12, M=m, maxiter=1, **kw)
        np.testing.assert_allclose(np.asarray(x1), np.asarray(xj), rtol=1e-9, atol=1e-10)


def test_tolerances_stop_early():
    # A loose tolerance stops before the solution, within SciPy's non-legacy criterion.
    for name in SOLVERS:
        ours, _, _, a, kw = SOLVERS[name]
        for tol, atol in ((1e-2, 0.0), (0.0, 1e-2)):
            x, _ = ours(a, B, tol=tol, atol=atol, **kw)
            residual = np.linalg.norm(B - a @ np.asarray(x))
            assert residual <= max(tol * np.linalg.norm(B), atol) * (1 + 1e-9), name
            # The batched GMRES cycle cannot stop inside a cycle: with restart = N it is exact.
            assert residual > 1e-12 or name == "gmres_batched", name


@pytest.mark.parametrize("name", SOLVERS)
def test_pytree_right_hand_sides(name):
    ours, _, _, a, kw = SOLVERS[name]

    # The operator acts on {"u": (2,), "w": (N - 2,)} as the matrix a on the concatenation.
    def op(t):
        y = fnp.asarray(a) @ fnp.concatenate([t["u"], t["w"]])
        return {"u": y[:2], "w": y[2:]}

    b = {"u": fnp.asarray(B[:2]), "w": fnp.asarray(B[2:])}
    x, _ = ours(op, b, tol=1e-12, **kw)
    assert set(x) == {"u", "w"} and x["u"].shape == (2,)
    np.testing.assert_allclose(np.concatenate([x["u"], x["w"]]), np.linalg.solve(a, B), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", SOLVERS)
def test_complex_systems(name):
    ours, _, scipys, _, kw = SOLVERS[name]
    g = RNG.normal(size=(N, N)) + 1j * RNG.normal(size=(N, N))
    a = g @ g.conj().T + N * np.eye(N) if name == "cg" else g + 2 * N * np.eye(N)
    b = RNG.normal(size=N) + 1j * RNG.normal(size=N)
    x, _ = ours(a, b, tol=1e-12, **kw)
    assert x.dtype == np.complex128
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, b), rtol=1e-9, atol=1e-10)


def test_float32_stays_float32():
    for name in SOLVERS:
        ours, _, _, a, kw = SOLVERS[name]
        x, _ = ours(a.astype(np.float32), B.astype(np.float32), tol=1e-5, **kw)
        assert x.dtype == np.float32, name
        np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, B), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", SOLVERS)
def test_gradients_are_implicit_and_match_finite_differences(name):
    ours, _, _, a, kw = SOLVERS[name]
    sym = name == "cg"

    def solve(p, b):
        # The operator closes over the parameters p (kept SPD for cg).
        mat = fnp.asarray(a) + (p + p.T if sym else p)
        x, _ = ours(lambda v: mat @ v, b, tol=1e-13, **kw)
        return fnp.sin(x)

    p = 0.1 * RNG.normal(size=(N, N))
    check_grads(solve, (p, B), order=1, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)

    def dense(p, b):
        return fnp.sin(fnp.linalg.solve(fnp.asarray(a) + (p + p.T if sym else p), b))

    loss = lambda f, sum=fnp.sum: lambda p, b: sum(f(p, b) ** 2)  # noqa: E731
    g = funcgrad.grad(loss(solve), argnums=(0, 1))(p, B)
    ref = funcgrad.grad(loss(dense), argnums=(0, 1))(p, B)
    for o, r in zip(g, ref):
        np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=1e-8, atol=1e-10)
    gj = jax.jit(jax.grad(loss(lambda p, b: _jax_solve(name, a, p, b, sym), jnp.sum), argnums=(0, 1)))(p, B)
    for o, r in zip(g, gj):
        np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=1e-8, atol=1e-10)


def _jax_solve(name, a, p, b, sym):
    _, theirs, _, _, kw = SOLVERS[name]
    mat = jnp.asarray(a) + (p + p.T if sym else p)
    return jnp.sin(theirs(lambda v: mat @ v, b, tol=1e-13, **kw)[0])


@pytest.mark.parametrize("name", SOLVERS)
def test_jit_matches_eager_and_vmap_matches_a_loop(name):
    ours, _, _, a, kw = SOLVERS[name]

    def solve(mat, b):
        return ours(lambda v: mat @ v, b, tol=1e-12, **kw)[0]

    eager = solve(a, B)
    np.testing.assert_allclose(
        np.asarray(funcgrad.jit(solve)(a, B)), np.asarray(eager), rtol=1e-10, atol=1e-12
    )
    bs = RNG.normal(size=(3, N))
    mats = np.stack([a, a + np.eye(N), a + 2 * np.eye(N)])
    batched = funcgrad.vmap(solve)(mats, bs)
    loop = np.stack([np.asarray(solve(m, b)) for m, b in zip(mats, bs)])
    np.testing.assert_allclose(np.asarray(batched), loop, rtol=1e-9, atol=1e-11)
    grads = funcgrad.jit(funcgrad.vmap(funcgrad.grad(lambda b: fnp.sum(solve(a, b) ** 2))))(bs)
    ref = [2 * np.linalg.solve(a.T, np.linalg.solve(a, b)) for b in bs]
    np.testing.assert_allclose(np.asarray(grads), np.stack(ref), rtol=1e-8, atol=1e-10)


def test_gmres_info_reports_nan():
    # As in JAX: a NaN residual stops the iterations at once, so x is x0, and info says whether
    # it is NaN.
    x, info = fsl.gmres(GEN, B, x0=np.full(N, np.nan))
    assert np.isnan(np.asarray(x)).all() and int(info) == -1
    xj, infoj = _jax(jsl.gmres, _jax_op(GEN), B, x0=np.full(N, np.nan))
    assert int(infoj) == -1
    x, info = fsl.gmres(GEN, B)
    assert int(info) == 0


def test_solver_errors_name_the_problem():
    with pytest.raises(ValueError, match="square matrix.*shape \\(2, 3\\)"):
        fsl.cg(np.ones((2, 3)), np.ones(2))
    with pytest.raises(TypeError, match="either a function or ndarray"):
        fsl.bicgstab("A", np.ones(2))
    with pytest.raises(ValueError, match="x0 and b must have matching tree structure"):
        fsl.cg(SPD, B, x0=(B,))
    with pytest.raises(ValueError, match="x0 and b must have matching shape"):
        fsl.gmres(GEN, B, x0=np.zeros(N + 1))
    with pytest.raises(ValueError, match="solve_method must be 'incremental' or 'batched'"):
        fsl.gmres(GEN, B, solve_method="qr")
    with pytest.raises(ValueError, match="preconditioner M.*square"):
        fsl.cg(SPD, B, M=np.ones(3))


@pytest.mark.parametrize("name", ["cg", "bicgstab", "gmres"])
def test_solvers_keep_jax_s_weak_types(name):
    # (JAX's lax_scipy_sparse_test test_*_weak_types) a Python-scalar b: bicgstab and gmres keep
    # it weak eagerly (their 1s and norms are cast to b's lattice type), cg does not (its gamma
    # is cast with astype), and every staged solve has b's type (custom_linear_solve's rule).
    # funcgrad's were all strong.
    def double(x):
        return jax.tree_util.tree_map(lambda v: 2 * v, x)

    def f(b):
        return getattr(fsl, name)(double, b)[0]

    def g(b):
        return getattr(jsl, name)(double, b)[0]

    for b in (1.0, (1.0, np.ones(2))):
        for got, want in ((f(b), g(b)), (funcgrad.jit(f)(b), jax.jit(g)(b))):
            for u, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
                assert (u.dtype, u.weak_type) == (w.dtype, w.weak_type)
                np.testing.assert_allclose(u, w, rtol=1e-6)


def test_namespaces():
    assert funcgrad.scipy.sparse.linalg is fsl
    assert funcgrad.scipy.cluster.vq is fvq
    assert funcgrad.scipy.interpolate.RegularGridInterpolator is RegularGridInterpolator
    assert set(fsl.__all__) == {"cg", "gmres", "bicgstab"}


# ----------------------------------------------------------------------------------------------
# RegularGridInterpolator


GRID = (np.sort(RNG.uniform(0, 1, 5)), np.sort(RNG.uniform(-1, 2, 4)), np.array([0.0, 0.5, 3.0]))
VALUES = RNG.normal(size=(5, 4, 3))
# Points inside and outside the grid, a point on a grid line and one exactly on the last node.
XI = np.concatenate(
    [
        np.stack([RNG.uniform(g[0], g[-1], 9) for g in GRID], axis=-1),
        [[-0.1, 0.0, 1.0], [0.5, 2.5, 1.0], [GRID[0][2], GRID[1][1], 0.5], [GRID[0][-1], GRID[1][-1], 3.0]],
    ]
)


@pytest.mark.parametrize("method", ["linear", "nearest"])
@pytest.mark.parametrize("fill_value", [np.nan, None, 0.25])
def test_interpolator_matches_scipy_and_jax(method, fill_value):
    ours = RegularGridInterpolator(GRID, VALUES, method=method, fill_value=fill_value)(XI)
    ref = si.RegularGridInterpolator(GRID, VALUES, method=method, bounds_error=False, fill_value=fill_value)(
        XI
    )
    np.testing.assert_allclose(np.asarray(ours), ref, rtol=1e-12, atol=1e-12)
    theirs = _jax(
        lambda v, x: jinterp.RegularGridInterpolator(GRID, v, method=method, fill_value=fill_value)(x),
        VALUES,
        XI,
    )
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-12, atol=1e-12)


def test_interpolator_trailing_axes_point_forms_and_method_override():
    values = RNG.normal(size=(5, 4, 2))
    grid = GRID[:2]
    f = RegularGridInterpolator(grid, values)
    ref = si.RegularGridInterpolator(grid, values, bounds_error=False)
    pts = XI[:6, :2].reshape(2, 3, 2)
    assert f(pts).shape == (2, 3, 2)
    np.testing.assert_allclose(np.asarray(f(pts)), ref(pts), rtol=1e-12)
    # A tuple of coordinate arrays (broadcast together), as in SciPy.
    xs, ys = pts[..., 0], pts[:1, :, 1]
    np.testing.assert_allclose(np.asarray(f((xs, ys))), ref((xs, ys)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(f(pts, method="nearest")), ref(pts, method="nearest"), rtol=1e-12)
    # One dimension: a 1-d array of points.
    f1 = RegularGridInterpolator((GRID[0],), VALUES[:, 0, 0])
    x1 = np.linspace(-0.2, 1.2, 11)
    np.testing.assert_allclose(
        np.asarray(f1(x1)),
        si.RegularGridInterpolator((GRID[0],), VALUES[:, 0, 0], bounds_error=False)(x1),
        rtol=1e-12,
    )
    # Integer values are interpolated as floats.
    fi = RegularGridInterpolator((np.array([0, 1, 2]),), np.array([0, 10, 30]))
    assert fi(np.array([0.5, 1.5])).tolist() == [5.0, 20.0]


def test_interpolator_gradients_jit_vmap_and_pytree():
    inside = XI[:9]

    def f(values, xi):
        return RegularGridInterpolator(GRID, values)(xi)

    check_grads(f, (VALUES, inside), order=1, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
    check_grads(lambda v: RegularGridInterpolator(GRID, v, method="nearest")(inside), (VALUES,), order=2)
    gj = jax.jit(
        jax.grad(lambda v, x: jnp.sum(jinterp.RegularGridInterpolator(GRID, v)(x) ** 2), argnums=(0, 1))
    )
    g = funcgrad.grad(lambda v, x: fnp.sum(f(v, x) ** 2), argnums=(0, 1))(VALUES, inside)
    for o, r in zip(g, gj(jnp.asarray(VALUES), jnp.asarray(inside))):
        np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=1e-10, atol=1e-12)
    interp = RegularGridInterpolator(GRID, VALUES, fill_value=0.0)
    # The interpolator is a pytree: it crosses jit and vmap as an argument.
    jitted = funcgrad.jit(lambda it, x: it(x))(interp, XI)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(interp(XI)), rtol=1e-12, atol=1e-12)
    leaves, treedef = funcgrad.tree_util.tree_flatten(interp)
    assert len(leaves) == 5 and funcgrad.tree_util.tree_unflatten(treedef, leaves).method == "linear"
    batched = funcgrad.vmap(lambda x: interp(x))(XI.reshape(13, 1, 3))
    np.testing.assert_allclose(np.asarray(batched), np.asarray(interp(XI)).reshape(13, 1), rtol=1e-12)
    many = np.stack([VALUES, 2 * VALUES])
    per = funcgrad.vmap(lambda v: RegularGridInterpolator(GRID, v)(inside))(many)
    np.testing.assert_allclose(np.asarray(per[1]), 2 * np.asarray(per[0]), rtol=1e-12)


def test_interpolator_errors():
    with pytest.raises(ValueError, match="method 'cubic' is not defined"):
        RegularGridInterpolator(GRID, VALUES, method="cubic")
    with pytest.raises(ValueError, match="bounds_error=True is not supported"):
        RegularGridInterpolator(GRID, VALUES, bounds_error=True)
    with pytest.raises(ValueError, match="4 point arrays, but values has 3 dimensions"):
        RegularGridInterpolator((*GRID, GRID[0]), VALUES)
    with pytest.raises(ValueError, match="points\\[1\\] must be 1-d with values.shape\\[1\\] = 4"):
        RegularGridInterpolator((GRID[0], GRID[0], GRID[2]), VALUES)
    with pytest.raises(ValueError, match="fill_value of dtype complex128"):
        RegularGridInterpolator(GRID, VALUES, fill_value=1j)
    f = RegularGridInterpolator(GRID, VALUES)
    with pytest.raises(ValueError, match="have dimension 2, but the grid has dimension 3"):
        f(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="method 'spline' is not defined"):
        f(XI, method="spline")


# ----------------------------------------------------------------------------------------------
# vq


@pytest.mark.parametrize("shape", [(7, 3), (7,)])
def test_vq_matches_scipy_and_jax(shape):
    obs = RNG.normal(size=shape)
    book = RNG.normal(size=(4,) + shape[1:])
    code, dist = fvq.vq(obs, book)
    ref_code, ref_dist = scv.vq(obs, book)
    np.testing.assert_array_equal(np.asarray(code), ref_code)
    np.testing.assert_allclose(np.asarray(dist), ref_dist, rtol=1e-12)
    jcode, jdist = jvq.vq(obs, book)
    np.testing.assert_array_equal(np.asarray(code), np.asarray(jcode))
    np.testing.assert_allclose(np.asarray(dist), np.asarray(jdist), rtol=1e-12)


def test_vq_ties_integers_jit_vmap_and_grad():
    code, dist = fvq.vq(np.array([[1, 1], [0, 0]]), np.array([[0, 0], [2, 2], [0, 0]]))
    assert code.tolist() == [0, 0] and dist.dtype == np.float64  # the first code on a tie
    obs, book = RNG.normal(size=(5, 2)), RNG.normal(size=(3, 2))
    eager = fvq.vq(obs, book)
    jitted = funcgrad.jit(fvq.vq)(obs, book)
    np.testing.assert_array_equal(np.asarray(jitted[0]), np.asarray(eager[0]))
    np.testing.assert_allclose(np.asarray(jitted[1]), np.asarray(eager[1]), rtol=1e-12)
    many = RNG.normal(size=(4, 5, 2))
    codes = funcgrad.vmap(lambda o: fvq.vq(o, book)[0])(many)
    np.testing.assert_array_equal(np.asarray(codes), np.stack([scv.vq(o, book)[0] for o in many]))
    check_grads(lambda o, b: fvq.vq(o, b)[1], (obs, book), order=1, modes=("fwd", "rev"))


def test_vq_errors():
    with pytest.raises(ValueError, match="same rank"):
        fvq.vq(np.ones((3, 2)), np.ones(2))
    with pytest.raises(ValueError, match="1-d or 2-d"):
        fvq.vq(np.ones((3, 2, 1)), np.ones((3, 2, 1)))
    with pytest.raises(ValueError, match="2 features but codes have 3"):
        fvq.vq(np.ones((3, 2)), np.ones((4, 3)))
