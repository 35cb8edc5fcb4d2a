"""The fifth part of the fuzzer's surface table: ``jax.random`` and the API's *structure* (session 9).

``jax.random``: samplers of every family drawn from keys made every way (``PRNGKey``, new-style
``key``, ``split`` and ``fold_in``, ``fold_in`` of traced data), in the input's dtype, under ``vmap``
over split keys and inside ``jit`` (a key as a jitted argument); gradients through samplers
(``gamma``/``beta``/``dirichlet``/``loggamma`` by their implicit reparameterization, location-scale
families, ``truncated_normal`` of traced bounds); discrete samplers (``bernoulli``, ``categorical``,
``randint`` of small integer dtypes, ``poisson``, ``binomial``, ``permutation``, ``choice`` with and
without replacement and ``p=``); ``key_data``/``wrap_key_data`` and ``bits`` of each width.

Structure: pytrees in and out of ``jit``/``vmap``/``grad``/``jvp``/``vjp``/``linear_transpose``/
control flow (dicts, tuples, namedtuples, ``None`` leaves), ``static_argnums``/``static_argnames``,
``donate_argnums``/``donate_argnames``, keyword arguments, Python and NumPy scalar arguments,
``has_aux`` of ``vjp``/``jacfwd``/``jacrev``, ``argnums`` tuples of ``hessian``, ``allow_int``;
``vmap``'s ``in_axes``/``out_axes`` given as pytrees. Besides: ``partition``'s kth element,
``top_k`` of ties, ``one_hot`` with ``axis``/``dtype``,
scatters with ``unique_indices=True`` (truly unique), ``segment_sum`` with ``unique_indices``.

Long run only (as ``ops_more``/``ops_edges``): the CI budget's cases stay those it drew before.
Helpers (``_Pair``, ``_onp``) are in ``programs.HELPERS``.

>>> STRUCT[0].name
'random.sample'
"""

from __future__ import annotations

from hypothesis import strategies as st

from _fuzz.opbase import B, Op, U, _Raw, keyed

# Keys made every way (each a single key, typed or raw).
_KEYS = [
    "T.random.PRNGKey(7)",
    "T.random.key(3)",
    "T.random.split(T.random.PRNGKey(1))[1]",
    "T.random.split(T.random.key(2), 3)[2]",
    "T.random.fold_in(T.random.PRNGKey(5), 12345)",
    "T.random.fold_in(T.random.key(0), 7)",
    "T.random.wrap_key_data(T.random.key_data(T.random.key(4)))",
]
# Samplers of a shape and a floating dtype: {k} key, {s} shape, {d} dtype.
_SAMPLERS = [
    "T.random.normal({k}, {s}, {d})",
    "T.random.uniform({k}, {s}, {d}, minval=-1.0, maxval=2.0)",
    "T.random.truncated_normal({k}, -1.0, 0.5, {s}, {d})",
    "T.random.gumbel({k}, {s}, {d})",
    "T.random.laplace({k}, {s}, {d})",
    "T.random.logistic({k}, {s}, {d})",
    "T.random.cauchy({k}, {s}, {d})",
    "T.random.exponential({k}, {s}, {d})",
    "T.random.maxwell({k}, {s}, {d})",
    "T.random.t({k}, 3.0, {s}, {d})",
    "T.random.chisquare({k}, 2.0, {s}, {d})",
    "T.random.lognormal({k}, 0.5, {s}, {d})",
    "T.random.weibull_min({k}, 1.0, 2.0, {s}, {d})",
    "T.random.pareto({k}, 3.0, {s}, {d})",
    "T.random.rayleigh({k}, 1.0, {s}, {d})",
    "T.random.wald({k}, 1.0, {s}, {d})",
    "T.random.generalized_normal({k}, 1.5, {s}, {d})",
    "T.random.beta({k}, 2.0, 3.0, {s}, {d})",
    "T.random.gamma({k}, 0.7, {s}, {d})",
    "T.random.loggamma({k}, 2.0, {s}, {d})",
    "T.random.triangular({k}, 0.0, 0.5, 1.0, {s}, {d})",
    "T.random.double_sided_maxwell({k}, 0.0, 1.0, {s}, {d})",
    "T.random.f({k}, 2.0, 3.0, {s}, {d})",
]


def _sampler(template):
    return template.format(k="k", s="np.shape(a)", d="np.result_type(a)")


_SAMPLER_FNS = [_Raw(f"(lambda k, a: {_sampler(t)})") for t in _SAMPLERS]

# Samplers differentiated with respect to their parameters (x: the operand, {key}: a key).
_PARAM_SAMPLERS = [
    "T.random.gamma({key}, np.abs(x) + 0.5)",
    "T.random.gamma({key}, np.abs(x) + 0.1, dtype=np.result_type(x))",
    "T.random.beta({key}, np.abs(x) + 0.5, 2.0)",
    "T.random.loggamma({key}, np.abs(x) + 0.5)",
    "T.random.dirichlet({key}, np.abs(x) + 0.5)",
    "T.random.truncated_normal({key}, x - 1.0, x + 1.0)",
    "T.random.normal({key}, np.shape(x)) * np.exp(x) + x",
    "T.random.t({key}, np.abs(x) + 2.0)",
    "T.random.chisquare({key}, np.abs(x) + 1.0)",
]
# Discrete samplers, permutations and choices, raw key data, samplers of fixed shapes.
_DISCRETE = [
    "T.random.bernoulli({key}, nn.sigmoid(x))",
    "T.random.bernoulli({key}, 0.3, np.shape(x))",
    "T.random.categorical({key}, x, axis=-1)",
    "T.random.categorical({key}, x, axis=0, shape=(2,) + np.shape(x)[1:])",
    "T.random.randint({key}, np.shape(x), -3, 5)",
    "T.random.randint({key}, np.shape(x), 0, 200, dtype='uint8')",
    "T.random.randint({key}, np.shape(x), -100, 100, dtype='int8')",
    "T.random.poisson({key}, np.abs(x) * 2.0, np.shape(x))",
    "T.random.binomial({key}, 5.0, nn.sigmoid(x))",
    "T.random.geometric({key}, nn.sigmoid(x) * 0.9 + 0.05)",
    "T.random.rademacher({key}, np.shape(x))",
    "T.random.bits({key}, np.shape(x), 'uint8')",
    "T.random.bits({key}, np.shape(x), 'uint16')",
    "T.random.bits({key}, np.shape(x), 'uint32')",
    "T.random.permutation({key}, x, axis=0, independent=False)",
    "T.random.permutation({key}, x, axis=-1, independent=True)",
    "T.random.permutation({key}, np.size(x))",
    "T.random.choice({key}, x, shape=(2,), replace=True)",
    "T.random.choice({key}, np.ravel(x), shape=(2,), replace=False)",
    "T.random.choice({key}, np.ravel(x), shape=(2,), p=nn.softmax(np.ravel(x) * 1.0))",
    "T.random.choice({key}, 5, shape=(3,), replace=False, p=np.array([0.1, 0.2, 0.3, 0.1, 0.3]))",
    "T.random.key_data(T.random.split({key}, 3)) + np.size(x)",
    "T.random.orthogonal({key}, 3) + np.sum(x)",
    "T.random.ball({key}, 2, p=1.5) * np.sum(x)",
    "T.random.multivariate_normal({key}, _signal(np, x, 3), _matrix3(np, x))",
]


def _keyed_fns(templates):
    """A strategy of ``(lambda x: <template with a drawn key>)`` sources."""
    return st.tuples(st.sampled_from(templates), st.sampled_from(_KEYS)).map(
        lambda tk: _Raw("(lambda x: " + tk[0].format(key=tk[1]) + ")")
    )


STRUCT: list[Op] = [
    # samplers of the input's shape and dtype, added to it (so derivatives flow through the input)
    Op(
        "random.sample",
        f"{U} + {{f}}({{key}}, {U})",
        kinds="f",
        params=keyed(f=st.sampled_from(_SAMPLER_FNS), key=st.sampled_from(_KEYS).map(_Raw)),
    ),
    # fold_in of data computed from the input (traced under jit), and split into a key array
    Op(
        "random.fold_in_traced",
        f"{U} * {{f}}(T.random.fold_in(T.random.key(11), np.sum(np.asarray({U}) > 0)), {U})",
        kinds="f",
        params=keyed(f=st.sampled_from(_SAMPLER_FNS)),
    ),
    # vmap over split keys, optionally jitted with the keys as arguments
    Op(
        "random.vmap_keys",
        f"{{outer}}(T.vmap(lambda k, a: a * {{f}}(k, a)))(T.random.split({{key}}, np.shape({U})[0]), {U})",
        kinds="f",
        params=keyed(
            f=st.sampled_from(_SAMPLER_FNS),
            key=st.sampled_from(_KEYS).map(_Raw),
            outer=st.sampled_from(["T.jit", "(lambda g: g)"]).map(_Raw),
        ),
    ),
    Op(
        "random.split_shape",
        f"T.vmap(T.vmap(lambda k, a: T.random.normal(k, (), np.result_type(a)) + a))"
        f"(T.random.split({{key}}, np.shape({U})[:2]), {U})",
        kinds="f",
        params=keyed(key=st.sampled_from(_KEYS).map(_Raw)),
    ),
    # samplers differentiated with respect to their parameters, and discrete samplers (each a function
    # of x applied to the operand, its key drawn)
    Op(
        "random.param",
        f"{{f}}({U})",
        kinds="f",
        specials=False,
        params=keyed(f=_keyed_fns(_PARAM_SAMPLERS)),
    ),
    Op("random.discrete", f"{{f}}({U})", kinds="bif", specials=False, params=keyed(f=_keyed_fns(_DISCRETE))),
    # ---- structure: pytrees in and out, static and donated arguments, keyword arguments
    Op(
        "jit.pytree_static",
        f"T.jit(lambda d, n: {{{{'p': d['a'] * n, 'q': (None, d['b'] - n)}}}}, static_argnums=1)"
        f"({{{{'a': {U}, 'b': {B}}}}}, {{n}}){{pick}}",
        arity=2,
        params=keyed(
            n=st.sampled_from([2, 0.5, True]), pick=st.sampled_from(["['p']", "['q'][1]"]).map(_Raw)
        ),
    ),
    Op(
        "jit.static_argnames",
        f"T.jit(lambda a, n=1, how='sum': getattr(np, how)(a, axis=0) * n, static_argnames=('n', 'how'))"
        f"({U}, n={{n}}, how={{how}})",
        params=keyed(n=st.sampled_from([1, 3, -0.5]), how=st.sampled_from(["sum", "max", "prod", "mean"])),
    ),
    Op(
        "jit.kwargs",
        f"T.jit(lambda a, b, *, c=1.0: a * c - b)(b={B}, a={U}{{c}})",
        arity=2,
        params=keyed(c=st.sampled_from(["", ", c=2", ", c=0.5"]).map(_Raw)),
    ),
    Op(
        "jit.donate",
        f"T.jit(lambda a, b: a * 2 - b, {{donate}})(np.asarray({U}) * 1, {B})",
        arity=2,
        params=keyed(
            donate=st.sampled_from(["donate_argnums=0", "donate_argnums=(0, 1)", "donate_argnames='a'"]).map(
                _Raw
            )
        ),
    ),
    Op(
        "jit.scalar_arg",
        f"T.jit(lambda a, s: a * s + s)({U}, {{s}})",
        params=keyed(
            s=st.sampled_from(
                [
                    "2",
                    "2.5",
                    "True",
                    "_onp.float32(1.5)",
                    "_onp.int32(3)",
                    "_onp.float64(0.5)",
                    "_onp.uint8(2)",
                ]
            ).map(_Raw)
        ),
    ),
    Op(
        "jit.namedtuple",
        f"T.jit(lambda p: _Pair(p.b * 2, np.sin(p.a) * p.b))(_Pair({U}, {B})).{{field}}",
        arity=2,
        params=keyed(field=st.sampled_from(["a", "b"]).map(_Raw)),
    ),
    Op(
        "vmap.pytree_axes",
        f"T.vmap(lambda d, c: {{{{'p': d['a'] * c, 'q': np.sin(d['b'])}}}}, "
        f"in_axes=({{{{'a': 0, 'b': None}}}}, None), out_axes={{{{'p': {{o}}, 'q': 0}}}})"
        f"({{{{'a': {U}, 'b': {B}}}}}, {{c}})[{{k}}]",
        arity=2,
        params=keyed(o=st.sampled_from([0, -1]), c=st.sampled_from([2.0, 3]), k=st.sampled_from(["p", "q"])),
    ),
    Op(
        "vmap.tuple_in_axes",
        f"T.vmap(lambda t: t[0] * np.cos(t[1]) + t[2], in_axes=((0, None, {{ax}}),))(({U}, {B}, {U}))",
        arity=2,
        params=keyed(ax=st.sampled_from([0, None])),
    ),
    Op(
        "grad.pytree_in",
        f"T.grad(lambda d: np.sum(d['a'] * np.cos(d['b'][0])) + np.sum(d['b'][1] ** 2))"
        f"({{{{'a': {U}, 'b': ({U} * 0.5, {U} + 1), 'c': None}}}}){{pick}}",
        kinds="f",
        params=keyed(pick=st.sampled_from(["['a']", "['b'][0]", "['b'][1]"]).map(_Raw)),
    ),
    Op(
        "grad.kwargs",
        f"T.grad(lambda a, b=2.0: np.sum(np.sin(a) * b))({U}, b={B})",
        arity=2,
        kinds="f",
    ),
    Op(
        "grad.allow_int",
        f"T.grad(lambda a, n: np.sum(a ** 2 * n), argnums=(0, 1), allow_int=True)({U}, {{n}})[0]",
        kinds="f",
        params=keyed(n=st.sampled_from([3, "_onp.int32(2)", "np.arange(2)[1]"]).map(_Raw)),
    ),
    Op(
        "jvp.pytree",
        f"T.jvp(lambda d: d['a'] * np.sin(d['b']), ({{{{'a': {U}, 'b': {B}}}}},), "
        f"({{{{'a': np.ones_like({U}), 'b': np.full_like({B}, 0.5)}}}},))[{{i}}]",
        arity=2,
        kinds="f",
        params=keyed(i=st.integers(0, 1)),
    ),
    Op(
        "vjp.has_aux",
        f"(lambda o, f, aux: f(T.tree_util.tree_map(np.ones_like, o))[{{i}}] + np.sum(aux))"
        f"(*T.vjp(lambda a, b: ({{{{'s': np.sin(a) * b}}}}, a + 1), {U}, {B}, has_aux=True))",
        arity=2,
        kinds="f",
        params=keyed(i=st.integers(0, 1)),
    ),
    Op(
        "jac.has_aux",
        f"T.{{t}}(lambda a: (np.sin(a) * a, {{{{'aux': a * 2}}}}), has_aux=True)({U}){{pick}}",
        kinds="f",
        params=keyed(
            t=st.sampled_from(["jacfwd", "jacrev"]).map(_Raw),
            pick=st.sampled_from(["[0]", "[1]['aux']"]).map(_Raw),
        ),
    ),
    Op(
        "hessian.argnums",
        f"T.hessian(lambda a, b: np.sum(np.sin(a) * b ** 2), argnums={{an}})({U}, {B}){{pick}}",
        arity=2,
        kinds="f",
        params=keyed(
            an=st.sampled_from([0, 1, (0, 1)]),
            pick=st.sampled_from(["", "[0][1]", "[1][1]", "[1][0]"]).map(_Raw),
        ),
    ),
    Op(
        "linear_transpose.pytree",
        f"T.linear_transpose(lambda d: d['a'] * 2.0 - d['b'], {{{{'a': {U}, 'b': {U}}}}})({U})[0][{{k}}]",
        kinds="f",
        params=keyed(k=st.sampled_from(["a", "b"])),
    ),
    # control flow over pytrees
    Op(
        "cond.pytree",
        f"lax.cond(np.sum({U}) > 0, lambda d: {{{{'x': d['x'] * 2, 'y': None}}}}, "
        f"lambda d: {{{{'x': np.sin(d['x']), 'y': None}}}}, {{{{'x': {U}, 'y': None}}}})['x']",
    ),
    Op(
        "switch.operands",
        f"lax.switch(np.sum(np.asarray({U}) > 0), [lambda a, b: a * b, lambda a, b: a - b, "
        f"lambda a, b: np.sin(a) + b * 0], {U}, {B})",
        arity=2,
    ),
    Op(
        "while.pytree",
        f"lax.while_loop(lambda c: c['i'] < {{n}}, lambda c: {{{{'i': c['i'] + 1, 'v': (np.cos(c['v'][0]), "
        f"c['v'][1] * 2)}}}}, {{{{'i': 0, 'v': ({U}, {B})}}}})['v'][{{j}}]",
        arity=2,
        params=keyed(n=st.integers(0, 3), j=st.integers(0, 1)),
    ),
    Op(
        "scan.pytree",
        f"lax.scan(lambda c, x: ((c[0] + x['a'], c[1]), {{{{'y': c[0] * x['a'], 'n': None}}}}), "
        f"({U}[0] * 0, {B}), {{{{'a': {U}}}}}, reverse={{r}}, unroll={{u}}){{pick}}",
        arity=2,
        params=keyed(
            r=st.booleans(),
            u=st.sampled_from([1, 2, True]),
            pick=st.sampled_from(["[0][0]", "[1]['y']", "[0][1]"]).map(_Raw),
        ),
    ),
    Op(
        "fori.tuple",
        f"lax.fori_loop({{lo}}, {{hi}}, lambda i, c: (c[0] * 0.5 + c[1], c[1] + i), ({U}, {B}))[{{j}}]",
        arity=2,
        params=keyed(lo=st.sampled_from([0, 1]), hi=st.sampled_from([0, 2, 3]), j=st.integers(0, 1)),
    ),
    Op(
        "custom_vjp.pytree",
        f"_custom_vjp_tree(T, np, {{{{'a': {U}, 'b': ({U} * 0.5, None)}}}}, {{k}})",
        kinds="f",
        params=keyed(k=st.sampled_from([1, 2.5])),
    ),
    # sorting, cumulative and scatter options not drawn elsewhere
    Op(
        "lax.top_k_ties",
        f"lax.top_k(np.round({U}), {{k}})[{{i}}]",
        params=keyed(k=st.integers(1, 3), i=st.integers(0, 1)),
    ),
    Op(
        "nn.one_hot_axis",
        f"nn.one_hot(np.asarray({U}).astype(int), {{n}}, axis={{axis}}, dtype={{dt}})",
        params=keyed(
            n=st.integers(1, 4),
            axis=st.sampled_from([-1, 0]),
            dt=st.sampled_from(["float32", "int8", "bool"]),
        ),
    ),
    Op(
        "at.unique",
        f"np.asarray({U}).at[np.array([2, 0])].{{method}}({{v}}, unique_indices=True, "
        f"indices_are_sorted=False)",
        params=keyed(
            method=st.sampled_from(["set", "add", "multiply", "min", "max"]).map(_Raw),
            v=st.sampled_from([2, -1.5]),
        ),
    ),
    Op(
        "segment_sum_unique",
        f"T.ops.segment_sum({U}, np.arange(np.shape({U})[0])[::-1], num_segments={{n}}, unique_indices=True)",
        params=keyed(n=st.sampled_from([1, 2, 4])),
    ),
    Op(
        "np.split_stack",
        f"np.stack(np.array_split({U}, {{n}}, axis=0)[:1] * 2)",
        params=keyed(n=st.integers(1, 3)),
    ),
]
