"""The program table's session-19 draws (``progq.*``): where the older program tables had not gone.

The chain's steps (``_q_step``, mixed with ops_prog's elementwise, cast, reduction and shape steps):

- ``jax.numpy`` reductions and functions with their unusual keywords: ``where=`` with ``initial=``
  (max/min), ``keepdims``, ``dtype=``, ``correction=``, ``returned=``, ``mode=``/``fill_value=`` of
  ``take``/``take_along_axis``, the array API's ``clip(min=, max=)``, ``round`` with negative
  decimals, ``vector_norm``;
- integer and unsigned arithmetic at its edges: wrapping products and sums of 8/16/32-bit values,
  shifts by 0, the width and beyond it (and negative), ``INT_MIN // -1``, division and remainder by
  zero, float-to-integer conversion out of range, ``invert``/``bitwise_count``;
- long expressions mixing weak Python scalars (int, float, complex, bool) with every dtype;
- indexing: negative, out-of-range, ``None``/``Ellipsis``/negative-step mixtures, boolean masks,
  integer arrays, ``.at[]`` ``get``/``set``/``add``/``mul``/``min``/``max``/``apply`` with every
  ``mode`` (``fill`` with ``fill_value``, ``clip``, ``drop``, ``promise_in_bounds`` in range),
  ``unique_indices``/``indices_are_sorted``;
- ``lax.scan`` with ``reverse``/``unroll``/``length=``, ``while_loop``/``fori_loop`` under
  ``vmap`` with batched predicates and bounds;
- ``jax.random`` with typed keys (``key``, ``split``, ``fold_in``, ``key_data``/``wrap_key_data``)
  under ``vmap``/``jit``: normal, uniform, randint, bits, permutation, choice, categorical,
  bernoulli;
- ``jnp.linalg`` under ``vmap`` (inv, det, slogdet of stacks with singular members, eigh, svd,
  qr, solve, cholesky, pinv, lstsq, matrix_rank);
- ``jax.nn``: ``dot_product_attention`` with ``bias``/``mask``/``is_causal``/``scale``/sequence
  lengths/``local_window_size``, ``one_hot`` with ``dtype``/``axis``, ``logsumexp`` with ``b=``/
  ``where=``/``return_sign``, ``softmax``/``log_softmax``/``standardize`` with ``where=``.

The wrappers (``_q_wrap``): holomorphic ``grad``/``jacfwd``/``jacrev`` of complex programs, ``grad``
of a real function of complex values (JAX's conjugate convention), ``vjp`` with a complex
cotangent, ``lax.scan`` over a program with ``reverse``/``unroll``, ``vmap`` of a ``while_loop``
whose predicate depends on the mapped value, ``jit(vmap(grad))``.

Long run only (as the other session tables), ``FUNCGRAD_FUZZ_ONLY=progq.``.

>>> _q_step.__name__
'_q_step'
"""

from __future__ import annotations

from hypothesis import strategies as st

_Q_KW = [
    "np.sum(X, axis={ax}, where=X > 0, keepdims={k})",
    "np.sum(X, axis={ax}, dtype=np.{d}, initial=3)",
    "np.max(X, axis={ax}, initial=-1.0, where=X < 1)",
    "np.min(X, axis={ax}, initial=2, where=X != 0, keepdims={k})",
    "np.prod(X, axis={ax}, where=X != 0, dtype=np.{d})",
    "np.mean(X, axis={ax}, where=X > -1, keepdims={k})",
    "np.var(X, axis={ax}, where=X > 0, ddof={dd})",
    "np.std(X, axis={ax}, correction={dd}, keepdims={k})",
    "np.any(X, axis={ax}, where=X > 0, keepdims={k})",
    "np.all(X, axis={ax}, where=X != 1)",
    "np.argmax(X, axis={ax}, keepdims={k})",
    "np.argmin(X, axis=-1, keepdims=True)",
    "np.count_nonzero(X, axis={ax}, keepdims={k})",
    "np.ptp(X, axis={ax}, keepdims={k})",
    "np.average(X, axis={ax}, weights=np.abs(X) + 1, returned=True)[1]",
    "np.average(X, axis={ax}, weights=np.abs(X) + 1)",
    "np.nansum(X, axis={ax}, where=X > 0, keepdims={k})",
    "np.nanmax(X, axis={ax}, initial=0.5, where=X < 2)",
    "np.linalg.vector_norm(X, ord={o}, axis={ax}, keepdims={k})",
    "np.round(X, {dec})",
    "np.clip(X, min=Y)",
    "np.clip(X, max=Y, min=-1)",
    "np.take(X, np.array([-1, 0, 5]), mode='{tm}')",
    "np.take(X, np.array([-4, 2]), axis={ax1}, mode='fill', fill_value=-7)",
    "np.take_along_axis(X, np.argsort(X, axis=-1), axis=-1)",
    "np.take_along_axis(X, np.ones_like(X, dtype=np.int32) * {ix}, axis=-1, mode='{tm}')",
    "np.cumsum(X, axis={ax1}, dtype=np.{d})",
    "np.diff(X, n={dd}, axis=-1, prepend=0)",
    "np.sort(X, axis=None)",
    "np.flip(X, axis={ax})",
    "np.moveaxis(np.atleast_2d(X), 0, -1)",
    "np.repeat(X, 2, axis={ax}, total_repeat_length={n})",
]
_Q_INT = [
    "X.astype(np.uint8) * np.uint8(200)",
    "X.astype(np.int8) + np.int8(127)",
    "X.astype(np.int16) * np.int16(-300) - np.int16(32000)",
    "X.astype(np.uint32) - np.uint32(1)",
    "np.left_shift(X.astype(np.int32), {sh})",
    "np.right_shift(X.astype(np.int8), {sh})",
    "np.right_shift(X.astype(np.uint16), {sh})",
    "lax.shift_right_logical(X.astype(np.int32), np.int32({sh}))",
    "lax.shift_right_arithmetic(X.astype(np.int16), np.int16({sh}))",
    "lax.shift_left(X.astype(np.uint8), np.uint8({ush}))",
    "np.left_shift(X.astype(np.uint64), np.uint64({ush}))",
    "np.invert(X.astype(np.uint8))",
    "np.bitwise_count(X.astype(np.int16))",
    "X.astype(np.int16) // np.int16(-3)",
    "X.astype(np.int32) % np.int32(-5)",
    "np.floor_divide(X.astype(np.int8), np.int8(0))",
    "np.remainder(X.astype(np.int32), np.int32(0))",
    "lax.div(np.full(np.shape(X), -2147483648, np.int32), np.int32(-1))",
    "lax.rem(X.astype(np.int32), np.int32(-1))",
    "np.negative(X.astype(np.uint32))",
    "np.abs(X.astype(np.int8) - np.int8(127) - np.int8(1))",
    "X.astype(np.int32) ** 3",
    "(X * 3e9).astype(np.int32)",
    "(X * 300).astype(np.uint8)",
    "(X * 1e20).astype(np.int64)",
    "np.where(np.isfinite(X), X, 0).astype(np.uint16)",
    "np.gcd(X.astype(np.int32), np.int32(6))",
    "np.lcm(X.astype(np.int16), np.int16(4))",
    "np.power(X.astype(np.int8), np.int8(2))",
]
_Q_WEAK = [
    "(X + 1) * 2.5 - (X // 2) + True",
    "X * 1j + 2 - 0.5",
    "np.float16(1) + X * 0.1 + 3",
    "(X > 0) * 1.5 + 2",
    "X ** 2.0 + X ** 2 + 2 ** np.abs(X)",
    "np.int8(1) + X * 2 - 3.0",
    "lax.add(X, 1.0) * 2",
    "np.where(X > 0, 1, 2.5) + X",
    "np.where(X > 0, X, 0) * 0.5j",
    "(X - 1) / 3 + (X + 1) // 3",
    "-X + 1e10 - 1e10",
    "np.maximum(X, 0) + np.minimum(X, 1.5) * 2",
    "True + X * False",
    "np.uint8(3) * X + 1",
    "X * 2 ** -3 + 0.25",
    "np.asarray(2) * X + np.asarray(1.5)",
    "np.sum(X * 0.1) + 2",
]
_Q_INDEX = [
    "X[..., None]",
    "X[None, ..., -1]",
    "X[::-1, None]",
    "X[..., None, ::-2]",
    "np.ravel(X)[np.array([-5, -1, 0, 7])]",
    "np.ravel(X)[np.array([[0, -1], [1, 2]])]",
    "np.ravel(X)[np.ravel(X) > 0]",
    "np.ravel(X)[np.array([True, False, True, False])[: np.size(X)]]",
    "np.atleast_1d(X)[-1:]",
    "np.atleast_2d(X)[:, None, np.array([0, -1])]",
    "np.atleast_2d(X)[np.array([0, 0]), ...]",
    "np.ravel(X).at[np.array([-1, 5, 0])].get(mode='{gm}', fill_value={fv})",
    "np.ravel(X).at[np.array([[0], [-1]])].get(mode='clip')",
    "np.ravel(X).at[np.array([1, -7, 2])].set(Y, mode='{sm}')",
    "np.ravel(X).at[np.array([0, 0, 1])].add(Y, mode='{sm}')",
    "np.ravel(X).at[np.array([0, 1])].add(1, mode='promise_in_bounds', indices_are_sorted=True, "
    "unique_indices=True)",
    "np.ravel(X).at[np.array([2, 0, 2])].mul(Y, mode='{sm}')",
    "np.ravel(X).at[np.array([-1, 9])].min(Y, mode='{sm}')",
    "np.ravel(X).at[np.array([0, -1])].max(Y)",
    "np.ravel(X).at[np.array([1, 3])].apply(np.sin, mode='{sm}')",
    "np.atleast_2d(X).at[0, ::-1].set(Y)",
    "np.atleast_2d(X).at[..., None, -1].add(2.0)",
    "np.atleast_1d(X).at[np.atleast_1d(X) > 0].set(0)",
    "np.where(X > 0, X, Y)",
]
_Q_CONTROL = [
    "lax.scan(lambda c, x: (c * 0.5 + x, c + x ** 2), np.zeros_like(np.atleast_1d(X)[0]), np.atleast_1d(X), "
    "reverse={b}, unroll={u})[1]",
    "lax.scan(lambda c, x: (c + x, c * x), np.ones_like(np.atleast_1d(X)[0]), np.atleast_1d(X), "
    "reverse={b}, unroll={u})[0]",
    "lax.scan(lambda c, _: (c * 1.1 + 1, c), X, None, length={n}, reverse={b}, unroll={u})[1]",
    "lax.scan(lambda c, xy: (c + xy[0] * xy[1], (c, xy[0])), np.zeros_like(np.atleast_1d(X)[0]), "
    "(np.atleast_1d(X), np.atleast_1d(X) * 2), reverse={b}, unroll={u})[1][0]",
    "T.vmap(lambda r: lax.while_loop(lambda c: c[0] < np.clip(r, -1, 4), "
    "lambda c: (c[0] + 1, c[1] * 1.5 + r), (np.zeros((), np.result_type(r)), r))[1])"
    "(np.ravel(X).astype(np.float32))",
    "T.vmap(lambda n: lax.fori_loop(0, n, lambda i, c: c * 1.5 + i, 1.0))"
    "(np.clip(np.nan_to_num(np.ravel(X)), 0, 4).astype(np.int32))",
    "T.vmap(lambda r, s: lax.while_loop(lambda c: (c[0] < 3) & (c[1] < s), lambda c: (c[0] + 1, c[1] + r), "
    "(0, r))[1])(np.ravel(X).astype(np.float32), np.ravel(X).astype(np.float32) + 2)",
    "lax.fori_loop(0, {n}, lambda i, c: c + X * i, np.zeros_like(X), unroll={u2})",
    "T.vmap(lambda r: lax.cond(r > 0, lambda r: r * 2, lambda r: -r, r))(np.ravel(X))",
    "lax.associative_scan(np.add, np.atleast_1d(X), reverse={b})",
]
_Q_RANDOM = [
    "T.vmap(lambda k, x: T.random.normal(k, ()) * x)(T.random.split(T.random.key(0), np.size(X)), "
    "np.ravel(X).astype(np.float32))",
    "T.random.key_data(T.random.split(T.random.key(1), 3))",
    "T.random.uniform(T.random.fold_in(T.random.key(2), 7), np.shape(X))",
    "T.random.bits(T.random.key(3), (2,), np.uint8)",
    "T.random.randint(T.random.key(4), np.shape(X), -5, 5)",
    "T.random.permutation(T.random.key(6), np.ravel(X))",
    "T.random.categorical(T.random.key(7), np.atleast_1d(X).astype(np.float32))",
    "T.random.bernoulli(T.random.key(8), special.expit(X))",
    "T.random.key_data(T.random.wrap_key_data(T.random.key_data(T.random.key(9))))",
    "T.vmap(lambda k: T.random.uniform(k, (2,)))(T.random.split(T.random.key(10), 3))",
    "T.jit(lambda k: T.random.normal(T.random.split(k)[1], (3,)))(T.random.key(11))",
    "T.random.choice(T.random.key(12), np.arange(5), (3,), replace=False)",
    "T.random.choice(T.random.key(13), np.ravel(X), (2,), p=np.array([0.5] * 2 + [0.0] * (np.size(X) - 2)) "
    "if np.size(X) >= 2 else np.ravel(X))",
    "T.vmap(lambda i: T.random.uniform(T.random.fold_in(T.random.key(14), i)))(np.arange(3))",
    "X + T.random.normal(T.random.key(15), np.shape(X), np.float32)",
]
_Q_LINALG = [
    "T.vmap(np.linalg.inv)(np.reshape(_signal(np, X, 8), (2, 2, 2)) + 2 * np.eye(2))",
    "T.vmap(np.linalg.det)(np.reshape(_signal(np, X, 18), (2, 3, 3)))",
    "np.linalg.slogdet(np.reshape(_signal(np, X, 8), (2, 2, 2)))[1]",
    "np.linalg.slogdet(np.stack([np.reshape(_signal(np, X, 4), (2, 2)), np.ones((2, 2))]))[1]",
    "T.vmap(lambda m: np.linalg.slogdet(m)[0])(np.reshape(_signal(np, X, 18), (2, 3, 3)))",
    "T.vmap(lambda m: np.linalg.eigh(m + m.T)[0])(np.reshape(_signal(np, X, 8), (2, 2, 2)))",
    "np.linalg.svd(np.reshape(_signal(np, X, 12), (2, 2, 3)), compute_uv=False)",
    "np.abs(np.linalg.qr(np.reshape(_signal(np, X, 8), (2, 2, 2)))[1])",
    "np.linalg.solve(np.reshape(_signal(np, X, 8), (2, 2, 2)) + 3 * np.eye(2), "
    "_signal(np, Y, 4).reshape(2, 2, 1))",
    "T.vmap(np.linalg.cholesky)(T.vmap(lambda m: m @ m.T + np.eye(2))"
    "(np.reshape(_signal(np, X, 8), (2, 2, 2))))",
    "T.vmap(np.linalg.pinv)(np.reshape(_signal(np, X, 12), (2, 3, 2)))",
    "np.linalg.lstsq(np.reshape(_signal(np, X, 6), (3, 2)) + np.eye(3, 2), _signal(np, Y, 3))[0]",
    "np.linalg.matrix_rank(np.reshape(_signal(np, X, 8), (2, 2, 2)))",
    "T.vmap(lambda m: np.trace(np.linalg.matrix_power(m, {n})))(np.reshape(_signal(np, X, 8), (2, 2, 2)))",
    "np.linalg.eigvalsh(np.reshape(_signal(np, X, 8), (2, 2, 2)), UPLO='{uplo}')",
    "np.linalg.norm(np.reshape(_signal(np, X, 8), (2, 2, 2)), ord='{mo}', axis=(-2, -1))",
]
_Q_NN = [
    "nn.dot_product_attention(_mat(np, X, (1, 3, 2, 2), 'float32'), _mat(np, Y, (1, 4, 2, 2), 'float32'), "
    "_mat(np, X + 1, (1, 4, 2, 2), 'float32'), mask=np.tril(np.ones((3, 4), bool)){attn})",
    "nn.dot_product_attention(_mat(np, X, (2, 3, 2, 4), 'float32'), _mat(np, Y, (2, 3, 2, 4), 'float32'), "
    "_mat(np, X * Y, (2, 3, 2, 4), 'float32'), bias=_mat(np, Y, (1, 2, 3, 3), 'float32'){attn})",
    "nn.dot_product_attention(_mat(np, X, (1, 4, 2, 2), 'float32'), _mat(np, X, (1, 4, 1, 2), 'float32'), "
    "_mat(np, Y, (1, 4, 1, 2), 'float32'), is_causal=True, local_window_size=(1, 1))",
    "nn.dot_product_attention(_mat(np, X, (1, 3, 1, 2), 'float32'), _mat(np, Y, (1, 3, 1, 2), 'float32'), "
    "_mat(np, Y, (1, 3, 1, 2), 'float32'), query_seq_lengths=np.array([2], np.int32), "
    "key_value_seq_lengths=np.array([{kv}], np.int32))",
    "nn.one_hot(np.round(np.nan_to_num(X)).astype(np.int32), 4, dtype=np.{d}, axis={ax1})",
    "nn.one_hot(X, 3)",
    "nn.logsumexp(X, axis={ax}, b=Y, keepdims={k})",
    "nn.logsumexp(X, axis={ax}, b=np.abs(Y), return_sign=True)[1]",
    "special.logsumexp(X, axis={ax}, where=X > 0)",
    "special.logsumexp(X, b=-np.abs(Y), return_sign=True)[0]",
    "nn.softmax(X, axis={ax}, where=X > 0)",
    "nn.log_softmax(X, axis=-1, where=X != 0)",
    "nn.standardize(X, axis={ax}, where=X > -1, epsilon=1e-3)",
    "nn.glu(np.concatenate([np.atleast_1d(X), np.atleast_1d(X) * 2], axis=-1))",
    "nn.relu6(X) + nn.hard_tanh(X) + nn.celu(X, alpha=0.5)",
]

_POOLS = {"qk": _Q_KW, "qi": _Q_INT, "qw": _Q_WEAK, "qx": _Q_INDEX, "qc": _Q_CONTROL, "qr": _Q_RANDOM,
          "ql": _Q_LINALG, "qn": _Q_NN}  # fmt: skip
_DTYPES = ["int32", "float32", "float64", "int8", "uint8", "float16", "complex64", "bool", "int64", "uint32"]
_ATTN = [
    "",
    ", scale=0.5",
    ", is_causal=True",
    ", bias=_mat(np, Y, (1, 1, 3, 4), 'float32')",
    ", implementation='xla'",
]


def _q_step(draw, names, scalars):
    """One step of a progq chain over earlier values ``names`` (or a NumPy/Python scalar for Y)."""
    pool = draw(st.sampled_from(list(_POOLS)))
    x = draw(st.sampled_from(names[-2:] + names))
    y = draw(st.sampled_from(names[-2:] + names + scalars[:6]))
    step = draw(st.sampled_from(_POOLS[pool]))
    params = dict(
        ax=draw(st.sampled_from(["-1", "0", "None", "(0, -1)"])),
        ax1=draw(st.sampled_from(["-1", "0"])),
        k=draw(st.booleans()),
        b=draw(st.booleans()),
        n=draw(st.sampled_from([1, 2, 3, 0])),
        d=draw(st.sampled_from(_DTYPES)),
        dd=draw(st.sampled_from([0, 1, 2])),
        o=draw(st.sampled_from(["2", "1", "np.inf", "-np.inf", "0", "3"])),
        dec=draw(st.sampled_from([0, 1, -1, 3])),
        tm=draw(st.sampled_from(["clip", "wrap", "fill"])),
        gm=draw(st.sampled_from(["fill", "clip", "promise_in_bounds"])),
        sm=draw(st.sampled_from(["drop", "clip", "fill"])),
        fv=draw(st.sampled_from(["None", "-1", "np.nan", "2.5"])),
        ix=draw(st.sampled_from([0, -1, 5])),
        sh=draw(st.sampled_from([0, 1, 7, 8, 15, 16, 31, 32, 33, -1])),
        ush=draw(st.sampled_from([0, 1, 7, 8, 63, 64])),
        u=draw(st.sampled_from([1, 2, 3, "True", "False"])),
        u2=draw(st.sampled_from([1, 2, "True"])),
        uplo=draw(st.sampled_from(["L", "U"])),
        mo=draw(st.sampled_from(["fro", "nuc"])),
        kv=draw(st.sampled_from([1, 2, 3])),
        attn=draw(st.sampled_from(_ATTN)),
    )
    return step.format(**params).replace("X", x).replace("Y", y)


_Q_WRAPS = [
    "holo_grad",
    "holo_jac",
    "complex_grad",
    "complex_vjp",
    "scan_over",
    "vmap_while",
    "jit_vmap_grad",
    "jit",
    "vmap",
    "grad",
]


def _q_wrap(draw, w, f, s):
    """One session-19 transformation of a function text ``f`` of (a, b) (``s``: f's scalar)."""
    c = draw(st.sampled_from(["np.complex64", "np.complex128"]))
    if w == "holo_grad":  # a holomorphic function's complex derivative
        return (
            f"(lambda a, b: T.grad(lambda z: np.sum(np.asarray({f}(z, b), {c}) * z), holomorphic=True)"
            f"(np.asarray(a, {c}) + 0.5j))"
        )
    if w == "holo_jac":
        j = draw(st.sampled_from(["jacfwd", "jacrev"]))
        return (
            f"(lambda a, b: T.{j}(lambda z: np.asarray({f}(z, b), {c}), holomorphic=True)"
            f"(np.asarray(a, {c}) - 0.25j))"
        )
    if w == "complex_grad":  # a real function of complex values: JAX's conjugate gradient
        return (
            f"(lambda a, b: T.grad(lambda z: np.sum(np.abs(np.asarray({f}(z, b), {c})) ** 2 + np.real(z) * "
            f"np.imag(z)))(np.asarray(a, {c}) * (1 - 0.5j)))"
        )
    if w == "complex_vjp":  # a complex cotangent through the program
        return (
            f"(lambda a, b: (lambda out, pull: pull(_probe(np, out) * (1 + 1j) "
            f"if np.iscomplexobj(out) else _probe(np, out))[0])"
            f"(*T.vjp(lambda z: {f}(z, b), np.asarray(a, {c}) + 0.5j)))"
        )
    if w == "scan_over":  # the program as a scan body, over rolled copies of a
        r, u = draw(st.booleans()), draw(st.sampled_from([1, 2, "True"]))
        return (
            f"(lambda a, b: lax.scan(lambda c, x: (c + np.sum(np.real({f}(x, b))), {f}(x, b)), 0.0, "
            f"_batch(np, a, 0, 3), reverse={r}, unroll={u})[1])"
        )
    if w == "vmap_while":  # a while_loop under vmap whose predicate depends on the mapped value
        return (
            f"(lambda a, b: T.vmap(lambda r: lax.while_loop("
            f"lambda c: c[0] < np.clip(np.real(np.sum(c[1])), -1, 3), "
            f"lambda c: (c[0] + 1, c[1] * 0.5 + {f}(r, b)), (0, {f}(r, b)))[1])(_batch(np, a, 0, 2)))"
        )
    if w == "jit_vmap_grad":
        return (
            f"(lambda a, b: T.jit(T.vmap(T.grad(lambda a, b: {s}), in_axes=(0, None)))"
            f"(_batch(np, a, 0, 2), b))"
        )
    raise ValueError(w)
