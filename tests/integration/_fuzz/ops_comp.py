"""The eighth part of the fuzzer's surface table: composed transformations and typed paths (session 12).

Drawn where JAX users' random programs go and the other tables did not:

- stacks of transformations *inside* a program over bodies that mix dtypes and weak scalars in
  their control flow: ``jit(vmap(grad))`` (``in_axes``/``out_axes`` of 1), ``jacfwd(jacrev)``,
  ``hessian``, ``vmap(hessian)``, ``jacfwd(vmap(grad))``, ``linearize`` then ``linear_transpose``,
  ``vjp`` and ``jvp`` of ``grad``, ``grad`` of ``checkpoint`` with each policy (names included);
  the bodies: ``scan`` with an integer counter and a weak initial carry, ``fori_loop`` adding its
  int32 index to floats, ``cond``/``switch`` (an ``argmax`` index), custom_jvp/custom_vjp,
  ``dot_general`` at ``HIGHEST``, ``reduce_window`` with a weak init, ``lax.map`` with
  ``batch_size``, ``stop_gradient``, ``where`` with weak scalars and booleans times integers;
- ``dot_general``/``dot``/``matmul``/``einsum``/``conv_general_dilated`` with ``precision`` and
  ``preferred_element_type`` over int8/uint8/int32/float16/bfloat16/float32/float64 operands, with
  batch dimensions;
- generic ``reduce_window`` over narrow and integer dtypes with Python-scalar inits and padding;
- loops whose carries are weak scalars that meet strong arrays (JAX re-traces with the promoted
  type), integer and boolean carries, ``cond`` over integer/bool operands;
- ``linearize`` followed by ``linear_transpose``; ``pure_callback`` with each ``vmap_method``;
  ``stop_gradient`` of integers; ``vmap`` with pytree ``in_axes`` and ``out_axes=None`` leaves;
  ``approx_max_k``/``approx_min_k``; ``bitcast_convert_type`` between widths.

Long run only (as the other session tables): the CI budget's cases stay those it drew before.

>>> COMP[0].name
'comp.stack'
"""

from __future__ import annotations

from hypothesis import strategies as st

from _fuzz.opbase import B, Op, U, _Raw, keyed
from _fuzz.ops_mix import _LinalgOp as _DrawnOp  # (the whole expression drawn; the operand at \x00)

# Scalar functions of a 1-d float vector ``a`` (2-3 elements).
_BODIES = [
    "lax.scan(lambda c, x: ((c[0] + 1, c[1] * np.cos(x) + x * c[0]), c[1] * 2), (0, a[0] * 0 + 1), a)[0][1]",
    "np.sum(lax.scan(lambda c, x: (c + x, c * x), 0.0, a)[1])",
    "np.sum(lax.fori_loop(0, 3, lambda i, c: c * np.sin(c) + i * 0.5, a))",
    "np.sum(lax.fori_loop(0, 2, lambda i, c: c + a * i, np.zeros_like(a)))",
    "lax.cond(a[0] > 0, lambda a: np.sum(a * 2), lambda a: np.sum(a ** 2) - 1.0, a)",
    "lax.switch(np.argmax(a) % 3, [lambda a: np.sum(a ** 2), lambda a: np.max(a) * 3, "
    "lambda a: np.sum(np.where(a > 0, a, 0.0))], a)",
    "np.sum(_custom_jvp(T, np, a) * a)",
    "np.sum(_custom_vjp(T, np, a) ** 2)",
    "np.sum(lax.dot_general(a[None, :], np.outer(a, np.cos(a)), (((1,), (0,)), ((), ())), "
    "precision=lax.Precision.HIGHEST))",
    "np.sum(T.checkpoint(lambda a: np.sin(T.ad_checkpoint.checkpoint_name(a * 2, 'h')) * a, "
    "policy=T.checkpoint_policies.save_only_these_names('h'))(a))",
    "np.sum(lax.reduce_window(a, 0.0, lax.add, (2,), (1,), 'SAME') * a)",
    "np.sum(lax.reduce_window(a, -np.inf, lax.max, (2,), (1,), 'VALID') * a[0])",
    "np.sum(np.cumsum(a * a[::-1]) * np.arange(a.shape[0]))",
    "np.sum(np.where(a > 0, a, 0) ** 2 + (a > 1) * 3 * a)",
    "np.sum(lax.map(lambda x: np.sin(x) * x, a, batch_size=2))",
    "np.sum(lax.stop_gradient(a) * a + np.sin(lax.stop_gradient(a[0]) * a))",
    "np.sum(np.tanh(a).astype(np.float16).astype(a.dtype) * a)",
    "np.prod(a + 2) + np.max(a * a)",
]
# How a scalar function ``g`` of a vector is composed with transformations (each gives a function
# of the vector).
_COMPOSE = [
    "T.jit(T.grad(g))",
    "(lambda a: T.vmap(T.grad(g))(np.stack([a, a[::-1] * 0.5])))",
    "(lambda a: T.jit(T.vmap(T.grad(g), in_axes=1, out_axes=1))(np.stack([a, np.cos(a)], axis=1)))",
    "T.jacfwd(T.jacrev(g))",
    "T.jacrev(T.jacfwd(g))",
    "T.hessian(g)",
    "(lambda a: T.vmap(T.hessian(g))(np.stack([a, -a])))",
    "(lambda a: T.jacfwd(T.vmap(T.grad(g)))(np.stack([a, a * 0.5])))",
    "(lambda a: T.linear_transpose(T.linearize(g, a)[1], a)(np.ones((), a.dtype)))",
    "(lambda a: T.vjp(T.grad(g), a)[1](np.cos(a))[0])",
    "(lambda a: T.jvp(T.jit(T.grad(g)), (a,), (np.sin(a),))[1])",
    "T.grad(T.checkpoint(g, policy=T.checkpoint_policies.nothing_saveable))",
    "T.grad(T.checkpoint(g, policy=T.checkpoint_policies.dots_with_no_batch_dims_saveable))",
    "(lambda a: T.value_and_grad(g)(a)[1] * T.value_and_grad(g)(a)[0])",
    "T.jit(T.hessian(T.jit(g)))",
]

_DOT_DTYPES = ["float32", "float16", "bfloat16", "int8", "uint8", "int32", "float64", "bool"]
_PETS = ["None", "np.float32", "np.int32", "np.float64", "np.bfloat16", "np.float16", "np.int16", "np.int64"]
_PRECISIONS = [
    "None",
    "lax.Precision.HIGHEST",
    "'highest'",
    "lax.Precision.HIGH",
    "('default', 'highest')",
    "'float32'",
    "'bfloat16'",
]
_DOTS = [
    "lax.dot_general({l}, {r}, (((1,), (0,)), ((), ())), precision={p}, preferred_element_type={t})",
    "lax.dot({l}, {r}, precision={p}, preferred_element_type={t})",
    "np.matmul({l}, {r}, precision={p}, preferred_element_type={t})",
    "np.dot({l}, {r}, precision={p}, preferred_element_type={t})",
    "np.einsum('ij,jk->ik', {l}, {r}, precision={p}, preferred_element_type={t})",
    "lax.dot_general(np.stack([{l}, {l} * 2]), np.stack([{r}, {r}]), (((2,), (1,)), ((0,), (0,))), "
    "precision={p}, preferred_element_type={t})",
    "lax.conv_general_dilated({l}[None], {r}.T[:, :, None], (1,), 'SAME', precision={p}, "
    "preferred_element_type={t})",
    "lax.conv_general_dilated({l}[None], {r}.T[:2, :, None], (1,), [(1, 0)], rhs_dilation=(2,), "
    "precision={p}, preferred_element_type={t})",
]


def _dot(form, ldt, rdt, prec, pet):
    lhs = f"_mat(np, \x00, (2, 3), {ldt!r})"
    rhs = f"_mat(np, np.cos(\x00), (3, 2), {rdt!r})"
    return _Raw(form.format(l=lhs, r=rhs, p=prec, t=pet))


_REDUCERS = [
    ("lax.add", ["0", "0.0", "False"]),
    ("lax.max", ["-np.inf", "-128", "0", "False"]),
    ("lax.min", ["np.inf", "127", "True"]),
    ("lax.mul", ["1", "1.0"]),
    ("lax.bitwise_or", ["False", "0"]),
]
_WINDOW_DTYPES = ["int8", "int32", "uint8", "float16", "bfloat16", "float32", "bool", "float64"]


def _window(reducer, dtype, window, stride, padding, dilation):
    fn, inits = reducer
    return st.sampled_from(inits).map(
        lambda init: _Raw(
            f"lax.reduce_window(_mat(np, \x00, (3, 4), {dtype!r}), {init}, {fn}, {window}, {stride}, "
            f"{padding}, window_dilation={dilation})"
        )
    )


_LOOPS = [
    "lax.scan(lambda c, x: (c + x.astype(np.result_type(c)), c * 2), {init}, {U})[1]",
    "lax.scan(lambda c, x: (c * 2 + 1, c > x), {init}, {U})[1]",
    "lax.fori_loop(0, 3, lambda i, c: c + i, {init})",
    "lax.fori_loop(0, 3, lambda i, c: c * 2 + {U}, {init})",
    "lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 2 + c[0]), (0, {U}))[1]",
    "lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * {init}, c[1] + 1), ({U}, 0))[0]",
    "lax.cond(np.any({U} > 0), lambda x: x * 2, lambda x: x + 1, {U})",
    "lax.cond(np.sum({U}) > 1, lambda x: x - {init}, lambda x: x * {init}, {U})",
    "lax.switch(np.sum({U} != 0) % 2, [lambda x: x ^ x, lambda x: ~x], {U})",
    "lax.scan(lambda c, x: (c | x, c & x), np.zeros_like({U}[0]), {U})[1]",
    "lax.associative_scan(lax.add, {U})",
    "lax.map(lambda x: x * {init} + 1, {U}, batch_size=2)",
]
_INITS = ["0", "0.0", "True", "1", "np.int8(1)", "np.float32(0.5)", "2.5", "np.uint8(3)"]

_LINEAR = [
    "np.sin(a) * a",
    "np.cumsum(a * a) * 2",
    "a[::-1] * np.cos(a[0])",
    "np.outer(a, a).ravel()",
    "lax.dot_general(a, np.outer(a, a), (((0,), (0,)), ((), ())), precision='highest')",
    "lax.scan(lambda c, x: (c * x + 1, c), a[0], a)[1]",
    "T.checkpoint(lambda a: np.exp(a) * a)(a)",
]

_CALLBACKS = ["'sequential'", "'expand_dims'", "'broadcast_all'", "'legacy_vectorized'"]

COMP: list[Op] = [
    Op(
        "comp.stack",
        f"(lambda g: {{c}})(lambda a: {{body}})(np.ravel({U})[:3] * 1.0)",
        params=keyed(c=st.sampled_from(_COMPOSE).map(_Raw), body=st.sampled_from(_BODIES).map(_Raw)),
        kinds="bif",
    ),
    _DrawnOp(
        "comp.dot",
        "{e}",
        params=lambda shape: st.builds(
            _dot,
            st.sampled_from(_DOTS),
            st.sampled_from(_DOT_DTYPES),
            st.sampled_from(_DOT_DTYPES),
            st.sampled_from(_PRECISIONS),
            st.sampled_from(_PETS),
        ).map(lambda e: {"e": e}),
        kinds="bif",
        mixes_dtypes=True,
    ),
    _DrawnOp(
        "comp.window",
        "{e}",
        params=lambda shape: (
            st.builds(
                _window,
                st.sampled_from(_REDUCERS),
                st.sampled_from(_WINDOW_DTYPES),
                st.sampled_from([(2, 2), (1, 3), (3, 1), (2, 3)]),
                st.sampled_from([(1, 1), (2, 1), (1, 2)]),
                st.sampled_from(["'VALID'", "'SAME'", "((1, 0), (0, 2))"]),
                st.sampled_from([(1, 1), (2, 1), (1, 2)]),
            )
            .flatmap(lambda s: s)
            .map(lambda e: {"e": e})
        ),
        kinds="bif",
        mixes_dtypes=True,
    ),
    _DrawnOp(
        "comp.loop",
        "{e}",
        params=lambda shape: st.builds(
            lambda form, init: _Raw(form.replace("{init}", init).replace("{U}", "\x00")),
            st.sampled_from(_LOOPS),
            st.sampled_from(_INITS),
        ).map(lambda e: {"e": e}),
        kinds="bif",
        mixes_dtypes=True,
    ),
    Op(
        "comp.linear_transpose",
        f"(lambda a: (lambda out, fj: T.linear_transpose(fj, a)(_probe(np, out)))"
        f"(*T.linearize(lambda a: {{lin}}, a)))(np.ravel({U})[:3] * 1.0)",
        params=keyed(lin=st.sampled_from(_LINEAR).map(_Raw)),
        kinds="bif",
    ),
    Op(
        "comp.callback",
        f"T.pure_callback(lambda x: _onp.sin(_onp.asarray(x)) * 2, T.ShapeDtypeStruct(np.shape({U}), "
        f"np.result_type({U})), {U}, vmap_method={{m}})",
        params=keyed(m=st.sampled_from(_CALLBACKS).map(_Raw)),
        kinds="f",
    ),
    Op("comp.stop_gradient_int", f"lax.stop_gradient({U}) * 2 + {U}", kinds="bi"),
    Op(
        "comp.stop_gradient", f"lax.stop_gradient({U}) * {U} + np.sin(lax.stop_gradient({U} ** 2))", kinds="f"
    ),
    Op(
        "comp.vmap_tree",
        "T.vmap(lambda d: (d['a'] * d['b'], 3.0), in_axes=({{'a': 0, 'b': None}},), "
        "out_axes=({o}, None))"
        f"({{{{'a': np.atleast_2d({U}), 'b': {B}}}}})[0]",
        arity=2,
        params=keyed(o=st.sampled_from([0, 1, -1])),
        kinds="bif",
        mixes_dtypes=True,
    ),
    Op(
        "comp.approx_k",
        f"lax.{{f}}(np.atleast_1d({U}), {{k}}, recall_target={{r}})[{{i}}]",
        params=keyed(
            f=st.sampled_from(["approx_max_k", "approx_min_k"]).map(_Raw),
            k=st.integers(0, 3),
            r=st.sampled_from([0.95, 1.0]),
            i=st.integers(0, 1),
        ),
        kinds="if",
        specials=False,
    ),
    Op(
        "comp.bitcast",
        f"lax.bitcast_convert_type({U}, {{t}})",
        params=keyed(
            t=st.sampled_from(["np.int32", "np.uint8", "np.float32", "np.int16", "np.float16"]).map(_Raw)
        ),
        kinds="if",
        specials=False,
    ),
]
