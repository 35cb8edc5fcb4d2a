"""The seventh part of the fuzzer's surface table: keyword options and corners users write (session 11).

Drawn where random programs of JAX users go and the other tables did not:

- ``jnp`` reductions and cumulative functions with their keyword options together: ``axis`` tuples
  (negative entries among them), ``keepdims``, ``where=`` masks, ``dtype=`` result types
  (narrow, unsigned, complex) and ``initial=``;
- dtype promotion of narrow and unsigned arrays (bfloat16, float16, int8, uint8, uint32, complex64)
  with weak Python scalars inside ``jnp`` functions (``power``, ``arctan2``, ``hypot``, ``where``,
  ``clip``, ``maximum``, ``true_divide``, ``floor_divide``, ``remainder``, ``ldexp``-free mixes)
  and creation functions with ``dtype=`` (``full_like``, ``zeros_like``, ``arange``, ``linspace``);
- indexing with mixed advanced and basic indices (arrays with negative and out-of-bounds entries
  beside slices, ``None`` and ``...``), and ``.at[]`` updates with every method and mode
  (``clip``, ``drop``, ``fill``) at such indices, ``indices_are_sorted``/``unique_indices`` hints;
- ``jax.random`` with typed keys (``random.key``) and raw ones, ``split`` to shapes, ``fold_in``
  and draws under ``vmap`` and ``jit``, ``key_data``/``wrap_key_data`` round trips, ``bits`` of
  narrow dtypes, draws in bfloat16/float16 with array bounds;
- custom_jvp/custom_vjp functions as the bodies of ``scan``/``fori_loop``/``while_loop`` and as the
  branches of ``cond``/``switch`` with batched predicates (``vmap``).

Long run only (as the other tables after the first two): the CI budget's cases stay those it drew
before.

>>> WIDE[0].name
'wide.reduce_kw'
"""

from __future__ import annotations

from hypothesis import strategies as st

from _fuzz.opbase import B, Op, U, _Raw, keyed

_REDUCTIONS = ["sum", "mean", "max", "min", "prod", "std", "var", "nansum", "nanmean", "nanmax", "nanmin",
               "nanprod", "nanstd", "nanvar", "any", "all", "count_nonzero", "ptp", "argmax", "argmin",
               "median", "nanmedian", "amax", "amin", "average", "logsumexp"]  # fmt: skip
# Which keyword options each takes (JAX's signatures).
_TAKES_WHERE = {"sum", "mean", "max", "min", "prod", "std", "var", "nansum", "nanmean", "nanmax", "nanmin",
                "nanprod", "nanstd", "nanvar", "any", "all", "amax", "amin", "logsumexp"}  # fmt: skip
_TAKES_TUPLE = _TAKES_WHERE | {"count_nonzero", "ptp", "median", "nanmedian", "average"}
_TAKES_DTYPE = {"sum", "mean", "prod", "std", "var", "nansum", "nanmean", "nanprod", "nanstd", "nanvar"}
_TAKES_INITIAL = {"sum", "max", "min", "prod", "nansum", "nanmax", "nanmin", "nanprod", "amax", "amin"}


def _reduce_kw(shape):
    nd = len(shape)

    @st.composite
    def draw(draw):
        f = draw(st.sampled_from(_REDUCTIONS))
        kw = []
        if nd and f in _TAKES_TUPLE and draw(st.booleans()):
            axes = draw(st.sets(st.integers(-nd, nd - 1), min_size=1, max_size=nd))
            if len({a % nd for a in axes}) == len(axes):
                kw.append(f"axis={tuple(sorted(axes))!r}")
        elif nd:
            kw.append(f"axis={draw(st.integers(-nd, nd - 1))}")
        if draw(st.booleans()):
            kw.append("keepdims=True")
        if f in _TAKES_WHERE and draw(st.booleans()):
            kw.append(draw(st.sampled_from(["where=np.asarray(a) > 0", "where=np.asarray(a) == np.asarray(a)",
                                            "where=np.ones(np.shape(a), bool)"])))  # fmt: skip
        if f in _TAKES_DTYPE and draw(st.booleans()):
            kw.append(
                f"dtype={draw(st.sampled_from(['float32', 'float16', 'bfloat16', 'complex64', 'int32']))!r}"
            )
        if f in _TAKES_INITIAL and draw(st.booleans()):
            kw.append(f"initial={draw(st.sampled_from([0, -1.5, 2]))!r}")
        if f in ("std", "var", "nanstd", "nanvar") and draw(st.booleans()):
            kw.append(f"ddof={draw(st.integers(0, 2))}")
        if f in ("argmax", "argmin") and any(k.startswith("axis=(") for k in kw):
            kw = [k for k in kw if not k.startswith("axis=(")]
        if f == "logsumexp" and draw(st.booleans()):
            kw.append("return_sign=True")
        fn = "T.scipy.special.logsumexp" if f == "logsumexp" else f"np.{f}"
        return {"call": _Raw(f"{fn}(a, {', '.join(kw)})")}

    return draw()


def _cumulative_kw(shape):
    nd = len(shape)
    return st.fixed_dictionaries(
        {
            "f": st.sampled_from(
                ["cumsum", "cumprod", "nancumsum", "nancumprod", "cumulative_sum", "cumulative_prod"]
            ).map(_Raw),  # fmt: skip
            "axis": st.sampled_from(list(range(-nd, nd)) if nd else [None]),
            "dtype": st.sampled_from([None, "float32", "int32", "complex64", "bfloat16"]),
        }
    )


_CASTS = ["'bfloat16'", "'float16'", "'int8'", "'uint8'", "'uint32'", "'complex64'", "'int16'", "'float32'"]
_SCALARS = ["2", "-3", "0.5", "1e3", "-2.5", "True", "2j", "300", "1 + 0.5j"]
_FUNS = [
    "np.power(a, s)",
    "np.power(s, a)",
    "np.arctan2(a, s)",
    "np.hypot(s, a)",
    "np.true_divide(a, s)",
    "np.floor_divide(a, s)",
    "np.remainder(a, s)",
    "np.fmod(a, s)",
    "np.maximum(a, s)",
    "np.minimum(s, a)",
    "np.fmax(a, s)",
    "np.where(a > 0, s, a)",
    "np.clip(a, s, None)",
    "np.logaddexp(a, s)",
    "np.copysign(a, s)",
    "np.nextafter(a, s)",
    "np.heaviside(a, s)",
    "np.isclose(a, s)",
    "np.float_power(a, s)",
    "np.divmod(a, s)[0]",
    "np.polyval(np.array([1, 2]), a) + s",
    "np.add(a, s, dtype=None)",
    "np.equal(a, s)",
    "np.array([a, s]) if np.ndim(a) == 0 else np.stack([a, np.full_like(a, s)])",
]

# Index expressions of an array ``a`` (any rank): mixed advanced and basic, negative and out of bounds.
_INDEXES = [
    "np.array([0, -1])",
    "(np.array([-1, 0, 1]), Ellipsis)",
    "(Ellipsis, np.array([[0], [-1]]))",
    "(slice(None), np.array([1, -2]))",
    "(np.array([0, 1]), slice(None), None)",
    "(None, np.array([[1, 0]]), Ellipsis)",
    "(np.array([0]), np.array([-1]))",
    "(slice(1, None), np.array([0, 0, -1]))",
    "(np.array([2, -3, 7]),)",
    "(-1, Ellipsis, np.array([0, 5]))",
    "(np.array(True),)",
    "(np.array([[True]]) if np.ndim(a) >= 2 else np.array(True),)",
    "(Ellipsis, -1)",
    "(slice(None, None, -2), None)",
]


def _index_params(shape):
    return st.fixed_dictionaries({"idx": st.sampled_from(_INDEXES).map(_Raw)})


def _at_params(shape):
    return st.fixed_dictionaries(
        {
            "idx": st.sampled_from(_INDEXES).map(_Raw),
            "method": st.sampled_from(
                ["set", "add", "mul", "min", "max", "divide", "power", "subtract", "get"]
            ).map(_Raw),
            "mode": st.sampled_from([None, "'clip'", "'drop'", "'fill'", "'promise_in_bounds'"]).map(_Raw),
            "hint": st.sampled_from(["", ", indices_are_sorted=True", ", unique_indices=True"]).map(_Raw),
            "val": st.sampled_from(
                ["2", "0.5", "np.sin(a)[(0,) * np.ndim(a)] if np.size(a) else 1.0", "-1.5"]
            ).map(_Raw),  # fmt: skip
        }
    )


# Random draws of a key ``k`` (typed or raw), each combined with an array ``a``.
_KEYS = [
    "T.random.key(7)",
    "T.random.PRNGKey(7)",
    "T.random.key(np.uint32(3), impl='threefry2x32')",
    "T.random.wrap_key_data(T.random.key_data(T.random.key(11)))",
    "T.random.fold_in(T.random.key(5), 12)",
]
_DRAWS = [
    "T.random.normal(k, np.shape(a), {dt}) * a",
    "a + T.random.uniform(k, np.shape(a), {dt}, minval=-1.0, maxval=np.ones(np.shape(a), {dt}))",
    "T.vmap(lambda kk: T.random.normal(kk, ()))(T.random.split(k, 3)).sum() * a",
    "T.vmap(lambda i: T.random.uniform(T.random.fold_in(k, i), (), {dt}))(np.arange(2)).sum() + a",
    "T.random.bits(k, np.shape(a), 'uint8').astype({dt}) * a",
    "T.random.split(k, (2, 2)).shape[0] * a + T.random.key_data(T.random.split(k)[1]).astype({dt})[0]",
    "T.jit(lambda k, a: T.random.gumbel(k, np.shape(a), {dt}) + a)(k, a)",
    "T.random.permutation(k, np.ravel(a))",
    "T.random.choice(k, np.ravel(a), (2,)) if np.size(a) else a",
    "T.vmap(lambda kk, r: T.random.bernoulli(kk, 0.5, np.shape(r)) * r)"
    "(T.random.split(k, np.shape(a)[0]), a) if np.ndim(a) else a",
    "T.random.truncated_normal(k, -1.0, 2.0, np.shape(a), {dt}) * a",
    "T.random.categorical(k, np.atleast_1d(a) * 0.1, axis=-1) + np.sum(a)",
]

# custom_jvp / custom_vjp functions of one array; used as loop bodies and branches below.
_CUSTOM = {
    "jvp": "_custom_jvp(T, np, {x})",
    "vjp": "_custom_vjp(T, np, {x})",
    "nondiff": "_custom_jvp_nondiff(T, np, {x}, 2.0)",
}
_LOOPS = [
    "lax.scan(lambda c, x: (c + {f}, c * 2), a[0], a)[{i}]",
    "lax.fori_loop(0, 3, lambda i, c: {f} * 0.5 + c, a)",
    "lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, {f}), (0, a))[1]",
    "T.vmap(lambda r: lax.cond(r[0] > 0, lambda r: {f}, lambda r: r * 2.0, r))(np.atleast_2d(a))",
    "T.vmap(lambda r: lax.switch(np.clip(np.sum(r > 0), 0, 2), [lambda r: {f}, np.sin, lambda r: r * r], r))"
    "(np.atleast_2d(a))",
    "T.vmap(lambda r, p: lax.cond(p, lambda r: {f}, lambda r: -r, r))(np.atleast_2d(a), "
    "np.arange(np.shape(np.atleast_2d(a))[0]) % 2 == 0)",
]


def _loop_params(shape):
    return st.fixed_dictionaries(
        {
            "body": st.sampled_from(_LOOPS),
            "kind": st.sampled_from(sorted(_CUSTOM)),
            "i": st.integers(0, 1),
        }
    ).map(lambda d: {"e": _Raw(d["body"].format(f=_CUSTOM[d["kind"]].format(x=_arg(d["body"])), i=d["i"]))})


def _arg(body):
    return "r" if "lambda r" in body else ("c[1]" if "c[0] + 1" in body else ("x" if "c, x" in body else "c"))


WIDE = [
    Op("wide.reduce_kw", f"(lambda a: {{call}})({U})", params=_reduce_kw, kinds="bif"),
    Op(
        "wide.cumulative_kw",
        f"np.{{f}}({U}, axis={{axis}}, dtype={{dtype}})",
        params=_cumulative_kw,
        mixes_dtypes=True,
    ),
    Op(
        "wide.scalar_fun",
        f"(lambda a, s: {{fun}})(np.asarray({U}).astype({{d}}), {{s}})",
        specials=False,
        mixes_dtypes=True,
        params=keyed(
            d=st.sampled_from(_CASTS).map(_Raw),
            s=st.sampled_from(_SCALARS).map(_Raw),
            fun=st.sampled_from(_FUNS).map(_Raw),
        ),
    ),
    Op(
        "wide.array_fun",
        f"(lambda a, s: {{fun}})(np.asarray({U}).astype({{d1}}), np.asarray({B}).astype({{d2}}))",
        arity=2,
        specials=False,
        mixes_dtypes=True,
        params=keyed(
            d1=st.sampled_from(_CASTS).map(_Raw),
            d2=st.sampled_from(_CASTS).map(_Raw),
            fun=st.sampled_from(_FUNS[:14]).map(_Raw),
        ),
    ),
    Op(
        "wide.creation_dtype",
        f"(lambda a: {{e}})({U})",
        mixes_dtypes=True,
        params=keyed(
            e=st.sampled_from(
                [
                    "np.full_like(a, 300, dtype='uint8') + a",
                    "np.zeros_like(a, dtype='bfloat16') + 1e-3",
                    "np.ones_like(a, dtype='int8') * 200 + np.sum(a)",
                    "np.arange(4, dtype='uint8') - 5 + np.sum(a)",
                    "np.linspace(0, 1, 5, dtype='float16') * np.sum(a)",
                    "np.asarray(a, dtype='float16') * 1e4",
                    "np.array([1, 2.5, 3j]) * np.sum(a)",
                    "np.eye(3, dtype='bfloat16', k=-1) * np.sum(a)",
                    "np.full(np.shape(a), -1, 'uint32') + a",
                    "np.arange(-3, 3, 0.5, dtype='int32') + np.sum(a)",
                ]
            ).map(_Raw)
        ),
    ),
    Op("wide.index", f"(lambda a: a[{{idx}}])({U})", params=_index_params),
    Op(
        "wide.at",
        f"(lambda a: a.at[{{idx}}].{{method}}(*(() if '{{method}}' == 'get' else ({{val}},)), "
        f"mode={{mode}}{{hint}}))({U})",
        params=_at_params,
    ),
    Op(
        "wide.at_array_values",
        f"(lambda a, b: a.at[{{idx}}].{{method}}(np.ravel(b)[0] if np.size(b) else 1.0, "
        f"mode={{mode}}))({U}, {B})",
        arity=2,
        params=lambda s: _at_params(s).map(
            lambda d: {**d, "method": _Raw(str(d["method"]).replace("get", "set"))}
        ),
    ),
    Op(
        "wide.random",
        f"(lambda a, k: {{draw}})({U}, {{key}})",
        kinds="f",
        params=lambda s: keyed(
            key=st.sampled_from(_KEYS).map(_Raw),
            draw=st.sampled_from(_DRAWS).map(_Raw),
            dt=st.sampled_from(["None", "'float32'", "'bfloat16'", "'float16'"]).map(_Raw),
        )(s).map(lambda d: {**d, "draw": _Raw(str(d["draw"]).format(dt=d["dt"]))}),
    ),
    Op(
        "wide.custom_in_loops",
        f"(lambda a: {{e}})({U})",
        kinds="f",
        params=_loop_params,
    ),
]
