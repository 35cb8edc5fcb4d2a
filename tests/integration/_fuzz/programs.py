"""The fuzzer's cases and the hypothesis strategies that draw them.

A ``Case`` is a program (``steps``: lines ``v_k = <op applied to earlier names>`` over inputs ``x0..``),
a stack of transformations (outermost first) and concrete inputs. Its ``script()`` is a standalone
Python file that builds the transformed function for either library and prints both results; the
runner (``compare``) executes the same text, so a shrunk failure's reproducer is what ran.

Drawing (``cases``): the stack first (it decides whether input 0 must be a float and how large the
inputs may be: each jacobian multiplies the output's size), then the input shapes (one base shape,
with size-0 and size-1 dimensions, and broadcastable suffixes or scalars of it), dtypes, then 1-6
operations, each checked by jax's abstract evaluation (``jax.eval_shape``) so only valid programs are
kept, then the values: small numbers from a pool (so exact zeros, signed zeros and ties are common),
and NaN/inf when every operation of the program is defined there. Dtypes include the 8/16-bit integers
and floats (float16, bfloat16), so promotion with weak Python scalars and between dtypes is drawn.

Modes: a case runs in one mode on both sides, 64-bit types on (funcgrad's default) or JAX's default
32-bit mode (``Case.x64``); ``mode(x64)`` switches funcgrad and jax together and restores both after,
and drawing happens in the mode being drawn for (jax's abstract evaluation depends on it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os

import numpy as onp
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

TRANSFORMS = ("jit", "vmap", "grad", "value_and_grad", "jvp", "vjp", "jacfwd", "jacrev", "hessian")
# The long run's stacks add these (and vmap's in_axes/out_axes of 1); the CI budget draws as before.
LONG_RUN_TRANSFORMS = TRANSFORMS + ("linearize", "checkpoint")
DERIVATIVES = frozenset(TRANSFORMS[2:] + ("linearize",))
# How many times a transformation multiplies the output's size by the input's (bounds the input size).
_JACOBIAN_WEIGHT = {"jacfwd": 1, "jacrev": 1, "hessian": 2}
_MAX_SIZE = {0: 24, 1: 12, 2: 6, 3: 3}

# Helpers every script defines; each takes the side's modules explicitly.
HELPERS = """
def _float(T, np, out):
    # Derivatives need real floating outputs: integers and booleans become float64, a complex value a
    # real combination of its two parts.
    def one(v):
        if np.iscomplexobj(v):
            return np.real(v) + 0.5 * np.imag(v)
        if not np.issubdtype(np.result_type(v), np.floating):
            return np.asarray(v).astype(np.float64)
        return v
    return T.tree_util.tree_map(one, out)


def _scalar(T, np, out):
    return sum(np.sum(v) for v in T.tree_util.tree_leaves(_float(T, np, out)))


def _probe(np, v):
    # A fixed tangent or cotangent of v's shape and dtype, with no zeros.
    return np.reshape(0.5 + 0.25 * np.cos(np.arange(np.size(v))), np.shape(v)).astype(np.result_type(v))


def _matrix(np, x, kind):
    # A well-conditioned 2x2 matrix that depends smoothly on every element of x.
    a = np.ravel(x)
    a = a if np.issubdtype(a.dtype, np.floating) else a.astype(np.float64)
    a = np.concatenate([a, np.zeros(4, a.dtype)])[:4] if a.shape[0] < 4 else a[:4] + 0.1 * np.sum(a[4:])
    m = 0.5 * np.reshape(np.sin(a), (2, 2)) + 2.0 * np.eye(2, dtype=a.dtype)
    if kind == "sym":
        return (m + m.T) / 2
    if kind == "spd":
        return m @ m.T + np.eye(2, dtype=a.dtype)
    return m


def _matrix3(np, x):
    # A well-conditioned symmetric positive definite 3x3 matrix depending smoothly on x's elements.
    a = _signal(np, x, 9)
    m = 0.3 * np.reshape(np.sin(a), (3, 3)) + np.eye(3, dtype=a.dtype)
    return m @ m.T + 0.5 * np.eye(3, dtype=a.dtype)


def _signal(np, x, n):
    # x's elements as a float vector of length n (zeros after them; a sum of the rest added).
    a = np.ravel(x)
    a = a if np.issubdtype(a.dtype, np.inexact) else a.astype(np.float64)
    return np.concatenate([a, np.zeros(n, a.dtype)])[:n] + 0.1 * np.sum(a[n:])


def _mat(np, x, shape, dtype):
    # x's elements (through _signal) as an array of shape and dtype (ops_comp's dots and windows)
    n = 1
    for d in shape:
        n *= d
    return np.reshape(_signal(np, x, n), shape).astype(dtype)


def _window(T, np, x, op, window, stride, padding):
    # lax.reduce_window over a 2x3 array built from x, with the operation's identity as init.
    a = np.reshape(_signal(np, x, 6), (2, 3))
    init = {"add": 0.0, "max": -np.inf, "min": np.inf, "mul": 1.0}[op]
    fn = {"add": T.lax.add, "max": T.lax.max, "min": T.lax.min, "mul": T.lax.mul}[op]
    return T.lax.reduce_window(a, init, fn, (1, window), (1, stride), padding)


def _conv(T, np, x, groups, stride, padding, lhs_dilation, rhs_dilation, layout):
    # A 1-d convolution (batch 1, 2 features, width 5, from x) with a fixed 2-wide kernel.
    lhs = np.reshape(_signal(np, x, 10), (1, 2, 5))
    rhs = np.reshape(np.linspace(-1.0, 1.5, 8 // groups), (2, 2 // groups, 2)).astype(lhs.dtype)
    dn = None
    if layout == "NWC":
        lhs, rhs, dn = np.transpose(lhs, (0, 2, 1)), np.transpose(rhs, (2, 1, 0)), ("NWC", "WIO", "NWC")
    return T.lax.conv_general_dilated(
        lhs, rhs, (stride,), padding, lhs_dilation=(lhs_dilation,), rhs_dilation=(rhs_dilation,),
        dimension_numbers=dn, feature_group_count=groups,
    )


def _conv2(T, np, x, groups, batch_groups, stride, padding, lhs_dilation, rhs_dilation, kernel, layout):
    # A 2-d convolution of a (2, 2, 3, 3) NCHW input built from x with a kernel that depends on x too.
    lhs = np.reshape(_signal(np, x, 36), (2, 2, 3, 3))
    shape = (2, 2 // groups) + tuple(kernel)
    n = 2 * (2 // groups) * kernel[0] * kernel[1]
    rhs = np.reshape(np.cos(_signal(np, x, n) * 0.5) + np.linspace(-1.0, 1.0, n).astype(lhs.dtype), shape)
    dn = None
    if layout == "NHWC":
        lhs, rhs = np.transpose(lhs, (0, 2, 3, 1)), np.transpose(rhs, (2, 3, 1, 0))
        dn = ("NHWC", "HWIO", "NHWC")
    return T.lax.conv_general_dilated(
        lhs, rhs, stride, padding, lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
        dimension_numbers=dn, feature_group_count=groups, batch_group_count=batch_groups,
    )


def _conv_t(T, np, x, stride, padding, rhs_dilation, transpose_kernel):
    # lax.conv_transpose of a (1, 5, 2) NWC input from x with a (2, 2, 2) WIO kernel depending on x.
    lhs = np.reshape(_signal(np, x, 10), (1, 5, 2))
    rhs = np.reshape(np.sin(_signal(np, x, 8)) + np.linspace(-1.0, 1.5, 8).astype(lhs.dtype), (2, 2, 2))
    return T.lax.conv_transpose(
        lhs, rhs, stride, padding, rhs_dilation=rhs_dilation, dimension_numbers=("NWC", "WIO", "NWC"),
        transpose_kernel=transpose_kernel,
    )


def _window2(T, np, x, op, window, stride, padding, base_dilation, window_dilation):
    # lax.reduce_window over a 3x4 array built from x, with dilations, the operation's identity as init.
    a = np.reshape(_signal(np, x, 12), (3, 4))
    init = np.array({"add": 0.0, "max": -np.inf, "min": np.inf, "mul": 1.0}[op]).astype(a.dtype)
    fn = {"add": T.lax.add, "max": T.lax.max, "min": T.lax.min, "mul": T.lax.mul}[op]
    return T.lax.reduce_window(a, init, fn, window, stride, padding, base_dilation, window_dilation)


def _custom_jvp_nondiff(T, np, x, k):
    # A custom_jvp with a non-differentiable argument, whose rule is not the derivative.
    def g(a, k):
        return np.sin(a) * k

    g = T.custom_jvp(g, nondiff_argnums=(1,))

    def g_jvp(k, primals, tangents):
        (a,), (t,) = primals, tangents
        return g(a, k), np.cos(a) * t * (k + 1)

    g.defjvp(g_jvp)
    return g(x, k)


def _grad(T, np, f):
    return lambda x, *r: T.grad(lambda x: _scalar(T, np, f(x, *r)))(x)


def _value_and_grad(T, np, f):
    return lambda x, *r: T.value_and_grad(lambda x: _scalar(T, np, f(x, *r)))(x)


def _jvp(T, np, f):
    return lambda x, *r: T.jvp(lambda x: _float(T, np, f(x, *r)), (x,), (_probe(np, x),))


def _vjp(T, np, f):
    def g(x, *r):
        out, pullback = T.vjp(lambda x: _float(T, np, f(x, *r)), x)
        return out, pullback(T.tree_util.tree_map(lambda v: _probe(np, v), out))
    return g


def _jacfwd(T, np, f):
    return lambda x, *r: T.jacfwd(lambda x: _float(T, np, f(x, *r)))(x)


def _jacrev(T, np, f):
    return lambda x, *r: T.jacrev(lambda x: _float(T, np, f(x, *r)))(x)


def _hessian(T, np, f):
    return lambda x, *r: T.hessian(lambda x: _scalar(T, np, f(x, *r)))(x)


def _linearize(T, np, f):
    def g(x, *r):
        out, f_jvp = T.linearize(lambda x: _float(T, np, f(x, *r)), x)
        return out, f_jvp(_probe(np, x))
    return g


def _checkpoint(T, np, f):
    return T.checkpoint(f)


def _float0_jvp(T, np, x):
    # jvp with an integer input beside x: the integer's tangent is float0 zeros, as jax requires
    import numpy as onp

    k = onp.arange(3, dtype=onp.int32)

    def g(a, k):
        # (k's sum in a's dtype: float32 * int64 is float64 in 64-bit mode's NumPy-2 rules, a
        # documented difference the op's own dtypes would not show)
        return np.sin(a) * np.sum(k).astype(np.result_type(a)) + a * 2

    return T.jvp(g, (x, k), (_probe(np, x), onp.zeros(k.shape, T.dtypes.float0)))[1]


def _custom_jvp(T, np, x):
    # A rule that is not the function's derivative (twice it), so using any other rule shows.
    @T.custom_jvp
    def g(a):
        return np.sin(a) * a

    @g.defjvp
    def g_jvp(primals, tangents):
        (a,), (t,) = primals, tangents
        return g(a), 2.0 * (np.cos(a) * a + np.sin(a)) * t

    return g(x)


import collections as _collections
import numpy as _onp  # (NumPy scalars as arguments: ops_struct)

_Pair = _collections.namedtuple("_Pair", "a b")


def _custom_vjp_tree(T, np, d, k):
    # A custom_vjp over a pytree (a dict holding a tuple with a None leaf) with a non-differentiable
    # argument; the backward rule is not the derivative (it adds k * a to a's cotangent).
    def g(k, d):
        return np.sin(d["a"]) * d["b"][0] * k

    g = T.custom_vjp(g, nondiff_argnums=(0,))

    def fwd(k, d):
        return g(k, d), d

    def bwd(k, d, ct):
        da = ct * np.cos(d["a"]) * d["b"][0] * k + k * d["a"]
        return ({"a": da, "b": (ct * np.sin(d["a"]) * k, None)},)

    g.defvjp(fwd, bwd)
    return g(k, d)


def _custom_vjp(T, np, x):
    # A backward rule with residuals that differs from the derivative (exp(a) + a / 2 for exp(a) - 1).
    @T.custom_vjp
    def g(a):
        return np.exp(a) - a

    def fwd(a):
        e = np.exp(a)
        return e - a, (a, e)

    def bwd(res, ct):
        a, e = res
        return (ct * (e + 0.5 * a),)

    g.defvjp(fwd, bwd)
    return g(x)


def _pack(T, np, tree):
    # several outputs (ops_prog: gradients by argnums, has_aux's pair, jvp's pair) as one vector in
    # their common dtype; float0 leaves (integer inputs' gradients) left out
    leaves = [v for v in T.tree_util.tree_leaves(tree) if getattr(v, "dtype", None) != T.dtypes.float0]
    if len(leaves) == 1:
        return leaves[0]
    dtype = np.result_type(*leaves)
    return np.concatenate([np.ravel(v).astype(dtype) for v in leaves])


def _batch(np, x, axis, n):
    # n rolled copies of x stacked at axis (ops_prog's vmaps; x itself where axis is None)
    if axis is None:
        return x
    x = np.asarray(x)
    rows = [np.roll(x, k) for k in range(n)]
    stacked = np.stack(rows) if rows else np.zeros((0,) + x.shape, x.dtype)
    return np.moveaxis(stacked, 0, axis)


def _cjvp(T, np, f):
    # f of (a, b) under a custom_jvp whose rule doubles f's tangent (not the derivative)
    g = T.custom_jvp(f)

    def rule(primals, tangents):
        out, t = T.jvp(f, primals, tangents)
        return out, t if t.dtype == T.dtypes.float0 else t + t

    g.defjvp(rule)
    return g


def _cvjp(T, np, f):
    # f of (a, b) under a custom_vjp whose backward rule halves f's cotangents (not the derivative)
    g = T.custom_vjp(f)

    def fwd(a, b):
        return f(a, b), (a, b)

    def bwd(res, ct):
        cts = T.vjp(f, *res)[1](ct)
        return tuple(v if v.dtype == T.dtypes.float0 else v * 0.5 for v in cts)

    g.defvjp(fwd, bwd)
    return g


# Small models (ops_models): parameters p from x's elements, fixed data X in p's type; each model a
# scalar loss g(p, X) that works for any batch size (per-example vmaps see a batch of one).
_MODEL_SIZES = {"mlp": (12, (2, 2)), "cnn": (10, (2, 1, 4, 4)), "attn": (12, (2, 3, 2)),
                "sdpa": (12, (2, 3, 2)), "rnn": (10, (2, 4)), "gru": (12, (2, 4)), "logreg": (4, (2, 3)),
                "softmax_ce": (9, (2, 2)), "resnet": (8, (2, 2))}


def _model_args(np, x, kind, off):
    a = np.ravel(x)
    dt = np.promote_types(a.dtype, np.float32)
    n, shape = _MODEL_SIZES[kind]
    size = 1
    for d in shape:
        size *= d
    p = _signal(np, a.astype(dt), n) * 0.5 + off * np.cos(np.arange(n, dtype=dt))
    X = np.reshape(np.sin(np.arange(size, dtype=dt) * 0.7 + 0.3) * 1.5, shape)
    return p, X


def _act(T, np, name, v):
    if name == "gelu_tanh":
        return T.nn.gelu(v, approximate=True)
    if name == "gelu":
        return T.nn.gelu(v, approximate=False)
    if name == "tanh":
        return np.tanh(v)
    return getattr(T.nn, name)(v)


def _model(T, np, kind, act, p, X):
    lax, nn = T.lax, T.nn
    f = lambda v: _act(T, np, act, v)
    if kind == "mlp":
        h = f(X @ np.reshape(p[:6], (2, 3)) + p[6:9])
        return np.mean((h @ p[9:12] - np.sum(X, axis=1)) ** 2)
    if kind == "logreg":
        z = f(X @ p[:3] + p[3])
        y = (X[:, 0] > 0).astype(z.dtype)
        return -np.mean(y * nn.log_sigmoid(z) + (1 - y) * nn.log_sigmoid(-z))
    if kind == "softmax_ce":
        logits = f(X @ np.reshape(p[:6], (2, 3)) + p[6:9])
        labels = nn.one_hot(np.argmax(X, axis=1) + 1, 3, dtype=logits.dtype)
        return -np.mean(np.sum(labels * nn.log_softmax(logits), axis=-1))
    if kind == "cnn":
        k = np.reshape(p[:8], (2, 1, 2, 2))
        y = lax.conv_general_dilated(X, k, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
        y = f(y + np.reshape(p[8:10], (1, 2, 1, 1)))
        y = lax.reduce_window(y, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        return np.mean(y * np.reshape(np.linspace(-1, 1, 8), (1, 2, 2, 2)).astype(y.dtype))
    if kind in ("attn", "sdpa"):
        wq, wk, wv = (np.reshape(p[4 * i : 4 * i + 4], (2, 2)) for i in range(3))
        q, k, v = X @ wq, X @ wk, X @ wv
        if kind == "sdpa":
            o = nn.dot_product_attention(q[:, :, None], k[:, :, None], v[:, :, None], is_causal=True)[:, :, 0]
        else:
            s = np.einsum("btd,bsd->bts", q, k) / 2.0 ** 0.5
            mask = np.tril(np.ones((X.shape[1], X.shape[1]), bool))
            o = np.einsum("bts,bsd->btd", nn.softmax(np.where(mask, s, -np.inf), axis=-1), v)
        o = f(o) + X
        o = (o - np.mean(o, -1, keepdims=True)) * lax.rsqrt(np.var(o, -1, keepdims=True) + 1e-3)
        return np.mean(o[..., 0] * X[..., 1]) + 0.1 * np.mean(o * o[:, ::-1])
    if kind == "rnn":
        wh, wx, b, v = np.reshape(p[:4], (2, 2)), p[4:6], p[6:8], p[8:10]

        def cell(h, x):
            h = f(h @ wh + x[:, None] * wx + b)
            return h, h @ v

        hT, ys = lax.scan(cell, np.zeros((X.shape[0], 2), p.dtype), X.T)
        return np.mean((ys - X.T) ** 2) + 0.1 * np.sum(hT)
    if kind == "gru":
        wz, uz, wh, uh = np.reshape(p[:4], (2, 2)), p[4:6], np.reshape(p[6:10], (2, 2)), p[10:12]

        def cell(h, x):
            z = nn.sigmoid(h @ wz + x[:, None] * uz)
            h = (1 - z) * h + z * f(h @ wh + x[:, None] * uh)
            return h, np.sum(h, axis=1)

        hT, ys = lax.scan(cell, np.full((X.shape[0], 2), 0.5, p.dtype), X.T, reverse=True, unroll=2)
        return np.mean(ys * X.T) + np.mean(hT**2)
    # resnet: one residual block
    h = X + f(X @ np.reshape(p[:4], (2, 2))) @ np.reshape(p[4:8], (2, 2))
    return np.mean(np.sum(h**2, axis=1))


def _adam(T, np, g, p, X, steps=3, lr=0.1):
    # optax.adam's update written out (eps large enough that gradients at rounding level stay small)
    m, v = np.zeros_like(p), np.zeros_like(p)
    for t in range(1, steps + 1):
        gr = T.grad(g)(p, X)
        m = 0.9 * m + 0.1 * gr
        v = 0.999 * v + 0.001 * gr**2
        p = p - lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-3)
    return p
"""
# ops_shard's helpers: meshes, specs, and the result's sharding code (sharded programs)
from _fuzz.ops_shard import HELPERS as _SHARD_HELPERS  # noqa: E402

HELPERS += _SHARD_HELPERS
from _fuzz.ops_lax2 import HELPERS as _LAX_HELPERS  # noqa: E402  (ops_lax's bits and signs)

HELPERS += _LAX_HELPERS
from _fuzz.ops_progz import HELPERS as _PROGZ_HELPERS  # noqa: E402  (custom rules with nondiff_argnums)

HELPERS += _PROGZ_HELPERS
from _fuzz.ops_tcomp import HELPERS as _TCOMP_HELPERS  # noqa: E402  (jet, pytree probes, custom rules)

HELPERS += _TCOMP_HELPERS

# Both sides run in one mode: 64-bit types on, or JAX's default 32-bit mode (NOTE: [x64 mode] in
# funcgrad/kernel/dtypes.py), where NumPy's 64-bit inputs enter both libraries as 32-bit values.
# FUNCGRAD_FUZZ_X64=0 makes the long run's cases 32-bit (the CI run draws both modes).
X64 = os.environ.get("FUNCGRAD_FUZZ_X64", "1") != "0"


def set_mode(x64: bool, jax_only: bool = False) -> None:
    """Put jax and funcgrad (or jax only) in mode ``x64`` (a funcgrad switch empties its caches: it
    is made only when the mode changes)."""
    import jax

    import funcgrad

    if bool(jax.config.jax_enable_x64) != x64:
        jax.config.update("jax_enable_x64", x64)
    if not jax_only and bool(funcgrad.config.jax_enable_x64) != x64:
        funcgrad.config.update("jax_enable_x64", x64)


@contextlib.contextmanager
def mode(x64: bool):
    """Both libraries in mode ``x64`` inside the block, each restored to its own mode after (the
    suite's conftest fails a test that leaves funcgrad in 32-bit mode)."""
    import jax

    import funcgrad

    before = bool(jax.config.jax_enable_x64), bool(funcgrad.config.jax_enable_x64)
    set_mode(x64)
    try:
        yield
    finally:
        if bool(jax.config.jax_enable_x64) != before[0]:
            jax.config.update("jax_enable_x64", before[0])
        if bool(funcgrad.config.jax_enable_x64) != before[1]:
            funcgrad.config.update("jax_enable_x64", before[1])


_PREAMBLE = '''"""A differential-fuzzer case: one program on funcgrad and on jax (x64={x64}), side by side."""
import numpy as onp
import jax
jax.config.update("jax_enable_x64", {x64})
import jax.numpy, jax.lax, jax.nn, jax.scipy.special, jax.scipy.stats, jax.scipy.linalg, jax.ad_checkpoint
import jax.scipy.signal, jax.scipy.integrate, jax.scipy.optimize
import funcgrad, funcgrad.numpy, funcgrad.lax, funcgrad.nn, funcgrad.scipy.special, funcgrad.scipy.stats
import funcgrad.ad_checkpoint, funcgrad.scipy.linalg
import funcgrad.scipy.signal, funcgrad.scipy.integrate, funcgrad.scipy.optimize
funcgrad.config.update("jax_enable_x64", {x64})
'''

_MAIN = """
SIDES = {
    "funcgrad": (funcgrad, funcgrad.numpy, funcgrad.lax, funcgrad.nn, funcgrad.scipy.special),
    "jax": (jax, jax.numpy, jax.lax, jax.nn, jax.scipy.special),
}

if __name__ == "__main__":
    onp.set_printoptions(precision=17)
    for side, modules in SIDES.items():
        try:
            out = build(*modules)(*inputs)
            print(side, jax.tree_util.tree_map(lambda v: (onp.asarray(v), onp.asarray(v).dtype), out))
        except Exception as e:
            print(side, "raised", type(e).__name__, e)
"""


def _literal(x: onp.ndarray) -> str:
    """Python source of an array, exact (float32 values are exact as Python floats) and with
    NaN/inf written as float('nan') / float('inf')."""

    def nest(v):
        return "[" + ", ".join(nest(u) for u in v) + "]" if isinstance(v, list) else _scalar_src(v)

    if not isinstance(x, onp.ndarray):  # a Python scalar input (weak-typed in both libraries)
        return _scalar_src(x)
    values = x.ravel().astype(onp.float32) if x.dtype == _BF16 else x.ravel()  # (bfloat16: exact)
    return f"onp.array({nest(values.tolist())}, dtype={_dtype_src(x.dtype)}).reshape({x.shape})"


def _scalar_src(v) -> str:
    if isinstance(v, complex):
        return f"complex({_scalar_src(v.real)}, {_scalar_src(v.imag)})"
    if isinstance(v, float) and not math.isfinite(v):
        return f"float('{v}')"
    return repr(v)


def _dtype_src(dtype) -> str:
    # NumPy finds bfloat16 by name only once ml_dtypes is imported (jax imports it): name its type.
    return "jax.numpy.bfloat16" if dtype == _BF16 else f"'{dtype}'"


# The program's output as a pytree (the long run draws these: the stack's transformations map over
# the leaves, a None leaf is no leaf): its last value and its first.
OUT_STRUCTS = {
    "": "{last}",
    "dict": "{{'out': {last}, 'first': v0, 'none': None}}",
    "tuple": "({last}, (v0, None))",
    "namedtuple": "_Pair({last}, v0)",
    "list": "[{last}]",
}


@dataclasses.dataclass
class Case:
    inputs: list  # numpy arrays, with the batch axes of the stack's vmaps
    steps: list  # (op name, Python expression) per line v_k
    stack: list  # (transformation, argument) outermost first; vmap's argument is its in_axes
    ops: tuple = ()  # the Op objects of the steps
    mixes_dtypes: bool = False  # an integer/bool value or operands of different dtypes meet somewhere
    x64: bool = X64  # the mode both sides run in
    operand_dtypes: tuple = ()  # per step, the names of its operands' dtypes (as drawn)
    out_struct: str = ""  # the program's output pytree (OUT_STRUCTS; "" a single array)

    def build_source(self) -> str:
        args = ", ".join(f"x{i}" for i in range(len(self.inputs)))
        lines = ["def build(T, np, lax, nn, special):", f"    def f({args}):"]
        lines += [f"        v{k} = {expr}" for k, (_, expr) in enumerate(self.steps)]
        last = f"v{len(self.steps) - 1}"
        lines.append(f"        return {OUT_STRUCTS[self.out_struct].format(last=last)}")
        for kind, arg in reversed(self.stack):
            if kind == "jit":
                lines.append("    f = T.jit(f)")
            elif kind == "vmap" and isinstance(arg, dict):
                lines.append(f"    f = T.vmap(f, in_axes={arg['in_axes']!r}, out_axes={arg['out_axes']!r})")
            elif kind == "vmap":
                lines.append(f"    f = T.vmap(f, in_axes={arg!r})")
            else:
                lines.append(f"    f = _{kind}(T, np, f)")
        lines.append("    return f")
        return "\n".join(lines) + "\n"

    def script(self) -> str:
        """The standalone reproducer: ``python script.py`` prints funcgrad's and jax's results."""
        inputs = "".join(f"\n    {_literal(x)}," for x in self.inputs)
        head = _PREAMBLE.format(x64=self.x64)
        return f"{head}\n{HELPERS}\n\n{self.build_source()}\ninputs = [{inputs}\n]\n{_MAIN}"

    def describe(self) -> str:
        stack = " o ".join(k for k, _ in self.stack) or "eager"
        return f"{'' if self.x64 else '[x32] '}{stack}: " + "; ".join(expr for _, expr in self.steps)

    def __repr__(self):  # short: a failing test's message carries the whole script
        return f"Case<{self.describe()}>"


# ----------------------------------------------------------------------------------------------
# Strategies

_FINITE = [0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, -0.0, 3.0, 0.25, -1.5, 10.0, 1e-3, -3.0]
_SPECIAL = [float("nan"), float("inf"), float("-inf")]
_DTYPES = ["float64"] * 5 + ["float32"] * 3 + ["int32"] * 2 + ["bool", "complex128"]
_DTYPES += ["int8", "uint8", "uint32", "int16", "float16", "bfloat16"]
# Python scalars as inputs (weak-typed arguments of jit, vmap with in_axes None, ...): inputs after
# the first draw them too.
_WEAK = {"weak_float": float, "weak_int": int, "weak_bool": bool}
_LATER_DTYPES = _DTYPES + ["weak_float", "weak_float", "weak_int", "weak_bool"]
# Integers: mostly small (ties, zeros, negative operands of division, remainder and shifts), now and
# then the dtype's extremes (wrap-around, abs of the minimum).
_INT_POOL = {
    "int32": (-3, 5),
    "int8": (-3, 5),
    "int16": (-3, 5),
    "uint8": (0, 7),
    "uint32": (0, 7),
    "uint16": (0, 7),
    "int64": (-3, 5),
    "uint64": (0, 7),
}
# The long run's inputs draw these too (the CI budget's draws stay as they were).
_LONG_RUN_DTYPES = ["complex64", "uint16", "int64", "uint64"]


def _bf16():
    import ml_dtypes

    return onp.dtype(ml_dtypes.bfloat16)


_BF16 = _bf16()


def _elements(dtype, specials):
    if dtype == "bool":
        return st.booleans()
    if dtype in _INT_POOL:
        info = onp.iinfo(dtype)
        lo, hi = _INT_POOL[dtype]
        return st.one_of(st.integers(lo, hi), st.integers(lo, hi), st.sampled_from([info.min, info.max]))
    # Magnitudes below 1e-3 are left to the pool's 1e-3: at 1e-20 the quotient rule of x / x is the
    # difference of two numbers near 1e19, whose rounding no two implementations share.
    floats = st.floats(-3, 3, width=32, allow_subnormal=False).filter(lambda v: v == 0 or abs(v) >= 1e-3)
    real = st.one_of(st.sampled_from(_FINITE), floats)
    if specials:
        real = st.one_of(real, st.sampled_from(_SPECIAL))
    if dtype.startswith("complex"):
        return st.builds(complex, st.sampled_from(_FINITE), st.sampled_from(_FINITE))
    return real


@st.composite
def arrays(draw, shape, dtype, specials=False):
    """An array of ``shape`` and ``dtype`` whose values come mostly from a small pool (zeros, signed
    zeros and ties are common), NaN/inf among them when ``specials``."""
    if dtype in _WEAK:  # a Python scalar
        base = {"weak_float": "float32", "weak_int": "int32", "weak_bool": "bool"}[dtype]
        return _WEAK[dtype](draw(_elements(base, specials)))
    n = math.prod(shape)
    values = draw(st.lists(_elements(dtype, specials), min_size=n, max_size=n))
    return onp.array(values, dtype=_BF16 if dtype == "bfloat16" else dtype).reshape(shape)


def stacks(transforms=TRANSFORMS):
    """0-3 transformations, outermost first (vmap's in_axes are drawn later, with the inputs)."""
    return st.lists(st.sampled_from(transforms), min_size=0, max_size=3)


class _Abstract:
    """jax's side of drawing: the helpers bound to jax, and abstract evaluation of one step."""

    def __init__(self):
        import jax
        import jax.ad_checkpoint
        import jax.nn
        import jax.numpy as jnp
        import jax.scipy.integrate  # noqa: F401 - T.scipy.integrate/optimize/signal in ops_progz's
        import jax.scipy.linalg  # noqa: F401 - T.scipy.linalg in ops_edges' expressions
        import jax.scipy.optimize  # noqa: F401
        import jax.scipy.signal  # noqa: F401
        import jax.scipy.special
        import jax.scipy.stats  # noqa: F401 - T.scipy.stats in ops_edges' expressions

        self.jax = jax
        self.ns = {"np": jnp, "lax": jax.lax, "nn": jax.nn, "special": jax.scipy.special, "T": jax}
        exec(HELPERS, self.ns)
        self.cache = {}

    def _struct(self, shape, dtype):
        if dtype in _WEAK:  # a Python scalar: weak, of the mode's default type
            default = self.jax.dtypes.canonicalize_dtype(_WEAK[dtype])
            return self.jax.ShapeDtypeStruct((), default, weak_type=dtype != "weak_bool")
        return self.jax.ShapeDtypeStruct(shape, dtype)

    def eval_shape(self, expr, avals):
        """The (shape, dtype) of ``expr`` over operands a0.. of ``avals``, or None where jax rejects
        it (or it gives a tuple, or an intermediate over 200 elements)."""
        x64 = bool(self.jax.config.jax_enable_x64)
        key = (expr, tuple(avals), x64)
        if key not in self.cache:
            names = ", ".join(f"a{i}" for i in range(len(avals)))
            try:
                fn = eval(f"lambda {names}: {expr}", self.ns)
                structs = [self._struct(s, d) for s, d in avals]
                out = self.jax.eval_shape(fn, *structs)
                ok = hasattr(out, "shape") and math.prod(out.shape) <= 200
                self.cache[key] = (tuple(out.shape), str(out.dtype)) if ok else None
            except Exception:
                self.cache[key] = None
        return self.cache[key]


_ABSTRACT: list = []


def _abstract() -> _Abstract:
    if not _ABSTRACT:
        _ABSTRACT.append(_Abstract())
    return _ABSTRACT[0]


def _kind(dtype):
    if dtype in _WEAK:
        return {"weak_float": "f", "weak_int": "i", "weak_bool": "b"}[dtype]
    dtype = _BF16 if dtype == "bfloat16" else onp.dtype(dtype)
    return "f" if dtype == _BF16 else dtype.kind.replace("u", "i")


@st.composite
def cases(draw, ops, max_steps=6, x64=None, long_run=False):
    """A ``Case``: a stack of transformations, inputs, and a program of 1-``max_steps`` operations
    drawn from ``ops`` (a list of ``ops.Op``) that jax's abstract evaluation accepts, in mode ``x64``
    (default ``X64``; the caller has both libraries in that mode: ``mode``). ``long_run`` adds
    ``LONG_RUN_TRANSFORMS`` and vmap's axes of 1 (the CI budget's cases stay as they were)."""
    x64 = X64 if x64 is None else x64
    stack = draw(stacks(LONG_RUN_TRANSFORMS if long_run else TRANSFORMS))
    if os.environ.get("FUNCGRAD_FUZZ_EAGER", "0") != "0":  # (ops_lax's eager pass: no jit)
        stack = [k for k in stack if k != "jit"]
    kinds = [k for k in stack]
    differentiates = any(k in DERIVATIVES for k in kinds)
    weight = sum(_JACOBIAN_WEIGHT.get(k, 0) for k in kinds)
    max_size = _MAX_SIZE[min(weight, 3)]
    base = draw(
        hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3).filter(
            lambda s: math.prod(s) <= max_size
        )
    )
    n_inputs = draw(st.integers(1, 3))
    shapes = [base] + [draw(st.sampled_from([base, (), base[1:], base[-1:]])) for _ in range(n_inputs - 1)]
    dtypes = [
        draw(
            st.sampled_from(
                ["float64", "float32", "float64", "float32", "float16"] + (["bfloat16"] if long_run else [])
                if differentiates and i == 0
                else (_DTYPES if i == 0 else _LATER_DTYPES) + (_LONG_RUN_DTYPES if long_run else [])
            )
        )
        for i in range(n_inputs)
    ]
    shapes = [() if d in _WEAK else s for s, d in zip(shapes, dtypes)]

    abstract = _abstract()
    values = [(f"x{i}", s, d) for i, (s, d) in enumerate(zip(shapes, dtypes))]
    steps, used = [], []
    n_steps = draw(st.integers(1, max_steps))
    for k in range(n_steps):
        for _attempt in range(6):
            op = draw(st.sampled_from(ops))
            first = len(values) - 1 - draw(st.integers(0, len(values) - 1))
            picks = [first] + [
                len(values) - 1 - draw(st.integers(0, len(values) - 1)) for _ in range(op.arity - 1)
            ]
            operands = [values[i] for i in picks]
            if any(_kind(d) not in op.kinds for _, _, d in operands):
                continue
            if getattr(op, "drawn", None):  # (ops_prog: the whole program drawn from the operands' avals)
                params = draw(op.drawn([(s, d) for _, s, d in operands]))
            else:
                params = draw(op.params(operands[0][1])) if op.params else {}
            expr = op.render([f"a{i}" for i in range(op.arity)], params)
            out = abstract.eval_shape(expr, [(s, d) for _, s, d in operands])
            if out is None:
                continue
            if out[1] == "bfloat16":  # (eval_shape names it; NumPy finds it by its type)
                out = (out[0], _BF16)
            steps.append((op.name, op.render([name for name, _, _ in operands], params)))
            used.append((op, [d for _, _, d in operands], out[1]))
            values.append((f"v{k}", *out))
            break
        if len(steps) <= k:
            break
    assume(steps)
    # (an op that draws its own stack of transformations, ops_tcomp's, bounds the case's around it)
    outer = min((getattr(op, "max_outer", None) for op, _, _ in used), key=lambda n: 99 if n is None else n)
    if outer is not None:
        stack = stack[:outer]
    specials = all(op.specials for op, _, _ in used) and draw(st.sampled_from([False, False, True]))
    # (a Python int or float promotes as a weak type in both libraries, NumPy 2's rule being NEP 50's;
    # a Python bool is a bool in both)
    weak = {"weak_float", "weak_int"}
    mixes = any(
        op.mixes_dtypes
        or len({d for d in ds if d not in weak}) > 1
        or any(_kind(d) in "bi" for d in ds if d not in weak)
        for op, ds, _ in used
    )

    # vmap layers: each gets a batch size and in_axes; an input's batch axes come outermost first.
    full_shapes = [list(s) for s in shapes]
    resolved = []
    for kind in stack:
        if kind != "vmap":
            resolved.append((kind, None, None))
            continue
        size = draw(st.sampled_from([2, 1, 3, 0]))
        axes = tuple(
            None
            if dtypes[i] in _WEAK
            else draw(st.sampled_from([0, None, 0, -1] + ([1] if long_run and shapes[i] else [])))
            for i in range(n_inputs)
        )
        axes = axes if any(a is not None for a in axes) else (0,) + axes[1:]
        in_axes = axes if n_inputs > 1 else axes[0]
        out_axes = draw(st.sampled_from([0, 0, -1] + ([1] if long_run else [])))
        arg = in_axes if out_axes == 0 and -1 not in axes else {"in_axes": in_axes, "out_axes": out_axes}
        resolved.append((kind, arg, size))
    # insert batch axes innermost first, so the outermost vmap's axis ends up outermost (in front for
    # in_axes 0, at the back for -1)
    for entry in reversed(resolved):
        if entry[0] == "vmap":
            arg = entry[1]["in_axes"] if isinstance(entry[1], dict) else entry[1]
            axes = arg if isinstance(arg, tuple) else (arg,)
            for i, a in enumerate(axes):
                if a == -1:
                    full_shapes[i].append(entry[2])
                elif a is not None:
                    full_shapes[i].insert(a, entry[2])
    if math.prod(full_shapes[0]) > 4 * max_size:
        assume(False)
    inputs = [draw(arrays(tuple(s), d, specials)) for s, d in zip(full_shapes, dtypes)]
    operand_dtypes = tuple(tuple(str(d) for d in ds) for _, ds, _ in used)
    out_struct = draw(st.sampled_from(["", "", ""] + list(OUT_STRUCTS)[1:])) if long_run else ""
    return Case(
        inputs,
        steps,
        [(e[0], e[1]) for e in resolved],
        tuple(op for op, _, _ in used),
        mixes,
        x64,
        operand_dtypes,
        out_struct,
    )
