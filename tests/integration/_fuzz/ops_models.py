"""The ninth part of the fuzzer's surface table: whole small models and the corners users hit (session 13).

Drawn where a JAX user's random programs go and the other tables did not:

- whole small models written with ``jnp``/``lax``/``nn`` (programs.HELPERS' ``_model``: an MLP,
  logistic regression, softmax cross-entropy, a CNN with convolution and max pooling, causal
  attention written out and through ``nn.dot_product_attention``, an RNN and a GRU over
  ``lax.scan``, a residual block; every activation of ``jax.nn``) under the transformations of
  training: ``grad``, ``jit(grad)``, per-example ``vmap(grad)``, ``hessian``, Hessian-vector
  products, ``jacrev`` of per-example losses, ``checkpoint`` with policies, training loops in
  ``fori_loop``/``scan`` and Adam steps written out (optax's formulas);
- sorting, ``argsort``, ``unique``, ``top_k``, ``partition`` and ``lexsort`` with NaN and ties
  (stable and descending forms);
- gradients at boundaries: ``where``/``select_n``/``maximum``/``clip``/``abs`` at their kinks;
- integer edges: division and remainder by zero, overflow, shifts by negative and too-large counts,
  unsigned negation, NumPy scalars (strong types) beside arrays, Python scalars near the limits;
- float16/bfloat16 through reductions and cumulative functions;
- complex and batched matrices through ``jnp.linalg`` and ``jnp.fft``, and singular,
  rank-deficient and moderately ill-conditioned ones (conditioning about 50, so float32's
  tolerance holds);
- ``jax.random`` draws of every distribution from explicit keys (bits and values as jax's).

Long run only (as the other session tables): the CI budget's cases stay those it drew before.

>>> MODELS[0].name
'models.train'
"""

from __future__ import annotations

from hypothesis import strategies as st

from _fuzz.opbase import Op, _Raw
from _fuzz.ops_mix import _LinalgOp as _DrawnOp  # (the whole expression drawn; the operand at \x00)

_KINDS = ["mlp", "cnn", "attn", "sdpa", "rnn", "gru", "logreg", "softmax_ce", "resnet"]
_ACTS = ["relu", "gelu", "gelu_tanh", "silu", "tanh", "softplus", "elu", "celu", "selu", "sigmoid",
         "leaky_relu", "relu6", "log_sigmoid", "soft_sign", "hard_tanh", "mish", "sparse_plus",
         "squareplus", "hard_silu"]  # fmt: skip
# What is done with a model's loss g(p, X) (each an array).
_TRAIN = [
    "T.grad(g)(p, X)",
    "T.jit(T.grad(g))(p, X)",
    "T.value_and_grad(g)(p, X)[1] * T.jit(g)(p, X)",
    "T.vmap(T.grad(g), in_axes=(None, 0))(p, X[:, None])",
    "T.jit(T.vmap(T.value_and_grad(g), in_axes=(None, 0)))(p, X[:, None])[1]",
    "T.hessian(g)(p, X)",
    "T.jacfwd(T.grad(g))(p, X)",
    "T.jvp(lambda p: T.grad(g)(p, X), (p,), (np.cos(p),))[1]",
    "T.vmap(g, in_axes=(0, None))(np.stack([p, p * 0.5, -p]), X)",
    "T.grad(T.checkpoint(g))(p, X)",
    "T.grad(T.checkpoint(g, policy=T.checkpoint_policies.dots_saveable))(p, X)",
    "T.jit(lambda p: lax.fori_loop(0, 3, lambda i, p: p - 0.1 * T.grad(g)(p, X), p))(p)",
    "lax.scan(lambda p, _: (p - 0.05 * T.grad(g)(p, X), g(p, X)), p, None, length=3)[1]",
    "T.jit(lambda p: _adam(T, np, g, p, X))(p)",
    "T.grad(lambda p: np.sum(T.vmap(g, in_axes=(None, 0))(p, X[:, None])))(p)",
    "T.jacrev(lambda p: T.vmap(g, in_axes=(None, 0))(p, X[:, None]))(p)",
    "T.linearize(lambda p: g(p, X), p)[1](np.ones_like(p))",
    "T.jit(T.vmap(T.jit(T.grad(g)), in_axes=(None, 0)))(p, X[:, None])",
]

_SORTS = [
    "np.sort({U}, axis={a}, stable=True, descending={d})",
    "np.argsort({U}, axis={a}, stable=True, descending={d})",
    "np.argsort({U}, axis={a})",
    "lax.sort(({U}, np.reshape(np.arange(np.size({U})), np.shape({U}))), dimension={a}, num_keys=1)[1]",
    "lax.sort_key_val(np.ravel({U}), -np.ravel({U}))[1]",
    "np.unique(np.ravel({U}), size=4, fill_value={fill})",
    "np.unique(np.ravel({U}), return_inverse=True, size=5)[1]",
    "np.unique(np.ravel({U}), return_counts=True, size=5, equal_nan={d})[1]",
    "np.unique(np.ravel({U}), return_index=True, size=5)[1]",
    "np.unique_values(np.ravel({U}), size=3, fill_value={fill})",
    "lax.top_k(np.ravel({U}), {k})[{i}]",
    "np.partition(np.ravel({U}), {k})",
    "np.argpartition(np.ravel({U}), {k})",
    "np.lexsort((np.ravel({U}), -np.ravel({U}) * 0.5))",
    "np.searchsorted(np.sort(np.ravel({U})), {U}, side={side})",
    "np.nanargmax({U}, axis={a})",
    "np.nanargmin({U}, axis={a})",
    "np.median({U}, axis={a})",
    "np.nanquantile({U}, 0.3, axis={a}, method={method})",
    "np.max({U}, axis={a}) + np.min({U}, axis={a})",
]

_BOUNDARY = [
    "np.where({U} > 0, np.sqrt(np.where({U} > 0, {U}, 1.0)), 0.0)",
    "np.where({U} >= 0, {U} ** 2, -{U})",
    "lax.select_n(({U} > 0).astype(np.int32) + ({U} > 1), {U} * 2, np.sin({U}), {U} ** 3)",
    "lax.select_n({U} > 0, -{U}, {U} * 3)",
    "np.maximum({U}, 0.0) + np.minimum({U}, {U} * 1)",
    "np.clip({U}, -1.0, 1.0) * np.clip({U}, min=0.0)",
    "np.abs({U}) + np.fmax({U}, -{U}) + np.maximum({U}, -{U})",
    "np.max(np.stack([{U}, -{U}, {U} * 1]), axis=0)",
    "np.sign({U}) * {U} + np.heaviside({U}, 0.5) * {U}",
    "np.where(np.isnan({U}), 0.0, {U}) * np.where({U} == 1, 2.0, {U})",
    "np.linalg.norm(np.stack([{U}, {U} * 0]), axis=0)",
    "np.sort(np.stack([{U}, -{U}, {U} * 0.5]), axis=0)[0]",
    "np.median(np.stack([{U}, {U}, -{U}]), axis=0)",
    "nn.relu({U}) + nn.relu6({U} * 6) + nn.hard_tanh({U})",
    "np.round({U}) + np.floor({U} * 2) * {U}",
]

_INTS = [
    "{U} // {B}",
    "{U} % {B}",
    "np.floor_divide({U}, 0)",
    "np.remainder({U}, 0) + np.fmod({U}, {B})",
    "lax.div({U}, {B})",
    "lax.rem({U}, {B})",
    "{U} * 100000",
    "{U} + np.iinfo(np.result_type({U})).max",
    "-{U} + np.abs({U})",
    "{U} << {k}",
    "{U} >> {k}",
    "np.left_shift({U}, {B})",
    "np.right_shift({U}, {B})",
    "lax.shift_right_logical({U}, np.full_like({U}, {k}))",
    "lax.shift_right_arithmetic({U}, np.full_like({U}, {k}))",
    "lax.integer_pow({U}, 5)",
    "np.power({U}, 3) + np.power({U}, 0)",
    "{U}.astype(np.uint8) + {U}.astype(np.int8)",
    "_onp.int8(100) * {U}",
    "{U} + _onp.uint8(200)",
    "np.maximum({U}, _onp.int16(-3))",
    "_onp.float32(1.5) * {U}",
    "{U} / _onp.float64(3) + {U} * _onp.float16(0.5)",
    "np.array(3, np.int8) + {U}",
    "{U} + _onp.array(1.5)",
    "np.gcd({U}, {B}) + np.lcm({U}, 6)",
    "np.bitwise_count({U}) + np.invert({U})",
    "{U} & 0xFF | ({U} ^ -1)",
    "np.negative({U}) * np.sign({U})",
    "np.abs({U} - np.iinfo(np.result_type({U})).min)",
]

_NARROW = [
    "np.sum({U}.astype({t}), axis={a})",
    "np.cumsum({U}.astype({t}), axis={a})",
    "np.cumprod({U}.astype({t}) * 0.5, axis={a})",
    "np.mean({U}.astype({t}), axis={a})",
    "np.var({U}.astype({t}), axis={a})",
    "np.std({U}.astype({t}), axis={a}, ddof=1)",
    "np.prod({U}.astype({t}), axis={a})",
    "lax.cumsum({U}.astype({t}), axis={a} % max(np.ndim({U}), 1), reverse=True)",
    "lax.cummax({U}.astype({t}), axis={a} % max(np.ndim({U}), 1))",
    "lax.cumlogsumexp({U}.astype({t}), axis={a} % max(np.ndim({U}), 1))",
    "T.scipy.special.logsumexp({U}.astype({t}), axis={a})",
    "nn.softmax({U}.astype({t}), axis={a} if {a} is not None else -1)",
    "np.linalg.norm({U}.astype({t}))",
    "np.nansum({U}.astype({t}), axis={a}) + np.nanmax({U}.astype({t}))",
    "np.average({U}.astype({t}), axis={a}, weights=np.ones_like({U}, dtype={t}))",
    "np.sum({U}.astype({t}), axis={a}, dtype=np.float32)",
    "np.cumsum({U}.astype({t}), axis={a}, dtype=np.float32)",
    "np.max({U}.astype({t}), axis={a}) - np.min({U}.astype({t}), axis={a})",
]

# A complex matrix (n x n, diagonally dominant) from x; Hermitian positive definite forms from it.
_CM = "(_mat(np, {U}, (3, 3), 'float32') + 1j * _mat(np, np.cos({U}), (3, 3), 'float32') + 3 * np.eye(3))"
_HPD = f"({_CM} @ np.conj({_CM}).T + np.diag(np.arange(1.0, 4.0)))"  # (distinct eigenvalues at 0)
_CPLX = [
    f"np.linalg.solve({_CM}, np.arange(3) + 1j)",
    f"np.linalg.inv({_CM})",
    f"np.linalg.det({_CM})",
    f"np.linalg.slogdet({_CM})[{{i}}]",
    f"np.linalg.svd({_CM}, compute_uv=False)",
    f"np.linalg.eigvalsh({_HPD})",
    f"np.linalg.eigh({_HPD})[0]",
    f"np.linalg.cholesky({_HPD})",
    f"np.linalg.qr({_CM})[1]",
    f"np.abs(np.linalg.qr({_CM})[0])",
    f"np.linalg.norm({_CM}, ord={{ord}})",
    f"np.linalg.pinv({_CM})",
    f"np.linalg.matrix_power({_CM}, -2)",
    f"T.scipy.linalg.expm({_CM} * 0.3)",
    f"np.sort_complex(np.linalg.eigvals({_CM}))",
    "np.fft.fft({U} * (1 + 0.5j), n={n}, norm={norm})",
    "np.fft.ifft({U} + 1j * np.cos({U}), axis={a}, norm={norm})",
    "np.fft.fft2(np.atleast_2d({U}) * 1j + 1)",
    "np.fft.hfft(np.ravel({U}) + 0.5j, n={n})",
    "np.fft.ihfft(np.ravel({U}), norm={norm})",
    "np.fft.fftshift(np.fft.fftn(np.atleast_2d({U}) + 0j), axes=-1)",
    "np.fft.irfft(np.fft.rfft(np.ravel({U}), norm={norm}), n={n}, norm={norm})",
]

# Singular, rank-deficient and moderately ill-conditioned matrices, one or a batch. (No eigh here:
# at a zero input these matrices have repeated eigenvalues, whose eigenvectors, and so the
# derivatives through them, are any basis of the eigenspace.)
_M = "_matrix(np, {U}, 'any')"
_RANK1 = f"np.stack([{_M}[0], {_M}[0] * 2])"
_ILL = f"(np.outer({_M}[0], {_M}[0]) + 0.05 * np.eye(2, dtype={_M}.dtype))"
_BATCH = f"np.stack([{_M}, {_M}.T, {_M} @ {_M}])"
_SING = [
    f"np.linalg.matrix_rank({_RANK1})",
    f"np.linalg.matrix_rank({_BATCH})",
    f"np.linalg.det({_RANK1})",
    f"np.linalg.slogdet({_RANK1})[{{i}}]",
    f"np.linalg.pinv({_RANK1})",
    f"np.linalg.lstsq({_RANK1}, np.ones(2, {_M}.dtype))[{{j}}]",
    f"np.linalg.svd({_RANK1}, compute_uv=False)",
    f"np.linalg.inv({_ILL})",
    f"np.linalg.solve({_ILL}, np.ones(2, {_M}.dtype))",
    f"np.linalg.cond({_ILL})",
    f"np.linalg.det({_ILL}) + np.linalg.slogdet({_ILL})[1]",
    f"np.linalg.inv({_BATCH})",
    f"np.linalg.det({_BATCH})",
    f"np.linalg.solve({_BATCH}, np.ones((3, 2, 1), {_M}.dtype))",
    f"np.linalg.svd({_BATCH}, compute_uv=False)",
    f"np.linalg.slogdet({_BATCH})[{{i}}]",
    f"np.linalg.cholesky({_BATCH} @ np.swapaxes({_BATCH}, -1, -2))",
    f"np.linalg.qr({_BATCH})[1]",
    f"np.linalg.norm({_BATCH}, ord={{ord}}, axis=(1, 2))",
    f"np.linalg.pinv({_BATCH}, hermitian=False)",
    f"np.linalg.matrix_power({_BATCH}, {{pw}})",
]

_KEYS = [
    "T.random.key({s})",
    "T.random.PRNGKey({s})",
    "T.random.key({s}, impl='rbg')",
    "T.random.key({s}, impl='unsafe_rbg')",
    "T.random.fold_in(T.random.key({s}), 7)",
    "T.random.split(T.random.key({s}), 3)[2]",
    "T.random.wrap_key_data(T.random.key_data(T.random.key({s})))",
]
_DRAWS = [
    "T.random.normal({k}, {shape}, {dt})",
    "T.random.uniform({k}, {shape}, {dt}, minval=-2.0, maxval=3.0)",
    "T.random.randint({k}, {shape}, -5, 9)",
    "T.random.randint({k}, {shape}, np.iinfo(np.int32).min, np.iinfo(np.int32).max, dtype=np.int32)",
    "T.random.bernoulli({k}, 0.3, {shape})",
    "T.random.bits({k}, {shape}, np.uint8)",
    "T.random.bits({k}, {shape}, np.uint32)",
    "T.random.permutation({k}, 6)",
    "T.random.permutation({k}, np.arange(6.0) * 2, independent=True)",
    "T.random.choice({k}, 5, (3,), replace=False)",
    "T.random.choice({k}, np.arange(4.0), (3,), p=np.array([0.1, 0.2, 0.3, 0.4]))",
    "T.random.categorical({k}, np.array([0.0, -np.inf, 1.0, 0.5]), shape=(3,))",
    "T.random.gumbel({k}, {shape}, {dt})",
    "T.random.truncated_normal({k}, -1.0, 2.0, {shape}, {dt})",
    "T.random.exponential({k}, {shape}, {dt})",
    "T.random.laplace({k}, {shape}, {dt})",
    "T.random.logistic({k}, {shape}, {dt})",
    "T.random.cauchy({k}, {shape}, {dt})",
    "T.random.gamma({k}, 2.5, {shape}, {dt})",
    "T.random.beta({k}, 2.0, 3.0, {shape}, {dt})",
    "T.random.dirichlet({k}, np.array([1.0, 2.0, 0.5]), (2,), {dt})",
    "T.random.poisson({k}, 3.0, {shape})",
    "T.random.t({k}, 4.0, {shape}, {dt})",
    "T.random.chisquare({k}, 3.0, {shape}, {dt})",
    "T.random.rademacher({k}, {shape})",
    "T.random.maxwell({k}, {shape}, {dt})",
    "T.random.orthogonal({k}, 3, dtype={dt})",
    "T.random.ball({k}, 2, shape=(2,), dtype={dt})",
    "T.random.multivariate_normal({k}, np.zeros(2), np.array([[2.0, 0.5], [0.5, 1.0]]), (3,))",
    "T.random.lognormal({k}, 0.5, {shape}, {dt})",
    "T.random.pareto({k}, 3.0, {shape}, {dt})",
    "T.random.weibull_min({k}, 1.5, 2.0, {shape}, {dt})",
    "T.random.geometric({k}, 0.3, {shape})",
    "T.random.binomial({k}, 10, 0.3, {shape})",
    "T.random.triangular({k}, -1.0, 0.0, 2.0, {shape}, {dt})",
    "T.random.wald({k}, 1.5, {shape}, {dt})",
    "T.random.generalized_normal({k}, 1.5, {shape}, {dt})",
    "T.random.loggamma({k}, 0.5, {shape}, {dt})",
]


def _fill(expr, **params):
    """``expr`` with ``{U}``/``{B}`` kept as the operands' placeholders and the rest filled."""
    return expr.replace("{U}", "\x00").replace("{B}", "\x01").format(**params)


class _DrawnOp2(Op):
    """An Op whose whole expression is drawn, over one or two operands (``\\x00``, ``\\x01``)."""

    def render(self, operands, params):
        out = str(params["e"]).replace("\x00", operands[0])
        return out.replace("\x01", operands[1]) if len(operands) > 1 else out


def _drawn(forms, **choices):
    """A parameter rule: one of ``forms`` with each ``{name}`` drawn from ``choices[name]``."""
    return lambda shape: st.builds(
        lambda form, vals: {"e": _Raw(_fill(form, **vals))},
        st.sampled_from(forms),
        st.fixed_dictionaries({k: st.sampled_from(v) for k, v in choices.items()}),
    )


def _axis_choices():
    return [None, 0, -1, 1]


MODELS: list[Op] = [
    _DrawnOp(
        "models.train",
        "{e}",
        params=lambda shape: st.builds(
            lambda how, kind, act, off: {
                "e": _Raw(
                    f"(lambda g, p, X: {how})(lambda p, X: _model(T, np, {kind!r}, {act!r}, p, X), "
                    f"*_model_args(np, \x00, {kind!r}, {off}))"
                )
            },
            st.sampled_from(_TRAIN),
            st.sampled_from(_KINDS),
            st.sampled_from(_ACTS),
            st.sampled_from([0.0, 0.3]),
        ),
        kinds="f",
        specials=False,
    ),
    _DrawnOp2(
        "models.sort",
        "{e}",
        params=_drawn(
            _SORTS,
            a=_axis_choices(),
            d=[True, False],
            fill=["None", "0.0", "-1"],
            k=[0, 1, 2],
            i=[0, 1],
            side=["'left'", "'right'"],
            method=["'linear'", "'nearest'", "'lower'", "'midpoint'"],
        ),
        kinds="bif",
    ),
    _DrawnOp2("models.boundary", "{e}", params=_drawn(_BOUNDARY), kinds="f"),
    _DrawnOp2(
        "models.ints",
        "{e}",
        arity=2,
        params=_drawn(_INTS, k=[0, 1, 7, 8, 31, 32, 33, -1, 64]),
        kinds="i",
        mixes_dtypes=True,
    ),
    _DrawnOp2(
        "models.narrow",
        "{e}",
        params=_drawn(_NARROW, t=["np.float16", "np.bfloat16"], a=_axis_choices()),
        kinds="bif",
        mixes_dtypes=True,
    ),
    _DrawnOp2(
        "models.complex",
        "{e}",
        params=_drawn(
            _CPLX,
            i=[0, 1],
            ord=["None", "'fro'", "'nuc'", "1", "-1", "2", "-2", "np.inf"],
            n=["None", 2, 5],
            norm=["None", "'ortho'", "'forward'", "'backward'"],
            a=[0, -1],
        ),
        kinds="f",
        specials=False,
        mixes_dtypes=True,
    ),
    _DrawnOp2(
        "models.singular",
        "{e}",
        params=_drawn(
            _SING,
            i=[0, 1],
            j=[0, 1, 2, 3],
            ord=["None", "'fro'", "'nuc'", "1", "2", "-2", "np.inf"],
            pw=[0, 1, 3, -1],
        ),  # fmt: skip
        kinds="f",
        specials=False,
    ),
    _DrawnOp2(
        "models.random",
        "{e}",
        params=lambda shape: st.builds(
            lambda form, key, shp, dt: {"e": _Raw(form.format(k=key, shape=shp, dt=dt))},
            st.sampled_from(_DRAWS),
            st.builds(
                lambda f, s: f.format(s=s), st.sampled_from(_KEYS), st.sampled_from([0, 1, 42, 2**31 - 1])
            ),
            st.sampled_from(["(3,)", "(2, 2)", "()", "np.shape(\x00)"]),
            st.sampled_from(["np.float32", "np.float16", "np.bfloat16", "float"]),
        ),
        kinds="bif",
        mixes_dtypes=True,
    ),
    _DrawnOp2(
        "models.scalars",
        "{e}",
        arity=2,
        params=_drawn(
            [
                "{U} * _onp.float32(1.5) + {B}",
                "_onp.int8(3) + {U}",
                "{U} / _onp.float64(2) - {B}",
                "np.float16(2) * {U}",
                "{U} ** _onp.int32(2) + _onp.bool_(True)",
                "np.maximum({U}, _onp.uint8(1))",
                "{U} + 1e40 - {B}",
                "np.array(3, dtype=np.int8) + {U} * {B}",
                "{U} + _onp.array(1.5) * {B}",
                "np.where({U} > {B}, _onp.float32(2), 3)",
                "np.clip({U}, _onp.int8(-1), 2.5)",
                "np.full_like({U}, _onp.float16(0.1)) + {B}",
                "np.asarray(_onp.float32(0.5)) * {U}",
                "np.arange(_onp.int16(3)) + np.sum({U})",
                "({U} + {B}) * np.bfloat16(1.5)",
            ]
        ),
        kinds="bif",
        mixes_dtypes=True,
    ),
]
