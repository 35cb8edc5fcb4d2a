"""The sixth part of the fuzzer's surface table: higher-order mixes and the lax API's corners (session 10).

Drawn where random programs of JAX users go and the other tables did not:

- transformations of transformations *inside* a program: ``jacfwd`` of ``jacrev`` (and the other
  three orders, ``hessian``) of functions holding ``scan``/``fori_loop``/``while_loop``/``cond``/
  ``associative_scan``/``checkpoint``/custom rules; ``grad`` of ``vmap`` of ``cond``/``switch``/
  a ``while_loop`` with a batched predicate; ``jvp`` of ``grad`` of custom rules; ``checkpoint`` with
  each policy as a ``scan`` body under ``grad``/``jacfwd``;
- ``vmap`` with named axes and collectives (``psum``/``pmean``/``pmax``/``pmin``/``all_gather``/
  ``axis_index``/``ppermute``, nested over two names), ``in_axes``/``out_axes`` of 1, 2 and negative
  axes, ``axis_size`` with no mapped input; batched indexing with negative and out-of-bounds traced
  indices (gathers clamp, scatters drop);
- linear algebra of 3x3 matrices built from the input, per row under ``vmap``, on stacks of
  matrices, or once: ``solve`` (vector and matrix right sides), ``cholesky``, ``eigh`` (functions of
  it that do not depend on eigenvector signs), ``svd``, ``qr``, ``slogdet``, ``inv``, ``lstsq``,
  ``expm``, triangular/Cholesky/LU solves, ``eigvals`` of a non-symmetric matrix;
- ``fft`` of every kind with ``n``/``s``, ``axes`` and ``norm``; 2-d convolutions with strides,
  padding forms, dilations, feature and batch groups, ``conv_transpose``; 2-d ``reduce_window`` with
  base and window dilations (max pooling's gradient at ties);
- the lax API: ``select_n`` (boolean and integer selectors), ``sort`` of three operands with
  ``num_keys``, ``reduce`` of one and two operands, ``argmax``, ``pad`` with negative and interior
  padding, ``dot_general`` with batch dimensions and ``preferred_element_type``, clamped
  ``dynamic_slice``/``dynamic_update_slice`` over two axes with traced starts, ``clamp``,
  ``associative_scan`` of a linear recurrence (tuple operands, ``reverse``, ``axis``);
- explicit dtype mixes: casts to int8/uint32/uint8/float16/bfloat16/complex64 combined with each
  other and with Python scalars.

Long run only (as ``ops_more``/``ops_edges``/``ops_struct``): the CI budget's cases stay those it drew
before. Helpers (``_conv2``, ``_window2``) are in ``programs.HELPERS``.

>>> MIX[0].name
'mix.higher_order'
"""

from __future__ import annotations

from hypothesis import strategies as st

from _fuzz.opbase import B, Op, U, _Raw, keyed

# Scalar functions of a 1-d float vector ``a``, each holding a construct worth differentiating twice.
_BODIES = [
    "np.sum(np.sin(a) * a[::-1])",
    "lax.scan(lambda c, x: (c * np.cos(x) + x, c * x), 1.0, a)[0]",
    "np.sum(lax.scan(lambda c, x: (c * np.cos(x) + x, c * x), a[0], a, reverse=True)[1])",
    "np.sum(lax.fori_loop(0, 3, lambda i, c: c * np.tanh(c + a[0]) + a, a))",
    "lax.cond(np.sum(a) > 0, lambda a: np.sum(a ** 3), lambda a: np.prod(np.cos(a)), a)",
    "lax.switch(np.clip(np.sum(a > 0), 0, 2), [np.sum, lambda a: np.sum(np.exp(a)), "
    "lambda a: np.max(a) * a[0]], a)",
    "np.sum(lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, np.sin(c[1]) * a), (0, a))[1])",
    "np.sum(lax.associative_scan(np.multiply, np.cos(a)))",
    "np.sum(lax.cumlogsumexp(a * a, axis=0))",
    "T.checkpoint(lambda a: np.sum(np.exp(np.sin(a)) * a))(a)",
    "np.sum(_custom_vjp(T, np, a) * a)",
    "np.sum(_custom_jvp(T, np, a) * np.cos(a))",
    "np.sum(T.vmap(lambda r: r * np.sum(a * r))(a))",
    "np.linalg.slogdet(_matrix(np, a, 'spd'))[1]",
    "np.sum(np.linalg.solve(_matrix(np, a, 'any'), a[:2] if a.shape[0] >= 2 else np.ones(2, a.dtype)))",
]
_HIGHER = [
    "T.hessian",
    "(lambda g: T.jacfwd(T.jacrev(g)))",
    "(lambda g: T.jacrev(T.jacfwd(g)))",
    "(lambda g: T.jacfwd(T.jacfwd(g)))",
    "(lambda g: T.jacrev(T.jacrev(g)))",
    "(lambda g: T.grad(lambda a: np.sum(T.grad(g)(a) ** 2)))",
    "(lambda g: lambda a: T.jvp(T.grad(g), (a,), (np.ones_like(a),))[1])",
    "(lambda g: lambda a: T.linearize(T.grad(g), a)[1](np.cos(a)))",
]
# Bodies of rows ``r`` (1-d) for vmap: cond, switch and while with batched predicates.
_ROW_BODIES = [
    "lax.cond(r[0] > 0, lambda r: np.sin(r) * r, lambda r: r ** 2, r)",
    "lax.cond(np.sum(r) > 0.5, lambda r: np.cumsum(r), lambda r: r[::-1] * 2.0, r)",
    "lax.switch(np.clip(np.sum(r > 0), 0, 2), [lambda r: r * 3.0, np.sin, lambda r: r * r[0]], r)",
    "lax.while_loop(lambda c: c[1] < 3.0, lambda c: (c[0] + 1, np.abs(c[1]) * 2 + 0.5), (0, r[0]))[0] * r",
    "lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, np.sin(c[1]) + r), (0, r))[1]",
    "lax.fori_loop(0, 2, lambda i, c: c * r + i, r)",
    "lax.select(r > 0, np.exp(r), r * 0.5)",
]
_COLLECTIVES = [
    "a - lax.psum(a, 'i')",
    "a * lax.pmean(a, 'i')",
    "lax.pmax(a, 'i') - a",
    "lax.pmin(a, 'i') + a * 2",
    "lax.all_gather(a, 'i') * 1.5",
    "lax.all_gather(a, 'i', axis=-1)",
    "a * lax.axis_index('i') + lax.psum(1, 'i')",
    "a / lax.psum(np.ones_like(a), 'i')",
    "lax.psum(a * a, 'i') ** 0.5",
    "lax.psum(a > 0, 'i') * a",
    "lax.pmean(a != 0, 'i') + a",
]
_COLLECTIVES2 = [
    "a - lax.psum(a, ('i', 'j'))",
    "a * lax.pmean(a, 'i') - lax.pmax(a, 'j')",
    "a * lax.axis_index('i') - lax.axis_index('j')",
    "lax.all_gather(a, 'j') * lax.psum(a, 'i')",
]
_POLICIES = [
    "None",
    "T.checkpoint_policies.dots_saveable",
    "T.checkpoint_policies.nothing_saveable",
    "T.checkpoint_policies.everything_saveable",
    "T.checkpoint_policies.save_only_these_names('h')",
    "T.checkpoint_policies.save_any_names_but_these('h')",
    "T.checkpoint_policies.save_from_both_policies(T.checkpoint_policies.dots_saveable, "
    "T.checkpoint_policies.save_only_these_names('h'))",
]

# Linear algebra, each a function of a 3x3 SPD matrix M and a vector b of 3.
_LINALG = [
    "lambda M, b: np.linalg.solve(M, b)",
    "lambda M, b: np.linalg.solve(M, np.stack([b, b[::-1] * 2.0], axis=-1))",
    "lambda M, b: np.linalg.cholesky(M)",
    "lambda M, b: np.linalg.eigh(M)[0]",
    "lambda M, b: (lambda w, v: (v * np.sin(w)[..., None, :]) @ np.swapaxes(v, -1, -2))(*np.linalg.eigh(M))",
    "lambda M, b: np.linalg.eigvalsh(M + M * b[..., None], UPLO='U')",
    "lambda M, b: np.linalg.svd(M, compute_uv=False)",
    "lambda M, b: (lambda u, s, vh: (u * np.sqrt(s)[..., None, :]) @ vh)"
    "(*np.linalg.svd(M + b[..., None] * 0.3))",
    "lambda M, b: np.linalg.svd(M[..., :2] + b[..., None] * 0.1, full_matrices=False)[1]",
    "lambda M, b: np.linalg.qr(M + b[..., None] * 0.2)[1]",
    "lambda M, b: np.linalg.qr(M[..., :2])[0] * np.linalg.qr(M[..., :2])[1][..., :1, :1]",
    "lambda M, b: np.linalg.qr(M, mode='r')",
    "lambda M, b: np.linalg.slogdet(M + b[..., None])[1]",
    "lambda M, b: np.linalg.slogdet(M - 2.0 * np.eye(3, dtype=M.dtype))[0]",
    "lambda M, b: np.linalg.det(M * b[..., None])",
    "lambda M, b: np.linalg.inv(M)",
    "lambda M, b: np.linalg.pinv(M[..., :2])",
    "lambda M, b: np.linalg.matrix_power(M, -2)",
    "lambda M, b: np.linalg.norm(M, ord={ord}, axis=(-2, -1))",
    "lambda M, b: np.linalg.lstsq(M[..., :2], b)[0]",
    "lambda M, b: T.scipy.linalg.expm(0.3 * M - b[..., None])",
    "lambda M, b: T.scipy.linalg.solve_triangular(np.linalg.cholesky(M), b, lower=True, trans={trans})",
    "lambda M, b: T.scipy.linalg.cho_solve(T.scipy.linalg.cho_factor(M), b)",
    "lambda M, b: T.scipy.linalg.lu_solve(T.scipy.linalg.lu_factor(M + np.outer(b, b)), b)",
    "lambda M, b: T.scipy.linalg.solve(M, b, assume_a='pos')",
    "lambda M, b: lax.linalg.triangular_solve(np.linalg.cholesky(M), M, left_side={side}, lower=True)",
    "lambda M, b: np.sum(np.abs(np.linalg.eigvals(M + np.triu(M) * b[..., None])))",
]
# How the matrix and vector are made from the operand: per row under vmap, as a stack of matrices
# (the function applied to the whole batch), or once from the whole operand.
_LINALG_WRAP = [
    "T.vmap(lambda r: ({f})(_matrix3(np, r), _signal(np, r, 3)))(np.atleast_2d({U}))",
    "({f})(T.vmap(lambda r: _matrix3(np, r))(np.atleast_2d({U})), "
    "T.vmap(lambda r: _signal(np, r, 3))(np.atleast_2d({U})))",
    "({f})(_matrix3(np, {U}), _signal(np, {U}, 3))",
    "T.vmap(lambda r: ({f})(_matrix3(np, r), _signal(np, r, 3)), in_axes=-1)(np.atleast_2d({U}))",
]


def _linalg(draw_f, wrap, ord_, trans, side):
    f = draw_f.replace("{ord}", repr(ord_)).replace("{trans}", repr(trans)).replace("{side}", repr(side))
    return _Raw(wrap.replace("{f}", f).replace("{U}", "\x00"))


def _linalg_params(shape):
    return st.builds(
        _linalg,
        st.sampled_from(_LINALG),
        st.sampled_from(_LINALG_WRAP),
        st.sampled_from([None, "fro", "nuc", 2, -2, 1, -1, float("inf")]),
        st.sampled_from([0, 1, 2, "T"]),
        st.booleans(),
    ).map(lambda e: {"e": e})


class _LinalgOp(Op):
    """An Op whose whole expression is drawn (the operand's name is written where ``\\x00`` is)."""

    def render(self, operands, params):
        return str(params["e"]).replace("\x00", operands[0])


def _pad_config(shape):
    one = st.tuples(st.integers(-1, 2), st.integers(-1, 2), st.integers(0, 2))
    return st.fixed_dictionaries({"cfg": st.tuples(*[one for _ in shape]).map(list)})


def _starts(shape):
    return st.fixed_dictionaries(
        {
            "starts": st.tuples(*[st.integers(-3, 4) for _ in shape]),
            "sizes": st.tuples(*[st.integers(0, max(d, 0)) for d in shape]),
        }
    )


_FFT1 = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
_FFTN = ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"]
_CASTS = ["int8", "uint8", "uint32", "int16", "float16", "bfloat16", "float32", "complex64", "bool", "int32"]
_SCALARS = ["2", "-3", "0.5", "1e3", "True", "(1+2j)", "300", "-1.5"]

MIX: list[Op] = [
    # ---- transformations of transformations, inside the program
    Op(
        "mix.higher_order",
        f"{{t}}(lambda a: {{body}})(np.ravel({U})[:4] * 1.0)",
        kinds="f",
        specials=False,
        params=keyed(t=st.sampled_from(_HIGHER).map(_Raw), body=st.sampled_from(_BODIES).map(_Raw)),
    ),
    Op(
        "mix.grad_vmap_ctrl",
        f"T.{{t}}(lambda A: np.sum(np.sin(T.vmap(lambda r: {{body}})(A))))(np.atleast_2d({U}))",
        kinds="f",
        params=keyed(
            t=st.sampled_from(["grad", "jacfwd", "jacrev", "hessian"]).map(_Raw),
            body=st.sampled_from(_ROW_BODIES).map(_Raw),
        ),
    ),
    Op(
        "mix.vmap_grad_ctrl",
        f"T.vmap(T.{{t}}(lambda r: np.sum({{body}})), in_axes={{ax}})(np.atleast_2d({U}))",
        kinds="f",
        params=keyed(
            t=st.sampled_from(["grad", "jacfwd", "jacrev"]).map(_Raw),
            body=st.sampled_from(_ROW_BODIES).map(_Raw),
            ax=st.sampled_from([0, 1, -1]),
        ),
    ),
    Op(
        "mix.custom_fwd_rev",
        f"T.jvp(T.grad(lambda a: np.sum({{g}}(T, np, a * {B}))), ({U},), (np.cos({U}),))[{{i}}]",
        arity=2,
        kinds="f",
        params=keyed(
            g=st.sampled_from(
                ["_custom_vjp", "_custom_jvp", "(lambda T, np, a: _custom_jvp_nondiff(T, np, a, 2.0))"]
            ).map(_Raw),
            i=st.integers(0, 1),
        ),
    ),
    Op(
        "mix.remat_scan",
        f"T.{{t}}(lambda c0: np.sum(lax.scan(T.checkpoint(lambda c, x: (np.sin(c) * x + "
        f"T.ad_checkpoint.checkpoint_name(np.tanh(c * x), 'h'), np.cos(c) * x), policy={{p}}, "
        f"prevent_cse={{cse}}), "
        f"c0, np.linspace(0.5, 1.5, {{n}}).astype(np.result_type(c0)), unroll={{u}})[{{i}}]))({U})",
        kinds="f",
        params=keyed(
            t=st.sampled_from(["grad", "jacfwd", "jacrev", "hessian"]).map(_Raw),
            p=st.sampled_from(_POLICIES).map(_Raw),
            cse=st.booleans(),
            n=st.integers(0, 3),
            u=st.sampled_from([1, 2]),
            i=st.integers(0, 1),
        ),
    ),
    Op(
        "mix.remat_nested",
        f"T.grad(lambda a: np.sum(T.remat(lambda a: lax.fori_loop(0, {{n}}, lambda i, c: T.checkpoint("
        f"lambda c: np.sin(c) * a + c, policy={{p}})(c), a))(a) ** 2))({U})",
        kinds="f",
        params=keyed(n=st.integers(0, 3), p=st.sampled_from(_POLICIES).map(_Raw)),
    ),
    # ---- named axes and collectives under vmap; in_axes/out_axes beyond 0 and None
    Op(
        "mix.vmap_collective",
        f"T.vmap(lambda a: {{c}}, axis_name='i', in_axes={{ia}}, out_axes={{oa}})({U})",
        params=keyed(
            c=st.sampled_from(_COLLECTIVES).map(_Raw),
            ia=st.sampled_from([0, 1, -1]),
            oa=st.sampled_from([0, 1, -1]),
        ),
    ),
    Op(
        "mix.vmap_collective2",
        f"T.vmap(T.vmap(lambda a: {{c}}, axis_name='j', in_axes={{ia}}), axis_name='i', "
        f"out_axes={{oa}})({U})",
        params=keyed(
            c=st.sampled_from(_COLLECTIVES2).map(_Raw),
            ia=st.sampled_from([0, 1, -1]),
            oa=st.sampled_from([0, 1, -1]),
        ),
    ),
    Op(
        "mix.vmap_ppermute",
        f"(lambda n: T.vmap(lambda a: lax.ppermute(a, 'i', [(j, (j + {{s}}) % n) for j in range(n)]) * a, "
        f"axis_name='i')({U}))(np.shape({U})[0])",
        params=keyed(s=st.integers(1, 2)),
    ),
    Op(
        "mix.vmap_axes",
        f"T.vmap(lambda a, b: a * b + np.sum(a) - b[..., :1], in_axes=({{ia}}, {{ib}}), "
        f"out_axes={{oa}})({U}, {B})",
        arity=2,
        params=keyed(
            ia=st.sampled_from([0, 1, 2, -1, -2, None]),
            ib=st.sampled_from([0, 1, -1, None]),
            oa=st.sampled_from([0, 1, 2, -1, -2]),
        ),
    ),
    Op(
        "mix.vmap_nested_axes",
        f"T.vmap(T.vmap(lambda a: np.cumsum(a) * a[-1], in_axes={{i1}}, out_axes={{o1}}), in_axes={{i2}}, "
        f"out_axes={{o2}})({U})",
        params=keyed(
            i1=st.sampled_from([0, 1, -1]),
            o1=st.sampled_from([0, 1, -1]),
            i2=st.sampled_from([0, 1, -1, 2]),
            o2=st.sampled_from([0, 1, -1, 2]),
        ),
    ),
    Op(
        "mix.vmap_axis_size",
        f"T.vmap(lambda a: a * 2 + np.sum(a), in_axes=None, axis_size={{n}}, out_axes={{oa}})({U})",
        params=keyed(n=st.integers(0, 3), oa=st.sampled_from([0, -1])),
    ),
    Op(
        "mix.vmap_index",
        f"(lambda A: T.vmap(lambda r, i: {{how}}, in_axes=(0, 0))"
        f"(A, np.arange(np.shape(A)[0]) * {{k}} + {{c}}))"
        f"(np.atleast_2d({U}))",
        params=keyed(
            how=st.sampled_from(
                [
                    "r[i]",
                    "lax.dynamic_slice_in_dim(r, i, 1)",
                    "r.at[i].add(r[0] * 2)",
                    "r.at[i].set(7, mode='drop')",
                    "r.at[i].get(mode='fill', fill_value=-5)",
                    "r.at[i].get(mode='clip')",
                    "np.take(r, i, mode='wrap')",
                    "lax.dynamic_update_index_in_dim(r, r[-1] * 3, i, 0)",
                ]
            ).map(_Raw),
            k=st.sampled_from([1, 3, -2]),
            c=st.sampled_from([0, -4, 2, -1]),
        ),
    ),
    # ---- linear algebra under vmap and on stacks
    _LinalgOp("mix.linalg", "", kinds="f", specials=False, params=_linalg_params),
    # ---- fft of every kind
    Op(
        "mix.fft1",
        f"np.fft.{{f}}({U}, n={{n}}, axis={{ax}}, norm={{norm}})",
        kinds="ifc",
        params=keyed(
            f=st.sampled_from(_FFT1).map(_Raw),
            n=st.sampled_from([None, None, 1, 2, 3, 5]),
            ax=st.sampled_from([-1, 0, 1]),
            norm=st.sampled_from([None, "ortho", "forward", "backward"]),
        ),
    ),
    Op(
        "mix.fftn",
        f"np.fft.{{f}}({U}, s={{s}}, axes={{axes}}, norm={{norm}})",
        kinds="ifc",
        params=keyed(
            f=st.sampled_from(_FFTN).map(_Raw),
            s=st.sampled_from([None, None, (2, 3), (1, 4)]),
            axes=st.sampled_from([(-2, -1), (0, 1), (1, 0), (0, -1)]),
            norm=st.sampled_from([None, "ortho", "forward"]),
        ),
    ),
    Op(
        "mix.fftfreq",
        f"np.sum({U}) * np.fft.{{f}}(np.size({U}) + 1, d={{d}})",
        kinds="f",
        params=keyed(f=st.sampled_from(["fftfreq", "rfftfreq"]).map(_Raw), d=st.sampled_from([1.0, 0.5, 2])),
    ),
    # ---- 2-d convolutions and pooling
    Op(
        "mix.conv2d",
        f"_conv2(T, np, {U}, {{g}}, {{bg}}, {{stride}}, {{pad}}, {{ld}}, {{rd}}, {{k}}, {{layout}})",
        params=keyed(
            g=st.sampled_from([1, 2]),
            bg=st.sampled_from([1, 1, 2]),
            stride=st.sampled_from([(1, 1), (2, 1), (2, 2)]),
            pad=st.sampled_from(["VALID", "SAME", "SAME_LOWER", ((1, 0), (0, 1)), ((0, -1), (2, 1))]),
            ld=st.sampled_from([(1, 1), (1, 1), (2, 1)]),
            rd=st.sampled_from([(1, 1), (1, 1), (1, 2)]),
            k=st.sampled_from([(2, 2), (1, 2), (3, 1)]),
            layout=st.sampled_from(["NCHW", "NHWC"]),
        ),
    ),
    Op(
        "mix.conv_transpose",
        f"_conv_t(T, np, {U}, {{stride}}, {{pad}}, {{rd}}, {{tk}})",
        params=keyed(
            stride=st.sampled_from([(1,), (2,), (3,)]),
            pad=st.sampled_from(["VALID", "SAME", ((1, 0),), ((0, 2),)]),
            rd=st.sampled_from([None, (2,)]),
            tk=st.booleans(),
        ),
    ),
    Op(
        "mix.conv_patches",
        f"lax.conv_general_dilated_patches(np.reshape(_signal(np, {U}, 18), (1, 2, 3, 3)), {{k}}, "
        f"{{stride}}, {{pad}})",
        params=keyed(
            k=st.sampled_from([(2, 2), (1, 2), (3, 3)]),
            stride=st.sampled_from([(1, 1), (2, 1)]),
            pad=st.sampled_from(["VALID", "SAME"]),
        ),
    ),
    Op(
        "mix.window2d",
        f"_window2(T, np, {U}, {{op}}, {{w}}, {{stride}}, {{pad}}, {{bd}}, {{wd}})",
        params=keyed(
            op=st.sampled_from(["add", "max", "min", "mul"]),
            w=st.sampled_from([(2, 2), (1, 3), (3, 1), (2, 1)]),
            stride=st.sampled_from([(1, 1), (2, 1), (1, 2)]),
            pad=st.sampled_from(["VALID", "SAME", ((1, 0), (0, 1))]),
            bd=st.sampled_from([(1, 1), (1, 1), (2, 1)]),
            wd=st.sampled_from([(1, 1), (1, 1), (1, 2)]),
        ),
    ),
    Op(
        "mix.np_convolve",
        f"np.{{f}}(np.ravel({U}), np.ravel({B})[:3] if np.size({B}) else np.ones(1), mode={{mode}})",
        arity=2,
        params=keyed(
            f=st.sampled_from(["convolve", "correlate"]).map(_Raw),
            mode=st.sampled_from(["full", "same", "valid"]),
        ),
    ),
    # ---- the lax API
    Op(
        "mix.select_n",
        f"(lambda a: lax.select_n({{which}}, a, a * 2 - 1{{third}}))({U})",
        params=keyed(
            which=st.sampled_from(
                [
                    "np.asarray(a) > 0",
                    "np.clip(np.asarray(a), 0, 1).astype('int32')",
                    "True",
                    "np.int32(1)",
                    "a != a",
                ]
            ).map(_Raw),
            third=st.sampled_from(["", ", np.sin(a)"]).map(_Raw),
        ),
    ),
    Op(
        "mix.select_n3",
        f"lax.select_n(np.clip(np.round(np.asarray({U})), 0, 2).astype({{dt}}), {U}, -{U}, {U} * {U})",
        kinds="if",
        params=keyed(dt=st.sampled_from(["'int32'", "'uint8'", "'int8'"]).map(_Raw)),
    ),
    Op(
        "mix.sort3",
        f"lax.sort((np.round({U}), {U} * 2, -{U}), dimension={{d}}, is_stable={{s}}, num_keys={{k}})[{{i}}]",
        params=keyed(d=st.sampled_from([0, -1]), s=st.booleans(), k=st.integers(1, 3), i=st.integers(0, 2)),
    ),
    Op(
        "mix.reduce",
        f"lax.reduce({U}, np.array({{init}}).astype(np.result_type({U})), {{fn}}, {{dims}})",
        params=lambda s: st.fixed_dictionaries(
            {
                "init": st.sampled_from([0, 1, "-np.inf"]).map(lambda v: _Raw(str(v))),
                "fn": st.sampled_from(["lax.add", "lax.mul", "lax.max", "lax.min"]).map(_Raw),
                "dims": st.sets(st.integers(0, max(len(s) - 1, 0)), max_size=len(s)).map(
                    lambda v: tuple(sorted(v))
                ),
            }
        ),
    ),
    Op(
        "mix.reduce2",
        f"lax.reduce(({U}, np.broadcast_to(lax.iota('int32', np.shape({U})[0])"
        f"[(...,) + (None,) * (np.ndim({U}) - 1)], np.shape({U}))), "
        f"(np.array(-np.inf).astype(np.result_type({U})), np.int32(0)), "
        f"lambda a, b: (np.maximum(a[0], b[0]), np.where(a[0] >= b[0], a[1], b[1])), (0,))[{{i}}]",
        kinds="f",
        params=keyed(i=st.integers(0, 1)),
    ),
    Op(
        "mix.argmax",
        f"lax.{{f}}({U}, {{axis}}, {{dt}})",
        params=lambda s: st.fixed_dictionaries(
            {
                "f": st.sampled_from(["argmax", "argmin"]).map(_Raw),
                "axis": st.sampled_from(list(range(len(s))) or [0]),
                "dt": st.sampled_from(["'int32'", "'int8'", "'uint8'"]).map(_Raw),
            }
        ),
    ),
    Op("mix.pad", f"lax.pad({U}, np.array(0.5).astype(np.result_type({U})), {{cfg}})", params=_pad_config),
    Op(
        "mix.dot_general",
        f"lax.dot_general({U}, {B}, ((({{c0}},), ({{c1}},)), ({{b0}}, {{b1}})), "
        f"preferred_element_type={{p}})",
        arity=2,
        params=keyed(
            c0=st.integers(0, 2),
            c1=st.integers(0, 2),
            b0=st.sampled_from([(), (0,), (1,)]),
            b1=st.sampled_from([(), (0,), (1,)]),
            p=st.sampled_from([None, "'float32'", "'float64'", "'int32'"]).map(_Raw),
        ),
    ),
    Op(
        "mix.dynamic_slice2",
        f"lax.dynamic_slice({U}, {{starts}}, {{sizes}})",
        params=_starts,
    ),
    Op(
        "mix.dynamic_slice_traced",
        f"lax.dynamic_slice({U}, [np.sum(np.asarray({U}) > 0).astype('int32') * {{k}} - 1] "
        f"+ [np.int32(0)] * (np.ndim({U}) - 1), "
        f"(1,) + np.shape({U})[1:])",
        params=keyed(k=st.sampled_from([1, 2, -1])),
    ),
    Op(
        "mix.dynamic_update2",
        f"lax.dynamic_update_slice({U}, {U}[tuple(slice(0, 1) for _ in np.shape({U}))] * 3, {{starts}})",
        params=lambda s: st.fixed_dictionaries({"starts": st.tuples(*[st.integers(-3, 4) for _ in s])}),
    ),
    Op(
        "mix.dynamic_update_traced",
        f"lax.dynamic_update_slice({U}, np.ones((1,) + np.shape({U})[1:], np.result_type({U})), "
        f"[np.sum(np.asarray({U}) > 0).astype('int32') * {{k}} - 2] + [np.int32(-1)] * (np.ndim({U}) - 1))",
        params=keyed(k=st.sampled_from([1, 3, -1])),
    ),
    Op(
        "mix.clamp",
        f"(lambda a: lax.clamp({{lo}}, a, np.array({{hi}}).astype(np.result_type(a))))({U})",
        params=keyed(
            lo=st.sampled_from(
                ["np.array(-0.5).astype(np.result_type(a))", "a * 0 - 1", "np.zeros_like(a)"]
            ).map(_Raw),
            hi=st.sampled_from([1.0, 2.0, 0]),
        ),
    ),
    Op(
        "mix.linear_recurrence",
        f"lax.associative_scan(lambda p, q: (p[0] * q[0], p[1] * q[0] + q[1]), ({U}, {B}), reverse={{r}}, "
        f"axis={{ax}})[{{i}}]",
        arity=2,
        params=keyed(r=st.booleans(), ax=st.sampled_from([0, -1, 1]), i=st.integers(0, 1)),
    ),
    Op(
        "mix.top_k_last",
        f"lax.top_k({U}, {{k}})[{{i}}]",
        params=keyed(k=st.integers(0, 3), i=st.integers(0, 1)),
    ),
    # ---- explicit dtype mixes (weak Python scalars with narrow and unsigned types)
    Op(
        "mix.cast_pair",
        f"(np.asarray({U}).astype({{d1}}) {{op}} np.asarray({B}).astype({{d2}}))",
        arity=2,
        specials=False,
        mixes_dtypes=True,
        params=keyed(
            d1=st.sampled_from(_CASTS),
            d2=st.sampled_from(_CASTS),
            op=st.sampled_from(["+", "*", "-", "/", "//", "%", "**", ">", "&", "|"]).map(_Raw),
        ),
    ),
    Op(
        "mix.cast_scalar",
        f"({{how}})(np.asarray({U}).astype({{d}}), {{s}})",
        specials=False,
        mixes_dtypes=True,
        params=keyed(
            d=st.sampled_from(_CASTS),
            s=st.sampled_from(_SCALARS).map(_Raw),
            how=st.sampled_from(
                [
                    "lambda a, s: a + s",
                    "lambda a, s: s * a",
                    "lambda a, s: a / s",
                    "lambda a, s: s - a",
                    "lambda a, s: np.maximum(a, s)",
                    "lambda a, s: np.where(a > 0, a, s)",
                    "lambda a, s: a ** 2 + s",
                    "lambda a, s: np.clip(a, 0, s)",
                    "lambda a, s: T.jit(lambda a, s: a * s)(a, s)",
                    "lambda a, s: np.full_like(a, s)",
                    "lambda a, s: np.sum(a, dtype=None) + s",
                ]
            ).map(_Raw),
        ),
    ),
]
