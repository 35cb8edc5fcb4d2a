"""funcgrad.scipy against jax.scipy, in-process, for the argument types a JAX program passes: the
result's dtype, weak type and shape, the exception type where jax refuses (a list where JAX wants an
array), and the values.

One table of ``(name, args)``; each row is called with its first argument replaced by a boolean,
uint8, 0-d int32 and float16 array, a Python float (weak) and a list, then with a list as its last
argument and with a (2, 1) first argument against a (2,) last one (broadcasting). Types and errors
come from ``eval_shape`` on both sides with the arguments closed over (nothing is compiled; a list
stays a list, as in an eager call); values from one eager call per distribution (a few in the fast
tier, the others in the slow one; each distribution's values are also test_scipy_stats' against
SciPy). Run in 32-bit mode, JAX's default and what a JAX program under ``funcgrad.as_jax`` gets.
NOTE: [stats formulas as JAX's] in funcgrad/scipy/stats/_util.py says why the weak types follow.
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.scipy as fsp

jax = pytest.importorskip("jax")
import jax.scipy as jsp  # noqa: E402

RUNS_IN_X32 = True
pytestmark = pytest.mark.usefixtures("x32")

TABLE = []
VALUES = set()  # (the rows whose values test_values_as_jax compares)


def add(prefix, names, args, values=True):
    if values:  # (the first function of each group: one eager computation per distribution)
        VALUES.add(prefix + names.split()[0])
    for n in names.split():
        TABLE.append((prefix + n, args))


# scipy.stats: every distribution's every function
add("stats.norm.", "logpdf pdf cdf logcdf sf logsf", (0.5, 0.3, 1.7))
add("stats.norm.", "ppf isf", (0.3, 0.3, 1.7))
add("stats.uniform.", "logpdf pdf cdf ppf", (0.5, 0.0, 2.0))
add("stats.expon.", "logpdf pdf cdf logcdf sf logsf ppf", (0.5, 0.1, 1.5))
add("stats.laplace.", "logpdf pdf cdf", (0.5, 0.1, 1.5))
add("stats.logistic.", "logpdf pdf cdf sf", (0.5, 0.1, 1.5))
add("stats.logistic.", "ppf isf", (0.3, 0.1, 1.5))
add("stats.cauchy.", "logpdf pdf cdf logcdf sf logsf", (0.5, 0.1, 1.5))
add("stats.cauchy.", "ppf isf", (0.3, 0.1, 1.5))
add("stats.gumbel_l.", "logpdf pdf cdf logcdf sf logsf", (0.5, 0.1, 1.5))
add("stats.gumbel_l.", "ppf", (0.3, 0.1, 1.5))
add("stats.gumbel_r.", "logpdf pdf cdf logcdf sf logsf", (0.5, 0.1, 1.5))
add("stats.gumbel_r.", "ppf", (0.3, 0.1, 1.5))
add("stats.t.", "logpdf pdf", (0.5, 3.0, 0.1, 1.5))
add("stats.gamma.", "logpdf pdf cdf logcdf sf logsf", (1.5, 2.0, 0.1, 1.5))
add("stats.chi2.", "logpdf pdf cdf logcdf sf logsf", (1.5, 3.0, 0.1, 1.5))
add("stats.beta.", "logpdf pdf cdf logcdf sf logsf", (0.4, 2.0, 3.0, 0.0, 1.0))
add("stats.pareto.", "logpdf pdf cdf logcdf sf logsf", (2.5, 2.0, 0.0, 1.0))
add("stats.pareto.", "ppf", (0.3, 2.0, 0.0, 1.0))
add("stats.gennorm.", "logpdf pdf cdf", (0.5, 1.5))
add("stats.vonmises.", "logpdf pdf", (0.5, 1.5))
add("stats.wrapcauchy.", "logpdf pdf", (0.5, 0.4))
add("stats.truncnorm.", "logpdf pdf cdf logcdf sf logsf", (0.5, -1.0, 2.0, 0.1, 1.2))
add("stats.bernoulli.", "logpmf pmf", (1.0, 0.3, 0.0))
add("stats.bernoulli.", "cdf ppf", (0.5, 0.3))
add("stats.binom.", "logpmf pmf", (2.0, 5.0, 0.3, 0.0))
add("stats.nbinom.", "logpmf pmf", (2.0, 5.0, 0.3, 0.0))
add("stats.geom.", "logpmf pmf", (2.0, 0.3, 0.0))
add("stats.poisson.", "logpmf pmf cdf", (2.0, 1.5, 0.0))
add("stats.poisson.", "entropy", (1.5, 0.0))
add("stats.betabinom.", "logpmf pmf", (2.0, 5.0, 2.0, 3.0, 0.0))
add("stats.multivariate_normal.", "logpdf pdf", (0.5, 0.1, 1.5))
add("stats.dirichlet.", "logpdf pdf", (np.float32([0.2, 0.3, 0.5]), np.float32([1.0, 2.0, 3.0])))
add("stats.", "sem", (np.float32([0.5, 1.5, 2.0]),))
add("stats.", "rankdata", (np.float32([0.5, 1.5, 0.5]),))
add("stats.", "mode", (np.float32([0.5, 1.5, 0.5]),))

# scipy.special (values: test_scipy_special's, against SciPy)
add("special.", "expit logit ndtr log_ndtr ndtri erf erfc erfinv erfcx entr dawsn", (0.3,), values=False)
add("special.", "gammaln digamma gamma loggamma gammasgn i0 i0e i1 i1e spence", (1.3,), values=False)
add("special.", "exp1 expi", (1.3,), values=False)
add(
    "special.",
    "xlogy xlog1py rel_entr kl_div beta betaln gammainc gammaincc boxcox boxcox1p",
    (0.5, 1.5),
    values=False,
)
add("special.", "poch owens_t", (0.5, 1.5), values=False)
add("special.", "betainc", (0.5, 1.5, 0.3), values=False)
# (the series JAX jits: their values are test_scipy_special's, at a compile each)
add("special.", "hyp1f1", (0.5, 1.5, 0.3), values=False)
add("special.", "zeta", (2.5, 1.5), values=False)
add("special.", "polygamma", (1, 1.5), values=False)
add("special.", "expn", (1, 1.5), values=False)
add("special.", "multigammaln", (2.5, 2), values=False)
add("special.", "logsumexp softmax log_softmax", (np.float32([0.5, 1.5, 2.0]),), values=False)

add("special.", "wofz", (np.complex64([0.5 + 0.5j, 1.0]),), values=False)

# the other modules: lists refused as JAX's, each in its way (types and errors; values are each
# module's own tests')
_M = np.float32([[2.0, 0.5, 0.1], [0.3, 3.0, 0.2], [0.1, 0.4, 4.0]])
_V = np.float32([1.0, 2.0, 0.5, 3.0])
add("linalg.", "det inv expm sqrtm schur block_diag", (_M,), values=False)
add("linalg.", "solve", (_M, _M[0]), values=False)
add("linalg.", "toeplitz circulant companion fiedler", (_V,), values=False)
add("linalg.", "leslie", (_V, _V[:3]), values=False)
add("signal.", "convolve correlate fftconvolve", (_V, _V[:2]), values=False)
add("signal.", "convolve2d correlate2d", (_M, _M[:2, :2]), values=False)
add("signal.", "welch", (_V,), values=False)
add("signal.", "csd", (_V, _V), values=False)
add("fft.", "dct idct dctn idctn", (_M,), values=False)
add("cluster.vq.", "vq", (_M, _M[:2]), values=False)


def resolve(root, name):
    for part in name.split("."):
        root = getattr(root, part)
    return root


def _outcome(call):
    try:
        return call()
    except Exception as e:  # (compared by type with the other side's)
        return e


def _variants(args):
    """(label, args) pairs: the first argument of each type, then a list last, then broadcasting."""
    x0 = args[0]
    if np.ndim(x0) == 0:
        xs = [
            ("bool", np.array([True, False])),
            ("uint8", np.array([1, 2], np.uint8)),
            ("int32 0-d", np.array(1, np.int32)),
            ("float16", np.array([x0, x0 / 2], np.float16)),
            ("Python float", float(x0)),
            ("list", [float(x0), float(x0)]),
        ]
    else:
        xs = [("array", x0), ("bool array", np.asarray(x0) > 1), ("list", np.asarray(x0).tolist())]
    out = [(label, (x, *args[1:])) for label, x in xs]
    if len(args) > 1 and np.ndim(args[-1]) == 0:
        out.append(("list last", (*args[:-1], [args[-1]])))
        col = np.array([[args[0]], [args[0] / 2]], np.float32)
        out.append(("broadcast", (col, *args[1:-1], np.float32([args[-1], args[-1] * 1.5]))))
    return out


@pytest.mark.parametrize("name,args", TABLE, ids=[n for n, _ in TABLE])
def test_types_and_errors_as_jax(name, args):
    jf, ff = resolve(jsp, name), resolve(fsp, name)
    with jax.enable_x64(False):
        for label, a in _variants(args):
            # (the arguments closed over, not passed: a list stays a list of Python numbers, as
            # in an eager call, and nothing is computed or compiled)
            want = _outcome(lambda a=a: jax.eval_shape(lambda: jf(*a)))
            got = _outcome(lambda a=a: funcgrad.eval_shape(lambda: ff(*a)))
            if isinstance(want, Exception) or isinstance(got, Exception):
                # (by name: funcgrad's own ConcretizationTypeError is not jax's class)
                assert type(got).__name__ == type(want).__name__, (label, want, got)
                continue
            w_leaves, g_leaves = jax.tree.leaves(want), jax.tree.leaves(got)
            assert len(w_leaves) == len(g_leaves), label
            for w, g in zip(w_leaves, g_leaves):
                assert (g.shape, g.dtype, g.weak_type) == (w.shape, w.dtype, w.weak_type), label


def _value_args(args):
    # float32 arguments, the first one an array
    a = [np.float32(v) if isinstance(v, float) else v for v in args]
    if isinstance(args[0], float):
        a[0] = np.float32([args[0], args[0] / 2])
    return a


# (values: a few distributions whose formulas changed most, eagerly on both sides -- each row costs
# its compiles; every distribution's values are test_scipy_stats' against SciPy, and the rest run
# in the slow tier)
_FEW = [
    "stats.beta.logpdf",
    "stats.binom.logpmf",
    "stats.cauchy.logpdf",
    "stats.gumbel_r.logpdf",
    "stats.t.logpdf",
]


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[] if n in _FEW else [pytest.mark.slow]) for n in sorted(VALUES)]
)
def test_values_as_jax(name):
    args = _value_args(dict(TABLE)[name])
    with jax.enable_x64(False):
        want = resolve(jsp, name)(*args)
    got = resolve(fsp, name)(*args)
    for w, g in zip(jax.tree.leaves(want), jax.tree.leaves(got)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-6)


def test_sph_harm_y_lists_as_jax():
    # JAX's sph_harm_y converts a list n and meets a list m, theta or phi in its formula, each a
    # TypeError (in words of the operation it reaches first)
    args = [np.int32([1]), np.int32([1]), np.float32([0.3]), np.float32([0.2])]
    for i in range(4):
        a = [v.tolist() if j == i else v for j, v in enumerate(args)]
        want = _outcome(lambda a=a: jsp.special.sph_harm_y(*a))
        got = _outcome(lambda a=a: fsp.special.sph_harm_y(*a))
        assert isinstance(got, Exception) == isinstance(want, Exception), (i, want, got)
        if isinstance(want, Exception):
            assert (type(got), str(got)) == (type(want), str(want))
    # (session 22's fuzzer) a negative largest degree: JAX's empty table of degrees, an IndexError
    with pytest.raises(IndexError, match="out of bounds"):
        fsp.special.sph_harm_y(np.int32([-1]), np.int32([-1]), np.float32([0.5]), np.float32([0.5]))
