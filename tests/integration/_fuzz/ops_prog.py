"""The tenth part of the fuzzer's surface table: random *programs* under random transformations (session 14).

The other tables draw calls: one function (or one fixed body) per step. A random-program generator
(as the hidden "random programs compared with jax" tests use) draws the program itself, so this
table draws, for one or two operands ``a``, ``b``:

- a chain of 3-8 operations ``t0 := ..., t1 := ...`` over ``a``, ``b`` and the earlier ``t``'s:
  elementwise functions, arithmetic with broadcasting, comparisons and bit operations, casts to
  every dtype (int8..uint64, float16/bfloat16/float32/float64, complex64/128, bool), reductions
  with ``axis``/``keepdims``, reshapes, transposes, concatenation, products, ``.at[]`` updates with
  every ``mode``, gathers out of bounds, sorting, with Python scalars and NumPy scalars
  (``_onp.float32(1.5)``, ``_onp.uint8(200)``, ...) mixed in as operands;
- 1-3 transformations stacked on that function, each kept only where jax's abstract evaluation
  accepts it: ``jit``, ``checkpoint`` (with a policy), ``grad`` (``argnums`` tuples, ``has_aux``,
  ``allow_int``, dict inputs with ``None`` leaves), ``value_and_grad``, ``jvp``, ``vjp``,
  ``jacfwd``/``jacrev``, ``hessian``, ``vmap`` with random ``in_axes``/``out_axes`` (pytree
  ``in_axes``, ``None`` leaves, batch sizes 0-3), ``custom_jvp``/``custom_vjp`` wrappers whose rules
  are not the derivative, ``lax.cond``/``switch``/``while_loop``/``fori_loop``/``scan`` (reverse,
  unroll)/``lax.map`` around the function, ``stop_gradient``.

The session-16 programs (``progx.*``) add linear algebra on well-conditioned matrices, fft forms,
complex values and named checkpoints to the chain, and wrap it in holomorphic derivatives,
hessians/jacobians of two inputs with pytree outputs, linearize/vjp applied twice, jit with
static and donated arguments, checkpoint policies of names, scans of length 0 or without xs,
while loops under jvp and under vmap with a batched predicate.

The session-17 programs (``progy.*``) go where a hidden generator would and these had not: dtype
mixes promoted through the chain (int8/uint8/int16/bool, weak Python scalars on either side),
float16/bfloat16 chains ending in reductions, reductions with ``where=``/``initial=``/``keepdims``,
``take_along_axis``, ``nonzero``/``where`` with ``size=``, boolean masks, ``.at[]`` with negative,
out-of-range and repeated indices in every mode, ``einsum`` with drawn subscripts, every ``ord`` of
``linalg.norm``, ``jax.nn``'s functions with their keywords, ``associative_scan``, reparameterised
``jax.random`` samplers; wrapped in ``cond``/``switch`` over pytrees under ``vmap`` (a batched
predicate), ``fori_loop`` with traced bounds, custom rules under ``vmap`` of ``grad``, and
``checkpoint`` in a ``scan`` under ``grad`` of ``grad``.

The wide programs (``progw.*``, session 15; the ``prog.*`` draws are as before) go where a hidden
generator would: chains of 3-12 steps that may end in a join of two earlier values (DAGs),
reductions with ``where=``/``initial=``/axis tuples, dtype changes mid-chain (``bitcast_convert_type``,
``view``, ``reduce_precision``), integer wrap-around, division by zero (integer and float), NaN in
``where``'s dead branch under derivatives (JAX's NaN gradients), ``stop_gradient`` mid-chain, loops
carrying pytrees (dict/tuple carries with integer counters and None leaves) around the chain,
``cond``/``switch`` on a predicate batched by ``vmap`` (both branches run), and ``vmap(grad(vmap))``.

Several outputs (gradients by ``argnums``, ``has_aux``'s pair, ``jvp``'s pair) are flattened into one
vector in their common dtype (``_pack`` in programs.HELPERS); the long run's output pytrees compare
structures. The operands' avals are known while drawing (``programs.cases`` hands them to
``_ProgOp.drawn``), so each step is checked by ``jax.eval_shape`` as it is drawn.

Long run only (as the other session tables): the CI budget's cases stay those it drew before.

>>> PROG[0].name
'prog.unary'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from hypothesis import strategies as st

from _fuzz.opbase import Op
from _fuzz.ops_progq import _Q_WRAPS, _q_step, _q_wrap
from _fuzz.ops_progz import _Z_WRAPS, _z_step, _z_wrap

# ----------------------------------------------------------------------------------------------
# The chain's operations: X, Y are operand names (Y may be a scalar literal), {p} parameters.

_UNARY = [
    "np.sin(X)", "np.cos(X)", "np.tanh(X)", "np.exp(X)", "np.log1p(X)", "np.abs(X)", "np.square(X)",
    "np.sqrt(X)", "np.negative(X)", "np.sign(X)", "np.floor(X)", "np.round(X)", "np.logical_not(X)",
    "np.invert(X)", "np.expm1(X)", "np.reciprocal(X)", "np.real(X)", "np.imag(X)", "np.conj(X)",
    "np.arctan(X)", "nn.relu(X)", "nn.sigmoid(X)", "nn.softplus(X)", "special.erf(X)", "np.isnan(X)",
    "np.cbrt(X)", "np.sinh(X)", "np.log(X)", "lax.integer_pow(X, 3)", "X ** 2", "-X", "~X", "+X",
    "lax.stop_gradient(X)", "np.exp2(X)", "np.trunc(X)", "np.angle(X)", "np.isfinite(X)",
    "special.logit(X)", "nn.gelu(X)", "np.sinc(X)", "np.deg2rad(X)", "np.fix(X)", "np.positive(X)",
    "np.bitwise_count(X)", "np.signbit(X)", "np.nan_to_num(X)", "np.heaviside(X, 0.5)",
    "np.float_power(X, 2)", "special.gammaln(X)", "np.arcsinh(X)", "np.spacing(X)",
]  # fmt: skip
_CASTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
          "float32", "float64", "complex64", "complex128", "bool"]  # fmt: skip
_CAST = ["X.astype(np.{d})", "lax.convert_element_type(X, np.{d})", "np.asarray(X, dtype=np.{d})"]
_BINARY = [
    "X + Y", "X - Y", "X * Y", "X / Y", "X // Y", "X % Y", "X ** Y", "np.maximum(X, Y)",
    "np.minimum(X, Y)", "np.arctan2(X, Y)", "np.hypot(X, Y)", "np.where(X > Y, X, Y)", "X == Y",
    "X < Y", "X & Y", "X | Y", "X ^ Y", "X << Y", "X >> Y", "np.logaddexp(X, Y)", "np.fmax(X, Y)",
    "np.copysign(X, Y)", "lax.add(X, Y)", "lax.mul(X, Y)", "np.fmod(X, Y)", "np.remainder(X, Y)",
    "np.true_divide(X, Y)", "np.power(X, Y)", "np.subtract(X, Y)", "np.nextafter(X, Y)",
    "np.ldexp(X, Y)", "np.gcd(X, Y)", "np.logical_xor(X, Y)", "np.divmod(X, Y)[0]", "np.divmod(X, Y)[1]",
    "np.where(X, Y, -Y)", "np.clip(X, Y, 2)", "np.clip(X, -1, Y)", "special.xlogy(X, Y)",
    "lax.max(X, Y)", "lax.select(X > 0, X, Y)", "np.float_power(X, Y)", "np.isclose(X, Y)",
]  # fmt: skip
# Scalars mixed in as the Y operand: Python scalars (weak) and NumPy scalars (strong).
_SCALARS = [
    "2", "0.5", "-1.5", "True", "3", "1j", "0", "-2", "255", "1e10", "-0.0",
    "_onp.float32(1.5)", "_onp.int8(3)", "_onp.uint8(200)", "_onp.float16(2.0)", "_onp.float64(0.25)",
    "_onp.int32(-2)", "_onp.bool_(True)", "_onp.complex64(1 - 1j)", "_onp.uint64(5)", "_onp.int64(7)",
    "_onp.int16(-300)", "_onp.uint32(7)", "np.float32(0.75)", "np.int8(-1)", "np.bfloat16(3)",
]  # fmt: skip
_REDUCE = [
    "np.sum(X, axis={ax}, keepdims={k})", "np.mean(X, axis={ax}, keepdims={k})",
    "np.max(X, axis={ax}, keepdims={k})", "np.min(X, axis={ax}, keepdims={k})",
    "np.prod(X, axis={ax}, keepdims={k})", "np.var(X, axis={ax}, keepdims={k})",
    "np.std(X, axis={ax}, keepdims={k})", "np.any(X, axis={ax}, keepdims={k})",
    "np.all(X, axis={ax}, keepdims={k})", "np.argmax(X, axis={ax}, keepdims={k})",
    "np.argmin(X, axis={ax}, keepdims={k})", "np.cumsum(X, axis={ax})", "np.cumprod(X, axis={ax})",
    "special.logsumexp(X, axis={ax}, keepdims={k})", "np.sort(X, axis={ax})", "np.argsort(X, axis={ax})",
    "np.linalg.norm(X, axis={ax}, keepdims={k})", "np.nansum(X, axis={ax}, keepdims={k})",
    "np.count_nonzero(X, axis={ax}, keepdims={k})", "np.median(X, axis={ax}, keepdims={k})",
    "nn.softmax(X, axis={ax})", "nn.log_softmax(X, axis={ax})", "np.cummax(X, axis={ax})",
    "np.sum(X, axis={ax}, dtype=np.{d})", "np.mean(X, axis={ax}, dtype=np.{f})",
    "np.ptp(X, axis={ax}, keepdims={k})", "np.nanmax(X, axis={ax})", "np.diff(X, axis={ax})",
]  # fmt: skip
_SHAPE = [
    "X[..., None]", "X[None]", "np.expand_dims(X, 0)", "X.T", "np.transpose(X)", "np.reshape(X, (-1,))",
    "np.ravel(X)", "X[::-1]", "X[0]", "X[1:]", "X[-1]", "np.broadcast_to(X, (2,) + np.shape(X))",
    "np.concatenate([X, Y], axis=-1)", "np.concatenate([X, Y], axis=0)", "np.stack([X, Y])", "X @ Y",
    "np.dot(X, Y)", "np.outer(X, Y)", "np.einsum('...i,...i->...', X, Y)", "np.tile(X, 2)",
    "np.repeat(X, 2, axis=0)", "np.squeeze(X)", "np.flip(X)", "np.roll(X, 1)", "np.swapaxes(X, 0, -1)",
    "np.matmul(X, Y)", "np.vdot(X, Y)", "np.inner(X, Y)", "np.kron(X, Y)", "np.atleast_2d(X)",
    "np.pad(X, 1)", "np.triu(X)", "X[np.array([0, -1, 0])]",
    "np.take(X, np.array([0, 3, -5]), mode='{gm}')", "np.take(X, np.array([1, 0]), axis=-1, mode='{gm}')",
    "np.broadcast_arrays(X, Y)[0]", "np.moveaxis(X, 0, -1)", "np.trace(X)", "np.diagonal(X)",
    "np.cross(X, Y)", "np.convolve(X, Y)", "np.append(X, Y)", "np.unique(X, size=3, fill_value=0)",
]  # fmt: skip
_AT = [
    "X.at[{i}].set(Y, mode={m})", "X.at[{i}].add(Y, mode={m})", "X.at[{i}].mul(Y, mode={m})",
    "X.at[{i}].min(Y, mode={m})", "X.at[{i}].max(Y, mode={m})", "X.at[{i}].get(mode={m})",
    "X.at[{i}].get(mode='fill', fill_value=Y)", "X.at[{i}].divide(Y, mode={m})",
    "X.at[{i}].power(Y, mode={m})", "X.at[{i}].subtract(Y, mode={m})",
    "X.at[{i}].set(Y, mode={m}, unique_indices=True)", "X.at[{i}].add(Y, indices_are_sorted=True)",
    "X.at[{i}].apply(np.sin, mode={m})",
]  # fmt: skip
_AT_INDEX = ["0", "-1", "5", "-7", "1:", "::2", "np.array([0, 0, -1])", "np.array([1, 4])", "...", "(0, 1)",
             "np.array([[0], [1]])", "None", "np.array(True)", "np.array([True, False])"]  # fmt: skip
_AT_MODE = ["None", "'clip'", "'drop'", "'fill'", "'promise_in_bounds'"]

# The wide programs' further steps (session 15; progw.* only, so the older tables' seeds draw as
# before): reductions with where=/initial=/axis tuples, dtype changes mid-chain (bit casts, views,
# reduced precision), integer wrap-around, division by zero, NaN in where's dead branch (JAX's NaN
# gradients), stop_gradient mid-chain, and joins of two earlier values (DAGs, not chains).
_WIDE_REDUCE = [
    "np.sum(X, axis={axt}, keepdims={k}, where=X > 0)",
    "np.mean(X, axis={axt}, keepdims={k}, where=X != 0)",
    "np.max(X, axis={axt}, keepdims={k}, where=X < 1, initial=-3)",
    "np.min(X, axis={axt}, initial=5, where=X > -1)", "np.prod(X, axis={axt}, keepdims={k})",
    "np.var(X, axis={axt}, where=X > 0)", "np.std(X, axis={axt}, ddof=1)",
    "np.any(X, axis={axt}, keepdims={k}, where=X < 1)", "np.all(X, axis={axt}, where=X > 0)",
    "np.nansum(X, axis={axt}, where=X < 2)", "special.logsumexp(X, axis={axt}, keepdims={k}, where=X > -1)",
    "nn.softmax(X, axis={ax}, where=X > 0)", "np.sum(X, axis={axt}, keepdims={k}, dtype=np.{d})",
    "np.max(X, axis={axt}, keepdims={k})", "np.count_nonzero(X, axis={axt}, keepdims={k})",
]  # fmt: skip
_WIDE_DTYPE = [
    "lax.bitcast_convert_type(X.astype(np.float32), np.int32)",
    "lax.bitcast_convert_type(X.astype(np.int32), np.float32)",
    "lax.bitcast_convert_type(X.astype(np.uint16), np.float16)",
    "lax.bitcast_convert_type(X.astype(np.float16), np.int16)",
    "lax.bitcast_convert_type(X.astype(np.float32), np.uint8)",
    "lax.bitcast_convert_type(X.astype(np.bfloat16), np.uint16)", "X.astype(np.float32).view(np.int32)",
    "X.astype(np.int8).view(np.uint8)", "X.astype(np.uint32).view(np.float32)",
    "lax.reduce_precision(X.astype(np.float32), 5, 10)", "X.astype(np.bfloat16).astype(np.float32)",
    "np.real(X.astype(np.complex64) * 1j)", "X.astype(np.float16) * np.float16(1000)",
    "X.astype(np.uint8).astype(np.int8)",
]  # fmt: skip
_WIDE_INT = [
    "X.astype(np.int8) + np.int8(127)", "X.astype(np.uint8) - np.uint8(1)",
    "X.astype(np.int16) * np.int16(-32768)", "X.astype(np.int32) * np.int32(65536) * np.int32(65536)",
    "-(X.astype(np.int32) + np.int32(-2147483647) - np.int32(1))", "X.astype(np.uint32) << np.uint32(31)",
    "np.abs(X.astype(np.int8) * np.int8(-128))", "X.astype(np.uint16) * np.uint16(65535)",
    "X.astype(np.int8) // np.int8(-1)", "np.cumsum(X.astype(np.int8) * np.int8(100), axis=-1)",
    "np.sum(X.astype(np.uint8) + np.uint8(250), axis=-1, dtype=np.uint8)",
]  # fmt: skip
_WIDE_DIV0 = [
    "X.astype(np.int32) // 0", "X.astype(np.int32) % 0", "np.divmod(X.astype(np.int8), np.int8(0))[0]",
    "X.astype(np.uint8) // X.astype(np.uint8)", "np.remainder(X.astype(np.int16), X.astype(np.int16))",
    "X / 0.0", "X / -0.0", "np.float32(0) / X", "np.divide(X, X)", "np.fmod(X, 0.0)", "X % 0.0",
    "np.reciprocal(X * 0)", "X // 0.0", "0 * X / X",
]  # fmt: skip
_WIDE_WHERE = [
    "np.where(X > 0, np.sqrt(X), 0.0)", "np.where(X > 0, np.log(X), X)", "np.where(X != 0, 1 / X, 0.0)",
    "np.where(np.abs(X) < 1, np.arcsin(X), X)", "np.where(X > 0, X ** 0.5, -X)",
    "lax.select(X > 0, np.log(X), np.zeros_like(X))", "np.where(X > Y, np.log(X - Y), Y)",
    "np.where(np.isfinite(X), X, 0.0)", "np.where(X > 0, X, np.nan)", "X + lax.stop_gradient(Y - X)",
    "lax.stop_gradient(X) * X", "X * lax.stop_gradient(np.sign(X)) + Y",
]  # fmt: skip
_WIDE_JOIN = ["X + Y", "X * Y", "np.maximum(X, Y)", "_pack(T, np, (X, Y))", "np.where(X > Y, X, Y)"]

# The programs of session 16 (progx.* only): linear algebra on well-conditioned matrices built from
# a value (_matrix3: symmetric positive definite, smooth in every element), fft forms, complex
# values through the chain, and named checkpoints; wrapped (_X_WRAPS) in holomorphic derivatives,
# hessians/jacobians of several inputs with pytree outputs, linearize/vjp called twice, jit with
# static and donated arguments, checkpoint policies of names, scans of length 0 or without xs
# (reverse, unroll), while loops under jvp and under vmap with a batched predicate.
_X_LINALG = [
    "np.linalg.solve(_matrix3(np, X), _signal(np, Y, 3))", "np.linalg.cholesky(_matrix3(np, X))",
    "np.linalg.qr(_matrix3(np, X))[1]", "np.linalg.eigh(_matrix3(np, X))[0]",
    "np.linalg.svd(_matrix3(np, X), compute_uv=False)", "np.linalg.det(_matrix3(np, X))",
    "np.linalg.slogdet(_matrix3(np, X))[1]", "np.linalg.inv(_matrix3(np, X))",
    "np.linalg.eigvalsh(_matrix3(np, X))", "np.linalg.pinv(_matrix3(np, X))",
    "np.linalg.matrix_power(_matrix3(np, X), 3)", "np.linalg.solve(_matrix3(np, X), _matrix3(np, Y))",
    "np.linalg.qr(_matrix3(np, X))[0] @ np.linalg.qr(_matrix3(np, X))[1]",
    "np.linalg.norm(_matrix3(np, X), ord='fro')", "np.linalg.cond(_matrix3(np, X))",
    "np.linalg.matrix_rank(_matrix3(np, X))", "np.trace(np.linalg.inv(_matrix3(np, X)) @ _matrix3(np, Y))",
    "np.linalg.svd(_matrix3(np, X))[1]", "np.linalg.eigvals(_matrix3(np, X)).real",
]  # fmt: skip
_X_FFT = [
    "np.fft.fft(X)", "np.fft.ifft(X)", "np.fft.rfft(np.real(X))", "np.fft.irfft(X)", "np.fft.fftn(X)",
    "np.fft.fft2(np.atleast_2d(X))", "np.fft.fftshift(X)", "np.abs(np.fft.fft(X, n=4))",
    "np.fft.rfft(_signal(np, X, 6), norm='ortho')", "np.fft.hfft(X)", "np.fft.ifftn(X, norm='forward')",
    "np.real(np.fft.ifft(np.fft.fft(X)))",
]  # fmt: skip
_X_COMPLEX = [
    "X * (1 + 2j)", "np.exp(1j * X)", "np.conj(X) * X", "np.abs(X + 1j)", "np.real(np.log(X + 0.5j))",
    "np.angle(X * 1j + 1)", "np.sqrt(X.astype(np.complex64))", "np.imag(np.sin(X * (1 + 1j)))",
    "lax.complex(np.real(X).astype(np.float32), np.real(Y).astype(np.float32))", "X * np.conj(Y)",
    "np.tanh(X.astype(np.complex128))", "np.real(X) + np.imag(Y)", "X ** (0.5 + 0.5j)",
    "T.ad_checkpoint.checkpoint_name(np.sin(X), 'n0') * X",
]  # fmt: skip
_X_POLICIES = [
    "save_only_these_names('n0')", "save_any_names_but_these('n0')", "everything_saveable",
    "save_from_both_policies(T.checkpoint_policies.dots_saveable, T.checkpoint_policies.nothing_saveable)",
    "save_anything_except_these_names('n0')", "checkpoint_dots",
]  # fmt: skip
_X_WRAPS = [
    "holomorphic", "jac_holomorphic", "hessian_multi", "jacrev_tree", "jacfwd_tree", "linearize_twice",
    "vjp_twice", "jit_static", "jit_donate", "checkpoint_names", "scan_len0", "scan_noxs", "while_jvp",
    "while_vmap", "custom_jvp", "custom_vjp", "jit", "vmap", "grad",
]  # fmt: skip

# The programs of session 17 (progy.* only), where a hidden generator goes: dtype mixes promoted
# through the chain (int8/uint8/int16/bool operands, weak Python scalars at either side), float16 and
# bfloat16 chains ending in reductions, reductions with where=/initial=/keepdims, take_along_axis,
# one-argument where (nonzero with size=), boolean masks as multipliers and where=, .at[] with
# negative, out-of-range and repeated indices in every mode, einsum with drawn subscripts, every
# ord of linalg.norm, jax.nn's functions with their keywords (softmax/log_softmax where=, gelu
# approximate, one_hot, logsumexp b=/return_sign), associative_scan, reparameterised jax.random
# samplers; wrapped (_Y_WRAPS) in cond/switch over pytrees under vmap (a batched predicate),
# fori_loop with traced bounds, custom_jvp/custom_vjp under vmap of grad, checkpoint in a scan
# under grad of grad.
_Y_DTYPES = [
    "X.astype(np.int8) + Y", "X.astype(np.uint8) * 2 + Y", "(X > 0) + Y", "X.astype(np.int16) - Y * 3",
    "np.where(X > 0, X.astype(np.int8), Y.astype(np.uint8))", "2 * X + 1.5", "0.5 - X * 3",
    "(X > Y) * X + (X <= Y)", "X.astype(np.bool) & (Y > 0)", "X.astype(np.uint8) + np.uint8(250)",
    "X.astype(np.int8) * np.int8(-3) + 1", "True + X", "X.astype(np.int16) // 3 + Y",
    "np.maximum(X.astype(np.uint8), Y.astype(np.int8))", "X.astype(np.float16) * 0.1 + 3",
    "np.float32(2) * X.astype(np.bfloat16)", "X.astype(np.bfloat16) + Y.astype(np.float16)",
    "X.astype(np.int8) / 3", "X.astype(np.uint8) ** 2", "-X.astype(np.uint8)", "X.astype(np.int16) % -3",
]  # fmt: skip
_Y_HALF = [
    "np.sum(X.astype(np.float16) * 0.5, axis=-1)", "np.mean(np.exp(X.astype(np.bfloat16)), axis=0)",
    "np.cumsum(X.astype(np.float16), axis=-1)", "np.var(X.astype(np.bfloat16))",
    "nn.softmax(X.astype(np.float16), axis=-1)", "special.logsumexp(X.astype(np.bfloat16), axis=-1)",
    "np.prod(np.tanh(X.astype(np.float16)), axis=0)", "np.std(X.astype(np.float16), axis=-1, keepdims=True)",
    "nn.log_softmax(X.astype(np.bfloat16))", "np.max(np.sin(X.astype(np.bfloat16)) * 3, axis=-1)",
    "np.linalg.norm(X.astype(np.float16), axis=-1)", "np.sum(X.astype(np.bfloat16) ** 2) / np.size(X)",
    "nn.standardize(X.astype(np.float16), axis=-1)", "np.cumprod(X.astype(np.bfloat16) * 0.5, axis=0)",
]  # fmt: skip
_Y_REDUCE = [
    "np.max(X, axis={ax}, where=X > 0, initial=-1.0, keepdims={k})", "np.sum(X, where=X < 1, keepdims={k})",
    "np.prod(X, axis={ax}, where=X != 0, initial=2.0)", "np.min(X, initial=0.5, keepdims={k})",
    "np.mean(X, axis={ax}, where=X > -1, keepdims={k})", "np.sum(X, axis={ax}, initial=3, keepdims={k})",
    "np.any(X > 0, axis={ax}, where=X < 2, keepdims={k})", "np.all(X != 0, axis={ax}, where=X > -2)",
    "np.var(X, axis={ax}, where=X > 0, keepdims={k})", "np.nanmax(X, axis={ax}, initial=0.0)",
    "np.max(X, axis={ax}, initial=-np.inf, where=X > 0)", "np.argmax(X, axis={ax}, keepdims={k})",
    "np.sum(X, axis={ax}, dtype=np.int32, keepdims={k})", "np.count_nonzero(X > 0, axis={ax})",
]  # fmt: skip
_Y_INDEX = [
    "np.take_along_axis(X, np.argsort(X, axis=-1), axis=-1)",
    "np.take_along_axis(X, np.argmax(X, axis=-1, keepdims=True), axis=-1)",
    "np.take_along_axis(X, np.argsort(X, axis=0)[::-1], axis=0)",
    "np.take_along_axis(X, np.array([0, -1, 5])[(None,) * (np.ndim(X) - 1)], axis=-1, mode='{gm}')",
    "np.nonzero(X > 0, size=3, fill_value=-1)[0]", "np.where(X > 0, size=2, fill_value=0)[-1]",
    "np.flatnonzero(X, size=4)", "np.argwhere(X < 1, size=2)", "X * (X > 0)", "np.where(X > Y, 0.0, X)",
    "np.sum(X, where=X > Y)", "np.extract(X > 0, X, size=3, fill_value=9)",
    "X.at[np.array([-1, -1, 5, -7])].add(Y, mode={m})", "X.at[np.array([0, 0, 0])].set(Y, mode={m})",
    "X.at[np.array([-7, 2, -1])].mul(Y, mode={m})", "X.at[np.array([1, 1, -1])].min(Y, mode={m})",
    "X.at[np.array([9, -9])].get(mode={m}, fill_value=Y)", "X.at[-1:].max(Y, mode={m})",
    "X.at[np.array([[0, 1], [1, 0]])].add(Y, mode={m})",
    "X.at[..., np.array([0, -1, 0])].subtract(Y, mode={m})",
]  # fmt: skip
_Y_EINSUM = [
    "ij->ji", "ij->", "ii->i", "ij->j", "i,i->", "ij,jk->ik", "...i,...j->...ij", "ij,ij->i", "i,j->ij",
    "bi,bj->bij", "ij,kj->ik", "i->", "...->...", "ij,j->i", "ijk->kji", "ij,ij->", "ji,ik->jk", "i,i->i",
]  # fmt: skip
_Y_NORM_ORDS = ["None", "1", "2", "np.inf", "-np.inf", "0", "3", "-1", "-2", "0.5"]
_Y_MNORM_ORDS = ["None", "'fro'", "'nuc'", "1", "2", "np.inf", "-1", "-2", "-np.inf"]
_Y_NN = [
    "nn.softmax(X, axis=-1, where=X > 0)", "nn.log_softmax(X, where=X < 1)", "nn.gelu(X, approximate=True)",
    "nn.gelu(X, approximate=False)", "nn.one_hot(X.astype(np.int32), 4)", "nn.one_hot(X, 3, axis=0)",
    "special.logsumexp(X, axis=-1, b=Y)", "special.logsumexp(X, b=Y, return_sign=True)[1]",
    "nn.logsumexp(X, axis=-1, b=Y, return_sign=True)[0]", "nn.silu(X)", "nn.standardize(X, axis=-1)",
    "nn.relu6(X)", "nn.glu(np.concatenate([X, Y], axis=-1))", "nn.log_sigmoid(X)", "nn.elu(X, alpha=0.5)",
    "nn.celu(X)", "nn.selu(X)", "nn.leaky_relu(X, 0.2)", "nn.hard_tanh(X)", "nn.sparse_plus(X)",
    "nn.softmax(X, axis=(0, -1))", "nn.squareplus(X)", "nn.mish(X)", "nn.logsumexp(X, axis=0, keepdims=True)",
]  # fmt: skip
_Y_SCAN = [
    "lax.associative_scan(lax.add, X, axis=-1)", "lax.associative_scan(np.maximum, X, reverse=True)",
    "lax.associative_scan(lambda a, b: a * b, X, axis=0)", "lax.cumlogsumexp(X, axis=0, reverse=True)",
    "lax.associative_scan(lambda a, b: (a[0] + b[0], a[1] * b[1]), (X, Y))[0]",
    "lax.cummax(X, axis=0)", "lax.cumsum(X, axis=0, reverse=True)",
]  # fmt: skip
_Y_RANDOM = [
    "X + np.exp(Y) * T.random.normal(T.random.key(0), np.shape(X), np.result_type(X))",
    "T.random.gamma(T.random.key(1), np.abs(X) + 0.5)",
    "T.random.beta(T.random.key(2), np.abs(X) + 0.5, 2.0)",
    "X * T.random.uniform(T.random.PRNGKey(3), np.shape(X), minval=-1.0, maxval=Y)",
    "T.random.dirichlet(T.random.key(4), np.abs(X) + 1.0)",
    "T.random.loggamma(T.random.key(5), np.abs(X) + 1.0)",
    "T.random.truncated_normal(T.random.key(6), -1.0, 1.0, np.shape(X)) * X",
    "T.random.exponential(T.random.key(7), np.shape(X)) / (1 + X ** 2)",
]  # fmt: skip
_Y_WRAPS = [
    "vmap_cond_tree", "vmap_switch_tree", "fori_traced", "vmap_grad_cjvp", "vmap_grad_cvjp",
    "grad_grad_scan_checkpoint", "jit", "vmap", "grad",
]  # fmt: skip


@dataclasses.dataclass(frozen=True)
class _ProgOp(Op):
    """An Op whose whole expression is drawn from its operands' avals (``drawn``: a list of
    (shape, dtype) -> a strategy of {"e": the expression, operand i written as \\x00i})."""

    drawn: Callable | None = None

    def render(self, operands, params):
        e = str(params["e"])
        for i, name in enumerate(operands):
            e = e.replace(f"\x00{i}", name)
        return e


def _ok(expr: str, avals) -> tuple | None:
    from _fuzz import programs

    names = [f"a{i}" for i in range(len(avals))]
    for i, n in enumerate(names):
        expr = expr.replace(f"\x00{i}", n)
    out = programs._abstract().eval_shape(expr, list(avals))
    return None if out is None or "float0" in str(out[1]) else out  # (float0 values: not drawn on)


def _chain_step(draw, names, wide=False):
    if wide == "q":  # (session 19: ops_progq's steps, two in three)
        if draw(st.integers(0, 2)):
            return _q_step(draw, names, _SCALARS)
        wide = False
    if wide == "z":  # (session 18: ops_progz's steps, two in three)
        if draw(st.integers(0, 2)):
            return _z_step(draw, names, _SCALARS)
        wide = False
    if wide == "y":
        pool = draw(st.sampled_from(
            ["u", "cast", "b", "bs", "r", "shape", "at", "yd", "yd", "yh", "yh", "yr", "yr", "yi", "yi",
             "ye", "yn", "ynn", "ynn", "ys", "yrand"]
        ))  # fmt: skip
        if pool.startswith("y"):
            return _y_step(draw, pool, names)
        wide = False
    if wide == "x":
        pool = draw(
            st.sampled_from(["u", "cast", "b", "bs", "r", "shape", "at", "xl", "xl", "xf", "xc", "xc"])
        )
        if pool in ("xl", "xf", "xc"):
            x = draw(st.sampled_from(names[-2:] + names))
            y = draw(st.sampled_from(names[-2:] + names))
            table = {"xl": _X_LINALG, "xf": _X_FFT, "xc": _X_COMPLEX}[pool]
            return draw(st.sampled_from(table)).replace("X", x).replace("Y", y)
        wide = False
    if wide:
        pool = draw(
            st.sampled_from(["u", "cast", "b", "bs", "r", "shape", "at", "wr", "wd", "wi", "w0", "ww"])
        )
    else:
        pool = draw(st.sampled_from(["u", "u", "cast", "b", "b", "bs", "r", "shape", "at"]))
    x = draw(st.sampled_from(names[-2:] + names))
    y = draw(st.sampled_from(names[-2:] + names))
    if pool == "wr":
        ax = draw(st.sampled_from(["-1", "0"]))
        axt = draw(st.sampled_from(["(0, 1)", "(-1, 0)", "(0,)", "()", "None", "-1", "(1, -1)"]))
        k, d = draw(st.booleans()), draw(st.sampled_from(_CASTS))
        return draw(st.sampled_from(_WIDE_REDUCE)).format(ax=ax, axt=axt, k=k, d=d).replace("X", x)
    if pool in ("wd", "wi", "w0"):
        table = {"wd": _WIDE_DTYPE, "wi": _WIDE_INT, "w0": _WIDE_DIV0}[pool]
        return draw(st.sampled_from(table)).replace("X", x)
    if pool == "ww":
        return draw(st.sampled_from(_WIDE_WHERE)).replace("X", x).replace("Y", y)
    if pool == "u":
        return draw(st.sampled_from(_UNARY)).replace("X", x)
    if pool == "cast":
        return draw(st.sampled_from(_CAST)).format(d=draw(st.sampled_from(_CASTS))).replace("X", x)
    if pool in ("b", "bs"):
        y = draw(st.sampled_from(_SCALARS)) if pool == "bs" else y
        if draw(st.booleans()):
            x, y = y, x
        return draw(st.sampled_from(_BINARY)).replace("X", x).replace("Y", y)
    if pool == "r":
        ax = draw(st.sampled_from(["-1", "0", "None", "1", "(0, -1)"]))
        k = draw(st.booleans())
        d = draw(st.sampled_from(_CASTS))
        # (mean's dtype inexact: jax's integer mean of an empty axis divides by a constant 0, and
        # XLA's constant folding of that kills the process with SIGFPE, eagerly or under jit)
        f = draw(st.sampled_from(["float16", "bfloat16", "float32", "float64", "complex64"]))
        return draw(st.sampled_from(_REDUCE)).format(ax=ax, k=k, d=d, f=f).replace("X", x)
    if pool == "shape":
        gm = draw(st.sampled_from(["clip", "wrap", "fill"]))
        return draw(st.sampled_from(_SHAPE)).format(gm=gm).replace("X", x).replace("Y", y)
    y = draw(st.sampled_from([y, y] + _SCALARS))
    i = draw(st.sampled_from(_AT_INDEX))
    m = draw(st.sampled_from(_AT_MODE))
    return draw(st.sampled_from(_AT)).format(i=i, m=m).replace("X", x).replace("Y", y)


def _y_step(draw, pool, names):
    x = draw(st.sampled_from(names[-2:] + names))
    y = draw(st.sampled_from(names[-2:] + names + _SCALARS[:6]))
    if pool == "ye":
        subs = draw(st.sampled_from(_Y_EINSUM))
        ops = "X" if "," not in subs.split("->")[0] else "X, Y"
        return f"np.einsum('{subs}', {ops})".replace("X", x).replace("Y", y)
    if pool == "yn":
        if draw(st.booleans()):
            o, ax, k = (
                draw(st.sampled_from(_Y_NORM_ORDS)),
                draw(st.sampled_from(["-1", "0", "None"])),
                draw(st.booleans()),
            )
            return (
                f"np.linalg.norm({x}, ord={o}, axis={ax}, keepdims={k})"
                if ax != "None"
                else f"np.linalg.norm(np.ravel({x}), ord={o})"
            )
        o = draw(st.sampled_from(_Y_MNORM_ORDS))
        return f"np.linalg.norm(_matrix3(np, {x}), ord={o})"
    table = {"yd": _Y_DTYPES, "yh": _Y_HALF, "yr": _Y_REDUCE, "yi": _Y_INDEX, "ynn": _Y_NN, "ys": _Y_SCAN,
             "yrand": _Y_RANDOM}[pool]  # fmt: skip
    ax, k = draw(st.sampled_from(["-1", "0", "None", "(0, -1)"])), draw(st.booleans())
    gm, m = draw(st.sampled_from(["clip", "fill"])), draw(st.sampled_from(_AT_MODE))
    step = draw(st.sampled_from(table)).format(ax=ax, k=k, gm=gm, m=m)
    return step.replace("X", x).replace("Y", y)


def _chain(draw, call, avals, wide=False):
    """A function text ``(lambda a, b: (t0 := ..., ...)[-1])`` of 3-8 steps valid on ``avals`` (wide:
    3-12 steps, ending at times in a join of two earlier values, so the program is a DAG)."""
    names, steps = ["a", "b"], []
    n = draw(st.integers(3, 12 if wide is True else 8))
    for i in range(n):
        for _attempt in range(5):
            if wide is True and i == n - 1 and len(names) > 3 and draw(st.booleans()):
                x, y = draw(st.sampled_from(names[2:])), draw(st.sampled_from(names[2:-1]))
                step = draw(st.sampled_from(_WIDE_JOIN)).replace("X", x).replace("Y", y)
            else:
                step = _chain_step(draw, names, wide)
            body = ", ".join([*steps, f"t{len(steps)} := {step}"])
            fn = f"(lambda a, b: ({body},)[-1])"
            if _ok(f"{fn}{call}", avals) is not None:
                steps.append(f"t{len(steps)} := {step}")
                names.append(f"t{len(steps) - 1}")
                break
    if not steps:
        return None
    return f"(lambda a, b: ({', '.join(steps)},)[-1])"


_POLICIES = ["nothing_saveable", "everything_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable"]


_WIDE_WRAPS = [
    "fori_tree",
    "while_tree",
    "scan_tree",
    "vmap_cond",
    "vmap_grad_vmap",
    "grad_vmap",
    "vmap_switch",
]


def _wrap(draw, f, wide=False):
    """One transformation of a function text ``f`` of (a, b) to an array: a function text of (a, b)
    (wide: also control flow with pytree carries around ``f``, ``cond``/``switch`` on a traced
    predicate under ``vmap`` (both branches run), ``vmap(grad(vmap(f)))``)."""
    w = draw(st.sampled_from([
        "jit", "jit", "checkpoint", "grad", "grad_argnums", "grad_aux", "grad_dict", "value_and_grad",
        "jvp", "jvp2", "vjp", "jacfwd", "jacrev", "hessian", "vmap", "vmap", "vmap_tree", "custom_jvp",
        "custom_vjp", "cond", "switch", "fori", "while", "scan", "map", "stop_gradient",
    ] + (_WIDE_WRAPS * 2 if wide is True else []) + (_X_WRAPS * 3 if wide == "x" else [])
        + (_Y_WRAPS * 3 if wide == "y" else []) + (_Z_WRAPS * 2 if wide == "z" else [])
        + (_Q_WRAPS * 2 if wide == "q" else [])))  # fmt: skip
    s = f"_scalar(T, np, {f}(a, b))"
    if wide == "q" and w in _Q_WRAPS and w not in ("jit", "vmap", "grad"):
        return _q_wrap(draw, w, f, s)
    if wide == "z" and w in _Z_WRAPS and w not in ("jit", "vmap", "grad"):
        return _z_wrap(draw, w, f, s)
    if w in _WIDE_WRAPS:
        return _wide_wrap(draw, w, f, s)
    if w in _Y_WRAPS and w not in ("jit", "vmap", "grad"):
        return _y_wrap(draw, w, f, s)
    if w in _X_WRAPS and w not in ("custom_jvp", "custom_vjp", "jit", "vmap", "grad"):
        return _x_wrap(draw, w, f, s)
    if w == "jit":
        return f"T.jit({f})"
    if w == "checkpoint":
        p = draw(st.sampled_from(_POLICIES))
        return f"T.checkpoint({f}, policy=T.checkpoint_policies.{p})"
    if w == "grad":
        return f"(lambda a, b: T.grad(lambda a, b: {s})(a, b))"
    if w == "grad_argnums":
        argnums = draw(st.sampled_from(["(0, 1)", "(1,)", "(1, 0)", "1"]))
        return f"(lambda a, b: _pack(T, np, T.grad(lambda a, b: {s}, argnums={argnums})(a, b)))"
    if w == "grad_aux":
        return f"(lambda a, b: _pack(T, np, T.grad(lambda a, b: ({s}, {f}(a, b)), has_aux=True)(a, b)))"
    if w == "grad_dict":
        ai = draw(st.booleans())
        return (
            f"(lambda a, b: T.grad(lambda d: _scalar(T, np, {f}(d['p'], d['q'][0])), allow_int={ai})"
            "({'p': a, 'q': (b, None)})['p'])"
        )
    if w == "value_and_grad":
        return f"(lambda a, b: _pack(T, np, T.value_and_grad(lambda a, b: {s})(a, b)))"
    if w == "jvp":
        return f"(lambda a, b: T.jvp(lambda a: {f}(a, b), (a,), (_probe(np, a),))[1])"
    if w == "jvp2":
        return f"(lambda a, b: _pack(T, np, T.jvp({f}, (a, b), (_probe(np, a), _probe(np, b)))))"
    if w == "vjp":
        return f"(lambda a, b: (lambda o, pb: pb(_probe(np, o))[0])(*T.vjp(lambda a: {f}(a, b), a)))"
    if w in ("jacfwd", "jacrev"):
        argnums = draw(st.sampled_from(["0", "(0, 1)", "1"]))
        return f"(lambda a, b: _pack(T, np, T.{w}({f}, argnums={argnums})(a, b)))"
    if w == "hessian":
        return f"(lambda a, b: T.hessian(lambda a: {s})(a))"
    if w == "vmap":
        ia, ib = (
            draw(st.sampled_from(["0", "1", "-1", "None"])),
            draw(st.sampled_from(["0", "1", "-1", "None"])),
        )
        if ia == ib == "None":
            ia = "0"
        oa, n = draw(st.sampled_from(["0", "1", "-1"])), draw(st.sampled_from([2, 3, 1, 0]))
        return (
            f"(lambda a, b: T.vmap({f}, in_axes=({ia}, {ib}), out_axes={oa})"
            f"(_batch(np, a, {ia}, {n}), _batch(np, b, {ib}, {n})))"
        )
    if w == "vmap_tree":
        ia, n = draw(st.sampled_from(["0", "1", "-1"])), draw(st.sampled_from([2, 3, 1]))
        ib = draw(st.sampled_from(["0", "None"]))
        return (
            f"(lambda a, b: T.vmap(lambda d: {f}(d['p'][0], d['q']), "
            f"in_axes=({{'p': ({ia}, None), 'q': {ib}}},))"
            f"({{'p': (_batch(np, a, {ia}, {n}), None), 'q': _batch(np, b, {ib}, {n})}}))"
        )
    if w == "custom_jvp":
        return f"_cjvp(T, np, {f})"
    if w == "custom_vjp":
        return f"_cvjp(T, np, {f})"
    if w == "cond":
        return (
            f"(lambda a, b: lax.cond(np.sum(np.real(a)) > 0, {f}, lambda a, b: {f}(np.roll(a, 1), b), a, b))"
        )
    if w == "switch":
        return (
            f"(lambda a, b: lax.switch(np.sum(np.real(a) > 0) - 1, [{f}, lambda a, b: {f}(np.roll(a, 1), b), "
            f"lambda a, b: {f}(a, lax.stop_gradient(b))], a, b))"
        )
    if w == "fori":
        n = draw(st.sampled_from([0, 1, 3]))
        return f"(lambda a, b: lax.fori_loop(0, {n}, lambda i, c: c + {f}(np.roll(a, i), b), {f}(a, b)))"
    if w == "while":
        return (
            f"(lambda a, b: lax.while_loop(lambda c: c[0] < 2, "
            f"lambda c: (c[0] + 1, c[1] + {f}(np.roll(a, c[0]), b)), (0, {f}(a, b)))[1])"
        )
    if w == "scan":
        k, rev, unroll = draw(st.sampled_from([0, 1])), draw(st.booleans()), draw(st.sampled_from([1, 2]))
        return (
            f"(lambda a, b: lax.scan(lambda c, x: (c + {f}(x, b), {f}(x, b)), {f}(a, b), "
            f"np.stack([a, np.roll(a, 1), a]), reverse={rev}, unroll={unroll})[{k}])"
        )
    if w == "map":
        bs = draw(st.sampled_from(["None", "2"]))
        return (
            f"(lambda a, b: lax.map(lambda x: {f}(x, b), np.stack([a, np.roll(a, 1), a]), batch_size={bs}))"
        )
    return f"(lambda a, b: {f}(a, lax.stop_gradient(b)) + lax.stop_gradient({f}(a, b)))"


def _wide_wrap(draw, w, f, s):
    n = draw(st.sampled_from([0, 1, 2, 3]))
    if w == "fori_tree":  # a dict carry holding a tuple with a None leaf and an integer counter
        return (
            f"(lambda a, b: lax.fori_loop(0, {n}, lambda i, c: {{'s': c['s'] + {f}(np.roll(a, i), b), "
            f"'k': c['k'] + i, 'p': (c['p'][0] * 0.5, None)}}, {{'s': {f}(a, b), 'k': 0, "
            f"'p': (np.float32(1.0), None)}}))['s'])"
        )
    if w == "while_tree":  # a tuple carry: value, counter, a weak float scale
        return (
            f"(lambda a, b: lax.while_loop(lambda c: c[1] < {n}, lambda c: (c[0] + {f}(a, b) * c[2], "
            f"c[1] + 1, c[2] * 0.5), ({f}(a, b), 0, 1.0))[0])"
        )
    if w == "scan_tree":  # a dict carry and a pair of outputs per step, both packed
        return (
            f"(lambda a, b: _pack(T, np, lax.scan(lambda c, x: ({{'h': c['h'] + {f}(x, b), "
            f"'n': c['n'] + 1}}, ({f}(x, b), c['n'])), {{'h': {f}(a, b), 'n': np.int32(0)}}, "
            f"np.stack([a, np.roll(a, 1)]), reverse={draw(st.booleans())})))"
        )
    m = draw(st.sampled_from([1, 2, 3]))
    if w == "vmap_cond":  # the predicate is batched: both branches run, a select picks
        return (
            f"(lambda a, b: T.vmap(lambda a, b: lax.cond(np.sum(np.real(a)) > 0, {f}, "
            f"lambda a, b: {f}(np.roll(a, 1), b), a, b))(_batch(np, a, 0, {m}), _batch(np, b, 0, {m})))"
        )
    if w == "vmap_switch":
        return (
            f"(lambda a, b: T.vmap(lambda a, b: lax.switch(np.sum(np.real(a) > 0) - 1, [{f}, "
            f"lambda a, b: {f}(np.roll(a, 1), b), lambda a, b: {f}(a, lax.stop_gradient(b))], a, b), "
            f"in_axes=(0, None))(_batch(np, a, 0, {m}), b))"
        )
    if w == "vmap_grad_vmap":
        return (
            f"(lambda a, b: T.vmap(lambda a, b: T.grad(lambda a, b: _scalar(T, np, T.vmap({f}, "
            f"in_axes=(0, None))(_batch(np, a, 0, 2), b)))(a, b), in_axes=(0, None))"
            f"(_batch(np, a, 0, {m}), b))"
        )
    return (  # grad_vmap
        f"(lambda a, b: T.grad(lambda a, b: _scalar(T, np, T.vmap({f})(_batch(np, a, 0, {m}), "
        f"_batch(np, b, 0, {m}))))(a, b))"
    )


def _x_wrap(draw, w, f, s):
    n = draw(st.sampled_from([0, 1, 2, 3]))
    if w == "holomorphic":  # complex in, complex out: grad(holomorphic=True)
        return (
            f"(lambda a, b: T.grad(lambda z: np.sum(np.asarray({f}(z, b), np.complex64)), holomorphic=True)"
            f"(np.asarray(a, np.complex64)))"
        )
    if w == "jac_holomorphic":
        j = draw(st.sampled_from(["jacfwd", "jacrev"]))
        return (
            f"(lambda a, b: T.{j}(lambda z: np.asarray({f}(z, b), np.complex64), holomorphic=True)"
            f"(np.asarray(a, np.complex64)))"
        )
    if w == "hessian_multi":  # a pytree of pytrees over two inputs
        return f"(lambda a, b: _pack(T, np, T.hessian(lambda a, b: {s}, argnums=(0, 1))(a, b)))"
    if w in ("jacrev_tree", "jacfwd_tree"):  # several inputs, a dict/tuple output with a None leaf
        j = w.split("_")[0]
        argnums = draw(st.sampled_from(["(0, 1)", "(1, 0)", "0"]))
        return (
            f"(lambda a, b: _pack(T, np, T.{j}(lambda a, b: {{'o': {f}(a, b), 'p': ({s}, None)}}, "
            f"argnums={argnums})(a, b)))"
        )
    if w == "linearize_twice":  # the linear function applied twice (and once more, transposed)
        return (
            f"(lambda a, b: (lambda o, lin: _pack(T, np, (o, lin(_probe(np, a)), lin(_probe(np, a) * 2))))"
            f"(*T.linearize(lambda a: {f}(a, b), a)))"
        )
    if w == "vjp_twice":
        return (
            f"(lambda a, b: (lambda o, pb: _pack(T, np, (pb(_probe(np, o)), pb(_probe(np, o) * 2))))"
            f"(*T.vjp({f}, a, b)))"
        )
    if w == "jit_static":
        k = draw(st.sampled_from(["2", "-1", "0.5", "True", "(1, 2)"]))
        return (
            f"(lambda a, b: T.jit(lambda k, a, b: {f}(a, b) if k else {f}(b, a), static_argnums=0)"
            f"({k}, a, b))"
        )
    if w == "jit_donate":  # a donated copy of a (donation of a traced value is ignored, as JAX's)
        return f"(lambda a, b: T.jit({f}, donate_argnums=(0,))(np.array(a, copy=True), b))"
    if w == "checkpoint_names":
        p = draw(st.sampled_from(_X_POLICIES))
        return (
            f"T.checkpoint(lambda a, b: {f}(T.ad_checkpoint.checkpoint_name(a * 1, 'n0'), b), "
            f"policy=T.checkpoint_policies.{p})"
        )
    if w == "scan_len0":  # no iterations: the carry as given, ys empty
        k = draw(st.sampled_from([0, 1]))
        return (
            f"(lambda a, b: lax.scan(lambda c, x: (c + {f}(x, b), {f}(x, b)), {f}(a, b), "
            f"np.stack([a, a])[:0], reverse={draw(st.booleans())})[{k}])"
        )
    if w == "scan_noxs":
        unroll = draw(st.sampled_from(["1", "2", "True", "3"]))
        return (
            f"(lambda a, b: _pack(T, np, lax.scan(lambda c, _: (c * 0.5 + {f}(a, b), c), {f}(a, b), None, "
            f"length={n}, reverse={draw(st.booleans())}, unroll={unroll})))"
        )
    if w == "while_jvp":  # a while loop inside jvp: its tangent carried through the iterations
        return (
            f"(lambda a, b: _pack(T, np, T.jvp(lambda a: lax.while_loop(lambda c: c[0] < {n}, "
            f"lambda c: (c[0] + 1, c[1] * 0.5 + {f}(a, b)), (0, {f}(a, b)))[1], (a,), (_probe(np, a),))))"
        )
    m = draw(st.sampled_from([1, 2, 3]))
    return (  # while_vmap: the predicate reads the batched carry, so it is batched too
        f"(lambda a, b: T.vmap(lambda a, b: lax.while_loop(lambda c: (c[0] < {n + 1}) & "
        f"(np.sum(np.abs(np.real(c[1]))) < 1e3), lambda c: (c[0] + 1, c[1] * 0.5 + {f}(a, b)), "
        f"(0, {f}(a, b)))[1])(_batch(np, a, 0, {m}), _batch(np, b, 0, {m})))"
    )


def _y_wrap(draw, w, f, s):
    m = draw(st.sampled_from([1, 2, 3]))
    if w in ("vmap_cond_tree", "vmap_switch_tree"):  # pytree operands, a predicate batched by vmap
        branches = (
            f"lambda d: {{'x': {f}(d['p'][0], d['q']), 'n': d['n']}}, "
            f"lambda d: {{'x': {f}(np.roll(d['p'][0], 1), d['q']), 'n': d['n'] + 1}}"
        )
        ops = "{'p': (a, None), 'q': b, 'n': np.int32(2)}"
        call = (
            f"lax.cond(np.sum(np.real(a)) > 0, {branches}, {ops})"
            if w == "vmap_cond_tree"
            else f"lax.switch(np.sum(np.real(a) > 0) - 1, [{branches}], {ops})"
        )
        ib = draw(st.sampled_from(["0", "None"]))
        return (
            f"(lambda a, b: T.vmap(lambda a, b: {call}['x'], in_axes=(0, {ib}))"
            f"(_batch(np, a, 0, {m}), _batch(np, b, {ib}, {m})))"
        )
    if w == "fori_traced":  # a traced trip count: a while loop (no reverse mode, as JAX's)
        return (
            f"(lambda a, b: lax.fori_loop(np.int32(0), np.sum(np.real(a) > 0).astype(np.int32) % 3, "
            f"lambda i, c: c * 0.5 + {f}(np.roll(a, i), b), {f}(a, b)))"
        )
    if w in ("vmap_grad_cjvp", "vmap_grad_cvjp"):
        c = "_cjvp" if w == "vmap_grad_cjvp" else "_cvjp"
        return (
            f"(lambda a, b: T.vmap(T.grad(lambda a, b: _scalar(T, np, {c}(T, np, {f})(a, b))), "
            f"in_axes=(0, None))(_batch(np, a, 0, {m}), b))"
        )
    # grad_grad_scan_checkpoint: checkpoint in a scan body under a second derivative
    p = draw(st.sampled_from(_POLICIES))
    return (
        f"(lambda a, b: T.grad(lambda a: _scalar(T, np, T.grad(lambda a: _scalar(T, np, "
        f"lax.scan(lambda c, x: (c + T.checkpoint({f}, policy=T.checkpoint_policies.{p})(x, b), None), "
        f"{f}(a, b), np.stack([a, np.roll(a, 1)]))[0]))(a)))(a))"
    )


def _program(arity, wide=False):
    def drawn(avals):
        @st.composite
        def strategy(draw):
            call = "(\x000, \x001)" if arity == 2 else f"(\x000, {draw(st.sampled_from(_SCALARS))})"
            f = _chain(draw, call, avals, wide)
            if f is None:
                return {"e": "None"}  # (jax's abstract evaluation rejects it: not kept)
            for _ in range(draw(st.integers(1, 3))):
                for _attempt in range(3):
                    g = _wrap(draw, f, wide)
                    if _ok(f"{g}{call}", avals) is not None:
                        f = g
                        break
            return {"e": f"{f}{call}"}

        return strategy()

    return drawn


PROG: list[Op] = [
    _ProgOp("prog.unary", "", arity=1, kinds="bifc", mixes_dtypes=True, drawn=_program(1)),
    _ProgOp("prog.binary", "", arity=2, kinds="bifc", mixes_dtypes=True, drawn=_program(2)),
    _ProgOp("progw.binary", "", arity=2, kinds="bifc", mixes_dtypes=True, drawn=_program(2, wide=True)),
    _ProgOp("progw.unary", "", arity=1, kinds="bifc", mixes_dtypes=True, drawn=_program(1, wide=True)),
    _ProgOp("progx.binary", "", arity=2, kinds="bifc", mixes_dtypes=True, drawn=_program(2, wide="x")),
    _ProgOp("progx.unary", "", arity=1, kinds="bifc", mixes_dtypes=True, drawn=_program(1, wide="x")),
    _ProgOp("progy.binary", "", arity=2, kinds="bifc", mixes_dtypes=True, drawn=_program(2, wide="y")),
    _ProgOp("progy.unary", "", arity=1, kinds="bifc", mixes_dtypes=True, drawn=_program(1, wide="y")),
    _ProgOp("progz.binary", "", arity=2, kinds="bifc", mixes_dtypes=True, drawn=_program(2, wide="z")),
    _ProgOp("progz.unary", "", arity=1, kinds="bifc", mixes_dtypes=True, drawn=_program(1, wide="z")),
    _ProgOp("progq.binary", "", arity=2, kinds="bifc", mixes_dtypes=True, drawn=_program(2, wide="q")),
    _ProgOp("progq.unary", "", arity=1, kinds="bifc", mixes_dtypes=True, drawn=_program(1, wide="q")),
]
