"""The program table's session-18 draws (``progz.*``): where a generator written from JAX's API
reference goes and the older program tables had not.

The chain's steps (``_z_step``, mixed with ops_prog's elementwise, cast, reduction and shape steps):

- ``jax.scipy.special`` (gammaln, digamma, betaln, xlogy, xlog1py, entr, logsumexp, expit, ndtr,
  ndtri, erfcx, i0e, i1e, gammainc/gammaincc, polygamma, zeta, log_ndtr) on values that reach their
  poles and branch points;
- ``jax.scipy.stats`` distributions' logpdf/pdf/cdf/logcdf/sf/logsf/ppf/isf (and the discrete
  ones' logpmf), parameters drawn from the chain's values;
- ``jax.scipy.linalg``: expm (of non-symmetric matrices too), sqrtm, cho_solve, lu_solve,
  solve_triangular with every flag, polar (both sides), schur, eigh with ``subset_by_index``
  (``lax.linalg.eigh``), expm_frechet, hessenberg;
- ``jax.scipy.signal``'s convolve/correlate/fftconvolve in every mode, ``integrate.trapezoid``
  (``x=``, ``dx=``, ``axis=``), ``optimize.minimize`` (BFGS) on a quadratic;
- set functions with ``size=``/``fill_value=`` (unique with its index/inverse/counts, union1d,
  intersect1d with indices, setdiff1d, setxor1d), sort/argsort (``stable``, ``descending``),
  lexsort, partition, searchsorted with every ``side`` and ``method`` on sorted values with NaN and
  ties, histogram (bins as a count or edges, ``range``, ``weights``, ``density``), bincount,
  digitize (``right``, decreasing bins), interp (``left``/``right``/``period``), polyval,
  polyfit, roots, cumulative sums and products with ``dtype=`` (nan-versions and the array API's
  ``cumulative_sum``/``cumulative_prod`` with ``include_initial``), the nan-reductions (nanmean,
  nanstd/nanvar with ``ddof``, nanargmax/nanargmin, nanmedian, nanpercentile/nanquantile with every
  ``method``) on values with NaN put in, and ``jnp.fft`` with every ``norm=`` and lengths ``n``.

The wrappers (``_z_wrap``): pytrees (dicts, namedtuples, None leaves) through ``jit``, ``grad``
with ``argnums`` and ``has_aux``, ``vmap`` with dict ``in_axes`` and pytree ``out_axes``;
``stop_gradient`` of pytrees and of inputs at several places; ``custom_jvp``/``custom_vjp`` with
``nondiff_argnums``; ``hessian`` of a dict input with pytree outputs; ``jacfwd``/``jacrev`` of pytree
outputs with ``holomorphic=True``.

Long run only (as the other session tables), ``FUNCGRAD_FUZZ_ONLY=progz.``.

>>> _z_step.__name__
'_z_step'
"""

from __future__ import annotations

from hypothesis import strategies as st

# Helpers every script defines (appended to programs.HELPERS).
HELPERS = """
def _cjvp_nd(T, np, f, k):
    # f of (a, b), scaled by k, under a custom_jvp with k a nondiff argument (a Python scalar); the
    # rule scales f's tangent by k + 1 (not the derivative)
    g = T.custom_jvp(lambda k, a, b: f(a, b) * k, nondiff_argnums=(0,))

    def rule(k, primals, tangents):
        out, t = T.jvp(lambda a, b: f(a, b) * k, primals, tangents)
        return out, t if t.dtype == T.dtypes.float0 else t * (k + 1)

    g.defjvp(rule)
    return lambda a, b: g(k, a, b)


def _cvjp_nd(T, np, f, k):
    # f of (a, b) under a custom_vjp with k a nondiff argument; the backward rule scales the
    # cotangents by k (not the derivative)
    g = T.custom_vjp(lambda k, a, b: f(a, b), nondiff_argnums=(0,))

    def fwd(k, a, b):
        return f(a, b), (a, b)

    def bwd(k, res, ct):
        cts = T.vjp(f, *res)[1](ct)
        return tuple(v if v.dtype == T.dtypes.float0 else v * k for v in cts)

    g.defvjp(fwd, bwd)
    return lambda a, b: g(k, a, b)


def _nonsym3(np, x):
    # a non-symmetric well-conditioned 3x3 matrix depending smoothly on x's elements
    a = _signal(np, x, 9)
    base = np.array([[2.0, 0.5, 0.0], [0.0, 1.5, 0.3], [0.2, 0.0, 1.0]], a.dtype)
    return 0.4 * np.reshape(np.sin(a), (3, 3)) + base


def _nanned(np, x):
    # x (as a float) with NaN where it exceeds 0.5: the nan-reductions' inputs
    x = np.asarray(x)
    x = x if np.issubdtype(x.dtype, np.inexact) else x.astype(np.float32)
    return np.where(np.real(x) > 0.5, np.nan, x)
"""

_Z_SPECIAL = [
    "special.gammaln(X)",
    "special.digamma(X)",
    "special.betaln(np.abs(X) + 0.5, np.abs(Y) + 0.5)",
    "special.xlogy(X, Y)",
    "special.xlog1py(X, Y)",
    "special.entr(X)",
    "special.logsumexp(X, axis={ax}, keepdims={k})",
    "special.logsumexp(X, axis={ax}, b=Y)",
    "special.expit(X)",
    "special.ndtr(X)",
    "special.ndtri(special.expit(X))",
    "special.ndtri(X)",
    "special.erfcx(X)",
    "special.i0e(X)",
    "special.i1e(X)",
    "special.gammainc(np.abs(X) + 0.5, np.abs(Y))",
    "special.gammaincc(np.abs(X) + 0.5, np.abs(Y))",
    "special.gammainc(2.0, X)",
    "special.polygamma({n}, X)",
    "special.polygamma({n}, np.abs(X) + 0.5)",
    "special.zeta(np.abs(X) + 1.5, np.abs(Y) + 0.5)",
    "special.zeta(X, 2.0)",
    "special.log_ndtr(X)",
    "special.logit(special.expit(X))",
    "special.xlogy(X, X)",
    "special.xlog1py(X, -X)",
    "special.entr(np.abs(X))",
    "special.digamma(np.abs(X) + 1e-3)",
    "special.gammaln(-np.abs(X) - 0.5)",
]
_S = "T.scipy.stats."
_Z_STATS = [
    "norm.logpdf(X, Y, 2.0)",
    "norm.pdf(X)",
    "norm.cdf(X, 0.5, np.abs(Y) + 0.5)",
    "norm.logcdf(X)",
    "norm.sf(X)",
    "norm.logsf(X, Y)",
    "norm.ppf(special.expit(X))",
    "norm.isf(special.expit(X), 1.0, 2.0)",
    "norm.ppf(X)",
    "t.logpdf(X, np.abs(Y) + 1.0)",
    "t.pdf(X, 3.0, Y)",
    "gamma.logpdf(np.abs(X) + 0.1, np.abs(Y) + 0.5)",
    "gamma.cdf(np.abs(X), 2.0)",
    "gamma.sf(X, 1.5)",
    "gamma.logcdf(np.abs(X), 2.0, scale=0.5)",
    "beta.logpdf(special.expit(X), 2.0, np.abs(Y) + 0.5)",
    "beta.cdf(special.expit(X), 2.0, 3.0)",
    "beta.logsf(special.expit(X), 0.5, 0.5)",
    "poisson.logpmf(np.floor(np.abs(X)), np.abs(Y) + 0.5)",
    "poisson.cdf(np.floor(np.abs(X)), 2.0)",
    "poisson.pmf(X, 1.5)",
    "expon.logpdf(X)",
    "expon.cdf(X, 0.5)",
    "expon.ppf(special.expit(X))",
    "expon.logsf(X)",
    "laplace.logpdf(X, Y)",
    "laplace.cdf(X)",
    "logistic.cdf(X)",
    "logistic.ppf(special.expit(X))",
    "logistic.sf(X)",
    "logistic.isf(special.expit(X))",
    "logistic.logpdf(X, Y, 2.0)",
    "cauchy.logpdf(X, Y)",
    "cauchy.cdf(X)",
    "cauchy.ppf(special.expit(X))",
    "cauchy.logsf(X)",
    "chi2.logpdf(np.abs(X) + 0.1, 3.0)",
    "chi2.cdf(np.abs(X), np.abs(Y) + 1.0)",
    "chi2.sf(X, 2.0)",
    "truncnorm.logpdf(X, -1.0, 2.0)",
    "truncnorm.cdf(X, -1.0, 2.0)",
    "truncnorm.logsf(X, -2.0, 0.5)",
    "vonmises.logpdf(X, 2.0)",
    "gennorm.logpdf(X, 1.5)",
    "gennorm.cdf(X, 0.5)",
    "pareto.logpdf(np.abs(X) + 1.0, 2.0)",
    "pareto.ppf(special.expit(X), 3.0)",
    "uniform.logpdf(X, -1.0, 2.0)",
    "uniform.cdf(X, -1.0, 2.0)",
    "uniform.ppf(special.expit(X))",
    "gumbel_r.logcdf(X)",
    "gumbel_l.logsf(X)",
    "gumbel_r.ppf(special.expit(X))",
    "binom.logpmf(np.floor(np.abs(X)), 5, special.expit(Y))",
    "nbinom.logpmf(np.floor(np.abs(X)), 3, 0.4)",
    "geom.logpmf(np.floor(np.abs(X)) + 1, 0.3)",
    "bernoulli.logpmf(X > 0, special.expit(Y))",
    "betabinom.logpmf(np.floor(np.abs(X)), 4, 2.0, np.abs(Y) + 0.5)",
    "wrapcauchy.logpdf(X, 0.5)",
    "multivariate_normal.logpdf(_signal(np, X, 3), _signal(np, Y, 3), _matrix3(np, X))",
    "multivariate_normal.logpdf(np.reshape(_signal(np, X, 6), (2, 3)), np.zeros(3), _matrix3(np, Y))",
    "dirichlet.logpdf(special.softmax(_signal(np, X, 3)), np.array([1.5, 2.0, 0.5]))",
]
_L = "T.scipy.linalg."
_Z_LINALG = [
    "{L}expm(0.3 * _matrix3(np, X))",
    "{L}expm(_nonsym3(np, X))",
    "np.real({L}sqrtm(_matrix3(np, X)))",
    "{L}cho_solve({L}cho_factor(_matrix3(np, X), lower={b}), _signal(np, Y, 3))",
    "{L}cho_solve(({L}cholesky(_matrix3(np, X), lower={b}), {b}), np.reshape(_signal(np, Y, 6), (3, 2)))",
    "{L}lu_solve({L}lu_factor(_nonsym3(np, X)), _signal(np, Y, 3), trans={t})",
    "{L}solve_triangular(np.linalg.cholesky(_matrix3(np, X)), _signal(np, Y, 3), lower=True, trans={t}, "
    "unit_diagonal={b})",
    "{L}solve_triangular(np.triu(_nonsym3(np, X)), np.reshape(_signal(np, Y, 6), (3, 2)), trans={t})",
    "{L}polar(_nonsym3(np, X))[0]",
    "{L}polar(_nonsym3(np, X), side='left')[1]",
    "{L}polar(_matrix3(np, X))[1]",
    "np.diagonal({L}schur(_matrix3(np, X))[0])",
    "np.abs(np.diagonal({L}schur(_nonsym3(np, X))[0]))",
    "lax.linalg.eigh(_matrix3(np, X), subset_by_index=(1, 3))[1]",
    "lax.linalg.eigh(_matrix3(np, X), subset_by_index=(0, 2), sort_eigenvalues=True)[1]",
    "{L}eigh(_matrix3(np, X), eigvals_only=True)",
    "{L}eigh(_matrix3(np, X), lower={b})[0]",
    "{L}expm_frechet(0.3 * _nonsym3(np, X), _nonsym3(np, Y))[1]",
    "np.abs({L}hessenberg(_nonsym3(np, X)))",
    "{L}solve(_matrix3(np, X), _signal(np, Y, 3), assume_a='pos')",
    "{L}det(_nonsym3(np, X))",
    "{L}inv(_nonsym3(np, X))",
    "{L}lu(_nonsym3(np, X))[2]",
    "{L}qr(_nonsym3(np, X), mode='r')[0]",
]
_Z_SIGNAL = [
    "T.scipy.signal.convolve(X, Y, mode='{cm}')",
    "T.scipy.signal.correlate(X, Y, mode='{cm}')",
    "T.scipy.signal.fftconvolve(X, Y, mode='{cm}')",
    "T.scipy.signal.convolve(X, Y, mode='{cm}', method='fft')",
    "T.scipy.signal.correlate(X, Y, mode='{cm}', method='direct')",
    "T.scipy.signal.detrend(X)",
    "T.scipy.signal.convolve2d(np.atleast_2d(X), np.atleast_2d(Y), mode='{cm}')",
    "T.scipy.integrate.trapezoid(X, axis={ax})",
    "T.scipy.integrate.trapezoid(X, dx=0.5)",
    "T.scipy.integrate.trapezoid(X, x=Y)",
    "np.trapezoid(X, x=Y, axis={ax})",
    "T.scipy.optimize.minimize(lambda p: np.sum((p - _signal(np, X, 3)) ** 2 * np.arange(1.0, 4.0)) "
    "+ 0.1 * np.sum(p) ** 2, np.zeros(3, _signal(np, X, 3).dtype), method='BFGS').x",
    "T.scipy.optimize.minimize(lambda p: np.sum(np.cosh(p - _signal(np, X, 2))), "
    "np.ones(2, _signal(np, X, 2).dtype), method='BFGS').fun",
]
_Z_SET = [
    "np.unique(X, size={n}, fill_value={fv})",
    "np.unique(X, return_counts=True, size={n})[1]",
    "np.unique(X, return_index=True, size={n}, fill_value={fv})[1]",
    "np.unique(X, return_inverse=True, size={n})[1]",
    "np.unique(X, size={n}, equal_nan=False)",
    "np.union1d(X, Y, size={n}, fill_value={fv})",
    "np.intersect1d(X, Y, size={n}, fill_value={fv})",
    "np.intersect1d(X, Y, size={n}, return_indices=True)[1]",
    "np.setdiff1d(X, Y, size={n}, fill_value={fv})",
    "np.setxor1d(X, Y, size={n}, fill_value={fv})",
    "np.isin(X, Y, invert={b})",
    "np.unique(np.atleast_1d(X), axis=0, size={n})",
    "np.unique(_nanned(np, X), size={n})",
]
_Z_SORT = [
    "np.sort(X, axis={ax}, stable={b}, descending={b2})",
    "np.argsort(X, axis={ax}, stable=True, descending={b})",
    "np.sort(_nanned(np, X), axis={ax}, descending={b})",
    "np.argsort(_nanned(np, X), axis={ax})",
    "np.lexsort((X, np.broadcast_to(Y, np.shape(X))))",
    "np.lexsort((X, -X), axis=0)",
    "np.partition(X, {kth}, axis=-1)",
    "np.argpartition(X, {kth})",
    "np.sort_complex(X)",
    "np.searchsorted(np.sort(np.ravel(X)), Y, side='{side}', method='{meth}')",
    "np.searchsorted(np.sort(np.ravel(_nanned(np, X))), Y, side='{side}', method='{meth}')",
    "np.searchsorted(np.array([0.0, 0.0, 1.0, np.nan]), X, side='{side}', method='{meth}')",
    "np.searchsorted(np.sort(np.ravel(X)), X, side='{side}', sorter=None)",
]
_Z_HIST = [
    "np.histogram(X, bins={nb}, range=(-2.0, 2.0))[0]",
    "np.histogram(X, bins=np.array([-1.0, 0.0, 0.5, 2.0]), density={b})[0]",
    "np.histogram(X, bins={nb})[1]",
    "np.histogram(X, bins={nb}, weights=X * 2)[0]",
    "np.histogram(X, bins=2, density=True)[0]",
    "np.histogram_bin_edges(X, bins={nb})",
    "np.bincount(np.clip(np.ravel(X).astype(np.int32), 0, 5), length=6)",
    "np.bincount(np.abs(np.ravel(X)).astype(np.int32) % 4, weights=np.ravel(X), length=4)",
    "np.digitize(X, np.array([-1.0, 0.0, 1.0]), right={b})",
    "np.digitize(X, np.array([2.0, 0.5, -1.0]), right={b})",
    "np.interp(X, np.array([-1.0, 0.0, 2.0]), np.array([1.0, -1.0, 3.0]), left={lr}, right={lr})",
    "np.interp(X, np.array([-1.0, 0.0, 0.0, 2.0]), _signal(np, Y, 4))",
    "np.interp(X, np.array([0.0, 1.0, 2.5]), np.array([1.0, -1.0, 0.5]), period=3.0)",
    "np.polyval(_signal(np, Y, 3), X)",
    "np.polyval(np.array([1.0, -2.0, 0.5]), X)",
    "np.polyfit(np.arange(5.0), _signal(np, X, 5), {deg})",
    "np.polyfit(np.arange(4.0), _signal(np, X, 4), 1, w=np.array([1.0, 2.0, 1.0, 0.5]))",
    "np.roots(_signal(np, X, 4) + np.array([1.0, 0.0, 0.0, 0.0]))",
    "np.roots(_signal(np, X, 3) * np.array([0.0, 1.0, 1.0]), strip_zeros=False)",
    "np.poly(_signal(np, X, 3))",
    "np.polyder(_signal(np, X, 4), {deg})",
    "np.polyint(_signal(np, X, 3))",
    "np.polymul(_signal(np, X, 2), _signal(np, Y, 3))",
]
_Z_CUM = [
    "np.cumsum(X, axis={ax}, dtype=np.{d})",
    "np.cumprod(X, axis={ax}, dtype=np.{d})",
    "np.nancumsum(_nanned(np, X), axis={ax}, dtype=np.{d})",
    "np.nancumprod(_nanned(np, X), axis={ax})",
    "np.nancumsum(X, axis={ax})",
    "np.cumulative_sum(np.ravel(X), include_initial={b}, dtype=np.{d})",
    "np.cumulative_prod(X, axis=-1, include_initial={b})",
    "np.cumulative_sum(X, axis=0, dtype=np.{d})",
]
_Z_NAN = [
    "np.nanmean(_nanned(np, X), axis={ax}, keepdims={k})",
    "np.nanstd(_nanned(np, X), axis={ax}, ddof={dd})",
    "np.nanvar(_nanned(np, X), axis={ax}, ddof={dd}, keepdims={k})",
    "np.nanargmax(_nanned(np, X), axis={ax})",
    "np.nanargmin(_nanned(np, X), axis={ax}, keepdims={k})",
    "np.nanmedian(_nanned(np, X), axis={ax}, keepdims={k})",
    "np.nanpercentile(_nanned(np, X), {q}, axis={ax}, method='{qm}')",
    "np.nanquantile(_nanned(np, X), np.array([0.25, 0.5, 1.0]), axis={ax}, method='{qm}')",
    "np.percentile(X, {q}, axis={ax}, method='{qm}', keepdims={k})",
    "np.quantile(X, 0.3, method='{qm}')",
    "np.nanmin(_nanned(np, X), axis={ax})",
    "np.nanprod(_nanned(np, X), axis={ax})",
    "np.nanmean(X, axis={ax})",
    "np.nanstd(X)",
    "np.nanmedian(X)",
    "np.median(_nanned(np, X), axis={ax})",
]
_Z_FFT = [
    "np.fft.fft(X, norm={nm})",
    "np.fft.ifft(X, n={n}, norm={nm})",
    "np.fft.rfft(X, n={n}, norm={nm})",
    "np.fft.irfft(X, n={n}, norm={nm})",
    "np.fft.fft2(np.atleast_2d(X), norm={nm})",
    "np.fft.rfftn(np.atleast_2d(X), norm={nm})",
    "np.fft.irfftn(np.atleast_2d(X), norm={nm})",
    "np.fft.hfft(X, n={n}, norm={nm})",
    "np.fft.ihfft(X, norm={nm})",
    "np.fft.fftn(X, axes=(0,), norm={nm})",
    "np.fft.ifft2(np.atleast_2d(X), s=(2, {n}), norm={nm})",
    "np.fft.fftfreq({n}, 0.5)",
    "np.fft.rfftfreq({n})",
    "np.fft.ifftshift(np.fft.fft(X, norm={nm}))",
]

_POOLS = {"zs": _Z_SPECIAL, "zst": _Z_STATS, "zl": _Z_LINALG, "zg": _Z_SIGNAL, "zu": _Z_SET, "zo": _Z_SORT,
          "zh": _Z_HIST, "zc": _Z_CUM, "zn": _Z_NAN, "zf": _Z_FFT}  # fmt: skip
_CUM_DTYPES = ["int32", "float32", "float64", "int8", "uint8", "float16", "complex64", "bool", "int64"]


def _z_step(draw, names, scalars):
    """One step of a progz chain over earlier values ``names`` (or a NumPy/Python scalar for Y)."""
    pool = draw(st.sampled_from(list(_POOLS)))
    x = draw(st.sampled_from(names[-2:] + names))
    y = draw(st.sampled_from(names[-2:] + names + scalars[:6]))
    step = draw(st.sampled_from(_POOLS[pool]))
    if pool == "zst":
        step = _S + step
    params = dict(
        ax=draw(st.sampled_from(["-1", "0", "None"])),
        k=draw(st.booleans()),
        b=draw(st.booleans()),
        b2=draw(st.booleans()),
        n=draw(st.sampled_from([1, 2, 3, 4, 5])),
        fv=draw(st.sampled_from(["None", "0", "-1"])),
        t=draw(st.sampled_from([0, 1, 2, "'T'", "'C'"])),
        cm=draw(st.sampled_from(["full", "same", "valid"])),
        kth=draw(st.sampled_from([0, 1, -1])),
        side=draw(st.sampled_from(["left", "right"])),
        meth=draw(st.sampled_from(["scan", "scan_unrolled", "sort", "compare_all"])),
        nb=draw(st.sampled_from([1, 3, 4])),
        lr=draw(st.sampled_from(["None", "-5.0", "np.nan"])),
        deg=draw(st.sampled_from([0, 1, 2])),
        d=draw(st.sampled_from(_CUM_DTYPES)),
        dd=draw(st.sampled_from([0, 1, 2])),
        q=draw(st.sampled_from(["50", "0", "100", "np.array([10.0, 90.0])", "37.5"])),
        qm=draw(st.sampled_from(["linear", "lower", "higher", "nearest", "midpoint"])),
        nm=draw(st.sampled_from(["None", "'backward'", "'ortho'", "'forward'"])),
        L=_L,
    )
    step = step.replace("{L}", _L)
    return step.format(**params).replace("X", x).replace("Y", y)


_Z_WRAPS = [
    "jit_tree",
    "grad_tree",
    "vmap_dict",
    "vmap_out_tree",
    "sg_input",
    "sg_tree",
    "cjvp_nd",
    "cvjp_nd",
    "hessian_tree",
    "jac_holo_tree",
    "jit",
    "vmap",
    "grad",
]


def _z_wrap(draw, w, f, s):
    """One session-18 transformation of a function text ``f`` of (a, b) (``s``: f's scalar)."""
    n = draw(st.sampled_from([1, 2, 3]))
    if w == "jit_tree":  # a dict and a namedtuple in, a dict with a None leaf and a weak int out
        return (
            f"(lambda a, b: T.jit(lambda d, p: {{'o': {f}(d['x'], p.b), 'n': None, 'k': p.a}})"
            f"({{'x': a, 'z': None}}, _Pair(1, b))['o'])"
        )
    if w == "grad_tree":  # argnums over a dict and a namedtuple, has_aux a pytree
        argnums = draw(st.sampled_from(["0", "(0, 1)", "(1,)"]))
        return (
            f"(lambda a, b: _pack(T, np, T.grad(lambda d, p: (_scalar(T, np, {f}(d['x'], p.a)) * p.b, "
            f"{{'aux': {f}(d['x'], p.a), 'n': None}}), argnums={argnums}, has_aux=True)"
            f"({{'x': a, 'n': None}}, _Pair(b, 2.0))))"
        )
    if w == "vmap_dict":  # in_axes a dict, out_axes a dict with a None leaf
        ia, ib = draw(st.sampled_from(["0", "-1", "None"])), draw(st.sampled_from(["0", "None"]))
        ia = "0" if ia == ib == "None" else ia
        oa = draw(st.sampled_from(["0", "-1", "1"]))
        return (
            f"(lambda a, b: T.vmap(lambda d: {{'o': {f}(d['x'], d['y']), 'z': None}}, "
            f"in_axes=({{'x': {ia}, 'y': {ib}}},), out_axes={{'o': {oa}, 'z': None}})"
            f"({{'x': _batch(np, a, {ia}, {n}), 'y': _batch(np, b, {ib}, {n})}})['o'])"
        )
    if w == "vmap_out_tree":  # a tuple output with per-leaf out_axes, one unbatched (None)
        oa = draw(st.sampled_from(["0", "-1"]))
        return (
            f"(lambda a, b: _pack(T, np, T.vmap(lambda a, b: ({f}(a, b), b), in_axes=(0, None), "
            f"out_axes=({oa}, None))(_batch(np, a, 0, {n}), b)))"
        )
    if w == "sg_input":  # stop_gradient of an input in one use of it, not the other
        return f"(lambda a, b: T.grad(lambda a: _scalar(T, np, {f}(lax.stop_gradient(a), b)) * {s})(a))"
    if w == "sg_tree":  # stop_gradient of a pytree (a dict with a None leaf), then used again
        return (
            f"(lambda a, b: T.grad(lambda a: _scalar(T, np, "
            f"lax.stop_gradient({{'x': {f}(a, b), 'y': (a, None)}})['x'] * {f}(a, b)) + {s})(a))"
        )
    if w in ("cjvp_nd", "cvjp_nd"):
        k = draw(st.sampled_from(["2", "0.5", "-1.0", "3"]))
        return f"_{w}(T, np, {f}, {k})"
    if w == "hessian_tree":  # a dict input, a pytree output (a tuple and a None leaf)
        return (
            f"(lambda a, b: _pack(T, np, T.hessian(lambda d: {{'s': _scalar(T, np, {f}(d['a'], d['b'])), "
            f"'n': None, 't': (_scalar(T, np, {f}(d['a'], d['b'])) * 2,)}})({{'a': a, 'b': b}})))"
        )
    # jac_holo_tree: jacfwd/jacrev with holomorphic=True of a pytree output, over two inputs
    j, argnums = draw(st.sampled_from(["jacfwd", "jacrev"])), draw(st.sampled_from(["(0, 1)", "1", "0"]))
    return (
        f"(lambda a, b: _pack(T, np, T.{j}(lambda z, w: {{'o': np.asarray({f}(z, w), np.complex64), "
        f"'p': (z * w, None)}}, argnums={argnums}, holomorphic=True)(np.asarray(a, np.complex64), "
        f"np.asarray(b, np.complex64))))"
    )
