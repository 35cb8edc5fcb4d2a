"""The fuzzer's transformation-composition table (session 19, ``tcomp.*``): float programs under
stacks of two to four transformations, for wrong numbers in derivatives.

The other program tables (``ops_prog``) wrap a chain in one to three wrappers, mostly control flow.
This one draws the *stack*: a float program of (a, b) -- elementwise functions with kinks, dots and
einsums, reductions, indexing and scatters, ``cond``/``switch``/``while_loop``/``fori_loop``/``scan``
(carries, ``reverse``)/``lax.map`` steps, ``custom_jvp``/``custom_vjp`` with nondiff arguments
whose rules are not the derivative, ``checkpoint`` with policies, ``stop_gradient``, reshapes --
under two to four of ``grad`` (argnums), ``value_and_grad``, ``jacfwd``/``jacrev``, ``hessian``,
``jvp``, ``vjp``, ``linearize`` (the linear function called twice), ``vmap`` (in_axes and out_axes
0/1/-1/-2/None, ``axis_size`` with every input unbatched), ``jit``, ``jet`` (``experimental.jet``,
two orders) and ``eval_shape`` (its structs must be the values' own: the layer adds zeros of the
struct's shape and dtype). Each layer is kept only where jax's abstract evaluation accepts it (jet
refuses the primitives it has no rule for: those stacks are not drawn). The layers' outputs are
pytrees; the whole is flattened by ``_pack`` (programs.HELPERS) into one vector in the leaves' common
dtype. Inputs of 16-bit floats are not drawn on (this table is about the numbers of float64 and
float32 derivatives). Long run only: ``FUNCGRAD_FUZZ_ONLY=tcomp.``.

Session 20 added ``custom_vjp`` with pytree residuals and ``custom_jvp`` with symbolic zeros,
``while_loop`` whose predicate reads the (batched) carry, ``scan`` with ``unroll`` 3/True,
``checkpoint`` with named policies (``save_only_these_names``, ``save_any_names_but_these``, offload
to ``pinned_host``), ``cond`` over operands and results of other weak types, ``stop_gradient`` of a
product, and the layers: ``grad`` with an integer input (``allow_int``, ``has_aux``: a float0
gradient), ``jvp`` with a float0 tangent, ``grad(holomorphic=True)`` of a complex function of the
program, ``linear_transpose`` of a linearization and ``closure_convert``.

Session 21 added (``_FLOW21``, drawn as often as the older flow steps together) ``custom_vmap``
whose rule is not the function's batching and ``sequential_vmap``, ``custom_root`` (Newton, a
diagonal tangent solve) and ``custom_linear_solve`` (symmetric or with a transpose solve) closing
over traced values, ``scan`` over pytree ``xs`` of mixed dtypes (int and float32 leaves, length 0),
``while_loop`` over a dict carry with an integer leaf, ``checkpoint`` with ``static_argnums`` and
``prevent_cse``, ``named_call``/``named_scope``, and the collectives of a ``vmap`` axis name
(``psum``/``pmean``/``all_gather``/``psum_scatter`` (tiled too)/``ppermute``/``all_to_all``/
``axis_index``) inside the stack's derivatives; the layers: ``vmap`` with ``in_axes`` dicts and
``axis_size``, a named ``vmap`` centring its outputs with ``pmean``, ``jvp`` of ``linearize``'s
linear function, ``hessian``/``jacfwd``/``jacrev`` with integer ``has_aux`` outputs, ``grad`` of a
0-d result cast to float16/bfloat16/float32/float64; and, one program in eight, the stack's ``vjp``
(``has_aux``) called with a cotangent of another dtype or shape (``_err``: JAX's error class).

Session 22 added the layers: ``jit`` with ``static_argnums``/``static_argnames`` (a static Python
scale) and with ``donate_argnums``, ``make_jaxpr``'s output avals (rank, shape, dtype and weak type
of each, ``_tc_avals``, beside the values), ``vmap`` with pytree ``out_axes`` (``None`` for
unbatched leaves) and ``spmd_axis_name``/``axis_name``, ``jacfwd``/``jacrev(holomorphic=True)``,
``grad`` at float16/bfloat16 inputs, ``checkpoint`` with a policy as a layer, and ``linearize``'s
linear function and ``vjp``'s pullback called under ``jit``.

>>> [op.name for op in TCOMP]
['tcomp.unary', 'tcomp.binary']
"""

from __future__ import annotations

import dataclasses
import math

from hypothesis import strategies as st

from _fuzz.opbase import Op
from _fuzz.ops_prog import _POLICIES, _ok, _ProgOp

# Helpers every script defines (appended to programs.HELPERS).
HELPERS = """
def _jet(T, f, primals, series):
    # experimental.jet.jet of either library (the module is imported on first use)
    import importlib

    return importlib.import_module(T.__name__ + ".experimental.jet").jet(f, primals, series)


def _tprobe(T, np, tree, scale=1.0):
    # _probe of every leaf of a pytree (cotangents and tangents of pytree outputs)
    return T.tree_util.tree_map(lambda v: _probe(np, v) * np.asarray(scale, np.result_type(v)), tree)


def _tc_cjvp(T, np, x, k):
    # a custom_jvp of x with a nondiff Python scalar k whose rule is not the derivative
    def g(k, a):
        return np.sin(a) * k + a * a

    g = T.custom_jvp(g, nondiff_argnums=(0,))

    def rule(k, primals, tangents):
        (a,), (t,) = primals, tangents
        return g(k, a), (np.cos(a) * (k + 1.0) + a) * t

    g.defjvp(rule)
    return g(k, x)


def _tc_cvjp(T, np, x, y, k):
    # a custom_vjp of (x, y) (broadcast together) with a nondiff Python scalar k; the backward rule
    # is not the derivative
    def g(k, a, b):
        return np.tanh(a) * b + k * a

    g = T.custom_vjp(g, nondiff_argnums=(0,))

    def fwd(k, a, b):
        return g(k, a, b), (a, b)

    def bwd(k, res, ct):
        # (linear in ct, as a bwd must be: session 19's "+ k" made results depend on whether a
        # transformation calls bwd with a zero cotangent, session 20's seed 2005 case 8)
        a, b = res
        return ct * (1.0 - np.tanh(a) ** 2) * b * 2.0 + k * ct, ct * np.tanh(a) - 0.5 * ct

    g.defvjp(fwd, bwd)
    return g(k, *np.broadcast_arrays(x, y))


def _tc_cvjp_tree(T, np, x, y, k):
    # a custom_vjp with a nondiff Python scalar k whose residuals are a pytree (a dict of a tuple,
    # a list and the scalar); the backward rule is not the derivative
    def g(k, a, b):
        return np.tanh(a) * b + k * a

    g = T.custom_vjp(g, nondiff_argnums=(0,))

    def fwd(k, a, b):
        return g(k, a, b), {"t": (np.tanh(a),), "ab": [a, b], "k": k}

    def bwd(k, res, ct):
        (t,), (a, b) = res["t"], res["ab"]
        # (linear in ct, as a bwd must be: linear_transpose and jvp-of-grad layers transpose it)
        return ct * (1.0 - t**2) * b * 2.0 + k * res["k"] * ct, ct * t - 0.5 * ct * a

    g.defvjp(fwd, bwd)
    return g(k, *np.broadcast_arrays(x, y))


def _tc_cjvp_sz(T, np, x, y):
    # a custom_jvp with symbolic zeros: the rule tests each tangent for SymbolicZero (an input the
    # transformation does not differentiate) and is not the derivative
    def g(a, b):
        return np.sin(a) * b

    g = T.custom_jvp(g)

    def rule(primals, tangents):
        (a, b), (ta, tb) = primals, tangents
        zero = T.custom_derivatives.SymbolicZero
        out = 0.0 * a * b
        if type(ta) is not zero:
            out = out + np.cos(a) * b * ta * 1.5
        if type(tb) is not zero:
            out = out + np.sin(a) * tb
        return g(a, b), out

    g.defjvp(rule, symbolic_zeros=True)
    return g(*np.broadcast_arrays(x, y))

def _tc_cvmap(T, np, x, y):
    # custom_batching.custom_vmap whose rule is not the function's batching (a factor 1.5 on the
    # linear term): under vmap the rule runs, and its derivatives are the rule's
    @T.custom_batching.custom_vmap
    def g(a, b):
        return np.sin(a) * b + a

    @g.def_vmap
    def rule(axis_size, in_batched, a, b):
        return np.sin(a) * b + 1.5 * a, any(in_batched)

    return g(*np.broadcast_arrays(x, y))


def _tc_root(T, np, lax, x, y):
    # lax.custom_root: the root z of z**3 + z - c (elementwise), by Newton; the tangent solve divides
    # by the diagonal linear map's value at ones
    c = np.tanh(x) * y

    def f(z):
        return z**3 + z - c

    def solve(f, z):
        for _ in range(6):
            z = z - f(z) / (3.0 * z * z + 1.0)
        return z

    return lax.custom_root(f, np.zeros_like(c), solve, lambda g, r: r / g(np.ones_like(r)))


def _tc_linsolve(T, np, lax, x, y, symmetric):
    # lax.custom_linear_solve of a diagonal map closing over a traced value (2 + sin(y)**2)
    d = 2.0 + np.sin(y) ** 2 + 0.0 * x

    def solve(mv, r):
        return r / d

    if symmetric:
        return lax.custom_linear_solve(lambda v: v * d, x + 0.0 * d, solve, symmetric=True)
    return lax.custom_linear_solve(lambda v: v * d, x + 0.0 * d, solve, transpose_solve=solve)


def _tc_scope(T, f, *args):
    # f called inside a named_scope (names the equations; no effect on values)
    with T.named_scope("tc_scope"):
        return f(*args)


def _tc_ct(T, np, out, change):
    # a cotangent for out: the probe of each leaf, changed (cast, reshaped) by `change`
    return T.tree_util.tree_map(lambda v: change(_probe(np, v)), out)


def _tc_aux(T, np, r):
    # a (value, aux) pair with integer aux leaves as float32 values that carry their dtype's width
    # (_pack's common dtype of float32 and int64 is NumPy 2's float64 in 64-bit mode, jax's float32)
    enc = lambda v: np.asarray(v).astype(np.float32) + 1000.0 * np.asarray(v).dtype.itemsize
    return r[0], T.tree_util.tree_map(enc, r[1])


def _tc_center(T, np, lax, tree, name):
    # every float leaf minus its mean over the vmapped axis `name` (a collective in a layer)
    return T.tree_util.tree_map(
        lambda v: v - lax.pmean(v, name) if np.issubdtype(np.result_type(v), np.inexact) else v, tree
    )


_TC_DTYPES = ["float16", "bfloat16", "float32", "float64", "int32", "int64", "bool", "complex64",
              "complex128", "float0", "uint32", "int8", "uint8"]


def _tc_avals(T, np, closed):
    # make_jaxpr's output avals as a float32 NumPy vector: per aval its rank, shape, dtype's index
    # in _TC_DTYPES and weak type (a constant: the layer's value adds it to the program's outputs)
    code = []
    for v in closed.out_avals:
        code += [len(v.shape), *v.shape, _TC_DTYPES.index(str(v.dtype)), float(v.weak_type)]
    return _onp.asarray(code, _onp.float32)


def _tc_scale(T, np, tree, k):
    # every inexact leaf of tree times the (static) Python scalar k
    return T.tree_util.tree_map(lambda v: v * k if np.issubdtype(np.result_type(v), np.inexact) else v, tree)
"""

# ----------------------------------------------------------------------------------------------
# The body's steps: X, Y are operand names (Y may be a scalar literal); float in, float out.

_UNARY = [
    "np.sin(X)", "np.cos(X)", "np.tanh(X)", "np.exp(X)", "np.log1p(X * X)", "np.abs(X)", "np.square(X)",
    "np.sqrt(X * X + 0.5)", "nn.relu(X)", "nn.sigmoid(X)", "nn.softplus(X)", "special.erf(X)",
    "np.arctan(X)", "np.sinh(X)", "lax.integer_pow(X, 3)", "X ** 2", "-X", "np.expm1(X)", "nn.gelu(X)",
    "np.maximum(X, 0.0)", "np.minimum(X, 0.5)", "np.clip(X, -0.5, 1.0)", "np.where(X > 0, X, 0.1 * X)",
    "np.sign(X) * X", "lax.stop_gradient(X) * X", "nn.silu(X)", "np.log(np.abs(X) + 1.0)",
    "1.0 / (X * X + 1.0)",
    "np.cbrt(X * X + 1.0)", "lax.rsqrt(X * X + 1.0)", "np.floor(X) + X", "np.round(X) * X", "nn.elu(X)",
    "np.logaddexp(X, 0.0)", "special.logit(nn.sigmoid(X))", "np.arcsinh(X)", "np.cosh(X)", "X * 0.5 + 1",
]  # fmt: skip
_BINARY = [
    "X + Y", "X - Y", "X * Y", "X / (Y * Y + 1.0)", "np.maximum(X, Y)", "np.minimum(X, Y)",
    "np.arctan2(X, Y)", "np.hypot(X, Y)", "np.where(X > Y, X, Y)", "np.logaddexp(X, Y)", "X ** 2 * Y",
    "lax.stop_gradient(X) * Y", "np.copysign(X, Y)", "special.xlogy(X * X, Y * Y + 1.0)",
    "np.where(X > 0, np.sin(Y), X)", "X * np.cos(Y)", "lax.select(X > Y, X * Y, Y)",
]  # fmt: skip
# Functions at the edges of their domains (zeros, signed zeros, NaN and inf of the inputs' pool):
# where derivatives are inf, NaN or a convention (JAX's NaN gradients through where's dead branch).
_EDGE = [
    "np.sqrt(X)", "np.log(X)", "np.arctanh(X)", "np.arcsin(X)", "np.arccos(X)", "X ** 0.5",
    "np.power(X, 1.5)",
    "np.fmod(X, 0.7)", "lax.rem(X, -0.7)", "np.remainder(X, 0.7)", "np.abs(X) ** 3", "np.sqrt(np.abs(X))",
    "1 / X", "np.tan(X)", "np.where(X > 0, np.log(X), 0.0)", "np.where(X > 0, np.sqrt(X), X)",
    "np.maximum(X, X)",
    "np.linalg.norm(X)", "np.cbrt(X)", "lax.rsqrt(X)", "special.gammaln(X)", "np.sinc(X)", "np.log1p(X)",
    "special.xlogy(X, X)", "special.xlog1py(X, X)", "special.entr(X)", "np.arccosh(X)", "np.arcsinh(X)",
    "np.power(X, 0.0)", "np.power(X, 2.0)", "np.power(2.0, X)", "np.power(X, X)", "np.float_power(X, 3)",
    "lax.pow(X, 3)", "np.exp2(X)", "np.log2(X)", "np.log10(X)", "np.hypot(X, X)", "np.arctan2(X, X)",
    "special.logit(X)", "nn.log_sigmoid(X)", "np.tanh(X) / X", "X / np.abs(X)", "special.erfinv(X)",
    "np.heaviside(X, 0.5) * X", "np.clip(X, 0.0, 0.0)", "lax.clamp(0.0, X, 1.0)", "np.round(X, 1)",
    "special.i0e(X)", "special.i1(X)", "special.digamma(X)", "np.logaddexp2(X, X)", "np.deg2rad(X)",
]  # fmt: skip
_SCALARS = ["2.0", "0.5", "-1.5", "3", "0.0", "-0.0"]
_REDUCE = [
    "np.sum(X, axis={ax}, keepdims={k})", "np.mean(X, axis={ax}, keepdims={k})",
    "np.max(X, axis={ax}, keepdims={k})", "np.min(X, axis={ax}, keepdims={k})",
    "np.prod(X, axis={ax}, keepdims={k})", "np.var(X, axis={ax}, keepdims={k})",
    "special.logsumexp(X, axis={ax}, keepdims={k})", "np.cumsum(X, axis={ax1})",
    "np.cumprod(X, axis={ax1})", "lax.cummax(X, axis={ax0}, reverse={k})", "nn.softmax(X, axis={ax})",
    "nn.log_softmax(X, axis={ax})", "np.linalg.norm(X, axis={ax}, keepdims={k})", "np.sort(X, axis={ax1})",
    "lax.cumsum(X, axis={ax0}, reverse={k})", "lax.cumlogsumexp(X, axis={ax0}, reverse={k})",
    "np.std(X, axis={ax}, keepdims={k})", "np.amax(X * X, axis={ax})", "np.median(X, axis={ax})",
]  # fmt: skip
_DOT = [
    "X @ Y", "np.dot(X, Y)", "np.outer(X, Y)", "np.einsum('...i,...i->...', X, Y)", "np.inner(X, Y)",
    "np.einsum('i,j->ij', np.ravel(X), np.ravel(Y))", "np.einsum('ij,j->i', np.atleast_2d(X), np.ravel(Y))",
    "np.tensordot(X, Y, axes=1)", "np.vdot(X, Y)", "np.einsum('...,...->...', X, Y)",
    "lax.dot(np.ravel(X), np.ravel(Y))", "np.matmul(np.atleast_2d(X), np.atleast_2d(Y).T)",
    "np.einsum('ij,kj->ik', np.atleast_2d(X), np.atleast_2d(Y))", "np.kron(X, Y)",
]  # fmt: skip
_INDEX = [
    "X[0]", "X[-1]", "X[::-1]", "X[1:]", "X[..., ::2]", "X[np.array([0, 0, -1])]", "X[None]",
    "X.at[0].set(Y)", "X.at[-1].add(Y)", "X.at[np.array([0, 0, -1])].add(Y)", "X.at[np.array([1, 0])].mul(Y)",
    "X.at[np.array([0, 0])].max(Y)", "X.at[np.array([0, 0])].min(Y)",
    "X.at[np.array([0, 5])].set(Y, mode='drop')",
    "X.at[np.array([0, 5])].get(mode='fill', fill_value=-1.0)",
    "np.take(X, np.array([0, 3, -5]), mode='clip')",
    "lax.dynamic_slice_in_dim(X, 1, 1)", "lax.dynamic_update_slice_in_dim(X, X[:1] * 2.0, 1, axis=0)",
    "np.take_along_axis(X, np.argsort(X, axis=-1), axis=-1)", "X[np.argmax(X)]",
    "lax.dynamic_index_in_dim(X, -1, keepdims=False)", "X.at[1:].set(0.0)", "np.where(X > 0.5)[0].size * X",
]  # fmt: skip
_SHAPE = [
    "np.reshape(X, (-1,))", "np.expand_dims(X, -1)", "X.T", "np.moveaxis(X, 0, -1)", "np.squeeze(X)",
    "np.concatenate([X, Y], axis=-1)", "np.stack([X, Y], axis=-1)", "np.broadcast_to(X, (2,) + np.shape(X))",
    "np.tile(X, 2)", "np.repeat(X, 2, axis=0)", "np.flip(X, -1)", "np.roll(X, 1)", "np.pad(X, 1)",
    "np.pad(X, ((1, 0),), mode='edge')", "np.reshape(X, np.shape(X)[::-1])", "np.swapaxes(X, 0, -1)",
    "np.atleast_2d(X)", "lax.rev(X, (0,))", "np.triu(np.atleast_2d(X))", "np.diagonal(np.atleast_2d(X))",
]  # fmt: skip
# Control flow and custom rules as steps: F is a body function text of (u, v) built from a unary
# and a binary step of the tables above.
_FLOW = [
    "lax.cond(np.sum(X) > 0, lambda u, v: {f}, lambda u, v: {g}, X, Y)",
    "lax.switch(np.clip(np.sum(X > 0), 0, 2), [lambda u, v: {f}, lambda u, v: {g}, lambda u, "
    "v: u * 0.0 + v], X, Y)",
    "lax.while_loop(lambda c: c[0] < {n}, lambda c: (c[0] + 1, (lambda u, v: {f})(c[1], Y)), (0, X))[1]",
    "lax.fori_loop(0, {n}, lambda i, c: (lambda u, v: {f})(c, a) * 0.5 + c * 0.5, X)",
    "lax.fori_loop(0, {n}, lambda i, c: (c[0] * np.cos(c[1]), c[1] + 0.5 * c[0]), (X, Y))[{k}]",
    "lax.scan(lambda c, x: ((lambda u, v: {f})(c, x), c * x), np.atleast_1d(X)[0], "
    "np.atleast_1d(X), reverse={r}, unroll={un})[{k}]",
    "lax.scan(lambda c, x: (c + x * Y, np.sin(c) * x), np.zeros_like(np.atleast_1d(X)[0] * Y), "
    "np.atleast_1d(X), reverse={r})[{k}]",
    "lax.scan(lambda c, x: ((c[0] * np.cos(x) + c[1], c[1] - 0.5 * x), c[0] * x), (X, Y), None, "
    "length={n}, reverse={r})[{k}]",
    "lax.map(lambda x: (lambda u, v: {f})(x, np.sum(x)), np.atleast_1d(X))",
    "lax.map(lambda x: (lambda u, v: {g})(x, Y), np.atleast_1d(X), batch_size=2)",
    "lax.associative_scan(lax.add, X, reverse={r})", "lax.associative_scan(np.maximum, X, axis=-1)",
    "_tc_cjvp(T, np, X, {s})", "_tc_cvjp(T, np, X, Y, {s})",
    "T.checkpoint(lambda u, v: {f}, policy=T.checkpoint_policies.{p})(X, Y)",
    "T.checkpoint(lambda u, v: {g}, prevent_cse=False)(X, Y)",
    "T.checkpoint(lambda u, v: {f}, static_argnums=(1,))(X, {s})",
    "lax.stop_gradient(X) + Y - lax.stop_gradient(Y)",
    # (session 20) pytree residuals, symbolic zeros, a predicate of the carry (batched under vmap),
    # named checkpoint policies (save, offload), cond operands and results of other weak types
    "_tc_cvjp_tree(T, np, X, Y, {s})", "_tc_cjvp_sz(T, np, X, Y)",
    "_tc_cvjp_tree(T, np, X, Y, {s})", "_tc_cjvp_sz(T, np, X, Y)",  # (twice: drawn as often as a loop)
    "lax.while_loop(lambda c: (c[0] < {n} + 2) & (np.max(np.abs(c[1])) < 4.0), lambda c: (c[0] + 1, "
    "(lambda u, v: {f})(c[1], Y) * 0.5 + 0.1), (0, X))[1]",
    "lax.scan(lambda c, x: ((lambda u, v: {f})(c, x), np.sin(c) * x), np.atleast_1d(X)[0], "
    "np.atleast_1d(X), reverse={r}, unroll={un2})[{k}]",
    "T.checkpoint(lambda u, v: np.sin(T.ad_checkpoint.checkpoint_name({f}, 'n1')) * u + v, "
    "policy=T.checkpoint_policies.{np_}('n1'))(X, Y)",
    "T.checkpoint(lambda u, v: np.cos(T.ad_checkpoint.checkpoint_name({f}, 'n1')) * v, "
    "policy=T.checkpoint_policies.save_and_offload_only_these_names(names_which_can_be_saved=[], "
    "names_which_can_be_offloaded=['n1'], offload_src='device', offload_dst='pinned_host'))(X, Y)",
    "lax.cond(np.sum(X) > 0, lambda u, v: {f}, lambda u, v: u + v * 0.5, X, {s})",
    "lax.cond(np.sum(X) > 0, lambda u: 1.5, lambda u: np.sum({f1}), X)",
    "lax.stop_gradient(X * X) * np.sin(X) + X ** 3",
]  # fmt: skip
_FLOW21 = [
    # (session 21) custom_vmap and sequential_vmap, custom_root and custom_linear_solve, scan over
    # pytree xs of mixed dtypes (length 0 too), while_loop over a pytree carry with an integer leaf,
    # checkpoint with static_argnums and prevent_cse, named_call/named_scope, collectives of a vmap's
    # named axis (psum/pmean/all_gather/psum_scatter/ppermute/all_to_all/axis_index)
    "_tc_cvmap(T, np, X, Y)", "_tc_cvmap(T, np, X, Y)",
    "T.custom_batching.sequential_vmap(lambda u, v: {f})(*np.broadcast_arrays(X, Y))",
    "_tc_root(T, np, lax, X, Y)", "_tc_root(T, np, lax, X, Y)", "_tc_linsolve(T, np, lax, X, Y, {r})",
    "_tc_linsolve(T, np, lax, X, Y, {r})",
    "lax.scan(lambda c, x: (c * np.cos(x['f']) + x['i'].astype(c.dtype) * 0.25 + np.sin(x['h']).astype("
    "c.dtype), (c * x['f'], x['i'])), Y, {{'f': np.ravel(X)[:{L}], 'i': np.arange({L}), 'h': "
    "np.ravel(X)[:{L}].astype(np.float32)}})[{k}]{i0}",
    "lax.scan(lambda c, x: ((c[0] + x[0] * c[1], c[1] * np.cos(x[1])), c[0] * x[1]), (X, Y), "
    "(np.ravel(Y)[:{L}], np.ravel(X)[:{L}].astype(np.float32)), reverse={r})[{k}]{i0}",
    "lax.while_loop(lambda c: (c['i'] < {n} + 1) & (np.sum(c['x']) < 6.0), lambda c: {{'i': c['i'] + 1, "
    "'x': (lambda u, v: {f})(c['x'], c['y'][0]) * 0.5 + 0.2, 'y': (c['y'][0] * 0.9, c['y'][1] * 2)}}, "
    "{{'i': 0, 'x': X, 'y': (Y, np.int32(2))}})['x']",
    "T.checkpoint(lambda u, s, v: ({f}) * s, static_argnums=(1,), prevent_cse={pc}, "
    "policy=T.checkpoint_policies.{p})(X, {s}, Y)",
    "T.named_call(lambda u, v: {f}, name='tc_call')(X, Y)", "_tc_scope(T, lambda u, v: {f}, X, Y)",
    "T.vmap(lambda u, v: u * lax.psum(u, 'i') + v, in_axes=(0, None), axis_name='i')(np.atleast_1d(X), Y)",
    "T.vmap(lambda u: (lambda u, v: {f})(u, u - lax.pmean(u, 'i')), axis_name='i')(np.atleast_1d(X))",
    "T.vmap(lambda u: np.sin(lax.all_gather(u, 'i')) * u, axis_name='i')(np.atleast_1d(X))",
    "T.vmap(lambda u: lax.psum_scatter(np.stack([u, np.sin(u) * u]), 'i'), axis_name='i')"
    "(np.stack([X, X * Y]))",
    "T.vmap(lambda u: lax.psum_scatter(u * u, 'i', tiled=True), axis_name='i')(np.stack([X, np.cos(X)]))",
    "T.vmap(lambda u: lax.ppermute(u, 'i', perm=[(0, 1), (1, 0)]) * u, axis_name='i')"
    "(np.stack([X, np.cos(Y) + X]))",
    "T.vmap(lambda u: lax.all_to_all(u, 'i', 0, 0) * u, axis_name='i')(np.stack([np.stack([X, X * X]), "
    "np.stack([np.sin(X), X])]))",
    "T.vmap(lambda u: u * (lax.axis_index('i') + 1.0), axis_name='i')(np.atleast_1d(X))",
]  # fmt: skip


def _step(draw, names):
    pool = draw(
        st.sampled_from(
            ["u", "u", "e", "e", "b", "bs", "r", "dot", "idx", "shape", "flow", "flow", "flow"]
            + ["flow21", "flow21"]
        )
    )
    x = draw(st.sampled_from(names[-2:] + names))
    y = draw(st.sampled_from(names[-2:] + names))
    if pool in ("u", "e"):
        return draw(st.sampled_from(_UNARY if pool == "u" else _EDGE)).replace("X", x)
    if pool in ("b", "bs"):
        y = draw(st.sampled_from(_SCALARS)) if pool == "bs" else y
        if draw(st.booleans()):
            x, y = y, x
        return draw(st.sampled_from(_BINARY)).replace("X", x).replace("Y", y)
    if pool == "r":
        ax, ax1, ax0 = (
            draw(st.sampled_from(["-1", "0", "None", "(0, -1)", "1"])),
            draw(st.sampled_from(["-1", "0", "None"])),
            draw(st.sampled_from(["-1", "0"])),
        )
        k = draw(st.booleans())
        return draw(st.sampled_from(_REDUCE)).format(ax=ax, ax1=ax1, ax0=ax0, k=k).replace("X", x)
    if pool in ("dot", "idx", "shape"):
        table = {"dot": _DOT, "idx": _INDEX, "shape": _SHAPE}[pool]
        return draw(st.sampled_from(table)).replace("X", x).replace("Y", y)
    f = draw(st.sampled_from(_BINARY)).replace("X", "u").replace("Y", "v")
    g = draw(st.sampled_from(_UNARY)).replace("X", "u") + " * v"
    f1 = draw(st.sampled_from(_UNARY)).replace("X", "u")
    params = dict(
        f=f, g=g, f1=f1, n=draw(st.sampled_from([0, 1, 3])), k=draw(st.sampled_from([0, 1])),
        r=draw(st.booleans()), un=draw(st.sampled_from([1, 2])), s=draw(st.sampled_from([0.5, 2.0, -1.0])),
        p=draw(st.sampled_from(_POLICIES)),
        un2=draw(st.sampled_from([3, True, 2])),
        np_=draw(st.sampled_from(["save_only_these_names", "save_any_names_but_these"])),
        L=draw(st.sampled_from([0, 1, 2])), pc=draw(st.booleans()),
        i0=draw(st.sampled_from(["", "[0]", "[1]"])),
    )  # fmt: skip
    step = draw(st.sampled_from(_FLOW21 if pool == "flow21" else _FLOW))
    # (a in a loop body: the input, a closure over a traced value)
    return step.format(**params).replace("X", x).replace("Y", y)


def _body(draw, call, avals):
    """A function text ``(lambda a, b: (t0 := ..., ...)[-1])`` of 2-6 float steps valid on avals."""
    names, steps = ["a", "b"], []
    n = draw(st.integers(2, 6))
    for _ in range(n):
        for _attempt in range(6):
            step = _step(draw, names)
            body = ", ".join([*steps, f"t{len(steps)} := {step}"])
            out = _ok(f"(lambda a, b: ({body},)[-1]){call}", avals)
            if out is not None and out[1] in ("float32", "float64"):
                steps.append(f"t{len(steps)} := {step}")
                names.append(f"t{len(steps) - 1}")
                break
    if not steps:
        return None
    return f"(lambda a, b: ({', '.join(steps)},)[-1])"


# The transformations of a function text F of (a, b) to a pytree: a function text of (a, b).
_LAYERS = [
    "jit", "grad", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian", "jvp", "jvp", "vjp", "vjp",
    "linearize", "linearize", "vmap", "vmap", "vmap", "jet", "jet", "eval_shape",
    # (session 20) integer inputs (float0 tangents, allow_int, has_aux), holomorphic grad, the
    # transpose of a linearization, closure_convert
    "int_grad", "int_jvp", "holomorphic", "linear_transpose", "closure_convert",
    # (session 21) vmap with in_axes dicts and axis_size, vmap with a named axis and a collective
    # over it, linearize's linear function differentiated again by jvp, hessian/jacobians with
    # integer aux outputs, grad of a 0-d result of every float dtype (float16/bfloat16 too)
    "vmap_dict", "vmap_named", "linearize_jvp", "hessian_aux", "jac_aux", "grad_dtype", "grad_dtype",
    # (session 22) jit with static arguments and with donation, make_jaxpr's output avals (shapes,
    # dtypes, weak types), vmap with pytree out_axes (None for unbatched leaves) and spmd_axis_name,
    # holomorphic jacobians, derivatives at float16/bfloat16 inputs, checkpoint as a layer, the
    # linear function of linearize and vjp's pullback called under jit
    "jit_static", "jit_donate", "make_jaxpr", "make_jaxpr", "vmap_tree", "vmap_tree", "holo_jac",
    "half_grad", "checkpoint", "jit_linear",
]  # fmt: skip
_JACOBIAN = {"jacfwd": 1, "jacrev": 1, "hessian": 2, "hessian_aux": 2, "jac_aux": 1, "linearize_jvp": 1}


def _layer(draw, f):
    w = draw(st.sampled_from(_LAYERS))
    s = f"_scalar(T, np, {f}(a, b))"
    if w == "jit":
        return w, f"T.jit({f})"
    if w in ("grad", "value_and_grad"):
        argnums = draw(st.sampled_from(["0", "1", "(0, 1)", "(1, 0)"]))
        return w, f"(lambda a, b: T.{w}(lambda a, b: {s}, argnums={argnums})(a, b))"
    if w in ("jacfwd", "jacrev"):
        argnums = draw(st.sampled_from(["0", "1", "(0, 1)"]))
        return w, f"(lambda a, b: T.{w}({f}, argnums={argnums})(a, b))"
    if w == "hessian":
        argnums = draw(st.sampled_from(["0", "1", "(0, 1)"]))
        return w, f"(lambda a, b: T.hessian(lambda a, b: {s}, argnums={argnums})(a, b))"
    if w == "jvp":
        if draw(st.booleans()):
            return w, f"(lambda a, b: T.jvp({f}, (a, b), (_probe(np, a), _tprobe(T, np, b, -2.0))))"
        return w, f"(lambda a, b: T.jvp(lambda a: {f}(a, b), (a,), (_probe(np, a),))[1])"
    if w == "vjp":
        if draw(st.booleans()):
            return w, f"(lambda a, b: (lambda o: o[1](_tprobe(T, np, o[0])))(T.vjp({f}, a, b)))"
        return (
            w,
            f"(lambda a, b: (lambda o: (o[0], o[1](_tprobe(T, np, o[0], -1.5))))"
            f"(T.vjp(lambda a: {f}(a, b), a)))",
        )
    if w == "linearize":
        # (the linear function called twice, on different tangents)
        return w, (
            f"(lambda a, b: (lambda o: (o[0], o[1](_probe(np, a), _probe(np, b)), "
            f"o[1](_tprobe(T, np, a, -3.0), _tprobe(T, np, b, 0.5))))(T.linearize({f}, a, b)))"
        )
    if w == "vmap":
        ia, ib = (
            draw(st.sampled_from(["0", "1", "-1", "None", "-2"])),
            draw(st.sampled_from(["0", "-1", "None", "None"])),
        )
        oa, n = draw(st.sampled_from(["0", "1", "-1", "-2"])), draw(st.sampled_from([2, 3, 1]))
        if ia == ib == "None":
            return w, f"(lambda a, b: T.vmap({f}, in_axes=(None, None), out_axes={oa}, axis_size={n})(a, b))"
        return w, (
            f"(lambda a, b: T.vmap({f}, in_axes=({ia}, {ib}), out_axes={oa})"
            f"(_batch(np, a, {ia}, {n}), _batch(np, b, {ib}, {n})))"
        )
    if w == "jet":
        if draw(st.booleans()):
            return w, (
                f"(lambda a, b: _jet(T, {f}, (a, b), ((_probe(np, a), _tprobe(T, np, a, 0.5)), "
                f"(_tprobe(T, np, b, -1.0), _tprobe(T, np, b, 0.25)))))"
            )
        return (
            w,
            f"(lambda a, b: _jet(T, lambda a: {f}(a, b), (a,), "
            f"((_probe(np, a), _probe(np, a), _probe(np, a)),)))",
        )
    if w == "int_grad":
        # an integer input n (a's shape): its gradient is float0 (left out by _pack), with an aux
        n = "(np.reshape(np.arange(np.size(a)), np.shape(a)) % 3 - 1)"
        return w, (
            f"(lambda a, b: T.grad(lambda a, n: (_scalar(T, np, {f}(a * n.astype(a.dtype) + a, b)), "
            f"{f}(a, b)), argnums=(0, 1), allow_int=True, has_aux=True)(a, {n}))"
        )
    if w == "int_jvp":
        n = "(np.reshape(np.arange(np.size(a)), np.shape(a)) % 3 - 1)"
        return w, (
            f"(lambda a, b: T.jvp(lambda a, n: {f}(a * n.astype(a.dtype) + a, b), (a, {n}), "
            f"(_probe(np, a), _onp.zeros(np.shape(a), T.dtypes.float0))))"
        )
    if w == "holomorphic":
        return w, (
            f"(lambda a, b: T.grad(lambda z: np.sum(np.sin(z * {f}(a, b)) + z * z), holomorphic=True)"
            f"(a * (1 + 0.5j)))"
        )
    if w == "linear_transpose":
        return w, (
            f"(lambda a, b: T.linear_transpose(T.linearize(lambda a: {f}(a, b), a)[1], a)"
            f"(_tprobe(T, np, {f}(a, b), 0.75)))"
        )
    if w in ("vmap_dict", "vmap_named"):
        ia, ib = draw(st.sampled_from(["0", "1", "-1", "None"])), draw(st.sampled_from(["0", "-1", "None"]))
        oa, n = draw(st.sampled_from(["0", "1", "-1"])), draw(st.sampled_from([2, 3, 1]))
        if w == "vmap_named":
            return w, (
                f"(lambda a, b: T.vmap(lambda a, b: _tc_center(T, np, lax, {f}(a, b), 'j'), "
                f"in_axes=({ia}, {ib}), out_axes={oa}, axis_name='j', axis_size={n})"
                f"(_batch(np, a, {ia}, {n}), _batch(np, b, {ib}, {n})))"
            )
        return w, (
            f"(lambda a, b: T.vmap(lambda d: {f}(d['a'], d['b']), in_axes=({{'a': {ia}, 'b': {ib}}},), "
            f"out_axes={oa}, axis_size={n})"
            f"({{'a': _batch(np, a, {ia}, {n}), 'b': _batch(np, b, {ib}, {n})}}))"
        )
    if w == "linearize_jvp":
        return w, (
            f"(lambda a, b: T.jvp(lambda a: T.linearize(lambda a: {f}(a, b), a)[1](_probe(np, a)), (a,), "
            f"(_tprobe(T, np, a, -0.5),)))"
        )
    if w in ("hessian_aux", "jac_aux"):
        argnums = draw(st.sampled_from(["0", "1", "(0, 1)"]))
        aux = draw(st.sampled_from(["np.argmax(np.ravel(a))", "(np.sum(a > 0), {'n': np.int32(3)})"]))
        if w == "jac_aux":
            jac = draw(st.sampled_from(["jacfwd", "jacrev"]))
            return w, (
                f"(lambda a, b: _tc_aux(T, np, T.{jac}(lambda a, b: ({f}(a, b), {aux}), argnums={argnums}, "
                f"has_aux=True)(a, b)))"
            )
        return w, (
            f"(lambda a, b: _tc_aux(T, np, T.hessian(lambda a, b: ({s}, {aux}), argnums={argnums}, "
            f"has_aux=True)(a, b)))"
        )
    if w == "grad_dtype":
        dt = draw(st.sampled_from(["float16", "bfloat16", "float32", "float64"]))
        argnums = draw(st.sampled_from(["0", "1", "(0, 1)"]))
        return w, f"(lambda a, b: T.grad(lambda a, b: {s}.astype(np.{dt}), argnums={argnums})(a, b))"
    if w == "jit_static":
        k = draw(st.sampled_from(["2.0", "-0.5", "3"]))
        if draw(st.booleans()):
            return (
                w,
                f"(lambda a, b: T.jit(lambda a, b, k: _tc_scale(T, np, {f}(a, b), k), "
                f"static_argnums=(2,))(a, b, {k}))",
            )
        return (
            w,
            f"(lambda a, b: T.jit(lambda a, k, b: _tc_scale(T, np, {f}(a, b), k), "
            f"static_argnames='k')(a, b=b, k={k}))",
        )
    if w == "jit_donate":
        return w, f"(lambda a, b: T.jit({f}, donate_argnums=(0,))(a * 1.0, b))"
    if w == "make_jaxpr":
        return w, f"(lambda a, b: (_tc_avals(T, np, T.make_jaxpr({f})(a, b)), {f}(a, b)))"
    if w == "vmap_tree":
        ia, ib = draw(st.sampled_from(["0", "1", "-1", "None"])), draw(st.sampled_from(["0", "-1", "None"]))
        oa, n = draw(st.sampled_from(["0", "1", "-1"])), draw(st.sampled_from([2, 3, 1]))
        oa2 = "None" if ia == "None" and draw(st.booleans()) else draw(st.sampled_from(["0", "-1"]))
        ob2 = "None" if ib == "None" and draw(st.booleans()) else draw(st.sampled_from(["0", "1"]))
        spmd = draw(st.sampled_from(["", ", spmd_axis_name='s'", ", axis_name='k'"]))
        size = f", axis_size={n}" if ia == ib == "None" else ""
        return w, (
            f"(lambda a, b: T.vmap(lambda a, b: {{'f': {f}(a, b), 'ab': (a * 1.0, np.sin(b))}}, "
            f"in_axes=({ia}, {ib}), out_axes={{'f': {oa}, 'ab': ({oa2}, {ob2})}}{spmd}{size})"
            f"(_batch(np, a, {ia}, {n}), _batch(np, b, {ib}, {n})))"
        )
    if w == "holo_jac":
        jac = draw(st.sampled_from(["jacfwd", "jacrev"]))
        return w, (
            f"(lambda a, b: T.{jac}(lambda z: T.tree_util.tree_map(lambda v: np.sin(v * (1 + 0.5j)) * "
            f"np.sum(z * z), {f}(np.real(z), b)), holomorphic=True)(np.asarray(a) * (1 - 0.25j)))"
        )
    if w == "half_grad":
        dt = draw(st.sampled_from(["float16", "bfloat16"]))
        argnums = draw(st.sampled_from(["0", "1", "(0, 1)"]))
        return w, (
            f"(lambda a, b: T.grad(lambda a, b: {s}, argnums={argnums})"
            f"(np.asarray(a, np.{dt}), np.asarray(b, np.{dt})))"
        )
    if w == "checkpoint":
        p = draw(st.sampled_from(_POLICIES))
        return w, f"T.checkpoint({f}, policy=T.checkpoint_policies.{p})"
    if w == "jit_linear":
        if draw(st.booleans()):
            return w, (
                f"(lambda a, b: (lambda o: (o[0], T.jit(o[1])(_probe(np, a), _tprobe(T, np, b, -0.5))))"
                f"(T.linearize({f}, a, b)))"
            )
        return w, f"(lambda a, b: (lambda o: T.jit(o[1])(_tprobe(T, np, o[0], 0.5)))(T.vjp({f}, a, b)))"
    if w == "closure_convert":
        return w, f"(lambda a, b: (lambda cc: cc[0](a, *cc[1]))(T.closure_convert(lambda a: {f}(a, b), a)))"
    # eval_shape: the value plus zeros of its struct (a struct's shape or dtype not the value's shows)
    return w, (
        f"(lambda a, b: T.tree_util.tree_map(lambda v, s: v + np.zeros(s.shape, s.dtype), {f}(a, b), "
        f"T.eval_shape({f}, a, b)))"
    )


def _program(arity):
    def drawn(avals):
        @st.composite
        def strategy(draw):
            if any(str(d) in ("float16", "bfloat16") for _, d in avals):
                return {"e": "None"}  # (16-bit floats: not this table's)
            call = "(\x000, \x001)" if arity == 2 else f"(\x000, {draw(st.sampled_from(['0.5', '-1.5']))})"
            f = _body(draw, call, avals)
            if f is None:
                return {"e": "None"}
            size = math.prod(avals[0][0]) if avals[0][0] else 1
            weight, depth = 0, 0
            target = draw(st.integers(2, 4))
            for _ in range(3 * target):
                if depth == target:
                    break
                w, g = _layer(draw, f)
                if weight + _JACOBIAN.get(w, 0) > (3 if size <= 3 else 2):
                    continue
                if _ok(f"_pack(T, np, {g}{call})", avals) is not None:
                    f, depth, weight = g, depth + 1, weight + _JACOBIAN.get(w, 0)
            if depth < 2:
                return {"e": "None"}
            if draw(st.sampled_from([False] * 7 + [True])):
                # (session 21) the vjp of the stack, with has_aux, called with a cotangent of another
                # dtype or shape: JAX's error class (or the same values where it accepts one)
                ct = draw(st.sampled_from(["o.astype(np.float32)", "o.astype(np.float16)", "o[None]",
                                           "o.astype(np.int32)", "o * 1.0"]))  # fmt: skip
                e = (
                    f"_err(lambda: (lambda r: r[1](_tc_ct(T, np, r[0], lambda o: {ct})))"
                    f"(T.vjp(lambda a, b: ({f}(a, b), 0), *{call}, has_aux=True)))"
                )
                if _ok(e, avals) is not None:
                    return {"e": e}
            return {"e": f"_pack(T, np, {f}{call})"}

        return strategy()

    return drawn


@dataclasses.dataclass(frozen=True)
class _StackOp(_ProgOp):
    """A program with its own stack: the case's stack adds at most ``max_outer`` transformations
    around it (``programs.cases``; deeper, nested hessians run for minutes on both sides)."""

    max_outer: int = 1


TCOMP: list[Op] = [
    _StackOp("tcomp.unary", "", arity=1, kinds="f", drawn=_program(1)),
    _StackOp("tcomp.binary", "", arity=2, kinds="f", drawn=_program(2)),
]
