"""funcgrad.scipy.stats against scipy.stats: every function of every distribution module (values in
float64 and float32, derivatives against finite differences, jit against eager, vmap against a
loop), ``mode``/``rankdata``/``sem``, ``gaussian_kde``, and the modules being importable as
modules."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import scipy.special as ss
import scipy.stats as sst

import funcgrad
from funcgrad.scipy import stats
from funcgrad.testing import check_grads


def U(lo, hi, n=5, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, n)


X = U(-2, 2)
POS = U(0.3, 3, seed=1)
PROB = U(0.05, 0.95, seed=2)
K = np.array([0.0, 1.0, 2.0, 3.0, 5.0])

# (module, function, args, differentiable argument indices)
CASES = []


def add(dist, fns, args, diff=(), **kw):
    for fn in fns:
        CASES.append((dist, fn, args, diff, kw))


add("norm", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], (X, 0.3, 1.7), (0, 1, 2))
add("norm", ["ppf", "isf"], (PROB, 0.3, 1.7), (0, 1, 2))
add("uniform", ["logpdf", "pdf"], (U(0.1, 1.9), 0.0, 2.0), (2,))
add("uniform", ["cdf"], (U(0.1, 1.9), 0.0, 2.0), (0, 2))
add("uniform", ["ppf"], (PROB, 1.0, 2.0), (0, 1, 2))
add("expon", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], (POS, 0.1, 1.5), (0, 1, 2))
add("expon", ["ppf"], (PROB, 0.1, 1.5), (0, 1, 2))
add("laplace", ["logpdf", "pdf", "cdf"], (X + 0.05, 0.0, 1.3), (0, 2))
add("logistic", ["logpdf", "pdf", "cdf", "sf"], (X, 0.2, 1.3), (0, 1, 2))
add("logistic", ["ppf", "isf"], (PROB, 0.2, 1.3), (0, 1, 2))
add("cauchy", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], (X, 0.2, 1.3), (0, 1, 2))
add("cauchy", ["ppf", "isf"], (PROB, 0.2, 1.3), (0, 1, 2))
add("beta", ["logpdf", "pdf"], (U(0.05, 0.95, seed=3), 2.0, 3.5), (0, 1, 2))
add("beta", ["cdf", "logcdf", "sf", "logsf"], (U(0.05, 0.95, seed=3), 2.0, 3.5), (0,))
add("gamma", ["logpdf", "pdf"], (POS, 2.5, 0.1, 1.2), (0, 1, 3))
add("gamma", ["cdf", "logcdf", "sf", "logsf"], (POS, 2.5, 0.1, 1.2), (0, 1, 3), order=1)
add("chi2", ["logpdf", "pdf"], (POS, 3.0), (0, 1))
add("chi2", ["cdf", "logcdf", "sf", "logsf"], (POS, 3.0), (0, 1), order=1)
add("t", ["logpdf", "pdf"], (X, 3.5, 0.2, 1.4), (0, 1, 2, 3))
add("pareto", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], (U(1.5, 4), 2.5), (0, 1))
add("pareto", ["ppf"], (PROB, 2.5), (0, 1))
add("gennorm", ["logpdf", "pdf"], (X + 0.05, 1.7), (0, 1))
add("gennorm", ["cdf"], (X + 0.05, 1.7), (0, 1), order=1)
add("gumbel_r", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], (X, 0.3, 1.2), (0, 1, 2))
add("gumbel_r", ["ppf"], (PROB, 0.3, 1.2), (0, 1, 2))
add("gumbel_l", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], (X, 0.3, 1.2), (0, 1, 2))
add("gumbel_l", ["ppf"], (PROB, 0.3, 1.2), (0, 1, 2))
add("vonmises", ["logpdf", "pdf"], (X, 1.3), (0, 1))
add("wrapcauchy", ["logpdf", "pdf"], (U(0.1, 6.2), 0.4), (0, 1))
add("truncnorm", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], (X * 0.5, -1.5, 1.2), (0, 1, 2))
add("truncnorm", ["logpdf", "cdf", "sf"], (U(8.5, 9.5), 8.0, 10.0), (0,))  # a far tail
add("bernoulli", ["logpmf", "pmf"], (np.array([0.0, 1.0, 1.0, 0.0, 2.0]), PROB), ())
add("bernoulli", ["logpmf", "pmf"], (np.array([0.0, 1.0, 1.0, 0.0, 1.0]), PROB), (1,))
add("bernoulli", ["cdf"], (np.array([-0.5, 0.0, 0.5, 1.0, 1.5]), PROB), (1,))
add("bernoulli", ["ppf"], (PROB[::-1], PROB), ())
add("binom", ["logpmf", "pmf"], (K, 6.0, PROB), (2,))
add("betabinom", ["logpmf", "pmf"], (K, 6.0, 1.5, 2.5), (2, 3))
add("geom", ["logpmf", "pmf"], (K + 1, PROB), (1,))
add("nbinom", ["logpmf", "pmf"], (K, 3.5, PROB), (1, 2))
add("poisson", ["logpmf", "pmf"], (K, 2.5), (1,))
add("poisson", ["cdf"], (K, 2.5), (1,), order=1)
add("poisson", ["entropy"], (np.array([0.5, 3.0, 20.0, 150.0, 1e4]),), (0,))

IDS = [f"{d}.{f}[{i}]" for i, (d, f, *_) in enumerate(CASES)]


def _poisson_entropy(mu):
    # scipy.stats.poisson.entropy loses accuracy for large mu (6.0216 at 1e4): sum -p log p directly.
    out = []
    for m in np.atleast_1d(mu):
        k = np.arange(0, int(m + 40 * np.sqrt(m) + 100))
        out.append(np.sum(ss.entr(sst.poisson.pmf(k, m))))
    return np.array(out)


# JAX's norm.ppf and norm.isf end in jnp.asarray(..., float): the default float dtype whatever the
# arguments' (float64 in this module's 64-bit mode; the other functions keep float32).
_DEFAULT_FLOAT_RESULTS = {("norm", "ppf"), ("norm", "isf")}


def _ref(dist, fn):
    if (dist, fn) == ("poisson", "entropy"):
        return _poisson_entropy
    return getattr(getattr(sst, dist), fn)


@pytest.mark.parametrize("dist, fn, args, diff, kw", CASES, ids=IDS)
def test_values(dist, fn, args, diff, kw):
    ours = getattr(getattr(stats, dist), fn)
    want = _ref(dist, fn)(*args)
    np.testing.assert_allclose(np.asarray(ours(*args)), want, rtol=1e-10, atol=1e-13)
    got32 = ours(*[np.asarray(a, np.float32) for a in args])
    want32 = np.float64 if (dist, fn) in _DEFAULT_FLOAT_RESULTS else np.float32
    assert got32.dtype == want32, f"{dist}.{fn}: float32 arguments gave {got32.dtype}"
    np.testing.assert_allclose(np.asarray(got32), want, rtol=2e-4, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("dist, fn, args, diff, kw", CASES, ids=IDS)
def test_jit_vmap_and_derivatives(dist, fn, args, diff, kw):
    ours = getattr(getattr(stats, dist), fn)
    eager = np.asarray(ours(*args))
    np.testing.assert_allclose(np.asarray(funcgrad.jit(ours)(*args)), eager, rtol=1e-12, atol=1e-14)
    axes = tuple(0 if np.ndim(a) else None for a in args)
    batched = funcgrad.vmap(ours, in_axes=axes)(*args)
    lanes = [ours(*[a[i] if np.ndim(a) else a for a in args]) for i in range(len(args[0]))]
    np.testing.assert_allclose(np.asarray(batched), np.stack([np.asarray(v) for v in lanes]), rtol=1e-12)
    if diff:

        def f(*d):
            full = [np.broadcast_to(a, args[0].shape).copy() for a in args]
            for i, v in zip(diff, d):
                full[i] = v
            return ours(*full)

        primals = tuple(np.broadcast_to(args[i], args[0].shape).copy() for i in diff)
        check_grads(f, primals, order=kw.get("order", 2), rtol=2e-5, atol=1e-6)


def test_expon_logcdf_near_loc_keeps_float32_digits():
    # log(-expm1(-y)), not log1p(-exp(-y)): 2e-6 relative was lost at y = 0.007 (JAX's scipy_stats_test)
    x = np.array([1e-5, 0.001, 0.0065, 0.5], np.float32)
    got = np.asarray(stats.expon.logcdf(x))
    np.testing.assert_allclose(got, sst.expon.logcdf(x.astype(np.float64)), rtol=3e-7)


@pytest.mark.parametrize("fn", ["ppf", "isf"])
def test_norm_quantiles_in_the_default_float_dtype(fn):
    # jax.scipy.stats.norm.ppf ends in jnp.asarray(..., float): float32 arguments give float64 in
    # 64-bit mode (JAX's scipy_stats_test under JAX_ENABLE_X64); q goes to ndtri unpromoted, so a
    # float16 q is ndtri's TypeError, as jax's
    q = np.array([0.1, 0.3, 0.8], np.float32)
    want = getattr(sst.norm, fn)(q.astype(np.float64), 1.0, 2.0)
    for x64, dtype in ((True, np.float64), (False, np.float32)):
        with funcgrad.enable_x64(x64):
            got = getattr(stats.norm, fn)(q, np.float32(1), np.float32(2))
            assert got.dtype == dtype
            np.testing.assert_allclose(got, want, rtol=1e-6)
            with pytest.raises(TypeError, match="float16 is not supported"):
                getattr(stats.norm, fn)(q.astype(np.float16), np.float32(1), np.float32(2))


def test_every_distribution_is_a_module():
    for name in stats.__all__:
        if name in ("gaussian_kde", "mode", "rankdata", "sem"):
            continue
        module = importlib.import_module(f"funcgrad.scipy.stats.{name}")
        assert module is getattr(stats, name)
        assert dir(module) == sorted(module.__all__)


def test_multivariate_normal():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + 3 * np.eye(3)
    mean = rng.normal(size=3)
    x = rng.normal(size=(4, 3))
    want = sst.multivariate_normal.logpdf(x, mean, cov)
    np.testing.assert_allclose(np.asarray(stats.multivariate_normal.logpdf(x, mean, cov)), want, rtol=1e-12)
    np.testing.assert_allclose(
        np.asarray(stats.multivariate_normal.pdf(x, mean, cov)), np.exp(want), rtol=1e-12
    )
    np.testing.assert_allclose(
        np.asarray(stats.multivariate_normal.logpdf(x, mean, 2.0)),
        sst.multivariate_normal.logpdf(x, mean, 2.0),
    )
    np.testing.assert_allclose(
        float(stats.multivariate_normal.logpdf(0.3, 0.1, 2.0)), sst.norm.logpdf(0.3, 0.1, np.sqrt(2))
    )
    check_grads(
        lambda x, m, c: stats.multivariate_normal.logpdf(x, m, c @ c.T + 3 * np.eye(3)), (x, mean, a), order=2
    )
    np.testing.assert_allclose(np.asarray(funcgrad.jit(stats.multivariate_normal.logpdf)(x, mean, cov)), want)
    with pytest.raises(NotImplementedError, match="allow_singular"):
        stats.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)
    with pytest.raises(ValueError, match="cov of shape"):
        stats.multivariate_normal.logpdf(x, mean, np.eye(2))


def test_dirichlet_and_multinomial():
    alpha = np.array([1.5, 2.0, 3.0])
    x = np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])
    np.testing.assert_allclose(np.asarray(stats.dirichlet.logpdf(x, alpha)), sst.dirichlet.logpdf(x, alpha))
    np.testing.assert_allclose(np.asarray(stats.dirichlet.pdf(x[:2], alpha)), sst.dirichlet.pdf(x, alpha))
    check_grads(lambda a: stats.dirichlet.logpdf(x, a), (alpha,), order=2)
    counts, p = np.array([[1, 2, 3], [0, 6, 0]]), np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(
        np.asarray(stats.multinomial.logpmf(counts, 6, p)), sst.multinomial.logpmf(counts, 6, p)
    )
    np.testing.assert_allclose(
        np.asarray(stats.multinomial.pmf(counts, 6, p)), sst.multinomial.pmf(counts, 6, p)
    )
    check_grads(lambda p: stats.multinomial.logpmf(counts, 6, p), (p,), order=2)
    with pytest.raises(ValueError, match="integers"):
        stats.multinomial.logpmf(counts.astype(float), 6, p)


def test_mode_rankdata_sem():
    a = np.array([[3, 1, 2, 2], [1, 1, 5, 5], [4, 4, 4, 2]])
    for axis in (0, 1, None):
        ours, ref = stats.mode(a, axis=axis), sst.mode(a, axis=axis)
        np.testing.assert_array_equal(np.asarray(ours.mode), ref.mode)
        np.testing.assert_array_equal(np.asarray(ours.count), ref.count)
    assert stats.mode(a, axis=1, keepdims=True).mode.shape == (3, 1)
    v = np.array([10.0, 20.0, 20.0, 5.0, 7.0, 7.0, 7.0])
    for method in ("average", "min", "max", "dense", "ordinal"):
        np.testing.assert_array_equal(np.asarray(stats.rankdata(v, method)), sst.rankdata(v, method))
    np.testing.assert_array_equal(np.asarray(stats.rankdata(a, axis=1)), sst.rankdata(a, axis=1))
    assert np.isnan(np.asarray(stats.rankdata(np.array([1.0, np.nan])))).all()
    empty = np.zeros((0, 2, 3), np.float32)  # an empty axis: empty ranks (it raised; JAX's test)
    assert stats.rankdata(empty, "min", axis=0).shape == sst.rankdata(empty, "min", axis=0).shape
    x = np.random.default_rng(0).normal(size=(5, 3))
    np.testing.assert_allclose(np.asarray(stats.sem(x)), sst.sem(x))
    np.testing.assert_allclose(np.asarray(stats.sem(x, axis=1, ddof=0)), sst.sem(x, axis=1, ddof=0))
    x[0, 0] = np.nan
    np.testing.assert_allclose(np.asarray(stats.sem(x, nan_policy="omit")), sst.sem(x, nan_policy="omit"))
    check_grads(lambda x: stats.sem(x), (np.random.default_rng(1).normal(size=6),), order=2)
    with pytest.raises(NotImplementedError, match="nan_policy"):  # (JAX's)
        stats.rankdata(v, nan_policy="omit")


@pytest.mark.slow
def test_gaussian_kde():
    rng = np.random.default_rng(0)
    data = rng.normal(size=(2, 30))
    pts = rng.normal(size=(2, 7))
    w = rng.uniform(0.5, 2.0, 30)
    for kwargs in ({}, {"bw_method": "silverman"}, {"bw_method": 0.4}, {"weights": w}):
        ours, ref = stats.gaussian_kde(data, **kwargs), sst.gaussian_kde(data, **kwargs)
        np.testing.assert_allclose(np.asarray(ours(pts)), ref(pts), rtol=1e-10)
        np.testing.assert_allclose(np.asarray(ours.logpdf(pts)), ref.logpdf(pts), rtol=1e-10)
        np.testing.assert_allclose(np.asarray(ours.covariance), ref.covariance, rtol=1e-12)
    kde, ref = stats.gaussian_kde(data), sst.gaussian_kde(data)
    mean, cov = np.array([0.1, -0.2]), np.array([[1.0, 0.2], [0.2, 0.5]])
    np.testing.assert_allclose(
        float(kde.integrate_gaussian(mean, cov)), ref.integrate_gaussian(mean, cov), rtol=1e-10
    )
    other, ref_other = stats.gaussian_kde(data[:, :10] + 1), sst.gaussian_kde(data[:, :10] + 1)
    np.testing.assert_allclose(float(kde.integrate_kde(other)), ref.integrate_kde(ref_other), rtol=1e-10)
    one, ref_one = stats.gaussian_kde(data[0]), sst.gaussian_kde(data[0])
    np.testing.assert_allclose(
        float(one.integrate_box_1d(-0.5, 1.0)), ref_one.integrate_box_1d(-0.5, 1.0), rtol=1e-10
    )
    # A pytree: differentiable with respect to the data through jit.
    g = funcgrad.grad(lambda d: funcgrad.jit(lambda k: k.logpdf(pts).sum())(stats.gaussian_kde(d)))(data)
    assert g.shape == data.shape and np.isfinite(np.asarray(g)).all()
    check_grads(lambda d: stats.gaussian_kde(d).logpdf(pts), (data,), order=1)


@pytest.mark.parametrize("fn", ["pdf", "logpdf"])
def test_norm_density_weak_types_as_jax(fn):
    # JAX's formula writes its constants with lax._const: a Python number beside a weakly typed
    # scalar, an array of x's dtype otherwise, so a boolean or integer array (weak after promotion)
    # gives a strong result and a Python number a weak one (fuzzer find: funcgrad's was weak).
    jax = pytest.importorskip("jax")
    for x in (np.array([[True, False]]), np.array([1, 2], np.int32), 0.5, 3, np.float32([0.5, -2.0])):
        for args in ((), (1.5, 2.0)):
            with jax.enable_x64(True):  # (funcgrad's mode here)
                want = [
                    getattr(jax.scipy.stats.norm, fn)(x, *args),
                    jax.jit(getattr(jax.scipy.stats.norm, fn))(x, *args),
                ]
            got = [getattr(stats.norm, fn)(x, *args), funcgrad.jit(getattr(stats.norm, fn))(x, *args)]
            for g, w in zip(got, want):
                assert g.weak_type == w.weak_type, (x, args)
                if np.asarray(x).dtype.kind != "i":  # (int32: float64 here, float32 in jax; documented)
                    assert g.dtype == w.dtype
                    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


@pytest.mark.parametrize(
    "call",
    [
        lambda s, x: s.laplace.cdf(x, 0.5, 2.0),
        lambda s, x: s.gamma.sf(x, 2.0),
        lambda s, x: s.pareto.logpdf(x, 2.0),
        lambda s, x: s.pareto.cdf(x, 2.0),
        lambda s, x: s.vonmises.logpdf(0.5, x),
    ],
    ids=["laplace.cdf", "gamma.sf", "pareto.logpdf", "pareto.cdf", "vonmises.logpdf"],
)
def test_derivatives_at_the_support_edges_as_jax(call):
    # JAX's formulas as they are (the progz fuzzer's probe): laplace.cdf's derivative at its centre
    # is its lower branch's 1/2 (exponents clipped at 0 split it: 1/4), and the unselected branches'
    # NaN (below a support, at infinities) reach the derivatives as jax's do
    jax = pytest.importorskip("jax")
    jstats = pytest.importorskip("jax.scipy.stats")

    x = np.array([-2.0, -0.0, 0.0, 0.5, 1.0, 3.0, np.inf, -np.inf, np.nan], np.float32)
    got = funcgrad.jit(funcgrad.vmap(funcgrad.grad(lambda v: call(stats, v))))(x)
    want = jax.jit(jax.vmap(jax.grad(lambda v: call(jstats, v))))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, equal_nan=True)


def test_truncnorm_of_nan_is_jax_select_default():
    # JAX's logcdf is a select whose default (0) holds where no condition does: x NaN gives cdf 1,
    # logsf 0 (funcgrad computed at the interval's midpoint)
    jstats = pytest.importorskip("jax.scipy.stats")

    x = np.array([np.nan, 0.5], np.float32)
    got = funcgrad.jit(stats.truncnorm.cdf)(x, -1.0, 2.0)
    want = pytest.importorskip("jax").jit(jstats.truncnorm.cdf)(x, -1.0, 2.0)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
