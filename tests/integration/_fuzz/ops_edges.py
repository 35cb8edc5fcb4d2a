"""The fourth part of the fuzzer's surface table: where session 8 found the generator still blind.

``jax.scipy.stats`` (log-densities, distribution functions and quantiles of the continuous and
discrete families, evaluated at the inputs, so their edges -- 0, negative values, the ends of a
support, NaN/inf -- are drawn, and differentiated by the stack); the ``jax.scipy.special`` functions
the older tables lacked (incomplete gamma and beta functions, exponential integrals, ``zeta``,
``hyp1f1``, ``spence``, ``erfcx``, ``dawsn``, ``sici``, ``fresnel``, ``owens_t``, ``kl_div``, ...);
``lax``'s cumulative reductions with ``reverse=``; reductions with ``where=``, ``initial=`` and
``keepdims`` together; ``logsumexp`` with ``b=`` and ``return_sign=``; softmax with ``where=``; and
transformations inside a program: ``linearize``, ``linear_transpose``, ``vmap`` with ``in_axes``/
``out_axes`` of 1, ``vmap(grad(jit(scan)))``, ``jacrev`` of a fixed-trip ``fori_loop`` and of a
``while_loop``-free ``scan``, ``lax.map`` with ``batch_size``, ``associative_scan`` in reverse, and
``checkpoint`` with ``static_argnums``; ``jax.scipy.linalg``'s expm, lu, polar and its
factorizations' solves. Long run only (as ``ops_more``): the CI budget's cases stay those it drew
before. ``T.scipy.stats`` and ``T.scipy.linalg`` are imported on both sides by the script.

>>> EDGES[0].name
'stats.norm'
"""

from __future__ import annotations

from hypothesis import strategies as st

from _fuzz.opbase import B, Op, U, _axes, _Raw, axis, keyed

_S = "T.scipy.stats"

EDGES: list[Op] = [
    # scipy.stats: continuous families (location/scale drawn), their log-densities and functions
    Op(
        "stats.norm",
        f"{_S}.norm.{{f}}({U}, loc={{loc}}, scale={{scale}})",
        kinds="bif",
        params=keyed(
            f=st.sampled_from(["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]).map(_Raw),
            loc=st.sampled_from([0.0, -1.5, 2]),
            scale=st.sampled_from([1.0, 0.5, 3]),
        ),
    ),
    Op(
        "stats.norm_ppf",
        f"{_S}.norm.{{f}}({U})",
        kinds="f",
        params=keyed(f=st.sampled_from(["ppf", "isf"]).map(_Raw)),
    ),
    Op(
        "stats.continuous",
        f"{_S}.{{d}}.{{f}}({U})",
        kinds="bif",
        params=keyed(
            d=st.sampled_from(
                ["expon", "laplace", "logistic", "cauchy", "uniform", "gumbel_l", "gumbel_r"]
            ).map(_Raw),
            f=st.sampled_from(["logpdf", "pdf", "cdf"]).map(_Raw),
        ),
    ),
    Op(
        "stats.shaped",
        f"{_S}.{{d}}.logpdf({U}, {{a}})",
        kinds="bif",
        params=keyed(
            d=st.sampled_from(["t", "gamma", "chi2", "pareto", "gennorm", "vonmises"]).map(_Raw),
            a=st.sampled_from([0.5, 1.0, 2.5, 4]),
        ),
    ),
    Op(
        "stats.shape_operand",
        f"{_S}.{{d}}.logpdf({{x}}, {U})",
        kinds="f",
        params=keyed(d=st.sampled_from(["t", "gamma", "chi2"]).map(_Raw), x=st.sampled_from([0.5, 1.5, 3.0])),
    ),
    Op(
        "stats.beta",
        f"{_S}.beta.{{f}}({U}, {{a}}, {{b}})",
        kinds="bif",
        params=keyed(
            f=st.sampled_from(["logpdf", "pdf", "cdf"]).map(_Raw),
            a=st.sampled_from([0.5, 1.0, 2.0]),
            b=st.sampled_from([1.0, 3.0, 0.7]),
        ),
    ),
    Op(
        "stats.truncnorm",
        f"{_S}.truncnorm.{{f}}({U}, {{a}}, {{b}})",
        kinds="bif",
        params=keyed(
            f=st.sampled_from(["logpdf", "cdf", "logcdf"]).map(_Raw),
            a=st.sampled_from([-1.0, 0.0, -3.0]),
            b=st.sampled_from([1.0, 2.5]),
        ),
    ),
    Op(
        "stats.gamma_cdf",
        f"{_S}.gamma.{{f}}({U}, {{a}})",
        kinds="bif",
        params=keyed(
            f=st.sampled_from(["cdf", "sf", "logcdf"]).map(_Raw), a=st.sampled_from([0.5, 2.0, 5.0])
        ),
    ),
    # discrete families: integer (or float) counts, their log-pmfs and cdfs
    Op(
        "stats.discrete",
        f"{_S}.{{d}}.{{f}}({U}, {{p}})",
        kinds="bif",
        params=keyed(
            d=st.sampled_from(["poisson", "geom", "bernoulli"]).map(_Raw),
            f=st.sampled_from(["logpmf", "pmf", "cdf"]).map(_Raw),
            p=st.sampled_from([0.3, 0.5, 1.0]),
        ),
    ),
    Op(
        "stats.binom",
        f"{_S}.{{d}}.logpmf({U}, {{n}}, {{p}})",
        kinds="bif",
        params=keyed(
            d=st.sampled_from(["binom", "nbinom"]).map(_Raw),
            n=st.sampled_from([3, 5.0]),
            p=st.sampled_from([0.25, 0.5]),
        ),
    ),
    Op("stats.poisson_rate", f"{_S}.poisson.logpmf(2, {U})", kinds="f"),
    Op(
        "stats.multivariate_normal",
        f"{_S}.multivariate_normal.logpdf(_signal(np, {U}, 3), np.zeros(3), _matrix3(np, {U}))",
        kinds="bif",
        specials=False,
    ),
    Op(
        "stats.rankdata",
        f"{_S}.rankdata({U}, method={{m}})",
        params=keyed(m=st.sampled_from(["average", "min", "max", "dense", "ordinal"])),
    ),
    # jax.scipy.linalg on well-conditioned matrices (its factorizations' solves, expm, polar)
    Op(
        "scipy.linalg.expm",
        f"T.scipy.linalg.expm(_matrix(np, {U}, 'any') * {{c}})",
        specials=False,
        params=keyed(c=st.sampled_from([1.0, -0.5, 2.0])),
    ),
    Op(
        "scipy.linalg.solves",
        f"{{f}}(_matrix(np, {U}, 'spd'), _signal(np, {B}, 2))",
        arity=2,
        specials=False,
        params=keyed(
            f=st.sampled_from(
                [
                    "(lambda m, b: T.scipy.linalg.cho_solve(T.scipy.linalg.cho_factor(m, lower=True), b))",
                    "(lambda m, b: T.scipy.linalg.lu_solve(T.scipy.linalg.lu_factor(m), b, trans=1))",
                    "(lambda m, b: T.scipy.linalg.solve_triangular(np.triu(m), b, trans='T'))",
                    "(lambda m, b: T.scipy.linalg.solve(m, b, assume_a='pos'))",
                ]
            ).map(_Raw)
        ),
    ),
    Op(
        "scipy.linalg.lu",
        f"T.scipy.linalg.lu(_matrix(np, {U}, 'any'))[{{i}}]",
        specials=False,
        params=keyed(i=st.integers(0, 2)),
    ),
    Op("scipy.linalg.polar", f"T.scipy.linalg.polar(_matrix(np, {U}, 'spd'))[1]", specials=False),
    # scipy.special: what the older tables lacked
    *(
        Op(f"special.{f}", f"special.{f}({U})", kinds="bif")
        for f in ["erfcx", "dawsn", "exp1", "expi", "spence", "i0", "gammasgn", "factorial", "loggamma"]
    ),
    Op("special.sici", f"special.sici({U})[{{i}}]", kinds="bif", params=keyed(i=st.integers(0, 1))),
    Op("special.fresnel", f"special.fresnel({U})[{{i}}]", kinds="bif", params=keyed(i=st.integers(0, 1))),
    Op(
        "special.incomplete",
        f"special.{{f}}({{a}}, {U})",
        kinds="bif",
        params=keyed(
            f=st.sampled_from(["gammainc", "gammaincc"]).map(_Raw), a=st.sampled_from([0.5, 1.0, 3.0])
        ),
    ),
    Op(
        "special.incomplete_a",
        f"special.{{f}}({U}, {{x}})",
        kinds="f",
        params=keyed(f=st.sampled_from(["gammainc", "gammaincc"]).map(_Raw), x=st.sampled_from([0.5, 2.0])),
    ),
    Op(
        "special.betainc",
        f"special.betainc({{a}}, {{b}}, {U})",
        kinds="bif",
        params=keyed(a=st.sampled_from([0.5, 2.0]), b=st.sampled_from([1.0, 3.0])),
    ),
    Op(
        "special.binary",
        f"special.{{f}}({U}, {B})",
        arity=2,
        kinds="bif",
        params=keyed(
            f=st.sampled_from(["betaln", "beta", "kl_div", "rel_entr", "poch", "zeta", "owens_t"]).map(_Raw)
        ),
    ),
    Op(
        "special.expn",
        f"special.expn({{n}}, {U})",
        kinds="bif",
        params=keyed(n=st.integers(0, 3)),
    ),
    Op(
        "special.hyp1f1",
        f"special.hyp1f1({{a}}, {{b}}, {U})",
        kinds="f",
        specials=False,
        params=keyed(a=st.sampled_from([0.5, 1.0, 2.0]), b=st.sampled_from([1.5, 3.0])),
    ),
    Op(
        "special.multigammaln",
        f"special.multigammaln(np.abs({U}) + 1.5, {{d}})",
        kinds="f",
        params=keyed(d=st.integers(1, 3)),
    ),
    Op(
        "special.logsumexp_b",
        f"special.logsumexp({U}, axis={{axis}}, b={{b}}, return_sign=True, keepdims={{k}})[{{i}}]",
        params=lambda s: st.fixed_dictionaries(
            {
                "axis": _axes(s),
                "b": st.sampled_from([2.0, -1.0, 0.0]),
                "k": st.booleans(),
                "i": st.integers(0, 1),
            }
        ),
    ),
    Op(
        "special.logsumexp_b_array",
        f"special.logsumexp({U}, axis={{axis}}, b=np.cos({B}), return_sign={{r}})",
        arity=2,
        params=lambda s: st.fixed_dictionaries({"axis": _axes(s), "r": st.booleans()}),
    ),
    Op(
        "nn.softmax_where",
        f"nn.softmax({U}, axis={{axis}}, where={U} > 0)",
        kinds="f",
        params=axis(none=False),
    ),
    Op(
        "nn.log_softmax_where",
        f"nn.log_softmax({U}, axis={{axis}}, where={U} != 0)",
        kinds="f",
        params=axis(none=False),
    ),
    Op("nn.glu", f"nn.glu(np.concatenate([{U}, {U} * 2], axis=-1))", kinds="f"),
    # cumulative reductions in reverse, reductions with where= + initial= + keepdims
    Op(
        "lax.cumulative",
        f"lax.{{f}}({U}, axis={{axis}}, reverse={{r}})",
        params=lambda s: st.fixed_dictionaries(
            {
                "f": st.sampled_from(["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]).map(_Raw),
                "axis": st.sampled_from(list(range(len(s))) or [0]),  # (lax refuses negative axes)
                "r": st.booleans(),
            }
        ),
    ),
    Op(
        "np.reduce_where_keep",
        f"np.{{f}}({U}, axis={{axis}}, where={U} > {{t}}, keepdims=True, initial={{init}})",
        params=lambda s: st.fixed_dictionaries(
            {
                "f": st.sampled_from(["max", "min", "sum", "prod"]).map(_Raw),
                "axis": _axes(s),
                "t": st.sampled_from([0, -1.0]),
                "init": st.sampled_from([0.5, -2, 3]),
            }
        ),
    ),
    Op(
        "np.mean_where_keep",
        f"np.{{f}}({U}, axis={{axis}}, where={U} != 0, keepdims={{k}})",
        params=lambda s: st.fixed_dictionaries(
            {
                "f": st.sampled_from(["mean", "var", "std", "nanmean", "nansum"]).map(_Raw),
                "axis": _axes(s),
                "k": st.booleans(),
            }
        ),
    ),
    # transformations inside the program
    Op(
        "inner.linearize",
        f"T.linearize(lambda a: np.sin(a) * a + np.cumsum(a), {U})[1]({U} * 0.5 + 1.0)",
        kinds="f",
    ),
    Op(
        "inner.linear_transpose",
        f"T.linear_transpose(lambda a: a * 2.0 - np.flip(a), {U})({U})[0]",
        kinds="f",
    ),
    Op(
        "inner.vmap_axis1",
        f"T.vmap(lambda a: np.cumsum(a) * a[0] - np.max(a), in_axes=1, out_axes={{o}})({U})",
        params=keyed(o=st.sampled_from([0, 1, -1])),
    ),
    Op(
        "inner.vmap_grad_jit_scan",
        f"T.vmap(T.grad(T.jit(lambda c0: lax.scan(lambda c, x: (c * x + np.sin(c), c * c), c0, "
        f"np.linspace(0.5, 1.5, 3), reverse={{r}}, unroll={{u}})[{{i}}].sum())))(np.ravel({U}))",
        kinds="f",
        params=keyed(r=st.booleans(), u=st.sampled_from([1, 2]), i=st.integers(0, 1)),
    ),
    Op(
        "inner.jacrev_fori",
        f"T.{{t}}(lambda a: lax.fori_loop(0, {{n}}, lambda i, c: c * np.cos(c) + i * a, a))({U})",
        kinds="f",
        params=keyed(t=st.sampled_from(["jacrev", "jacfwd"]).map(_Raw), n=st.integers(0, 3)),
    ),
    Op(
        "inner.grad_while",
        f"T.jvp(lambda a: lax.while_loop(lambda c: c[0] < {{n}}, lambda c: (c[0] + 1, np.sin(c[1]) * 1.5), "
        f"(0, a))[1], ({U},), ({U} * 0.5 + 1.0,))[1]",
        kinds="f",
        params=keyed(n=st.integers(0, 3)),
    ),
    Op(
        "lax.map_batch",
        f"lax.map(lambda a: np.sin(a) * np.sum(a), {U}, batch_size={{b}})",
        kinds="f",
        params=keyed(b=st.sampled_from([None, 1, 2, 3])),
    ),
    Op(
        "lax.associative_scan_rev",
        f"lax.associative_scan({{fn}}, {U}, reverse={{r}}, axis={{axis}})",
        params=lambda s: st.fixed_dictionaries(
            {
                "fn": st.sampled_from(["lax.add", "lax.max", "lambda a, b: a * 0.5 + b"]).map(_Raw),
                "r": st.booleans(),
                "axis": _axes(s, none=False),
            }
        ),
    ),
    Op(
        "checkpoint_static",
        f"T.checkpoint(lambda a, k: np.sin(a) ** k + lax.cumsum(a, axis=0), static_argnums=(1,))({U}, {{k}})",
        kinds="f",
        params=keyed(k=st.sampled_from([1, 2, 3])),
    ),
]
